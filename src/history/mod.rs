//! Undo and redo for in-game editors: a [`History`] of edits of one [`Originator`].
//!
//! Players editing their home, a level or a character expect Ctrl+Z and Ctrl+Y to just work.
//! A `History` records what they do and takes it back:
//!
//! | you want to | use |
//! |---|---|
//! | record a change of the originator, whatever it is | [`History::edit`], or [`begin_edit`](History::begin_edit) … [`commit_edit`](History::commit_edit) |
//! | record edits of an originator the history owns, encoding it once per edit rather than twice | an [`Undoable`]: [`Undoable::edit`], [`undo`](Undoable::undo), [`redo`](Undoable::redo) |
//! | record a drag (one entry, however many frames) | `begin_edit` at the press, `commit_edit` at the release ([`cancel_edit`](History::cancel_edit) on Esc) |
//! | undo only the properties an edit changed, and leave later unrecorded changes alone (Unity's `Undo.RecordObject`) | a property-diff edit: [`History::diff_edit`], or [`begin_diff_edit`](History::begin_diff_edit) … [`commit_edit`](History::commit_edit); conflicts: [`OnConflict`] |
//! | record an edit that knows its inverse | a [`Command`] and [`History::apply`] |
//! | record a command the game has already run (a tool that moved the piece itself) | [`History::record_applied`] |
//! | make one click one undo (a prefab of five objects) | [`begin_group`](History::begin_group) … [`end_group`](History::end_group), or [`History::group`] |
//! | make one click one undo across objects of different types (a transform, a light and a material) | a [`MultiHistory`]: the same API over targets by id, undone on the game's scene through [`Targets`] |
//! | undo, redo, jump in a history panel | [`undo`](History::undo), [`redo`](History::redo), [`go_to`](History::go_to) |
//! | enable the buttons and fill the menus | an [`Observer`], [`undo_name`](History::undo_name), [`redo_name`](History::redo_name), [`names`](History::names) |
//! | show "unsaved changes" | [`mark_saved`](History::mark_saved) after a save, [`is_dirty`](History::is_dirty) |
//! | bound its memory | [`HistoryBuilder::limit`], [`HistoryBuilder::byte_budget`], [`History::bytes`] |
//! | filter or rewrite what gets recorded, down to single properties | [`HistoryBuilder::hook`] ([`Recorded`], [`Recorded::modifications`], [`Recorded::modifications_mut`], [`Verdict`]) |
//! | keep the history in a save, to undo after a reload | the history is an [`Originator`]: [`Snapshot::capture`](crate::Snapshot::capture) it ([`HistoryMemento`]) |
//!
//! ```
//! use savegame::{History, Originator};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Default)]
//! struct Room { chair: (i32, i32) }
//!
//! #[derive(Serialize, Deserialize)]
//! struct RoomMemento { chair: (i32, i32) }
//!
//! impl Originator for Room {
//!     type Memento = RoomMemento;
//!     fn create_memento(&self) -> RoomMemento { RoomMemento { chair: self.chair } }
//!     fn restore_memento(&mut self, m: RoomMemento) -> savegame::Result<()> {
//!         self.chair = m.chair;
//!         Ok(())
//!     }
//! }
//!
//! let mut room = Room::default();
//! let mut history = History::<Room>::new();
//!
//! history.edit(&mut room, "Move chair", |room| room.chair = (3, 4))?;
//! history.edit(&mut room, "Move chair", |room| room.chair = (5, 0))?;
//! assert_eq!(history.undo_name(), Some("Move chair"));
//!
//! assert!(history.undo(&mut room)?);
//! assert_eq!(room.chair, (3, 4));
//! assert!(history.redo(&mut room)?);
//! assert_eq!(room.chair, (5, 0));
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Design
//!
//! - **Memento edits.** [`begin_edit`](History::begin_edit) captures and encodes the
//!   originator's memento; [`commit_edit`](History::commit_edit) does it again. Equal bytes
//!   record nothing. Undo restores the before memento, redo the after one: the editor writes
//!   each edit once, and never undo or redo code. A memento restores the *whole* originator,
//!   so a change that was never recorded is undone along with the edit after it.
//! - **Property-diff edits** ([`diff_edit`](History::diff_edit)) keep instead the
//!   [`Modification`]s: the paths of the memento's value tree (the [`migrate::Value`] tree of
//!   the migrations) that the edit changed, with their old and new values. Undo writes the old
//!   values into the originator's current memento and restores that; a property changed later
//!   without being recorded stays as it is. When a recorded path was itself changed since,
//!   the history's [`OnConflict`] rule decides: by default the undo or redo is refused with
//!   [`Error::UndoConflict`](crate::Error::UndoConflict) and nothing changes (the safe choice: only the player knows which
//!   change should win); [`OnConflict::KeepCurrent`] lets the later change win, and
//!   [`OnConflict::Overwrite`] the undo (last writer wins). Paths name array elements by
//!   index and map entries by key: keep collections whose elements come and go in maps keyed
//!   by id (an array that changes length is recorded whole).
//! - **Compact states.** The history holds one state in full, where it last worked, and every
//!   other state as the bytes in which it differs from its neighbour (see [`History::bytes`]):
//!   moving one chair in a 1 MB room costs a few dozen bytes, not two megabytes. An undo or redo
//!   patches that one full state in place and restores from it.
//! - **Commands.** A [`Command`] applies itself and takes itself back; redo applies it again.
//!   Commands with the same [`merge_id`](Command::merge_id) merge, as in Qt's `QUndoStack`.
//! - **One line of entries.** Entries sit in a deque: recording drops the redo entries (a new
//!   branch), then pushes; a limit drops the oldest, in O(1), never one in the middle.
//! - **Groups** nest; the outermost names the entry; an empty group records nothing. Memento
//!   edits in a row inside a group are kept as one record (only the group's first before and
//!   last after state can ever be restored).
//! - **Errors, never panics.** Undo with nothing to undo returns `Ok(false)`. When a restore or
//!   a command fails, what the entry had already done is taken back, the history stays where it
//!   was, and the error is returned. Using the history in a way that makes no sense (undo while
//!   an edit or group is open, commit without begin) is [`Error::Rejected`](crate::Error::Rejected).
//! - **Equality is byte equality** of the encoded mementos: a memento with a `HashMap` may
//!   encode equal contents in another order and record an edit that changes nothing. Prefer
//!   `BTreeMap` and `Vec` in mementos.
//! - **Threads.** A `History` is `Send` and `Sync` when its command type is; observers and the
//!   hook must be `Send`.
//!
//! [`migrate::Value`]: crate::migrate::Value

mod apply;
mod builder;
mod chain;
mod command;
mod delta;
mod diff;
mod edit;
mod entry;
mod group;
mod hook;
mod line;
mod memento;
mod multi;
mod multi_memento;
mod navigate;
mod observer;
mod targets;
mod undoable;

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;

/// The value tree of a memento, as [`Modification`]s hold their values (the tree migrations
/// work on too).
pub use crate::migrate::Value;
pub use builder::{DEFAULT_LIMIT, HistoryBuilder, MultiHistoryBuilder};
pub use command::{Command, Merged, NoCommand};
pub use diff::{Modification, OnConflict};
pub use entry::Title;
pub use hook::{Recorded, Verdict};
pub use memento::{FORMAT_VERSION, HistoryMemento};
pub use multi::MultiHistory;
pub use multi_memento::{MULTI_FORMAT_VERSION, MultiHistoryMemento};
pub use observer::{Event, Observer, ObserverId, Status};
pub use targets::{Target, TargetSet, Targets};
pub use undoable::Undoable;

use chain::Chain;
use edit::OpenEdit;
use entry::Entry;
use entry::Pending;
use group::Group;
use hook::Hook;
use observer::Observers;

use crate::codec::Codec;
use crate::error::Result;
use crate::originator::Originator;

/// The id that codec errors about a history's states carry.
pub(crate) const ID: &str = "undo history";

/// An undo/redo history of the edits of one originator `T` (a room, a level, a character),
/// recorded as memento edits or as commands of type `C`.
///
/// The history does not own the originator: every call that reads or changes it takes it as
/// an argument, so the game keeps its objects where they are. Pass the same originator every
/// time. See the [module docs](self) for a tour.
pub struct History<T: Originator, C = NoCommand> {
    /// The entries, oldest first.
    entries: VecDeque<Entry<C>>,
    /// How many entries are done: `entries[..cursor]` can be undone, the rest redone.
    cursor: usize,
    /// The position (a cursor value) of the saved state, if it can still be reached.
    saved: Option<usize>,
    /// The saved point comes from a save (`mark_saved`, a restored memento), not from the
    /// start of the history: the byte budget keeps the entries next to it.
    saved_by_save: bool,
    /// The states of the memento records.
    chain: Chain,
    /// Sum of the entries' heap bytes.
    entry_bytes: usize,
    limit: Option<usize>,
    budget: Option<usize>,
    codec: Codec,
    /// What an undo or redo of a property-diff edit does about a path changed since.
    on_conflict: OnConflict,
    /// No edit may merge into the newest entry (an undo, a redo or a seal came after it).
    sealed: bool,
    edit: Option<OpenEdit>,
    group: Option<Group<C>>,
    observers: Observers,
    hook: Hook<T, C>,
    /// The newest link's after state is the target's encoding as the last
    /// [`commit_edit`](Self::commit_edit) left it: that commit recorded a memento edit as an
    /// entry of its own, or merged it into one, with no hook. Only an [`Undoable`], which owns
    /// the target and so knows it has not changed since, acts on it.
    newest_is_target: bool,
    target: PhantomData<fn(&mut T)>,
}

impl<T: Originator, C: Command<T>> Default for History<T, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Originator, C: Command<T>> History<T, C> {
    /// An empty history with the defaults of [`HistoryBuilder`]: at most [`DEFAULT_LIMIT`]
    /// entries, no byte budget, MessagePack.
    #[must_use]
    pub fn new() -> Self {
        Self::from_builder(HistoryBuilder::new())
    }

    /// A builder, to set limits, the codec, observers and a hook.
    pub fn builder() -> HistoryBuilder<T, C> {
        HistoryBuilder::new()
    }

    fn from_builder(builder: HistoryBuilder<T, C>) -> Self {
        let settings = builder.settings;
        let mut observers = Observers::new();
        for observer in settings.observers {
            observers.add(observer);
        }
        History {
            entries: VecDeque::new(),
            cursor: 0,
            saved: Some(0),
            saved_by_save: false,
            chain: Chain::default(),
            entry_bytes: 0,
            limit: settings.limit,
            budget: settings.budget,
            codec: settings.codec,
            on_conflict: settings.on_conflict,
            sealed: true,
            edit: None,
            group: None,
            observers,
            hook: Hook::new(builder.hook),
            newest_is_target: false,
            target: PhantomData,
        }
    }

    // ---------------------------------------------------------------------------------------
    // State

    line::line_accessors!();

    /// The heap memory the history holds, in bytes: its one full state, the differing bytes of
    /// every other recorded state, the commands (their size plus
    /// [`Command::heap_size`]), names, and its tables (counted by capacity), plus the states
    /// of an open edit or group. An entry costs about 200 bytes of bookkeeping besides the
    /// bytes its edit changed. This is what the byte budget limits, and close to what an
    /// allocator would count (it leaves out the allocator's own overhead and the
    /// [`History`] value itself).
    #[must_use]
    pub fn bytes(&self) -> usize {
        let open = self.edit.as_ref().map_or(0, |e| e.before.capacity())
            + self.group.as_ref().map_or(0, |g| {
                g.name.capacity()
                    + g.records.capacity() * size_of::<Pending<C>>()
                    + g.records
                        .iter()
                        .map(|r| match r {
                            Pending::Edit { before, after } => before.capacity() + after.capacity(),
                            Pending::Command(c) => c.heap_size(),
                            Pending::Diff(mods) => diff::list_heap_bytes(mods),
                        })
                        .sum::<usize>()
            });
        self.entries.capacity() * size_of::<Entry<C>>()
            + self.entry_bytes
            + self.chain.heap_bytes()
            + open
    }

    // ---------------------------------------------------------------------------------------
    // Limits, clearing, observers and the hook

    /// Changes the entry limit (`None`: no limit), dropping the oldest entries at once if
    /// needed (and then the farthest redo entries).
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) for `Some(0)`; [`Error::Malformed`](crate::Error::Malformed) as for
    /// [`commit_edit`](Self::commit_edit).
    pub fn set_limit(&mut self, entries: Option<usize>) -> Result<()> {
        builder::check_limits(entries, None)?;
        let was = self.status();
        self.limit = entries;
        let trimmed = self.trim();
        self.notify(was);
        trimmed
    }

    /// Changes the byte budget (`None`: no budget), dropping entries at once if needed, as
    /// [`HistoryBuilder::byte_budget`] describes.
    ///
    /// # Errors
    /// As for [`set_limit`](Self::set_limit).
    pub fn set_byte_budget(&mut self, bytes: Option<usize>) -> Result<()> {
        builder::check_limits(None, bytes)?;
        let was = self.status();
        self.budget = bytes;
        let trimmed = self.trim();
        self.notify(was);
        trimmed
    }

    /// Drops every entry, and any open edit or group, and frees their memory (leaving the
    /// editor). Observers hear [`Event::Cleared`] once. The history stays dirty if it was:
    /// the game still has unsaved changes.
    pub fn clear(&mut self) {
        let was = self.status();
        self.entries = VecDeque::new();
        self.chain.clear();
        self.entry_bytes = 0;
        self.cursor = 0;
        self.saved = if was.dirty { None } else { Some(0) };
        self.sealed = true;
        self.edit = None;
        self.group = None;
        let now = self.status();
        self.observers.send(Event::Cleared { was, now });
    }

    /// Sets the hook every edit passes through before it is recorded, replacing any other.
    pub fn set_hook(
        &mut self,
        hook: impl FnMut(&mut Recorded<'_, T, C>) -> Verdict + Send + 'static,
    ) {
        *self.hook.get() = Some(Box::new(hook));
    }

    /// Removes the hook; returns whether there was one.
    pub fn remove_hook(&mut self) -> bool {
        self.hook.get().take().is_some()
    }
}

impl<T: Originator, C> fmt::Debug for History<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("len", &self.entries.len())
            .field("cursor", &self.cursor)
            .field("saved", &self.saved)
            .field("limit", &self.limit)
            .field("byte_budget", &self.budget)
            .field("codec", &self.codec)
            .field("editing", &self.edit.is_some())
            .field("grouping", &self.group.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
