//! Background saves: the handles a game polls ([`SaveHandle`], [`SaveStatus`]), and the
//! manager's methods that queue full saves and deltas on its worker thread
//! ([`worker`](super::worker)), from a snapshot the game captured or from a closure that makes
//! it on the worker.
//!
//! **Deltas build on what was queued before them.** A delta holds what changed since the save
//! before it; if that save or delta failed, the delta would put later changes on a slot that
//! lacks earlier ones. So when a background save or delta to a slot fails, the slot takes no
//! delta until a full save of it lands: the deltas already queued behind the failure, and any
//! made after it, fail with [`Error::FullSaveNeeded`], and the slot loads as it was before
//! the failure.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};

use super::SaveLoadManager;
use super::engine::Engine;
use super::locks::lock;
use super::report::{DeltaReport, SaveReport};
use super::worker::{Job, Kind, Target, Worker};
use crate::error::{Error, Result};
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// Where a background save stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaveStatus {
    /// Waiting for the worker.
    Queued,
    /// Being made, encoded, sealed and written.
    Writing,
    /// Written: on disk, as by [`SaveLoadManager::save`] (or, for a background incremental
    /// save, appended as by [`save_incremental`](SaveLoadManager::save_incremental)).
    Saved,
    /// Failed; [`SaveHandle::wait`] gives the error. The previous save is intact.
    Failed,
    /// A newer save to the same slot replaced this one before it started (a save made with a
    /// closure is then dropped without its closure being run).
    Superseded,
}

#[derive(Debug)]
enum HandleState<R> {
    Queued,
    Writing,
    /// The outcome, until [`SaveHandle::wait`] takes it.
    Finished(Option<Result<R>>),
    Superseded,
}

#[derive(Debug)]
struct Shared<R> {
    /// The state, and whether the handle was dropped.
    state: Mutex<(HandleState<R>, bool)>,
    changed: Condvar,
    /// Errors of saves whose handle was dropped unread, for [`SaveLoadManager::flush`].
    unclaimed: Arc<Mutex<Vec<Error>>>,
}

impl<R> Shared<R> {
    fn set(&self, new: HandleState<R>) {
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
/// its error is kept for [`SaveLoadManager::flush`].
///
/// `R` is what the save reports when it is done: a [`SaveReport`] for a full save (the
/// default), a [`DeltaReport`] for a background incremental save
/// ([`save_incremental_in_background`](SaveLoadManager::save_incremental_in_background)), a
/// [`ChangesReport`](crate::ChangesReport) for a state's
/// ([`save_state_incremental_in_background`](SaveLoadManager::save_state_incremental_in_background)).
#[derive(Debug)]
#[must_use = "a background save's errors are only seen through its handle or flush()"]
pub struct SaveHandle<R = SaveReport> {
    shared: Arc<Shared<R>>,
}

impl<R> SaveHandle<R> {
    fn new(unclaimed: &Arc<Mutex<Vec<Error>>>) -> Self {
        SaveHandle {
            shared: Arc::new(Shared {
                state: Mutex::new((HandleState::Queued, false)),
                changed: Condvar::new(),
                unclaimed: Arc::clone(unclaimed),
            }),
        }
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

    /// Waits for the save and returns what [`SaveLoadManager::save`] (or, for a delta,
    /// [`save_incremental`](SaveLoadManager::save_incremental)) would have.
    ///
    /// # Errors
    /// The save's own error, the same as a [`save`](SaveLoadManager::save) would give; the
    /// error of the closure that was to make the snapshot
    /// ([`save_in_background_with`](SaveLoadManager::save_in_background_with)), and
    /// [`Error::BackgroundPanic`] when it panicked; [`Error::FullSaveNeeded`] for a delta
    /// behind a failed save or delta of its slot; [`Error::Superseded`] when a newer save to
    /// the same slot replaced this one before it started (the newer save's handle has its
    /// outcome).
    pub fn wait(self) -> Result<R> {
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

impl<R> Drop for SaveHandle<R> {
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

/// A job whose outcome goes to a [`SaveHandle`]: what the queue runs.
struct Task<R, F> {
    shared: Arc<Shared<R>>,
    run: F,
}

impl<R, F> Job for Task<R, F>
where
    R: Send + 'static,
    F: FnOnce(&Engine) -> Result<R> + Send + 'static,
{
    fn start(&self) {
        self.shared.set(HandleState::Writing);
    }

    fn run(self: Box<Self>, engine: &Engine) {
        let Task { shared, run } = *self;
        shared.set(HandleState::Finished(Some(guarded(|| run(engine)))));
    }

    fn superseded(self: Box<Self>) {
        self.shared.set(HandleState::Superseded);
    }
}

/// Runs `job`, with a panic in the code it runs (the closure that makes the snapshot, a
/// memento's `Serialize`) turned into [`Error::BackgroundPanic`], so that the worker lives on.
/// What `job` made (a snapshot, a closure's state) is dropped inside the guard too.
fn guarded<R>(job: impl FnOnce() -> Result<R>) -> Result<R> {
    std::panic::catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        Err(Error::BackgroundPanic { message })
    })
}

/// The slots whose journal must not take a delta until a full save lands: a background save or
/// delta to them failed, and the deltas made after it were made on top of it.
#[derive(Debug, Default)]
struct Gaps(Mutex<HashMap<SlotId, String>>);

impl Gaps {
    fn check(&self, slot: SlotId) -> Result<()> {
        match lock(&self.0).get(&slot) {
            Some(reason) => Err(Error::FullSaveNeeded {
                slot,
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn failed(&self, slot: SlotId, what: &str, e: &Error) {
        let reason = format!("a background {what} to it failed ({e}), and deltas build on it");
        lock(&self.0).entry(slot).or_insert(reason);
    }

    fn clear(&self, slot: SlotId) {
        lock(&self.0).remove(&slot);
    }
}

/// The manager's background machinery: its worker, the errors nobody read, and the slots that
/// need a full save before a delta.
#[derive(Debug)]
pub(super) struct Background {
    worker: Worker,
    unclaimed: Arc<Mutex<Vec<Error>>>,
    gaps: Arc<Gaps>,
}

impl Background {
    pub(super) fn new() -> Self {
        Background {
            worker: Worker::new(),
            unclaimed: Arc::default(),
            gaps: Arc::default(),
        }
    }

    /// See [`Worker::supersede`].
    pub(super) fn supersede(&self, slot: SlotId) {
        self.worker.supersede(slot);
    }

    /// See [`Worker::wait_for`].
    pub(super) fn wait_for(&self, slot: SlotId) {
        self.worker.wait_for(slot);
    }

    /// A full save of `slot` landed (made at once, or by the worker): deltas may follow again.
    pub(super) fn saved(&self, slot: SlotId) {
        self.gaps.clear(slot);
    }

    /// Refuses a delta to `slot` while a failed background save or delta lies under it.
    pub(super) fn check_delta(&self, slot: SlotId) -> Result<()> {
        self.gaps.check(slot)
    }

    /// Runs every queued job, then stops the worker.
    pub(super) fn shutdown(&self) {
        self.worker.shutdown();
    }

    fn handle<R>(&self) -> SaveHandle<R> {
        SaveHandle::new(&self.unclaimed)
    }

    /// A handle already finished with `result` (a job that failed before it could be queued).
    pub(super) fn finished<R>(&self, result: Result<R>) -> SaveHandle<R> {
        let handle = self.handle();
        handle.shared.set(HandleState::Finished(Some(result)));
        handle
    }

    /// Queues a full save that `run` makes and writes; `slot_of` says which slot it wrote.
    pub(super) fn full<R: Send + 'static>(
        &self,
        engine: &Arc<Engine>,
        target: Target,
        slot_of: fn(&R) -> SlotId,
        run: impl FnOnce(&Engine) -> Result<R> + Send + 'static,
    ) -> SaveHandle<R> {
        let handle = self.handle();
        let gaps = Arc::clone(&self.gaps);
        let run = move |engine: &Engine| {
            let result = guarded(|| run(engine));
            match (&result, target) {
                (Ok(report), _) => gaps.clear(slot_of(report)),
                (Err(e), Target::Slot(slot)) => gaps.failed(slot, "save", e),
                // The rotation's slot is picked as it is written: no delta follows it.
                (Err(_), Target::Autosave) => {}
            }
            result
        };
        let task = Task {
            shared: Arc::clone(&handle.shared),
            run,
        };
        self.worker
            .submit(engine, target, Kind::Full, Box::new(task));
        handle
    }

    /// Queues a delta to `slot` that `run` makes and appends; it fails at once, unrun, while a
    /// failed save or delta lies under it.
    pub(super) fn delta<R: Send + 'static>(
        &self,
        engine: &Arc<Engine>,
        slot: SlotId,
        run: impl FnOnce(&Engine) -> Result<R> + Send + 'static,
    ) -> SaveHandle<R> {
        let handle = self.handle();
        let gaps = Arc::clone(&self.gaps);
        let run = move |engine: &Engine| {
            gaps.check(slot)?;
            let result = guarded(|| run(engine));
            if let Err(e) = &result {
                gaps.failed(slot, "delta", e);
            }
            result
        };
        let task = Task {
            shared: Arc::clone(&handle.shared),
            run,
        };
        self.worker
            .submit(engine, Target::Slot(slot), Kind::Delta, Box::new(task));
        handle
    }

    /// Waits for every job; returns the errors of those whose handles were dropped unread.
    pub(super) fn flush(&self) -> Vec<Error> {
        self.worker.flush();
        std::mem::take(&mut *lock(&self.unclaimed))
    }
}

fn slot_of_report(report: &SaveReport) -> SlotId {
    report.slot
}

/// A snapshot made by a closure, its panics caught by the job that runs it.
type Make = Box<dyn FnOnce() -> Result<Snapshot> + Send>;

impl SaveLoadManager {
    /// Queues `snapshot` to be saved to `slot` by the manager's worker thread, and returns at
    /// once. Capture the snapshot on the game thread as usual; encoding, sealing and the
    /// fsync'd write happen on the worker.
    ///
    /// Saves queued for one slot are written in order. A save to a slot that already has a
    /// save waiting (not yet started) replaces it: the newest state wins, and the replaced
    /// save's handle reports [`SaveStatus::Superseded`]. [`flush`](Self::flush) waits for
    /// everything queued, and so does dropping the manager. A failed background save leaves
    /// the previous save intact, exactly as [`save`](Self::save) does, and the slot then takes
    /// no delta until a full save lands (see
    /// [`save_incremental_in_background`](Self::save_incremental_in_background)).
    ///
    /// **Where there are no threads** (`wasm32-unknown-unknown`: a browser) this is
    /// synchronous: the save is encoded, sealed and written inside this call, on the calling
    /// thread, and the handle comes back already finished. The frame then pays the whole save,
    /// as for [`save`](Self::save). (A browser game that must not block the page while the
    /// bytes are stored uses the `savegame-web` crate, whose IndexedDB saves are async.)
    pub fn save_in_background(&self, slot: SlotId, snapshot: Snapshot) -> SaveHandle {
        self.background
            .full(&self.engine, Target::Slot(slot), slot_of_report, move |e| {
                e.save(slot, &snapshot)
            })
    }

    /// [`save_in_background`](Self::save_in_background) of a snapshot that `make` builds on
    /// the worker thread: the game thread pays only for what it moves into the closure (a copy
    /// of the game's values, say), and the capture runs beside the game.
    ///
    /// The save is ordered and superseded as `save_in_background`'s is. A save superseded
    /// before it starts is dropped without `make` being run. When `make` returns an error, or
    /// panics ([`Error::BackgroundPanic`]), nothing is written, the handle reports
    /// [`SaveStatus::Failed`] with that error, the previous save is intact, and the worker goes
    /// on with the saves queued after it. `make` must not wait on this manager's background
    /// saves (a [`load`](Self::load) or [`flush`](Self::flush) from inside it never returns).
    /// Where there are no threads, `make` runs and the save is written inside this call.
    ///
    /// ```
    /// use savegame::{SaveLoadManager, SlotId};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let manager = SaveLoadManager::builder().directory(dir.path()).build()?;
    /// let mut snapshot = manager.snapshot();
    /// let score = 1200u32; // a copy of the game's state, moved to the worker
    /// let handle = manager.save_in_background_with(SlotId::Numbered(1), move || {
    ///     snapshot.capture_memento("score", &score)?;
    ///     Ok(snapshot)
    /// });
    /// handle.wait()?;
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn save_in_background_with(
        &self,
        slot: SlotId,
        make: impl FnOnce() -> Result<Snapshot> + Send + 'static,
    ) -> SaveHandle {
        let make: Make = Box::new(make);
        self.background
            .full(&self.engine, Target::Slot(slot), slot_of_report, move |e| {
                e.save(slot, &make()?)
            })
    }

    /// [`autosave`](Self::autosave) on the worker thread: returns at once, like
    /// [`save_in_background`](Self::save_in_background). A newer autosave replaces one that
    /// has not started. Synchronous where there are no threads, as `save_in_background` is.
    pub fn autosave_in_background(&self, snapshot: Snapshot) -> SaveHandle {
        self.background
            .full(&self.engine, Target::Autosave, slot_of_report, move |e| {
                e.autosave(&snapshot)
            })
    }

    /// [`autosave_in_background`](Self::autosave_in_background) of a snapshot that `make`
    /// builds on the worker thread, with the semantics of
    /// [`save_in_background_with`](Self::save_in_background_with): a superseded autosave's
    /// `make` is never run, and its error or panic fails only its own handle.
    pub fn autosave_in_background_with(
        &self,
        make: impl FnOnce() -> Result<Snapshot> + Send + 'static,
    ) -> SaveHandle {
        let make: Make = Box::new(make);
        self.background
            .full(&self.engine, Target::Autosave, slot_of_report, move |e| {
                e.autosave(&make()?)
            })
    }

    /// [`save_incremental`](Self::save_incremental) on the worker thread: returns at once
    /// with a handle whose [`wait`](SaveHandle::wait) gives the [`DeltaReport`]. The game
    /// thread pays only for capturing the changed mementos into `changes` (a capture clones;
    /// the encoding happens on the worker); encoding, sealing, the fsync'd append and any
    /// compaction happen on the worker.
    ///
    /// A queued delta is never replaced by a newer one: deltas accumulate, each appended in
    /// turn, and a background full save queued for the slot after a delta runs after it. A
    /// [`save`](Self::save) made at once supersedes the deltas queued for the slot (its full
    /// state is newer than theirs), and a [`save_incremental`](Self::save_incremental) made at
    /// once waits for them, so that the journal keeps the order the game made its changes in.
    ///
    /// **A failed background save or delta stops the deltas behind it.** Each delta holds
    /// what changed since the save before it, so none is appended over a gap: when a
    /// background save or delta to the slot fails, the deltas queued behind it, and every
    /// delta to the slot made after it (in the background or at once), fail with
    /// [`Error::FullSaveNeeded`] until a full save of the slot lands. The slot loads as it was
    /// before the failure. Synchronous where there are no threads, as `save_in_background` is.
    pub fn save_incremental_in_background(
        &self,
        slot: SlotId,
        changes: Snapshot,
    ) -> SaveHandle<DeltaReport> {
        self.background.delta(&self.engine, slot, move |e| {
            e.save_incremental(slot, &changes)
        })
    }

    /// [`save_incremental_in_background`](Self::save_incremental_in_background) of changes
    /// that `make` builds on the worker thread (from copies of the changed values the game
    /// moved into it), with the ordering and failures of `save_incremental_in_background` and
    /// the closure's errors and panics of
    /// [`save_in_background_with`](Self::save_in_background_with). A delta is never
    /// superseded by another, so `make` runs unless a full save made at once drops it first.
    pub fn save_incremental_in_background_with(
        &self,
        slot: SlotId,
        make: impl FnOnce() -> Result<Snapshot> + Send + 'static,
    ) -> SaveHandle<DeltaReport> {
        let make: Make = Box::new(make);
        self.background.delta(&self.engine, slot, move |e| {
            e.save_incremental(slot, &make()?)
        })
    }

    /// Waits until every background save has been written. Returns the errors of background
    /// saves whose handles were dropped without being waited on (the others are in their
    /// handles), so no failure goes unseen.
    pub fn flush(&self) -> Vec<Error> {
        self.background.flush()
    }
}
