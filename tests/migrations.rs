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
/// `v<n>-*` are format version 1, `format2-*` format version 2, `format3-*` format version 3.
const FIXTURES: [(&str, &str); 40] = [
    ("format2-mementos-json-hmac.sav", "adfcfc319522b0ef"),
    ("format2-mementos-msgpack-plain.sav", "818f5b66034f8652"),
    ("format2-mementos.expected.json", "3092bce11d1eddc7"),
    ("format2-v3-bitcode-aes.sav", "b5f2019e747d1d84"),
    ("format2-v3-json-aes.sav", "243bb20faeec47d0"),
    ("format2-v3-json-hmac.sav", "1691772c9502bebe"),
    ("format2-v3-json-lz4-plain.sav", "8e33eec600b133eb"),
    ("format2-v3-json-plain.sav", "f0a558b78bd2529a"),
    ("format2-v3-json-segmented-aes.sav", "92b1becdf8a4fcaf"),
    ("format2-v3-json-zstd-hmac.sav", "3a2628a9165f912e"),
    ("format2-v3-msgpack-aes.sav", "ccfaa0185f500174"),
    ("format2-v3-msgpack-hmac.sav", "48f8284ee4b2793d"),
    ("format2-v3-msgpack-lz4-aes.sav", "83168ae5a02a029c"),
    ("format2-v3-msgpack-plain.sav", "5a70b924195caaf0"),
    ("format2-v3-msgpack-segmented-aes.sav", "ac0f4583b3f4b0b3"),
    ("format2-v3-msgpack-zstd-aes.sav", "b2a2427ee7e19116"),
    ("format3-v3-json-aes.sav", "afe76c33e86a43dd"),
    ("format3-v3-json-hmac.sav", "fbcc13fae8e08956"),
    ("format3-v3-json-plain.sav", "e39af39ef0f69701"),
    ("format3-v3-msgpack-aes.sav", "77af274315634085"),
    ("format3-v3-msgpack-hmac.sav", "bebc06039dcde6be"),
    ("format3-v3-msgpack-plain.sav", "fa6cb4d133ffe2b1"),
    ("format3-v3-msgpack-zstd-pieces-aes.sav", "e1e806c173192421"),
    (
        "format3-v3-msgpack-zstd-pieces-streamed-aes.sav",
        "c0714318a49109f8",
    ),
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

/// How a fixture is sealed: the last word of its name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Seal {
    Plain,
    Aes,
    Hmac,
}

impl Seal {
    fn of(name: &str) -> Seal {
        match name.rsplit('-').next() {
            Some("aes.sav") => Seal::Aes,
            Some("hmac.sav") => Seal::Hmac,
            _ => Seal::Plain,
        }
    }

    /// A builder that opens such files: with the fixtures' key, encrypting or integrity-only.
    fn builder(self, dir: &Path) -> savegame::ManagerBuilder {
        let b = SaveLoadManager::builder().directory(dir);
        match self {
            Seal::Plain => b,
            Seal::Aes => b.key(fixture_key()),
            Seal::Hmac => b.integrity_only(fixture_key()),
        }
    }
}

/// The game today: schema v3 with the embedded steps of `migrations/`.
fn v3_manager(dir: &Path, seal: Seal) -> SaveLoadManager {
    seal.builder(dir)
        .schema_version(3)
        .migrations(savegame::embed_migrations!("migrations").unwrap())
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

/// Every save fixture of the schema story: `(file, schema version, seal, format version)`.
fn save_files() -> Vec<(String, u32, Seal, u16)> {
    let mut out = Vec::new();
    for version in 1..=3 {
        for codec in ["json", "msgpack"] {
            for enc in ["plain", "aes"] {
                let name = format!("v{version}-{codec}-{enc}.sav");
                out.push((name.clone(), version, Seal::of(&name), 1));
            }
        }
    }
    for codec in ["json", "msgpack"] {
        for enc in ["plain", "aes", "hmac", "segmented-aes"] {
            let name = format!("format2-v3-{codec}-{enc}.sav");
            out.push((name.clone(), 3, Seal::of(&name), 2));
        }
        for enc in ["plain", "aes", "hmac"] {
            let name = format!("format3-v3-{codec}-{enc}.sav");
            out.push((name.clone(), 3, Seal::of(&name), 3));
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
    for (name, version, seal, format) in save_files() {
        let (dir, _) = install(&name);
        let manager = v3_manager(dir.path(), seal);
        let loaded = manager.load(SLOT).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.report.header.format_version, format, "{name}");
        assert_eq!(loaded.report.header.authenticated, seal == Seal::Hmac);
        assert_eq!(loaded.report.header.encrypted, seal == Seal::Aes);
        // Encrypted format-2 files from before segments are one message; later ones, and every
        // encrypted file of format 3, segments.
        let segmented = name.contains("segmented") || (format == 3 && seal == Seal::Aes);
        assert_eq!(
            loaded.report.header.segment_log,
            segmented.then_some(18),
            "{name}"
        );
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
        let label = if format == 1 {
            format!("fixture v{version}")
        } else {
            format!("fixture format {format} v3")
        };
        assert_eq!(loaded.snapshot.metadata().label, label);
    }
}

#[test]
fn format_1_fixtures_load_with_every_memento_at_the_default_version() {
    for (name, _, seal, format) in save_files() {
        let (dir, _) = install(&name);
        let loaded = v3_manager(dir.path(), seal).load(SLOT).unwrap();
        for id in loaded.snapshot.ids() {
            assert_eq!(
                loaded.snapshot.memento_version(id),
                Some(savegame::format::DEFAULT_MEMENTO_VERSION),
                "{name}: {id} (format {format})"
            );
        }
    }
}

/// The per-memento story's `player` at memento version 2: `stamina` became `energy`, and a
/// title was added (see `examples/make_fixtures.rs`).
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct PlayerV2 {
    health: u32,
    position: savegame_testkit::versions::v2::Position,
    energy: u32,
    title: String,
}

/// The per-memento story's one step, `player` 1 → 2, counting its runs in `runs`.
fn player_step(runs: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Migrations {
    Migrations::new().memento_step("player", 1, 2, move |player| {
        runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        player.rename("stamina", "energy");
        player.insert_if_absent("title", "wanderer");
        Ok(())
    })
}

#[test]
fn a_save_with_player_at_v1_and_world_at_v3_loads_through_one_per_memento_step() {
    #[derive(serde::Deserialize)]
    struct Expected {
        player: PlayerV2,
        inventory: v3::Inventory,
        world: v3::World,
        memento_versions: std::collections::BTreeMap<String, u32>,
    }
    let expected: Expected = serde_json::from_str(
        &std::fs::read_to_string(repo("fixtures/format2-mementos.expected.json")).unwrap(),
    )
    .unwrap();
    for name in [
        "format2-mementos-json-hmac.sav",
        "format2-mementos-msgpack-plain.sav",
    ] {
        let (dir, _) = install(name);
        let runs = std::sync::Arc::default();
        let manager = Seal::of(name)
            .builder(dir.path())
            .schema_version(3)
            .migrations(
                savegame::embed_migrations!("migrations")
                    .unwrap()
                    .with(player_step(std::sync::Arc::clone(&runs))),
            )
            .build()
            .unwrap();
        let loaded = manager.load(SLOT).unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = &loaded.snapshot;
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1, "{name}");
        assert_eq!(loaded.report.migrated_from, None, "the schema did not move");
        assert_eq!(s.memento::<PlayerV2>("player").unwrap(), expected.player);
        assert_eq!(
            s.memento::<v3::Inventory>("inventory").unwrap(),
            expected.inventory
        );
        assert_eq!(s.memento::<v3::World>("world").unwrap(), expected.world);
        for (id, version) in &expected.memento_versions {
            assert_eq!(s.memento_version(id), Some(*version), "{name}: {id}");
        }
        // Saved again, the versions are the new ones, and nothing runs a second time.
        manager.save(SLOT, s).unwrap();
        let again = manager.load(SLOT).unwrap();
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(again.snapshot.memento_version("player"), Some(2));
        assert_eq!(
            again.snapshot.memento::<PlayerV2>("player").unwrap(),
            expected.player
        );
        // Without the step, the player is refused where the game restores it: its memento is
        // older than the originator's.
        let (dir, _) = install(name);
        let stepless = v3_manager(dir.path(), Seal::of(name)).load(SLOT).unwrap();
        let mut player = VersionedPlayer(None);
        assert!(matches!(
            stepless.snapshot.restore("player", &mut player),
            Err(Error::NoMementoMigrationPath { ref id, from: 1, to: 2 }) if id == "player"
        ));
        loaded.snapshot.restore("player", &mut player).unwrap();
        assert_eq!(player.0.as_ref(), Some(&expected.player));
    }
}

/// An originator whose memento is [`PlayerV2`], at memento version 2.
struct VersionedPlayer(Option<PlayerV2>);

impl savegame::Originator for VersionedPlayer {
    type Memento = PlayerV2;
    fn memento_version(&self) -> u32 {
        2
    }
    fn create_memento(&self) -> PlayerV2 {
        PlayerV2 {
            health: 0,
            position: savegame_testkit::versions::v2::Position {
                x: 0.0,
                y: 0.0,
                z: 0.0,
            },
            energy: 0,
            title: String::new(),
        }
    }
    fn restore_memento(&mut self, m: PlayerV2) -> savegame::Result<()> {
        self.0 = Some(m);
        Ok(())
    }
}

/// The documented order: whole-document steps first (they may rename a memento, and it keeps
/// its version), then each memento's own steps, under the id it has after them.
#[test]
fn whole_document_steps_run_before_per_memento_steps() {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    // A save of schema 1 whose memento `hero` is at memento version 1.
    let old = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::Json)
        .build()
        .unwrap();
    let mut snapshot = old.snapshot();
    snapshot
        .capture_memento("hero", &serde_json::json!({"hp": 7}))
        .unwrap();
    snapshot
        .capture_memento("mod_quest", &serde_json::json!({"stage": 1}))
        .unwrap();
    snapshot.set_memento_version("mod_quest", 4).unwrap();
    old.save(SLOT, &snapshot).unwrap();

    let order = Arc::new(Mutex::new(Vec::new()));
    let (o1, o2, o3) = (Arc::clone(&order), Arc::clone(&order), Arc::clone(&order));
    let steps = Migrations::new()
        .step(2, "hero_is_player", move |doc| {
            // A document step sees each memento at the version the file recorded.
            o1.lock().unwrap().push(format!(
                "document 2 (hero at {:?}, mod_quest at {:?})",
                doc.memento_version("hero"),
                doc.memento_version("mod_quest")
            ));
            doc.move_value("/hero", "/player")
        })
        .memento_step("player", 1, 2, move |player| {
            o2.lock().unwrap().push("player 1→2".to_owned());
            player.rename("hp", "health");
            Ok(())
        })
        .memento_step("mod_quest", 4, 5, move |quest| {
            o3.lock().unwrap().push("mod_quest 4→5".to_owned());
            quest.insert_if_absent("branch", "north");
            Ok(())
        });
    let game = SaveLoadManager::builder()
        .directory(dir.path())
        .schema_version(2)
        .migrations(steps)
        .build()
        .unwrap();
    let loaded = game.load(SLOT).unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        [
            "document 2 (hero at Some(1), mod_quest at Some(4))",
            // Mementos in ascending id order, each through its whole chain.
            "mod_quest 4→5",
            "player 1→2",
        ]
    );
    let s = &loaded.snapshot;
    assert_eq!(s.ids().collect::<Vec<_>>(), ["mod_quest", "player"]);
    assert_eq!(
        (s.memento_version("player"), s.memento_version("mod_quest")),
        (Some(2), Some(5))
    );
    assert_eq!(
        s.memento::<serde_json::Value>("player").unwrap(),
        serde_json::json!({"health": 7})
    );
    assert_eq!(
        s.memento::<serde_json::Value>("mod_quest").unwrap(),
        serde_json::json!({"stage": 1, "branch": "north"})
    );
    assert_eq!(loaded.report.migrated_from, Some(1));
}

#[test]
fn per_memento_chains_are_checked_and_newer_or_failing_mementos_are_refused() {
    let build = |m: Migrations| {
        SaveLoadManager::builder()
            .storage(MemoryStorage::new())
            .migrations(m)
            .build()
    };
    let step = |from: u32, to: u32| Migrations::new().memento_step("player", from, to, |_| Ok(()));
    assert!(build(step(1, 2).with(step(2, 3))).is_ok());
    for (m, what) in [
        (step(1, 3), "up one version"),
        (step(1, 2).with(step(3, 4)), "gap"),
        (step(1, 2).with(step(1, 2)), "two steps"),
        (step(0, 1), "start at 1"),
    ] {
        match build(m) {
            Err(Error::MigrationChain { reason }) => {
                assert!(
                    reason.contains(what) && reason.contains("player"),
                    "{reason}"
                )
            }
            other => panic!("{what}: {other:?}"),
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let plain = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::Json)
        .build()
        .unwrap();
    let mut snapshot = plain.snapshot();
    snapshot
        .capture_memento("player", &serde_json::json!({"hp": 1}))
        .unwrap();
    snapshot.set_memento_version("player", 5).unwrap();
    plain.save(SLOT, &snapshot).unwrap();
    let path = plain.path_of(SLOT);
    let before = std::fs::read(&path).unwrap();
    let game = |m: Migrations| {
        SaveLoadManager::builder()
            .directory(dir.path())
            .migrations(m)
            .build()
            .unwrap()
    };
    // A memento from a newer mod than the game's steps reach.
    assert!(matches!(
        game(step(1, 2)).load(SLOT),
        Err(Error::NewerMemento { ref id, found: 5, supported: 2 }) if id == "player"
    ));
    // A failing step names the memento and the versions; the file is untouched.
    let failing = Migrations::new().memento_step("player", 5, 6, |player| {
        player.rename("hp", "health");
        Err(MigrationError::new("/player/health", "too much health"))
    });
    match game(failing).load(SLOT) {
        Err(Error::MementoMigration {
            id,
            from: 5,
            to: 6,
            source,
        }) => assert_eq!(
            (id.as_str(), source.path.as_str()),
            ("player", "/player/health")
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn the_rust_steps_and_the_step_files_agree_on_every_fixture() {
    for (name, _, seal, _) in save_files() {
        let (dir, _) = install(&name);
        let declarative = v3_manager(dir.path(), seal).load(SLOT).unwrap();
        let rust = seal
            .builder(dir.path())
            .schema_version(3)
            .migrations(rust_steps())
            .build()
            .unwrap()
            .load(SLOT)
            .unwrap();
        assert_eq!(
            restore_v3(&declarative.snapshot),
            restore_v3(&rust.snapshot),
            "{name}"
        );
        // Byte for byte, too: the step files' `map` rewrites a MessagePack world on its bytes,
        // the Rust step through the value tree.
        assert_eq!(
            declarative.snapshot.raw("world"),
            rust.snapshot.raw("world"),
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

        let v3 = v3_manager(dir.path(), Seal::Plain);
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
    for (name, version, seal, _) in save_files().into_iter().filter(|(_, v, ..)| *v < 3) {
        let (dir, slot_file) = install(&name);
        let original = std::fs::read(&slot_file).unwrap();
        let manager = v3_manager(dir.path(), seal);
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
    let plan = v3_manager(dir.path(), Seal::Aes)
        .plan_migration(SLOT)
        .unwrap();
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
