//! The model behind [`SimFs`](super::SimFs): files by inode with what a reader sees and what
//! is on the disk, the folders' entries live, durable and pending, and how each crash outcome
//! ([`DataLoss`]) rebuilds the disk.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

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

#[derive(Debug, Clone, Default)]
pub(super) struct Model {
    pub(super) inodes: Vec<Inode>,
    pub(super) live: Names,
    pub(super) durable: Names,
    pub(super) pending: Vec<NsOp>,
}

/// A namespace: files by path, and the folders made in it (the root and any folder a test
/// planted files in need no making).
#[derive(Debug, Clone, Default)]
pub(super) struct Names {
    pub(super) files: BTreeMap<PathBuf, usize>,
    pub(super) dirs: BTreeSet<PathBuf>,
}

impl Names {
    /// Whether `dir` exists: the root, the empty path, or a folder that was made.
    pub(super) fn has_dir(&self, dir: &Path) -> bool {
        dir.parent().is_none() || dir.as_os_str().is_empty() || self.dirs.contains(dir)
    }

    /// Whether every folder above `path` exists.
    pub(super) fn reachable(&self, path: &Path) -> bool {
        path.ancestors().skip(1).all(|dir| self.has_dir(dir))
    }
}

#[derive(Debug, Clone, Default)]
pub(super) struct Inode {
    /// What a reader sees.
    pub(super) data: Vec<u8>,
    /// What is on the disk: the bytes the last fsync that succeeded wrote (with the old bytes,
    /// or zeros, where bytes it should have written were `lost`).
    pub(super) synced: Vec<u8>,
    /// Which bytes of `data` a failed fsync lost (`true`; none past the end): their pages were
    /// marked clean, so no fsync writes them until they are written again.
    pub(super) lost: Vec<bool>,
}

#[derive(Debug, Clone)]
pub(super) enum NsOp {
    Link(PathBuf, usize),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf),
    MkDir(PathBuf),
}

/// An operation as it is replayed: files by inode, so replay does not depend on names.
#[derive(Debug, Clone)]
pub(super) enum Internal {
    Create(PathBuf),
    Overwrite(PathBuf),
    Write(usize, Vec<u8>),
    WriteAt(usize, u64, Vec<u8>),
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

pub(super) fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl NsOp {
    pub(super) fn apply(&self, names: &mut Names) {
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
    pub(super) fn dir(&self) -> Option<&Path> {
        match self {
            NsOp::Link(path, _) | NsOp::Unlink(path) | NsOp::MkDir(path) => path.parent(),
            NsOp::Rename(_, to) => to.parent(),
        }
    }
}

impl Model {
    pub(super) fn namespace(&mut self, op: NsOp) {
        op.apply(&mut self.live);
        self.pending.push(op);
    }

    pub(super) fn inode_of(&self, path: &Path) -> io::Result<usize> {
        self.live
            .files
            .get(path)
            .copied()
            .ok_or_else(|| not_found(path))
    }

    /// Applies `op`; on error nothing changed. Returns the new inode for `Create`.
    pub(super) fn apply(&mut self, op: &Internal) -> io::Result<usize> {
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
            Internal::WriteAt(inode, offset, data) => {
                let node = &mut self.inodes[*inode];
                let range = usize::try_from(*offset)
                    .ok()
                    .and_then(|start| Some(start..start.checked_add(data.len())?))
                    .filter(|range| range.end <= node.data.len())
                    .ok_or_else(|| crate::storage::sink::past_the_end(*offset, data.len()))?;
                node.data[range.clone()].copy_from_slice(data);
                // Written again: dirty again, so the next fsync writes them.
                for lost in node.lost.iter_mut().take(range.end).skip(range.start) {
                    *lost = false;
                }
            }
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
    pub(super) fn crashed(&self, kept: usize, loss: DataLoss) -> Model {
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
    pub(super) fn is_lost(&self, i: usize) -> bool {
        self.lost.get(i).copied().unwrap_or(false)
    }

    /// What an fsync that succeeds now would leave on the disk: `data`, except for the bytes
    /// a failed fsync lost, which keep what the disk has there (zeros past its end).
    pub(super) fn on_disk(&self) -> Vec<u8> {
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
    pub(super) fn lose_unsynced(&mut self) {
        self.lost.resize(self.data.len(), false);
        for (i, lost) in self.lost.iter_mut().enumerate() {
            *lost |= self.synced.get(i) != Some(&self.data[i]);
        }
    }

    /// The bytes after a crash: what the disk has, and what `loss` keeps of the rest. Bytes a
    /// failed fsync lost are never the new ones: their old bytes, or zeros in the
    /// [`Zeroed`](DataLoss::Zeroed) image.
    pub(super) fn crashed(&self, loss: DataLoss) -> Vec<u8> {
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
pub(super) fn crashed_append(synced: &[u8], data: &[u8], loss: DataLoss) -> Vec<u8> {
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
pub(super) fn crashed_overwrite(synced: &[u8], data: &[u8], loss: DataLoss) -> Vec<u8> {
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
