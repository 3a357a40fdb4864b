//! The background worker: one plain thread, fed by a queue of jobs, each a full save or a
//! delta of one target, type-erased ([`Job`]) so that the queue knows only where a job writes
//! and whether it may be replaced.
//!
//! The queue is a channel with one twist: a full save to a target whose newest queued job is a
//! full save waiting (not yet started) replaces it, since the newest state wins. A delta never
//! replaces anything and is never replaced by another delta: deltas accumulate, and each is
//! appended in turn. Jobs to one target run in the order they were made. The thread starts with
//! the first job and stops when the manager is dropped, after running everything queued. It
//! waits for its jobs as [background work](crate::threads::waiting).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::engine::Engine;
use super::locks::lock;
use crate::slot::SlotId;

/// Where a background job writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Slot(SlotId),
    /// The autosave rotation; the slot is picked when the save is written.
    Autosave,
}

impl Target {
    /// Could a job for this target write `slot`?
    fn may_write(self, slot: SlotId) -> bool {
        match self {
            Target::Slot(s) => s == slot,
            Target::Autosave => matches!(slot, SlotId::Autosave(_)),
        }
    }
}

/// What a job writes: a whole save, or a delta on the slot's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A full save: a newer full save to the same target replaces it while it waits.
    Full,
    /// A delta: never replaced by another job, and never replacing one.
    Delta,
}

/// One job of the queue, its type erased: it reports to its own handle.
pub(super) trait Job: Send {
    /// The worker took it: its handle says it is being written.
    fn start(&self);
    /// Runs it (on the worker, or on the calling thread where there are no threads) and hands
    /// its outcome to its handle. A panic inside is the job's own to catch.
    fn run(self: Box<Self>, engine: &Engine);
    /// A newer job replaced it before it started: it is dropped unrun, and its handle says so.
    fn superseded(self: Box<Self>);
}

struct Queued {
    target: Target,
    kind: Kind,
    job: Box<dyn Job>,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Queued>,
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
        }
    }

    /// Queues `job`. A full save replaces the newest job queued for the same target when that
    /// is a full save that has not started; anything else queues behind every job before it.
    /// Where no thread can be started, the job runs here, before this returns.
    pub(super) fn submit(
        &self,
        engine: &Arc<Engine>,
        target: Target,
        kind: Kind,
        job: Box<dyn Job>,
    ) {
        if !self.ensure_thread(engine) {
            job.start();
            job.run(engine);
            return;
        }
        let mut state = lock(&self.queue.state);
        let newest = state.jobs.iter_mut().rev().find(|q| q.target == target);
        match newest {
            Some(queued) if kind == Kind::Full && queued.kind == Kind::Full => {
                let old = std::mem::replace(&mut queued.job, job);
                old.superseded();
            }
            _ => state.jobs.push_back(Queued { target, kind, job }),
        }
        // Unlocked first, so that the worker, woken, does not find the queue still locked.
        drop(state);
        self.queue.changed.notify_all();
    }

    /// Drops every waiting job that could write `slot` (an autosave's excepted: its slot is
    /// picked when it runs): a full save the game makes now is newer than all of them, and a
    /// delta appended after it would put older changes on a newer base. Then waits for a job
    /// running for `slot` to finish, so that it never lands after the caller's save.
    pub(super) fn supersede(&self, slot: SlotId) {
        let mut state = lock(&self.queue.state);
        let stale = |target: Target| target.may_write(slot) && target != Target::Autosave;
        let mut dropped = Vec::new();
        let mut kept = VecDeque::with_capacity(state.jobs.len());
        for queued in state.jobs.drain(..) {
            if stale(queued.target) {
                dropped.push(queued.job);
            } else {
                kept.push_back(queued);
            }
        }
        state.jobs = kept;
        while state.running.is_some_and(stale) {
            state = self
                .queue
                .changed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        drop(state);
        for job in dropped {
            job.superseded();
        }
    }

    /// Waits until no job that could write `slot` is queued or running.
    pub(super) fn wait_for(&self, slot: SlotId) {
        self.queue.wait_while(|state| {
            state.running.is_some_and(|t| t.may_write(slot))
                || state.jobs.iter().any(|q| q.target.may_write(slot))
        });
    }

    /// Waits until every queued job has run.
    pub(super) fn flush(&self) {
        self.queue
            .wait_while(|state| state.running.is_some() || !state.jobs.is_empty());
    }

    /// Starts the thread if it is not running; `false` if it cannot be started. On
    /// wasm32-unknown-unknown (a browser) std has no threads at all, so none is tried: every
    /// job runs synchronously in [`submit`](Self::submit).
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

    /// Runs everything queued, then stops the thread.
    pub(super) fn shutdown(&self) {
        lock(&self.queue.state).shutdown = true;
        self.queue.changed.notify_all();
        if let Some(thread) = lock(&self.thread).take() {
            // Every job catches the panics of the code it runs; a join error cannot happen.
            let _ = thread.join();
        }
    }
}

/// The worker thread's loop.
fn work(engine: &Arc<Engine>, queue: &Queue) {
    loop {
        // Waking the worker must not preempt the game thread that queued the job.
        let next = crate::threads::waiting(|| {
            let mut state = lock(&queue.state);
            // The job it ran (only the worker sets `running`) is done only now, so that whoever
            // waits for it finds the worker waiting as it does between jobs.
            if state.running.take().is_some() {
                queue.changed.notify_all();
            }
            while state.jobs.is_empty() && !state.shutdown {
                state = queue
                    .changed
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            let queued = state.jobs.pop_front()?;
            state.running = Some(queued.target);
            queued.job.start();
            Some(queued)
        });
        let Some(queued) = next else {
            return;
        };
        queued.job.run(engine);
    }
}
