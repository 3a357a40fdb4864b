//! Replays: record a match, save it as it goes, play it back, seek, and catch desyncs.
//!
//! A [`Recorder`] records each frame's input (any serde type of the game's) and, when the game
//! gives one, the hash of its state after the frame; every N frames it asks for a **keyframe**,
//! a [`Snapshot`] of the game's originators. A [`Player`] plays the replay back into the game
//! at the recorded frame rate or any speed (the game says how much time passed; nothing
//! sleeps), seeks by restoring the nearest earlier keyframe and stepping the recorded inputs
//! forward, and compares the game's state hash with the recorded one at every frame that has
//! one. [`ReplayHeader::read`] reads what a replay browser shows without reading the rest.
//!
//! The game implements [`Replayable`]: restore a keyframe, step one frame with its input,
//! hash its state.
//!
//! ```
//! use std::time::Duration;
//! use savegame::replay::{Player, Recorder, Replayable};
//! use savegame::{Originator, Snapshot};
//! use serde::{Deserialize, Serialize};
//!
//! /// The whole game: a counter moved by the player's input.
//! #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
//! struct Counter { value: i64 }
//!
//! impl Originator for Counter {
//!     type Memento = Counter;
//!     fn create_memento(&self) -> Counter { self.clone() }
//!     fn restore_memento(&mut self, m: Counter) -> savegame::Result<()> { *self = m; Ok(()) }
//! }
//!
//! impl Replayable for Counter {
//!     type Input = i64;
//!     fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
//!         keyframe.restore("counter", self)
//!     }
//!     fn step(&mut self, _frame: u64, input: i64) -> savegame::Result<()> {
//!         self.value += input;
//!         Ok(())
//!     }
//!     fn state_hash(&self) -> Option<u64> { Some(self.value as u64) }
//! }
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("match.replay");
//! let mut game = Counter::default();
//! let mut recorder = Recorder::builder().frame_rate(60).keyframe_every(100).create(&path)?;
//! for frame in 0..1_200 {
//!     if recorder.keyframe_due() {
//!         let mut keyframe = recorder.snapshot();
//!         keyframe.capture("counter", &game)?;
//!         recorder.keyframe(&keyframe)?;
//!     }
//!     let input = frame as i64 % 7 - 3;
//!     game.step(frame, input)?;
//!     recorder.frame(&input, game.state_hash())?;
//! }
//! recorder.finish()?;
//!
//! let mut player = Player::builder().open(&path)?;
//! assert_eq!(player.header().duration(), Some(Duration::from_secs(20)));
//! let mut replayed = Counter::default();
//! player.seek(&mut replayed, 0)?; // restores the keyframe of frame 0
//! player.advance(&mut replayed, Duration::from_secs(1))?; // the 60 frames due at 60 fps
//! assert_eq!(player.position(), 60);
//! player.seek(&mut replayed, 1_200)?; // the keyframe of frame 1,100, then 100 frames
//! assert_eq!(replayed, game);
//! assert!(player.first_desync().is_none());
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Set up like the game's saves
//!
//! A replay's keyframes are saves of the game, and its chunks are sealed with a key: set a
//! recorder and a player up from the game's [`SaveLoadManager`](crate::SaveLoadManager) with
//! its [`profile`](crate::SaveLoadManager::profile), a plain value of the manager's codec,
//! key, schema version and migrations (the manager knows nothing of replays):
//!
//! ```
//! use savegame::replay::{Player, Recorder};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let manager = savegame::SaveLoadManager::builder()
//!     .directory(dir.path())
//!     .key(savegame::Key::from_bytes([3; 32]))
//!     .build()?;
//! let path = dir.path().join("match.replay");
//! let mut recorder = Recorder::builder()
//!     .profile(&manager.profile())
//!     .frame_rate(60)
//!     .create(&path)?;
//! recorder.frame(&1u8, None)?;
//! recorder.finish()?;
//! // Sealed with the game's key, so only a player set up the same way opens it.
//! let player = Player::builder().profile(&manager.profile()).open(&path)?;
//! assert_eq!(player.frame_count(), 1);
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # The file
//!
//! A replay is one file, written append-only in **chunks**: a start chunk (frame rate,
//! versions, seed, label, app version), then chunks of frames and keyframe chunks in frame
//! order, then an end chunk (frame count, keyframe count). Each chunk is framed like a save
//! file of the same family (the same magic, file kind 3, a format version, a CRC32 of the
//! chunk) and, with a key, its payload is sealed with AES-256-GCM under a fresh nonce, with its
//! header as associated data. Every chunk carries the recording's random id, its index and its
//! frame, so chunks from another recording, reordered or dropped, are refused; with a key the
//! end chunk is authenticated too, so a replay cut short never passes for a finished one
//! (without a key, CRCs catch damage, not deliberate edits). The start and end chunks' fields
//! (label, app version, seed, totals) are plaintext, as a save's metadata is, so a replay
//! browser reads them without the key. A keyframe's payload is a whole save file. The bytes are summed up [below](self#the-bytes) and laid out
//! in full in `docs/format.md`.
//!
//! # Guarantees
//!
//! - **Crash tolerance.** Each append is made durable before the next. A recording
//!   interrupted at any moment (a crash, a kill, a full disk) opens as a playable replay up to
//!   its last complete chunk, and says it was cut short ([`ReplayStatus::CutShort`]); its
//!   [`ReplayHeader::totals`] are `None`, and the [`Player`] counts what plays.
//! - **Bounded memory.** The recorder gathers frames and sealed chunks up to its chunk size
//!   (64 KiB by default) and hands them to its writer thread, which writes them in one append
//!   and makes it durable; it keeps about two chunk sizes, two more in flight, and the
//!   keyframe it is sealing, so a match of any length records in the same memory (an hour at
//!   60 fps with keyframes of 300 bodies: about 220 KiB of heap). The player reads one chunk
//!   at a time.
//! - **Versions.** Keyframes are saves at the game's schema version: older ones go through the
//!   game's [`Migrations`](crate::Migrations) when restored. Inputs have their own format
//!   version, with their own migrations. A replay from a newer game, or one that needs a
//!   migration that does not exist, is refused when it is opened, before playback starts.
//! - **Determinism check.** The first frame whose state hash differs is reported with its
//!   number and the keyframe before it ([`Desync`]); playback goes on or stops
//!   ([`OnDesync`]).
//! - **Hostile files.** Every length is checked against the bytes present before anything is
//!   allocated; damage is a typed error (or, at the very end of the file, a replay cut short);
//!   no input makes the library panic.
//!
//! # The bytes
//!
//! ```text
//! every chunk: 52-byte header | meta (start and end chunks) | nonce (encrypted) | payload | CRC32
//! header: magic (8) | format version u16 | flags u16 | codec u8 | file kind u8 = 3 | 0 u8
//!         | chunk kind u8 | replay id u64 | chunk index u64 | frame u64 | meta length u32
//!         | payload length u64
//! ```

mod appender;
mod clock;
mod compat;
mod header;
mod index;
mod player;
mod recorder;
mod source;

pub use crate::format::replay::{FORMAT_VERSION, MAX_CHUNK_LEN};
pub use compat::INPUT_ID;
pub use header::{ReplayHeader, ReplayTotals, duration_of};
pub use index::ReplayStatus;
pub use player::{
    DEFAULT_MAX_REPLAY_SIZE, Desync, Frame, OnDesync, Player, PlayerBuilder, Progress,
};
pub use recorder::{DEFAULT_CHUNK_SIZE, Recorder, RecorderBuilder};

use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::snapshot::Snapshot;

/// A game as a replay plays it: it restores a keyframe, steps one frame with its recorded
/// input, and hashes its state.
///
/// The game must be deterministic: the same state and the same input give the same next
/// state. [`state_hash`](Self::state_hash) is how a [`Player`] checks that.
pub trait Replayable {
    /// The input the game records for each frame.
    type Input: DeserializeOwned;

    /// Replaces the whole game state with the keyframe's: restore each originator the
    /// recorder captured (already migrated to the game's schema version).
    ///
    /// # Errors
    /// Whatever restoring returns ([`Snapshot::restore`]'s errors, or the game's own); the
    /// seek stops with it.
    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> Result<()>;

    /// Runs frame `frame` with its recorded input.
    ///
    /// # Errors
    /// The game's own, for an input it refuses (a replay file can be hostile); playback stops
    /// with it.
    fn step(&mut self, frame: u64, input: Self::Input) -> Result<()>;

    /// A hash of the game's state after the last step, compared with the recorded one. The
    /// default, `None`, checks nothing.
    fn state_hash(&self) -> Option<u64> {
        None
    }
}
