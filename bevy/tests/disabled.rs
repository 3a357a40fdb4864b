//! Disabled entities (Bevy's `Disabled`, which the default query filters hide) are saved and
//! loaded as the others: a full save and a delta write them, a load in place updates them
//! where they are (never a second entity under their id), and a new app loads them enabled,
//! or disabled where the game saves `Disabled` itself (`save_reflect::<Disabled>()`). A game's
//! own disabling component hides entities from saves, and a load spawns no second entity
//! under the id of one it hides; hiding a saved entity, or showing it again, makes the next
//! incremental save a full one.

mod common;

use bevy_ecs::entity_disabling::Disabled;
use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{SaveId, Saveable};

const SLOT: SlotId = SlotId::Numbered(5);

fn save(app: &mut bevy_app::App, incremental: bool) {
    save_slot(app, SLOT, incremental);
}

fn load(app: &mut bevy_app::App) {
    load_slot(app, SLOT);
}

/// Spawns two saved entities; returns the first.
fn two_saved(world: &mut World) -> Entity {
    let first = world.spawn((Saveable, Position { x: 1.0, y: 1.0 })).id();
    world.spawn((Saveable, Position { x: 2.0, y: 2.0 }));
    first
}

/// The ids of the disabled saved entities.
fn disabled(world: &mut World) -> Vec<u32> {
    let mut ids: Vec<u32> = world
        .query_filtered::<&SaveId, (With<Saveable>, With<Disabled>)>()
        .iter(world)
        .map(|id| id.get())
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn a_disabled_entity_is_saved_and_loaded_like_the_others() {
    for incremental in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        let world = app.world_mut();
        let hidden = world
            .spawn((
                Saveable,
                Position { x: 1.0, y: 1.0 },
                Health { current: 1, max: 2 },
            ))
            .id();
        let shown = world.spawn((Saveable, Position { x: 2.0, y: 2.0 })).id();
        world.spawn((Saveable, Target { entity: hidden }));
        save(&mut app, incremental);
        // Disabled, then changed, while the slot is followed: its changes are saved.
        let world = app.world_mut();
        world.entity_mut(hidden).insert(Disabled);
        world.get_mut::<Position>(hidden).unwrap().x = 5.0;
        world.entity_mut(hidden).remove::<Health>();
        // A disabled entity spawned, and one disabled and then despawned.
        world.spawn((Saveable, Disabled, Label("new".into())));
        world.entity_mut(shown).insert(Disabled);
        world.despawn(shown);
        save(&mut app, incremental);
        let what = if incremental { "deltas" } else { "full saves" };
        let expected = observe(app.world_mut());
        assert_eq!(expected.len(), 3, "{what}: {expected:?}");
        // A new app: every entity, enabled (`Disabled` is not saved).
        let mut fresh = common::app(dir.path());
        load(&mut fresh);
        assert_same(&observe(fresh.world_mut()), &expected, what);
        assert!(disabled(fresh.world_mut()).is_empty(), "{what}");
        // In place: each entity once, the disabled ones still disabled.
        let before = disabled(app.world_mut());
        assert_eq!(before.len(), 2, "{what}");
        load(&mut app);
        unique_ids(app.world_mut(), what);
        assert_same(&observe(app.world_mut()), &expected, what);
        assert_eq!(disabled(app.world_mut()), before, "{what}");
    }
}

/// A disabled entity the slot has, loaded in place: updated where it is, not spawned again
/// beside it under its id.
#[test]
fn a_load_in_place_updates_a_disabled_entity_and_spawns_no_second() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let e = app
        .world_mut()
        .spawn((Saveable, Position { x: 1.0, y: 1.0 }))
        .id();
    save(&mut app, false);
    app.world_mut().entity_mut(e).insert(Disabled);
    app.world_mut().get_mut::<Position>(e).unwrap().x = 9.0;
    load(&mut app);
    assert_eq!(unique_ids(app.world_mut(), "in place").len(), 1);
    assert_eq!(
        app.world().get::<Position>(e),
        Some(&Position { x: 1.0, y: 1.0 }),
        "updated in place"
    );
    assert!(app.world().get::<Disabled>(e).is_some());
}

/// A game's own disabling component (a prefab marker, say).
#[derive(Component)]
struct Prefab;

/// Entities a game's own disabling component hides are hidden from saves as from its queries;
/// a load in place updates one whose id the save has where it is, spawns no second entity
/// under its id, and leaves the others alone.
#[test]
fn a_game_s_own_disabling_component_hides_entities_from_saves_and_loads_spawn_no_second() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    app.world_mut().register_disabling_component::<Prefab>();
    let world = app.world_mut();
    let e = world.spawn((Saveable, Position { x: 1.0, y: 1.0 })).id();
    let template = world
        .spawn((
            Saveable,
            Prefab,
            SaveId::new(500).unwrap(),
            Label("t".into()),
        ))
        .id();
    save(&mut app, false);
    let mut fresh = common::app(dir.path());
    load(&mut fresh);
    assert_eq!(
        observe(fresh.world_mut()).len(),
        1,
        "the prefab is not saved"
    );
    // Every id in the world, hidden entities' too.
    let ids = |world: &mut World| {
        let mut ids: Vec<u32> = world
            .query::<(&SaveId, Has<Prefab>)>()
            .iter(world)
            .map(|(id, _)| id.get())
            .collect();
        ids.sort_unstable();
        ids
    };
    app.world_mut().entity_mut(e).insert(Prefab);
    app.world_mut().get_mut::<Position>(e).unwrap().x = 9.0;
    load(&mut app);
    // Ids are given above the hidden prefab's, as above every id an entity no save sees holds.
    let id = app.world().get::<SaveId>(e).unwrap().get();
    assert_eq!(id, 501);
    assert_eq!(ids(app.world_mut()), [500, id], "one entity an id");
    assert_eq!(
        app.world().get::<Position>(e),
        Some(&Position { x: 1.0, y: 1.0 }),
        "updated where it is"
    );
    assert!(app.world().get::<Prefab>(e).is_some());
    assert!(app.world().get::<Label>(template).is_some(), "left alone");
}

/// With `Disabled` saved (through reflection), a new app loads disabled entities disabled.
#[cfg(feature = "reflect")]
#[test]
fn disabled_saved_through_reflection_loads_disabled() {
    use savegame_bevy::SavegameApp;
    for incremental in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let with_disabled = |dir: &std::path::Path| {
            let mut app = app(dir);
            app.save_reflect::<Disabled>();
            app
        };
        let mut app = with_disabled(dir.path());
        let e = two_saved(app.world_mut());
        save(&mut app, incremental);
        app.world_mut().entity_mut(e).insert(Disabled);
        save(&mut app, incremental);
        let mut fresh = with_disabled(dir.path());
        load(&mut fresh);
        let id = app.world().get::<SaveId>(e).unwrap().get();
        assert_eq!(
            disabled(fresh.world_mut()),
            [id],
            "incremental: {incremental}"
        );
        assert_same(
            &observe(fresh.world_mut()),
            &observe(app.world_mut()),
            "with Disabled saved",
        );
    }
}

/// A saved entity the game hides with its own disabling component, or shows again, between two
/// saves: the next incremental save is a full one, so that a new app loads the world a full
/// save would have written (the hidden entity left out, the shown one in). A delta would have
/// left the hidden entity in the slot, and the shown one out of it. Hidden entities the slot
/// does not hold (spawned hidden, or despawned) leave deltas as they are; after a load, the
/// next save is a full one while one the save has is hidden, or once one hidden at the load
/// is shown.
#[test]
fn hiding_or_showing_a_saved_entity_makes_the_next_incremental_save_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    app.world_mut().register_disabling_component::<Prefab>();
    let e = two_saved(app.world_mut());
    let saved = |app: &mut bevy_app::App| -> (bool, usize) {
        save(app, true);
        let written = drain::<savegame_bevy::Saved>(app)
            .pop()
            .unwrap()
            .written
            .is_delta();
        let mut fresh = common::app(dir.path());
        load(&mut fresh);
        (written, observe(fresh.world_mut()).len())
    };
    assert_eq!(saved(&mut app), (false, 2), "the first is full");
    app.world_mut().entity_mut(e).insert(Prefab);
    assert_eq!(
        saved(&mut app),
        (false, 1),
        "hidden since: full, without it"
    );
    app.world_mut().get_mut::<Position>(e).unwrap().x = 5.0;
    assert_eq!(
        saved(&mut app),
        (true, 1),
        "still hidden: a delta, without it"
    );
    let prefab = app
        .world_mut()
        .spawn((Saveable, Prefab, Position { x: 3.0, y: 3.0 }))
        .id();
    assert_eq!(saved(&mut app), (true, 1), "a hidden one spawned: a delta");
    app.world_mut().despawn(prefab);
    assert_eq!(
        saved(&mut app),
        (true, 1),
        "a hidden one despawned: a delta"
    );
    app.world_mut().entity_mut(e).remove::<Prefab>();
    assert_eq!(saved(&mut app), (false, 2), "shown again: full, with it");
    app.world_mut().entity_mut(e).insert(Prefab);
    assert_eq!(saved(&mut app), (false, 1), "hidden again");
    load(&mut app);
    assert_eq!(
        saved(&mut app),
        (true, 1),
        "after a load of a save without the hidden one: a delta"
    );
    app.world_mut().entity_mut(e).remove::<Prefab>();
    assert_eq!(
        saved(&mut app),
        (false, 2),
        "one hidden at the load, shown: full"
    );
    // Hidden after a save that has it: the load updates it where it is, still hidden, and the
    // slot holds it.
    app.world_mut().entity_mut(e).insert(Prefab);
    load(&mut app);
    assert!(app.world().get::<Prefab>(e).is_some());
    assert_eq!(
        saved(&mut app),
        (false, 1),
        "after a load of a save with the hidden one: full"
    );
    assert_eq!(saved(&mut app), (true, 1), "then deltas");
}

/// What a game does to its world between two saves, for [`a_delta_saves_what_a_full_save_does`].
type Change = fn(&mut World, &Hidden);

/// An app over a folder.
type MakeApp = fn(&std::path::Path) -> bevy_app::App;

/// The first saved entity of [`hidden_world`] points at the unsaved parent.
fn first_points_at_parent(world: &mut World, h: &Hidden) {
    world
        .entity_mut(h.first)
        .insert(Target { entity: h.parent });
}

/// The entities of [`hidden_world`].
struct Hidden {
    /// Two saved entities with a position and health.
    first: Entity,
    second: Entity,
    /// A saved entity the game hides (id 800).
    target: Entity,
    /// An unsaved entity the game hides, with an id of its own (700).
    root: Entity,
    /// An unsaved entity the game shows, with an id of its own (710), the parent of a saved
    /// child.
    parent: Entity,
}

/// Two saved entities; two the game hides (or, `hide` false, shows), one saved and one not;
/// and an unsaved parent of a saved child.
fn hidden_world(world: &mut World, hide: bool) -> Hidden {
    let mut saved = |x: f32| {
        let health = Health { current: 3, max: 9 };
        world.spawn((Saveable, Position { x, y: x }, health)).id()
    };
    let (first, second) = (saved(1.0), saved(2.0));
    let position = Position { x: 8.0, y: 8.0 };
    let target = world
        .spawn((Saveable, SaveId::new(800).unwrap(), position))
        .id();
    let root = world.spawn(SaveId::new(700).unwrap()).id();
    let parent = world.spawn(SaveId::new(710).unwrap()).id();
    world.spawn((Saveable, position, ChildOf(parent)));
    if hide {
        world.entity_mut(target).insert(Prefab);
        world.entity_mut(root).insert(Prefab);
    }
    Hidden {
        first,
        second,
        target,
        root,
        parent,
    }
}

/// Changes the game makes to its world through entities it hides, between two saves: each is
/// saved as a delta in one slot and as a full save in another, and a new app loads the same
/// world from both. (A full save leaves hidden entities out, and what points at them: a delta
/// must too.) The new app holds what a game keeps outside its saves: the entities the game hid,
/// under their ids, and shown, so that a save's link to one would be seen; a reference to one
/// loads as no entity either way, and the load's count of references to ids the save lacks
/// tells them apart. The game registers its disabling component before the plugin is added, as
/// Bevy's docs say, or after.
#[test]
fn a_delta_saves_what_a_full_save_does() {
    const FULL: SlotId = SlotId::Numbered(6);
    let unchanged: Change = |_, _| {};
    // Each: what it is, a change before the first save, one between the two, and whether the
    // second incremental save is a delta (a full one where a delta cannot say what changed).
    let changes: [(&str, Change, Change, bool); 9] = [
        (
            "hidden, then no longer saved",
            unchanged,
            |world, h| {
                world
                    .entity_mut(h.first)
                    .insert(Prefab)
                    .remove::<Saveable>();
            },
            true,
        ),
        (
            "hidden, a component removed, shown again",
            unchanged,
            |world, h| {
                world.entity_mut(h.second).insert(Prefab).remove::<Health>();
                world.entity_mut(h.second).remove::<Prefab>();
            },
            true,
        ),
        (
            "a saved child of a hidden parent",
            unchanged,
            |world, h| {
                world.spawn((Saveable, Position { x: 5.0, y: 5.0 }, ChildOf(h.root)));
            },
            true,
        ),
        (
            "a saved child's parent hidden",
            unchanged,
            |world, h| {
                world.entity_mut(h.parent).insert(Prefab);
            },
            false,
        ),
        (
            "a saved child's parent shown",
            |world, h| {
                world.entity_mut(h.parent).insert(Prefab);
            },
            |world, h| {
                world.entity_mut(h.parent).remove::<Prefab>();
            },
            false,
        ),
        // Not hidden: an unsaved entity a saved one points at is saved since (the slot holds
        // the reference as no entity, which a delta would not write again); and a saved one
        // taken off and put back (the slot holds it, and the references to it).
        (
            "an unsaved entity pointed at, saved since",
            first_points_at_parent,
            |world, h| {
                world.entity_mut(h.parent).insert(Saveable);
            },
            false,
        ),
        (
            "an unsaved entity pointed at, saved, no longer saved and saved again",
            first_points_at_parent,
            |world, h| {
                world.entity_mut(h.parent).insert(Saveable);
                world.entity_mut(h.parent).remove::<Saveable>();
                world.entity_mut(h.parent).insert(Saveable);
            },
            false,
        ),
        (
            "a saved entity pointed at, no longer saved and saved again",
            |world, h| {
                world
                    .entity_mut(h.first)
                    .insert(Target { entity: h.second });
            },
            |world, h| {
                world.entity_mut(h.second).remove::<Saveable>();
                world.entity_mut(h.second).insert(Saveable);
            },
            true,
        ),
        // A reference to a hidden entity is written as no entity, as a full save writes it.
        (
            "a reference to a hidden entity",
            unchanged,
            |world, h| {
                world.spawn((Saveable, Target { entity: h.target }));
                world
                    .entity_mut(h.first)
                    .insert(Target { entity: h.target });
            },
            true,
        ),
    ];
    let orders: [(&str, MakeApp); 2] = [
        ("registered before the plugin", |dir| {
            app_hiding::<Prefab>(builder(dir))
        }),
        ("after", |dir| {
            let mut app = app(dir);
            app.world_mut().register_disabling_component::<Prefab>();
            app
        }),
    ];
    for ((what, before, change, delta), (order, make)) in changes
        .into_iter()
        .flat_map(|change| orders.map(|order| (change, order)))
    {
        let what = format!("{what}, {order}");
        let what = what.as_str();
        let dir = tempfile::tempdir().unwrap();
        let mut app = make(dir.path());
        let hidden = hidden_world(app.world_mut(), true);
        before(app.world_mut(), &hidden);
        save(&mut app, true);
        save_slot(&mut app, FULL, false);
        change(app.world_mut(), &hidden);
        save(&mut app, true);
        let saved = drain::<savegame_bevy::Saved>(&mut app);
        assert_eq!(
            saved.last().unwrap().written.is_delta(),
            delta,
            "{what}: a delta?"
        );
        save_slot(&mut app, FULL, false);
        let loaded = |slot: SlotId| {
            let mut fresh = make(dir.path());
            let shown = hidden_world(fresh.world_mut(), false);
            // Only the entities the game hid, shown: the saved ones are the load's.
            fresh.world_mut().despawn(shown.first);
            fresh.world_mut().despawn(shown.second);
            load_slot(&mut fresh, slot);
            // A reference to an id the save lacks loads as no entity, as one the save wrote as
            // none does; the load counts the first kind.
            let dangling = drain::<savegame_bevy::Loaded>(&mut fresh)
                .last()
                .map(|loaded| loaded.dangling_references);
            (observe(fresh.world_mut()), dangling)
        };
        let ((delta, delta_dangling), (full, full_dangling)) = (loaded(SLOT), loaded(FULL));
        assert_same(&delta, &full, what);
        assert_eq!(
            delta_dangling, full_dangling,
            "{what}: references to ids the save lacks"
        );
    }
}
