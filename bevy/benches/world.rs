//! Saving and loading a world of 10,000 saved entities (the tests' world: a position, a
//! reference to another entity, a parent for nine in ten, health on every third, a label on
//! every fifth, an unregistered mesh on all; two resources): savegame-bevy against a
//! hand-written serde snapshot of the same components, in the same run. (`bevy_save` 2.0,
//! its latest release, supports Bevy 0.16, not 0.20, so it cannot be measured on this world.)
//!
//! - `save/frame`: what the requesting frame pays: the capture and the hand-off to the
//!   manager's worker (the write finishes, untimed, after each sample).
//! - `save/written`: the same until the save is on disk: capture, encoding, AES-256-GCM,
//!   the fsync'd write with a backup.
//! - `save/hand-written`: the baseline: query into a `Vec` of records, MessagePack, one
//!   `fs::write` (no encryption, no fsync, no backup).
//! - `load/*`: a load into a new world: savegame-bevy's `LoadCommand` (read, check, decrypt,
//!   decode, spawn, map references and parents) against the baseline's read, decode, spawn
//!   and map.
//!
//! ```text
//! cargo bench -p savegame-bevy --bench world -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(missing_docs)]

// The tests' world: its types, its app and its builder.
#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use bevy_ecs::prelude::*;
use bevy_ecs::system::Command;
use common::*;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use savegame::SlotId;
use savegame_bevy::{LoadCommand, SaveCommand, SaveId, SaveManager, Saveable};
use serde::{Deserialize, Serialize};

const ENTITIES: usize = 10_000;

/// The baseline's record of one entity: the same components, references as ids.
#[derive(Serialize, Deserialize)]
struct Record {
    id: u32,
    position: Position,
    health: Option<Health>,
    target: Option<u32>,
    parent: Option<u32>,
    label: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct HandSnapshot {
    records: Vec<Record>,
    score: u64,
    level: Level,
}

fn hand_save(world: &mut World, path: &Path) {
    let mut ids: HashMap<Entity, u32> = HashMap::new();
    let mut q = world.query_filtered::<Entity, With<Saveable>>();
    for (n, e) in q.iter(world).enumerate() {
        ids.insert(e, n as u32);
    }
    let mut q = world.query_filtered::<(
        Entity,
        &Position,
        Option<&Health>,
        &Target,
        Option<&ChildOf>,
        Option<&Label>,
    ), With<Saveable>>();
    let records = q
        .iter(world)
        .map(|(e, p, h, t, c, l)| Record {
            id: ids[&e],
            position: *p,
            health: h.copied(),
            target: ids.get(&t.entity).copied(),
            parent: c.and_then(|c| ids.get(&c.parent()).copied()),
            label: l.map(|l| l.0.clone()),
        })
        .collect();
    let snapshot = HandSnapshot {
        records,
        score: world.resource::<Score>().0,
        level: world.resource::<Level>().clone(),
    };
    std::fs::write(path, rmp_serde::to_vec(&snapshot).unwrap()).unwrap();
}

fn hand_load(world: &mut World, path: &Path) {
    let snapshot: HandSnapshot = rmp_serde::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut entities = HashMap::new();
    for r in &snapshot.records {
        let mut e = world.spawn((Saveable, SaveId::new(r.id).unwrap(), r.position));
        if let Some(h) = r.health {
            e.insert(h);
        }
        if let Some(l) = &r.label {
            e.insert(Label(l.clone()));
        }
        entities.insert(r.id, e.id());
    }
    for r in &snapshot.records {
        let e = entities[&r.id];
        let target = r
            .target
            .and_then(|t| entities.get(&t).copied())
            .unwrap_or(Entity::PLACEHOLDER);
        world.entity_mut(e).insert(Target { entity: target });
        if let Some(p) = r.parent {
            world.entity_mut(e).insert(ChildOf(entities[&p]));
        }
    }
    world.insert_resource(Score(snapshot.score));
    world.insert_resource(snapshot.level);
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    build_world(app.world_mut(), ENTITIES);
    app.insert_resource(Score(99)).insert_resource(Level {
        name: "crypt".into(),
        seed: 7,
    });
    let slot = SlotId::Numbered(1);
    let hand_path = dir.path().join("hand.msgpack");

    let mut save = c.benchmark_group("save");
    save.sample_size(20);
    save.bench_function("frame", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                SaveCommand::new(slot).apply(app.world_mut());
                total += start.elapsed();
                app.world().resource::<SaveManager>().manager().flush();
            }
            total
        });
    });
    save.bench_function("written", |b| {
        b.iter(|| {
            SaveCommand::new(slot).apply(app.world_mut());
            app.world().resource::<SaveManager>().manager().flush();
        });
    });
    save.bench_function("hand-written", |b| {
        b.iter(|| hand_save(app.world_mut(), &hand_path));
    });
    save.finish();

    let mut load = c.benchmark_group("load");
    load.sample_size(20);
    load.bench_function("savegame-bevy", |b| {
        b.iter_batched(
            || common::app(dir.path()),
            |mut fresh| {
                LoadCommand::new(slot).apply(fresh.world_mut());
                black_box(fresh)
            },
            BatchSize::LargeInput,
        );
    });
    load.bench_function("hand-written", |b| {
        b.iter_batched(
            World::new,
            |mut world| {
                hand_load(&mut world, &hand_path);
                black_box(world)
            },
            BatchSize::LargeInput,
        );
    });
    load.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
