//! [`SaveManager`], the resource the plugin adds: the library's manager and the background
//! saves it is writing, each with its [`SaveTarget`].

use std::sync::{Arc, OnceLock};

use bevy_ecs::resource::Resource;
use savegame::{DeltaReport, SaveHandle, SaveLoadManager, SaveStatus, SlotId, SlotInfo};

use crate::error::SaveError;

/// What a save found, for [`Saved`](crate::Saved).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Saved entities in the world.
    pub(crate) entities: usize,
    /// Entity references to unsaved entities, written as the placeholder.
    pub(crate) unsaved_references: usize,
    /// Entities a delta wrote (changed or spawned).
    pub(crate) written: usize,
    /// Entities a delta removed (despawned, or no longer saved).
    pub(crate) removed: usize,
}

/// Where a save goes: a slot, or the autosave rotation (whose slot the manager picks when it
/// writes: the empty or the oldest one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SaveTarget {
    /// This slot.
    Slot(SlotId),
    /// The autosave rotation.
    Autosave,
}

/// The plugin's manager, as a resource, and the background saves it is writing.
///
/// [`manager`](Self::manager) gives the whole library API (the load menu, deleting and
/// copying slots, the key-value store for settings); saving and loading the world goes
/// through the commands in [`SavegameCommands`](crate::SavegameCommands).
#[derive(Resource)]
pub struct SaveManager {
    manager: SaveLoadManager,
    pending: Vec<PendingSave>,
}

pub(crate) struct PendingSave {
    pub(crate) target: SaveTarget,
    pub(crate) handle: PendingHandle,
    /// What the worker found making the save, once it has.
    pub(crate) counts: Arc<OnceLock<Counts>>,
}

/// A full save's handle, or a delta's.
pub(crate) enum PendingHandle {
    Full(SaveHandle),
    Delta(SaveHandle<DeltaReport>),
}

impl PendingHandle {
    fn status(&self) -> SaveStatus {
        match self {
            PendingHandle::Full(h) => h.status(),
            PendingHandle::Delta(h) => h.status(),
        }
    }
}

impl SaveManager {
    /// The resource around `manager`, with no background save pending.
    pub(crate) fn new(manager: SaveLoadManager) -> Self {
        SaveManager {
            manager,
            pending: Vec::new(),
        }
    }

    /// The library's manager.
    #[must_use]
    pub fn manager(&self) -> &SaveLoadManager {
        &self.manager
    }

    /// The load menu: every slot with a file, from headers alone ([`SaveLoadManager::list`]).
    ///
    /// # Errors
    /// [`SaveError::Savegame`] when the folder cannot be listed.
    pub fn slots(&self) -> Result<Vec<SlotInfo>, SaveError> {
        Ok(self.manager.list()?)
    }

    /// The background saves not yet reported, with where each stands.
    pub fn pending(&self) -> impl ExactSizeIterator<Item = (SaveTarget, SaveStatus)> + '_ {
        self.pending.iter().map(|p| (p.target, p.handle.status()))
    }

    pub(crate) fn push(&mut self, pending: PendingSave) {
        self.pending.push(pending);
    }

    /// Takes the saves that have finished.
    pub(crate) fn take_finished(&mut self) -> Vec<PendingSave> {
        let (finished, waiting) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| !matches!(p.handle.status(), SaveStatus::Queued | SaveStatus::Writing));
        self.pending = waiting;
        finished
    }
}
