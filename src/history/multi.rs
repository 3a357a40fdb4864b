//! [`MultiHistory`]: one undo history over several originators of different types, named by id
//! (Unity's `Undo.RecordObject` on any object: one Ctrl+Z undoes a transform, a light and a
//! material changed by one input event).
//!
//! It has the shape of a [`History`](super::History): a builder, `Result`s, groups, limits and
//! a byte budget, a saved marker, observers, a hook, and a memento
//! ([`MultiHistoryMemento`](super::MultiHistoryMemento)) so that it goes into a save. Its
//! edits are property-diff edits of one target each; the history owns none of them. Recording
//! takes the target it records, as `History` does, and its id; undo and redo take every
//! target by id through [`Targets`]: the game's scene, a map, or a [`TargetSet`].

use std::collections::VecDeque;
use std::fmt;
use std::mem::size_of;
use std::sync::{Mutex, PoisonError};

use super::builder::{MultiHistoryBuilder, MultiHookFn, check_limits};
use super::diff::{self, Modification, OnConflict};
use super::entry::Title;
use super::hook::decode_tree;
use super::line;
use super::observer::{Event, Observers};
use super::targets::{Target, Targets};
use super::{ID, Verdict};
use crate::codec::Codec;
use crate::error::{Error, Result};

/// One target's part of an entry: its modifications, encoded in the history's codec.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(crate) target: Box<str>,
    pub(crate) mods: Box<[u8]>,
}

/// What one undo of a [`MultiHistory`] takes back: one edit, or a group of them.
#[derive(Debug, Clone)]
pub(crate) struct MultiEntry {
    pub(crate) name: Box<str>,
    /// The merge key of an entry made of one edit that may absorb the next edit of its target.
    pub(crate) merge: Option<u64>,
    pub(crate) parts: Box<[Part]>,
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
    title: Title,
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
/// use savegame::history::{MultiHistory, Target, Targets};
/// use savegame::Originator;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Default, Serialize, Deserialize)]
/// struct Transform { x: f32 }
/// impl Originator for Transform {
///     type Memento = Transform;
///     fn create_memento(&self) -> Transform { self.clone() }
///     fn restore_memento(&mut self, m: Transform) -> savegame::Result<()> { *self = m; Ok(()) }
/// }
///
/// #[derive(Clone, Default, Serialize, Deserialize)]
/// struct Light { intensity: u8 }
/// impl Originator for Light {
///     type Memento = Light;
///     fn create_memento(&self) -> Light { self.clone() }
///     fn restore_memento(&mut self, m: Light) -> savegame::Result<()> { *self = m; Ok(()) }
/// }
///
/// /// The editor's scene: its parts by id, for undo and redo.
/// #[derive(Default)]
/// struct Scene { transform: Transform, light: Light }
/// impl Targets for Scene {
///     fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
///         match id {
///             "transform" => Some(&mut self.transform),
///             "light" => Some(&mut self.light),
///             _ => None,
///         }
///     }
/// }
///
/// let mut scene = Scene::default();
/// let mut history = MultiHistory::builder().limit(100).build()?;
/// history.group(&mut scene, "Place lamp", |h, scene| {
///     h.edit(&mut scene.transform, "transform", "Move", |t| t.x = 4.0)?;
///     h.edit(&mut scene.light, "light", "Brighten", |l| l.intensity = 200)
/// })?;
/// assert_eq!(history.len(), 1);
///
/// // One Ctrl+Z: every target of the group, by id.
/// history.undo(&mut scene)?;
/// assert_eq!((scene.transform.x, scene.light.intensity), (0.0, 0));
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// What [`History`](super::History) does for property-diff edits, it does: undo and redo write
/// only the recorded paths, and a path changed since is settled by the [`OnConflict`] rule
/// ([`Error::UndoConflict`] names the target). Recording drops the redo entries; the entry
/// limit and the byte budget drop the oldest; groups nest; an edit or group that changes
/// nothing records nothing; edits of one target with a [`Title`] merge key merge as
/// `History`'s do; a failed undo or redo takes back what it had done and leaves the history
/// where it was, and one that names a target `targets` lacks is refused before it changes
/// anything. It is an [`Originator`](crate::Originator), so it goes into a save (see
/// [`MultiHistoryMemento`](super::MultiHistoryMemento)).
pub struct MultiHistory {
    pub(crate) entries: VecDeque<MultiEntry>,
    pub(crate) cursor: usize,
    pub(crate) saved: Option<usize>,
    /// The saved point comes from a save (`mark_saved`, a restored memento), not from the
    /// start of the history: the byte budget keeps the entries next to it.
    pub(crate) saved_by_save: bool,
    /// Sum of the entries' heap bytes.
    pub(crate) entry_bytes: usize,
    limit: Option<usize>,
    budget: Option<usize>,
    pub(crate) codec: Codec,
    on_conflict: OnConflict,
    /// No edit may merge into the newest entry (an undo, a redo or a seal came after it).
    pub(crate) sealed: bool,
    open: Vec<Open>,
    group: Option<MultiGroup>,
    observers: Observers,
    /// In a `Mutex` only so that the history is `Sync` (reached with `get_mut`).
    hook: Mutex<Option<MultiHookFn>>,
}

impl Default for MultiHistory {
    fn default() -> Self {
        Self::new()
    }
}

impl MultiHistory {
    /// An empty history with the defaults of [`MultiHistoryBuilder`]: at most
    /// [`DEFAULT_LIMIT`](super::DEFAULT_LIMIT) entries, no byte budget, MessagePack (JSON
    /// without the `msgpack` feature), [`OnConflict::Refuse`], no observer, no hook.
    #[must_use]
    pub fn new() -> Self {
        Self::from_builder(MultiHistoryBuilder::new())
    }

    /// A builder, to set limits, the codec, the conflict rule, observers and a hook.
    pub fn builder() -> MultiHistoryBuilder {
        MultiHistoryBuilder::new()
    }

    pub(crate) fn from_builder(builder: MultiHistoryBuilder) -> Self {
        let settings = builder.settings;
        let mut observers = Observers::new();
        for observer in settings.observers {
            observers.add(observer);
        }
        MultiHistory {
            entries: VecDeque::new(),
            cursor: 0,
            saved: Some(0),
            saved_by_save: false,
            entry_bytes: 0,
            limit: settings.limit,
            budget: settings.budget,
            codec: settings.codec,
            on_conflict: settings.on_conflict,
            sealed: true,
            open: Vec::new(),
            group: None,
            observers,
            hook: Mutex::new(builder.hook),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Recording

    /// Records `change` of `target`, the target named `id`, as one property-diff edit named by
    /// `title` (inside a group, a part of the group's entry). Returns whether anything was
    /// recorded (`false`: nothing changed, or the hook dropped it).
    ///
    /// # Errors
    /// As for [`begin_edit`](Self::begin_edit) and [`commit_edit`](Self::commit_edit).
    pub fn edit<T: Target>(
        &mut self,
        target: &mut T,
        id: &str,
        title: impl Into<Title>,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.begin_edit(&*target, id, title)?;
        change(target);
        self.commit_edit(&*target, id)
    }

    /// Starts an edit of `target`, the target named `id`: captures it as it is now (a drag's
    /// press). Edits of several targets may be open at once.
    ///
    /// # Errors
    /// [`Error::Rejected`] if an edit of `id` is already open; [`Error::InvalidId`] for an
    /// empty id; [`Error::Encode`] if its memento does not encode.
    pub fn begin_edit(
        &mut self,
        target: &dyn Target,
        id: &str,
        title: impl Into<Title>,
    ) -> Result<()> {
        if id.is_empty() {
            return Err(Error::InvalidId {
                id: String::new(),
                reason: "a target's id must not be empty",
            });
        }
        if self.open.iter().any(|o| o.target == id) {
            return Err(Error::rejected(format!(
                "undo history: an edit of {id:?} is already open"
            )));
        }
        let before = target.encode_memento(self.codec)?;
        self.open.push(Open {
            target: id.to_owned(),
            title: title.into(),
            before,
        });
        Ok(())
    }

    /// Ends the open edit of `target`, the target named `id`, and records what changed in it.
    /// Returns whether anything was recorded (`false`: nothing changed, or the hook dropped
    /// it).
    ///
    /// # Errors
    /// [`Error::Rejected`] if no edit of `id` is open; [`Error::Encode`] or [`Error::Decode`]
    /// if a state does not encode or decode (the edit stays open).
    pub fn commit_edit(&mut self, target: &dyn Target, id: &str) -> Result<bool> {
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
        let (name, merge) = open.title.into_parts();
        if let Some(group) = &mut self.group {
            group.parts.push(Part {
                target: id.into(),
                mods: diff::encode_list(codec, &mods)?.into_boxed_slice(),
            });
            return Ok(true);
        }
        let was = self.status();
        if let Some(top) = self.mergeable_top(id, merge) {
            let last = diff::decode_list(codec, &top.parts[0].mods)?;
            if let Some(both) = diff::compose(&last, &mods, before_tree, &after_tree) {
                if both.is_empty() {
                    // The merged edit changes nothing at all: the entry goes.
                    self.pop_back();
                    self.sealed = true;
                } else {
                    let encoded = diff::encode_list(codec, &both)?.into_boxed_slice();
                    if let Some(top) = self.entries.back_mut() {
                        self.entry_bytes =
                            self.entry_bytes - top.parts[0].mods.len() + encoded.len();
                        top.parts[0].mods = encoded;
                    }
                }
                self.finish_push(was);
                return Ok(true);
            }
        }
        let part = Part {
            target: id.into(),
            mods: diff::encode_list(codec, &mods)?.into_boxed_slice(),
        };
        self.push(name, merge, vec![part], was);
        Ok(true)
    }

    /// Abandons the open edit of the target named `id` and restores `target` as it was at
    /// [`begin_edit`](Self::begin_edit). Returns `false` when no such edit was open.
    ///
    /// # Errors
    /// The target's error from restoring; the edit then stays open.
    pub fn cancel_edit(&mut self, target: &mut dyn Target, id: &str) -> Result<bool> {
        let Some(at) = self.open.iter().position(|o| o.target == id) else {
            return Ok(false);
        };
        target.restore_encoded(self.codec, &self.open[at].before)?;
        self.open.remove(at);
        Ok(true)
    }

    /// Is an edit of some target open (between `begin_edit` and `commit_edit`)?
    #[must_use]
    pub fn is_editing(&self) -> bool {
        !self.open.is_empty()
    }

    /// Opens a group: every edit until the matching [`end_group`](Self::end_group), of any
    /// target, is one entry named `name`, undone by one undo. Groups nest; the outermost
    /// names the entry.
    ///
    /// # Errors
    /// [`Error::Rejected`] while an edit is open.
    pub fn begin_group(&mut self, name: impl Into<String>) -> Result<()> {
        if !self.open.is_empty() {
            return Err(Error::rejected(
                "undo history: cannot open a group while an edit is open",
            ));
        }
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
        Ok(())
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
        let was = self.status();
        self.push(name, None, parts, was);
        Ok(true)
    }

    /// Runs `body` inside a group named `name` (see [`begin_group`](Self::begin_group)), with
    /// the targets at hand, as [`History::group`](super::History::group) does with its one
    /// target. The group is closed even when `body` fails, so what it changed stays undoable.
    ///
    /// # Errors
    /// `body`'s error, or else those of [`begin_group`](Self::begin_group) and
    /// [`end_group`](Self::end_group).
    pub fn group<S: ?Sized, R>(
        &mut self,
        targets: &mut S,
        name: impl Into<String>,
        body: impl FnOnce(&mut Self, &mut S) -> Result<R>,
    ) -> Result<R> {
        self.begin_group(name)?;
        let out = body(self, targets);
        let ended = self.end_group();
        let out = out?;
        ended?;
        Ok(out)
    }

    /// Is a group open?
    #[must_use]
    pub fn is_grouping(&self) -> bool {
        self.group.is_some()
    }

    /// The newest entry, if an edit of `id` with merge key `key` may merge into it: one edit of
    /// that target with that key, newest, not the saved point, and no undo, redo or seal since.
    fn mergeable_top(&mut self, id: &str, key: Option<u64>) -> Option<&MultiEntry> {
        let len = self.entries.len();
        if key.is_none() || self.sealed || self.cursor != len || self.saved == Some(len) {
            return None;
        }
        self.entries
            .back()
            .filter(|top| top.merge == key && top.parts.len() == 1 && &*top.parts[0].target == id)
    }

    fn push(&mut self, name: String, merge: Option<u64>, parts: Vec<Part>, was: super::Status) {
        while self.entries.len() > self.cursor {
            self.pop_back();
        }
        let entry = MultiEntry {
            name: name.into_boxed_str(),
            merge,
            parts: parts.into_boxed_slice(),
        };
        self.entry_bytes += entry.heap_bytes();
        self.entries.push_back(entry);
        self.cursor = self.entries.len();
        self.sealed = false;
        self.finish_push(was);
    }

    /// After a push or merge: apply the limits, notify.
    fn finish_push(&mut self, was: super::Status) {
        self.trim();
        self.notify(was);
    }

    /// Drops entries until the limits hold (see [`line::next_drop`]).
    fn trim(&mut self) {
        loop {
            let len = self.entries.len();
            let over_count = self.limit.is_some_and(|limit| len > limit);
            let over_budget = self.budget.is_some_and(|budget| self.bytes() > budget);
            let next = line::next_drop(
                len,
                self.cursor,
                self.saved,
                self.saved_by_save,
                over_count,
                over_budget,
            );
            match next {
                Some(line::Drop::Front) => self.pop_front(),
                Some(line::Drop::Back) => self.pop_back(),
                None => return,
            }
        }
    }

    /// Drops the oldest entry (the cursor and the saved marker follow).
    fn pop_front(&mut self) {
        if let Some(entry) = self.entries.pop_front() {
            self.entry_bytes -= entry.heap_bytes();
            self.cursor = self.cursor.saturating_sub(1);
            self.saved = match self.saved {
                Some(0) | None => None,
                Some(i) => Some(i - 1),
            };
        }
    }

    /// Drops the newest entry (the cursor stays at most the length).
    fn pop_back(&mut self) {
        let len = self.entries.len();
        if let Some(entry) = self.entries.pop_back() {
            self.entry_bytes -= entry.heap_bytes();
            if self.saved == Some(len) {
                self.saved = None;
            }
            self.cursor = self.cursor.min(self.entries.len());
        }
    }

    // ---------------------------------------------------------------------------------------
    // Moving

    /// Undoes the newest done entry on `targets`: every part, newest first. Returns
    /// `Ok(false)` when there is nothing to undo.
    ///
    /// # Errors
    /// [`Error::Rejected`] while an edit or a group is open, or when `targets` lacks a target
    /// the entry names (then nothing changed); [`Error::UndoConflict`] as the [`OnConflict`]
    /// rule says; a target's own error. Then the parts already undone are redone, and the
    /// history stays where it was.
    pub fn undo(&mut self, targets: &mut (impl Targets + ?Sized)) -> Result<bool> {
        if self.cursor == 0 {
            return Ok(false);
        }
        self.check_closed("undo")?;
        let was = self.status();
        self.run(self.cursor - 1, targets, true)?;
        self.cursor -= 1;
        self.sealed = true;
        self.notify(was);
        Ok(true)
    }

    /// Redoes the next undone entry on `targets`: every part, oldest first. Returns
    /// `Ok(false)` when there is nothing to redo.
    ///
    /// # Errors
    /// As for [`undo`](Self::undo).
    pub fn redo(&mut self, targets: &mut (impl Targets + ?Sized)) -> Result<bool> {
        if self.cursor == self.entries.len() {
            return Ok(false);
        }
        self.check_closed("redo")?;
        let was = self.status();
        self.run(self.cursor, targets, false)?;
        self.cursor += 1;
        self.sealed = true;
        self.notify(was);
        Ok(true)
    }

    line::line_go_to!(targets: &mut (impl Targets + ?Sized));

    fn check_closed(&self, what: &str) -> Result<()> {
        if !self.open.is_empty() || self.group.is_some() {
            return Err(Error::rejected(format!(
                "undo history: cannot {what} while an edit or a group is open"
            )));
        }
        Ok(())
    }

    /// Undoes or redoes entry `index`, all or nothing: every target it names must be there
    /// first, and when a part fails the ones already run are run back the other way.
    fn run(&self, index: usize, targets: &mut (impl Targets + ?Sized), undo: bool) -> Result<()> {
        let Some(entry) = self.entries.get(index) else {
            return Ok(());
        };
        if let Some(missing) = entry
            .parts
            .iter()
            .find(|p| targets.target(&p.target).is_none())
        {
            return Err(Error::rejected(format!(
                "undo history: no target {:?} was given for {:?}",
                missing.target, entry.name
            )));
        }
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
        targets: &mut (impl Targets + ?Sized),
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

    line::line_accessors!();

    /// The ids of the targets entry `index` changed, in the order they were recorded.
    pub fn targets_of(&self, index: usize) -> impl Iterator<Item = &str> + '_ {
        self.entries
            .get(index)
            .into_iter()
            .flat_map(|e| e.parts.iter().map(|p| &*p.target))
    }

    /// The heap memory the history holds, in bytes: the entries' names, target ids and
    /// encoded modifications, its table (by capacity), and the states of open edits and an
    /// open group. This is what the byte budget limits.
    #[must_use]
    pub fn bytes(&self) -> usize {
        let open = self
            .open
            .iter()
            .map(|o| o.before.capacity() + o.title.name().len() + o.target.capacity())
            .sum::<usize>()
            + self.group.as_ref().map_or(0, |g| {
                g.name.capacity()
                    + g.parts.capacity() * size_of::<Part>()
                    + g.parts
                        .iter()
                        .map(|p| p.target.len() + p.mods.len())
                        .sum::<usize>()
            });
        self.entries.capacity() * size_of::<MultiEntry>() + self.entry_bytes + open
    }

    /// Changes the entry limit (`None`: no limit), dropping the oldest entries at once if
    /// needed (and then the farthest redo entries).
    ///
    /// # Errors
    /// [`Error::Config`] for `Some(0)`.
    pub fn set_limit(&mut self, entries: Option<usize>) -> Result<()> {
        check_limits(entries, None)?;
        let was = self.status();
        self.limit = entries;
        self.trim();
        self.notify(was);
        Ok(())
    }

    /// Changes the byte budget (`None`: no budget), dropping entries at once if needed, as
    /// [`MultiHistoryBuilder::byte_budget`] describes.
    ///
    /// # Errors
    /// [`Error::Config`] for `Some(0)`.
    pub fn set_byte_budget(&mut self, bytes: Option<usize>) -> Result<()> {
        check_limits(None, bytes)?;
        let was = self.status();
        self.budget = bytes;
        self.trim();
        self.notify(was);
        Ok(())
    }

    /// Drops every entry, open edit and group, and frees their memory (leaving the editor).
    /// Observers hear [`Event::Cleared`] once. The history stays dirty if it was.
    pub fn clear(&mut self) {
        let was = self.status();
        self.entries = VecDeque::new();
        self.entry_bytes = 0;
        self.cursor = 0;
        self.saved = if was.dirty { None } else { Some(0) };
        self.sealed = true;
        self.open.clear();
        self.group = None;
        let now = self.status();
        self.observers.send(Event::Cleared { was, now });
    }

    /// Sets the hook every edit passes through before it is recorded, replacing any other (see
    /// [`MultiHistoryBuilder::hook`]).
    pub fn set_hook(
        &mut self,
        hook: impl FnMut(&str, &mut Vec<Modification>) -> Verdict + Send + 'static,
    ) {
        *self.hook.get_mut().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(hook));
    }

    /// Removes the hook; returns whether there was one.
    pub fn remove_hook(&mut self) -> bool {
        self.hook
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .is_some()
    }

    /// Replaces every entry with `entries` (their modifications in `codec`), at `cursor`, with
    /// the saved point `saved` (a restored memento): what was recorded before goes.
    pub(crate) fn replace(
        &mut self,
        codec: Codec,
        entries: VecDeque<MultiEntry>,
        cursor: usize,
        saved: Option<usize>,
    ) {
        let was = self.status();
        self.codec = codec;
        self.entry_bytes = entries.iter().map(MultiEntry::heap_bytes).sum();
        self.entries = entries;
        self.cursor = cursor;
        self.saved = saved;
        self.saved_by_save = saved.is_some();
        self.sealed = true;
        self.open.clear();
        self.group = None;
        self.trim();
        self.notify(was);
    }
}

impl fmt::Debug for MultiHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiHistory")
            .field("len", &self.entries.len())
            .field("cursor", &self.cursor)
            .field("saved", &self.saved)
            .field("limit", &self.limit)
            .field("byte_budget", &self.budget)
            .field("codec", &self.codec)
            .field("editing", &!self.open.is_empty())
            .field("grouping", &self.group.is_some())
            .finish_non_exhaustive()
    }
}
