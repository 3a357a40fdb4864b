//! Replay files in the tool: `inspect` shows their header and status, `verify` opens them as a
//! player would, `list` gives them a row; cut-short, encrypted and damaged ones say so.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use savegame::replay::Recorder;

/// Records `frames` frames of a counter into `dir/name`, with a keyframe every 50.
fn record(dir: &Path, name: &str, frames: u64, key: Option<savegame::Key>) -> PathBuf {
    let path = dir.join(name);
    let builder = Recorder::builder()
        .frame_rate(30)
        .keyframe_every(50)
        .label("Arena, round 1")
        .app_version("2.0.0");
    let builder = match key {
        Some(key) => builder.key(key),
        None => builder,
    };
    let mut recorder = builder.create(&path).unwrap();
    let mut value = 0i64;
    for frame in 0..frames {
        if recorder.keyframe_due() {
            let mut keyframe = recorder.snapshot();
            keyframe.capture_memento("counter", &value).unwrap();
            recorder.keyframe(&keyframe).unwrap();
        }
        value += frame as i64 % 3;
        recorder.frame(&(frame % 3), Some(value as u64)).unwrap();
    }
    recorder.finish().unwrap();
    path
}

#[test]
fn inspect_verify_and_list_read_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "round-1.replay", 300, None);
    let out = savegame().arg("inspect").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    for expected in [
        "kind            replay",
        "label           \"Arena, round 1\"",
        "frame rate      30 fps",
        "frames          300",
        "keyframes       6",
        "duration        10s",
        "status          complete",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }

    let out = savegame().arg("verify").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("replay, 30 fps, schema 1, plain, 300 frames, 6 keyframes"));

    let out = savegame()
        .args(["list", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!(row["kind"], "replay");
    assert_eq!(row["label"], "Arena, round 1");
    assert_eq!(row["playtime_ms"], 10_000);
    assert_eq!(row["status"], "ok");
}

#[test]
fn a_cut_short_replay_is_playable_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "cut.replay", 3_000, None);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = savegame().arg("inspect").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("status          cut short"), "{text}");
    assert!(text.contains("totals          none"), "{text}");
    let out = savegame().arg("verify").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout_of(&out).contains("cut short"));
    let out = savegame()
        .args(["list", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "cut short");
}

#[test]
fn encrypted_and_damaged_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "secret.replay", 200, Some(fixture_key()));
    let out = savegame().arg("verify").arg(&path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a key is needed: {}",
        stdout_of(&out)
    );
    let out = savegame()
        .args(["verify", "--key-file"])
        .arg(key_file())
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    assert!(stdout_of(&out).contains("encrypted, 200 frames"));

    // A byte flipped in the middle: a typed error, exit 1, one line.
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
    let out = savegame()
        .args(["verify", "--key-file"])
        .arg(key_file())
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.starts_with("FAIL") && text.lines().count() == 1,
        "{text}"
    );
}
