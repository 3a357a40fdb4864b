//! Entries: what one undo takes back. [`Title`] names an edit and says whether it may merge.

use std::mem::size_of;

use super::command::Command;
use super::diff::Modification;

/// The name an edit has in the undo menu ("Move chair"), and optionally a merge key.
///
/// A memento edit with a merge key merges into the previous entry when that entry is one edit
/// with the same key, is the newest entry and not the saved point, and no undo, redo or
/// [`seal`](super::History::seal) came in between: an editor that records a drag frame by frame
/// gets one entry per drag (and none if the drag ends where it started). Most editors instead
/// record a drag with [`begin_edit`](super::History::begin_edit) at the press and
/// [`commit_edit`](super::History::commit_edit) at the release.
///
/// A plain string is a title without a merge key.
///
/// ```
/// use savegame::history::Title;
///
/// let chair_id = 17;
/// let title = Title::new("Move chair").merging(chair_id);
/// assert_eq!(title.name(), "Move chair");
/// assert_eq!(title.merge_key(), Some(17));
/// assert_eq!(Title::from("Paint wall").merge_key(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Title {
    name: String,
    merge: Option<u64>,
}

impl Title {
    /// A title with this name and no merge key.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Title {
            name: name.into(),
            merge: None,
        }
    }

    /// Lets consecutive edits with the same `key` merge into one entry.
    #[must_use]
    pub fn merging(mut self, key: u64) -> Self {
        self.merge = Some(key);
        self
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The merge key, if any.
    #[must_use]
    pub fn merge_key(&self) -> Option<u64> {
        self.merge
    }

    pub(crate) fn into_parts(self) -> (String, Option<u64>) {
        (self.name, self.merge)
    }
}

impl From<&str> for Title {
    fn from(name: &str) -> Self {
        Title::new(name)
    }
}

impl From<String> for Title {
    fn from(name: String) -> Self {
        Title::new(name)
    }
}

impl From<&String> for Title {
    fn from(name: &String) -> Self {
        Title::new(name.as_str())
    }
}

/// One part of an entry: a memento record (its states are a link of the chain), a command, or
/// a property-diff record (its modifications, encoded in the history's codec).
#[derive(Debug, Clone)]
pub(crate) enum Record<C> {
    Memento,
    Command(C),
    Diff(Box<[u8]>),
}

/// What one undo takes back: one edit, or a group of them.
#[derive(Debug, Clone)]
pub(crate) struct Entry<C> {
    pub(crate) name: Box<str>,
    /// The merge key of an entry made of one edit that may absorb the next one.
    pub(crate) merge: Option<u64>,
    pub(crate) records: Box<[Record<C>]>,
    /// The number of the chain link of the entry's first memento record (if it has one; the
    /// others follow in order).
    pub(crate) first_link: usize,
}

impl<C> Entry<C> {
    /// How many memento records (chain links) the entry has.
    pub(crate) fn links(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::Memento))
            .count()
    }

    /// The chain link of record `index`, if it is a memento record.
    pub(crate) fn link_of(&self, index: usize) -> usize {
        self.first_link
            + self
                .records
                .iter()
                .take(index)
                .filter(|r| matches!(r, Record::Memento))
                .count()
    }

    /// Heap bytes the entry owns, besides its slot in the history's deque and its links.
    pub(crate) fn heap_bytes<T: ?Sized>(&self) -> usize
    where
        C: Command<T>,
    {
        self.name.len()
            + self.records.len() * size_of::<Record<C>>()
            + self
                .records
                .iter()
                .map(|r| match r {
                    Record::Memento => 0,
                    Record::Command(c) => c.heap_size(),
                    Record::Diff(bytes) => bytes.len(),
                })
                .sum::<usize>()
    }

    /// The single command of an entry made of one command, to merge into.
    pub(crate) fn sole_command(&mut self) -> Option<&mut C> {
        match &mut *self.records {
            [Record::Command(c)] => Some(c),
            _ => None,
        }
    }

    /// The modifications of an entry made of one property-diff record, to merge into.
    pub(crate) fn sole_diff(&mut self) -> Option<&mut Box<[u8]>> {
        match &mut *self.records {
            [Record::Diff(bytes)] => Some(bytes),
            _ => None,
        }
    }

    /// Is this an entry of one memento record?
    pub(crate) fn is_sole_memento(&self) -> bool {
        matches!(*self.records, [Record::Memento])
    }
}

/// A record of an open group, states still in full.
pub(super) enum Pending<C> {
    Edit { before: Vec<u8>, after: Vec<u8> },
    Command(C),
    Diff(Vec<Modification>),
}

use super::History;
use super::diff;
use super::line;
use super::observer::Status;
use crate::error::{Error, Result};
use crate::originator::Originator;

impl<T: Originator, C: Command<T>> History<T, C> {
    /// The newest entry, if an edit with merge key `key` may merge into it.
    pub(super) fn mergeable_top(&mut self, key: Option<u64>) -> Option<&mut Entry<C>> {
        let len = self.entries.len();
        if key.is_none() || self.sealed || self.cursor != len || self.saved == Some(len) {
            return None;
        }
        self.entries.back_mut().filter(|top| top.merge == key)
    }

    /// Drops the redo entries, then pushes an entry of `records`.
    pub(super) fn push_entry(
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
    pub(super) fn finish_push(&mut self, was: Status) -> Result<bool> {
        let trimmed = self.trim();
        self.notify(was);
        trimmed.map(|()| true)
    }

    /// Drops entries until the limits hold: the oldest undo entries first, then the farthest
    /// redo entries. The count limit is strict; the byte budget keeps the newest entry and the
    /// entries next to a saved point that comes from a save.
    pub(super) fn trim(&mut self) -> Result<()> {
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
                Some(line::Drop::Front) => self.pop_front()?,
                Some(line::Drop::Back) => self.pop_back()?,
                None => return Ok(()),
            }
        }
    }

    /// Drops the oldest entry (the cursor and the saved marker follow).
    pub(super) fn pop_front(&mut self) -> Result<()> {
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
    pub(super) fn pop_back(&mut self) -> Result<()> {
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

    /// Refuses to move through the history while an edit or a group is open.
    pub(super) fn check_closed(&self, what: &str) -> Result<()> {
        if self.edit.is_some() || self.group.is_some() {
            return Err(Error::rejected(format!(
                "undo history: cannot {what} while an edit or a group is open"
            )));
        }
        Ok(())
    }
}
