//! The originator side of the memento pattern: game objects that can save and restore themselves.

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};

use crate::codec::{Codec, CodecError, Encodable};
use crate::error::Result;
use crate::format::DEFAULT_MEMENTO_VERSION;

/// A game object whose state can be captured into a memento and restored from one.
///
/// The memento is a plain serde type the originator chooses: it owns its data (ids rather than
/// references to other objects), and only the originator knows what is inside. The caretaker
/// ([`Snapshot`](crate::Snapshot), [`SaveLoadManager`](crate::SaveLoadManager)) stores it as
/// opaque bytes.
///
/// # `#[derive(Originator)]`
///
/// The common case, a memento that is a copy of the type's fields, is derived. On a struct
/// (named fields or a tuple struct) the derive writes a memento struct beside it, named
/// `<Type>Memento` and as public as the type (its fields too, so tests and migrations can
/// build one), and both methods: `create_memento` clones each saved field, `restore_memento`
/// moves each back.
///
/// ```
/// use std::collections::BTreeMap;
/// use savegame::Originator;
///
/// #[derive(Originator, Default)]
/// #[savegame(derive(Debug, PartialEq), validate = "Player::check")]
/// pub struct Player {
///     /// Hit points.
///     pub health: u32,
///     #[serde(rename = "bag", default)] // serde's field attributes apply to the memento
///     pub inventory: BTreeMap<String, u32>,
///     #[savegame(skip)] // not saved; left as it is on restore
///     pub name_tag_colour: u32,
///     #[savegame(skip, reset)] // not saved; Default::default() on restore
///     pub frames_since_hit: u32,
/// }
///
/// impl Player {
///     fn check(m: &PlayerMemento) -> savegame::Result<()> {
///         if m.health > 1000 {
///             return Err(savegame::Error::rejected("health above the maximum"));
///         }
///         Ok(())
///     }
/// }
///
/// let player = Player { health: 80, frames_since_hit: 3, ..Player::default() };
/// let memento: PlayerMemento = player.create_memento();
/// assert_eq!(memento, PlayerMemento { health: 80, inventory: BTreeMap::new() });
///
/// let mut restored = Player { name_tag_colour: 7, frames_since_hit: 9, ..Player::default() };
/// restored.restore_memento(memento)?;
/// assert_eq!((restored.health, restored.name_tag_colour, restored.frames_since_hit), (80, 7, 0));
/// assert!(restored.restore_memento(PlayerMemento { health: 5000, inventory: BTreeMap::new() }).is_err());
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// | on | attribute (`#[savegame(...)]`) | means |
/// |---|---|---|
/// | the type | `memento = "Name"` | the memento struct's name (default `<Type>Memento`): the name tests and migrations use |
/// | the type | `self_memento` | the type is its own memento: it must be `Clone + Serialize + Deserialize`; any struct or enum. No struct is generated; `restore_memento` replaces `*self` |
/// | the type | `version = N` | the memento's version, [`memento_version`](Originator::memento_version) (default 1): raise it when the memento changes shape, with a [`Migrations::memento_step`](crate::Migrations::memento_step) from the old one |
/// | the type | `validate = "path"` | `fn(&Memento) -> savegame::Result<()>` runs first in `restore_memento`; an error leaves the originator unchanged |
/// | the type | `derive(Debug, Clone, ...)` | more derives on the memento struct |
/// | the type | `serde(...)` | serde container attributes on the memento struct (`deny_unknown_fields`, `rename_all`) |
/// | the type | `bound = "T: Trait"` | the impl's bounds, instead of the generated ones (for generic types) |
/// | the type | `crate = "path"` | where `savegame` is, when the game reaches it through another crate |
/// | a field | `skip` | not saved; **left as it is** on restore |
/// | a field | `skip, reset` | not saved; **reset to `Default::default()`** on restore (for transient state that must not outlive a load) |
/// | a field | `originator` | the field is an originator itself: the memento holds its memento, and restoring restores it |
/// | a field | `#[serde(...)]` | carried over to the memento's field as it is (`rename`, `default`, `with`) |
///
/// A field's doc comments are carried over too. A restore is all-or-nothing when `validate`
/// is the only thing that fails; with `originator` fields, those are restored first, in
/// order, and one that rejects its memento leaves the ones before it restored.
///
/// **Generic types** get a generic memento (`Stack<T>` has `StackMemento<T>`); the impl asks
/// each saved field's type for `Clone + Serialize + DeserializeOwned + Send + Sync + 'static`
/// (or `Originator`), unless `bound` says otherwise. Type parameters only skipped fields use
/// are kept in a hidden `PhantomData`. **Lifetime parameters** are refused: a memento owns its
/// data. **Enums** and **unit structs** are refused unless they are their own memento
/// (`self_memento`): a copy of an enum's fields has no single shape to restore into, and the
/// enum itself usually serves. Hand-written impls, as below, remain the way to a memento of
/// any other shape (a map kept as rows of text, derived values left out).
///
/// # By hand
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
/// one), and so does every other restore path: a [`SaveState`](crate::SaveState) (derived or
/// loaded with [`load_state`](crate::SaveLoadManager::load_state)), a
/// [`Registry`](crate::Registry), a replay's keyframes, the Bevy plugin. Derived, it is
/// `#[savegame(version = N)]`. Raise it when the memento type changes shape, and register a
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

    /// Serializes the memento [`create_memento`](Self::create_memento) would make, straight
    /// from `self`: what a blocking save
    /// ([`save_state`](crate::SaveLoadManager::save_state)) encodes, so that it needs no copy
    /// of the game's state. The default makes the memento and serializes it.
    /// `#[derive(Originator)]` overrides it with a view of the saved fields by reference,
    /// which serializes to the same bytes as the memento (for a generic type, or a field with
    /// a serde attribute other than `rename`, `alias`, `default` or `skip_deserializing`, it
    /// keeps the default).
    ///
    /// An override must serialize exactly what `create_memento` holds: a save written either
    /// way must load the same.
    ///
    /// # Errors
    /// The serializer's.
    fn serialize_memento<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>
    where
        Self: Sized,
    {
        self.create_memento().serialize(serializer)
    }
}

/// An originator's memento as a serde value, serialized straight from the originator by
/// [`Originator::serialize_memento`]: `MementoOf(&player)` encodes to the same bytes as
/// `player.create_memento()`, without making the memento when the originator's
/// `serialize_memento` needs none. `#[derive(Originator)]` serializes an `originator` field
/// through it.
#[derive(Debug, Clone, Copy)]
pub struct MementoOf<'a, O>(pub &'a O);

impl<O: Originator> Serialize for MementoOf<'_, O> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_memento(serializer)
    }
}

/// A save encodes an originator straight from the game's state (see
/// [`Originator::serialize_memento`]).
impl<O: Originator> Encodable for O {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError> {
        codec.encode_into(out, &MementoOf(self))
    }

    fn encode_to_writer(
        &self,
        codec: Codec,
        out: &mut dyn std::io::Write,
    ) -> Result<(), CodecError> {
        codec.encode_to_writer(out, &MementoOf(self))
    }
}
