//! Where save files live: a dyn-compatible [`Storage`] trait and its backends.
//!
//! The rest of the crate only ever calls [`Storage`]: bytes in, bytes out, by name. Nothing
//! outside this module assumes `std::fs`, so a web, console or cloud backend is one trait impl.
//!
//! | backend | for |
//! |---|---|
//! | [`FsStorage`] | files in a folder, crash-safe (temp file, fsync, rename, fsync the folder) |
//! | [`MemoryStorage`] | tests, tools, and platforms that persist a blob store themselves |
//! | [`FsStorage`] over `SimFs` (feature `testing`) | crash and fault tests: every operation is logged, faults can be injected, and every post-crash state can be built |
//!
//! [`FsStorage`] does its file operations through the [`FileSystem`] trait: [`StdFs`] in a game,
//! `SimFs` (with the `testing` feature) in crash tests.

mod fs;
mod memory;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
mod sim;

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

pub use fs::{FileSystem, FsStorage, StdFs, WriteFile};
pub use memory::MemoryStorage;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use sim::{CrashImage, DataLoss, Fault, FaultKind, FaultMode, Op, SimFs};

use crate::error::Result;

/// A file in a storage, as [`Storage::list`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The file's name within the storage.
    pub name: String,
    /// Its size in bytes.
    pub len: u64,
}

/// Some bytes of a file, and the file's total length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Up to the number of bytes asked for (fewer at the end of the file).
    pub bytes: Vec<u8>,
    /// The file's total length in bytes.
    pub file_len: u64,
}

/// An exclusive advisory lock on one name, held until dropped.
pub struct StorageLock {
    _guard: Box<dyn Send + Sync>,
}

impl StorageLock {
    /// A lock whose release is `guard`'s drop.
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        StorageLock {
            _guard: Box::new(guard),
        }
    }
}

impl fmt::Debug for StorageLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StorageLock")
    }
}

/// A place that keeps named byte blobs durably: the save folder, abstracted.
///
/// Names are plain file names (no folders), such as `slot-003.sav`. Implementations must keep
/// these promises, which the rest of the crate relies on:
///
/// - [`write`](Storage::write) is atomic and durable: after a crash at any point, `name` holds
///   either its old bytes or the new ones, never a mix, never nothing (if it existed before);
///   when `write` returns `Ok`, the new bytes survive a crash.
/// - Backups follow [`backup_name`]: with `keep_previous = n > 0`, a successful write leaves
///   the old bytes of `name` in `name.bak1`, the old `name.bak1` in `name.bak2`, and so on up to
///   `name.bak{n}`; the old `name.bak{n}` is dropped. With `n = 0` backups are left alone.
/// - Temporary and lock files of the implementation never appear in [`list`](Storage::list).
pub trait Storage: Send + Sync + fmt::Debug + 'static {
    /// Where `name` lives, for error messages and load reports (a path for files).
    fn locate(&self, name: &str) -> PathBuf;

    /// Reads the whole of `name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) when the file is over `limit` bytes (checked
    /// before it is read); [`Error::Io`](crate::Error::Io) when reading fails.
    fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>>;

    /// Reads up to `len` bytes of `name` from byte `offset` (fewer at the end of the file), or
    /// `None` if it does not exist.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when reading fails.
    fn read_at(&self, name: &str, offset: u64, len: usize) -> Result<Option<Head>>;

    /// Reads the first `len` bytes of `name` (fewer if it is shorter), or `None` if it does not
    /// exist.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when reading fails.
    fn read_head(&self, name: &str, len: usize) -> Result<Option<Head>> {
        self.read_at(name, 0, len)
    }

    /// Atomically and durably replaces `name` with `bytes`, keeping `keep_previous` backups
    /// (see the trait docs).
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when any step fails (a full disk, say). The old bytes of
    /// `name` are then intact, and no temporary file is left behind.
    fn write(&self, name: &str, bytes: &[u8], keep_previous: u32) -> Result<()>;

    /// Appends `bytes` to `name`, creating it if needed, durably: when this returns `Ok` the
    /// bytes survive a crash. A crash or an error during the append may leave any prefix of
    /// `bytes` at the end of the file (a torn tail); readers must detect it (journal records
    /// carry their length and a CRC).
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when any step fails.
    fn append(&self, name: &str, bytes: &[u8]) -> Result<()>;

    /// Durably deletes `name`. Deleting a name that does not exist is not an error.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when deleting fails.
    fn remove(&self, name: &str) -> Result<()>;

    /// Every file in the storage, in no particular order.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when listing fails.
    fn list(&self) -> Result<Vec<StoredFile>>;

    /// Takes an exclusive advisory lock on `name`, waiting for any other holder (another thread
    /// or, for [`FsStorage`], another process) to release it.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when the lock cannot be taken.
    fn lock(&self, name: &str) -> Result<StorageLock>;
}

/// The name of the `index`-th backup of `name` (`index` from 1): `slot-003.sav.bak1`.
#[must_use]
pub fn backup_name(name: &str, index: u32) -> String {
    format!("{name}.bak{index}")
}

/// The name under which the last file of `name` at schema version `version` is kept before a
/// migrated save replaces it: `slot-003.sav.v1.bak`.
#[must_use]
pub fn pre_migration_name(name: &str, version: u32) -> String {
    format!("{name}.v{version}.bak")
}

/// The primary name and index of a backup name, or `None` if `name` is not one.
#[must_use]
pub fn parse_backup_name(name: &str) -> Option<(&str, u32)> {
    let (primary, index) = name.rsplit_once(".bak")?;
    if index.is_empty() || index.starts_with('0') || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((primary, index.parse().ok()?))
}

/// In-process exclusive locks by name, for the storages that have no OS lock to use.
#[derive(Debug, Default)]
pub(crate) struct LockTable {
    held: Mutex<HashSet<String>>,
    released: Condvar,
}

impl LockTable {
    pub(crate) fn lock(self: &Arc<Self>, name: &str) -> StorageLock {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        while held.contains(name) {
            held = self
                .released
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        held.insert(name.to_owned());
        StorageLock::new(LockTableGuard {
            table: Arc::clone(self),
            name: name.to_owned(),
        })
    }
}

struct LockTableGuard {
    table: Arc<LockTable>,
    name: String,
}

impl Drop for LockTableGuard {
    fn drop(&mut self) {
        let mut held = self
            .table
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.remove(&self.name);
        self.table.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_round_trip() {
        assert_eq!(backup_name("slot-003.sav", 2), "slot-003.sav.bak2");
        assert_eq!(
            parse_backup_name("slot-003.sav.bak12"),
            Some(("slot-003.sav", 12))
        );
        for not_backup in [
            "slot-003.sav",
            "x.bak",
            "x.bak0",
            "x.bak01",
            "x.bakx",
            "x.bak-1",
        ] {
            assert_eq!(parse_backup_name(not_backup), None, "{not_backup}");
        }
    }

    #[test]
    fn lock_table_excludes_other_holders_until_release() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let table = Arc::new(LockTable::default());
        let first = table.lock("a");
        let _other_name = table.lock("b");
        let acquired = Arc::new(AtomicBool::new(false));
        let thread = {
            let (table, acquired) = (Arc::clone(&table), Arc::clone(&acquired));
            std::thread::spawn(move || {
                let _second = table.lock("a");
                acquired.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!acquired.load(Ordering::SeqCst));
        drop(first);
        thread.join().unwrap();
        assert!(acquired.load(Ordering::SeqCst));
    }
}
