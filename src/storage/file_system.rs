//! The file operations [`FsStorage`](super::FsStorage) is built from: [`FileSystem`] and the
//! [`WriteFile`] it opens. [`StdFs`](super::StdFs) is the real file system; `SimFs` (feature
//! `testing`) simulates one for crash and fault tests.

use std::fmt;
use std::io;
use std::path::Path;

use super::{Identity, StorageLock};

/// A file being written: what [`FileSystem::create`] returns.
pub trait WriteFile: Send {
    /// Writes all of `bytes` at the end of the file.
    ///
    /// # Errors
    /// The operating system's error (a full disk, say).
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Writes all of `bytes` over the file's bytes from `offset`, within what was written;
    /// the next [`write_all`](Self::write_all) still writes at the end.
    ///
    /// # Errors
    /// The operating system's error; `InvalidInput` when the range runs past what was written.
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;

    /// Flushes the file's data to durable storage (`fsync`).
    ///
    /// # Errors
    /// The operating system's error.
    fn sync(&mut self) -> io::Result<()>;
}

/// The file operations [`FsStorage`](super::FsStorage) is built from. [`StdFs`](super::StdFs) is the real file system;
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

    /// The file's [`Identity`], or `None` where the file system cannot give one (the
    /// default). A simulated file system leaves it `None`, so every check it makes reads the
    /// file.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` if there is no file.
    fn identity(&self, path: &Path) -> io::Result<Option<Identity>> {
        let _ = path;
        Ok(None)
    }

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

    /// Reads the file from its start to its end, at most `piece` bytes at a time, handing each
    /// piece in order to `each`, which returns `false` to stop early; returns the file's length
    /// when the read began, or, where the length is seen to change during the read, the new
    /// length (and the read stops there). The default calls [`read_at`](FileSystem::read_at)
    /// for each piece; a file system that can keep the file open overrides it, reading every
    /// piece from the same file into one buffer.
    ///
    /// # Errors
    /// The operating system's error; `NotFound` if there is no file.
    fn read_pieces(
        &self,
        path: &Path,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<u64> {
        let mut offset = 0u64;
        let mut len = None;
        loop {
            let (bytes, file_len) = self.read_at(path, offset, piece.max(1))?;
            let len = *len.get_or_insert(file_len);
            if file_len != len {
                return Ok(file_len);
            }
            if bytes.is_empty() || !each(&bytes) {
                return Ok(len);
            }
            offset += bytes.len() as u64;
            if offset >= len {
                return Ok(len);
            }
        }
    }

    /// Creates (or truncates) the file at `path` for writing.
    ///
    /// # Errors
    /// The operating system's error.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;

    /// Opens the file at `path`, which exists and has no other name, to be written again
    /// from its start, keeping the storage it has: [`sync`](WriteFile::sync) cuts it to the
    /// length written. Writing over blocks a file already has gives its fsync no blocks to
    /// allocate (and the file it replaces none to free), which on a journaling file system
    /// makes a save's fsync about half as long as a new file's. The default is
    /// [`create`](Self::create). [`StdFs`](super::StdFs) writes over the file where it can tell that no other
    /// name shares it (on Unix), and otherwise removes that name and creates a new file.
    ///
    /// # Errors
    /// The operating system's error.
    fn overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        self.create(path)
    }

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

    /// The names of the regular files in `dir`: [`list_dir`](Self::list_dir) without the
    /// lengths. The default takes them from `list_dir`.
    ///
    /// # Errors
    /// The operating system's error.
    fn list_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        Ok(self
            .list_dir(dir)?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    /// Takes an exclusive advisory lock on the file `path` (created if missing), waiting for
    /// other holders. Released when the returned guard drops.
    ///
    /// # Errors
    /// The operating system's error.
    fn lock(&self, path: &Path) -> io::Result<StorageLock>;
}
