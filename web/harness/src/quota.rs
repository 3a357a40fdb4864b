//! Storage pressure (`scripts/kill-test.py` runs it after giving the origin a small quota
//! through the DevTools protocol): a save into a full quota fails with a typed error and the
//! previous save still loads; once space is freed the next save goes through.

use savegame::SlotId;
use savegame_web::IndexedDbSaves;
use serde::Serialize;

use crate::bench::builder;
use crate::js::{delete_database, fill_with};
use crate::world::{capture, world};

const SLOT: SlotId = SlotId::Numbered(1);
/// The filler's blobs: 512 KB each, until the quota refuses one.
const BLOB: u32 = 512 * 1024;
/// At most this many blobs (256 MB): a quota that never fills is a failure, not a hang.
const MAX_BLOBS: u32 = 512;

/// What the test saw.
#[derive(Debug, Serialize)]
struct Seen {
    worker: bool,
    persisted: bool,
    filled_bytes: u64,
    error: String,
}

fn js(e: &wasm_bindgen::JsValue) -> String {
    format!("{e:?}")
}

/// Runs the test, on the page's path or the worker's; the figures as JSON.
///
/// # Errors
/// What went against the promise.
pub async fn run(worker: bool) -> Result<String, String> {
    let stamp = js_sys::Date::now();
    let filler = format!("filler-{stamp}");
    let mut saves = IndexedDbSaves::open(&format!("quota-{stamp}"), builder())
        .await
        .map_err(|e| e.to_string())?;
    if worker {
        saves = crate::attach_worker(saves).await?;
    }
    let persisted = saves.persist().await;
    let manager = saves.manager();
    let save = |generation: u32| {
        let mut snapshot = manager
            .snapshot()
            .with_label(format!("generation {generation}"));
        let captured = capture(&mut snapshot, &world(generation, 21));
        captured.map(|()| snapshot).map_err(|e| e.to_string())
    };
    saves
        .save(SLOT, &save(1)?)
        .await
        .map_err(|e| format!("the first save: {e}"))?;

    let mut filled = 0u64;
    for n in 0.. {
        if n == MAX_BLOBS {
            return Err(format!(
                "{filled} bytes of filler and the quota is not reached"
            ));
        }
        match fill_with(&filler, &format!("blob-{n}"), BLOB).await {
            Ok(()) => filled += u64::from(BLOB),
            Err(e) if js(&e).contains("QuotaExceededError") => break,
            Err(e) => return Err(format!("filling the quota: {}", js(&e))),
        }
    }
    let err = match saves.save(SLOT, &save(2)?).await {
        Ok(report) => return Err(format!("a save into a full quota returned Ok: {report:?}")),
        Err(e) => e,
    };
    if !err.is_quota_exceeded() {
        return Err(format!(
            "a save into a full quota failed otherwise: {err:?}"
        ));
    }
    let loaded = saves.load(SLOT).await.map_err(|e| e.to_string())?;
    if loaded.snapshot.metadata().label != "generation 1"
        || loaded.report.recovered_from_backup.is_some()
    {
        return Err(format!(
            "after the refused save, the slot loads {:?} (backup {:?})",
            loaded.snapshot.metadata().label,
            loaded.report.recovered_from_backup
        ));
    }

    delete_database(&filler).await.map_err(|e| js(&e))?;
    saves
        .save(SLOT, &save(3)?)
        .await
        .map_err(|e| format!("a save once space was freed: {e}"))?;
    let loaded = saves.load(SLOT).await.map_err(|e| e.to_string())?;
    if loaded.snapshot.metadata().label != "generation 3" {
        return Err(format!(
            "the slot loads {:?}",
            loaded.snapshot.metadata().label
        ));
    }
    let seen = Seen {
        worker,
        persisted,
        filled_bytes: filled,
        error: err.to_string(),
    };
    serde_json::to_string(&seen).map_err(|e| e.to_string())
}
