//! Replays: the user story of issue 5, and how playback behaves.
//!
//! The story: a deterministic simulation of 300 bodies runs 3,000 frames at 60 fps while a
//! `Recorder` records each frame's input, a keyframe every 300 frames and a state hash every
//! frame. A fresh process (this test binary run again) reads the replay's header without
//! reading the rest (the chunks in between may be anything), plays it back to the identical final state, seeks to frame 2,950, to 10
//! and back to 2,950 with the states of straight playback, and plays at 0.5x and 4x with the
//! frames due for the time that passed. Then: desyncs, versions, keys, seeking limits.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{key, rerun_self};
use savegame::migrate::Migrations;
use savegame::replay::{
    Desync, INPUT_ID, OnDesync, Player, Recorder, ReplayHeader, ReplayStatus, Replayable,
};
use savegame::{Codec, Error, Key, Originator, SaveState, Snapshot};
use savegame_testkit::{sim, wait};
use serde::{Deserialize, Serialize};
use sim::{Input, Sim, SimRng, scripted_input};

const STORY_TEST: &str = "story_a_fresh_process_reads_plays_seeks_and_changes_speed";
const STORY_PATH: &str = "SAVEGAME_REPLAY_STORY_PATH";
const STORY_FINAL: &str = "SAVEGAME_REPLAY_STORY_FINAL";
const SEED: u64 = 2024;
const BODIES: usize = 300;
const FRAMES: u64 = 3_000;

#[test]
fn story_a_fresh_process_reads_plays_seeks_and_changes_speed() {
    if let (Ok(path), Ok(hash)) = (std::env::var(STORY_PATH), std::env::var(STORY_FINAL)) {
        story_child(Path::new(&path), hash.parse().unwrap());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("match-0001.replay");
    let mut recorder = Recorder::builder()
        .key(key())
        .frame_rate(60)
        .seed(SEED)
        .keyframe_every(300)
        .label("Story match")
        .app_version("1.0.0")
        .user_field("map", "arena")
        .create(&path)
        .unwrap();
    let last = sim::record_match(&mut recorder, SEED, BODIES, FRAMES).unwrap();
    let header = recorder.finish().unwrap();
    assert_eq!(header.frame_count(), Some(FRAMES));
    assert_eq!(header.keyframe_count(), Some(10));
    assert_eq!(last.clock.frame, FRAMES);

    let out = rerun_self(
        STORY_TEST,
        &[
            (STORY_PATH, path.to_str().unwrap()),
            (STORY_FINAL, &last.hash().to_string()),
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the playing process failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("STORY PLAYED"), "{stdout}");
}

/// The fresh process's half of the story.
fn story_child(path: &Path, final_hash: u64) {
    // The header, from the start and end chunks alone, without the key: a copy of the file
    // whose chunks in between are scrambled reads the same header (and does not play).
    let header = ReplayHeader::read(path, None).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let field = |at: usize, len: usize| {
        let mut le = [0u8; 8];
        le[..len].copy_from_slice(&bytes[at..at + len]);
        u64::from_le_bytes(le) as usize
    };
    // docs/format.md: 52 + meta + nonce + payload + CRC; the end chunk is 100 bytes sealed.
    let start_len = 52 + field(40, 4) + 12 + field(44, 8) + 4;
    let middle = start_len..bytes.len() - 100;
    assert!(middle.len() > 100_000, "{middle:?}");
    bytes[middle].fill(0xEE);
    let scrambled = path.with_file_name("scrambled.replay");
    std::fs::write(&scrambled, &bytes).unwrap();
    assert_eq!(ReplayHeader::read(&scrambled, None).unwrap(), header);
    assert!(Player::builder().key(key()).open(&scrambled).is_err());
    assert_eq!(header.app_version(), "1.0.0");
    assert_eq!(header.label(), "Story match");
    assert_eq!(header.metadata.user["map"], "arena");
    assert_eq!(header.schema_version, 1);
    assert_eq!(header.frame_rate, 60);
    assert_eq!(header.seed, SEED);
    assert_eq!(header.frame_count(), Some(FRAMES));
    assert_eq!(header.duration(), Some(Duration::from_secs(50)));
    assert_eq!(header.keyframe_count(), Some(10));
    assert!(header.encrypted);

    // Straight playback to the end, from the keyframe of frame 0 into a blank simulation.
    let mut player = Player::builder().key(key()).open(path).unwrap();
    assert_eq!(player.status(), &ReplayStatus::Complete);
    assert_eq!(player.header(), &header);
    assert_eq!(
        player.keyframes().collect::<Vec<_>>(),
        (0..10).map(|k| k * 300).collect::<Vec<_>>()
    );
    assert_eq!(player.hashed_frames(), FRAMES);
    let mut sim = Sim::new(0, 0);
    let progress = player.seek(&mut sim, 0).unwrap();
    assert_eq!(progress.keyframe, Some(0));
    let mut states = vec![sim.clone()];
    for frame in 1..=FRAMES {
        let progress = player.play_to(&mut sim, frame).unwrap();
        assert_eq!((progress.frames, progress.checked), (frame - 1..frame, 1));
        states.push(sim.clone());
    }
    assert!(player.is_finished());
    assert_eq!(
        sim.hash(),
        final_hash,
        "playback reached another final state"
    );
    assert_eq!(player.first_desync(), None);
    // ... and the states of a straight run of the simulation, without any replay.
    let straight = sim::straight_hashes(SEED, BODIES, FRAMES);
    assert!(states.iter().map(Sim::hash).eq(straight.iter().copied()));

    // Seeks: the nearest earlier keyframe, then the inputs forward.
    for (target, keyframe) in [(2_950, 2_700), (10, 0), (2_950, 2_700)] {
        let progress = player.seek(&mut sim, target).unwrap();
        assert_eq!(progress.keyframe, Some(keyframe));
        assert_eq!(progress.frames, keyframe..target);
        assert_eq!(progress.checked, target - keyframe);
        assert_eq!(progress.desync, None);
        assert_eq!(player.position(), target);
        assert_eq!(sim, states[target as usize], "after seeking to {target}");
    }

    // Half speed, then four times, on a display whose frame times jitter: after each display
    // frame, exactly the frames whose recorded time has passed are played.
    player.seek(&mut sim, 0).unwrap();
    let mut display = SimRng::new(5);
    let mut recorded_time = 0u128; // nanoseconds of recording played, times 1,000,000
    let mut ticks = 0;
    for (speed, micros) in [(0.5, 500_000u128), (4.0, 4_000_000)] {
        player.set_speed(speed).unwrap();
        let until = if speed < 1.0 { 2 * 60 } else { u64::MAX };
        let mut display_frames = 0;
        while !player.is_finished() && display_frames < until {
            let dt = Duration::from_micros(10_000 + display.below(15_000) as u64);
            recorded_time += dt.as_nanos() * micros;
            let due = ((recorded_time * 60) / 1_000_000_000_000_000).min(u128::from(FRAMES));
            player.advance(&mut sim, dt).unwrap();
            assert_eq!(u128::from(player.position()), due, "at {speed}x");
            assert_eq!(sim, states[due as usize]);
            display_frames += 1;
            ticks += 1;
        }
        if speed < 1.0 {
            // About two seconds at half speed: about a second of the match.
            assert!(
                (50..=70).contains(&player.position()),
                "{}",
                player.position()
            );
        }
    }
    assert_eq!(sim.hash(), final_hash);
    // About 48 seconds of match at 4x is 12 seconds of display frames of 10 to 25 ms.
    assert!((480..1_300).contains(&ticks), "{ticks} display frames");
    println!("STORY PLAYED");
}

/// Records `frames` frames of the scripted match, `bodies` bodies, into a fresh file.
fn record(dir: &Path, frames: u64, bodies: usize, keyframe_every: u32) -> (PathBuf, Sim) {
    let path = dir.join("match.replay");
    let mut recorder = Recorder::builder()
        .keyframe_every(keyframe_every)
        .seed(SEED)
        .create(&path)
        .unwrap();
    let last = sim::record_match(&mut recorder, SEED, bodies, frames).unwrap();
    recorder.finish().unwrap();
    (path, last)
}

/// The simulation with a bug: from frame `from` on, one more point of score per frame than
/// the recording had. What a nondeterministic game looks like to the player.
struct Drifting {
    sim: Sim,
    from: u64,
}

impl Replayable for Drifting {
    type Input = Input;
    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.sim.restore_state(keyframe).map(drop)
    }
    fn step(&mut self, frame: u64, input: Input) -> savegame::Result<()> {
        self.sim.run_frame(&input);
        if frame >= self.from {
            self.sim.ship.score += 1;
        }
        Ok(())
    }
    fn state_hash(&self) -> Option<u64> {
        Some(self.sim.hash())
    }
}

#[test]
fn the_first_desync_is_reported_with_its_frame_and_keyframe_and_playback_goes_on_or_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, last) = record(tmp.path(), 1_500, 30, 300);
    let straight = sim::straight_hashes(SEED, 30, 1_500);

    // Play on: every frame from 1,234 differs; the first is reported, once.
    let mut player = Player::builder().open(&path).unwrap();
    let mut game = Drifting {
        sim: Sim::new(0, 0),
        from: 1_234,
    };
    player.seek(&mut game, 0).unwrap();
    let early = player.play_to(&mut game, 1_000).unwrap();
    assert_eq!((early.checked, early.desync), (1_000, None));
    let progress = player.play_to(&mut game, 1_500).unwrap();
    let expected: Desync = progress.desync.expect("a desync is reported");
    assert_eq!(expected.frame, 1_234);
    assert_eq!(expected.keyframe, Some(1_200));
    assert_eq!(expected.expected, straight[1_235]);
    assert_ne!(expected.found, expected.expected);
    assert_eq!(player.first_desync(), Some(&expected));
    assert_eq!(progress.checked, 500);
    assert!(player.is_finished(), "playback went on to the end");
    assert_ne!(game.sim.hash(), last.hash());

    // Stop: the call ends right after the frame, with the same report as an error.
    let mut player = Player::builder()
        .on_desync(OnDesync::Stop)
        .open(&path)
        .unwrap();
    let mut game = Drifting {
        sim: Sim::new(0, 0),
        from: 1_234,
    };
    player.seek(&mut game, 0).unwrap();
    match player.play_to(&mut game, 1_500) {
        Err(Error::Desync {
            frame: 1_234,
            keyframe: Some(1_200),
            expected: e,
            found: f,
        }) => assert_eq!((e, f), (expected.expected, expected.found)),
        other => panic!("{other:?}"),
    }
    assert_eq!(player.position(), 1_235);
    // The keyframe before it reproduces the frame with a sound game: no desync there.
    let mut sound = Sim::new(0, 0);
    let progress = player.seek(&mut sound, 1_235).unwrap();
    assert_eq!((progress.keyframe, progress.desync), (Some(1_200), None));
    assert_eq!(sound.hash(), straight[1_235]);
    player.set_on_desync(OnDesync::Continue);
    player.play_to(&mut sound, 1_500).unwrap();
    assert_eq!(sound, last);

    // A game that gives no hash is not checked.
    struct Unhashed(Sim);
    impl Replayable for Unhashed {
        type Input = Input;
        fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
            self.0.restore_state(keyframe).map(drop)
        }
        fn step(&mut self, _: u64, input: Input) -> savegame::Result<()> {
            self.0.run_frame(&input);
            Ok(())
        }
    }
    let mut unhashed = Unhashed(Sim::new(0, 0));
    let progress = player.seek(&mut unhashed, 700).unwrap();
    assert_eq!((progress.frames, progress.checked), (600..700, 0));
}

#[test]
fn frames_hold_the_recorded_inputs_and_hashes_and_seeks_stay_in_range() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("short.replay");
    let mut recorder = Recorder::builder()
        .keyframe_every(0)
        .chunk_size(64)
        .create(&path)
        .unwrap();
    assert!(!recorder.keyframe_due());
    let mut sim = Sim::new(1, 3);
    for frame in 0..50 {
        if frame == 20 {
            let mut keyframe = recorder.snapshot();
            sim.capture_state(&mut keyframe).unwrap();
            recorder.keyframe(&keyframe).unwrap();
        }
        let input = scripted_input(1, frame);
        sim.run_frame(&input);
        let hash = (frame % 3 == 0).then(|| sim.hash());
        assert_eq!(recorder.frame(&input, hash).unwrap(), frame);
    }
    assert!(recorder.durable_frames() < 50);
    let header = recorder.finish().unwrap();
    assert_eq!(header.totals.unwrap().hashed_frames, 17);
    assert!(header.totals.unwrap().chunks > 5, "64-byte chunks");

    let mut player = Player::builder().open(&path).unwrap();
    for n in 0..50 {
        let frame = player.frame::<Input>(n).unwrap();
        assert_eq!(frame.number, n);
        assert_eq!(frame.input, scripted_input(1, n));
        assert_eq!(frame.state_hash.is_some(), n % 3 == 0);
    }
    assert!(matches!(
        player.frame::<Input>(50),
        Err(Error::FrameOutOfRange {
            frame: 50,
            frames: 50
        })
    ));
    let mut game = Sim::new(0, 0);
    assert!(matches!(
        player.seek(&mut game, 19),
        Err(Error::NoKeyframe { frame: 19 })
    ));
    assert!(matches!(
        player.seek(&mut game, 51),
        Err(Error::FrameOutOfRange { frame: 51, .. })
    ));
    assert_eq!(player.seek(&mut game, 50).unwrap().keyframe, Some(20));
    assert_eq!(game, sim);
    // The wrong input type is a typed error.
    assert!(matches!(
        player.frame::<String>(0),
        Err(Error::Decode { .. })
    ));
}

#[test]
fn a_recorder_dropped_without_finishing_leaves_a_replay_cut_short() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dropped.replay");
    let mut recorder = Recorder::builder().create(&path).unwrap();
    let last = sim::record_match(&mut recorder, 3, 20, 700).unwrap();
    assert!(recorder.durable_frames() < 700);
    drop(recorder);

    let header = ReplayHeader::read(&path, None).unwrap();
    assert_eq!((header.totals, header.frame_count()), (None, None));
    assert!(!header.is_complete());
    let mut player = Player::builder().open(&path).unwrap();
    match player.status() {
        ReplayStatus::CutShort {
            playable_len,
            file_len,
            reason,
        } => {
            assert_eq!(playable_len, file_len);
            assert!(reason.contains("without an end chunk"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((player.frame_count(), player.keyframe_count()), (700, 3));
    let mut game = Sim::new(0, 0);
    player.seek(&mut game, 700).unwrap();
    assert_eq!(game, last);
}

#[test]
fn builders_refuse_what_cannot_work() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.replay");
    for builder in [
        Recorder::builder().frame_rate(0),
        Recorder::builder().schema_version(0),
        Recorder::builder().input_version(0),
        Recorder::builder().chunk_size(10),
        Recorder::builder().label("x".repeat(70_000)),
    ] {
        let err = builder.create::<Input>(&path).unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err}");
    }
    record(tmp.path(), 10, 2, 5);
    let path = tmp.path().join("match.replay");
    assert!(matches!(
        Player::builder().schema_version(0).open(&path),
        Err(Error::Config { .. })
    ));
    assert!(matches!(
        Player::builder()
            .schema_version(2)
            .migrations(Migrations::new().step(3, "x", |_| Ok(())))
            .open(&path),
        Err(Error::MigrationChain { .. })
    ));
    let mut player = Player::builder().open(&path).unwrap();
    for bad in [-0.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(player.set_speed(bad), Err(Error::Config { .. })));
    }
    assert!(matches!(
        Player::builder().open(tmp.path().join("none.replay")),
        Err(Error::Io { ref source, .. }) if source.kind() == std::io::ErrorKind::NotFound
    ));
}

/// Version 1 of a small game: a score moved by inputs.
mod v1 {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Originator)]
    #[savegame(self_memento)]
    pub struct Score {
        pub points: i64,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub struct Move {
        pub dx: i64,
    }
}

/// Version 2: `points` is `total`, with a `bonus`; a move has a `dy` too.
mod v2 {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Originator)]
    #[savegame(self_memento)]
    pub struct Score {
        pub total: i64,
        pub bonus: i64,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub struct Move {
        pub dx: i64,
        pub dy: i64,
    }

    impl Replayable for Score {
        type Input = Move;
        fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
            keyframe.restore("score", self)
        }
        fn step(&mut self, _: u64, m: Move) -> savegame::Result<()> {
            self.total += m.dx + m.dy;
            Ok(())
        }
        fn state_hash(&self) -> Option<u64> {
            Some(self.total as u64)
        }
    }
}

/// Records 100 frames of version 1 at the given versions; returns the final points.
fn record_v1(path: &Path, schema_version: u32, input_version: u32) -> i64 {
    let mut recorder = Recorder::builder()
        .codec(Codec::Json)
        .schema_version(schema_version)
        .input_version(input_version)
        .keyframe_every(10)
        .create(path)
        .unwrap();
    let mut score = v1::Score::default();
    for frame in 0..100 {
        if recorder.keyframe_due() {
            let mut keyframe = recorder.snapshot();
            keyframe.capture("score", &score).unwrap();
            recorder.keyframe(&keyframe).unwrap();
        }
        let m = v1::Move {
            dx: frame % 5 - 2 + frame,
        };
        score.points += m.dx;
        recorder.frame(&m, Some(score.points as u64)).unwrap();
    }
    recorder.finish().unwrap();
    score.points
}

fn v2_player() -> savegame::replay::PlayerBuilder {
    Player::builder()
        .schema_version(2)
        .migrations(Migrations::new().step(2, "points_to_total", |doc| {
            let score = doc.memento_mut("score")?;
            score.rename("points", "total");
            score.insert_if_absent("bonus", 0);
            Ok(())
        }))
        .input_version(2)
        .input_migrations(Migrations::new().step(2, "add_dy", |doc| {
            doc.memento_mut(INPUT_ID)?.insert_if_absent("dy", 0);
            Ok(())
        }))
}

#[test]
fn keyframes_and_inputs_of_an_older_game_are_migrated() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("v1.replay");
    let points = record_v1(&path, 1, 1);
    let mut player = v2_player().open(&path).unwrap();
    let mut score = v2::Score::default();
    for target in [100, 35, 100] {
        let progress = player.seek(&mut score, target).unwrap();
        let keyframe = (target / 10 * 10).min(90);
        assert_eq!(progress.keyframe, Some(keyframe));
        assert_eq!(progress.checked, target - keyframe);
        assert_eq!(progress.desync, None, "the migrated game is the same game");
    }
    assert_eq!(
        score,
        v2::Score {
            total: points,
            bonus: 0
        }
    );
    let frame = player.frame::<v2::Move>(7).unwrap();
    assert_eq!(frame.input, v2::Move { dx: 7, dy: 0 });
}

#[test]
fn a_replay_from_a_newer_game_or_without_a_migration_path_is_refused_before_playback() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = tmp.path().join("v1.replay");
    record_v1(&v1, 1, 1);
    // A game at schema 2 without the step from 1.
    let err = Player::builder().schema_version(2).open(&v1).unwrap_err();
    assert!(
        matches!(err, Error::NoMigrationPath { from: 1, to: 2 }),
        "{err}"
    );
    // A game at input format 2 without the step from 1.
    let err = Player::builder().input_version(2).open(&v1).unwrap_err();
    assert!(
        matches!(err, Error::NoInputMigrationPath { from: 1, to: 2 }),
        "{err}"
    );

    let newer = tmp.path().join("v3.replay");
    record_v1(&newer, 3, 1);
    let err = v2_player().open(&newer).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NewerSchema {
                found: 3,
                supported: 2
            }
        ),
        "{err}"
    );
    let newer_input = tmp.path().join("i3.replay");
    record_v1(&newer_input, 1, 3);
    let err = v2_player().open(&newer_input).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NewerInputFormat {
                found: 3,
                supported: 2
            }
        ),
        "{err}"
    );
    // The header still reads, and says which versions the replay needs.
    let header = ReplayHeader::read(&newer_input, None).unwrap();
    assert_eq!((header.schema_version, header.input_version), (1, 3));
}

/// A game whose input is a word, to look for in the file.
#[derive(Default)]
struct Words(Vec<String>);

impl Replayable for Words {
    type Input = String;
    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.0 = keyframe.memento("words")?;
        Ok(())
    }
    fn step(&mut self, _: u64, word: String) -> savegame::Result<()> {
        self.0.push(word);
        Ok(())
    }
}

fn record_words(path: &Path, key: Option<Key>) {
    let builder = Recorder::builder().codec(Codec::Json).label("Secret match");
    let builder = match key {
        Some(key) => builder.key(key),
        None => builder,
    };
    let mut recorder = builder.create(path).unwrap();
    let mut keyframe = recorder.snapshot();
    keyframe
        .capture_memento("words", &Vec::<String>::new())
        .unwrap();
    recorder.keyframe(&keyframe).unwrap();
    for i in 0..20 {
        recorder.frame(&format!("SECRET-MOVE-{i}"), None).unwrap();
    }
    recorder.finish().unwrap();
}

#[test]
fn an_encrypted_replay_hides_its_inputs_and_needs_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let sealed = tmp.path().join("sealed.replay");
    let plain = tmp.path().join("plain.replay");
    record_words(&sealed, Some(key()));
    record_words(&plain, None);
    let text = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    assert!(!text(&sealed).contains("SECRET-MOVE"));
    assert!(text(&plain).contains("\"SECRET-MOVE-7\""));

    // The header reads without the key, as a load menu's does.
    let header = ReplayHeader::read(&sealed, None).unwrap();
    assert_eq!(
        (header.label(), header.frame_count()),
        ("Secret match", Some(20))
    );
    assert!(ReplayHeader::read(&sealed, Some(&key())).is_ok());

    assert!(matches!(
        Player::builder().open(&sealed),
        Err(Error::KeyRequired {
            purpose: savegame::KeyPurpose::Decrypt
        })
    ));
    let wrong = Key::from_bytes([9; 32]);
    assert!(matches!(
        Player::builder().key(wrong.clone()).open(&sealed),
        Err(Error::Decrypt)
    ));
    assert!(matches!(
        ReplayHeader::read(&sealed, Some(&wrong)),
        Err(Error::Decrypt)
    ));
    // A game with a key refuses a plain replay, unless told otherwise.
    assert!(matches!(
        Player::builder().key(key()).open(&plain),
        Err(Error::NotEncrypted)
    ));
    for (path, builder) in [
        (&sealed, Player::builder().key(key())),
        (&plain, Player::builder().key(key()).allow_unencrypted(true)),
    ] {
        let mut player = builder.open(path).unwrap();
        let mut words = Words::default();
        player.seek(&mut words, 20).unwrap();
        assert_eq!(words.0[7], "SECRET-MOVE-7");
    }
}

/// A manager's recorder and replay player use its key, schema version and migrations: a
/// replay recorded by an older version of the game plays in the newer one, its keyframes
/// migrated like saves.
#[test]
fn a_managers_recorder_and_player_share_its_key_and_migrations() {
    use savegame::migrate::Migrations;
    use savegame::replay::Replayable;

    /// v2 of a tiny game: the counter was called `count` in v1.
    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Tally {
        total: i64,
    }
    impl savegame::Originator for Tally {
        type Memento = Tally;
        fn create_memento(&self) -> Tally {
            Tally { total: self.total }
        }
        fn restore_memento(&mut self, m: Tally) -> savegame::Result<()> {
            self.total = m.total;
            Ok(())
        }
    }
    impl Replayable for Tally {
        type Input = i64;
        fn restore_keyframe(&mut self, keyframe: &savegame::Snapshot) -> savegame::Result<()> {
            keyframe.restore("tally", self)
        }
        fn step(&mut self, _frame: u64, input: i64) -> savegame::Result<()> {
            self.total += input;
            Ok(())
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let key = savegame::Key::from_bytes([9; 32]);
    let v1 = savegame::SaveLoadManager::builder()
        .directory(dir.path())
        .key(key.clone())
        .build()
        .unwrap();
    let path = dir.path().join("old.replay");
    let mut recorder = Recorder::builder()
        .profile(&v1.profile())
        .frame_rate(10)
        .keyframe_every(5)
        .create(&path)
        .unwrap();
    let mut count = 0i64;
    for frame in 0..12 {
        if recorder.keyframe_due() {
            let mut keyframe = recorder.snapshot();
            keyframe
                .capture_memento(
                    "tally",
                    &std::collections::BTreeMap::from([("count", count)]),
                )
                .unwrap();
            recorder.keyframe(&keyframe).unwrap();
        }
        count += frame;
        recorder.frame(&frame, None).unwrap();
    }
    recorder.finish().unwrap();

    // Sealed with the manager's key: a player without it is refused.
    assert!(matches!(
        savegame::replay::Player::builder().open(&path),
        Err(savegame::Error::KeyRequired {
            purpose: savegame::KeyPurpose::Decrypt
        })
    ));
    let v2 = savegame::SaveLoadManager::builder()
        .directory(dir.path())
        .key(key)
        .schema_version(2)
        .migrations(Migrations::new().step(2, "rename_count", |doc| {
            doc.memento_mut("tally")?.rename("count", "total");
            Ok(())
        }))
        .build()
        .unwrap();
    let mut player = savegame::replay::Player::builder()
        .profile(&v2.profile())
        .open(&path)
        .unwrap();
    let mut game = Tally::default();
    player.seek(&mut game, 12).unwrap();
    assert_eq!(
        game.total, count,
        "the keyframe of frame 10 was migrated, then 2 frames"
    );
}

/// Real files in a temp folder, with each append held at a gate the test opens, or failing
/// once the test says so: to see what the recorder's writer thread spares the game thread.
#[derive(Debug)]
struct Gated {
    inner: savegame::storage::FsStorage,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    /// Appends waiting at the closed gate.
    waiting: std::sync::atomic::AtomicUsize,
    /// Appends made.
    appended: std::sync::atomic::AtomicUsize,
    fail: std::sync::atomic::AtomicBool,
    /// The id of the last thread that appended (Linux), 0 before any.
    appender: std::sync::atomic::AtomicU32,
}

impl Gated {
    fn new(dir: &Path) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Gated {
            inner: savegame::storage::FsStorage::new(dir).unwrap(),
            open: std::sync::Mutex::new(true),
            opened: std::sync::Condvar::new(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            appended: std::sync::atomic::AtomicUsize::new(0),
            fail: std::sync::atomic::AtomicBool::new(false),
            appender: std::sync::atomic::AtomicU32::new(0),
        })
    }

    fn set_open(&self, open: bool) {
        *self.open.lock().unwrap() = open;
        self.opened.notify_all();
    }

    fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn appended(&self) -> usize {
        self.appended.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl savegame::storage::Storage for Gated {
    fn read(&self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
        self.inner.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.put(name, bytes)
    }
    fn delete(&self, name: &str) -> std::io::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self) -> std::io::Result<Vec<savegame::storage::StoredFile>> {
        self.inner.list()
    }
    fn can_append(&self) -> bool {
        true
    }
    fn append(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        #[cfg(target_os = "linux")]
        self.appender
            .store(common::scheduling("/proc/thread-self/stat").0, SeqCst);
        self.waiting.fetch_add(1, SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
        drop(open);
        self.waiting.fetch_sub(1, SeqCst);
        if self.fail.load(SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "the test's disk is full",
            ));
        }
        self.inner.append(name, bytes)?;
        self.appended.fetch_add(1, SeqCst);
        Ok(())
    }
}

/// A recorder of 64-byte chunks into `name` in `gated`, with a writer thread or without.
fn gated_recorder(gated: &std::sync::Arc<Gated>, name: &str, threaded: bool) -> Recorder<Input> {
    Recorder::builder()
        .key(key())
        .chunk_size(64)
        .keyframe_every(0)
        .writer_thread(threaded)
        .create_in(gated.clone(), name)
        .unwrap()
}

/// How many frames of the scripted match a recorder of 64-byte chunks takes to fill its first
/// chunk: recorded with appends on the game thread, where the frame that fills it appends it.
fn frames_to_fill_a_64_byte_chunk() -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let counted = Gated::new(tmp.path());
    let mut recorder = gated_recorder(&counted, "probe.replay", false);
    let created = counted.appended();
    let mut sim = Sim::new(SEED, 4);
    let mut frames = 0;
    while counted.appended() == created {
        assert!(frames < 10_000, "no chunk was filled in {frames} frames");
        sim::record_frame(&mut recorder, &mut sim, SEED, frames).unwrap();
        frames += 1;
    }
    frames
}

#[test]
fn a_frame_that_fills_a_chunk_hands_it_over_and_does_not_wait_for_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let gated = Gated::new(tmp.path());
    let mut recorder = gated_recorder(&gated, "gated.replay", true);
    assert_eq!(recorder.durable_frames(), 0);

    // The disk stops answering: frames go on until one fills a chunk, and the writer thread
    // is stuck appending it. Every frame() returned meanwhile: none waited for the append.
    // No frame more: by the third chunk the game thread would wait for the writer, which
    // waits at the gate (the bound on memory the recorder keeps).
    let fills = frames_to_fill_a_64_byte_chunk();
    gated.set_open(false);
    let mut sim = Sim::new(SEED, 4);
    let mut frame = 0;
    while frame < fills {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
        frame += 1;
    }
    wait::until(
        "the writer thread to take the chunk to the closed gate",
        || gated.waiting() > 0,
    );
    assert_eq!(
        gated.waiting(),
        1,
        "no chunk was handed over in {frame} frames"
    );
    assert!(
        frame > 1,
        "a chunk of 64 bytes holds more than one frame's input"
    );
    assert_eq!(
        recorder.durable_frames(),
        0,
        "nothing is durable while the append waits"
    );

    // The disk answers again: flush waits for everything, and all of it is durable.
    gated.set_open(true);
    recorder.flush().unwrap();
    assert_eq!(recorder.durable_frames(), frame);
    let header = recorder.finish().unwrap();
    assert_eq!(header.frame_count(), Some(frame));
    let player = Player::builder()
        .key(key())
        .open_in(gated.clone(), "gated.replay")
        .unwrap();
    assert!(player.status().is_complete());
    assert_eq!(player.frame_count(), frame);
}

/// On Linux a replay's writer thread waits for chunks as `SCHED_BATCH` (3), so that handing it
/// one never preempts the game thread, and appends as `SCHED_OTHER` (0), so that its own I/O
/// wakes it as any thread's does (`savegame::threads::waiting`, as the manager's worker).
#[cfg(target_os = "linux")]
#[test]
fn the_writer_thread_waits_as_batch_work_and_appends_as_usual_work() {
    use std::sync::atomic::Ordering::SeqCst;
    let (_, game_policy, _) = common::scheduling("/proc/thread-self/stat");
    assert_eq!(game_policy, 0, "the game thread keeps its own policy");
    let tmp = tempfile::tempdir().unwrap();
    let gated = Gated::new(tmp.path());
    let mut recorder = gated_recorder(&gated, "policy.replay", true);
    // A chunk held at the closed gate: the writer thread is inside its append.
    let fills = frames_to_fill_a_64_byte_chunk();
    gated.set_open(false);
    let mut sim = Sim::new(SEED, 4);
    for frame in 0..fills {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
    }
    wait::until(
        "the writer thread to take the chunk to the closed gate",
        || gated.waiting() > 0,
    );
    let writer = gated.appender.load(SeqCst);
    assert_ne!(
        writer,
        common::scheduling("/proc/thread-self/stat").0,
        "appended on the writer thread"
    );
    let stat = format!("/proc/self/task/{writer}/stat");
    assert_eq!(
        common::scheduling(&stat).1,
        0,
        "the writer's policy while it appends"
    );
    // Everything written, the writer waits for the next chunk.
    gated.set_open(true);
    recorder.flush().unwrap();
    wait::until("the idle writer thread to wait as SCHED_BATCH", || {
        common::scheduling(&stat).1 == 3
    });
    recorder.finish().unwrap();
}

#[test]
fn a_failed_append_on_the_writer_thread_is_reported_and_stops_the_recorder() {
    let tmp = tempfile::tempdir().unwrap();
    let gated = Gated::new(tmp.path());
    let mut recorder = gated_recorder(&gated, "full.replay", true);
    let mut sim = Sim::new(SEED, 4);
    for frame in 0..40 {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
    }
    recorder.flush().unwrap();
    let durable = recorder.durable_frames();
    assert_eq!(durable, 40);

    // The disk fills: the failure comes back from a later frame or from the flush, as the
    // storage's error, once; after it, the recorder refuses everything.
    gated.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut failure = None;
    for frame in 40..200 {
        if let Err(e) = sim::record_frame(&mut recorder, &mut sim, SEED, frame) {
            failure = Some(e);
            break;
        }
    }
    let failure = match failure {
        Some(e) => e,
        None => recorder.flush().unwrap_err(),
    };
    assert!(
        matches!(&failure, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
        "{failure}"
    );
    let stopped = recorder.frame(&Input::default(), None).unwrap_err();
    assert!(
        matches!(stopped, Error::RecordingStopped { .. }),
        "{stopped}"
    );
    assert!(matches!(
        recorder.flush().unwrap_err(),
        Error::RecordingStopped { .. }
    ));
    assert_eq!(recorder.durable_frames(), durable);
    drop(recorder);

    // What was durable still plays, cut short.
    gated.fail.store(false, std::sync::atomic::Ordering::SeqCst);
    let player = Player::builder()
        .key(key())
        .open_in(gated.clone(), "full.replay")
        .unwrap();
    assert!(!player.status().is_complete());
    assert_eq!(player.frame_count(), durable);
}

#[test]
fn without_a_writer_thread_the_frame_that_fills_a_chunk_makes_it_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut recorder = Recorder::builder()
        .chunk_size(64)
        .keyframe_every(0)
        .writer_thread(false)
        .create(tmp.path().join("inline.replay"))
        .unwrap();
    let mut sim = Sim::new(SEED, 4);
    let mut durable_seen = 0;
    for frame in 0..100 {
        sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
        let durable = recorder.durable_frames();
        assert!(durable >= durable_seen && durable <= frame + 1);
        if durable > durable_seen {
            // Inline, a hand-over is the append: everything sealed is durable on return.
            assert_eq!(durable, frame + 1, "frame {frame}");
            durable_seen = durable;
        }
    }
    assert!(durable_seen > 0);
    recorder.finish().unwrap();
}
