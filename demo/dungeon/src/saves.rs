//! Everything the game asks of `savegame`: the manager, the slots menu, saving, loading,
//! autosaving in the background, and the save schema's history.

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;

use savegame::migrate::{MigrationError, Migrations, Value};
use savegame::{
    Key, SaveHandle, SaveLoadManager, SaveState, SaveStatus, SlotId, SlotStatus, Snapshot,
};

use crate::model::Game;

/// The key compiled into the game. It stops players from editing saves in a text editor and
/// makes tampering detectable; anyone who takes the binary apart can find it, so it is
/// obfuscation, not secrecy. A developer gets it with `dungeon --print-key` (dev builds).
pub const KEY: [u8; 32] = *b"dungeon: obfuscation, not secret";

/// The environment variable a dev build takes its key from: the one the `savegame` CLI
/// reads, in the same form (64 hexadecimal digits; empty counts as unset).
pub const KEY_ENV: &str = "SAVEGAME_KEY";

/// A dev build (debug assertions on, as `cargo run` and `cargo test` build): it reads
/// [`KEY_ENV`] and `--print-key` prints its key. A release build does neither: a shipped game
/// that took its key from the environment would let players seal their own edited saves.
pub const DEV_BUILD: bool = cfg!(debug_assertions);

/// The key the game seals its saves and replays with, and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct GameKey {
    bytes: [u8; 32],
    from_env: bool,
}

impl fmt::Debug for GameKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.from_env {
            "GameKey(from SAVEGAME_KEY)"
        } else {
            "GameKey(built in)"
        })
    }
}

impl GameKey {
    /// The key compiled into the game, [`KEY`].
    pub fn built_in() -> GameKey {
        GameKey {
            bytes: KEY,
            from_env: false,
        }
    }

    /// The key this process uses: [`KEY_ENV`]'s in a dev build when it is set, otherwise the
    /// built-in one.
    ///
    /// # Errors
    /// As for [`choose`](Self::choose).
    pub fn from_environment() -> Result<GameKey, String> {
        GameKey::choose(std::env::var_os(KEY_ENV).as_deref(), DEV_BUILD)
    }

    /// The key for a process whose [`KEY_ENV`] is `env`: when `dev` and `env` is set and not
    /// empty, the 64 hexadecimal digits it holds (surrounding whitespace ignored, as the CLI
    /// does); otherwise the built-in key.
    ///
    /// # Errors
    /// When `dev` and `env` is set but is not 64 hexadecimal digits (the message does not
    /// repeat it).
    pub fn choose(env: Option<&OsStr>, dev: bool) -> Result<GameKey, String> {
        let bad = || format!("{KEY_ENV} is set but is not 64 hexadecimal digits");
        let Some(env) = env.filter(|_| dev) else {
            return Ok(GameKey::built_in());
        };
        let text = env.to_str().ok_or_else(bad)?.trim();
        if text.is_empty() {
            return Ok(GameKey::built_in());
        }
        let digits = text.as_bytes();
        if digits.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(GameKey {
            bytes,
            from_env: true,
        })
    }

    /// The key, for the manager.
    pub fn key(&self) -> Key {
        Key::from_bytes(self.bytes)
    }

    /// The key as the CLI takes it, in `SAVEGAME_KEY` or a `--key-file`: 64 lowercase
    /// hexadecimal digits.
    pub fn hex(&self) -> String {
        self.bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Is this the key compiled into the game (which the old saves in `fixtures/` need)?
    pub fn is_built_in(&self) -> bool {
        self.bytes == KEY
    }

    /// Where it came from, for a sentence: "the game's built-in key".
    pub fn source(&self) -> &'static str {
        if self.from_env {
            "the key in SAVEGAME_KEY"
        } else {
            "the game's built-in key"
        }
    }
}

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

/// A save that version 0.1 of the game wrote (schema v1: `x`, `y`, `bag: [..]`), sealed with
/// the built-in key: the load menu's `o` puts it into a slot to show a migration. It is the
/// committed fixture itself, not a copy.
const OLD_SAVE: &[u8] = include_bytes!("../fixtures/v1-slot5.sav");

/// The slot the old save was written to. A save's header names its slot, and is
/// authenticated: the file opens only there.
pub const OLD_SAVE_SLOT: SlotId = SlotId::Numbered(5);

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

/// "Slot 5" for "slot 5".
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The saves of one player: the manager and what the status line shows.
pub struct Saves {
    manager: SaveLoadManager,
    /// The key the saves are sealed with.
    pub key: GameKey,
    /// The slot the game was last saved to or loaded from.
    pub slot: Option<SlotId>,
    /// The game in play was loaded from a backup of its slot (its primary was damaged).
    pub from_backup: bool,
    /// Autosave every this many turns.
    pub autosave_every: u64,
    pending: Option<(u64, SaveHandle)>,
    /// What the status line says about autosaves.
    pub autosave_note: String,
    /// An autosave that landed (or failed) since the game last asked.
    landed: Option<String>,
}

impl Saves {
    /// The saves in `dir`, or in the platform's data folder, sealed with `key`.
    pub fn open(
        dir: Option<PathBuf>,
        autosave_every: u64,
        key: &GameKey,
    ) -> savegame::Result<Saves> {
        let builder = SaveLoadManager::builder();
        let builder = match dir {
            Some(dir) => builder.directory(dir),
            None => builder.app("org", "savegame", "dungeon"),
        };
        let manager = builder
            .key(key.key())
            .schema_version(SCHEMA)
            .migrations(migrations()?)
            .autosave_slots(3)
            .build()?;
        Ok(Saves {
            manager,
            key: key.clone(),
            slot: None,
            from_backup: false,
            autosave_every,
            pending: None,
            autosave_note: "autosave: none yet".into(),
            landed: None,
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
        game.capture_state(&mut s)?;
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
        // Each of the game's originators is in the save (a missing one is an error); what
        // else the save holds (the editor's history) is the editor's to restore.
        game.restore_state(&loaded.snapshot)
            .map(drop)
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

    /// Puts the save version 0.1 of the game wrote into [`OLD_SAVE_SLOT`], as a player who
    /// kept an old save file would; only into an empty slot, and only when the game uses the
    /// built-in key (the file is sealed with it). Returns what to tell the player.
    pub fn place_old_save(&self) -> Result<String, String> {
        if !self.key.is_built_in() {
            return Err(format!(
                "The old save is sealed with the game's built-in key; this game uses {}, \
                 so it could not open it.",
                self.key.source()
            ));
        }
        let slot = OLD_SAVE_SLOT;
        match self.manager.exists(slot) {
            Ok(false) => {}
            Ok(true) => {
                return Err(format!(
                    "The old save goes into {} (its header names it), which holds a save.",
                    slot_name(slot)
                ));
            }
            Err(e) => return Err(format!("Could not look at {}: {e}", slot_name(slot))),
        }
        self.manager
            .storage()
            .put(&slot.file_name(), OLD_SAVE)
            .map_err(|e| format!("Could not write the old save: {e}"))?;
        Ok(format!(
            "{} now holds a save from version 0.1 of the game (schema v1).",
            capitalized(&slot_name(slot))
        ))
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
                SlotStatus::Ready => match info.schema_version() {
                    Some(v) if v < SCHEMA => format!("ok, schema v{v}: migrates on load"),
                    _ => "ok".to_string(),
                },
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
            _ => match handle.wait() {
                Ok(report) => {
                    self.autosave_note =
                        format!("autosave: turn {turn} saved to {}", slot_label(report.slot));
                    self.landed = Some(format!(
                        "Autosaved turn {turn} to {}, in the background.",
                        slot_name(report.slot)
                    ));
                }
                // A newer autosave replaced it before it was written: that one will land.
                Err(savegame::Error::Superseded) => {}
                Err(e) => {
                    self.autosave_note = format!("autosave FAILED: {e}");
                    self.landed = Some(format!("The autosave of turn {turn} FAILED: {e}"));
                }
            },
        }
    }

    /// What to tell the player about an autosave that landed (or failed) since the last call.
    pub fn landed(&mut self) -> Option<String> {
        self.landed.take()
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

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    const HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";

    #[test]
    fn a_dev_build_takes_the_key_in_savegame_key_as_the_cli_reads_it() {
        let env = OsString::from(format!("  {HEX}\n"));
        let key = GameKey::choose(Some(&env), true).unwrap();
        assert!(!key.is_built_in());
        assert_eq!(key.source(), "the key in SAVEGAME_KEY");
        // What --print-key prints is the same key, in the form the CLI reads.
        assert_eq!(key.hex(), HEX.to_lowercase());
        let again = GameKey::choose(Some(OsStr::new(&key.hex())), true).unwrap();
        assert_eq!(again, key);
    }

    #[test]
    fn without_savegame_key_or_in_a_release_build_the_key_is_the_built_in_one() {
        for (env, dev) in [
            (None, true),
            (Some(""), true),
            (Some("  "), true),
            (Some(HEX), false),
        ] {
            let key = GameKey::choose(env.map(OsStr::new), dev).unwrap();
            assert!(key.is_built_in(), "{env:?} {dev}");
            assert_eq!(key.source(), "the game's built-in key");
        }
        // b"dungeon: obfuscation, not secret", in hex.
        assert_eq!(
            GameKey::built_in().hex(),
            "64756e67656f6e3a206f62667573636174696f6e2c206e6f7420736563726574"
        );
    }

    #[test]
    fn a_savegame_key_that_is_not_a_key_is_refused_without_repeating_it() {
        for bad in [
            "abc",
            &HEX[..63],
            &format!("{}zz", &HEX[..62]),
            &format!("{HEX}00"),
        ] {
            let err = GameKey::choose(Some(OsStr::new(bad)), true).unwrap_err();
            assert_eq!(err, "SAVEGAME_KEY is set but is not 64 hexadecimal digits");
        }
    }

    #[test]
    fn saves_sealed_with_the_printed_key_open_with_it_and_not_without() {
        let dir = tempfile::tempdir().unwrap();
        let key = GameKey::choose(Some(OsStr::new(HEX)), true).unwrap();
        let mut saves = Saves::open(Some(dir.path().to_path_buf()), 25, &key).unwrap();
        let snapshot = saves.snapshot(&Game::new(3)).unwrap();
        saves.save(SlotId::Numbered(1), &snapshot).unwrap();
        // As the CLI does: a manager with the key from its hex.
        let open = |key: Key| {
            SaveLoadManager::builder()
                .directory(dir.path())
                .key(key)
                .schema_version(SCHEMA)
                .build()
                .unwrap()
                .load(SlotId::Numbered(1))
        };
        assert!(open(Key::from_hex(&key.hex()).unwrap()).is_ok());
        assert!(matches!(
            open(GameKey::built_in().key()),
            Err(savegame::Error::Decrypt)
        ));
    }
}
