//! The hook over recorded edits: [`Recorded`] shows an edit before it is committed, and the
//! hook's [`Verdict`] keeps or drops it (Unity's `Undo.postprocessModifications`).

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

use crate::codec::Codec;
use crate::error::Result;
use crate::originator::Originator;

/// The id that codec errors about a history's states carry.
pub(crate) const ID: &str = "undo history";

/// What a hook decides about a recorded edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Record the edit (with whatever the hook changed in it).
    Keep,
    /// Do not record it. The change it made stays; it is just not undoable.
    Drop,
}

/// An edit about to be recorded, as the history's hook sees it: a memento edit (its before and
/// after states) or a command.
///
/// The hook may rename the edit, rewrite either memento (strip a selection highlight that
/// should not be undone, snap a position), change the command, or drop the edit. A memento
/// edit whose before and after are equal after the hook is not recorded. The hook runs for
/// every edit, inside groups too (where the group's name, not the edit's, names the entry).
///
/// Reading a memento decodes it, and setting one encodes it: a hook that only looks at names
/// costs nothing.
pub struct Recorded<'a, T, C> {
    name: &'a mut String,
    kind: Kind<'a, C>,
    codec: Codec,
    target: PhantomData<fn(&T)>,
}

enum Kind<'a, C> {
    Edit {
        before: &'a mut Vec<u8>,
        after: &'a mut Vec<u8>,
    },
    Command(&'a mut C),
}

impl<'a, T: Originator, C> Recorded<'a, T, C> {
    pub(crate) fn edit(
        name: &'a mut String,
        before: &'a mut Vec<u8>,
        after: &'a mut Vec<u8>,
        codec: Codec,
    ) -> Self {
        Recorded {
            name,
            kind: Kind::Edit { before, after },
            codec,
            target: PhantomData,
        }
    }

    pub(crate) fn command(name: &'a mut String, command: &'a mut C, codec: Codec) -> Self {
        Recorded {
            name,
            kind: Kind::Command(command),
            codec,
            target: PhantomData,
        }
    }

    /// The edit's name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.name
    }

    /// Renames the edit.
    pub fn set_name(&mut self, name: impl Into<String>) {
        *self.name = name.into();
    }

    /// Is this a command (rather than a memento edit)?
    #[must_use]
    pub fn is_command(&self) -> bool {
        matches!(self.kind, Kind::Command(_))
    }

    /// The command, for a command.
    #[must_use]
    pub fn as_command(&self) -> Option<&C> {
        match &self.kind {
            Kind::Command(c) => Some(c),
            Kind::Edit { .. } => None,
        }
    }

    /// The command, to change, for a command.
    pub fn as_command_mut(&mut self) -> Option<&mut C> {
        match &mut self.kind {
            Kind::Command(c) => Some(c),
            Kind::Edit { .. } => None,
        }
    }

    /// The memento from before the edit (decoded now); `None` for a command.
    #[must_use]
    pub fn before(&self) -> Option<Result<T::Memento>> {
        match &self.kind {
            Kind::Edit { before, .. } => Some(self.decode(before)),
            Kind::Command(_) => None,
        }
    }

    /// The memento from after the edit (decoded now); `None` for a command.
    #[must_use]
    pub fn after(&self) -> Option<Result<T::Memento>> {
        match &self.kind {
            Kind::Edit { after, .. } => Some(self.decode(after)),
            Kind::Command(_) => None,
        }
    }

    /// The size of the edit's encoded before and after states (0 for a command).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        match &self.kind {
            Kind::Edit { before, after } => before.len() + after.len(),
            Kind::Command(_) => 0,
        }
    }

    /// Replaces the memento an undo of this edit restores. Returns `Ok(false)`, changing
    /// nothing, for a command.
    ///
    /// # Errors
    /// [`Error::Encode`](crate::Error::Encode) if the history's codec cannot encode it.
    pub fn set_before(&mut self, memento: &T::Memento) -> Result<bool> {
        let codec = self.codec;
        match &mut self.kind {
            Kind::Edit { before, .. } => {
                **before = codec.encode(memento).map_err(|e| e.encoding(ID))?;
                Ok(true)
            }
            Kind::Command(_) => Ok(false),
        }
    }

    /// Replaces the memento a redo of this edit restores. Returns `Ok(false)`, changing nothing,
    /// for a command.
    ///
    /// # Errors
    /// [`Error::Encode`](crate::Error::Encode) if the history's codec cannot encode it.
    pub fn set_after(&mut self, memento: &T::Memento) -> Result<bool> {
        let codec = self.codec;
        match &mut self.kind {
            Kind::Edit { after, .. } => {
                **after = codec.encode(memento).map_err(|e| e.encoding(ID))?;
                Ok(true)
            }
            Kind::Command(_) => Ok(false),
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<T::Memento> {
        self.codec.decode(bytes).map_err(|e| e.decoding(ID))
    }
}

impl<T: Originator, C> fmt::Debug for Recorded<'_, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorded")
            .field("name", &self.name)
            .field("command", &self.is_command())
            .field("encoded_len", &self.encoded_len())
            .finish()
    }
}

/// The hook function a history keeps.
pub(crate) type HookFn<T, C> = Box<dyn FnMut(&mut Recorded<'_, T, C>) -> Verdict + Send>;

/// A history's hook, in a `Mutex` only so that the history is `Sync` (reached with
/// [`Mutex::get_mut`], which never locks).
pub(crate) struct Hook<T, C>(Mutex<Option<HookFn<T, C>>>);

impl<T, C> Hook<T, C> {
    pub(crate) fn new(hook: Option<HookFn<T, C>>) -> Self {
        Hook(Mutex::new(hook))
    }

    pub(crate) fn get(&mut self) -> &mut Option<HookFn<T, C>> {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}
