//! The kill test's page (`scripts/kill-test.py`): it loads the slot, tells the driver which
//! generation it found, then saves generation after generation, each `await`ed, telling the
//! driver before each save (`saving`, the evidence that one is under way) and after it
//! (`saved`: that generation returned `Ok`). The driver kills the browser at random moments;
//! every `saved` generation, or a newer one, must load after each restart.

use savegame::{SaveLoadManager, SlotId, Snapshot};
use savegame_web::IndexedDbSaves;

use crate::bench::builder;
use crate::js::tell;
use crate::world::{Chunk, capture, chunk_id, world};

const SLOT: SlotId = SlotId::Numbered(1);
/// Chunks per save: about 400 KB, so that a kill often lands inside a transaction.
const CHUNKS: u32 = 8;

fn snapshot_of(manager: &SaveLoadManager, generation: u64) -> Result<Snapshot, String> {
    let mut snapshot = manager
        .snapshot()
        .with_label(format!("generation {generation}"));
    snapshot
        .capture_memento("generation", &generation)
        .map_err(|e| e.to_string())?;
    capture(&mut snapshot, &world(seed(generation), CHUNKS)).map_err(|e| e.to_string())?;
    Ok(snapshot)
}

fn seed(generation: u64) -> u32 {
    (generation % u64::from(u32::MAX)) as u32 + 1
}

/// The generation in the slot (0 when it is empty), its content checked against the world
/// that generation saved.
async fn loaded(saves: &IndexedDbSaves) -> Result<(u64, Option<u32>), String> {
    let loaded = match saves.load(SLOT).await {
        Ok(loaded) => loaded,
        Err(savegame_web::Error::Save(savegame::Error::SlotEmpty { .. })) => return Ok((0, None)),
        Err(e) => return Err(e.to_string()),
    };
    let generation: u64 = loaded
        .snapshot
        .memento("generation")
        .map_err(|e| e.to_string())?;
    let expected = world(seed(generation), CHUNKS);
    for chunk in [&expected[0], &expected[expected.len() - 1]] {
        let got: Chunk = loaded
            .snapshot
            .memento(&chunk_id(chunk.index))
            .map_err(|e| e.to_string())?;
        if &got != chunk {
            return Err(format!("generation {generation} loads with another world"));
        }
    }
    Ok((generation, loaded.report.recovered_from_backup))
}

/// Runs the page until the browser goes away: see the module docs.
///
/// # Errors
/// The first failure, also told to the driver (`/report/error`).
pub async fn run(db: &str, worker: bool) -> Result<(), String> {
    let result = saving(db, worker).await;
    if let Err(e) = &result {
        let _ = tell("/report/error", e).await;
    }
    result
}

async fn saving(db: &str, worker: bool) -> Result<(), String> {
    let mut saves = IndexedDbSaves::open(db, builder())
        .await
        .map_err(|e| e.to_string())?;
    if worker {
        saves = crate::attach_worker(saves).await?;
    }
    let (mut generation, backup) = loaded(&saves).await?;
    let said = format!(
        "{{\"generation\":{generation},\"backup\":{}}}",
        backup.unwrap_or(0)
    );
    tell("/report/loaded", &said)
        .await
        .map_err(|e| format!("{e:?}"))?;
    loop {
        generation += 1;
        let snapshot = snapshot_of(saves.manager(), generation)?;
        tell("/report/saving", &generation.to_string())
            .await
            .map_err(|e| format!("{e:?}"))?;
        saves
            .save(SLOT, &snapshot)
            .await
            .map_err(|e| format!("saving generation {generation}: {e}"))?;
        tell("/report/saved", &generation.to_string())
            .await
            .map_err(|e| format!("{e:?}"))?;
    }
}
