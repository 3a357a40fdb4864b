//! The sync's worker thread: syncs after saves and syncs asked for in the background, off the
//! game thread, one at a time.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::Inner;
use super::report::SyncReport;
use savegame::slot::SlotId;
use savegame::{Error, Result};

/// One piece of work: a sync of one slot or of all, and where its report goes.
struct Job {
    only: Option<SlotId>,
    reply: Option<Sender<Result<SyncReport>>>,
}

/// A sync running on the worker thread ([`CloudSync::sync_in_background`](super::CloudSync::sync_in_background)).
#[derive(Debug)]
pub struct SyncHandle {
    reply: Receiver<Result<SyncReport>>,
}

impl SyncHandle {
    /// Waits for the sync and returns its report.
    ///
    /// # Errors
    /// As for [`CloudSync::sync`](super::CloudSync::sync); [`Error::Config`] when the worker
    /// thread is gone.
    pub fn wait(self) -> Result<SyncReport> {
        self.reply.recv().unwrap_or_else(|_| Err(gone()))
    }

    /// The report, if the sync has finished; `None` while it runs.
    pub fn try_wait(&self) -> Option<Result<SyncReport>> {
        match self.reply.try_recv() {
            Ok(done) => Some(done),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => Some(Err(gone())),
        }
    }
}

fn gone() -> Error {
    Error::Config {
        reason: "the cloud sync's worker thread is gone".into(),
    }
}

/// What the game thread and the worker thread share besides the jobs.
#[derive(Debug, Default)]
struct Shared {
    /// Reports of syncs after saves, not yet taken.
    reports: Mutex<Vec<Result<SyncReport>>>,
    /// Jobs queued or running.
    pending: Mutex<usize>,
    idle: Condvar,
}

#[derive(Debug)]
pub(super) struct Worker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("only", &self.only).finish()
    }
}

impl Worker {
    pub(super) fn start(inner: Arc<Inner>) -> Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("savegame-cloud-sync".into())
                .spawn(move || {
                    for job in queue {
                        let report = inner.sync(job.only);
                        match job.reply {
                            Some(reply) => {
                                let _ = reply.send(report);
                            }
                            None => shared
                                .reports
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(report),
                        }
                        let mut pending = shared
                            .pending
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner);
                        *pending = pending.saturating_sub(1);
                        shared.idle.notify_all();
                    }
                })
                .map_err(|e| Error::Config {
                    reason: format!("could not start the cloud sync's thread: {e}"),
                })?
        };
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
            shared,
        })
    }

    fn send(&self, job: Job) -> bool {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        if sent {
            *pending += 1;
        }
        sent
    }

    /// Queues a sync whose report goes to the kept reports.
    pub(super) fn queue(&self, only: Option<SlotId>) {
        if !self.send(Job { only, reply: None }) {
            self.shared
                .reports
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Err(gone()));
        }
    }

    /// Queues a sync of every slot whose report goes to the handle.
    pub(super) fn run(&self) -> SyncHandle {
        let (reply, handle) = mpsc::channel();
        let job = Job {
            only: None,
            reply: Some(reply.clone()),
        };
        if !self.send(job) {
            let _ = reply.send(Err(gone()));
        }
        SyncHandle { reply: handle }
    }

    pub(super) fn take_reports(&self) -> Vec<Result<SyncReport>> {
        std::mem::take(
            &mut *self
                .shared
                .reports
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    pub(super) fn wait_idle(&self) {
        let mut pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *pending > 0 {
            pending = self
                .shared
                .idle
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Worker {
    /// Lets the queued syncs finish, then ends the thread.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
