//! The replay recorder's writer: appends sealed batches to the file and makes them durable, on
//! a thread of its own, so a frame that fills a chunk does not wait for an fsync.
//!
//! Batches are handed over through a channel of one, so at most two are in flight (one being
//! written, one waiting) besides the one the recorder gathers: a disk slower than the
//! recording makes the game wait for it at the third, and memory stays bounded. The thread
//! counts the frames it has made durable; a failed append stops it, and every later batch is
//! refused unwritten (after a torn chunk nothing may follow). The recorder learns of a failure
//! at its next hand-over, flush or finish.
//!
//! Where there are no threads (`wasm32-unknown-unknown`), or none can be started, batches are
//! appended on the recorder's thread, as they are handed over.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};

use crate::storage::Storage;

/// One batch to append, and how many frames are durable once it is.
struct Job {
    bytes: Vec<u8>,
    frames: u64,
}

/// The outcome of one job, with its buffer back for the next batch.
struct Ack {
    result: io::Result<()>,
    buffer: Vec<u8>,
}

/// The writer thread's end of things, seen from the recorder.
struct Thread {
    jobs: Option<SyncSender<Job>>,
    acks: Receiver<Ack>,
    in_flight: usize,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// Appends batches to one file of a storage, on a writer thread where there can be one.
pub(super) struct Appender {
    storage: Arc<dyn Storage>,
    name: String,
    /// Frames in batches appended and made durable.
    durable: Arc<AtomicU64>,
    thread: Option<Thread>,
    /// A buffer back from the thread, for the next batch.
    spare: Vec<u8>,
}

impl Appender {
    /// An appender to `name` in `storage`, with a writer thread unless `threaded` is false or
    /// no thread can be started.
    pub(super) fn new(storage: Arc<dyn Storage>, name: &str, threaded: bool) -> Self {
        let durable = Arc::new(AtomicU64::new(0));
        let thread = if threaded && cfg!(not(all(target_arch = "wasm32", target_os = "unknown"))) {
            start(Arc::clone(&storage), name.to_owned(), Arc::clone(&durable))
        } else {
            None
        };
        Appender {
            storage,
            name: name.to_owned(),
            durable,
            thread,
            spare: Vec::new(),
        }
    }

    /// Frames in batches appended and made durable.
    pub(super) fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Hands `batch` over to be appended (leaving an empty buffer in its place); once it is
    /// durable, so are `frames` frames. With a writer thread this returns at once, unless two
    /// batches are already in flight; without one, the append is done here.
    ///
    /// # Errors
    /// The storage's error for this batch (without a thread) or for an earlier one (with one:
    /// that batch, and every one after it, was not written).
    pub(super) fn submit(&mut self, batch: &mut Vec<u8>, frames: u64) -> io::Result<()> {
        let Some(thread) = &mut self.thread else {
            self.storage.append(&self.name, batch)?;
            batch.clear();
            self.durable.store(frames, Ordering::Release);
            return Ok(());
        };
        // Outcomes that are in already: a failure stops the recording before more is sent.
        loop {
            match thread.acks.try_recv() {
                Ok(ack) => settle(thread, &mut self.spare, ack)?,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Err(gone()),
            }
        }
        let bytes = std::mem::replace(batch, std::mem::take(&mut self.spare));
        let Some(jobs) = &thread.jobs else {
            return Err(gone());
        };
        jobs.send(Job { bytes, frames }).map_err(|_| gone())?;
        thread.in_flight += 1;
        Ok(())
    }

    /// Waits until every batch handed over is appended and durable.
    ///
    /// # Errors
    /// The storage's error for the first batch that failed.
    pub(super) fn wait(&mut self) -> io::Result<()> {
        let Some(thread) = &mut self.thread else {
            return Ok(());
        };
        let mut first_error = None;
        while thread.in_flight > 0 {
            let ack = thread.acks.recv().map_err(|_| gone())?;
            if let Err(e) = settle(thread, &mut self.spare, ack) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Appender {
    /// Lets the thread finish what it was given, and waits for it.
    fn drop(&mut self) {
        if let Some(thread) = &mut self.thread {
            thread.jobs = None;
            if let Some(handle) = thread.handle.take() {
                // A writer that panicked (it has no way to) has nothing left to report.
                let _ = handle.join();
            }
        }
    }
}

/// Takes in one outcome: the buffer back for reuse, the error if it failed.
fn settle(thread: &mut Thread, spare: &mut Vec<u8>, ack: Ack) -> io::Result<()> {
    thread.in_flight = thread.in_flight.saturating_sub(1);
    let mut buffer = ack.buffer;
    buffer.clear();
    if buffer.capacity() > spare.capacity() {
        *spare = buffer;
    }
    ack.result
}

fn gone() -> io::Error {
    io::Error::other("the replay's writer thread is gone")
}

/// Starts the writer thread, or `None` when the platform gives none.
fn start(storage: Arc<dyn Storage>, name: String, durable: Arc<AtomicU64>) -> Option<Thread> {
    let (jobs, inbox) = std::sync::mpsc::sync_channel::<Job>(1);
    let (outbox, acks) = std::sync::mpsc::channel::<Ack>();
    let handle = std::thread::Builder::new()
        .name("savegame-replay-writer".into())
        .spawn(move || {
            let mut failed = false;
            // Waking the writer must not preempt the game thread that handed it the frames.
            while let Ok(job) = crate::threads::waiting(|| inbox.recv()) {
                let result = if failed {
                    Err(io::Error::other(
                        "not written: an earlier append of the replay failed",
                    ))
                } else {
                    storage.append(&name, &job.bytes)
                };
                match &result {
                    Ok(()) => durable.store(job.frames, Ordering::Release),
                    Err(_) => failed = true,
                }
                let ack = Ack {
                    result,
                    buffer: job.bytes,
                };
                if outbox.send(ack).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(Thread {
        jobs: Some(jobs),
        acks,
        in_flight: 0,
        handle: Some(handle),
    })
}
