//! The save schema of a game that shipped three versions (the migrations story):
//!
//! - v1: `player { hp, pos: [x, y], inventory }`, `world { entities: [{ id, kind, x, y }] }`
//!   with `kind` a string.
//! - v2: `hp` renamed `health`; `pos` moved into `position: { x, y, z }` with `z = 0`;
//!   `stamina` added (default 100).
//! - v3: `player.inventory` split out into its own memento, `inventory`; each entity's `kind`
//!   a number, through [`KINDS`].
//!
//! The steps that migrate saves live in the repository's `migrations/` folder (declarative)
//! and in [`rust_steps`] (the same story in Rust). The `expected_*` functions convert states
//! by hand, independently of both, to check them.
#![allow(dead_code)]

use std::collections::BTreeMap;

use savegame::migrate::{Document, MigrationError, Migrations, Value};
use serde::{Deserialize, Serialize};

use super::game::Rng;

/// The kind table of v3.
pub const KINDS: [(&str, u32); 4] = [("tree", 1), ("rock", 2), ("chest", 3), ("monster", 4)];

pub mod v1 {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Player {
        pub hp: u32,
        pub pos: [f32; 2],
        pub inventory: BTreeMap<String, u32>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Entity {
        pub id: u32,
        pub kind: String,
        pub x: f32,
        pub y: f32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct World {
        pub entities: Vec<Entity>,
    }
}

pub mod v2 {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Player {
        pub health: u32,
        pub position: Position,
        pub stamina: u32,
        pub inventory: BTreeMap<String, u32>,
    }

    /// The world did not change in v2.
    pub type World = super::v1::World;
}

pub mod v3 {
    use super::*;

    pub use super::v2::Position;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Player {
        pub health: u32,
        pub position: Position,
        pub stamina: u32,
    }

    pub type Inventory = BTreeMap<String, u32>;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Entity {
        pub id: u32,
        pub kind: u32,
        pub x: f32,
        pub y: f32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct World {
        pub entities: Vec<Entity>,
    }

    /// A whole v3 game: what each fixture's `.expected.json` file holds.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Game {
        pub player: Player,
        pub inventory: Inventory,
        pub world: World,
    }
}

/// A v1 state generated from `seed`, with `entities` entities.
pub fn v1_state(seed: u64, entities: usize) -> (v1::Player, v1::World) {
    let mut rng = Rng::new(seed);
    let mut inventory = BTreeMap::new();
    for item in ["potion", "arrow", "élixir", "key"] {
        if rng.below(2) == 0 {
            inventory.insert(item.to_string(), rng.below(50) as u32);
        }
    }
    let player = v1::Player {
        hp: rng.below(200) as u32,
        pos: [rng.coord(), rng.coord()],
        inventory,
    };
    let world = v1::World {
        entities: (0..entities as u32)
            .map(|id| v1::Entity {
                id,
                kind: KINDS[rng.below(4) as usize].0.to_string(),
                x: rng.coord(),
                y: rng.coord(),
            })
            .collect(),
    };
    (player, world)
}

/// The v2 player a v1 player becomes, by hand.
pub fn expected_v2(p: &v1::Player) -> v2::Player {
    v2::Player {
        health: p.hp,
        position: v2::Position {
            x: p.pos[0],
            y: p.pos[1],
            z: 0.0,
        },
        stamina: 100,
        inventory: p.inventory.clone(),
    }
}

/// The v3 game a v2 state becomes, by hand.
pub fn expected_v3(p: &v2::Player, w: &v2::World) -> v3::Game {
    v3::Game {
        player: v3::Player {
            health: p.health,
            position: p.position,
            stamina: p.stamina,
        },
        inventory: p.inventory.clone(),
        world: v3::World {
            entities: w
                .entities
                .iter()
                .map(|e| v3::Entity {
                    id: e.id,
                    kind: KINDS
                        .iter()
                        .find(|(name, _)| *name == e.kind)
                        .map(|(_, n)| *n)
                        .unwrap_or(0),
                    x: e.x,
                    y: e.y,
                })
                .collect(),
        },
    }
}

/// The same story as the `migrations/` folder, as Rust steps.
pub fn rust_steps() -> Migrations {
    Migrations::new()
        .step(2, "rename_hp_position_stamina", |doc: &mut Document| {
            let player = doc.memento_mut("player")?;
            player.rename("hp", "health");
            let pos = player
                .remove("pos")
                .ok_or_else(|| MigrationError::new("/player/pos", "missing"))?;
            let Value::Array(xy) = pos else {
                return Err(MigrationError::new("/player/pos", "not an array"));
            };
            let [x, y] = <[Value; 2]>::try_from(xy)
                .map_err(|_| MigrationError::new("/player/pos", "not two numbers"))?;
            let position: Value = [
                ("x".to_string(), x),
                ("y".to_string(), y),
                ("z".to_string(), Value::from(0.0)),
            ]
            .into_iter()
            .collect();
            player.insert("position", position);
            player.insert_if_absent("stamina", 100);
            Ok(())
        })
        .step(3, "split_inventory_kind_ids", |doc: &mut Document| {
            doc.split("player", "inventory", "inventory")?;
            let entities = doc
                .memento_mut("world")?
                .get_mut("entities")
                .ok_or_else(|| MigrationError::new("/world/entities", "missing"))?;
            for (i, entity) in entities.elements_mut().enumerate() {
                let kind = entity
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let id = KINDS
                    .iter()
                    .find(|(name, _)| *name == kind)
                    .map(|(_, n)| *n)
                    .ok_or_else(|| {
                        MigrationError::new(
                            format!("/world/entities/{i}/kind"),
                            format!("unknown kind {kind:?}"),
                        )
                    })?;
                entity.insert("kind", id);
            }
            Ok(())
        })
}
