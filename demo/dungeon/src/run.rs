//! The run: one recording from the start of a game to the end of the session. Every turn goes
//! into it, and so does every moment the game jumps (a save loaded, the level edited), so the
//! run so far can be watched at any time, however the player got here.
//!
//! A replay plays its inputs forward from a keyframe; a jump is an input like a turn, holding
//! the state the game jumped to, so playing forward through it lands where the player did.

use std::path::PathBuf;

use savegame::replay::{Player, Recorder, Replayable};
use savegame::{Originator, SaveState, Snapshot};
use serde::{Deserialize, Serialize};

use crate::model::{Action, Game, GameMemento, LayoutMemento};
use crate::saves::Saves;

/// Frames a replay plays per second at 1x: each is a turn, or a jump.
pub const FRAMES_PER_SECOND: u32 = 4;

/// The format of a run's inputs. v1 (dungeon 0.3) recorded bare [`Action`]s, and restarted
/// the recording at every load; this game only ever plays the run it is recording, so a v1
/// replay is never opened (and would be refused, with no migration to v2).
pub const INPUT_VERSION: u32 = 2;

/// A keyframe every this many frames: seeking steps through at most this many.
const KEYFRAME_EVERY: u32 = 50;

/// One frame of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// The player took a turn.
    Turn(Action),
    /// A save was loaded: the game became the one it held.
    Loaded {
        /// Where it came from, for the replay's message ("slot 2", "autosave 1").
        from: String,
        /// The loaded game: its player, level and clock.
        #[serde(flatten)]
        game: GameMemento,
    },
    /// The editor changed the level: its layout became this.
    Edited(LayoutMemento),
}

impl Input {
    /// The jump to `game`, just loaded from `from`.
    pub fn loaded(from: impl Into<String>, game: &Game) -> Input {
        Input::Loaded {
            from: from.into(),
            game: game.create_memento(),
        }
    }
}

impl Replayable for Game {
    type Input = Input;

    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.restore_state(keyframe).map(drop)
    }

    fn step(&mut self, _frame: u64, input: Input) -> savegame::Result<()> {
        match input {
            Input::Turn(action) => Game::step(self, action),
            Input::Loaded { from, game } => {
                self.restore_memento(game)?;
                self.messages = vec![format!("(Here the player loaded {from}.)")];
            }
            Input::Edited(layout) => {
                self.level.layout.restore_memento(layout)?;
                self.messages = vec!["(Here the player edited the level.)".into()];
            }
        }
        Ok(())
    }

    fn state_hash(&self) -> Option<u64> {
        Some(Game::state_hash(self))
    }
}

/// The recording of the run, in the save folder.
pub struct Run {
    recorder: Recorder<Input>,
    path: PathBuf,
}

impl Run {
    /// Starts recording a run of a game from `seed` (replacing the last session's recording).
    ///
    /// # Errors
    /// When the recording file cannot be created.
    pub fn start(saves: &Saves, game: &Game, seed: u64) -> savegame::Result<Run> {
        let path = saves.folder().join("last-run.replay");
        // The manager's recorder seals the replay with the save key, at the save schema.
        let recorder = savegame::Recorder::builder()
            .profile(&saves.manager().profile())
            .frame_rate(FRAMES_PER_SECOND)
            .input_version(INPUT_VERSION)
            .keyframe_every(KEYFRAME_EVERY)
            .seed(seed)
            .label(format!(
                "Level {} from turn {}",
                game.level.number, game.clock.turn
            ))
            .app_version(env!("CARGO_PKG_VERSION"))
            .create(&path)?;
        Ok(Run { recorder, path })
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.recorder.position()
    }

    /// Gives the recorder a keyframe of `game` if one is due. Call it with the game as it is
    /// before the next frame changes it (before a turn, a load, or opening the editor).
    ///
    /// # Errors
    /// When the keyframe cannot be written.
    pub fn keyframe_if_due(&mut self, game: &Game) -> savegame::Result<()> {
        if self.recorder.keyframe_due() {
            let mut keyframe = self.recorder.snapshot();
            game.capture_state(&mut keyframe)?;
            self.recorder.keyframe(&keyframe)?;
        }
        Ok(())
    }

    /// Records `input`, after which the game is `game`. The keyframe of the state before it
    /// must have been given ([`keyframe_if_due`](Self::keyframe_if_due)).
    ///
    /// # Errors
    /// When the frame cannot be encoded or written.
    pub fn record(&mut self, input: &Input, game: &Game) -> savegame::Result<()> {
        self.recorder.frame(input, Some(game.state_hash()))?;
        Ok(())
    }

    /// Opens the run so far for watching, from its start (`None` when it has no frames yet).
    /// The recording goes on afterwards, in the same file.
    ///
    /// # Errors
    /// When the recording cannot be written out, or read back.
    pub fn watch(&mut self, saves: &Saves) -> savegame::Result<Option<(Player, Game)>> {
        if self.frames() == 0 {
            return Ok(None);
        }
        // What was gathered goes to the file; a replay still being recorded opens as one cut
        // short at its last chunk, which is now the last frame.
        self.recorder.flush()?;
        // Keyframes from an older version of the game migrate as saves do.
        let mut player = savegame::replay::Player::builder()
            .profile(&saves.manager().profile())
            .input_version(INPUT_VERSION)
            .open(&self.path)?;
        let mut game = Game::new(0);
        player.seek(&mut game, 0)?;
        Ok(Some((player, game)))
    }

    /// Finishes the recording: the replay file is complete. Returns where it is.
    ///
    /// # Errors
    /// When the end of the recording cannot be written.
    pub fn finish(self) -> savegame::Result<PathBuf> {
        self.recorder.finish()?;
        Ok(self.path)
    }
}
