//! `savegame diff A B`: what changed between two saves, memento by memento.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use savegame::{Codec, Key, SlotId, Snapshot};
use serde::Serialize;
use serde_json::{Value as Json, json};

#[derive(Serialize)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Serialize)]
struct Player {
    name: String,
    health: u32,
    position: Position,
    inventory: Vec<String>,
    skills: BTreeMap<String, u32>,
}

#[derive(Serialize)]
struct Entity {
    id: u32,
    kind: String,
}

#[derive(Serialize)]
struct World {
    seed: u64,
    entities: Vec<Entity>,
}

fn entity(id: u32, kind: &str) -> Entity {
    Entity {
        id,
        kind: kind.into(),
    }
}

/// The save a bug report's first file holds: before the player went on.
fn before(codec: Codec) -> Snapshot {
    let mut s = Snapshot::new(codec)
        .with_label("第三关：森林")
        .with_playtime(Duration::from_secs(600))
        .with_app_version("1.2.0")
        .with_user_field("chapter", "2");
    let player = Player {
        name: "勇者".into(),
        health: 182,
        position: Position { x: 1.5, y: -2.25 },
        inventory: vec!["sword".into(), "shield".into()],
        skills: [("fire".to_string(), 1)].into(),
    };
    s.capture_memento("player", &player).unwrap();
    s.capture_memento("tutorial", &json!({"done": true}))
        .unwrap();
    let world = World {
        seed: 42,
        entities: vec![entity(1, "tree"), entity(2, "rock")],
    };
    s.capture_memento("world", &world).unwrap();
    s.capture_memento("settings", &json!({"volume": 7}))
        .unwrap();
    s
}

/// The second file: health lost, a move, an item and a skill gained, the tutorial gone, a
/// quest begun, a rock broken.
fn after(codec: Codec) -> Snapshot {
    let mut s = Snapshot::new(codec)
        .with_label("第四关：神殿")
        .with_playtime(Duration::from_secs(1_500))
        .with_app_version("1.2.0")
        .with_user_field("chapter", "3")
        .with_user_field("boss", "守卫者");
    let player = Player {
        name: "勇者".into(),
        health: 150,
        position: Position { x: 12.5, y: -2.25 },
        inventory: vec!["sword".into(), "shield".into(), "potion".into()],
        skills: [("fire".to_string(), 2), ("ice".to_string(), 1)].into(),
    };
    s.capture_memento("player", &player).unwrap();
    s.capture_memento("quests", &json!({"active": [3]}))
        .unwrap();
    let world = World {
        seed: 42,
        entities: vec![entity(1, "tree")],
    };
    s.capture_memento("world", &world).unwrap();
    s.capture_memento("settings", &json!({"volume": 7}))
        .unwrap();
    s
}

/// Writes the two saves (slot 1, schema 3, generations 4 and 5) into `dir`.
fn two_saves(dir: &Path, codec: Codec, key: Option<&Key>) -> (PathBuf, PathBuf) {
    let a = before(codec)
        .seal_file(SlotId::Numbered(1), 3, 4, key)
        .unwrap();
    let b = after(codec)
        .seal_file(SlotId::Numbered(1), 3, 5, key)
        .unwrap();
    (write(dir, "a.sav", &a), write(dir, "b.sav", &b))
}

/// `savegame diff [args] A B`, with the fixtures' key file when `keyed`.
fn diff(a: &Path, b: &Path, keyed: bool, args: &[&str]) -> std::process::Output {
    let mut cmd = savegame();
    cmd.arg("diff").args(args).arg(a).arg(b);
    if keyed {
        cmd.arg("--key-file").arg(key_file());
    }
    cmd.output().unwrap()
}

/// `diff --json` of two files, which must exit with `code`.
fn diff_json(a: &Path, b: &Path, keyed: bool, args: &[&str], code: i32) -> Json {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = diff(a, b, keyed, &all);
    assert_eq!(output.status.code(), Some(code), "{}", stderr_of(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every changed path of the report: (memento id, path, change).
fn changed_paths(report: &Json) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for c in report["mementos"]["changed"].as_array().unwrap() {
        for p in c["changes"].as_array().unwrap() {
            out.push((
                c["id"].as_str().unwrap().to_owned(),
                p["path"].as_str().unwrap().to_owned(),
                p["change"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

fn ids(report: &Json, what: &str) -> Vec<String> {
    report["mementos"][what]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The change at `path` in the report.
fn change_at<'a>(report: &'a Json, path: &str) -> &'a Json {
    report["mementos"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["changes"].as_array().unwrap())
        .find(|p| p["path"] == path)
        .unwrap_or_else(|| panic!("no change at {path}: {report:#}"))
}

/// Checks the report of `before` → `after`, whatever the codec and the encryption. Returns
/// the mementos part, which must not depend on either.
fn check_report(report: &Json, codec: &str, encrypted: bool) -> Json {
    assert_eq!(report["same"], false);
    assert_eq!(report["a"]["codec"], codec);
    assert_eq!(report["b"]["encrypted"], encrypted);
    assert_eq!(report["a"]["generation"], 4);
    assert_eq!(report["b"]["mementos"], 4);
    assert_eq!(report["migrated"], Json::Null);
    let f32_of = |x: f64| match codec {
        "msgpack" => json!({ "$f32": x }),
        _ => json!(x),
    };
    let fields: Vec<(&str, Option<&str>)> = report["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["field"].as_str().unwrap(), f["key"].as_str()))
        .collect();
    assert!(fields.contains(&("generation", None)), "{fields:?}");
    assert!(fields.contains(&("label", None)), "{fields:?}");
    assert!(fields.contains(&("playtime_ms", None)), "{fields:?}");
    assert!(fields.contains(&("user", Some("boss"))), "{fields:?}");
    assert!(fields.contains(&("user", Some("chapter"))), "{fields:?}");
    assert!(!fields.contains(&("app_version", None)), "{fields:?}");
    assert!(!fields.contains(&("slot", None)), "{fields:?}");
    let label = report["header"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "label")
        .unwrap();
    assert_eq!(
        (&label["old"], &label["new"]),
        (&json!("第三关：森林"), &json!("第四关：神殿"))
    );

    let m = &report["mementos"];
    assert_eq!(ids(report, "added"), ["quests"]);
    assert_eq!(ids(report, "removed"), ["tutorial"]);
    assert_eq!(m["added"][0]["value"], json!({"active": [3]}));
    assert_eq!(m["unchanged"], 1, "settings");
    let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        changed_paths(report),
        [
            s("player", "/player/health", "changed"),
            s("player", "/player/inventory/2", "added"),
            s("player", "/player/position/x", "changed"),
            s("player", "/player/skills/fire", "changed"),
            s("player", "/player/skills/ice", "added"),
            s("world", "/world/entities/1", "removed"),
        ]
    );
    let health = change_at(report, "/player/health");
    assert_eq!((&health["old"], &health["new"]), (&json!(182), &json!(150)));
    let x = change_at(report, "/player/position/x");
    assert_eq!((&x["old"], &x["new"]), (&f32_of(1.5), &f32_of(12.5)));
    let potion = change_at(report, "/player/inventory/2");
    assert_eq!(potion["new"], "potion");
    assert!(potion.get("old").is_none(), "{potion}");
    let rock = change_at(report, "/world/entities/1");
    assert_eq!(rock["old"], json!({"id": 2, "kind": "rock"}));
    m.clone()
}

#[test]
fn json_and_msgpack_saves_diff_memento_by_memento() {
    let dir = tempfile::tempdir().unwrap();
    for (codec, name) in [(Codec::Json, "json"), (Codec::MessagePack, "msgpack")] {
        let (a, b) = two_saves(dir.path(), codec, None);
        let report = diff_json(&a, &b, false, &[], 1);
        check_report(&report, name, false);
    }
}

#[test]
fn the_text_report_lists_every_difference_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_saves(dir.path(), Codec::MessagePack, None);
    let output = diff(&a, &b, false, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    assert!(output.stderr.is_empty(), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("--- ")
            && lines[0].contains("a.sav: slot 1, schema 3, generation 4, msgpack, plain"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("+++ ") && lines[1].contains("generation 5"),
        "{text}"
    );
    // Saved-at differs too, unless both were sealed in the same millisecond.
    let saved_at = lines.iter().any(|l| l.starts_with("  saved at "));
    let count = format!(
        "header and metadata: {} difference(s)",
        5 + usize::from(saved_at)
    );
    let mut expected = vec![
        count.as_str(),
        "  generation      4 → 5",
        "  label           \"第三关：森林\" → \"第四关：神殿\"",
        "  playtime        10m00s (600000 ms) → 25m00s (1500000 ms)",
        "  user \"boss\"     (none) → \"守卫者\"",
        "  user \"chapter\"  \"2\" → \"3\"",
        "mementos: 1 added, 1 removed, 2 changed, 1 unchanged",
        "~ player: 5 path(s)",
        "    /player/health: 182 → 150",
        "    /player/inventory/2: added \"potion\"",
        "    /player/position/x: {\"$f32\":1.5} → {\"$f32\":12.5}",
        "    /player/skills/fire: 1 → 2",
        "    /player/skills/ice: added 1",
        "+ quests: {\"active\":[3]}",
        "- tutorial: {\"done\":true}",
        "~ world: 1 path(s)",
        "    /world/entities/1: removed {\"id\":2,\"kind\":\"rock\"}",
    ];
    if saved_at {
        let line = lines.iter().find(|l| l.starts_with("  saved at ")).unwrap();
        assert!(
            line.starts_with("  saved at        20") && line.contains("Z → 20"),
            "{line}"
        );
        expected.insert(2, line);
    }
    assert_eq!(lines[2..], expected, "{text}");
    // The same files give the same report, byte for byte.
    assert_eq!(diff(&a, &b, false, &[]).stdout, output.stdout);
}

#[test]
fn encrypted_saves_diff_with_the_key_and_not_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = fixture_key();
    let plain = tempfile::tempdir().unwrap();
    let (pa, pb) = two_saves(plain.path(), Codec::MessagePack, None);
    let plain_mementos = check_report(&diff_json(&pa, &pb, false, &[], 1), "msgpack", false);

    let (a, b) = two_saves(dir.path(), Codec::MessagePack, Some(&key));
    let report = diff_json(&a, &b, true, &[], 1);
    let mementos = check_report(&report, "msgpack", true);
    assert_eq!(
        mementos, plain_mementos,
        "encryption changes nothing in the mementos"
    );

    // The key from the environment works the same; a plain save beside an encrypted one too.
    let hex = std::fs::read_to_string(key_file()).unwrap();
    let output = savegame()
        .args(["diff", "--json", "--allow-plain"])
        .arg(&pa)
        .arg(&b)
        .env("SAVEGAME_KEY", hex.trim())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let mixed: Json = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(mixed["mementos"], plain_mementos);
    assert!(
        mixed["header"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["field"] == "encrypted")
    );

    // No key, or a wrong one: exit 2, one line on stderr, nothing on stdout.
    let wrong = write(dir.path(), "wrong.hex", "11".repeat(32).as_bytes());
    for (key_file, kind) in [(None, "[KeyRequired]"), (Some(&wrong), "[Decrypt]")] {
        let mut cmd = savegame();
        cmd.arg("diff").arg(&a).arg(&b);
        if let Some(k) = key_file {
            cmd.arg("--key-file").arg(k);
        }
        let output = cmd.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{kind}");
        assert!(output.stdout.is_empty(), "{kind}: {}", stdout_of(&output));
        let err = stderr_of(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("a.sav") && err.trim_end().ends_with(kind),
            "{err}"
        );
    }
}

#[test]
fn identical_saves_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = two_saves(dir.path(), Codec::Json, None);
    let copy = dir.path().join("copy.sav");
    std::fs::copy(&a, &copy).unwrap();
    for (x, y) in [(&a, &copy), (&a, &a)] {
        let output = diff(x, y, false, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let text = stdout_of(&output);
        assert!(text.contains("\nheader and metadata: same\n"), "{text}");
        assert!(
            text.ends_with("\nmementos: 0 added, 0 removed, 0 changed, 4 unchanged\n"),
            "{text}"
        );
        let report = diff_json(x, y, false, &[], 0);
        assert_eq!(report["same"], true);
        assert_eq!(report["header"], json!([]));
        assert_eq!(report["mementos"]["unchanged"], 4);
    }
    // An encrypted save and its copy, with the key.
    let key = fixture_key();
    let sealed = before(Codec::MessagePack)
        .seal_file(SlotId::Numbered(1), 3, 4, Some(&key))
        .unwrap();
    let x = write(dir.path(), "x.sav", &sealed);
    let y = write(dir.path(), "y.sav", &sealed);
    assert_eq!(diff_json(&x, &y, true, &[], 0)["same"], true);
    assert_eq!(diff(&x, &y, false, &[]).status.code(), Some(2), "no key");
}

#[test]
fn a_json_save_and_a_msgpack_save_of_the_same_state_differ_only_in_codec() {
    let dir = tempfile::tempdir().unwrap();
    let a = before(Codec::Json)
        .seal_file(SlotId::Numbered(1), 3, 4, None)
        .unwrap();
    let b = before(Codec::MessagePack)
        .seal_file(SlotId::Numbered(1), 3, 4, None)
        .unwrap();
    let (a, b) = (
        write(dir.path(), "a.sav", &a),
        write(dir.path(), "b.sav", &b),
    );
    let report = diff_json(&a, &b, false, &[], 1);
    let m = &report["mementos"];
    assert_eq!(
        (
            m["added"].as_array().unwrap().len(),
            m["removed"].as_array().unwrap().len()
        ),
        (0, 0)
    );
    assert_eq!(m["changed"], json!([]), "{report:#}");
    assert_eq!(m["unchanged"], 4);
    for f in report["header"].as_array().unwrap() {
        assert!(f["field"] == "codec" || f["field"] == "saved_at", "{f}");
    }
    assert!(
        report["header"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["field"] == "codec")
    );
}

#[test]
fn saves_at_two_schema_versions_are_compared_as_stored_or_migrated_first() {
    let (v1, v3) = (fixture("v1-json-plain.sav"), fixture("v3-json-plain.sav"));
    let output = diff(&v1, &v3, false, &[]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout_of(&output);
    assert!(
        text.contains("note: the schema versions differ (1 → 3)"),
        "{text}"
    );
    assert!(text.contains("--migrations DIR"), "{text}");
    assert!(text.contains("  schema version  1 → 3"), "{text}");
    let stored = diff_json(&v1, &v3, false, &[], 1);
    let paths = changed_paths(&stored);
    let has = |paths: &[(String, String, String)], path: &str, change: &str| {
        paths.iter().any(|(_, p, c)| p == path && c == change)
    };
    assert!(has(&paths, "/player/hp", "removed"), "{paths:?}");
    assert!(has(&paths, "/player/health", "added"), "{paths:?}");
    assert_eq!(ids(&stored, "added"), ["inventory"]);

    let steps = migrations();
    let steps = steps.to_str().unwrap();
    let migrated = diff_json(&v1, &v3, false, &["--migrations", steps], 1);
    assert_eq!(
        migrated["migrated"],
        json!({"side": "a", "from": 1, "to": 3})
    );
    let paths = changed_paths(&migrated);
    assert!(
        !paths.iter().any(|(_, p, _)| p.starts_with("/player/hp")),
        "{paths:?}"
    );
    assert!(has(&paths, "/player/health", "changed"), "{paths:?}");
    assert_eq!(ids(&migrated, "added"), Vec::<String>::new());
    // Either order: the older side is migrated.
    let reversed = diff_json(&v3, &v1, false, &["--migrations", steps], 1);
    assert_eq!(
        reversed["migrated"],
        json!({"side": "b", "from": 1, "to": 3})
    );
    let text = stdout_of(&diff(&v3, &v1, false, &["--migrations", steps]));
    assert!(
        text.contains("v1-json-plain.sav was migrated in memory from schema version 1 to 3"),
        "{text}"
    );

    // A save and its copy migrated by the tool hold the same once migrated.
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_fixture(dir.path(), "v1-msgpack-plain.sav", "slot-001.sav");
    let run = savegame()
        .arg("migrate")
        .arg(&copy)
        .args(["--migrations", steps])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr_of(&run));
    let old = fixture("v1-msgpack-plain.sav");
    let report = diff_json(&old, &copy, false, &["--migrations", steps], 1);
    assert_eq!(report["mementos"]["changed"], json!([]), "{report:#}");
    assert_eq!(report["mementos"]["unchanged"], 3);
    let fields: Vec<&str> = report["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"schema_version") && fields.contains(&"generation"),
        "{fields:?}"
    );
}

#[test]
fn a_failed_migration_or_a_bad_steps_folder_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("no-steps");
    std::fs::create_dir(&empty).unwrap();
    let (v1, v3) = (fixture("v1-json-plain.sav"), fixture("v3-json-plain.sav"));
    let output = diff(&v1, &v3, false, &["--migrations", empty.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr_of(&output).contains("[MigrationChain]"),
        "{}",
        stderr_of(&output)
    );
    // Steps that stop short of the newer save's version.
    let newer = write(dir.path(), "newer.sav", &newer_schema("v3-json-plain.sav"));
    let steps = migrations();
    let output = diff(
        &v1,
        &newer,
        false,
        &["--migrations", steps.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr_of(&output).contains("[NoMigrationPath]"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn files_that_are_not_saves_are_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixture("v3-json-plain.sav");
    let text = write(
        dir.path(),
        "notes.txt",
        b"player died at the boss, see attached save\n",
    );
    let flipped = write(
        dir.path(),
        "flipped.sav",
        &bit_flipped("v3-json-plain.sav", 300, 2),
    );
    let missing = dir.path().join("missing.sav");
    for (file, kind) in [
        (&text, "[NotASave]"),
        (&flipped, "[ChecksumMismatch]"),
        (&missing, "[Io]"),
    ] {
        for (a, b) in [(&good, file), (file, &good)] {
            let output = diff(a, b, false, &[]);
            assert_eq!(output.status.code(), Some(2), "{file:?}");
            assert!(output.stdout.is_empty());
            let err = stderr_of(&output);
            assert!(err.trim_end().ends_with(kind), "{err}");
            assert!(
                err.contains(file.file_name().unwrap().to_str().unwrap()),
                "{err}"
            );
        }
    }
    let output = savegame().arg("diff").arg(&good).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "one file is a usage error");
}

#[derive(Serialize)]
struct Big {
    blurb: String,
    grid: Vec<u32>,
}

#[test]
fn long_values_and_many_paths_are_cut_in_text_and_whole_with_full_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let seal = |story: &str, cell: u32| {
        let mut s = Snapshot::new(Codec::Json);
        let big = Big {
            blurb: story.into(),
            grid: vec![cell; 120],
        };
        s.capture_memento("big", &big).unwrap();
        s.seal_file(SlotId::Numbered(1), 1, 1, None).unwrap()
    };
    let long = "很久很久以前，".repeat(60);
    let a = write(dir.path(), "a.sav", &seal("short", 0));
    let b = write(dir.path(), "b.sav", &seal(&long, 1));

    let text = stdout_of(&diff(&a, &b, false, &[]));
    assert!(text.contains("~ big: 121 path(s)\n"), "{text}");
    let story = text
        .lines()
        .find(|l| l.starts_with("    /big/blurb: "))
        .unwrap();
    assert!(story.contains("… ("), "{story}");
    assert!(story.chars().count() < 140, "{story}");
    let listed = text
        .lines()
        .filter(|l| l.starts_with("    /big/grid/"))
        .count();
    assert_eq!(listed, 49, "50 paths in all, the blurb first:\n{text}");
    assert!(
        text.contains("    … and 71 more path(s) (--full or --json lists them all)\n"),
        "{text}"
    );

    let full = stdout_of(&diff(&a, &b, false, &["--full"]));
    assert!(full.contains(&format!("\"short\" → \"{long}\"")), "{full}");
    assert_eq!(
        full.lines()
            .filter(|l| l.starts_with("    /big/grid/"))
            .count(),
        120
    );
    assert!(full.contains("    /big/grid/119: 0 → 1\n"), "{full}");

    let report = diff_json(&a, &b, false, &[], 1);
    assert_eq!(changed_paths(&report).len(), 121);
    assert_eq!(change_at(&report, "/big/blurb")["new"], json!(long));
}

#[test]
fn hostile_ids_and_values_cannot_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let seal = |v: &str| {
        let mut s = Snapshot::new(Codec::MessagePack);
        s.capture_memento("evil\u{1b}[2J", &json!({"k\u{7}": v}))
            .unwrap();
        s.seal_file(SlotId::Numbered(1), 1, 1, None).unwrap()
    };
    let a = write(dir.path(), "a.sav", &seal("x\u{9b}31m"));
    let b = write(dir.path(), "b.sav", &seal("y\u{1b}]0;pwned\u{7}"));
    let text = stdout_of(&diff(&a, &b, false, &[]));
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(text.contains("~ evil\\u{1b}[2J: 1 path(s)"), "{text}");
}
