//! The seam a sync of a slot with another copy of it builds on: a cloud sync
//! (`savegame-cloud`), or a game's own (Steam Cloud, a console's save API, a LAN copy). It is
//! what "install these bytes if the slot still holds what I read" needs, and nothing more:
//!
//! - [`FileStamp`] and [`SaveLoadManager::file_stamp`]: what identifies the bytes a slot's
//!   primary file holds, read from its header and its last four bytes;
//! - [`SaveLoadManager::check_file`]: every check a load makes of one file of a slot (CRC,
//!   header, decryption or tag, its slot, its schema version, its protection), so a download
//!   is refused exactly as a damaged local file is;
//! - [`SaveLoadManager::seal_next`]: a snapshot sealed as the slot's next save, as
//!   [`save`](SaveLoadManager::save) seals one, without writing it (a merge is uploaded before
//!   it is installed);
//! - [`SaveLoadManager::replace_if_unchanged`]: the bytes installed as the slot's primary file,
//!   under the slot's lock, only if it still holds the file stamped as the sync read it (the
//!   game may have saved meanwhile), the file they replace kept as the first backup;
//! - [`SaveLoadManager::keep_as_backup`]: a version the player did not pick kept as the slot's
//!   newest backup.
//!
//! Built on the manager's own pieces (the lock, the backup rotation, the journals), so a file a
//! sync installs is kept, backed up and loaded exactly like one the game saved.
//!
//! A sync of slots through a folder that another device also reads (a toy: no conflicts, the
//! newest generation wins), on the seam alone:
//!
//! ```
//! use savegame::{SaveLoadManager, SlotId};
//!
//! /// Pushes the slot to `shared` when it is newer there, else pulls what `shared` holds.
//! fn sync(manager: &SaveLoadManager, shared: &std::path::Path, slot: SlotId) -> savegame::Result<()> {
//!     let remote = shared.join(slot.file_name());
//!     let local = manager.file_stamp(slot)?;
//!     let theirs = std::fs::read(&remote).ok();
//!     let their_generation = match &theirs {
//!         Some(bytes) => Some(manager.check_file(slot, bytes.clone())?.0.generation),
//!         None => None,
//!     };
//!     match (local, their_generation) {
//!         (Some(ours), theirs) if theirs.is_none_or(|g| g < ours.generation) => {
//!             let bytes = std::fs::read(manager.path_of(slot)).map_err(|e| savegame::Error::Config { reason: e.to_string() })?;
//!             std::fs::write(&remote, bytes).map_err(|e| savegame::Error::Config { reason: e.to_string() })
//!         }
//!         (_, Some(_)) => {
//!             // Installed only if the game did not save meanwhile; else the next sync pushes.
//!             manager.replace_if_unchanged(slot, local, theirs.as_deref().unwrap_or_default())?;
//!             Ok(())
//!         }
//!         _ => Ok(()),
//!     }
//! }
//!
//! # let (a, b, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
//! let desk = SaveLoadManager::builder().directory(a.path()).build()?;
//! let deck = SaveLoadManager::builder().directory(b.path()).build()?;
//! let slot = SlotId::Numbered(1);
//! let mut snapshot = desk.snapshot();
//! snapshot.capture_memento("level", &7u32)?;
//! desk.save(slot, &snapshot)?;
//! sync(&desk, shared.path(), slot)?; // pushed
//! sync(&deck, shared.path(), slot)?; // pulled
//! assert_eq!(deck.load(slot)?.snapshot.memento::<u32>("level")?, 7);
//! # Ok::<(), savegame::Error>(())
//! ```

use super::SaveLoadManager;
use super::backups::{backups_of, put_keeping_backups};
use super::journal::has_deltas;
use super::locks::lock_slot;
use crate::error::{Error, Result};
use crate::format::{self, CRC_LEN, Header};
use crate::slot::{SlotId, backup_name};
use crate::snapshot::Snapshot;

/// What identifies the bytes of one file of a slot: its length, its header's generation and
/// its trailing CRC32. Two different saves of a slot differ in at least one of these (each
/// save has a new generation, and a fresh nonce or time stamp under the CRC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileStamp {
    /// The file's length in bytes.
    pub len: u64,
    /// The generation in its header.
    pub generation: u64,
    /// Its last four bytes: the CRC32 of everything before them.
    pub crc: u32,
}

impl FileStamp {
    /// The stamp of a file of `len` bytes, generation `generation`, whose last four bytes hold
    /// `crc` (a stamp kept in a sync's own record, read back).
    #[must_use]
    pub const fn new(len: u64, generation: u64, crc: u32) -> Self {
        FileStamp {
            len,
            generation,
            crc,
        }
    }

    /// The stamp of a whole file's bytes, from its header and its last four bytes.
    ///
    /// # Errors
    /// [`Error::NotASave`] or [`Error::Malformed`] for bytes whose header does not parse.
    pub fn of(bytes: &[u8]) -> Result<Self> {
        let header = format::parse_header(bytes, Some(bytes.len() as u64))?;
        Ok(FileStamp {
            len: bytes.len() as u64,
            generation: header.generation,
            crc: trailing_crc(bytes),
        })
    }
}

/// The last four bytes of `bytes` as the little-endian CRC32 they hold (0 for a shorter input).
fn trailing_crc(bytes: &[u8]) -> u32 {
    let Some(at) = bytes.len().checked_sub(CRC_LEN) else {
        return 0;
    };
    let mut crc = [0u8; CRC_LEN];
    crc.copy_from_slice(&bytes[at..]);
    u32::from_le_bytes(crc)
}

impl SaveLoadManager {
    /// The largest file the manager reads or writes
    /// ([`max_file_size`](crate::ManagerBuilder::max_file_size)).
    #[must_use]
    pub fn max_file_size(&self) -> u64 {
        self.engine.files.max_file_size
    }

    /// Opens one whole file of `slot` with every check a load makes of it (CRC, header,
    /// decryption or tag, table of contents, its slot, its schema version, the protection the
    /// manager's key asks for), without migrating it or writing anything: how a sync checks a
    /// download before it replaces anything.
    ///
    /// # Errors
    /// As for [`load`](Self::load) of one file: [`Error::ChecksumMismatch`],
    /// [`Error::Decrypt`], [`Error::NotEncrypted`], [`Error::SlotMismatch`],
    /// [`Error::NewerSchema`], ...
    pub fn check_file(&self, slot: SlotId, bytes: Vec<u8>) -> Result<(Header, Snapshot)> {
        let (snapshot, header) = self.engine.files.open_base(slot, bytes)?;
        Ok((header, snapshot))
    }

    /// Seals `snapshot` as the save of `slot` that follows the file of generation `after`,
    /// exactly as [`save`](Self::save) seals one (the manager's schema version, key and
    /// protection, compression), without writing it: a merge is uploaded first, and put in
    /// place with [`replace_if_unchanged`](Self::replace_if_unchanged) only once the cloud took
    /// it.
    ///
    /// # Errors
    /// As for sealing a save; [`Error::TooLarge`] for a file over the manager's size limit.
    pub fn seal_next(&self, slot: SlotId, snapshot: &Snapshot, after: u64) -> Result<Vec<u8>> {
        let files = &self.engine.files;
        let name = slot.file_name();
        // Deltas name their base by generation: never reuse the generation of leftover ones.
        let leftover = self.engine.journals.generation(files, &name);
        let bytes = snapshot.seal_file_with(
            slot,
            files.schema_version,
            after.max(leftover).saturating_add(1),
            format::now(),
            files.seal_with(0),
        )?;
        if bytes.len() as u64 > files.max_file_size {
            return Err(Error::TooLarge {
                path: files.storage.locate(&name),
                size: bytes.len() as u64,
                limit: files.max_file_size,
            });
        }
        Ok(bytes)
    }

    /// The stamp of `slot`'s primary file now, `None` when it has none, from its header and its
    /// last four bytes (a few bytes read, however big the save).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Malformed`] for a primary file whose header does not parse.
    pub fn file_stamp(&self, slot: SlotId) -> Result<Option<FileStamp>> {
        self.stamp_of(&slot.file_name())
    }

    /// The stamp of the file `name` of a slot, `None` when there is none.
    fn stamp_of(&self, name: &str) -> Result<Option<FileStamp>> {
        let files = &self.engine.files;
        let Some((header, len)) = files.read_header(name)? else {
            return Ok(None);
        };
        let tail = files.read_at(name, len.saturating_sub(CRC_LEN as u64), CRC_LEN)?;
        let crc = tail.map_or(0, |t| trailing_crc(&t.bytes));
        Ok(Some(FileStamp {
            len,
            generation: header.generation,
            crc,
        }))
    }

    /// Replaces `slot`'s primary file with `bytes` (a whole file of the slot, checked or sealed
    /// by [`seal_next`](Self::seal_next)), under the slot's lock, if the slot still holds the
    /// file stamped `expected` (`None`: no primary file) and has no incremental saves on top of
    /// it. The file replaced becomes the first backup (at least one is kept, whatever the
    /// manager's backup count, so a pulled or merged save never pushes the player's own out
    /// unseen). Returns whether it did: `false` when the slot changed since it was read (the
    /// game saved meanwhile), and then nothing was written.
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub fn replace_if_unchanged(
        &self,
        slot: SlotId,
        expected: Option<FileStamp>,
        bytes: &[u8],
    ) -> Result<bool> {
        let files = &self.engine.files;
        let name = slot.file_name();
        self.background.wait_for(slot);
        let _lock = lock_slot(files, &name)?;
        if has_deltas(&files.list()?, slot) || self.file_stamp(slot)? != expected {
            return Ok(false);
        }
        let keep = if expected.is_some() {
            self.engine.backups.max(1)
        } else {
            0
        };
        put_keeping_backups(files.storage.as_ref(), &name, bytes, keep)
            .map_err(|e| files.error(&name, e))?;
        self.engine.journals.clear(files, &name);
        Ok(true)
    }

    /// Keeps `bytes` (a whole file of `slot`, checked) as the slot's newest backup, the older
    /// backups moved down one (at least one is kept): how the version a player did not pick in
    /// a conflict stays on the device. Nothing is written when the primary file or a backup
    /// already is that file (a resolve that runs again after a kill keeps one copy of it).
    ///
    /// # Errors
    /// The storage's error ([`Error::Io`]).
    pub fn keep_as_backup(&self, slot: SlotId, bytes: &[u8]) -> Result<()> {
        let files = &self.engine.files;
        let name = slot.file_name();
        let _lock = lock_slot(files, &name)?;
        let keep = self.engine.backups.max(1);
        let storage = files.storage.as_ref();
        let present = backups_of(&files.list()?, slot);
        let stamp = Some(FileStamp::of(bytes)?);
        // A file that cannot be read is no copy of it.
        let holds = |name: &str| self.stamp_of(name).ok().flatten() == stamp;
        if holds(&name) || present.iter().any(|i| holds(&backup_name(&name, *i))) {
            return Ok(());
        }
        for i in (1..keep).rev() {
            if present.contains(&i) {
                storage
                    .copy(&backup_name(&name, i), &backup_name(&name, i + 1))
                    .map_err(|e| files.error(&name, e))?;
            }
        }
        files.put(&backup_name(&name, 1), bytes)
    }
}
