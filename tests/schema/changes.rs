//! Each kind of change to a memento type against a committed schema, per codec, and what
//! versions and steps the guard asks for.

use savegame::schema::{Guard, Problem};
use savegame::{Codec, Migrations};
use serde::{Deserialize, Serialize};

use super::*;

mod v1 {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: Class,
        pub bag: Vec<u32>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum Class {
        Warrior,
        Mage,
        Rogue(u8),
    }
}

/// An optional field added.
mod with_title {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: v1::Class,
        pub bag: Vec<u32>,
        pub title: Option<String>,
    }
}

/// A field with `#[serde(default)]` added.
mod with_default {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: v1::Class,
        pub bag: Vec<u32>,
        #[serde(default)]
        pub stamina: u32,
    }
}

/// A field added that old saves lack.
mod with_required {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: v1::Class,
        pub bag: Vec<u32>,
        pub stamina: u32,
    }
}

/// `health` renamed `hp`.
mod renamed {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub hp: u32,
        pub mana: u32,
        pub class: v1::Class,
        pub bag: Vec<u32>,
    }
}

/// `bag` holds items now, not ids; `mana` is a `u64`.
mod retyped {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u64,
        pub class: v1::Class,
        pub bag: Vec<Item>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Item {
        pub id: u32,
        pub count: u8,
    }
}

/// `mana` is a `u64`, nothing else changed.
mod widened {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u64,
        pub class: v1::Class,
        pub bag: Vec<u32>,
    }
}

/// `Mage` is gone.
mod no_mage {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: Class,
        pub bag: Vec<u32>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum Class {
        Warrior,
        Rogue(u8),
    }
}

/// `Bard` added at the end, and `Cleric` among the old ones.
mod more_classes {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub health: u32,
        pub mana: u32,
        pub class: Class,
        pub bag: Vec<u32>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum Class {
        Warrior,
        Mage,
        Rogue(u8),
        Bard,
    }

    pub mod inserted {
        use super::*;

        #[derive(Serialize, Deserialize)]
        #[serde(rename = "PlayerMemento")]
        pub struct Player {
            pub health: u32,
            pub mana: u32,
            pub class: Class,
            pub bag: Vec<u32>,
        }

        #[derive(Serialize, Deserialize)]
        pub enum Class {
            Warrior,
            Cleric,
            Mage,
            Rogue(u8),
        }
    }
}

/// `mana` before `health`.
mod reordered {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "PlayerMemento")]
    pub struct Player {
        pub mana: u32,
        pub health: u32,
        pub class: v1::Class,
        pub bag: Vec<u32>,
    }
}

#[test]
fn an_optional_field_added_passes_with_a_note_in_named_codecs_and_fails_in_bitcode() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let committed = std::fs::read_to_string(dir.path().join("player.v1.json")).unwrap();

    let failure = against::<with_title::Player>(dir.path(), Codec::Bitcode, 1).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("/player/title: added (Option<String>; may be missing"),
        "{text}"
    );
    assert!(text.contains("[breaking in bitcode]"), "{text}");
    // A failing check writes nothing over the committed file.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("player.v1.json")).unwrap(),
        committed
    );

    let report = against::<with_title::Player>(dir.path(), Codec::Json, 1).unwrap();
    assert!(report.notes[0].contains("/player/title: added"), "{report}");
    assert_eq!(report.updated, [dir.path().join("player.v1.json")]);
    // Compared with the updated file, MessagePack sees no change at all.
    let report = against::<with_title::Player>(dir.path(), Codec::MessagePack, 1).unwrap();
    assert_eq!(
        (report.notes.len(), report.updated.len()),
        (0, 0),
        "{report}"
    );
    // The file follows the compatible change, for the next change to be compared with.
    let updated = std::fs::read_to_string(dir.path().join("player.v1.json")).unwrap();
    assert!(
        updated.contains("\"name\": \"title\", \"type\": \"Option<String>\", \"default\": true")
    );
}

#[test]
fn a_field_with_serde_default_is_found_by_the_probe_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let report = against::<with_default::Player>(dir.path(), Codec::Json, 1).unwrap();
    assert!(
        report.notes[0].contains("/player/stamina: added (u32; may be missing"),
        "{report}"
    );
    // The file now holds the field as one that may be missing: some saves of this version lack
    // it, so it must stay so.
    let failure = against::<with_required::Player>(dir.path(), Codec::Json, 1).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("/player/stamina: may no longer be missing"),
        "{text}"
    );

    let fresh = tempfile::tempdir().unwrap();
    commit::<v1::Player>(fresh.path(), "player", 1);
    let failure = against::<with_required::Player>(fresh.path(), Codec::Json, 1).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("/player/stamina: added (u32; no default: old saves lack it"),
        "{text}"
    );
    assert!(text.contains("[breaking in JSON]"), "{text}");
}

#[test]
fn a_rename_fails_in_named_codecs_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let failure = against::<renamed::Player>(dir.path(), Codec::MessagePack, 1).unwrap_err();
    let text = format!("{failure:?}");
    eprintln!("--- the message for a rename ---\n{text}\n---");
    assert!(
        text.contains("memento \"player\" changed shape, and its version did not"),
        "{text}"
    );
    assert!(
        text.contains("/player/health: renamed to hp (u32): old saves' health would be dropped and hp missing  [breaking in MessagePack]"),
        "{text}"
    );
    assert!(text.contains("raise the memento's version to 2"), "{text}");
    assert!(
        text.contains("Migrations::memento_step(\"player\", 1, 2"),
        "{text}"
    );
    assert!(text.contains("player.v2.json"), "{text}");
    assert!(
        text.contains("In the step: memento.rename(\"health\", \"hp\")."),
        "{text}"
    );
    // In bitcode, names are not written: a rename in place is no change.
    against::<renamed::Player>(dir.path(), Codec::Bitcode, 1).unwrap();
}

#[test]
fn a_type_change_fails_with_the_path_and_both_types() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let failure = against::<retyped::Player>(dir.path(), Codec::MessagePack, 1).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("/player/bag: Vec<u32> → Vec<Item>  [breaking in MessagePack]"),
        "{text}"
    );
    // A widening that old saves survive in a self-describing codec is listed beside it.
    assert!(
        text.contains("/player/mana: u32 → u64  [compatible in MessagePack]"),
        "{text}"
    );
    let failure = against::<widened::Player>(dir.path(), Codec::Bitcode, 1).unwrap_err();
    assert!(problem_text(&failure).contains("/player/mana: u32 → u64  [breaking in bitcode]"));
    against::<widened::Player>(dir.path(), Codec::MessagePack, 1).unwrap();
}

#[test]
fn a_removed_variant_fails_and_an_added_one_passes_unless_bitcode_renumbers() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    for codec in [Codec::Json, Codec::Bitcode] {
        let failure = against::<no_mage::Player>(dir.path(), codec, 1).unwrap_err();
        let text = problem_text(&failure);
        assert!(
            text.contains("/player/class/Mage: variant removed (a unit variant): saves holding it would no longer load"),
            "{text}"
        );
    }
    let failure =
        against::<more_classes::inserted::Player>(dir.path(), Codec::Bitcode, 1).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("/player/class/Cleric: variant added at index 1"),
        "{text}"
    );
    assert!(
        text.contains("variants renumbered (Mage 1 → 2, Rogue 2 → 3)"),
        "{text}"
    );
    against::<more_classes::inserted::Player>(dir.path(), Codec::Json, 1).unwrap();
    for codec in [Codec::Json, Codec::Bitcode] {
        let fresh = tempfile::tempdir().unwrap();
        commit::<v1::Player>(fresh.path(), "player", 1);
        let report = against::<more_classes::Player>(fresh.path(), codec, 1).unwrap();
        assert!(
            report.notes[0].contains("/player/class/Bard: variant added"),
            "{report}"
        );
    }
}

#[test]
fn a_bitcode_reorder_fails_and_a_named_codec_sees_no_change() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let failure = against::<reordered::Player>(dir.path(), Codec::Bitcode, 1).unwrap_err();
    let text = format!("{failure:?}");
    eprintln!("--- the message for a bitcode reorder ---\n{text}\n---");
    assert!(
        text.contains("/player: fields reordered (health, mana, class, bag → mana, health, class, bag): bitcode writes fields by position"),
        "{text}"
    );
    assert!(text.contains("[breaking in bitcode]"), "{text}");
    assert!(
        text.contains("bitcode saves run no migration steps"),
        "{text}"
    );
    let report = against::<reordered::Player>(dir.path(), Codec::MessagePack, 1).unwrap();
    assert!(
        report.notes[0].contains("the same bytes in MessagePack"),
        "{report}"
    );
}

#[test]
fn a_bitcode_game_bumps_without_a_step_it_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let bitcode = || {
        Guard::new(dir.path())
            .codec(Codec::Bitcode)
            .write_files(true)
            .check_types(&one::<reordered::Player>("player", 2))
    };
    let failure = bitcode().unwrap_err();
    assert!(failure.only_written(), "{failure}");
    let report = bitcode().unwrap();
    assert!(
        report.notes[0].contains("cannot check how old ones are converted"),
        "{report}"
    );
    // A game that also saved in MessagePack needs the step, which runs on those saves.
    let failure = Guard::new(dir.path())
        .codecs([Codec::MessagePack, Codec::Bitcode])
        .write_files(false)
        .check_types(&one::<reordered::Player>("player", 2))
        .unwrap_err();
    assert!(
        matches!(failure.problems[0], Problem::NoStep { .. }),
        "{failure}"
    );
}

#[test]
fn a_game_that_saved_in_two_codecs_needs_a_change_both_survive() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let failure = Guard::new(dir.path())
        .codecs([Codec::MessagePack, Codec::Bitcode])
        .write_files(false)
        .check_types(&one::<with_title::Player>("player", 1))
        .unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("breaking in bitcode; compatible in MessagePack"),
        "{text}"
    );
}

#[test]
fn a_new_version_needs_a_step_from_the_last_committed_one_and_old_files_stay() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let v1_text = std::fs::read_to_string(dir.path().join("player.v1.json")).unwrap();

    // Bumped, no step.
    let failure = against::<renamed::Player>(dir.path(), Codec::MessagePack, 2).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains("memento \"player\" went from memento version 1"),
        "{text}"
    );
    assert!(
        text.contains("no per-memento step Migrations::memento_step(\"player\", 1, 2, ..)"),
        "{text}"
    );
    assert!(matches!(
        failure.problems[0],
        Problem::NoStep {
            from: (1, 1),
            to: (1, 2),
            ..
        }
    ));
    assert!(!dir.path().join("player.v2.json").exists());

    // With the step: the new version's file is written, once, listing what changed.
    let step = || {
        Migrations::new().memento_step("player", 1, 2, |m| {
            m.rename("health", "hp");
            Ok(())
        })
    };
    let bumped = || {
        Guard::new(dir.path())
            .migrations(step())
            .write_files(true)
            .check_types(&one::<renamed::Player>("player", 2))
    };
    let failure = bumped().unwrap_err();
    let text = problem_text(&failure);
    assert!(failure.only_written(), "{text}");
    assert!(text.contains("wrote"), "{text}");
    assert!(
        text.contains("player.v2.json (a new version; since"),
        "{text}"
    );
    assert!(text.contains("/player/health: renamed to hp"), "{text}");
    bumped().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("player.v1.json")).unwrap(),
        v1_text
    );

    // The step removed later strands old saves: the check says so, file or not.
    let failure = Guard::new(dir.path())
        .write_files(true)
        .check_types(&one::<renamed::Player>("player", 2))
        .unwrap_err();
    assert!(
        matches!(failure.problems[0], Problem::NoStep { .. }),
        "{failure}"
    );

    // A version never goes down.
    let failure = against::<v1::Player>(dir.path(), Codec::MessagePack, 1).unwrap_err();
    assert!(
        matches!(failure.problems[0], Problem::Newer { .. }),
        "{failure}"
    );
}

#[test]
fn a_new_schema_version_needs_a_whole_document_step() {
    let dir = tempfile::tempdir().unwrap();
    commit::<v1::Player>(dir.path(), "player", 1);
    let check = |migrations: Migrations| {
        Guard::new(dir.path())
            .schema_version(2)
            .migrations(migrations)
            .write_files(true)
            .check_types(&one::<renamed::Player>("player", 1))
    };
    let failure = check(Migrations::new()).unwrap_err();
    assert!(
        problem_text(&failure).contains("no whole-document step produces schema version 2"),
        "{failure}"
    );
    let steps = || {
        Migrations::new().step(2, "rename_health", |doc| {
            doc.memento_mut("player")?.rename("health", "hp");
            Ok(())
        })
    };
    let failure = check(steps()).unwrap_err();
    assert!(failure.only_written(), "{failure}");
    assert!(dir.path().join("player.s2.v1.json").exists());
    check(steps()).unwrap();
}

#[test]
fn a_state_that_lists_nothing_fails_rather_than_passing_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let failure = Guard::new(dir.path())
        .check_types(&MementoTypes::new())
        .unwrap_err();
    assert!(
        problem_text(&failure).contains("lists no memento types"),
        "{failure}"
    );
}

#[test]
fn in_ci_nothing_is_written_and_a_missing_file_fails() {
    let dir = tempfile::tempdir().unwrap();
    let failure = Guard::new(dir.path())
        .write_files(false)
        .check_types(&one::<v1::Player>("player", 1))
        .unwrap_err();
    assert!(
        matches!(&failure.problems[0], Problem::Missing { file, .. } if file.ends_with("player.v1.json"))
    );
    assert!(
        problem_text(&failure).contains("is not committed"),
        "{failure}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
