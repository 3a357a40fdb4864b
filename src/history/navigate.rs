//! Moving through the history: undo, redo, and jumps, with the rollback that keeps a failed
//! step from leaving anything half done.

use super::History;
use super::ID;
use super::command::Command;
use super::diff;
use super::entry::Record;
use super::hook;
use super::line;
use crate::error::{Error, Result};
use crate::originator::Originator;

impl<T: Originator, C: Command<T>> History<T, C> {
    /// Undoes the newest done entry: restores its before state (or undoes its commands, newest
    /// first; or writes the old values of its property-diff edits). Returns `Ok(false)`, doing
    /// nothing, when there is nothing to undo.
    ///
    /// # Errors
    /// [`Error::Rejected`] while an edit or a group is open. [`Error::UndoConflict`] when a
    /// path a property-diff edit recorded was changed since and the
    /// [`OnConflict`](super::OnConflict) rule refuses. The originator's error from
    /// `restore_memento`, a command's error from `undo`, or [`Error::Decode`]: then what the
    /// entry had already undone is redone, the history stays where it was, and the error is
    /// returned (if that rollback fails too, the originator may be left between the two states;
    /// the history is still consistent).
    pub fn undo(&mut self, target: &mut T) -> Result<bool> {
        if self.cursor == 0 {
            return Ok(false);
        }
        self.check_closed("undo")?;
        let was = self.status();
        self.run(self.cursor - 1, target, true)?;
        self.cursor -= 1;
        self.sealed = true;
        self.notify(was);
        Ok(true)
    }

    /// Redoes the next undone entry: restores its after state (or applies its commands again,
    /// oldest first). Returns `Ok(false)`, doing nothing, when there is nothing to redo.
    ///
    /// # Errors
    /// As for [`undo`](Self::undo).
    pub fn redo(&mut self, target: &mut T) -> Result<bool> {
        if self.cursor == self.entries.len() {
            return Ok(false);
        }
        self.check_closed("redo")?;
        let was = self.status();
        self.run(self.cursor, target, false)?;
        self.cursor += 1;
        self.sealed = true;
        self.notify(was);
        Ok(true)
    }

    line::line_go_to!(target: &mut T);

    /// Undoes (`undo`) or redoes entry `index`, all or nothing: when a record fails, the ones
    /// already run are run back the other way.
    fn run(&mut self, index: usize, target: &mut T, undo: bool) -> Result<()> {
        let count = self.entries.get(index).map_or(0, |e| e.records.len());
        let before = self.entries.get(index).map_or(0, |e| e.heap_bytes::<T>());
        let order: Vec<usize> = if undo {
            (0..count).rev().collect()
        } else {
            (0..count).collect()
        };
        let mut result = Ok(());
        for (done, &record) in order.iter().enumerate() {
            if let Err(e) = self.run_record(index, record, target, undo) {
                for &back in order[..done].iter().rev() {
                    // Best effort: the first error is the one to report.
                    let _ = self.run_record(index, back, target, !undo);
                }
                result = Err(e);
                break;
            }
        }
        // Commands may hold more or less memory after running.
        let after = self.entries.get(index).map_or(0, |e| e.heap_bytes::<T>());
        self.entry_bytes = self.entry_bytes - before + after;
        result
    }

    /// Undoes or redoes record `record` of entry `index`.
    fn run_record(
        &mut self,
        index: usize,
        record: usize,
        target: &mut T,
        undo: bool,
    ) -> Result<()> {
        let (codec, rule) = (self.codec, self.on_conflict);
        let Some(entry) = self.entries.get_mut(index) else {
            return Ok(());
        };
        let link = entry.link_of(record);
        match entry.records.get_mut(record) {
            Some(Record::Diff(list)) => {
                let mods = diff::decode_list(codec, list)?;
                let bytes = codec
                    .encode(&target.create_memento())
                    .map_err(|e| e.encoding(ID))?;
                let mut tree = hook::decode_tree(codec, &bytes)?;
                match diff::apply(&mut tree, &mods, undo, rule) {
                    Ok(false) => Ok(()),
                    Ok(true) => target.restore_memento(hook::tree_to_memento::<T>(codec, &tree)?),
                    Err(conflict) => Err(Error::UndoConflict {
                        entry: entry.name.to_string(),
                        target: None,
                        path: conflict.path,
                        redo: !undo,
                    }),
                }
            }
            Some(Record::Memento) => {
                let bytes = self.chain.state(link, !undo)?;
                let memento = self.codec.decode(bytes).map_err(|e| e.decoding(ID))?;
                target.restore_memento(memento)
            }
            Some(Record::Command(command)) => {
                if undo {
                    command.undo(target)
                } else {
                    command.apply(target)
                }
            }
            None => Ok(()),
        }
    }
}
