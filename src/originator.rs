//! The originator side of the memento pattern: game objects that can save and restore themselves.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::format::DEFAULT_MEMENTO_VERSION;

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
///
/// # Memento versions
///
/// Beside the save's schema version, each memento carries a version of its own (format
/// version 2 on): [`memento_version`](Self::memento_version), 1 unless the originator says
/// otherwise. [`Snapshot::capture`](crate::Snapshot::capture) records it, and
/// [`Snapshot::restore`](crate::Snapshot::restore) refuses a memento at another version
/// ([`Error::NoMementoMigrationPath`](crate::Error::NoMementoMigrationPath) for an older one
/// that no step migrated, [`Error::NewerMemento`](crate::Error::NewerMemento) for a newer
/// one). Raise it when the memento type changes shape, and register a
/// [`Migrations::memento_step`](crate::Migrations::memento_step) from the old version, without
/// bumping the whole save's schema: parts of a game (mods, DLC, plugins) evolve apart.
///
/// It is a method rather than an associated constant so that the trait stays usable as
/// `dyn Originator<Memento = M>`; an implementation (or a derive) returns a constant.
///
/// ```
/// # use savegame::Originator;
/// # #[derive(serde::Serialize, serde::Deserialize)] struct M;
/// # struct Player;
/// impl Originator for Player {
///     type Memento = M;
///     fn memento_version(&self) -> u32 { 3 }
///     fn create_memento(&self) -> M { M }
///     fn restore_memento(&mut self, _: M) -> savegame::Result<()> { Ok(()) }
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

    /// The version of this originator's memento type: what
    /// [`create_memento`](Self::create_memento) produces and [`restore_memento`](Self::restore_memento) accepts.
    /// Default: [`DEFAULT_MEMENTO_VERSION`] (1), the version of every memento of a format-1
    /// file.
    fn memento_version(&self) -> u32 {
        DEFAULT_MEMENTO_VERSION
    }
}
