//! Save slots: which slot a file belongs to, and the slot file's name.
//!
//! A [`SlotId`] names a slot: the player's numbered slots, the autosave rotation, or the
//! quicksave slot. What a load menu shows for one is a [`SlotInfo`](crate::SlotInfo). This module
//! is a leaf: it imports nothing from the crate.

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
}

/// The extension of primary save files.
pub(crate) const SAVE_EXTENSION: &str = "sav";

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
        }
    }

    /// The slot whose primary file is called `name`, or `None` for any other file (backups,
    /// temporary files, lock files, unrelated files).
    #[must_use]
    pub fn from_file_name(name: &str) -> Option<Self> {
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
        }
    }

    /// The slot stored in a file header, or `None` for an unknown kind byte.
    pub(crate) fn from_raw(kind: u8, n: u32) -> Option<Self> {
        match (kind, n) {
            (1, n) => Some(SlotId::Numbered(n)),
            (2, n) => Some(SlotId::Autosave(n)),
            (3, 0) => Some(SlotId::Quicksave),
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
    let n: u32 = digits.parse().ok()?;
    (format!("{n:0width$}") == digits).then_some(n)
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
