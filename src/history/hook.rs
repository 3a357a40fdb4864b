//! The hook over recorded edits: [`Recorded`] shows an edit before it is committed, with the
//! list of its [`Modification`]s, and the hook's [`Verdict`] keeps or drops it (Unity's
//! `Undo.postprocessModifications`).

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, PoisonError};

use super::ID;
use super::diff::{self, Modification};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::migrate::Value;
use crate::originator::Originator;

/// What a hook decides about a recorded edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Record the edit (with whatever the hook changed in it).
    Keep,
    /// Do not record it. The change it made stays; it is just not undoable.
    Drop,
}

/// An edit about to be recorded, as the history's hook sees it: a memento edit or a
/// property-diff edit (its before and after states, and the list of its
/// [modifications](Self::modifications)), or a command.
///
/// The hook may rename the edit, drop or rewrite single modifications (strip a selection
/// highlight that should not be undone, snap a position), rewrite either memento, change the
/// command, or drop the edit. An edit left with no change after the hook is not recorded. The
/// hook runs for every edit, inside groups too (where the group's name, not the edit's, names
/// the entry).
///
/// ```
/// use savegame::history::{Recorded, Verdict};
/// # use savegame::{History, Originator};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Default)] struct Cube { scale: f32, selected: bool }
/// # #[derive(Serialize, Deserialize)] struct M { scale: f32, selected: bool }
/// # impl Originator for Cube {
/// #     type Memento = M;
/// #     fn create_memento(&self) -> M { M { scale: self.scale, selected: self.selected } }
/// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> {
/// #         (self.scale, self.selected) = (m.scale, m.selected);
/// #         Ok(())
/// #     }
/// # }
///
/// let mut history = History::<Cube>::builder()
///     .hook(|rec: &mut Recorded<'_, Cube, _>| {
///         // Selecting is never undone: drop that modification, keep the others.
///         if let Ok(mods) = rec.modifications_mut() {
///             mods.retain(|m| m.path() != "/selected");
///         }
///         Verdict::Keep
///     })
///     .build()?;
/// let mut cube = Cube::default();
/// history.diff_edit(&mut cube, "Scale", |c| (c.scale, c.selected) = (2.0, true))?;
/// history.undo(&mut cube)?;
/// assert_eq!((cube.scale, cube.selected), (0.0, true));
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// What a change of the list means:
///
/// - **A property-diff edit** records the list itself. A dropped modification is a change that
///   stays made and is never undone. A rewritten old value is what undo writes back; a
///   rewritten new value is what redo writes (the target keeps what it has now, and undo
///   accepts either value there).
/// - **A memento edit** records its two states: the history writes the list back into them.
///   A dropped modification gets the before state's value in the after state (so neither undo
///   nor redo changes that path, but undo still restores the whole memento, that value
///   included); rewritten values go into the before or after state.
///
/// Reading a memento or the list decodes the states, and changing a memento or the list
/// encodes them again: a hook that only looks at names costs nothing.
pub struct Recorded<'a, T, C> {
    name: &'a mut String,
    kind: Kind<'a, C>,
    codec: Codec,
    /// The list of a memento edit read (not changed) by the hook: computed once, and left out
    /// of the edit's states, which stay as they are.
    read: OnceLock<Vec<Modification>>,
    target: PhantomData<fn(&T)>,
}

enum Kind<'a, C> {
    Edit {
        before: &'a mut Vec<u8>,
        after: &'a mut Vec<u8>,
        /// The list, once computed (a property-diff edit's is computed before the hook).
        mods: &'a mut Option<Vec<Modification>>,
        /// A property-diff edit (rather than a memento edit).
        diff: bool,
        /// The hook asked for the list of a memento edit: its states are rebuilt from it.
        touched: bool,
    },
    Command(&'a mut C, Vec<Modification>),
}

impl<'a, T: Originator, C> Recorded<'a, T, C> {
    pub(crate) fn edit(
        name: &'a mut String,
        before: &'a mut Vec<u8>,
        after: &'a mut Vec<u8>,
        mods: &'a mut Option<Vec<Modification>>,
        diff: bool,
        codec: Codec,
    ) -> Self {
        Recorded {
            name,
            kind: Kind::Edit {
                before,
                after,
                mods,
                diff,
                touched: false,
            },
            codec,
            read: OnceLock::new(),
            target: PhantomData,
        }
    }

    pub(crate) fn command(name: &'a mut String, command: &'a mut C, codec: Codec) -> Self {
        Recorded {
            name,
            kind: Kind::Command(command, Vec::new()),
            codec,
            read: OnceLock::new(),
            target: PhantomData,
        }
    }

    /// Is this a property-diff edit ([`History::diff_edit`](super::History::diff_edit))?
    #[must_use]
    pub fn is_diff(&self) -> bool {
        matches!(self.kind, Kind::Edit { diff: true, .. })
    }

    /// The edit's modifications, to read: every path of the memento's value tree it changed,
    /// with the value before and after. Empty for a command. Computed at the first call (a
    /// memento edit's states are decoded then), and only read: the edit records its states as
    /// they are. To drop or rewrite some, use [`modifications_mut`](Self::modifications_mut).
    ///
    /// # Errors
    /// [`Error::Decode`](crate::Error::Decode) if a state does not decode as a value tree.
    pub fn modifications(&self) -> Result<&[Modification]> {
        match &self.kind {
            Kind::Edit {
                mods: Some(list), ..
            } => Ok(list),
            Kind::Edit { before, after, .. } => {
                if let Some(list) = self.read.get() {
                    return Ok(list);
                }
                let list = diff::diff(
                    &decode_tree(self.codec, before)?,
                    &decode_tree(self.codec, after)?,
                );
                Ok(self.read.get_or_init(|| list))
            }
            Kind::Command(..) => Ok(&[]),
        }
    }

    /// The edit's modifications, to drop ([`Vec::retain`]) or rewrite
    /// ([`Modification::set_after`], [`Modification::set_before`]); see the type's docs for
    /// what a change means. Empty for a command (changes to it are ignored).
    ///
    /// # Errors
    /// [`Error::Decode`](crate::Error::Decode) if a state does not decode as a value tree.
    pub fn modifications_mut(&mut self) -> Result<&mut Vec<Modification>> {
        let codec = self.codec;
        let read = self.read.take();
        match &mut self.kind {
            Kind::Edit {
                before,
                after,
                mods,
                touched,
                ..
            } => {
                if mods.is_none() {
                    **mods = Some(match read {
                        Some(list) => list,
                        None => {
                            diff::diff(&decode_tree(codec, before)?, &decode_tree(codec, after)?)
                        }
                    });
                }
                *touched = true;
                Ok(mods.get_or_insert_with(Vec::new))
            }
            Kind::Command(_, empty) => {
                empty.clear();
                Ok(empty)
            }
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
        matches!(self.kind, Kind::Command(..))
    }

    /// The command, for a command.
    #[must_use]
    pub fn as_command(&self) -> Option<&C> {
        match &self.kind {
            Kind::Command(c, _) => Some(c),
            Kind::Edit { .. } => None,
        }
    }

    /// The command, to change, for a command.
    pub fn as_command_mut(&mut self) -> Option<&mut C> {
        match &mut self.kind {
            Kind::Command(c, _) => Some(c),
            Kind::Edit { .. } => None,
        }
    }

    /// The memento from before the edit (decoded now); `None` for a command.
    #[must_use]
    pub fn before(&self) -> Option<Result<T::Memento>> {
        match &self.kind {
            Kind::Edit { before, .. } => Some(self.decode(before)),
            Kind::Command(..) => None,
        }
    }

    /// The memento from after the edit (decoded now); `None` for a command.
    #[must_use]
    pub fn after(&self) -> Option<Result<T::Memento>> {
        match &self.kind {
            Kind::Edit { after, .. } => Some(self.decode(after)),
            Kind::Command(..) => None,
        }
    }

    /// The size of the edit's encoded before and after states (0 for a command).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        match &self.kind {
            Kind::Edit { before, after, .. } => before.len() + after.len(),
            Kind::Command(..) => 0,
        }
    }

    /// Replaces the memento an undo of this edit restores (for a property-diff edit: the state
    /// its modifications are computed from). The list of modifications is computed again from
    /// the new state, and changes made to it before are lost. Returns `Ok(false)`, changing
    /// nothing, for a command.
    ///
    /// # Errors
    /// [`Error::Encode`](crate::Error::Encode) if the history's codec cannot encode it.
    pub fn set_before(&mut self, memento: &T::Memento) -> Result<bool> {
        self.set_state(memento, false)
    }

    /// Replaces the memento a redo of this edit restores (for a property-diff edit: the state
    /// its modifications are computed from), as [`set_before`](Self::set_before) does.
    ///
    /// # Errors
    /// [`Error::Encode`](crate::Error::Encode) if the history's codec cannot encode it.
    pub fn set_after(&mut self, memento: &T::Memento) -> Result<bool> {
        self.set_state(memento, true)
    }

    fn set_state(&mut self, memento: &T::Memento, after_side: bool) -> Result<bool> {
        let codec = self.codec;
        match &mut self.kind {
            Kind::Edit {
                before,
                after,
                mods,
                touched,
                ..
            } => {
                let bytes = codec.encode(memento).map_err(|e| e.encoding(ID))?;
                if after_side {
                    **after = bytes;
                } else {
                    **before = bytes;
                }
                **mods = None;
                *touched = false;
                Ok(true)
            }
            Kind::Command(..) => Ok(false),
        }
    }

    /// After the hook: a memento edit whose list the hook asked for gets its states rebuilt
    /// from the list.
    pub(crate) fn settle(self) -> Result<()> {
        let codec = self.codec;
        let Kind::Edit {
            before,
            after,
            mods,
            diff: false,
            touched: true,
        } = self.kind
        else {
            return Ok(());
        };
        let Some(list) = mods.as_ref() else {
            return Ok(());
        };
        let mut b = decode_tree(codec, before)?;
        let mut a = b.clone();
        for m in list {
            if !diff::set(&mut b, &m.path, m.old.clone())
                || !diff::set(&mut a, &m.path, m.new.clone())
            {
                return Err(Error::rejected(format!(
                    "undo history: the hook left a modification at {:?} that cannot be written",
                    m.path()
                )));
            }
        }
        *before = reencode::<T>(codec, &b)?;
        *after = reencode::<T>(codec, &a)?;
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<T::Memento> {
        self.codec.decode(bytes).map_err(|e| e.decoding(ID))
    }
}

/// A state as a value tree.
pub(crate) fn decode_tree(codec: Codec, bytes: &[u8]) -> Result<Value> {
    codec.decode(bytes).map_err(|e| e.decoding(ID))
}

/// A value tree as the encoded memento of a `T`: through `T::Memento`, so that the bytes are the
/// ones `T`'s own memento would encode to (JSON writes a float the value tree read from a
/// 32-bit field in its 64-bit form).
pub(crate) fn reencode<T: Originator>(codec: Codec, tree: &Value) -> Result<Vec<u8>> {
    let memento = tree_to_memento::<T>(codec, tree)?;
    codec.encode(&memento).map_err(|e| e.encoding(ID))
}

/// A value tree as a `T::Memento`.
pub(crate) fn tree_to_memento<T: Originator>(codec: Codec, tree: &Value) -> Result<T::Memento> {
    let bytes = codec.encode(tree).map_err(|e| e.encoding(ID))?;
    codec.decode(&bytes).map_err(|e| e.decoding(ID))
}

impl<T: Originator, C> fmt::Debug for Recorded<'_, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorded")
            .field("name", &self.name)
            .field("command", &self.is_command())
            .field("diff", &self.is_diff())
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
