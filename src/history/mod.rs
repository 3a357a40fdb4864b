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
//! | make one click one undo across objects of different types (a transform, a light and a material) | a [`MultiHistory`] over targets by id ([`TargetSet`], or the game's own [`Targets`]) |
//! | undo, redo, jump in a history panel | [`undo`](History::undo), [`redo`](History::redo), [`go_to`](History::go_to) |
//! | enable the buttons and fill the menus | an [`Observer`], [`undo_name`](History::undo_name), [`redo_name`](History::redo_name), [`names`](History::names) |
//! | show "unsaved changes" | [`mark_saved`](History::mark_saved) after a save, [`is_dirty`](History::is_dirty) |
//! | bound its memory | [`HistoryBuilder::limit`], [`HistoryBuilder::byte_budget`], [`History::bytes`] |
//! | filter or rewrite what gets recorded, down to single properties | [`HistoryBuilder::hook`] ([`Recorded`], [`Recorded::modifications`], [`Verdict`]) |
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
//!   [`Error::UndoConflict`] and nothing changes (the safe choice: only the player knows which
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
//!   an edit or group is open, commit without begin) is [`Error::Rejected`].
//! - **Equality is byte equality** of the encoded mementos: a memento with a `HashMap` may
//!   encode equal contents in another order and record an edit that changes nothing. Prefer
//!   `BTreeMap` and `Vec` in mementos.
//! - **Threads.** A `History` is `Send` and `Sync` when its command type is; observers and the
//!   hook must be `Send`.
//!
//! [`migrate::Value`]: crate::migrate::Value

mod builder;
mod chain;
mod command;
mod delta;
mod diff;
mod entry;
mod hook;
mod memento;
mod multi;
mod navigate;
mod observer;
mod undoable;

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;

pub use builder::{DEFAULT_LIMIT, HistoryBuilder};
pub use command::{Command, Merged, NoCommand};
pub use diff::{Modification, OnConflict};
pub use entry::Title;
pub use hook::{Recorded, Verdict};
pub use memento::{FORMAT_VERSION, HistoryMemento};
pub use multi::{MultiHistory, Target, TargetSet, Targets};
pub use observer::{Event, Observer, ObserverId, Status};
pub use undoable::Undoable;

use chain::Chain;
use entry::{Entry, Record};
use hook::Hook;
use observer::Observers;

use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::migrate::Value;
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

/// A memento or property-diff edit between `begin_edit` (or `begin_diff_edit`) and
/// `commit_edit`.
struct OpenEdit {
    title: Title,
    before: Vec<u8>,
    diff: bool,
    /// `before` is a copy of the history's newest state, not an encoding of the target.
    from_newest: bool,
}

/// A group between `begin_group` and `end_group`.
struct Group<C> {
    name: String,
    depth: usize,
    records: Vec<Pending<C>>,
}

/// A record of an open group, states still in full.
enum Pending<C> {
    Edit { before: Vec<u8>, after: Vec<u8> },
    Command(C),
    Diff(Vec<Modification>),
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
        let mut observers = Observers::new();
        for observer in builder.observers {
            observers.add(observer);
        }
        History {
            entries: VecDeque::new(),
            cursor: 0,
            saved: Some(0),
            saved_by_save: false,
            chain: Chain::default(),
            entry_bytes: 0,
            limit: builder.limit,
            budget: builder.budget,
            codec: builder.codec,
            on_conflict: builder.on_conflict,
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
    // Recording memento edits

    /// Records `change` as one edit named by `title`: captures `target` before and after it.
    /// Returns whether an entry was recorded (or merged, or a group extended): `false` when
    /// the change left the memento as it was, or the hook dropped it.
    ///
    /// ```
    /// # use savegame::{History, Originator};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Default)] struct Room { chair: i32 }
    /// # #[derive(Serialize, Deserialize)] struct M { chair: i32 }
    /// # impl Originator for Room {
    /// #     type Memento = M;
    /// #     fn create_memento(&self) -> M { M { chair: self.chair } }
    /// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> { self.chair = m.chair; Ok(()) }
    /// # }
    /// let mut room = Room::default();
    /// let mut history = History::<Room>::new();
    /// assert!(history.edit(&mut room, "Move chair", |r| r.chair = 5)?);
    /// assert!(!history.edit(&mut room, "Move chair", |r| r.chair = 5)?, "no change, no entry");
    /// # Ok::<(), savegame::Error>(())
    /// ```
    ///
    /// # Errors
    /// As for [`begin_edit`](Self::begin_edit) and [`commit_edit`](Self::commit_edit). If the
    /// second capture fails, the change stays made but is not recorded.
    pub fn edit(
        &mut self,
        target: &mut T,
        title: impl Into<Title>,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.begin_edit(target, title)?;
        change(target);
        self.commit_edit(target)
    }

    /// Starts a memento edit: captures `target` as it is now. Change it as much as you like
    /// (every frame of a drag), then [`commit_edit`](Self::commit_edit) records one entry, or
    /// [`cancel_edit`](Self::cancel_edit) puts it back.
    ///
    /// # Errors
    /// [`Error::Rejected`] if an edit is already open;
    /// [`Error::Encode`] if the codec cannot encode the memento.
    pub fn begin_edit(&mut self, target: &T, title: impl Into<Title>) -> Result<()> {
        self.open_edit(target, title.into(), false, false)
    }

    /// Opens an edit. With `unchanged` (the caller owns the target and knows it is as the last
    /// commit left it) the before state is a copy of the newest state, where that is the
    /// target's encoding, rather than a second encoding of the same bytes.
    fn open_edit(&mut self, target: &T, title: Title, diff: bool, unchanged: bool) -> Result<()> {
        if self.edit.is_some() {
            return Err(Error::rejected(
                "undo history: an edit is already open (commit or cancel it first)",
            ));
        }
        let newest = if unchanged && !diff {
            self.newest_state()?
        } else {
            None
        };
        let from_newest = newest.is_some();
        let before = match newest {
            Some(bytes) => bytes,
            None => self.encode(target)?,
        };
        self.edit = Some(OpenEdit {
            title,
            before,
            diff,
            from_newest,
        });
        Ok(())
    }

    /// [`edit`](Self::edit), for an [`Undoable`]: `target` is known to be as the last
    /// [`commit_edit`](Self::commit_edit) left it.
    pub(crate) fn edit_unchanged(
        &mut self,
        target: &mut T,
        title: Title,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.open_edit(target, title, false, true)?;
        change(target);
        self.commit_edit(target)
    }

    /// A copy of the newest state, when it is the target's encoding as the last commit left
    /// it: that commit said so, and the history has not moved since (nothing to redo, no edit
    /// or group open, no hook, the newest entry ending in the newest link).
    fn newest_state(&mut self) -> Result<Option<Vec<u8>>> {
        if !self.newest_is_target
            || self.group.is_some()
            || self.hook.get().is_some()
            || self.cursor != self.entries.len()
        {
            return Ok(None);
        }
        let ends_in_newest_link = self.entries.back().is_some_and(|top| {
            matches!(top.records.last(), Some(Record::Memento))
                && top.first_link + top.links() == self.chain.end()
        });
        if !ends_in_newest_link {
            return Ok(None);
        }
        Ok(Some(self.chain.state(self.chain.end() - 1, true)?.to_vec()))
    }

    // ---------------------------------------------------------------------------------------
    // Recording property-diff edits

    /// Records `change` as one property-diff edit named by `title` (Unity's
    /// `Undo.RecordObject`): captures `target` before and after it, and keeps only the paths of
    /// the memento's value tree that changed, each with its old and new value (see
    /// [`Modification`]). Undo writes the old values back into the originator's *current*
    /// memento and restores that; redo writes the new ones. A property that something else
    /// changes later without recording it (a script, play) is left alone by undo and redo.
    ///
    /// When a recorded path was changed since, the history's [`OnConflict`] rule decides:
    /// by default the undo is refused with [`Error::UndoConflict`], changing nothing.
    ///
    /// ```
    /// use savegame::{History, Originator};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Default)]
    /// struct Cube { scale: f32, name: String }
    /// #[derive(Serialize, Deserialize)]
    /// struct CubeMemento { scale: f32, name: String }
    /// impl Originator for Cube {
    ///     type Memento = CubeMemento;
    ///     fn create_memento(&self) -> CubeMemento {
    ///         CubeMemento { scale: self.scale, name: self.name.clone() }
    ///     }
    ///     fn restore_memento(&mut self, m: CubeMemento) -> savegame::Result<()> {
    ///         (self.scale, self.name) = (m.scale, m.name);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let mut cube = Cube { scale: 1.0, name: "Cube".into() };
    /// let mut history = History::<Cube>::new();
    /// history.diff_edit(&mut cube, "Scale", |c| c.scale = 2.0)?;
    /// cube.name = "Crate".into(); // a script renames it, unrecorded
    ///
    /// history.undo(&mut cube)?;
    /// assert_eq!((cube.scale, cube.name.as_str()), (1.0, "Crate"));
    /// # Ok::<(), savegame::Error>(())
    /// ```
    ///
    /// Memento edits and property-diff edits mix freely in one history and one group. A
    /// property-diff edit costs more to record and to undo than a memento edit (the states are
    /// decoded into value trees, and undo encodes and decodes the current memento); what it
    /// holds is its modifications, with their old and new values in full.
    ///
    /// # Errors
    /// As for [`edit`](Self::edit); [`Error::Decode`] if a state does not decode as a value
    /// tree.
    pub fn diff_edit(
        &mut self,
        target: &mut T,
        title: impl Into<Title>,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.begin_diff_edit(target, title)?;
        change(target);
        self.commit_edit(target)
    }

    /// Starts a property-diff edit (see [`diff_edit`](Self::diff_edit)): captures `target` as
    /// it is now. [`commit_edit`](Self::commit_edit) records what changed since, as
    /// modifications; [`cancel_edit`](Self::cancel_edit) puts it back.
    ///
    /// # Errors
    /// As for [`begin_edit`](Self::begin_edit).
    pub fn begin_diff_edit(&mut self, target: &T, title: impl Into<Title>) -> Result<()> {
        self.open_edit(target, title.into(), true, false)
    }

    /// Ends the open memento edit: captures `target` again and records the edit, unless nothing
    /// changed or the hook drops it. Returns whether it was recorded (see
    /// [`edit`](Self::edit)).
    ///
    /// # Errors
    /// [`Error::Rejected`] if no edit is open;
    /// [`Error::Encode`] if the codec cannot encode the memento (the edit
    /// stays open); [`Error::Malformed`] if the history's stored
    /// states are damaged (only possible for a history restored from a damaged memento).
    pub fn commit_edit(&mut self, target: &T) -> Result<bool> {
        if self.edit.is_none() {
            return Err(Error::rejected(
                "undo history: commit_edit without begin_edit",
            ));
        }
        let after = self.encode(target)?;
        let Some(OpenEdit {
            title,
            before,
            diff,
            from_newest,
        }) = self.edit.take()
        else {
            return Ok(false);
        };
        // Set again below only where this commit leaves the newest state the target's.
        self.newest_is_target = false;
        if from_newest && before == after {
            // Nothing changed: the newest state is still the target's.
            self.newest_is_target = true;
            return Ok(false);
        }
        if diff {
            self.record_diff_edit(title, before, after)
        } else {
            self.record_edit(title, before, after)
        }
    }

    /// Abandons the open edit and restores `target` to the state it had at
    /// [`begin_edit`](Self::begin_edit) (a drag cancelled with Esc). Returns `false` when no
    /// edit was open.
    ///
    /// # Errors
    /// [`Error::Decode`] or the originator's error from
    /// `restore_memento`; the edit then stays open.
    pub fn cancel_edit(&mut self, target: &mut T) -> Result<bool> {
        let Some(edit) = self.edit.take() else {
            return Ok(false);
        };
        let restored = self
            .codec
            .decode::<T::Memento>(&edit.before)
            .map_err(|e| e.decoding(ID))
            .and_then(|m| target.restore_memento(m));
        match restored {
            Ok(()) => Ok(true),
            Err(e) => {
                self.edit = Some(edit);
                Err(e)
            }
        }
    }

    /// Is a memento edit open (between `begin_edit` and `commit_edit`)?
    #[must_use]
    pub fn is_editing(&self) -> bool {
        self.edit.is_some()
    }

    // ---------------------------------------------------------------------------------------
    // Recording commands

    /// Applies `command` to `target` and records it (or merges it into the previous entry, see
    /// [`Command::merge`]). Returns whether it was recorded: `false` when the hook dropped it
    /// (it stays applied).
    ///
    /// # Errors
    /// [`Error::Rejected`] while a memento edit is open (the edit would
    /// capture the command's change too); the command's own error from `apply`, and then
    /// nothing is recorded.
    pub fn apply(&mut self, target: &mut T, mut command: C) -> Result<bool> {
        if self.edit.is_some() {
            return Err(Error::rejected(
                "undo history: cannot apply a command while a memento edit is open",
            ));
        }
        // The name is read before `apply`: a command that swaps values with the target holds
        // other values afterwards.
        let name = command.name();
        command.apply(target)?;
        self.record_command(name, command)
    }

    /// Records `command`, which the game has already applied, without applying it: the command
    /// pool's `Register`. A tool that moved a piece as the mouse dragged it records the move
    /// once, at the release; from then on the entry is like one [`apply`](Self::apply) made:
    /// undo calls [`Command::undo`], redo [`Command::apply`], it merges by
    /// [`merge_id`](Command::merge_id), passes through the hook, joins an open group, drops the
    /// redo entries and counts against the limits.
    ///
    /// The command must be in the state `apply` leaves it in (a command that swaps a value
    /// with the target holds the *old* value now). Its [`name`](Command::name) is read as it
    /// is. Returns whether it was recorded (`false`: the hook dropped it).
    ///
    /// ```
    /// # use savegame::{History, Originator};
    /// # use savegame::history::Command;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Default)] struct Room { chair: i32 }
    /// # #[derive(Serialize, Deserialize)] struct M { chair: i32 }
    /// # impl Originator for Room {
    /// #     type Memento = M;
    /// #     fn create_memento(&self) -> M { M { chair: self.chair } }
    /// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> { self.chair = m.chair; Ok(()) }
    /// # }
    /// /// Moves the chair from `from` to `to`.
    /// struct Move { from: i32, to: i32 }
    /// impl Command<Room> for Move {
    ///     fn name(&self) -> String { "Move chair".into() }
    ///     fn apply(&mut self, r: &mut Room) -> savegame::Result<()> { r.chair = self.to; Ok(()) }
    ///     fn undo(&mut self, r: &mut Room) -> savegame::Result<()> { r.chair = self.from; Ok(()) }
    /// }
    ///
    /// let mut room = Room::default();
    /// let mut history = History::<Room, Move>::new();
    /// for x in 1..=30 {
    ///     room.chair = x; // the tool moves the chair itself, frame by frame
    /// }
    /// history.record_applied(Move { from: 0, to: 30 })?;
    /// history.undo(&mut room)?;
    /// assert_eq!(room.chair, 0);
    /// history.redo(&mut room)?;
    /// assert_eq!(room.chair, 30);
    /// # Ok::<(), savegame::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Rejected`] while a memento edit is open (the edit would capture the command's
    /// change too, and undo would take it back twice); [`Error::Malformed`] as for
    /// [`commit_edit`](Self::commit_edit).
    pub fn record_applied(&mut self, command: C) -> Result<bool> {
        if self.edit.is_some() {
            return Err(Error::rejected(
                "undo history: cannot record a command while a memento edit is open",
            ));
        }
        let name = command.name();
        self.record_command(name, command)
    }

    /// Records an applied command: through the hook, into the open group, merged into the
    /// newest entry, or as an entry of its own.
    fn record_command(&mut self, mut name: String, mut command: C) -> Result<bool> {
        let keep = match self.hook.get() {
            Some(hook) => hook(&mut Recorded::command(&mut name, &mut command, self.codec)),
            None => Verdict::Keep,
        };
        if keep == Verdict::Drop {
            return Ok(false);
        }
        if let Some(group) = &mut self.group {
            push_command_to_group(&mut group.records, command);
            return Ok(true);
        }
        let was = self.status();
        let id = command.merge_id();
        let merge_into_top = self
            .mergeable_top(id)
            .is_some_and(|top| top.sole_command().is_some());
        let command = if merge_into_top {
            let before = self.entries.back().map_or(0, |e| e.heap_bytes::<T>());
            let outcome = match self.entries.back_mut().and_then(Entry::sole_command) {
                Some(top) => top.merge(command),
                None => Merged::No(command),
            };
            match outcome {
                Merged::Yes => {
                    let after = self.entries.back().map_or(0, |e| e.heap_bytes::<T>());
                    self.entry_bytes = self.entry_bytes - before + after;
                    return self.finish_push(was);
                }
                Merged::Annul => {
                    self.pop_back()?;
                    self.sealed = true;
                    return self.finish_push(was);
                }
                Merged::No(command) => command,
            }
        } else {
            command
        };
        self.push_entry(name, id, vec![Pending::Command(command)], was)
    }

    // ---------------------------------------------------------------------------------------
    // Groups

    /// Opens a group: every edit and command until the matching
    /// [`end_group`](Self::end_group) becomes one entry named `name`, undone by one undo.
    /// Groups nest; only the outermost one makes an entry (and names it).
    ///
    /// # Errors
    /// [`Error::Rejected`] while a memento edit is open.
    pub fn begin_group(&mut self, name: impl Into<String>) -> Result<()> {
        if self.edit.is_some() {
            return Err(Error::rejected(
                "undo history: cannot open a group while a memento edit is open",
            ));
        }
        match &mut self.group {
            Some(group) => group.depth += 1,
            None => {
                self.group = Some(Group {
                    name: name.into(),
                    depth: 1,
                    records: Vec::new(),
                });
            }
        }
        Ok(())
    }

    /// Closes the innermost open group. Closing the outermost one records its entry; returns
    /// whether it did (`false` for an inner group, and for a group that changed nothing).
    ///
    /// # Errors
    /// [`Error::Rejected`] when no group is open or a memento edit is
    /// still open; [`Error::Malformed`] as for
    /// [`commit_edit`](Self::commit_edit).
    pub fn end_group(&mut self) -> Result<bool> {
        if self.edit.is_some() {
            return Err(Error::rejected(
                "undo history: commit or cancel the open edit before ending its group",
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
        let Some(Group { name, records, .. }) = self.group.take() else {
            return Ok(false);
        };
        let records: Vec<Pending<C>> = records
            .into_iter()
            .filter(|r| match r {
                Pending::Edit { before, after } => before != after,
                Pending::Diff(mods) => !mods.is_empty(),
                Pending::Command(_) => true,
            })
            .collect();
        if records.is_empty() {
            return Ok(false);
        }
        let was = self.status();
        self.push_entry(name, None, records, was)
    }

    /// Runs `body` inside a group named `name` (see [`begin_group`](Self::begin_group)). The
    /// group is closed even when `body` fails, so what it changed stays undoable; an edit that
    /// `body` left open is committed.
    ///
    /// ```
    /// # use savegame::{History, Originator};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Default)] struct Room { pieces: Vec<u32> }
    /// # #[derive(Serialize, Deserialize)] struct M { pieces: Vec<u32> }
    /// # impl Originator for Room {
    /// #     type Memento = M;
    /// #     fn create_memento(&self) -> M { M { pieces: self.pieces.clone() } }
    /// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> { self.pieces = m.pieces; Ok(()) }
    /// # }
    /// let mut room = Room::default();
    /// let mut history = History::<Room>::new();
    /// history.group(&mut room, "Place prefab", |history, room| {
    ///     for piece in 0..5 {
    ///         history.edit(room, "Place piece", |r| r.pieces.push(piece))?;
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!(history.len(), 1);
    /// history.undo(&mut room)?;
    /// assert!(room.pieces.is_empty());
    /// # Ok::<(), savegame::Error>(())
    /// ```
    ///
    /// # Errors
    /// `body`'s error, or else the errors of [`begin_group`](Self::begin_group) and
    /// [`end_group`](Self::end_group).
    pub fn group<R>(
        &mut self,
        target: &mut T,
        name: impl Into<String>,
        body: impl FnOnce(&mut Self, &mut T) -> Result<R>,
    ) -> Result<R> {
        self.begin_group(name)?;
        let out = body(self, target);
        let committed = if self.edit.is_some() {
            self.commit_edit(target).map(drop)
        } else {
            Ok(())
        };
        let ended = self.end_group();
        let out = out?;
        committed?;
        ended?;
        Ok(out)
    }

    /// Is a group open?
    #[must_use]
    pub fn is_grouping(&self) -> bool {
        self.group.is_some()
    }

    // ---------------------------------------------------------------------------------------
    // State

    /// The number of entries (undoable and redoable).
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Is the history empty?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries are done: the position in the history, from 0 (everything undone) to
    /// [`len`](Self::len) (nothing to redo). Entries before it can be undone, the rest redone.
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

    /// The name of the entry an undo would take back ("Undo Move chair").
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

    /// The names of all entries, oldest first (a history panel; [`cursor`](Self::cursor) says
    /// which are done).
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|e| &*e.name)
    }

    /// The name of entry `index` (0 is the oldest).
    #[must_use]
    pub fn name(&self, index: usize) -> Option<&str> {
        self.entries.get(index).map(|e| &*e.name)
    }

    /// Can-undo, can-redo and dirty, as observers see them.
    #[must_use]
    pub fn status(&self) -> Status {
        Status {
            can_undo: self.can_undo(),
            can_redo: self.can_redo(),
            dirty: self.is_dirty(),
        }
    }

    /// The entry limit, if any.
    #[must_use]
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The byte budget, if any.
    #[must_use]
    pub fn byte_budget(&self) -> Option<usize> {
        self.budget
    }

    /// The codec the history encodes states with.
    #[must_use]
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// What an undo or redo of a property-diff edit does with a path changed since it was
    /// recorded (see [`OnConflict`]).
    #[must_use]
    pub fn on_conflict(&self) -> OnConflict {
        self.on_conflict
    }

    /// Changes the conflict rule of property-diff edits, for the next undos and redos: after an
    /// undo refused with [`Error::UndoConflict`], a game that asked the player may undo again
    /// with [`OnConflict::Overwrite`] or [`OnConflict::KeepCurrent`].
    pub fn set_on_conflict(&mut self, rule: OnConflict) {
        self.on_conflict = rule;
    }

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
    // The saved marker

    /// Marks the current position as the saved one: call it after a successful save.
    /// [`is_dirty`](Self::is_dirty) is then false until the history moves away from here.
    pub fn mark_saved(&mut self) {
        let was = self.status();
        self.saved = Some(self.cursor);
        self.saved_by_save = true;
        self.notify(was);
    }

    /// Does the originator differ from its last save, as far as the history knows? False right
    /// after [`mark_saved`](Self::mark_saved); true after an edit, an undo or a redo away from
    /// the saved point; false again on coming back to it. When the entries that lead back to
    /// the saved point are dropped (by the limit, or by recording after undoing past it), the
    /// history stays dirty until the next `mark_saved`. Changes made without recording them
    /// are not seen.
    ///
    /// A new history is not dirty: it starts at the state the game had when it was created.
    #[must_use]
    pub fn is_dirty(&self) -> bool {
        self.saved != Some(self.cursor)
    }

    /// The position ([`cursor`](Self::cursor) value) of the saved point, if it can still be
    /// reached (a history panel marks it).
    #[must_use]
    pub fn saved_index(&self) -> Option<usize> {
        self.saved
    }

    // ---------------------------------------------------------------------------------------
    // Limits, clearing, observers and the hook

    /// Changes the entry limit (`None`: no limit), dropping the oldest entries at once if
    /// needed (and then the farthest redo entries).
    ///
    /// # Errors
    /// [`Error::Config`] for `Some(0)`; [`Error::Malformed`] as for
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

    /// Stops merging: the next edit makes a new entry even if its merge key or merge id matches
    /// the newest entry's (call it when a drag recorded frame by frame ends).
    pub fn seal(&mut self) {
        self.sealed = true;
    }

    /// Adds an observer: a closure `FnMut(Event)`, or any type implementing [`Observer`].
    pub fn add_observer(&mut self, observer: impl Observer + Send + 'static) -> ObserverId {
        self.observers.add(Box::new(observer))
    }

    /// Removes an observer; returns whether it was there.
    pub fn remove_observer(&mut self, id: ObserverId) -> bool {
        self.observers.remove(id)
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

    // ---------------------------------------------------------------------------------------
    // Internals

    /// The target's memento, encoded straight from it ([`Originator::serialize_memento`]: no
    /// copy of the state for a derived originator).
    fn encode(&self, target: &T) -> Result<Vec<u8>> {
        self.codec
            .encode(&crate::originator::MementoOf(target))
            .map_err(|e| e.encoding(ID))
    }

    /// Records a memento edit whose states differ (or not): through the hook, into the open
    /// group, or as an entry (merged into the newest one if its title allows).
    fn record_edit(
        &mut self,
        title: Title,
        mut before: Vec<u8>,
        mut after: Vec<u8>,
    ) -> Result<bool> {
        if before == after {
            return Ok(false);
        }
        let (mut name, merge) = title.into_parts();
        // A hook may record other states than the target's.
        let unhooked = self.hook.get().is_none();
        if let Some(hook) = self.hook.get() {
            let mut mods = None;
            let mut recorded = Recorded::edit(
                &mut name,
                &mut before,
                &mut after,
                &mut mods,
                false,
                self.codec,
            );
            let verdict = hook(&mut recorded);
            recorded.settle()?;
            if verdict == Verdict::Drop || before == after {
                return Ok(false);
            }
        }
        if let Some(group) = &mut self.group {
            // Edits in a row are one record: only the first before and the last after state
            // of the run can ever be restored.
            match group.records.last_mut() {
                Some(Pending::Edit { after: last, .. }) => *last = after,
                _ => group.records.push(Pending::Edit { before, after }),
            }
            return Ok(true);
        }
        let was = self.status();
        if let Some(key) = merge
            && self
                .mergeable_top(Some(key))
                .is_some_and(|top| top.is_sole_memento())
        {
            if self.chain.set_last_after(after)? {
                self.newest_is_target = unhooked;
            } else {
                // The merged edit changes nothing at all: the entry goes.
                self.pop_back()?;
                self.sealed = true;
            }
            return self.finish_push(was);
        }
        let recorded = self.push_entry(name, merge, vec![Pending::Edit { before, after }], was)?;
        self.newest_is_target = unhooked;
        Ok(recorded)
    }

    /// Records a property-diff edit: its modifications, through the hook, into the open group
    /// or as an entry (merged into the newest one if its title allows).
    fn record_diff_edit(
        &mut self,
        title: Title,
        mut before: Vec<u8>,
        mut after: Vec<u8>,
    ) -> Result<bool> {
        if before == after {
            return Ok(false);
        }
        let codec = self.codec;
        let before_tree = hook::decode_tree(codec, &before)?;
        let after_tree = hook::decode_tree(codec, &after)?;
        let mut mods = Some(diff::diff(&before_tree, &after_tree));
        let (mut name, merge) = title.into_parts();
        if let Some(hook) = self.hook.get() {
            let verdict = hook(&mut Recorded::edit(
                &mut name,
                &mut before,
                &mut after,
                &mut mods,
                true,
                codec,
            ));
            if verdict == Verdict::Drop {
                return Ok(false);
            }
        }
        let mut mods = match mods {
            Some(mods) => mods,
            // The hook replaced a state: the list follows it.
            None => diff::diff(
                &hook::decode_tree(codec, &before)?,
                &hook::decode_tree(codec, &after)?,
            ),
        };
        diff::note_seen(&mut mods, &after_tree);
        if mods.is_empty() {
            return Ok(false);
        }
        if let Some(group) = &mut self.group {
            // Diff records in a row are one record, as memento edits are.
            if let Some(Pending::Diff(last)) = group.records.last_mut()
                && let Some(both) = compose(last, &mods, before_tree.clone(), &after_tree)
            {
                if both.is_empty() {
                    group.records.pop();
                } else {
                    *last = both;
                }
                return Ok(true);
            }
            group.records.push(Pending::Diff(mods));
            return Ok(true);
        }
        let was = self.status();
        if let Some(key) = merge
            && let Some(top) = self.mergeable_top(Some(key))
            && let Some(last) = top.sole_diff()
            && let Some(both) = compose(
                &diff::decode_list(codec, last)?,
                &mods,
                before_tree,
                &after_tree,
            )
        {
            if both.is_empty() {
                // The merged edit changes nothing at all: the entry goes.
                self.pop_back()?;
                self.sealed = true;
            } else {
                let encoded = diff::encode_list(codec, &both)?.into_boxed_slice();
                if let Some(last) = self.entries.back_mut().and_then(Entry::sole_diff) {
                    self.entry_bytes = self.entry_bytes - last.len() + encoded.len();
                    *last = encoded;
                }
            }
            return self.finish_push(was);
        }
        self.push_entry(name, merge, vec![Pending::Diff(mods)], was)
    }

    /// The newest entry, if an edit with merge key `key` may merge into it.
    fn mergeable_top(&mut self, key: Option<u64>) -> Option<&mut Entry<C>> {
        let len = self.entries.len();
        if key.is_none() || self.sealed || self.cursor != len || self.saved == Some(len) {
            return None;
        }
        self.entries.back_mut().filter(|top| top.merge == key)
    }

    /// Drops the redo entries, then pushes an entry of `records`.
    fn push_entry(
        &mut self,
        name: String,
        merge: Option<u64>,
        records: Vec<Pending<C>>,
        was: Status,
    ) -> Result<bool> {
        while self.entries.len() > self.cursor {
            self.pop_back()?;
        }
        let first_link = self.chain.end();
        let mut stored = Vec::with_capacity(records.len());
        for record in records {
            match record {
                Pending::Edit { before, after } => {
                    if let Err(e) = self.chain.push(&before, after) {
                        for _ in first_link..self.chain.end() {
                            self.chain.pop_back()?;
                        }
                        self.notify(was);
                        return Err(e);
                    }
                    stored.push(Record::Memento);
                }
                Pending::Command(c) => stored.push(Record::Command(c)),
                Pending::Diff(mods) => match diff::encode_list(self.codec, &mods) {
                    Ok(bytes) => stored.push(Record::Diff(bytes.into_boxed_slice())),
                    Err(e) => {
                        for _ in first_link..self.chain.end() {
                            self.chain.pop_back()?;
                        }
                        self.notify(was);
                        return Err(e);
                    }
                },
            }
        }
        let entry = Entry {
            name: name.into_boxed_str(),
            merge,
            records: stored.into_boxed_slice(),
            first_link,
        };
        self.entry_bytes += entry.heap_bytes();
        self.entries.push_back(entry);
        self.cursor = self.entries.len();
        self.sealed = false;
        self.finish_push(was)
    }

    /// After a push or merge: apply the limits, notify, report the edit as recorded.
    fn finish_push(&mut self, was: Status) -> Result<bool> {
        let trimmed = self.trim();
        self.notify(was);
        trimmed.map(|()| true)
    }

    /// Drops entries until the limits hold: the oldest undo entries first, then the farthest
    /// redo entries. The count limit is strict; the byte budget keeps the newest entry and the
    /// entries next to a saved point that comes from a save.
    fn trim(&mut self) -> Result<()> {
        loop {
            let len = self.entries.len();
            let over_count = self.limit.is_some_and(|limit| len > limit);
            let over_budget = len > 1 && self.budget.is_some_and(|budget| self.bytes() > budget);
            if !over_count && !over_budget {
                return Ok(());
            }
            let keeps = |at: usize| self.saved_by_save && self.saved == Some(at);
            if self.cursor > 0 && (over_count || !keeps(0)) {
                self.pop_front()?;
            } else if self.cursor < len && (over_count || !keeps(len)) {
                self.pop_back()?;
            } else {
                return Ok(());
            }
        }
    }

    /// Drops the oldest entry (the cursor and the saved marker follow).
    fn pop_front(&mut self) -> Result<()> {
        let Some(entry) = self.entries.front() else {
            return Ok(());
        };
        for _ in 0..entry.links() {
            self.chain.pop_front()?;
        }
        if let Some(entry) = self.entries.pop_front() {
            self.entry_bytes -= entry.heap_bytes();
        }
        self.cursor = self.cursor.saturating_sub(1);
        self.saved = match self.saved {
            Some(0) | None => None,
            Some(i) => Some(i - 1),
        };
        Ok(())
    }

    /// Drops the newest entry (redo entries, or the newest entry when a merge annuls it; the
    /// caller moves the cursor).
    fn pop_back(&mut self) -> Result<()> {
        let Some(entry) = self.entries.back() else {
            return Ok(());
        };
        for _ in 0..entry.links() {
            self.chain.pop_back()?;
        }
        let len = self.entries.len();
        if let Some(entry) = self.entries.pop_back() {
            self.entry_bytes -= entry.heap_bytes();
        }
        if self.saved == Some(len) {
            self.saved = None;
        }
        self.cursor = self.cursor.min(self.entries.len());
        Ok(())
    }

    /// Tells the observers, if the status changed since `was`.
    fn notify(&mut self, was: Status) {
        let now = self.status();
        if now != was {
            self.observers.send(Event::Changed { was, now });
        }
    }

    /// Refuses to move through the history while an edit or a group is open.
    fn check_closed(&self, what: &str) -> Result<()> {
        if self.edit.is_some() || self.group.is_some() {
            return Err(Error::rejected(format!(
                "undo history: cannot {what} while an edit or a group is open"
            )));
        }
        Ok(())
    }
}

/// One list of modifications for `first` followed by `next` (an edit from `before` to
/// `after`): what leads from the state before `first` to the state after `next`. `None` when
/// `first` cannot be taken back from `before` (a path it wrote is gone): the two stay apart.
fn compose(
    first: &[Modification],
    next: &[Modification],
    before: Value,
    after: &Value,
) -> Option<Vec<Modification>> {
    let mut start = before.clone();
    diff::apply(&mut start, first, true, OnConflict::Overwrite).ok()?;
    let mut end = before;
    diff::apply(&mut end, next, false, OnConflict::Overwrite).ok()?;
    let mut both = diff::diff(&start, &end);
    diff::note_seen(&mut both, after);
    Some(both)
}

/// Adds `command` to an open group's records, merging it into the group's last command if
/// their merge ids match.
fn push_command_to_group<T: ?Sized, C: Command<T>>(records: &mut Vec<Pending<C>>, command: C) {
    let id = command.merge_id();
    if id.is_some()
        && let Some(Pending::Command(last)) = records.last_mut()
        && last.merge_id() == id
    {
        match last.merge(command) {
            Merged::Yes => {}
            Merged::Annul => {
                records.pop();
            }
            Merged::No(command) => records.push(Pending::Command(command)),
        }
        return;
    }
    records.push(Pending::Command(command));
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
mod tests {
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Default)]
    struct Doc {
        text: Vec<u8>,
    }

    impl Originator for Doc {
        type Memento = Vec<u8>;
        fn create_memento(&self) -> Vec<u8> {
            self.text.clone()
        }
        fn restore_memento(&mut self, m: Vec<u8>) -> Result<()> {
            self.text = m;
            Ok(())
        }
    }

    /// Appends its bytes; holds them on the heap.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    struct Append(Vec<u8>, bool);

    impl Command<Doc> for Append {
        fn name(&self) -> String {
            "append".into()
        }
        fn apply(&mut self, doc: &mut Doc) -> Result<()> {
            doc.text.extend_from_slice(&self.0);
            Ok(())
        }
        fn undo(&mut self, doc: &mut Doc) -> Result<()> {
            doc.text
                .truncate(doc.text.len().saturating_sub(self.0.len()));
            Ok(())
        }
        fn merge_id(&self) -> Option<u64> {
            self.1.then_some(7)
        }
        fn merge(&mut self, next: Self) -> Merged<Self> {
            self.0.extend(next.0);
            Merged::Yes
        }
        fn heap_size(&self) -> usize {
            self.0.capacity()
        }
    }

    impl<T: Originator, C: Command<T>> History<T, C> {
        /// `bytes()` counted from scratch.
        fn recount(&self) -> usize {
            assert_eq!(
                self.entry_bytes,
                self.entries
                    .iter()
                    .map(Entry::heap_bytes::<T>)
                    .sum::<usize>()
            );
            self.bytes()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn the_running_byte_count_is_always_the_recount(
            ops in proptest::collection::vec((0u8..7, 0usize..40, any::<bool>()), 1..80),
            budget in proptest::option::of(64usize..2000),
        ) {
            let builder = History::<Doc, Append>::builder().limit(12);
            let mut history = match budget {
                Some(b) => builder.byte_budget(b),
                None => builder,
            }
            .build()
            .unwrap();
            let mut doc = Doc::default();
            for (op, n, flag) in ops {
                match op {
                    0 => {
                        let title = if flag { Title::new("type").merging(1) } else { "type".into() };
                        history.edit(&mut doc, title, |d| d.text.extend(std::iter::repeat_n(b'x', n))).unwrap();
                    }
                    1 => {
                        history.apply(&mut doc, Append(vec![b'y'; n], flag)).unwrap();
                    }
                    2 => {
                        history.undo(&mut doc).unwrap();
                    }
                    3 => {
                        history.redo(&mut doc).unwrap();
                    }
                    4 => {
                        history.group(&mut doc, "group", |h, d| {
                            h.edit(d, "cut", |d| d.text.truncate(n))?;
                            h.apply(d, Append(vec![b'z'; n], flag))
                        }).unwrap();
                    }
                    5 => history.mark_saved(),
                    _ => history.seal(),
                }
                prop_assert!(history.chain.delta_bytes_add_up());
                let bytes = history.recount();
                prop_assert!(bytes >= history.chain.heap_bytes());
                prop_assert!(history.len() <= 12);
            }
        }
    }

    #[test]
    fn a_history_holds_one_full_state_however_many_small_edits() {
        let mut doc = Doc {
            text: vec![b'.'; 100_000],
        };
        let mut history = History::<Doc>::builder().unlimited().build().unwrap();
        for i in 0..200 {
            history
                .edit(&mut doc, "poke", |d| d.text[i * 100] = b'#')
                .unwrap();
        }
        let full = Codec::MessagePack.encode(&doc.text).unwrap().len();
        assert!(history.bytes() > full, "the one full state is counted");
        let per_entry = (history.bytes() - full) / 200;
        // Bookkeeping: the entry and its link in their tables (by capacity), and the name.
        assert!(per_entry < 256, "{per_entry} bytes per one-byte edit");
    }

    #[test]
    fn the_open_edit_and_group_count_in_bytes() {
        let mut doc = Doc {
            text: vec![1; 1000],
        };
        let mut history = History::<Doc>::new();
        let empty = history.bytes();
        history.begin_edit(&doc, "type").unwrap();
        assert!(history.bytes() >= empty + 1000);
        doc.text.push(2);
        history.commit_edit(&doc).unwrap();
        history.begin_group("g").unwrap();
        history.edit(&mut doc, "type", |d| d.text.push(3)).unwrap();
        let open = history.bytes();
        history.end_group().unwrap();
        assert!(
            history.bytes() < open,
            "closing a group compacts its states"
        );
    }

    #[test]
    fn debug_output_names_the_shape_not_the_states() {
        let mut doc = Doc::default();
        let mut history = History::<Doc>::new();
        history.edit(&mut doc, "type", |d| d.text.push(1)).unwrap();
        let text = format!("{history:?}");
        assert!(
            text.contains("len: 1") && text.contains("cursor: 1"),
            "{text}"
        );
        let builder = format!("{:?}", History::<Doc>::builder().limit(3));
        assert!(builder.contains("limit: Some(3)"), "{builder}");
    }
}
