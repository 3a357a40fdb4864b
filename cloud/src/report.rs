//! What a sync tells the game: what moved, per slot, and the two versions of a conflict.

use std::time::{Duration, SystemTime};

use super::merge::DEVICE_FIELD;
use savegame::Error;
use savegame::format::Header;
use savegame::slot::SlotId;

/// What one save looks like to a "which save do you keep?" dialog: from its header alone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Version {
    /// The save's label.
    pub label: String,
    /// How long the player had played.
    pub playtime: Duration,
    /// When it was saved.
    pub saved_at: SystemTime,
    /// The device it was saved on (the `savegame.device` user field), when it names one.
    pub device: Option<String>,
    /// The slot's save counter in that file.
    pub generation: u64,
    /// The version of the game that wrote it.
    pub app_version: String,
}

impl Version {
    pub(super) fn of(header: &Header) -> Self {
        Version {
            label: header.metadata.label.clone(),
            playtime: header.metadata.playtime,
            saved_at: header.saved_at,
            device: header.metadata.user.get(DEVICE_FIELD).cloned(),
            generation: header.generation,
            app_version: header.metadata.app_version.clone(),
        }
    }
}

/// A slot both devices changed in ways that cannot be merged: the same memento changed on
/// both, or saves that cannot be compared. Nothing was overwritten on either side: the local
/// save is as it was, the remote object too, and the remote version is kept on this device
/// until [`CloudSync::resolve`](super::CloudSync::resolve) picks one; the one not picked is
/// kept as the slot's newest backup.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Conflict {
    /// The slot.
    pub slot: SlotId,
    /// This device's save.
    pub local: Version,
    /// The save in the cloud.
    pub remote: Version,
    /// The mementos both sides changed (empty when the saves could not be compared).
    pub ids: Vec<String>,
    /// Why the saves could not be compared, when that is the reason.
    pub reason: Option<String>,
}

/// A slot both devices changed, in different mementos: merged, saved here and uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Merged {
    /// The slot.
    pub slot: SlotId,
    /// The mementos whose change came from this device.
    pub from_local: Vec<String>,
    /// The mementos whose change came from the cloud.
    pub from_remote: Vec<String>,
}

/// What a sync did to one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotSync {
    /// Both sides already held the same save.
    Unchanged,
    /// The local save was uploaded.
    Pushed,
    /// The remote save was downloaded, checked and put in place (the local one it replaced is
    /// the newest backup).
    Pulled,
    /// Both changed; the changes were merged (see [`Merged`]).
    Merged(Merged),
    /// Both changed the same mementos (see [`Conflict`]).
    Conflict(Box<Conflict>),
}

/// What a [`sync`](super::CloudSync::sync) moved, slot by slot.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SyncReport {
    /// Slots uploaded.
    pub pushed: Vec<SlotId>,
    /// Slots downloaded.
    pub pulled: Vec<SlotId>,
    /// Slots merged.
    pub merged: Vec<Merged>,
    /// Slots in conflict, waiting for [`resolve`](super::CloudSync::resolve).
    pub conflicts: Vec<Conflict>,
    /// Slots that were the same on both sides.
    pub unchanged: Vec<SlotId>,
    /// Slots whose sync failed, with why: the network, the server, a damaged or foreign
    /// remote object. Nothing local was damaged; the next sync takes them up again.
    pub failed: Vec<(SlotId, Error)>,
}

impl SyncReport {
    /// Did every slot sync (no failures; conflicts are not failures)?
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }

    pub(super) fn add(&mut self, slot: SlotId, outcome: Result<SlotSync, Error>) {
        match outcome {
            Ok(SlotSync::Unchanged) => self.unchanged.push(slot),
            Ok(SlotSync::Pushed) => self.pushed.push(slot),
            Ok(SlotSync::Pulled) => self.pulled.push(slot),
            Ok(SlotSync::Merged(m)) => self.merged.push(m),
            Ok(SlotSync::Conflict(c)) => self.conflicts.push(*c),
            Err(e) => self.failed.push((slot, e)),
        }
    }
}

/// A slot in the cloud, for a cloud load menu: from a ranged read of its object's first bytes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteSlot {
    /// The slot.
    pub slot: SlotId,
    /// The object's size in bytes.
    pub size: u64,
    /// Its header (label, playtime, saved-at, ...), when it could be read.
    pub header: Option<Header>,
    /// Why it could not, otherwise.
    pub problem: Option<String>,
}
