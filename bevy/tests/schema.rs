//! The example game's save schemas are committed (`schemas/`): a registered component or
//! resource whose shape changes without a new version and a step fails here.

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/game.rs"]
mod game;

use savegame::schema::{Guard, Problem};

fn types() -> savegame::MementoTypes {
    let dir = tempfile::tempdir().unwrap();
    let app = game::app(dir.path()).unwrap();
    savegame_bevy::memento_types(app.world()).unwrap()
}

fn guard() -> Guard {
    Guard::new("schemas")
        .schema_version(game::SCHEMA)
        .migrations(game::migrations())
}

#[test]
fn the_registered_types_and_the_plugins_own_mementos_are_listed() {
    let ids: Vec<(String, Option<u32>)> = types()
        .iter()
        .map(|t| (t.id().to_owned(), t.version()))
        .collect();
    // Each component as a full save's column, a delta's rows, and an older delta's
    // per-entity value.
    let expect = [
        "component/Health",
        "component/Health+*",
        "component/Health/*",
        "component/Position",
        "component/Position+*",
        "component/Position/*",
        "component/Name",
        "component/Name+*",
        "component/Name/*",
        "component/Hunting",
        "component/Hunting+*",
        "component/Hunting/*",
        "component/Hero",
        "component/Hero+*",
        "component/Hero/*",
        "resource/Turn",
        "resource/Gold",
        "bevy/entities",
        "bevy/hierarchy",
        "bevy/entities+*",
        "bevy/entity/*",
        "bevy/next",
    ];
    assert_eq!(ids, expect.map(|id| (id.to_owned(), Some(1))).to_vec());
}

#[test]
fn every_registered_type_matches_its_committed_schema() {
    let report = guard().check_types(&types()).unwrap();
    assert_eq!(report.checked, 22);
}

/// `Health` as version 1 of the game had it (`Hp { current }`), under today's name: what the
/// guard says had version 2 not been a new schema version with a step.
mod old {
    use bevy_ecs::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Component, Clone, Serialize, Deserialize)]
    pub struct Health {
        pub current: u32,
    }
}

#[test]
fn a_component_that_changes_shape_without_a_version_fails() {
    use savegame_bevy::SavegameApp;

    let dir = tempfile::tempdir().unwrap();
    let mut app = game::app(dir.path()).unwrap();
    app.save_component_as::<old::Health>("Health");
    let types = savegame_bevy::memento_types(app.world()).unwrap();
    let failure = guard().write_files(false).check_types(&types).unwrap_err();
    let text = failure.to_string();
    assert!(
        matches!(
            failure.problems[..],
            [
                Problem::Changed { .. },
                Problem::Changed { .. },
                Problem::Changed { .. }
            ]
        ),
        "{text}"
    );
    assert!(
        text.contains("/component~1Health/values/*/max: removed (u32)"),
        "{text}"
    );
    for rows in ["component/Health+*", "component/Health/*"] {
        assert!(
            text.contains(&format!("memento \"{rows}\" changed shape")),
            "{text}"
        );
    }
}
