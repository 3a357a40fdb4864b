//! Locking: the in-process mutexes of a manager's shared state, and the lock on a slot that
//! every writer of the slot takes: the storage's own where it has one (an `flock` for
//! [`FsStorage`](crate::storage::FsStorage), so other processes are excluded too), else a lock
//! between the threads of this process.

use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use super::files::Files;
use crate::error::Result;
use crate::storage::{LockTable, StorageLock};

/// Locks `m`, going on through a poisoned lock: every value behind a manager's mutexes stays
/// consistent across a panic (each is replaced whole).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The slot locks of every storage that has none of its own, keyed by where the slot's file
/// lives ([`Storage::locate`](crate::storage::Storage::locate)): every manager of this process
/// over the same place shares them.
static IN_PROCESS: LazyLock<Arc<LockTable>> = LazyLock::new(Arc::default);

/// Takes the exclusive lock on the slot whose primary file is `name`, waiting for its holder.
pub(super) fn lock_slot(files: &Files, name: &str) -> Result<StorageLock> {
    match files.storage.lock(name) {
        Ok(Some(held)) => Ok(held),
        Ok(None) => Ok(IN_PROCESS.lock(&files.storage.locate(name).to_string_lossy())),
        Err(e) => Err(files.error(name, e)),
    }
}
