//! `savegame dump` and `savegame pack`: a save as JSON and back, byte for byte in content.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::*;
use savegame::{Codec, Key, SaveLoadManager, SlotId, Snapshot};
use serde::{Deserialize, Serialize};

/// `savegame dump FILE` (with the fixture's key when it needs one) into `dir/out`.
fn dump_to(file: &Path, key: Option<&Path>, dir: &Path, out: &str, pretty: bool) -> PathBuf {
    let mut cmd = savegame();
    cmd.arg("dump").arg(file);
    if let Some(key) = key {
        cmd.arg("--key-file").arg(key);
    }
    if pretty {
        cmd.arg("--pretty");
    }
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    write(dir, out, &output.stdout)
}

/// `savegame pack JSON --out FILE [args]`.
fn pack(json: &Path, out: &Path, key: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut cmd = savegame();
    cmd.arg("pack").arg(json).arg("--out").arg(out).args(args);
    if let Some(key) = key {
        cmd.arg("--key-file").arg(key);
    }
    cmd.output().unwrap()
}

/// Asserts that two files hold the same mementos (bytes), metadata and header fields; the
/// time stamp and the nonce are the only things allowed to differ.
fn assert_same_content(original: &[u8], packed: &[u8], key: Option<&Key>, what: &str) {
    let (h1, s1) = open(original.to_vec(), key);
    let (h2, s2) = open(packed.to_vec(), key);
    let ids1: Vec<&str> = s1.ids().collect();
    let ids2: Vec<&str> = s2.ids().collect();
    assert_eq!(ids1, ids2, "{what}");
    for id in ids1 {
        assert_eq!(s1.raw(id), s2.raw(id), "{what}: memento {id}");
        assert_eq!(
            s1.memento_version(id),
            s2.memento_version(id),
            "{what}: memento {id}'s version"
        );
    }
    let mut m1 = s1.metadata().clone();
    let mut m2 = s2.metadata().clone();
    m1.saved_at = None;
    m2.saved_at = None;
    assert_eq!(m1, m2, "{what}: metadata");
    assert_eq!(
        (
            h1.slot,
            h1.schema_version,
            h1.generation,
            h1.codec,
            h1.encrypted,
            h1.authenticated,
        ),
        (
            h2.slot,
            h2.schema_version,
            h2.generation,
            h2.codec,
            h2.encrypted,
            h2.authenticated,
        ),
        "{what}: header"
    );
}

/// bitcode is not self-describing: `dump` and `diff` refuse a bitcode save with a typed error,
/// while `inspect` and `verify` still show its header, metadata and mementos' ids and sizes.
#[test]
fn a_bitcode_save_is_refused_by_dump_and_diff_and_shown_by_inspect() {
    let file = fixture("format2-v3-bitcode-aes.sav");
    for args in [&["dump"][..], &["diff"][..]] {
        let mut cmd = savegame();
        cmd.args(args).arg("--key-file").arg(key_file()).arg(&file);
        if args[0] == "diff" {
            cmd.arg(&file);
        }
        let output = cmd.output().unwrap();
        // dump: a file it cannot read (1); diff: any failure is 2 (1 means "they differ").
        let expected = if args[0] == "diff" { 2 } else { 1 };
        assert_eq!(output.status.code(), Some(expected), "{args:?}");
        let err = stderr_of(&output);
        assert!(err.contains("[NotSelfDescribing]"), "{args:?}: {err}");
        assert!(err.contains("not self-describing"), "{err}");
    }
    let output = savegame()
        .arg("inspect")
        .arg("--key-file")
        .arg(key_file())
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    for needle in [
        "bitcode",
        "fixture format 2 v3",
        "player",
        "inventory",
        "world",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let output = savegame()
        .arg("verify")
        .arg("--key-file")
        .arg(key_file())
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stdout_of(&output));
}

#[test]
fn every_fixture_round_trips_through_dump_and_pack() {
    let dir = tempfile::tempdir().unwrap();
    // A bitcode save cannot be dumped (see the test below).
    for name in FIXTURES.iter().filter(|n| !n.contains("bitcode")) {
        let key = key_for(name);
        let key_path = key.as_ref().map(|_| key_file());
        for pretty in [false, true] {
            let json = dump_to(
                &fixture(name),
                key_path.as_deref(),
                dir.path(),
                "d.json",
                pretty,
            );
            let out = dir.path().join(format!("{name}.{pretty}.sav"));
            let output = pack(&json, &out, key_path.as_deref(), &[]);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{name}: {}",
                stderr_of(&output)
            );
            assert!(
                stdout_of(&output).starts_with("wrote "),
                "{}",
                stdout_of(&output)
            );
            let original = std::fs::read(fixture(name)).unwrap();
            let packed = std::fs::read(&out).unwrap();
            assert_same_content(&original, &packed, key.as_ref(), name);
            let current = original[8..10] == savegame::format::FORMAT_VERSION.to_le_bytes();
            let deterministic = key.is_none() || name.contains("-hmac");
            if deterministic && current {
                // Same content and the dump's saved-at: the very same bytes (a file of an
                // older format version is packed at the current one; an integrity-only file's
                // tag has no nonce).
                assert!(original == packed, "{name}: the packed file differs");
            }
            // Dumping the packed file gives the same dump, but for the time stamp.
            let again = dump_to(&out, key_path.as_deref(), dir.path(), "again.json", pretty);
            let strip = |p: &Path| {
                let text = std::fs::read_to_string(p).unwrap();
                text.lines()
                    .filter(|l| !l.contains("\"saved_at\""))
                    .map(|l| l.split(",\"saved_at\"").next().unwrap().to_owned())
                    .collect::<Vec<_>>()
            };
            if pretty {
                assert_eq!(strip(&json), strip(&again), "{name}");
            }
        }
    }
}

#[test]
fn json_fixtures_dump_as_plain_json_and_msgpack_ones_tag_their_f32() {
    let output = savegame()
        .arg("dump")
        .arg(fixture("v3-json-plain.sav"))
        .output()
        .unwrap();
    let text = stdout_of(&output);
    assert!(!text.contains("\"$"), "JSON saves need no tags: {text}");
    let dump: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dump["savegame_dump"], 1);
    assert_eq!(dump["slot"], serde_json::json!({"numbered": 1}));
    assert_eq!(dump["schema_version"], 3);
    assert_eq!(dump["codec"], "json");
    assert_eq!(dump["encrypted"], false);
    assert_eq!(dump["metadata"]["label"], "fixture v3");
    assert_eq!(dump["metadata"]["playtime_ms"], 1_800_000);
    assert_eq!(dump["metadata"]["app_version"], "1.2.0");
    assert!(dump["mementos"]["player"]["health"].is_u64());
    assert!(dump["mementos"]["player"]["position"]["x"].is_f64());

    let output = savegame()
        .arg("dump")
        .arg(fixture("v3-msgpack-plain.sav"))
        .output()
        .unwrap();
    let dump: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        dump["mementos"]["player"]["position"]["x"]["$f32"].is_f64(),
        "{dump}"
    );
    assert!(dump["mementos"]["player"]["health"].is_u64(), "{dump}");
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Position {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Player {
    health: u32,
    position: Position,
    stamina: u32,
}

/// Loads slot 1 of `dir` the way a game at schema 3 does.
fn load_as_game(dir: &Path, key: Option<Key>) -> savegame::Loaded {
    let builder = SaveLoadManager::builder()
        .directory(dir)
        .schema_version(3)
        .allow_unencrypted(true);
    let builder = match key {
        Some(key) => builder.key(key),
        None => builder,
    };
    builder.build().unwrap().load(SlotId::Numbered(1)).unwrap()
}

#[test]
fn a_dump_edited_by_hand_packs_into_a_save_the_game_loads_with_the_edit() {
    for name in ["v3-msgpack-aes.sav", "v3-json-plain.sav"] {
        let key = key_for(name);
        let key_path = key.as_ref().map(|_| key_file());
        let work = tempfile::tempdir().unwrap();
        let json = dump_to(
            &fixture(name),
            key_path.as_deref(),
            work.path(),
            "d.json",
            true,
        );
        let original = std::fs::read(fixture(name)).unwrap();
        let (_, before) = open(original, key.as_ref());
        let player: Player = before.memento("player").unwrap();

        // The edits a developer makes: a value, an f32 (tagged or not), the label.
        let text = std::fs::read_to_string(&json).unwrap();
        let health = format!("\"health\": {}", player.health);
        assert!(text.contains(&health), "{text}");
        let mut edited = text
            .replace(&health, "\"health\": 999")
            .replace("\"label\": \"fixture v3\"", "\"label\": \"bug 1234\"");
        let x = format!("{}", player.position.x);
        edited = if name.contains("msgpack") {
            edited.replace(&format!("\"$f32\": {x}"), "\"$f32\": 1.25")
        } else {
            edited.replace(&format!("\"x\": {x}"), "\"x\": 1.25")
        };
        std::fs::write(&json, edited).unwrap();

        let saves = tempfile::tempdir().unwrap();
        let out = saves.path().join("slot-001.sav");
        let output = pack(&json, &out, key_path.as_deref(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));

        let loaded = load_as_game(saves.path(), key.clone());
        let after: Player = loaded.snapshot.memento("player").unwrap();
        assert_eq!(
            after,
            Player {
                health: 999,
                position: Position {
                    x: 1.25,
                    ..player.position
                },
                ..player
            },
            "{name}"
        );
        assert_eq!(loaded.snapshot.metadata().label, "bug 1234");
        assert_eq!(loaded.report.header.encrypted, key.is_some());
        // The mementos that were not edited are the same bytes.
        for id in ["inventory", "world"] {
            assert_eq!(loaded.snapshot.raw(id), before.raw(id), "{name}: {id}");
        }
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Exotic {
    names: HashMap<u32, String>,
    flags: BTreeMap<i8, bool>,
    small: f32,
    nan: f32,
    big: f64,
    inf: f64,
    #[serde(with = "bin")]
    blob: Vec<u8>,
    dollars: BTreeMap<String, String>,
    nested: Vec<Option<(u64, i64)>>,
    unicode: String,
}

mod bin {
    pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let bytes: serde_bytes_like::Bytes = serde::Deserialize::deserialize(d)?;
        Ok(bytes.0)
    }
    pub mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(b.to_vec()))
                    }
                }
                d.deserialize_bytes(V)
            }
        }
    }
}

fn exotic() -> Exotic {
    Exotic {
        names: [(1, "one".into()), (70_000, "many".into())].into(),
        flags: [(-3, true), (4, false)].into(),
        small: 0.1,
        nan: f32::NAN,
        big: 1e300,
        inf: f64::NEG_INFINITY,
        blob: vec![0, 159, 146, 150, 255],
        dollars: [
            ("$f32".into(), "not a tag".into()),
            ("$ref".into(), "#/x".into()),
        ]
        .into(),
        nested: vec![None, Some((u64::MAX, i64::MIN))],
        unicode: "élixir \u{1F5E1} \"quoted\"\n".into(),
    }
}

/// A MessagePack save with everything JSON cannot say directly, in slot autosave 4, with a
/// thumbnail and user fields.
fn exotic_save(key: Option<&Key>) -> Vec<u8> {
    let mut snapshot = Snapshot::new(Codec::MessagePack)
        .with_label("exotic")
        .with_app_version("9.9.9")
        .with_playtime(std::time::Duration::from_millis(123_456_789))
        .with_user_field("chapter", "7")
        .with_user_field("$weird key", "line\nbreak")
        .with_thumbnail(vec![0x89, b'P', b'N', b'G', 0, 1, 2]);
    snapshot.capture_memento("exotic", &exotic()).unwrap();
    snapshot.capture_memento("plain", &vec![1u8, 2, 3]).unwrap();
    snapshot.seal_file(SlotId::Autosave(4), 5, 42, key).unwrap()
}

#[test]
fn integer_keys_f32_bytes_nan_and_dollar_keys_round_trip_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let key = fixture_key();
    let original = exotic_save(Some(&key));
    let file = write(dir.path(), "exotic.sav", &original);
    let json = dump_to(&file, Some(&key_file()), dir.path(), "exotic.json", true);
    let text = std::fs::read_to_string(&json).unwrap();
    for needle in [
        "\"$map\"",
        "\"$f32\": 0.1",
        "\"$f32\": \"NaN\"",
        "\"$f64\": \"-inf\"",
        "\"$bytes\": \"AJ+Slv8=\"",
        "\"autosave\": 4",
        "\"$weird key\": \"line\\nbreak\"",
        "\"thumbnail\": {",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
    let out = dir.path().join("packed.sav");
    let output = pack(&json, &out, Some(&key_file()), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let packed = std::fs::read(&out).unwrap();
    assert_same_content(&original, &packed, Some(&key), "exotic");
    let (_, snapshot) = open(packed, Some(&key));
    let back: Exotic = snapshot.memento("exotic").unwrap();
    assert!(back.nan.is_nan());
    assert_eq!(back.names, exotic().names);
    assert_eq!(back.dollars, exotic().dollars);
}

#[test]
fn pack_can_change_the_codec_and_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let json = dump_to(
        &fixture("v3-msgpack-plain.sav"),
        None,
        dir.path(),
        "d.json",
        false,
    );
    let out = dir.path().join("as-json.sav");
    let output = pack(&json, &out, None, &["--codec", "json", "--schema", "7"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let (header, snapshot) = open(std::fs::read(&out).unwrap(), None);
    assert_eq!((header.codec, header.schema_version), (Codec::Json, 7));
    let (_, original) = open(
        std::fs::read(fixture("v3-msgpack-plain.sav")).unwrap(),
        None,
    );
    let a: Player = snapshot.memento("player").unwrap();
    let b: Player = original.memento("player").unwrap();
    assert_eq!(a, b);
}

#[test]
fn packing_over_a_file_keeps_it_and_its_backups() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = dump_to(&fixture("v2-json-plain.sav"), None, d, "d.json", false);
    let out = copy_fixture(d, "v1-json-plain.sav", "slot-001.sav");
    copy_fixture(d, "v3-json-plain.sav", "slot-001.sav.bak1");
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(stdout_of(&output).contains("kept the file it replaced as"));
    let read = |n: &str| std::fs::read(d.join(n)).unwrap();
    assert_eq!(
        read("slot-001.sav.bak1"),
        std::fs::read(fixture("v1-json-plain.sav")).unwrap()
    );
    assert_eq!(
        read("slot-001.sav.bak2"),
        std::fs::read(fixture("v3-json-plain.sav")).unwrap()
    );
    assert_same_content(
        &std::fs::read(fixture("v2-json-plain.sav")).unwrap(),
        &read("slot-001.sav"),
        None,
        "packed",
    );
    assert!(
        !names_in(d).iter().any(|n| n.ends_with(".tmp")),
        "{:?}",
        names_in(d)
    );
}

#[test]
fn packing_an_encrypted_dump_without_a_key_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dump_to(
        &fixture("v1-json-aes.sav"),
        Some(&key_file()),
        dir.path(),
        "d.json",
        false,
    );
    let out = dir.path().join("plain.sav");
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stderr_of(&output).contains("is not encrypted"),
        "{}",
        stderr_of(&output)
    );
    let (header, _) = open(std::fs::read(&out).unwrap(), None);
    assert!(!header.encrypted);
}

#[test]
fn bad_dumps_are_refused_with_where_and_why_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(dump_to(
        &fixture("v1-msgpack-plain.sav"),
        None,
        dir.path(),
        "good.json",
        false,
    ))
    .unwrap();
    for (what, text, needle) in [
        ("not JSON", "{not json".to_owned(), "not a savegame dump"),
        (
            "a typo",
            good.replace("\"playtime_ms\"", "\"playtime\""),
            "unknown field `playtime`",
        ),
        (
            "no mementos",
            good.split(",\"mementos\"").next().unwrap().to_owned() + "}",
            "missing field `mementos`",
        ),
        (
            "a bad tag",
            good.replacen("{\"$f32\":", "{\"$f31\":", 1),
            "at /mementos/player/pos/0: unknown tag \"$f31\"",
        ),
        (
            "a newer dump",
            good.replace("\"savegame_dump\":1", "\"savegame_dump\":2"),
            "dump format 2",
        ),
        (
            "bad base64",
            good.replace("\"thumbnail\":null", "\"thumbnail\":{\"$bytes\":\"@@\"}"),
            "at /metadata/thumbnail/$bytes",
        ),
        (
            "schema 0",
            good.replace("\"schema_version\":1", "\"schema_version\":0"),
            "schema versions start at 1",
        ),
    ] {
        assert_ne!(text, good, "{what}: the edit must change the dump");
        let json = write(dir.path(), "bad.json", text.as_bytes());
        let out = dir.path().join("never.sav");
        let output = pack(&json, &out, None, &[]);
        assert_eq!(output.status.code(), Some(1), "{what}");
        let err = stderr_of(&output);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.contains("bad.json") && err.contains(needle),
            "{what}: {err}"
        );
        assert!(!out.exists(), "{what}");
    }
}

#[test]
fn dump_refuses_damaged_files_and_wrong_keys() {
    let dir = tempfile::tempdir().unwrap();
    let flipped = write(dir.path(), "f.sav", &bit_flipped("v2-json-aes.sav", 700, 1));
    let full = std::fs::read(fixture("v2-json-aes.sav")).unwrap();
    let truncated = write(dir.path(), "t.sav", &full[..full.len() - 1]);
    let wrong = write(dir.path(), "wrong.hex", "11".repeat(32).as_bytes());
    for (file, key, code, kind) in [
        (flipped, Some(key_file()), 1, "[ChecksumMismatch]"),
        (truncated, Some(key_file()), 1, "[ChecksumMismatch]"),
        (fixture("v2-json-aes.sav"), Some(wrong), 1, "[Decrypt]"),
        (fixture("v2-json-aes.sav"), None, 2, "[KeyRequired]"),
    ] {
        let mut cmd = savegame();
        cmd.arg("dump").arg(&file);
        if let Some(key) = key {
            cmd.arg("--key-file").arg(key);
        }
        let output = cmd.output().unwrap();
        assert_eq!(output.status.code(), Some(code), "{file:?}");
        assert!(output.stdout.is_empty(), "no partial dump");
        assert!(
            stderr_of(&output).trim_end().ends_with(kind),
            "{}",
            stderr_of(&output)
        );
    }
}

#[test]
fn a_newer_schema_dumps_and_packs_at_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "newer.sav",
        &newer_schema("v3-msgpack-plain.sav"),
    );
    let json = dump_to(&file, None, dir.path(), "d.json", false);
    assert!(
        std::fs::read_to_string(&json)
            .unwrap()
            .contains("\"schema_version\":9")
    );
    let out = dir.path().join("again.sav");
    assert_eq!(pack(&json, &out, None, &[]).status.code(), Some(0));
    let (header, _) = open(std::fs::read(&out).unwrap(), None);
    assert_eq!(header.schema_version, 9);
}

/// The current time, to the millisecond (as save files store it).
fn now_ms() -> std::time::SystemTime {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::time::UNIX_EPOCH + std::time::Duration::from_millis(since.as_millis() as u64)
}

/// The dump at `json` with its `saved_at` line replaced by `with` (or removed).
fn set_saved_at(json: &Path, with: Option<&str>) {
    let text = std::fs::read_to_string(json).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("\"saved_at\""))
        .unwrap()
        .to_owned();
    let edited = match with {
        Some(time) => text.replace(&line, &format!("  \"saved_at\": \"{time}\",")),
        None => text.replace(&format!("{line}\n"), ""),
    };
    assert_ne!(edited, text);
    std::fs::write(json, edited).unwrap();
}

#[test]
fn pack_keeps_the_dumps_saved_at_in_a_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let (original, _) = open(
        std::fs::read(fixture("v2-msgpack-plain.sav")).unwrap(),
        None,
    );
    let json = dump_to(
        &fixture("v2-msgpack-plain.sav"),
        None,
        dir.path(),
        "d.json",
        true,
    );
    let out = dir.path().join("slot-001.sav");
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let (header, _) = open(std::fs::read(&out).unwrap(), None);
    assert_eq!(header.saved_at, original.saved_at);
    assert!(
        stdout_of(&output).contains("(the dump's)"),
        "{}",
        stdout_of(&output)
    );

    // An edited time, with an offset, is kept to the millisecond; a game's load menu shows it.
    set_saved_at(&json, Some("2001-02-03T05:05:06.789+01:00"));
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(
        stdout_of(&output).contains("saved at 2001-02-03T04:05:06.789Z (the dump's)"),
        "{}",
        stdout_of(&output)
    );
    let expected = std::time::UNIX_EPOCH + std::time::Duration::from_millis(981_173_106_789);
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .schema_version(3)
        .build()
        .unwrap();
    assert_eq!(
        manager.info(SlotId::Numbered(1)).unwrap().saved_at(),
        Some(expected)
    );
}

#[test]
fn pack_now_stamps_the_current_time() {
    let dir = tempfile::tempdir().unwrap();
    let json = dump_to(
        &fixture("v3-json-plain.sav"),
        None,
        dir.path(),
        "d.json",
        false,
    );
    let out = dir.path().join("now.sav");
    let before = now_ms();
    let output = pack(&json, &out, None, &["--now"]);
    let after = std::time::SystemTime::now();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let (header, _) = open(std::fs::read(&out).unwrap(), None);
    assert!(
        before <= header.saved_at && header.saved_at <= after,
        "{:?}",
        header.saved_at
    );
    assert!(
        stdout_of(&output).contains("(now: --now)"),
        "{}",
        stdout_of(&output)
    );
    assert!(stderr_of(&output).is_empty(), "{}", stderr_of(&output));
}

#[test]
fn a_dump_without_saved_at_is_stamped_now_and_a_bad_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dump_to(
        &fixture("v3-json-plain.sav"),
        None,
        dir.path(),
        "d.json",
        true,
    );
    set_saved_at(&json, None);
    let out = dir.path().join("a.sav");
    let before = now_ms();
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let (header, _) = open(std::fs::read(&out).unwrap(), None);
    assert!(header.saved_at >= before);
    assert!(
        stdout_of(&output).contains("(now: the dump has no saved_at)"),
        "{}",
        stdout_of(&output)
    );

    let json = dump_to(
        &fixture("v3-json-plain.sav"),
        None,
        dir.path(),
        "bad.json",
        true,
    );
    set_saved_at(&json, Some("last tuesday"));
    let never = dir.path().join("never.sav");
    let output = pack(&json, &never, None, &[]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr_of(&output);
    assert!(
        err.contains("at /saved_at: \"last tuesday\" is not an RFC 3339 time")
            && err.contains("--now"),
        "{err}"
    );
    assert!(err.trim_end().ends_with("[Dump]"), "{err}");
    assert!(!never.exists());
    // --now needs no readable saved_at.
    assert_eq!(pack(&json, &never, None, &["--now"]).status.code(), Some(0));
}

#[test]
fn an_encrypted_pack_keeps_the_dumps_saved_at() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file();
    let original = fixture("v3-msgpack-aes.sav");
    let json = dump_to(&original, Some(&key), dir.path(), "d.json", false);
    let (dumped, _) = open(std::fs::read(&original).unwrap(), Some(&fixture_key()));
    let out = dir.path().join("e.sav");
    let output = pack(&json, &out, Some(&key), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(stderr_of(&output).is_empty(), "{}", stderr_of(&output));
    let (header, _) = open(std::fs::read(&out).unwrap(), Some(&fixture_key()));
    assert!(header.encrypted);
    assert_eq!(header.saved_at, dumped.saved_at);
    assert!(
        stdout_of(&output).contains("(the dump's)"),
        "{}",
        stdout_of(&output)
    );
    // --now stamps the current time, encrypted or not.
    let before = now_ms();
    let output = pack(&json, &out, Some(&key), &["--now"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr_of(&output).is_empty(), "{}", stderr_of(&output));
    let (header, _) = open(std::fs::read(&out).unwrap(), Some(&fixture_key()));
    assert!(header.saved_at >= before);
}

#[test]
fn pack_slot_sets_the_slot_a_game_loads_it_from() {
    for (arg, slot, key) in [
        ("3", SlotId::Numbered(3), None),
        ("autosave 2", SlotId::Autosave(2), None),
        ("autosave-1", SlotId::Autosave(1), Some(key_file())),
        ("quicksave", SlotId::Quicksave, Some(key_file())),
        ("slot-012.sav", SlotId::Numbered(12), None),
    ] {
        let work = tempfile::tempdir().unwrap();
        let json = dump_to(
            &fixture("v3-msgpack-plain.sav"),
            None,
            work.path(),
            "d.json",
            false,
        );
        let saves = tempfile::tempdir().unwrap();
        let out = saves.path().join(slot.file_name());
        let output = pack(&json, &out, key.as_deref(), &["--slot", arg]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{arg}: {}",
            stderr_of(&output)
        );
        assert!(
            !stderr_of(&output).contains("SlotMismatch"),
            "{arg}: {}",
            stderr_of(&output)
        );
        let shown = slot.to_string();
        assert!(
            stdout_of(&output).contains(&format!(": slot {shown}, ")),
            "{arg}: {}",
            stdout_of(&output)
        );
        let builder = SaveLoadManager::builder()
            .directory(saves.path())
            .schema_version(3);
        let builder = match key {
            Some(_) => builder.key(fixture_key()),
            None => builder,
        };
        let loaded = builder.build().unwrap().load(slot).unwrap();
        assert_eq!(loaded.report.header.slot, slot, "{arg}");
        assert!(loaded.snapshot.contains("player"), "{arg}");
    }
}

#[test]
fn pack_warns_when_the_file_name_is_another_slots_and_refuses_unknown_slots() {
    let dir = tempfile::tempdir().unwrap();
    let json = dump_to(
        &fixture("v3-json-plain.sav"),
        None,
        dir.path(),
        "d.json",
        false,
    );
    // The dump is for slot 1; slot-002.sav is slot 2's file.
    let out = dir.path().join("slot-002.sav");
    let output = pack(&json, &out, None, &[]);
    assert_eq!(output.status.code(), Some(0));
    let err = stderr_of(&output);
    assert!(
        err.contains("is the file of slot 2 but holds a save for slot 1") && err.contains("--slot"),
        "{err}"
    );
    let output = pack(&json, &out, None, &["--slot", "2"]);
    assert!(stderr_of(&output).is_empty(), "{}", stderr_of(&output));

    for bad in ["slot 2", "-1", "autosave", "quick"] {
        let never = dir.path().join("never.sav");
        let output = pack(&json, &never, None, &[&format!("--slot={bad}")]);
        assert_eq!(output.status.code(), Some(2), "{bad}");
        assert!(
            stderr_of(&output).contains("is not a slot"),
            "{bad}: {}",
            stderr_of(&output)
        );
        assert!(!never.exists());
    }
}
