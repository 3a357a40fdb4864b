//! Background saves: one plain worker thread, fed by a queue, that encodes, seals and writes
//! the snapshots the game thread captured.
//!
//! The queue is a channel with one twist: a save to a target that already has a save waiting
//! (not yet started) replaces it, since the newest state wins. Saves to one target are written
//! in the order they were made. The thread starts with the first background save and stops when
//! the manager is dropped, after writing everything queued.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::engine::Engine;
use super::locks::lock;
use super::report::SaveReport;
use crate::error::{Error, Result};
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// Where a background save goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Slot(SlotId),
    /// The autosave rotation; the slot is picked when the save is written.
    Autosave,
}

impl Target {
    /// Could a save to this target write `slot`?
    fn may_write(self, slot: SlotId) -> bool {
        match self {
            Target::Slot(s) => s == slot,
            Target::Autosave => matches!(slot, SlotId::Autosave(_)),
        }
    }
}

/// Where a background save stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaveStatus {
    /// Waiting for the worker.
    Queued,
    /// Being encoded, sealed and written.
    Writing,
    /// Written: on disk, as by [`SaveLoadManager::save`](crate::SaveLoadManager::save).
    Saved,
    /// Failed; [`SaveHandle::wait`] gives the error. The previous save is intact.
    Failed,
    /// A newer save to the same slot replaced this one before it started.
    Superseded,
}

#[derive(Debug)]
enum HandleState {
    Queued,
    Writing,
    /// The outcome, until [`SaveHandle::wait`] takes it.
    Finished(Option<Result<SaveReport>>),
    Superseded,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<(HandleState, bool)>,
    changed: Condvar,
    /// Errors of saves whose handle was dropped unread, for [`Worker::flush`].
    unclaimed: Arc<Mutex<Vec<Error>>>,
}

impl Shared {
    fn set(&self, new: HandleState) {
        let mut state = lock(&self.state);
        let abandoned = state.1;
        match new {
            HandleState::Finished(Some(Err(e))) if abandoned => {
                lock(&self.unclaimed).push(e);
                state.0 = HandleState::Finished(None);
            }
            other => state.0 = other,
        }
        self.changed.notify_all();
    }
}

/// A save running in the background: poll it with [`status`](Self::status), or block on it
/// with [`wait`](Self::wait). Dropping it does not cancel the save; if that save then fails,
/// its error is kept for [`SaveLoadManager::flush`](crate::SaveLoadManager::flush).
#[derive(Debug)]
#[must_use = "a background save's errors are only seen through its handle or flush()"]
pub struct SaveHandle {
    shared: Arc<Shared>,
}

impl SaveHandle {
    fn new(unclaimed: &Arc<Mutex<Vec<Error>>>) -> Self {
        SaveHandle {
            shared: Arc::new(Shared {
                state: Mutex::new((HandleState::Queued, false)),
                changed: Condvar::new(),
                unclaimed: Arc::clone(unclaimed),
            }),
        }
    }

    /// A handle whose save already finished (when no worker thread could be started, the save
    /// ran on the calling thread).
    fn finished(unclaimed: &Arc<Mutex<Vec<Error>>>, result: Result<SaveReport>) -> Self {
        let handle = Self::new(unclaimed);
        handle.shared.set(HandleState::Finished(Some(result)));
        handle
    }

    /// Where the save stands, without waiting.
    #[must_use]
    pub fn status(&self) -> SaveStatus {
        match &lock(&self.shared.state).0 {
            HandleState::Queued => SaveStatus::Queued,
            HandleState::Writing => SaveStatus::Writing,
            HandleState::Finished(Some(Err(_))) => SaveStatus::Failed,
            HandleState::Finished(_) => SaveStatus::Saved,
            HandleState::Superseded => SaveStatus::Superseded,
        }
    }

    /// Has the save finished (saved, failed or superseded)?
    #[must_use]
    pub fn is_finished(&self) -> bool {
        !matches!(self.status(), SaveStatus::Queued | SaveStatus::Writing)
    }

    /// Waits for the save and returns what [`SaveLoadManager::save`](crate::SaveLoadManager::save)
    /// would have.
    ///
    /// # Errors
    /// The save's own error, the same as a [`save`](crate::SaveLoadManager::save) would give;
    /// [`Error::Superseded`] when a newer save to the same slot replaced this one before it
    /// started (the newer save's handle has its outcome).
    pub fn wait(self) -> Result<SaveReport> {
        let mut state = lock(&self.shared.state);
        loop {
            match &mut state.0 {
                HandleState::Queued | HandleState::Writing => {
                    state = self
                        .shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                HandleState::Finished(outcome) => {
                    return outcome.take().unwrap_or(Err(Error::Superseded));
                }
                HandleState::Superseded => return Err(Error::Superseded),
            }
        }
    }
}

impl Drop for SaveHandle {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        state.1 = true;
        if let HandleState::Finished(outcome) = &mut state.0
            && let Some(Err(e)) = outcome.take()
        {
            lock(&self.shared.unclaimed).push(e);
        }
    }
}

struct Job {
    target: Target,
    snapshot: Snapshot,
    handle: Arc<Shared>,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Job>,
    running: Option<Target>,
    shutdown: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

impl Queue {
    fn wait_while(&self, mut busy: impl FnMut(&QueueState) -> bool) {
        let mut state = lock(&self.state);
        while busy(&state) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// The worker thread and its queue.
pub(super) struct Worker {
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
    unclaimed: Arc<Mutex<Vec<Error>>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.queue.state);
        f.debug_struct("Worker")
            .field("queued", &state.jobs.len())
            .field("running", &state.running)
            .finish()
    }
}

impl Worker {
    pub(super) fn new() -> Self {
        Worker {
            queue: Arc::default(),
            thread: Mutex::new(None),
            unclaimed: Arc::default(),
        }
    }

    /// Queues a save; a save waiting for the same target is replaced.
    pub(super) fn submit(
        &self,
        engine: &Arc<Engine>,
        target: Target,
        snapshot: Snapshot,
    ) -> SaveHandle {
        if !self.ensure_thread(engine) {
            // No thread could be started: save here rather than not at all.
            let result = run(engine, target, &snapshot);
            return SaveHandle::finished(&self.unclaimed, result);
        }
        let handle = SaveHandle::new(&self.unclaimed);
        let mut state = lock(&self.queue.state);
        if let Some(job) = state.jobs.iter_mut().find(|j| j.target == target) {
            job.handle.set(HandleState::Superseded);
            job.snapshot = snapshot;
            job.handle = Arc::clone(&handle.shared);
        } else {
            state.jobs.push_back(Job {
                target,
                snapshot,
                handle: Arc::clone(&handle.shared),
            });
        }
        self.queue.changed.notify_all();
        handle
    }

    /// Drops a waiting save that could write `slot`: a save the game makes now is newer.
    pub(super) fn supersede(&self, slot: SlotId) {
        let mut state = lock(&self.queue.state);
        state.jobs.retain(|job| {
            let stale = job.target.may_write(slot) && job.target != Target::Autosave;
            if stale {
                job.handle.set(HandleState::Superseded);
            }
            !stale
        });
    }

    /// Waits until no save that could write `slot` is queued or running.
    pub(super) fn wait_for(&self, slot: SlotId) {
        self.queue.wait_while(|state| {
            state.running.is_some_and(|t| t.may_write(slot))
                || state.jobs.iter().any(|j| j.target.may_write(slot))
        });
    }

    /// Waits until every queued save is written; returns the errors of those whose handles
    /// were dropped unread.
    pub(super) fn flush(&self) -> Vec<Error> {
        self.queue
            .wait_while(|state| state.running.is_some() || !state.jobs.is_empty());
        std::mem::take(&mut *lock(&self.unclaimed))
    }

    /// Starts the thread if it is not running; `false` if it cannot be started. On
    /// wasm32-unknown-unknown (a browser) std has no threads at all, so none is tried: every
    /// background save runs synchronously in [`submit`](Self::submit).
    fn ensure_thread(&self, engine: &Arc<Engine>) -> bool {
        if cfg!(all(target_arch = "wasm32", target_os = "unknown")) {
            return false;
        }
        let mut thread = lock(&self.thread);
        if thread.is_some() {
            return true;
        }
        let (engine, queue) = (Arc::clone(engine), Arc::clone(&self.queue));
        match std::thread::Builder::new()
            .name("savegame-worker".into())
            .spawn(move || work(&engine, &queue))
        {
            Ok(handle) => {
                *thread = Some(handle);
                true
            }
            Err(_) => false,
        }
    }

    /// Writes everything queued, then stops the thread.
    pub(super) fn shutdown(&self) {
        lock(&self.queue.state).shutdown = true;
        self.queue.changed.notify_all();
        if let Some(thread) = lock(&self.thread).take() {
            // The worker catches panics from the saves it runs; a join error cannot happen.
            let _ = thread.join();
        }
    }
}

/// The worker thread's loop.
fn work(engine: &Arc<Engine>, queue: &Queue) {
    loop {
        let job = {
            let mut state = lock(&queue.state);
            while state.jobs.is_empty() && !state.shutdown {
                state = queue
                    .changed
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            let Some(job) = state.jobs.pop_front() else {
                return;
            };
            state.running = Some(job.target);
            job.handle.set(HandleState::Writing);
            job
        };
        let Job {
            target,
            snapshot,
            handle,
        } = job;
        let result = run(engine, target, &snapshot);
        drop(snapshot);
        let mut state = lock(&queue.state);
        state.running = None;
        handle.set(HandleState::Finished(Some(result)));
        queue.changed.notify_all();
    }
}

/// One save, with a panic in user code (a memento's `Serialize`) turned into an error.
fn run(engine: &Engine, target: Target, snapshot: &Snapshot) -> Result<SaveReport> {
    let save = AssertUnwindSafe(|| match target {
        Target::Slot(slot) => engine.save(slot, snapshot),
        Target::Autosave => engine.autosave(snapshot),
    });
    std::panic::catch_unwind(save).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        Err(Error::BackgroundPanic { message })
    })
}
