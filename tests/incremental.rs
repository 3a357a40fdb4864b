//! Incremental saves: only the changed mementos go to the slot's journal as a delta; a load
//! gives the base plus every delta in order; the journal is compacted into a new base once it
//! outgrows its share; a delta for another base is refused; a torn or damaged delta is
//! detected and dropped; a crash during an append or a compaction (every crash point, over
//! SimFs) leaves the last complete state.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::game::{DirtyWorld, Entity, Rng};
use common::{SIM_DIR, key};
use savegame::storage::{FsStorage, SimFs, Storage};
use savegame::{Error, SaveLoadManager, SlotId};

const SLOT: SlotId = SlotId::Numbered(4);
const ENTITIES: usize = 2_000;

fn manager_in(storage: impl Storage, compact_at: u32) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(storage)
        .key(key())
        .compact_at(compact_at)
        .build()
        .unwrap()
}

fn dir_manager(dir: &Path, compact_at: u32) -> SaveLoadManager {
    manager_in(FsStorage::new(dir).unwrap(), compact_at)
}

fn full_save(manager: &SaveLoadManager, world: &mut DirtyWorld) {
    let mut snapshot = manager.snapshot().with_label("base");
    world.capture_all(&mut snapshot).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    world.saved();
}

fn delta(manager: &SaveLoadManager, world: &mut DirtyWorld, label: &str) -> savegame::DeltaReport {
    let mut changes = manager.snapshot().with_label(label);
    world.capture_changes(&mut changes).unwrap();
    let report = manager.save_incremental(SLOT, &changes).unwrap();
    world.saved();
    report
}

fn loaded_entities(manager: &SaveLoadManager) -> BTreeMap<u32, Entity> {
    DirtyWorld::restore(&manager.load(SLOT).unwrap().snapshot).unwrap()
}

fn journal_path(manager: &SaveLoadManager) -> std::path::PathBuf {
    let primary = manager.path_of(SLOT);
    primary.with_file_name(format!("{}.journal", SLOT.file_name()))
}

#[test]
fn a_load_gives_the_base_plus_every_delta_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 1_000);
    let mut world = DirtyWorld::generate(ENTITIES, 1);
    let mut rng = Rng::new(2);
    full_save(&manager, &mut world);
    let base_size = std::fs::metadata(manager.path_of(SLOT)).unwrap().len();

    for n in 1..=3u64 {
        // 1% of the entities change; a few die and a few are born.
        world.play(&mut rng, ENTITIES / 100, 3, 2);
        let changed = world.dirty.len();
        let report = delta(&manager, &mut world, &format!("turn {n}"));
        assert_eq!(report.sequence, n);
        assert!(report.compacted.is_none());
        assert!(
            report.bytes < base_size / 20,
            "a delta of {changed} entities is {} bytes, against a {base_size}-byte base",
            report.bytes
        );
    }
    // A new manager (a restarted game) sees the same state.
    let fresh = dir_manager(dir.path(), 1_000);
    let loaded = fresh.load(SLOT).unwrap();
    assert_eq!(loaded.report.deltas, 3);
    assert_eq!(loaded.report.journal_problem, None);
    assert_eq!(loaded.snapshot.metadata().label, "turn 3");
    assert_eq!(
        DirtyWorld::restore(&loaded.snapshot).unwrap(),
        world.entities
    );

    // The menu reports the deltas and the slot's whole size, and the newest label.
    let info = fresh.info(SLOT).unwrap();
    assert_eq!(info.deltas, 3);
    let journal = std::fs::metadata(journal_path(&fresh)).unwrap().len();
    assert_eq!(info.total_size, info.file_size + journal);
    assert_eq!(info.label(), Some("turn 3"));
    assert_eq!(fresh.list().unwrap()[0].deltas, 3);
}

/// Issue 26, hole 6: an incremental save with nothing in it appended an empty delta, and the
/// journal grew with every one.
#[test]
fn an_incremental_save_with_nothing_to_write_writes_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 1_000);
    let mut world = DirtyWorld::generate(ENTITIES, 11);
    full_save(&manager, &mut world);
    world.play(&mut Rng::new(12), 3, 0, 0);
    let first = delta(&manager, &mut world, "base");
    assert!(first.wrote);
    assert_eq!(first.sequence, 1);
    let journal = std::fs::read(journal_path(&manager)).unwrap();

    // Nothing changed, and the label is the one the slot shows already.
    let nothing = delta(&manager, &mut world, "base");
    assert!(!nothing.wrote);
    assert_eq!((nothing.sequence, nothing.bytes), (1, 0));
    assert_eq!(nothing.journal_bytes, journal.len() as u64);
    assert_eq!(std::fs::read(journal_path(&manager)).unwrap(), journal);

    // A new label alone is something to write.
    let relabelled = delta(&manager, &mut world, "renamed");
    assert!(relabelled.wrote);
    assert_eq!(relabelled.sequence, 2);
    assert_eq!(manager.load(SLOT).unwrap().report.deltas, 2);
}

#[test]
fn the_journal_is_compacted_into_a_new_base_when_it_outgrows_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 5);
    let mut world = DirtyWorld::generate(ENTITIES, 3);
    let mut rng = Rng::new(4);
    full_save(&manager, &mut world);
    let mut compacted = None;
    for turn in 1..=20 {
        world.play(&mut rng, ENTITIES / 50, 1, 1);
        let report = delta(&manager, &mut world, &format!("turn {turn}"));
        if let Some(saved) = report.compacted {
            compacted = Some((turn, saved));
            break;
        }
    }
    let (turn, saved) = compacted.expect("5% of the base is reached within 20 deltas of 2%");
    assert!(turn > 1);
    assert_eq!(saved.generation, 2);
    assert!(
        !journal_path(&manager).exists(),
        "the journal ends with its compaction"
    );
    let info = manager.info(SLOT).unwrap();
    assert_eq!((info.deltas, info.total_size), (0, info.file_size));
    assert_eq!(loaded_entities(&manager), world.entities);
    // Deltas start again from the new base.
    world.play(&mut rng, 5, 0, 0);
    assert_eq!(delta(&manager, &mut world, "after").sequence, 1);
    assert_eq!(loaded_entities(&manager), world.entities);
}

#[test]
fn a_full_save_ends_the_journal_and_deltas_for_another_base_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 1_000);
    let mut world = DirtyWorld::generate(200, 5);
    let mut rng = Rng::new(6);
    full_save(&manager, &mut world);
    world.play(&mut rng, 10, 0, 0);
    delta(&manager, &mut world, "d1");
    let old_journal = std::fs::read(journal_path(&manager)).unwrap();

    // A full save is a new base (generation 2) and removes the journal.
    full_save(&manager, &mut world);
    assert!(!journal_path(&manager).exists());
    let base = world.entities.clone();

    // The old journal put back (its deltas name generation 1): refused, not applied.
    std::fs::write(journal_path(&manager), &old_journal).unwrap();
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.report.deltas, 0);
    let problem = loaded.report.journal_problem.unwrap();
    assert!(problem.contains("generation 1"), "{problem}");
    assert_eq!(DirtyWorld::restore(&loaded.snapshot).unwrap(), base);
    assert_eq!(manager.info(SLOT).unwrap().deltas, 0);

    // The next incremental save drops the stale journal and starts afresh.
    world.play(&mut rng, 10, 1, 1);
    assert_eq!(delta(&manager, &mut world, "d1'").sequence, 1);
    assert_eq!(loaded_entities(&manager), world.entities);
}

#[test]
fn a_torn_or_damaged_delta_is_detected_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 1_000);
    let mut world = DirtyWorld::generate(300, 7);
    let mut rng = Rng::new(8);
    full_save(&manager, &mut world);
    let mut states = vec![world.entities.clone()];
    let mut ends = vec![0u64];
    for n in 1..=3 {
        world.play(&mut rng, 10, 1, 1);
        let report = delta(&manager, &mut world, &format!("d{n}"));
        states.push(world.entities.clone());
        ends.push(report.journal_bytes);
    }
    let journal = journal_path(&manager);
    let whole = std::fs::read(&journal).unwrap();

    // Torn in the middle of the third delta: the first two still apply.
    for cut in [ends[2] + 1, ends[2] + 60, ends[3] - 1] {
        std::fs::write(&journal, &whole[..cut as usize]).unwrap();
        let fresh = dir_manager(dir.path(), 1_000);
        let loaded = fresh.load(SLOT).unwrap();
        assert_eq!(loaded.report.deltas, 2, "cut at {cut}");
        assert!(loaded.report.journal_problem.unwrap().contains("torn"));
        assert_eq!(DirtyWorld::restore(&loaded.snapshot).unwrap(), states[2]);
    }

    // A bit flipped inside the second delta: only the first applies.
    let mut flipped = whole.clone();
    flipped[(ends[1] + (ends[2] - ends[1]) / 2) as usize] ^= 0x04;
    std::fs::write(&journal, &flipped).unwrap();
    let fresh = dir_manager(dir.path(), 1_000);
    let loaded = fresh.load(SLOT).unwrap();
    assert_eq!(loaded.report.deltas, 1);
    assert!(loaded.report.journal_problem.unwrap().contains("delta 2"));
    assert_eq!(DirtyWorld::restore(&loaded.snapshot).unwrap(), states[1]);

    // The next incremental save drops the damaged tail before appending.
    let mut world = DirtyWorld {
        entities: states[1].clone(),
        ..DirtyWorld::default()
    };
    world.play(&mut rng, 10, 0, 0);
    assert_eq!(delta(&fresh, &mut world, "d2'").sequence, 2);
    let loaded = dir_manager(dir.path(), 1_000).load(SLOT).unwrap();
    assert_eq!(
        (loaded.report.deltas, loaded.report.journal_problem),
        (2, None)
    );
    assert_eq!(
        DirtyWorld::restore(&loaded.snapshot).unwrap(),
        world.entities
    );
}

#[test]
fn a_delta_is_never_accepted_onto_a_base_damaged_after_its_own_manager_wrote_it() {
    delta_onto_a_base_damaged_in_place(false);
}

#[test]
fn a_compaction_never_rolls_back_to_the_backup_of_a_base_damaged_after_its_manager_wrote_it() {
    delta_onto_a_base_damaged_in_place(true);
}

/// The manager that wrote a base tries a delta on it after the base was damaged in place.
fn delta_onto_a_base_damaged_in_place(compaction_due: bool) {
    {
        let dir = tempfile::tempdir().unwrap();
        // At 1% the delta under test is due a compaction; at 1000% it is not.
        let manager = dir_manager(dir.path(), if compaction_due { 1 } else { 1_000 });
        let mut world = DirtyWorld::generate(ENTITIES, 5);
        let mut rng = Rng::new(6);
        full_save(&manager, &mut world);
        world.play(&mut rng, ENTITIES / 100, 1, 1);
        full_save(&manager, &mut world);
        if !compaction_due {
            world.play(&mut rng, ENTITIES / 100, 1, 1);
            delta(&manager, &mut world, "before the damage");
        }
        let files = || -> Vec<Option<Vec<u8>>> {
            let primary = manager.path_of(SLOT);
            let backup = primary.with_file_name(format!("{}.bak1", SLOT.file_name()));
            [primary, backup, journal_path(&manager)]
                .iter()
                .map(|p| std::fs::read(p).ok())
                .collect()
        };
        // The manager that wrote the base saves again over it, damaged since in place.
        common::flip_in_place(&manager.path_of(SLOT));
        let before = files();
        world.play(&mut rng, ENTITIES / 100, 1, 1);
        let mut changes = manager.snapshot();
        world.capture_changes(&mut changes).unwrap();
        let refused = manager.save_incremental(SLOT, &changes);
        assert!(
            matches!(refused, Err(Error::FullSaveNeeded { .. })),
            "compaction due {compaction_due}: {refused:?}"
        );
        // Nothing changed on disk: no delta on the damaged base, no compaction of the backup
        // into a new base, the good backup still the backup.
        assert_eq!(files(), before, "compaction due {compaction_due}");
        let compacted = manager.compact(SLOT);
        assert!(
            matches!(compacted, Err(Error::FullSaveNeeded { .. })),
            "{compacted:?}"
        );
        assert_eq!(files(), before);

        // The game saves in full instead, and that is what loads.
        full_save(&manager, &mut world);
        assert_eq!(loaded_entities(&manager), world.entities);
        assert_eq!(
            files()[1],
            before[1],
            "the damaged base was rotated into the backups"
        );
    }
}

#[test]
fn a_delta_in_another_codec_than_its_base_is_refused_not_decoded_wrongly() {
    let dir = tempfile::tempdir().unwrap();
    let json = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .codec(savegame::Codec::Json)
        .build()
        .unwrap();
    let mut base = json.snapshot();
    base.capture_memento("score", &1u32).unwrap();
    json.save(SLOT, &base).unwrap();
    // The game switched codecs in an update: its changes are MessagePack, the base JSON.
    let msgpack = dir_manager(dir.path(), 1_000);
    let mut changes = msgpack.snapshot();
    changes.capture_memento("score", &8u32).unwrap();
    let refused = msgpack.save_incremental(SLOT, &changes);
    assert!(
        matches!(refused, Err(Error::FullSaveNeeded { ref reason, .. }) if reason.contains("json")),
        "{refused:?}"
    );
    assert!(!journal_path(&msgpack).exists());
    // A journal that holds such a delta anyway (written by an older version) is not applied:
    // a MessagePack delta for a base of generation 1, sequence 1, the key and slot the same,
    // next to the JSON base of generation 1.
    let other_dir = tempfile::tempdir().unwrap();
    let other = dir_manager(other_dir.path(), 1_000);
    let mut other_base = other.snapshot();
    other_base.capture_memento("score", &0u32).unwrap();
    other.save(SLOT, &other_base).unwrap();
    other.save_incremental(SLOT, &changes).unwrap();
    std::fs::copy(journal_path(&other), journal_path(&json)).unwrap();
    let loaded = json.load(SLOT).unwrap();
    assert_eq!(loaded.report.deltas, 0);
    let problem = loaded.report.journal_problem.unwrap();
    assert!(
        problem.contains("msgpack") && problem.contains("json"),
        "{problem}"
    );
    assert_eq!(loaded.snapshot.memento::<u32>("score").unwrap(), 1);
}

#[test]
fn an_incremental_save_needs_a_current_full_save_first() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path(), 1_000);
    let mut changes = manager.snapshot();
    changes.capture_memento("entity/000001", &1u8).unwrap();
    assert!(matches!(
        manager.save_incremental(SLOT, &changes),
        Err(Error::SlotEmpty { .. })
    ));

    // A base from an older version of the game must be rewritten whole first.
    let v0 = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .build()
        .unwrap();
    let mut base = v0.snapshot();
    base.capture_memento("entity/000001", &0u8).unwrap();
    v0.save(SLOT, &base).unwrap();
    let v2 = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .schema_version(2)
        .migrations(savegame::Migrations::new().step(2, "noop", |_| Ok(())))
        .build()
        .unwrap();
    assert!(matches!(
        v2.save_incremental(SLOT, &changes),
        Err(Error::FullSaveNeeded { .. })
    ));

    // A damaged base too.
    let path = manager.path_of(SLOT);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 10;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let fresh = dir_manager(dir.path(), 1_000);
    assert!(matches!(
        fresh.save_incremental(SLOT, &changes),
        Err(Error::FullSaveNeeded { .. })
    ));
}

/// The logical state of a loaded slot over a simulated file system.
fn sim_state(fs: &SimFs) -> BTreeMap<u32, Entity> {
    let manager = manager_in(
        FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap(),
        30,
    );
    loaded_entities(&manager)
}

/// Makes `changes` entity changes and saves them incrementally (at once, or on the worker with
/// `save_incremental_in_background`), on a file system holding a base and one delta; checks
/// every crash image of every prefix of the save's operations loads the state before or after
/// it.
fn crash_during_delta(changes: usize, expect_compaction: bool, background: bool) -> usize {
    let fs = SimFs::new();
    let manager = manager_in(
        FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap(),
        30,
    );
    let mut world = DirtyWorld::generate(100, 9);
    let mut rng = Rng::new(10);
    full_save(&manager, &mut world);
    world.play(&mut rng, 3, 1, 1);
    delta(&manager, &mut world, "first");
    let before = world.entities.clone();
    world.play(&mut rng, changes, 1, 1);
    let start = fs.op_count();
    let report = if background {
        let mut changes = manager.snapshot().with_label("second");
        world.capture_changes(&mut changes).unwrap();
        let handle = manager.save_incremental_in_background(SLOT, changes);
        let report = handle.wait().unwrap();
        world.saved();
        report
    } else {
        delta(&manager, &mut world, "second")
    };
    assert_eq!(report.compacted.is_some(), expect_compaction);
    let after = world.entities.clone();
    let end = fs.op_count();
    assert_ne!(before, after);
    let mut images = 0;
    for at in start..=end {
        for image in fs.crash_images(at) {
            let state = sim_state(&image.fs);
            assert!(
                state == before || state == after,
                "after op {at} of {start}..{end}: neither state"
            );
            if at == end {
                assert_eq!(state, after, "the save returned Ok, so its state must hold");
            }
            images += 1;
        }
    }
    images
}

#[test]
fn a_crash_at_any_point_of_an_append_leaves_the_last_complete_state() {
    assert!(crash_during_delta(3, false, false) > 10);
}

#[test]
fn a_crash_at_any_point_of_a_background_append_leaves_the_last_complete_state() {
    assert!(crash_during_delta(3, false, true) > 10);
}

#[test]
fn a_crash_at_any_point_of_a_background_compaction_leaves_the_same_state() {
    assert!(crash_during_delta(40, true, true) > 40);
}

#[test]
fn a_crash_at_any_point_of_a_compaction_leaves_the_same_state() {
    assert!(crash_during_delta(40, true, false) > 40);
}

// Background incremental saves of a state's dirty members
// (`save_state_incremental_in_background`).

mod state {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use savegame::storage::{Fault, FaultKind, FaultMode, FsStorage, SimFs};
    use savegame::{
        ChangesReport, Error, Originator, Registry, SaveLoadManager, SaveState, SlotId, Written,
    };
    use serde::{Deserialize, Serialize};

    use super::common::{SIM_DIR, key};

    const SLOT: SlotId = SlotId::Numbered(6);
    const CHUNKS: usize = 100;

    /// A chunk of a world that counts how many times the game thread copied it.
    struct Chunk {
        tiles: Vec<u16>,
        copies: Arc<AtomicUsize>,
    }

    #[derive(Serialize, Deserialize)]
    struct ChunkMemento {
        tiles: Vec<u16>,
    }

    impl Originator for Chunk {
        type Memento = ChunkMemento;
        fn create_memento(&self) -> ChunkMemento {
            self.copies.fetch_add(1, Ordering::SeqCst);
            ChunkMemento {
                tiles: self.tiles.clone(),
            }
        }
        fn restore_memento(&mut self, m: ChunkMemento) -> savegame::Result<()> {
            self.tiles = m.tiles;
            Ok(())
        }
    }

    fn world(copies: &Arc<AtomicUsize>) -> Registry<Chunk> {
        let mut world = Registry::new().with_prefix("chunk/");
        for i in 0..CHUNKS {
            let chunk = Chunk {
                tiles: vec![i as u16; 32],
                copies: Arc::clone(copies),
            };
            world.register(format!("{i:03}"), chunk).unwrap();
        }
        world
    }

    fn manager_over(fs: &SimFs) -> SaveLoadManager {
        SaveLoadManager::builder()
            .storage(FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap())
            .key(key())
            .compact_at(100_000)
            .build()
            .unwrap()
    }

    fn dir_manager(dir: &std::path::Path) -> SaveLoadManager {
        SaveLoadManager::builder()
            .directory(dir)
            .key(key())
            .compact_at(100_000)
            .build()
            .unwrap()
    }

    /// The tiles of every chunk the slot holds, by id.
    fn loaded(manager: &SaveLoadManager) -> Vec<(String, Vec<u16>)> {
        let snapshot = manager.load(SLOT).unwrap().snapshot;
        snapshot
            .ids()
            .map(|id| {
                (
                    id.to_owned(),
                    snapshot.memento::<ChunkMemento>(id).unwrap().tiles,
                )
            })
            .collect()
    }

    fn expected(world: &Registry<Chunk>) -> Vec<(String, Vec<u16>)> {
        world
            .iter()
            .map(|(id, c)| (world.snapshot_id(id), c.tiles.clone()))
            .collect()
    }

    fn delta_of(report: &ChangesReport) -> &savegame::DeltaReport {
        match &report.written {
            Written::Delta(delta) => delta,
            other => panic!("not a delta: {other:?}"),
        }
    }

    #[test]
    fn the_game_thread_copies_only_the_dirty_members_and_the_slot_takes_a_delta_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let manager = dir_manager(dir.path());
        let copies = Arc::new(AtomicUsize::new(0));
        let mut world = world(&copies);

        // The first call knows nothing of the slot: a full save, captured whole.
        let report = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/001"])
            .wait()
            .unwrap();
        assert!(matches!(report.written, Written::Full { .. }), "{report:?}");
        assert_eq!(report.changed.len(), CHUNKS);
        assert_eq!(copies.swap(0, Ordering::SeqCst), CHUNKS);

        // Two chunks changed, one removed, one added, one marked dirty but unchanged, and an
        // id that never existed.
        world.get_mut("004").unwrap().tiles[0] = 400;
        world.get_mut("050").unwrap().tiles[1] = 500;
        world.unregister("007");
        world
            .register(
                "100",
                Chunk {
                    tiles: vec![1; 4],
                    copies: Arc::clone(&copies),
                },
            )
            .unwrap();
        let dirty = [
            "chunk/004",
            "chunk/050",
            "chunk/007",
            "chunk/100",
            "chunk/060",
            "chunk/999",
        ];
        let handle = manager.save_state_incremental_in_background(SLOT, &world, dirty);
        // The game thread copied the four dirty members it has, and nothing else.
        assert_eq!(copies.swap(0, Ordering::SeqCst), 4);
        let report = handle.wait().unwrap();
        assert!(report.wrote);
        assert_eq!(
            report.changed,
            ["chunk/004", "chunk/050", "chunk/100"],
            "the unchanged dirty chunk is left out"
        );
        assert_eq!(report.deleted, ["chunk/007"]);
        assert_eq!(report.unchanged, CHUNKS - 3);
        assert_eq!(delta_of(&report).sequence, 1);
        assert_eq!(
            copies.load(Ordering::SeqCst),
            0,
            "the worker copies nothing"
        );
        assert_eq!(loaded(&manager), expected(&world));

        // Nothing dirty, nothing new to show: nothing written.
        let report = manager
            .save_state_incremental_in_background(SLOT, &world, Vec::<String>::new())
            .wait()
            .unwrap();
        assert!(matches!(report.written, Written::Nothing), "{report:?}");
        assert_eq!(manager.info(SLOT).unwrap().deltas, 1);

        // The fingerprints stayed the slot's: the blocking incremental save agrees that
        // nothing changed, and a new manager loads the same state.
        let report = manager.save_state_incremental(SLOT, &world).unwrap();
        assert!(!report.wrote, "{report:?}");
        drop(manager);
        assert_eq!(loaded(&dir_manager(dir.path())), expected(&world));
    }

    #[test]
    fn a_failed_background_state_delta_keeps_the_previous_generation_and_loses_no_change() {
        let fs = SimFs::new();
        let manager = manager_over(&fs);
        let copies = Arc::new(AtomicUsize::new(0));
        let mut world = world(&copies);
        manager.save_state(SLOT, &world).unwrap();
        world.get_mut("001").unwrap().tiles[0] = 11;
        manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/001"])
            .wait()
            .unwrap();
        let before = manager.info(SLOT).unwrap();
        let saved = loaded(&manager);

        // The disk fills: the delta fails, and so does the one queued behind it. The worker
        // is held (by a save to another slot whose snapshot waits for a word, then fails
        // without writing) until both are queued: otherwise the first may fail before the
        // second is asked for, which then is a full save of its own (the manager forgot the
        // slot), not a delta behind a failed one.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let gate = manager.save_in_background_with(SlotId::Numbered(99), move || {
            let _ = wait.recv();
            Err(Error::Config {
                reason: "the gate writes nothing".into(),
            })
        });
        world.get_mut("002").unwrap().tiles[0] = 22;
        fs.inject(Fault {
            at: fs.op_count(),
            kind: FaultKind::NoSpace,
            mode: FaultMode::FromThenOn,
        });
        let failing = manager.save_state_incremental_in_background(SLOT, &world, ["chunk/002"]);
        world.get_mut("003").unwrap().tiles[0] = 33;
        let behind = manager.save_state_incremental_in_background(SLOT, &world, ["chunk/003"]);
        go.send(()).unwrap();
        assert!(matches!(gate.wait(), Err(Error::Config { .. })));
        let err = failing.wait().unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        let err = behind.wait().unwrap_err();
        assert!(matches!(err, Error::FullSaveNeeded { .. }), "{err}");
        fs.clear_faults();

        // The slot loads at its previous generation and deltas.
        let after = manager.info(SLOT).unwrap();
        assert_eq!(after.header, before.header);
        assert_eq!(after.deltas, before.deltas);
        assert_eq!(loaded(&manager), saved);
        assert_eq!(loaded(&manager_over(&fs)), saved);

        // The manager forgot the slot: the next call is a full save, with every change the
        // failed calls held.
        world.get_mut("004").unwrap().tiles[0] = 44;
        let report = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/004"])
            .wait()
            .unwrap();
        assert!(matches!(report.written, Written::Full { .. }), "{report:?}");
        assert_eq!(loaded(&manager), expected(&world));
        // And deltas follow it again.
        world.get_mut("005").unwrap().tiles[0] = 55;
        let report = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/005"])
            .wait()
            .unwrap();
        assert_eq!(delta_of(&report).sequence, 1);
        assert_eq!(loaded(&manager), expected(&world));
    }

    #[test]
    fn background_state_deltas_keep_their_order_against_full_saves() {
        let dir = tempfile::tempdir().unwrap();
        let manager = dir_manager(dir.path());
        let copies = Arc::new(AtomicUsize::new(0));
        let mut world = world(&copies);

        // A full save and the deltas made after it are queued together: the deltas land on
        // the full save's base, in order.
        let full = manager.save_state_incremental_in_background(SLOT, &world, ["chunk/000"]);
        world.get_mut("010").unwrap().tiles[0] = 1;
        let first = manager.save_state_incremental_in_background(SLOT, &world, ["chunk/010"]);
        world.get_mut("010").unwrap().tiles[0] = 2;
        world.get_mut("011").unwrap().tiles[0] = 3;
        let second =
            manager.save_state_incremental_in_background(SLOT, &world, ["chunk/010", "chunk/011"]);
        let base = match full.wait().unwrap().written {
            Written::Full { report, .. } => report,
            other => panic!("not a full save: {other:?}"),
        };
        assert_eq!(delta_of(&first.wait().unwrap()).sequence, 1);
        assert_eq!(delta_of(&second.wait().unwrap()).sequence, 2);
        let info = manager.info(SLOT).unwrap();
        assert_eq!(info.header.unwrap().generation, base.generation);
        assert_eq!(loaded(&manager), expected(&world));

        // A blocking save_state drops the deltas still queued (its state is newer) and is
        // the base of the next delta.
        world.get_mut("020").unwrap().tiles[0] = 7;
        let report = manager.save_state(SLOT, &world).unwrap();
        world.get_mut("021").unwrap().tiles[0] = 8;
        let delta = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/021"])
            .wait()
            .unwrap();
        assert_eq!(delta_of(&delta).sequence, 1);
        assert_eq!(
            manager.info(SLOT).unwrap().header.unwrap().generation,
            report.generation
        );
        assert_eq!(loaded(&manager), expected(&world));

        // A plain save writes something the manager's fingerprints do not describe: the next
        // background delta writes nothing and fails, and the one after is a full save.
        let mut other = manager.snapshot();
        other
            .capture_memento("chunk/000", &ChunkMemento { tiles: vec![9] })
            .unwrap();
        manager.save(SLOT, &other).unwrap();
        world.get_mut("022").unwrap().tiles[0] = 9;
        let err = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/022"])
            .wait()
            .unwrap_err();
        assert!(matches!(err, Error::FullSaveNeeded { .. }), "{err}");
        assert_eq!(manager.info(SLOT).unwrap().deltas, 0);
        let report = manager
            .save_state_incremental_in_background(SLOT, &world, ["chunk/022"])
            .wait()
            .unwrap();
        assert!(matches!(report.written, Written::Full { .. }), "{report:?}");
        assert_eq!(loaded(&manager), expected(&world));
    }

    #[test]
    fn a_state_that_only_lists_its_members_captures_the_dirty_ones_alone() {
        #[derive(Originator, Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
        #[savegame(self_memento)]
        struct Stats {
            kills: u32,
        }
        #[derive(SaveState, Default)]
        struct Game {
            player: Stats,
            boss: Stats,
        }
        let dir = tempfile::tempdir().unwrap();
        let manager = dir_manager(dir.path());
        let mut game = Game::default();
        manager.save_state(SLOT, &game).unwrap();
        game.player.kills = 3;
        game.boss.kills = 99; // changed, but not marked dirty: not saved
        let report = manager
            .save_state_incremental_in_background(SLOT, &game, ["player"])
            .wait()
            .unwrap();
        assert_eq!(report.changed, ["player"]);
        let snapshot = manager.load(SLOT).unwrap().snapshot;
        assert_eq!(snapshot.memento::<Stats>("player").unwrap().kills, 3);
        assert_eq!(snapshot.memento::<Stats>("boss").unwrap().kills, 0);
    }
}

/// The real file system, counting the bytes read from the files whose names end in `.sav`.
#[derive(Debug, Clone, Default)]
struct CountingFs(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl CountingFs {
    fn read_of_saves(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn count(&self, path: &Path, bytes: usize) {
        if path.extension().is_some_and(|e| e == "sav") {
            self.0
                .fetch_add(bytes as u64, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl savegame::storage::FileSystem for CountingFs {
    fn create_dir(&self, dir: &Path) -> std::io::Result<bool> {
        savegame::storage::StdFs.create_dir(dir)
    }
    fn file_len(&self, path: &Path) -> std::io::Result<u64> {
        savegame::storage::StdFs.file_len(path)
    }
    fn identity(&self, path: &Path) -> std::io::Result<Option<savegame::storage::Identity>> {
        savegame::storage::StdFs.identity(path)
    }
    fn read(&self, path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
        let bytes = savegame::storage::StdFs.read(path, limit)?;
        self.count(path, bytes.len());
        Ok(bytes)
    }
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> std::io::Result<(Vec<u8>, u64)> {
        let read = savegame::storage::StdFs.read_at(path, offset, len)?;
        self.count(path, read.0.len());
        Ok(read)
    }
    fn create(&self, path: &Path) -> std::io::Result<Box<dyn savegame::storage::WriteFile>> {
        savegame::storage::StdFs.create(path)
    }
    fn overwrite(&self, path: &Path) -> std::io::Result<Box<dyn savegame::storage::WriteFile>> {
        savegame::storage::StdFs.overwrite(path)
    }
    fn open_append(&self, path: &Path) -> std::io::Result<Box<dyn savegame::storage::WriteFile>> {
        savegame::storage::StdFs.open_append(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        savegame::storage::StdFs.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        savegame::storage::StdFs.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        savegame::storage::StdFs.remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        savegame::storage::StdFs.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<(String, u64)>> {
        savegame::storage::StdFs.list_dir(dir)
    }
    fn lock(&self, path: &Path) -> std::io::Result<savegame::storage::StorageLock> {
        savegame::storage::StdFs.lock(path)
    }
}

/// Issue 30, target 6: a delta reads its base whole again only when the base changed since a
/// check of it that stands (or the check is a minute old, or 1,024 deltas), and a base damaged
/// in place, after such a check, is still refused: the damage changes the file's identity.
#[test]
fn a_settled_base_is_read_whole_once_and_again_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let fs = CountingFs::default();
    let storage = FsStorage::with_file_system(dir.path(), fs.clone()).unwrap();
    let manager = manager_in(storage, 1_000_000);
    let mut world = DirtyWorld::generate(ENTITIES, 21);
    let mut rng = Rng::new(22);
    full_save(&manager, &mut world);
    let base_len = std::fs::metadata(manager.path_of(SLOT)).unwrap().len();
    // Let the base's last change settle: a file's change time has a coarse clock, and a check
    // taken within `Identity::SETTLE` of it stands for nothing.
    let identity =
        savegame::storage::FileSystem::identity(&savegame::storage::StdFs, &manager.path_of(SLOT))
            .unwrap()
            .unwrap();
    // The rename that put the base in place changed it after its last write.
    let changed = identity.changed.max(identity.modified);
    savegame_testkit::wait::clock_past(changed + savegame::storage::Identity::SETTLE);

    let read = |f: &mut dyn FnMut()| {
        let before = fs.read_of_saves();
        f();
        fs.read_of_saves() - before
    };
    let one_delta = |world: &mut DirtyWorld, rng: &mut Rng| {
        world.play(rng, ENTITIES / 100, 0, 0);
        let mut changes = manager.snapshot();
        world.capture_changes(&mut changes).unwrap();
        let result = manager.save_incremental(SLOT, &changes).map(drop);
        world.saved();
        result
    };
    // The first delta checks the base whole; the next ones read only its header.
    assert!(read(&mut || one_delta(&mut world, &mut rng).unwrap()) >= base_len);
    for _ in 0..5 {
        let bytes = read(&mut || one_delta(&mut world, &mut rng).unwrap());
        assert!(
            bytes < 4096,
            "a delta read {bytes} bytes of a {base_len}-byte base"
        );
    }
    // Damaged in place, the base is read whole again, and the delta refused.
    common::flip_in_place(&manager.path_of(SLOT));
    let mut refused = None;
    let bytes = read(&mut || refused = Some(one_delta(&mut world, &mut rng)));
    assert!(bytes >= base_len / 2, "read {bytes} bytes after the damage");
    assert!(
        matches!(refused, Some(Err(Error::FullSaveNeeded { .. }))),
        "{refused:?}"
    );
}
