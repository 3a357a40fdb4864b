//! Writes `fixtures/v1-game.sav`: a save of version 1 of the example game (`examples/game.rs`),
//! whose hit points were a component `Hp { current }`. Run once; the file is committed and
//! never regenerated (this program refuses to overwrite it). `tests/fixtures.rs` loads it with
//! version 2 of the game and checks the outcome written in `fixtures/README.md`.
//!
//! ```text
//! cargo run -p savegame-bevy --example write_fixture -- bevy/fixtures/v1-game.sav
//! ```

use bevy_app::App;
use bevy_ecs::prelude::*;
use savegame::{Key, SaveLoadManager, SlotId};
use savegame_bevy::{SaveManager, Saveable, SavegameApp, SavegameCommands, SavegamePlugin};
use serde::{Deserialize, Serialize};

/// The example game's key (`examples/game.rs`).
const KEY: [u8; 32] = *b"savegame-bevy example; no secret";

// Version 1 of the game's saved types.
#[derive(Component, Clone, Serialize, Deserialize)]
struct Hp {
    current: u32,
}
#[derive(Component, Clone, Serialize, Deserialize)]
struct Position {
    x: i32,
}
#[derive(Component, Clone, Serialize, Deserialize)]
struct Name(String);
#[derive(Component, Clone, Serialize, Deserialize)]
struct Hunting {
    #[entities]
    target: Entity,
}
#[derive(Component, Clone, Serialize, Deserialize)]
struct Hero;
#[derive(Resource, Clone, Serialize, Deserialize)]
struct Turn(u64);
#[derive(Resource, Clone, Serialize, Deserialize)]
struct Gold(u32);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: write_fixture OUTPUT_FILE")?;
    if std::path::Path::new(&out).exists() {
        return Err(format!("{out} exists; fixtures are never regenerated").into());
    }
    let dir = tempfile::tempdir()?;
    let mut app = App::new();
    app.add_plugins(SavegamePlugin::new(
        SaveLoadManager::builder()
            .directory(dir.path())
            .key(Key::from_bytes(KEY))
            .schema_version(1),
    )?)
    .save_component::<Hp>()
    .save_component::<Position>()
    .save_component::<Name>()
    .save_component::<Hunting>()
    .save_component::<Hero>()
    .save_resource::<Turn>()
    .save_resource::<Gold>()
    .insert_resource(Turn(17))
    .insert_resource(Gold(5));
    let world = app.world_mut();
    let hero = world
        .spawn((
            Saveable,
            Hero,
            Name("hero".into()),
            Hp { current: 21 },
            Position { x: 3 },
        ))
        .id();
    world.spawn((Saveable, Name("sword".into()), ChildOf(hero)));
    world.spawn((Saveable, Name("lamp".into()), ChildOf(hero)));
    world.spawn((
        Saveable,
        Name("rat".into()),
        Hp { current: 4 },
        Position { x: 5 },
        Hunting { target: hero },
    ));
    world
        .commands()
        .save_labelled(SlotId::Numbered(1), "v1: turn 17");
    app.update();
    let errors = app.world().resource::<SaveManager>().manager().flush();
    if let Some(e) = errors.into_iter().next() {
        return Err(e.into());
    }
    app.update();
    std::fs::copy(dir.path().join(SlotId::Numbered(1).file_name()), &out)?;
    println!("wrote {out}");
    Ok(())
}
