//! Every save in `fixtures/` loads into the current example game, migrated: `v1-game.sav`,
//! written by version 1 (`Hp { current }`), loads after the rename to `Health` and the new
//! field `max` (see `fixtures/README.md` for the expected outcome).

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/game.rs"]
mod game;

use bevy_ecs::prelude::*;
use game::{Gold, Health, Hero, Hunting, Name, Position, Turn};
use savegame::SlotId;
use savegame_bevy::{LoadFailed, Loaded, Saveable, SavegameCommands};

fn names(world: &mut World, of: &[Entity]) -> Vec<String> {
    of.iter()
        .map(|e| {
            world
                .get::<Name>(*e)
                .map(|n| n.0.clone())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn the_v1_save_loads_after_a_rename_and_a_new_field() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/v1-game.sav");
    std::fs::copy(&fixture, dir.path().join(SlotId::Numbered(1).file_name())).unwrap();

    let mut app = game::app(dir.path()).unwrap();
    app.finish();
    app.cleanup();
    let info = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager()
        .info(SlotId::Numbered(1))
        .unwrap();
    assert_eq!(info.label(), Some("v1: turn 17"));
    assert_eq!(info.schema_version(), Some(1));

    app.world_mut().commands().load(SlotId::Numbered(1));
    app.world_mut().flush();
    let failed: Vec<LoadFailed> = app
        .world_mut()
        .resource_mut::<bevy_ecs::message::Messages<LoadFailed>>()
        .drain()
        .collect();
    assert!(
        failed.is_empty(),
        "{:?}",
        failed.first().map(|f| f.error.to_string())
    );
    let loaded: Vec<Loaded> = app
        .world_mut()
        .resource_mut::<bevy_ecs::message::Messages<Loaded>>()
        .drain()
        .collect();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].report.migrated_from, Some(1));
    assert_eq!(loaded[0].entities, 4);

    let world = app.world_mut();
    let hero = world
        .query_filtered::<Entity, With<Hero>>()
        .single(world)
        .unwrap();
    assert_eq!(world.get::<Name>(hero), Some(&Name("hero".into())));
    assert_eq!(
        world.get::<Health>(hero),
        Some(&Health {
            current: 21,
            max: 100
        })
    );
    assert_eq!(world.get::<Position>(hero), Some(&Position { x: 3 }));
    let children: Vec<Entity> = world.get::<Children>(hero).unwrap().iter().collect();
    assert_eq!(names(world, &children), ["sword", "lamp"]);

    let rat = world
        .query_filtered::<(Entity, &Name), With<Hunting>>()
        .iter(world)
        .map(|(e, n)| (e, n.0.clone()))
        .collect::<Vec<_>>();
    assert_eq!(rat.len(), 1);
    let (rat, name) = &rat[0];
    assert_eq!(name, "rat");
    assert_eq!(world.get::<Hunting>(*rat), Some(&Hunting { target: hero }));
    assert_eq!(
        world.get::<Health>(*rat),
        Some(&Health {
            current: 4,
            max: 100
        })
    );
    assert_eq!(world.get::<Position>(*rat), Some(&Position { x: 5 }));
    assert_eq!(world.resource::<Turn>(), &Turn(17));
    assert_eq!(world.resource::<Gold>(), &Gold(5));
    let saved = world
        .query_filtered::<Entity, With<Saveable>>()
        .iter(world)
        .count();
    assert_eq!(saved, 4);
}
