//! Recording commands into a [`History`]: applied by it ([`History::apply`]) or already
//! applied by the game ([`History::record_applied`]), through the hook, into an open group or
//! merged into the newest entry.

use super::History;
use super::command::{Command, Merged};
use super::entry::Entry;
use super::entry::Pending;
use super::hook::{Recorded, Verdict};
use crate::error::{Error, Result};
use crate::originator::Originator;

impl<T: Originator, C: Command<T>> History<T, C> {
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
    pub(super) fn record_command(&mut self, mut name: String, mut command: C) -> Result<bool> {
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
}

/// Adds `command` to an open group's records, merging it into the group's last command if
/// their merge ids match.
pub(super) fn push_command_to_group<T: ?Sized, C: Command<T>>(
    records: &mut Vec<Pending<C>>,
    command: C,
) {
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
