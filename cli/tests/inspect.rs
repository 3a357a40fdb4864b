//! `savegame inspect FILE`: header, metadata, section offsets, CRC status, encryption.

mod common;

use common::*;

/// The `start end length` numbers of a section line.
fn section(text: &str, name: &str) -> (u64, u64, u64) {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(name) && l.starts_with("  "))
        .unwrap_or_else(|| panic!("no {name} section in\n{text}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

#[test]
fn every_fixture_shows_its_header_and_sections_that_add_up_to_the_file() {
    for name in FIXTURES {
        let output = savegame()
            .arg("inspect")
            .arg(fixture(name))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            stderr_of(&output)
        );
        let text = stdout_of(&output);
        let size = std::fs::metadata(fixture(name)).unwrap().len();
        // `format2-…`, `format3-…`: the file format version; else format 1.
        let format = name.strip_prefix("format").map_or("1", |rest| &rest[..1]);
        let version = if format == "1" { &name[1..2] } else { "3" };
        let label = if format == "1" {
            format!("fixture v{version}")
        } else {
            format!(
                "fixture format {format} {}",
                name.split('-').nth(1).unwrap()
            )
        };
        let encrypted = name.contains("-aes");
        let codec = if name.contains("json") {
            "json"
        } else if name.contains("bitcode") {
            "bitcode"
        } else {
            "msgpack"
        };
        for expected in [
            format!("size            {size} bytes"),
            format!("schema version  {version}"),
            format!("codec           {codec}"),
            format!("label           {label:?}"),
            format!("format version  {format}"),
            "kind            save".to_owned(),
            "slot            1 (in a save folder: slot-001.sav)".to_owned(),
            "crc32           ok (0x".to_owned(),
            format!("encrypted       {}", if encrypted { "yes" } else { "no" }),
        ] {
            assert!(text.contains(&expected), "{name}: {expected:?} in\n{text}");
        }
        let header = section(&text, "header");
        let metadata = section(&text, "metadata");
        let payload = section(&text, "payload");
        let crc = section(&text, "crc32");
        assert_eq!(header, (0, 52, 52));
        assert_eq!(metadata.0, 52);
        if encrypted {
            let nonce = section(&text, "nonce");
            assert_eq!((nonce.0, nonce.2), (metadata.1, 12));
            assert_eq!(payload.0, nonce.1);
        } else {
            assert!(!text.contains("  nonce"), "{text}");
            assert_eq!(payload.0, metadata.1);
        }
        assert_eq!((crc.0, crc.1, crc.2), (payload.1, size, 4));
        assert_eq!(
            text.contains("encrypted       yes (AES-256-GCM, in segments of 256 KiB)"),
            name.contains("segmented") || (format == "3" && encrypted),
            "{name}: {text}"
        );
        if encrypted {
            assert!(text.contains("give a key"), "{text}");
        } else {
            assert!(text.contains("  player "), "{text}");
        }
    }
}

#[test]
fn with_the_key_the_mementos_of_an_encrypted_save_are_listed() {
    let output = savegame()
        .arg("inspect")
        .arg(fixture("v3-msgpack-aes.sav"))
        .arg("--key-file")
        .arg(key_file())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout_of(&output);
    assert!(text.contains("mementos        3"), "{text}");
    for id in ["inventory", "player", "world"] {
        assert!(text.contains(&format!("  {id} ")), "{text}");
    }
}

#[test]
fn a_wrong_key_is_reported_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = write(dir.path(), "wrong.key", &[9u8; 32]);
    let output = savegame()
        .arg("inspect")
        .arg(fixture("v3-json-aes.sav"))
        .arg("--key-file")
        .arg(&wrong)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout_of(&output);
    assert!(
        text.contains("cannot open: could not decrypt [Decrypt]"),
        "{text}"
    );
    assert!(
        text.contains("crc32           ok"),
        "the CRC is fine: {text}"
    );
}

#[test]
fn a_bit_flip_shows_the_header_and_a_bad_crc() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "flipped.sav",
        &bit_flipped("v2-json-plain.sav", 300, 0),
    );
    let output = savegame().arg("inspect").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout_of(&output);
    assert!(text.contains("label           \"fixture v2\""), "{text}");
    assert!(
        text.contains("crc32           BAD: checksum mismatch")
            && text.contains("[ChecksumMismatch]"),
        "{text}"
    );
}

#[test]
fn truncated_files_and_other_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(fixture("v1-msgpack-plain.sav")).unwrap();
    for (name, bytes, kind) in [
        (
            "cut-in-payload.sav",
            &full[..full.len() - 100],
            "[ChecksumMismatch]",
        ),
        ("cut-in-header.sav", &full[..30], "[Malformed]"),
        ("cut-in-magic.sav", &full[..5], "[Malformed]"),
        ("empty.sav", &full[..0], "[Malformed]"),
        ("text.sav", b"{\"player\": 1}".as_slice(), "[NotASave]"),
    ] {
        let path = write(dir.path(), name, bytes);
        let output = savegame().arg("inspect").arg(&path).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{name}");
        let err = stderr_of(&output);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with("savegame: "), "{err}");
        assert!(
            err.contains(name) && err.trim_end().ends_with(kind),
            "{name}: {err}"
        );
        assert!(!err.contains("Malformed {"), "no Debug dump: {err}");
    }
}

#[test]
fn backups_are_inspected_like_saves() {
    let dir = tempfile::tempdir().unwrap();
    let backup = copy_fixture(dir.path(), "v1-json-plain.sav", "slot-001.sav.bak1");
    let kept = copy_fixture(dir.path(), "v1-json-plain.sav", "slot-001.sav.v1.bak");
    for path in [backup, kept] {
        savegame()
            .arg("inspect")
            .arg(&path)
            .assert()
            .code(0)
            .stdout(predicates::str::contains("schema version  1"));
    }
}

#[test]
fn a_file_kind_the_tool_does_not_know_is_reported_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("v3-json-plain.sav")).unwrap();
    bytes[13] = 7; // the file kind byte: not a save
    fix_crc(&mut bytes);
    let path = write(dir.path(), "replay.sgr", &bytes);
    let output = savegame().arg("inspect").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr_of(&output);
    assert!(
        err.contains("file kind 7 is not a kind this tool reads"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let output = savegame()
        .args(["list", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(rows[0]["status"], "unknown kind", "{rows}");
}

#[test]
fn a_newer_format_version_is_refused_with_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("v3-json-plain.sav")).unwrap();
    let newer = savegame::format::FORMAT_VERSION + 1;
    bytes[8..10].copy_from_slice(&newer.to_le_bytes());
    fix_crc(&mut bytes);
    let path = write(dir.path(), "future.sav", &bytes);
    savegame()
        .arg("inspect")
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("[UnsupportedFormat]"));
}

#[test]
fn a_newer_schema_is_still_inspected() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "newer.sav",
        &newer_schema("v3-msgpack-plain.sav"),
    );
    savegame()
        .arg("inspect")
        .arg(&path)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("schema version  9"));
}

#[test]
fn metadata_is_shown_and_hostile_text_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let (header, snapshot) = open(
        std::fs::read(fixture("v3-msgpack-plain.sav")).unwrap(),
        None,
    );
    let snapshot = snapshot
        .with_label("boss\n\u{1b}[2J")
        .with_user_field("chapter", "7")
        .with_thumbnail(vec![1, 2, 3]);
    let bytes = snapshot.seal_file(header.slot, 3, 4, None).unwrap();
    let path = write(dir.path(), "slot-001.sav", &bytes);
    let output = savegame().arg("inspect").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout_of(&output);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    for line in [
        r#"label           "boss\n\u{1b}[2J""#,
        r#"user fields     "chapter"="7""#,
        "thumbnail       3 bytes",
        "generation      4",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}
