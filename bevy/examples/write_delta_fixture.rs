//! Writes `fixtures/v2-deltas.sav` and its journal, `fixtures/v2-deltas.sav.journal`: a slot
//! of version 2 of the example game (`examples/game.rs`) saved incrementally, a full save and
//! two deltas. The committed files were written at commit f56b342, in the layout deltas had
//! before rows (one memento per entity and component: `bevy/entity/<id>`,
//! `component/<name>/<id>`, deletions of the values an entity lost); run today, it writes
//! today's layout. The first delta outgrew half of the small base, so the manager compacted it
//! into the base: the base holds its per-entity mementos, the journal the second delta. Run
//! once; the files are committed and never regenerated (this program refuses to overwrite
//! them). `tests/fixtures.rs` loads them and checks the outcome written in
//! `fixtures/README.md`.
//!
//! ```text
//! cargo run -p savegame-bevy --example write_delta_fixture -- bevy/fixtures/v2-deltas.sav
//! ```

#[allow(dead_code, unreachable_pub)]
#[path = "game.rs"]
mod game;

use bevy_ecs::prelude::*;
use bevy_ecs::system::Command;
use game::{Gold, Health, Name, Position, Turn};
use savegame::SlotId;
use savegame_bevy::{SaveCommand, SaveManager};

fn named(world: &mut World, name: &str) -> Result<Entity, String> {
    let mut query = world.query::<(Entity, &Name)>();
    query
        .iter(world)
        .find(|(_, n)| n.0 == name)
        .map(|(e, _)| e)
        .ok_or_else(|| format!("no {name}"))
}

/// An incremental save of slot 1, waited for.
fn save(world: &mut World) -> Result<(), Box<dyn std::error::Error>> {
    SaveCommand::incremental(SlotId::Numbered(1)).apply(world);
    let errors = world.resource::<SaveManager>().manager().flush();
    match errors.into_iter().next() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: write_delta_fixture OUTPUT_FILE")?;
    let journal = format!("{out}.journal");
    for file in [&out, &journal] {
        if std::path::Path::new(file).exists() {
            return Err(format!("{file} exists; fixtures are never regenerated").into());
        }
    }
    let dir = tempfile::tempdir()?;
    // The game's app, never updated: its systems do not run, only the saves given here.
    let mut app = game::app(dir.path())?;
    let world = app.world_mut();
    let hero = game::new_game(world);
    world.insert_resource(Turn(3));
    world.insert_resource(Gold(1));
    // The base: a full save (the slot's first incremental save).
    save(world)?;

    // Delta 1: the hero moved and was bitten, the bat was bitten, a potion joined the hero's
    // items, a turn passed.
    world.get_mut::<Position>(hero).ok_or("hero")?.x = 2;
    world.get_mut::<Health>(hero).ok_or("hero")?.current = 27;
    let bat = named(world, "bat")?;
    world.get_mut::<Health>(bat).ok_or("bat")?.current = 4;
    world.spawn((
        savegame_bevy::Saveable,
        Name("potion".into()),
        ChildOf(hero),
    ));
    world.insert_resource(Turn(4));
    save(world)?;

    // Delta 2: the rat is gone, the bat lost its health (its value from delta 1 is deleted),
    // the sword was dropped (no parent), gold was found.
    let rat = named(world, "rat")?;
    world.despawn(rat);
    world.entity_mut(bat).remove::<Health>();
    let sword = named(world, "sword")?;
    world.entity_mut(sword).remove::<ChildOf>();
    world.insert_resource(Gold(9));
    save(world)?;

    let name = SlotId::Numbered(1).file_name();
    std::fs::copy(dir.path().join(&name), &out)?;
    std::fs::copy(dir.path().join(format!("{name}.journal")), &journal)?;
    println!("wrote {out} and {journal}");
    Ok(())
}
