//! The members of a state, listed by reference for a save that encodes them straight from the
//! game's objects.

use std::borrow::Cow;
use std::fmt;

use super::SaveState;
use crate::codec::Encodable;
use crate::error::Result;
use crate::format::EncodeAhead;
use crate::originator::Originator;
use crate::snapshot::check_id;

/// The originators of a [`SaveState`](super::SaveState), by reference and under their ids:
/// what [`SaveState::members`](super::SaveState::members) lists, so that
/// [`save_state`](crate::SaveLoadManager::save_state) can encode each straight from the game's
/// objects ([`Originator::serialize_memento`]) into the file, with no copy of the state.
///
/// ```
/// use savegame::{Members, Originator, SaveState, Snapshot, RestoreReport};
///
/// #[derive(Originator, Default)]
/// struct Clock { turn: u64 }
///
/// // A state implemented by hand that lists its members too.
/// struct Game { clock: Clock }
///
/// impl SaveState for Game {
///     fn capture_state(&self, snapshot: &mut Snapshot) -> savegame::Result<()> {
///         snapshot.capture("clock", &self.clock)
///     }
///     fn restore_state(&mut self, snapshot: &Snapshot) -> savegame::Result<RestoreReport> {
///         snapshot.restore("clock", &mut self.clock)?;
///         Ok(RestoreReport::default())
///     }
///     fn members<'s>(&'s self, members: &mut Members<'s>) -> savegame::Result<bool> {
///         members.originator("clock", &self.clock)?;
///         Ok(true)
///     }
/// }
///
/// # let dir = tempfile::tempdir().unwrap();
/// let manager = savegame::SaveLoadManager::builder().directory(dir.path()).build()?;
/// manager.save_state(savegame::SlotId::Numbered(1), &Game { clock: Clock { turn: 7 } })?;
/// let loaded = manager.load(savegame::SlotId::Numbered(1))?;
/// assert_eq!(loaded.snapshot.memento::<ClockMemento>("clock")?.turn, 7);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Default)]
pub struct Members<'s> {
    list: Vec<Member<'s>>,
}

/// One member: its id, its memento version and the originator.
pub(crate) struct Member<'s> {
    pub(crate) id: Cow<'s, str>,
    pub(crate) version: u32,
    pub(crate) originator: &'s dyn Encodable,
}

impl<'s> Members<'s> {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        Members::default()
    }

    /// Adds `originator` under `id`, at its [`memento_version`](Originator::memento_version).
    /// Listing an id twice keeps the last, as capturing it twice does.
    ///
    /// # Errors
    /// [`Error::InvalidId`](crate::Error::InvalidId) for an empty id or one over 1,024 bytes.
    pub fn originator<O: Originator>(
        &mut self,
        id: impl Into<Cow<'s, str>>,
        originator: &'s O,
    ) -> Result<()> {
        let id = id.into();
        check_id(&id)?;
        self.list.push(Member {
            id,
            version: originator.memento_version(),
            originator,
        });
        Ok(())
    }

    /// How many members are listed (an id listed twice counts twice).
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Is the list empty?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The members in ascending id order, one per id (the last listed), as a file holds them.
    pub(crate) fn into_sorted(mut self) -> Vec<Member<'s>> {
        // A stable sort keeps each id's listings in order: the last of each run wins.
        self.list.sort_by(|a, b| a.id.cmp(&b.id));
        let mut out: Vec<Member<'s>> = Vec::with_capacity(self.list.len());
        for m in self.list {
            match out.last_mut() {
                Some(last) if last.id == m.id => *last = m,
                _ => out.push(m),
            }
        }
        out
    }
}

impl fmt::Debug for Members<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|m| &m.id))
            .finish()
    }
}

/// A worker's work in a [`save_state`](crate::SaveLoadManager::save_state) on many threads:
/// lists `state` again, on this thread, and if its list has the file's `ids` in the same order,
/// encodes the parts of `ahead` it can take. Only `&S` crosses the thread, which is why the
/// state must be `Sync`: the members' references are made here.
pub(crate) fn encode_listed<S: SaveState + Sync + ?Sized>(
    ahead: &EncodeAhead,
    state: &S,
    ids: &[&str],
) {
    let mut members = Members::new();
    if !matches!(state.members(&mut members), Ok(true)) {
        return;
    }
    let list = members.into_sorted();
    let same = list.len() == ids.len() && list.iter().zip(ids).all(|(m, id)| m.id == *id);
    if same {
        let values: Vec<&dyn Encodable> = list.iter().map(|m| m.originator).collect();
        ahead.work(&values);
    }
}
