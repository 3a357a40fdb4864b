//! Save files in a folder: [`FsStorage`], over the [`FileSystem`] primitives (the real file
//! system, [`StdFs`], is in `std_fs.rs`; the primitives in `file_system.rs`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::file_system::{FileSystem, WriteFile};
use super::std_fs::StdFs;
use super::{Head, Identity, Storage, StorageLock, StoredFile, StreamSink, too_large};
use crate::error::{Error, Result};

/// Save files in one folder, written crash-safely.
///
/// - A put writes `name.tmp`, fsyncs it, renames it over `name`, and fsyncs the folder. At
///   every instant `name` is either the old file or the new one.
/// - [`put_after`](Storage::put_after) runs its `first` between the fsync of `name.tmp` and the
///   rename, so the manager's backup rotation happens once the new bytes are safe, and is made
///   durable by the same folder fsync as the new file.
/// - The file a save's backup rotation drops (the oldest backup) is kept as the slot's hidden
///   spare, `.name.spare`, and the next put of `name` renames it to `name.tmp` and writes
///   over it ([`FileSystem::overwrite`]) instead of making a new file: on ext4 that halves a
///   save's write and fsync. It costs one file of the slot's size on the disk, and goes when
///   the slot is deleted. A manager that keeps no backups makes no spare.
/// - A copy is a hard link (a copy of the bytes, fsynced, where the file system has no hard
///   links) made as `to.tmp` and renamed over `to`; the next put or delete makes it durable.
/// - An append writes at the end of the file and fsyncs it, and fsyncs the folder when it
///   created the file or the folder owes an fsync (below).
/// - A lock is an `flock` on `.name.lock`, so it excludes other processes too.
///
/// Temporary files (`*.tmp`), lock files (`.name.lock`) and spares are skipped by
/// [`list`](Storage::list); a temporary file left by a crash is removed by the next put of the
/// same name.
///
/// # A failed fsync is final
///
/// On Linux an fsync that fails has marked the pages it failed to write clean: no later fsync
/// writes them, and after a power cut they are gone. So nothing here trusts a write whose
/// fsync failed, nor a folder whose fsync failed:
///
/// - A put whose file fsync fails removes its temporary file: the new bytes never reach the
///   name. One whose folder fsync fails (after the rename) returns the error, with the new
///   file, whole and fsynced, in place; the folder's next fsync makes its entry durable.
/// - The folder owes an fsync after any change to its entries that no folder fsync has
///   covered yet (one that failed, a copy, an operation that failed part-way). Puts and
///   deletes that remove a file fsync the folder anyway; an append to a file that exists,
///   which needs no folder fsync of its own, and a delete of a name already gone fsync it when
///   it is owed, so neither returns `Ok` while a name this storage made or removed may not
///   survive a power cut. (What an earlier run left unsynced the storage cannot know: every
///   put, and every append that creates its file, fsyncs the folder, and the manager puts a
///   journal it did not write itself whole rather than append to it.)
/// - Every folder above [`dir`](Self::dir) is fsynced once, from the top down, before the
///   storage's first change goes on (every put, put after, delete, copy and append waits for
///   it): its entry in its parent may be one an earlier run made and failed to fsync (the
///   folders exist, so nothing would create them, nor fsync their parents, again). Those
///   this storage's creation already fsynced are skipped. One whose fsync fails fails the
///   change, and is fsynced again by the next. One that cannot be fsynced at all is
///   skipped, lest a folder outside the game's reach fail every save: one this process may
///   not open (permission denied), one on a file system without folder fsyncs, or a
///   read-only one (nothing there waits to be written). Loads fsync nothing, so a save
///   folder on read-only media reads as before.
///
/// An append whose fsync failed leaves its bytes readable at the end of the file, and not
/// durable: the caller's to cut away (see [`Storage::append`]; the manager does).
#[derive(Debug, Clone)]
pub struct FsStorage {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    durability: Arc<Durability>,
}

/// What of the folder's entries, and of the folders above it, is not known to be durable.
#[derive(Debug)]
struct Durability {
    /// The folders above the save folder still to be fsynced, top first.
    ancestors: Mutex<Vec<PathBuf>>,
    /// How many changes to the folder's entries have been made (counted once each is done).
    changes: AtomicU64,
    /// How many of them the last folder fsync that succeeded began after.
    synced: AtomicU64,
}

impl Durability {
    /// A storage's durability at its start: `ancestors` (top first) to fsync, and no change
    /// of its own to the folder yet.
    fn new(ancestors: Vec<PathBuf>) -> Self {
        Durability {
            ancestors: Mutex::new(ancestors),
            changes: AtomicU64::new(0),
            synced: AtomicU64::new(0),
        }
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    fn folder_owed(&self) -> bool {
        self.changes.load(Ordering::SeqCst) > self.synced.load(Ordering::SeqCst)
    }
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
    /// A folder that exists is left as it is, and nothing is fsynced; but every folder above
    /// `dir` not fsynced here is fsynced before the storage's first change (see
    /// [A failed fsync is final](#a-failed-fsync-is-final)), so a folder whose fsync failed
    /// before, in this run or an earlier one, is fsynced again before a save into it returns
    /// `Ok`.
    ///
    /// # Errors
    /// [`Error::Io`] if a folder cannot be created or made durable. Should an fsync fail, the
    /// folders already made are left in place; a later storage over them finds them there,
    /// and fsyncs the folders above `dir` before its first change.
    pub fn with_file_system(dir: impl Into<PathBuf>, fs: impl FileSystem) -> Result<Self> {
        let dir = dir.into();
        let mut created = Vec::new();
        create_dirs(&fs, &dir, &mut created)?;
        let mut ancestors = ancestors(&dir);
        for made in &created {
            let parent = parent_of(made);
            fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
            ancestors.retain(|a| a != parent);
        }
        Ok(FsStorage {
            dir,
            fs: Arc::new(fs),
            durability: Arc::new(Durability::new(ancestors)),
        })
    }

    /// The folder the files are in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        match self.fs.file_len(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn write_file(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        write_to(self.fs.create(path)?, bytes)
    }

    /// The slot file `name`'s spare (see [`Storage::rotate_dropping`]), and the name it is
    /// linked at until the rotation that drops it has run.
    fn spare_paths(&self, name: &str) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!(".{name}.spare")),
            self.dir.join(format!(".{name}.spare.tmp")),
        )
    }

    /// Fsyncs the folder: every change to its entries made before this began is durable when
    /// it returns `Ok`.
    fn sync_dir(&self) -> io::Result<()> {
        let changes = self.durability.changes.load(Ordering::SeqCst);
        self.fs.sync_dir(&self.dir)?;
        self.durability.synced.fetch_max(changes, Ordering::SeqCst);
        Ok(())
    }

    /// Fsyncs the folder if a change to its entries is not known to be durable.
    fn sync_dir_if_owed(&self) -> io::Result<()> {
        match self.durability.folder_owed() {
            true => self.sync_dir(),
            false => Ok(()),
        }
    }

    /// Fsyncs the folders above the save folder not yet fsynced, top first: what every change
    /// waits for (see [A failed fsync is final](#a-failed-fsync-is-final)). Once they all
    /// were, this costs a look at an empty list.
    fn sync_ancestors(&self) -> io::Result<()> {
        let mut owed = self
            .durability
            .ancestors
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while let Some(dir) = owed.first() {
            match self.fs.sync_dir(dir) {
                Ok(()) => {}
                // Nothing this process made can be unsynced there.
                Err(e) if cannot_sync_dir(&e) => {}
                Err(e) => {
                    let message = format!("fsync of {} failed: {e}", dir.display());
                    return Err(io::Error::new(e.kind(), message));
                }
            }
            owed.remove(0);
        }
        Ok(())
    }

    /// Writes and fsyncs `name.tmp`, runs `first`, renames `name.tmp` over `name` and fsyncs
    /// the folder. On an error the temporary file is removed (best effort: one that cannot be
    /// removed now is replaced by the next put of this name).
    fn put_staged(
        &self,
        name: &str,
        contents: Contents<'_>,
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        check_name(name)?;
        self.sync_ancestors()?;
        let tmp = self.dir.join(format!("{name}.tmp"));
        let result = (|| {
            // The slot's spare, if it has one, is written over in place of a new file; a
            // link to the spare-to-be that a crash left is a stray second name, removed.
            let (spare, staged) = self.spare_paths(name);
            match self.fs.remove_file(&staged) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let file = match self.fs.rename(&spare, &tmp) {
                Ok(()) => self.fs.overwrite(&tmp)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => self.fs.create(&tmp)?,
                Err(e) => return Err(e),
            };
            match contents {
                Contents::Bytes(bytes) => write_to(file, bytes)?,
                Contents::Stream(fill) => {
                    let mut sink = FileSink {
                        file,
                        pending: Vec::new(),
                    };
                    fill(&mut sink)?;
                    sink.flush()?;
                    sink.file.sync()?;
                }
            }
            first()?;
            self.fs.rename(&tmp, &self.dir.join(name))
        })();
        if result.is_err() {
            // A file whose fsync failed never gets the name.
            let _ = self.fs.remove_file(&tmp);
        }
        self.durability.changed();
        result?;
        self.sync_dir()
    }

    /// [`Storage::copy`]: `to.tmp` as a hard link of `from` (or a copy of its bytes), renamed
    /// over `to`.
    fn copy_file(&self, from: &str, to: &str) -> io::Result<bool> {
        let (source, target) = (self.dir.join(from), self.dir.join(to));
        let staged = self.dir.join(format!("{to}.tmp"));
        match self.fs.remove_file(&staged) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        match self.fs.hard_link(&source, &staged) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Unsupported | io::ErrorKind::PermissionDenied
                ) =>
            {
                let bytes = match self.fs.read(&source, u64::MAX) {
                    Ok(bytes) => bytes,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                    Err(e) => return Err(e),
                };
                self.write_file(&staged, &bytes)?;
            }
            Err(e) => return Err(e),
        }
        self.fs.rename(&staged, &target)?;
        // A crash between the rename of a copy and the rename of the put after it can leave
        // `to` a second name of `from`'s file. Renaming one name of a file over another does
        // nothing (POSIX), so `to.tmp` is still there: `to` is right, and the stray name goes.
        if self.exists(&staged)? {
            self.fs.remove_file(&staged)?;
        }
        Ok(true)
    }
}

impl Storage for FsStorage {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let path = self.dir.join(name);
        let size = match self.fs.file_len(&path) {
            Ok(size) => size,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if size > limit {
            return Err(too_large(size));
        }
        match self.fs.read(&path, limit) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            // It grew past the cap after the size was read.
            Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
                Err(too_large(limit.saturating_add(1)))
            }
            Err(e) => Err(e),
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.put_staged(name, Contents::Bytes(bytes), &mut || Ok(()))
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        check_name(name)?;
        self.sync_ancestors()?;
        // The spare holds an old save of this name: it goes too, or a deleted save would
        // linger on the disk.
        let (spare, staged) = self.spare_paths(name);
        let mut removed = false;
        let result = [staged, spare, self.dir.join(name)]
            .iter()
            .try_for_each(|path| match self.fs.remove_file(path) {
                Ok(()) => {
                    removed = true;
                    Ok(())
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            });
        if removed {
            self.durability.changed();
        }
        result?;
        // A name already gone may be one a removal whose folder fsync failed took.
        self.sync_dir_if_owed()
    }

    fn list(&self) -> io::Result<Vec<StoredFile>> {
        Ok(self
            .fs
            .list_dir(&self.dir)?
            .into_iter()
            .filter(|(name, _)| listed(name))
            .map(|(name, len)| StoredFile { name, len })
            .collect())
    }

    fn list_names(&self) -> io::Result<Vec<String>> {
        let mut names = self.fs.list_names(&self.dir)?;
        names.retain(|name| listed(name));
        Ok(names)
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        match self.fs.read_at(&self.dir.join(name), offset, len) {
            Ok((bytes, file_len)) => Ok(Some(Head { bytes, file_len })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn read_pieces(
        &self,
        name: &str,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Option<u64>> {
        match self.fs.read_pieces(&self.dir.join(name), piece, each) {
            Ok(len) => Ok(Some(len)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn reads_ranges(&self) -> bool {
        true
    }

    fn identity(&self, name: &str) -> io::Result<Option<Identity>> {
        match self.fs.identity(&self.dir.join(name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            found => found,
        }
    }

    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        check_name(from)?;
        check_name(to)?;
        self.sync_ancestors()?;
        let result = self.copy_file(from, to);
        if result.is_err() {
            let _ = self.fs.remove_file(&self.dir.join(format!("{to}.tmp")));
        }
        // Durable with the next folder fsync, which is now owed.
        self.durability.changed();
        result
    }

    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        self.put_staged(name, Contents::Bytes(bytes), first)
    }

    /// A save is written into its temporary file as it is encoded.
    fn streams(&self) -> bool {
        true
    }

    /// Writes the object into the temporary file as `fill` makes it, then as
    /// [`put_after`](Storage::put_after) (or [`put`](Storage::put) without `first`).
    fn put_streamed(
        &self,
        name: &str,
        fill: &mut dyn FnMut(&mut dyn StreamSink) -> io::Result<()>,
        first: Option<&mut dyn FnMut() -> io::Result<()>>,
    ) -> io::Result<()> {
        match first {
            Some(first) => self.put_staged(name, Contents::Stream(fill), first),
            None => self.put_staged(name, Contents::Stream(fill), &mut || Ok(())),
        }
    }

    /// Keeps the dropped file as `.<name>.spare`: linked at `.<name>.spare.tmp` before the
    /// rotation, and renamed to the spare's name only once the rotation has replaced it, so a
    /// spare is never a second name of a backup (a crash in between leaves only the
    /// `.spare.tmp` link, which the next put of `name` removes).
    fn rotate_dropping(
        &self,
        name: &str,
        dropped: &str,
        rotate: &mut dyn FnMut() -> io::Result<bool>,
    ) -> io::Result<()> {
        check_name(name)?;
        check_name(dropped)?;
        let (spare, staged) = self.spare_paths(name);
        let linked = match self.fs.hard_link(&self.dir.join(dropped), &staged) {
            Ok(()) => true,
            // Nothing to keep, no hard links here, or a link a crash left (which the put
            // around this rotation removes first): the rotation drops the file.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::AlreadyExists
                        | io::ErrorKind::Unsupported
                        | io::ErrorKind::PermissionDenied
                ) =>
            {
                false
            }
            Err(e) => return Err(e),
        };
        let kept = match rotate() {
            Ok(true) if linked => self.fs.rename(&staged, &spare),
            Ok(_) if linked => self.fs.remove_file(&staged),
            Ok(_) => return Ok(()),
            Err(e) => Err(e),
        };
        if kept.is_err() && linked {
            // Best effort: a link left here is removed by the next put of `name`.
            let _ = self.fs.remove_file(&staged);
        }
        self.durability.changed();
        kept
    }

    fn can_append(&self) -> bool {
        true
    }

    /// Appends and fsyncs; fsyncs the folder when it created the file (a new file's name is
    /// durable only once its folder is), or when the folder owes an fsync (the file's name
    /// may be one whose folder fsync failed).
    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        check_name(name)?;
        self.sync_ancestors()?;
        let path = self.dir.join(name);
        let existed = self.exists(&path)?;
        let opened = self.fs.open_append(&path);
        if !existed {
            self.durability.changed();
        }
        let mut file = opened?;
        file.write_all(bytes)?;
        file.sync()?;
        self.sync_dir_if_owed()
    }

    fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> {
        check_name(name)?;
        self.fs
            .lock(&self.dir.join(format!(".{name}.lock")))
            .map(Some)
    }

    fn locate(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// What [`FsStorage::put_staged`] writes: bytes in hand, or what a filler writes as it goes.
enum Contents<'a> {
    Bytes(&'a [u8]),
    Stream(&'a mut dyn FnMut(&mut dyn StreamSink) -> io::Result<()>),
}

/// The temporary file of a streamed put. Appends shorter than [`GATHER`] are gathered into
/// one write (a small save's header, table of contents, tags and CRC: one write, as a put of
/// bytes in hand makes), longer ones written at once.
struct FileSink {
    file: Box<dyn WriteFile>,
    pending: Vec<u8>,
}

/// The longest append a [`FileSink`] gathers.
const GATHER: usize = 64 << 10;

impl FileSink {
    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.file.write_all(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }
}

impl StreamSink for FileSink {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.pending.len() + bytes.len() <= GATHER {
            self.pending.extend_from_slice(bytes);
            return Ok(());
        }
        self.flush()?;
        if bytes.len() < GATHER {
            self.pending.extend_from_slice(bytes);
            Ok(())
        } else {
            self.file.write_all(bytes)
        }
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.file.write_at(offset, bytes)
    }
}

/// Writes all of `bytes` to `file` and fsyncs it.
fn write_to(mut file: Box<dyn WriteFile>, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync()
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

/// The folder whose fsync makes `path`'s entry durable: its parent (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Every folder above `dir`, top first, as far as its path names them (`.` for a relative
/// path's working folder, whose own ancestors the path does not name).
fn ancestors(dir: &Path) -> Vec<PathBuf> {
    let mut above: Vec<PathBuf> = Vec::new();
    let mut at = dir;
    // A path ending in `..` (or the root, or `.`) has no name in a parent the path names.
    while at.file_name().is_some() {
        let parent = parent_of(at);
        above.push(parent.to_path_buf());
        at = parent;
    }
    above.reverse();
    above
}

/// Whether a failed folder fsync says the folder cannot be fsynced at all, rather than that
/// its entries may not be durable: it cannot be opened (permission denied), its file system
/// has no fsync of folders, or is read-only.
fn cannot_sync_dir(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied
            | io::ErrorKind::Unsupported
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Whether a file of the folder is one of the storage's objects: not a hidden file (the lock
/// files) nor a temporary one.
fn listed(name: &str) -> bool {
    !name.starts_with('.') && !name.ends_with(".tmp")
}

/// Refuses names that would escape the folder or collide with internal files.
fn check_name(name: &str) -> io::Result<()> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.ends_with(".tmp")
        || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a usable storage name"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_above_a_save_folder_are_every_one_its_path_names_top_first() {
        let cases: [(&str, &[&str]); 6] = [
            ("/studio/game/saves", &["/", "/studio", "/studio/game"]),
            ("/saves", &["/"]),
            ("saves", &["."]),
            ("a/b", &[".", "a"]),
            ("./saves", &["."]),
            ("../x", &[".."]),
        ];
        for (dir, expected) in cases {
            let expected: Vec<PathBuf> = expected.iter().map(PathBuf::from).collect();
            assert_eq!(ancestors(Path::new(dir)), expected, "{dir}");
        }
        assert_eq!(ancestors(Path::new("/")), Vec::<PathBuf>::new());
    }
}
