//! What the tests share: a headless app (the `MinimalPlugins` subset: task pools, time), the
//! test world's types, and the messages an app received.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use bevy_app::{App, TaskPoolPlugin};
use bevy_ecs::entity_disabling::Disabled;
use bevy_ecs::message::{Message, Messages};
use bevy_ecs::prelude::*;
use bevy_time::TimePlugin;
use savegame::{Key, ManagerBuilder, SaveLoadManager};
use savegame_bevy::{SaveManager, Saveable, SavegameApp, SavegameCommands, SavegamePlugin};
use serde::{Deserialize, Serialize};

/// The key of every test manager.
pub const KEY: [u8; 32] = *b"savegame-bevy tests; not secret!";

#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub x: f32,
    pub y: f32,
}

#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub current: u32,
    pub max: u32,
}

/// An entity reference, mapped through `#[entities]`.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    #[entities]
    pub entity: Entity,
}

/// A string, so a dump can be searched for it.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Label(pub String);

/// Not registered: a visual.
#[derive(Component, Clone, Debug, PartialEq)]
pub struct Mesh(pub String);

/// Not registered, on unsaved entities.
#[derive(Component, Clone, Debug, PartialEq)]
pub struct Camera(pub String);

#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score(pub u64);

#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub name: String,
    pub seed: u64,
}

/// A resource with an entity reference (`MapEntities` lets the derive see `#[entities]`).
#[derive(
    Resource, bevy_ecs::entity::MapEntities, Clone, Copy, Debug, PartialEq, Serialize, Deserialize,
)]
pub struct Focus {
    #[entities]
    pub entity: Entity,
}

/// A manager builder over `dir` with the test key.
pub fn builder(dir: &Path) -> ManagerBuilder {
    SaveLoadManager::builder()
        .directory(dir)
        .key(Key::from_bytes(KEY))
}

/// A headless app with the plugin over `builder` and the test types registered.
pub fn app_with(builder: ManagerBuilder) -> App {
    app_on(App::new(), builder)
}

/// [`app_with`], with `C` a disabling component registered before the plugin is added (the
/// order Bevy's docs give: the plugin's queries are built with it).
pub fn app_hiding<C: Component>(builder: ManagerBuilder) -> App {
    let mut app = App::new();
    app.world_mut().register_disabling_component::<C>();
    app_on(app, builder)
}

/// `app` with the plugin over `builder` and the test types registered.
fn app_on(mut app: App, builder: ManagerBuilder) -> App {
    let plugin = match SavegamePlugin::new(builder) {
        Ok(plugin) => plugin,
        Err(e) => panic!("the manager does not build: {e}"),
    };
    app.add_plugins((TaskPoolPlugin::default(), TimePlugin))
        .add_plugins(plugin)
        .save_component::<Position>()
        .save_component::<Health>()
        .save_component::<Target>()
        .save_component::<Label>()
        .save_resource::<Score>()
        .save_resource::<Level>()
        .save_resource::<Focus>();
    app.finish();
    app.cleanup();
    app
}

pub fn app(dir: &Path) -> App {
    app_with(builder(dir))
}

/// Waits for the manager's background saves, then runs a frame so they are reported.
pub fn settle(app: &mut App) {
    let unclaimed = app.world().resource::<SaveManager>().manager().flush();
    assert!(unclaimed.is_empty(), "{unclaimed:?}");
    app.update();
}

/// Every message of type `M` still in the app's buffers.
pub fn messages<M: Message + Clone>(app: &App) -> Vec<M> {
    let messages = app.world().resource::<Messages<M>>();
    messages
        .iter_current_update_messages()
        .cloned()
        .collect::<Vec<_>>()
}

/// Every message of type `M` the app received since the last call (a reader kept in the app).
pub fn drain<M: Message + Clone>(app: &mut App) -> Vec<M> {
    let mut messages = app.world_mut().resource_mut::<Messages<M>>();
    messages.drain().collect()
}

/// The world: entities in groups of ten, the first of each the parent of the other nine;
/// every entity targets the previous one (the first targets the camera, which is not saved);
/// every third has health, every fifth a label; all have a mesh (not registered).
pub fn build_world(world: &mut World, entities: usize) -> Entity {
    let camera = world.spawn(Camera("main".into())).id();
    let mut previous = camera;
    let mut parent = None;
    for i in 0..entities {
        let mut entity = world.spawn((
            Saveable,
            Position {
                x: i as f32 * 0.5,
                y: -(i as f32),
            },
            Target { entity: previous },
            Mesh(format!("mesh-{i}")),
        ));
        if i % 3 == 0 {
            entity.insert(Health {
                current: (i % 97) as u32,
                max: 100,
            });
        }
        if i % 5 == 0 {
            entity.insert(Label(format!("entity {i}")));
        }
        if i % 10 == 0 {
            parent = Some(entity.id());
        } else if let Some(parent) = parent {
            entity.insert(ChildOf(parent));
        }
        previous = entity.id();
    }
    camera
}

/// The ids the world's entities hold (saved or not), ascending; fails, naming `at`, on an id
/// two entities hold.
pub fn unique_ids(world: &mut World, at: &str) -> Vec<u32> {
    // Every entity, those any disabling component hides too (a query would leave them out).
    let mut ids: Vec<u32> = world
        .archetypes()
        .iter()
        .flat_map(|archetype| archetype.entities())
        .filter_map(|e| id_of(world, e.id()))
        .collect();
    ids.sort_unstable();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "{at}: an id held by two entities");
    ids
}

/// Everything saved about one entity, references as save ids: what a load must give back.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub position: Option<Position>,
    pub health: Option<Health>,
    /// `Some(None)`: a target that is not a saved entity.
    pub target: Option<Option<u32>>,
    pub label: Option<Label>,
    /// The parent's save id (saved or not).
    pub parent: Option<u32>,
    /// Every child (saved or not) by save id, `None` for one without.
    pub children: Vec<Option<u32>>,
}

fn id_of(world: &World, entity: Entity) -> Option<u32> {
    world
        .get::<savegame_bevy::SaveId>(entity)
        .map(|id| id.get())
}

/// Every saved entity of the world, by save id, disabled ones too (`Disabled` is not
/// registered: it is not saved, and a new app loads them enabled). Entities a game's own
/// disabling component hides are left out, as saves leave them out: they are not observed, nor
/// seen as a target, a parent or a child.
pub fn observe(world: &mut World) -> std::collections::BTreeMap<u32, Observed> {
    let mut query = world
        .query_filtered::<(Entity, &savegame_bevy::SaveId), (With<Saveable>, Allow<Disabled>)>();
    let entities: Vec<(Entity, u32)> = query.iter(world).map(|(e, id)| (e, id.get())).collect();
    let shown: std::collections::HashSet<Entity> = world
        .query_filtered::<Entity, Allow<Disabled>>()
        .iter(world)
        .collect();
    entities
        .into_iter()
        .map(|(entity, id)| {
            let w = &*world;
            let seen = |e: Entity| shown.contains(&e).then_some(e);
            let observed = Observed {
                position: w.get::<Position>(entity).copied(),
                health: w.get::<Health>(entity).copied(),
                target: w.get::<Target>(entity).map(|t| {
                    seen(t.entity)
                        .filter(|t| w.get::<Saveable>(*t).is_some())
                        .and_then(|t| id_of(w, t))
                }),
                label: w.get::<Label>(entity).cloned(),
                parent: w
                    .get::<ChildOf>(entity)
                    .and_then(|c| seen(c.parent()))
                    .and_then(|parent| id_of(w, parent)),
                children: w
                    .get::<Children>(entity)
                    .map(|c| c.iter().filter_map(seen).map(|c| id_of(w, c)).collect())
                    .unwrap_or_default(),
            };
            (id, observed)
        })
        .collect()
}

/// Fails with the first entities that differ (the whole worlds are too long to read).
#[track_caller]
pub fn assert_same(
    actual: &BTreeMap<u32, Observed>,
    expected: &BTreeMap<u32, Observed>,
    what: &str,
) {
    let ids: std::collections::BTreeSet<u32> =
        actual.keys().chain(expected.keys()).copied().collect();
    let differ: Vec<String> = ids
        .into_iter()
        .filter(|id| actual.get(id) != expected.get(id))
        .take(4)
        .map(|id| {
            format!(
                "{id}: loaded {:?}, expected {:?}",
                actual.get(&id),
                expected.get(&id)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{what}: {}", differ.join("\n"));
}

/// Asks for a save of `slot` (incremental or full), runs the frame, waits for it, and fails on
/// a `SaveFailed`.
pub fn save_slot(app: &mut App, slot: savegame::SlotId, incremental: bool) {
    if incremental {
        app.world_mut().commands().save_incremental(slot);
    } else {
        app.world_mut().commands().save(slot);
    }
    app.update();
    settle(app);
    let failed = drain::<savegame_bevy::SaveFailed>(app);
    assert!(failed.is_empty(), "{}", failed[0].error);
}

/// Loads `slot` into `app`, now, and fails on a `LoadFailed`.
pub fn load_slot(app: &mut App, slot: savegame::SlotId) {
    app.world_mut().commands().load(slot);
    app.update();
    let failed = drain::<savegame_bevy::LoadFailed>(app);
    assert!(failed.is_empty(), "{}", failed[0].error);
}
