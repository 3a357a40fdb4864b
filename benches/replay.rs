//! The replay's three measures (issue 5), on the 300-body simulation of
//! `examples/shared/sim.rs`, MessagePack, encrypted, real files:
//!
//! 1. recording overhead per frame: a simulation step (with its state hash) alone, against
//!    the same step recorded (input, hash, and a keyframe every 300 frames), and the recording
//!    alone;
//! 2. seeking to the last frame of a 100,000-frame replay, against playing it from the start;
//! 3. file size per minute of recording (printed once, not timed);
//! 4. the game thread's time per recorded frame, mean, 99.9th percentile and worst, over
//!    36,000 frames (ten minutes), with the recorder's writer thread and without it (each
//!    append and its fsync in the frame that fills a chunk), printed from one run of each,
//!    interleaved three times.
//!
//! ```text
//! cargo bench --bench replay
//! ```

#![allow(missing_docs)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use savegame::replay::Player;
use savegame::{Recorder, SaveState};
use savegame_testkit::{key, sim};
use sim::{Input, Sim, scripted_input};

const BODIES: usize = 300;
const SEED: u64 = 9;
const LONG: u64 = 100_000;

fn bench_dir() -> PathBuf {
    std::env::var_os("SAVEGAME_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

fn recorder(path: &Path) -> Recorder<Input> {
    Recorder::builder()
        .key(key())
        .seed(SEED)
        .keyframe_every(300)
        .create(path)
        .unwrap()
}

fn record_overhead(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let path = dir.path().join("overhead.replay");
    let mut group = c.benchmark_group("replay/frame-300-bodies");
    let mut sim = Sim::new(SEED, BODIES);
    let mut frame = 0u64;
    group.bench_function("step + state hash (the game alone)", |b| {
        b.iter(|| {
            sim.run_frame(&scripted_input(SEED, frame));
            frame += 1;
            black_box(sim.hash())
        })
    });
    group.bench_function("record alone (input, hash, keyframe every 300)", |b| {
        b.iter_custom(|iters| {
            let mut recorder = recorder(&path);
            let sim = Sim::new(SEED, BODIES);
            let hash = sim.hash();
            let start = Instant::now();
            for frame in 0..iters {
                if recorder.keyframe_due() {
                    let mut keyframe = recorder.snapshot();
                    sim.capture_state(&mut keyframe).unwrap();
                    recorder.keyframe(&keyframe).unwrap();
                }
                let input = scripted_input(SEED, frame);
                recorder.frame(black_box(&input), Some(hash)).unwrap();
            }
            let spent = start.elapsed();
            recorder.finish().unwrap();
            spent
        })
    });
    group.bench_function("step + state hash + record (keyframe every 300)", |b| {
        b.iter_custom(|iters| {
            // A new recording for each batch, off the clock, so the file stays of a match's
            // size.
            let mut recorder = recorder(&path);
            let mut sim = Sim::new(SEED, BODIES);
            let start = Instant::now();
            for frame in 0..iters {
                sim::record_frame(&mut recorder, &mut sim, SEED, frame).unwrap();
            }
            let spent = start.elapsed();
            recorder.finish().unwrap();
            spent
        })
    });
    group.finish();
}

fn seek_against_playing(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let path = dir.path().join("long.replay");
    let mut recorder = recorder(&path);
    let last = sim::record_match(&mut recorder, SEED, BODIES, LONG).unwrap();
    recorder.finish().unwrap();
    let mut player = Player::builder().key(key()).open(&path).unwrap();
    let mut game = Sim::new(0, 0);
    // Both ways reach the recorded final state.
    player.seek(&mut game, LONG).unwrap();
    assert_eq!(game, last);
    player.seek(&mut game, 0).unwrap();
    player.play_to(&mut game, LONG).unwrap();
    assert_eq!(game, last);

    let mut group = c.benchmark_group("replay/100k-frames-300-bodies");
    group.bench_function("seek to the last frame", |b| {
        b.iter(|| player.seek(&mut game, black_box(LONG)).unwrap())
    });
    group.bench_function("play from the start to the last frame", |b| {
        b.iter(|| {
            player.seek(&mut game, 0).unwrap();
            player.play_to(&mut game, black_box(LONG)).unwrap()
        })
    });
    group.finish();
}

/// Prints how many bytes a minute of recording takes, at 60 fps.
fn size_per_minute(_: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    for (what, every) in [("keyframe every 300 frames", 300), ("no keyframes", 0)] {
        let path = dir.path().join(format!("minute-{every}.replay"));
        let mut recorder = Recorder::builder()
            .key(key())
            .seed(SEED)
            .keyframe_every(every)
            .create(&path)
            .unwrap();
        sim::record_match(&mut recorder, SEED, BODIES, 60 * 60).unwrap();
        recorder.finish().unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        eprintln!("replay/size: one minute at 60 fps, 300 bodies, {what}: {bytes} bytes");
    }
}

/// The time `frame` (and `keyframe`, when due) takes on the game thread, frame by frame.
fn frame_times(_: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let sim = Sim::new(SEED, BODIES);
    let hash = sim.hash();
    // Frames with a keyframe (captured and sealed on the game thread either way) apart.
    let run = |threaded: bool| -> (Vec<Duration>, Vec<Duration>) {
        let mut recorder = Recorder::builder()
            .key(key())
            .seed(SEED)
            .keyframe_every(300)
            .writer_thread(threaded)
            .create(dir.path().join(format!("times-{threaded}.replay")))
            .unwrap();
        let (mut plain, mut keyed) = (Vec::with_capacity(36_000), Vec::new());
        for frame in 0..36_000 {
            let input = scripted_input(SEED, frame);
            let start = Instant::now();
            let due = recorder.keyframe_due();
            if due {
                let mut keyframe = recorder.snapshot();
                sim.capture_state(&mut keyframe).unwrap();
                recorder.keyframe(&keyframe).unwrap();
            }
            recorder.frame(black_box(&input), Some(hash)).unwrap();
            if due { &mut keyed } else { &mut plain }.push(start.elapsed());
        }
        recorder.finish().unwrap();
        (plain, keyed)
    };
    let summary = |mut times: Vec<Duration>| {
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        times.sort();
        let p999 = times[times.len() * 999 / 1000];
        let worst = times[times.len() - 1];
        format!("mean {mean:?}, p99.9 {p999:?}, worst {worst:?}")
    };
    for round in 1..=3 {
        let (threaded, inline) = (run(true), run(false));
        eprintln!(
            "replay/frame-time round {round}: frames without a keyframe: writer thread {}; \
             inline {}. Keyframe frames: writer thread {}; inline {}",
            summary(threaded.0),
            summary(inline.0),
            summary(threaded.1),
            summary(inline.1)
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    targets = size_per_minute, frame_times, record_overhead, seek_against_playing
}
criterion_main!(benches);
