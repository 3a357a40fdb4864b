//! Locking: the in-process mutexes of a manager's shared state. (Locks between threads and
//! processes on one slot are the storage's: [`Storage::lock`](crate::storage::Storage::lock).)

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, going on through a poisoned lock: every value behind a manager's mutexes stays
/// consistent across a panic (each is replaced whole).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
