//! [`HistoryBuilder`]: limits, codec, observers and hook of a new history.

use std::fmt;
use std::marker::PhantomData;

use super::History;
use super::command::{Command, NoCommand};
use super::diff::OnConflict;
use super::hook::{HookFn, Recorded, Verdict};
use super::observer::Observer;
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// The entry limit of [`History::new`].
pub const DEFAULT_LIMIT: usize = 100;

/// Builds a [`History`]: `History::builder().limit(50).byte_budget(8 << 20).build()?`.
///
/// Defaults: at most [`DEFAULT_LIMIT`] entries, no byte budget, the MessagePack codec (JSON
/// when the `msgpack` feature is off), [`OnConflict::Refuse`], no observer, no hook.
#[must_use]
pub struct HistoryBuilder<T: Originator, C = NoCommand> {
    pub(crate) limit: Option<usize>,
    pub(crate) budget: Option<usize>,
    pub(crate) codec: Codec,
    pub(crate) on_conflict: OnConflict,
    pub(crate) observers: Vec<Box<dyn Observer + Send>>,
    pub(crate) hook: Option<HookFn<T, C>>,
    target: PhantomData<fn(&mut T)>,
}

impl<T: Originator, C: Command<T>> HistoryBuilder<T, C> {
    pub(crate) fn new() -> Self {
        HistoryBuilder {
            limit: Some(DEFAULT_LIMIT),
            budget: None,
            codec: default_codec(),
            on_conflict: OnConflict::Refuse,
            observers: Vec::new(),
            hook: None,
            target: PhantomData,
        }
    }

    /// Keeps at most `entries` entries: recording one more drops the oldest (never one in the
    /// middle, so undo never skips an entry). Dropping the entry of the saved point makes the
    /// saved point unreachable: the history stays dirty until the next
    /// [`mark_saved`](History::mark_saved).
    pub fn limit(mut self, entries: usize) -> Self {
        self.limit = Some(entries);
        self
    }

    /// Keeps any number of entries (the byte budget, if any, still applies).
    pub fn unlimited(mut self) -> Self {
        self.limit = None;
        self
    }

    /// Keeps the history's memory ([`History::bytes`]) within `bytes` by dropping the oldest
    /// entries, as Blender's undo memory limit does. The budget is applied when an edit is
    /// recorded (and when it is changed); it never drops the newest entry, nor the entry that
    /// leads back to the saved point of a save ([`History::mark_saved`], or a restored
    /// history), so a history can exceed its budget by one entry, or by the entries recorded
    /// since the last save. (The clean start of a new history is not a save: the budget drops
    /// the entries after it; a count limit bounds a history that is saved once and then edited
    /// for hours.) The history holds one state in full, so a budget
    /// below the size of one encoded memento keeps a single entry. Undo and redo move the full
    /// state to another point of the history without dropping anything: if older states are
    /// larger than the newest, the memory held follows.
    pub fn byte_budget(mut self, bytes: usize) -> Self {
        self.budget = Some(bytes);
        self
    }

    /// The codec the history encodes states with in memory (and in a captured history).
    /// MessagePack is smaller and faster; JSON is readable in a captured history.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// What an undo or redo of a property-diff edit
    /// ([`History::diff_edit`]) does with a recorded path that was changed since: refuse
    /// (the default), keep the later change, or overwrite it. See [`OnConflict`].
    pub fn on_conflict(mut self, rule: OnConflict) -> Self {
        self.on_conflict = rule;
        self
    }

    /// Adds an observer (a closure `FnMut(Event)` or a type implementing [`Observer`]). It can
    /// not be removed later; use [`History::add_observer`] for one that can.
    ///
    /// [`Event`]: super::Event
    pub fn observer(mut self, observer: impl Observer + Send + 'static) -> Self {
        self.observers.push(Box::new(observer));
        self
    }

    /// Sets the hook every edit passes through before it is recorded (see [`Recorded`]).
    pub fn hook(
        mut self,
        hook: impl FnMut(&mut Recorded<'_, T, C>) -> Verdict + Send + 'static,
    ) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// The history.
    ///
    /// # Errors
    /// [`Error::Config`] for a limit of 0 entries or a budget of 0 bytes.
    pub fn build(self) -> Result<History<T, C>> {
        check_limits(self.limit, self.budget)?;
        Ok(History::from_builder(self))
    }
}

impl<T: Originator, C> fmt::Debug for HistoryBuilder<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HistoryBuilder")
            .field("limit", &self.limit)
            .field("byte_budget", &self.budget)
            .field("codec", &self.codec)
            .field("on_conflict", &self.on_conflict)
            .field("observers", &self.observers.len())
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// MessagePack when it is built in, JSON otherwise.
pub(crate) const fn default_codec() -> Codec {
    if cfg!(feature = "msgpack") {
        Codec::MessagePack
    } else {
        Codec::Json
    }
}

/// Refuses limits that would keep nothing.
pub(crate) fn check_limits(limit: Option<usize>, budget: Option<usize>) -> Result<()> {
    if limit == Some(0) {
        return Err(Error::Config {
            reason: "an undo history's entry limit must be at least 1".into(),
        });
    }
    if budget == Some(0) {
        return Err(Error::Config {
            reason: "an undo history's byte budget must be at least 1 byte".into(),
        });
    }
    Ok(())
}
