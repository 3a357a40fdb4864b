//! `savegame schema FILE`: the versions of a save's mementos; `savegame schema diff OLD NEW`:
//! what changed between two committed schema files, and whether it is breaking (exit 1).

mod common;

use common::*;
use predicates::prelude::*;
use savegame::schema::{Field, Schema, SchemaFile, Type, TypeDef};

fn player(fields: Vec<Field>, version: u32) -> SchemaFile {
    SchemaFile {
        id: "player".into(),
        schema_version: 1,
        memento_version: version,
        schema: Schema::new(Type::Named("PlayerMemento".into()))
            .with_type("PlayerMemento", TypeDef::Struct(fields)),
    }
}

fn write_schema(dir: &std::path::Path, file: &SchemaFile) -> std::path::PathBuf {
    let path = dir.join(file.file_name());
    std::fs::write(&path, file.to_json()).unwrap();
    path
}

#[test]
fn schema_lists_each_memento_and_its_version() {
    savegame()
        .args(["schema"])
        .arg(fixture("format2-mementos-msgpack-plain.sav"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "schema version 3, MessagePack, format 2",
        ))
        .stdout(predicate::str::is_match(r"(?m)^player +1$").unwrap())
        .stdout(predicate::str::is_match(r"(?m)^world +3$").unwrap());
}

#[test]
fn schema_of_an_encrypted_save_needs_the_key() {
    savegame()
        .args(["schema"])
        .arg(fixture("format2-v3-json-aes.sav"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("KeyRequired"));
    savegame()
        .args(["--key-file"])
        .arg(key_file())
        .args(["schema"])
        .arg(fixture("format2-v3-json-aes.sav"))
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^inventory +1$").unwrap());
}

#[test]
fn schema_diff_exits_0_for_a_compatible_change_and_1_for_a_breaking_one() {
    let dir = tempfile::tempdir().unwrap();
    let old = write_schema(
        dir.path(),
        &player(vec![Field::new("health", Type::U32)], 1),
    );
    let optional = dir.path().join("optional.json");
    std::fs::write(
        &optional,
        player(
            vec![
                Field::new("health", Type::U32),
                Field::new("title", Type::parse("Option<String>").unwrap()).with_default(),
            ],
            1,
        )
        .to_json(),
    )
    .unwrap();
    // Breaking in bitcode, where every field is by position: exit 1 over every codec.
    savegame()
        .args(["schema", "diff"])
        .args([&old, &optional])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "/player/title: added (Option<String>; may be missing: old saves load it as its \
             default)  [breaking in bitcode; compatible in JSON, MessagePack]",
        ))
        .stdout(predicate::str::contains(
            "breaking in bitcode: old saves need a migration step",
        ));
    savegame()
        .args(["schema", "diff", "--codec", "msgpack"])
        .args([&old, &optional])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "compatible: old saves load in MessagePack",
        ));

    let renamed = write_schema(dir.path(), &player(vec![Field::new("hp", Type::U32)], 2));
    savegame()
        .args(["schema", "diff", "--codec", "json"])
        .args([&old, &renamed])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "/player/health: renamed to hp (u32): old saves' health would be dropped and hp \
             missing  [breaking in JSON]",
        ));
    savegame()
        .args(["schema", "diff"])
        .args([&old, &old])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "the same shape in JSON, MessagePack, bitcode",
        ));
}

#[test]
fn schema_diff_of_a_file_that_is_not_a_schema_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"memento\": 1}").unwrap();
    savegame()
        .args(["schema", "diff"])
        .args([&bad, &bad])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a savegame schema file"));
    savegame().args(["schema"]).assert().code(2);
}

#[test]
fn schema_diff_reads_the_files_the_crates_fixtures_game_committed() {
    savegame()
        .args(["schema", "diff", "--codec", "json"])
        .arg(repo("schemas/player.v1.json"))
        .arg(repo("schemas/player.s2.v1.json"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "/player/hp: renamed to health (u32)",
        ))
        .stdout(predicate::str::contains("/player/pos: removed ([f32; 2])"));
}
