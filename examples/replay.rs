//! A replay, as a game lives it.
//!
//! A small deterministic simulation (300 bodies moving under a scripted player's inputs, with
//! a seeded random number generator; see `shared/sim.rs`) runs 3,000 frames at 60 fps while a
//! `Recorder` records each frame's input, a keyframe of the simulation's three originators
//! every 300 frames, and a state hash every frame, into an encrypted replay file. Then the
//! example starts itself again as a **new process**, which reads the replay's header without
//! reading the rest, plays it back to the identical final state, seeks to frame 2,950, to 10
//! and back to 2,950, and plays at half and at four times the speed, on a simulated display
//! whose frame times jitter (nothing sleeps: the player says which frames are due).
//!
//! ```text
//! cargo run --example replay                 # a temporary folder
//! cargo run --example replay -- --dir /tmp/x # an explicit folder (the replay is kept)
//! ```

#[path = "shared/sim.rs"]
mod sim;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use savegame::replay::{Player, Recorder, ReplayHeader, ReplayStatus};
use savegame::{Key, Result};
use sim::{Sim, SimRng};

/// The key a game would embed: it stops casual edits, it is not a secret.
const GAME_KEY: [u8; 32] = *b"replay-example-key-32-bytes-ok!!";
const SEED: u64 = 2024;
const BODIES: usize = 300;
const FRAMES: u64 = 3_000;

type Outcome = std::result::Result<(), Box<dyn std::error::Error>>;

fn main() -> Outcome {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(("--play", rest)) = args.split_first().map(|(a, r)| (a.as_str(), r)) {
        play_in_this_process(rest)
    } else {
        run(&args)
    }
}

fn run(args: &[String]) -> Outcome {
    let temp;
    let dir = match args {
        [flag, dir] if flag == "--dir" => PathBuf::from(dir),
        _ => {
            temp = std::env::temp_dir().join(format!("savegame-replay-{}", std::process::id()));
            temp.clone()
        }
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("match-0001.replay");

    // Record: inputs every frame, a keyframe when due, the state hash after every frame.
    let started = Instant::now();
    let mut recorder = Recorder::builder()
        .key(Key::from_bytes(GAME_KEY))
        .frame_rate(60)
        .seed(SEED)
        .keyframe_every(300)
        .label("Match 1")
        .app_version(env!("CARGO_PKG_VERSION"))
        .user_field("map", "arena")
        .create(&path)?;
    let last = sim::record_match(&mut recorder, SEED, BODIES, FRAMES)?;
    let header = recorder.finish()?;
    println!(
        "recorded {} frames with {} keyframes in {:?}: {} ({} bytes)",
        FRAMES,
        header.keyframe_count().unwrap_or(0),
        started.elapsed(),
        path.display(),
        std::fs::metadata(&path)?.len()
    );
    println!(
        "final state: frame {}, score {}, hash {:016x}",
        last.clock.frame,
        last.ship.score,
        last.hash()
    );

    // A new process plays it back.
    let status = Command::new(std::env::current_exe()?)
        .arg("--play")
        .arg(&path)
        .arg(last.hash().to_string())
        .status()?;
    if dir.starts_with(std::env::temp_dir()) && args.is_empty() {
        std::fs::remove_dir_all(&dir)?;
    }
    if !status.success() {
        return Err("the new process could not play the replay back".into());
    }
    Ok(())
}

fn play_in_this_process(args: &[String]) -> Outcome {
    let [path, final_hash] = args else {
        return Err("usage: --play PATH FINAL_HASH".into());
    };
    let path = Path::new(path);
    let final_hash: u64 = final_hash.parse()?;
    println!("new process {}:", std::process::id());

    // What a replay browser shows: the start and end chunks alone, without the key.
    let header = ReplayHeader::read(path, None)?;
    println!(
        "  header: {:?}, app {}, schema {}, {} fps, seed {}, {} frames, {:?}, {} keyframes",
        header.label(),
        header.app_version(),
        header.schema_version,
        header.frame_rate,
        header.seed,
        header.frame_count().unwrap_or(0),
        header.duration().unwrap_or_default(),
        header.keyframe_count().unwrap_or(0),
    );

    let mut player = Player::builder()
        .key(Key::from_bytes(GAME_KEY))
        .open(path)?;
    if player.status() != &ReplayStatus::Complete {
        return Err(format!("the replay is {:?}", player.status()).into());
    }

    // Straight playback, keeping the states to compare the seeks with.
    let mut game = Sim::new(0, 0);
    player.seek(&mut game, 0)?;
    let mut states = vec![game.clone()];
    for frame in 1..=FRAMES {
        player.play_to(&mut game, frame)?;
        states.push(game.clone());
    }
    check(
        game.hash() == final_hash,
        "playback reached the recorded final state",
    )?;
    check(
        player.first_desync().is_none(),
        "no state hash differed from the recording",
    )?;

    for target in [2_950, 10, 2_950] {
        let progress = player.seek(&mut game, target)?;
        check(
            game == states[target as usize],
            &format!(
                "seek to {target}: keyframe {:?}, then {} frames: the state of straight playback",
                progress.keyframe,
                progress.frames.end - progress.frames.start,
            ),
        )?;
    }

    // Half speed for two seconds of display, then four times to the end.
    player.seek(&mut game, 0)?;
    let mut display = SimRng::new(1);
    let mut display_frames = 0;
    for (speed, seconds) in [(0.5, 2.0), (4.0, f64::INFINITY)] {
        player.set_speed(speed)?;
        let mut shown = Duration::ZERO;
        while !player.is_finished() && shown.as_secs_f64() < seconds {
            let dt = Duration::from_micros(12_000 + display.below(10_000) as u64);
            player.advance(&mut game, dt)?;
            shown += dt;
            display_frames += 1;
            if game != states[player.position() as usize] {
                return Err(
                    format!("at {speed}x the state differs at {}", player.position()).into(),
                );
            }
        }
        println!(
            "  at {speed}x, {shown:.2?} of display frames played the match to frame {}",
            player.position()
        );
    }
    check(
        game.hash() == final_hash,
        &format!("{display_frames} display frames at 0.5x then 4x reached the final state"),
    )?;
    Ok(())
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if ok {
        println!("  ok: {what}");
        Ok(())
    } else {
        Err(format!("failed: {what}").into())
    }
}
