//! The load menu as a system parameter: [`SaveMenu`].

use bevy_ecs::system::{Res, SystemParam};
use savegame::{SlotId, SlotInfo};

use crate::error::SaveError;
use crate::manager::SaveManager;

/// The load menu, for a menu system: `fn menu(saves: SaveMenu) { for slot in saves.slots()? … }`.
/// Each call reads the slot files' headers (and nothing more: no decryption), so call it when
/// the menu opens, not every frame.
#[derive(SystemParam)]
pub struct SaveMenu<'w> {
    manager: Res<'w, SaveManager>,
}

impl SaveMenu<'_> {
    /// Every slot with a file, sorted: numbered slots, autosaves, the quicksave
    /// ([`SaveLoadManager::list`](savegame::SaveLoadManager::list)).
    ///
    /// # Errors
    /// [`SaveError::Savegame`] when the folder cannot be listed; a single bad file is a
    /// [`SlotStatus`](savegame::SlotStatus) in its [`SlotInfo`], not an error.
    pub fn slots(&self) -> Result<Vec<SlotInfo>, SaveError> {
        self.manager.slots()
    }

    /// One slot's entry.
    ///
    /// # Errors
    /// [`SaveError::Savegame`]: [`savegame::Error::SlotEmpty`] when the slot has no file.
    pub fn info(&self, slot: SlotId) -> Result<SlotInfo, SaveError> {
        Ok(self.manager.manager().info(slot)?)
    }
}
