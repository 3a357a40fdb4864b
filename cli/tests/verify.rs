//! `savegame verify FILE...`: the full check, one line per file.

mod common;

use common::*;

#[test]
fn every_fixture_verifies_with_the_key_one_line_each() {
    let output = savegame()
        .arg("verify")
        .args(FIXTURES.map(fixture))
        .arg("--key-file")
        .arg(key_file())
        // The fixtures mix plain and sealed files: with a key, plain ones need leave.
        .arg("--allow-plain")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stdout_of(&output));
    let text = stdout_of(&output);
    assert_eq!(text.lines().count(), FIXTURES.len(), "{text}");
    for (line, name) in text.lines().zip(FIXTURES) {
        assert!(line.starts_with("ok    "), "{line}");
        assert!(line.contains(name), "{line}");
        let mementos = if name.starts_with("v1") || name.starts_with("v2") {
            2
        } else if name.contains("pieces") {
            // The v3 state and its `scenery`.
            4
        } else {
            3
        };
        assert!(line.contains(&format!("{mementos} memento(s)")), "{line}");
        let protection = if name.contains("-aes") {
            "encrypted"
        } else if name.contains("-hmac") {
            "authenticated"
        } else {
            "plain"
        };
        assert!(line.contains(&format!(", {protection}, ")), "{line}");
    }
}

#[test]
fn with_migrations_each_older_file_is_migrated_in_memory() {
    let output = savegame()
        .arg("verify")
        .args(FIXTURES.map(fixture))
        .arg("--key-file")
        .arg(key_file())
        .arg("--allow-plain")
        .arg("--migrations")
        .arg(migrations())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout_of(&output);
    for (line, name) in text.lines().zip(FIXTURES) {
        let expected = match &name[..2] {
            "v1" => "migrates to 3 (2 step(s))",
            "v2" => "migrates to 3 (1 step(s))",
            _ => "current with the steps",
        };
        assert!(line.ends_with(expected), "{line}");
    }
}

#[test]
fn bad_files_fail_with_their_kind_and_the_rest_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let full = std::fs::read(fixture("v2-msgpack-plain.sav")).unwrap();
    let flipped = write(
        d,
        "flipped.sav",
        &bit_flipped("v2-msgpack-plain.sav", 500, 6),
    );
    let truncated = write(d, "truncated.sav", &full[..full.len() / 2]);
    let trailing = write(d, "trailing.sav", &[full.as_slice(), b"xx"].concat());
    let good = fixture("v2-msgpack-plain.sav");
    let output = savegame()
        .arg("verify")
        .args([&flipped, &good, &truncated, &trailing])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout_of(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("FAIL  ") && lines[0].ends_with("[ChecksumMismatch]"));
    assert!(lines[0].contains("flipped.sav"), "{}", lines[0]);
    assert!(lines[1].starts_with("ok    "), "{}", lines[1]);
    for line in &lines[2..] {
        assert!(line.starts_with("FAIL  "), "{line}");
        assert!(
            line.ends_with("[ChecksumMismatch]") || line.ends_with("[Malformed]"),
            "{line}"
        );
    }
}

#[test]
fn a_wrong_key_is_decrypt_and_no_key_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = write(dir.path(), "wrong.hex", "00".repeat(32).as_bytes());
    let file = fixture("v1-msgpack-aes.sav");
    savegame()
        .arg("verify")
        .arg(&file)
        .arg("--key-file")
        .arg(&wrong)
        .assert()
        .code(1)
        .stdout(predicates::str::ends_with("could not decrypt [Decrypt]\n"));
    savegame()
        .arg("verify")
        .arg(&file)
        .assert()
        .code(2)
        .stdout(predicates::str::contains("[KeyRequired]"));
    // A bad file outweighs a missing key.
    let bad = write(dir.path(), "bad.sav", b"nope");
    savegame()
        .arg("verify")
        .arg(&file)
        .arg(&bad)
        .assert()
        .code(1);
}

#[test]
fn a_tampered_header_with_a_fixed_crc_fails_to_decrypt() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("v3-json-aes.sav")).unwrap();
    bytes[24] ^= 1; // the generation: associated data
    fix_crc(&mut bytes);
    let path = write(dir.path(), "tampered.sav", &bytes);
    savegame()
        .arg("verify")
        .arg(&path)
        .arg("--key-file")
        .arg(key_file())
        .assert()
        .code(1)
        .stdout(predicates::str::contains("[Decrypt]"));
}

#[test]
fn a_newer_schema_passes_alone_and_fails_against_the_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "newer.sav", &newer_schema("v3-msgpack-aes.sav"));
    savegame()
        .arg("verify")
        .arg(&path)
        .arg("--key-file")
        .arg(key_file())
        .assert()
        .code(0)
        .stdout(predicates::str::contains("schema 9"));
    savegame()
        .arg("verify")
        .arg(&path)
        .arg("--key-file")
        .arg(key_file())
        .arg("--migrations")
        .arg(migrations())
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "save schema version 9 is newer than this game's version 3 [NewerSchema]",
        ));
}

#[test]
fn a_broken_migrations_folder_is_reported_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::write(steps.join("0002_bad.json"), r#"[{"op": "teleport"}]"#).unwrap();
    let output = savegame()
        .arg("verify")
        .arg(fixture("v1-json-plain.sav"))
        .arg("--migrations")
        .arg(&steps)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr_of(&output);
    assert!(
        err.contains("0002_bad.json") && err.trim_end().ends_with("[StepFile]"),
        "{err}"
    );
    assert!(output.stdout.is_empty());

    // A gap in the chain.
    std::fs::write(steps.join("0002_bad.json"), "[]").unwrap();
    std::fs::write(steps.join("0004_later.json"), "[]").unwrap();
    savegame()
        .arg("verify")
        .arg(fixture("v1-json-plain.sav"))
        .arg("--migrations")
        .arg(&steps)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("[MigrationChain]"));
}

#[test]
fn a_step_that_fails_on_a_file_names_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::write(
        steps.join("0002_needs_mana.json"),
        r#"[{"op": "remove", "path": "/player/mana"}]"#,
    )
    .unwrap();
    savegame()
        .arg("verify")
        .arg(fixture("v1-json-plain.sav"))
        .arg("--migrations")
        .arg(&steps)
        .assert()
        .code(1)
        .stdout(
            predicates::str::contains("needs_mana").and(predicates::str::contains("[Migration]")),
        );
}

use predicates::prelude::PredicateBooleanExt as _;

/// `--schema N` for saves too: at or below it they verify and inspect as without it; above
/// it they are newer (exit 1). Without it, a save's schema version is not held against it.
#[test]
fn verify_and_inspect_hold_files_against_the_games_schema_only_with_schema() {
    let plain = [
        "v1-json-plain.sav",
        "v2-json-plain.sav",
        "v3-msgpack-plain.sav",
    ]
    .map(fixture);
    for schema in [None, Some("3"), Some("7")] {
        let mut cmd = savegame();
        cmd.arg("verify").args(&plain);
        if let Some(n) = schema {
            cmd.args(["--schema", n]);
        }
        let output = cmd.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{schema:?}: {}",
            stdout_of(&output)
        );
        assert!(stdout_of(&output).lines().all(|l| l.starts_with("ok    ")));
    }
    let output = savegame()
        .args(["verify", "--schema", "2"])
        .args(&plain)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout_of(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("ok    ") && lines[1].starts_with("ok    "),
        "{text}"
    );
    assert!(
        lines[2].starts_with("FAIL  ") && lines[2].ends_with("[NewerSchema]"),
        "{text}"
    );

    let v3 = fixture("v3-msgpack-plain.sav");
    for (schema, code, shown) in [
        ("3", 0, "schema version  3\n"),
        (
            "2",
            1,
            "schema version  3 (newer than the game's 2) [NewerSchema]\n",
        ),
    ] {
        let output = savegame()
            .args(["inspect", "--schema", schema])
            .arg(&v3)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(code), "{}", stdout_of(&output));
        assert!(stdout_of(&output).contains(shown), "{}", stdout_of(&output));
        assert!(stdout_of(&output).contains("crc32           ok"));
    }
}

#[test]
fn integrity_only_files_are_checked_with_the_key_and_refused_when_edited() {
    let hmac = fixture("format2-v3-json-hmac.sav");
    // With the key: checked, and named.
    let out = savegame()
        .arg("verify")
        .arg(&hmac)
        .arg("--key-file")
        .arg(key_file())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains("authenticated"),
        "{}",
        stdout_of(&out)
    );
    // Without it: the tag cannot be checked, so verify needs the key (exit 2).
    let out = savegame().arg("verify").arg(&hmac).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout_of(&out));
    assert!(
        stdout_of(&out).contains("[KeyRequired]"),
        "{}",
        stdout_of(&out)
    );
    // An edit with the CRC fixed: tampered (exit 1).
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(&hmac).unwrap();
    let at = bytes.windows(9).position(|w| w == br#""health":"#).unwrap() + 9;
    bytes[at] = if bytes[at] == b'9' { b'8' } else { b'9' };
    fix_crc(&mut bytes);
    let edited = write(dir.path(), "edited.sav", &bytes);
    let out = savegame()
        .arg("verify")
        .arg(&edited)
        .arg("--key-file")
        .arg(key_file())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    assert!(
        stdout_of(&out).contains("[Tampered]"),
        "{}",
        stdout_of(&out)
    );
}

#[test]
fn inspect_and_dump_read_an_integrity_only_file_without_the_key_and_say_it_was_not_checked() {
    let hmac = fixture("format2-mementos-json-hmac.sav");
    let out = savegame().arg("inspect").arg(&hmac).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("format version  2"), "{text}");
    assert!(text.contains("authenticated   yes (HMAC-SHA256"), "{text}");
    assert!(text.contains("tag             not checked"), "{text}");
    assert!(text.contains("(memento version 3)"), "{text}");
    let out = savegame()
        .arg("inspect")
        .arg(&hmac)
        .arg("--key-file")
        .arg(key_file())
        .output()
        .unwrap();
    assert!(
        stdout_of(&out).contains("tag             ok"),
        "{}",
        stdout_of(&out)
    );
    let out = savegame().arg("dump").arg(&hmac).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("without checking its tag"),
        "{}",
        stderr_of(&out)
    );
    let dump: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dump["authenticated"], true);
    assert_eq!(dump["memento_versions"]["world"], 3);
    assert_eq!(dump["memento_versions"]["player"], serde_json::Value::Null);
    assert_eq!(
        dump["memento_versions"].as_object().unwrap().len(),
        1,
        "{dump}"
    );
}

#[test]
fn with_a_key_an_integrity_only_file_stripped_of_its_flag_fails_verify() {
    // Issue 26, hole 1: on 1c7407f `verify` with the key printed "ok … plain" and exited 0.
    let dir = tempfile::tempdir().unwrap();
    let stripped = write(
        dir.path(),
        "stripped.sav",
        &savegame_testkit::stripped_hmac_fixture(),
    );
    let forged = write(
        dir.path(),
        "forged.sav",
        &savegame_testkit::forged_plain_from_hmac_fixture(),
    );
    let verify = |file: &std::path::Path, allow_plain: bool| {
        let mut cmd = savegame();
        cmd.arg("verify")
            .arg(file)
            .arg("--key-file")
            .arg(key_file());
        if allow_plain {
            cmd.arg("--allow-plain");
        }
        let out = cmd.output().unwrap();
        (out.status.code(), stdout_of(&out))
    };
    for file in [&stripped, &forged] {
        let (code, text) = verify(file, false);
        assert_eq!(code, Some(1), "{text}");
        assert!(text.starts_with("FAIL  "), "{text}");
        assert!(text.contains("[NotEncrypted]"), "{text}");
    }
    // Plain files allowed: the stripped one still fails (its tag is left after its document);
    // the forged one is a plain file, and verify says so.
    let (code, text) = verify(&stripped, true);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("[Malformed]"), "{text}");
    let (code, text) = verify(&forged, true);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(", plain, "), "{text}");
    // A plain fixture with a key is refused the same way, as a game with a key refuses it.
    let (code, text) = verify(&fixture("format2-v3-json-plain.sav"), false);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("[NotEncrypted]"), "{text}");
}

#[test]
fn without_a_key_an_integrity_only_file_is_not_called_encrypted() {
    // Issue 26, hole 5: on 1c7407f this said "the save is encrypted and no key was given".
    let out = savegame()
        .arg("verify")
        .arg(fixture("format2-v3-json-hmac.sav"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.contains("integrity-only (readable), and no key was given to check its tag"),
        "{text}"
    );
    assert!(!text.contains("encrypted"), "{text}");
    assert!(text.contains("[KeyRequired]"), "{text}");
    let out = savegame()
        .arg("verify")
        .arg(fixture("format2-v3-json-aes.sav"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout_of(&out).contains("the save is encrypted, and no key was given to decrypt it"),
        "{}",
        stdout_of(&out)
    );
}

/// Issue 26, required 1: every command that opens a save takes the same decision as verify.
/// With a key, the integrity-only fixture stripped of its flag (and the same file edited) is
/// refused by each of them, and none changes it. (`migrate` of a file already at the current
/// version said "nothing to do" and exited 0 without opening it.)
#[test]
fn with_a_key_every_command_refuses_the_stripped_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = copy_fixture(dir.path(), "format2-v3-json-hmac.sav", "good.sav");
    let steps = migrations();
    for (name, bytes) in [
        ("stripped.sav", savegame_testkit::stripped_hmac_fixture()),
        (
            "forged.sav",
            savegame_testkit::forged_plain_from_hmac_fixture(),
        ),
    ] {
        let file = write(dir.path(), name, &bytes);
        let files = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        let before = files();
        let commands: [Vec<&std::ffi::OsStr>; 5] = [
            vec!["dump".as_ref(), file.as_os_str()],
            vec!["schema".as_ref(), file.as_os_str()],
            vec!["diff".as_ref(), good.as_os_str(), file.as_os_str()],
            vec![
                "migrate".as_ref(),
                file.as_os_str(),
                "--migrations".as_ref(),
                steps.as_os_str(),
            ],
            vec![
                "migrate".as_ref(),
                file.as_os_str(),
                "--migrations".as_ref(),
                steps.as_os_str(),
                "--dry-run".as_ref(),
            ],
        ];
        for args in commands {
            let out = savegame()
                .arg("--key-file")
                .arg(key_file())
                .args(&args)
                .output()
                .unwrap();
            let said = format!(
                "{}{}",
                stdout_of(&out),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_ne!(
                out.status.code(),
                Some(0),
                "{args:?} accepted {name}: {said}"
            );
            assert!(
                said.contains("neither encrypted nor integrity-only")
                    || said.contains("NotEncrypted")
                    || said.contains("not encrypted"),
                "{args:?} on {name} did not say why: {said}"
            );
            assert_eq!(
                std::fs::read(&file).unwrap(),
                bytes,
                "{args:?} changed {name}"
            );
            assert_eq!(files(), before, "{args:?} wrote a file");
        }
    }
}
