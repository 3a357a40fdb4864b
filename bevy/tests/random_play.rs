//! Random play, saved incrementally: after every save of a slot, a new app loads the same
//! world the game holds. Each round plays a few random steps (spawns with links and
//! references to entities spawned in the same round, despawns, moves, components removed and
//! put back, `Saveable` taken off and put back, reparenting, children reordered, a resource),
//! then saves the slot (a delta, now and then a full save, sometimes two deltas in a frame),
//! and now and then loads the slot in place or compacts its journal. A second test saves two
//! slots in turn and loads one or the other between saves (a load takes back the entities the
//! game stopped saving whose ids it has). Seeds are fixed, so a failure names its seed and
//! round.

mod common;

use std::collections::BTreeMap;

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{LoadFailed, SaveFailed, SaveManager, Saveable, SavegameCommands};

/// xorshift64: the same steps for a seed on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

#[derive(Component)]
struct Root;
#[derive(Component)]
struct Leaf;

/// The world a new app loads from `slot`, and its score.
fn loaded(dir: &std::path::Path, slot: SlotId) -> (BTreeMap<u32, Observed>, u64) {
    let mut app = app(dir);
    app.world_mut().commands().load(slot);
    app.update();
    let failed = drain::<LoadFailed>(&mut app);
    assert!(failed.is_empty(), "{}", failed[0].error);
    let score = app
        .world()
        .get_resource::<Score>()
        .map_or(u64::MAX, |s| s.0);
    (observe(app.world_mut()), score)
}

/// A saved entity with `F`, picked at random (in entity order, so a seed picks the same).
fn pick<F: Component>(world: &mut World, rng: &mut Rng) -> Option<Entity> {
    let mut found: Vec<Entity> = world
        .query_filtered::<Entity, (With<F>, With<Saveable>)>()
        .iter(world)
        .collect();
    found.sort();
    (!found.is_empty()).then(|| found[rng.below(found.len())])
}

fn targeted(world: &mut World, e: Entity) -> bool {
    world.query::<&Target>().iter(world).any(|t| t.entity == e)
}

/// A child's place: under `parent`, last or at a random index.
fn adopt(world: &mut World, rng: &mut Rng, parent: Entity, child: Entity) {
    if rng.chance(50) {
        world.entity_mut(child).insert(ChildOf(parent));
    } else {
        let n = world.get::<Children>(parent).map_or(0, |c| c.len());
        let at = rng.below(n + 1);
        world.entity_mut(parent).insert_child(at, child);
    }
}

/// One to six random steps of play.
fn play(world: &mut World, rng: &mut Rng) {
    for _ in 0..=rng.below(6) {
        match rng.below(12) {
            0 => {
                let y = rng.below(9) as f32;
                let root = world.spawn((Saveable, Root, Position { x: 0.0, y })).id();
                if rng.chance(50) {
                    world.entity_mut(root).insert(Health { current: 1, max: 2 });
                }
            }
            1 | 2 => {
                let parent = pick::<Root>(world, rng);
                let target = if rng.chance(50) {
                    pick::<Leaf>(world, rng)
                } else {
                    pick::<Root>(world, rng)
                };
                let x = rng.below(100) as f32;
                let mut leaf = world.spawn((Saveable, Leaf, Position { x, y: 1.0 }));
                if let Some(entity) = target {
                    leaf.insert(Target { entity });
                }
                if rng.chance(40) {
                    leaf.insert(Label(format!("l{}", rng.below(1000))));
                }
                let leaf = leaf.id();
                if let Some(parent) = parent {
                    adopt(world, rng, parent, leaf);
                }
                // Another entity now points at the new one (spawned in the same delta).
                if rng.chance(50)
                    && let Some(other) = pick::<Leaf>(world, rng)
                    && other != leaf
                {
                    world.entity_mut(other).insert(Target { entity: leaf });
                }
            }
            3 => {
                let doomed = if rng.chance(85) {
                    pick::<Leaf>(world, rng)
                } else {
                    pick::<Root>(world, rng)
                };
                if let Some(e) = doomed {
                    world.despawn(e);
                }
            }
            4 => {
                if let Some(e) = pick::<Leaf>(world, rng)
                    && let Some(mut p) = world.get_mut::<Position>(e)
                {
                    p.x += 1.0;
                }
            }
            5 => {
                let picked = if rng.chance(50) {
                    pick::<Leaf>(world, rng)
                } else {
                    pick::<Root>(world, rng)
                };
                if let Some(e) = picked {
                    let max = rng.below(50) as u32;
                    if world.get::<Health>(e).is_some() {
                        world.entity_mut(e).remove::<Health>();
                        if rng.chance(40) {
                            world.entity_mut(e).insert(Health { current: 7, max });
                        }
                    } else {
                        world.entity_mut(e).insert(Health { current: 3, max });
                        if rng.chance(30) {
                            world.entity_mut(e).remove::<Health>();
                        }
                    }
                }
            }
            6 => {
                // `Saveable` put back on a leaf, or taken off one nobody points at (with its
                // link), its values changed while it is not saved.
                let mut off: Vec<Entity> = world
                    .query_filtered::<Entity, (With<Leaf>, Without<Saveable>)>()
                    .iter(world)
                    .collect();
                off.sort();
                if !off.is_empty() && rng.chance(60) {
                    let e = off[rng.below(off.len())];
                    world.entity_mut(e).insert(Saveable);
                } else if let Some(e) = pick::<Leaf>(world, rng)
                    && !targeted(world, e)
                {
                    world.entity_mut(e).remove::<(Saveable, ChildOf)>();
                    if rng.chance(30) {
                        world.entity_mut(e).remove::<Position>();
                    }
                    if rng.chance(30) {
                        world.entity_mut(e).insert(Label("while off".into()));
                    }
                    if rng.chance(20) {
                        world.entity_mut(e).insert(Saveable);
                    }
                }
            }
            7 => {
                if let (Some(leaf), Some(root)) =
                    (pick::<Leaf>(world, rng), pick::<Root>(world, rng))
                {
                    adopt(world, rng, root, leaf);
                }
            }
            8 => {
                if let Some(leaf) = pick::<Leaf>(world, rng) {
                    world.entity_mut(leaf).remove::<ChildOf>();
                }
            }
            9 => {
                if let Some(root) = pick::<Root>(world, rng)
                    && let Some(mut children) = world.get_mut::<Children>(root)
                    && children.len() >= 2
                {
                    let n = children.len();
                    children.swap(rng.below(n), rng.below(n));
                }
            }
            10 => {
                if let Some(e) = pick::<Leaf>(world, rng) {
                    if world.get::<Label>(e).is_some() {
                        world.entity_mut(e).remove::<Label>();
                    } else {
                        world.entity_mut(e).insert(Label("x".into()));
                    }
                }
            }
            _ => world.resource_mut::<Score>().0 += 1,
        }
    }
}

/// Fails with the first entities that differ.
#[track_caller]
fn assert_world(got: &BTreeMap<u32, Observed>, expected: &BTreeMap<u32, Observed>, at: &str) {
    let ids: std::collections::BTreeSet<u32> = got.keys().chain(expected.keys()).copied().collect();
    let differ: Vec<String> = ids
        .into_iter()
        .filter(|id| got.get(id) != expected.get(id))
        .take(4)
        .map(|id| {
            format!(
                "{id}: loaded {:?}, expected {:?}",
                got.get(&id),
                expected.get(&id)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{at}:\n{}", differ.join("\n"));
}

/// A run of `rounds` saves of one slot, compacted past `compact_at` percent.
fn run(seed: u64, rounds: u32, compact_at: u32) {
    const SLOT: SlotId = SlotId::Numbered(3);
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(builder(dir.path()).compact_at(compact_at));
    app.insert_resource(Score(0));
    let mut rng = Rng(seed);
    for _ in 0..10 {
        play(app.world_mut(), &mut rng);
    }
    for round in 0..rounds {
        let at = format!("seed {seed} round {round}");
        play(app.world_mut(), &mut rng);
        if rng.chance(8) {
            app.world_mut().commands().save(SLOT);
        } else {
            app.world_mut().commands().save_incremental(SLOT);
        }
        app.update();
        if rng.chance(30) {
            play(app.world_mut(), &mut rng);
            app.world_mut().commands().save_incremental(SLOT);
            app.update();
        }
        settle(&mut app);
        let failed = drain::<SaveFailed>(&mut app);
        assert!(failed.is_empty(), "{at}: {}", failed[0].error);
        let expected = observe(app.world_mut());
        let (got, score) = loaded(dir.path(), SLOT);
        assert_eq!(score, app.world().resource::<Score>().0, "{at}: score");
        assert_world(&got, &expected, &at);
        if rng.chance(25) {
            app.world_mut().commands().load(SLOT);
            app.update();
            let failed = drain::<LoadFailed>(&mut app);
            assert!(failed.is_empty(), "{at}: {}", failed[0].error);
            assert_world(
                &observe(app.world_mut()),
                &expected,
                &format!("{at}, in place"),
            );
        }
        if rng.chance(10) {
            let manager = app.world().resource::<SaveManager>().manager();
            manager.compact(SLOT).unwrap();
        }
    }
}

#[test]
fn random_play_saved_incrementally_loads_to_the_world_saved() {
    for seed in 1..=12 {
        run(seed * 104_729, 30, 100_000);
        run(seed * 15_485_863, 30, 20);
    }
}

#[test]
fn random_play_saved_to_two_slots_in_turn_loads_to_the_world_saved() {
    let slots = [SlotId::Numbered(3), SlotId::Numbered(4)];
    for seed in 1..=12 {
        let dir = tempfile::tempdir().unwrap();
        let compact_at = if seed % 2 == 0 { 20 } else { 100_000 };
        let mut app = app_with(builder(dir.path()).compact_at(compact_at));
        app.insert_resource(Score(0));
        let mut rng = Rng(seed * 7_727);
        for _ in 0..10 {
            play(app.world_mut(), &mut rng);
        }
        for round in 0..30 {
            let at = format!("seed {seed} round {round}");
            play(app.world_mut(), &mut rng);
            let slot = slots[rng.below(2)];
            app.world_mut().commands().save_incremental(slot);
            app.update();
            settle(&mut app);
            let failed = drain::<SaveFailed>(&mut app);
            assert!(failed.is_empty(), "{at}: {}", failed[0].error);
            let expected = observe(app.world_mut());
            let (got, score) = loaded(dir.path(), slot);
            assert_eq!(score, app.world().resource::<Score>().0, "{at}: score");
            assert_world(&got, &expected, &format!("{at}, {slot:?}"));
            let other = slots[rng.below(2)];
            let manager = app.world().resource::<SaveManager>().manager();
            if round > 4 && rng.chance(30) && manager.exists(other).unwrap() {
                app.world_mut().commands().load(other);
                app.update();
                let failed = drain::<LoadFailed>(&mut app);
                assert!(failed.is_empty(), "{at}: {}", failed[0].error);
            }
        }
    }
}
