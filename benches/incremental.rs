//! An incremental save against its floor, in the same run (issue 30, target 6): the world kept
//! as 100,000 entity mementos, 1% of them dirty per save (MessagePack, encrypted, real files).
//!
//! - `savegame save_incremental`: the changes, captured beforehand (the game's part, off the
//!   clock), encoded, sealed as a delta and appended to the slot's journal with its fsync;
//!   and the same with the changes encoded off the clock too, as the floor's bytes are.
//! - `floor: append + fdatasync`: the same delta bytes, as savegame wrote them, appended to a
//!   file by hand and fdatasync'd: the least any durable incremental save can do. Measured at
//!   the same cadence as savegame's deltas, each after a turn of play and its capture, in the
//!   same rounds: on a virtual disk an fdatasync right after another costs a fifth of one
//!   after a pause, so a floor appended back to back measures the disk's warmth, not the
//!   work. `floor, back to back` shows that figure too.
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
    // only at the first one (and once the check is a minute old, or 1,024 deltas: never in a
    // journal of this bench's). Off the clock.
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
    let mut group = c.benchmark_group("incremental/world-100k-entity-mementos/msgpack+aes");
    group.bench_function("full save", |b| b.iter(|| full(black_box(&world))));
    // The deltas start on a new, settled base (the full-save bench wrote bases that have not
    // settled), off the clock and outside criterion's warm-up.
    full(&world);
    settle();
    // Deltas since the journal began (savegame's and the floor's), across criterion's calls.
    let (mut deltas, mut appended) = (0u64, 0u64);

    // The floor's append, timed: the same delta bytes as savegame wrote, appended and
    // fdatasync'd by hand.
    let floor_append = |appended: &mut u64| {
        if appended.is_multiple_of(DELTAS_PER_JOURNAL) {
            let _ = std::fs::remove_file(&floor_path);
        }
        let record = &records[*appended as usize % records.len()];
        *appended += 1;
        let start = Instant::now();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&floor_path)
            .unwrap();
        file.write_all(black_box(record)).unwrap();
        file.sync_data().unwrap();
        start.elapsed()
    };
    // One round at a game's cadence: a turn of play and its capture before each append, the
    // floor's and savegame's alike (an fdatasync right after another costs a fifth of one
    // after a pause on this machine's disk: see docs/guide/testing.md). `encoded`: the changed
    // mementos encoded off the clock too, with the capture, as the floor's bytes are; otherwise
    // they are encoded in the save. Returns (savegame's time, the floor's).
    let mut round = |encoded: bool| {
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
        let saved = start.elapsed();
        world.saved();
        // The floor's turn, after the same pause.
        world.play(&mut rng, ENTITIES / 100, 0, 0);
        let mut changes = manager.snapshot();
        world.capture_changes(&mut changes).unwrap();
        black_box(&changes);
        world.saved();
        (saved, floor_append(&mut appended))
    };
    // Savegame's and the floor's times summed over every round of each kind (encoded in the
    // capture or not), for their ratio paired round by round.
    let mut paired = [(Duration::ZERO, Duration::ZERO, 0u64); 2];
    let mut rounds = |encoded: bool, floor: bool, iters: u64| {
        let mut spent = Duration::ZERO;
        for _ in 0..iters {
            let (saved, by_hand) = round(encoded);
            let sums = &mut paired[usize::from(encoded)];
            (sums.0, sums.1, sums.2) = (sums.0 + saved, sums.1 + by_hand, sums.2 + 1);
            spent += if floor { by_hand } else { saved };
        }
        spent
    };
    group.bench_function("savegame save_incremental, 1% dirty", |b| {
        b.iter_custom(|iters| rounds(false, false, iters))
    });
    group.bench_function(
        "savegame save_incremental, 1% dirty, encoded in the capture",
        |b| b.iter_custom(|iters| rounds(true, false, iters)),
    );
    group.bench_function("floor: append + fdatasync, same bytes, same cadence", |b| {
        b.iter_custom(|iters| rounds(false, true, iters))
    });
    // The same appends back to back, with no pause between them: what this disk does at its
    // fastest, for comparison (not a cadence a game saves at).
    let mut back_to_back = 0u64;
    group.bench_function("floor, back to back", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| floor_append(&mut back_to_back)).sum())
    });
    group.finish();
    for (encoded, (saved, by_hand, n)) in paired.iter().enumerate() {
        eprintln!(
            "incremental/world-100k: savegame / floor at the same cadence, paired over {n} \
             rounds{}: {:.2}x ({:.1} / {:.1} us)",
            if encoded == 1 {
                ", encoded in the capture"
            } else {
                ""
            },
            saved.as_secs_f64() / by_hand.as_secs_f64(),
            saved.as_secs_f64() * 1e6 / *n as f64,
            by_hand.as_secs_f64() * 1e6 / *n as f64,
        );
    }
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
