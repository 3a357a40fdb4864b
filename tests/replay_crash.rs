//! Replay crash tolerance: a recording interrupted at any moment opens as a playable replay up
//! to its last complete chunk, and says it was cut short.
//!
//! - Every crash point over a simulated file system: after each prefix of the recording's file
//!   operations, every post-crash state (unsynced data dropped, torn, zeroed or kept; folder
//!   entries kept or not) opens with at least the frames made durable, plays them to the
//!   states of a straight run, and is complete only once the end chunk was written.
//! - I/O faults (a full disk, a failing device) stop the recorder with a typed error; what was
//!   written before plays.
//! - Real processes killed with SIGKILL while recording, by the loop `tests/kill.rs` uses for
//!   saves (`savegame_testkit::kill`).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{SIM_DIR, key};
use savegame::replay::{Player, Recorder, ReplayHeader, ReplayStatus};
use savegame::storage::{Fault, FaultKind, FaultMode, FsStorage, SimFs};
use savegame::{Error, Key};
use savegame_testkit::kill::{self, KillLoop};
use savegame_testkit::sim;
use sim::{Input, Sim, scripted_input};

const NAME: &str = "match.replay";
const SEED: u64 = 11;
const BODIES: usize = 12;

fn storage(fs: &SimFs) -> FsStorage {
    FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap()
}

/// What the recording had made durable after a number of file operations.
#[derive(Debug, Clone, Copy)]
struct Mark {
    ops: usize,
    durable_frames: u64,
    finished: bool,
}

/// Checks what a replay that may have been cut short gives: the frames it plays are those of
/// the scripted match, with their hashes, and play to the states of a straight run.
fn check_playable(player: &mut Player, straight: &[u64]) {
    for n in 0..player.frame_count() {
        let frame = player.frame::<Input>(n).unwrap();
        assert_eq!(frame.input, scripted_input(SEED, n), "frame {n}");
        assert_eq!(
            frame.state_hash,
            Some(straight[n as usize + 1]),
            "frame {n}"
        );
    }
    if player.keyframe_count() > 0 {
        let mut sim = Sim::new(0, 0);
        let end = player.frame_count();
        let progress = player.seek(&mut sim, end).unwrap();
        assert_eq!(progress.desync, None);
        assert_eq!(sim.hash(), straight[end as usize]);
    }
}

#[test]
fn a_crash_at_any_point_of_a_recording_leaves_a_playable_replay_cut_short() {
    let fs = SimFs::new();
    let mut marks = Vec::new();
    let frames = 200;
    let mut recorder = Recorder::builder()
        .key(key())
        .seed(SEED)
        .keyframe_every(50)
        .chunk_size(64)
        .create_in(storage(&fs), NAME)
        .unwrap();
    let created = fs.op_count();
    let mut sim = Sim::new(SEED, BODIES);
    for frame in 0..frames {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
        // The writer thread may be appending meanwhile: what it had made durable is read
        // before the operations it had done, so the mark never claims more than they hold.
        let durable_frames = recorder.durable_frames();
        marks.push(Mark {
            ops: fs.op_count(),
            durable_frames,
            finished: false,
        });
    }
    recorder.finish().unwrap();
    marks.push(Mark {
        ops: fs.op_count(),
        durable_frames: frames,
        finished: true,
    });
    let end = fs.op_count();
    assert!(
        end > 50,
        "the recording wrote {end} operations: too few chunks"
    );
    let straight = sim::straight_hashes(SEED, BODIES, frames);

    let mut images = 0;
    let mut cut_short = 0;
    for after in 0..=end {
        // What had been made durable by the calls that returned before this point.
        let committed = marks
            .iter()
            .rev()
            .find(|m| m.ops <= after)
            .copied()
            .unwrap_or(Mark {
                ops: 0,
                durable_frames: 0,
                finished: false,
            });
        for image in fs.crash_images(after) {
            images += 1;
            let storage = storage(&image.fs);
            let opened = Player::builder().key(key()).open_in(storage.clone(), NAME);
            let mut player = match opened {
                Ok(player) => player,
                Err(e) => {
                    assert!(
                        after < created,
                        "after {after} ops ({image:?}): the start chunk was durable, yet {e}"
                    );
                    assert!(
                        matches!(
                            e,
                            Error::Io { .. } | Error::Malformed { .. } | Error::NotASave
                        ),
                        "{e}"
                    );
                    continue;
                }
            };
            let context = format!("after {after} ops, {:?}", image.data);
            assert!(
                player.frame_count() >= committed.durable_frames,
                "{context}: {} frames play, {} were durable",
                player.frame_count(),
                committed.durable_frames
            );
            let header = ReplayHeader::read_in(&storage, NAME, Some(&key())).unwrap();
            match player.status() {
                ReplayStatus::Complete => {
                    assert_eq!(player.frame_count(), frames, "{context}");
                    assert_eq!(header.frame_count(), Some(frames));
                }
                ReplayStatus::CutShort { .. } => {
                    assert!(!committed.finished, "{context}: finished, yet cut short");
                    assert_eq!(header.totals, None, "{context}");
                    cut_short += 1;
                }
                other => panic!("{other:?}"),
            }
            check_playable(&mut player, &straight);
        }
    }
    eprintln!("{images} crash images after 0 to {end} operations, {cut_short} cut short");
    assert!(images > 300, "{images} crash images");
    assert!(cut_short > 200, "{cut_short} of {images} were cut short");
}

/// A plain recorder into a simulated file system, of small chunks.
fn plain_recorder(fs: &SimFs) -> Recorder<Input> {
    Recorder::builder()
        .seed(SEED)
        .keyframe_every(50)
        .chunk_size(64)
        .create_in(storage(fs), NAME)
        .unwrap()
}

#[test]
fn io_faults_stop_the_recorder_and_what_was_written_still_plays() {
    let probe = SimFs::new();
    let mut recorder = plain_recorder(&probe);
    sim::record_match(&mut recorder, SEED, BODIES, 100).unwrap();
    recorder.finish().unwrap();
    let total_ops = probe.op_count();
    let straight = sim::straight_hashes(SEED, BODIES, 100);

    // The operations that make the save folder come first; the recorder's own start after.
    let folder_ops = {
        let fs = SimFs::new();
        storage(&fs);
        fs.op_count()
    };
    let mut checked = 0;
    for at in folder_ops + 4..total_ops {
        for (kind, mode) in [
            (FaultKind::NoSpace, FaultMode::FromThenOn),
            (FaultKind::Io, FaultMode::Once),
        ] {
            let fs = SimFs::new();
            fs.inject(Fault { at, kind, mode });
            let mut recorder = plain_recorder(&fs);
            let (err, durable, finishing) =
                match sim::record_match(&mut recorder, SEED, BODIES, 100) {
                    Err(e) => {
                        // The recorder has stopped: nothing more is written after a torn chunk.
                        let durable = recorder.durable_frames();
                        let stopped = recorder.frame(&Input::default(), None).unwrap_err();
                        assert!(
                            matches!(stopped, Error::RecordingStopped { .. }),
                            "{stopped}"
                        );
                        (e, durable, false)
                    }
                    Ok(_) => {
                        let durable = recorder.durable_frames();
                        (recorder.finish().unwrap_err(), durable, true)
                    }
                };
            assert!(matches!(err, Error::Io { .. }), "fault at {at}: {err}");

            fs.clear_faults();
            let mut player = Player::builder().open_in(storage(&fs), NAME).unwrap();
            // Only the end chunk's own append can fail after the chunk reached the file (its
            // fsync failed): the replay is complete then, though the recorder said it failed.
            assert!(finishing || !player.status().is_complete(), "fault at {at}");
            assert!(player.frame_count() >= durable, "fault at {at}");
            check_playable(&mut player, &straight);
            checked += 1;
        }
    }
    assert_eq!(checked, (total_ops - folder_ops - 4) * 2);
    assert!(checked > 100, "{checked}");
}

const KILL_TEST: &str = "sigkill_while_recording_leaves_a_playable_replay";
const KILL_DIR: &str = "SAVEGAME_REPLAY_KILL_DIR";
const KILL_BODIES: usize = 40;

/// The child: records the scripted match forever, reporting how many frames are durable.
fn record_until_killed(dir: &Path) -> ! {
    let mut recorder = Recorder::builder()
        .key(key())
        .seed(SEED)
        .keyframe_every(60)
        .chunk_size(1_024)
        .create(dir.join(NAME))
        .unwrap();
    kill::report_ready(0);
    let mut sim = Sim::new(SEED, KILL_BODIES);
    let mut reported = 0;
    for frame in 0.. {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
        if recorder.durable_frames() > reported {
            reported = recorder.durable_frames();
            kill::report_committed(reported);
        }
    }
    unreachable!("the recording never ends")
}

/// Opens the replay the killed child left, and plays it through.
fn check_killed(dir: &Path, durable: u64, key: &Key) -> u64 {
    let mut player = Player::builder()
        .key(key.clone())
        .open(dir.join(NAME))
        .unwrap_or_else(|e| panic!("the replay does not open after a kill: {e}"));
    assert!(!player.status().is_complete(), "the child never finished");
    let frames = player.frame_count();
    assert!(
        frames >= durable,
        "{frames} frames play, but the child reported {durable} durable"
    );
    if frames > 0 {
        let straight = sim::straight_hashes(SEED, KILL_BODIES, frames);
        let mut sim = Sim::new(0, 0);
        player.seek(&mut sim, 0).unwrap();
        let progress = player.play_to(&mut sim, frames).unwrap();
        assert_eq!(progress.desync, None);
        assert_eq!(sim.hash(), straight[frames as usize]);
    }
    frames
}

#[test]
fn sigkill_while_recording_leaves_a_playable_replay() {
    if let Ok(dir) = std::env::var(KILL_DIR) {
        record_until_killed(Path::new(&dir));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let kills = KillLoop::new(KILL_TEST, &[(KILL_DIR, dir)])
        .rounds(kill::rounds_from_env(24))
        .max_delay(Duration::from_millis(60))
        .seed(0xC0FFEE);
    let rounds = kills.round_count();
    let mut kills_mid_recording = 0;
    let mut most = 0;
    let summary = kills.run(|round| {
        // Each child starts a new recording: what it made durable is its own.
        let durable = round.committed.unwrap_or(0);
        if durable > 0 {
            kills_mid_recording += 1;
        }
        most = most.max(check_killed(Path::new(dir), durable, &key()));
    });
    assert!(
        kills_mid_recording * 2 >= rounds,
        "only {kills_mid_recording} of {rounds} kills came after a chunk was written"
    );
    eprintln!("{summary}, up to {most} frames recorded before one");
}
