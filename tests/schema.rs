//! The schema guard (RELIABILITY.md M9): each kind of change to a memento type, against a
//! committed schema, gets its verdict per codec; versions need steps; files are written once,
//! as a snapshot test writes them; fixtures of every version load. Every test works in a temp
//! folder with files the guard itself wrote, except the last, which checks the crate's own
//! fixtures game against the schemas committed in `schemas/`.

use std::path::Path;

use savegame::schema::{Failure, Field, Fixtures, Guard, Problem, Schema, Type, TypeDef};
use savegame::{Codec, MementoTypes, Migrations, Originator, Registry, SaveState};
use savegame_testkit::{repo, versions};
use serde::{Deserialize, Serialize};

/// Memento `id` at `version` of type `M`.
fn one<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    id: &str,
    version: u32,
) -> MementoTypes {
    let mut types = MementoTypes::new();
    types.memento::<M>(id, version).unwrap();
    types
}

fn guard(dir: &Path, codec: Codec) -> Guard {
    Guard::new(dir).codec(codec).write_files(true)
}

/// Commits `M` as memento `id` at `version`: the first run writes the file and fails once,
/// the second passes.
fn commit<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    dir: &Path,
    id: &str,
    version: u32,
) {
    let first = guard(dir, Codec::MessagePack)
        .check_types(&one::<M>(id, version))
        .unwrap_err();
    assert!(first.only_written(), "{first}");
    guard(dir, Codec::MessagePack)
        .check_types(&one::<M>(id, version))
        .unwrap();
}

/// The check of `M` at `version` against what `commit` wrote, in `codec`.
fn against<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    dir: &Path,
    codec: Codec,
    version: u32,
) -> Result<savegame::schema::Report, Failure> {
    guard(dir, codec).check_types(&one::<M>("player", version))
}

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

fn problem_text(failure: &Failure) -> String {
    failure.to_string()
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
    let report = against::<reordered::Player>(dir.path(), Codec::MessagePack, 1).unwrap();
    assert!(
        report.notes[0].contains("the same bytes in MessagePack"),
        "{report}"
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

// A derived state: a player, a registry of monsters under a prefix, a flattened group.

#[derive(Originator, Default, Clone)]
#[savegame(version = 2)]
struct Hero {
    health: u32,
    title: Option<String>,
}

#[derive(Originator, Default, Clone)]
struct Monster {
    hp: u16,
}

#[derive(SaveState, Default)]
struct World {
    #[savegame(flatten)]
    monsters: Registry<Monster>,
}

#[derive(SaveState, Default)]
struct Game {
    hero: Hero,
    #[savegame(id = "quest-log")]
    quests: Hero,
    #[savegame(flatten)]
    world: World,
}

fn sample_game() -> Game {
    let mut game = Game::default();
    game.world.monsters = Registry::new().with_prefix("monster/");
    game.world
        .monsters
        .register("rat", Monster { hp: 3 })
        .unwrap();
    game
}

fn hero_steps() -> Migrations {
    Migrations::new()
}

#[test]
fn a_derived_state_lists_its_members_its_registries_and_its_flattened_groups() {
    let mut types = MementoTypes::new();
    assert!(sample_game().memento_types(&mut types).unwrap());
    let listed: Vec<(&str, Option<u32>)> = types.iter().map(|t| (t.id(), t.version())).collect();
    assert_eq!(
        listed,
        [
            ("hero", Some(2)),
            ("quest-log", Some(2)),
            ("monster/*", Some(1))
        ]
    );

    let dir = tempfile::tempdir().unwrap();
    let check = || {
        Guard::new(dir.path())
            .migrations(hero_steps())
            .write_files(true)
            .check(&sample_game())
    };
    let failure = check().unwrap_err();
    assert_eq!(failure.problems.len(), 3, "{failure}");
    assert!(failure.only_written());
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["hero.v2.json", "monster%2F%2A.v1.json", "quest-log.v2.json"]
    );
    let report = check().unwrap();
    assert_eq!(report.checked, 3);

    // An empty registry cannot say its version.
    let failure = Guard::new(dir.path())
        .write_files(false)
        .check(&Game::default())
        .unwrap_err();
    assert!(
        problem_text(&failure).contains("has nothing registered"),
        "{failure}"
    );
}

/// A hand-written originator, checked in one call.
struct Clock {
    turn: u64,
}

#[derive(Serialize, Deserialize)]
struct ClockMemento {
    turn: u64,
    paused: bool,
}

impl Originator for Clock {
    type Memento = ClockMemento;
    fn memento_version(&self) -> u32 {
        4
    }
    fn create_memento(&self) -> ClockMemento {
        ClockMemento {
            turn: self.turn,
            paused: false,
        }
    }
    fn restore_memento(&mut self, m: ClockMemento) -> savegame::Result<()> {
        self.turn = m.turn;
        Ok(())
    }
}

#[test]
fn a_hand_written_originator_is_checked_in_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let check = || {
        Guard::new(dir.path())
            .write_files(true)
            .check_originator("clock", &Clock { turn: 1 })
    };
    assert!(check().unwrap_err().only_written());
    let text = std::fs::read_to_string(dir.path().join("clock.v4.json")).unwrap();
    assert!(text.contains("\"memento_version\": 4"), "{text}");
    assert!(
        text.contains("{ \"name\": \"paused\", \"type\": \"bool\" }"),
        "{text}"
    );
    check().unwrap();
}

/// A memento the tracer cannot follow, and its shape given by hand.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Loose {
    Number(u32),
    Text(String),
}

#[derive(Serialize, Deserialize)]
struct Note {
    id: u32,
    value: Loose,
}

#[test]
fn an_untraceable_memento_is_named_and_its_shape_can_be_given_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let failure = Guard::new(dir.path())
        .write_files(true)
        .check_types(&one::<Note>("note", 1))
        .unwrap_err();
    let text = problem_text(&failure);
    assert!(
        text.contains(
            "memento \"note\": cannot trace the shape of schema::Note (it stopped at Note.value)"
        ),
        "{text}"
    );
    assert!(text.contains("untagged"), "{text}");
    assert!(text.contains("Guard::shape"), "{text}");

    let by_hand = Schema::new(Type::Named("Note".into())).with_type(
        "Note",
        TypeDef::Struct(vec![
            Field::new("id", Type::U32),
            Field::new("value", Type::String),
        ]),
    );
    let check = || {
        Guard::new(dir.path())
            .shape("note", by_hand.clone())
            .write_files(true)
            .check_types(&one::<Note>("note", 1))
    };
    assert!(check().unwrap_err().only_written());
    check().unwrap();
}

/// A newtype whose Deserialize refuses the tracer's made-up strings: a name starts with a
/// capital letter.
#[derive(Serialize, Clone)]
struct Name(String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename = "Name")]
        struct Raw(String);
        let Raw(name) = Raw::deserialize(d)?;
        if !name.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Err(serde::de::Error::custom(
                "a name starts with a capital letter",
            ));
        }
        Ok(Name(name))
    }
}

#[derive(Serialize, Deserialize)]
struct Tag {
    name: Name,
}

#[test]
fn a_validating_deserialize_is_traced_from_a_sample() {
    let dir = tempfile::tempdir().unwrap();
    let failure = Guard::new(dir.path())
        .write_files(false)
        .check_types(&one::<Tag>("tag", 1))
        .unwrap_err();
    assert!(
        problem_text(&failure).contains("Guard::sample"),
        "{failure}"
    );
    let failure = Guard::new(dir.path())
        .sample(Name("Ada".into()))
        .write_files(false)
        .check_types(&one::<Tag>("tag", 1))
        .unwrap_err();
    assert!(
        matches!(failure.problems[0], Problem::Missing { .. }),
        "{failure}"
    );
}

#[test]
fn an_enum_inside_a_variant_or_a_vec_is_traced_to_every_variant() {
    #[derive(Serialize, Deserialize)]
    enum Mood {
        Calm,
        Angry(u8),
    }
    #[derive(Serialize, Deserialize)]
    enum State {
        Idle,
        Walking { mood: Mood },
    }
    #[derive(Serialize, Deserialize)]
    struct Npc {
        state: State,
        moods: Vec<Mood>,
    }
    let schema = savegame::schema::trace::<Npc>().unwrap();
    let Some(TypeDef::Enum(moods)) = schema.get("Mood") else {
        panic!("{schema:?}")
    };
    assert_eq!(moods.len(), 2);
    assert!(moods.iter().all(Option::is_some));
}

// Fixtures: one save of the sample state per version, never overwritten, all loading.

mod shop_v1 {
    use super::*;

    #[derive(Originator, Default, Clone, Debug, PartialEq)]
    pub struct Keeper {
        pub gold: u32,
    }

    #[derive(SaveState, Default, Debug, PartialEq)]
    pub struct Shop {
        pub keeper: Keeper,
    }
}

/// Version 2 of the shop: the keeper's `gold` is `coins`.
mod shop_v2 {
    use super::*;

    #[derive(Originator, Default, Clone, Debug, PartialEq)]
    pub struct Keeper {
        pub coins: u32,
    }

    #[derive(SaveState, Default, Debug, PartialEq)]
    pub struct Shop {
        pub keeper: Keeper,
    }
}

#[test]
fn fixtures_are_written_once_per_version_and_all_of_them_load() {
    let dir = tempfile::tempdir().unwrap();
    let kit = |schema: u32, migrations: Migrations| {
        Fixtures::new(dir.path(), move |b| {
            b.codec(Codec::Json)
                .schema_version(schema)
                .migrations(migrations.clone())
        })
        .write_files(true)
    };
    let v1 = shop_v1::Shop {
        keeper: shop_v1::Keeper { gold: 7 },
    };
    let failure = kit(1, Migrations::new()).write_missing(&v1).unwrap_err();
    assert!(failure.only_written(), "{failure}");
    let first = dir.path().join("sample-s1.sav");
    let bytes = std::fs::read(&first).unwrap();
    kit(1, Migrations::new()).write_missing(&v1).unwrap();
    assert_eq!(std::fs::read(&first).unwrap(), bytes, "never rewritten");

    // Version 2 renames the field; its step brings version 1 saves up.
    let steps = || {
        Migrations::new().step(2, "gold_to_coins", |doc| {
            doc.memento_mut("keeper")?.rename("gold", "coins");
            Ok(())
        })
    };
    let v2 = shop_v2::Shop {
        keeper: shop_v2::Keeper { coins: 9 },
    };
    assert!(
        kit(2, steps())
            .write_missing(&v2)
            .unwrap_err()
            .only_written()
    );
    assert!(dir.path().join("sample-s2.sav").exists());
    assert_eq!(std::fs::read(&first).unwrap(), bytes, "old fixtures stay");

    let loaded = kit(2, steps()).load_all(shop_v2::Shop::default).unwrap();
    let from: Vec<Option<u32>> = loaded.iter().map(|f| f.load.migrated_from).collect();
    assert_eq!(from, [Some(1), None]);
    assert!(loaded.iter().all(|f| f.restore.is_exact()));

    // Without the step, the version 1 fixture does not load, and the check names it.
    let failure = kit(2, Migrations::new())
        .load_all(shop_v2::Shop::default)
        .unwrap_err();
    let text = problem_text(&failure);
    assert_eq!(failure.problems.len(), 1, "{text}");
    assert!(text.contains("sample-s1.sav: does not load"), "{text}");

    // A memento at its own version names the fixture after it; in CI a missing one fails.
    let failure = Fixtures::new(dir.path(), |b| b.codec(Codec::Json))
        .write_files(false)
        .write_missing(&Game::default());
    assert!(failure.is_err());
    let mut game = sample_game();
    game.hero.health = 5;
    let failure = Fixtures::new(dir.path(), |b| b.codec(Codec::Json))
        .write_files(true)
        .write_missing(&game)
        .unwrap_err();
    assert!(failure.only_written(), "{failure}");
    assert!(
        dir.path()
            .join("sample-s1-hero.v2-quest-log.v2.sav")
            .exists()
    );
}

#[test]
fn the_crate_fixtures_game_matches_its_committed_schemas_at_every_version() {
    use savegame::schema::{SchemaFile, diff, trace};

    let dir = repo("schemas");
    // The game as it is now, at schema version 3, through the guard.
    let mut v3 = MementoTypes::new();
    v3.memento::<versions::v3::Player>("player", 1).unwrap();
    v3.memento::<versions::v3::Inventory>("inventory", 1)
        .unwrap();
    v3.memento::<versions::v3::World>("world", 1).unwrap();
    let report = Guard::new(&dir)
        .schema_version(3)
        .migrations(versions::rust_steps())
        .codecs([Codec::Json, Codec::MessagePack])
        .write_files(false)
        .check_types(&v3)
        .unwrap();
    assert_eq!(report.checked, 3);
    assert_eq!(report.notes, Vec::<String>::new());

    // Its history: each older version's types against the file committed for it.
    let committed = |name: &str| {
        SchemaFile::from_json(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let same = |name: &str, traced: Schema| {
        let file = committed(name);
        assert_eq!(diff(&file.schema, &traced, &file.id), [], "{name}");
    };
    same("player.v1.json", trace::<versions::v1::Player>().unwrap());
    same("world.v1.json", trace::<versions::v1::World>().unwrap());
    same(
        "player.s2.v1.json",
        trace::<versions::v2::Player>().unwrap(),
    );
    same("world.s2.v1.json", trace::<versions::v2::World>().unwrap());

    // What step 2 had to do, as the guard sees it: hp renamed, pos replaced, stamina added.
    let changes = diff(
        &committed("player.v1.json").schema,
        &trace::<versions::v2::Player>().unwrap(),
        "player",
    );
    let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/player/hp: renamed to health (u32)")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/player/pos: removed ([f32; 2])")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/player/stamina: added (u32; no default")),
        "{lines:#?}"
    );
    assert!(changes.iter().all(|c| c.named == savegame::schema::Verdict::Breaking || c.what.contains("reordered")));
}
