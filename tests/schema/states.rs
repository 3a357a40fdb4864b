//! What the guard checks: a derived state (members, registries, flattened groups), a
//! hand-written originator, and types it cannot trace alone.

use savegame::schema::{Field, Guard, Problem, Schema, Type, TypeDef};
use savegame::{MementoTypes, Migrations, Originator, Registry, SaveState};
use serde::{Deserialize, Serialize};

use super::*;

// A derived state: a player, a registry of monsters under a prefix, a flattened group.

#[derive(Originator, Default, Clone)]
#[savegame(version = 2)]
pub(crate) struct Hero {
    pub(crate) health: u32,
    pub(crate) title: Option<String>,
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
pub(crate) struct Game {
    pub(crate) hero: Hero,
    #[savegame(id = "quest-log")]
    quests: Hero,
    #[savegame(flatten)]
    world: World,
}

pub(crate) fn sample_game() -> Game {
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
    // The first run tells the developer what to do with what it wrote.
    let text = problem_text(&failure);
    assert!(
        text.contains("wrote ") && text.contains("Review it and commit it"),
        "{text}"
    );
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

/// A registry's entities change shape with no new version: the check names the registry's
/// pattern and the changed field, as for any other member.
#[test]
fn a_registry_whose_entity_type_changed_without_a_version_fails() {
    #[derive(Originator, Default, Clone)]
    struct Renamed {
        health: u16,
    }
    #[derive(SaveState, Default)]
    struct Monsters {
        #[savegame(flatten)]
        monsters: Registry<Monster>,
    }
    #[derive(SaveState, Default)]
    struct RenamedMonsters {
        #[savegame(flatten)]
        monsters: Registry<Renamed>,
    }
    let dir = tempfile::tempdir().unwrap();
    let mut before = Monsters {
        monsters: Registry::new().with_prefix("monster/"),
    };
    before.monsters.register("rat", Monster { hp: 3 }).unwrap();
    let guard = || Guard::new(dir.path()).write_files(true);
    assert!(guard().check(&before).unwrap_err().only_written());
    guard().check(&before).unwrap();

    let mut after = RenamedMonsters {
        monsters: Registry::new().with_prefix("monster/"),
    };
    after
        .monsters
        .register("rat", Renamed { health: 3 })
        .unwrap();
    let failure = guard().check(&after).unwrap_err();
    let text = problem_text(&failure);
    assert!(
        matches!(failure.problems[..], [Problem::Changed { .. }]),
        "{text}"
    );
    assert!(
        text.contains("memento \"monster/*\" changed shape"),
        "{text}"
    );
    // The path is a JSON Pointer: the id's "/" is written "~1".
    assert!(
        text.contains("/monster~1*/hp: renamed to health (u16)"),
        "{text}"
    );
    assert!(
        text.contains("memento.rename(\"hp\", \"health\")"),
        "{text}"
    );
    assert!(text.contains("raise the memento's version to 2"), "{text}");
    // The committed file is the record of what shipped: a failing check leaves it as it was.
    let committed = std::fs::read(dir.path().join("monster%2F%2A.v1.json")).unwrap();
    guard().check(&after).unwrap_err();
    assert_eq!(
        std::fs::read(dir.path().join("monster%2F%2A.v1.json")).unwrap(),
        committed
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
            "memento \"note\": cannot trace the shape of schema::states::Note (it stopped at Note.value)"
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
    let text = problem_text(&failure);
    assert!(text.contains("Guard::sample"), "{text}");
    // It names the field whose Deserialize refused the tracer's value.
    assert!(text.contains("it stopped at Tag.name"), "{text}");
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
