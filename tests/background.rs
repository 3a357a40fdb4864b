//! Background saves: the game thread captures and hands off; a worker thread encodes, seals
//! and writes. Handles report the outcome; a newer save to a queued slot replaces the queued
//! one; saves to one slot land in order; flush() and dropping the manager wait; failures keep
//! the previous save.

mod common;

use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::ThreadId;

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
