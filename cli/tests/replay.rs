//! Replay files in the tool: `inspect` shows their header and status, `verify` opens them as a
//! player would, `list` gives them a row; cut-short, encrypted and damaged ones say so.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use savegame::replay::Recorder;

/// Records `frames` frames of a counter into `dir/name`, with a keyframe every 50.
fn record(dir: &Path, name: &str, frames: u64, key: Option<savegame::Key>) -> PathBuf {
    record_at(dir, name, frames, key, 1)
}

/// As [`record`], by a game at save-schema version `schema` (its keyframes' version).
fn record_at(
    dir: &Path,
    name: &str,
    frames: u64,
    key: Option<savegame::Key>,
    schema: u32,
) -> PathBuf {
    let path = dir.join(name);
    let builder = Recorder::builder()
        .schema_version(schema)
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

/// Runs the tool; returns its exit code, stdout and stderr.
fn run(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = savegame().args(args).output().unwrap();
    (out.status.code(), stdout_of(&out), stderr_of(&out))
}

/// The dungeon demo's replays are recorded by a game at schema 3. `verify` and `inspect` used
/// to open them as a game at schema 1 would, and called them bad ("save schema version 3 is
/// newer than this game's version 1 [NewerSchema]", exit 1) while `list` called them ok.
#[test]
fn a_replay_at_schema_3_is_not_bad_without_schema_and_is_checked_against_schema() {
    let dir = tempfile::tempdir().unwrap();
    let plain = record_at(dir.path(), "plain.replay", 120, None, 3);
    let sealed = record_at(dir.path(), "sealed.replay", 120, Some(fixture_key()), 3);
    let key = key_file();
    let (p, s, k) = (plain.as_os_str(), sealed.as_os_str(), key.as_os_str());
    let arg = std::ffi::OsStr::new;

    // Without --schema: the integrity checks, whatever the game's schema.
    for args in [
        vec![arg("verify"), p],
        vec![arg("verify"), arg("--key-file"), k, s],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{args:?}: {out}{err}");
        assert!(out.starts_with("ok    "), "{out}");
        assert!(out.contains("replay, 30 fps, schema 3"), "{out}");
        assert!(out.contains("120 frames, 3 keyframes"), "{out}");
        assert!(out.contains("(pass --schema N)"), "{out}");
    }
    for args in [
        vec![arg("inspect"), p],
        vec![arg("inspect"), arg("--key-file"), k, s],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{args:?}: {out}{err}");
        assert!(out.contains("schema version  3\n"), "{out}");
        assert!(out.contains("status          complete"), "{out}");
        assert!(!out.contains("BAD"), "{out}");
    }

    // With the game's schema at or above the replay's: checked as the game would.
    for schema in ["3", "4"] {
        let (code, out, err) = run(&[arg("verify"), arg("--schema"), arg(schema), p]);
        assert_eq!(code, Some(0), "--schema {schema}: {out}{err}");
        assert!(
            out.starts_with("ok    ") && out.contains("schema 3"),
            "{out}"
        );
        assert!(!out.contains("pass --schema"), "{out}");
        let (code, out, err) = run(&[arg("inspect"), arg("--schema"), arg(schema), p]);
        assert_eq!(code, Some(0), "--schema {schema}: {out}{err}");
        assert!(out.contains("status          complete"), "{out}");
    }
    let (code, out, err) = run(&[
        arg("verify"),
        arg("--schema"),
        arg("3"),
        arg("--key-file"),
        k,
        s,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");

    // Below it: the game cannot play it; newer, exit 1, and not damaged.
    let (code, out, _) = run(&[arg("verify"), arg("--schema"), arg("2"), p]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("FAIL  ") && out.trim_end().ends_with("[NewerSchema]"),
        "{out}"
    );
    assert!(out.contains("version 2"), "{out}");
    let (code, out, _) = run(&[arg("inspect"), arg("--schema"), arg("2"), p]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("schema version  3 (newer than the game's 2) [NewerSchema]"),
        "{out}"
    );
    assert!(out.contains("status          complete"), "{out}");

    // `list` agrees: ok without --schema, newer with a lower one.
    let (_, out, _) = run(&[arg("list"), arg("--json"), dir.path().as_os_str()]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["status"], "ok", "{out}");
    assert_eq!(rows[1]["status"], "needs key", "{out}");
    let (_, out, _) = run(&[
        arg("list"),
        arg("--json"),
        arg("--schema"),
        arg("2"),
        dir.path().as_os_str(),
    ]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["status"], "newer", "{out}");
    assert_eq!(rows[1]["status"], "newer", "{out}");
}

/// `--migrations` used to be ignored for replays: their keyframes are now migrated with the
/// steps, as the game's player migrates them when it seeks.
#[test]
fn verify_migrates_a_replays_keyframes_with_migrations() {
    let dir = tempfile::tempdir().unwrap();
    let old = record_at(dir.path(), "old.replay", 60, None, 1);
    let current = record_at(dir.path(), "current.replay", 60, None, 3);
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::write(
        steps.join("0002_add_extra.json"),
        r#"[{"op": "add", "path": "/extra", "value": {"n": 1}}]"#,
    )
    .unwrap();
    std::fs::write(
        steps.join("0003_rename_n.json"),
        r#"[{"op": "move", "from": "/extra/n", "path": "/extra/m"}]"#,
    )
    .unwrap();
    let arg = std::ffi::OsStr::new;
    let (o, c, st) = (old.as_os_str(), current.as_os_str(), steps.as_os_str());
    for args in [
        vec![arg("verify"), arg("--migrations"), st, o, c],
        vec![
            arg("verify"),
            arg("--schema"),
            arg("3"),
            arg("--migrations"),
            st,
            o,
            c,
        ],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{out}{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].ends_with("migrates to 3 (2 step(s))"), "{out}");
        assert!(lines[1].ends_with("current with the steps"), "{out}");
    }

    // The steps really run on the keyframes: the repository's expect a `player` memento.
    let (code, out, _) = run(&[
        arg("verify"),
        arg("--migrations"),
        migrations().as_os_str(),
        o,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("no such memento") && out.trim_end().ends_with("[Migration]"),
        "{out}"
    );

    // A folder with only step 3: no path from schema 1.
    std::fs::remove_file(steps.join("0002_add_extra.json")).unwrap();
    let (code, out, _) = run(&[arg("verify"), arg("--migrations"), st, o]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.trim_end().ends_with("[NoMigrationPath]"), "{out}");

    // --schema must be where the steps end.
    let (code, _, err) = run(&[
        arg("verify"),
        arg("--schema"),
        arg("2"),
        arg("--migrations"),
        st,
        o,
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.trim_end().ends_with("[MigrationChain]"), "{err}");
}

/// Without a key, `inspect` shows what it can of an encrypted replay (as of an encrypted save)
/// instead of calling it bad.
#[test]
fn inspect_of_an_encrypted_replay_without_a_key_is_not_bad() {
    let dir = tempfile::tempdir().unwrap();
    let sealed = record_at(dir.path(), "sealed.replay", 60, Some(fixture_key()), 3);
    let (code, out, err) = run(&[std::ffi::OsStr::new("inspect"), sealed.as_os_str()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("encrypted       yes"), "{out}");
    assert!(
        out.contains("give a key (--key-file or SAVEGAME_KEY)"),
        "{out}"
    );
    assert!(!out.contains("BAD"), "{out}");
}

#[test]
fn diff_refuses_a_replay_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let replay = record(dir.path(), "match.replay", 120, None);
    let save = fixture("v3-json-plain.sav");
    for (a, b) in [(&replay, &save), (&save, &replay)] {
        let output = savegame().arg("diff").arg(a).arg(b).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        assert!(output.stdout.is_empty());
        let err = stderr_of(&output);
        assert!(
            err.contains("match.replay: is a replay; diff compares saves")
                && err.trim_end().ends_with("[WrongFileKind]"),
            "{err}"
        );
    }
}
