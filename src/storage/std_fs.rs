//! [`StdFs`]: the real file system, through `std::fs`, with a file written over in place where
//! no other name shares it (Unix).

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::file_system::{FileSystem, WriteFile};
use super::{Identity, StorageLock};

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

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let end = self.0.stream_position()?;
        write_within(&mut self.0, offset, bytes, end)
    }

    fn sync(&mut self) -> io::Result<()> {
        // The data and what reading it back needs (its length, its blocks: fdatasync writes
        // them), not the times it was changed at, which are not worth a journal commit. The
        // file's name is made durable by the folder's fsync.
        self.0.sync_data()
    }
}

/// A file written over from its start ([`FileSystem::overwrite`]): how far it is written, and
/// how long it was. Unix only, where a file's other names can be counted.
#[cfg(unix)]
struct StdOverwrite {
    file: std::fs::File,
    written: u64,
    len: u64,
}

#[cfg(unix)]
impl WriteFile for StdOverwrite {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        write_within(&mut self.file, offset, bytes, self.written)
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.written != self.len {
            self.file.set_len(self.written)?;
            self.len = self.written;
        }
        // The data and what reading it back needs (its length, its blocks); the times the
        // file was changed at are not worth a journal commit.
        self.file.sync_data()
    }
}

/// Writes `bytes` over `file` from `offset`, within the `end` bytes written so far, and goes
/// back to `end` for the next write.
fn write_within(file: &mut std::fs::File, offset: u64, bytes: &[u8], end: u64) -> io::Result<()> {
    if offset
        .checked_add(bytes.len() as u64)
        .is_none_or(|stop| stop > end)
    {
        return Err(super::sink::past_the_end(offset, bytes.len()));
    }
    file.seek(SeekFrom::Start(offset))?;
    let written = file.write_all(bytes);
    // Back to the end whatever the write did, so that no later write lands inside the file.
    file.seek(SeekFrom::Start(end))?;
    written
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

    /// On Unix, from the file's status: device, inode, length, and its modification and
    /// status-change times. Elsewhere `None`: the times alone could miss a change.
    fn identity(&self, path: &Path) -> io::Result<Option<Identity>> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::metadata(path)?;
            let at = |secs: i64, nanos: i64| {
                let nanos = u32::try_from(nanos).unwrap_or(0);
                match u64::try_from(secs) {
                    Ok(secs) => std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos),
                    Err(_) => std::time::UNIX_EPOCH,
                }
            };
            Ok(Some(Identity {
                file: (meta.dev(), meta.ino()),
                len: meta.len(),
                modified: at(meta.mtime(), meta.mtime_nsec()),
                changed: at(meta.ctime(), meta.ctime_nsec()),
            }))
        }
        #[cfg(not(unix))]
        {
            let _ = std::fs::metadata(path)?;
            Ok(None)
        }
    }

    /// One open file, read in order into one buffer: every piece comes from the same file
    /// (a rename over the name meanwhile does not mix two files), and a large file costs no
    /// new memory per piece.
    fn read_pieces(
        &self,
        path: &Path,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<u64> {
        let mut file = std::fs::File::open(path)?;
        let len = file.seek(SeekFrom::End(0))?;
        file.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0; usize::try_from(len).unwrap_or(usize::MAX).min(piece.max(1))];
        let mut left = len;
        while left > 0 {
            let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
            let mut filled = 0;
            while filled < want {
                match file.read(&mut buf[filled..want]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if filled == 0 || !each(&buf[..filled]) {
                break;
            }
            left -= filled as u64;
        }
        Ok(len)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<(Vec<u8>, u64)> {
        let mut file = std::fs::File::open(path)?;
        // The length from a seek to the end: a load menu reads a hundred heads, and a seek
        // costs less than a stat.
        let file_len = file.seek(SeekFrom::End(0))?;
        let available = file_len.saturating_sub(offset);
        let want = usize::try_from(available).unwrap_or(len).min(len);
        Ok((read_range(&mut file, offset, want)?, file_len))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        Ok(Box::new(StdFile(std::fs::File::create(path)?)))
    }

    fn overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            let meta = file.metadata()?;
            // Another name of the file would see it change: such a file gets no bytes
            // written over it.
            if meta.is_file() && meta.nlink() == 1 {
                return Ok(Box::new(StdOverwrite {
                    file,
                    written: 0,
                    len: meta.len(),
                }));
            }
        }
        // A new file, not this one truncated, whatever other names it has.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        self.create(path)
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
        files_of(dir, |entry| {
            let meta = entry.metadata()?;
            Ok(meta.is_file().then_some(meta.len()))
        })
    }

    fn list_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        let names = files_of(dir, |entry| {
            // The folder entry's own type (no stat, where the file system records it); a
            // symbolic link is followed, as `list_dir`'s metadata does.
            let kind = entry.file_type()?;
            let is_file = if kind.is_symlink() {
                entry.path().is_file()
            } else {
                kind.is_file()
            };
            Ok(is_file.then_some(()))
        })?;
        Ok(names.into_iter().map(|(name, ())| name).collect())
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

/// The files of `dir` whose entry `look` keeps (`Some`), by name, with what it kept; an entry
/// removed between the folder's read and the look at it is not there any more, and a name
/// that is not UTF-8 is no file of the library's.
fn files_of<T>(
    dir: &Path,
    mut look: impl FnMut(&std::fs::DirEntry) -> io::Result<Option<T>>,
) -> io::Result<Vec<(String, T)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kept = match look(&entry) {
            Ok(kept) => kept,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if let (Some(kept), Some(name)) = (kept, entry.file_name().to_str()) {
            out.push((name.to_owned(), kept));
        }
    }
    Ok(out)
}

/// Reads up to `len` bytes of `file` from `offset` (fewer at its end): one positioned read
/// where the platform has them, with no seek before it.
#[cfg(unix)]
fn read_range(file: &mut std::fs::File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Reads up to `len` bytes of `file` from `offset` (fewer at its end).
#[cfg(not(unix))]
fn read_range(file: &mut std::fs::File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    file.seek(SeekFrom::Start(offset))?;
    file.take(len as u64).read_to_end(&mut buf)?;
    Ok(buf)
}
