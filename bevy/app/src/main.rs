//! The savegame-bevy example game (`bevy/examples/game.rs`) as a real Bevy app: `DefaultPlugins`,
//! a window, 2D rendering. It plays, saves (a full save, then an incremental one), loads its
//! save back, takes a screenshot of the window, and exits.
//!
//! ```text
//! cd bevy/app && cargo run --ignore-rust-version
//! ```
//!
//! Where there is no display, run it under Xvfb (`xvfb-run -a cargo run …`); where there is no
//! GPU, wgpu renders on the CPU with Mesa's lavapipe (Debian's `mesa-vulkan-drivers`).
//! `SAVEGAME_APP_DIR` is where it saves (a folder of its own in the temporary folder if unset),
//! `SAVEGAME_SCREENSHOT` where the screenshot goes (none if unset). It prints what it did, one
//! line a step, for `tests/window.rs`.

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../../examples/game.rs"]
mod game;

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::WindowResolution;
use savegame::SlotId;
use savegame_bevy::{LoadFailed, Loaded, SaveFailed, Saved, SavegameCommands, Written};

/// The slot the app saves to and loads from.
const SLOT: SlotId = SlotId::Numbered(1);

/// Where the script stands.
#[derive(Resource, Default)]
struct Script {
    frame: u32,
    step: Step,
    screenshot: Option<PathBuf>,
    /// The turn the incremental save holds, to check the load against.
    saved_turn: Option<u64>,
    /// The turn right after the load.
    loaded_turn: Option<u64>,
}

#[derive(Default, PartialEq, Eq, Debug, Clone, Copy)]
enum Step {
    #[default]
    Playing,
    /// A full save asked for; waiting for `Saved`.
    Saving,
    /// Playing on before the incremental save.
    PlayingOn,
    /// The incremental save asked for.
    SavingDelta,
    /// The load asked for.
    Loading,
    /// The screenshot asked for, waiting for its file.
    Shooting,
    Done,
}

fn main() -> AppExit {
    let dir = std::env::var_os("SAVEGAME_APP_DIR").map_or_else(
        || std::env::temp_dir().join("savegame-bevy-app"),
        PathBuf::from,
    );
    let mut app = App::new();
    app.add_plugins(DefaultPlugins.set(WindowPlugin {
        primary_window: Some(Window {
            title: "savegame-bevy".into(),
            resolution: WindowResolution::new(640, 240),
            ..default()
        }),
        ..default()
    }));
    if let Err(e) = game::add_game(&mut app, &dir) {
        eprintln!("the save manager does not build: {e}");
        return AppExit::error();
    }
    app.insert_resource(Script {
        screenshot: std::env::var_os("SAVEGAME_SCREENSHOT").map(PathBuf::from),
        ..default()
    })
    .add_systems(Startup, setup)
    // After the game's systems, so that a save asked for here holds the turn read here.
    .add_systems(PostUpdate, (draw, script))
    .add_observer(|saved: On<Saved>| {
        let kind = if saved.written.is_delta() {
            "delta"
        } else {
            "full"
        };
        println!("saved {} ({kind}, {} entities)", saved.slot, saved.entities);
    })
    .add_observer(|failed: On<SaveFailed>| println!("save failed: {}", failed.error))
    .add_observer(
        |loaded: On<Loaded>, turn: Res<game::Turn>, mut script: ResMut<Script>| {
            println!("loaded {} ({} entities)", loaded.slot, loaded.entities);
            script.loaded_turn = Some(turn.0);
        },
    )
    .add_observer(|failed: On<LoadFailed>| println!("load failed: {}", failed.error));
    app.run()
}

fn setup(mut commands: Commands) {
    commands.spawn(Camera2d);
    commands.queue(|world: &mut World| {
        game::new_game(world);
    });
}

/// What `draw` reads of a saved entity.
type Drawn = (
    Entity,
    Option<&'static game::Position>,
    Has<game::Hero>,
    Option<&'static ChildOf>,
    Option<&'static Transform>,
);

/// The saved entities, drawn: the hero green, monsters red, items yellow above their owner.
/// Their sprites are visuals: added here, never saved, and kept by a load in place.
fn draw(mut commands: Commands, entities: Query<Drawn, With<savegame_bevy::Saveable>>) {
    for (entity, position, hero, child_of, transform) in &entities {
        let (color, size, at) = match (position, child_of) {
            (Some(p), _) => {
                let color = if hero {
                    Color::srgb(0.2, 0.8, 0.3)
                } else {
                    Color::srgb(0.9, 0.2, 0.2)
                };
                (color, 40.0, Vec3::new(p.x as f32 * 20.0 - 280.0, 0.0, 0.0))
            }
            // An item: drawn relative to its parent.
            (None, Some(_)) => (Color::srgb(0.9, 0.8, 0.2), 14.0, Vec3::new(0.0, 40.0, 1.0)),
            (None, None) => continue,
        };
        if transform.is_none() {
            commands.entity(entity).insert((
                Sprite::from_color(color, Vec2::splat(size)),
                Transform::from_translation(at),
            ));
        } else if position.is_some() {
            commands
                .entity(entity)
                .insert(Transform::from_translation(at));
        }
    }
}

/// Plays 20 frames, saves incrementally (the slot's first such save is a full one), plays 10
/// more, saves incrementally again (a delta), loads the slot (which
/// takes the world back to the incremental save), takes a screenshot and exits.
fn script(
    mut commands: Commands,
    mut script: ResMut<Script>,
    turn: Res<game::Turn>,
    mut saved: MessageReader<Saved>,
    mut loaded: MessageReader<Loaded>,
    mut exit: MessageWriter<AppExit>,
) {
    script.frame += 1;
    let saved_now: Vec<Saved> = saved.read().cloned().collect();
    let loaded_now = loaded.read().count();
    match script.step {
        // The first incremental save of a slot is a full one.
        Step::Playing if script.frame >= 20 => {
            commands.save_incremental(SLOT);
            script.step = Step::Saving;
        }
        Step::Saving if saved_now.iter().any(|s| s.slot == SLOT) => script.step = Step::PlayingOn,
        Step::PlayingOn if script.frame >= 30 => {
            commands.save_incremental(SLOT);
            script.saved_turn = Some(turn.0);
            script.step = Step::SavingDelta;
        }
        Step::SavingDelta
            if saved_now
                .iter()
                .any(|s| s.slot == SLOT && matches!(s.written, Written::Delta { .. })) =>
        {
            commands.load(SLOT);
            script.step = Step::Loading;
        }
        Step::Loading if loaded_now > 0 => {
            println!(
                "turn {} after the load (saved at {})",
                script.loaded_turn.unwrap_or_default(),
                script.saved_turn.unwrap_or_default()
            );
            match script.screenshot.clone() {
                Some(path) => {
                    commands
                        .spawn(Screenshot::primary_window())
                        .observe(save_to_disk(path));
                    script.step = Step::Shooting;
                }
                None => script.step = Step::Done,
            }
        }
        Step::Shooting => {
            // Written whole: a PNG ends with its IEND chunk.
            let whole = script.screenshot.as_ref().is_some_and(|p| {
                std::fs::read(p)
                    .is_ok_and(|b| b.ends_with(&[0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]))
            });
            if whole {
                println!("screenshot written");
                script.step = Step::Done;
            }
        }
        Step::Done => {
            println!("done after {} frames", script.frame);
            exit.write(AppExit::Success);
        }
        // A step that never ends is a failure, not a hang.
        step if script.frame > 3_000 => {
            println!("stuck at {step:?} after {} frames", script.frame);
            exit.write(AppExit::error());
        }
        _ => {}
    }
}
