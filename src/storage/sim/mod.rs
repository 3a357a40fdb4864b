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

mod model;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use model::DataLoss;
use model::{Internal, Model, not_found};

use crate::storage::file_system::{FileSystem, WriteFile};
use crate::storage::{LockTable, StorageLock};

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
    /// Bytes were written over a file's bytes already written, from `offset`.
    WriteAt {
        /// The file.
        path: PathBuf,
        /// Where the write starts.
        offset: u64,
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
            if let Internal::WriteAt(inode, offset, data) = &internal {
                let half = Internal::WriteAt(*inode, *offset, data[..data.len() / 2].to_vec());
                if let Op::WriteAt { path, offset, .. } = &op {
                    let logged = Op::WriteAt {
                        path: path.clone(),
                        offset: *offset,
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

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let op = Op::WriteAt {
            path: self.path.clone(),
            offset,
            len: bytes.len(),
        };
        self.fs
            .run(op, Internal::WriteAt(self.inode, offset, bytes.to_vec()))
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
mod tests;
