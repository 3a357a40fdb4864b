//! Excluded types never reach a save: the `savegame dump` of a save holds the registered
//! components' values, and nothing of the unregistered components on saved entities, of the
//! unsaved entities, or of unregistered resources.

mod common;

use std::path::PathBuf;
use std::process::Command;

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{SaveManager, Saveable, SavegameCommands};

/// The `savegame` binary of the workspace's CLI crate, built by cargo into this test's own
/// target folder (a no-op when it is up to date; `cargo test --workspace` builds it anyway).
fn savegame_cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/excluded-…
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let binary = profile_dir.join(format!("savegame{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let target_dir = profile_dir.parent().unwrap();
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "savegame-cli",
                "--bin",
                "savegame",
            ])
            .env("CARGO_TARGET_DIR", target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the savegame CLI failed");
    }
    binary
}

#[derive(Resource)]
struct Secret(#[allow(dead_code)] String);

#[test]
fn excluded_types_never_appear_in_the_dump() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    world.spawn((
        Saveable,
        Label("REGISTERED-LABEL-1234".into()),
        Mesh("EXCLUDED-MESH-5678".into()),
    ));
    world.spawn((
        Camera("EXCLUDED-CAMERA-9012".into()),
        Label("UNSAVED-ENTITY-3456".into()),
    ));
    world.insert_resource(Secret("EXCLUDED-RESOURCE-7890".into()));
    world.insert_resource(Score(31_337));
    world.commands().save(SlotId::Numbered(4));
    app.update();
    settle(&mut app);
    let path = app
        .world()
        .resource::<SaveManager>()
        .manager()
        .path_of(SlotId::Numbered(4));
    let raw = std::fs::read(&path).unwrap();
    // Encrypted: nothing readable in the file itself, registered or not.
    assert!(!raw.windows(8).any(|w| w == b"REGISTER"));

    let output = Command::new(savegame_cli())
        .arg("dump")
        .arg(&path)
        .env("SAVEGAME_KEY", hex(&KEY))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dump = String::from_utf8(output.stdout).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dump).unwrap();
    let ids: Vec<&str> = json["mementos"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    // The plugin's own two, and one per registered type (a component no saved entity has
    // is an empty column); a registered resource the world lacks (Level) is left out.
    assert_eq!(
        ids,
        [
            "bevy/entities",
            "bevy/hierarchy",
            "component/Health",
            "component/Label",
            "component/Position",
            "component/Target",
            "resource/Score",
        ],
        "{dump}"
    );
    assert_eq!(
        json["mementos"]["bevy/entities"]["ids"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // What is registered and saved is there …
    assert!(dump.contains("REGISTERED-LABEL-1234"), "{dump}");
    assert!(dump.contains("31337"), "{dump}");
    // … and nothing else.
    for excluded in [
        "EXCLUDED-MESH-5678",
        "EXCLUDED-CAMERA-9012",
        "UNSAVED-ENTITY-3456",
        "EXCLUDED-RESOURCE-7890",
        "Mesh",
        "Camera",
        "Secret",
        "Level",
    ] {
        assert!(
            !dump.contains(excluded),
            "{excluded} is in the dump:\n{dump}"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
