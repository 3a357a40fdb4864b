//! Everything the game asks of `savegame`: the manager, the slots menu, saving, loading,
//! autosaving in the background, and the save schema's history.

use std::path::PathBuf;

use savegame::migrate::{MigrationError, Migrations, Value};
use savegame::{Key, SaveHandle, SaveLoadManager, SaveStatus, SlotId, SlotStatus, Snapshot};

use crate::model::Game;

/// The key compiled into the game. It stops players from editing saves in a text editor and
/// makes tampering detectable; anyone who takes the binary apart can find it, so it is
/// obfuscation, not secrecy.
pub const KEY: [u8; 32] = *b"dungeon: obfuscation, not secret";

/// The save schema of this version of the game. v1 kept the player's position as `x`, `y`
/// and the bag as a list of item names; v2 made the position `pos: {x, y}` and the bag a
/// map of counts; v3 renamed the bag `inventory` and added `max_hp`.
pub const SCHEMA: u32 = 3;

/// The game's migrations: v2 in Rust (a list becomes counts, which JSON Patch cannot say),
/// v3 as a declarative step file from `migrations/`.
pub fn migrations() -> savegame::Result<Migrations> {
    let v2 = Migrations::new().step(2, "position_and_bag_counts", |doc| {
        let player = doc.memento_mut("player")?;
        let x = player
            .remove("x")
            .ok_or_else(|| MigrationError::new("/player/x", "missing"))?;
        let y = player
            .remove("y")
            .ok_or_else(|| MigrationError::new("/player/y", "missing"))?;
        player.insert(
            "pos",
            [("x".to_string(), x), ("y".to_string(), y)]
                .into_iter()
                .collect::<Value>(),
        );
        let Some(Value::Array(bag)) = player.remove("bag") else {
            return Err(MigrationError::new("/player/bag", "not a list"));
        };
        let mut counts = std::collections::BTreeMap::<String, u32>::new();
        for (i, item) in bag.iter().enumerate() {
            let name = item.as_str().ok_or_else(|| {
                MigrationError::new(format!("/player/bag/{i}"), "not an item name")
            })?;
            *counts.entry(name.to_owned()).or_default() += 1;
        }
        player.insert("bag", counts.into_iter().collect::<Value>());
        Ok(())
    });
    Ok(v2.with(savegame::embed_migrations!("migrations")?))
}

/// The slot kinds the menu shows.
fn slot_label(slot: SlotId) -> String {
    match slot {
        SlotId::Numbered(n) => format!("{n}"),
        SlotId::Autosave(n) => format!("A{n}"),
        _ => "Q".into(),
    }
}

/// A slot as a sentence says it: "slot 2", "autosave 1", "the quicksave".
pub fn slot_name(slot: SlotId) -> String {
    match slot {
        SlotId::Numbered(n) => format!("slot {n}"),
        SlotId::Autosave(n) => format!("autosave {n}"),
        _ => "the quicksave".into(),
    }
}

/// The saves of one player: the manager and what the status line shows.
pub struct Saves {
    manager: SaveLoadManager,
    /// The slot the game was last saved to or loaded from.
    pub slot: Option<SlotId>,
    /// The game in play was loaded from a backup of its slot (its primary was damaged).
    pub from_backup: bool,
    /// Autosave every this many turns.
    pub autosave_every: u64,
    pending: Option<(u64, SaveHandle)>,
    /// What the status line says about autosaves.
    pub autosave_note: String,
}

impl Saves {
    /// The saves in `dir`, or in the platform's data folder.
    pub fn open(dir: Option<PathBuf>, autosave_every: u64) -> savegame::Result<Saves> {
        let builder = SaveLoadManager::builder();
        let builder = match dir {
            Some(dir) => builder.directory(dir),
            None => builder.app("org", "savegame", "dungeon"),
        };
        let manager = builder
            .key(Key::from_bytes(KEY))
            .schema_version(SCHEMA)
            .migrations(migrations()?)
            .autosave_slots(3)
            .build()?;
        Ok(Saves {
            manager,
            slot: None,
            from_backup: false,
            autosave_every,
            pending: None,
            autosave_note: "autosave: none yet".into(),
        })
    }

    /// Where the saves are.
    pub fn folder(&self) -> PathBuf {
        let path = self.manager.path_of(SlotId::Numbered(1));
        path.parent().map(PathBuf::from).unwrap_or(path)
    }

    /// The manager: replays are recorded and played with its key, schema and migrations.
    pub fn manager(&self) -> &SaveLoadManager {
        &self.manager
    }

    /// The game as a snapshot, with what the load menu shows. Capturing only copies the
    /// state; encoding happens when the save is written (on the worker, for an autosave).
    pub fn snapshot(&self, game: &Game) -> savegame::Result<Snapshot> {
        let mut s = self
            .manager
            .snapshot()
            .with_label(format!(
                "Level {}, turn {}",
                game.level.number, game.clock.turn
            ))
            .with_playtime(std::time::Duration::from_millis(game.clock.playtime_ms))
            .with_app_version(env!("CARGO_PKG_VERSION"));
        game.capture(&mut s)?;
        Ok(s)
    }

    /// Saves to `slot` (a numbered slot, or the quicksave); returns what to tell the player.
    pub fn save(&mut self, slot: SlotId, snapshot: &Snapshot) -> Result<String, String> {
        let name = slot_name(slot);
        let report = self
            .manager
            .save(slot, snapshot)
            .map_err(|e| format!("Could not save to {name}: {e}"))?;
        let mut message = if slot == SlotId::Quicksave {
            format!("Quicksaved ({} bytes); F9 loads it.", report.bytes)
        } else {
            format!("Saved to {name} ({} bytes).", report.bytes)
        };
        if self.from_backup {
            message.push_str(&format!(
                " (This game was recovered from a backup; {name} now holds it.)"
            ));
        }
        self.slot = Some(slot);
        self.from_backup = false;
        Ok(message)
    }

    /// Loads a slot into a game; returns the game, the loaded snapshot (for the editor's
    /// history) and what to tell the player.
    pub fn load(&mut self, slot: SlotId) -> Result<(Game, Snapshot, String), String> {
        if let Ok(false) = self.manager.exists(slot) {
            return Err(match slot {
                SlotId::Quicksave => "No quicksave yet: F5 makes one.".into(),
                SlotId::Autosave(_) => format!("No {} yet.", slot_name(slot)),
                _ => format!("Slot {} is empty.", slot_label(slot)),
            });
        }
        let loaded = self
            .manager
            .load(slot)
            .map_err(|e| format!("Could not load {}: {e}", slot_name(slot)))?;
        let mut game = Game::new(0);
        game.restore(&loaded.snapshot)
            .map_err(|e| format!("Slot {} holds a broken game: {e}", slot_label(slot)))?;
        let mut message = format!("Loaded {}.", slot_name(slot));
        if let Some(backup) = loaded.report.recovered_from_backup {
            message = format!(
                "Slot {} was damaged; loaded its backup {backup} instead.",
                slot_label(slot)
            );
        }
        if let Some(v) = loaded.report.migrated_from {
            message.push_str(&format!(
                " (An old save, from schema v{v}: brought up to v{SCHEMA}.)"
            ));
        }
        self.slot = Some(slot);
        self.from_backup = loaded.report.recovered_from_backup.is_some();
        Ok((game, loaded.snapshot, message))
    }

    /// The load menu: one line per slot, from headers alone.
    pub fn menu(&self) -> Vec<String> {
        let slots = match self.manager.list() {
            Ok(slots) => slots,
            Err(e) => return vec![format!("The saves cannot be listed: {e}")],
        };
        if slots.is_empty() {
            return vec!["No saves yet.".into()];
        }
        let newest_autosave = slots
            .iter()
            .filter(|info| info.is_autosave())
            .filter_map(|info| Some((info.saved_at()?, info.slot)))
            .max()
            .map(|(_, slot)| slot);
        let mut lines = vec![format!(
            "{:<4} {:<22} {:>8} {:<17} {}",
            "slot", "label", "played", "saved at (UTC)", "state"
        )];
        for info in slots {
            let state = match &info.status {
                SlotStatus::Ready => "ok".to_string(),
                SlotStatus::NewerSchema { found, .. } => format!("NEWER VERSION (v{found})"),
                SlotStatus::NeedsKey => "needs another key".into(),
                SlotStatus::Unreadable { .. } if info.backups > 0 => {
                    "DAMAGED - loads its backup".into()
                }
                SlotStatus::Unreadable { .. } => "CORRUPT".into(),
                other => format!("{other:?}"),
            };
            let state = if Some(info.slot) == newest_autosave {
                format!("{state}, newest (a)")
            } else {
                state
            };
            lines.push(format!(
                "{:<4} {:<22} {:>8} {:<17} {}",
                slot_label(info.slot),
                info.label().unwrap_or("-"),
                info.playtime().map_or("-".into(), crate::ui::playtime),
                info.saved_at().map_or("-".into(), crate::ui::time),
                state
            ));
        }
        lines
    }

    /// The autosave written last (the rotation reuses its oldest slot, so this is not always
    /// autosave 1), after waiting for one still being written. `None` when there is none.
    pub fn newest_autosave(&mut self) -> Option<SlotId> {
        self.flush();
        let slots = self.manager.list().ok()?;
        slots
            .into_iter()
            .filter(|info| info.is_autosave())
            .filter_map(|info| Some((info.saved_at()?, info.slot)))
            .max()
            .map(|(_, slot)| slot)
    }

    /// Is an autosave due after turn `turn`?
    pub fn autosave_due(&self, turn: u64) -> bool {
        self.autosave_every > 0 && turn > 0 && turn.is_multiple_of(self.autosave_every)
    }

    /// An autosave in the background: the game never waits for it; [`poll`](Self::poll)
    /// reports when it lands.
    pub fn autosave(&mut self, turn: u64, snapshot: Snapshot) {
        self.poll();
        let handle = self.manager.autosave_in_background(snapshot);
        self.pending = Some((turn, handle));
        self.autosave_note = format!("autosave: saving turn {turn}...");
    }

    /// Notes a background autosave that has landed.
    pub fn poll(&mut self) {
        let Some((turn, handle)) = self.pending.take() else {
            return;
        };
        match handle.status() {
            SaveStatus::Queued | SaveStatus::Writing => self.pending = Some((turn, handle)),
            SaveStatus::Saved => {
                let slot = handle
                    .wait()
                    .map(|r| slot_label(r.slot))
                    .unwrap_or_default();
                self.autosave_note = format!("autosave: turn {turn} saved to {slot}");
            }
            _ => match handle.wait() {
                Ok(_) => {}
                Err(savegame::Error::Superseded) => {}
                Err(e) => self.autosave_note = format!("autosave FAILED: {e}"),
            },
        }
    }

    /// Waits for a pending autosave (when quitting, or before a test looks at the folder).
    pub fn flush(&mut self) {
        let errors = self.manager.flush();
        self.poll();
        if let Some(e) = errors.first() {
            self.autosave_note = format!("autosave FAILED: {e}");
        }
    }
}
