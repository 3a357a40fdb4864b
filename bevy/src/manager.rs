//! [`SaveManager`], the resource the plugin adds: the library's manager and the background
//! saves it is writing, each with its [`SaveTarget`].

use bevy_ecs::resource::Resource;
use savegame::{SaveHandle, SaveLoadManager, SaveStatus, SlotId, SlotInfo};

use crate::error::SaveError;

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
    pub(crate) handle: SaveHandle,
    pub(crate) entities: usize,
    pub(crate) unsaved_references: usize,
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
            .partition(|p| p.handle.is_finished());
        self.pending = waiting;
        finished
    }
}
