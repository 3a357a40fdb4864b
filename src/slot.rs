//! Save slots: which slot a file belongs to, and the names of a slot's files.
//!
//! A [`SlotId`] names a slot: the player's numbered slots, the autosave rotation, or the
//! quicksave slot. What a load menu shows for one is a [`SlotInfo`](crate::SlotInfo).
//!
//! Every name a slot's files have in a storage is made and parsed here, and only here:
//!
//! | name | what | made by |
//! |---|---|---|
//! | `slot-003.sav` | the primary file (the base of incremental saves) | [`SlotId::file_name`] |
//! | `slot-003.sav.bak1`, `.bak2`, … | backups, newest first | [`backup_name`] |
//! | `slot-003.sav.v1.bak` | the last file at schema version 1, kept before a migrated save replaced it | [`pre_migration_name`] |
//! | `slot-003.sav.journal` | incremental saves, appended one after another (storages that append) | [`journal_name`] |
//! | `slot-003.sav.d000001`, … | incremental saves, one object each (storages that cannot append) | [`delta_name`] |
//! | `slot-003.sav.new` | new bytes staged by a storage that cannot stage them otherwise | [`staged_name`] |
//! | `slot-003.sav.synced` | the cloud sync's record: the remote object's ETag and version, and the last synced file (the common ancestor of a merge) | [`synced_name`] |
//! | `slot-003.sav.conflict` | the cloud sync's copy of the remote version of a slot in conflict, until the game resolves it | [`conflict_name`] |
//!
//! [`SlotFile::parse`] tells which of these a name is. This module is a leaf: it imports
//! nothing from the crate.

use std::fmt;

/// Which slot a save lives in.
///
/// Numbered slots are the player's. Autosave slots are a separate rotation the game controls,
/// and the quicksave slot is a single slot of its own; they never collide with numbered slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SlotId {
    /// A player slot, as numbered in the game's menu.
    Numbered(u32),
    /// One of the autosave rotation's slots.
    Autosave(u32),
    /// The quicksave slot.
    Quicksave,
    /// The file of the key-value store ([`Store`](crate::Store)), `store.kv`: never listed
    /// as a slot, never picked by the autosave rotation.
    Store,
}

/// The extension of primary save files.
pub(crate) const SAVE_EXTENSION: &str = "sav";

/// The file of the key-value store.
const STORE_FILE: &str = "store.kv";

impl SlotId {
    /// The numbered slot `n`.
    #[must_use]
    pub const fn numbered(n: u32) -> Self {
        SlotId::Numbered(n)
    }

    /// The name of the slot's primary file in its storage, such as `slot-003.sav`,
    /// `autosave-1.sav` or `quicksave.sav`.
    #[must_use]
    pub fn file_name(self) -> String {
        match self {
            SlotId::Numbered(n) => format!("slot-{n:03}.{SAVE_EXTENSION}"),
            SlotId::Autosave(n) => format!("autosave-{n}.{SAVE_EXTENSION}"),
            SlotId::Quicksave => format!("quicksave.{SAVE_EXTENSION}"),
            SlotId::Store => STORE_FILE.to_owned(),
        }
    }

    /// The slot whose primary file is called `name`, or `None` for any other file (backups,
    /// temporary files, lock files, unrelated files).
    #[must_use]
    pub fn from_file_name(name: &str) -> Option<Self> {
        if name == STORE_FILE {
            return Some(SlotId::Store);
        }
        let stem = name.strip_suffix(SAVE_EXTENSION)?.strip_suffix('.')?;
        if stem == "quicksave" {
            return Some(SlotId::Quicksave);
        }
        if let Some(n) = stem.strip_prefix("slot-") {
            return parse_canonical(n, 3).map(SlotId::Numbered);
        }
        if let Some(n) = stem.strip_prefix("autosave-") {
            return parse_canonical(n, 1).map(SlotId::Autosave);
        }
        None
    }

    /// The slot as stored in a file header: a kind byte and a number.
    pub(crate) fn to_raw(self) -> (u8, u32) {
        match self {
            SlotId::Numbered(n) => (1, n),
            SlotId::Autosave(n) => (2, n),
            SlotId::Quicksave => (3, 0),
            SlotId::Store => (4, 0),
        }
    }

    /// The slot stored in a file header, or `None` for an unknown kind byte.
    pub(crate) fn from_raw(kind: u8, n: u32) -> Option<Self> {
        match (kind, n) {
            (1, n) => Some(SlotId::Numbered(n)),
            (2, n) => Some(SlotId::Autosave(n)),
            (3, 0) => Some(SlotId::Quicksave),
            (4, 0) => Some(SlotId::Store),
            _ => None,
        }
    }
}

/// Parses a decimal number written the way [`SlotId::file_name`] writes it (zero-padded to
/// `width`, no sign, no extra leading zeros), so that each slot has exactly one file name.
fn parse_canonical(digits: &str, width: usize) -> Option<u32> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Zero-padded to `width`, and no leading zero beyond it: what `{n:0width$}` writes.
    let canonical = digits.len() == width || (digits.len() > width && !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    digits.parse().ok()
}

impl From<u32> for SlotId {
    fn from(n: u32) -> Self {
        SlotId::Numbered(n)
    }
}

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotId::Numbered(n) => write!(f, "{n}"),
            SlotId::Autosave(n) => write!(f, "autosave {n}"),
            SlotId::Quicksave => f.write_str("quicksave"),
            SlotId::Store => f.write_str("the key-value store"),
        }
    }
}

/// The name of the `index`-th backup of `name` (`index` from 1): `slot-003.sav.bak1`.
#[must_use]
pub fn backup_name(name: &str, index: u32) -> String {
    format!("{name}.bak{index}")
}

/// The name under which the last file of `name` at schema version `version` is kept before a
/// migrated save replaces it: `slot-003.sav.v1.bak`.
#[must_use]
pub fn pre_migration_name(name: &str, version: u32) -> String {
    format!("{name}.v{version}.bak")
}

/// The journal of incremental saves of the slot whose primary file is `name`:
/// `slot-003.sav.journal`.
#[must_use]
pub fn journal_name(name: &str) -> String {
    format!("{name}.journal")
}

/// The object holding delta number `sequence` (from 1) of the slot whose primary file is
/// `name`, on a storage that cannot append: `slot-003.sav.d000001`.
#[must_use]
pub fn delta_name(name: &str, sequence: u64) -> String {
    format!("{name}.d{sequence:06}")
}

/// Where [`Storage::put_after`](crate::storage::Storage::put_after)'s default stages the new
/// bytes of `name` before they replace it: `slot-003.sav.new`. One left by a crash is
/// overwritten by the next save, and removed when the slot is deleted.
#[must_use]
pub fn staged_name(name: &str) -> String {
    format!("{name}.new")
}

/// The cloud sync's record of the slot whose primary file is `name`: what the remote object was
/// when this device last synced it (its ETag and version) and a copy of that file, the common
/// ancestor of the next merge. `slot-003.sav.synced`.
#[must_use]
pub fn synced_name(name: &str) -> String {
    format!("{name}.synced")
}

/// Where the cloud sync keeps the remote version of the slot whose primary file is `name` when
/// both sides changed it and the changes could not be merged, until the game picks one:
/// `slot-003.sav.conflict`.
#[must_use]
pub fn conflict_name(name: &str) -> String {
    format!("{name}.conflict")
}

/// The primary name and index of a backup name, or `None` if `name` is not one.
#[must_use]
pub fn parse_backup_name(name: &str) -> Option<(&str, u32)> {
    let (primary, index) = name.rsplit_once(".bak")?;
    let index = parse_number(index)?;
    u32::try_from(index).ok().map(|i| (primary, i))
}

/// The primary name and schema version of a pre-migration copy's name
/// ([`pre_migration_name`]), or `None` if `name` is not one.
#[must_use]
pub fn parse_pre_migration_name(name: &str) -> Option<(&str, u32)> {
    let (primary, version) = name.strip_suffix(".bak")?.rsplit_once(".v")?;
    // Schema version 0 is a version like any other.
    let version = if version == "0" {
        0
    } else {
        parse_number(version)?
    };
    u32::try_from(version).ok().map(|v| (primary, v))
}

/// The primary name and sequence number of a delta object's name ([`delta_name`]), or `None`
/// if `name` is not one.
#[must_use]
pub fn parse_delta_name(name: &str) -> Option<(&str, u64)> {
    let (primary, sequence) = name.rsplit_once(".d")?;
    if sequence.len() < 6 || !sequence.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = sequence.parse().ok()?;
    (n > 0 && format!("{n:06}") == sequence).then_some((primary, n))
}

/// Digits with no sign and no leading zero (so one number has one spelling), from 1.
fn parse_number(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a file in a save folder is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotFile {
    /// The slot's primary file.
    Primary(SlotId),
    /// Its backup with this index (1 is the newest).
    Backup(SlotId, u32),
    /// The copy kept before a migrated save replaced the file at this schema version.
    PreMigration(SlotId, u32),
    /// Its journal of incremental saves.
    Journal(SlotId),
    /// One of its incremental saves as an object of its own, with its sequence number.
    Delta(SlotId, u64),
    /// New bytes of its primary file staged by a storage before they replace it.
    Staged(SlotId),
    /// The cloud sync's record of it ([`synced_name`]).
    Synced(SlotId),
    /// The remote version of it kept by the cloud sync during a conflict ([`conflict_name`]).
    Conflict(SlotId),
}

impl SlotFile {
    /// What the file called `name` is, or `None` for a file that is not a slot's (a temporary
    /// file, a lock file, a replay, a settings file).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        if let Some(slot) = SlotId::from_file_name(name) {
            return Some(SlotFile::Primary(slot));
        }
        let slot_of = |primary: &str| SlotId::from_file_name(primary);
        if let Some((primary, i)) = parse_backup_name(name) {
            return slot_of(primary).map(|s| SlotFile::Backup(s, i));
        }
        if let Some((primary, v)) = parse_pre_migration_name(name) {
            return slot_of(primary).map(|s| SlotFile::PreMigration(s, v));
        }
        if let Some((primary, n)) = parse_delta_name(name) {
            return slot_of(primary).map(|s| SlotFile::Delta(s, n));
        }
        if let Some(primary) = name.strip_suffix(".journal") {
            return slot_of(primary).map(SlotFile::Journal);
        }
        if let Some(primary) = name.strip_suffix(".synced") {
            return slot_of(primary).map(SlotFile::Synced);
        }
        if let Some(primary) = name.strip_suffix(".conflict") {
            return slot_of(primary).map(SlotFile::Conflict);
        }
        name.strip_suffix(".new")
            .and_then(slot_of)
            .map(SlotFile::Staged)
    }

    /// The slot the file belongs to.
    #[must_use]
    pub fn slot(self) -> SlotId {
        match self {
            SlotFile::Primary(s)
            | SlotFile::Backup(s, _)
            | SlotFile::PreMigration(s, _)
            | SlotFile::Journal(s)
            | SlotFile::Delta(s, _)
            | SlotFile::Staged(s)
            | SlotFile::Synced(s)
            | SlotFile::Conflict(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_round_trip() {
        assert_eq!(backup_name("slot-003.sav", 2), "slot-003.sav.bak2");
        assert_eq!(
            parse_backup_name("slot-003.sav.bak12"),
            Some(("slot-003.sav", 12))
        );
        for not_backup in [
            "slot-003.sav",
            "x.bak",
            "x.bak0",
            "x.bak01",
            "x.bakx",
            "x.bak-1",
        ] {
            assert_eq!(parse_backup_name(not_backup), None, "{not_backup}");
        }
    }

    #[test]
    fn every_name_of_a_slot_file_parses_back() {
        let slot = SlotId::Numbered(3);
        let name = slot.file_name();
        for (file, kind) in [
            (name.clone(), SlotFile::Primary(slot)),
            (backup_name(&name, 1), SlotFile::Backup(slot, 1)),
            (backup_name(&name, 12), SlotFile::Backup(slot, 12)),
            (
                pre_migration_name(&name, 0),
                SlotFile::PreMigration(slot, 0),
            ),
            (
                pre_migration_name(&name, 7),
                SlotFile::PreMigration(slot, 7),
            ),
            (journal_name(&name), SlotFile::Journal(slot)),
            (delta_name(&name, 1), SlotFile::Delta(slot, 1)),
            (staged_name(&name), SlotFile::Staged(slot)),
            (synced_name(&name), SlotFile::Synced(slot)),
            (conflict_name(&name), SlotFile::Conflict(slot)),
            (
                delta_name(&name, 1_234_567),
                SlotFile::Delta(slot, 1_234_567),
            ),
        ] {
            assert_eq!(SlotFile::parse(&file), Some(kind), "{file}");
            assert_eq!(kind.slot(), slot);
        }
        assert_eq!(delta_name(&name, 2), "slot-003.sav.d000002");
        assert_eq!(
            parse_pre_migration_name("slot-001.sav.v12.bak"),
            Some(("slot-001.sav", 12))
        );
        for not_copy in [
            "slot-001.sav.bak1",
            "slot-001.sav.v.bak",
            "slot-001.sav.vx.bak",
        ] {
            assert_eq!(parse_pre_migration_name(not_copy), None, "{not_copy}");
        }
        for other in [
            "slot-003.sav.tmp",
            "slot-003.sav.bak.tmp",
            "slot-003.sav.d000000",
            "slot-003.sav.d00001",
            "slot-003.sav.d0000001",
            "slot-003.sav.v01.bak",
            "slot-3.sav.bak1",
            "settings.kv",
            "run.replay",
        ] {
            assert_eq!(SlotFile::parse(other), None, "{other}");
        }
    }

    #[test]
    fn file_names_round_trip() {
        for slot in [
            SlotId::Numbered(0),
            SlotId::Numbered(3),
            SlotId::Numbered(999),
            SlotId::Numbered(12345),
            SlotId::Numbered(u32::MAX),
            SlotId::Autosave(0),
            SlotId::Autosave(7),
            SlotId::Quicksave,
            SlotId::Store,
        ] {
            assert_eq!(SlotId::from_file_name(&slot.file_name()), Some(slot));
            let (kind, n) = slot.to_raw();
            assert_eq!(SlotId::from_raw(kind, n), Some(slot));
        }
    }

    #[test]
    fn other_files_are_not_slots() {
        for name in [
            "slot-003.sav.bak1",
            "slot-003.sav.tmp",
            ".slot-003.sav.lock",
            "slot-3.sav",
            "slot-0003.sav",
            "slot-+03.sav",
            "slot-.sav",
            "autosave-01.sav",
            "quicksave-1.sav",
            "notes.txt",
            "sav",
        ] {
            assert_eq!(SlotId::from_file_name(name), None, "{name}");
        }
        assert_eq!(SlotId::from_raw(9, 1), None);
        assert_eq!(SlotId::from_raw(3, 1), None);
    }
}
