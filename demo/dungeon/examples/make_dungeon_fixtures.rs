//! Writes the dungeon's old saves into `fixtures/`, with the library's own writer at the
//! schema version of each old release of the game, and beside each the state it must load as.
//! Fixtures are committed once; this only writes files that do not exist yet.
//!
//! ```text
//! cargo run -p dungeon --example make_dungeon_fixtures -- demo/dungeon/fixtures
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use dungeon::model::{Action, Dir, Game};
use dungeon::saves::KEY;
use savegame::{Key, Originator, SaveLoadManager, SlotId};
use serde::Serialize;

/// The player as version 1 of the game saved it.
#[derive(Serialize)]
struct PlayerV1 {
    x: i32,
    y: i32,
    hp: u32,
    bag: Vec<String>,
}

/// The player as version 2 saved it.
#[derive(Serialize)]
struct Pos {
    x: i32,
    y: i32,
}

#[derive(Serialize)]
struct PlayerV2 {
    pos: Pos,
    hp: u32,
    bag: BTreeMap<String, u32>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: make_dungeon_fixtures OUTPUT_FOLDER")?;
    let out = Path::new(&out);
    for version in [1u32, 2] {
        let mut game = Game::new(40 + u64::from(version));
        for _ in 0..6 {
            game.step(Action::Move(Dir::South));
            game.step(Action::Move(Dir::East));
        }
        let bag = vec!["potion".to_string(), "gold".into(), "gold".into()];
        let mut counts = BTreeMap::new();
        for item in &bag {
            *counts.entry(item.clone()).or_insert(0u32) += 1;
        }
        let (x, y, hp) = (game.player.pos.x, game.player.pos.y, game.player.hp.min(17));

        let tmp = tempfile::tempdir()?;
        let manager = SaveLoadManager::builder()
            .directory(tmp.path())
            .key(Key::from_bytes(KEY))
            .schema_version(version)
            .build()?;
        let mut s = manager
            .snapshot()
            .with_label(format!("Level 1, turn {}", game.clock.turn))
            .with_app_version(format!("0.{version}.0"));
        if version == 1 {
            s.capture_memento(
                "player",
                &PlayerV1 {
                    x,
                    y,
                    hp,
                    bag: bag.clone(),
                },
            )?;
        } else {
            s.capture_memento(
                "player",
                &PlayerV2 {
                    pos: Pos { x, y },
                    hp,
                    bag: counts.clone(),
                },
            )?;
        }
        s.capture_memento("level", &game.level.create_memento())?;
        s.capture_memento("clock", &game.clock.create_memento())?;
        let report = manager.save(SlotId::Numbered(5), &s)?;

        let name = format!("v{version}-slot5.sav");
        let expected = format!(
            "turn={} hp={hp} max_hp=20 pos={x},{y} inventory=gold:2,potion:1\n",
            game.clock.turn
        );
        for (file, bytes) in [
            (name.clone(), std::fs::read(report.path)?),
            (format!("v{version}-slot5.expected"), expected.into_bytes()),
        ] {
            let path = out.join(file);
            if path.exists() {
                println!("kept    {}", path.display());
            } else {
                std::fs::write(&path, bytes)?;
                println!("written {}", path.display());
            }
        }
    }
    Ok(())
}
