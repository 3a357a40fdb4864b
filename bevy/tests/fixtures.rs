//! Every save in `fixtures/` loads into the current example game, migrated: `v1-game.sav`,
//! written by version 1 (`Hp { current }`), loads after the rename to `Health` and the new
//! field `max`; `v2-deltas.sav` with its journal, deltas of one memento per entity and
//! component, loads to what they hold (see `fixtures/README.md` for the expected outcomes).

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
    let mut app = app_with_fixture(dir.path(), &[("v1-game.sav", ONE.file_name())]);
    let info = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager()
        .info(ONE)
        .unwrap();
    assert_eq!(info.label(), Some("v1: turn 17"));
    assert_eq!(info.schema_version(), Some(1));

    let loaded = load(&mut app, ONE);
    assert_eq!(loaded.report.migrated_from, Some(1));
    assert_eq!(loaded.entities, 4);

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

/// The slot's files copied from `fixtures/` into a new folder, and the game's app over it.
fn app_with_fixture(dir: &std::path::Path, files: &[(&str, String)]) -> bevy_app::App {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for (from, to) in files {
        std::fs::copy(fixtures.join(from), dir.join(to)).unwrap();
    }
    let mut app = game::app(dir).unwrap();
    app.finish();
    app.cleanup();
    app
}

/// The fixture's slot.
const ONE: SlotId = SlotId::Numbered(1);

/// The slot's files copied from `fixtures/` into `dir`, and the game's app over it: the
/// `v2-deltas.sav` base and journal as slot 1.
fn app_with_v2_deltas(dir: &std::path::Path) -> bevy_app::App {
    let name = ONE.file_name();
    app_with_fixture(
        dir,
        &[
            ("v2-deltas.sav", name.clone()),
            ("v2-deltas.sav.journal", format!("{name}.journal")),
        ],
    )
}

/// Loads `slot` now, and returns what the load reported.
fn load(app: &mut bevy_app::App, slot: SlotId) -> Loaded {
    app.world_mut().commands().load(slot);
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
    let mut loaded: Vec<Loaded> = app
        .world_mut()
        .resource_mut::<bevy_ecs::message::Messages<Loaded>>()
        .drain()
        .collect();
    assert_eq!(loaded.len(), 1);
    loaded.remove(0)
}

fn named(world: &mut World, name: &str) -> Option<Entity> {
    let mut query = world.query::<(Entity, &Name)>();
    query.iter(world).find(|(_, n)| n.0 == name).map(|(e, _)| e)
}

/// What `v2-deltas.sav` and its journal hold, as `fixtures/README.md` says.
fn check_v2_deltas(world: &mut World) {
    let hero = named(world, "hero").unwrap();
    assert!(world.get::<Hero>(hero).is_some());
    assert_eq!(
        world.get::<Health>(hero),
        Some(&Health {
            current: 27,
            max: 30
        })
    );
    assert_eq!(world.get::<Position>(hero), Some(&Position { x: 2 }));
    let children: Vec<Entity> = world.get::<Children>(hero).unwrap().iter().collect();
    // The sword's drop is not in the file: deltas of that version missed a removed `ChildOf`.
    assert_eq!(names(world, &children), ["sword", "lamp", "potion"]);
    assert!(named(world, "rat").is_none());
    let bat = named(world, "bat").unwrap();
    assert_eq!(world.get::<Health>(bat), None, "the bat lost its health");
    assert_eq!(world.get::<Position>(bat), Some(&Position { x: 14 }));
    assert_eq!(world.get::<Hunting>(bat), Some(&Hunting { target: hero }));
    assert_eq!(world.resource::<Turn>(), &Turn(4));
    assert_eq!(world.resource::<Gold>(), &Gold(9));
    let saved = world
        .query_filtered::<Entity, With<Saveable>>()
        .iter(world)
        .count();
    assert_eq!(saved, 5);
}

#[test]
fn the_v2_deltas_of_one_memento_per_entity_and_component_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with_v2_deltas(dir.path());
    let loaded = load(&mut app, ONE);
    assert_eq!(
        loaded.report.deltas, 1,
        "{:?}",
        loaded.report.journal_problem
    );
    assert_eq!(loaded.entities, 5);
    check_v2_deltas(app.world_mut());

    // The first incremental save of the slot in this run is a full one: the old deltas are
    // replaced, and a new app loads the same world from it.
    save_incremental(&mut app, ONE);
    let mut fresh = app_with_fixture(dir.path(), &[]);
    let loaded = load(&mut fresh, ONE);
    assert_eq!(loaded.report.deltas, 0);
    check_v2_deltas(fresh.world_mut());
}

/// Saves `slot` incrementally now, and waits for it.
fn save_incremental(app: &mut bevy_app::App, slot: SlotId) {
    let world = app.world_mut();
    world.commands().save_incremental(slot);
    world.flush();
    assert!(
        world
            .resource::<savegame_bevy::SaveManager>()
            .manager()
            .flush()
            .is_empty()
    );
}

/// Older deltas that reach a slot the plugin already saves incrementally (a copy through the
/// manager, a file restored by hand) load, and a delta of rows on top of them keeps their
/// values: the older kind is applied first, then the rows.
#[test]
fn rows_on_top_of_older_deltas_keep_the_older_deltas_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with_v2_deltas(dir.path());
    let two = SlotId::Numbered(2);
    // Slot 2 is followed (its first incremental save, a full one), then the game copies the
    // fixture's slot over it.
    save_incremental(&mut app, two);
    let manager = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    manager.copy(ONE, two).unwrap();
    load(&mut app, two);
    // The hero, written by an older delta, is put under the bat: a record, no values.
    let world = app.world_mut();
    let hero = named(world, "hero").unwrap();
    let bat = named(world, "bat").unwrap();
    world.entity_mut(hero).insert(ChildOf(bat));
    save_incremental(&mut app, two);

    let mut fresh = app_with_fixture(dir.path(), &[]);
    load(&mut fresh, two);
    let world = fresh.world_mut();
    let hero = named(world, "hero").unwrap();
    assert_eq!(
        world.get::<Health>(hero),
        Some(&Health {
            current: 27,
            max: 30
        })
    );
    assert_eq!(world.get::<Position>(hero), Some(&Position { x: 2 }));
    let bat = named(world, "bat").unwrap();
    assert_eq!(world.get::<ChildOf>(hero).map(ChildOf::parent), Some(bat));
    let potion = named(world, "potion").unwrap();
    assert_eq!(
        world.get::<ChildOf>(potion).map(ChildOf::parent),
        Some(hero)
    );
}
