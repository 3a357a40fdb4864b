//! Loads that run while other threads and processes save the same slot (RELIABILITY.md R5):
//! a load gives a state at least as new as every save that returned `Ok` before the load
//! began, whether that save was full, incremental, or a compaction.
//!
//! Writers (threads of this process and child processes) each own one counter in the slot. A
//! writer bumps its counter with an incremental save (a delta of its counter alone), or, now
//! and then, with a full save of the whole state (under a lock of the game's own, so no other
//! writer's delta falls between its load and its save). Compactions come due every few deltas.
//! After each save returns, the writer publishes the counter. Loaders, which take no lock of
//! any kind, read every published counter before each load, and check that the load holds each
//! of them or a newer one.
//!
//! Runs for 3 seconds by default, and on a slow machine for as long as the threads take to make
//! more than 50 saves and the loaders 10 loads; set `SAVEGAME_RACE_SECS` for a longer run.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::game::Rng;
use common::{key, rerun_self};
use savegame::{SaveLoadManager, SlotId};

const TEST: &str = "a_load_during_a_compaction_never_returns_a_state_older_than_a_returned_save";
const CHILD_DIR: &str = "SAVEGAME_RACE_CHILD_DIR";
const CHILD_WRITER: &str = "SAVEGAME_RACE_CHILD_WRITER";
const CHILD_SECS: &str = "SAVEGAME_RACE_CHILD_SECS";
const SLOT: SlotId = SlotId::Numbered(5);
const THREAD_WRITERS: usize = 4;
const PROCESS_WRITERS: usize = 2;
const WRITERS: usize = THREAD_WRITERS + PROCESS_WRITERS;

fn manager(dir: &Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .key(key())
        .backups(2)
        // The base is about 20 KB and a delta about 150 bytes: a compaction every ~7 deltas.
        .compact_at(5)
        .build()
        .unwrap()
}

fn counter_id(writer: usize) -> String {
    format!("writer-{writer}")
}

/// Where a child writer publishes the counter of its last save that returned `Ok`.
fn progress_file(dir: &Path, writer: usize) -> PathBuf {
    dir.join(format!("progress-{writer}"))
}

/// The game's own lock, which every writer holds while it saves (never a loader).
fn writers_lock(dir: &Path) -> File {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("writers.lock"))
        .unwrap();
    file.lock().unwrap();
    file
}

/// One save of `counter` by `writer`: mostly a delta, every eighth a full save of everything.
fn save_counter(manager: &SaveLoadManager, dir: &Path, writer: usize, counter: u64, full: bool) {
    let _game_lock = writers_lock(dir);
    if full {
        let mut snapshot = manager.load(SLOT).unwrap().snapshot;
        snapshot
            .capture_memento(&counter_id(writer), &counter)
            .unwrap();
        manager.save(SLOT, &snapshot).unwrap();
    } else {
        let mut changes = manager.snapshot();
        changes
            .capture_memento(&counter_id(writer), &counter)
            .unwrap();
        manager.save_incremental(SLOT, &changes).unwrap();
    }
}

/// A writer's loop: save the next counter until `until`, and after it while `more()` holds
/// (so that enough happens on a slow machine), publishing each after it returned.
fn write_until(
    dir: &Path,
    writer: usize,
    until: Instant,
    more: impl Fn() -> bool,
    publish: impl Fn(u64),
) -> u64 {
    let manager = manager(dir);
    let mut rng = Rng::new(writer as u64 + 1);
    let mut counter = 0;
    while Instant::now() < until || more() {
        counter += 1;
        save_counter(&manager, dir, writer, counter, rng.below(8) == 0);
        publish(counter);
    }
    counter
}

fn publish_to_file(dir: &Path, writer: usize, counter: u64) {
    let path = progress_file(dir, writer);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, counter.to_string()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

fn published_by_file(dir: &Path, writer: usize) -> u64 {
    std::fs::read_to_string(progress_file(dir, writer))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The first save: every counter at 0, and padding that makes the base outweigh a delta.
fn first_save(dir: &Path) {
    let manager = manager(dir);
    let mut snapshot = manager.snapshot().with_label("race");
    for writer in 0..WRITERS {
        snapshot
            .capture_memento(&counter_id(writer), &0u64)
            .unwrap();
    }
    let padding: Vec<u64> = (0..2_500).collect();
    snapshot.capture_memento("padding", &padding).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
}

#[test]
fn a_load_during_a_compaction_never_returns_a_state_older_than_a_returned_save() {
    if let (Ok(dir), Ok(writer), Ok(secs)) = (
        std::env::var(CHILD_DIR),
        std::env::var(CHILD_WRITER),
        std::env::var(CHILD_SECS),
    ) {
        let dir = PathBuf::from(dir);
        let writer: usize = writer.parse().unwrap();
        let until = Instant::now() + Duration::from_secs_f64(secs.parse().unwrap());
        write_until(
            &dir,
            writer,
            until,
            || false,
            |c| publish_to_file(&dir, writer, c),
        );
        return;
    }
    let secs: f64 = std::env::var("SAVEGAME_RACE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    first_save(&dir);

    let until = Instant::now() + Duration::from_secs_f64(secs);
    let children: Vec<_> = (THREAD_WRITERS..WRITERS)
        .map(|writer| {
            rerun_self(
                TEST,
                &[
                    (CHILD_DIR, dir.to_str().unwrap()),
                    (CHILD_WRITER, &writer.to_string()),
                    (CHILD_SECS, &secs.to_string()),
                ],
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    let published: Arc<Vec<AtomicU64>> =
        Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..THREAD_WRITERS)
        .map(|writer| {
            let (dir, published) = (dir.clone(), Arc::clone(&published));
            std::thread::spawn(move || {
                // The threads go on past the time until they alone made more than 50 saves:
                // the check of "too little happened" below holds on a machine of any speed.
                let thread_saves = || -> u64 {
                    (0..THREAD_WRITERS)
                        .map(|w| published[w].load(Ordering::SeqCst))
                        .sum()
                };
                write_until(
                    &dir,
                    writer,
                    until,
                    || thread_saves() <= 50,
                    |c| {
                        published[writer].store(c, Ordering::SeqCst);
                    },
                )
            })
        })
        .collect();

    let done = Arc::new(AtomicBool::new(false));
    let loaders: Vec<_> = (0..2)
        .map(|_| {
            let (dir, published, done) = (dir.clone(), Arc::clone(&published), Arc::clone(&done));
            std::thread::spawn(move || {
                let manager = manager(&dir);
                let (mut loads, mut stale) = (0u64, Vec::new());
                // At least 6 loads each, however slow the machine: more than 10 in all.
                while !done.load(Ordering::SeqCst) || loads < 6 {
                    // Every counter whose save returned before this load began.
                    let expected: Vec<u64> = (0..WRITERS)
                        .map(|w| match w < THREAD_WRITERS {
                            true => published[w].load(Ordering::SeqCst),
                            false => published_by_file(&dir, w),
                        })
                        .collect();
                    let loaded = manager.load(SLOT).unwrap();
                    loads += 1;
                    for (writer, &want) in expected.iter().enumerate() {
                        let got: u64 = loaded.snapshot.memento(&counter_id(writer)).unwrap();
                        if got < want {
                            stale.push(format!(
                                "writer {writer}'s counter read {got} after its save of {want} \
                                 returned ({} deltas on base generation {}, journal problem \
                                 {:?})",
                                loaded.report.deltas,
                                loaded.report.header.generation,
                                loaded.report.journal_problem
                            ));
                        }
                    }
                }
                (loads, stale)
            })
        })
        .collect();

    let mut saves: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child writer failed");
    }
    done.store(true, Ordering::SeqCst);
    let mut loads = 0;
    let mut stale = Vec::new();
    for loader in loaders {
        let (n, s) = loader.join().unwrap();
        loads += n;
        stale.extend(s);
    }
    saves += (THREAD_WRITERS..WRITERS)
        .map(|w| published_by_file(&dir, w))
        .sum::<u64>();
    eprintln!("{saves} saves, {loads} loads, {} stale", stale.len());
    assert!(
        saves > 50 && loads > 10,
        "too little happened: {saves} saves, {loads} loads"
    );
    assert!(
        stale.is_empty(),
        "{} stale loads:\n{}",
        stale.len(),
        stale.join("\n")
    );

    // Every writer's last counter is in the slot.
    let last = manager(&dir).load(SLOT).unwrap().snapshot;
    for writer in 0..THREAD_WRITERS {
        let got: u64 = last.memento(&counter_id(writer)).unwrap();
        assert_eq!(got, published[writer].load(Ordering::SeqCst));
    }
    for writer in THREAD_WRITERS..WRITERS {
        let got: u64 = last.memento(&counter_id(writer)).unwrap();
        assert_eq!(got, published_by_file(&dir, writer));
    }
}
