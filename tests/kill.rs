//! Process kills (RELIABILITY.md R2): a child process saves a growing generation number in a
//! loop on the real file system and is killed with SIGKILL at random moments. After every
//! kill the slot loads, with the last generation the child reported as committed, or a newer
//! one.
//!
//! 200 kills by default; set `SAVEGAME_KILL_ROUNDS` for a longer run.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::game::Rng;
use common::{dir_manager, rerun_self};
use savegame::{Error, SlotId};
use serde::{Deserialize, Serialize};

const TEST: &str = "sigkill_at_random_moments_never_loses_a_committed_save";
const CHILD_DIR: &str = "SAVEGAME_KILL_CHILD_DIR";
const SLOT: SlotId = SlotId::Numbered(7);

#[derive(Serialize, Deserialize)]
struct Progress {
    generation: u64,
    /// Padding of a varying size, so saves take varying time and kills land everywhere.
    padding: Vec<u8>,
}

fn loaded_generation(dir: &Path) -> Option<u64> {
    match dir_manager(dir).load(SLOT) {
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
fn child(dir: &Path) -> ! {
    let manager = dir_manager(dir);
    let mut generation = loaded_generation(dir).unwrap_or(0);
    let mut rng = Rng::new(std::process::id().into());
    println!("READY {generation}");
    loop {
        generation += 1;
        let mut snapshot = manager.snapshot();
        let padding = vec![generation as u8; rng.below(50_000) as usize];
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
        // Printed (and flushed: stdout is a pipe, println! flushes each line) only after save()
        // returned Ok.
        println!("COMMITTED {generation}");
    }
}

#[test]
fn sigkill_at_random_moments_never_loses_a_committed_save() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child(Path::new(&dir));
    }
    let rounds: usize = std::env::var("SAVEGAME_KILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let mut rng = Rng::new(0xC0FFEE);
    let mut committed = 0u64;
    let mut kills_mid_run = 0;
    let started = Instant::now();
    for round in 0..rounds {
        let mut child = rerun_self(TEST, &[(CHILD_DIR, dir)])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until the child has loaded, then let it save for a random while.
        let ready = rx
            .iter()
            .find(|l| l.contains("READY "))
            .expect("the child starts");
        let resumed: u64 = ready.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(
            resumed >= committed,
            "the child resumed at {resumed} < {committed}"
        );
        std::thread::sleep(Duration::from_micros(rng.below(80_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let before = committed;
        for line in rx.try_iter() {
            if let Some(g) = line.split("COMMITTED ").nth(1) {
                committed = committed.max(g.trim().parse().unwrap());
            }
        }
        if committed > before {
            kills_mid_run += 1;
        }
        let on_disk = loaded_generation(Path::new(dir));
        assert!(
            on_disk.unwrap_or(0) >= committed,
            "round {round}: the slot holds generation {on_disk:?}, but {committed} was committed"
        );
    }
    // Most kills must land while the child was saving, or the test proves little.
    assert!(
        kills_mid_run * 2 >= rounds,
        "only {kills_mid_run} of {rounds} kills came after a save"
    );
    eprintln!(
        "{rounds} kills, {committed} generations committed, {:?}",
        started.elapsed()
    );
}
