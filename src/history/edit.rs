//! Recording edits of the originator into a [`History`]: memento edits (its whole memento
//! before and after) and property-diff edits (only the paths that changed), with their open
//! edit between `begin_edit` and `commit_edit`.

use super::History;
use super::ID;
use super::command::Command;
use super::diff::{self};
use super::entry::Pending;
use super::entry::{Entry, Record, Title};
use super::hook::{self, Recorded, Verdict};
use crate::error::{Error, Result};
use crate::originator::Originator;

/// A memento or property-diff edit between `begin_edit` (or `begin_diff_edit`) and
/// `commit_edit`.
pub(super) struct OpenEdit {
    pub(super) title: Title,
    pub(super) before: Vec<u8>,
    pub(super) diff: bool,
    /// `before` is a copy of the history's newest state, not an encoding of the target.
    pub(super) from_newest: bool,
}

impl<T: Originator, C: Command<T>> History<T, C> {
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
    pub(super) fn open_edit(
        &mut self,
        target: &T,
        title: Title,
        diff: bool,
        unchanged: bool,
    ) -> Result<()> {
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
    pub(super) fn newest_state(&mut self) -> Result<Option<Vec<u8>>> {
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

    /// Records `change` as one property-diff edit named by `title` (Unity's
    /// `Undo.RecordObject`): captures `target` before and after it, and keeps only the paths of
    /// the memento's value tree that changed, each with its old and new value (see
    /// [`Modification`](super::Modification)). Undo writes the old values back into the originator's *current*
    /// memento and restores that; redo writes the new ones. A property that something else
    /// changes later without recording it (a script, play) is left alone by undo and redo.
    ///
    /// When a recorded path was changed since, the history's [`OnConflict`](super::OnConflict) rule decides:
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

    /// The target's memento, encoded straight from it ([`Originator::serialize_memento`]: no
    /// copy of the state for a derived originator).
    pub(super) fn encode(&self, target: &T) -> Result<Vec<u8>> {
        self.codec
            .encode(&crate::originator::MementoOf(target))
            .map_err(|e| e.encoding(ID))
    }

    /// Records a memento edit whose states differ (or not): through the hook, into the open
    /// group, or as an entry (merged into the newest one if its title allows).
    pub(super) fn record_edit(
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
    pub(super) fn record_diff_edit(
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
                && let Some(both) = diff::compose(last, &mods, before_tree.clone(), &after_tree)
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
            && let Some(both) = diff::compose(
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
}
