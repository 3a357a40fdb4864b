//! [`Command`]: an edit that knows how to apply itself and how to take itself back.

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// An edit of a `T` that knows its inverse, as in Qt's `QUndoCommand`: the other way to record
/// besides memento edits ([`History::edit`](super::History::edit)), for edits whose memento
/// would be large and whose inverse is cheap (move one piece in a room of ten thousand).
///
/// [`History::apply`](super::History::apply) calls [`apply`](Self::apply) once and records the
/// command; undo calls [`undo`](Self::undo); redo calls [`apply`](Self::apply) again. There is
/// no separate redo code. A command that *swaps* a value it holds with the target's is its own
/// inverse: its `undo` can simply call `apply` (see the example), the way the one-`undo()`
/// design of game editors makes every undo record its own redo.
///
/// Like [`Originator::restore_memento`](crate::Originator::restore_memento), `apply` and `undo`
/// should leave the target unchanged when they fail: the history then stays where it was and
/// reports the error.
///
/// The history keeps commands in memory, and in a save when it is
/// [captured](super::HistoryMemento) (then the command type must be a serde type). One history
/// holds one command type; an enum covers many kinds of edits.
///
/// ```
/// use savegame::history::{Command, Merged};
///
/// struct Room { chair: (i32, i32) }
///
/// /// Moves the chair: holds where to put it, and after applying, where it was.
/// struct MoveChair { to: (i32, i32) }
///
/// impl Command<Room> for MoveChair {
///     fn name(&self) -> String { "Move chair".into() }
///     fn apply(&mut self, room: &mut Room) -> savegame::Result<()> {
///         std::mem::swap(&mut room.chair, &mut self.to);
///         Ok(())
///     }
///     fn undo(&mut self, room: &mut Room) -> savegame::Result<()> {
///         self.apply(room) // a swap is its own inverse
///     }
///     // Moves of the chair in a row are one entry (the history stops merging at an undo,
///     // at the saved point, and at `History::seal`).
///     fn merge_id(&self) -> Option<u64> { Some(1) }
///     fn merge(&mut self, _next: Self) -> Merged<Self> {
///         // Both moves are applied: `self.to` holds where the chair was before the first one.
///         // Keep it, and one undo takes both back.
///         Merged::Yes
///     }
/// }
/// ```
pub trait Command<T: ?Sized> {
    /// What the undo menu calls this edit ("Move chair"). Read once, just before the first
    /// [`apply`](Self::apply); an entry keeps the name of its first command when others merge
    /// into it.
    fn name(&self) -> String;

    /// Applies the edit to `target`. Called when the command is recorded, and for every redo.
    ///
    /// # Errors
    /// Whatever makes the edit impossible; leave `target` unchanged then.
    fn apply(&mut self, target: &mut T) -> Result<()>;

    /// Takes the edit back: `target` returns to the state it had before `apply`.
    ///
    /// # Errors
    /// Whatever makes the undo impossible; leave `target` unchanged then.
    fn undo(&mut self, target: &mut T) -> Result<()>;

    /// Commands with the same id may merge (`None`, the default, never merges). The history
    /// offers a new command to the previous entry when both have the same id, the previous
    /// entry is this one command, and it is the newest entry, not the saved point, and no undo,
    /// redo or [`seal`](super::History::seal) came in between.
    fn merge_id(&self) -> Option<u64> {
        None
    }

    /// Absorbs `next`, which has just been applied after `self`: afterwards one undo takes
    /// both back. Return [`Merged::No`] with `next` to keep them apart, or [`Merged::Annul`]
    /// when together they change nothing (the entry is then dropped).
    fn merge(&mut self, next: Self) -> Merged<Self>
    where
        Self: Sized,
    {
        Merged::No(next)
    }

    /// Heap bytes the command owns beyond its own size (a `Vec` it holds, say), for
    /// [`History::bytes`](super::History::bytes) and the byte budget. The default, 0, suits
    /// commands that own no heap memory.
    fn heap_size(&self) -> usize {
        0
    }
}

/// The outcome of [`Command::merge`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Merged<C> {
    /// The commands are one now.
    Yes,
    /// They stay apart: here is the new command back.
    No(C),
    /// Together they change nothing: drop the entry.
    Annul,
}

/// The command type of a history that records only memento edits. It has no values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NoCommand {}

impl<T: ?Sized> Command<T> for NoCommand {
    fn name(&self) -> String {
        match *self {}
    }

    fn apply(&mut self, _: &mut T) -> Result<()> {
        match *self {}
    }

    fn undo(&mut self, _: &mut T) -> Result<()> {
        match *self {}
    }
}
