//! A world of 10,000 saved entities with components, entity references, a hierarchy and two
//! resources is saved, the app dropped, and a new app loads it: everything saved comes back
//! equal, pointing at the same logical entities, and nothing unsaved is touched.

mod common;

use std::collections::HashMap;

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{Loaded, SaveId, Saveable, Saved, SavegameCommands};

const ENTITIES: usize = 10_000;

/// Everything saved about one entity, with references as save ids.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    position: Option<Position>,
    health: Option<Health>,
    target: Option<Option<u32>>,
    label: Option<Label>,
    parent: Option<u32>,
    children: Vec<u32>,
}

fn id_of(world: &World, entity: Entity) -> Option<u32> {
    world.get::<SaveId>(entity).map(|id| id.get())
}

fn observe(world: &mut World) -> HashMap<u32, Expected> {
    let mut query = world.query_filtered::<(Entity, &SaveId), With<Saveable>>();
    let entities: Vec<(Entity, u32)> = query.iter(world).map(|(e, id)| (e, id.get())).collect();
    entities
        .into_iter()
        .map(|(entity, id)| {
            let w = &*world;
            let expected = Expected {
                position: w.get::<Position>(entity).copied(),
                health: w.get::<Health>(entity).copied(),
                // None inside: not a saved entity (before the save, the camera; after the
                // load, the placeholder).
                target: w.get::<Target>(entity).map(|t| id_of(w, t.entity)),
                label: w.get::<Label>(entity).cloned(),
                parent: w.get::<ChildOf>(entity).and_then(|c| id_of(w, c.parent())),
                children: w
                    .get::<Children>(entity)
                    .map(|c| c.iter().filter_map(|c| id_of(w, c)).collect())
                    .unwrap_or_default(),
            };
            (id, expected)
        })
        .collect()
}

#[test]
fn ten_thousand_entities_round_trip_into_a_new_app() {
    let dir = tempfile::tempdir().unwrap();

    let (expected, focus) = {
        let mut app = app(dir.path());
        build_world(app.world_mut(), ENTITIES);
        // The resource with a reference points at the last saved entity.
        let last = app
            .world_mut()
            .query_filtered::<Entity, With<Saveable>>()
            .iter(app.world())
            .last()
            .unwrap();
        app.insert_resource(Focus { entity: last });
        app.insert_resource(Score(987_654)).insert_resource(Level {
            name: "crypt".into(),
            seed: 42,
        });
        app.world_mut().commands().save(SlotId::Numbered(1));
        app.update();
        settle(&mut app);
        let saved = drain::<Saved>(&mut app);
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert_eq!(saved[0].entities, ENTITIES);
        // The first entity's target is the camera: written as the placeholder.
        assert_eq!(saved[0].unsaved_references, 1);
        let focus = app.world().resource::<Focus>().entity;
        let focus = app.world().get::<SaveId>(focus).unwrap().get();
        (observe(app.world_mut()), focus)
        // The app, its manager and its worker are dropped here.
    };
    assert_eq!(expected.len(), ENTITIES);

    let mut app = app(dir.path());
    // The new app's own resources, which the load replaces (resources are entities too).
    app.insert_resource(Score(1))
        .insert_resource(Level {
            name: "start".into(),
            seed: 0,
        })
        .insert_resource(Focus {
            entity: Entity::PLACEHOLDER,
        });
    let world = app.world_mut();
    // Unsaved entities of the new app, which the load must leave alone.
    let camera = world
        .spawn((Camera("new".into()), Position { x: 1.0, y: 2.0 }))
        .id();
    let bystander = world
        .spawn((Health { current: 3, max: 4 }, Label("mine".into())))
        .id();
    // A saved entity already in the world with an id the save has (5): updated in place,
    // keeping its unregistered mesh.
    let kept = world
        .spawn((
            Saveable,
            SaveId::new(5).unwrap(),
            Mesh("keep me".into()),
            Health { current: 1, max: 1 },
        ))
        .id();
    // A saved entity the save does not have: despawned, its unsaved child detached.
    let stale = world.spawn((Saveable, SaveId::new(999_999).unwrap())).id();
    let orphan = world.spawn((Camera("child".into()), ChildOf(stale))).id();

    // The world's own entities (observers, systems, …) are unsaved too; a first frame makes
    // them all.
    app.update();
    let world = app.world_mut();
    let unsaved_before = world
        .query_filtered::<Entity, Without<Saveable>>()
        .iter(world)
        .count();
    world.commands().load(SlotId::Numbered(1));
    app.update();
    let loaded = drain::<Loaded>(&mut app);
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0].entities, ENTITIES);
    assert_eq!(loaded[0].spawned, ENTITIES - 1);
    assert_eq!(loaded[0].despawned, 1);
    assert_eq!(loaded[0].dangling_references, 0);

    let world = app.world_mut();
    let actual = observe(world);
    assert_eq!(actual.len(), ENTITIES);
    for (id, want) in &expected {
        assert_eq!(actual.get(id), Some(want), "entity {id}");
    }
    // The first entity pointed at the unsaved camera: it loads as the placeholder.
    let placeholders = world
        .query::<&Target>()
        .iter(world)
        .filter(|t| t.entity == Entity::PLACEHOLDER)
        .count();
    assert_eq!(placeholders, 1);
    let world = app.world_mut();

    assert_eq!(world.resource::<Score>(), &Score(987_654));
    assert_eq!(world.resource::<Level>().name, "crypt");
    assert_eq!(world.resource::<Level>().seed, 42);
    let focused = world.resource::<Focus>().entity;
    assert_eq!(world.get::<SaveId>(focused).map(|id| id.get()), Some(focus));

    // Untouched: the unsaved entities, and the kept entity's unregistered component.
    assert_eq!(world.get::<Camera>(camera), Some(&Camera("new".into())));
    assert_eq!(
        world.get::<Position>(camera),
        Some(&Position { x: 1.0, y: 2.0 })
    );
    assert_eq!(
        world.get::<Health>(bystander),
        Some(&Health { current: 3, max: 4 })
    );
    assert_eq!(world.get::<Label>(bystander), Some(&Label("mine".into())));
    assert_eq!(world.get::<SaveId>(kept), Some(&SaveId::new(5).unwrap()));
    assert_eq!(world.get::<Mesh>(kept), Some(&Mesh("keep me".into())));
    assert_eq!(world.get::<Health>(kept).copied(), expected[&5].health);
    assert!(world.get_entity(stale).is_err());
    assert!(world.get_entity(orphan).is_ok());
    assert!(world.get::<ChildOf>(orphan).is_none());
    // No unsaved entity came or went.
    let unsaved = world
        .query_filtered::<Entity, Without<Saveable>>()
        .iter(world)
        .count();
    assert_eq!(unsaved, unsaved_before);
    // Meshes were never saved: only the kept entity has one.
    assert_eq!(world.query::<&Mesh>().iter(world).count(), 1);
}

/// A load takes back an entity the game stopped saving (its `Saveable` removed, its `SaveId`
/// kept) whose id the save has saved: `Saveable` is put back on it and its values restored,
/// and no second entity with the id is spawned.
#[test]
fn a_load_takes_back_an_entity_the_game_stopped_saving() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    build_world(app.world_mut(), 20);
    app.world_mut().commands().save(SlotId::Numbered(1));
    app.update();
    settle(&mut app);
    let before = observe(app.world_mut());
    let world = app.world_mut();
    let (entity, id) = world
        .query::<(Entity, &SaveId)>()
        .iter(world)
        .map(|(e, id)| (e, id.get()))
        .find(|(_, id)| *id == 7)
        .unwrap();
    world.entity_mut(entity).remove::<Saveable>();
    world.get_mut::<Position>(entity).unwrap().x = -1.0;

    app.world_mut().commands().load(SlotId::Numbered(1));
    app.update();
    assert_eq!(drain::<Loaded>(&mut app).len(), 1);
    let world = app.world_mut();
    assert!(world.get::<Saveable>(entity).is_some(), "taken back");
    let carrying: Vec<Entity> = world
        .query::<(Entity, &SaveId)>()
        .iter(world)
        .filter(|(_, s)| s.get() == id)
        .map(|(e, _)| e)
        .collect();
    assert_eq!(carrying, [entity], "no second entity with the id");
    assert_eq!(observe(world), before);
}

/// A load spawns each new entity with the registered component most of them have (of those
/// without entity references) in the spawn itself: entities with it and without it, in runs
/// of either kind and in any order of ids, come back with their own values and ids, and the
/// references to them point at the right ones.
#[test]
fn entities_with_and_without_the_component_spawned_with_them_load_as_saved() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    let mut previous = Entity::PLACEHOLDER;
    // Health on most, in runs of one to four with it and without it; ids given out of order.
    for i in 0..60u32 {
        let id = SaveId::new(1_000 - i * 7 % 500).unwrap();
        let mut entity = world.spawn((Saveable, id, Target { entity: previous }));
        if !matches!(i % 7, 2 | 5 | 6) {
            entity.insert(Health {
                current: i,
                max: 100,
            });
        }
        if i % 4 == 0 {
            entity.insert(Position {
                x: i as f32,
                y: 0.0,
            });
        }
        previous = entity.id();
    }
    app.world_mut().commands().save(SlotId::Numbered(1));
    app.update();
    settle(&mut app);
    let saved = common::observe(app.world_mut());
    assert_eq!(saved.len(), 60);

    let mut fresh = common::app(dir.path());
    load_slot(&mut fresh, SlotId::Numbered(1));
    assert_same(&common::observe(fresh.world_mut()), &saved, "a new app");
}
