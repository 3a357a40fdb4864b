//! What every undo history of the crate is: one line of entries with a cursor in it, a saved
//! point, limits, a conflict rule and observers. [`History`](super::History) and
//! [`MultiHistory`](super::MultiHistory) both are, and answer the same questions the same way:
//! the accessors, the settings of their builders and the choice of which entry a limit drops
//! are written once, here.
//!
//! A history that uses [`line_accessors!`] has the fields `entries` (a `VecDeque` of entries
//! with a `name: Box<str>`), `cursor`, `saved`, `saved_by_save`, `limit`, `budget`, `codec`,
//! `on_conflict`, `sealed` and `observers`; a builder that uses [`builder_settings!`] has
//! `settings`, a [`Settings`](super::builder::Settings).

/// The accessors of a history's line of entries, for an `impl` block of a history type.
macro_rules! line_accessors {
    () => {
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

        /// How many entries are done: the position in the history, from 0 (everything undone)
        /// to [`len`](Self::len) (nothing to redo). Entries before it can be undone, the rest
        /// redone.
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

        /// The names of all entries, oldest first (a history panel; [`cursor`](Self::cursor)
        /// says which are done).
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
        pub fn status(&self) -> $crate::history::Status {
            $crate::history::Status {
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
        pub fn codec(&self) -> $crate::Codec {
            self.codec
        }

        /// What an undo or redo of a property-diff edit does with a path changed since it was
        /// recorded (see [`OnConflict`](crate::history::OnConflict)).
        #[must_use]
        pub fn on_conflict(&self) -> $crate::history::OnConflict {
            self.on_conflict
        }

        /// Changes the conflict rule of property-diff edits, for the next undos and redos:
        /// after an undo refused with [`Error::UndoConflict`](crate::Error::UndoConflict), a
        /// game that asked the player may undo again with
        /// [`OnConflict::Overwrite`](crate::history::OnConflict::Overwrite) or
        /// [`OnConflict::KeepCurrent`](crate::history::OnConflict::KeepCurrent).
        pub fn set_on_conflict(&mut self, rule: $crate::history::OnConflict) {
            self.on_conflict = rule;
        }

        /// Marks the current position as the saved one: call it after a successful save.
        /// [`is_dirty`](Self::is_dirty) is then false until the history moves away from here.
        pub fn mark_saved(&mut self) {
            let was = self.status();
            self.saved = Some(self.cursor);
            self.saved_by_save = true;
            self.notify(was);
        }

        /// Does what the history edits differ from its last save, as far as the history
        /// knows? False right after [`mark_saved`](Self::mark_saved); true after an edit, an
        /// undo or a redo away from the saved point; false again on coming back to it. When
        /// the entries that lead back to the saved point are dropped (by the limit, or by
        /// recording after undoing past it), the history stays dirty until the next
        /// `mark_saved`. Changes made without recording them are not seen.
        ///
        /// A new history is not dirty: it starts at the state the game had when it was
        /// created.
        #[must_use]
        pub fn is_dirty(&self) -> bool {
            self.saved != Some(self.cursor)
        }

        /// The position ([`cursor`](Self::cursor) value) of the saved point, if it can still
        /// be reached (a history panel marks it).
        #[must_use]
        pub fn saved_index(&self) -> Option<usize> {
            self.saved
        }

        /// Stops merging: the next edit makes a new entry even if its merge key or merge id
        /// matches the newest entry's (call it when a drag recorded frame by frame ends).
        pub fn seal(&mut self) {
            self.sealed = true;
        }

        /// Adds an observer: a closure `FnMut(Event)`, or any type implementing
        /// [`Observer`](crate::history::Observer).
        pub fn add_observer(
            &mut self,
            observer: impl $crate::history::Observer + Send + 'static,
        ) -> $crate::history::ObserverId {
            self.observers.add(Box::new(observer))
        }

        /// Removes an observer; returns whether it was there.
        pub fn remove_observer(&mut self, id: $crate::history::ObserverId) -> bool {
            self.observers.remove(id)
        }

        /// Tells the observers, if the status changed since `was`.
        fn notify(&mut self, was: $crate::history::Status) {
            let now = self.status();
            if now != was {
                self.observers
                    .send($crate::history::Event::Changed { was, now });
            }
        }
    };
}

/// The settings every history builder has, for an `impl` block of a builder type.
macro_rules! builder_settings {
    () => {
        /// Keeps at most `entries` entries: recording one more drops the oldest (never one in
        /// the middle, so undo never skips an entry). Dropping the entry of the saved point
        /// makes the saved point unreachable: the history stays dirty until the next
        /// `mark_saved`.
        pub fn limit(mut self, entries: usize) -> Self {
            self.settings.limit = Some(entries);
            self
        }

        /// Keeps any number of entries (the byte budget, if any, still applies).
        pub fn unlimited(mut self) -> Self {
            self.settings.limit = None;
            self
        }

        /// Keeps the history's memory (its `bytes()`) within `bytes` by dropping the oldest
        /// entries, as Blender's undo memory limit does. The budget is applied when an edit is
        /// recorded (and when it is changed); it never drops the newest entry, nor the entry
        /// that leads back to the saved point of a save (`mark_saved`, or a restored history),
        /// so a history can exceed its budget by one entry, or by the entries recorded since
        /// the last save. (The clean start of a new history is not a save: the budget drops
        /// the entries after it; a count limit bounds a history that is saved once and then
        /// edited for hours.)
        pub fn byte_budget(mut self, bytes: usize) -> Self {
            self.settings.budget = Some(bytes);
            self
        }

        /// The codec the history encodes states with in memory (and in a captured history).
        /// MessagePack is smaller and faster; JSON is readable in a captured history.
        pub fn codec(mut self, codec: $crate::Codec) -> Self {
            self.settings.codec = codec;
            self
        }

        /// What an undo or redo of a property-diff edit does with a recorded path that was
        /// changed since: refuse (the default), keep the later change, or overwrite it. See
        /// [`OnConflict`](crate::history::OnConflict).
        pub fn on_conflict(mut self, rule: $crate::history::OnConflict) -> Self {
            self.settings.on_conflict = rule;
            self
        }

        /// Adds an observer (a closure `FnMut(Event)` or a type implementing
        /// [`Observer`](crate::history::Observer)). It can not be removed later; use the
        /// history's `add_observer` for one that can.
        pub fn observer(
            mut self,
            observer: impl $crate::history::Observer + Send + 'static,
        ) -> Self {
            self.settings.observers.push(Box::new(observer));
            self
        }
    };
}

/// `go_to`, for an `impl` block of a history type with `check_closed`, `run` (one entry,
/// undone or redone, on the target given) and `notify`; `$target: $ty` is how that type takes
/// what it edits (`target: &mut T`, `targets: &mut (impl Targets + ?Sized)`).
macro_rules! line_go_to {
    ($target:ident: $ty:ty) => {
        /// Undoes or redoes entries until [`cursor`](Self::cursor) is `index` (a click in a
        /// history panel; 0 undoes everything). Observers hear once, at the end. Returns
        /// whether the history moved.
        ///
        /// # Errors
        /// [`Error::Rejected`](crate::Error::Rejected) for an index past [`len`](Self::len),
        /// or while an edit or a group is open; otherwise as for [`undo`](Self::undo): the
        /// history stops at the entry that failed, having done the ones before it.
        pub fn go_to(&mut self, $target: $ty, index: usize) -> $crate::Result<bool> {
            if index > self.entries.len() {
                return Err($crate::Error::rejected(format!(
                    "undo history: position {index} is past the end ({})",
                    self.entries.len()
                )));
            }
            if index == self.cursor {
                return Ok(false);
            }
            self.check_closed("move through the history")?;
            let was = self.status();
            let mut result = Ok(true);
            while self.cursor != index {
                let undo = index < self.cursor;
                let entry = if undo { self.cursor - 1 } else { self.cursor };
                if let Err(e) = self.run(entry, $target, undo) {
                    result = Err(e);
                    break;
                }
                if undo {
                    self.cursor -= 1;
                } else {
                    self.cursor += 1;
                }
            }
            self.sealed = true;
            self.notify(was);
            result
        }
    };
}

pub(crate) use {builder_settings, line_accessors, line_go_to};

/// Which end of the line a history over its limits drops an entry from next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drop {
    /// The oldest entry (an undo entry).
    Front,
    /// The farthest redo entry.
    Back,
}

/// What a history with `len` entries, `cursor` of them done, does about its limits: which
/// entry it drops next, or `None` when the limits hold (or only entries the budget keeps are
/// left). The count limit is strict; the byte budget keeps the newest entry and the entries
/// next to a saved point that comes from a save (`saved` with `saved_by_save`).
pub(crate) fn next_drop(
    len: usize,
    cursor: usize,
    saved: Option<usize>,
    saved_by_save: bool,
    over_count: bool,
    over_budget: bool,
) -> Option<Drop> {
    let over_budget = over_budget && len > 1;
    if !over_count && !over_budget {
        return None;
    }
    let keeps = |at: usize| saved_by_save && saved == Some(at);
    if cursor > 0 && (over_count || !keeps(0)) {
        Some(Drop::Front)
    } else if cursor < len && (over_count || !keeps(len)) {
        Some(Drop::Back)
    } else {
        None
    }
}

/// MessagePack when it is built in, JSON otherwise.
pub(crate) const fn default_codec() -> crate::codec::Codec {
    if cfg!(feature = "msgpack") {
        crate::codec::Codec::MessagePack
    } else {
        crate::codec::Codec::Json
    }
}
