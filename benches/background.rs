//! The three measures of saves that never stall a frame, on a 100,000-entity world, each
//! against its baseline in the same run (MessagePack, encrypted, real files):
//!
//! 1. game-thread time of `save_in_background` (capture and hand-off) against a full `save`
//!    (capture, encode, seal, fsync'd write) of the same world, and `create_memento` alone
//!    (the part of the capture that is the game's own clone of its state);
//! 2. an incremental save with 1% of the entities dirty against a full save, with the world
//!    kept as one memento per entity;
//! 3. a load (with every entity restored) of a slot carrying 10 deltas of 1% against a load of
//!    the same state compacted into one base;
//! 4. the frame's cost of `save_state_incremental_in_background` with 1% of 1,000 chunks dirty
//!    (10 chunks of 100 entities: their clones and the hand-off) against a full capture of
//!    the 1,000 chunks (`capture_state`: a clone of each), and against the blocking
//!    `save_state_incremental` of the same change (issue 30, item 8: at most 0.05× the full
//!    capture).
//!
//! ```text
//! cargo bench --bench background
//! ```

#![allow(missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use savegame::{Codec, Registry, SaveLoadManager, SaveState, SlotId};
use savegame_testkit::game::{DirtyWorld, Rng, World};
use savegame_testkit::key;

const ENTITIES: usize = 100_000;

fn bench_dir() -> PathBuf {
    std::env::var_os("SAVEGAME_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

fn manager(dir: &std::path::Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(Codec::MessagePack)
        .key(key())
        // Measure appends, not the compactions they eventually trigger.
        .compact_at(10_000)
        .build()
        .unwrap()
}

fn game_thread(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let manager = manager(dir.path());
    let world = World::generate(ENTITIES, 1);
    let slot = SlotId::Numbered(1);
    let mut group = c.benchmark_group("game-thread/world-100k");
    group.bench_function("save (capture + encode + seal + write)", |b| {
        b.iter(|| {
            let mut s = manager.snapshot();
            s.capture("world", black_box(&world)).unwrap();
            manager.save(slot, &s).unwrap()
        })
    });
    group.bench_function("create_memento alone (the game's clone)", |b| {
        b.iter(|| savegame::Originator::create_memento(black_box(&world)))
    });
    group.bench_function("save_in_background (capture + hand-off)", |b| {
        b.iter_custom(|iters| {
            let mut blocked = Duration::ZERO;
            for _ in 0..iters {
                // The worker finishes the previous save off the clock, as it would between
                // two autosaves of a game.
                assert!(manager.flush().is_empty());
                let start = Instant::now();
                let mut s = manager.snapshot();
                s.capture("world", black_box(&world)).unwrap();
                drop(manager.save_in_background(slot, s));
                blocked += start.elapsed();
            }
            blocked
        })
    });
    group.finish();
    assert!(manager.flush().is_empty());
}

fn incremental(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let appends_only = manager(dir.path());
    let compacting = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::MessagePack)
        .key(key())
        .build()
        .unwrap();
    let mut world = DirtyWorld::generate(ENTITIES, 2);
    let mut rng = Rng::new(3);
    let (slot, other) = (SlotId::Numbered(2), SlotId::Numbered(5));
    let full = |manager: &SaveLoadManager, slot, world: &DirtyWorld| {
        let mut s = manager.snapshot();
        world.capture_all(&mut s).unwrap();
        manager.save(slot, &s).unwrap();
    };
    full(&appends_only, slot, &world);
    full(&compacting, other, &world);
    world.saved();
    let incremental = |world: &mut DirtyWorld,
                       rng: &mut Rng,
                       manager: &SaveLoadManager,
                       slot,
                       iters: u64,
                       reset: bool| {
        let mut spent = Duration::ZERO;
        for i in 0..iters {
            if reset && i % 200 == 199 {
                // Off the clock: a full save starts a new journal, so appends are measured on
                // journals of realistic length.
                full(manager, slot, world);
            }
            world.play(rng, ENTITIES / 100, 0, 0);
            let start = Instant::now();
            let mut changes = manager.snapshot();
            world.capture_changes(&mut changes).unwrap();
            manager.save_incremental(slot, &changes).unwrap();
            spent += start.elapsed();
            world.saved();
        }
        spent
    };
    let mut group = c.benchmark_group("save/world-100k-entity-mementos");
    group.bench_function("full save", |b| {
        b.iter(|| full(&appends_only, slot, black_box(&world)))
    });
    group.bench_function("incremental save, 1% dirty (append)", |b| {
        b.iter_custom(|iters| incremental(&mut world, &mut rng, &appends_only, slot, iters, true))
    });
    group.bench_function("incremental save, 1% dirty (with compaction at 50%)", |b| {
        b.iter_custom(|iters| incremental(&mut world, &mut rng, &compacting, other, iters, false))
    });
    group.finish();
}

fn load_with_deltas(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let manager = manager(dir.path());
    let mut world = DirtyWorld::generate(ENTITIES, 4);
    let mut rng = Rng::new(5);
    let (with_deltas, compacted) = (SlotId::Numbered(3), SlotId::Numbered(4));
    let mut s = manager.snapshot();
    world.capture_all(&mut s).unwrap();
    manager.save(with_deltas, &s).unwrap();
    world.saved();
    for _ in 0..10 {
        world.play(&mut rng, ENTITIES / 100, 10, 10);
        let mut changes = manager.snapshot();
        world.capture_changes(&mut changes).unwrap();
        manager.save_incremental(with_deltas, &changes).unwrap();
        world.saved();
    }
    let mut s = manager.snapshot();
    world.capture_all(&mut s).unwrap();
    manager.save(compacted, &s).unwrap();
    assert_eq!(manager.info(with_deltas).unwrap().deltas, 10);

    let load = |slot| {
        let loaded = manager.load(slot).unwrap();
        DirtyWorld::restore(&loaded.snapshot).unwrap()
    };
    assert_eq!(load(with_deltas), world.entities);
    assert_eq!(load(compacted), world.entities);
    let mut group = c.benchmark_group("load/world-100k-entity-mementos");
    group.bench_function("compacted", |b| b.iter(|| load(compacted)));
    group.bench_function("base + 10 deltas of 1%", |b| b.iter(|| load(with_deltas)));
    group.finish();
}

/// The 100,000-entity world in 1,000 chunks of 100 entities, as `benches/save_load.rs` has it.
fn chunks() -> Registry<World> {
    let world = World::generate(ENTITIES, 6);
    let mut chunks: Registry<World> = Registry::new().with_prefix("chunk/");
    for (i, chunk) in world.chunks(100).into_iter().enumerate() {
        chunks.register(format!("{i:04}"), chunk).unwrap();
    }
    chunks
}

fn dirty_chunks(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let manager = manager(dir.path());
    let mut chunks = chunks();
    let slot = SlotId::Numbered(6);
    manager.save_state(slot, &chunks).unwrap();
    let mut round = 0u32;
    // 1% of the chunks, a different 10 each round, each with one entity moved.
    let mut touch = |chunks: &mut Registry<World>| -> Vec<String> {
        round += 1;
        (0..10)
            .map(|k| {
                let id = format!("{:04}", (round as usize * 7 + k * 100) % 1000);
                let chunk = chunks.get_mut(&id).unwrap();
                chunk.entities[0].position.x = round as f32;
                chunks.snapshot_id(&id)
            })
            .collect()
    };
    let mut group = c.benchmark_group("game-thread/world-100k-in-1000-chunks");
    group.bench_function(
        "full capture (capture_state: a clone of every chunk)",
        |b| {
            b.iter(|| {
                let mut s = manager.snapshot();
                black_box(&chunks).capture_state(&mut s).unwrap();
                s
            })
        },
    );
    group.bench_function(
        "save_state_incremental_in_background, 1% dirty (frame: 10 clones + hand-off)",
        |b| {
            b.iter_custom(|iters| {
                let mut frame = Duration::ZERO;
                for _ in 0..iters {
                    // The worker appends the previous delta off the clock; then the frame
                    // plays (changes 10 chunks) and asks for the save.
                    let failed = manager.flush();
                    assert!(failed.is_empty(), "{failed:?}");
                    // Compacted off the clock, before the journal nears the read cap.
                    if manager.info(slot).unwrap().deltas >= 200 {
                        manager.compact(slot).unwrap();
                    }
                    let dirty = touch(&mut chunks);
                    let start = Instant::now();
                    let handle = manager.save_state_incremental_in_background(
                        slot,
                        black_box(&chunks),
                        &dirty,
                    );
                    frame += start.elapsed();
                    drop(handle);
                }
                assert!(manager.flush().is_empty());
                frame
            })
        },
    );
    group.bench_function(
        "save_state_incremental (blocking: capture, fingerprints, append), 1% dirty",
        |b| {
            b.iter(|| {
                touch(&mut chunks);
                manager.save_state_incremental(slot, &chunks).unwrap()
            })
        },
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    targets = game_thread, incremental, load_with_deltas, dirty_chunks
}
criterion_main!(benches);
