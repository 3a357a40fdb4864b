//! Where save files live: the [`Storage`] trait a platform implements, and its backends.
//!
//! A storage is mechanism only: named objects, read, put atomically and durably, deleted and
//! listed. Everything a save needs beyond that (backups, journals of incremental saves,
//! pre-migration copies, locking between threads) is the manager's policy, built on these
//! calls, so a browser's IndexedDB, an object store or a console's save API is one small trait
//! impl. What a backend can do better (append in place, copy cheaply, read a range, lock
//! between processes) it says by overriding a provided method, and the manager uses it.
//!
//! | backend | for |
//! |---|---|
//! | [`FsStorage`] | files in a folder, crash-safe (temp file, fsync, rename, fsync the folder), with real appends, hard links and `flock` |
//! | [`MemoryStorage`] | tests, tools, and platforms that persist a blob store themselves |
//! | [`FsStorage`] over `SimFs` (feature `testing`) | crash and fault tests: every operation is logged, faults can be injected, and every post-crash state can be built |
//! | `savegame_web::LocalStorage` (crate `savegame-web`) | small saves in a browser's localStorage; IndexedDB, being async, is a layer over the manager there (`IndexedDbSaves`), not a `Storage` |
//!
//! [`FsStorage`] does its file operations through the [`FileSystem`] trait: [`StdFs`] in a game,
//! `SimFs` (with the `testing` feature) in crash tests.
//!
//! A storage returns [`std::io::Error`]; the manager adds the slot and the path
//! ([`Storage::locate`]) when it makes the crate's [`Error`](crate::Error) of it.
//!
//! A backend that implements only the four required methods:
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::io;
//! use std::sync::{Mutex, PoisonError};
//! use savegame::storage::{Storage, StoredFile, too_large};
//!
//! /// Objects in a map: a stand-in for a platform's key-value save API.
//! #[derive(Debug, Default)]
//! struct Blobs(Mutex<BTreeMap<String, Vec<u8>>>);
//!
//! impl Storage for Blobs {
//!     fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
//!         let blobs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
//!         match blobs.get(name) {
//!             Some(b) if b.len() as u64 > limit => Err(too_large(b.len() as u64)),
//!             found => Ok(found.cloned()),
//!         }
//!     }
//!     fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
//!         let mut blobs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
//!         blobs.insert(name.to_owned(), bytes.to_vec());
//!         Ok(())
//!     }
//!     fn delete(&self, name: &str) -> io::Result<()> {
//!         self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
//!         Ok(())
//!     }
//!     fn list(&self) -> io::Result<Vec<StoredFile>> {
//!         let blobs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
//!         Ok(blobs
//!             .iter()
//!             .map(|(name, b)| StoredFile { name: name.clone(), len: b.len() as u64 })
//!             .collect())
//!     }
//! }
//!
//! # fn main() -> savegame::Result<()> {
//! let manager = savegame::SaveLoadManager::builder()
//!     .storage(Blobs::default())
//!     .backups(2)
//!     .build()?;
//! let mut snapshot = manager.snapshot();
//! snapshot.capture_memento("score", &42u32)?;
//! manager.save(savegame::SlotId::Numbered(1), &snapshot)?;
//! manager.save(savegame::SlotId::Numbered(1), &snapshot)?;
//! let loaded = manager.load(savegame::SlotId::Numbered(1))?;
//! assert_eq!(loaded.snapshot.memento::<u32>("score")?, 42);
//! # Ok(())
//! # }
//! ```
//!
//! # Wrapping a storage
//!
//! A storage that wraps another (to count or gate writes, to add latency in a test, to log)
//! must forward **every** method it does not mean to change, the provided ones included. A
//! provided method it leaves out is not the inner storage's: it is the trait's default, built
//! on the four required methods, and it quietly changes how the manager stores things:
//!
//! | left out | what changes |
//! |---|---|
//! | [`can_append`](Storage::can_append), [`append`](Storage::append) | incremental saves are kept as one object each (`slot-001.sav.d000001`, …) instead of a journal; a folder written one way does not show its deltas to a manager of the other (the load reports them) |
//! | [`put_after`](Storage::put_after), [`rotate_dropping`](Storage::rotate_dropping) | a save is staged as `NAME.new` and the backups rotated around it through `put`s; the file the rotation drops is not recycled |
//! | [`streams`](Storage::streams), [`put_streamed`](Storage::put_streamed) | a save is sealed whole in memory and handed to `put_after` or `put`, instead of written a segment at a time as it is encoded |
//! | [`identity`](Storage::identity) | every incremental save reads the slot's save whole to check its CRC again, instead of only when the file changed since it was last checked |
//! | [`copy`](Storage::copy) | backups are copied byte for byte through `read` and `put`, not hard-linked |
//! | [`lock`](Storage::lock) | the manager locks between the threads of this process only, not between processes |
//! | [`read_at`](Storage::read_at), [`read_head`](Storage::read_head), [`reads_ranges`](Storage::reads_ranges) | a load menu and a backup check read whole files |
//! | [`read_pieces`](Storage::read_pieces) | a save's check reads the file with one `read_at` per piece (an open, a seek and a read each), not one open file into one buffer |
//! | [`list_names`](Storage::list_names), [`locate`](Storage::locate) | names come from `list`; errors name the object, not its path |
//!
//! So a wrapper forwards them all, and changes only what it is for:
//!
//! ```
//! use std::io;
//! use std::path::PathBuf;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use savegame::storage::{
//!     FsStorage, Head, Identity, Storage, StorageLock, StoredFile, StreamSink,
//! };
//!
//! /// Counts the writes that reach `inner`; everything else is `inner`'s own.
//! #[derive(Debug)]
//! struct Counting<S> { inner: S, writes: AtomicUsize }
//!
//! impl<S: Storage> Storage for Counting<S> {
//!     fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
//!         self.inner.read(name, limit)
//!     }
//!     fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.inner.put(name, bytes)
//!     }
//!     fn delete(&self, name: &str) -> io::Result<()> { self.inner.delete(name) }
//!     fn list(&self) -> io::Result<Vec<StoredFile>> { self.inner.list() }
//!     fn list_names(&self) -> io::Result<Vec<String>> { self.inner.list_names() }
//!     fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
//!         self.inner.read_at(name, offset, len)
//!     }
//!     fn read_head(&self, name: &str, len: usize) -> io::Result<Option<Head>> {
//!         self.inner.read_head(name, len)
//!     }
//!     fn read_pieces(
//!         &self,
//!         name: &str,
//!         piece: usize,
//!         each: &mut dyn FnMut(&[u8]) -> bool,
//!     ) -> io::Result<Option<u64>> {
//!         self.inner.read_pieces(name, piece, each)
//!     }
//!     fn reads_ranges(&self) -> bool { self.inner.reads_ranges() }
//!     fn copy(&self, from: &str, to: &str) -> io::Result<bool> { self.inner.copy(from, to) }
//!     fn put_after(
//!         &self,
//!         name: &str,
//!         bytes: &[u8],
//!         first: &mut dyn FnMut() -> io::Result<()>,
//!     ) -> io::Result<()> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.inner.put_after(name, bytes, first)
//!     }
//!     fn streams(&self) -> bool { self.inner.streams() }
//!     fn put_streamed(
//!         &self,
//!         name: &str,
//!         fill: &mut dyn FnMut(&mut dyn StreamSink) -> io::Result<()>,
//!         first: Option<&mut dyn FnMut() -> io::Result<()>>,
//!     ) -> io::Result<()> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.inner.put_streamed(name, fill, first)
//!     }
//!     fn rotate_dropping(
//!         &self,
//!         name: &str,
//!         dropped: &str,
//!         rotate: &mut dyn FnMut() -> io::Result<bool>,
//!     ) -> io::Result<()> {
//!         self.inner.rotate_dropping(name, dropped, rotate)
//!     }
//!     fn identity(&self, name: &str) -> io::Result<Option<Identity>> { self.inner.identity(name) }
//!     fn can_append(&self) -> bool { self.inner.can_append() }
//!     fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.inner.append(name, bytes)
//!     }
//!     fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> { self.inner.lock(name) }
//!     fn locate(&self, name: &str) -> PathBuf { self.inner.locate(name) }
//! }
//!
//! # fn main() -> savegame::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let files = FsStorage::new(dir.path())?;
//! let counting = Counting { inner: files.clone(), writes: AtomicUsize::new(0) };
//! // The wrapper stores as the files do: a journal, recycled spares, locks between processes.
//! assert_eq!(counting.can_append(), files.can_append());
//! let manager = savegame::SaveLoadManager::builder()
//!     .storage(counting)
//!     .compact_at(10_000) // keep the journal, for the check below
//!     .build()?;
//! let slot = savegame::SlotId::Numbered(1);
//! let mut snapshot = manager.snapshot();
//! snapshot.capture_memento("score", &1u32)?;
//! manager.save(slot, &snapshot)?;
//! manager.save_incremental(slot, &snapshot)?;
//! assert!(dir.path().join("slot-001.sav.journal").exists(), "a journal, as FsStorage keeps");
//! # Ok(())
//! # }
//! ```

mod file_system;
mod fs;
mod memory;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
mod sim;
mod sink;
mod std_fs;

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

pub use file_system::{FileSystem, WriteFile};
pub use fs::FsStorage;
pub use memory::MemoryStorage;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use sim::{CrashImage, DataLoss, Fault, FaultKind, FaultMode, Op, SimFs};
pub use sink::StreamSink;
pub use std_fs::StdFs;

/// An object in a storage, as [`Storage::list`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The object's name within the storage.
    pub name: String,
    /// Its size in bytes.
    pub len: u64,
}

/// Some bytes of an object, and the object's total length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Up to the number of bytes asked for (fewer at the end of the object).
    pub bytes: Vec<u8>,
    /// The object's total length in bytes.
    pub file_len: u64,
}

/// What a file system says of a file's identity and last change: equal identities mean the
/// file was not written, truncated, replaced or renamed over in between, as far as the file
/// system records it ([`Storage::identity`]).
///
/// A file system records a change's time at the precision of its clock (a tick of the
/// kernel's coarse clock on Linux, two seconds on FAT), so two changes close together may
/// carry the same time: an identity taken within [`Identity::SETTLE`] of the file's last change
/// proves nothing, and is not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The device and the file's number on it (its inode).
    pub file: (u64, u64),
    /// The file's length in bytes.
    pub len: u64,
    /// When its bytes were last written.
    pub modified: std::time::SystemTime,
    /// When anything of it (bytes, length, names, permissions) last changed.
    pub changed: std::time::SystemTime,
}

impl Identity {
    /// How long after a file's last change its identity is trusted: two seconds, the
    /// coarsest time a file system in use records (FAT's).
    pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

    /// Whether this identity, taken at `now`, can stand for the file's contents: its last
    /// change lies at least [`SETTLE`](Self::SETTLE) before `now`, so any later change
    /// carries a later time.
    #[must_use]
    pub fn settled_at(&self, now: std::time::SystemTime) -> bool {
        self.changed
            .max(self.modified)
            .checked_add(Self::SETTLE)
            .is_some_and(|settled| settled <= now)
    }
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

/// The error a [`Storage::read`] returns for an object over its size cap: kind
/// [`FileTooLarge`](io::ErrorKind::FileTooLarge), carrying the object's size (a [`TooLarge`])
/// so the manager can report it.
#[must_use]
pub fn too_large(size: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, TooLarge { size })
}

/// What a [`too_large`] error carries: the size of the object that was over the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// The object's size in bytes.
    pub size: u64,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes, over the size cap", self.size)
    }
}

impl std::error::Error for TooLarge {}

/// A place that keeps named objects durably: the save folder, abstracted.
///
/// Names are plain names (no folders), such as `slot-003.sav`. A backend implements four
/// methods, and keeps these promises, which the manager's crash safety rests on:
///
/// - [`put`](Storage::put) is atomic and durable: after a crash at any point, `name` holds
///   either its old bytes or the new ones, never a mix, never nothing (if it existed before);
///   when `put` returns `Ok`, the new bytes survive a crash. On an error, the old bytes are
///   intact.
/// - Operations take effect in the order they are made, and when a `put` or a `delete`
///   returns `Ok`, every operation made before it is durable too.
/// - [`list`](Storage::list) shows only the objects the manager put: a backend's temporary and
///   lock files never appear in it.
///
/// The provided methods have defaults built on the four; a backend overrides those it can do
/// better. Where it cannot append ([`can_append`](Storage::can_append) is `false`), the manager
/// keeps each incremental save as an object of its own; where it has no locks
/// ([`lock`](Storage::lock) returns `None`), the manager locks between the threads of this
/// process only.
pub trait Storage: Send + Sync + fmt::Debug + 'static {
    /// Reads the whole of `name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// [`too_large`] (kind `FileTooLarge`) when the object is over `limit` bytes, checked before
    /// it is read where the backend can; the backend's error when reading fails.
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>>;

    /// Atomically and durably replaces (or creates) `name` with `bytes` (see the trait docs).
    ///
    /// # Errors
    /// The backend's error (a full disk, a full quota, a dropped connection). The old bytes of
    /// `name` are then intact.
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()>;

    /// Durably deletes `name`. Deleting a name that does not exist is not an error.
    ///
    /// # Errors
    /// The backend's error.
    fn delete(&self, name: &str) -> io::Result<()>;

    /// Every object in the storage, with its size, in no particular order.
    ///
    /// # Errors
    /// The backend's error.
    fn list(&self) -> io::Result<Vec<StoredFile>>;

    /// The name of every object in the storage, in no particular order: [`list`](Self::list)
    /// without the sizes, which is all a load menu or a backup lookup needs. The default takes
    /// them from `list`; a backend that pays for each size (a file system's stat of every
    /// file) lists names alone.
    ///
    /// # Errors
    /// The backend's error.
    fn list_names(&self) -> io::Result<Vec<String>> {
        Ok(self.list()?.into_iter().map(|f| f.name).collect())
    }

    /// Reads up to `len` bytes of `name` from byte `offset` (fewer at the end), or `None` if it
    /// does not exist. The default reads the whole object; a backend that can read a range
    /// overrides this and [`reads_ranges`](Storage::reads_ranges).
    ///
    /// # Errors
    /// The backend's error.
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        Ok(self.read(name, u64::MAX)?.map(|bytes| {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let end = start.saturating_add(len).min(bytes.len());
            Head {
                file_len: bytes.len() as u64,
                bytes: bytes[start..end].to_vec(),
            }
        }))
    }

    /// Reads the first `len` bytes of `name` (fewer if it is shorter), or `None` if it does not
    /// exist: what a load menu reads of each save. The default is
    /// [`read_at`](Storage::read_at) from 0.
    ///
    /// # Errors
    /// The backend's error.
    fn read_head(&self, name: &str, len: usize) -> io::Result<Option<Head>> {
        self.read_at(name, 0, len)
    }

    /// Reads `name` from its start to its end, at most `piece` bytes at a time, handing each
    /// piece in order to `each`, which returns `false` to stop early; returns the length the
    /// object had when the read began, or `None` if it does not exist. Where the length is
    /// seen to change during the read, the read stops and returns the new length (`None` if
    /// the object is gone), so that a caller which knows the length it expects tells a file
    /// that changed from a damaged one. A check of a whole save reads this way where the
    /// storage [reads ranges](Storage::reads_ranges).
    ///
    /// The default calls [`read_at`](Storage::read_at) for each piece where the storage reads
    /// ranges, and otherwise [`read`](Storage::read)s the object once and hands it over in
    /// pieces; a backend that can keep one object open overrides it, so that every piece comes
    /// from the same object and into one buffer.
    ///
    /// # Errors
    /// The backend's error.
    fn read_pieces(
        &self,
        name: &str,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Option<u64>> {
        let piece = piece.max(1);
        if !self.reads_ranges() {
            let Some(bytes) = self.read(name, u64::MAX)? else {
                return Ok(None);
            };
            for chunk in bytes.chunks(piece) {
                if !each(chunk) {
                    break;
                }
            }
            return Ok(Some(bytes.len() as u64));
        }
        let mut offset = 0u64;
        let mut len = None;
        loop {
            let Some(head) = self.read_at(name, offset, piece)? else {
                return Ok(None);
            };
            let file_len = *len.get_or_insert(head.file_len);
            if head.file_len != file_len {
                return Ok(Some(head.file_len));
            }
            if head.bytes.is_empty() || !each(&head.bytes) {
                return Ok(Some(file_len));
            }
            offset += head.bytes.len() as u64;
            if offset >= file_len {
                return Ok(Some(file_len));
            }
        }
    }

    /// Whether [`read_at`](Storage::read_at) reads only the range asked for. When it does not,
    /// the manager reads an object whole once where it would read it a piece at a time.
    fn reads_ranges(&self) -> bool {
        false
    }

    /// Makes `to` a copy of `from`: `Ok(false)` (and nothing changed) when `from` does not
    /// exist. Like [`put`](Storage::put) for `to`: atomic, and durable at the latest when the
    /// next `put` or `delete` returns. The default reads `from` and puts it; a backend with
    /// cheap copies (hard links, a server-side copy) overrides it.
    ///
    /// # Errors
    /// The backend's error; `to` is then unchanged.
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        match self.read(from, u64::MAX)? {
            Some(bytes) => self.put(to, &bytes).map(|()| true),
            None => Ok(false),
        }
    }

    /// Puts `bytes` under `name` like [`put`](Storage::put), but first stages them durably and
    /// runs `first` before they replace `name`; should `first` fail, `name` is left as it was
    /// and its error returned. The manager rotates backups in `first`, so a put that fails for
    /// want of space fails before any backup has moved.
    ///
    /// The default puts the bytes under [`staged_name`](crate::slot::staged_name)`(name)`
    /// (`name.new`), runs `first`, puts them under `name`, and deletes the staged copy. Should
    /// that last put fail, `first` has run: the backups have moved (the oldest is dropped) and
    /// `name` still holds its old bytes, so the old save survives, as the newest backup too. A
    /// backend that can stage without a name of its own (a temporary file renamed into place,
    /// as [`FsStorage`] does) overrides this, and then nothing moves unless the new bytes are
    /// in place.
    ///
    /// # Errors
    /// The backend's error, or `first`'s. `name` then holds its old bytes, or the new ones when
    /// only a step after the commit failed (the deletion of the staged copy, a folder fsync):
    /// the bytes are then in place but not known to be durable.
    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        let staged = crate::slot::staged_name(name);
        self.put(&staged, bytes)?;
        let committed = first().and_then(|()| self.put(name, bytes));
        // Best effort after a failure: the error that matters is the one returned, and a
        // staged copy left behind is overwritten by the next put of this name.
        let removed = self.delete(&staged);
        committed.and(removed)
    }

    /// Whether [`put_streamed`](Storage::put_streamed) writes as it goes. The manager then
    /// writes a save as it is encoded, a segment at a time; otherwise it seals the whole file
    /// in memory (on several threads) and calls `put_after` or `put`. The default is `false`;
    /// [`FsStorage`] says `true`.
    fn streams(&self) -> bool {
        false
    }

    /// Puts the object `fill` writes under `name`, as [`put_after`](Storage::put_after) with
    /// `first`, or as [`put`](Storage::put) without: with the same promises, over the bytes
    /// `fill` wrote (appended in order, with its writes over them) when it returns `Ok`. A save
    /// comes this way so that it never holds its whole file in memory: it is sealed a segment
    /// at a time as it is encoded, and its first bytes are written last, over the place kept
    /// for them. `fill` may be called again (once per try) when the backend starts over.
    ///
    /// The default gathers the bytes in memory, then calls `put` or `put_after`, so a backend
    /// that overrides only those keeps every promise. A backend that writes as it goes
    /// ([`FsStorage`]: into the temporary file it renames into place) overrides this.
    ///
    /// # Errors
    /// `fill`'s error, the backend's, or `first`'s; `name` then holds what `put_after` says.
    fn put_streamed(
        &self,
        name: &str,
        fill: &mut dyn FnMut(&mut dyn StreamSink) -> io::Result<()>,
        first: Option<&mut dyn FnMut() -> io::Result<()>>,
    ) -> io::Result<()> {
        let mut bytes = Vec::new();
        fill(&mut bytes)?;
        match first {
            Some(first) => self.put_after(name, &bytes, first),
            None => self.put(name, &bytes),
        }
    }

    /// Runs `rotate`, the backup rotation of a [`put_after`](Storage::put_after) of `name`,
    /// which replaces the file `dropped` (the oldest backup): `rotate` says whether it did.
    /// A backend may keep the dropped file's storage for the next put of `name` to write over
    /// in place. The default runs `rotate` and keeps nothing. [`FsStorage`] keeps the file as
    /// the slot's hidden spare (`.<name>.spare`): writing a save over a file that has its
    /// blocks already halves the time of the save's write and fsync on ext4, as a database
    /// recycles its log files.
    ///
    /// # Errors
    /// `rotate`'s error, which the backend returns as it is; keeping the file is best effort
    /// and fails nothing.
    fn rotate_dropping(
        &self,
        name: &str,
        dropped: &str,
        rotate: &mut dyn FnMut() -> io::Result<bool>,
    ) -> io::Result<()> {
        let _ = (name, dropped);
        rotate().map(drop)
    }

    /// The identity of `name` as the backend records it (see [`Identity`]), or `None` when it
    /// cannot tell (the default): what lets the manager skip reading a file whole again to
    /// check it, when the file has not changed since it was last checked. A backend returns
    /// `Some` only where every change to the object's bytes, by any writer, changes it.
    ///
    /// # Errors
    /// The backend's error; `NotFound` is `Ok(None)`.
    fn identity(&self, name: &str) -> io::Result<Option<Identity>> {
        let _ = name;
        Ok(None)
    }

    /// Whether [`append`](Storage::append) works. The default is `false`.
    fn can_append(&self) -> bool {
        false
    }

    /// Appends `bytes` to `name`, creating it if needed, durably: when this returns `Ok` the
    /// bytes survive a crash. A crash or an error during the append may leave any prefix of
    /// `bytes` at the end of the object (a torn tail); readers detect it (journal records carry
    /// their length and a CRC). An error may also leave all of `bytes` there and readable but
    /// not durable (a failed fsync, after which Linux never writes them): the caller must cut
    /// them away before it appends again (the manager puts the object again without them). The
    /// default refuses with [`Unsupported`](io::ErrorKind::Unsupported).
    ///
    /// # Errors
    /// The backend's error.
    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let _ = (name, bytes);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage cannot append",
        ))
    }

    /// Takes an exclusive advisory lock on `name`, waiting for any other holder (another thread
    /// or another process) to release it. `None` when the backend has no locks (the default):
    /// the manager then locks between the threads of this process.
    ///
    /// # Errors
    /// The backend's error when the lock cannot be taken.
    fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> {
        let _ = name;
        Ok(None)
    }

    /// Where `name` lives, for error messages and load reports (a path for files). The default
    /// is the name itself.
    fn locate(&self, name: &str) -> PathBuf {
        PathBuf::from(name)
    }
}

/// A shared storage is a storage: a game can hand the manager an `Arc` of its backend and keep
/// one for itself (to sync a folder, to plant a file in a test). Every method forwards, so the
/// backend's fast paths stay in use.
impl<S: Storage + ?Sized> Storage for Arc<S> {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        (**self).read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        (**self).put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        (**self).delete(name)
    }
    fn list_names(&self) -> io::Result<Vec<String>> {
        (**self).list_names()
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        (**self).list()
    }
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        (**self).read_at(name, offset, len)
    }
    fn read_head(&self, name: &str, len: usize) -> io::Result<Option<Head>> {
        (**self).read_head(name, len)
    }
    fn read_pieces(
        &self,
        name: &str,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Option<u64>> {
        (**self).read_pieces(name, piece, each)
    }
    fn reads_ranges(&self) -> bool {
        (**self).reads_ranges()
    }
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        (**self).copy(from, to)
    }
    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        (**self).put_after(name, bytes, first)
    }
    fn streams(&self) -> bool {
        (**self).streams()
    }
    fn put_streamed(
        &self,
        name: &str,
        fill: &mut dyn FnMut(&mut dyn StreamSink) -> io::Result<()>,
        first: Option<&mut dyn FnMut() -> io::Result<()>>,
    ) -> io::Result<()> {
        (**self).put_streamed(name, fill, first)
    }
    fn rotate_dropping(
        &self,
        name: &str,
        dropped: &str,
        rotate: &mut dyn FnMut() -> io::Result<bool>,
    ) -> io::Result<()> {
        (**self).rotate_dropping(name, dropped, rotate)
    }
    fn identity(&self, name: &str) -> io::Result<Option<Identity>> {
        (**self).identity(name)
    }
    fn can_append(&self) -> bool {
        (**self).can_append()
    }
    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        (**self).append(name, bytes)
    }
    fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> {
        (**self).lock(name)
    }
    fn locate(&self, name: &str) -> PathBuf {
        (**self).locate(name)
    }
}

/// Exclusive locks by name between the threads of one process: for a backend's
/// [`Storage::lock`] where the platform has no lock of its own. (The manager uses one of these,
/// keyed by [`Storage::locate`], for a backend whose `lock` returns `None`.)
#[derive(Debug, Default)]
pub struct LockTable {
    held: Mutex<HashSet<String>>,
    released: Condvar,
    /// Callers of `lock` that found the name held and wait (for the unit test that checks
    /// they do, without guessing how long a thread takes to get there).
    #[cfg(test)]
    waiting: std::sync::atomic::AtomicUsize,
}

impl LockTable {
    /// Takes the lock on `name`, waiting until no other holder has it; released when the
    /// returned lock drops.
    pub fn lock(self: &Arc<Self>, name: &str) -> StorageLock {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        while held.contains(name) {
            #[cfg(test)]
            self.waiting
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held = self
                .released
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
            #[cfg(test)]
            self.waiting
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
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
mod tests;
