//! A registered type's memento version is checked on load (RELIABILITY.md M8), as
//! `Snapshot::restore` checks an originator's: a save of an older version goes through the
//! manager's per-memento steps for `component/<name>`, and is refused when no step leads from
//! its version (`NoMementoMigrationPath`) or when it is newer (`NewerMemento`). Before, the
//! plugin decoded every memento with no version at all.

mod common;

use bevy_app::{App, TaskPoolPlugin};
use bevy_ecs::prelude::*;
use bevy_time::TimePlugin;
use common::{Health, builder, drain, settle};
use savegame::migrate::Migrations;
use savegame::{Error, ManagerBuilder, SlotId};
use savegame_bevy::{
    LoadFailed, SaveError, Saveable, SavegameApp, SavegameCommands, SavegamePlugin,
};
use serde::{Deserialize, Serialize};

const SLOT: SlotId = SlotId::Numbered(1);

/// `Health` at memento version 2: it gained `regen`.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct HealthV2 {
    current: u32,
    max: u32,
    #[serde(default)]
    regen: u32,
}

fn app(builder: ManagerBuilder, register: impl FnOnce(&mut App)) -> App {
    let mut app = App::new();
    app.add_plugins((TaskPoolPlugin::default(), TimePlugin))
        .add_plugins(SavegamePlugin::new(builder).unwrap());
    register(&mut app);
    app.finish();
    app.cleanup();
    app
}

/// Saves one entity's `Health` as the game at memento version `version` writes it.
fn save_at(dir: &std::path::Path, version: u32) {
    let mut app = app(builder(dir), |app| {
        app.save_component_versioned::<Health>("Health", version);
    });
    app.world_mut().spawn((
        Saveable,
        Health {
            current: 21,
            max: 100,
        },
    ));
    app.world_mut().commands().save(SLOT);
    app.world_mut().flush();
    settle(&mut app);
}

/// Loads into the game at version 2, with or without the step from 1; the load's error, or
/// the `HealthV2` it loaded.
fn load_v2(dir: &std::path::Path, with_step: bool) -> Result<HealthV2, String> {
    let steps = if with_step {
        Migrations::new().memento_step("component/Health", 1, 2, |column| {
            for value in column
                .get_mut("values")
                .into_iter()
                .flat_map(|v| v.elements_mut())
            {
                value.insert("regen", 3);
            }
            Ok(())
        })
    } else {
        Migrations::new()
    };
    let mut app = app(builder(dir).migrations(steps), |app| {
        app.save_component_versioned::<HealthV2>("Health", 2);
    });
    app.world_mut().commands().load(SLOT);
    app.world_mut().flush();
    if let Some(failed) = drain::<LoadFailed>(&mut app).into_iter().next() {
        return Err(match &*failed.error {
            SaveError::Deserialize { source, .. } => format!("{:?}", **source),
            other => format!("{other:?}"),
        });
    }
    let world = app.world_mut();
    Ok(*world.query::<&HealthV2>().single(world).unwrap())
}

#[test]
fn an_older_component_memento_is_migrated_or_refused_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    save_at(dir.path(), 1);
    assert_eq!(
        load_v2(dir.path(), true),
        Ok(HealthV2 {
            current: 21,
            max: 100,
            regen: 3
        })
    );
    let err = load_v2(dir.path(), false).unwrap_err();
    assert!(err.starts_with("NoMementoMigrationPath"), "{err}");

    save_at(dir.path(), 3);
    for with_step in [true, false] {
        let err = load_v2(dir.path(), with_step).unwrap_err();
        assert!(err.contains("NewerMemento"), "{err}");
    }
    // What the manager itself says of the newer save, for the record.
    let manager = savegame::SaveLoadManager::builder()
        .directory(dir.path())
        .key(savegame::Key::from_bytes(common::KEY))
        .build()
        .unwrap();
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.snapshot.memento_version("component/Health"), Some(3));
    assert!(matches!(
        loaded.snapshot.check_version("component/Health", 2),
        Err(Error::NewerMemento { .. })
    ));
}

/// `component_step` reaches every form a component's values take: a full save's column and a
/// delta's rows, so a slot saved incrementally at memento version 1 loads at version 2.
#[test]
fn a_component_step_migrates_the_column_and_each_deltas_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = app(builder(dir.path()).compact_at(100_000), |app| {
        app.save_component_versioned::<Health>("Health", 1);
    });
    let world = old.world_mut();
    world.spawn((
        Saveable,
        Health {
            current: 1,
            max: 10,
        },
    ));
    let hurt = world
        .spawn((
            Saveable,
            Health {
                current: 2,
                max: 10,
            },
        ))
        .id();
    // A full save, then two deltas that each change the second one's health.
    for delta in 0..3 {
        if delta > 0 {
            old.world_mut().get_mut::<Health>(hurt).unwrap().current += 5;
        }
        old.world_mut().commands().save_incremental(SLOT);
        old.update();
        settle(&mut old);
    }
    let manager = old
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    assert_eq!(manager.info(SLOT).unwrap().deltas, 2);

    let steps = savegame_bevy::migrate::component_step(Migrations::new(), "Health", 1, 2, |h| {
        h.insert("regen", 3);
        Ok(())
    });
    let mut app = app(builder(dir.path()).migrations(steps), |app| {
        app.save_component_versioned::<HealthV2>("Health", 2);
    });
    app.world_mut().commands().load(SLOT);
    app.world_mut().flush();
    let failed = drain::<LoadFailed>(&mut app);
    assert!(failed.is_empty(), "{:?}", failed[0].error);
    let world = app.world_mut();
    let mut loaded: Vec<HealthV2> = world.query::<&HealthV2>().iter(world).copied().collect();
    loaded.sort_by_key(|h| h.current);
    let v2 = |current| HealthV2 {
        current,
        max: 10,
        regen: 3,
    };
    assert_eq!(loaded, [v2(1), v2(12)]);
}
