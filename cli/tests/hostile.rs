//! Hostile files: no panic, no huge allocation, one clean line and exit 1.

mod common;

use std::path::Path;

use common::*;
use savegame::{Codec, SlotId, Snapshot};

/// Runs every reading command on `file` and checks each ends cleanly with `code` (or any of
/// 0, 1, 2 when `code` is `None`), without a panic.
fn every_reader(file: &Path, code: Option<i32>) {
    let runs: [&[&str]; 4] = [
        &["inspect"],
        &["verify"],
        &["dump"],
        &["migrate", "--dry-run", "--migrations"],
    ];
    for args in runs {
        let mut cmd = savegame();
        cmd.arg(args[0]).arg(file).args(&args[1..]);
        if args[0] == "migrate" {
            cmd.arg(migrations());
        }
        let output = cmd.output().unwrap();
        let err = stderr_of(&output);
        assert!(!err.contains("panicked"), "{args:?} on {file:?}: {err}");
        let got = output.status.code();
        match code {
            Some(code) => assert_eq!(got, Some(code), "{args:?} on {file:?}: {err}"),
            None => assert!(matches!(got, Some(0..=2)), "{args:?}: {got:?} {err}"),
        }
        assert!(err.lines().count() <= 1, "{args:?}: {err}");
    }
}

#[test]
fn lengths_that_claim_everything_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    // A v1 file, so that `migrate` has steps to run and must open it.
    let clean = std::fs::read(fixture("v1-json-plain.sav")).unwrap();
    for (name, at, value) in [
        ("metadata.sav", 40, u32::MAX.to_le_bytes().to_vec()),
        ("payload.sav", 44, u64::MAX.to_le_bytes().to_vec()),
        ("toc.sav", 85, u32::MAX.to_le_bytes().to_vec()), // the table of contents' count
    ] {
        let mut bytes = clean.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        fix_crc(&mut bytes);
        let file = write(dir.path(), name, &bytes);
        every_reader(&file, Some(1));
        savegame()
            .arg("verify")
            .arg(&file)
            .assert()
            .stdout(predicates::str::contains("[Malformed]"));
    }
}

/// A plain MessagePack save whose memento `m` is `bytes`, whatever they are.
fn save_with_raw_memento(bytes: Vec<u8>) -> Vec<u8> {
    let mut snapshot = Snapshot::new(Codec::MessagePack);
    snapshot.insert_raw("m", bytes).unwrap();
    snapshot.seal_file(SlotId::Numbered(1), 1, 1, None).unwrap()
}

#[test]
fn mementos_that_claim_billions_of_elements_or_nest_too_deep_are_decode_errors() {
    let dir = tempfile::tempdir().unwrap();
    let huge_array = vec![0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0];
    let huge_map = vec![0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0];
    let huge_str = vec![0xdb, 0xff, 0xff, 0xff, 0xff, b'a'];
    let mut deep = vec![0x91; 10_000];
    deep.push(0xc0);
    for (name, memento) in [
        ("array.sav", huge_array),
        ("map.sav", huge_map),
        ("str.sav", huge_str),
        ("deep.sav", deep),
    ] {
        let file = write(dir.path(), name, &save_with_raw_memento(memento));
        savegame().arg("verify").arg(&file).assert().code(1).stdout(
            predicates::str::contains("could not decode memento \"m\"")
                .and(predicates::str::ends_with("[Decode]\n")),
        );
        savegame()
            .arg("dump")
            .arg(&file)
            .assert()
            .code(1)
            .stderr(predicates::str::contains("[Decode]"));
        // Inspect does not decode mementos: it shows the file.
        savegame().arg("inspect").arg(&file).assert().code(0);
    }
}

#[test]
fn a_file_over_the_size_cap_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.sav");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(300 << 20).unwrap(); // sparse: costs no disk
    drop(file);
    every_reader(&path, Some(1));
    savegame()
        .arg("inspect")
        .arg(&path)
        .assert()
        .stderr(predicates::str::contains(
            "over the 268435456-byte cap [TooLarge]",
        ));
    let output = savegame()
        .args(["list", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(rows[0]["status"], "corrupt", "{rows}");
}

#[test]
fn a_huge_dump_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(2 << 30).unwrap();
    drop(file);
    savegame()
        .arg("pack")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("x.sav"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("[TooLarge]"));
}

#[test]
fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..60 {
        let name = FIXTURES[round % FIXTURES.len()];
        let mut bytes = std::fs::read(fixture(name)).unwrap();
        for _ in 0..1 + next() % 4 {
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = next() as u8;
        }
        if round % 3 == 0 {
            // Damage that the CRC does not catch: only the parsers stand in the way.
            fix_crc(&mut bytes);
        }
        if round % 7 == 0 {
            bytes.truncate((next() % bytes.len() as u64) as usize);
        }
        let file = write(dir.path(), "damaged.sav", &bytes);
        every_reader(&file, None);
    }
}

use predicates::prelude::PredicateBooleanExt as _;
