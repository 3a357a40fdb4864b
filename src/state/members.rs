//! The members of a state, listed by reference for a save that encodes them straight from the
//! game's objects.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::SaveState;
use crate::codec::{Codec, Encodable};
use crate::error::Result;
use crate::format::{Ahead, Ready};
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

/// How many parts each thread's share of the members is cut into: parts are what the threads
/// take in turn, so that one that started late, or has more to do, takes fewer.
const PARTS_PER_THREAD: usize = 4;

/// A part no thread has taken yet.
const FREE: u8 = 0;
/// A part the thread writing the file encodes, in place.
const HERE: u8 = 1;
/// A part a worker thread encodes into a buffer of its own.
const THERE: u8 = 2;

/// The members of a `Sync` state encoded on several threads while one thread writes the file.
/// The list is cut into parts. The thread writing the file goes through them in order and
/// encodes each one in place, into the file, unless a worker took it first
/// ([`InPlace`], its [`Ahead`]). Workers take parts from the end, each into a buffer of its
/// own, which the file then copies. Either way a memento's bytes are what one thread writes,
/// so the file is too.
///
/// Nothing that is not `Sync` crosses a thread: each worker lists the state again for itself
/// ([`SaveState::members`], a walk over references), and encodes only if its list has the ids
/// of the file's, in the same order.
pub(crate) struct EncodeAhead {
    codec: Codec,
    per_part: usize,
    parts: Vec<Part>,
    /// Set when the save is over (or failed before the file reached every part): workers take
    /// no more parts.
    stop: AtomicBool,
}

/// The thread writing the file's side of an [`EncodeAhead`]: the members it lists itself.
pub(crate) struct InPlace<'a> {
    /// Its own list of the members.
    pub(crate) members: &'a [Member<'a>],
    /// The parts it shares with the workers.
    pub(crate) ahead: &'a EncodeAhead,
}

/// A part of the members: who encodes it, and the bytes once a worker has.
struct Part {
    range: Range<usize>,
    taken: AtomicU8,
    /// Set by the worker that took the part: `None` when it failed (the file then encodes the
    /// part itself, and meets the error with its own id).
    done: OnceLock<Option<Share>>,
}

/// A part's mementos encoded one after another, and where each ends.
struct Share {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// Sets a taken part's result to `None` if its worker leaves without one (a panic in a
/// `Serialize` impl), so the thread waiting for it encodes the part itself.
struct Unfinished<'p>(&'p OnceLock<Option<Share>>);

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let _ = self.0.set(None);
    }
}

impl EncodeAhead {
    /// `count` members (as [`Members::into_sorted`] lists them), cut into parts for `threads`
    /// threads (the one writing the file among them).
    pub(crate) fn new(count: usize, threads: usize, codec: Codec) -> Self {
        let parts = (threads * PARTS_PER_THREAD).clamp(1, count.max(1));
        let per_part = count.div_ceil(parts).max(1);
        let parts = (0..count)
            .step_by(per_part)
            .map(|start| Part {
                range: start..(start + per_part).min(count),
                taken: AtomicU8::new(FREE),
                done: OnceLock::new(),
            })
            .collect();
        EncodeAhead {
            codec,
            per_part,
            parts,
            stop: AtomicBool::new(false),
        }
    }

    /// A worker thread's work: lists `state` again and encodes the parts it can take, from the
    /// end, until none is left or the save is over. `ids` are the file's ids, in order.
    pub(crate) fn work<S: SaveState + Sync + ?Sized>(&self, state: &S, ids: &[&str]) {
        let mut members = Members::new();
        if !matches!(state.members(&mut members), Ok(true)) {
            return;
        }
        let list = members.into_sorted();
        let same = list.len() == ids.len() && list.iter().zip(ids).all(|(m, id)| m.id == *id);
        if !same {
            return;
        }
        // The first part is the file's own: it is where the file starts.
        for part in self.parts.iter().skip(1).rev() {
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let taken =
                part.taken
                    .compare_exchange(FREE, THERE, Ordering::AcqRel, Ordering::Acquire);
            if taken.is_err() {
                continue;
            }
            let unfinished = Unfinished(&part.done);
            let share = list
                .get(part.range.clone())
                .and_then(|members| encode(members, self.codec));
            let _ = part.done.set(share);
            drop(unfinished);
        }
    }

    /// Tells the workers to take no more parts.
    pub(crate) fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `members`' mementos encoded one after another; `None` if one fails.
fn encode(members: &[Member<'_>], codec: Codec) -> Option<Share> {
    let mut share = Share {
        bytes: Vec::new(),
        ends: Vec::with_capacity(members.len()),
    };
    for member in members {
        member
            .originator
            .encode_into(codec, &mut share.bytes)
            .ok()?;
        share.ends.push(share.bytes.len());
    }
    Some(share)
}

impl Ahead for InPlace<'_> {
    fn take(&self, index: usize) -> Ready<'_> {
        let here = Ready::Here(self.members[index].originator);
        let Some(part) = self.ahead.parts.get(index / self.ahead.per_part) else {
            return here;
        };
        // The first entry of a part the workers have not taken takes it for this thread.
        match part
            .taken
            .compare_exchange(FREE, HERE, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(HERE) => return here,
            Err(_) => {}
        }
        let Some(share) = part.done.wait() else {
            return here;
        };
        let at = index - part.range.start;
        let start = match at.checked_sub(1) {
            Some(before) => share.ends.get(before).copied(),
            None => Some(0),
        };
        match (start, share.ends.get(at)) {
            (Some(start), Some(&end)) => share.bytes.get(start..end).map_or(here, Ready::Bytes),
            _ => here,
        }
    }
}
