//! The originator side of the memento pattern: game objects that can save and restore themselves.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;

/// A game object whose state can be captured into a memento and restored from one.
///
/// The memento is a plain serde type the originator chooses: it owns its data (ids rather than
/// references to other objects), and only the originator knows what is inside. The caretaker
/// ([`Snapshot`](crate::Snapshot), [`SaveLoadManager`](crate::SaveLoadManager)) stores it as
/// opaque bytes.
///
/// ```
/// use std::collections::BTreeMap;
/// use savegame::Originator;
/// use serde::{Deserialize, Serialize};
///
/// struct Player {
///     health: u32,
///     inventory: BTreeMap<String, u32>,
///     frames_since_hit: u32, // transient: not saved
/// }
///
/// #[derive(Serialize, Deserialize)]
/// struct PlayerMemento {
///     health: u32,
///     inventory: BTreeMap<String, u32>,
/// }
///
/// impl Originator for Player {
///     type Memento = PlayerMemento;
///
///     fn create_memento(&self) -> PlayerMemento {
///         PlayerMemento { health: self.health, inventory: self.inventory.clone() }
///     }
///
///     fn restore_memento(&mut self, m: PlayerMemento) -> savegame::Result<()> {
///         if m.health > 1000 {
///             return Err(savegame::Error::rejected("health above the maximum"));
///         }
///         self.health = m.health;
///         self.inventory = m.inventory;
///         self.frames_since_hit = 0;
///         Ok(())
///     }
/// }
/// ```
pub trait Originator {
    /// The originator's saved state: a serde type that owns its data. It is `Send + Sync` so
    /// a save can encode it on a worker thread.
    type Memento: Serialize + DeserializeOwned + Send + Sync + 'static;

    /// Captures the current state. Called on the game thread; keep it to copying data.
    fn create_memento(&self) -> Self::Memento;

    /// Replaces the current state with the one in `memento`.
    ///
    /// # Errors
    /// Return [`Error::rejected`](crate::Error::rejected) (or any other error) when the memento
    /// is unacceptable. Leave the originator unchanged in that case.
    fn restore_memento(&mut self, memento: Self::Memento) -> Result<()>;
}
