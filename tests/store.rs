//! The key-value store: typed values by key in `store.kv`, durable per change, never a slot;
//! through every crash point, I/O faults and SIGKILL like a slot.

mod common;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::dir_manager;
use savegame::migrate::Migrations;
use savegame::storage::{Fault, FaultKind, FaultMode, SimFs};
use savegame::{Error, SaveLoadManager, SlotId, StoreOptions};
use savegame_testkit::kill::{self, KillLoop};

fn sim_manager(fs: &SimFs) -> SaveLoadManager {
    common::sim_builder(fs).build().unwrap()
}

#[test]
fn values_persist_by_key_and_the_store_is_never_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let store = manager.store().unwrap();
    assert_eq!(store.get::<f32>("volume").unwrap(), None);
    store.set("volume", &0.8f32).unwrap();
    store.set("bindings", &vec!["W", "A", "S", "D"]).unwrap();
    store.set("profile/alice/level", &7u32).unwrap();
    assert!(store.remove("bindings").unwrap());
    assert!(!store.remove("bindings").unwrap());
    store
        .edit(|values| {
            values.capture_memento("profile/bob/level", &2u32)?;
            values.capture_memento("volume", &0.5f32)
        })
        .unwrap();

    // Another run of the game: the same values, by key and type.
    let again = dir_manager(dir.path()).store().unwrap();
    assert_eq!(again.get::<f32>("volume").unwrap(), Some(0.5));
    assert_eq!(again.get::<u32>("profile/alice/level").unwrap(), Some(7));
    assert_eq!(
        again.keys(),
        ["profile/alice/level", "profile/bob/level", "volume"]
    );
    // A value read as the wrong type is a typed error, not a wrong value.
    assert!(matches!(
        again.get::<String>("volume"),
        Err(Error::Decode { .. })
    ));

    // It is a file of its own, encrypted like a save, and no slot.
    let path = dir.path().join("store.kv");
    let bytes = std::fs::read(&path).unwrap();
    assert!(
        !bytes.windows(5).any(|w| w == b"alice"),
        "the values are sealed"
    );
    assert!(manager.list().unwrap().is_empty());
    manager
        .save(SlotId::Numbered(1), &manager.snapshot())
        .unwrap();
    let listed: Vec<SlotId> = manager.list().unwrap().iter().map(|i| i.slot).collect();
    assert_eq!(listed, [SlotId::Numbered(1)]);
    for _ in 0..3 {
        let slot = manager.autosave(&manager.snapshot()).unwrap().slot;
        assert!(matches!(slot, SlotId::Autosave(_)), "{slot:?}");
    }
}

#[test]
fn two_stores_of_one_folder_never_undo_each_others_changes() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir_manager(dir.path()).store().unwrap();
    let second = dir_manager(dir.path()).store().unwrap();
    first.set("a", &1u8).unwrap();
    second.set("b", &2u8).unwrap();
    assert_eq!(second.get::<u8>("a").unwrap(), Some(1));
    assert_eq!(first.get::<u8>("b").unwrap(), None, "not read again yet");
    first.reload().unwrap();
    assert_eq!(first.get::<u8>("b").unwrap(), Some(2));
    let reopened = dir_manager(dir.path()).store().unwrap();
    assert_eq!(reopened.keys(), ["a", "b"]);
}

#[test]
fn a_store_migrates_by_its_own_schema_and_refuses_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    manager.store().unwrap().set("vol", &80u32).unwrap();
    let v2 = StoreOptions::default()
        .schema_version(2)
        .migrations(Migrations::new().step(2, "volume_as_fraction", |doc| {
            if let Some(old) = doc.remove("vol") {
                doc.insert("volume", old);
            }
            Ok(())
        }));
    let store = manager.store_with(v2).unwrap();
    assert_eq!(store.get::<u32>("volume").unwrap(), Some(80));
    assert_eq!(store.get::<u32>("vol").unwrap(), None);
    store.set("volume", &75u32).unwrap();
    // The game's saves are at their own schema version: the store's steps are not theirs.
    assert_eq!(manager.schema_version(), 1);
    // A store written by a newer game is refused, and never overwritten.
    let before = std::fs::read(dir.path().join("store.kv")).unwrap();
    let old_game = manager.store();
    assert!(
        matches!(old_game, Err(Error::NewerSchema { found: 2, .. })),
        "{old_game:?}"
    );
    assert_eq!(std::fs::read(dir.path().join("store.kv")).unwrap(), before);
}

#[test]
fn a_crash_at_every_point_of_a_change_leaves_the_old_value_or_the_new() {
    for earlier in [0u32, 1, 2] {
        let fs = SimFs::new();
        let store = sim_manager(&fs).store().unwrap();
        for v in 1..=earlier {
            store.set("counter", &v).unwrap();
        }
        let start = fs.op_count();
        store.set("counter", &(earlier + 1)).unwrap();
        let end = fs.op_count();
        let mut images = 0;
        for after in start..=end {
            for image in fs.crash_images(after) {
                let reopened = sim_manager(&image.fs)
                    .store()
                    .unwrap_or_else(|e| panic!("after op {after}: {e} ({image:?})"));
                let value = reopened.get::<u32>("counter").unwrap();
                let old = (earlier > 0).then_some(earlier);
                assert!(
                    value == Some(earlier + 1) || (value == old && after < end),
                    "after op {after}: {value:?} ({image:?})"
                );
                // The game goes on.
                reopened.set("counter", &99u32).unwrap();
                let last = sim_manager(&image.fs).store().unwrap();
                assert_eq!(last.get::<u32>("counter").unwrap(), Some(99));
                images += 1;
            }
        }
        assert!(images > 20, "{images}");
    }
}

#[test]
fn a_failed_write_leaves_the_store_as_it_was_in_memory_and_on_disk() {
    let probe = SimFs::new();
    let probe_store = sim_manager(&probe).store().unwrap();
    probe_store.set("counter", &1u32).unwrap();
    let start = probe.op_count();
    probe_store.set("counter", &2u32).unwrap();
    let ops = probe.op_count() - start;
    for index in 0..ops {
        for kind in [FaultKind::NoSpace, FaultKind::Io] {
            let fs = SimFs::new();
            let store = sim_manager(&fs).store().unwrap();
            store.set("counter", &1u32).unwrap();
            fs.inject(Fault {
                at: fs.op_count() + index,
                kind,
                mode: FaultMode::FromThenOn,
            });
            match store.set("counter", &2u32) {
                Err(Error::Io { source, .. }) => {
                    assert!(
                        matches!(
                            source.kind(),
                            io::ErrorKind::StorageFull | io::ErrorKind::Other
                        ),
                        "{source}"
                    );
                    assert_eq!(store.get::<u32>("counter").unwrap(), Some(1), "op {index}");
                }
                other => panic!("op {index}: {other:?}"),
            }
            fs.clear_faults();
            let reopened = sim_manager(&fs).store().unwrap();
            let on_disk = reopened.get::<u32>("counter").unwrap();
            // Only a failed fsync of the folder comes after the new file is in place.
            assert!(
                on_disk == Some(1) || index == ops - 1,
                "op {index}: {on_disk:?}"
            );
        }
    }
}

const KILL_TEST: &str = "sigkill_at_random_moments_never_loses_a_committed_value";
const CHILD_DIR: &str = "SAVEGAME_STORE_KILL_CHILD_DIR";

fn stored_counter(dir: &Path) -> u64 {
    dir_manager(dir)
        .store()
        .unwrap_or_else(|e| panic!("the store does not open after a kill: {e}"))
        .get::<u64>("counter")
        .unwrap()
        .unwrap_or(0)
}

#[test]
fn sigkill_at_random_moments_never_loses_a_committed_value() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        let dir = PathBuf::from(dir);
        let store = dir_manager(&dir).store().unwrap();
        let mut counter = stored_counter(&dir);
        kill::report_ready(counter);
        loop {
            counter += 1;
            store.set("counter", &counter).unwrap();
            kill::report_committed(counter);
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let kills = KillLoop::new(KILL_TEST, &[(CHILD_DIR, dir)])
        .rounds(kill::rounds_from_env(100))
        .max_delay(Duration::from_millis(80))
        .seed(0x5E77);
    let rounds = kills.round_count();
    let mut committed = 0u64;
    let mut kills_mid_run = 0;
    let summary = kills.run(|round| {
        let resumed = round.resumed;
        assert!(resumed >= committed, "resumed at {resumed} < {committed}");
        let before = committed;
        if let Some(n) = round.committed {
            committed = committed.max(n);
        }
        if committed > before {
            kills_mid_run += 1;
        }
        let on_disk = stored_counter(Path::new(dir));
        assert!(
            on_disk >= committed,
            "round {}: the store holds {on_disk}, but {committed} was committed",
            round.number
        );
    });
    assert!(
        kills_mid_run * 2 >= rounds,
        "only {kills_mid_run} of {rounds} kills came after a change"
    );
    eprintln!("{summary}, {committed} values committed");
}
