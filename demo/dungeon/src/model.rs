//! The dungeon itself: a grid, a player, monsters and items, one turn at a time. Every random
//! choice comes from the game's own seeded generator, so a run replays exactly.

use std::collections::BTreeMap;

use savegame::{Originator, SaveState};
use serde::{Deserialize, Serialize};

/// The map's size in cells.
pub const WIDTH: i32 = 32;
/// The map's size in cells.
pub const HEIGHT: i32 = 14;

/// A cell of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tile {
    /// Walkable.
    Floor,
    /// Not.
    Wall,
}

/// A cell's coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pos {
    /// The column, 0 at the left.
    pub x: i32,
    /// The row, 0 at the top.
    pub y: i32,
}

impl Pos {
    /// The cell at column `x`, row `y`.
    pub const fn new(x: i32, y: i32) -> Self {
        Pos { x, y }
    }

    fn step(self, dir: Dir) -> Pos {
        let (dx, dy) = match dir {
            Dir::North => (0, -1),
            Dir::South => (0, 1),
            Dir::East => (1, 0),
            Dir::West => (-1, 0),
        };
        Pos::new(self.x + dx, self.y + dy)
    }

    fn distance(self, other: Pos) -> i32 {
        (self.x - other.x).abs() + (self.y - other.y).abs()
    }
}

/// A direction to walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dir {
    /// Up.
    North,
    /// Down.
    South,
    /// Right.
    East,
    /// Left.
    West,
}

impl Dir {
    /// Every direction, in the order monsters try them.
    pub const ALL: [Dir; 4] = [Dir::North, Dir::South, Dir::East, Dir::West];
}

/// Something on the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Item {
    /// Heals 8 hit points when drunk.
    Potion,
    /// Gold.
    Gold,
    /// A key.
    Key,
}

impl Item {
    /// Its name, as inventories, saves and scripts write it.
    pub fn name(self) -> &'static str {
        match self {
            Item::Potion => "potion",
            Item::Gold => "gold",
            Item::Key => "key",
        }
    }

    /// Its symbol on the map.
    pub fn glyph(self) -> char {
        match self {
            Item::Potion => '!',
            Item::Gold => '$',
            Item::Key => 'k',
        }
    }

    /// The item called `name`.
    pub fn from_name(name: &str) -> Option<Item> {
        [Item::Potion, Item::Gold, Item::Key]
            .into_iter()
            .find(|i| i.name() == name)
    }
}

/// What a monster is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MonsterKind {
    /// 3 hit points.
    Rat,
    /// 6 hit points.
    Goblin,
}

/// A monster on the level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Monster {
    /// Which one, for state hashes.
    pub id: u32,
    /// What it is.
    pub kind: MonsterKind,
    /// Where it is.
    pub pos: Pos,
    /// Its hit points.
    pub hp: u32,
}

impl Monster {
    /// Its symbol on the map.
    pub fn glyph(&self) -> char {
        match self.kind {
            MonsterKind::Rat => 'r',
            MonsterKind::Goblin => 'g',
        }
    }
}

/// What the player does with a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Walk (or hit the monster in the way).
    Move(Dir),
    /// Let a turn pass.
    Wait,
    /// Drink a potion from the inventory.
    Quaff,
}

/// The player. Its memento, [`PlayerMemento`] (schema v3), is a copy of its fields; v2 called
/// the inventory `bag`, and had no `max_hp`.
#[derive(Debug, Clone, PartialEq, Eq, Originator)]
#[savegame(derive(Debug, Clone, PartialEq, Eq), validate = "Player::check")]
pub struct Player {
    /// Where the player is.
    pub pos: Pos,
    /// Hit points.
    pub hp: u32,
    /// Hit points at most.
    pub max_hp: u32,
    /// Items by name, and how many.
    pub inventory: BTreeMap<String, u32>,
}

/// What the editor edits: the map and the items on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The cells, row by row.
    pub tiles: Vec<Tile>,
    /// What lies on the floor.
    pub items: BTreeMap<Pos, Item>,
}

/// The level: its layout and who walks it. Its memento, [`LevelMemento`] (schema v3), holds
/// the layout's memento's fields beside its own, the map as rows of text.
#[derive(Debug, Clone, PartialEq, Eq, Originator)]
#[savegame(derive(Debug, Clone, PartialEq, Eq))]
pub struct Level {
    /// Which level, from 1.
    pub number: u32,
    /// The map and its items.
    #[savegame(originator)]
    #[serde(flatten)]
    pub layout: Layout,
    /// Who walks it.
    pub monsters: Vec<Monster>,
}

/// Time and chance: the turn counter, the random generator's state, the playtime. Its
/// memento is [`ClockMemento`] (schema v3).
#[derive(Debug, Clone, PartialEq, Eq, Originator)]
#[savegame(derive(Debug, Clone, PartialEq, Eq))]
pub struct Clock {
    /// Turns played.
    pub turn: u64,
    /// The random generator's state.
    pub rng: u64,
    /// Time played, in milliseconds (1.5 s a turn).
    pub playtime_ms: u64,
}

impl Clock {
    /// SplitMix64: small, fast, and the same on every machine.
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The whole game: what a save holds, and the messages of the last turns (which it does not).
/// A save, a load, a keyframe and a replay's jump all go through it as one: it is a
/// [`SaveState`] (the originators `player`, `level` and `clock`) and an [`Originator`] too,
/// whose [`GameMemento`] a replay records when the player loads a save.
#[derive(Debug, Clone, PartialEq, Eq, SaveState, Originator)]
#[savegame(derive(Debug, Clone, PartialEq, Eq))]
pub struct Game {
    /// The player.
    #[savegame(originator)]
    pub player: Player,
    /// The level.
    #[savegame(originator)]
    pub level: Level,
    /// Turn, chance and playtime.
    #[savegame(originator)]
    pub clock: Clock,
    /// What the last turns said (the last 4); not saved, and cleared by a restore.
    #[savegame(skip, reset)]
    pub messages: Vec<String>,
}

impl Layout {
    /// The cell at `pos`; outside the map, wall.
    pub fn tile(&self, pos: Pos) -> Tile {
        if pos.x < 0 || pos.y < 0 || pos.x >= WIDTH || pos.y >= HEIGHT {
            return Tile::Wall;
        }
        self.tiles[(pos.y * WIDTH + pos.x) as usize]
    }

    /// Sets a cell inside the border (the border stays wall); returns whether it could.
    pub fn set_tile(&mut self, pos: Pos, tile: Tile) -> bool {
        let inside = pos.x > 0 && pos.y > 0 && pos.x < WIDTH - 1 && pos.y < HEIGHT - 1;
        if inside {
            self.tiles[(pos.y * WIDTH + pos.x) as usize] = tile;
            if tile == Tile::Wall {
                self.items.remove(&pos);
            }
        }
        inside
    }
}

impl Level {
    /// The cell at `pos`; outside the map, wall.
    pub fn tile(&self, pos: Pos) -> Tile {
        self.layout.tile(pos)
    }

    /// The index of the monster at `pos`, if one is there.
    pub fn monster_at(&self, pos: Pos) -> Option<usize> {
        self.monsters.iter().position(|m| m.pos == pos)
    }

    fn free(&self, pos: Pos, player: Pos) -> bool {
        self.tile(pos) == Tile::Floor && self.monster_at(pos).is_none() && pos != player
    }
}

impl Game {
    /// A new game on level 1, generated from `seed`.
    pub fn new(seed: u64) -> Game {
        let mut clock = Clock {
            turn: 0,
            rng: seed,
            playtime_ms: 0,
        };
        let mut tiles = vec![Tile::Floor; (WIDTH * HEIGHT) as usize];
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                let border = x == 0 || y == 0 || x == WIDTH - 1 || y == HEIGHT - 1;
                let pillar = x % 6 == 3 && y % 4 == 2 && clock.below(3) > 0;
                if border || pillar {
                    tiles[(y * WIDTH + x) as usize] = Tile::Wall;
                }
            }
        }
        let mut level = Level {
            number: 1,
            layout: Layout {
                tiles,
                items: BTreeMap::new(),
            },
            monsters: Vec::new(),
        };
        let start = Pos::new(2, 2);
        let free_cell = |level: &Level, clock: &mut Clock| loop {
            let pos = Pos::new(
                1 + clock.below((WIDTH - 2) as u64) as i32,
                1 + clock.below((HEIGHT - 2) as u64) as i32,
            );
            let taken = level.layout.items.contains_key(&pos);
            if level.free(pos, start) && !taken && pos.distance(start) > 3 {
                return pos;
            }
        };
        for item in [
            Item::Potion,
            Item::Potion,
            Item::Gold,
            Item::Gold,
            Item::Gold,
            Item::Key,
        ] {
            let pos = free_cell(&level, &mut clock);
            level.layout.items.insert(pos, item);
        }
        for id in 0..4 {
            let pos = free_cell(&level, &mut clock);
            let kind = if id % 2 == 0 {
                MonsterKind::Rat
            } else {
                MonsterKind::Goblin
            };
            let hp = if kind == MonsterKind::Rat { 3 } else { 6 };
            level.monsters.push(Monster { id, kind, pos, hp });
        }
        Game {
            player: Player {
                pos: start,
                hp: 20,
                max_hp: 20,
                inventory: BTreeMap::new(),
            },
            level,
            clock,
            messages: vec!["You enter the dungeon.".into()],
        }
    }

    /// The player has no hit points left.
    pub fn is_dead(&self) -> bool {
        self.player.hp == 0
    }

    fn say(&mut self, message: impl Into<String>) {
        self.messages.push(message.into());
        if self.messages.len() > 4 {
            self.messages.remove(0);
        }
    }

    /// Plays one turn: the player's action, then every monster's.
    pub fn step(&mut self, action: Action) {
        if self.is_dead() {
            self.say("You are dead. Load a save.");
            return;
        }
        match action {
            Action::Wait => {}
            Action::Quaff => match self.player.inventory.get_mut("potion") {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    if *n == 0 {
                        self.player.inventory.remove("potion");
                    }
                    self.player.hp = (self.player.hp + 8).min(self.player.max_hp);
                    self.say("You drink a potion.");
                }
                _ => self.say("You have no potion."),
            },
            Action::Move(dir) => self.walk(dir),
        }
        self.monsters_act();
        self.clock.turn += 1;
        self.clock.playtime_ms += 1_500;
    }

    fn walk(&mut self, dir: Dir) {
        let to = self.player.pos.step(dir);
        if let Some(i) = self.level.monster_at(to) {
            let damage = 2 + self.clock.below(3) as u32;
            let monster = &mut self.level.monsters[i];
            monster.hp = monster.hp.saturating_sub(damage);
            let name = format!("{:?}", monster.kind).to_lowercase();
            if monster.hp == 0 {
                self.level.monsters.remove(i);
                self.say(format!("You slay the {name}."));
            } else {
                self.say(format!("You hit the {name}."));
            }
            return;
        }
        if self.level.tile(to) == Tile::Wall {
            self.say("A wall blocks the way.");
            return;
        }
        self.player.pos = to;
        if let Some(item) = self.level.layout.items.remove(&to) {
            *self
                .player
                .inventory
                .entry(item.name().to_owned())
                .or_default() += 1;
            self.say(format!("You pick up a {}.", item.name()));
        }
    }

    fn monsters_act(&mut self) {
        for i in 0..self.level.monsters.len() {
            let (pos, kind) = (self.level.monsters[i].pos, self.level.monsters[i].kind);
            let player = self.player.pos;
            if pos.distance(player) == 1 {
                let damage = 1 + self.clock.below(2) as u32;
                self.player.hp = self.player.hp.saturating_sub(damage);
                self.say(format!(
                    "The {} bites you.",
                    format!("{kind:?}").to_lowercase()
                ));
                if self.player.hp == 0 {
                    self.say("You die.");
                    return;
                }
                continue;
            }
            let dir = if pos.distance(player) <= 6 {
                Dir::ALL
                    .into_iter()
                    .min_by_key(|d| pos.step(*d).distance(player))
                    .unwrap_or(Dir::North)
            } else {
                Dir::ALL[self.clock.below(4) as usize]
            };
            let to = pos.step(dir);
            if self.level.free(to, player) {
                self.level.monsters[i].pos = to;
            }
        }
    }

    /// A digest of everything a turn can change: replays compare it frame by frame.
    pub fn state_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |n: i64| {
            for b in n.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        eat(self.player.pos.x.into());
        eat(self.player.pos.y.into());
        eat(self.player.hp.into());
        eat(self.clock.turn as i64);
        eat(self.clock.rng as i64);
        for m in &self.level.monsters {
            eat(m.id.into());
            eat(m.pos.x.into());
            eat(m.pos.y.into());
            eat(m.hp.into());
        }
        eat(self.level.layout.items.len() as i64);
        // The walls too: the editor changes them, and a replay checks its edits.
        for (i, tile) in self.level.layout.tiles.iter().enumerate() {
            if *tile == Tile::Wall {
                eat(i as i64);
            }
        }
        h
    }
}

impl Player {
    /// A memento the game refuses: more hit points than the maximum.
    fn check(m: &PlayerMemento) -> savegame::Result<()> {
        if m.hp > m.max_hp {
            return Err(savegame::Error::rejected("hit points above the maximum"));
        }
        Ok(())
    }
}

/// An item on the floor, in a memento (maps with struct keys do not fit JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedItem {
    /// Where it lies.
    pub pos: Pos,
    /// What it is.
    pub item: Item,
}

/// The layout's memento: the editor's history records these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutMemento {
    /// The map, a row of `#` and `.` per line.
    pub rows: Vec<String>,
    /// What lies on the floor.
    pub items: Vec<PlacedItem>,
}

impl Originator for Layout {
    type Memento = LayoutMemento;

    fn create_memento(&self) -> LayoutMemento {
        let rows = self
            .tiles
            .chunks(WIDTH as usize)
            .map(|row| {
                row.iter()
                    .map(|t| if *t == Tile::Wall { '#' } else { '.' })
                    .collect()
            })
            .collect();
        LayoutMemento {
            rows,
            items: self
                .items
                .iter()
                .map(|(pos, item)| PlacedItem {
                    pos: *pos,
                    item: *item,
                })
                .collect(),
        }
    }

    fn restore_memento(&mut self, m: LayoutMemento) -> savegame::Result<()> {
        let well_formed = m.rows.len() == HEIGHT as usize
            && m.rows.iter().all(|r| r.chars().count() == WIDTH as usize);
        if !well_formed {
            return Err(savegame::Error::rejected("the map is not 32 by 14"));
        }
        let tiles = m
            .rows
            .iter()
            .flat_map(|r| r.chars())
            .map(|c| if c == '#' { Tile::Wall } else { Tile::Floor })
            .collect();
        *self = Layout {
            tiles,
            items: m.items.into_iter().map(|p| (p.pos, p.item)).collect(),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_actions_give_the_same_game() {
        let actions = [
            Action::Move(Dir::East),
            Action::Move(Dir::South),
            Action::Wait,
            Action::Quaff,
            Action::Move(Dir::East),
        ];
        let run = || {
            let mut g = Game::new(7);
            for _ in 0..20 {
                for a in actions {
                    g.step(a);
                }
            }
            g
        };
        assert_eq!(run(), run());
        assert_eq!(run().state_hash(), run().state_hash());
        assert_ne!(Game::new(7).state_hash(), Game::new(8).state_hash());
    }

    #[test]
    fn mementos_round_trip() {
        let mut g = Game::new(3);
        for _ in 0..10 {
            g.step(Action::Move(Dir::East));
        }
        let mut level = Game::new(99).level;
        level.restore_memento(g.level.create_memento()).unwrap();
        assert_eq!(level, g.level);
        let mut player = Game::new(99).player;
        player.restore_memento(g.player.create_memento()).unwrap();
        assert_eq!(player, g.player);
    }
}
