//! The command line itself: help, exit codes for usage errors, and keys.

mod common;

use common::*;

const COMMANDS: [&str; 7] = [
    "list", "inspect", "verify", "dump", "pack", "migrate", "diff",
];

#[test]
fn help_documents_every_command_and_the_exit_codes() {
    let output = savegame().arg("--help").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout_of(&output);
    for command in COMMANDS {
        assert!(
            text.contains(&format!("  {command} ")),
            "{command} in\n{text}"
        );
    }
    for line in [
        "Exit codes:",
        "  0  ok",
        "  1  a file is bad",
        "  2  usage",
        "SAVEGAME_KEY",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    for command in COMMANDS {
        let output = savegame().args([command, "--help"]).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{command}");
        let text = stdout_of(&output);
        assert!(text.contains("Exit codes:"), "{command}:\n{text}");
        assert!(text.contains("--key-file <K>"), "{command}:\n{text}");
    }
    savegame().arg("--version").assert().code(0);
}

#[test]
fn usage_errors_exit_2() {
    let json = fixture("v1.expected.json");
    let json = json.to_str().unwrap();
    let sav = fixture("v1-json-plain.sav");
    let sav = sav.to_str().unwrap();
    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["list"],
        vec!["inspect"],
        vec!["verify"],
        vec!["dump"],
        vec!["pack", json],
        vec![
            "pack",
            json,
            "--out",
            "/nonexistent/x.sav",
            "--codec",
            "yaml",
        ],
        vec!["pack", json, "--out", "/nonexistent/x.sav", "--schema", "0"],
        vec!["migrate", sav],
        vec!["migrate", sav, "--migrations", "m", "--to", "zero"],
        vec!["list", ".", "--schema", "-1"],
        vec!["verify", sav, "--schema", "0"],
        vec!["inspect", sav, "--schema", "x"],
        vec!["dump", sav, "--key", "00"],
        vec!["diff", sav],
        vec!["diff", sav, sav, "--context", "3"],
        vec![
            "pack",
            json,
            "--out",
            "/nonexistent/x.sav",
            "--slot",
            "slot 1",
        ],
    ] {
        let output = savegame().args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr_of(&output)
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn key_files_hold_32_raw_bytes_or_64_hex_digits() {
    let dir = tempfile::tempdir().unwrap();
    let hex = std::fs::read_to_string(key_file()).unwrap();
    let raw: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let raw_file = write(dir.path(), "raw.key", &raw);
    let hex_newline = write(
        dir.path(),
        "hex.key",
        format!("{}\n", hex.trim()).as_bytes(),
    );
    for key in [raw_file, hex_newline, key_file()] {
        savegame()
            .arg("verify")
            .arg(fixture("v2-msgpack-aes.sav"))
            .arg("--key-file")
            .arg(&key)
            .assert()
            .code(0);
    }
}

#[test]
fn a_key_file_that_is_not_a_key_is_a_usage_error_that_does_not_echo_it() {
    let dir = tempfile::tempdir().unwrap();
    let secretish = "c0ffee".repeat(10); // 60 hex digits: not a key
    for (name, bytes) in [
        ("short.key", secretish.as_bytes().to_vec()),
        ("31.key", vec![0xAB; 31]),
        ("notes.key", b"password123".to_vec()),
    ] {
        let key = write(dir.path(), name, &bytes);
        let output = savegame()
            .arg("dump")
            .arg(fixture("v1-json-aes.sav"))
            .arg("--key-file")
            .arg(&key)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}");
        let err = stderr_of(&output);
        assert!(err.contains(name) && err.contains("not a key"), "{err}");
        assert!(
            !err.contains("c0ffee") && !err.contains("password"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let missing = dir.path().join("missing.key");
    let output = savegame()
        .arg("dump")
        .arg(fixture("v1-json-aes.sav"))
        .arg("--key-file")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr_of(&output).contains("cannot read the key file"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn the_key_can_come_from_savegame_key_and_a_key_file_wins_over_it() {
    let hex = std::fs::read_to_string(key_file()).unwrap();
    savegame()
        .env("SAVEGAME_KEY", hex.trim())
        .arg("verify")
        .arg(fixture("v3-json-aes.sav"))
        .assert()
        .code(0);
    let output = savegame()
        .env("SAVEGAME_KEY", "not hex at all, and secret")
        .arg("verify")
        .arg(fixture("v3-json-aes.sav"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr_of(&output);
    assert!(
        err.contains("SAVEGAME_KEY is set but is not 64 hexadecimal digits"),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    // The key file wins: a wrong environment key is never looked at.
    savegame()
        .env("SAVEGAME_KEY", "00".repeat(32))
        .arg("verify")
        .arg(fixture("v3-json-aes.sav"))
        .arg("--key-file")
        .arg(key_file())
        .assert()
        .code(0);
}

#[test]
fn no_command_ever_prints_the_key() {
    let hex = std::fs::read_to_string(key_file()).unwrap();
    let hex = hex.trim().to_owned();
    let raw: String = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap() as char)
        .collect();
    let work = tempfile::tempdir().unwrap();
    let file = copy_fixture(work.path(), "v1-json-aes.sav", "slot-001.sav");
    let dump = work.path().join("d.json");
    let out = work.path().join("packed.sav");
    let sav = file.to_str().unwrap().to_owned();
    let runs: Vec<Vec<String>> = vec![
        vec!["list".into(), work.path().to_str().unwrap().into()],
        vec!["inspect".into(), sav.clone()],
        vec!["verify".into(), sav.clone()],
        vec!["dump".into(), sav.clone()],
        vec!["diff".into(), sav.clone(), sav.clone()],
        vec![
            "migrate".into(),
            sav.clone(),
            "--migrations".into(),
            migrations().to_str().unwrap().into(),
            "--dry-run".into(),
        ],
        vec![
            "migrate".into(),
            sav.clone(),
            "--migrations".into(),
            migrations().to_str().unwrap().into(),
        ],
    ];
    let mut outputs = Vec::new();
    for args in &runs {
        for with_env in [false, true] {
            let mut cmd = savegame();
            cmd.args(args);
            if with_env {
                cmd.env("SAVEGAME_KEY", &hex);
            } else {
                cmd.arg("--key-file").arg(key_file());
            }
            let output = cmd.output().unwrap();
            if args[0] == "dump" {
                std::fs::write(&dump, &output.stdout).unwrap();
            }
            outputs.push((args.clone(), output));
        }
    }
    let output = savegame()
        .arg("pack")
        .arg(&dump)
        .arg("--out")
        .arg(&out)
        .arg("--key-file")
        .arg(key_file())
        .output()
        .unwrap();
    outputs.push((vec!["pack".into()], output));
    for (args, output) in outputs {
        let all = format!("{}{}", stdout_of(&output), stderr_of(&output));
        assert!(!all.is_empty(), "{args:?}");
        for secret in [hex.as_str(), &hex.to_uppercase(), raw.as_str()] {
            assert!(!all.contains(secret), "{args:?} printed the key:\n{all}");
        }
    }
}

/// Every command that needs the key of an encrypted file exits 2 without it, with the same
/// message; `inspect` and `list` need no key and show what they can.
#[test]
fn a_missing_key_is_exit_2_for_every_command_that_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_fixture(dir.path(), "v1-msgpack-aes.sav", "slot-001.sav");
    let file = file.to_str().unwrap();
    let steps = migrations();
    let steps = steps.to_str().unwrap();
    let dump = dir.path().join("dump.json");
    for args in [
        vec!["verify", file],
        vec!["verify", file, "--migrations", steps],
        vec!["dump", file],
        vec!["diff", file, file],
        vec!["migrate", file, "--migrations", steps],
        vec!["migrate", file, "--migrations", steps, "--dry-run"],
    ] {
        let output = savegame().args(&args).output().unwrap();
        let (out, err) = (stdout_of(&output), stderr_of(&output));
        assert_eq!(output.status.code(), Some(2), "{args:?}: {out}{err}");
        let said = if args[0] == "verify" { &out } else { &err };
        assert!(said.contains("no key was given"), "{args:?}: {said}");
        assert!(
            said.trim_end().ends_with("[KeyRequired]"),
            "{args:?}: {said}"
        );
    }
    assert!(!dump.exists());
    let output = savegame().args(["inspect", file]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(stdout_of(&output).contains("give a key"));
    let output = savegame().arg("list").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(stdout_of(&output).contains("needs key"));
}
