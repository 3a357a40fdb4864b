//! The undo history on a level whose memento is about 1 MB (MessagePack), against the two
//! baselines of the same run: cloning the memento once (`create_memento`), and cloning plus
//! encoding it once (what a save does with one memento).
//!
//! - `record`: `History::edit` moving one piece (captures and encodes before and after,
//!   compares, stores the difference).
//! - `record (Undoable)`: the same edit of a level that an `Undoable` owns: the before state
//!   is the previous edit's after state, so the level is encoded once.
//! - `record + undo`: the same, then undo it (patches the one full state, decodes, restores).
//! - `undo + redo`: moving through the history.
//! - `diff`: a property-diff edit (`History::diff_edit`) of the same move against a memento edit:
//!   recording each, undo + redo of the diff; and the bytes one entry of each holds.
//!
//! Then memory: a history with a byte budget, fed edits of several kinds (moves, renames,
//! placements and removals in the middle of the level), measured by a counting allocator and
//! compared with its budget and with what `History::bytes` reports.
//!
//! ```text
//! cargo bench --bench history
//! ```

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use savegame::{Codec, History, Originator, Undoable};
use savegame_testkit::Counting;
use serde::{Deserialize, Serialize};

#[global_allocator]
static ALLOC: Counting = Counting::new();

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Piece {
    id: u32,
    kind: String,
    x: f32,
    y: f32,
    rot: f32,
    note: String,
}

/// A level editor's level: pieces in a `Vec`, as many as make a 1 MB memento.
#[derive(Debug, Clone, Default)]
struct Level {
    pieces: Vec<Piece>,
    next_id: u32,
}

#[derive(Serialize, Deserialize)]
struct LevelMemento {
    pieces: Vec<Piece>,
    next_id: u32,
}

impl Originator for Level {
    type Memento = LevelMemento;
    fn create_memento(&self) -> LevelMemento {
        LevelMemento {
            pieces: self.pieces.clone(),
            next_id: self.next_id,
        }
    }
    fn restore_memento(&mut self, m: LevelMemento) -> savegame::Result<()> {
        self.pieces = m.pieces;
        self.next_id = m.next_id;
        Ok(())
    }
}

const KINDS: [&str; 6] = ["wall", "floor", "lamp", "crate", "door", "bookshelf"];

/// A small deterministic random number generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn coord(&mut self) -> f32 {
        (self.next() % 100_000) as f32 / 10.0
    }
}

impl Level {
    fn piece(&mut self, rng: &mut Rng, note: usize) -> Piece {
        let id = self.next_id;
        self.next_id += 1;
        Piece {
            id,
            kind: KINDS[rng.below(KINDS.len())].into(),
            x: rng.coord(),
            y: rng.coord(),
            rot: rng.coord(),
            note: (0..note)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect(),
        }
    }

    /// A level whose memento encodes to about `bytes` bytes.
    fn generate(bytes: usize) -> Level {
        let mut rng = Rng(0x5eed);
        let mut level = Level::default();
        while encoded_len(&level) < bytes {
            for _ in 0..1000 {
                let p = level.piece(&mut rng, 0);
                level.pieces.push(p);
            }
        }
        level
    }
}

fn encoded_len(level: &Level) -> usize {
    Codec::MessagePack
        .encode(&level.create_memento())
        .unwrap()
        .len()
}

/// One edit an editor makes: mostly moves, some renames, placements and removals.
fn random_edit(history: &mut History<Level>, level: &mut Level, rng: &mut Rng) {
    let n = level.pieces.len();
    let i = rng.below(n);
    match rng.below(10) {
        0..=5 => {
            let (x, y) = (rng.coord(), rng.coord());
            history
                .edit(level, "Move", |l| {
                    l.pieces[i].x = x;
                    l.pieces[i].y = y;
                })
                .unwrap();
        }
        6 | 7 => {
            let note: String = (0..rng.below(2000))
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            history
                .edit(level, "Write note", |l| l.pieces[i].note = note)
                .unwrap();
        }
        8 => {
            let len = rng.below(2000);
            let piece = level.piece(rng, len);
            history
                .edit(level, "Place", |l| l.pieces.insert(i, piece))
                .unwrap();
        }
        _ => {
            history
                .edit(level, "Remove", |l| {
                    l.pieces.remove(i);
                })
                .unwrap();
        }
    }
}

fn recording(c: &mut Criterion) {
    let mut level = Level::generate(1 << 20);
    let size = encoded_len(&level);
    let mut history = History::<Level>::builder().limit(50).build().unwrap();
    let mut x = 0.0f32;
    let mut record = |history: &mut History<Level>, level: &mut Level| {
        x += 1.0;
        let to = x;
        assert!(
            history
                .edit(level, "Move", |l| l.pieces[777].x = to)
                .unwrap()
        );
    };

    eprintln!(
        "history on a {size}-byte memento ({} pieces, MessagePack); compare each time with \
         the two baselines of its group",
        level.pieces.len()
    );

    let mut group = c.benchmark_group(format!("history/{}KB-memento", size / 1024));
    group.bench_function("baseline: clone the memento", |b| {
        b.iter(|| black_box(level.create_memento()))
    });
    group.bench_function("baseline: clone + encode the memento", |b| {
        b.iter(|| black_box(Codec::MessagePack.encode(&level.create_memento()).unwrap()))
    });
    group.bench_function("record", |b| b.iter(|| record(&mut history, &mut level)));
    group.bench_function("record + undo", |b| {
        b.iter(|| {
            record(&mut history, &mut level);
            history.undo(&mut level).unwrap();
        })
    });
    group.bench_function("undo + redo", |b| {
        b.iter(|| {
            history.undo(&mut level).unwrap();
            history.redo(&mut level).unwrap();
        })
    });
    let mut owned = Undoable::with_history(
        level.clone(),
        History::<Level>::builder().limit(50).build().unwrap(),
    );
    let mut y = 0.0f32;
    group.bench_function("record (Undoable)", |b| {
        b.iter(|| {
            y += 1.0;
            let to = y;
            assert!(owned.edit("Move", |l| l.pieces[777].x = to).unwrap());
        })
    });
    group.finish();
}

/// A property-diff edit against a memento edit of the same change (one piece moved) on the same
/// 1 MB level: the cost of recording, and the bytes each entry holds.
fn property_diffs(c: &mut Criterion) {
    let mut level = Level::generate(1 << 20);
    let size = encoded_len(&level);
    let mut x = 0.0f32;
    let mut next = move || {
        x += 1.0;
        x
    };

    // Bytes per entry: 50 moves of one piece each way, by History::bytes and by the allocator.
    const N: usize = 50;
    for diff in [false, true] {
        let before = ALLOC.live();
        let mut history = History::<Level>::builder().unlimited().build().unwrap();
        history
            .edit(&mut level, "Warm up", |l| l.pieces[1].x += 1.0)
            .unwrap();
        let (first_bytes, first_live) = (history.bytes(), ALLOC.live() - before);
        if diff {
            history.clear();
        }
        let (start_bytes, start_live) = if diff {
            (history.bytes(), ALLOC.live() - before)
        } else {
            (first_bytes, first_live)
        };
        for i in 0..N {
            let to = next();
            let at = (i * 997) % level.pieces.len();
            let change = |l: &mut Level| l.pieces[at].x = to;
            let recorded = if diff {
                history.diff_edit(&mut level, "Move", change)
            } else {
                history.edit(&mut level, "Move", change)
            };
            assert!(recorded.unwrap());
        }
        let per_entry = (history.bytes() - start_bytes) / N;
        let per_entry_live = (ALLOC.live() - before - start_live) / N;
        eprintln!(
            "{} edit of one piece on a {size}-byte memento: {per_entry} B per entry by \
             history.bytes(), {per_entry_live} B by the allocator{}",
            if diff { "property-diff" } else { "memento" },
            if diff {
                String::new()
            } else {
                format!(" (plus the one full state, {first_bytes} B for the first entry)")
            }
        );
    }

    let mut group = c.benchmark_group(format!("history/{}KB-memento/diff", size / 1024));
    let mut memento = History::<Level>::builder().limit(50).build().unwrap();
    group.bench_function("record: memento edit", |b| {
        b.iter(|| {
            let to = next();
            assert!(
                memento
                    .edit(&mut level, "Move", |l| l.pieces[777].x = to)
                    .unwrap()
            );
        })
    });
    let mut diffs = History::<Level>::builder().limit(50).build().unwrap();
    group.bench_function("record: property-diff edit", |b| {
        b.iter(|| {
            let to = next();
            assert!(
                diffs
                    .diff_edit(&mut level, "Move", |l| l.pieces[777].x = to)
                    .unwrap()
            );
        })
    });
    group.bench_function("property-diff: undo + redo", |b| {
        b.iter(|| {
            diffs.undo(&mut level).unwrap();
            diffs.redo(&mut level).unwrap();
        })
    });
    group.finish();
}

/// Heap bytes the level itself owns (its vector and strings, by capacity).
fn level_heap(level: &Level) -> usize {
    level.pieces.capacity() * size_of::<Piece>()
        + level
            .pieces
            .iter()
            .map(|p| p.kind.capacity() + p.note.capacity())
            .sum::<usize>()
}

/// Memory held by a history with a byte budget, measured by the allocator.
fn memory(_: &mut Criterion) {
    const BUDGET: usize = 4 << 20;
    let mut level = Level::generate(1 << 20);
    let mut rng = Rng(42);
    // Everything allocated from here on, less the level's own growth, is the history's.
    let base = ALLOC.live() - level_heap(&level);
    let mut history = History::<Level>::builder()
        .unlimited()
        .byte_budget(BUDGET)
        .build()
        .unwrap();
    let mut edits = 0;
    for checkpoint in [1000, 3000, 5000, 7000] {
        while edits < checkpoint {
            random_edit(&mut history, &mut level, &mut rng);
            edits += 1;
        }
        let held = ALLOC.live() - level_heap(&level) - base;
        let bytes = history.bytes();
        eprintln!(
            "memory after {edits} edits: {} entries; allocator: {held} B = {:.3} x the \
             {BUDGET}-byte budget; history.bytes() = {bytes} B ({:+.2}% vs the allocator)",
            history.len(),
            held as f64 / BUDGET as f64,
            (bytes as f64 - held as f64) / held as f64 * 100.0,
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    targets = recording, property_diffs, memory
}
criterion_main!(benches);
