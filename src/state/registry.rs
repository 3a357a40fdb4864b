//! [`Registry`]: originators registered and unregistered by id at run time.

use std::collections::BTreeMap;
use std::fmt;

use super::{Members, MementoTypes, RestoreReport, SaveState};
use crate::error::{Error, Result};
use crate::format::MAX_ID_LEN;
use crate::originator::Originator;
use crate::snapshot::Snapshot;

/// Makes an originator for an id the save holds and the game has not registered.
type Spawner<T> = Box<dyn FnMut(&str) -> Option<T> + Send + Sync>;

/// Originators of one type that come and go at run time (entities spawned and destroyed),
/// each under an id, saved and loaded as one [`SaveState`].
///
/// The registry **owns** its originators: the game keeps its entities in it and reaches them
/// by id ([`get_mut`](Self::get_mut)) or all at once ([`iter_mut`](Self::iter_mut)), as it
/// would in a map. Nothing is shared, so no `Rc<RefCell<_>>`, no handles that outlive their
/// entity, and a registry is `Send` whenever its originators are. Kinds of entities that
/// differ are an enum (which can be its own memento, with `#[savegame(self_memento)]`) or a
/// registry each, with a [prefix](Self::with_prefix) each, in one group. A game that keeps
/// its objects elsewhere (in an ECS, say) implements [`SaveState`] over its own storage
/// instead.
///
/// **Loading** ([`restore_state`](SaveState::restore_state)) tells the two ways a save and a
/// game disagree apart, in its [`RestoreReport`]: `not_in_save`, registered originators the
/// save has no memento for (left as they are), and `not_in_game`, mementos in the save with no
/// registered originator (skipped, unless a [spawner](Self::spawn_with) makes one). Either is
/// reported, never ignored silently; [`deny_not_in_save`](Self::deny_not_in_save) and
/// [`deny_not_in_game`](Self::deny_not_in_game) make it an [`Error::StateMismatch`] instead,
/// raised before anything is restored.
///
/// ```
/// use savegame::{Codec, Originator, Registry, SaveState, Snapshot};
///
/// #[derive(Originator, Default, Debug, PartialEq)]
/// struct Monster { hp: u32 }
///
/// let mut monsters = Registry::new().with_prefix("monster/");
/// monsters.register("rat-1", Monster { hp: 3 })?;
/// monsters.register("rat-2", Monster { hp: 4 })?;
/// assert!(matches!(
///     monsters.register("rat-1", Monster { hp: 9 }),
///     Err(savegame::Error::DuplicateId { .. })
/// ));
///
/// let mut snapshot = Snapshot::new(Codec::Json);
/// monsters.capture_state(&mut snapshot)?;
/// assert_eq!(snapshot.ids().collect::<Vec<_>>(), ["monster/rat-1", "monster/rat-2"]);
///
/// // Another session: rat-2 was not spawned, a goblin was.
/// let mut later = Registry::new().with_prefix("monster/");
/// later.register("rat-1", Monster::default())?;
/// later.register("goblin", Monster::default())?;
/// let report = later.restore_state(&snapshot)?;
/// assert_eq!(later.get("rat-1"), Some(&Monster { hp: 3 }));
/// assert_eq!(report.not_in_game, ["monster/rat-2"]); // saved, not registered
/// assert_eq!(report.not_in_save, ["monster/goblin"]); // registered, not saved
///
/// // A game that spawns what the save holds:
/// let mut spawning = Registry::new()
///     .with_prefix("monster/")
///     .spawn_with(|_id| Some(Monster::default()))
///     .deny_not_in_save(true);
/// assert!(spawning.restore_state(&snapshot)?.is_exact());
/// assert_eq!(spawning.len(), 2);
/// # Ok::<(), savegame::Error>(())
/// ```
pub struct Registry<T> {
    prefix: String,
    entries: BTreeMap<String, T>,
    deny_not_in_save: bool,
    deny_not_in_game: bool,
    spawn: Option<Spawner<T>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            prefix: String::new(),
            entries: BTreeMap::new(),
            deny_not_in_save: false,
            deny_not_in_game: false,
            spawn: None,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("prefix", &self.prefix)
            .field("entries", &self.entries)
            .field("deny_not_in_save", &self.deny_not_in_save)
            .field("deny_not_in_game", &self.deny_not_in_game)
            .field("spawner", &self.spawn.is_some())
            .finish()
    }
}

impl<T> Registry<T> {
    /// An empty registry whose ids are the snapshot's ids as they are.
    #[must_use]
    pub fn new() -> Self {
        Registry::default()
    }

    /// Puts `prefix` before every id in the snapshot (`"monster/"` makes `rat-1` the memento
    /// `monster/rat-1`), and makes the registry answer for every memento under it, and only
    /// those. Give one to each registry that shares a snapshot with other originators (in a
    /// group, with `#[savegame(flatten)]`): without one, every memento in the snapshot that is
    /// not registered counts as `not_in_game`.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Refuse a load whose save lacks a memento for a registered id
    /// ([`Error::StateMismatch`], before anything is restored). Off by default: such
    /// originators are left as they are and listed in [`RestoreReport::not_in_save`].
    #[must_use]
    pub fn deny_not_in_save(mut self, deny: bool) -> Self {
        self.deny_not_in_save = deny;
        self
    }

    /// Refuse a load whose save holds a memento (under the prefix) for an id that is not
    /// registered and that the spawner, if any, does not make ([`Error::StateMismatch`],
    /// before anything is restored). Off by default: such mementos are skipped and listed in
    /// [`RestoreReport::not_in_game`].
    #[must_use]
    pub fn deny_not_in_game(mut self, deny: bool) -> Self {
        self.deny_not_in_game = deny;
        self
    }

    /// On a load, asks `spawn` for an originator for each id the save holds that is not
    /// registered (the id without the prefix); one it returns is registered and restored, one
    /// it declines (`None`) is `not_in_game`. For games that spawn saved entities on load.
    #[must_use]
    pub fn spawn_with(
        mut self,
        spawn: impl FnMut(&str) -> Option<T> + Send + Sync + 'static,
    ) -> Self {
        self.spawn = Some(Box::new(spawn));
        self
    }

    /// The prefix of this registry's ids in a snapshot.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Registers `originator` under `id`, and gives it back to be used.
    ///
    /// # Errors
    /// [`Error::DuplicateId`] if `id` is registered already; [`Error::InvalidId`] if it is
    /// empty or, with the prefix, longer than 1,024 bytes. The registry is unchanged then (and
    /// `originator` dropped).
    pub fn register(&mut self, id: impl Into<String>, originator: T) -> Result<&mut T> {
        let id = id.into();
        check_id(&self.prefix, &id)?;
        match self.entries.entry(id) {
            std::collections::btree_map::Entry::Occupied(e) => Err(Error::DuplicateId {
                id: e.key().clone(),
            }),
            std::collections::btree_map::Entry::Vacant(e) => Ok(e.insert(originator)),
        }
    }

    /// Unregisters `id` (its entity was destroyed) and gives its originator back; `None` if it
    /// was not registered. An incremental save of the state then deletes its memento from the
    /// slot.
    pub fn unregister(&mut self, id: &str) -> Option<T> {
        self.entries.remove(id)
    }

    /// The originator under `id`.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&T> {
        self.entries.get(id)
    }

    /// The originator under `id`, to change.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.entries.get_mut(id)
    }

    /// Is `id` registered?
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.entries.contains_key(id)
    }

    /// How many originators are registered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Is nothing registered?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The registered ids (without the prefix), in ascending order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.keys().map(String::as_str)
    }

    /// Every `(id, originator)`, in ascending id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &T)> + '_ {
        self.entries.iter().map(|(id, o)| (id.as_str(), o))
    }

    /// Every `(id, originator)`, in ascending id order, to change.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (&str, &mut T)> + '_ {
        self.entries.iter_mut().map(|(id, o)| (id.as_str(), o))
    }

    /// Unregisters every originator.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The id of `id`'s memento in a snapshot: the prefix, then `id`.
    #[must_use]
    pub fn snapshot_id(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    /// The registry's own id of the memento `snapshot_id` (a snapshot's id, as a
    /// [`RestoreReport`] names it): `snapshot_id` without the prefix, or `None` when it is not
    /// under the prefix. What [`get`](Self::get), [`register`](Self::register) and
    /// [`unregister`](Self::unregister) take.
    #[must_use]
    pub fn own_id<'s>(&self, snapshot_id: &'s str) -> Option<&'s str> {
        snapshot_id
            .strip_prefix(self.prefix.as_str())
            .filter(|id| !id.is_empty())
    }
}

impl<T: Originator> SaveState for Registry<T> {
    fn capture_state(&self, snapshot: &mut Snapshot) -> Result<()> {
        if self.prefix.is_empty() {
            for (id, o) in &self.entries {
                snapshot.capture(id, o)?;
            }
        } else {
            let mut full = self.prefix.clone();
            for (id, o) in &self.entries {
                full.truncate(self.prefix.len());
                full.push_str(id);
                snapshot.capture(&full, o)?;
            }
        }
        Ok(())
    }

    fn members<'s>(&'s self, members: &mut Members<'s>) -> Result<bool> {
        for (id, o) in &self.entries {
            if self.prefix.is_empty() {
                members.originator(id.as_str(), o)?;
            } else {
                members.originator(format!("{}{id}", self.prefix), o)?;
            }
        }
        Ok(true)
    }

    fn memento_types(&self, types: &mut MementoTypes) -> Result<bool> {
        types.registry(&self.prefix, self.entries.values())?;
        Ok(true)
    }

    fn restore_state(&mut self, snapshot: &Snapshot) -> Result<RestoreReport> {
        let prefix = self.prefix.as_str();
        // The save's ids under the prefix, without it.
        let saved: Vec<&str> = snapshot
            .ids()
            .filter_map(|id| id.strip_prefix(prefix))
            .collect();
        let not_in_save: Vec<String> = self
            .entries
            .keys()
            .filter(|id| !snapshot.contains(&format!("{prefix}{id}")))
            .map(|id| format!("{prefix}{id}"))
            .collect();
        let mut spawned = Vec::new();
        let mut not_in_game = Vec::new();
        for id in saved.iter().filter(|id| !self.entries.contains_key(**id)) {
            match self.spawn.as_mut().and_then(|spawn| spawn(id)) {
                Some(o) if !id.is_empty() => spawned.push(((*id).to_owned(), o)),
                _ => not_in_game.push(format!("{prefix}{id}")),
            }
        }
        let denied_save = self.deny_not_in_save && !not_in_save.is_empty();
        let denied_game = self.deny_not_in_game && !not_in_game.is_empty();
        if denied_save || denied_game {
            return Err(Error::StateMismatch {
                not_in_save: if self.deny_not_in_save {
                    not_in_save
                } else {
                    Vec::new()
                },
                not_in_game: if self.deny_not_in_game {
                    not_in_game
                } else {
                    Vec::new()
                },
            });
        }
        // Decode everything before anything changes, each memento at its originator's
        // version (an older one that no step migrated, or a newer one, is refused here).
        let registered = saved
            .iter()
            .filter_map(|id| Some((*id, self.entries.get(*id)?)));
        let mut decoded = Vec::with_capacity(saved.len());
        for (id, originator) in registered.chain(spawned.iter().map(|(id, o)| (id.as_str(), o))) {
            let memento = snapshot.memento_for(&format!("{prefix}{id}"), originator)?;
            decoded.push((id.to_owned(), memento));
        }
        self.entries.extend(spawned);
        let mut report = RestoreReport {
            restored: 0,
            not_in_save,
            not_in_game,
        };
        for (id, memento) in decoded {
            if let Some(o) = self.entries.get_mut(&id) {
                o.restore_memento(memento)?;
                report.restored += 1;
            }
        }
        Ok(report)
    }

    fn capture_members(&self, ids: &[&str], snapshot: &mut Snapshot) -> Result<()> {
        for id in ids {
            let own = if self.prefix.is_empty() {
                Some(*id)
            } else {
                self.own_id(id)
            };
            if let Some(o) = own.and_then(|own| self.entries.get(own)) {
                snapshot.capture(id, o)?;
            }
        }
        Ok(())
    }

    fn claims(&self, id: &str) -> bool {
        if self.prefix.is_empty() {
            self.entries.contains_key(id)
        } else {
            id.starts_with(&self.prefix)
        }
    }
}

fn check_id(prefix: &str, id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "ids must not be empty"
    } else if prefix.len() + id.len() > MAX_ID_LEN {
        "ids are at most 1024 bytes, with the registry's prefix"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.chars().take(64).collect(),
        reason,
    })
}
