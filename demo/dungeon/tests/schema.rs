//! The game's save schemas are committed (`schemas/`), and a save of every version it had
//! (`fixtures/samples/`), as a game with the schema guard keeps them: a memento whose shape
//! changes without a new version and a step fails here, before a release ships it.

use dungeon::model::{Game, Monster};
use dungeon::saves::{KEY, SCHEMA, migrations};
use savegame::schema::{Fixtures, Guard, Problem, trace};
use savegame::{Codec, Key, MementoTypes, Originator};
use serde::{Deserialize, Serialize};

/// The level's memento flattens the layout's fields into its own (`#[serde(flatten)]`), which
/// asks serde for any value and so cannot be traced: its shape is given as this mirror's,
/// which writes the same fields. Keep the two alike.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelShape {
    number: u32,
    rows: Vec<String>,
    items: Vec<dungeon::model::PlacedItem>,
    monsters: Vec<Monster>,
}

/// The guard, set up as the game's manager is (`Saves::open`): schema version, steps, codec.
fn guard() -> Guard {
    Guard::new("schemas")
        .schema_version(SCHEMA)
        .migrations(migrations().unwrap())
        .codec(Codec::MessagePack)
        .shape("level", trace::<LevelShape>().unwrap())
}

/// A game in play: a player with things in the bag, a level with monsters and items.
fn sample() -> Game {
    let mut game = Game::new(7);
    for action in [dungeon::model::Action::Wait; 3] {
        game.step(action);
    }
    game
}

#[test]
fn every_memento_matches_its_committed_schema() {
    let report = guard().check(&sample()).unwrap();
    assert_eq!(report.checked, 3);
}

#[test]
fn the_level_is_untraceable_alone_and_its_mirror_writes_the_same_fields() {
    let failure = Guard::new("schemas")
        .schema_version(SCHEMA)
        .migrations(migrations().unwrap())
        .write_files(false)
        .check(&sample())
        .unwrap_err();
    let text = failure.to_string();
    assert!(
        text.contains("memento \"level\": cannot trace the shape"),
        "{text}"
    );
    // The mirror's fields are the memento's, as the codec writes them: each reads the other
    // (the mirror refuses a field it lacks), and the memento comes back as it was.
    let level = sample().level.create_memento();
    let mut snapshot = savegame::Snapshot::new(Codec::Json);
    snapshot.capture_memento("level", &level).unwrap();
    let mirror: LevelShape = snapshot.memento("level").unwrap();
    snapshot.capture_memento("mirror", &mirror).unwrap();
    let back: dungeon::model::LevelMemento = snapshot.memento("mirror").unwrap();
    assert_eq!(back, level);
}

/// The story of the guard: the player gains a field and nobody bumps a version.
mod grown {
    use std::collections::BTreeMap;

    use dungeon::model::Pos;
    use savegame::Originator;

    /// `Player` with one more field, `stamina`.
    #[derive(Originator)]
    pub struct Player {
        pub pos: Pos,
        pub hp: u32,
        pub max_hp: u32,
        pub inventory: BTreeMap<String, u32>,
        pub stamina: u32,
    }
}

#[test]
fn the_player_gaining_a_field_without_a_version_bump_fails_with_what_to_do() {
    let mut types = MementoTypes::new();
    types
        .originator(
            "player",
            &grown::Player {
                pos: dungeon::model::Pos { x: 1, y: 1 },
                hp: 10,
                max_hp: 10,
                inventory: Default::default(),
                stamina: 5,
            },
        )
        .unwrap();
    let failure = guard().write_files(false).check_types(&types).unwrap_err();
    let text = format!("{failure:?}");
    eprintln!("{text}");
    assert!(
        matches!(failure.problems[..], [Problem::Changed { .. }]),
        "{text}"
    );
    assert!(
        text.contains(
            "memento \"player\" changed shape, and its version did not (schema version 3, \
             memento version 1, committed in schemas/player.s3.v1.json):"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "/player/stamina: added (u32; no default: old saves lack it, so they fail to load; \
             make it an Option or give it #[serde(default)])  [breaking in MessagePack]"
        ),
        "{text}"
    );
    assert!(text.contains("raise the memento's version to 2"), "{text}");
    assert!(
        text.contains(
            "In the step: memento.insert_if_absent(\"stamina\", <its value for old saves>)."
        ),
        "{text}"
    );
    assert!(
        text.contains("or raise the game's schema version to 4 with a whole-document step"),
        "{text}"
    );
}

fn fixtures() -> Fixtures {
    Fixtures::new("fixtures/samples", |builder| {
        builder
            .key(Key::from_bytes(KEY))
            .schema_version(SCHEMA)
            .migrations(migrations().unwrap())
    })
}

#[test]
fn a_save_of_this_version_is_committed() {
    fixtures().write_missing(&sample()).unwrap();
}

#[test]
fn every_sample_save_ever_written_still_loads() {
    let loaded = fixtures().load_all(|| Game::new(0)).unwrap();
    assert!(!loaded.is_empty());
    assert!(loaded.iter().all(|f| f.restore.is_exact()));
}
