//! What a cloud sync (`crate::cloud`, feature `cloud`) needs of the manager, and nothing more:
//! the checks every file of a slot passes, sealing a merge as the slot's next save without
//! writing it, and replacing a slot's primary file under the slot's lock only if it still holds
//! what the sync read. Built on the manager's own pieces (the
//! lock, the backup rotation, the journals), so a file a sync installs is kept, backed up and
//! loaded exactly like one the game saved.

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
pub(crate) struct FileStamp {
    /// The file's length in bytes.
    pub(crate) len: u64,
    /// The generation in its header.
    pub(crate) generation: u64,
    /// Its last four bytes: the CRC32 of everything before them.
    pub(crate) crc: u32,
}

impl FileStamp {
    /// The stamp of a whole file's bytes, from its header and its last four bytes.
    pub(crate) fn of(bytes: &[u8]) -> Result<Self> {
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
    /// The largest file the manager reads or writes.
    pub(crate) fn max_file_size(&self) -> u64 {
        self.engine.files.max_file_size
    }

    /// Opens one whole file of `slot` with every check a load makes of it (CRC, header,
    /// decryption or tag, table of contents, its slot, its schema version, its sealing),
    /// without migrating it.
    pub(crate) fn open_slot_file(
        &self,
        slot: SlotId,
        bytes: Vec<u8>,
    ) -> Result<(Header, Snapshot)> {
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
    pub(crate) fn seal_after(
        &self,
        slot: SlotId,
        snapshot: &Snapshot,
        after: u64,
    ) -> Result<Vec<u8>> {
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
    /// last four bytes.
    pub(crate) fn primary_stamp(&self, slot: SlotId) -> Result<Option<FileStamp>> {
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
    /// by [`seal_after`](Self::seal_after)), under the slot's lock, if the slot still holds the
    /// file stamped `expected` (`None`: no primary file) and has no incremental saves on top of
    /// it. The file replaced becomes the first backup (at least one is kept, whatever the
    /// manager's backup count, so a pulled or merged save never pushes the player's own out
    /// unseen). Returns whether it did: `false` when the slot changed since it was read (the
    /// game saved meanwhile), and then nothing was written.
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub(crate) fn replace_if_unchanged(
        &self,
        slot: SlotId,
        expected: Option<FileStamp>,
        bytes: &[u8],
    ) -> Result<bool> {
        let files = &self.engine.files;
        let name = slot.file_name();
        self.worker.wait_for(slot);
        let _lock = lock_slot(files, &name)?;
        if has_deltas(&files.list()?, slot) || self.primary_stamp(slot)? != expected {
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
    pub(crate) fn keep_as_backup(&self, slot: SlotId, bytes: &[u8]) -> Result<()> {
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
