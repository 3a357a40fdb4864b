//! Loads that run while other threads and processes save the same slot (RELIABILITY.md R6,
//! R10): a load gives a state at least as new as every save that returned `Ok` before the load
//! began, whether that save was full, incremental, or a compaction, and in a folder that was
//! never damaged it never reports damage (a recovery from a backup, a problem with the primary
//! file or the journal), even while saves write over the file it is reading.
//!
//! Writers (threads of this process and child processes) each own one counter in the slot. A
//! writer bumps its counter with an incremental save (a delta of its counter alone), or, now
//! and then, with a full save of the whole state (under a lock of the game's own, so no other
//! writer's delta falls between its load and its save). Compactions come due every few deltas.
//! After each save returns, the writer publishes the counter. Loaders, which take no lock of
//! any kind, read every published counter before each load, and check that the load holds each
//! of them or a newer one.
//!
//! The race of compactions runs for 3 seconds by default, and on a slow machine for as long as
//! the threads take to make more than 50 saves and the loaders 10 loads; set
//! `SAVEGAME_RACE_SECS` for a longer run. The race of recycled files runs 100,000 loads,
//! however long they take, and its twin over Zstandard saves in pieces (with the `zstd`
//! feature) 200 loads of a larger base.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::game::Rng;
use common::{key, rerun_self};
use savegame::{Compression, SaveLoadManager, SlotId};

const TEST: &str = "a_load_during_a_compaction_never_returns_a_state_older_than_a_returned_save";
const CHILD_DIR: &str = "SAVEGAME_RACE_CHILD_DIR";
const CHILD_WRITER: &str = "SAVEGAME_RACE_CHILD_WRITER";
const CHILD_SECS: &str = "SAVEGAME_RACE_CHILD_SECS";
const SLOT: SlotId = SlotId::Numbered(5);
const THREAD_WRITERS: usize = 4;
const PROCESS_WRITERS: usize = 2;
const WRITERS: usize = THREAD_WRITERS + PROCESS_WRITERS;

fn manager(dir: &Path) -> SaveLoadManager {
    common::dir_builder(dir)
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
    write_while(
        &manager(dir),
        dir,
        writer,
        8,
        || Instant::now() < until || more(),
        publish,
    )
}

/// A writer's loop: while `go_on()`, save the next counter (a full save one time in
/// `full_every`, else a delta), publishing each after it returned.
fn write_while(
    manager: &SaveLoadManager,
    dir: &Path,
    writer: usize,
    full_every: u64,
    go_on: impl Fn() -> bool,
    publish: impl Fn(u64),
) -> u64 {
    let mut rng = Rng::new(writer as u64 + 1);
    let mut counter = 0;
    while go_on() {
        counter += 1;
        save_counter(manager, dir, writer, counter, rng.below(full_every) == 0);
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
    first_save_of(&manager(dir), WRITERS, 2_500);
}

/// The first save of `writers` counters at 0, and `padding` numbers.
fn first_save_of(manager: &SaveLoadManager, writers: usize, padding: u64) {
    let mut snapshot = manager.snapshot().with_label("race");
    for writer in 0..writers {
        snapshot
            .capture_memento(&counter_id(writer), &0u64)
            .unwrap();
    }
    let padding: Vec<u64> = (0..padding).collect();
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

// ---- 100,000 loads beside saving threads and processes (R10). ----

const QUIET: &str = "a_load_beside_saving_threads_and_processes_never_reports_damage";
#[cfg(feature = "zstd")]
const QUIET_ZSTD: &str = "a_load_beside_zstd_saves_in_pieces_never_reports_damage";
const LOADERS: u64 = 2;
const QUIET_THREADS: usize = 2;
const QUIET_WRITERS: usize = QUIET_THREADS + 2;

/// One race of loads beside saving threads and processes.
#[derive(Clone, Copy)]
struct Race {
    /// The test that runs it, which its child writers are started as.
    test: &'static str,
    /// How many loads the loaders make between them, however long that takes.
    loads: u64,
    /// How many numbers pad the first save.
    padding: u64,
    compression: Compression,
}

/// The race of recycled files: 100,000 loads of a base of about 3 KB.
const PLAIN_RACE: Race = Race {
    test: QUIET,
    loads: 100_000,
    padding: 300,
    compression: Compression::None,
};

/// The same race over saves compressed with Zstandard in pieces on the manager's threads: a
/// base whose document (about 1.4 MB of MessagePack) is past the length at which a document
/// is cut into pieces, so that every full save and compaction compresses in pieces, and every
/// load decompresses them.
#[cfg(feature = "zstd")]
const ZSTD_RACE: Race = Race {
    test: QUIET_ZSTD,
    loads: 200,
    padding: 300_000,
    compression: Compression::Zstd { level: 1 },
};

impl Race {
    /// The managers of the race: two backups, so a full save writes over the file the
    /// rotation before the last one dropped; deltas compacted with the base every three or
    /// four of them (the plain race's base is about 3 KB).
    fn manager(&self, dir: &Path) -> SaveLoadManager {
        common::dir_builder(dir)
            .backups(2)
            .compact_at(20)
            .compression(self.compression)
            .build()
            .unwrap()
    }
}

/// The file whose existence tells child writers to stop.
fn stop_file(dir: &Path) -> PathBuf {
    dir.join("stop")
}

/// Tells every writer to stop when dropped, so a failing test leaves no child saving.
struct StopWriters<'a>(&'a Path, &'a AtomicBool);

impl Drop for StopWriters<'_> {
    fn drop(&mut self) {
        self.1.store(true, Ordering::SeqCst);
        let _ = std::fs::write(stop_file(self.0), b"");
    }
}

/// Every writer's last published counter: the threads' from `threads`, the others' from
/// their files.
fn published_all(dir: &Path, threads: &[AtomicU64]) -> Vec<u64> {
    (0..QUIET_WRITERS)
        .map(|w| match threads.get(w) {
            Some(counter) => counter.load(Ordering::SeqCst),
            None => published_by_file(dir, w),
        })
        .collect()
}

/// What a loader saw wrong, by kind.
#[derive(Debug, Default)]
struct Problems {
    fallbacks: u64,
    journal: u64,
    errors: u64,
    stale: u64,
    first: Vec<String>,
}

impl Problems {
    fn add(&mut self, count: fn(&mut Self) -> &mut u64, what: String) {
        *count(self) += 1;
        if self.first.len() < 20 {
            self.first.push(what);
        }
    }

    fn merge(&mut self, other: Problems) {
        self.fallbacks += other.fallbacks;
        self.journal += other.journal;
        self.errors += other.errors;
        self.stale += other.stale;
        self.first.extend(other.first);
    }

    fn total(&self) -> u64 {
        self.fallbacks + self.journal + self.errors + self.stale
    }
}

/// One loader's share of the loads: every report of damage, and every counter older than
/// its writer's save that returned before the load began.
fn quiet_loads(race: Race, dir: &Path, published: &[AtomicU64]) -> Problems {
    let manager = race.manager(dir);
    let mut problems = Problems::default();
    for _ in 0..race.loads / LOADERS {
        let expected = published_all(dir, published);
        let loaded = match manager.load(SLOT) {
            Ok(loaded) => loaded,
            Err(e) => {
                problems.add(|p| &mut p.errors, format!("the load failed: {e}"));
                continue;
            }
        };
        let report = &loaded.report;
        if let Some(backup) = report.recovered_from_backup {
            let why = report.primary_problem.as_deref().unwrap_or_default();
            problems.add(
                |p| &mut p.fallbacks,
                format!("backup {backup} loaded: {why}"),
            );
        }
        if let Some(problem) = &report.journal_problem {
            problems.add(|p| &mut p.journal, format!("journal: {problem}"));
        }
        for (writer, &want) in expected.iter().enumerate() {
            let got: u64 = loaded.snapshot.memento(&counter_id(writer)).unwrap();
            if got < want {
                let what = format!("writer {writer}'s counter read {got} after {want} returned");
                problems.add(|p| &mut p.stale, what);
            }
        }
    }
    problems
}

#[test]
fn a_load_beside_saving_threads_and_processes_never_reports_damage() {
    quiet_race(PLAIN_RACE);
}

#[test]
#[cfg(feature = "zstd")]
fn a_load_beside_zstd_saves_in_pieces_never_reports_damage() {
    quiet_race(ZSTD_RACE);
}

/// Runs `race`, or, in a child writer of it, that writer's loop.
fn quiet_race(race: Race) {
    if let (Ok(dir), Ok(writer)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_WRITER)) {
        let dir = PathBuf::from(dir);
        let writer: usize = writer.parse().unwrap();
        let go_on = || !stop_file(&dir).exists();
        write_while(&race.manager(&dir), &dir, writer, 2, go_on, |c| {
            publish_to_file(&dir, writer, c);
        });
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    first_save_of(&race.manager(&dir), QUIET_WRITERS, race.padding);
    let stop = Arc::new(AtomicBool::new(false));
    let published: Arc<Vec<AtomicU64>> =
        Arc::new((0..QUIET_THREADS).map(|_| AtomicU64::new(0)).collect());
    let stop_writers = StopWriters(&dir, &stop);

    // Writers: half of their saves full ones (each writes over the slot's spare, the file
    // the rotation before the last one dropped), half deltas, compacted every few.
    let children: Vec<_> = (QUIET_THREADS..QUIET_WRITERS)
        .map(|writer| {
            let env = [
                (CHILD_DIR, dir.to_str().unwrap()),
                (CHILD_WRITER, &writer.to_string()),
            ];
            rerun_self(race.test, &env)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let writers: Vec<_> = (0..QUIET_THREADS)
        .map(|writer| {
            let (dir, published, stop) = (dir.clone(), Arc::clone(&published), Arc::clone(&stop));
            std::thread::spawn(move || {
                let go_on = || !stop.load(Ordering::SeqCst);
                write_while(&race.manager(&dir), &dir, writer, 2, go_on, |c| {
                    published[writer].store(c, Ordering::SeqCst);
                })
            })
        })
        .collect();
    // Evidence that every writer is saving, before the loads begin.
    savegame_testkit::wait::until("every writer's first save", || {
        !published_all(&dir, &published).contains(&0)
    });

    let started = Instant::now();
    let at_start = published_all(&dir, &published);
    let loaders: Vec<_> = (0..LOADERS)
        .map(|_| {
            let (dir, published) = (dir.clone(), Arc::clone(&published));
            std::thread::spawn(move || quiet_loads(race, &dir, &published))
        })
        .collect();
    let mut problems = Problems::default();
    for loader in loaders {
        problems.merge(loader.join().unwrap());
    }
    let took = started.elapsed();
    let during: Vec<u64> = published_all(&dir, &published)
        .iter()
        .zip(&at_start)
        .map(|(end, start)| end - start)
        .collect();
    drop(stop_writers);
    for writer in writers {
        writer.join().unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child writer failed");
    }
    eprintln!(
        "{} loads in {took:.1?} beside {} saves by {QUIET_THREADS} threads and {} \
         processes: {} fallbacks to a backup, {} journal problems, {} errors, {} stale",
        race.loads,
        during.iter().sum::<u64>(),
        QUIET_WRITERS - QUIET_THREADS,
        problems.fallbacks,
        problems.journal,
        problems.errors,
        problems.stale,
    );
    assert!(
        during.iter().all(|&n| n > 0),
        "a writer saved nothing while the loads ran: {during:?}"
    );
    assert!(
        problems.total() == 0,
        "{} of {} loads in a folder never damaged went wrong ({problems:?})",
        problems.total(),
        race.loads,
    );
}

// ---- A load beside a save that is half-way through (R10). ----

/// Unix only, where `FsStorage` writes a save over the slot's spare in place.
#[cfg(unix)]
mod halfway {
    use std::collections::HashMap;
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::Duration;

    use savegame::SaveLoadManager;
    use savegame::storage::{FileSystem, FsStorage, StdFs, StorageLock, WriteFile};

    use super::{SLOT, key};

    /// How long a test waits for evidence that a thread got somewhere before it fails: a
    /// bound for a hung test, not a timing the test depends on.
    const EVIDENCE: Duration = Duration::from_secs(120);

    /// The one operation a [`PausingFs`] holds up, on the file at its path.
    #[derive(Debug, Clone, PartialEq)]
    enum Hold {
        /// A whole-file read: it opens the file, reads the first half, waits, and reads the
        /// rest from the same open file.
        Read(PathBuf),
        /// An append: it writes the first half of its bytes, waits, and writes the rest.
        Append(PathBuf),
        /// A removal: it waits before it removes the file.
        Remove(PathBuf),
    }

    #[derive(Debug, Default)]
    struct Shared {
        armed: Option<Hold>,
        /// The inode of the file the held operation has open, once it waits.
        paused: Option<u64>,
        released: bool,
        /// How many whole-file reads of each path there were.
        reads: HashMap<PathBuf, usize>,
    }

    /// What a [`PausingFs`] and the test share.
    #[derive(Debug, Default)]
    struct Pause {
        shared: Mutex<Shared>,
        changed: Condvar,
    }

    impl Pause {
        fn shared(&self) -> MutexGuard<'_, Shared> {
            self.shared.lock().unwrap()
        }

        fn arm(&self, hold: Hold) {
            *self.shared() = Shared {
                armed: Some(hold),
                ..Shared::default()
            };
        }

        /// Waits until `until` holds of what is shared, or fails saying `what` never happened.
        fn wait(&self, what: &str, until: impl Fn(&Shared) -> bool) -> MutexGuard<'_, Shared> {
            let shared = self.shared();
            let (shared, waited) = self
                .changed
                .wait_timeout_while(shared, EVIDENCE, |s| !until(s))
                .unwrap();
            assert!(!waited.timed_out(), "{what} never happened");
            shared
        }

        /// Waits until the held operation waits: the inode of the file it has open.
        fn paused(&self) -> u64 {
            self.wait("the held operation", |s| s.paused.is_some())
                .paused
                .unwrap()
        }

        fn reads(&self, path: &Path) -> usize {
            self.shared().reads.get(path).copied().unwrap_or(0)
        }

        /// Waits until `path` has been read whole more than `than` times.
        fn read_more_than(&self, path: &Path, than: usize) {
            let what = format!("a read of {}", path.display());
            drop(self.wait(&what, |s| s.reads.get(path).copied().unwrap_or(0) > than));
        }

        fn release(&self) {
            self.shared().released = true;
            self.changed.notify_all();
        }

        /// Takes the armed hold if it is `hold`.
        fn take(&self, hold: &Hold) -> bool {
            self.shared().armed.take_if(|armed| armed == hold).is_some()
        }

        /// Called by the held operation: says it waits, on the file `inode`, and waits.
        fn hold(&self, inode: u64) {
            self.shared().paused = Some(inode);
            self.changed.notify_all();
            drop(self.wait("the release", |s| s.released));
        }
    }

    /// The real file system ([`StdFs`]), with one operation held up half-way ([`Hold`]) until
    /// the test releases it, and a count of whole-file reads.
    #[derive(Debug, Default, Clone)]
    struct PausingFs(Arc<Pause>);

    /// An append that [`PausingFs`] holds up half-way.
    struct HeldAppend {
        file: Box<dyn WriteFile>,
        pause: Option<(Arc<Pause>, u64)>,
    }

    impl WriteFile for HeldAppend {
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            let Some((pause, inode)) = self.pause.take() else {
                return self.file.write_all(bytes);
            };
            let (first, rest) = bytes.split_at(bytes.len() / 2);
            self.file.write_all(first)?;
            pause.hold(inode);
            self.file.write_all(rest)
        }
        fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
            self.file.write_at(offset, bytes)
        }
        fn sync(&mut self) -> io::Result<()> {
            self.file.sync()
        }
    }

    impl FileSystem for PausingFs {
        fn create_dir(&self, dir: &Path) -> io::Result<bool> {
            StdFs.create_dir(dir)
        }
        fn file_len(&self, path: &Path) -> io::Result<u64> {
            StdFs.file_len(path)
        }
        fn read(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
            let pause = &self.0;
            let held = pause.take(&Hold::Read(path.to_path_buf()));
            let read = if held {
                (|| {
                    let mut file = File::open(path)?;
                    let meta = file.metadata()?;
                    let mut bytes = vec![0; usize::try_from(meta.len() / 2).unwrap()];
                    file.read_exact(&mut bytes)?;
                    pause.hold(meta.ino());
                    file.read_to_end(&mut bytes)?;
                    Ok(bytes)
                })()
            } else {
                StdFs.read(path, limit)
            };
            *pause.shared().reads.entry(path.to_path_buf()).or_default() += 1;
            pause.changed.notify_all();
            read
        }
        fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<(Vec<u8>, u64)> {
            StdFs.read_at(path, offset, len)
        }
        fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
            StdFs.create(path)
        }
        fn overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
            StdFs.overwrite(path)
        }
        fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
            let file = StdFs.open_append(path)?;
            let held = self.0.take(&Hold::Append(path.to_path_buf()));
            let pause = match held {
                true => Some((Arc::clone(&self.0), std::fs::metadata(path)?.ino())),
                false => None,
            };
            Ok(Box::new(HeldAppend { file, pause }))
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdFs.rename(from, to)
        }
        fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdFs.hard_link(from, to)
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            if self.0.take(&Hold::Remove(path.to_path_buf())) {
                self.0.hold(std::fs::metadata(path)?.ino());
            }
            StdFs.remove_file(path)
        }
        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            StdFs.sync_dir(dir)
        }
        fn list_dir(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
            StdFs.list_dir(dir)
        }
        fn list_names(&self, dir: &Path) -> io::Result<Vec<String>> {
            StdFs.list_names(dir)
        }
        fn lock(&self, path: &Path) -> io::Result<StorageLock> {
            StdFs.lock(path)
        }
    }

    /// A manager over a temporary folder through a [`PausingFs`], one backup, deltas never
    /// compacted on their own.
    fn paused_manager(dir: &Path) -> (Arc<SaveLoadManager>, Arc<Pause>) {
        let fs = PausingFs::default();
        let pause = Arc::clone(&fs.0);
        let manager = SaveLoadManager::builder()
            .storage(FsStorage::with_file_system(dir, fs).unwrap())
            .key(key())
            .backups(1)
            .compact_at(1_000)
            .build()
            .unwrap();
        (Arc::new(manager), pause)
    }

    fn generation_snapshot(manager: &SaveLoadManager, generation: u64) -> savegame::Snapshot {
        let mut snapshot = manager.snapshot();
        snapshot.capture_memento("generation", &generation).unwrap();
        let padding: Vec<u64> = (0..2_000).map(|i| i * generation).collect();
        snapshot.capture_memento("padding", &padding).unwrap();
        snapshot
    }

    fn turn(manager: &SaveLoadManager, turn: u64) -> savegame::Snapshot {
        let mut changes = manager.snapshot();
        changes.capture_memento("turn", &turn).unwrap();
        changes
    }

    fn in_thread<T: Send + 'static>(
        manager: &Arc<SaveLoadManager>,
        f: impl FnOnce(&SaveLoadManager) -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let manager = Arc::clone(manager);
        std::thread::spawn(move || f(&manager))
    }

    fn assert_no_damage_reported(loaded: &savegame::Loaded) {
        let report = &loaded.report;
        assert_eq!(
            (
                report.recovered_from_backup,
                report.primary_problem.as_deref(),
                report.journal_problem.as_deref()
            ),
            (None, None, None),
            "the folder was never damaged"
        );
    }

    #[test]
    fn a_load_reading_the_primary_while_saves_write_over_it_reports_no_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let (manager, pause) = paused_manager(tmp.path());
        // Three saves: the third rotation dropped the first file, kept as the slot's spare.
        for generation in 1..=3 {
            manager
                .save(SLOT, &generation_snapshot(&manager, generation))
                .unwrap();
        }
        let primary = manager.path_of(SLOT);
        let spare = tmp.path().join(format!(".{}.spare", SLOT.file_name()));
        assert!(spare.exists(), "the slot has a spare");

        pause.arm(Hold::Read(primary.clone()));
        let loader = in_thread(&manager, |m| m.load(SLOT));
        let reading = pause.paused();
        // Saves until the file the load has open has been recycled: written over with a
        // newer save, which is the primary file again.
        let mut generation = 3;
        loop {
            generation += 1;
            manager
                .save(SLOT, &generation_snapshot(&manager, generation))
                .unwrap();
            if std::fs::metadata(&primary).unwrap().ino() == reading {
                break;
            }
            assert!(
                generation < 10,
                "the file the load reads was never recycled"
            );
        }
        pause.release();
        let loaded = loader.join().unwrap().unwrap();
        assert_no_damage_reported(&loaded);
        assert_eq!(
            loaded.snapshot.memento::<u64>("generation").unwrap(),
            generation,
            "the newest save on disk"
        );
    }

    /// A slot of a base and one delta; `writer` (another save of it) is held at `hold` on
    /// the journal while a load reads the journal, then goes on: what the load gives.
    fn load_beside_a_held_journal_write(
        hold: fn(PathBuf) -> Hold,
        writer: fn(&SaveLoadManager) -> savegame::Result<()>,
    ) -> savegame::Loaded {
        let tmp = tempfile::tempdir().unwrap();
        let (manager, pause) = paused_manager(tmp.path());
        manager
            .save(SLOT, &generation_snapshot(&manager, 1))
            .unwrap();
        manager.save_incremental(SLOT, &turn(&manager, 1)).unwrap();
        let journal = tmp.path().join(format!("{}.journal", SLOT.file_name()));

        pause.arm(hold(journal.clone()));
        let writing = in_thread(&manager, writer);
        pause.paused();
        let reads = pause.reads(&journal);
        let loader = in_thread(&manager, |m| m.load(SLOT));
        pause.read_more_than(&journal, reads);
        pause.release();
        writing.join().unwrap().unwrap();
        loader.join().unwrap().unwrap()
    }

    #[test]
    fn a_load_reading_the_journal_while_a_delta_is_appended_reports_no_damage() {
        // The load reads the journal while half of the delta is in it.
        let loaded = load_beside_a_held_journal_write(Hold::Append, |m| {
            m.save_incremental(SLOT, &turn(m, 2)).map(drop)
        });
        assert_no_damage_reported(&loaded);
        assert_eq!(loaded.snapshot.memento::<u64>("turn").unwrap(), 2);
    }

    #[test]
    fn a_load_during_a_compaction_reports_no_damage_of_the_journal_it_ends() {
        // The compaction has written its new base, and not yet removed the journal.
        let loaded = load_beside_a_held_journal_write(Hold::Remove, |m| m.compact(SLOT).map(drop));
        assert_no_damage_reported(&loaded);
        assert_eq!(loaded.snapshot.memento::<u64>("turn").unwrap(), 1);
    }
}
