//! What a cloud sync (`crate::cloud`, feature `cloud`) needs of the manager, and nothing more:
//! the checks every file of a slot passes, and replacing a slot's primary file under the slot's
//! lock only if it still holds what the sync read. Built on the manager's own pieces (the
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

/// What replaces a slot's primary file in [`SaveLoadManager::replace_if_unchanged`].
pub(crate) enum Replacement<'a> {
    /// These bytes, verbatim (a file pulled from the cloud, already checked).
    Bytes(&'a [u8]),
    /// A new save of this snapshot (a merge), sealed as the manager seals every save.
    Snapshot(&'a Snapshot),
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

    /// The stamp of `slot`'s primary file now, `None` when it has none, from its header and its
    /// last four bytes.
    pub(crate) fn primary_stamp(&self, slot: SlotId) -> Result<Option<FileStamp>> {
        let files = &self.engine.files;
        let name = slot.file_name();
        let Some((header, len)) = files.read_header(&name)? else {
            return Ok(None);
        };
        let tail = files.read_at(&name, len.saturating_sub(CRC_LEN as u64), CRC_LEN)?;
        let crc = tail.map_or(0, |t| trailing_crc(&t.bytes));
        Ok(Some(FileStamp {
            len,
            generation: header.generation,
            crc,
        }))
    }

    /// Replaces `slot`'s primary file with `with`, under the slot's lock, if the slot still
    /// holds the file stamped `expected` (`None`: no primary file) and has no incremental saves
    /// on top of it. The file replaced becomes the first backup (at least one is kept, whatever
    /// the manager's backup count, so a pulled or merged save never pushes the player's own out
    /// unseen). Returns the bytes now in place, or `None` when the slot changed since it was
    /// read (the game saved meanwhile): then nothing was written.
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub(crate) fn replace_if_unchanged(
        &self,
        slot: SlotId,
        expected: Option<FileStamp>,
        with: Replacement<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let files = &self.engine.files;
        let name = slot.file_name();
        self.worker.wait_for(slot);
        let _lock = lock_slot(files, &name)?;
        if has_deltas(&files.list()?, slot) || self.primary_stamp(slot)? != expected {
            return Ok(None);
        }
        match with {
            Replacement::Bytes(bytes) => {
                let keep = if expected.is_some() {
                    self.engine.backups.max(1)
                } else {
                    0
                };
                put_keeping_backups(files.storage.as_ref(), &name, bytes, keep)
                    .map_err(|e| files.error(&name, e))?;
                self.engine.journals.clear(files, &name);
                Ok(Some(bytes.to_vec()))
            }
            Replacement::Snapshot(snapshot) => {
                self.engine.save_locked(slot, snapshot)?;
                files.read(&name)?.map(Some).ok_or_else(|| {
                    Error::malformed("the merged save vanished after it was written")
                })
            }
        }
    }

    /// Keeps `bytes` (a whole file of `slot`, checked) as the slot's newest backup, the older
    /// backups moved down one (at least one is kept): how the version a player did not pick in
    /// a conflict stays on the device.
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
