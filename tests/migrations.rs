//! Versioned migrations (RELIABILITY.md M1–M6) on the fixtures of `fixtures/` and the steps of
//! `migrations/`: old saves load as today's state, the chain is checked, a failing step names
//! itself and changes nothing, newer saves are refused and survive, the pre-migration file is
//! kept, and migrating in one go equals migrating in stages.

mod common;

use std::path::{Path, PathBuf};

use common::game::Rng;
use proptest::prelude::*;
use savegame::migrate::{MigrationError, Migrations, checksum};
use savegame::storage::MemoryStorage;
use savegame::{Codec, Error, SaveLoadManager, SlotId, Snapshot};
use savegame_testkit::{fixture_key, repo, versions};
use versions::{expected_v2, expected_v3, rust_steps, v1, v3};

const SLOT: SlotId = SlotId::Numbered(1);

/// Every file in `fixtures/` and its checksum: fixtures are committed once and never change.
const FIXTURES: [(&str, &str); 16] = [
    ("test-key.hex", "a87272cd93187afe"),
    ("v1-json-aes.sav", "e56f1b1cdc6475f9"),
    ("v1-json-plain.sav", "4ad357d85b157812"),
    ("v1-msgpack-aes.sav", "9211acbfa64d0575"),
    ("v1-msgpack-plain.sav", "3058938653922788"),
    ("v1.expected.json", "14103ef8bd8c4a2a"),
    ("v2-json-aes.sav", "6432cf2f55984c4c"),
    ("v2-json-plain.sav", "4f23a7893c0cc731"),
    ("v2-msgpack-aes.sav", "23c99612ac4c7c46"),
    ("v2-msgpack-plain.sav", "e4bb80add5b18c7b"),
    ("v2.expected.json", "06c73ae8426ef010"),
    ("v3-json-aes.sav", "cef2b0dfce8d6c40"),
    ("v3-json-plain.sav", "2f3bcff835c33168"),
    ("v3-msgpack-aes.sav", "0c28afff50075e14"),
    ("v3-msgpack-plain.sav", "3d58fb8736bab72c"),
    ("v3.expected.json", "ffa9c977f3e49c09"),
];

/// The shipped steps and their checksums: a released step never changes.
const STEPS: [(&str, &str); 2] = [
    ("0002_rename_hp_position_stamina.json", "156235c3401740a2"),
    ("0003_split_inventory_kind_ids.json", "ecbd978770a7e1f7"),
];

/// The game today: schema v3 with the embedded steps of `migrations/`.
fn v3_manager(dir: &Path, encrypted: bool) -> SaveLoadManager {
    let b = SaveLoadManager::builder()
        .directory(dir)
        .schema_version(3)
        .migrations(savegame::embed_migrations!("migrations").unwrap());
    if encrypted { b.key(fixture_key()) } else { b }
        .build()
        .unwrap()
}

/// Copies fixture `name` into a fresh folder as slot 1.
fn install(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let slot_file = dir.path().join(SLOT.file_name());
    std::fs::copy(repo(&format!("fixtures/{name}")), &slot_file).unwrap();
    (dir, slot_file)
}

fn restore_v3(snapshot: &Snapshot) -> v3::Game {
    v3::Game {
        player: snapshot.memento("player").unwrap(),
        inventory: snapshot.memento("inventory").unwrap(),
        world: snapshot.memento("world").unwrap(),
    }
}

fn save_files() -> Vec<(String, u32, bool)> {
    let mut out = Vec::new();
    for version in 1..=3 {
        for codec in ["json", "msgpack"] {
            for (enc, encrypted) in [("plain", false), ("aes", true)] {
                out.push((format!("v{version}-{codec}-{enc}.sav"), version, encrypted));
            }
        }
    }
    out
}

#[test]
fn fixtures_never_change() {
    let mut present: Vec<String> = std::fs::read_dir(repo("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "README.md")
        .collect();
    present.sort();
    let listed: Vec<&str> = FIXTURES.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        present, listed,
        "a fixture was added or removed: list it here"
    );
    for (name, sum) in FIXTURES {
        let bytes = std::fs::read(repo(&format!("fixtures/{name}"))).unwrap();
        assert_eq!(
            checksum(&bytes),
            sum,
            "fixtures/{name} changed; fixtures are never regenerated"
        );
    }
}

#[test]
fn shipped_steps_never_change() {
    let embedded = savegame::embed_migrations!("migrations").unwrap().steps();
    let from_dir = Migrations::from_dir(repo("migrations")).unwrap().steps();
    assert_eq!(embedded, from_dir, "the embedded steps are the folder's");
    assert_eq!(embedded.len(), STEPS.len());
    for (step, (file, sum)) in embedded.iter().zip(STEPS) {
        assert_eq!(step.file.as_deref(), Some(file));
        assert_eq!(
            step.checksum.as_deref(),
            Some(sum),
            "{file} changed after release"
        );
    }
}

#[test]
fn every_fixture_loads_as_its_expected_v3_state() {
    for (name, version, encrypted) in save_files() {
        let (dir, _) = install(&name);
        let manager = v3_manager(dir.path(), encrypted);
        let loaded = manager.load(SLOT).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected: v3::Game = serde_json::from_str(
            &std::fs::read_to_string(repo(&format!("fixtures/v{version}.expected.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(restore_v3(&loaded.snapshot), expected, "{name}");
        assert_eq!(loaded.report.header.schema_version, version);
        assert_eq!(
            loaded.report.migrated_from,
            (version < 3).then_some(version)
        );
        assert_eq!(
            loaded.snapshot.metadata().label,
            format!("fixture v{version}")
        );
    }
}

#[test]
fn the_rust_steps_and_the_step_files_agree_on_every_fixture() {
    for (name, _, encrypted) in save_files() {
        let (dir, _) = install(&name);
        let declarative = v3_manager(dir.path(), encrypted).load(SLOT).unwrap();
        let b = SaveLoadManager::builder()
            .directory(dir.path())
            .schema_version(3)
            .migrations(rust_steps());
        let rust = if encrypted { b.key(fixture_key()) } else { b }
            .build()
            .unwrap()
            .load(SLOT)
            .unwrap();
        assert_eq!(
            restore_v3(&declarative.snapshot),
            restore_v3(&rust.snapshot),
            "{name}"
        );
    }
}

#[test]
fn the_chain_is_checked_when_the_manager_is_built() {
    let build = |m: Migrations, current| {
        SaveLoadManager::builder()
            .storage(MemoryStorage::new())
            .schema_version(current)
            .migrations(m)
            .build()
    };
    let step = |v: u32| Migrations::new().step(v, format!("v{v}"), |_| Ok(()));
    assert!(build(step(2).with(step(3)), 3).is_ok());
    for (m, current, what) in [
        (step(2).with(step(4)), 4, "gap"),
        (step(2), 3, "gap"),
        (step(2).with(step(2)), 2, "two steps"),
        (step(2).with(step(3)), 2, "past the current"),
    ] {
        match build(m, current) {
            Err(Error::MigrationChain { reason }) => assert!(reason.contains(what), "{reason}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // A step file that does not parse never becomes a chain.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0002_ok.json"), "[]").unwrap();
    std::fs::write(
        dir.path().join("0003_broken.json"),
        r#"[{"op":"add","path":"/a","value":1},{"op":"add","path":"/b"}]"#,
    )
    .unwrap();
    match Migrations::from_dir(dir.path()) {
        Err(Error::StepFile { file, op, reason }) => {
            assert_eq!((file.as_str(), op), ("0003_broken.json", Some(1)));
            assert!(reason.contains("value"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_step_names_itself_and_leaves_the_file_untouched() {
    let (dir, slot_file) = install("v1-msgpack-aes.sav");
    let before = std::fs::read(&slot_file).unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(fixture_key())
        .schema_version(3)
        .migrations(Migrations::new().step(2, "fine", |_| Ok(())).step(
            3,
            "needs_a_dragon",
            |doc| {
                doc.memento("world")
                    .and_then(|w| w.get("dragon"))
                    .map(drop)
                    .ok_or_else(|| MigrationError::new("/world/dragon", "there is no dragon"))
            },
        ))
        .build()
        .unwrap();
    match manager.load(SLOT) {
        Err(Error::Migration {
            step,
            version,
            source,
        }) => {
            assert_eq!((step.as_str(), version), ("needs_a_dragon", 3));
            assert_eq!(source.path, "/world/dragon");
        }
        other => panic!("{other:?}"),
    }
    let message = manager.load(SLOT).unwrap_err().to_string();
    assert!(
        message.contains("needs_a_dragon") && message.contains("/world/dragon"),
        "{message}"
    );
    assert_eq!(std::fs::read(&slot_file).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing else was written");

    // A declarative step that fails names its op.
    let failing = Migrations::new()
        .declarative(
            "0002_x.json",
            r#"[{"op":"test","path":"/player/hp","value":-1}]"#,
        )
        .unwrap()
        .with(Migrations::new().step(3, "y", |_| Ok(())));
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(fixture_key())
        .schema_version(3)
        .migrations(failing)
        .build()
        .unwrap();
    match manager.load(SLOT) {
        Err(Error::Migration { step, source, .. }) => {
            assert_eq!(step, "x");
            assert_eq!(source.path, "/player/hp");
            assert!(source.reason.contains("op 0 (test)"), "{}", source.reason);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&slot_file).unwrap(), before);
}

#[test]
fn a_save_older_than_every_step_has_no_migration_path() {
    let (dir, _) = install("v1-json-plain.sav");
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .schema_version(3)
        .migrations(Migrations::new().step(3, "only_v3", |_| Ok(())))
        .build()
        .unwrap();
    assert!(matches!(
        manager.load(SLOT),
        Err(Error::NoMigrationPath { from: 1, to: 3 })
    ));
    assert!(matches!(
        manager.plan_migration(SLOT),
        Err(Error::NoMigrationPath { from: 1, to: 3 })
    ));
}

#[test]
fn a_newer_save_is_refused_and_survives_a_save_to_its_slot() {
    for slot in [SlotId::Numbered(1), SlotId::Autosave(1)] {
        let dir = tempfile::tempdir().unwrap();
        let v4 = SaveLoadManager::builder()
            .directory(dir.path())
            .schema_version(4)
            .migrations(
                savegame::embed_migrations!("migrations")
                    .unwrap()
                    .with(Migrations::new().step(4, "v4", |_| Ok(()))),
            )
            .build()
            .unwrap();
        let mut snapshot = v4.snapshot();
        snapshot
            .capture_memento("player", &"from the future")
            .unwrap();
        v4.save(slot, &snapshot).unwrap();
        let path = v4.path_of(slot);
        let bytes = std::fs::read(&path).unwrap();

        let v3 = v3_manager(dir.path(), false);
        assert!(matches!(
            v3.load(slot),
            Err(Error::NewerSchema {
                found: 4,
                supported: 3
            })
        ));
        assert!(matches!(
            v3.plan_migration(slot),
            Err(Error::NewerSchema {
                found: 4,
                supported: 3
            })
        ));
        let mut today = v3.snapshot();
        today.capture_memento("player", &"today").unwrap();
        assert!(matches!(
            v3.save(slot, &today),
            Err(Error::NewerSchema {
                found: 4,
                supported: 3
            })
        ));
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{slot}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "only the file and its lock"
        );
    }
}

#[test]
fn the_next_save_keeps_the_pre_migration_file_byte_for_byte() {
    for (name, version, encrypted) in save_files().into_iter().filter(|(_, v, _)| *v < 3) {
        let (dir, slot_file) = install(&name);
        let original = std::fs::read(&slot_file).unwrap();
        let manager = v3_manager(dir.path(), encrypted);
        let loaded = manager.load(SLOT).unwrap();
        // Loading wrote nothing.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "{name}");

        manager.save(SLOT, &loaded.snapshot).unwrap();
        let kept = dir
            .path()
            .join(format!("{}.v{version}.bak", SLOT.file_name()));
        assert_eq!(std::fs::read(&kept).unwrap(), original, "{name}");

        let again = manager.load(SLOT).unwrap();
        assert_eq!(again.report.header.schema_version, 3);
        assert_eq!(again.report.migrated_from, None);
        assert_eq!(restore_v3(&again.snapshot), restore_v3(&loaded.snapshot));
        // The menu does not mistake the kept file for a slot or a backup.
        let menu = manager.list().unwrap();
        assert_eq!(menu.len(), 1);
        assert_eq!(menu[0].backups, 1);
        // Deleting the slot deletes it too.
        manager.delete(SLOT).unwrap();
        assert!(!kept.exists());
    }
}

#[test]
fn plan_migration_lists_the_steps_and_writes_nothing() {
    let (dir, slot_file) = install("v1-json-aes.sav");
    let before = std::fs::read(&slot_file).unwrap();
    let plan = v3_manager(dir.path(), true).plan_migration(SLOT).unwrap();
    assert_eq!((plan.from, plan.to), (1, 3));
    let names: Vec<_> = plan.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["rename_hp_position_stamina", "split_inventory_kind_ids"]
    );
    assert!(
        plan.steps[1]
            .touches
            .contains(&"map /world/entities/*/kind".to_string())
    );
    assert!(
        plan.steps[0]
            .touches
            .contains(&"move /player/hp -> /player/health".to_string())
    );
    assert_eq!(std::fs::read(&slot_file).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// A manager over `storage` at `version`, with the steps up to it.
fn staged(storage: &MemoryStorage, version: u32, codec: Codec) -> SaveLoadManager {
    let steps = savegame::embed_migrations!("migrations").unwrap();
    let mut upto = Migrations::new();
    for step in steps.steps().into_iter().filter(|s| s.version <= version) {
        let file = step.file.unwrap();
        let text = std::fs::read_to_string(repo(&format!("migrations/{file}"))).unwrap();
        upto = upto.declarative(&file, &text).unwrap();
    }
    SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(codec)
        .key(common::key())
        .schema_version(version)
        .migrations(upto)
        .build()
        .unwrap()
}

fn arbitrary_v1(seed: u64, entities: usize, odd_kinds: bool) -> (v1::Player, v1::World) {
    let (mut p, w) = versions::v1_state(seed, entities);
    if odd_kinds {
        // Items with names that need escaping in JSON Pointer and in JSON.
        p.inventory.insert("a/b~c \"q\"".into(), 1);
    }
    let mut rng = Rng::new(seed);
    p.pos = [rng.coord() * 1e-3, f32::MIN_POSITIVE];
    (p, w)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// M6: v1 → v3 in one load equals v1 → v2 (saved) → v3; both equal the hand conversion;
    /// and saving the migrated state then loading it is stable.
    #[test]
    fn migrating_in_one_go_equals_migrating_in_stages(
        seed in any::<u64>(),
        entities in 0..12usize,
        odd in any::<bool>(),
        json in any::<bool>(),
    ) {
        let codec = if json { Codec::Json } else { Codec::MessagePack };
        let (p1, w1) = arbitrary_v1(seed, entities, odd);
        let storage = MemoryStorage::new();
        let mut s = staged(&storage, 1, codec).snapshot();
        s.capture_memento("player", &p1).unwrap();
        s.capture_memento("world", &w1).unwrap();
        staged(&storage, 1, codec).save(SLOT, &s).unwrap();

        // One go.
        let direct = restore_v3(&staged(&storage, 3, codec).load(SLOT).unwrap().snapshot);
        prop_assert_eq!(&direct, &expected_v3(&expected_v2(&p1), &w1));

        // In stages: a v2 game loads and saves, then a v3 game loads.
        let v2 = staged(&storage, 2, codec);
        let at_v2 = v2.load(SLOT).unwrap();
        prop_assert_eq!(at_v2.report.migrated_from, Some(1));
        v2.save(SLOT, &at_v2.snapshot).unwrap();
        let v3 = staged(&storage, 3, codec);
        let loaded = v3.load(SLOT).unwrap();
        prop_assert_eq!(loaded.report.migrated_from, Some(2));
        prop_assert_eq!(&restore_v3(&loaded.snapshot), &direct);

        // Stable: saved at v3 and loaded again, it is the same state, with no migration.
        v3.save(SLOT, &loaded.snapshot).unwrap();
        let again = v3.load(SLOT).unwrap();
        prop_assert_eq!(again.report.migrated_from, None);
        prop_assert_eq!(&restore_v3(&again.snapshot), &direct);
    }
}
