//! The page's save schema is committed (`schemas/game.v1.json`): the hand-written originator
//! `Game` is checked in one call, as the page saves it (MessagePack, schema version 1).
#![cfg(not(target_arch = "wasm32"))]

use savegame::Codec;
use savegame::schema::{Guard, Problem};
use savegame_web_demo::Game;

fn guard() -> Guard {
    Guard::new("schemas").codec(Codec::MessagePack)
}

#[test]
fn the_game_memento_matches_its_committed_schema() {
    let report = guard().check_originator("game", &Game::new()).unwrap();
    assert_eq!(report.checked, 1);
}

#[test]
fn a_changed_memento_is_caught_in_the_same_call() {
    // The memento as it would be with the coins kept as a count: another type under the same
    // id and version.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct GameMemento {
        x: i32,
        y: i32,
        coins: u32,
        score: u32,
        moves: u32,
    }
    let mut types = savegame::MementoTypes::new();
    types.memento::<GameMemento>("game", 1).unwrap();
    let failure = guard().write_files(false).check_types(&types).unwrap_err();
    assert!(
        matches!(failure.problems[..], [Problem::Changed { .. }]),
        "{failure}"
    );
    assert!(
        failure
            .to_string()
            .contains("/game/coins: Vec<[i32; 2]> → u32  [breaking in MessagePack]"),
        "{failure}"
    );
}
