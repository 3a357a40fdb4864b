//! A small game model, shared by the examples, the integration tests and the benchmarks:
//! a `Player` and a `World`, both `Originator`s, generated deterministically from a seed.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

use savegame::{Originator, SaveState};
use serde::{Deserialize, Serialize};

/// A position in the world.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

/// The player: health, position and an inventory. Its memento, `PlayerMemento`, is derived:
/// a copy of every field but the transient one.
#[derive(Debug, Clone, PartialEq, Default, Originator)]
#[savegame(derive(Debug, Clone, PartialEq))]
pub struct Player {
    pub name: String,
    pub health: u32,
    pub position: Option<Vec3>,
    pub inventory: BTreeMap<String, u32>,
    /// Transient state that is not saved, and starts again at 0 on a load.
    #[savegame(skip, reset)]
    pub frames_since_hit: u32,
}

/// What an entity is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EntityKind {
    Tree,
    Rock,
    Chest { gold: u32 },
    Monster { hp: u16, angry: bool },
}

/// One thing in the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub id: u32,
    pub kind: EntityKind,
    pub position: Vec3,
}

/// The world: entities, and names for some of them. It is plain data already, so it is its
/// own memento.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Originator)]
#[savegame(self_memento)]
pub struct World {
    pub entities: Vec<Entity>,
    pub names: HashMap<u32, String>,
}

/// The game the quickstart saves: a player and a world, saved and loaded in one call
/// (`player` and `world` are their ids).
#[derive(Debug, Clone, PartialEq, Default, SaveState)]
#[savegame(describe = "Game::describe")]
pub struct Game {
    pub player: Player,
    pub world: World,
}

impl Game {
    /// What the load menu shows.
    fn describe(&self, metadata: &mut savegame::Metadata) {
        metadata.label = "Level 3".into();
        metadata.playtime = std::time::Duration::from_secs(3_725);
        metadata.app_version = env!("CARGO_PKG_VERSION").into();
    }
}

/// A small deterministic random number generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn coord(&mut self) -> f32 {
        (self.below(2_000_000) as f32 - 1_000_000.0) / 100.0
    }
}

const ITEMS: [&str; 6] = ["potion", "arrow", "key", "gem", "scroll", "bread"];
const NAMES: [&str; 8] = [
    "Old Oak", "Grumble", "Mossback", "Glint", "Shade", "Bramble", "Ember", "Whisper",
];

impl Player {
    /// A player generated from `seed`.
    pub fn generate(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut inventory = BTreeMap::new();
        for item in ITEMS {
            if rng.below(3) > 0 {
                inventory.insert(item.to_string(), rng.below(99) as u32 + 1);
            }
        }
        Player {
            name: format!("Aurelia the {}", seed % 1000),
            health: rng.below(100) as u32 + 1,
            position: Some(Vec3 {
                x: rng.coord(),
                y: rng.coord(),
                z: 0.0,
            }),
            inventory,
            frames_since_hit: 17,
        }
    }
}

impl World {
    /// A world of `entities` entities generated from `seed`; about one in three has a name.
    pub fn generate(entities: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5EED);
        let mut world = World::default();
        for id in 0..entities as u32 {
            let kind = match rng.below(4) {
                0 => EntityKind::Tree,
                1 => EntityKind::Rock,
                2 => EntityKind::Chest {
                    gold: rng.below(500) as u32,
                },
                _ => EntityKind::Monster {
                    hp: rng.below(300) as u16,
                    angry: rng.below(2) == 0,
                },
            };
            let position = Vec3 {
                x: rng.coord(),
                y: rng.coord(),
                z: rng.coord(),
            };
            world.entities.push(Entity { id, kind, position });
            if rng.below(3) == 0 {
                let name = NAMES[rng.below(NAMES.len() as u64) as usize];
                world.names.insert(id, format!("{name} #{id}"));
            }
        }
        world
    }

    /// The world cut into worlds of `size` entities each, in order, each with its entities'
    /// names: the chunks an open-world game keeps as one memento each.
    pub fn chunks(&self, size: usize) -> Vec<World> {
        self.entities
            .chunks(size)
            .map(|part| World {
                entities: part.to_vec(),
                names: part
                    .iter()
                    .filter_map(|e| self.names.get(&e.id).map(|n| (e.id, n.clone())))
                    .collect(),
            })
            .collect()
    }
}

/// A world kept as one memento per entity, with dirty flags: what incremental saves are for.
/// Changing an entity marks it dirty; an incremental save captures only the dirty ones, and
/// the deletions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DirtyWorld {
    pub entities: BTreeMap<u32, Entity>,
    pub dirty: std::collections::BTreeSet<u32>,
    pub deleted: std::collections::BTreeSet<u32>,
}

impl DirtyWorld {
    /// The memento id of entity `id`.
    pub fn id_of(id: u32) -> String {
        format!("entity/{id:06}")
    }

    pub fn generate(entities: usize, seed: u64) -> Self {
        DirtyWorld {
            entities: World::generate(entities, seed)
                .entities
                .into_iter()
                .map(|e| (e.id, e))
                .collect(),
            ..DirtyWorld::default()
        }
    }

    /// Moves `count` random entities, deletes `deleted` and spawns `spawned` new ones.
    pub fn play(&mut self, rng: &mut Rng, count: usize, deleted: usize, spawned: usize) {
        let ids: Vec<u32> = self.entities.keys().copied().collect();
        for _ in 0..count {
            let id = ids[rng.below(ids.len() as u64) as usize];
            if let Some(e) = self.entities.get_mut(&id) {
                e.position.x += 1.0;
                e.kind = EntityKind::Monster {
                    hp: rng.below(300) as u16,
                    angry: true,
                };
                self.dirty.insert(id);
            }
        }
        for _ in 0..deleted {
            let id = ids[rng.below(ids.len() as u64) as usize];
            if self.entities.remove(&id).is_some() {
                self.dirty.remove(&id);
                self.deleted.insert(id);
            }
        }
        let mut next = self.entities.keys().last().map_or(0, |id| id + 1);
        for _ in 0..spawned {
            while self.deleted.contains(&next) {
                next += 1;
            }
            let position = Vec3 {
                x: rng.coord(),
                y: rng.coord(),
                z: 0.0,
            };
            self.entities.insert(
                next,
                Entity {
                    id: next,
                    kind: EntityKind::Tree,
                    position,
                },
            );
            self.dirty.insert(next);
            next += 1;
        }
    }

    /// Every entity, for a full save.
    pub fn capture_all(&self, snapshot: &mut savegame::Snapshot) -> savegame::Result<()> {
        for (id, e) in &self.entities {
            snapshot.capture_memento(&Self::id_of(*id), e)?;
        }
        Ok(())
    }

    /// What changed since the last save: dirty entities and deletions.
    pub fn capture_changes(&self, snapshot: &mut savegame::Snapshot) -> savegame::Result<()> {
        for id in &self.dirty {
            snapshot.capture_memento(&Self::id_of(*id), &self.entities[id])?;
        }
        for id in &self.deleted {
            snapshot.mark_deleted(&Self::id_of(*id))?;
        }
        Ok(())
    }

    /// After a save: nothing is dirty any more.
    pub fn saved(&mut self) {
        self.dirty.clear();
        self.deleted.clear();
    }

    /// The entities a loaded snapshot holds.
    pub fn restore(snapshot: &savegame::Snapshot) -> savegame::Result<BTreeMap<u32, Entity>> {
        snapshot
            .ids()
            .filter(|id| id.starts_with("entity/"))
            .map(|id| {
                let e: Entity = snapshot.memento(id)?;
                Ok((e.id, e))
            })
            .collect()
    }
}
