//! [`Undoable`]: an originator that owns its [`History`], so a memento edit encodes it once.

use std::fmt;
use std::ops::Deref;

use super::History;
use super::command::{Command, NoCommand};
use super::entry::Title;
use crate::error::Result;
use crate::originator::Originator;

/// An originator `T` together with its undo [`History`]: an editor's document.
///
/// A [`History`] does not own what it records, so every memento edit encodes the target twice,
/// before and after the change: something may have changed it since the last edit. An
/// `Undoable` owns the target and hands out only `&T` (through [`Deref`] and
/// [`get`](Self::get)); every change goes through it. So it knows when the target is exactly as
/// its last edit left it, and then takes the before state from the history's newest state, a
/// copy of bytes, instead of encoding the target again. An edit then costs one encoding, not
/// two. The entries, the bytes and the undo behaviour are exactly those of [`History::edit`].
///
/// Anything that may change the target outside an edit makes the next edit encode it again:
/// [`untracked_mut`](Self::untracked_mut), [`parts_mut`](Self::parts_mut),
/// [`history_mut`](Self::history_mut), an undo or redo, a command, a property-diff edit, an
/// error. The one change it cannot see is interior mutability: a field of `T` behind a `Cell`,
/// `RefCell` or `Mutex` changed through `&T`. Change such fields through
/// [`untracked_mut`](Self::untracked_mut) (or record them with [`edit`](Self::edit)); otherwise
/// the next edit's undo also takes that change back.
///
/// ```
/// use savegame::{Originator, Undoable};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Default)]
/// struct Room { chair: (i32, i32) }
///
/// #[derive(Serialize, Deserialize)]
/// struct RoomMemento { chair: (i32, i32) }
///
/// impl Originator for Room {
///     type Memento = RoomMemento;
///     fn create_memento(&self) -> RoomMemento { RoomMemento { chair: self.chair } }
///     fn restore_memento(&mut self, m: RoomMemento) -> savegame::Result<()> {
///         self.chair = m.chair;
///         Ok(())
///     }
/// }
///
/// let mut room = Undoable::new(Room::default());
/// room.edit("Move chair", |room| room.chair = (3, 4))?;
/// room.edit("Move chair", |room| room.chair = (5, 0))?; // encodes the room once
/// assert_eq!(room.history().undo_name(), Some("Move chair"));
///
/// assert!(room.undo()?);
/// assert_eq!(room.chair, (3, 4));
/// assert!(room.redo()?);
/// assert_eq!(room.get().chair, (5, 0));
/// # Ok::<(), savegame::Error>(())
/// ```
pub struct Undoable<T: Originator, C = NoCommand> {
    target: T,
    history: History<T, C>,
    /// Nothing has changed the target since this wrapper's last memento edit through the
    /// history; whether that edit left the history's newest state the target's, the history
    /// knows.
    unchanged: bool,
}

impl<T: Originator> Undoable<T> {
    /// `target` with an empty history of memento edits ([`History::new`]). For a history of
    /// commands, or with limits, use [`with_history`](Self::with_history).
    pub fn new(target: T) -> Self {
        Self::with_history(target, History::new())
    }
}

impl<T: Originator, C: Command<T>> Undoable<T, C> {
    /// `target` with `history`: one from [`History::builder`], or one restored from a save
    /// together with the target.
    pub fn with_history(target: T, history: History<T, C>) -> Self {
        Undoable {
            target,
            history,
            unchanged: false,
        }
    }

    /// The target.
    pub fn get(&self) -> &T {
        &self.target
    }

    /// The history, to read: names for the menus, [`is_dirty`](History::is_dirty),
    /// [`bytes`](History::bytes).
    pub fn history(&self) -> &History<T, C> {
        &self.history
    }

    /// The history, to change its settings or mark it saved. The next edit encodes the target
    /// again.
    pub fn history_mut(&mut self) -> &mut History<T, C> {
        self.unchanged = false;
        &mut self.history
    }

    /// The target, to change it without recording the change (a script, play mode, loading).
    /// The next edit encodes it again.
    pub fn untracked_mut(&mut self) -> &mut T {
        self.unchanged = false;
        &mut self.target
    }

    /// The target and the history, for whatever else [`History`] offers (groups, drags with
    /// [`begin_edit`](History::begin_edit), [`go_to`](History::go_to)). The next edit encodes
    /// the target again.
    pub fn parts_mut(&mut self) -> (&mut T, &mut History<T, C>) {
        self.unchanged = false;
        (&mut self.target, &mut self.history)
    }

    /// The target and the history, apart.
    pub fn into_parts(self) -> (T, History<T, C>) {
        (self.target, self.history)
    }

    /// Records `change` as one memento edit, as [`History::edit`] does. When the target is as
    /// the previous edit left it, its before state is that edit's after state, and the target
    /// is encoded once.
    ///
    /// # Errors
    /// As for [`History::edit`].
    pub fn edit(&mut self, title: impl Into<Title>, change: impl FnOnce(&mut T)) -> Result<bool> {
        let title = title.into();
        let recorded = if self.unchanged {
            self.history.edit_unchanged(&mut self.target, title, change)
        } else {
            self.history.edit(&mut self.target, title, change)
        };
        self.unchanged = recorded.is_ok();
        recorded
    }

    /// Records `change` as one property-diff edit: [`History::diff_edit`].
    ///
    /// # Errors
    /// As for [`History::diff_edit`].
    pub fn diff_edit(
        &mut self,
        title: impl Into<Title>,
        change: impl FnOnce(&mut T),
    ) -> Result<bool> {
        self.unchanged = false;
        self.history.diff_edit(&mut self.target, title, change)
    }

    /// Runs `command` and records it: [`History::apply`].
    ///
    /// # Errors
    /// As for [`History::apply`].
    pub fn apply(&mut self, command: C) -> Result<bool> {
        self.unchanged = false;
        self.history.apply(&mut self.target, command)
    }

    /// Undoes the newest entry: [`History::undo`].
    ///
    /// # Errors
    /// As for [`History::undo`].
    pub fn undo(&mut self) -> Result<bool> {
        self.unchanged = false;
        self.history.undo(&mut self.target)
    }

    /// Redoes the next undone entry: [`History::redo`].
    ///
    /// # Errors
    /// As for [`History::redo`].
    pub fn redo(&mut self) -> Result<bool> {
        self.unchanged = false;
        self.history.redo(&mut self.target)
    }
}

impl<T: Originator, C> Deref for Undoable<T, C> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.target
    }
}

impl<T: Originator + fmt::Debug, C> fmt::Debug for Undoable<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Undoable")
            .field("target", &self.target)
            .field("history", &self.history)
            .finish_non_exhaustive()
    }
}
