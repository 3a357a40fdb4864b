//! The key story: a developer gets the key the demo's saves are sealed with, in the form the
//! savegame CLI reads (`SAVEGAME_KEY`, `--key-file`), and can give the game a key of their own
//! through the same variable. Real processes, real files, real encryption.

mod common;

use std::path::Path;
use std::process::Output;

use savegame::{Key, SaveLoadManager, SlotId};

const HEX: &str = "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff";

fn run(args: &[&str], key: Option<&str>, stdin: &str) -> Output {
    use std::io::Write;
    let mut command = common::dungeon();
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(key) = key {
        command.env("SAVEGAME_KEY", key);
    }
    let mut child = command.spawn().unwrap();
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    // A game that refuses to start exits before it reads its script: the pipe is closed.
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

/// What `dungeon --print-key` prints, checked to be one line of 64 hex digits.
fn printed_key(key: Option<&str>) -> String {
    let out = run(&["--print-key"], key, "");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.strip_suffix('\n').unwrap();
    assert_eq!(line.len(), 64, "{text:?}");
    assert!(line.bytes().all(|b| b.is_ascii_hexdigit()), "{text:?}");
    line.to_owned()
}

/// Plays a few turns and saves them to slot 1 in `dir`.
fn save_a_game(dir: &Path, key: Option<&str>) {
    let save_dir = dir.to_str().unwrap();
    let out = run(
        &["--save-dir", save_dir, "--script", "-"],
        key,
        "south 2\nsave 1\nquit\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("> Saved to slot 1"), "{stdout}");
}

/// Loads slot 1 as the savegame CLI would: a manager with the key taken from hex.
fn load_with(dir: &Path, hex: &str) -> savegame::Result<savegame::Loaded> {
    SaveLoadManager::builder()
        .directory(dir)
        .key(Key::from_hex(hex).unwrap())
        .schema_version(dungeon::saves::SCHEMA)
        .build()
        .unwrap()
        .load(SlotId::Numbered(1))
}

#[test]
fn the_printed_key_opens_the_saves_the_game_writes() {
    let dir = tempfile::tempdir().unwrap();
    save_a_game(dir.path(), None);
    let key = printed_key(None);
    assert_eq!(key, dungeon::saves::GameKey::built_in().hex());
    let loaded = load_with(dir.path(), &key).unwrap();
    assert!(loaded.snapshot.contains("player"));
    // A key file holding what it printed (with its newline) is what `--key-file` reads.
    let file = dir.path().join("dungeon.key");
    std::fs::write(&file, format!("{key}\n")).unwrap();
    let from_file = std::fs::read_to_string(&file).unwrap();
    assert!(load_with(dir.path(), from_file.trim()).is_ok());
}

#[test]
fn a_key_in_savegame_key_seals_the_saves_and_is_the_one_printed() {
    let dir = tempfile::tempdir().unwrap();
    save_a_game(dir.path(), Some(HEX));
    assert_eq!(printed_key(Some(HEX)), HEX.to_lowercase());
    assert!(load_with(dir.path(), HEX).is_ok());
    // Not the built-in key: that one cannot open them.
    let built_in = dungeon::saves::GameKey::built_in().hex();
    assert!(matches!(
        load_with(dir.path(), &built_in),
        Err(savegame::Error::Decrypt)
    ));
    // And a game without the variable sees a slot it needs another key for.
    let out = run(
        &["--save-dir", dir.path().to_str().unwrap(), "--script", "-"],
        None,
        "menu\nload 1\nquit\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Could not load slot 1"), "{stdout}");
}

#[test]
fn a_savegame_key_that_is_not_a_key_stops_the_game_with_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["--save-dir", dir.path().to_str().unwrap(), "--script", "-"],
        Some("not a key"),
        "save 1\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SAVEGAME_KEY is set but is not 64 hexadecimal digits"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not a key"),
        "the message repeats the value: {stderr}"
    );
    assert!(!dir.path().join("slot-001.sav").exists());
}

#[test]
fn the_old_save_is_not_offered_under_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["--save-dir", dir.path().to_str().unwrap(), "--script", "-"],
        Some(HEX),
        "oldsave\nquit\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("> The old save is sealed with the game's built-in key; this game uses the key in SAVEGAME_KEY"),
        "{stdout}"
    );
    assert!(!dir.path().join("slot-005.sav").exists());
}
