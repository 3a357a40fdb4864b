//! Every restore path checks the memento version (RELIABILITY.md M8): a whole-game state
//! (`load_state` and `#[derive(SaveState)]`'s code), a `Registry`, a state loaded with deltas,
//! and replay keyframes each run a memento's own steps, or refuse it as `Snapshot::restore`
//! does: `NoMementoMigrationPath` for an older one no step migrates, `NewerMemento` for a
//! newer one. (The Bevy plugin's own test is in `bevy/tests/versions.rs`.)
//!
//! The hole of issue 26: on 1c7407f the derive's code and `Registry::restore_state` decoded
//! with `Snapshot::memento`, which checks no version, so `load_state` handed a version-1
//! memento to a version-2 originator as its own (here: `energy` came back as its default),
//! and took a version-3 one without a word.

use savegame::migrate::Migrations;
use savegame::replay::{Player as ReplayPlayer, Recorder, Replayable};
use savegame::storage::MemoryStorage;
use savegame::{Codec, Error, Originator, Registry, SaveLoadManager, SaveState, SlotId, Snapshot};
use serde::{Deserialize, Serialize};

const SLOT: SlotId = SlotId::Numbered(1);

/// What the player's memento was at version 1.
#[derive(Serialize, Deserialize)]
struct PlayerV1 {
    health: u32,
    stamina: u32,
}

/// At version 2, `stamina` is `energy`. Its default makes a version-1 memento decode without
/// an error, into the wrong state: the silent misread M8 is about.
#[derive(Originator, Default, Debug, PartialEq)]
#[savegame(version = 2, derive(Debug))]
struct Player {
    health: u32,
    #[serde(default)]
    energy: u32,
}

#[derive(Originator, Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
#[savegame(self_memento, version = 2)]
struct Monster {
    hp: u32,
    #[serde(default)]
    rage: u32,
}

#[derive(SaveState, Default)]
struct Game {
    player: Player,
    #[savegame(flatten)]
    monsters: Registry<Monster>,
}

fn game() -> Game {
    Game {
        monsters: Registry::new()
            .with_prefix("monster/")
            .spawn_with(|_| Some(Monster::default())),
        ..Game::default()
    }
}

/// The steps of the game at version 2: the player's 1 → 2, and every monster's (a pattern).
fn steps() -> Migrations {
    Migrations::new()
        .memento_step("player", 1, 2, |player| {
            player.rename("stamina", "energy");
            Ok(())
        })
        .memento_step("monster/*", 1, 2, |monster| {
            monster.rename("anger", "rage");
            Ok(())
        })
}

fn manager(storage: &MemoryStorage, steps: Migrations) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .migrations(steps)
        .compact_at(10_000)
        .build()
        .unwrap()
}

/// A save of the game as an older (or newer) build wrote it: the player and one monster at
/// memento version `version`, in version 1's shape.
fn old_save(storage: &MemoryStorage, version: u32) {
    let writer = manager(storage, Migrations::new());
    let mut snapshot = writer.snapshot();
    let player = PlayerV1 {
        health: 80,
        stamina: 55,
    };
    snapshot
        .capture_memento_versioned("player", &player, version)
        .unwrap();
    let monster = serde_json::json!({"hp": 3, "anger": 9});
    snapshot
        .capture_memento_versioned("monster/rat-1", &monster, version)
        .unwrap();
    writer.save(SLOT, &snapshot).unwrap();
}

#[test]
fn load_state_migrates_a_version_1_memento_and_refuses_a_version_3_one() {
    let storage = MemoryStorage::new();
    old_save(&storage, 1);
    let mut loaded = game();
    manager(&storage, steps())
        .load_state(SLOT, &mut loaded)
        .unwrap();
    assert_eq!(
        loaded.player,
        Player {
            health: 80,
            energy: 55
        }
    );
    assert_eq!(
        loaded.monsters.get("rat-1"),
        Some(&Monster { hp: 3, rage: 9 })
    );

    // Without the steps: refused, not misread (on 1c7407f this returned Ok with energy 0).
    let err = manager(&storage, Migrations::new())
        .load_state(SLOT, &mut game())
        .unwrap_err();
    assert!(
        matches!(&err, Error::NoMementoMigrationPath { id, from: 1, to: 2 } if id == "player"),
        "{err:?}"
    );

    // From a newer game: refused, whatever the steps.
    old_save(&storage, 3);
    for steps in [steps(), Migrations::new()] {
        let err = manager(&storage, steps)
            .load_state(SLOT, &mut game())
            .unwrap_err();
        assert!(
            matches!(
                &err,
                Error::NewerMemento {
                    found: 3,
                    supported: 2,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

#[test]
fn a_registry_checks_each_entitys_memento_version() {
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot
        .capture_memento_versioned("rat-1", &Monster { hp: 1, rage: 0 }, 2)
        .unwrap();
    snapshot
        .capture_memento_versioned("rat-2", &Monster { hp: 2, rage: 0 }, 1)
        .unwrap();
    let mut registry = Registry::new().spawn_with(|_| Some(Monster::default()));
    let err = registry.restore_state(&snapshot).unwrap_err();
    assert!(
        matches!(&err, Error::NoMementoMigrationPath { id, from: 1, to: 2 } if id == "rat-2"),
        "{err:?}"
    );
    // Nothing changed: every memento is checked and decoded before anything is restored.
    assert!(registry.is_empty());
    snapshot.set_memento_version("rat-2", 3).unwrap();
    let err = registry.restore_state(&snapshot).unwrap_err();
    assert!(
        matches!(&err, Error::NewerMemento { found: 3, .. }),
        "{err:?}"
    );
    snapshot.set_memento_version("rat-2", 2).unwrap();
    assert_eq!(registry.restore_state(&snapshot).unwrap().restored, 2);
}

#[test]
fn a_state_loaded_with_deltas_migrates_and_refuses_their_mementos_too() {
    let storage = MemoryStorage::new();
    old_save(&storage, 1);
    // The old game saved incrementally after: a delta with the player at version 1.
    let writer = manager(&storage, Migrations::new());
    let mut changes = writer.snapshot();
    let player = PlayerV1 {
        health: 81,
        stamina: 56,
    };
    changes
        .capture_memento_versioned("player", &player, 1)
        .unwrap();
    writer.save_incremental(SLOT, &changes).unwrap();

    let mut loaded = game();
    let outcome = manager(&storage, steps())
        .load_state(SLOT, &mut loaded)
        .unwrap();
    assert_eq!(outcome.report.deltas, 1);
    assert_eq!(
        loaded.player,
        Player {
            health: 81,
            energy: 56
        }
    );
    let err = manager(&storage, Migrations::new())
        .load_state(SLOT, &mut game())
        .unwrap_err();
    assert!(
        matches!(err, Error::NoMementoMigrationPath { .. }),
        "{err:?}"
    );
    // A delta from a newer game.
    let mut changes = writer.snapshot();
    changes
        .capture_memento_versioned("player", &player, 3)
        .unwrap();
    writer.save_incremental(SLOT, &changes).unwrap();
    let err = manager(&storage, steps())
        .load_state(SLOT, &mut game())
        .unwrap_err();
    assert!(
        matches!(err, Error::NewerMemento { found: 3, .. }),
        "{err:?}"
    );
}

/// A replayed game whose keyframes are whole states.
#[derive(Default)]
struct Replayed(Game);

impl Replayable for Replayed {
    type Input = u32;
    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.0.restore_state(keyframe).map(drop)
    }
    fn step(&mut self, _frame: u64, input: u32) -> savegame::Result<()> {
        self.0.player.health += input;
        Ok(())
    }
}

#[test]
fn replay_keyframes_run_the_memento_steps_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for version in [1, 3] {
        let path = dir.path().join(format!("v{version}.replay"));
        let mut recorder = Recorder::builder()
            .codec(Codec::Json)
            .keyframe_every(5)
            .create(&path)
            .unwrap();
        for frame in 0..10u32 {
            if recorder.keyframe_due() {
                let mut keyframe = recorder.snapshot();
                let player = PlayerV1 {
                    health: 80,
                    stamina: 55,
                };
                keyframe
                    .capture_memento_versioned("player", &player, version)
                    .unwrap();
                recorder.keyframe(&keyframe).unwrap();
            }
            recorder.frame(&frame, None).unwrap();
        }
        recorder.finish().unwrap();

        let mut replayed = Replayed(game());
        let result = ReplayPlayer::builder()
            .migrations(steps())
            .open(&path)
            .unwrap()
            .seek(&mut replayed, 5);
        if version == 1 {
            result.unwrap();
            assert_eq!(replayed.0.player.energy, 55);
        } else {
            let err = result.unwrap_err();
            assert!(
                matches!(err, Error::NewerMemento { found: 3, .. }),
                "{err:?}"
            );
        }
        let err = ReplayPlayer::builder()
            .open(&path)
            .unwrap()
            .seek(&mut Replayed(game()), 5)
            .unwrap_err();
        let expected = if version == 1 {
            matches!(err, Error::NoMementoMigrationPath { from: 1, to: 2, .. })
        } else {
            matches!(err, Error::NewerMemento { found: 3, .. })
        };
        assert!(expected, "v{version}: {err:?}");
    }
}

#[test]
fn the_derive_records_its_version_and_a_raw_memento_can_be_captured_at_one() {
    let player = Player {
        health: 1,
        energy: 2,
    };
    assert_eq!(player.memento_version(), 2);
    assert_eq!(Monster::default().memento_version(), 2);
    let mut snapshot = Snapshot::new(Codec::MessagePack);
    snapshot.capture("player", &player).unwrap();
    assert_eq!(snapshot.memento_version("player"), Some(2));
    snapshot
        .capture_memento_versioned("raw", &player.create_memento(), 7)
        .unwrap();
    assert_eq!(snapshot.memento_version("raw"), Some(7));
    let mut restored = Player::default();
    snapshot.restore("player", &mut restored).unwrap();
    assert_eq!(restored, player);
    assert!(matches!(
        snapshot.restore("raw", &mut restored),
        Err(Error::NewerMemento { found: 7, .. })
    ));
}
