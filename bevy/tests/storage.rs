//! A save reads the world the same way whatever the storage: a full save copies a table at a
//! time and a delta reads a table's change ticks a table at a time, and a query that cannot (a
//! registered component in a sparse set, or a game's disabling component in one) reads row by
//! row. Each way, a new app loads the world the game has, and a delta writes only the entities
//! that changed.

mod common;

use bevy_ecs::entity_disabling::Disabled;
use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{SaveId, Saveable, Saved, SavegameApp, Written};
use serde::{Deserialize, Serialize};

const SLOT: SlotId = SlotId::Numbered(4);

/// A registered component in a sparse set.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(storage = "SparseSet")]
struct Buff(u32);

fn app(dir: &std::path::Path) -> bevy_app::App {
    let mut app = common::app(dir);
    app.save_component::<Buff>();
    app
}

/// The saved world as the game sees it, with each entity's `Buff`.
fn world_of(world: &mut World) -> Vec<(u32, Observed, Option<Buff>)> {
    let buffs: std::collections::BTreeMap<u32, Buff> = world
        .query_filtered::<(&SaveId, &Buff), With<Saveable>>()
        .iter(world)
        .map(|(id, buff)| (id.get(), *buff))
        .collect();
    observe(world)
        .into_iter()
        .map(|(id, observed)| (id, observed, buffs.get(&id).copied()))
        .collect()
}

fn last_saved(app: &mut bevy_app::App) -> Saved {
    let saved = drain::<Saved>(app);
    assert_eq!(saved.len(), 1, "{saved:?}");
    saved.into_iter().next().unwrap()
}

/// How many entities the delta just saved wrote.
fn delta_entities(app: &mut bevy_app::App) -> usize {
    match last_saved(app).written {
        Written::Delta { entities, .. } => entities,
        other => panic!("not a delta: {other:?}"),
    }
}

/// The game's world, the world a new app loads from the delta, and how many entities the
/// delta wrote.
type Worlds = (
    Vec<(u32, Observed, Option<Buff>)>,
    Vec<(u32, Observed, Option<Buff>)>,
    usize,
);

/// A world of 300 saved entities (more than one block of rows) in groups of ten under a
/// parent, every other one with a `Buff`, a disabled one, and three under an unsaved parent
/// (which the save gives an id); saved whole, then changed: a `Buff` changed, one added and one
/// removed, a position changed (the disabled entity's too), a child moved to another parent,
/// an entity spawned, and one despawned. `hide`, when given, spawns a hidden entity first and
/// changes it with the others. The new app has the unsaved parent under its id.
fn changed_and_loaded(hide: Option<fn(&mut World) -> Entity>) -> Worlds {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let hidden = hide.map(|hide| hide(app.world_mut()));
    let world = app.world_mut();
    let mut spawned = Vec::new();
    let mut parent = None;
    for k in 0..300u32 {
        let mut entity = world.spawn((
            Saveable,
            Position {
                x: k as f32,
                y: 0.0,
            },
        ));
        if k % 2 == 0 {
            entity.insert(Buff(k));
        }
        let e = entity.id();
        spawned.push(e);
        match parent {
            Some(p) if k % 10 != 0 => {
                world.entity_mut(e).insert(ChildOf(p));
            }
            _ => parent = Some(e),
        }
    }
    let unsaved = world.spawn_empty().id();
    for k in 0..3 {
        world.spawn((
            Saveable,
            Position {
                x: 0.0,
                y: k as f32,
            },
            ChildOf(unsaved),
        ));
    }
    let disabled = world
        .spawn((Saveable, Position { x: 1.0, y: 1.0 }, Disabled))
        .id();
    save_slot(&mut app, SLOT, true);
    assert!(matches!(last_saved(&mut app).written, Written::Full(_)));
    let unsaved_id = app.world().get::<SaveId>(unsaved).unwrap().get();

    let world = app.world_mut();
    let e = |_: &mut World, k: usize| spawned[k];
    let buffed = e(world, 100);
    world.get_mut::<Buff>(buffed).unwrap().0 = 7;
    let gains = e(world, 201);
    world.entity_mut(gains).insert(Buff(8));
    let loses = e(world, 202);
    world.entity_mut(loses).remove::<Buff>();
    let moves = e(world, 299);
    world.get_mut::<Position>(moves).unwrap().y = 3.0;
    let child = e(world, 5);
    let new_parent = e(world, 250);
    world.entity_mut(child).insert(ChildOf(new_parent));
    world.spawn((Saveable, Buff(9)));
    world.get_mut::<Position>(disabled).unwrap().x = 2.0;
    let gone = e(world, 77);
    world.despawn(gone);
    if let Some(hidden) = hidden {
        world.get_mut::<Buff>(hidden).unwrap().0 = 11;
        world.get_mut::<Position>(hidden).unwrap().x = 12.0;
    }
    save_slot(&mut app, SLOT, true);
    let written = delta_entities(&mut app);
    let game = world_of(app.world_mut());

    let mut fresh = self::app(dir.path());
    fresh.world_mut().spawn(SaveId::new(unsaved_id).unwrap());
    load_slot(&mut fresh, SLOT);
    (game, world_of(fresh.world_mut()), written)
}

/// The entities the delta writes: four whose values changed (the buffed one, the one that
/// gained, the one that lost, the moved one), the spawned one, the child that changed parent,
/// and the children whose place changed with it: the other eight of its old parent, the nine
/// of its new one, and the eight left beside the despawned one (a removal, not a record); and
/// the disabled one, whose position changed.
const CHANGED: usize = 4 + 1 + 1 + 8 + 9 + 8 + 1;

#[test]
fn a_delta_finds_changes_to_a_component_in_a_sparse_set() {
    let (game, loaded, written) = changed_and_loaded(None);
    assert_eq!(loaded, game);
    assert_eq!(written, CHANGED);
}

#[test]
fn a_delta_leaves_out_what_a_game_s_disabling_component_hides_in_a_table_or_a_sparse_set() {
    fn hidden<T: Component + Default>(world: &mut World) -> Entity {
        world.register_disabling_component::<T>();
        world
            .spawn((
                Saveable,
                T::default(),
                SaveId::new(900).unwrap(),
                Position { x: 0.0, y: 0.0 },
                Buff(10),
            ))
            .id()
    }
    for hide in [
        hidden::<HiddenTable> as fn(&mut World) -> Entity,
        hidden::<HiddenSparse>,
    ] {
        let (game, loaded, written) = changed_and_loaded(Some(hide));
        assert!(
            game.iter().all(|(id, _, _)| *id != 900),
            "hidden from the game"
        );
        assert_eq!(loaded, game);
        assert_eq!(written, CHANGED, "the hidden entity is not written");
    }
}
/// A game's own disabling component, in a table.
#[derive(Component, Default)]
struct HiddenTable;

/// A game's own disabling component, in a sparse set: every query of the plugin reads row by
/// row with it.
#[derive(Component, Default)]
#[component(storage = "SparseSet")]
struct HiddenSparse;
