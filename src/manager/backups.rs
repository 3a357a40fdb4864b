//! Backups: the `.bakN` rotation a save makes of the file it replaces, and the copies a load
//! falls back on, newest first. Built on [`Storage`] alone: copies and a staged put.

use std::io;

use crate::slot::{SlotFile, SlotId, backup_name};
use crate::storage::Storage;

/// Puts `bytes` as `name`, keeping the file it replaces as `name.bak1`, the old `name.bak1` as
/// `name.bak2`, and so on up to `name.bak{keep}` (the old `name.bak{keep}` is dropped). With
/// `keep = 0`, or when there is no file to keep, pass `keep = 0`: backups are then left alone.
///
/// The new bytes are staged durably before any backup moves
/// ([`Storage::put_after`]), so a put that fails (a full disk) leaves every backup as it was,
/// and at every instant of a crash `name` holds its old bytes or the new ones.
///
/// # Errors
/// The storage's error; see [`Storage::put_after`] for what is then in place.
pub fn put_keeping_backups(
    storage: &dyn Storage,
    name: &str,
    bytes: &[u8],
    keep: u32,
) -> io::Result<()> {
    if keep == 0 {
        return storage.put(name, bytes);
    }
    storage.put_after(name, bytes, &mut || rotate(storage, name, keep))
}

/// The backup rotation of a put of `name` that keeps `keep` backups (at least one): the file
/// `name` replaces becomes `name.bak1`, and so on; run once the new bytes are staged durably
/// (the `first` of [`Storage::put_after`] or [`Storage::put_streamed`]).
///
/// # Errors
/// The storage's error.
pub(super) fn rotate(storage: &dyn Storage, name: &str, keep: u32) -> io::Result<()> {
    let oldest = backup_name(name, keep);
    storage.rotate_dropping(name, &oldest, &mut || {
        // The first copy made is the one into the oldest backup's name.
        let mut replaced = None;
        for i in (1..keep).rev() {
            let copied = storage.copy(&backup_name(name, i), &backup_name(name, i + 1))?;
            replaced.get_or_insert(copied);
        }
        let copied = storage.copy(name, &backup_name(name, 1))?;
        Ok(replaced.unwrap_or(copied))
    })
}

/// Indices of the backups of `slot` in `listing`, ascending (newest first).
pub(super) fn backups_of(listing: &[String], slot: SlotId) -> Vec<u32> {
    let mut found: Vec<u32> = listing
        .iter()
        .filter_map(|f| match SlotFile::parse(f) {
            Some(SlotFile::Backup(s, i)) if s == slot => Some(i),
            _ => None,
        })
        .collect();
    found.sort_unstable();
    found
}
