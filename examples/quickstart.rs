//! The whole story of a save, as a game lives it.
//!
//! A game has a `Player` and a `World` (see `shared/game.rs`); both derive `Originator`, and
//! the `Game` that holds them derives `SaveState`. This example saves the game in one call,
//! labelled "Level 3", to slot 3 of the platform's data folder (MessagePack, encrypted), shows
//! the load menu, and then starts itself again as a **new process** that loads slot 3 into a
//! fresh game in one call, and checks that
//! the state is exactly what was saved. It then does the same with JSON and no key, and shows
//! that the file is readable text.
//!
//! ```text
//! cargo run --example quickstart                 # the platform's data folder
//! cargo run --example quickstart -- --dir /tmp/x # an explicit folder
//! ```

#[path = "shared/game.rs"]
mod game;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, SystemTime};

use game::{Game, Player, World};
use savegame::{Codec, Key, SaveLoadManager, SlotId, SlotStatus};

/// The key a game would embed. It stops casual edits; it is not a secret from a determined
/// player who takes the game's binary apart.
const GAME_KEY: [u8; 32] = *b"quickstart-demo-key-32-bytes-ok!";
const SEED: u64 = 42;
const ENTITIES: usize = 2_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--load") => load_in_this_process(&args[1..]),
        _ => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn manager(dir: &Path, codec: Codec, encrypted: bool) -> savegame::Result<SaveLoadManager> {
    let builder = SaveLoadManager::builder().directory(dir).codec(codec);
    let builder = if encrypted {
        builder.key(Key::from_bytes(GAME_KEY))
    } else {
        builder
    };
    builder.build()
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    // Where the saves go: the platform's data folder, unless --dir is given.
    let dir = match args {
        [flag, dir] if flag == "--dir" => PathBuf::from(dir),
        _ => {
            let m = SaveLoadManager::builder()
                .app("org", "savegame", "quickstart")
                .build()?;
            let dir = m.path_of(SlotId::Numbered(3));
            dir.parent().map(Path::to_path_buf).unwrap_or(dir)
        }
    };

    let game = Game {
        player: Player::generate(SEED),
        world: World::generate(ENTITIES, SEED),
    };

    for (codec, encrypted, folder) in [
        (Codec::MessagePack, true, dir.clone()),
        (Codec::Json, false, dir.join("json-unencrypted")),
    ] {
        println!(
            "== {codec}, {} ==",
            if encrypted { "encrypted" } else { "no key" }
        );
        let manager = manager(&folder, codec, encrypted)?;

        // Capture on the game thread (each originator hands over its memento, under its
        // field's name, with the label `Game::describe` gives), then save.
        let report = manager.save_state(SlotId::Numbered(3), &game)?;
        println!(
            "saved slot 3: {} ({} bytes, generation {})",
            report.path.display(),
            report.bytes,
            report.generation
        );

        print_menu(&manager)?;
        if !encrypted {
            show_text(&report.path)?;
        }

        // A new process loads the slot and checks the state.
        let status = Command::new(std::env::current_exe()?)
            .arg("--load")
            .arg(&folder)
            .arg(codec.name())
            .arg(if encrypted { "encrypted" } else { "plain" })
            .status()?;
        if !status.success() {
            return Err("the new process could not load the save".into());
        }
        println!();
    }
    Ok(())
}

fn load_in_this_process(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [dir, codec, encryption] = args else {
        return Err("usage: --load DIR CODEC encrypted|plain".into());
    };
    let manager = manager(Path::new(dir), codec.parse()?, encryption == "encrypted")?;
    let mut game = Game::default();
    let loaded = manager.load_state(SlotId::Numbered(3), &mut game)?;
    let Game { player, world } = game;

    let mut expected_player = Player::generate(SEED);
    expected_player.frames_since_hit = 0; // transient, not saved
    let matches = player == expected_player && world == World::generate(ENTITIES, SEED);
    println!(
        "new process {} loaded slot 3 from {}: player {:?} with {} items, world with {} entities; \
         state matches what was saved: {matches}",
        std::process::id(),
        loaded.report.path.display(),
        player.name,
        player.inventory.len(),
        world.entities.len(),
    );
    if matches {
        Ok(())
    } else {
        Err("the loaded state differs from the saved state".into())
    }
}

fn print_menu(manager: &SaveLoadManager) -> savegame::Result<()> {
    println!("load menu (read from headers alone):");
    println!(
        "  {:<5} {:<10} {:<24} {:>9} {:>8} {:>7} {:>9}",
        "slot", "label", "saved at", "playtime", "version", "schema", "size"
    );
    for info in manager.list()? {
        let Some(header) = &info.header else {
            println!(
                "  {:<5} unreadable: {:?}",
                info.slot.to_string(),
                info.status
            );
            continue;
        };
        let status = match &info.status {
            SlotStatus::Ready => String::new(),
            other => format!("  ({other:?})"),
        };
        println!(
            "  {:<5} {:<10} {:<24} {:>9} {:>8} {:>7} {:>9}{status}",
            info.slot.to_string(),
            header.metadata.label,
            format_time(header.saved_at),
            format_playtime(header.metadata.playtime),
            header.metadata.app_version,
            header.schema_version,
            info.file_size,
        );
    }
    Ok(())
}

/// Shows that an unencrypted JSON save is readable text after its binary header.
fn show_text(path: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(start) = text.find("{\"player\"") {
        let end = text[start..]
            .char_indices()
            .nth(110)
            .map_or(text.len(), |(i, _)| start + i);
        println!("the file is readable JSON: {}...", &text[start..end]);
    }
    Ok(())
}

fn format_playtime(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
}

/// `YYYY-MM-DD hh:mm:ss UTC`.
fn format_time(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(ts) => ts.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => "(out of range)".to_owned(),
    }
}
