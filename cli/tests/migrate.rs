//! `savegame migrate FILE --migrations DIR`: declarative steps without the game's code,
//! written crash-safely with the old file kept.

mod common;

use std::path::Path;

use common::*;
use savegame::{Key, Migrations, SaveLoadManager, SlotId};

/// Every file in `dir` with its bytes: to show that nothing changed.
fn snapshot_of_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    names_in(dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

fn with_key(cmd: &mut assert_cmd::Command, name: &str) {
    if name.contains("-aes") {
        cmd.arg("--key-file").arg(key_file());
    }
}

/// A manager at schema 3 over `dir`, with or without the repository's steps.
fn game(dir: &Path, key: Option<Key>, steps: bool) -> SaveLoadManager {
    let mut b = SaveLoadManager::builder().directory(dir).schema_version(3);
    if steps {
        b = b.migrations(Migrations::from_dir(migrations()).unwrap());
    }
    match key {
        Some(key) => b.key(key),
        None => b,
    }
    .build()
    .unwrap()
}

#[test]
fn dry_run_lists_the_steps_and_the_paths_they_touch_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_fixture(dir.path(), "v1-msgpack-plain.sav", "slot-001.sav");
    let before = snapshot_of_dir(dir.path());
    let output = savegame()
        .arg("migrate")
        .arg(&file)
        .arg("--migrations")
        .arg(migrations())
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    for needle in [
        "schema version 1 -> 3, 2 step(s)",
        "step 2: rename_hp_position_stamina (0002_rename_hp_position_stamina.json, checksum ",
        "      move /player/hp -> /player/health",
        "      add_if_absent /player/stamina",
        "step 3: split_inventory_kind_ids (0003_split_inventory_kind_ids.json",
        "      move /player/inventory -> /inventory",
        "      map /world/entities/*/kind",
        "dry run: the steps run cleanly on this file; nothing written",
    ] {
        assert!(text.contains(needle), "{needle:?} in\n{text}");
    }
    assert_eq!(snapshot_of_dir(dir.path()), before, "not even a lock file");
}

/// `migrate --dry-run` used to exit 0 on an encrypted file without a key ("the steps were
/// not run"), though a missing key is exit 2 everywhere else, a real run included.
#[test]
fn dry_run_on_an_encrypted_file_without_a_key_lists_the_plan_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_fixture(dir.path(), "v2-json-aes.sav", "slot-001.sav");
    let before = snapshot_of_dir(dir.path());
    for dry_run in [true, false] {
        let mut cmd = savegame();
        cmd.arg("migrate")
            .arg(&file)
            .arg("--migrations")
            .arg(migrations());
        if dry_run {
            cmd.arg("--dry-run");
        }
        let output = cmd.output().unwrap();
        let (out, err) = (stdout_of(&output), stderr_of(&output));
        assert_eq!(
            output.status.code(),
            Some(2),
            "dry run {dry_run}: {out}{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(
                "the save is encrypted, and no key was given to decrypt it (use --key-file or \
                 SAVEGAME_KEY)"
            ),
            "{err}"
        );
        assert!(err.trim_end().ends_with("[KeyRequired]"), "{err}");
        if dry_run {
            // The plan needs no key: it is still listed.
            assert!(out.contains("schema version 2 -> 3, 1 step(s)"), "{out}");
            assert!(
                err.contains("the steps were not run; nothing written"),
                "{err}"
            );
            assert!(!out.contains("run cleanly"), "{out}");
        }
        assert_eq!(snapshot_of_dir(dir.path()), before, "nothing written");
    }
}

#[test]
fn every_older_fixture_migrates_to_what_the_game_itself_would_load() {
    for name in FIXTURES
        .iter()
        .filter(|n| n.starts_with("v1") || n.starts_with("v2"))
    {
        let key = key_for(name);
        let work = tempfile::tempdir().unwrap();
        let file = copy_fixture(work.path(), name, "slot-001.sav");
        let mut cmd = savegame();
        cmd.arg("migrate")
            .arg(&file)
            .arg("--migrations")
            .arg(migrations());
        with_key(&mut cmd, name);
        let output = cmd.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            stderr_of(&output)
        );
        let from: u32 = name[1..2].parse().unwrap();
        let text = stdout_of(&output);
        assert!(
            text.contains(&format!("kept the schema {from} file as"))
                && text.contains("at schema version 3"),
            "{text}"
        );

        // The old file is kept byte for byte under the library's pre-migration name.
        let kept = work.path().join(format!("slot-001.sav.v{from}.bak"));
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            std::fs::read(fixture(name)).unwrap(),
            "{name}"
        );
        let listed: Vec<String> = names_in(work.path())
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .collect();
        assert_eq!(
            listed,
            [
                "slot-001.sav".to_owned(),
                format!("slot-001.sav.v{from}.bak")
            ]
        );

        // The migrated file loads in a game at schema 3 without running any step, and holds
        // what the game makes of the old file with its own steps.
        let migrated = game(work.path(), key.clone(), false)
            .load(SlotId::Numbered(1))
            .unwrap();
        assert_eq!(migrated.report.migrated_from, None, "{name}");
        assert_eq!(migrated.report.header.schema_version, 3);
        assert_eq!(migrated.report.header.generation, 2);
        assert_eq!(migrated.report.header.encrypted, key.is_some());
        let reference_dir = tempfile::tempdir().unwrap();
        copy_fixture(reference_dir.path(), name, "slot-001.sav");
        let reference = game(reference_dir.path(), key.clone(), true)
            .load(SlotId::Numbered(1))
            .unwrap();
        assert_eq!(reference.report.migrated_from, Some(from));
        let ids: Vec<&str> = reference.snapshot.ids().collect();
        assert_eq!(migrated.snapshot.ids().collect::<Vec<_>>(), ids, "{name}");
        for id in ids {
            assert_eq!(
                migrated.snapshot.raw(id),
                reference.snapshot.raw(id),
                "{name}: {id}"
            );
        }
        let mut m = migrated.snapshot.metadata().clone();
        let mut r = reference.snapshot.metadata().clone();
        (m.saved_at, r.saved_at) = (None, None);
        assert_eq!(m, r, "{name}: metadata is kept");
    }
}

#[test]
fn to_stops_at_the_version_asked_for() {
    let work = tempfile::tempdir().unwrap();
    let file = copy_fixture(work.path(), "v1-json-plain.sav", "save.sav");
    savegame()
        .arg("migrate")
        .arg(&file)
        .args(["--to", "2", "--migrations"])
        .arg(migrations())
        .assert()
        .code(0);
    let (header, snapshot) = open(std::fs::read(&file).unwrap(), None);
    assert_eq!(header.schema_version, 2);
    assert!(snapshot.contains("player") && !snapshot.contains("inventory"));
    // Once more: now from 2 to 3, keeping the v2 file too.
    savegame()
        .arg("migrate")
        .arg(&file)
        .arg("--migrations")
        .arg(migrations())
        .assert()
        .code(0);
    assert!(work.path().join("save.sav.v1.bak").exists());
    assert!(work.path().join("save.sav.v2.bak").exists());
    let (header, _) = open(std::fs::read(&file).unwrap(), None);
    assert_eq!(header.schema_version, 3);
    // And once more: nothing to do.
    savegame()
        .arg("migrate")
        .arg(&file)
        .arg("--migrations")
        .arg(migrations())
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "already at schema version 3; nothing to do",
        ));
}

/// Runs a migrate that must fail, and checks that it changed nothing.
fn refused(bytes: &[u8], args: &[&str], steps: &Path, code: i32, kind: &str) -> (String, String) {
    let work = tempfile::tempdir().unwrap();
    let file = write(work.path(), "slot-001.sav", bytes);
    let before = snapshot_of_dir(work.path());
    let output = savegame()
        .arg("migrate")
        .arg(&file)
        .arg("--migrations")
        .arg(steps)
        .args(args)
        .output()
        .unwrap();
    let err = stderr_of(&output);
    assert_eq!(output.status.code(), Some(code), "{err}");
    assert!(err.trim_end().ends_with(kind), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        snapshot_of_dir(work.path()),
        before,
        "{err}: nothing may change"
    );
    (stdout_of(&output), err)
}

#[test]
fn bad_newer_and_locked_files_are_refused_and_left_alone() {
    let full = std::fs::read(fixture("v1-msgpack-aes.sav")).unwrap();
    let key = key_file();
    let key = key.to_str().unwrap();
    let steps = migrations();
    refused(
        &bit_flipped("v1-msgpack-aes.sav", 400, 2),
        &["--key-file", key],
        &steps,
        1,
        "[ChecksumMismatch]",
    );
    refused(
        &full[..full.len() - 7],
        &["--key-file", key],
        &steps,
        1,
        "[ChecksumMismatch]",
    );
    refused(&full[..40], &["--key-file", key], &steps, 1, "[Malformed]");
    refused(
        &newer_schema("v3-msgpack-aes.sav"),
        &["--key-file", key],
        &steps,
        1,
        "[NewerSchema]",
    );
    refused(&full, &[], &steps, 2, "[KeyRequired]");
    let dir = tempfile::tempdir().unwrap();
    let wrong = write(dir.path(), "wrong.key", &[5u8; 32]);
    refused(
        &full,
        &["--key-file", wrong.to_str().unwrap()],
        &steps,
        1,
        "[Decrypt]",
    );
    refused(
        &full,
        &["--key-file", key, "--to", "4"],
        &steps,
        1,
        "[NoMigrationPath]",
    );
    // Dry runs of bad files fail the same way.
    refused(
        &bit_flipped("v1-msgpack-aes.sav", 400, 2),
        &["--dry-run"],
        &steps,
        1,
        "[ChecksumMismatch]",
    );
    refused(
        &newer_schema("v3-msgpack-aes.sav"),
        &["--dry-run"],
        &steps,
        1,
        "[NewerSchema]",
    );
}

#[test]
fn a_failing_step_names_itself_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::copy(
        migrations().join("0002_rename_hp_position_stamina.json"),
        steps.join("0002_rename_hp_position_stamina.json"),
    )
    .unwrap();
    std::fs::write(
        steps.join("0003_needs_mana.json"),
        r#"[{"op": "move", "from": "/player/mana", "path": "/player/magic"}]"#,
    )
    .unwrap();
    let bytes = std::fs::read(fixture("v1-json-plain.sav")).unwrap();
    let (_, err) = refused(&bytes, &[], &steps, 1, "[Migration]");
    assert!(
        err.contains("\"needs_mana\"") && err.contains("/player/mana"),
        "{err}"
    );
    let (out, err) = refused(&bytes, &["--dry-run"], &steps, 1, "[Migration]");
    assert!(
        out.contains("step 3: needs_mana"),
        "the plan is still shown: {out}"
    );
    assert!(err.contains("needs_mana"), "{err}");
}

#[test]
fn an_existing_foreign_pre_migration_copy_is_not_overwritten() {
    let work = tempfile::tempdir().unwrap();
    let file = copy_fixture(work.path(), "v1-json-plain.sav", "slot-001.sav");
    let other = copy_fixture(work.path(), "v1-msgpack-plain.sav", "slot-001.sav.v1.bak");
    let output = savegame()
        .arg("migrate")
        .arg(&file)
        .arg("--migrations")
        .arg(migrations())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).contains("[BackupExists]"),
        "{}",
        stderr_of(&output)
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(fixture("v1-json-plain.sav")).unwrap()
    );
    assert_eq!(
        std::fs::read(&other).unwrap(),
        std::fs::read(fixture("v1-msgpack-plain.sav")).unwrap()
    );
}

#[test]
fn a_migrations_folder_without_steps_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    savegame()
        .arg("migrate")
        .arg(fixture("v1-json-plain.sav"))
        .arg("--migrations")
        .arg(dir.path())
        .arg("--dry-run")
        .assert()
        .code(1)
        .stderr(predicates::str::contains("holds no migration step files"));
}
