//! The core user story: a game saves its player and world to slot 3, lists the slots, and a
//! new process loads slot 3 back to exactly the same state. With MessagePack and a key (in the
//! platform's data folder), with JSON and no key (a readable file), with MessagePack and no
//! key, and with JSON and a key.
//!
//! Each test runs its own binary again as child processes: one saves, one loads.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{expected_game, game_snapshot, key, rerun_self, restore_game};
use savegame::{Codec, SaveLoadManager, SlotId, SlotStatus};
use savegame_testkit::wait;

const SEED: u64 = 3;
const ENTITIES: usize = 500;
const MODE: &str = "SAVEGAME_STORY_MODE";
const DIR: &str = "SAVEGAME_STORY_DIR";

#[derive(Clone, Copy)]
struct Setup {
    codec: Codec,
    encrypted: bool,
    /// Use the platform's data folder (redirected by XDG_DATA_HOME) instead of an explicit one.
    platform_dir: bool,
}

fn manager(setup: Setup, dir: &Path) -> SaveLoadManager {
    let builder = if setup.platform_dir {
        SaveLoadManager::builder().app("org", "Savegame Tests", "Story Game")
    } else {
        SaveLoadManager::builder().directory(dir)
    };
    let builder = builder.codec(setup.codec);
    let builder = if setup.encrypted {
        builder.key(key())
    } else {
        builder
    };
    builder.build().unwrap()
}

/// The child's half of the story; prints what it did.
fn child(setup: Setup, mode: &str, dir: &Path) {
    let manager = manager(setup, dir);
    match mode {
        "save" => {
            let snapshot = game_snapshot(&manager, SEED, ENTITIES)
                .with_label("Level 3")
                .with_playtime(Duration::from_secs(4_000))
                .with_app_version("2.1.0")
                .with_user_field("difficulty", "hard");
            let report = manager.save(SlotId::Numbered(3), &snapshot).unwrap();
            println!("SAVED {}", report.path.display());
        }
        "load" => {
            let loaded = manager.load(SlotId::Numbered(3)).unwrap();
            assert_eq!(loaded.report.recovered_from_backup, None);
            let (player, world) = restore_game(&loaded.snapshot).unwrap();
            assert_eq!((player, world), expected_game(SEED, ENTITIES));
            assert_eq!(loaded.snapshot.metadata().label, "Level 3");
            println!("LOADED state matches");
        }
        other => panic!("unknown mode {other}"),
    }
}

/// The parent's half: runs the save and load children, and checks the menu in between.
fn story(test_name: &str, setup: Setup) {
    if let (Ok(mode), Ok(dir)) = (std::env::var(MODE), std::env::var(DIR)) {
        return child(setup, &mode, Path::new(&dir));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let run = |mode: &str| {
        let out = rerun_self(
            test_name,
            &[(MODE, mode), (DIR, dir), ("XDG_DATA_HOME", dir)],
        )
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{mode} child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };

    let before_save = wait::now_millis();
    let saved = run("save");
    let after_save = std::time::SystemTime::now();
    let path = PathBuf::from(
        saved
            .lines()
            .find_map(|l| l.split_once("SAVED ").map(|(_, path)| path))
            .expect("the save child reports its path"),
    );
    assert!(
        path.starts_with(tmp.path()),
        "{} is not in the temp dir",
        path.display()
    );
    assert!(path.ends_with("slot-003.sav"));

    // The load menu, from headers alone, in the folder the child wrote to.
    let folder = Setup {
        platform_dir: false,
        ..setup
    };
    let manager = manager(folder, path.parent().unwrap());
    let menu = manager.list().unwrap();
    assert_eq!(menu.len(), 1);
    let info = &menu[0];
    assert_eq!(info.slot, SlotId::Numbered(3));
    assert_eq!(info.status, SlotStatus::Ready);
    assert_eq!(info.label(), Some("Level 3"));
    assert_eq!(info.playtime(), Some(Duration::from_secs(4_000)));
    assert_eq!(info.app_version(), Some("2.1.0"));
    assert_eq!(info.schema_version(), Some(1));
    assert_eq!(info.file_size, std::fs::metadata(&path).unwrap().len());
    // Stamped while the save child ran, to the millisecond.
    let saved_at = info.saved_at().unwrap();
    assert!(
        before_save <= saved_at && saved_at <= after_save,
        "saved-at {saved_at:?} is not between {before_save:?} and {after_save:?}"
    );
    let header = info.header.as_ref().unwrap();
    assert_eq!(header.metadata.user["difficulty"], "hard");
    assert_eq!(header.encrypted, setup.encrypted);
    assert_eq!(header.codec, setup.codec);

    let bytes = std::fs::read(&path).unwrap();
    let readable = String::from_utf8_lossy(&bytes).contains("\"inventory\":{");
    assert_eq!(
        readable,
        setup.codec == Codec::Json && !setup.encrypted,
        "only an unencrypted JSON save is readable text"
    );
    if setup.encrypted {
        assert!(!String::from_utf8_lossy(&bytes).contains("Aurelia"));
    }

    let loaded = run("load");
    assert!(loaded.contains("LOADED state matches"), "{loaded}");
}

#[test]
#[cfg(target_os = "linux")]
fn msgpack_with_a_key_in_the_platform_data_folder() {
    story(
        "msgpack_with_a_key_in_the_platform_data_folder",
        Setup {
            codec: Codec::MessagePack,
            encrypted: true,
            platform_dir: true,
        },
    );
}

#[test]
fn msgpack_with_a_key_in_a_folder() {
    story(
        "msgpack_with_a_key_in_a_folder",
        Setup {
            codec: Codec::MessagePack,
            encrypted: true,
            platform_dir: false,
        },
    );
}

#[test]
fn json_without_a_key_is_a_readable_file() {
    story(
        "json_without_a_key_is_a_readable_file",
        Setup {
            codec: Codec::Json,
            encrypted: false,
            platform_dir: false,
        },
    );
}

#[test]
fn msgpack_without_a_key() {
    story(
        "msgpack_without_a_key",
        Setup {
            codec: Codec::MessagePack,
            encrypted: false,
            platform_dir: false,
        },
    );
}

#[test]
fn json_with_a_key() {
    story(
        "json_with_a_key",
        Setup {
            codec: Codec::Json,
            encrypted: true,
            platform_dir: false,
        },
    );
}
