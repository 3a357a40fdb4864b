//! Components that derive `Reflect` and not serde's traits are saved and loaded through
//! `save_reflect` (feature `reflect`), in MessagePack and in JSON, entity references mapped,
//! in full saves and in deltas.

#![cfg(feature = "reflect")]

mod common;

use bevy_ecs::prelude::*;
use bevy_reflect::Reflect;
use common::*;
use savegame::{Codec, SlotId};
use savegame_bevy::{LoadFailed, SaveFailed, SaveId, Saveable, SavegameApp, SavegameCommands};

/// Reflect only: no serde.
#[derive(Component, Reflect, Clone, Debug, PartialEq)]
struct Mana {
    current: u32,
    regen: f32,
    school: School,
}

#[derive(Reflect, Clone, Debug, PartialEq)]
enum School {
    Fire,
    Frost { depth: u8 },
}

/// Reflect only, with an entity reference.
#[derive(Component, Reflect, Clone, Debug, PartialEq)]
struct Follows {
    #[entities]
    leader: Entity,
}

fn reflect_app(dir: &std::path::Path, codec: Codec) -> bevy_app::App {
    let mut app = app_with(builder(dir).codec(codec));
    app.save_reflect::<Mana>().save_reflect::<Follows>();
    app
}

fn run(app: &mut bevy_app::App, incremental: bool) {
    if incremental {
        app.world_mut()
            .commands()
            .save_incremental(SlotId::Numbered(1));
    } else {
        app.world_mut().commands().save(SlotId::Numbered(1));
    }
    app.update();
    settle(app);
    let failed = drain::<SaveFailed>(app);
    assert!(failed.is_empty(), "{}", failed[0].error);
}

/// Every saved entity's mana and its leader's id.
fn seen(world: &mut World) -> Vec<(u32, Option<Mana>, Option<u32>)> {
    let mut out: Vec<_> = world
        .query::<(&SaveId, Option<&Mana>, Option<&Follows>)>()
        .iter(world)
        .map(|(id, mana, follows)| (id.get(), mana.cloned(), follows.map(|f| f.leader)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(id, mana, leader)| {
            (
                id,
                mana,
                leader.and_then(|l| world.get::<SaveId>(l).map(|s| s.get())),
            )
        })
        .collect();
    out.sort_by_key(|(id, ..)| *id);
    out
}

#[test]
fn reflected_components_round_trip_in_both_codecs_and_in_deltas_with_losses() {
    for codec in [Codec::MessagePack, Codec::Json] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = reflect_app(dir.path(), codec);
        let world = app.world_mut();
        let leader = world
            .spawn((
                Saveable,
                Mana {
                    current: 30,
                    regen: 1.5,
                    school: School::Fire,
                },
            ))
            .id();
        let follower = world
            .spawn((Saveable, Follows { leader }, Position { x: 1.0, y: 2.0 }))
            .id();
        run(&mut app, true);
        // A delta: the follower gets mana, the leader's changes.
        let world = app.world_mut();
        world.entity_mut(follower).insert(Mana {
            current: 5,
            regen: 0.25,
            school: School::Frost { depth: 3 },
        });
        world.get_mut::<Mana>(leader).unwrap().current = 29;
        run(&mut app, true);
        // Another: the follower's mana changes, the leader loses its own (a loss in the rows).
        let world = app.world_mut();
        world.get_mut::<Mana>(follower).unwrap().current = 4;
        world.entity_mut(leader).remove::<Mana>();
        run(&mut app, true);
        let expected = seen(app.world_mut());
        assert_eq!(expected.len(), 2);
        assert_eq!(
            expected
                .iter()
                .filter(|(_, mana, _)| mana.is_some())
                .count(),
            1
        );

        let mut fresh = reflect_app(dir.path(), codec);
        fresh.world_mut().commands().load(SlotId::Numbered(1));
        fresh.update();
        let failed = drain::<LoadFailed>(&mut fresh);
        assert!(failed.is_empty(), "{codec:?}: {}", failed[0].error);
        assert_eq!(seen(fresh.world_mut()), expected, "{codec:?}");
    }
}

/// A reflected value of the wrong shape in a delta's rows (inside a good seal) fails the load
/// with a typed error that names the rows memento it is in, not the component's column.
#[test]
fn a_malformed_reflected_row_names_its_rows_memento() {
    #[derive(serde::Serialize)]
    struct Rows {
        entities: Vec<u32>,
        values: Vec<&'static str>,
        lost: Vec<u32>,
    }
    let dir = tempfile::tempdir().unwrap();
    let mut app = reflect_app(dir.path(), Codec::MessagePack);
    app.world_mut().spawn((
        Saveable,
        Mana {
            current: 30,
            regen: 1.5,
            school: School::Fire,
        },
    ));
    run(&mut app, true);
    let manager = app
        .world()
        .resource::<savegame_bevy::SaveManager>()
        .manager();
    let mut forged = manager.snapshot();
    let id = "component/Mana+1";
    let rows = Rows {
        entities: vec![0],
        values: vec!["not mana"],
        lost: vec![],
    };
    forged.capture_memento(id, &rows).unwrap();
    manager
        .save_incremental(SlotId::Numbered(1), &forged)
        .unwrap();

    let mut fresh = reflect_app(dir.path(), Codec::MessagePack);
    fresh.world_mut().commands().load(SlotId::Numbered(1));
    fresh.update();
    let failed = drain::<LoadFailed>(&mut fresh);
    assert_eq!(failed.len(), 1);
    match &*failed[0].error {
        savegame_bevy::SaveError::Malformed { id: named, .. } => assert_eq!(named, id),
        other => panic!("{other}"),
    }
    assert!(seen(fresh.world_mut()).is_empty(), "nothing was loaded");
}
