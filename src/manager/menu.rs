//! What a load menu shows about a slot: [`SlotInfo`], read from the file's header alone (see
//! [`SaveLoadManager::list`](crate::SaveLoadManager::list)), so listing a hundred slots costs a
//! listing of the folder (names alone, no stat of each file) and a hundred small reads,
//! whatever the size of the saves: about what reading the hundred headers by hand costs
//! (`cargo bench --bench save_load -- list`).

use std::time::{Duration, SystemTime};

use crate::format::Header;
use crate::slot::SlotId;

/// Whether a slot can be loaded, as far as its header tells.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotStatus {
    /// The header is sound and the save can be loaded by this game.
    Ready,
    /// The save is encrypted and the manager has no key.
    NeedsKey,
    /// The save was written by a newer version of the game; it will be refused.
    NewerSchema {
        /// The schema version in the file.
        found: u32,
        /// The game's current schema version.
        supported: u32,
    },
    /// The header cannot be read (the file is damaged, from a newer format, or not a save).
    /// Loading may still succeed from a backup copy.
    Unreadable {
        /// Why, in one line.
        reason: String,
    },
}

/// What a load menu shows for one slot, read from the header of its primary file alone.
///
/// The payload is not read, decrypted or checksummed: [`SlotStatus::Ready`] means the header is
/// sound, not that the whole file is. Loading checks everything.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SlotInfo {
    /// The slot.
    pub slot: SlotId,
    /// The size of the primary file in bytes (0 if it is missing and only backups remain).
    pub file_size: u64,
    /// How many backup copies exist beside the primary file.
    pub backups: u32,
    /// Whether the slot can be loaded, as far as the header tells.
    pub status: SlotStatus,
    /// The header, when it could be read.
    pub header: Option<Header>,
    /// How many incremental saves (deltas) the slot's journal carries on top of its base.
    pub deltas: u32,
    /// The header of the newest delta, when there is one: the slot's current label, playtime
    /// and time.
    pub latest: Option<Header>,
    /// The size of the slot's current state on disk in bytes: the primary file and its
    /// journal (backups not counted).
    pub total_size: u64,
}

impl SlotInfo {
    /// The newest header of the slot: its last delta's, or its base's.
    fn current(&self) -> Option<&Header> {
        self.latest.as_ref().or(self.header.as_ref())
    }

    /// The label the game gave the save ("Level 3"), if the header could be read (the newest
    /// delta's, when the slot has incremental saves).
    #[must_use]
    pub fn label(&self) -> Option<&str> {
        self.current().map(|h| h.metadata.label.as_str())
    }

    /// When the slot was last written, if the header could be read.
    #[must_use]
    pub fn saved_at(&self) -> Option<SystemTime> {
        self.current().map(|h| h.saved_at)
    }

    /// The playtime recorded in the save, if the header could be read.
    #[must_use]
    pub fn playtime(&self) -> Option<Duration> {
        self.current().map(|h| h.metadata.playtime)
    }

    /// The version of the game that wrote the save, if the header could be read.
    #[must_use]
    pub fn app_version(&self) -> Option<&str> {
        self.current().map(|h| h.metadata.app_version.as_str())
    }

    /// Is this one of the autosave rotation's slots?
    #[must_use]
    pub fn is_autosave(&self) -> bool {
        matches!(self.slot, SlotId::Autosave(_))
    }

    /// Is this the quicksave slot?
    #[must_use]
    pub fn is_quicksave(&self) -> bool {
        self.slot == SlotId::Quicksave
    }

    /// The schema version of the save's document, if the header could be read.
    #[must_use]
    pub fn schema_version(&self) -> Option<u32> {
        self.header.as_ref().map(|h| h.schema_version)
    }

    /// Can this slot be offered in a load menu?
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.status == SlotStatus::Ready
    }
}
