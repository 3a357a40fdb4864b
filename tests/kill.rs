//! Process kills (RELIABILITY.md R2): a child process saves a growing generation number in a
//! loop on the real file system and is killed with SIGKILL at random moments. After every
//! kill the slot loads, with the last generation the child reported as committed, or a newer
//! one.
//!
//! 200 kills by default; set `SAVEGAME_KILL_ROUNDS` for a longer run. The kills are timed by
//! `savegame_testkit::kill` (three in four a random while after the child's first commit, so
//! they land mid-save on a machine of any speed). With the `zstd` feature the same runs over
//! Zstandard saves written as they are encoded, whose padding does not compress, so that a
//! save is several segments sealed and written while later pieces are compressed.

mod common;

use std::path::Path;
use std::time::Duration;

use common::game::Rng;
use savegame::{Codec, Compression, Error, SaveLoadManager, SlotId};
use savegame_testkit::kill::{self, KillLoop};
use serde::{Deserialize, Serialize};

const TEST: &str = "sigkill_at_random_moments_never_loses_a_committed_save";
#[cfg(feature = "zstd")]
const TEST_ZSTD: &str = "sigkill_during_zstd_saves_never_loses_a_committed_save";
const CHILD_DIR: &str = "SAVEGAME_KILL_CHILD_DIR";
const SLOT: SlotId = SlotId::Numbered(7);

#[derive(Serialize, Deserialize)]
struct Progress {
    generation: u64,
    /// Padding of a varying size, so saves take varying time and kills land everywhere.
    padding: Vec<u8>,
}

/// One kill loop: the test that runs it, how its child saves, and the most padding a save
/// carries.
#[derive(Clone, Copy)]
struct Kills {
    test: &'static str,
    compression: Compression,
    /// Random bytes (which do not compress) where set, else one byte repeated.
    random: bool,
    padding: u64,
}

/// `common::dir_manager`'s settings, compressing with `compression`: what the child saves
/// with, and the slot loads with.
fn manager(dir: &Path, compression: Compression) -> SaveLoadManager {
    common::dir_builder(dir)
        .codec(Codec::MessagePack)
        .compression(compression)
        .build()
        .unwrap()
}

fn loaded_generation(dir: &Path) -> Option<u64> {
    match manager(dir, Compression::None).load(SLOT) {
        Ok(loaded) => Some(
            loaded
                .snapshot
                .memento::<Progress>("progress")
                .unwrap()
                .generation,
        ),
        Err(Error::SlotEmpty { .. }) => None,
        Err(e) => panic!("the slot does not load after a kill: {e}"),
    }
}

/// The child: continue from what is on disk, save forever, report each committed generation.
fn child(dir: &Path, kills: Kills) -> ! {
    let manager = manager(dir, kills.compression);
    let mut generation = loaded_generation(dir).unwrap_or(0);
    let mut rng = Rng::new(std::process::id().into());
    kill::report_ready(generation);
    loop {
        generation += 1;
        let mut snapshot = manager.snapshot();
        let len = rng.below(kills.padding) as usize;
        let padding = if kills.random {
            (0..len).map(|_| rng.below(256) as u8).collect()
        } else {
            vec![generation as u8; len]
        };
        snapshot
            .capture_memento(
                "progress",
                &Progress {
                    generation,
                    padding,
                },
            )
            .unwrap();
        manager.save(SLOT, &snapshot).unwrap();
        // Reported only after save() returned Ok.
        kill::report_committed(generation);
    }
}

#[test]
fn sigkill_at_random_moments_never_loses_a_committed_save() {
    kill_loop(
        Kills {
            test: TEST,
            compression: Compression::None,
            random: false,
            padding: 50_000,
        },
        200,
    );
}

/// Saves of up to 700 KB that do not compress: up to three segments, each sealed and written
/// as its frames come.
#[cfg(feature = "zstd")]
#[test]
fn sigkill_during_zstd_saves_never_loses_a_committed_save() {
    kill_loop(
        Kills {
            test: TEST_ZSTD,
            compression: Compression::zstd(),
            random: true,
            padding: 700_000,
        },
        100,
    );
}

/// Runs `kills` for `rounds` rounds (or `SAVEGAME_KILL_ROUNDS`), or, in its child, the child.
fn kill_loop(kills: Kills, rounds: usize) {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child(Path::new(&dir), kills);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let kills = KillLoop::new(kills.test, &[(CHILD_DIR, dir)])
        .rounds(kill::rounds_from_env(rounds))
        .max_delay(Duration::from_millis(80))
        .seed(0xC0FFEE);
    let rounds = kills.round_count();
    let mut committed = 0u64;
    let mut kills_mid_run = 0;
    let summary = kills.run(|round| {
        let resumed = round.resumed;
        assert!(
            resumed >= committed,
            "the child resumed at {resumed} < {committed}"
        );
        let before = committed;
        if let Some(g) = round.committed {
            committed = committed.max(g);
        }
        if committed > before {
            kills_mid_run += 1;
        }
        let on_disk = loaded_generation(Path::new(dir));
        assert!(
            on_disk.unwrap_or(0) >= committed,
            "round {}: the slot holds generation {on_disk:?}, but {committed} was committed",
            round.number
        );
    });
    // Most kills must land while the child was saving, or the test proves little.
    assert!(
        kills_mid_run * 2 >= rounds,
        "only {kills_mid_run} of {rounds} kills came after a save"
    );
    eprintln!("{summary}, {committed} generations committed");
}
