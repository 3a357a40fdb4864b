//! The scripted demonstration that `cargo run -p dungeon` plays when no terminal is attached
//! (the README's first command): a first-time user must see every feature the README
//! promises, and their own saves must not be touched.

mod common;

use std::path::Path;
use std::process::Stdio;

/// Runs the game with no arguments and no terminal, with `tmp` as its temporary folder and
/// `home` as its home; returns what it printed.
fn demo(tmp: &Path, home: &Path) -> String {
    let out = common::dungeon()
        .env("TMPDIR", tmp)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Issue 16: the scripted demo's `watch` printed "Nothing to watch yet", so it never showed
/// a replay, nor an autosave, a quicksave or an old save.
#[test]
fn the_scripted_demo_shows_every_feature_the_readme_promises() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = demo(tmp.path(), home.path());
    for (feature, line) in [
        (
            "how to inspect the saves",
            "export SAVEGAME_KEY=$(cargo run -q -p dungeon -- --print-key)",
        ),
        (
            "the map's legend",
            "@ you  r rat  g goblin  ! potion  $ gold  k key  # wall  . floor",
        ),
        ("a save", "> Saved to slot 1 ("),
        ("a quicksave", "> Quicksaved ("),
        ("undo", "> Undid: Place potion"),
        ("redo", "> Redid: Place potion"),
        (
            "an autosave",
            "> Autosaved turn 25 to autosave 1, in the background.",
        ),
        ("a load", "> Loaded slot 1."),
        (
            "an old save migrated",
            "> Loaded slot 5. (An old save, from schema v1: brought up to v3.)",
        ),
        (
            "the load menu",
            "slot label                    played saved at (UTC)    state",
        ),
        ("the newest autosave in the menu", "ok, newest (a)"),
        (
            "the old save in the menu",
            "ok, schema v1: migrates on load",
        ),
        ("a replay", "> Watching the run so far: 0:07 (30 frames)."),
        ("its seek", "> Seek: 0:03 of 0:07, the game at turn 11."),
        ("its screen", "== REPLAY =="),
        (
            "the edit in the replay",
            "> (Here the player edited the level.)",
        ),
        (
            "played to the end",
            "> The end of the replay: the game at turn 12, in sync all the way.",
        ),
        ("the quit question", "? Quit with unsaved changes?"),
        (
            "the recording finished",
            "> Goodbye. The recording of this run (31 frames) is complete",
        ),
    ] {
        assert!(out.contains(line), "no {feature} ({line:?}) in:\n{out}");
    }
    for wrong in [
        "Nothing to watch yet",
        "Error",
        "Could not",
        "DESYNC",
        "line ",
    ] {
        assert!(!out.contains(wrong), "{wrong:?} in:\n{out}");
    }
    // Each note once: a Play keeps the seek's note for a terminal's screen, and the script
    // printed it again after the next command.
    assert_eq!(out.matches("> Seek: ").count(), 1, "{out}");
    // The replay screen has one turn counter: the replayed game's.
    let replay: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "== REPLAY ==")
        .take_while(|l| !l.starts_with('['))
        .collect();
    let counters = replay
        .iter()
        .filter(|l| l.to_lowercase().contains("turn "))
        .count();
    assert_eq!(counters, 1, "{replay:#?}");

    // Its saves are in a folder of its own; the player's data folder is not touched.
    let folder = tmp.path().join("dungeon-demo");
    assert!(folder.join("slot-001.sav").is_file());
    assert!(folder.join("last-run.replay").is_file());
    assert!(!home.path().join(".local/share/dungeon").exists());

    // Run again: the folder starts empty, so the transcript is the same, old save and all.
    let again = demo(tmp.path(), home.path());
    let without_dates = |s: &str| {
        s.lines()
            .map(|l| l.split(" 20").next().unwrap_or(l).to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(without_dates(&again), without_dates(&out));
}
