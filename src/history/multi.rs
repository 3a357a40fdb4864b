//! [`MultiHistory`]: one undo history over several originators of different types, named by id
//! (Unity's `Undo.RecordObject` on any object: one Ctrl+Z undoes a transform, a light and a
//! material changed by one input event).
//!
//! The history owns none of them. Recording takes the one target it records; undo and redo take
//! every target by id through [`Targets`]: a [`TargetSet`] of borrowed originators built for the
//! call, a map of boxed ones, or any registry of the game's that implements the trait.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::mem::size_of;
use std::sync::{Mutex, PoisonError};

use super::builder::{check_limits, default_codec};
use super::diff::{self, Modification, OnConflict};
use super::hook::decode_tree;
use super::{DEFAULT_LIMIT, ID, Verdict};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// Something a [`MultiHistory`] records: every [`Originator`] is one. The trait is
/// dyn-compatible, so that targets of different types sit side by side as `&mut dyn Target`.
pub trait Target {
    /// The target's memento, encoded with `codec`.
    ///
    /// # Errors
    /// [`Error::Encode`] if the codec cannot encode it.
    fn encode_memento(&self, codec: Codec) -> Result<Vec<u8>>;

    /// Restores the target from a memento encoded with `codec`.
    ///
    /// # Errors
    /// [`Error::Decode`] if the bytes are not a memento of the target; the originator's own
    /// error from `restore_memento`.
    fn restore_encoded(&mut self, codec: Codec, bytes: &[u8]) -> Result<()>;
}

impl<T: Originator> Target for T {
    fn encode_memento(&self, codec: Codec) -> Result<Vec<u8>> {
        codec
            .encode(&crate::originator::MementoOf(self))
            .map_err(|e| e.encoding(ID))
    }

    fn restore_encoded(&mut self, codec: Codec, bytes: &[u8]) -> Result<()> {
        let memento = codec.decode(bytes).map_err(|e| e.decoding(ID))?;
        self.restore_memento(memento)
    }
}

/// The targets of a [`MultiHistory`], by id: what undo and redo write to.
///
/// [`TargetSet`] borrows plain originators for one call; a `BTreeMap<String, Box<dyn Target>>`
/// is one; a game's own registry of originators implements this one method.
pub trait Targets {
    /// The target named `id`, if there is one.
    fn target(&mut self, id: &str) -> Option<&mut dyn Target>;
}

/// Originators of any types, borrowed by id for one undo or redo.
///
/// ```
/// # use savegame::history::{MultiHistory, TargetSet};
/// # use savegame::Originator;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Default)] struct Light { on: bool }
/// # #[derive(Serialize, Deserialize)] struct M { on: bool }
/// # impl Originator for Light {
/// #     type Memento = M;
/// #     fn create_memento(&self) -> M { M { on: self.on } }
/// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> { self.on = m.on; Ok(()) }
/// # }
/// let (mut lamp, mut torch) = (Light::default(), Light::default());
/// let mut history = MultiHistory::new();
/// history.edit("lamp", &mut lamp, "Switch on", |l| l.on = true)?;
/// history.undo(&mut TargetSet::new().with("lamp", &mut lamp).with("torch", &mut torch))?;
/// assert!(!lamp.on);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Default)]
pub struct TargetSet<'a> {
    targets: Vec<(&'a str, &'a mut dyn Target)>,
}

impl<'a> TargetSet<'a> {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        TargetSet {
            targets: Vec::new(),
        }
    }

    /// The set with `target` added as `id` (replacing another of that id).
    #[must_use]
    pub fn with(mut self, id: &'a str, target: &'a mut dyn Target) -> Self {
        self.insert(id, target);
        self
    }

    /// Adds `target` as `id`, replacing another of that id.
    pub fn insert(&mut self, id: &'a str, target: &'a mut dyn Target) {
        self.targets.retain(|(i, _)| *i != id);
        self.targets.push((id, target));
    }
}

impl Targets for TargetSet<'_> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.targets
            .iter_mut()
            .find(|(i, _)| *i == id)
            .map(|(_, t)| &mut **t as &mut dyn Target)
    }
}

impl fmt::Debug for TargetSet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.targets.iter().map(|(id, _)| id))
            .finish()
    }
}

impl Targets for BTreeMap<String, Box<dyn Target>> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.get_mut(id).map(|t| &mut **t as &mut dyn Target)
    }
}

impl Targets for BTreeMap<String, Box<dyn Target + Send>> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.get_mut(id).map(|t| &mut **t as &mut dyn Target)
    }
}

/// The hook of a [`MultiHistory`]: sees the target id and the modifications of each recorded
/// edit, may drop or rewrite single ones, and keeps or drops the edit.
type MultiHook = Box<dyn FnMut(&str, &mut Vec<Modification>) -> Verdict + Send>;

/// One target's part of an entry: its modifications, encoded in the history's codec.
struct Part {
    target: Box<str>,
    mods: Box<[u8]>,
}

struct MultiEntry {
    name: Box<str>,
    parts: Box<[Part]>,
}

impl MultiEntry {
    fn heap_bytes(&self) -> usize {
        self.name.len()
            + self.parts.len() * size_of::<Part>()
            + self
                .parts
                .iter()
                .map(|p| p.target.len() + p.mods.len())
                .sum::<usize>()
    }
}

/// An edit between `begin_edit` and `commit_edit`.
struct Open {
    target: String,
    name: String,
    before: Vec<u8>,
}

/// A group between `begin_group` and `end_group`.
struct MultiGroup {
    name: String,
    depth: usize,
    parts: Vec<Part>,
}

/// An undo history over several originators of different types, by id: each entry is one or
/// more property-diff edits ([`History::diff_edit`](super::History::diff_edit)), each of one
/// target, and one undo takes the whole entry back.
///
/// ```
/// use savegame::history::{MultiHistory, TargetSet};
/// use savegame::Originator;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Default)]
/// struct Transform { x: f32 }
/// #[derive(Serialize, Deserialize)]
/// struct TransformMemento { x: f32 }
/// impl Originator for Transform {
///     type Memento = TransformMemento;
///     fn create_memento(&self) -> TransformMemento { TransformMemento { x: self.x } }
///     fn restore_memento(&mut self, m: TransformMemento) -> savegame::Result<()> {
///         self.x = m.x;
///         Ok(())
///     }
/// }
///
/// #[derive(Default)]
/// struct Light { intensity: u8 }
/// #[derive(Serialize, Deserialize)]
/// struct LightMemento { intensity: u8 }
/// impl Originator for Light {
///     type Memento = LightMemento;
///     fn create_memento(&self) -> LightMemento { LightMemento { intensity: self.intensity } }
///     fn restore_memento(&mut self, m: LightMemento) -> savegame::Result<()> {
///         self.intensity = m.intensity;
///         Ok(())
///     }
/// }
///
/// let (mut transform, mut light) = (Transform::default(), Light::default());
/// let mut history = MultiHistory::new();
/// history.group("Place lamp", |h| {
///     h.edit("transform", &mut transform, "Move", |t| t.x = 4.0)?;
///     h.edit("light", &mut light, "Brighten", |l| l.intensity = 200)
/// })?;
/// assert_eq!(history.len(), 1);
///
/// // One Ctrl+Z: every target of the group, by id.
/// history.undo(&mut TargetSet::new().with("transform", &mut transform).with("light", &mut light))?;
/// assert_eq!((transform.x, light.intensity), (0.0, 0));
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// It keeps what [`History`](super::History) does for property-diff edits: undo and redo write
/// only the recorded paths, and a path changed since is settled by the [`OnConflict`] rule
/// ([`Error::UndoConflict`] names the target). Recording drops the redo entries; the entry
/// limit drops the oldest; groups nest; an edit or group that changes nothing records nothing;
/// a failed undo or redo takes back what it had done and leaves the history where it was.
/// Unlike [`History`](super::History), it has no memento edits, commands, observers, byte
/// budget or memento of its own (it cannot yet go into a save).
pub struct MultiHistory {
    entries: VecDeque<MultiEntry>,
    cursor: usize,
    saved: Option<usize>,
    limit: Option<usize>,
    codec: Codec,
    on_conflict: OnConflict,
    open: Vec<Open>,
    group: Option<MultiGroup>,
    /// In a `Mutex` only so that the history is `Sync` (reached with `get_mut`).
    hook: Mutex<Option<MultiHook>>,
}

impl Default for MultiHistory {
    fn default() -> Self {
        Self::new()
    }
}

impl MultiHistory {
    /// An empty history: at most [`DEFAULT_LIMIT`] entries, MessagePack (JSON without the
    /// `msgpack` feature), [`OnConflict::Refuse`], no hook.
    #[must_use]
    pub fn new() -> Self {
        MultiHistory {
            entries: VecDeque::new(),
            cursor: 0,
            saved: Some(0),
            limit: Some(DEFAULT_LIMIT),
            codec: default_codec(),
            on_conflict: OnConflict::Refuse,
            open: Vec::new(),
            group: None,
            hook: Mutex::new(None),
        }
    }

    /// Sets the entry limit (`None`: no limit), dropping the oldest entries at once if needed.
    ///
    /// # Errors
    /// [`Error::Config`] for `Some(0)`.
    pub fn set_limit(&mut self, entries: Option<usize>) -> Result<()> {
        check_limits(entries, None)?;
        self.limit = entries;
        self.trim();
        Ok(())
    }

    /// The history with `codec` for the states it encodes; only before anything is recorded.
    ///
    /// # Errors
    /// [`Error::Rejected`] once the history holds an entry or an open edit.
    pub fn set_codec(&mut self, codec: Codec) -> Result<()> {
        if !self.entries.is_empty() || !self.open.is_empty() || self.group.is_some() {
            return Err(Error::rejected(
                "undo history: the codec can only change while the history is empty",
            ));
        }
        self.codec = codec;
        Ok(())
    }

    /// Sets what an undo or redo does with a recorded path changed since (see [`OnConflict`]).
    pub fn set_on_conflict(&mut self, rule: OnConflict) {
        self.on_conflict = rule;
    }

    /// The conflict rule.
    #[must_use]
    pub fn on_conflict(&self) -> OnConflict {
        self.on_conflict
    }

    /// Sets the hook every edit passes through before it is recorded: it sees the target's id
    /// and the edit's modifications, may drop or rewrite single ones (as
    /// [`Recorded::modifications`](super::Recorded::modifications) says for property-diff
    /// edits), and returns [`Verdict::Drop`] to record nothing.
    pub fn set_hook(
        &mut self,
        hook: impl FnMut(&str, &mut Vec<Modification>) -> Verdict + Send + 'static,
    ) {
        *self.hook.get_mut().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(hook));
    }

    // ---------------------------------------------------------------------------------------
    // Recording

    /// Records `change` of the target `id` as one property-diff edit named `name` (inside a
    /// group, a part of the group's entry). Returns whether anything was recorded.
    ///
    /// # Errors
    /// As for [`begin_edit`](Self::begin_edit) and [`commit_edit`](Self::commit_edit).
    pub fn edit<T: Target>(
        &mut self,
        id: &str,
        target: &mut T,
        name: impl Into<String>,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.begin_edit(id, &*target, name)?;
        change(target);
        self.commit_edit(id, &*target)
    }

    /// Starts an edit of the target `id`: captures it as it is now (a drag's press). Edits of
    /// several targets may be open at once.
    ///
    /// # Errors
    /// [`Error::Rejected`] if an edit of `id` is already open; [`Error::Encode`] if its memento
    /// does not encode.
    pub fn begin_edit(
        &mut self,
        id: &str,
        target: &dyn Target,
        name: impl Into<String>,
    ) -> Result<()> {
        if self.open.iter().any(|o| o.target == id) {
            return Err(Error::rejected(format!(
                "undo history: an edit of {id:?} is already open"
            )));
        }
        let before = target.encode_memento(self.codec)?;
        self.open.push(Open {
            target: id.to_owned(),
            name: name.into(),
            before,
        });
        Ok(())
    }

    /// Ends the open edit of the target `id` and records what changed in it. Returns whether
    /// anything was recorded (`false`: nothing changed, or the hook dropped it).
    ///
    /// # Errors
    /// [`Error::Rejected`] if no edit of `id` is open; [`Error::Encode`] or [`Error::Decode`]
    /// if a state does not encode or decode (the edit stays open).
    pub fn commit_edit(&mut self, id: &str, target: &dyn Target) -> Result<bool> {
        let Some(at) = self.open.iter().position(|o| o.target == id) else {
            return Err(Error::rejected(format!(
                "undo history: commit_edit of {id:?} without begin_edit"
            )));
        };
        let after = target.encode_memento(self.codec)?;
        let codec = self.codec;
        let before_tree = decode_tree(codec, &self.open[at].before)?;
        let after_tree = decode_tree(codec, &after)?;
        let open = self.open.remove(at);
        let mut mods = diff::diff(&before_tree, &after_tree);
        if let Some(hook) = self.hook.get_mut().unwrap_or_else(PoisonError::into_inner)
            && hook(id, &mut mods) == Verdict::Drop
        {
            return Ok(false);
        }
        diff::note_seen(&mut mods, &after_tree);
        if mods.is_empty() {
            return Ok(false);
        }
        let part = Part {
            target: id.into(),
            mods: diff::encode_list(codec, &mods)?.into_boxed_slice(),
        };
        if let Some(group) = &mut self.group {
            group.parts.push(part);
            return Ok(true);
        }
        self.push(open.name, vec![part]);
        Ok(true)
    }

    /// Abandons the open edit of `id` and restores `target` as it was at
    /// [`begin_edit`](Self::begin_edit). Returns `false` when no such edit was open.
    ///
    /// # Errors
    /// The target's error from restoring; the edit then stays open.
    pub fn cancel_edit(&mut self, id: &str, target: &mut dyn Target) -> Result<bool> {
        let Some(at) = self.open.iter().position(|o| o.target == id) else {
            return Ok(false);
        };
        target.restore_encoded(self.codec, &self.open[at].before)?;
        self.open.remove(at);
        Ok(true)
    }

    /// Opens a group: every edit until the matching [`end_group`](Self::end_group), of any
    /// target, is one entry named `name`. Groups nest; the outermost names the entry.
    pub fn begin_group(&mut self, name: impl Into<String>) {
        match &mut self.group {
            Some(group) => group.depth += 1,
            None => {
                self.group = Some(MultiGroup {
                    name: name.into(),
                    depth: 1,
                    parts: Vec::new(),
                });
            }
        }
    }

    /// Closes the innermost group; closing the outermost records its entry. Returns whether it
    /// did (`false` for an inner group, and a group that changed nothing).
    ///
    /// # Errors
    /// [`Error::Rejected`] when no group is open, or an edit is still open.
    pub fn end_group(&mut self) -> Result<bool> {
        if !self.open.is_empty() {
            return Err(Error::rejected(
                "undo history: commit or cancel the open edits before ending their group",
            ));
        }
        let Some(group) = &mut self.group else {
            return Err(Error::rejected(
                "undo history: end_group without begin_group",
            ));
        };
        if group.depth > 1 {
            group.depth -= 1;
            return Ok(false);
        }
        let Some(MultiGroup { name, parts, .. }) = self.group.take() else {
            return Ok(false);
        };
        if parts.is_empty() {
            return Ok(false);
        }
        self.push(name, parts);
        Ok(true)
    }

    /// Runs `body` in a group named `name`; the group is closed even when `body` fails.
    ///
    /// # Errors
    /// `body`'s error, or else that of [`end_group`](Self::end_group).
    pub fn group<R>(
        &mut self,
        name: impl Into<String>,
        body: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        self.begin_group(name);
        let out = body(self);
        let ended = self.end_group();
        let out = out?;
        ended?;
        Ok(out)
    }

    fn push(&mut self, name: String, parts: Vec<Part>) {
        self.entries.truncate(self.cursor);
        if self.saved.is_some_and(|s| s > self.cursor) {
            self.saved = None;
        }
        self.entries.push_back(MultiEntry {
            name: name.into_boxed_str(),
            parts: parts.into_boxed_slice(),
        });
        self.cursor = self.entries.len();
        self.trim();
    }

    /// Drops the oldest entries until the limit holds (then the farthest redo entries).
    fn trim(&mut self) {
        while self.limit.is_some_and(|l| self.entries.len() > l) {
            if self.cursor > 0 {
                self.entries.pop_front();
                self.cursor -= 1;
                self.saved = self.saved.and_then(|s| s.checked_sub(1));
            } else {
                self.entries.pop_back();
                if self.saved.is_some_and(|s| s > self.entries.len()) {
                    self.saved = None;
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Moving

    /// Undoes the newest done entry on `targets`: every part, newest first. Returns
    /// `Ok(false)` when there is nothing to undo.
    ///
    /// # Errors
    /// [`Error::Rejected`] while an edit or a group is open, or when `targets` lacks a target
    /// the entry names; [`Error::UndoConflict`] as the [`OnConflict`] rule says; a target's
    /// own error. Then the parts already undone are redone, and the history stays where it
    /// was.
    pub fn undo(&mut self, targets: &mut dyn Targets) -> Result<bool> {
        if self.cursor == 0 {
            return Ok(false);
        }
        self.check_closed()?;
        self.run(self.cursor - 1, targets, true)?;
        self.cursor -= 1;
        Ok(true)
    }

    /// Redoes the next undone entry on `targets`: every part, oldest first. Returns
    /// `Ok(false)` when there is nothing to redo.
    ///
    /// # Errors
    /// As for [`undo`](Self::undo).
    pub fn redo(&mut self, targets: &mut dyn Targets) -> Result<bool> {
        if self.cursor == self.entries.len() {
            return Ok(false);
        }
        self.check_closed()?;
        self.run(self.cursor, targets, false)?;
        self.cursor += 1;
        Ok(true)
    }

    fn check_closed(&self) -> Result<()> {
        if !self.open.is_empty() || self.group.is_some() {
            return Err(Error::rejected(
                "undo history: cannot undo or redo while an edit or a group is open",
            ));
        }
        Ok(())
    }

    fn run(&self, index: usize, targets: &mut dyn Targets, undo: bool) -> Result<()> {
        let Some(entry) = self.entries.get(index) else {
            return Ok(());
        };
        let order: Vec<usize> = if undo {
            (0..entry.parts.len()).rev().collect()
        } else {
            (0..entry.parts.len()).collect()
        };
        for (done, &i) in order.iter().enumerate() {
            if let Err(e) = self.run_part(entry, i, targets, undo) {
                for &back in order[..done].iter().rev() {
                    // Best effort: the first error is the one to report.
                    let _ = self.run_part(entry, back, targets, !undo);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn run_part(
        &self,
        entry: &MultiEntry,
        index: usize,
        targets: &mut dyn Targets,
        undo: bool,
    ) -> Result<()> {
        let Some(part) = entry.parts.get(index) else {
            return Ok(());
        };
        let Some(target) = targets.target(&part.target) else {
            return Err(Error::rejected(format!(
                "undo history: no target {:?} was given for {:?}",
                part.target, entry.name
            )));
        };
        let codec = self.codec;
        let mods = diff::decode_list(codec, &part.mods)?;
        let mut tree = decode_tree(codec, &target.encode_memento(codec)?)?;
        match diff::apply(&mut tree, &mods, undo, self.on_conflict) {
            Ok(false) => Ok(()),
            Ok(true) => {
                let bytes = codec.encode(&tree).map_err(|e| e.encoding(ID))?;
                target.restore_encoded(codec, &bytes)
            }
            Err(conflict) => Err(Error::UndoConflict {
                entry: entry.name.to_string(),
                target: Some(part.target.to_string()),
                path: conflict.path,
                redo: !undo,
            }),
        }
    }

    // ---------------------------------------------------------------------------------------
    // State

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Is the history empty?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries are done.
    #[must_use]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Is there an entry to undo?
    #[must_use]
    pub fn can_undo(&self) -> bool {
        self.cursor > 0
    }

    /// Is there an entry to redo?
    #[must_use]
    pub fn can_redo(&self) -> bool {
        self.cursor < self.entries.len()
    }

    /// The name of the entry an undo would take back.
    #[must_use]
    pub fn undo_name(&self) -> Option<&str> {
        self.cursor
            .checked_sub(1)
            .and_then(|i| self.entries.get(i))
            .map(|e| &*e.name)
    }

    /// The name of the entry a redo would do again.
    #[must_use]
    pub fn redo_name(&self) -> Option<&str> {
        self.entries.get(self.cursor).map(|e| &*e.name)
    }

    /// The names of all entries, oldest first.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|e| &*e.name)
    }

    /// The ids of the targets entry `index` changed, in the order they were recorded.
    pub fn targets_of(&self, index: usize) -> impl Iterator<Item = &str> + '_ {
        self.entries
            .get(index)
            .into_iter()
            .flat_map(|e| e.parts.iter().map(|p| &*p.target))
    }

    /// Marks the current position as the saved one.
    pub fn mark_saved(&mut self) {
        self.saved = Some(self.cursor);
    }

    /// Is the history away from its saved point (see
    /// [`History::is_dirty`](super::History::is_dirty))?
    #[must_use]
    pub fn is_dirty(&self) -> bool {
        self.saved != Some(self.cursor)
    }

    /// Heap bytes the entries hold (their names, target ids and encoded modifications, and the
    /// table), plus the states of open edits.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.entries.capacity() * size_of::<MultiEntry>()
            + self
                .entries
                .iter()
                .map(MultiEntry::heap_bytes)
                .sum::<usize>()
            + self
                .open
                .iter()
                .map(|o| o.before.capacity() + o.name.capacity() + o.target.capacity())
                .sum::<usize>()
    }

    /// Drops every entry, open edit and group (leaving the editor). The history stays dirty
    /// if it was.
    pub fn clear(&mut self) {
        let dirty = self.is_dirty();
        self.entries = VecDeque::new();
        self.cursor = 0;
        self.saved = if dirty { None } else { Some(0) };
        self.open.clear();
        self.group = None;
    }
}

impl fmt::Debug for MultiHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiHistory")
            .field("len", &self.entries.len())
            .field("cursor", &self.cursor)
            .field("saved", &self.saved)
            .field("limit", &self.limit)
            .field("codec", &self.codec)
            .field("on_conflict", &self.on_conflict)
            .field("open", &self.open.len())
            .field("grouping", &self.group.is_some())
            .finish_non_exhaustive()
    }
}
