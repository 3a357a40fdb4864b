//! An incremental save against its floor, in the same run (issue 30, target 6): the world kept
//! as 100,000 entity mementos, 1% of them dirty per save (MessagePack, encrypted, real files).
//!
//! - `savegame save_incremental`: the changes, captured beforehand (the game's part, off the
//!   clock), encoded, sealed as a delta and appended to the slot's journal with its fsync;
//!   and the same with the changes encoded off the clock too, as the floor's bytes are.
//! - `floor: append + fdatasync`: the same delta bytes, as savegame wrote them, appended to a
//!   file by hand and fdatasync'd: the least any durable incremental save can do.
//! - `full save`: the whole world, for the ratio of an incremental save to a full one.
//!
//! Compaction is off (a journal of realistic length: a full save starts a new one every 200
//! deltas, off the clock, and the base is then left to settle, as a game's base is seconds or
//! minutes old when its deltas come: see `Identity::SETTLE`).
//!
//! ```text
//! cargo bench --bench incremental
//! ```

#![allow(missing_docs)]

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use savegame::{Codec, SaveLoadManager, SlotId};
use savegame_testkit::game::{DirtyWorld, Rng};
use savegame_testkit::key;

const ENTITIES: usize = 100_000;
/// A full save starts a new journal after this many deltas (off the clock).
const DELTAS_PER_JOURNAL: u64 = 200;

fn bench_dir() -> PathBuf {
    std::env::var_os("SAVEGAME_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

fn incremental(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::MessagePack)
        .key(key())
        .compact_at(1_000_000)
        .build()
        .unwrap();
    let slot = SlotId::Numbered(1);
    let journal = manager
        .path_of(slot)
        .with_file_name(format!("{}.journal", slot.file_name()));
    let mut world = DirtyWorld::generate(ENTITIES, 2);
    let mut rng = Rng::new(3);
    let full = |world: &DirtyWorld| {
        let mut s = manager.snapshot();
        world.capture_all(&mut s).unwrap();
        manager.save(slot, &s).unwrap();
    };
    // A game's base is seconds or minutes old when its deltas come: the file system's record
    // of its last change has settled (`Identity::SETTLE`), so a delta reads the base whole
    // only at the first one and every 64th. Off the clock.
    let settle =
        || std::thread::sleep(savegame::storage::Identity::SETTLE + Duration::from_millis(50));
    full(&world);
    world.saved();
    settle();

    // Delta records as savegame writes them, for the floor to append: made off the clock.
    let mut records: Vec<Vec<u8>> = Vec::new();
    for _ in 0..50 {
        let before = std::fs::metadata(&journal).map_or(0, |m| m.len()) as usize;
        world.play(&mut rng, ENTITIES / 100, 0, 0);
        let mut changes = manager.snapshot();
        world.capture_changes(&mut changes).unwrap();
        manager.save_incremental(slot, &changes).unwrap();
        world.saved();
        records.push(std::fs::read(&journal).unwrap()[before..].to_vec());
    }
    let delta_bytes = records.iter().map(Vec::len).sum::<usize>() / records.len();
    let file_bytes = std::fs::metadata(manager.path_of(slot)).unwrap().len();
    eprintln!(
        "incremental/world-100k: a delta of 1% is {delta_bytes} bytes, the full save \
         {file_bytes} bytes"
    );

    let floor_path = dir.path().join("floor.journal");
    // Deltas since the journal began, across criterion's calls.
    // The savegame bench starts with a new, settled base (the full-save bench before it writes
    // bases that have not settled).
    let (mut deltas, mut appended) = (DELTAS_PER_JOURNAL, 0u64);
    let mut group = c.benchmark_group("incremental/world-100k-entity-mementos/msgpack+aes");
    group.bench_function("full save", |b| b.iter(|| full(black_box(&world))));
    // `encoded`: the changed mementos encoded off the clock too, with the capture (the floor's
    // bytes are encoded and sealed already); otherwise they are encoded in the save.
    let mut incremental = |encoded: bool, iters: u64| {
        let mut spent = Duration::ZERO;
        for _ in 0..iters {
            if deltas >= DELTAS_PER_JOURNAL {
                full(&world);
                settle();
                deltas = 0;
            }
            deltas += 1;
            world.play(&mut rng, ENTITIES / 100, 0, 0);
            let mut changes = manager.snapshot();
            world.capture_changes(&mut changes).unwrap();
            if encoded {
                let ids: Vec<String> = changes.ids().map(str::to_owned).collect();
                for id in &ids {
                    changes.encoded(id).unwrap();
                }
            }
            let start = Instant::now();
            manager.save_incremental(slot, black_box(&changes)).unwrap();
            spent += start.elapsed();
            world.saved();
        }
        spent
    };
    group.bench_function("savegame save_incremental, 1% dirty", |b| {
        b.iter_custom(|iters| incremental(false, iters))
    });
    group.bench_function(
        "savegame save_incremental, 1% dirty, encoded in the capture",
        |b| b.iter_custom(|iters| incremental(true, iters)),
    );
    group.bench_function("floor: append + fdatasync, same bytes", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                if appended % DELTAS_PER_JOURNAL == 0 {
                    let _ = std::fs::remove_file(&floor_path);
                }
                let record = &records[appended as usize % records.len()];
                appended += 1;
                let start = Instant::now();
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&floor_path)
                    .unwrap();
                file.write_all(black_box(record)).unwrap();
                file.sync_data().unwrap();
                spent += start.elapsed();
            }
            spent
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    targets = incremental
}
criterion_main!(benches);
