//! Incremental saves: the first of a slot is a full save; each after it is a delta on the
//! slot's journal with only the entities changed (Bevy's change ticks), spawned or despawned
//! since, in bytes that follow what changed, not the world; a new app loads the same world; the
//! journal is compacted and still loads; a failed delta leaves the slot as it was and makes the
//! next save a full one.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{SaveFailed, SaveId, Saveable, Saved, SavegameApp, SavegameCommands, Written};
use serde::{Deserialize, Serialize, Serializer};

const SLOT: SlotId = SlotId::Numbered(3);

/// Asks for an incremental save, runs the frame and waits for the report.
fn save_incremental(app: &mut bevy_app::App) -> Saved {
    app.world_mut().commands().save_incremental(SLOT);
    app.update();
    settle(app);
    let failed = drain::<SaveFailed>(app);
    assert!(
        failed.is_empty(),
        "{:?}",
        failed.first().map(|f| f.error.to_string())
    );
    let mut saved = drain::<Saved>(app);
    assert_eq!(saved.len(), 1, "{saved:?}");
    saved.remove(0)
}

fn delta_of(saved: &Saved) -> (&savegame::DeltaReport, usize, usize) {
    match &saved.written {
        Written::Delta {
            report,
            entities,
            removed,
        } => (report, *entities, *removed),
        other => panic!("not a delta: {other:?}"),
    }
}

/// The world a new app loads from the slot.
fn loaded(dir: &std::path::Path) -> std::collections::BTreeMap<u32, Observed> {
    loaded_beside(dir, None)
}

/// The world a new app loads from the slot, with an unsaved entity of id `root` in it first.
fn loaded_beside(
    dir: &std::path::Path,
    root: Option<u32>,
) -> std::collections::BTreeMap<u32, Observed> {
    let mut app = app(dir);
    if let Some(root) = root {
        app.world_mut().spawn(SaveId::new(root).unwrap());
    }
    app.world_mut().commands().load(SLOT);
    app.update();
    let failed = drain::<savegame_bevy::LoadFailed>(&mut app);
    assert!(failed.is_empty(), "{}", failed[0].error);
    observe(app.world_mut())
}

/// The saved entities with `id`.
fn entity(world: &mut World, id: u32) -> Entity {
    world
        .query::<(Entity, &SaveId)>()
        .iter(world)
        .find(|(_, s)| s.get() == id)
        .map(|(e, _)| e)
        .unwrap()
}

#[test]
fn a_delta_holds_what_changed_and_a_new_app_loads_the_same_world() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    build_world(app.world_mut(), 2_000);
    app.insert_resource(Score(1));

    let first = save_incremental(&mut app);
    let base = match &first.written {
        Written::Full(report) => report.bytes,
        other => panic!("the first incremental save of a slot is a full one: {other:?}"),
    };
    assert_eq!(first.entities, 2_000);

    // Nothing changed: nothing is written.
    let idle = save_incremental(&mut app);
    let (report, written, removed) = delta_of(&idle);
    assert_eq!((report.bytes, written, removed), (0, 0, 0));

    // A frame's worth of play.
    let world = app.world_mut();
    for id in [10, 11, 12, 500, 1_999] {
        let e = entity(world, id);
        world.get_mut::<Position>(e).unwrap().x += 100.0;
    }
    let e = entity(world, 30); // had health (30 % 3 == 0): loses it
    world.entity_mut(e).remove::<Health>();
    let e = entity(world, 31); // gains a label
    world.entity_mut(e).insert(Label("new".into()));
    let moved = entity(world, 42); // changes parent: from 40 to 50
    let parent = entity(world, 50);
    world.entity_mut(moved).insert(ChildOf(parent));
    let dropped = entity(world, 44); // leaves its parent, 40: keeps no link
    world.entity_mut(dropped).remove::<ChildOf>();
    for id in [703, 705, 1_203] {
        let e = entity(world, id);
        world.despawn(e);
    }
    let target = entity(world, 5);
    world.spawn((
        Saveable,
        Position { x: 1.0, y: 2.0 },
        Target { entity: target },
    ));
    world.spawn((
        Saveable,
        Position { x: 3.0, y: 4.0 },
        Target { entity: target },
    ));
    world.resource_mut::<Score>().0 = 2;

    let saved = save_incremental(&mut app);
    // Observed after the save, which gave the spawned entities their ids.
    let expected = observe(app.world_mut());
    let (report, written, removed) = delta_of(&saved);
    // 5 moved, 1 lost health, 1 gained a label, 1 reparented (its old and new parents' lists
    // changed, so their saved children are written again: 9 + 10), 2 spawned; the despawned
    // ones' old siblings too (their parents' lists changed).
    assert_eq!(removed, 3);
    assert!((10..=60).contains(&written), "{written}");
    assert_eq!(saved.entities, 2_000 - 3 + 2);
    // O(changed): a few hundred bytes per entity written (its record and values, each
    // under its own id), a small part of the base.
    assert!(
        report.bytes < 400 * written as u64 && report.bytes * 5 < base,
        "a delta of {written} entities is {} bytes; the full save {base}",
        report.bytes
    );
    assert_same(&loaded(dir.path()), &expected, "the world");
    assert_eq!(
        app.world()
            .resource::<savegame_bevy::SaveManager>()
            .manager()
            .info(SLOT)
            .unwrap()
            .deltas,
        1
    );

    // Another delta on top: the load applies both in order.
    let world = app.world_mut();
    let e = entity(world, 10);
    world.get_mut::<Position>(e).unwrap().y = -1.0;
    let e = entity(world, 2_000); // spawned in the last delta
    world.despawn(e);
    let expected = observe(app.world_mut());
    let saved = save_incremental(&mut app);
    let (_, written, removed) = delta_of(&saved);
    assert_eq!((written, removed), (1, 1));
    assert_same(&loaded(dir.path()), &expected, "the world");
}

/// The ids of the deltas' rows in the slot's base (`<id>+<n>`).
fn rows_in_base(dir: &std::path::Path) -> usize {
    let base = std::fs::read(dir.join(SLOT.file_name())).unwrap();
    let key = savegame::Key::from_bytes(KEY);
    let (_, snapshot) = savegame::Snapshot::open_file(base, &key).unwrap();
    snapshot.ids().filter(|id| id.contains('+')).count()
}

/// A compaction folds the deltas' rows into the base as they are; the plugin's next
/// incremental save of the slot is then a full one, so that rows do not pile up in bases.
#[test]
fn compaction_folds_the_deltas_into_a_base_that_loads_and_the_next_save_is_full() {
    let dir = tempfile::tempdir().unwrap();
    // A journal over 5% of its base is compacted.
    let mut app = app_with(builder(dir.path()).compact_at(5));
    build_world(app.world_mut(), 500);
    save_incremental(&mut app);
    let (mut compacted, mut after) = (0, 0);
    let mut full_next = false;
    for round in 0..12u32 {
        let world = app.world_mut();
        for k in 0..20 {
            let e = entity(world, (round * 37 + k * 11) % 400);
            world.get_mut::<Position>(e).unwrap().x = round as f32;
        }
        // A leaf among the ids from 400 on (the changes above stay below).
        let leaf = world
            .query_filtered::<(Entity, &SaveId), Without<Children>>()
            .iter(world)
            .find(|(_, id)| id.get() >= 400)
            .map(|(e, _)| e)
            .unwrap();
        world.despawn(leaf);
        world.spawn((
            Saveable,
            Position { x: 0.5, y: 0.5 },
            Target {
                entity: Entity::PLACEHOLDER,
            },
        ));
        let saved = save_incremental(&mut app);
        let expected = observe(app.world_mut());
        if full_next {
            assert!(!saved.written.is_delta(), "round {round}: {saved:?}");
            assert_eq!(rows_in_base(dir.path()), 0);
            full_next = false;
            after += 1;
        } else if delta_of(&saved).0.compacted.is_some() {
            assert!(rows_in_base(dir.path()) > 0);
            compacted += 1;
            full_next = true;
        }
        assert_same(&loaded(dir.path()), &expected, &format!("round {round}"));
    }
    assert!(compacted >= 2 && after >= 2, "compacted {compacted} times");
}

/// A value a delta wrote, then lost, stays lost: removed from a saved entity, removed while the
/// entity was not saved (its `Saveable` taken off and put back), and across a compaction, which
/// keeps the earlier delta's value in the new base. A written entity's values are all in its
/// last delta's rows, so each case needs the entity written again.
#[test]
fn a_value_an_earlier_delta_wrote_and_the_entity_lost_since_stays_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    build_world(app.world_mut(), 300);
    save_incremental(&mut app);
    // Three entities with health and a label.
    let world = app.world_mut();
    let mut both: Vec<u32> = world
        .query_filtered::<&SaveId, (With<Health>, With<Label>)>()
        .iter(world)
        .map(|id| id.get())
        .collect();
    both.sort_unstable();
    let [one, two, three] = both[..3] else {
        panic!("{both:?}")
    };
    for id in [one, two, three] {
        let e = entity(world, id);
        world.get_mut::<Position>(e).unwrap().x = -5.0;
    }
    // The delta writes each one whole: its health and label among its values.
    save_incremental(&mut app);

    let world = app.world_mut();
    let removed = entity(world, one);
    world.entity_mut(removed).remove::<Health>();
    let unsaved = entity(world, two);
    world.entity_mut(unsaved).remove::<Saveable>();
    world.entity_mut(unsaved).remove::<Label>();
    world.entity_mut(unsaved).insert(Saveable);
    let expected = observe(app.world_mut());
    assert!(expected[&one].health.is_none() && expected[&two].label.is_none());
    let saved = save_incremental(&mut app);
    let (_, written, _) = delta_of(&saved);
    assert_same(&loaded(dir.path()), &expected, "after the removals");
    assert_eq!(written, 2);

    // The earlier deltas folded into a new base; then a loss after it.
    let manager = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    manager.compact(SLOT).unwrap();
    let world = app.world_mut();
    let e = entity(world, three);
    world.entity_mut(e).remove::<Label>();
    let expected = observe(app.world_mut());
    save_incremental(&mut app);
    assert_same(&loaded(dir.path()), &expected, "after the compaction");
}

/// A component whose serialization fails while `FAIL` is set.
#[derive(Component, Clone, Debug, PartialEq, Deserialize)]
struct Flaky(u32);

static FAIL: AtomicBool = AtomicBool::new(false);

impl Serialize for Flaky {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if FAIL.load(Ordering::SeqCst) {
            return Err(serde::ser::Error::custom("flaky today"));
        }
        self.0.serialize(s)
    }
}

#[test]
fn a_failed_delta_leaves_the_slot_as_it_was_and_the_next_save_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    app.save_component::<Flaky>();
    let flaky = app.world_mut().spawn((Saveable, Flaky(1))).id();
    build_world(app.world_mut(), 100);
    save_incremental(&mut app);
    app.world_mut().get_mut::<Flaky>(flaky).unwrap().0 = 2;
    save_incremental(&mut app);
    let before = loaded(dir.path());

    app.world_mut().get_mut::<Flaky>(flaky).unwrap().0 = 3;
    FAIL.store(true, Ordering::SeqCst);
    app.world_mut().commands().save_incremental(SLOT);
    app.update();
    settle(&mut app);
    FAIL.store(false, Ordering::SeqCst);
    let failed = drain::<SaveFailed>(&mut app);
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0].error.to_string().contains("flaky today"),
        "{}",
        failed[0].error
    );
    assert!(drain::<Saved>(&mut app).is_empty());
    // The slot holds its last delta still.
    assert_eq!(loaded(dir.path()), before);
    let manager = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    assert_eq!(manager.info(SLOT).unwrap().deltas, 1);

    // The change the failed delta held is not lost: the next save is a full one.
    let next = save_incremental(&mut app);
    assert!(matches!(next.written, Written::Full(_)), "{next:?}");
    let mut load = app_with(builder(dir.path()));
    load.save_component::<Flaky>();
    load.world_mut().commands().load(SLOT);
    load.update();
    let world = load.world_mut();
    let values: Vec<u32> = world.query::<&Flaky>().iter(world).map(|f| f.0).collect();
    assert_eq!(values, [3]);
}

/// A delta whose rows are damaged inside a good seal (a forged file, or one written by a
/// faulty tool) fails the load with a typed error naming the memento, and the world is left as
/// it was: rows with fewer values than entities, values of another shape, a delta's number
/// that is not one as the plugin writes them (not a number, past `u32::MAX`, a leading zero),
/// records without their ids.
#[test]
fn a_delta_with_malformed_rows_fails_the_load_and_changes_nothing() {
    #[derive(Serialize)]
    struct Rows<V> {
        entities: Vec<u32>,
        values: Vec<V>,
        lost: Vec<u32>,
    }
    #[derive(Serialize)]
    struct Records<R> {
        ids: Vec<u32>,
        records: Vec<R>,
    }
    #[derive(Serialize)]
    struct Record {
        saved: bool,
        parent: Option<u32>,
        position: Option<u32>,
    }
    #[derive(Serialize)]
    struct Entities {
        ids: Vec<u32>,
        next: u32,
    }
    #[derive(Serialize)]
    struct Next {
        next: u32,
    }
    let saved_record = || Record {
        saved: true,
        parent: None,
        position: None,
    };
    type Forge = Box<dyn Fn(&mut savegame::Snapshot) -> savegame::Result<()>>;
    /// Writes `memento` under `id` into the forged delta.
    fn forge<M: Serialize + 'static>(id: &'static str, memento: M) -> (&'static str, Forge) {
        (id, Box::new(move |s| s.capture_memento(id, &memento)))
    }
    let rows = |entities: Vec<u32>| Rows {
        entities,
        values: vec![Position { x: 1.0, y: 2.0 }],
        lost: vec![],
    };
    let cases = [
        forge("component/Position+1", rows(vec![1, 2])),
        forge(
            "component/Position+1",
            Rows {
                entities: vec![1],
                values: vec!["not a position"],
                lost: vec![],
            },
        ),
        forge("component/Position+one", rows(vec![1])),
        forge("component/Position+18446744073709551615", rows(vec![1])),
        forge("component/Position+05", rows(vec![1])),
        forge(
            "bevy/entities+1",
            Records {
                ids: vec![],
                records: vec![1],
            },
        ),
        // An id no entity can carry (`Entity::PLACEHOLDER`'s index): the load dropped the
        // entity without a word.
        forge(
            "bevy/entities+1",
            Records {
                ids: vec![u32::MAX - 1],
                records: vec![saved_record()],
            },
        ),
        // The same in the full save's list (a delta's memento of that id replaces it), and in
        // a record of the older layout (one memento per entity, the id in its name).
        forge(
            "bevy/entities",
            Entities {
                ids: vec![1, u32::MAX - 1],
                next: 2,
            },
        ),
        forge("bevy/entity/4294967294", saved_record()),
        // A next id above the largest: every save after the load would fail for want of ids.
        forge(
            "bevy/entities",
            Entities {
                ids: vec![1],
                next: u32::MAX,
            },
        ),
        forge("bevy/next", Next { next: u32::MAX }),
    ];
    for (id, forge) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        build_world(app.world_mut(), 20);
        save_incremental(&mut app);
        let manager = app
            .world()
            .resource::<savegame_bevy::SaveManager>()
            .manager();
        let mut forged = manager.snapshot();
        forge(&mut forged).unwrap();
        manager.save_incremental(SLOT, &forged).unwrap();

        let mut fresh = common::app(dir.path());
        fresh
            .world_mut()
            .spawn((Saveable, Position { x: 9.0, y: 9.0 }));
        let before = observe(fresh.world_mut());
        fresh.world_mut().commands().load(SLOT);
        fresh.update();
        let failed = drain::<savegame_bevy::LoadFailed>(&mut fresh);
        assert_eq!(failed.len(), 1, "{id}");
        let message = failed[0].error.to_string();
        assert!(
            matches!(
                &*failed[0].error,
                savegame_bevy::SaveError::Malformed { .. }
                    | savegame_bevy::SaveError::Deserialize { .. }
            ) && message.contains(id),
            "{id}: {message}"
        );
        assert_eq!(observe(fresh.world_mut()), before, "{id}");
    }
}

/// A column that holds an id twice (a hand-made or damaged plain file) loads that id's last
/// value, into an entity the load spawns as into one it keeps.
#[test]
fn a_column_holding_an_id_twice_loads_its_last_value() {
    #[derive(Serialize)]
    struct Column {
        entities: Vec<u32>,
        values: Vec<Position>,
    }
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    for id in [1, 2] {
        let id = SaveId::new(id).unwrap();
        let position = Position { x: 0.0, y: 0.0 };
        app.world_mut().spawn((Saveable, id, position));
    }
    save_incremental(&mut app);
    let manager = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    let (first, last) = (Position { x: 1.0, y: 1.0 }, Position { x: 2.0, y: 2.0 });
    let column = Column {
        entities: vec![1, 2, 1],
        values: vec![first, last, last],
    };
    let mut forged = manager.snapshot();
    forged
        .capture_memento("component/Position", &column)
        .unwrap();
    manager.save_incremental(SLOT, &forged).unwrap();
    assert_eq!(loaded(dir.path())[&1].position, Some(last), "spawned");
    load_slot(&mut app, SLOT);
    assert_eq!(observe(app.world_mut())[&1].position, Some(last), "kept");
}

/// An entity despawned and spawned again under the game's own `SaveId` between two saves is
/// saved, not removed. The save is a full one: the slot may hold the old entity's id in
/// references (the next test).
#[test]
fn an_entity_spawned_again_under_its_own_id_between_saves_stays_saved() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let id = SaveId::new(1_000).unwrap();
    let target = Target {
        entity: Entity::PLACEHOLDER,
    };
    let lever = app
        .world_mut()
        .spawn((Saveable, id, Position { x: 1.0, y: 1.0 }, target))
        .id();
    save_incremental(&mut app);
    // The level is reloaded: the lever is despawned and spawned again with its own id.
    app.world_mut().despawn(lever);
    app.world_mut()
        .spawn((Saveable, id, Position { x: 2.0, y: 2.0 }, target));
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    let expected = observe(app.world_mut());
    assert_eq!(expected[&1_000].position, Some(Position { x: 2.0, y: 2.0 }));
    assert_same(&loaded(dir.path()), &expected, "spawned again under its id");
}

/// A reference to an entity the game despawned, whose id the game then gives a new entity (a
/// lever spawned again under its own id), loads as no entity, as a full save writes it: the
/// save that first writes the new entity is a full one, whether the despawn fell between the
/// same two saves or was saved by earlier deltas. A load that finds a reference with no entity
/// to point at makes the next save a full one, which writes it as none. An id never held
/// before keeps the save a delta.
#[test]
fn a_reference_to_a_despawned_entity_never_finds_a_new_entity_given_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    let lever = |app: &mut bevy_app::App, id: u32| {
        let id = SaveId::new(id).unwrap();
        let position = Position { x: 1.0, y: 1.0 };
        app.world_mut().spawn((Saveable, id, position)).id()
    };
    let holder = |app: &mut bevy_app::App, id: u32, entity: Entity| {
        let id = SaveId::new(id).unwrap();
        app.world_mut().spawn((Saveable, id, Target { entity }));
    };
    let check = |app: &mut bevy_app::App, holder: u32, what: &str| {
        let saved = save_incremental(app);
        assert!(!saved.written.is_delta(), "{what}: {:?}", saved.written);
        let expected = observe(app.world_mut());
        assert_eq!(expected[&holder].target, Some(None), "{what}");
        assert_same(&loaded(dir.path()), &expected, what);
    };

    // Between two saves.
    let first = lever(&mut app, 1_000);
    holder(&mut app, 1, first);
    save_incremental(&mut app);
    app.world_mut().despawn(first);
    lever(&mut app, 1_000);
    check(&mut app, 1, "despawned and given again between two saves");

    // Saved by a delta, then given again.
    let second = lever(&mut app, 2_000);
    holder(&mut app, 2, second);
    assert!(save_incremental(&mut app).written.is_delta());
    app.world_mut().despawn(second);
    assert_eq!(
        delta_of(&save_incremental(&mut app)).2,
        1,
        "the lever removed"
    );
    // A delta between: the slot still holds the reference.
    lever(&mut app, 2_500);
    assert!(save_incremental(&mut app).written.is_delta());
    lever(&mut app, 2_000);
    check(
        &mut app,
        2,
        "given again two deltas after the one that removed it",
    );

    // Removed by a delta, then a load, which finds no entity for the reference: the next save
    // is a full one, and an entity given the id after it is saved by a delta.
    let third = lever(&mut app, 3_000);
    holder(&mut app, 3, third);
    assert!(save_incremental(&mut app).written.is_delta());
    app.world_mut().despawn(third);
    assert!(save_incremental(&mut app).written.is_delta());
    app.world_mut().commands().load(SLOT);
    app.update();
    let loads = drain::<savegame_bevy::Loaded>(&mut app);
    assert_eq!(loads.len(), 1);
    assert_eq!(loads[0].dangling_references, 1, "the third holder's");
    lever(&mut app, 3_500);
    check(
        &mut app,
        3,
        "the save after a load that found a dangling reference",
    );
    lever(&mut app, 3_000);
    assert!(save_incremental(&mut app).written.is_delta());
    let expected = observe(app.world_mut());
    assert_eq!(expected[&3].target, Some(None));
    assert_same(&loaded(dir.path()), &expected, "given again after that");

    // An id never held before: a delta.
    lever(&mut app, 4_000);
    assert!(save_incremental(&mut app).written.is_delta());
    assert_same(&loaded(dir.path()), &observe(app.world_mut()), "a new id");
}

/// A saved child's link to an unsaved parent whose id no entity has when the slot loads (the
/// parent despawned, with the child, since the save) is cut by the load, and stays cut when the
/// game then gives the id to a new unsaved root: the save after the load is a full one, which
/// writes the child without a parent, where a delta would leave it linked to the new root.
#[test]
fn a_link_the_load_cut_is_not_made_again_to_a_new_holder_of_the_parents_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let root = |app: &mut bevy_app::App| app.world_mut().spawn(SaveId::new(7).unwrap()).id();
    let first = root(&mut app);
    app.world_mut()
        .spawn((
            Saveable,
            SaveId::new(1).unwrap(),
            Position { x: 1.0, y: 1.0 },
        ))
        .insert(ChildOf(first));
    save_incremental(&mut app);
    app.world_mut().despawn(first);
    app.world_mut().commands().load(SLOT);
    app.update();
    assert!(drain::<savegame_bevy::LoadFailed>(&mut app).is_empty());
    let world = app.world_mut();
    assert_eq!(
        observe(world)[&1].parent,
        None,
        "the load found no parent 7"
    );
    root(&mut app);
    app.world_mut().spawn((
        Saveable,
        SaveId::new(2).unwrap(),
        Position { x: 2.0, y: 2.0 },
    ));
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    let expected = observe(app.world_mut());
    assert_eq!(expected[&1].parent, None);
    assert_same(
        &loaded_beside(dir.path(), Some(7)),
        &expected,
        "the new root",
    );
}

/// A load despawns the saved entities the save does not have, those without an id among them
/// (spawned since the last save); one left behind would be missed by the slot's next delta
/// once another save gave it an id.
#[test]
fn a_load_despawns_saved_entities_without_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    build_world(app.world_mut(), 10);
    save_incremental(&mut app);
    let spawned = app
        .world_mut()
        .spawn((Saveable, Position { x: 2.0, y: 2.0 }))
        .id();
    app.world_mut().commands().load(SLOT);
    app.update();
    assert!(app.world().get_entity(spawned).is_err(), "not in the save");
    // Another save (another slot) and a delta: the slot loads what the world holds.
    app.world_mut().commands().save(SlotId::Numbered(4));
    app.update();
    settle(&mut app);
    drain::<Saved>(&mut app);
    let saved = save_incremental(&mut app);
    assert!(saved.written.is_delta());
    let expected = observe(app.world_mut());
    assert_same(&loaded(dir.path()), &expected, "after the load and a delta");
}

/// An id the game gave itself, to an entity saved since the last save, to the unsaved parent
/// of a saved one, or to an unsaved entity no save has seen (a saved child may link to it
/// later), is never given by the plugin to another entity, in a delta or in a full save.
#[test]
fn an_id_the_game_gave_itself_is_never_given_again() {
    let ids = |app: &mut bevy_app::App| unique_ids(app.world_mut(), "the ids");
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    app.world_mut()
        .spawn((Saveable, Position { x: 0.0, y: 0.0 }));
    save_incremental(&mut app);
    // Between two deltas the game gives its own id 2 to a new saved entity, and 3 to an
    // unsaved root that a new saved entity (without an id, so given the next one) hangs from.
    let world = app.world_mut();
    world.spawn((
        Saveable,
        SaveId::new(2).unwrap(),
        Position { x: 2.0, y: 2.0 },
    ));
    let root = world.spawn(SaveId::new(3).unwrap()).id();
    world.spawn((Saveable, Position { x: 3.0, y: 3.0 }, ChildOf(root)));
    delta_of(&save_incremental(&mut app));
    // More entities without ids, in a delta, then in a full save.
    for k in 0..4 {
        app.world_mut().spawn((
            Saveable,
            Position {
                x: 10.0 + k as f32,
                y: 0.0,
            },
        ));
    }
    delta_of(&save_incremental(&mut app));
    assert_eq!(ids(&mut app), [0, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(loaded(dir.path()).len(), 7);

    let dir = tempfile::tempdir().unwrap();
    let mut app = common::app(dir.path());
    let world = app.world_mut();
    let root = world.spawn(SaveId::new(1).unwrap()).id();
    world.spawn((Saveable, Position { x: 3.0, y: 3.0 }, ChildOf(root)));
    world.spawn((Saveable, Position { x: 4.0, y: 4.0 }));
    app.world_mut().commands().save(SLOT);
    app.update();
    settle(&mut app);
    assert!(drain::<SaveFailed>(&mut app).is_empty());
    assert_eq!(ids(&mut app), [1, 2, 3]);

    // An unsaved entity with the game's id, no saved child: in a full save, then a delta.
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    let world = app.world_mut();
    world.spawn(SaveId::new(1).unwrap());
    world.spawn((Saveable, Position { x: 1.0, y: 1.0 }));
    world.spawn((Saveable, Position { x: 2.0, y: 2.0 }));
    save_incremental(&mut app);
    assert_eq!(
        ids(&mut app),
        [1, 2, 3],
        "given above the unsaved entity's 1"
    );
    let world = app.world_mut();
    world.spawn(SaveId::new(5).unwrap());
    world.spawn((Saveable, Position { x: 3.0, y: 3.0 }));
    delta_of(&save_incremental(&mut app));
    assert_eq!(
        ids(&mut app),
        [1, 2, 3, 5, 6],
        "given above the unsaved entity's 5"
    );
}

/// A delta writes no loss for an entity saved for the first time (it was never saved, so it
/// had nothing to lose), and still does for one saved again that lacks a component it had.
#[test]
fn a_new_entity_has_no_losses_in_its_delta_and_one_saved_again_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    let again = app
        .world_mut()
        .spawn((
            Saveable,
            Position { x: 0.0, y: 0.0 },
            Health { current: 3, max: 5 },
        ))
        .id();
    save_incremental(&mut app);
    // The mementos of the slot as the manager loads it (base and deltas).
    let holds = |app: &bevy_app::App, id: &str| {
        let manager = app
            .world()
            .resource::<savegame_bevy::SaveManager>()
            .manager();
        manager.load(SLOT).unwrap().snapshot.contains(id)
    };
    // New: position only.
    app.world_mut()
        .spawn((Saveable, Position { x: 1.0, y: 1.0 }));
    delta_of(&save_incremental(&mut app));
    assert!(holds(&app, "component/Position+1"));
    assert!(
        !holds(&app, "component/Health+1"),
        "a loss for a new entity"
    );
    assert!(!holds(&app, "component/Label+1"), "a loss for a new entity");
    // Saved again without its health: the loss is written.
    let world = app.world_mut();
    world.entity_mut(again).remove::<Saveable>();
    world.entity_mut(again).remove::<Health>();
    world.entity_mut(again).insert(Saveable);
    delta_of(&save_incremental(&mut app));
    assert!(holds(&app, "component/Health+2"));
    let loaded = loaded(dir.path());
    assert_eq!(loaded.len(), 2);
    assert_eq!(observe(app.world_mut()), loaded);
}

/// A saved entity the game gives another id, or whose id it removes, between two incremental
/// saves; or the unsaved parent of saved children, given another id: the save is a full one
/// (the slot holds the old ids in references and links a delta would not write again), and
/// the slot loads each entity once, under its new id, with what pointed at it.
#[test]
fn an_entity_given_a_new_id_or_none_makes_the_next_incremental_save_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    let world = app.world_mut();
    let renamed = world
        .spawn((
            Saveable,
            SaveId::new(10).unwrap(),
            Position { x: 1.0, y: 1.0 },
        ))
        .id();
    let stripped = world
        .spawn((
            Saveable,
            SaveId::new(20).unwrap(),
            Position { x: 2.0, y: 2.0 },
        ))
        .id();
    world.spawn((Saveable, Target { entity: renamed }));
    world.spawn((Saveable, Target { entity: stripped }));
    let root = world.spawn(SaveId::new(40).unwrap()).id();
    world.spawn((Saveable, Position { x: 4.0, y: 4.0 }, ChildOf(root)));
    save_incremental(&mut app);
    // Despawns, and an id put back as it was, keep the next save a delta.
    let world = app.world_mut();
    let doomed = world.spawn((Saveable, Position { x: 9.0, y: 9.0 })).id();
    save_incremental(&mut app);
    let world = app.world_mut();
    world.despawn(doomed);
    world.entity_mut(renamed).insert(SaveId::new(10).unwrap());
    let saved = save_incremental(&mut app);
    assert_eq!(delta_of(&saved).2, 1, "the despawned entity is removed");
    let expected = observe(app.world_mut());
    assert_same(
        &loaded_beside(dir.path(), Some(40)),
        &expected,
        "same id put back",
    );

    let world = app.world_mut();
    world.entity_mut(renamed).insert(SaveId::new(30).unwrap());
    world.entity_mut(stripped).remove::<SaveId>();
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    let expected = observe(app.world_mut());
    assert!(expected.contains_key(&30) && !expected.contains_key(&10));
    assert!(!expected.contains_key(&20));
    assert_same(
        &loaded_beside(dir.path(), Some(40)),
        &expected,
        "ids changed",
    );
    // The next is a delta again.
    assert!(save_incremental(&mut app).written.is_delta());

    app.world_mut()
        .entity_mut(root)
        .insert(SaveId::new(100).unwrap());
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    let expected = observe(app.world_mut());
    assert_same(
        &loaded_beside(dir.path(), Some(100)),
        &expected,
        "a parent's id changed",
    );
}

/// A registered resource the game removes between two incremental saves: a delta cannot say
/// so (a load leaves a resource the save lacks as it is), so the save is a full one, and a new
/// app loads the world without it; one removed and put back is a delta's change, and so is one
/// a load of a save that lacks it left in the world.
#[test]
fn a_resource_removed_since_the_last_save_makes_the_next_incremental_save_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    app.insert_resource(Score(7));
    let level = |seed| Level {
        name: "cave".into(),
        seed,
    };
    app.insert_resource(level(2));
    app.world_mut()
        .spawn((Saveable, Position { x: 1.0, y: 1.0 }));
    save_incremental(&mut app);
    // Removed and put back: a delta.
    app.world_mut().remove_resource::<Level>();
    app.insert_resource(level(3));
    assert!(save_incremental(&mut app).written.is_delta());
    app.world_mut().remove_resource::<Score>();
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    let mut fresh = common::app(dir.path());
    fresh.world_mut().commands().load(SLOT);
    fresh.update();
    assert!(drain::<savegame_bevy::LoadFailed>(&mut fresh).is_empty());
    assert!(fresh.world().get_resource::<Score>().is_none());
    assert_eq!(fresh.world().get_resource::<Level>(), Some(&level(3)));
    // The next is a delta again.
    assert!(save_incremental(&mut app).written.is_delta());
    // A load of the slot, which lacks the score, leaves the game's as it is: the slot does not
    // hold it, so the next delta writes it.
    app.insert_resource(Score(9));
    app.world_mut().commands().load(SLOT);
    app.update();
    assert_eq!(app.world().get_resource::<Score>(), Some(&Score(9)));
    assert!(save_incremental(&mut app).written.is_delta());
    let mut fresh = common::app(dir.path());
    fresh.world_mut().commands().load(SLOT);
    fresh.update();
    assert_eq!(fresh.world().get_resource::<Score>(), Some(&Score(9)));
}

/// A load that falls back to a backup (the slot's save is damaged) makes the next incremental
/// save a full one, which the manager accepts (it refuses a delta on a damaged save), and the
/// slot then loads the world.
#[test]
fn a_load_from_a_backup_makes_the_next_incremental_save_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(100_000));
    let e = app
        .world_mut()
        .spawn((Saveable, Position { x: 1.0, y: 1.0 }))
        .id();
    save_incremental(&mut app);
    // A second full save: the first becomes its backup.
    save_slot(&mut app, SLOT, false);
    drain::<Saved>(&mut app);
    let path = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager()
        .path_of(SLOT);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    app.world_mut().commands().load(SLOT);
    app.update();
    let loaded = drain::<savegame_bevy::Loaded>(&mut app);
    assert!(loaded[0].report.recovered_from_backup.is_some());
    app.world_mut().get_mut::<Position>(e).unwrap().x = 2.0;
    let saved = save_incremental(&mut app);
    assert!(!saved.written.is_delta(), "{:?}", saved.written);
    assert_eq!(loaded_beside(dir.path(), None), observe(app.world_mut()));
}
