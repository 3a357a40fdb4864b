//! Mementos encoded on worker threads while one thread writes the file: [`EncodeAhead`].
//!
//! The mementos to encode are cut into parts. The thread writing the file goes through them in
//! order and encodes each part in place, straight into the file, unless a worker took it
//! first ([`InPlace`], the file's [`Ahead`]). Workers take parts from the end, each into a
//! buffer of its own, which the file then copies. The parts are claimed with one atomic each,
//! so the threads meet wherever the work splits evenly, however late a worker starts. Either
//! way a memento's bytes are what one thread writes, so the file is too.

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use crate::codec::{Codec, Encodable};

/// Mementos that other threads encode while this one writes the file
/// ([`Source::Ahead`](super::Source::Ahead)).
pub(crate) trait Ahead {
    /// Entry `index`: its bytes, once the thread that took it has encoded them (this waits
    /// for it), or the value to encode here, into the file, when no other thread took it.
    fn take(&self, index: usize) -> Ready<'_>;
}

/// What [`Ahead::take`] gives.
pub(crate) enum Ready<'a> {
    /// Encoded on another thread.
    Bytes(&'a [u8]),
    /// To encode here, into the file.
    Here(&'a (dyn Encodable + 'a)),
}

/// How many parts each thread's share of the mementos is cut into: parts are what the threads
/// take in turn, so that one that started late, or has more to do, takes fewer.
const PARTS_PER_THREAD: usize = 4;

/// A part no thread has taken yet.
const FREE: u8 = 0;
/// A part the thread writing the file encodes, in place.
const HERE: u8 = 1;
/// A part a worker thread encodes into a buffer of its own.
const THERE: u8 = 2;

/// The parts of a list of mementos that worker threads may encode while the file is written
/// (see the module's docs). It holds no memento: each thread brings its own list of the same
/// values, so nothing that is not `Sync` need cross a thread.
pub(crate) struct EncodeAhead {
    codec: Codec,
    per_part: usize,
    /// What a worker's buffer for one part starts at: the part's share of the expected file,
    /// or a little over the largest part encoded so far.
    part_capacity: AtomicUsize,
    parts: Vec<Part>,
    /// Set when the file is written (or failed before it reached every part): workers take
    /// no more parts.
    stop: AtomicBool,
}

/// A part of the mementos: who encodes it, and the bytes once a worker has.
struct Part {
    range: Range<usize>,
    taken: AtomicU8,
    /// Set by the worker that took the part: `None` when it failed (the file then encodes the
    /// part itself, and meets the error under the memento's id).
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
    /// `count` mementos cut into parts for `threads` threads (the one writing the file among
    /// them), for a file expected to be about `size_hint` bytes (0: unknown).
    pub(crate) fn new(count: usize, threads: usize, codec: Codec, size_hint: usize) -> Self {
        let parts = (threads * PARTS_PER_THREAD).clamp(1, count.max(1));
        let per_part = count.div_ceil(parts).max(1);
        let parts: Vec<Part> = (0..count)
            .step_by(per_part)
            .map(|start| Part {
                range: start..(start + per_part).min(count),
                taken: AtomicU8::new(FREE),
                done: OnceLock::new(),
            })
            .collect();
        // A little over an equal part, as the parts are alike but not equal.
        let part_capacity = size_hint / parts.len().max(1);
        EncodeAhead {
            codec,
            per_part,
            part_capacity: AtomicUsize::new(part_capacity + part_capacity / 16),
            parts,
            stop: AtomicBool::new(false),
        }
    }

    /// Runs `write` (which writes the file, taking its entries through an [`InPlace`] of this)
    /// on this thread, with `threads - 1` scoped threads running `worker` beside it (each
    /// calls [`work`](Self::work) with its list of the mementos). The workers end with it: no
    /// thread outlives the call. A worker that cannot be started, or panics, leaves its parts
    /// to `write`.
    pub(crate) fn run<T>(
        &self,
        threads: usize,
        worker: impl Fn() + Sync,
        write: impl FnOnce() -> T,
    ) -> T {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (1..threads)
                .filter_map(|_| crate::threads::scoped(scope, "savegame-encode", &worker))
                .collect();
            let written = write();
            self.stop.store(true, Ordering::Relaxed);
            for worker in workers {
                // A worker that panicked left its part to `write`, which encoded it.
                let _ = worker.join();
            }
            written
        })
    }

    /// A worker's work: encodes the parts it can take, from the end, until none is left or
    /// the file is written. `values` are the mementos, in the order of the file's list (its
    /// own list of them, made on this thread).
    pub(crate) fn work(&self, values: &[&dyn Encodable]) {
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
            let share = values
                .get(part.range.clone())
                .and_then(|values| self.encode(values));
            let _ = part.done.set(share);
            drop(unfinished);
        }
    }

    /// `values` encoded one after another; `None` if one fails.
    fn encode(&self, values: &[&dyn Encodable]) -> Option<Share> {
        let mut share = Share {
            bytes: Vec::with_capacity(self.part_capacity.load(Ordering::Relaxed)),
            ends: Vec::with_capacity(values.len()),
        };
        for value in values {
            value.encode_into(self.codec, &mut share.bytes).ok()?;
            share.ends.push(share.bytes.len());
        }
        let len = share.bytes.len();
        self.part_capacity
            .fetch_max(len + len / 16, Ordering::Relaxed);
        Some(share)
    }
}

/// The file's side of an [`EncodeAhead`]: its own list of the mementos.
pub(crate) struct InPlace<'a> {
    values: &'a [&'a dyn Encodable],
    ahead: &'a EncodeAhead,
}

impl<'a> InPlace<'a> {
    /// The file's entries `values` (entry `i` of the file's list is `values[i]`), shared out
    /// by `ahead`.
    pub(crate) fn new(values: &'a [&'a dyn Encodable], ahead: &'a EncodeAhead) -> Self {
        InPlace { values, ahead }
    }
}

impl Ahead for InPlace<'_> {
    fn take(&self, index: usize) -> Ready<'_> {
        let here = Ready::Here(self.values[index]);
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
