//! `savegame list DIR`: the load menu of a folder, from headers and CRCs alone.

mod common;

use common::*;
use serde_json::Value as Json;

fn rows(output: &std::process::Output) -> Vec<Json> {
    match serde_json::from_slice(&output.stdout).unwrap() {
        Json::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

fn row<'a>(rows: &'a [Json], file: &str) -> &'a Json {
    rows.iter()
        .find(|r| r["file"] == file)
        .unwrap_or_else(|| panic!("no row for {file}: {rows:?}"))
}

#[test]
fn the_fixtures_folder_lists_every_save_and_nothing_else() {
    let output = savegame()
        .arg("list")
        .arg(repo("fixtures"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + FIXTURES.len(), "{text}");
    for column in [
        "FILE", "SLOT", "KIND", "LABEL", "SAVED AT", "PLAYTIME", "APP", "SCHEMA", "SIZE",
        "BACKUPS", "DELTAS", "STATUS",
    ] {
        assert!(lines[0].contains(column), "{}", lines[0]);
    }
    for name in FIXTURES {
        let line = lines
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing from\n{text}"));
        let status = if name.contains("-aes") || name.contains("-hmac") {
            "needs key"
        } else {
            "ok"
        };
        assert!(line.ends_with(status), "{line}");
        let size = std::fs::metadata(fixture(name)).unwrap().len();
        assert!(line.contains(&format!(" {size} ")), "{line}");
        let label = match name.strip_prefix("format") {
            Some(rest) => {
                let (format, rest) = rest.split_once('-').unwrap();
                format!(
                    "fixture format {format} {}",
                    rest.split('-').next().unwrap()
                )
            }
            None => format!("fixture v{}", &name[1..2]),
        };
        assert!(line.contains(&label), "{line}");
    }
    assert!(!text.contains("README"), "{text}");
    assert!(!text.contains("expected"), "{text}");
}

#[test]
fn with_a_key_encrypted_saves_are_ok() {
    let output = savegame()
        .args(["list", "--json", "--key-file"])
        .arg(key_file())
        .arg(repo("fixtures"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let rows = rows(&output);
    assert_eq!(rows.len(), FIXTURES.len());
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["deltas"], 0, "{r}");
    }
}

#[test]
fn json_rows_carry_every_column() {
    let output = savegame()
        .args(["list", "--json"])
        .arg(repo("fixtures"))
        .output()
        .unwrap();
    let rows = rows(&output);
    let r = row(&rows, "v2-msgpack-aes.sav");
    assert_eq!(r["slot"], "1");
    assert_eq!(r["kind"], "save");
    assert_eq!(r["label"], "fixture v2");
    assert_eq!(r["playtime_ms"], 1_200_000);
    assert_eq!(r["app_version"], "1.1.0");
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["codec"], "msgpack");
    assert_eq!(r["encrypted"], true);
    assert_eq!(r["size"], 993);
    assert_eq!(r["backups"], 0);
    assert_eq!(r["deltas"], 0);
    assert_eq!(r["status"], "needs key");
    let saved_at = r["saved_at"].as_str().unwrap();
    assert!(
        saved_at.ends_with('Z') && saved_at.len() == 24,
        "{saved_at}"
    );
}

#[test]
fn damaged_newer_and_missing_files_get_their_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_fixture(d, "v3-msgpack-plain.sav", "slot-001.sav");
    copy_fixture(d, "v2-msgpack-plain.sav", "slot-001.sav.bak1");
    copy_fixture(d, "v1-msgpack-plain.sav", "slot-001.sav.v1.bak");
    // A bit flip in the payload: the header still reads, the CRC does not match.
    write(d, "flipped.sav", &bit_flipped("v3-json-plain.sav", 200, 3));
    let full = std::fs::read(fixture("v3-json-plain.sav")).unwrap();
    write(d, "truncated.sav", &full[..full.len() - 10]);
    write(d, "newer.sav", &newer_schema("v3-json-plain.sav"));
    write(d, "not-a-save.sav", b"hello, world");
    // Only backups left of slot 2.
    copy_fixture(d, "v3-json-plain.sav", "slot-002.sav.bak1");
    write(d, "notes.txt", b"not a save, not listed");
    write(d, ".slot-001.sav.lock", b"");

    let output = savegame()
        .args(["list", "--json", "--schema", "3"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let rows = rows(&output);
    let files: Vec<&str> = rows.iter().map(|r| r["file"].as_str().unwrap()).collect();
    assert_eq!(
        files,
        [
            "flipped.sav",
            "newer.sav",
            "slot-001.sav",
            "truncated.sav",
            "slot-002.sav",
            "not-a-save.sav",
        ],
        "by slot (every fixture is slot 1), then by file name; no slot last"
    );
    let slot1 = row(&rows, "slot-001.sav");
    assert_eq!(slot1["status"], "ok");
    assert_eq!(slot1["backups"], 2);
    assert_eq!(
        slot1["backup_files"],
        serde_json::json!(["slot-001.sav.bak1", "slot-001.sav.v1.bak"])
    );
    let slot2 = row(&rows, "slot-002.sav");
    assert_eq!(slot2["status"], "missing");
    assert_eq!(slot2["backups"], 1);

    let flipped = row(&rows, "flipped.sav");
    assert_eq!(flipped["status"], "corrupt");
    assert_eq!(flipped["label"], "fixture v3", "the header still shows");
    assert!(
        flipped["problem"]
            .as_str()
            .unwrap()
            .ends_with("[ChecksumMismatch]"),
        "{flipped}"
    );
    let truncated = row(&rows, "truncated.sav");
    assert_eq!(truncated["status"], "corrupt");
    let newer = row(&rows, "newer.sav");
    assert_eq!(newer["status"], "newer");
    assert_eq!(newer["schema_version"], 9);
    assert!(newer["problem"].as_str().unwrap().contains("NewerSchema"));
    let not_a_save = row(&rows, "not-a-save.sav");
    assert_eq!(not_a_save["status"], "corrupt");
    assert!(
        not_a_save["problem"]
            .as_str()
            .unwrap()
            .contains("[NotASave]")
    );

    // The table says the same, with one line per problem under it.
    let output = savegame()
        .args(["list", "--schema", "3"])
        .arg(d)
        .output()
        .unwrap();
    let text = stdout_of(&output);
    let line = |file: &str| {
        text.lines()
            .find(|l| l.starts_with(file) && !l.contains(": "))
            .unwrap_or_else(|| panic!("{file}:\n{text}"))
            .to_owned()
    };
    assert!(line("flipped.sav").ends_with("corrupt"));
    assert!(line("newer.sav").ends_with("newer"));
    assert!(line("slot-002.sav").ends_with("missing"));
    assert!(line("slot-001.sav").ends_with("ok"));
    assert!(text.contains("flipped.sav: checksum mismatch"), "{text}");
}

#[test]
fn without_schema_a_newer_save_cannot_be_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "newer.sav", &newer_schema("v3-json-plain.sav"));
    let output = savegame()
        .args(["list", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(rows(&output)[0]["status"], "ok");
}

#[test]
fn an_empty_folder_says_so_and_a_missing_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    savegame()
        .arg("list")
        .arg(dir.path())
        .assert()
        .code(0)
        .stdout(predicates::str::starts_with("no save files in"));
    let missing = dir.path().join("nowhere");
    let output = savegame().arg("list").arg(&missing).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr_of(&output);
    assert!(
        err.contains("nowhere") && err.trim_end().ends_with("[Io]"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn hostile_labels_cannot_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("v3-json-plain.sav")).unwrap();
    let (header, mut snapshot) = open(bytes, None);
    snapshot.metadata_mut().label = "evil\n\u{1b}[2Jlabel".into();
    let sealed = snapshot.seal_file(header.slot, 3, 1, None).unwrap();
    write(dir.path(), "slot-001.sav", &sealed);
    let output = savegame().arg("list").arg(dir.path()).output().unwrap();
    let text = stdout_of(&output);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains(r"evil\n\u{1b}[2Jlabel"), "{text}");
}

#[test]
fn the_deltas_column_counts_a_slots_incremental_saves() {
    let dir = tempfile::tempdir().unwrap();
    // Deltas as big as this tiny base would be compacted at once by default.
    let manager = savegame::SaveLoadManager::builder()
        .directory(dir.path())
        .compact_at(10_000)
        .build()
        .unwrap();
    let slot = savegame::SlotId::Numbered(2);
    let mut base = manager.snapshot();
    base.capture_memento("entity/1", &1u32).unwrap();
    manager.save(slot, &base).unwrap();
    for n in 2..5u32 {
        let mut changes = manager.snapshot().with_label(format!("turn {n}"));
        changes.capture_memento("entity/1", &n).unwrap();
        manager.save_incremental(slot, &changes).unwrap();
    }
    let listed = |dir: &std::path::Path| {
        let output = savegame()
            .args(["list", "--json"])
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
        let rows = rows(&output);
        assert_eq!(rows.len(), 1, "the journal is not a row: {rows:?}");
        row(&rows, "slot-002.sav")["deltas"].clone()
    };
    assert_eq!(listed(dir.path()), 3);
    assert_eq!(manager.info(slot).unwrap().deltas, 3);

    // A torn last record is not counted, as a load would not apply it.
    let journal = dir.path().join("slot-002.sav.journal");
    let bytes = std::fs::read(&journal).unwrap();
    std::fs::write(&journal, &bytes[..bytes.len() - 5]).unwrap();
    assert_eq!(listed(dir.path()), 2);

    // A new full save ends the journal.
    manager.save(slot, &base).unwrap();
    assert_eq!(listed(dir.path()), 0);
}

/// The terminal columns `s` takes, for text of ASCII and CJK characters only (each CJK
/// character, fullwidth punctuation included, takes two), measured here independently of the
/// tool.
fn columns(s: &str) -> usize {
    s.chars().map(|c| if c >= '\u{2E80}' { 2 } else { 1 }).sum()
}

/// The column where the first `YYYY-` of a line starts.
fn date_column(line: &str) -> Option<usize> {
    let chars: Vec<char> = line.chars().collect();
    (0..chars.len().saturating_sub(4)).find_map(|i| {
        let year = &chars[i..i + 5];
        (year[..4].iter().all(char::is_ascii_digit) && year[4] == '-')
            .then(|| columns(&chars[..i].iter().collect::<String>()))
    })
}

#[test]
fn cjk_labels_line_up_in_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let manager = savegame::SaveLoadManager::builder()
        .directory(dir.path())
        .build()
        .unwrap();
    let long = "第三关：森林深处的古老神殿，守卫者在等待勇者";
    for (n, label) in [(1, "第三关：森林"), (2, "Level 3"), (3, long)] {
        let mut snapshot = manager.snapshot().with_label(label);
        snapshot.capture_memento("player", &n).unwrap();
        manager
            .save(savegame::SlotId::Numbered(n), &snapshot)
            .unwrap();
    }
    let output = savegame().arg("list").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let header = lines[0].find("SAVED AT").unwrap();
    for line in &lines[1..] {
        assert_eq!(date_column(line), Some(header), "{text}");
    }
    assert!(lines[1].contains("第三关：森林 "), "{text}");
    // The long label is cut to at most 32 columns, with an ellipsis.
    let cut = lines[3]
        .split("  ")
        .find(|cell| cell.starts_with("第三关"))
        .unwrap()
        .trim_end();
    assert!(
        cut.ends_with('…') && columns(cut) <= 32,
        "{cut:?} in\n{text}"
    );
    assert!(
        columns(cut) >= 31,
        "cut no shorter than it must be: {cut:?}"
    );
}
