//! A small dungeon game that saves, loads and autosaves with `savegame-bevy`, headless.
//!
//! A hero walks a corridor, carrying items (children of the hero); monsters hunt the hero
//! (an `Entity` field). The game quicksaves every 10 turns, autosaves every 2 seconds of game
//! time, and at the end loads its quicksave back. Sprites are visuals: never registered, so
//! never saved.
//!
//! ```text
//! cargo run -p savegame-bevy --example game
//! ```
//!
//! It runs without a window (the `MinimalPlugins` subset: task pools, time, the schedule
//! runner). In a game with a window, add `DefaultPlugins` instead; nothing else changes.
//!
//! This is version 2 of the game's saves: version 1 called `Health` `Hp`, without `max`.
//! [`migrations`] brings version 1 saves up to date (`fixtures/v1-game.sav` is one, written by
//! `examples/write_fixture.rs`).

use std::path::Path;
use std::time::Duration;

use bevy_app::{App, ScheduleRunnerPlugin, TaskPoolPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_time::TimePlugin;
use savegame::migrate::MigrationError;
use savegame::{Key, Migrations, SaveLoadManager, SlotId};
use savegame_bevy::{
    Loaded, SaveId, SaveMenu, Saveable, Saved, SavegameApp, SavegameCommands, SavegamePlugin,
};
use serde::{Deserialize, Serialize};

/// The key the game's saves are sealed with. A key in a game's binary stops casual edits,
/// not a determined player.
pub const KEY: [u8; 32] = *b"savegame-bevy example; no secret";
/// The current save schema.
pub const SCHEMA: u32 = 2;

/// Hit points (version 1 saves: `Hp { current }`).
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Hit points left.
    pub current: u32,
    /// Hit points when healed.
    pub max: u32,
}

/// Where on the corridor.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Metres from the entrance.
    pub x: i32,
}

/// A name, for the hero, monsters and items.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Name(pub String);

/// A monster hunting an entity.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hunting {
    /// Whom.
    #[entities]
    pub target: Entity,
}

/// The hero.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hero;

/// A visual: not registered, never saved.
#[derive(Component, Clone, Debug, PartialEq)]
pub struct Sprite(pub &'static str);

/// Turns played.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn(pub u64);

/// Gold found.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gold(pub u32);

/// The steps from older saves: version 2 renamed `Hp` to `Health` and added `max`
/// (100 for old saves).
pub fn migrations() -> Migrations {
    Migrations::new().step(2, "Hp is Health, with max", |doc| {
        if let Some(hp) = doc.remove("component/Hp") {
            doc.insert("component/Health", hp);
        }
        if doc.memento("component/Health").is_some() {
            let health = doc.memento_mut("component/Health")?;
            let values = health
                .get_mut("values")
                .ok_or_else(|| MigrationError::new("/component~1Health/values", "missing"))?;
            for value in values.elements_mut() {
                value.insert_if_absent("max", 100u32);
            }
        }
        Ok(())
    })
}

/// The game's app, saving into `dir`, without a window.
///
/// # Errors
/// When the save manager cannot be built (the folder cannot be created).
pub fn app(dir: &Path) -> savegame::Result<App> {
    let mut app = App::new();
    app.add_plugins((
        TaskPoolPlugin::default(),
        TimePlugin,
        ScheduleRunnerPlugin::run_loop(Duration::from_millis(1)),
    ));
    add_game(&mut app, dir)?;
    Ok(app)
}

/// Adds the game to an app that has its plugins (the headless ones above, or `DefaultPlugins`
/// in a window: `bevy/app`): saving into `dir`, what is saved, and the game's systems.
///
/// # Errors
/// When the save manager cannot be built (the folder cannot be created).
pub fn add_game(app: &mut App, dir: &Path) -> savegame::Result<()> {
    let plugin = SavegamePlugin::new(
        SaveLoadManager::builder()
            .directory(dir)
            .key(Key::from_bytes(KEY))
            .schema_version(SCHEMA)
            .migrations(migrations())
            .autosave_slots(2),
    )?
    .autosave_every(Duration::from_secs(2));
    app.add_plugins(plugin)
        .save_component::<Health>()
        .save_component::<Position>()
        .save_component::<Name>()
        .save_component::<Hunting>()
        .save_component::<Hero>()
        .save_resource::<Turn>()
        .save_resource::<Gold>()
        .init_resource::<Turn>()
        .init_resource::<Gold>()
        .add_systems(Update, (hunt, tick).chain());
    Ok(())
}

/// A new game: the hero with a sword and a lamp, two monsters.
pub fn new_game(world: &mut World) -> Entity {
    let hero = world
        .spawn((
            Saveable,
            Hero,
            Name("hero".into()),
            Health {
                current: 30,
                max: 30,
            },
            Position { x: 0 },
            Sprite("hero.png"),
        ))
        .id();
    for item in ["sword", "lamp"] {
        world.spawn((Saveable, Name(item.into()), ChildOf(hero)));
    }
    for (name, x) in [("rat", 9), ("bat", 14)] {
        world.spawn((
            Saveable,
            Name(name.into()),
            Health { current: 5, max: 5 },
            Position { x },
            Hunting { target: hero },
            Sprite("monster.png"),
        ));
    }
    hero
}

/// Monsters walk to their target and bite.
fn hunt(
    mut monsters: Query<(&Hunting, &mut Position), Without<Hero>>,
    mut targets: Query<(&Position, &mut Health), With<Hero>>,
) {
    for (hunting, mut position) in &mut monsters {
        let Ok((target, mut health)) = targets.get_mut(hunting.target) else {
            continue;
        };
        if position.x > target.x + 1 {
            position.x -= 1;
        } else {
            health.current = health.current.saturating_sub(1);
        }
    }
}

/// One turn a frame; a quicksave every 10 turns.
fn tick(mut turn: ResMut<Turn>, mut gold: ResMut<Gold>, mut commands: Commands) {
    turn.0 += 1;
    if turn.0.is_multiple_of(3) {
        gold.0 += 1;
    }
    if turn.0.is_multiple_of(10) {
        commands.save_labelled(SlotId::Quicksave, format!("Turn {}", turn.0));
    }
}

/// What a headless run saw.
#[derive(Debug, Default, Resource)]
pub struct RunLog {
    /// Slots written, in order.
    pub saved: Vec<SlotId>,
    /// Slots loaded.
    pub loaded: Vec<SlotId>,
    /// The load menu's labels at the end.
    pub menu: Vec<String>,
}

/// Runs the game for `frames` frames of `frame` game time each (stepping the app by hand, as
/// a test does, and waiting for each frame's saves), then loads the quicksave and shows the
/// load menu.
///
/// # Errors
/// When the app cannot be built.
pub fn run_headless(dir: &Path, frames: u32, frame: Duration) -> savegame::Result<App> {
    let mut app = app(dir)?;
    app.insert_resource(bevy_time::TimeUpdateStrategy::ManualDuration(frame))
        .init_resource::<RunLog>()
        .add_observer(|saved: On<Saved>, mut log: ResMut<RunLog>| log.saved.push(saved.slot))
        .add_observer(|loaded: On<Loaded>, mut log: ResMut<RunLog>| {
            log.loaded.push(loaded.slot);
        });
    new_game(app.world_mut());
    for _ in 0..frames {
        app.update();
        // A game does not wait; a headless run does, so that no save is replaced by a newer
        // one before it starts (the worker's rule), and every run logs the same saves.
        app.world()
            .resource::<savegame_bevy::SaveManager>()
            .manager()
            .flush();
    }
    app.update(); // reports the saves that finished
    app.world_mut().commands().load(SlotId::Quicksave);
    app.world_mut().flush(); // applies the load now, between frames
    app.world_mut()
        .run_system_cached(show_menu)
        .map_err(|e| savegame::Error::Config {
            reason: e.to_string(),
        })?;
    Ok(app)
}

fn show_menu(menu: SaveMenu, mut log: ResMut<RunLog>) {
    if let Ok(slots) = menu.slots() {
        log.menu = slots
            .iter()
            .map(|s| format!("{}: {}", s.slot, s.label().unwrap_or("-")))
            .collect();
    }
}

/// The hero's save id and health.
pub fn hero(world: &mut World) -> Option<(SaveId, Health)> {
    let mut query = world.query_filtered::<(&SaveId, &Health), With<Hero>>();
    query.iter(world).next().map(|(id, h)| (*id, h.clone()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("savegame-bevy-example");
    let app = run_headless(&dir, 40, Duration::from_millis(100))?;
    let log = app.world().resource::<RunLog>();
    println!("saved: {:?}", log.saved);
    println!("loaded: {:?}", log.loaded);
    for line in &log.menu {
        println!("{line}");
    }
    Ok(())
}
