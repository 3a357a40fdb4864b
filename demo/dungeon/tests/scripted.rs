//! The dungeon played end to end by scripts, as a player would, in separate processes: walk,
//! save, quit, restart, load; edit and undo, across a save; watch a replay to the end; a
//! corrupted slot in the menu; old saves from earlier versions of the game; autosaves.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// Runs the game on `script` with its saves in `dir`; returns what it printed.
fn play(dir: &Path, script: &str) -> String {
    play_with(dir, script, &[])
}

fn play_with(dir: &Path, script: &str, args: &[&str]) -> String {
    let mut child = common::dungeon()
        .arg("--save-dir")
        .arg(dir)
        .args(["--script", "-"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the game failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The STATE lines a run printed.
fn states(output: &str) -> Vec<&str> {
    output.lines().filter(|l| l.starts_with("STATE ")).collect()
}

/// One `key=value` of a STATE line.
fn field<'a>(state: &'a str, key: &str) -> &'a str {
    state
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in {state}"))
}

/// The game's own state, without what belongs to the session (slot, dirty, editor).
fn game_part(state: &str) -> String {
    [
        "turn",
        "hp",
        "max_hp",
        "pos",
        "inventory",
        "walls",
        "items",
        "monsters",
        "hash",
    ]
    .iter()
    .map(|k| format!("{k}={}", field(state, k)))
    .collect::<Vec<_>>()
    .join(" ")
}

const WALK: &str = "south 2\neast 9\nsouth 3\nwait 2\neast 4\nquaff\n";

#[test]
fn walk_save_quit_restart_load_gives_the_same_game() {
    let dir = tempfile::tempdir().unwrap();
    let first = play(dir.path(), &format!("{WALK}save 2\nstate\nquit\n"));
    assert!(first.contains("> Saved to slot 2"), "{first}");
    let saved = states(&first)[0];
    assert_eq!(field(saved, "dirty"), "false");
    assert_ne!(field(saved, "turn"), "0");

    // A new process: a new game from another seed, then the load.
    let second = play_with(
        dir.path(),
        "state\nload 2\nstate\nquit\n",
        &["--seed", "99"],
    );
    let [fresh, loaded] = states(&second)[..] else {
        panic!("{second}")
    };
    assert_ne!(game_part(fresh), game_part(saved));
    assert_eq!(game_part(loaded), game_part(saved));
    assert_eq!(field(loaded, "slot"), "2");
    assert!(second.contains("> Loaded slot 2."), "{second}");

    // The menu lists it, with its label and playtime.
    let menu = play(dir.path(), "menu\nquit\n");
    let line = menu.lines().find(|l| l.starts_with("2 ")).unwrap();
    assert!(
        line.contains(&format!("Level 1, turn {}", field(saved, "turn"))),
        "{line}"
    );
    assert!(line.ends_with("ok"), "{line}");
}

#[test]
fn editing_and_undo_survive_a_save_and_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(
        dir.path(),
        "edit\nstate\nwall 5 5\nstate\nroom 10 3 16 8\nstate\nput 12 5 gold\nstate\nundo\nundo\nstate\nredo\nstate\nsave 1\nstate\nquit\n",
    );
    let s = states(&out);
    let walls = |i: usize| field(s[i], "walls").parse::<i32>().unwrap();
    let items = |i: usize| field(s[i], "items").parse::<i32>().unwrap();
    assert_eq!(walls(1), walls(0) + 1);
    // A 7x6 room outline is 22 cells: the drag went through every frame between the corners,
    // and is one entry.
    assert!(walls(2) > walls(1) && walls(2) <= walls(1) + 22, "{out}");
    assert_eq!(field(s[2], "undo"), "Draw_room");
    assert_eq!(items(3), items(2) + 1);
    assert_eq!(field(s[3], "undo"), "Place_gold");
    // Two undos: the gold, then the whole room.
    assert_eq!((walls(4), items(4)), (walls(1), items(1)));
    assert_eq!(
        (field(s[4], "undo"), field(s[4], "redo")),
        ("Place_wall", "Draw_room")
    );
    assert_eq!((walls(5), items(5)), (walls(2), items(2)));
    assert_eq!(field(s[6], "dirty"), "false");

    // After a reload the history is still there: undo takes the room back.
    let again = play(
        dir.path(),
        "load 1\nedit\nstate\nundo\nstate\nundo\nundo\nstate\nquit\n",
    );
    let t = states(&again);
    assert_eq!(field(t[0], "walls"), field(s[6], "walls"));
    assert_eq!(field(t[0], "undo"), "Draw_room");
    assert_eq!(field(t[1], "walls").parse::<i32>().unwrap(), walls(1));
    assert_eq!(field(t[2], "walls").parse::<i32>().unwrap(), walls(0));
    assert!(again.contains("> Nothing to undo."), "{again}");
}

#[test]
fn a_replay_of_the_run_plays_to_the_end_and_seeks() {
    let dir = tempfile::tempdir().unwrap();
    // A walk of single steps (the monsters may kill the player on the way: dead players take
    // no turns, so the recording has exactly as many turns as the game played).
    let mut steps = Vec::new();
    for (word, n) in [
        ("south", 2),
        ("east", 9),
        ("south", 3),
        ("wait", 30),
        ("east", 4),
        ("west", 4),
        ("wait", 20),
    ] {
        steps.extend(std::iter::repeat_n(word, n));
    }
    let walk = steps.join("\n");
    let out = play(
        dir.path(),
        &format!("{walk}\nstate\nwatch\nplay 1000\nstate\nseek 0\nstate\nquit\n"),
    );
    let s = states(&out);
    let turns: usize = field(s[0], "turn").parse().unwrap();
    assert!(turns >= 10, "{out}");
    // To the end: the replayed game is the played one, hash for hash, with no desync.
    assert_eq!(field(s[1], "watch"), format!("{turns}/{turns}"));
    assert_eq!(field(s[1], "watch_hash"), field(s[0], "hash"));
    assert_eq!(field(s[1], "desync"), "none");
    assert_eq!(field(s[2], "watch"), format!("0/{turns}"));

    // Seek to the middle: the state straight play had there.
    let middle = turns / 2;
    let seeking = play(
        tempfile::tempdir().unwrap().path(),
        &format!(
            "{walk}\nwatch\nseek {middle}\nstate\nspeed 4\nplay 1\nstate\npause\nplay 100\nstate\nquit\n"
        ),
    );
    let t = states(&seeking);
    assert_eq!(field(t[0], "watch"), format!("{middle}/{turns}"));
    let straight = play(
        tempfile::tempdir().unwrap().path(),
        &format!("{}\nstate\nquit\n", steps[..middle].join("\n")),
    );
    assert_eq!(
        field(t[0], "watch_hash"),
        field(states(&straight)[0], "hash")
    );
    // At 4x, one second is 16 turns (capped at the end); paused, nothing moves.
    let after: usize = field(t[1], "watch")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(after, (middle + 16).min(turns));
    assert_eq!(field(t[2], "watch"), field(t[1], "watch"));
}

#[test]
fn a_corrupted_slot_shows_in_the_menu_and_does_not_crash_the_game() {
    let dir = tempfile::tempdir().unwrap();
    play(
        dir.path(),
        &format!("{WALK}save 3\nsave 4\neast\nsave 4\nquit\n"),
    );
    // Slot 3: one copy, damaged. Slot 4: the primary damaged, its backup sound.
    for name in ["slot-003.sav", "slot-004.sav"] {
        let path = dir.path().join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xFF;
        std::fs::write(&path, bytes).unwrap();
    }
    std::fs::write(dir.path().join("slot-005.sav"), b"not a save at all").unwrap();
    let out = play(
        dir.path(),
        "menu\ndone\nstate\nload 3\nload 5\nstate\nload 4\nstate\nsave 4\nquit\n",
    );
    let menu: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(['3', '4', '5']))
        .collect();
    assert!(
        menu[0].ends_with("ok"),
        "headers are sound; damage shows on load: {menu:?}"
    );
    assert!(menu[2].ends_with("CORRUPT"), "{menu:?}");
    assert!(
        out.contains("> Could not load slot 3: checksum mismatch"),
        "{out}"
    );
    assert!(out.contains("> Could not load slot 5"), "{out}");
    let s = states(&out);
    assert_eq!(
        game_part(s[0]),
        game_part(s[1]),
        "a failed load changes nothing"
    );
    assert!(
        out.contains("> Slot 4 was damaged; loaded its backup 1 instead."),
        "{out}"
    );
    assert_eq!(field(s[2], "slot"), "4");
    assert!(
        out.contains("(This game was recovered from a backup; slot 4 now holds it.)"),
        "{out}"
    );
}

#[test]
fn saves_from_older_versions_of_the_game_load() {
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        std::fs::copy(
            fixtures.join(format!("v{version}-slot5.sav")),
            dir.path().join("slot-005.sav"),
        )
        .unwrap();
        let expected =
            std::fs::read_to_string(fixtures.join(format!("v{version}-slot5.expected"))).unwrap();
        let out = play(dir.path(), "load 5\nstate\nsave 5\nload 5\nstate\nquit\n");
        assert!(
            out.contains(&format!("from schema v{version}: brought up to v3")),
            "{out}"
        );
        for state in states(&out) {
            for kv in expected.split_whitespace() {
                let (k, v) = kv.split_once('=').unwrap();
                assert_eq!(field(state, k), v, "v{version}: {state}");
            }
        }
        // The old file is kept, byte for byte, beside the new save.
        let kept = dir.path().join(format!("slot-005.sav.v{version}.bak"));
        assert_eq!(
            std::fs::read(kept).unwrap(),
            std::fs::read(fixtures.join(format!("v{version}-slot5.sav"))).unwrap()
        );
    }
}

#[test]
fn autosaves_land_in_the_background_in_their_own_slots() {
    let dir = tempfile::tempdir().unwrap();
    // Turns pass as fast as a script can type: let each autosave land before the next one is
    // due (otherwise a newer autosave replaces one still waiting, as it should).
    let out = play_with(
        dir.path(),
        "wait 10\nflush\nwait 10\nflush\nwait 10\nflush\nwait 10\nflush\nmenu\nquit\n",
        &["--autosave", "10"],
    );
    let autosaves: Vec<&str> = out.lines().filter(|l| l.starts_with('A')).collect();
    assert_eq!(autosaves.len(), 3, "three autosave slots: {out}");
    assert!(autosaves.iter().all(|l| l.contains(" ok")), "{autosaves:?}");
    // Turn 40 reused the oldest slot, autosave 1 (turn 10), and is the newest.
    assert!(autosaves[0].contains("turn 40"), "{autosaves:?}");
    assert!(autosaves[0].ends_with("ok, newest (a)"), "{autosaves:?}");
    assert!(autosaves[1].contains("turn 20"), "{autosaves:?}");
    assert!(autosaves[2].contains("turn 30"), "{autosaves:?}");
    let fresh = tempfile::tempdir().unwrap();
    let screen = play_with(
        fresh.path(),
        "wait 10\nflush\nscreen\nquit\n",
        &["--autosave", "10"],
    );
    assert!(screen.contains("autosave: turn 10 saved to A1"), "{screen}");
}

#[test]
fn watching_a_run_without_turns_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(dir.path(), "watch\nstate\nquit\n");
    assert_eq!(out.matches("> Nothing to watch yet").count(), 1, "{out}");
    assert!(!states(&out)[0].contains("watch="), "{out}");
}

/// Issue 16: leaving the editor started a new recording, so the run so far was lost and `r`
/// said "Nothing to watch yet".
#[test]
fn a_replay_is_watchable_after_leaving_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(
        dir.path(),
        "east 3\nedit\nwall 5 5\nroom 10 6 14 9\nundo\nredo\ndone\nsouth\nstate\nwatch\nplay 100\nstate\nseek 3\nstate\ndone\nwait\nstate\nwatch\nplay 100\nstate\nquit\n",
    );
    assert!(!out.contains("Nothing to watch yet"), "{out}");
    let s = states(&out);
    // Three turns, the edits (one frame), one turn.
    assert_eq!(field(s[1], "watch"), "5/5", "{out}");
    assert_eq!(field(s[1], "watch_hash"), field(s[0], "hash"));
    assert_eq!(field(s[1], "desync"), "none");
    // Before the edits: the state after three turns of the same seed, walls as generated.
    let straight = play(tempfile::tempdir().unwrap().path(), "east 3\nstate\nquit\n");
    assert_eq!(field(s[2], "watch"), "3/5");
    assert_eq!(
        field(s[2], "watch_hash"),
        field(states(&straight)[0], "hash")
    );
    // The recording went on after watching: watched again, the run has the turn since.
    assert_eq!(field(s[4], "watch"), "6/6", "{out}");
    assert_eq!(field(s[4], "watch_hash"), field(s[3], "hash"));
}

/// Issue 16: loading a save started a new recording, so the run so far was lost.
#[test]
fn a_replay_is_watchable_after_a_load_and_goes_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(
        dir.path(),
        "east 2\nsave 1\nstate\neast 4\nstate\nload 1\nsouth\nstate\nwatch\nplay 100\nstate\nseek 6\nstate\nseek 7\nstate\nquit\n",
    );
    let s = states(&out);
    let (saved, before_load, end) = (s[0], s[1], s[2]);
    // Six turns, the load, one turn: the whole run, in sync to its end.
    assert_eq!(field(s[3], "watch"), "8/8", "{out}");
    assert_eq!(field(s[3], "watch_hash"), field(end, "hash"));
    assert_eq!(field(s[3], "desync"), "none");
    // Seeking lands on each side of the load: the game before it, and the loaded one.
    assert_eq!(field(s[4], "watch_hash"), field(before_load, "hash"));
    assert_eq!(field(s[5], "watch_hash"), field(saved, "hash"));
}

/// Issue 16: the load menu's `a` always loaded autosave 1, even when autosave 2 was newer.
#[test]
fn the_menus_a_loads_the_newest_autosave_not_autosave_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = play_with(
        dir.path(),
        "load A\nwait 10\nflush\nwait 10\nflush\nmenu\nload A\nstate\n\
         wait 10\nflush\nwait 10\nflush\nload A\nstate\nquit\n",
        &["--autosave", "10"],
    );
    assert!(
        out.contains("> No autosave yet: one is made every 10 turns."),
        "{out}"
    );
    // The menu says which one `a` loads.
    let a2 = out.lines().find(|l| l.starts_with("A2 ")).unwrap();
    assert!(a2.ends_with("ok, newest (a)"), "{a2}");
    let s = states(&out);
    assert_eq!(
        (field(s[0], "turn"), field(s[0], "slot")),
        ("20", "autosave")
    );
    assert!(out.contains("> Loaded autosave 2."), "{out}");
    // Turns 30 and 40: autosave 3, then the rotation reuses its oldest, autosave 1.
    assert_eq!(field(s[1], "turn"), "40");
    assert!(out.contains("> Loaded autosave 1."), "{out}");
}

/// Issue 16: the menu offered the quicksave, but no key made one.
#[test]
fn a_quicksave_is_made_and_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(
        dir.path(),
        "quickload\neast 2\nquicksave\nstate\neast 3\nquickload\nstate\nmenu\nquit\n",
    );
    assert!(out.contains("> No quicksave yet: F5 makes one."), "{out}");
    assert!(out.contains("> Quicksaved ("), "{out}");
    let s = states(&out);
    assert_eq!(field(s[0], "dirty"), "false");
    assert_eq!(game_part(s[1]), game_part(s[0]));
    assert_eq!(field(s[1], "slot"), "quicksave");
    let q = out.lines().find(|l| l.starts_with("Q ")).unwrap();
    assert!(q.contains("Level 1, turn 2") && q.ends_with("ok"), "{q}");
    assert!(dir.path().join("quicksave.sav").is_file());
}

/// Issue 16: a first-time user never saw an old save migrated. The menu's `o` puts the save
/// version 0.1 wrote into slot 5 (the fixture itself), and loads it.
#[test]
fn the_menus_old_save_is_placed_in_slot_5_and_migrated_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = play(dir.path(), "oldsave\nstate\nmenu\noldsave\nstate\nquit\n");
    assert!(
        out.contains("> Slot 5 now holds a save from version 0.1 of the game (schema v1)."),
        "{out}"
    );
    assert!(out.contains("from schema v1: brought up to v3"), "{out}");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let expected = std::fs::read_to_string(fixtures.join("v1-slot5.expected")).unwrap();
    let s = states(&out);
    for kv in expected.split_whitespace() {
        let (k, v) = kv.split_once('=').unwrap();
        assert_eq!(field(s[0], k), v, "{}", s[0]);
    }
    // The menu says it is old; the file is the fixture, byte for byte.
    let line = out.lines().find(|l| l.starts_with("5 ")).unwrap();
    assert!(line.ends_with("ok, schema v1: migrates on load"), "{line}");
    assert_eq!(
        std::fs::read(dir.path().join("slot-005.sav")).unwrap(),
        std::fs::read(fixtures.join("v1-slot5.sav")).unwrap()
    );
    // Slot 5 is taken now: the second time, nothing is overwritten, and nothing changes.
    assert!(
        out.contains("> The old save goes into slot 5 (its header names it), which holds a save."),
        "{out}"
    );
    assert_eq!(game_part(s[1]), game_part(s[0]));
}
