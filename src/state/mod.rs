//! Whole game states saved in one call: groups of originators ([`SaveState`], usually
//! derived) and registries of originators that come and go ([`Registry`]).
//!
//! # Which one?
//!
//! | the game has | use |
//! |---|---|
//! | a fixed set of objects (`struct Game { player, world, quests }`) | `#[derive(SaveState)]` on the struct: one id per field |
//! | objects spawned and destroyed at run time (entities, projectiles, placed furniture) | a [`Registry`] of them, by id; a field of a group with `#[savegame(flatten)]`, or on its own |
//! | something else | implement [`SaveState`] by hand over [`Snapshot::capture`] and [`Snapshot::restore`] |
//!
//! A state is saved with [`SaveLoadManager::save_state`](crate::SaveLoadManager::save_state),
//! loaded with [`SaveLoadManager::load_state`](crate::SaveLoadManager::load_state), and saved
//! incrementally with
//! [`SaveLoadManager::save_state_incremental`](crate::SaveLoadManager::save_state_incremental),
//! which finds what changed by itself: the game marks nothing dirty. A replay's keyframe is
//! [`capture_state`](SaveState::capture_state) into the recorder's snapshot, and
//! [`Replayable::restore_keyframe`](crate::replay::Replayable::restore_keyframe) is one line:
//! `self.restore_state(keyframe).map(drop)`.
//!
//! ```
//! use savegame::{Originator, SaveLoadManager, SaveState, SlotId};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Originator, Default, Debug, PartialEq)]
//! struct Player { health: u32, #[savegame(skip)] frames_since_hit: u32 }
//!
//! #[derive(Originator, Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
//! #[savegame(self_memento)]
//! struct Quests { done: Vec<String> }
//!
//! #[derive(SaveState, Default, Debug, PartialEq)]
//! struct Game {
//!     player: Player,
//!     #[savegame(id = "quest-log")]
//!     quests: Quests,
//!     #[savegame(skip)]
//!     fps: f32,
//! }
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let manager = SaveLoadManager::builder().directory(dir.path()).build()?;
//! let mut game = Game::default();
//! game.player.health = 80;
//! game.quests.done.push("rats".into());
//! manager.save_state(SlotId::Numbered(1), &game)?;
//!
//! let mut loaded = Game::default();
//! let outcome = manager.load_state(SlotId::Numbered(1), &mut loaded)?;
//! assert_eq!(loaded, game);
//! assert!(outcome.restore.is_exact());
//! # Ok::<(), savegame::Error>(())
//! ```

mod members;
mod registry;
mod types;

pub use members::Members;
pub(crate) use members::encode_listed;
pub use registry::Registry;
pub use types::{MementoType, MementoTypes};

use crate::error::{Error, Result};
use crate::format::Metadata;
use crate::snapshot::Snapshot;

/// A game state made of originators, captured into one [`Snapshot`] and restored from one.
///
/// Derive it on a struct whose fields are [`Originator`](crate::Originator)s
/// (`#[derive(SaveState)]`), or implement it by hand. Each field is saved under its name;
/// the attributes, all `#[savegame(...)]`:
///
/// | on | attribute | means |
/// |---|---|---|
/// | a field | `id = "name"` | save it under `name` instead of the field's name |
/// | a field | `skip` | not part of the state (a cache, the frame counter); left as it is on restore |
/// | a field | `skip, reset` | not part of the state; reset to `Default::default()` after a restore |
/// | a field | `optional` | a save without its memento still loads; the field is left as it is (and listed in [`RestoreReport::not_in_save`]) |
/// | a field | `flatten` | the field is itself a `SaveState` (a [`Registry`], a nested group); its ids go into the same snapshot as they are |
/// | the type | `describe = "path"` | `fn(&Self, &mut Metadata)` fills in the label and playtime [`save_state`](crate::SaveLoadManager::save_state) writes |
/// | the type | `bound = "T: Trait"` | extra bounds on the impl of a generic type |
/// | the type | `crate = "path"` | where `savegame` is, when the game reaches it through another crate |
///
/// **Restoring** decodes every member's memento before it changes anything: a member
/// missing from the snapshot (one not `optional`) is [`Error::StateMismatch`] listing every
/// missing id, and a memento that does not decode is [`Error::Decode`]; either way the state
/// is untouched. Then the members are restored in field order; a member that rejects its
/// memento stops the restore there (restore into a fresh state, or load again, to start over).
/// Mementos in the snapshot that no member takes are not an error (a snapshot may hold more
/// than the group, such as an editor's history): [`RestoreReport::not_in_game`] lists them.
///
/// ```
/// use savegame::{Codec, Originator, SaveState, Snapshot};
///
/// #[derive(Originator, Default, Debug, PartialEq)]
/// struct Clock { turn: u64 }
///
/// #[derive(SaveState, Default, Debug, PartialEq)]
/// struct Game { clock: Clock }
///
/// let mut snapshot = Snapshot::new(Codec::Json);
/// let game = Game { clock: Clock { turn: 7 } };
/// game.capture_state(&mut snapshot)?;
/// assert_eq!(snapshot.ids().collect::<Vec<_>>(), ["clock"]);
///
/// let err = Game::default().restore_state(&Snapshot::new(Codec::Json)).unwrap_err();
/// assert!(matches!(err, savegame::Error::StateMismatch { ref not_in_save, .. } if not_in_save == &["clock"]));
/// # Ok::<(), savegame::Error>(())
/// ```
pub trait SaveState {
    /// Captures every member into `snapshot`, each under its id.
    ///
    /// # Errors
    /// [`Error::InvalidId`] for an unusable id (see [`Snapshot::capture`]).
    fn capture_state(&self, snapshot: &mut Snapshot) -> Result<()>;

    /// Restores every member from `snapshot`, and reports what did not match.
    ///
    /// # Errors
    /// [`Error::StateMismatch`] for members the snapshot lacks (a group's required members, a
    /// registry's ids when it is told to refuse them), before anything changes;
    /// [`Error::Decode`] likewise; whatever a member's `restore_memento` returns.
    fn restore_state(&mut self, snapshot: &Snapshot) -> Result<RestoreReport>;

    /// Is `id` one of this state's ids (or, for a registry with a prefix, under its prefix)?
    /// A group uses it to tell which of a snapshot's mementos none of its members takes. The
    /// default says no to every id.
    fn claims(&self, id: &str) -> bool {
        let _ = id;
        false
    }

    /// Fills in what the load menu shows (label, playtime) for a
    /// [`save_state`](crate::SaveLoadManager::save_state). The default leaves it empty.
    fn describe(&self, metadata: &mut Metadata) {
        let _ = metadata;
    }

    /// Lists every member in `members`, for a blocking save that encodes each one straight
    /// from the game's objects into the file
    /// ([`save_state`](crate::SaveLoadManager::save_state)): no copy of the state is made.
    /// Returns `false` when the state cannot list its members, and the save then captures it
    /// with [`capture_state`](Self::capture_state) instead. `#[derive(SaveState)]` and
    /// [`Registry`] list theirs; the default, for a state implemented by hand, says `false`.
    ///
    /// It must list exactly what `capture_state` captures, under the same ids.
    ///
    /// # Errors
    /// [`Error::InvalidId`] for an unusable id, as for [`Snapshot::capture`].
    fn members<'s>(&'s self, members: &mut Members<'s>) -> Result<bool> {
        let _ = members;
        Ok(false)
    }

    /// Lists every member's memento type in `types`, under its id and at its memento version,
    /// for the schema guard (`savegame::schema`, feature `schema`), which traces each type's
    /// shape and compares it with the one the game committed. Returns `false` when the state
    /// cannot list them. `#[derive(SaveState)]` lists its members (a flattened one's too);
    /// a [`Registry`] lists one entry, `prefix*`, for all its originators; the default, for
    /// a state implemented by hand, says `false` (list them with
    /// [`MementoTypes::originator`]).
    ///
    /// # Errors
    /// [`Error::InvalidId`] for an unusable id, as for [`Snapshot::capture`].
    fn memento_types(&self, types: &mut MementoTypes) -> Result<bool> {
        let _ = types;
        Ok(false)
    }

    /// Captures the members whose (snapshot) ids are in `ids` into `snapshot`, and no others:
    /// what a save of the members the game marked dirty needs
    /// ([`save_state_incremental_in_background`](crate::SaveLoadManager::save_state_incremental_in_background)).
    /// An id the state has no member for is left out (the save takes it for a member that is
    /// gone).
    ///
    /// The default walks [`members`](Self::members) (references, no copies) and encodes the
    /// members asked for, or, for a state that cannot list them, captures the whole state and
    /// keeps those: it then costs what a full capture costs. A [`Registry`] finds each id
    /// directly and captures (clones) only those; a state implemented by hand over many
    /// members should do the same.
    ///
    /// # Errors
    /// [`Error::InvalidId`] for an unusable id; [`Error::Encode`] when the default encodes a
    /// member the codec refuses.
    fn capture_members(&self, ids: &[&str], snapshot: &mut Snapshot) -> Result<()> {
        capture_listed(self, ids, snapshot)
    }
}

/// [`SaveState::capture_members`]'s default.
fn capture_listed<S: SaveState + ?Sized>(
    state: &S,
    ids: &[&str],
    snapshot: &mut Snapshot,
) -> Result<()> {
    let wanted: std::collections::HashSet<&str> = ids.iter().copied().collect();
    let mut members = Members::new();
    if state.members(&mut members)? {
        for member in members.into_sorted() {
            if !wanted.contains(&*member.id) {
                continue;
            }
            let mut bytes = Vec::new();
            member
                .originator
                .encode_into(snapshot.codec(), &mut bytes)
                .map_err(|e| e.encoding(&member.id))?;
            snapshot.insert_raw(&member.id, bytes)?;
            snapshot.set_memento_version(&member.id, member.version)?;
        }
        return Ok(());
    }
    let mut all = Snapshot::new(snapshot.codec());
    state.capture_state(&mut all)?;
    for id in ids {
        if let Some(version) = all.memento_version(id) {
            snapshot.insert_raw(id, all.encoded(id)?.to_vec())?;
            snapshot.set_memento_version(id, version)?;
        }
    }
    Ok(())
}

/// What [`SaveState::restore_state`] found: how many originators it restored, and the ids on
/// either side that had no partner.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct RestoreReport {
    /// How many originators were restored.
    pub restored: usize,
    /// Ids of the game's originators with no memento in the snapshot; they were left as they
    /// were. For a registry: registered, but not in the save (spawned after it was made?).
    /// These are snapshot ids, a registry's prefix included; [`not_in_save_of`](Self::not_in_save_of)
    /// gives one registry's as it names them.
    pub not_in_save: Vec<String>,
    /// Ids of mementos in the snapshot that no originator took: for a registry, saved but not
    /// registered (an entity not spawned in time, an id renamed, one that no longer exists).
    /// Snapshot ids, as above; [`not_in_game_of`](Self::not_in_game_of) gives one registry's.
    pub not_in_game: Vec<String>,
}

impl RestoreReport {
    /// Did every originator get a memento, and every memento an originator?
    #[must_use]
    pub fn is_exact(&self) -> bool {
        self.not_in_save.is_empty() && self.not_in_game.is_empty()
    }

    /// The report, or [`Error::StateMismatch`] with both lists if it is not
    /// [exact](Self::is_exact). For a game that treats any mismatch as an error after the
    /// fact (the state is already restored then; to refuse before anything changes, tell the
    /// [`Registry`] with [`deny_not_in_save`](Registry::deny_not_in_save) and
    /// [`deny_not_in_game`](Registry::deny_not_in_game)).
    ///
    /// # Errors
    /// [`Error::StateMismatch`], as described.
    pub fn exact(self) -> Result<Self> {
        if self.is_exact() {
            Ok(self)
        } else {
            Err(Error::StateMismatch {
                not_in_save: self.not_in_save,
                not_in_game: self.not_in_game,
            })
        }
    }

    /// The ids of [`not_in_game`](Self::not_in_game) that are under `registry`'s prefix, as
    /// the registry names them (without the prefix): the saved entities it has no originator
    /// for, ready for [`Registry::register`].
    #[must_use]
    pub fn not_in_game_of<T>(&self, registry: &Registry<T>) -> Vec<&str> {
        self.not_in_game
            .iter()
            .filter_map(|id| registry.own_id(id))
            .collect()
    }

    /// The ids of [`not_in_save`](Self::not_in_save) that are under `registry`'s prefix, as
    /// the registry names them (without the prefix): its originators the save has no memento
    /// for, ready for [`Registry::unregister`].
    #[must_use]
    pub fn not_in_save_of<T>(&self, registry: &Registry<T>) -> Vec<&str> {
        self.not_in_save
            .iter()
            .filter_map(|id| registry.own_id(id))
            .collect()
    }

    /// Adds a member's report to this one (a flattened member's, in a group).
    pub fn merge(&mut self, other: RestoreReport) {
        self.restored += other.restored;
        self.not_in_save.extend(other.not_in_save);
        self.not_in_game.extend(other.not_in_game);
    }

    /// For `#[derive(SaveState)]`: the required ids the snapshot lacks, as an error.
    #[doc(hidden)]
    pub fn __require(snapshot: &Snapshot, ids: &[&str]) -> Result<()> {
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !snapshot.contains(id))
            .map(|id| (*id).to_owned())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::StateMismatch {
                not_in_save: missing,
                not_in_game: Vec::new(),
            })
        }
    }

    /// For `#[derive(SaveState)]`: an optional member had no memento.
    #[doc(hidden)]
    pub fn __not_in_save(&mut self, id: &str) {
        self.not_in_save.push(id.to_owned());
    }

    /// For `#[derive(SaveState)]`: `n` more originators restored.
    #[doc(hidden)]
    pub fn __restored(&mut self, n: usize) {
        self.restored += n;
    }

    /// For `#[derive(SaveState)]`: lists the snapshot's ids no member claims, in order.
    #[doc(hidden)]
    pub fn __finish(&mut self, snapshot: &Snapshot, claims: impl Fn(&str) -> bool) {
        self.not_in_game
            .extend(snapshot.ids().filter(|id| !claims(id)).map(str::to_owned));
        self.not_in_game.sort();
        self.not_in_game.dedup();
        self.not_in_save.sort();
        self.not_in_save.dedup();
    }
}
