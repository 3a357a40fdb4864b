//! Background saves: the game thread captures and hands off; a worker thread encodes, seals
//! and writes. Handles report the outcome; a newer save to a queued slot replaces the queued
//! one; saves to one slot land in order; flush() and dropping the manager wait; failures keep
//! the previous save.

mod common;

use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::ThreadId;

#[cfg(target_os = "linux")]
use common::scheduling;
use common::{dir_manager, expected_game, game_snapshot, restore_game};
use savegame::storage::{Fault, FaultKind, FaultMode, FsStorage, SimFs};
use savegame::{Error, Originator, SaveLoadManager, SaveStatus, SlotId};
use savegame_testkit::wait;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const A: SlotId = SlotId::Numbered(1);
const B: SlotId = SlotId::Numbered(2);

/// What a memento's `Serialize` does besides writing its value: record its thread, wait at a
/// gate, or panic.
#[derive(Default)]
struct Probe {
    threads: Mutex<Vec<ThreadId>>,
    /// Sends once the worker is inside `Serialize`, then waits until the gate opens.
    entered: Mutex<Option<mpsc::Sender<()>>>,
    open: Mutex<bool>,
    opened: Condvar,
    panic: bool,
}

impl Probe {
    fn gate() -> (Arc<Probe>, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let probe = Probe {
            entered: Mutex::new(Some(tx)),
            ..Probe::default()
        };
        (Arc::new(probe), rx)
    }

    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// A game object whose memento runs a [`Probe`] when it is encoded.
struct Probed {
    value: u32,
    probe: Arc<Probe>,
}

struct ProbedMemento {
    value: u32,
    probe: Option<Arc<Probe>>,
}

impl Serialize for ProbedMemento {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(probe) = &self.probe {
            probe
                .threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            if probe.panic {
                panic!("this memento cannot be written");
            }
            if let Some(tx) = probe.entered.lock().unwrap().take() {
                tx.send(()).unwrap();
                let mut open = probe.open.lock().unwrap();
                while !*open {
                    open = probe.opened.wait(open).unwrap();
                }
            }
        }
        self.value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ProbedMemento {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ProbedMemento {
            value: u32::deserialize(d)?,
            probe: None,
        })
    }
}

impl Originator for Probed {
    type Memento = ProbedMemento;
    fn create_memento(&self) -> ProbedMemento {
        ProbedMemento {
            value: self.value,
            probe: Some(Arc::clone(&self.probe)),
        }
    }
    fn restore_memento(&mut self, m: ProbedMemento) -> savegame::Result<()> {
        self.value = m.value;
        Ok(())
    }
}

fn value_in(manager: &SaveLoadManager, slot: SlotId) -> u32 {
    let loaded = manager.load(slot).unwrap();
    loaded.snapshot.memento::<u32>("probed").unwrap()
}

fn probed(manager: &SaveLoadManager, value: u32, probe: &Arc<Probe>) -> savegame::Snapshot {
    let mut snapshot = manager.snapshot();
    let object = Probed {
        value,
        probe: Arc::clone(probe),
    };
    snapshot.capture("probed", &object).unwrap();
    snapshot
}

/// A save to slot A that is inside the worker, held at its gate until released.
fn hold_the_worker(manager: &SaveLoadManager) -> (Arc<Probe>, savegame::SaveHandle) {
    let (gate, entered) = Probe::gate();
    let handle = manager.save_in_background(A, probed(manager, 1, &gate));
    entered.recv().unwrap();
    assert_eq!(handle.status(), SaveStatus::Writing);
    (gate, handle)
}

#[test]
fn a_background_save_is_encoded_and_written_on_the_worker_thread() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let probe = Arc::new(Probe::default());
    let snapshot = probed(&manager, 42, &probe);
    // Capturing encoded nothing: the memento waits in the snapshot.
    assert!(probe.threads.lock().unwrap().is_empty());

    let handle = manager.save_in_background(A, snapshot);
    let report = handle.wait().unwrap();
    assert_eq!(report.slot, A);
    let threads = probe.threads.lock().unwrap().clone();
    assert_eq!(threads.len(), 1, "encoded exactly once");
    assert_ne!(
        threads[0],
        std::thread::current().id(),
        "encoded on the game thread"
    );
    assert_eq!(value_in(&manager, A), 42);
}

#[test]
fn a_whole_game_saved_in_the_background_loads_in_a_new_manager() {
    let dir = tempfile::tempdir().unwrap();
    {
        let manager = dir_manager(dir.path());
        let handle = manager.save_in_background(A, game_snapshot(&manager, 7, 2_000));
        // Polling never blocks; eventually the save is written.
        wait::until("the background save to finish", || handle.is_finished());
        assert_eq!(handle.status(), SaveStatus::Saved);
        handle.wait().unwrap();
    }
    let loaded = dir_manager(dir.path()).load(A).unwrap();
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(7, 2_000)
    );
}

#[test]
fn a_newer_save_replaces_a_queued_one_and_saves_to_a_slot_land_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let plain = Arc::new(Probe::default());
    let (gate, first) = hold_the_worker(&manager);

    // Slot A's running save cannot be replaced; a second save to A queues behind it.
    let second_a = manager.save_in_background(A, probed(&manager, 2, &plain));
    // Two saves to B while the worker is busy: the newer replaces the older.
    let old_b = manager.save_in_background(B, probed(&manager, 10, &plain));
    let new_b = manager.save_in_background(B, probed(&manager, 11, &plain));
    assert_eq!(old_b.status(), SaveStatus::Superseded);
    assert!(matches!(old_b.wait(), Err(Error::Superseded)));
    assert_eq!(new_b.status(), SaveStatus::Queued);
    assert_eq!(second_a.status(), SaveStatus::Queued);

    gate.release();
    assert_eq!(first.wait().unwrap().generation, 1);
    assert_eq!(second_a.wait().unwrap().generation, 2);
    new_b.wait().unwrap();
    assert_eq!(value_in(&manager, A), 2, "the later save to A landed last");
    assert_eq!(value_in(&manager, B), 11);
    // The superseded state was never written.
    assert_eq!(manager.info(B).unwrap().header.unwrap().generation, 1);
}

#[test]
fn a_save_made_now_supersedes_a_queued_background_save() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let plain = Arc::new(Probe::default());
    let (gate, first) = hold_the_worker(&manager);
    let queued = manager.save_in_background(B, probed(&manager, 20, &plain));
    manager.save(B, &probed(&manager, 21, &plain)).unwrap();
    assert_eq!(queued.status(), SaveStatus::Superseded);
    gate.release();
    first.wait().unwrap();
    assert!(manager.flush().is_empty());
    assert_eq!(
        value_in(&manager, B),
        21,
        "the older queued state never overwrote it"
    );
}

#[test]
fn load_waits_for_a_queued_save_to_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let manager = Arc::new(dir_manager(dir.path()));
    let plain = Arc::new(Probe::default());
    let (gate, first) = hold_the_worker(&manager);
    let queued = manager.save_in_background(B, probed(&manager, 30, &plain));
    let opener = {
        let gate = Arc::clone(&gate);
        std::thread::spawn(move || gate.release())
    };
    // Without waiting, slot B would be empty here.
    assert_eq!(value_in(&manager, B), 30);
    opener.join().unwrap();
    first.wait().unwrap();
    queued.wait().unwrap();
}

#[test]
fn flush_and_dropping_the_manager_wait_for_every_queued_save() {
    let dir = tempfile::tempdir().unwrap();
    let plain = Arc::new(Probe::default());
    {
        let manager = dir_manager(dir.path());
        let (gate, first) = hold_the_worker(&manager);
        let handles: Vec<_> = (3..8)
            .map(|n| manager.save_in_background(SlotId::Numbered(n), probed(&manager, n, &plain)))
            .collect();
        gate.release();
        assert!(manager.flush().is_empty());
        for h in &handles {
            assert_eq!(h.status(), SaveStatus::Saved);
        }
        first.wait().unwrap();
        // Queued and then dropped with the manager: still written.
        for n in 10..15 {
            drop(manager.save_in_background(SlotId::Numbered(n), probed(&manager, n, &plain)));
        }
    }
    let manager = dir_manager(dir.path());
    for n in (3..8).chain(10..15) {
        assert_eq!(value_in(&manager, SlotId::Numbered(n)), n);
    }
}

#[test]
fn a_failed_background_save_keeps_the_previous_save_and_reports_the_error() {
    let fs = SimFs::new();
    let manager = common::sim_manager(&fs);
    let plain = Arc::new(Probe::default());
    manager.save(A, &probed(&manager, 1, &plain)).unwrap();
    let good = fs.files();

    fs.inject(Fault {
        at: fs.op_count(),
        kind: FaultKind::NoSpace,
        mode: FaultMode::FromThenOn,
    });
    let err = manager
        .save_in_background(A, probed(&manager, 2, &plain))
        .wait()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
        "{err}"
    );
    assert_eq!(fs.files(), good, "nothing changed on disk");

    // A failure nobody waits for is kept for flush().
    drop(manager.save_in_background(A, probed(&manager, 3, &plain)));
    let unclaimed = manager.flush();
    assert_eq!(unclaimed.len(), 1);
    assert!(matches!(unclaimed[0], Error::Io { .. }));
    assert!(manager.flush().is_empty(), "reported once");

    fs.clear_faults();
    assert_eq!(value_in(&manager, A), 1);
    let sim = SaveLoadManager::builder()
        .storage(FsStorage::with_file_system(common::SIM_DIR, fs.clone()).unwrap())
        .key(common::key())
        .build()
        .unwrap();
    assert_eq!(value_in(&sim, A), 1);
}

#[test]
fn a_panicking_memento_fails_its_save_and_the_worker_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let bomb = Arc::new(Probe {
        panic: true,
        ..Probe::default()
    });
    let err = manager
        .save_in_background(A, probed(&manager, 1, &bomb))
        .wait()
        .unwrap_err();
    assert!(
        matches!(&err, Error::BackgroundPanic { message } if message.contains("cannot be written")),
        "{err}"
    );
    assert!(!manager.exists(A).unwrap());
    let plain = Arc::new(Probe::default());
    manager
        .save_in_background(A, probed(&manager, 5, &plain))
        .wait()
        .unwrap();
    assert_eq!(value_in(&manager, A), 5);
}

// Saves whose snapshot a closure makes on the worker (`save_in_background_with`).

/// A closure that makes a snapshot of `value` on the worker, and notes that it ran (and on
/// which thread).
fn maker(
    manager: &SaveLoadManager,
    value: u32,
    ran: &Arc<Mutex<Vec<(u32, ThreadId)>>>,
) -> impl FnOnce() -> savegame::Result<savegame::Snapshot> + Send + 'static {
    let mut snapshot = manager.snapshot();
    let ran = Arc::clone(ran);
    move || {
        ran.lock()
            .unwrap()
            .push((value, std::thread::current().id()));
        snapshot.capture_memento("probed", &value)?;
        Ok(snapshot)
    }
}

#[test]
fn a_closure_save_makes_its_snapshot_on_the_worker_and_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let ran = Arc::default();
    let handle = manager.save_in_background_with(A, maker(&manager, 42, &ran));
    assert_eq!(handle.wait().unwrap().slot, A);
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), 1, "made exactly once");
    assert_ne!(
        ran[0].1,
        std::thread::current().id(),
        "made on the game thread"
    );
    assert_eq!(value_in(&manager, A), 42);
}

/// On Linux the worker waits for its jobs as `SCHED_BATCH` (3), so that waking it never
/// preempts the game thread that queued the save, and runs each job as `SCHED_OTHER` (0), so
/// that its own I/O wakes it as any thread's does. It keeps a full share of the CPU: nice 0, or
/// the game's own where an unprivileged process may not lower it.
#[cfg(target_os = "linux")]
#[test]
fn the_worker_waits_as_batch_work_and_runs_its_jobs_as_usual_work() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let (_, game_policy, game_nice) = scheduling("/proc/thread-self/stat");
    assert_eq!(game_policy, 0, "the game thread keeps its own policy");
    let (tx, rx) = mpsc::channel();
    let mut snapshot = manager.snapshot();
    let handle = manager.save_in_background_with(A, move || {
        tx.send(scheduling("/proc/thread-self/stat")).unwrap();
        snapshot.capture_memento("probed", &1u32)?;
        Ok(snapshot)
    });
    handle.wait().unwrap();
    let (worker, policy, nice) = rx.recv().unwrap();
    assert_eq!(policy, 0, "the worker's policy while it runs a job");
    assert!(
        nice == 0 || nice == game_nice,
        "the worker's nice value {nice}"
    );
    // Once every job has run, the worker waits for the next.
    assert!(manager.flush().is_empty());
    let (_, policy, nice) = scheduling(&format!("/proc/self/task/{worker}/stat"));
    assert_eq!(policy, 3, "the waiting worker's policy (SCHED_BATCH is 3)");
    assert!(
        nice == 0 || nice == game_nice,
        "the worker's nice value {nice}"
    );
}

#[test]
fn closure_saves_land_in_order_and_a_superseded_closure_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let ran = Arc::default();
    let (gate, first) = hold_the_worker(&manager);
    let second_a = manager.save_in_background_with(A, maker(&manager, 2, &ran));
    let old_b = manager.save_in_background_with(B, maker(&manager, 10, &ran));
    // A closure save and a snapshot save replace each other alike.
    let new_b = manager.save_in_background(B, probed(&manager, 11, &Arc::default()));
    let newest_b = manager.save_in_background_with(B, maker(&manager, 12, &ran));
    assert!(matches!(old_b.wait(), Err(Error::Superseded)));
    assert!(matches!(new_b.wait(), Err(Error::Superseded)));
    assert_eq!(second_a.status(), SaveStatus::Queued);
    assert!(
        ran.lock().unwrap().is_empty(),
        "nothing made before its turn"
    );

    gate.release();
    assert_eq!(first.wait().unwrap().generation, 1);
    assert_eq!(second_a.wait().unwrap().generation, 2);
    newest_b.wait().unwrap();
    let made: Vec<u32> = ran.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(made, [2, 12], "the superseded closure was dropped unrun");
    assert_eq!(value_in(&manager, A), 2);
    assert_eq!(value_in(&manager, B), 12);
}

#[test]
fn an_error_from_make_fails_its_save_and_keeps_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    manager
        .save(A, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let handle = manager.save_in_background_with(A, || {
        Err(Error::Config {
            reason: "the world is mid-load".into(),
        })
    });
    let err = handle.wait().unwrap_err();
    assert!(
        matches!(&err, Error::Config { reason } if reason.contains("mid-load")),
        "{err}"
    );
    assert_eq!(value_in(&manager, A), 1);
    assert_eq!(manager.info(A).unwrap().header.unwrap().generation, 1);
    // The worker goes on.
    let ran = Arc::default();
    manager
        .save_in_background_with(A, maker(&manager, 3, &ran))
        .wait()
        .unwrap();
    assert_eq!(value_in(&manager, A), 3);
}

#[test]
fn a_panic_in_make_is_a_typed_error_and_the_saves_queued_after_it_land() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let ran = Arc::default();
    manager
        .save_in_background_with(B, maker(&manager, 1, &ran))
        .wait()
        .unwrap();
    let (gate, first) = hold_the_worker(&manager);
    let bomb = manager.save_in_background_with(B, || panic!("no snapshot today"));
    let after = manager.save_in_background_with(SlotId::Numbered(3), maker(&manager, 7, &ran));
    // Dropped unread: its failure goes to flush().
    drop(manager.save_in_background_with(SlotId::Numbered(4), || panic!("nobody looks")));
    gate.release();
    first.wait().unwrap();
    let err = bomb.wait().unwrap_err();
    assert!(
        matches!(&err, Error::BackgroundPanic { message } if message.contains("no snapshot today")),
        "{err}"
    );
    after.wait().unwrap();
    let unclaimed = manager.flush();
    assert!(
        matches!(&unclaimed[..], [Error::BackgroundPanic { .. }]),
        "{unclaimed:?}"
    );
    assert_eq!(value_in(&manager, B), 1, "the previous save is intact");
    assert_eq!(value_in(&manager, SlotId::Numbered(3)), 7);
    assert!(!manager.exists(SlotId::Numbered(4)).unwrap());
}

#[test]
fn a_failed_closure_save_keeps_the_previous_save_and_reports_the_error() {
    let fs = SimFs::new();
    let manager = common::sim_manager(&fs);
    let ran = Arc::default();
    manager
        .save(A, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let good = fs.files();
    for kind in [FaultKind::NoSpace, FaultKind::Io] {
        fs.inject(Fault {
            at: fs.op_count(),
            kind,
            mode: FaultMode::FromThenOn,
        });
        let err = manager
            .save_in_background_with(A, maker(&manager, 2, &ran))
            .wait()
            .unwrap_err();
        assert!(matches!(&err, Error::Io { .. }), "{err}");
        assert_eq!(fs.files(), good, "nothing changed on disk");
        fs.clear_faults();
    }
    // Every op of a save fails once in turn (the fsyncs among them): the old save stays, and
    // a failed save is never what a load returns.
    let start = fs.op_count();
    manager
        .save(A, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let ops = fs.op_count() - start;
    for at in 0..ops {
        fs.inject(Fault {
            at: fs.op_count() + at,
            kind: FaultKind::Io,
            mode: FaultMode::Once,
        });
        let result = manager
            .save_in_background_with(A, maker(&manager, 9, &ran))
            .wait();
        fs.clear_faults();
        let value = value_in(&manager, A);
        match result {
            Ok(_) => assert_eq!(value, 9),
            Err(_) => assert_eq!(value, 1, "op {at} failed, yet its save loads"),
        }
        manager
            .save(A, &probed(&manager, 1, &Arc::default()))
            .unwrap();
    }
}

#[test]
fn a_superseded_background_autosave_closure_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let ran = Arc::default();
    let (gate, first) = hold_the_worker(&manager);
    let old = manager.autosave_in_background_with(maker(&manager, 1, &ran));
    let new = manager.autosave_in_background_with(maker(&manager, 2, &ran));
    assert!(matches!(old.wait(), Err(Error::Superseded)));
    gate.release();
    first.wait().unwrap();
    let report = new.wait().unwrap();
    assert!(matches!(report.slot, SlotId::Autosave(_)));
    let made: Vec<u32> = ran.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(made, [2]);
    assert_eq!(value_in(&manager, report.slot), 2);
}

// Background incremental saves (`save_incremental_in_background`).

/// A manager over `dir` that never compacts, so that deltas keep their sequence numbers.
fn journal_manager(dir: &std::path::Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(savegame::Codec::MessagePack)
        .key(common::key())
        .compact_at(100_000)
        .build()
        .unwrap()
}

/// The same over a simulated file system.
fn sim_journal_manager(fs: &SimFs) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(FsStorage::with_file_system(common::SIM_DIR, fs.clone()).unwrap())
        .codec(savegame::Codec::MessagePack)
        .key(common::key())
        .compact_at(100_000)
        .build()
        .unwrap()
}

/// A delta that sets memento `id` to `value`.
fn change(manager: &SaveLoadManager, id: &str, value: u32) -> savegame::Snapshot {
    let mut changes = manager.snapshot();
    changes.capture_memento(id, &value).unwrap();
    changes
}

fn memento_in(manager: &SaveLoadManager, slot: SlotId, id: &str) -> Option<u32> {
    manager.load(slot).unwrap().snapshot.memento::<u32>(id).ok()
}

#[test]
fn queued_deltas_accumulate_and_a_full_save_queued_after_them_runs_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let manager = journal_manager(dir.path());
    manager
        .save(B, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let (gate, first) = hold_the_worker(&manager);
    let one = manager.save_incremental_in_background(B, change(&manager, "x", 1));
    let two = manager.save_incremental_in_background(B, change(&manager, "y", 2));
    let three = manager.save_incremental_in_background(B, change(&manager, "x", 3));
    assert_eq!(
        one.status(),
        SaveStatus::Queued,
        "a newer delta replaced none"
    );
    gate.release();
    first.wait().unwrap();
    let sequences: Vec<u64> = [one, two, three]
        .into_iter()
        .map(|h| h.wait().unwrap().sequence)
        .collect();
    assert_eq!(sequences, [1, 2, 3]);
    assert_eq!(memento_in(&manager, B, "x"), Some(3));
    assert_eq!(memento_in(&manager, B, "y"), Some(2));

    let (gate, first) = hold_the_worker(&manager);
    let delta = manager.save_incremental_in_background(B, change(&manager, "z", 4));
    let full = manager.save_in_background(B, probed(&manager, 9, &Arc::default()));
    // Only a full save queued last for the slot is replaced; the delta keeps its place.
    let newer_full = manager.save_in_background(B, probed(&manager, 10, &Arc::default()));
    assert!(matches!(full.wait(), Err(Error::Superseded)));
    // A delta queued after the full save is appended to the new base, after it.
    let after = manager.save_incremental_in_background(B, change(&manager, "w", 5));
    gate.release();
    first.wait().unwrap();
    assert_eq!(delta.wait().unwrap().sequence, 4);
    let base = newer_full.wait().unwrap();
    assert_eq!(after.wait().unwrap().sequence, 1);
    assert_eq!(value_in(&manager, B), 10);
    assert_eq!(
        memento_in(&manager, B, "z"),
        None,
        "the full save landed after the delta"
    );
    assert_eq!(memento_in(&manager, B, "w"), Some(5));
    let info = manager.info(B).unwrap();
    assert_eq!(
        (info.header.unwrap().generation, info.deltas),
        (base.generation, 1)
    );
}

#[test]
fn a_save_made_now_supersedes_queued_deltas_and_a_delta_made_now_waits_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let manager = Arc::new(journal_manager(dir.path()));
    manager
        .save(B, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let (gate, first) = hold_the_worker(&manager);
    let queued = manager.save_incremental_in_background(B, change(&manager, "x", 1));
    manager
        .save(B, &probed(&manager, 2, &Arc::default()))
        .unwrap();
    assert!(matches!(queued.wait(), Err(Error::Superseded)));
    let queued = manager.save_incremental_in_background(B, change(&manager, "x", 2));
    let opener = std::thread::spawn(move || gate.release());
    // Made after the queued delta, so appended after it.
    let now = manager
        .save_incremental(B, &change(&manager, "x", 3))
        .unwrap();
    opener.join().unwrap();
    first.wait().unwrap();
    assert_eq!(queued.wait().unwrap().sequence, 1);
    assert_eq!(now.sequence, 2);
    assert_eq!(memento_in(&manager, B, "x"), Some(3));
    assert_eq!(value_in(&manager, B), 2);
}

#[test]
fn a_failed_background_delta_leaves_the_slot_as_it_was_and_no_delta_lands_over_the_gap() {
    let fs = SimFs::new();
    let manager = sim_journal_manager(&fs);
    manager
        .save(B, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    manager
        .save_incremental_in_background(B, change(&manager, "x", 1))
        .wait()
        .unwrap();
    let before = manager.info(B).unwrap();
    let (generation, deltas) = (before.header.unwrap().generation, before.deltas);
    assert_eq!(deltas, 1);

    // The worker is held (on slot A) while a failing delta to B and one behind it are queued.
    let (gate, first) = hold_the_worker(&manager);
    let failing = manager.save_incremental_in_background(B, change(&manager, "x", 2));
    let behind = manager.save_incremental_in_background(B, change(&manager, "y", 3));
    fs.inject(Fault {
        at: fs.op_count(),
        kind: FaultKind::NoSpace,
        mode: FaultMode::FromThenOn,
    });
    gate.release();
    // The held save to A fails too: the disk is full.
    assert!(first.wait().is_err());
    let err = failing.wait().unwrap_err();
    assert!(matches!(&err, Error::Io { .. }), "{err}");
    let err = behind.wait().unwrap_err();
    assert!(
        matches!(&err, Error::FullSaveNeeded { slot, .. } if *slot == B),
        "{err}"
    );
    fs.clear_faults();

    // The slot loads at the generation and delta it had.
    let after = manager.info(B).unwrap();
    assert_eq!(
        (after.header.unwrap().generation, after.deltas),
        (generation, deltas)
    );
    assert_eq!(memento_in(&manager, B, "x"), Some(1));
    assert_eq!(memento_in(&manager, B, "y"), None);
    // Deltas made after the failure, in the background or at once, are refused too.
    let err = manager
        .save_incremental_in_background(B, change(&manager, "x", 4))
        .wait()
        .unwrap_err();
    assert!(matches!(err, Error::FullSaveNeeded { .. }), "{err}");
    let err = manager
        .save_incremental(B, &change(&manager, "x", 4))
        .unwrap_err();
    assert!(matches!(err, Error::FullSaveNeeded { .. }), "{err}");
    assert_eq!(manager.info(B).unwrap().deltas, deltas);

    // A full save closes the gap; deltas land again.
    manager
        .save_in_background(B, probed(&manager, 7, &Arc::default()))
        .wait()
        .unwrap();
    let report = manager
        .save_incremental_in_background(B, change(&manager, "x", 5))
        .wait()
        .unwrap();
    assert_eq!(report.sequence, 1);
    assert_eq!(memento_in(&manager, B, "x"), Some(5));
    assert_eq!(value_in(&manager, B), 7);
}

#[test]
fn a_failed_delta_alone_fails_the_deltas_behind_it_and_a_save_made_now_closes_the_gap() {
    let fs = SimFs::new();
    let manager = sim_journal_manager(&fs);
    manager
        .save(A, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    // A panicking memento fails its own delta, and the slot takes no delta after it.
    let bomb = Arc::new(Probe {
        panic: true,
        ..Probe::default()
    });
    let (gate, first) = hold_the_worker(&manager);
    let bombed = manager.save_incremental_in_background(A, probed(&manager, 5, &bomb));
    let behind = manager.save_incremental_in_background(A, change(&manager, "x", 2));
    // Another slot's delta is not affected.
    manager
        .save(B, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let other = manager.save_incremental_in_background(B, change(&manager, "x", 9));
    gate.release();
    first.wait().unwrap();
    let err = bombed.wait().unwrap_err();
    assert!(matches!(err, Error::BackgroundPanic { .. }), "{err}");
    let err = behind.wait().unwrap_err();
    assert!(matches!(err, Error::FullSaveNeeded { .. }), "{err}");
    other.wait().unwrap();
    assert_eq!(memento_in(&manager, B, "x"), Some(9));
    assert_eq!(memento_in(&manager, A, "x"), None);
    assert_eq!(value_in(&manager, A), 1);

    manager
        .save(A, &probed(&manager, 3, &Arc::default()))
        .unwrap();
    manager
        .save_incremental(A, &change(&manager, "x", 4))
        .unwrap();
    assert_eq!(memento_in(&manager, A, "x"), Some(4));
}

#[test]
fn a_background_delta_to_an_empty_slot_fails_with_slot_empty() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let err = manager
        .save_incremental_in_background(A, change(&manager, "x", 1))
        .wait()
        .unwrap_err();
    assert!(matches!(err, Error::SlotEmpty { .. }), "{err}");
}

#[test]
fn a_closure_delta_is_made_on_the_worker_and_its_error_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let manager = journal_manager(dir.path());
    manager
        .save(A, &probed(&manager, 1, &Arc::default()))
        .unwrap();
    let ran: Arc<Mutex<Vec<(u32, ThreadId)>>> = Arc::default();
    let mut changes = manager.snapshot();
    let noted = Arc::clone(&ran);
    let report = manager
        .save_incremental_in_background_with(A, move || {
            noted.lock().unwrap().push((8, std::thread::current().id()));
            changes.capture_memento("x", &8u32)?;
            Ok(changes)
        })
        .wait()
        .unwrap();
    assert_eq!(report.sequence, 1);
    assert_ne!(ran.lock().unwrap()[0].1, std::thread::current().id());
    assert_eq!(memento_in(&manager, A, "x"), Some(8));

    let err = manager
        .save_incremental_in_background_with(A, || {
            Err(Error::Config {
                reason: "no changes today".into(),
            })
        })
        .wait()
        .unwrap_err();
    assert!(matches!(&err, Error::Config { .. }), "{err}");
    assert_eq!(manager.info(A).unwrap().deltas, 1);
}
