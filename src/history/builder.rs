//! [`HistoryBuilder`] and [`MultiHistoryBuilder`]: the limits, codec, conflict rule and
//! observers every history has ([`Settings`]), and each kind's hook.

use std::fmt;
use std::marker::PhantomData;

use super::command::{Command, NoCommand};
use super::diff::{Modification, OnConflict};
use super::hook::{HookFn, Recorded, Verdict};
use super::line;
use super::observer::Observer;
use super::{History, MultiHistory};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// The entry limit of [`History::new`].
pub const DEFAULT_LIMIT: usize = 100;

/// What every history builder sets, and every history starts from.
pub(crate) struct Settings {
    pub(crate) limit: Option<usize>,
    pub(crate) budget: Option<usize>,
    pub(crate) codec: Codec,
    pub(crate) on_conflict: OnConflict,
    pub(crate) observers: Vec<Box<dyn Observer + Send>>,
}

impl Settings {
    /// The defaults: at most [`DEFAULT_LIMIT`] entries, no byte budget, MessagePack (JSON
    /// without the `msgpack` feature), [`OnConflict::Refuse`], no observer.
    fn new() -> Self {
        Settings {
            limit: Some(DEFAULT_LIMIT),
            budget: None,
            codec: line::default_codec(),
            on_conflict: OnConflict::Refuse,
            observers: Vec::new(),
        }
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("limit", &self.limit)
            .field("byte_budget", &self.budget)
            .field("codec", &self.codec)
            .field("on_conflict", &self.on_conflict)
            .field("observers", &self.observers.len())
            .finish()
    }
}

/// Builds a [`History`]: `History::builder().limit(50).byte_budget(8 << 20).build()?`.
///
/// Defaults: at most [`DEFAULT_LIMIT`] entries, no byte budget, the MessagePack codec (JSON
/// when the `msgpack` feature is off), [`OnConflict::Refuse`], no observer, no hook.
#[must_use]
pub struct HistoryBuilder<T: Originator, C = NoCommand> {
    pub(crate) settings: Settings,
    pub(crate) hook: Option<HookFn<T, C>>,
    target: PhantomData<fn(&mut T)>,
}

impl<T: Originator, C: Command<T>> HistoryBuilder<T, C> {
    pub(crate) fn new() -> Self {
        HistoryBuilder {
            settings: Settings::new(),
            hook: None,
            target: PhantomData,
        }
    }

    line::builder_settings!();

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
        check_limits(self.settings.limit, self.settings.budget)?;
        Ok(History::from_builder(self))
    }
}

impl<T: Originator, C> fmt::Debug for HistoryBuilder<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HistoryBuilder")
            .field("settings", &self.settings)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// The hook of a [`MultiHistory`]: the target's id and the edit's modifications.
pub(crate) type MultiHookFn = Box<dyn FnMut(&str, &mut Vec<Modification>) -> Verdict + Send>;

/// Builds a [`MultiHistory`]: `MultiHistory::builder().limit(50).byte_budget(8 << 20).build()?`,
/// with the settings and defaults of a [`HistoryBuilder`]. Its hook sees the id of the target
/// each edit is of, with the edit's modifications.
#[must_use]
pub struct MultiHistoryBuilder {
    pub(crate) settings: Settings,
    pub(crate) hook: Option<MultiHookFn>,
}

impl MultiHistoryBuilder {
    pub(crate) fn new() -> Self {
        MultiHistoryBuilder {
            settings: Settings::new(),
            hook: None,
        }
    }

    line::builder_settings!();

    /// Sets the hook every edit passes through before it is recorded: it sees the target's id
    /// and the edit's modifications, may drop or rewrite single ones (as
    /// [`Recorded::modifications_mut`] says for property-diff edits), and returns
    /// [`Verdict::Drop`] to record nothing.
    pub fn hook(
        mut self,
        hook: impl FnMut(&str, &mut Vec<Modification>) -> Verdict + Send + 'static,
    ) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// The history.
    ///
    /// # Errors
    /// [`Error::Config`] for a limit of 0 entries or a budget of 0 bytes.
    pub fn build(self) -> Result<MultiHistory> {
        check_limits(self.settings.limit, self.settings.budget)?;
        Ok(MultiHistory::from_builder(self))
    }
}

impl fmt::Debug for MultiHistoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiHistoryBuilder")
            .field("settings", &self.settings)
            .field("hook", &self.hook.is_some())
            .finish()
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
