//! The browser bench: saves and loads of a 1 MB and a 10 MB encrypted world through
//! [`IndexedDbSaves`], against the floor measured in the same page session (the same
//! snapshot encoded and sealed by the same module, then one raw IndexedDB put, or one raw get
//! then the open), and the longest the page's thread was blocked during each save.

use savegame::{Codec, Key, SaveLoadManager, SlotId, Snapshot};
use savegame_web::{IndexedDbSaves, Slices};
use serde::Serialize;
use wasm_bindgen::JsValue;

use crate::js::{Floor, Meter, now};
use crate::world::{Chunk, capture, chunk_id, chunks_for, world};

const SLOT: SlotId = SlotId::Numbered(1);
const KEY: [u8; 32] = *b"the harness key: 32 bytes long!!";

/// The manager every bench and kill-test save uses: MessagePack, encrypted, one backup (the
/// defaults a game keeps).
pub fn builder() -> savegame::ManagerBuilder {
    SaveLoadManager::builder()
        .codec(Codec::MessagePack)
        .key(Key::from_bytes(KEY))
}

/// One measured operation.
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Sample {
    ms: f64,
    /// The longest block of the page's thread during it (the heartbeat's longest gap).
    block_ms: f64,
    /// The game's capture before the save (`create_memento` of every chunk), on the page: its
    /// longest slice, through the worker.
    capture_ms: f64,
    /// The longest stretch of the save's own work on the page (the save worker's figure).
    stretch_ms: f64,
}

/// The figures of one world size.
#[derive(Debug, Serialize)]
struct Figures {
    megabytes: u32,
    file_bytes: u64,
    path: &'static str,
    save: Vec<Sample>,
    floor_save: Vec<Sample>,
    load: Vec<Sample>,
    floor_load: Vec<Sample>,
    /// The floor's parts: the capture with the encoding and sealing; the put; the get.
    seal_ms: Vec<f64>,
    put_ms: Vec<f64>,
    get_ms: Vec<f64>,
    /// The timer's longest gap while the page does nothing for 300 ms, before each round:
    /// the machine's own noise.
    idle_block_ms: Vec<f64>,
    /// The same with a worker keeping a core busy for those 300 ms (as the save worker does).
    busy_block_ms: Vec<f64>,
}

fn js_err(e: &JsValue) -> String {
    format!("{e:?}")
}

fn snapshot_of(
    manager: &SaveLoadManager,
    world: &[Chunk],
    label: &str,
) -> Result<Snapshot, String> {
    let mut snapshot = manager.snapshot().with_label(label);
    capture(&mut snapshot, world).map_err(|e| e.to_string())?;
    Ok(snapshot)
}

async fn timed<T, F: std::future::Future<Output = Result<T, String>>>(
    f: impl FnOnce() -> F,
) -> Result<(T, Sample), String> {
    let meter = Meter::start();
    let t0 = now();
    let out = f().await?;
    let ms = now() - t0;
    let block_ms = meter.stop();
    Ok((
        out,
        Sample {
            ms,
            block_ms,
            ..Sample::default()
        },
    ))
}

async fn one_size(megabytes: u32, reps: u32, worker: bool) -> Result<Figures, String> {
    let stamp = js_sys::Date::now();
    let world = world(megabytes, chunks_for(megabytes));
    let mut saves = IndexedDbSaves::open(&format!("bench-{megabytes}-{stamp}"), builder())
        .await
        .map_err(|e| e.to_string())?;
    if worker {
        saves = crate::attach_worker(saves).await?;
    }
    let floor = Floor::open(&format!("floor-{megabytes}-{stamp}"))
        .await
        .map_err(|e| js_err(&e))?;
    let manager = saves.manager();
    let key = Key::from_bytes(KEY);
    // The first save has no previous one to keep as a backup; every later one does.
    let first = snapshot_of(manager, &world, "first")?;
    let report = saves.save(SLOT, &first).await.map_err(|e| e.to_string())?;
    let mut figures = Figures {
        megabytes,
        file_bytes: report.bytes,
        path: if worker { "worker" } else { "page" },
        save: Vec::new(),
        floor_save: Vec::new(),
        load: Vec::new(),
        floor_load: Vec::new(),
        seal_ms: Vec::new(),
        put_ms: Vec::new(),
        get_ms: Vec::new(),
        idle_block_ms: Vec::new(),
        busy_block_ms: Vec::new(),
    };
    for rep in 0..reps {
        figures
            .idle_block_ms
            .push(crate::js::idle_block_ms(300).await);
        figures
            .busy_block_ms
            .push(crate::js::busy_block_ms(300).await);
        let generation = u64::from(rep) + 2;
        let ((seal_ms, put_ms), floor_save) = timed(|| async {
            let t0 = now();
            let snapshot = snapshot_of(manager, &world, "floor")?;
            let bytes = snapshot
                .seal_file(SLOT, manager.schema_version(), generation, Some(&key))
                .map_err(|e| e.to_string())?;
            let t1 = now();
            floor.put("slot", &bytes).await.map_err(|e| js_err(&e))?;
            Ok((t1 - t0, now() - t1))
        })
        .await?;
        let (capture_ms, mut save) = timed(|| async {
            let t0 = now();
            // Through the worker, the capture too is cut into slices, as a game would.
            let (snapshot, capture_ms) = if worker {
                let mut snapshot = manager.snapshot().with_label("save");
                let mut slices = Slices::new();
                for chunk in &world {
                    snapshot
                        .capture(&chunk_id(chunk.index), chunk)
                        .map_err(|e| e.to_string())?;
                    slices.tick().await;
                }
                let longest = slices.longest_ms();
                (snapshot, longest)
            } else {
                (snapshot_of(manager, &world, "save")?, now() - t0)
            };
            saves
                .save(SLOT, &snapshot)
                .await
                .map_err(|e| e.to_string())?;
            Ok(capture_ms)
        })
        .await?;
        save.capture_ms = capture_ms;
        save.stretch_ms = saves.worker().map_or(0.0, |w| w.longest_stretch_ms());
        let (get_ms, floor_load) = timed(|| async {
            let t0 = now();
            let bytes = floor.get("slot").await.map_err(|e| js_err(&e))?;
            let get_ms = now() - t0;
            Snapshot::open_file(bytes, &key).map_err(|e| e.to_string())?;
            Ok(get_ms)
        })
        .await?;
        let (loaded, load) =
            timed(|| async { saves.load(SLOT).await.map_err(|e| e.to_string()) }).await?;
        if rep == 0 {
            let last = world.last().ok_or("an empty world")?;
            let got: Chunk = loaded
                .snapshot
                .memento(&chunk_id(last.index))
                .map_err(|e| e.to_string())?;
            if &got != last || loaded.report.header.generation != generation {
                return Err("the bench loaded something other than it saved".into());
            }
        }
        figures.floor_save.push(floor_save);
        figures.save.push(save);
        figures.floor_load.push(floor_load);
        figures.load.push(load);
        figures.seal_ms.push(seal_ms);
        figures.put_ms.push(put_ms);
        figures.get_ms.push(get_ms);
    }
    Ok(figures)
}

/// Runs the bench: `sizes` (in MB), `reps` rounds of each operation, through the save worker
/// or on the page. The figures as JSON.
///
/// # Errors
/// What failed, as text.
pub async fn run(sizes: &[u32], reps: u32, worker: bool) -> Result<String, String> {
    let mut all = Vec::new();
    for &mb in sizes {
        all.push(one_size(mb, reps, worker).await?);
    }
    serde_json::to_string(&all).map_err(|e| e.to_string())
}
