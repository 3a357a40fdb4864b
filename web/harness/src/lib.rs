//! The harness pages of `savegame-web`: the browser bench (`scripts/web-bench.sh`) and the
//! page the kill test drives (`scripts/kill-test.py`). Not a library: a module that a page
//! loads, whose exported functions the drivers call through WebDriver.

pub mod bench;
pub mod js;
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

/// `saves` with the save worker attached.
///
/// # Errors
/// Why the worker could not start.
pub async fn attach_worker(saves: IndexedDbSaves) -> Result<IndexedDbSaves, String> {
    Err(format!("{saves:?}: no save worker in this build"))
}
