//! What the tests share: the game as a separate process.

use std::process::Command;

/// The game's binary, with none of the developer's own key settings: a test that wants a
/// `SAVEGAME_KEY` sets it.
pub fn dungeon() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dungeon"));
    command.env_remove("SAVEGAME_KEY");
    command
}
