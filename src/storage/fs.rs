//! Save files in a folder: [`FsStorage`], over the [`FileSystem`] primitives.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Head, Storage, StorageLock, StoredFile, backup_name};
use crate::error::{Error, Result};

/// A file being written: what [`FileSystem::create`] returns.
pub trait WriteFile: Send {
    /// Writes all of `bytes` at the end of the file.
    ///
    /// # Errors
    /// The operating system's error (a full disk, say).
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Flushes the file's data to durable storage (`fsync`).
    ///
    /// # Errors
    /// The operating system's error.
    fn sync(&mut self) -> io::Result<()>;
}

/// The file operations [`FsStorage`] is built from. [`StdFs`] is the real file system;
/// `SimFs` (feature `testing`) simulates one for crash and fault tests.
///
/// Every mutating operation is separate (create, write, fsync, rename, link, remove, fsync of
/// the folder), so a simulation can crash or fail between any two of them.
pub trait FileSystem: Send + Sync + fmt::Debug + 'static {
    /// Creates the folder `dir`: `Ok(true)` if it made it, `Ok(false)` if it already existed.
    /// Its entry in its parent is durable only once the parent is fsynced.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` when the parent does not exist.
    fn create_dir(&self, dir: &Path) -> io::Result<bool>;

    /// The length of the file at `path`; an error of kind `NotFound` if there is none.
    ///
    /// # Errors
    /// The operating system's error.
    fn file_len(&self, path: &Path) -> io::Result<u64>;

    /// Reads the whole file. Reads at most `limit + 1` bytes, so a file that grew past `limit`
    /// is noticed without reading it whole.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` if there is no file.
    fn read(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>>;

    /// Reads up to `len` bytes from byte `offset` of the file, and returns the file's length.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` if there is no file.
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<(Vec<u8>, u64)>;

    /// Creates (or truncates) the file at `path` for writing.
    ///
    /// # Errors
    /// The operating system's error.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;

    /// Opens the file at `path` for appending, creating it if missing.
    ///
    /// # Errors
    /// The operating system's error.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;

    /// Renames `from` to `to`, atomically replacing `to`.
    ///
    /// # Errors
    /// The operating system's error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Makes `to` a second name of the file `from` (a hard link). `to` must not exist.
    ///
    /// # Errors
    /// The operating system's error; `Unsupported` or `PermissionDenied` where the file system
    /// has no hard links (the caller then copies).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file at `path`.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` if there is no file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Makes the folder's entries (creations, renames, removals) durable.
    ///
    /// # Errors
    /// The operating system's error.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// The regular files in `dir`, with their lengths.
    ///
    /// # Errors
    /// The operating system's error.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<(String, u64)>>;

    /// Takes an exclusive advisory lock on the file `path` (created if missing), waiting for
    /// other holders. Released when the returned guard drops.
    ///
    /// # Errors
    /// The operating system's error.
    fn lock(&self, path: &Path) -> io::Result<StorageLock>;
}

/// The real file system, through `std::fs`.
///
/// On Unix the folder is fsynced after renames. Windows has no folder fsync; there `sync_dir`
/// does nothing, and durability of the rename rests on NTFS's journal.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdFs;

struct StdFile(std::fs::File);

impl WriteFile for StdFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }
}

impl FileSystem for StdFs {
    fn create_dir(&self, dir: &Path) -> io::Result<bool> {
        match std::fs::create_dir(dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let meta = std::fs::metadata(path)?;
        if meta.is_file() {
            Ok(meta.len())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                "not a regular file",
            ))
        }
    }

    fn read(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        if len > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
        if buf.len() as u64 > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        Ok(buf)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<(Vec<u8>, u64)> {
        let mut file = std::fs::File::open(path)?;
        let file_len = file.metadata()?.len();
        let available = file_len.saturating_sub(offset);
        let mut buf = Vec::with_capacity(usize::try_from(available).unwrap_or(len).min(len));
        if available > 0 {
            file.seek(SeekFrom::Start(offset))?;
            file.take(len as u64).read_to_end(&mut buf)?;
        }
        Ok((buf, file_len))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        Ok(Box::new(StdFile(std::fs::File::create(path)?)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Box::new(StdFile(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::fs::File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(())
        }
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                // Removed between read_dir and metadata: not there any more.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
                out.push((name.to_owned(), meta.len()));
            }
        }
        Ok(out)
    }

    fn lock(&self, path: &Path) -> io::Result<StorageLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        file.lock()?;
        // Closing the file releases the lock.
        Ok(StorageLock::new(file))
    }
}

/// Save files in one folder, written crash-safely.
///
/// An append (of a journal record) writes at the end of the file and fsyncs it, and fsyncs the
/// folder when it created the file. A write goes: write `name.tmp`, fsync it; rotate the backups (`name.bak{i}` to
/// `name.bak{i+1}`), hard-link the current `name` as `name.bak1` (copying it where the file
/// system has no hard links); rename `name.tmp` over `name`; fsync the folder. At every instant
/// `name` is either the old file or the new one.
///
/// Temporary files (`*.tmp`) and lock files (`.name.lock`) are skipped by
/// [`list`](Storage::list); a temporary file left by a crash is removed by the next write of the
/// same name.
#[derive(Debug, Clone)]
pub struct FsStorage {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
}

impl FsStorage {
    /// Save files in `dir` on the real file system (created if missing, with its parents; see
    /// [`with_file_system`](Self::with_file_system)).
    ///
    /// # Errors
    /// [`Error::Io`] if the folder cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        Self::with_file_system(dir, StdFs)
    }

    /// Save files in `dir` of the file system `fs` (a `SimFs` (feature `testing`) in crash tests).
    ///
    /// A folder that is missing is created, with its missing parents, and made durable before
    /// this returns: the parent of each folder it created is fsynced, from the top down. So a
    /// power cut after the first save returned `Ok` cannot take the new folder, and the save
    /// with it.
    ///
    /// # Errors
    /// [`Error::Io`] if a folder cannot be created or made durable. Should an fsync fail, the
    /// folders already made are left in place; a later call finds them there and, not having
    /// made them, does not fsync their parents again.
    pub fn with_file_system(dir: impl Into<PathBuf>, fs: impl FileSystem) -> Result<Self> {
        let dir = dir.into();
        let mut created = Vec::new();
        create_dirs(&fs, &dir, &mut created)?;
        for made in &created {
            let parent = match made.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
        }
        Ok(FsStorage {
            dir,
            fs: Arc::new(fs),
        })
    }

    /// The folder the files are in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        match self.fs.file_len(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn remove_if_exists(&self, path: &Path) -> Result<()> {
        match self.fs.remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io(path, e)),
            _ => Ok(()),
        }
    }

    fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let mut file = self.fs.create(path).map_err(|e| Error::io(path, e))?;
        file.write_all(bytes).map_err(|e| Error::io(path, e))?;
        file.sync().map_err(|e| Error::io(path, e))
    }

    /// The write itself, after the temporary file is known to be ours.
    fn replace(&self, name: &str, tmp: &Path, bytes: &[u8], keep_previous: u32) -> Result<()> {
        let target = self.dir.join(name);
        self.write_file(tmp, bytes)?;
        if keep_previous > 0 && self.exists(&target)? {
            for i in (1..keep_previous).rev() {
                let from = self.dir.join(backup_name(name, i));
                if self.exists(&from)? {
                    let to = self.dir.join(backup_name(name, i + 1));
                    self.fs
                        .rename(&from, &to)
                        .map_err(|e| Error::io(&from, e))?;
                }
            }
            let staged = self.dir.join(format!("{name}.bak.tmp"));
            self.remove_if_exists(&staged)?;
            match self.fs.hard_link(&target, &staged) {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Unsupported | io::ErrorKind::PermissionDenied
                    ) =>
                {
                    let old = self
                        .fs
                        .read(&target, u64::MAX)
                        .map_err(|e| Error::io(&target, e))?;
                    self.write_file(&staged, &old)?;
                }
                Err(e) => return Err(Error::io(&staged, e)),
            }
            let first = self.dir.join(backup_name(name, 1));
            self.fs
                .rename(&staged, &first)
                .map_err(|e| Error::io(&staged, e))?;
            // A crash between the two renames of an earlier write can leave `name.bak1` a
            // second name of `name`. Renaming one name of a file over another does nothing
            // (POSIX), so `name.bak.tmp` is still there: the backup is right, and the stray
            // name goes.
            if self.exists(&staged)? {
                self.fs
                    .remove_file(&staged)
                    .map_err(|e| Error::io(&staged, e))?;
            }
        }
        self.fs
            .rename(tmp, &target)
            .map_err(|e| Error::io(tmp, e))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))
    }
}

impl Storage for FsStorage {
    fn locate(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let path = self.dir.join(name);
        let size = match self.fs.file_len(&path) {
            Ok(size) => size,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        if size > limit {
            return Err(Error::TooLarge { path, size, limit });
        }
        match self.fs.read(&path, limit) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::FileTooLarge => Err(Error::TooLarge {
                path,
                size: limit.saturating_add(1),
                limit,
            }),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> Result<Option<Head>> {
        let path = self.dir.join(name);
        match self.fs.read_at(&path, offset, len) {
            Ok((bytes, file_len)) => Ok(Some(Head { bytes, file_len })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn append(&self, name: &str, bytes: &[u8]) -> Result<()> {
        check_name(name)?;
        let path = self.dir.join(name);
        let existed = self.exists(&path)?;
        let mut file = self
            .fs
            .open_append(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(bytes).map_err(|e| Error::io(&path, e))?;
        file.sync().map_err(|e| Error::io(&path, e))?;
        if !existed {
            // A new file's name is durable only once its folder is.
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io(&self.dir, e))?;
        }
        Ok(())
    }

    fn write(&self, name: &str, bytes: &[u8], keep_previous: u32) -> Result<()> {
        check_name(name)?;
        let tmp = self.dir.join(format!("{name}.tmp"));
        let result = self.replace(name, &tmp, bytes, keep_previous);
        if result.is_err() {
            // Best effort: the error that matters is the one being returned. A temporary file
            // that cannot be removed now is removed by the next write of this name.
            let _ = self.fs.remove_file(&tmp);
            let _ = self
                .fs
                .remove_file(&self.dir.join(format!("{name}.bak.tmp")));
        }
        result
    }

    fn remove(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let path = self.dir.join(name);
        match self.fs.remove_file(&path) {
            Ok(()) => self
                .fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io(&self.dir, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn list(&self) -> Result<Vec<StoredFile>> {
        let entries = self
            .fs
            .list_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        Ok(entries
            .into_iter()
            .filter(|(name, _)| !name.starts_with('.') && !name.ends_with(".tmp"))
            .map(|(name, len)| StoredFile { name, len })
            .collect())
    }

    fn lock(&self, name: &str) -> Result<StorageLock> {
        check_name(name)?;
        let path = self.dir.join(format!(".{name}.lock"));
        self.fs.lock(&path).map_err(|e| Error::io(path, e))
    }
}

/// Creates `dir` and its missing parents, pushing each folder it made onto `created`, top
/// first. The folder itself is tried first: when it exists, that is the only call.
fn create_dirs(fs: &dyn FileSystem, dir: &Path, created: &mut Vec<PathBuf>) -> Result<()> {
    match fs.create_dir(dir) {
        Ok(true) => created.push(dir.to_path_buf()),
        Ok(false) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match dir.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => {
                    create_dirs(fs, parent, created)?;
                }
                _ => return Err(Error::io(dir, e)),
            }
            if fs.create_dir(dir).map_err(|e| Error::io(dir, e))? {
                created.push(dir.to_path_buf());
            }
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    Ok(())
}

/// Refuses names that would escape the folder or collide with internal files.
fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.ends_with(".tmp")
        || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(Error::Config {
            reason: format!("{name:?} is not a usable storage name"),
        });
    }
    Ok(())
}
