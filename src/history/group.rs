//! Groups: one entry, one undo, for every edit and command between `begin_group` and
//! `end_group`.

use super::History;
use super::command::Command;
use super::entry::Pending;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// A group between `begin_group` and `end_group`.
pub(super) struct Group<C> {
    pub(super) name: String,
    pub(super) depth: usize,
    pub(super) records: Vec<Pending<C>>,
}

impl<T: Originator, C: Command<T>> History<T, C> {
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
}
