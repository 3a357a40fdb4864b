//! The harness pages of `savegame-web`: the browser bench (`scripts/web-bench.sh`) and the
//! page the kill test drives (`scripts/kill-test.py`). Not a library: a module that a page
//! loads, whose exported functions the drivers call through WebDriver.

pub mod bench;
pub mod js;
pub mod kill;
pub mod quota;
pub mod world;

use savegame_web::IndexedDbSaves;
use wasm_bindgen::prelude::wasm_bindgen;

/// Runs the bench (see [`bench::run`]): `sizes` in MB, `reps` rounds, through the save worker
/// or not. Resolves to the figures as JSON.
///
/// # Errors
/// What failed, as text.
#[wasm_bindgen]
pub async fn bench(sizes: Vec<u32>, reps: u32, worker: bool) -> Result<String, String> {
    bench::run(&sizes, reps, worker).await
}

/// Runs the kill test's page (see [`kill::run`]) on the database `db`, through the save
/// worker or not, until the browser goes away.
///
/// # Errors
/// The first failure, which the driver is told too.
#[wasm_bindgen]
pub async fn kill_loop(db: String, worker: bool) -> Result<(), String> {
    kill::run(&db, worker).await
}

/// Runs the storage pressure test (see [`quota::run`]); what it saw, as JSON.
///
/// # Errors
/// What went against the promise.
#[wasm_bindgen]
pub async fn quota_test(worker: bool) -> Result<String, String> {
    quota::run(worker).await
}

/// The save worker's entry: it serves the managers of [`bench::builder`].
///
/// # Errors
/// When this is not a dedicated worker.
#[wasm_bindgen]
pub fn harness_save_worker() -> Result<(), String> {
    savegame_web::serve(bench::builder).map_err(|e| e.to_string())
}

/// `saves` with a save worker attached.
///
/// # Errors
/// Why the worker could not start.
pub async fn attach_worker(saves: IndexedDbSaves) -> Result<IndexedDbSaves, String> {
    let worker = savegame_web::SaveWorker::spawn("harness_save_worker")
        .await
        .map_err(|e| e.to_string())?;
    Ok(saves.with_worker(worker))
}
