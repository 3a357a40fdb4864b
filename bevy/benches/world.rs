//! Saving and loading a world of 10,000 and of 100,000 saved entities (the tests' world: a
//! position, a reference to another entity, a parent for nine in ten, health on every third, a
//! label on every fifth: 4 registered components; an unregistered mesh on all; two resources)
//! with savegame-bevy, against hand-written serde snapshots of the same components, in the same
//! run. (`bevy_save` 2.0, its latest release, supports Bevy 0.16, not 0.20, so it cannot be
//! measured on this world.)
//!
//! - `save/<n>/frame`: what the requesting frame pays: `SaveCommand` applied to the world
//!   (the copy and the hand-off to the manager's worker; the worker finishes untimed after
//!   each sample).
//! - `save/<n>/until-on-disk`: the same until the save is on disk: the copy, then on the
//!   worker serialization, AES-256-GCM, CRC32, the fsync'd write with a backup, the rename and
//!   the folder's fsync.
//! - `save/<n>/hand-written`: the no-protection baseline: query into a `Vec` of records,
//!   MessagePack (`rmp_serde::to_vec`), one `fs::write`.
//! - `save/<n>/hand-protected`: the same records with the same protection: MessagePack,
//!   AES-256-GCM, CRC32, a temporary file, fsync, rename.
//! - `load/<n>/*`: a load into a new world: savegame-bevy's `LoadCommand` (read, CRC,
//!   decrypt, decode, spawn, map references and parents) against the hand-written one's read,
//!   decode, spawn and map (no checks).
//! - `incremental/<n>/*`: 1% of the entities moved, then `SaveCommand::incremental` until the
//!   delta is on disk (and its frame alone), against a full save of the same world until on
//!   disk; the delta's and the full save's sizes are printed. Appends only: every 200 deltas
//!   a full save replaces the journal, off the clock.
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
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use bevy_ecs::prelude::*;
use bevy_ecs::system::Command;
use common::*;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use savegame::SlotId;
use savegame_bevy::{LoadCommand, SaveCommand, SaveId, SaveManager, Saveable, Saved, Written};
use serde::{Deserialize, Serialize};

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

/// The hand-written capture: ids by query order, then one record per entity.
fn hand_snapshot(world: &mut World) -> HandSnapshot {
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
    HandSnapshot {
        records,
        score: world.resource::<Score>().0,
        level: world.resource::<Level>().clone(),
    }
}

fn hand_save(world: &mut World, path: &Path) {
    let bytes = rmp_serde::to_vec(&hand_snapshot(world)).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The same, sealed as savegame seals: AES-256-GCM, CRC32, a temporary file, fsync, rename.
fn hand_protected_save(world: &mut World, cipher: &Aes256Gcm, dir: &Path) {
    let mut buf = rmp_serde::to_vec(&hand_snapshot(world)).unwrap();
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).unwrap();
    let tag = cipher
        .encrypt_inout_detached(&Nonce::from(nonce), b"", buf.as_mut_slice().into())
        .unwrap();
    buf.extend_from_slice(&tag);
    buf.extend_from_slice(&nonce);
    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    let tmp = dir.join("protected.tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(&buf).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::rename(&tmp, dir.join("protected.bin")).unwrap();
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

/// Waits for the worker, off the clock.
fn flush(app: &bevy_app::App) {
    assert!(
        app.world()
            .resource::<SaveManager>()
            .manager()
            .flush()
            .is_empty()
    );
}

fn world_of(dir: &Path, entities: usize) -> bevy_app::App {
    // Appends only in the incremental benches: compaction is measured by the full save.
    let mut app = app_with(builder(dir).compact_at(100_000));
    build_world(app.world_mut(), entities);
    app.insert_resource(Score(99)).insert_resource(Level {
        name: "crypt".into(),
        seed: 7,
    });
    app
}

fn save_and_load(c: &mut Criterion, entities: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut app = world_of(dir.path(), entities);
    let slot = SlotId::Numbered(1);
    let hand_path = dir.path().join("hand.msgpack");
    let cipher = Aes256Gcm::new(&common::KEY.into());

    let mut save = c.benchmark_group(format!("save/{entities}"));
    save.sample_size(if entities > 10_000 { 10 } else { 20 });
    save.bench_function("frame", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                SaveCommand::new(slot).apply(app.world_mut());
                total += start.elapsed();
                flush(&app);
            }
            total
        });
    });
    save.bench_function("until-on-disk", |b| {
        b.iter(|| {
            SaveCommand::new(slot).apply(app.world_mut());
            flush(&app);
        });
    });
    save.bench_function("hand-written", |b| {
        b.iter(|| hand_save(app.world_mut(), &hand_path));
    });
    save.bench_function("hand-protected", |b| {
        b.iter(|| hand_protected_save(app.world_mut(), &cipher, dir.path()));
    });
    save.finish();

    let mut load = c.benchmark_group(format!("load/{entities}"));
    load.sample_size(if entities > 10_000 { 10 } else { 20 });
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

/// The last `Saved` the app reported.
fn last_saved(app: &mut bevy_app::App) -> Saved {
    app.update();
    let saved = drain::<Saved>(app);
    saved.into_iter().last().unwrap()
}

fn incremental(c: &mut Criterion, entities: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut app = world_of(dir.path(), entities);
    let (slot, full_slot) = (SlotId::Numbered(2), SlotId::Numbered(3));
    // The first incremental save of a slot is a full one.
    SaveCommand::incremental(slot).apply(app.world_mut());
    flush(&app);
    let full_bytes = match last_saved(&mut app).written {
        Written::Full(report) => report.bytes,
        other => panic!("{other:?}"),
    };
    let movers: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, With<Saveable>>()
        .iter(app.world())
        .collect();
    let mut round = 0usize;
    // 1% of the entities, spread over the world, a different 1% each round.
    let mut play = |world: &mut World| {
        round += 1;
        for k in 0..entities / 100 {
            let e = movers[(k * 100 + round * 7) % movers.len()];
            world.get_mut::<Position>(e).unwrap().x += 1.0;
        }
    };
    play(app.world_mut());
    SaveCommand::incremental(slot).apply(app.world_mut());
    flush(&app);
    let delta = last_saved(&mut app);
    if let Written::Delta {
        report,
        entities: written,
        ..
    } = &delta.written
    {
        println!(
            "incremental/{entities}: a delta of {written} entities is {} bytes; the full save {full_bytes} ({:.2}%)",
            report.bytes,
            report.bytes as f64 * 100.0 / full_bytes as f64
        );
    }
    // A game's base is seconds or minutes old when its deltas come: the file system's record
    // of its last change has settled (`Identity::SETTLE`), so a delta reads the base whole only
    // at the first one, and once that check is a minute old or has stood for 1,024 deltas (the
    // core's `benches/incremental.rs` does the same). The journal is replaced by a full save
    // (what the plugin's next incremental save after a compaction is), and the new base left
    // to settle, off the clock.
    let settle =
        || std::thread::sleep(savegame::storage::Identity::SETTLE + Duration::from_millis(50));
    settle();
    let compact = |app: &mut bevy_app::App| {
        let manager = app.world().resource::<SaveManager>().manager();
        if manager.info(slot).unwrap().deltas > 200 {
            SaveCommand::new(slot).apply(app.world_mut());
            flush(app);
            settle();
        }
    };

    let mut group = c.benchmark_group(format!("incremental/{entities}"));
    group.sample_size(if entities > 10_000 { 10 } else { 20 });
    group.bench_function("full save, until on disk", |b| {
        b.iter(|| {
            SaveCommand::new(full_slot).apply(app.world_mut());
            flush(&app);
        });
    });
    // 1% changed, then an incremental save; timed until on disk, or for its frame alone.
    let mut deltas = |app: &mut bevy_app::App, until_on_disk: bool, iters: u64| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            play(app.world_mut());
            let start = Instant::now();
            SaveCommand::incremental(slot).apply(app.world_mut());
            if until_on_disk {
                flush(app);
            }
            total += start.elapsed();
            flush(app);
            compact(app);
        }
        total
    };
    group.bench_function("1% changed, until on disk", |b| {
        b.iter_custom(|iters| deltas(&mut app, true, iters));
    });
    group.bench_function("1% changed, frame", |b| {
        b.iter_custom(|iters| deltas(&mut app, false, iters));
    });
    group.finish();
    app.update();
    assert!(
        drain::<savegame_bevy::SaveFailed>(&mut app).is_empty(),
        "a save failed"
    );
}

fn ten_thousand(c: &mut Criterion) {
    save_and_load(c, 10_000);
    incremental(c, 10_000);
}

fn hundred_thousand(c: &mut Criterion) {
    save_and_load(c, 100_000);
    incremental(c, 100_000);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = ten_thousand, hundred_thousand
}
criterion_main!(benches);
