//! Fixtures of every version, and the crate's own fixtures game against its committed
//! schemas.

use savegame::schema::{Fixtures, Guard, Schema};
use savegame::{Codec, MementoTypes, Migrations, Originator, SaveState};
use savegame_testkit::{repo, versions};

use super::states::{Game, sample_game};
use super::*;

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
