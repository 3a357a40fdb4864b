//! [`SimFs`]: a simulated file system for crash and fault tests.
//!
//! It models what a real file system promises and no more:
//!
//! - A file's data is durable only after `fsync` of the file. Until then a crash may drop the
//!   unsynced bytes, keep them, keep half of them (a torn write), or leave zeros in their place.
//! - A failed `fsync` of a file is final, as on Linux (ext4 and XFS mark the pages whose
//!   writeback failed clean; PostgreSQL's "fsyncgate"): the bytes it failed to write stay
//!   readable until a crash, but in every crash image they are their old bytes (zeros past the
//!   file's old end, or in the [`Zeroed`](DataLoss::Zeroed) image), and no later `fsync` of the
//!   file writes them, however it ends, unless they are written again. A file written over from
//!   its start ([`overwrite`](FileSystem::overwrite)) writes every byte again.
//! - Creations, renames, links and removals are durable only after `fsync` of the folder they
//!   are in. Until then a crash keeps some prefix of them, in order (as a journaling file system
//!   does). A failed `fsync` of a folder leaves them so, pending: a later `fsync` of the folder
//!   that succeeds makes them durable. (A folder's entries are metadata in the file system's
//!   journal, not pages of the page cache; what must not happen is that nothing fsyncs the
//!   folder again, and the model holds code to that.)
//! - A folder made with [`create_dir`](FileSystem::create_dir) is an entry of its parent like
//!   any other: until the parent is fsynced a crash may lose it, and every file in it with it.
//! - A rename between two names of one file does nothing, as POSIX `rename` does.
//!
//! Every mutating operation is logged ([`SimFs::ops`]). [`SimFs::crash_images`] rebuilds the
//! file system as it could be after a crash right after any number of those operations, in
//! every combination of the outcomes above. [`SimFs::inject`] makes an operation fail with a
//! full disk or an I/O error, once or from then on.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::LockTable;
use super::fs::{FileSystem, WriteFile};
use crate::storage::StorageLock;

/// A mutating file operation, as [`SimFs`] logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// A file was created (or truncated) for writing.
    Create(PathBuf),
    /// An existing file was opened to be written over from its start, in place: its old
    /// bytes stay durable until it is fsynced.
    Overwrite(PathBuf),
    /// Bytes were appended to a file (named by the path it was created at).
    Write {
        /// The file.
        path: PathBuf,
        /// How many bytes.
        len: usize,
    },
    /// A file was fsynced.
    Sync(PathBuf),
    /// A rename.
    Rename {
        /// Old name.
        from: PathBuf,
        /// New name (replaced if it existed).
        to: PathBuf,
    },
    /// A hard link.
    Link {
        /// Existing name.
        from: PathBuf,
        /// New name.
        to: PathBuf,
    },
    /// A file was removed.
    Remove(PathBuf),
    /// A folder was fsynced.
    SyncDir(PathBuf),
    /// A folder was created.
    CreateDir(PathBuf),
}

/// What a crash does to data written but not fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataLoss {
    /// Unsynced bytes are gone.
    Dropped,
    /// The first half of the unsynced bytes made it (a torn write).
    Torn,
    /// The file has its full length but the unsynced part reads as zeros.
    Zeroed,
    /// Every byte made it.
    Kept,
}

/// One state the file system could be in after a crash.
#[derive(Debug, Clone)]
pub struct CrashImage {
    /// The file system after the crash (everything in it is durable).
    pub fs: SimFs,
    /// How many of the folder operations pending at the crash were kept.
    pub entries_kept: usize,
    /// How many folder operations were pending at the crash.
    pub entries_pending: usize,
    /// What happened to unsynced data.
    pub data: DataLoss,
}

/// Which error an injected fault gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultKind {
    /// The disk is full (ENOSPC).
    NoSpace,
    /// The device failed (EIO).
    Io,
}

/// How long an injected fault lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultMode {
    /// Only the operation at the given index fails.
    Once,
    /// Every mutating operation from the given index on fails, except removing a file, which
    /// frees space and is allowed (as on a real file system that is full).
    FromThenOn,
}

/// A fault to inject: the mutating operation that would be logged at index `at` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Index in [`SimFs::ops`] of the first operation to fail.
    pub at: usize,
    /// The error.
    pub kind: FaultKind,
    /// Once or from then on.
    pub mode: FaultMode,
}

/// A simulated, in-memory file system for crash and fault tests; clones share one state.
/// It models what a real file system promises: unsynced data and folder entries may be lost or
/// torn by a crash. See [`SimFs::crash_images`] and [`SimFs::inject`].
#[derive(Debug, Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
    locks: Arc<LockTable>,
}

#[derive(Debug, Default)]
struct State {
    model: Model,
    /// Every change, in order: logged operations (with their public form), and changes without
    /// one (planted files, and the bytes a failed fsync lost), which keep the public log's
    /// indices, and so the faults armed by them, as they are.
    log: Vec<(Option<Op>, Internal)>,
    faults: Vec<Fault>,
}

#[derive(Debug, Clone, Default)]
struct Model {
    inodes: Vec<Inode>,
    live: Names,
    durable: Names,
    pending: Vec<NsOp>,
}

/// A namespace: files by path, and the folders made in it (the root and any folder a test
/// planted files in need no making).
#[derive(Debug, Clone, Default)]
struct Names {
    files: BTreeMap<PathBuf, usize>,
    dirs: BTreeSet<PathBuf>,
}

impl Names {
    /// Whether `dir` exists: the root, the empty path, or a folder that was made.
    fn has_dir(&self, dir: &Path) -> bool {
        dir.parent().is_none() || dir.as_os_str().is_empty() || self.dirs.contains(dir)
    }

    /// Whether every folder above `path` exists.
    fn reachable(&self, path: &Path) -> bool {
        path.ancestors().skip(1).all(|dir| self.has_dir(dir))
    }
}

#[derive(Debug, Clone, Default)]
struct Inode {
    /// What a reader sees.
    data: Vec<u8>,
    /// What is on the disk: the bytes the last fsync that succeeded wrote (with the old bytes,
    /// or zeros, where bytes it should have written were `lost`).
    synced: Vec<u8>,
    /// Which bytes of `data` a failed fsync lost (`true`; none past the end): their pages were
    /// marked clean, so no fsync writes them until they are written again.
    lost: Vec<bool>,
}

#[derive(Debug, Clone)]
enum NsOp {
    Link(PathBuf, usize),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf),
    MkDir(PathBuf),
}

/// An operation as it is replayed: files by inode, so replay does not depend on names.
#[derive(Debug, Clone)]
enum Internal {
    Create(PathBuf),
    Overwrite(PathBuf),
    Write(usize, Vec<u8>),
    Sync(usize),
    Rename(PathBuf, PathBuf),
    Link(PathBuf, PathBuf),
    Remove(PathBuf),
    SyncDir(PathBuf),
    MkDir(PathBuf),
    /// A test planted a durable file.
    Plant(PathBuf, Vec<u8>),
    /// A test deleted a file durably.
    Unplant(PathBuf),
    /// An fsync of the file failed: its unsynced bytes are lost (logged without a public form).
    FailedSync(usize),
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl NsOp {
    fn apply(&self, names: &mut Names) {
        match self {
            NsOp::Link(path, inode) => {
                names.files.insert(path.clone(), *inode);
            }
            NsOp::Unlink(path) => {
                names.files.remove(path);
            }
            NsOp::Rename(from, to) => {
                if let Some(inode) = names.files.remove(from) {
                    names.files.insert(to.clone(), inode);
                }
            }
            NsOp::MkDir(dir) => {
                names.dirs.insert(dir.clone());
            }
        }
    }

    /// The folder whose fsync makes this operation durable.
    fn dir(&self) -> Option<&Path> {
        match self {
            NsOp::Link(path, _) | NsOp::Unlink(path) | NsOp::MkDir(path) => path.parent(),
            NsOp::Rename(_, to) => to.parent(),
        }
    }
}

impl Model {
    fn namespace(&mut self, op: NsOp) {
        op.apply(&mut self.live);
        self.pending.push(op);
    }

    fn inode_of(&self, path: &Path) -> io::Result<usize> {
        self.live
            .files
            .get(path)
            .copied()
            .ok_or_else(|| not_found(path))
    }

    /// Applies `op`; on error nothing changed. Returns the new inode for `Create`.
    fn apply(&mut self, op: &Internal) -> io::Result<usize> {
        match op {
            Internal::Create(path) => {
                self.inodes.push(Inode::default());
                let inode = self.inodes.len() - 1;
                self.namespace(NsOp::Link(path.clone(), inode));
                return Ok(inode);
            }
            Internal::Overwrite(path) => {
                // The same file, every other name of it included: written over in place, so
                // every byte of it is written again.
                let inode = self.inode_of(path)?;
                self.inodes[inode].data.clear();
                self.inodes[inode].lost.clear();
                return Ok(inode);
            }
            Internal::Write(inode, data) => self.inodes[*inode].data.extend_from_slice(data),
            Internal::Sync(inode) => {
                let node = &mut self.inodes[*inode];
                node.synced = node.on_disk();
            }
            Internal::FailedSync(inode) => self.inodes[*inode].lose_unsynced(),
            Internal::Rename(from, to) => {
                let inode = self.inode_of(from)?;
                // POSIX: renaming one name of a file over another name of the same file does
                // nothing, and succeeds.
                if self.live.files.get(to) != Some(&inode) {
                    self.namespace(NsOp::Rename(from.clone(), to.clone()));
                }
            }
            Internal::Link(from, to) => {
                let inode = self.inode_of(from)?;
                if self.live.files.contains_key(to) {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{}: file exists", to.display()),
                    ));
                }
                self.namespace(NsOp::Link(to.clone(), inode));
            }
            Internal::Remove(path) => {
                self.inode_of(path)?;
                self.namespace(NsOp::Unlink(path.clone()));
            }
            Internal::SyncDir(dir) => {
                let (synced, pending) = std::mem::take(&mut self.pending)
                    .into_iter()
                    .partition(|op| op.dir() == Some(dir.as_path()));
                self.pending = pending;
                for op in synced {
                    op.apply(&mut self.durable);
                }
            }
            Internal::MkDir(dir) => self.namespace(NsOp::MkDir(dir.clone())),
            Internal::Plant(path, bytes) => {
                self.inodes.push(Inode {
                    data: bytes.clone(),
                    synced: bytes.clone(),
                    lost: Vec::new(),
                });
                let inode = self.inodes.len() - 1;
                for names in [&mut self.live, &mut self.durable] {
                    names.files.insert(path.clone(), inode);
                    // The folders of a planted file exist, durably.
                    let dirs = path.ancestors().skip(1).filter(|d| !names.has_dir(d));
                    let dirs: Vec<PathBuf> = dirs.map(Path::to_path_buf).collect();
                    names.dirs.extend(dirs);
                }
            }
            Internal::Unplant(path) => {
                self.live.files.remove(path);
                self.durable.files.remove(path);
            }
        }
        Ok(0)
    }

    /// The durable state after a crash: `kept` of the pending folder operations survive, and
    /// unsynced data suffers `loss`. A file or folder whose folder was lost is lost with it.
    fn crashed(&self, kept: usize, loss: DataLoss) -> Model {
        let mut names = self.durable.clone();
        for op in &self.pending[..kept] {
            op.apply(&mut names);
        }
        let reachable = names.clone();
        names.dirs.retain(|dir| reachable.reachable(dir));
        names.files.retain(|path, _| reachable.reachable(path));
        let named: BTreeSet<usize> = names.files.values().copied().collect();
        let inodes = self
            .inodes
            .iter()
            .enumerate()
            .map(|(inode, node)| {
                // A file no name reaches is gone: its bytes need no crash of their own.
                if !named.contains(&inode) {
                    return Inode::default();
                }
                let data = node.crashed(loss);
                Inode {
                    synced: data.clone(),
                    data,
                    lost: Vec::new(),
                }
            })
            .collect();
        Model {
            inodes,
            live: names.clone(),
            durable: names,
            pending: Vec::new(),
        }
    }
}

impl Inode {
    fn is_lost(&self, i: usize) -> bool {
        self.lost.get(i).copied().unwrap_or(false)
    }

    /// What an fsync that succeeds now would leave on the disk: `data`, except for the bytes
    /// a failed fsync lost, which keep what the disk has there (zeros past its end).
    fn on_disk(&self) -> Vec<u8> {
        if !self.lost.contains(&true) {
            return self.data.clone();
        }
        (0..self.data.len())
            .map(|i| match self.is_lost(i) {
                true => self.synced.get(i).copied().unwrap_or(0),
                false => self.data[i],
            })
            .collect()
    }

    /// A failed fsync: every byte it should have written (each that differs from the disk's)
    /// is lost, as Linux marks the pages whose writeback failed clean.
    fn lose_unsynced(&mut self) {
        self.lost.resize(self.data.len(), false);
        for (i, lost) in self.lost.iter_mut().enumerate() {
            *lost |= self.synced.get(i) != Some(&self.data[i]);
        }
    }

    /// The bytes after a crash: what the disk has, and what `loss` keeps of the rest. Bytes a
    /// failed fsync lost are never the new ones: their old bytes, or zeros in the
    /// [`Zeroed`](DataLoss::Zeroed) image.
    fn crashed(&self, loss: DataLoss) -> Vec<u8> {
        let data = self.on_disk();
        let mut crashed = if data.starts_with(&self.synced) {
            crashed_append(&self.synced, &data, loss)
        } else {
            crashed_overwrite(&self.synced, &data, loss)
        };
        if loss == DataLoss::Zeroed {
            for (i, byte) in crashed.iter_mut().enumerate() {
                if self.is_lost(i) {
                    *byte = 0;
                }
            }
        }
        crashed
    }
}

/// The bytes after a crash of a file whose unsynced bytes (`data` past `synced`) follow its
/// synced ones.
fn crashed_append(synced: &[u8], data: &[u8], loss: DataLoss) -> Vec<u8> {
    let unsynced = data.len() - synced.len();
    match loss {
        DataLoss::Dropped => synced.to_vec(),
        DataLoss::Torn => data[..synced.len() + unsynced / 2].to_vec(),
        DataLoss::Zeroed => {
            let mut d = synced.to_vec();
            d.resize(data.len(), 0);
            d
        }
        DataLoss::Kept => data.to_vec(),
    }
}

/// The bytes after a crash of a file written over in place since its last fsync: the old
/// bytes, the first half of the new ones over the old, zeros, or the new ones.
fn crashed_overwrite(synced: &[u8], data: &[u8], loss: DataLoss) -> Vec<u8> {
    match loss {
        DataLoss::Dropped => synced.to_vec(),
        DataLoss::Torn => {
            let half = data.len() / 2;
            let mut d = data[..half].to_vec();
            d.extend_from_slice(synced.get(half..).unwrap_or_default());
            d
        }
        DataLoss::Zeroed => vec![0; data.len()],
        DataLoss::Kept => data.to_vec(),
    }
}

impl SimFs {
    /// An empty file system.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every mutating operation so far, in order.
    #[must_use]
    pub fn ops(&self) -> Vec<Op> {
        self.state()
            .log
            .iter()
            .filter_map(|(op, _)| op.clone())
            .collect()
    }

    /// How many mutating operations have been logged.
    #[must_use]
    pub fn op_count(&self) -> usize {
        self.state()
            .log
            .iter()
            .filter(|(op, _)| op.is_some())
            .count()
    }

    /// Arms a fault.
    pub fn inject(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// The files as a reader sees them now (path to contents).
    #[must_use]
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let state = self.state();
        state
            .model
            .live
            .files
            .iter()
            .map(|(path, inode)| (path.clone(), state.model.inodes[*inode].data.clone()))
            .collect()
    }

    /// Creates or replaces `path` with `bytes`, durably and at once, outside the operation
    /// log: for planting a damaged or foreign file in a test.
    pub fn set_file(&self, path: impl Into<PathBuf>, bytes: Vec<u8>) {
        self.plant(Internal::Plant(path.into(), bytes));
    }

    /// Deletes `path` durably and at once, outside the operation log.
    pub fn delete_file(&self, path: impl Into<PathBuf>) {
        self.plant(Internal::Unplant(path.into()));
    }

    /// Every state the file system could be in after a crash right after the first
    /// `after_ops` logged operations: each prefix of the pending folder operations, combined
    /// with each kind of [`DataLoss`]. An `after_ops` past the end means the whole log.
    #[must_use]
    pub fn crash_images(&self, after_ops: usize) -> Vec<CrashImage> {
        let model = self.replay(after_ops);
        let mut images = Vec::new();
        for kept in 0..=model.pending.len() {
            for data in [
                DataLoss::Dropped,
                DataLoss::Torn,
                DataLoss::Zeroed,
                DataLoss::Kept,
            ] {
                images.push(CrashImage {
                    fs: SimFs::from_model(model.crashed(kept, data)),
                    entries_kept: kept,
                    entries_pending: model.pending.len(),
                    data,
                });
            }
        }
        images
    }

    fn from_model(model: Model) -> Self {
        SimFs {
            state: Arc::new(Mutex::new(State {
                model,
                log: Vec::new(),
                faults: Vec::new(),
            })),
            locks: Arc::default(),
        }
    }

    /// The model after the first `n` logged operations (and the files planted before the
    /// next one). The log starts from an empty file system, so replay is exact.
    fn replay(&self, n: usize) -> Model {
        let state = self.state();
        let mut model = Model::default();
        let mut applied = 0;
        for (op, internal) in &state.log {
            if op.is_some() {
                if applied == n {
                    break;
                }
                applied += 1;
            }
            // Every entry succeeded once on this same sequence of states.
            let _ = model.apply(internal);
        }
        model
    }

    /// Applies and logs a planted change (which cannot fail).
    fn plant(&self, internal: Internal) {
        let mut state = self.state();
        let _ = state.model.apply(&internal);
        state.log.push((None, internal));
    }

    /// Runs a mutating operation through the armed faults, then applies and logs it. A faulted
    /// write first writes half of its bytes, as a real short write does; a faulted fsync of a
    /// file loses the bytes it should have written (logged without a public form, so the
    /// indices of the operations after it stay as they were).
    fn run(&self, op: Op, internal: Internal) -> io::Result<usize> {
        let mut state = self.state();
        let index = state.log.iter().filter(|(op, _)| op.is_some()).count();
        let is_remove = matches!(op, Op::Remove(_));
        let fault = state.faults.iter().position(|f| match f.mode {
            FaultMode::Once => f.at == index,
            FaultMode::FromThenOn => f.at <= index && !is_remove,
        });
        if let Some(i) = fault {
            let fault = state.faults[i];
            if fault.mode == FaultMode::Once {
                state.faults.remove(i);
            }
            if let Internal::Write(inode, data) = &internal {
                let half = Internal::Write(*inode, data[..data.len() / 2].to_vec());
                if let Op::Write { path, .. } = &op {
                    let logged = Op::Write {
                        path: path.clone(),
                        len: data.len() / 2,
                    };
                    state.model.apply(&half)?;
                    state.log.push((Some(logged), half));
                }
            }
            if let Internal::Sync(inode) = internal {
                let lost = Internal::FailedSync(inode);
                state.model.apply(&lost)?;
                state.log.push((None, lost));
            }
            return Err(match fault.kind {
                FaultKind::NoSpace => io::Error::from(io::ErrorKind::StorageFull),
                FaultKind::Io => io::Error::other("injected I/O error"),
            });
        }
        let result = state.model.apply(&internal)?;
        state.log.push((Some(op), internal));
        Ok(result)
    }
}

/// A file open for writing in a [`SimFs`].
struct SimFile {
    fs: SimFs,
    inode: usize,
    path: PathBuf,
}

impl WriteFile for SimFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let op = Op::Write {
            path: self.path.clone(),
            len: bytes.len(),
        };
        self.fs
            .run(op, Internal::Write(self.inode, bytes.to_vec()))
            .map(drop)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.fs
            .run(Op::Sync(self.path.clone()), Internal::Sync(self.inode))
            .map(drop)
    }
}

impl FileSystem for SimFs {
    fn create_dir(&self, dir: &Path) -> io::Result<bool> {
        {
            let state = self.state();
            if state.model.live.has_dir(dir) {
                return Ok(false);
            }
            if !dir.parent().is_some_and(|p| state.model.live.has_dir(p)) {
                return Err(not_found(dir));
            }
        }
        let op = Op::CreateDir(dir.to_path_buf());
        self.run(op, Internal::MkDir(dir.to_path_buf()))
            .map(|_| true)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let state = self.state();
        let inode = state.model.inode_of(path)?;
        Ok(state.model.inodes[inode].data.len() as u64)
    }

    fn read(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let state = self.state();
        let inode = state.model.inode_of(path)?;
        let data = &state.model.inodes[inode].data;
        if data.len() as u64 > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        Ok(data.clone())
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<(Vec<u8>, u64)> {
        let state = self.state();
        let inode = state.model.inode_of(path)?;
        let data = &state.model.inodes[inode].data;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start.saturating_add(len).min(data.len());
        Ok((data[start..end].to_vec(), data.len() as u64))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let existing = self.state().model.live.files.get(path).copied();
        let inode = match existing {
            Some(inode) => inode,
            None => self.run(
                Op::Create(path.to_path_buf()),
                Internal::Create(path.to_path_buf()),
            )?,
        };
        Ok(Box::new(SimFile {
            fs: self.clone(),
            inode,
            path: path.to_path_buf(),
        }))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let inode = self.run(
            Op::Create(path.to_path_buf()),
            Internal::Create(path.to_path_buf()),
        )?;
        Ok(Box::new(SimFile {
            fs: self.clone(),
            inode,
            path: path.to_path_buf(),
        }))
    }

    fn overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let inode = self.run(
            Op::Overwrite(path.to_path_buf()),
            Internal::Overwrite(path.to_path_buf()),
        )?;
        Ok(Box::new(SimFile {
            fs: self.clone(),
            inode,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let op = Op::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        };
        self.run(op, Internal::Rename(from.to_path_buf(), to.to_path_buf()))
            .map(drop)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let op = Op::Link {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        };
        self.run(op, Internal::Link(from.to_path_buf(), to.to_path_buf()))
            .map(drop)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.run(
            Op::Remove(path.to_path_buf()),
            Internal::Remove(path.to_path_buf()),
        )
        .map(drop)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.run(
            Op::SyncDir(dir.to_path_buf()),
            Internal::SyncDir(dir.to_path_buf()),
        )
        .map(drop)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
        let state = self.state();
        Ok(state
            .model
            .live
            .files
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .filter_map(|(path, inode)| {
                let name = path.file_name()?.to_str()?.to_owned();
                Some((name, state.model.inodes[*inode].data.len() as u64))
            })
            .collect())
    }

    fn lock(&self, path: &Path) -> io::Result<StorageLock> {
        Ok(self.locks.lock(&path.to_string_lossy()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail_next(fs: &SimFs) {
        fs.inject(Fault {
            at: fs.op_count(),
            kind: FaultKind::Io,
            mode: FaultMode::Once,
        });
    }

    #[test]
    fn a_failed_fsync_loses_the_bytes_it_should_have_written_for_good() {
        let fs = SimFs::new();
        let path = Path::new("/journal");
        let mut file = fs.open_append(path).unwrap();
        file.write_all(b"one.").unwrap();
        file.sync().unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        file.write_all(b"two.").unwrap();
        fail_next(&fs);
        let ops = fs.op_count();
        file.sync().unwrap_err();
        // The failed fsync has no place in the public log: the indices after it stay put.
        assert_eq!(fs.op_count(), ops);
        // Readable until a crash.
        assert_eq!(fs.read(path, u64::MAX).unwrap(), b"one.two.");
        // A later fsync that succeeds writes what was written since, not the lost bytes.
        file.write_all(b"six.").unwrap();
        file.sync().unwrap();
        for after in [ops, fs.op_count()] {
            for image in fs.crash_images(after) {
                let bytes = image.fs.files()[path].clone();
                assert!(bytes.starts_with(b"one."), "{image:?}: {bytes:?}");
                let lost = bytes.get(4..8).unwrap_or_default();
                assert!(
                    lost.iter().all(|&b| b == 0),
                    "after {after} ops, {:?}: the lost bytes came back: {bytes:?}",
                    image.data
                );
            }
        }
        let last = fs.crash_images(fs.op_count());
        assert!(
            last.iter()
                .all(|image| image.fs.files()[path] == b"one.\0\0\0\0six."),
            "the file keeps its length, the lost bytes zeros, the later ones durable"
        );
    }

    #[test]
    fn lost_bytes_written_over_again_are_written_by_the_next_fsync() {
        let fs = SimFs::new();
        let path = Path::new("/spare");
        fs.set_file(path, b"old bytes".to_vec());
        let mut file = fs.overwrite(path).unwrap();
        file.write_all(b"NEW_BYTES").unwrap();
        fail_next(&fs);
        file.sync().unwrap_err();
        for image in fs.crash_images(fs.op_count()) {
            let bytes = image.fs.files()[path].clone();
            assert!(
                bytes == b"old bytes" || bytes == [0; 9],
                "{:?}: {bytes:?}",
                image.data
            );
        }
        // Written over again from the start: every byte is written again.
        let mut again = fs.overwrite(path).unwrap();
        again.write_all(b"NEW_BYTES").unwrap();
        again.sync().unwrap();
        for image in fs.crash_images(fs.op_count()) {
            assert_eq!(image.fs.files()[path], b"NEW_BYTES");
        }
    }

    #[test]
    fn a_failed_folder_fsync_leaves_its_entries_pending_until_one_succeeds() {
        let fs = SimFs::new();
        let dir = Path::new("/saves");
        fs.create_dir(dir).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let mut file = fs.create(&dir.join("a")).unwrap();
        file.write_all(b"a").unwrap();
        file.sync().unwrap();
        fail_next(&fs);
        fs.sync_dir(dir).unwrap_err();
        let pending = fs.crash_images(fs.op_count());
        assert!(
            pending
                .iter()
                .any(|i| !i.fs.files().contains_key(&dir.join("a")))
        );
        fs.sync_dir(dir).unwrap();
        for image in fs.crash_images(fs.op_count()) {
            assert_eq!(image.fs.files()[&dir.join("a")], b"a");
        }
    }
}
