//! savegame in the browser: saves in IndexedDB with an async API, and a localStorage backend
//! for small saves, for games built for `wasm32-unknown-unknown` with wasm-bindgen.
//!
//! # Which type do I want?
//!
//! | you have | use | calls |
//! |---|---|---|
//! | saves of any size (a world, many slots) | [`IndexedDbSaves`], with a [`SaveWorker`] so that no save stalls a frame | async: `save(..).await` returns once IndexedDB has committed |
//! | small saves (settings, a profile; well under 1 MB with backups) | [`LocalStorage`], a [`Storage`](savegame::storage::Storage) for a plain [`SaveLoadManager`](savegame::SaveLoadManager) | synchronous, as on a desktop |
//!
//! Both keep the manager's whole policy: backups with fallback to the newest sound one, CRCs,
//! AES-256-GCM with a key, migrations of old saves, the load menu from headers.
//!
//! # Design
//!
//! - **IndexedDB is asynchronous, and `Storage` is not.** A page cannot block on a promise,
//!   so an IndexedDB `Storage` could only pretend: its `put` would return before anything was
//!   stored. Instead [`IndexedDbSaves`] is an async layer over the manager: it loads what an
//!   operation reads, runs the manager against that in memory, and commits everything the
//!   operation wrote in one IndexedDB transaction, returning `Ok` only once it completed. A
//!   save and its backup rotation land together or not at all.
//! - **The load menu reads head records.** Every object has a second record holding its length
//!   and first bytes (the header and metadata), written in the same transaction; listing reads
//!   those alone.
//! - **localStorage is synchronous,** so [`LocalStorage`] is an ordinary `Storage`.
//! - **Saves off the page's thread.** On wasm32 the manager's background saves run
//!   synchronously (see
//!   [`SaveLoadManager::save_in_background`](savegame::SaveLoadManager::save_in_background)).
//!   With a [`SaveWorker`] attached ([`IndexedDbSaves::with_worker`]), a dedicated worker
//!   running the same module checks, seals and commits each save; the page only encodes the
//!   mementos still pending and hands their bytes over, in [`Slices`] of at most
//!   [`SLICE_MS`] (see the [`SaveWorker`] docs). Without one, encoding and sealing run on the
//!   page's thread, between two frames.
//! - **A backup costs no second write.** A backup rotation records that the backup names the
//!   bytes the old file had; only the new file's bytes are written.
//!
//! # Durable, in a browser
//!
//! There is no fsync in a browser. An [`IndexedDbSaves`] save that returned `Ok` was
//! committed with strict durability (flushed to disk before the browser reported it), and
//! survives the tab or the browser closing. A [`LocalStorage`] put is visible at once and
//! written to disk by the browser shortly after. Neither survives the player clearing the
//! site's data, or the browser evicting a site that did not get
//! [`persist`](IndexedDbSaves::persist)ent storage. A failed or interrupted save (a quota
//! refusal, a tab closed mid-save) leaves the previous save loadable, with either backend.
//!
//! Everything here needs a browser: built for another target it compiles, and every call
//! fails (or panics, inside wasm-bindgen's stubs), so it is only for `wasm32-unknown-unknown`.

#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod idb;
mod indexed_db;
mod local;
mod serve;
mod worker;
mod working;

pub use error::{Error, QuotaExceeded, Result, is_quota_exceeded};
pub use indexed_db::IndexedDbSaves;
pub use local::LocalStorage;
pub use serve::serve;
pub use worker::{SLICE_MS, SaveWorker, Slices};

/// The guide's browser chapter, whose code blocks are compiled as doctests here (they need a
/// browser to run; `tests/browser.rs` runs the same calls in headless Chromium).
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/browser.md")]
pub struct GuideDoctests;
