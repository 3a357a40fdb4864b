//! [`Player`]: plays a replay back into the game, at its frame rate or any speed, seeks through
//! its keyframes, and checks the game's state hashes against the recorded ones.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::Replayable;
use super::clock::Clock;
use super::compat::{Compat, GameVersions};
use super::header::{ReplayHeader, duration_of};
use super::index::{Index, ReplayStatus, open_keyframe};
use super::source::{self, Located, Source};
use crate::error::{Error, Result};
use crate::format::replay::chunk::Chunk;
use crate::format::replay::frames::{FrameRef, parse_frames};
use crate::format::{Key, Protection, Trust};
use crate::manager::SaveProfile;
use crate::migrate::Migrations;
use crate::storage::Storage;

/// The default cap on a replay file's size: 1 GiB.
pub const DEFAULT_MAX_REPLAY_SIZE: u64 = 1 << 30;

/// What the player does when the game's state hash differs from the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnDesync {
    /// Report it (in [`Progress::desync`] and [`Player::first_desync`]) and play on.
    #[default]
    Continue,
    /// Stop right after the frame that desynced, with [`Error::Desync`].
    Stop,
}

/// A frame whose state hash differs from the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Desync {
    /// The frame after which the hashes differ.
    pub frame: u64,
    /// The nearest keyframe at or before it: seek there and step to `frame` to reproduce it.
    pub keyframe: Option<u64>,
    /// The hash the recording holds.
    pub expected: u64,
    /// The hash the game computed.
    pub found: u64,
}

impl From<Desync> for Error {
    fn from(d: Desync) -> Self {
        Error::Desync {
            frame: d.frame,
            keyframe: d.keyframe,
            expected: d.expected,
            found: d.found,
        }
    }
}

/// What a call that plays frames did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// For a seek: the frame of the keyframe restored before playing forward.
    pub keyframe: Option<u64>,
    /// The frames played, in order (empty when none were due).
    pub frames: Range<u64>,
    /// How many of them had their state hash compared with the recorded one.
    pub checked: u64,
    /// The first of them whose state hash differed from the recorded one.
    pub desync: Option<Desync>,
}

/// One recorded frame.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Frame<T> {
    /// The frame's number, from 0.
    pub number: u64,
    /// The input the game recorded for it.
    pub input: T,
    /// The state hash recorded after it, if one was.
    pub state_hash: Option<u64>,
}

/// Builds a [`Player`]; see [`Player::builder`].
#[derive(Debug)]
#[must_use]
pub struct PlayerBuilder {
    key: Option<Key>,
    allow_unencrypted: bool,
    schema_version: u32,
    migrations: Migrations,
    input_version: u32,
    input_migrations: Migrations,
    on_desync: OnDesync,
    max_file_size: u64,
}

impl PlayerBuilder {
    /// Decrypt replays with this key. With a key, replays that are not encrypted are refused
    /// unless [`allow_unencrypted`](Self::allow_unencrypted) says otherwise. In a build without
    /// the `encryption` feature, an encrypted replay fails with
    /// [`Error::FeatureDisabled`](crate::Error::FeatureDisabled).
    pub fn key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// Set up as a game's saves are, from its manager's
    /// [`profile`](crate::SaveLoadManager::profile): its key (and whether plain files are
    /// allowed), its schema version and its migrations, so keyframes recorded by older
    /// versions of the game migrate as saves do.
    pub fn profile(mut self, profile: &SaveProfile) -> Self {
        self.key = profile.key().cloned();
        self.allow_unencrypted = profile.allows_unencrypted();
        self.schema_version = profile.schema_version;
        self.migrations = profile.migrations.clone();
        self
    }

    /// With a key, also play replays that are not encrypted (off by default: a plain replay
    /// has only CRCs, which anyone can forge).
    pub fn allow_unencrypted(mut self, allow: bool) -> Self {
        self.allow_unencrypted = allow;
        self
    }

    /// The game's current save-schema version (default 1): keyframes from an older one are
    /// migrated, keyframes from a newer one are refused.
    pub fn schema_version(mut self, version: u32) -> Self {
        self.schema_version = version;
        self
    }

    /// The steps that bring older keyframes up to the current schema version: the same
    /// [`Migrations`] the game's saves use.
    pub fn migrations(mut self, migrations: Migrations) -> Self {
        self.migrations = migrations;
        self
    }

    /// The game's current input format version (default 1): inputs from an older one are
    /// migrated with the [input migrations](Self::input_migrations), a newer one is refused.
    pub fn input_version(mut self, version: u32) -> Self {
        self.input_version = version;
        self
    }

    /// The steps that bring inputs of an older format up to the current one. A step sees a
    /// [`Document`](crate::migrate::Document) holding one memento,
    /// [`"input"`](super::INPUT_ID): the frame's input as a value tree.
    pub fn input_migrations(mut self, migrations: Migrations) -> Self {
        self.input_migrations = migrations;
        self
    }

    /// What to do when the game's state hash differs from the recorded one (default: report
    /// it and play on).
    pub fn on_desync(mut self, on_desync: OnDesync) -> Self {
        self.on_desync = on_desync;
        self
    }

    /// The largest replay file opened (default 1 GiB); larger files are refused before they
    /// are read.
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Opens the replay file at `path`: see [`open_in`](Self::open_in).
    ///
    /// # Errors
    /// As for [`open_in`](Self::open_in).
    pub fn open(self, path: impl AsRef<Path>) -> Result<Player> {
        let (storage, name) = source::file_storage(path.as_ref())?;
        self.open_in(storage, &name)
    }

    /// Opens the replay file `name` in `storage`. Everything that would stop playback is
    /// checked now, before it starts: the versions (a newer schema or input format, a missing
    /// migration step), the key, and every chunk, read once in order (one chunk in memory at a
    /// time). A replay cut short opens, with [`Player::status`] saying so; damage before its
    /// last chunk is an error.
    ///
    /// # Errors
    /// - [`Error::Config`] or [`Error::MigrationChain`] for a wrong builder;
    /// - [`Error::Io`] when the file cannot be read (kind `NotFound` when there is none);
    ///   [`Error::TooLarge`] for a file over the size cap;
    /// - [`Error::NewerSchema`], [`Error::NoMigrationPath`], [`Error::NewerInputFormat`],
    ///   [`Error::NoInputMigrationPath`] for a replay this game cannot play;
    /// - [`Error::KeyRequired`], [`Error::NotEncrypted`], [`Error::Decrypt`] for keys;
    /// - [`Error::NotASave`], [`Error::ChecksumMismatch`], [`Error::Malformed`],
    ///   [`Error::UnsupportedFormat`], [`Error::UnknownFlags`], [`Error::UnknownCodec`],
    ///   [`Error::WrongFileKind`], [`Error::Decode`] for a damaged or hostile file.
    pub fn open_in(self, storage: impl Storage, name: &str) -> Result<Player> {
        if self.schema_version == 0 || self.input_version == 0 {
            return Err(Error::Config {
                reason: "schema and input versions start at 1".into(),
            });
        }
        self.migrations.check(self.schema_version)?;
        self.input_migrations
            .check(self.input_version)
            .map_err(|e| match e {
                Error::MigrationChain { reason } => Error::MigrationChain {
                    reason: format!("input migrations: {reason}"),
                },
                other => other,
            })?;
        let storage: Arc<dyn Storage> = Arc::new(storage);
        // Replays are encrypted, or plain: with a key, only encrypted ones play (plain ones
        // too when allowed), as the manager's saves.
        let source = Source::open(storage, name, self.key)?;
        let trust = match source.key() {
            Some(key) => Trust::encrypted(key),
            None => Trust::plain(),
        };
        let trust = if self.allow_unencrypted {
            trust.or_plain()
        } else {
            trust
        };
        let start = source.start();
        trust.admit(if start.stream.encrypted {
            Protection::Encrypted
        } else {
            Protection::Plain
        })?;
        if start.file_len > self.max_file_size {
            return Err(Error::TooLarge {
                path: source.path(),
                size: start.file_len,
                limit: self.max_file_size,
            });
        }
        let compat = Compat::check(
            &start.start,
            start.stream.codec,
            GameVersions {
                schema_version: self.schema_version,
                migrations: self.migrations,
                input_version: self.input_version,
                input_migrations: self.input_migrations,
            },
        )?;
        let index = Index::scan(&source)?;
        let header = ReplayHeader::from_start(start, index.totals);
        Ok(Player {
            clock: Clock::new(header.frame_rate),
            source,
            header,
            index,
            compat,
            position: 0,
            on_desync: self.on_desync,
            first_desync: None,
            cache: None,
        })
    }
}

/// A frames chunk in memory: the one the last frame was read from.
struct Cached {
    chunk_no: usize,
    first: u64,
    chunk: Chunk,
    frames: Vec<FrameRef>,
}

/// Plays a replay back into the game.
///
/// The player keeps a **position**: how many frames the game has been stepped through since
/// the replay's start, so the game's state is the state at the start of frame `position`.
/// [`seek`](Self::seek) restores the nearest keyframe at or before a frame and steps the game
/// forward to it; [`play_to`](Self::play_to) steps it forward; [`advance`](Self::advance) lets
/// some real time pass at the player's [speed](Self::set_speed) and steps the game through the
/// frames that fell due. Nothing sleeps: the game says how much time passed.
///
/// After [`open`](PlayerBuilder::open) the position is 0, and the game is expected to be in
/// the replay's starting state: call `seek(&mut game, 0)` to restore the keyframe of frame 0
/// (or set the game up from the replay's [seed](ReplayHeader::seed) yourself).
///
/// Every frame stepped whose recording has a state hash is checked against
/// [`Replayable::state_hash`]. The first mismatch is kept ([`first_desync`](Self::first_desync))
/// and reported in the [`Progress`] of the call; with [`OnDesync::Stop`] the call stops there
/// with [`Error::Desync`].
pub struct Player {
    source: Source,
    header: ReplayHeader,
    index: Index,
    compat: Compat,
    position: u64,
    clock: Clock,
    on_desync: OnDesync,
    first_desync: Option<Desync>,
    cache: Option<Cached>,
}

impl fmt::Debug for Player {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Player")
            .field("path", &self.source.path())
            .field("header", &self.header)
            .field("status", &self.index.status)
            .field("frames", &self.index.frame_count)
            .field("keyframes", &self.index.keyframes.len())
            .field("position", &self.position)
            .field("speed", &self.clock.speed())
            .finish_non_exhaustive()
    }
}

impl Player {
    /// A builder with the defaults: no key, schema version 1, input version 1, no migrations,
    /// play on after a desync, a 1 GiB size cap.
    pub fn builder() -> PlayerBuilder {
        PlayerBuilder {
            key: None,
            allow_unencrypted: false,
            schema_version: 1,
            migrations: Migrations::new(),
            input_version: 1,
            input_migrations: Migrations::new(),
            on_desync: OnDesync::default(),
            max_file_size: DEFAULT_MAX_REPLAY_SIZE,
        }
    }

    /// The replay's header. Its [`totals`](ReplayHeader::totals) are `None` for a replay cut
    /// short; [`frame_count`](Self::frame_count) and [`keyframe_count`](Self::keyframe_count)
    /// count what plays.
    #[must_use]
    pub fn header(&self) -> &ReplayHeader {
        &self.header
    }

    /// Whether the file holds the whole recording, or was cut short (and where, and why).
    #[must_use]
    pub fn status(&self) -> &ReplayStatus {
        &self.index.status
    }

    /// How many frames play.
    #[must_use]
    pub fn frame_count(&self) -> u64 {
        self.index.frame_count
    }

    /// How many keyframes there are to seek to.
    #[must_use]
    pub fn keyframe_count(&self) -> u64 {
        self.index.keyframes.len() as u64
    }

    /// The frames the keyframes are at, in order.
    pub fn keyframes(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.index.keyframes.iter().map(|k| k.frame)
    }

    /// How many frames carry a state hash to check.
    #[must_use]
    pub fn hashed_frames(&self) -> u64 {
        self.index.hashed_frames
    }

    /// The recorded frame rate, in frames per second.
    #[must_use]
    pub fn frame_rate(&self) -> u32 {
        self.header.frame_rate
    }

    /// How long the frames that play last at the recorded frame rate.
    #[must_use]
    pub fn duration(&self) -> Duration {
        duration_of(self.index.frame_count, self.header.frame_rate)
    }

    /// How many frames the game has been stepped through: its state is the state at the start
    /// of frame `position`.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Whether every frame has been played.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.position >= self.index.frame_count
    }

    /// The playback speed: 1.0 is the recorded frame rate.
    #[must_use]
    pub fn speed(&self) -> f64 {
        self.clock.speed()
    }

    /// Sets the playback speed: 1.0 plays at the recorded frame rate, 0.5 at half of it, 4.0
    /// at four times; 0.0 pauses. Kept to a millionth.
    ///
    /// # Errors
    /// [`Error::Config`] for a speed that is negative, not finite, or over a million.
    pub fn set_speed(&mut self, speed: f64) -> Result<()> {
        self.clock.set_speed(speed)
    }

    /// Sets what to do after a desync from now on.
    pub fn set_on_desync(&mut self, on_desync: OnDesync) {
        self.on_desync = on_desync;
    }

    /// The first frame whose state hash differed from the recorded one, since the replay was
    /// opened.
    #[must_use]
    pub fn first_desync(&self) -> Option<&Desync> {
        self.first_desync.as_ref()
    }

    /// Lets `elapsed` of real time pass at the current speed, and returns the frames now due:
    /// from the position to the frame the clock has reached (at most the last frame). The game
    /// plays them with [`play_to`](Self::play_to), or lets [`advance`](Self::advance) do both.
    /// Frames not played stay due.
    pub fn tick(&mut self, elapsed: Duration) -> Range<u64> {
        self.clock.tick(elapsed);
        let due = self.clock.due().min(self.index.frame_count);
        self.position..due.max(self.position)
    }

    /// Lets `elapsed` of real time pass at the current speed, and steps the game through the
    /// frames that fell due ([`tick`](Self::tick), then [`play_to`](Self::play_to)).
    ///
    /// # Errors
    /// As for [`play_to`](Self::play_to).
    pub fn advance<G: Replayable + ?Sized>(
        &mut self,
        game: &mut G,
        elapsed: Duration,
    ) -> Result<Progress> {
        let due = self.tick(elapsed);
        self.play_to(game, due.end)
    }

    /// Brings the game to the start of frame `frame`: forward by stepping it through the
    /// frames between, backward by a [`seek`](Self::seek).
    ///
    /// # Errors
    /// [`Error::FrameOutOfRange`] past the last frame; [`Error::Desync`] with
    /// [`OnDesync::Stop`]; what the game's `step` returns; [`Error::Decode`] for an input that
    /// does not decode; the errors of reading a chunk (the file changed since it was opened).
    pub fn play_to<G: Replayable + ?Sized>(
        &mut self,
        game: &mut G,
        frame: u64,
    ) -> Result<Progress> {
        self.check_frame(frame)?;
        if frame < self.position {
            return self.seek(game, frame);
        }
        let mut progress = Progress {
            keyframe: None,
            frames: self.position..self.position,
            checked: 0,
            desync: None,
        };
        while self.position < frame {
            let number = self.position;
            let (input, recorded) = self.fetch::<G::Input>(number)?;
            game.step(number, input)?;
            self.position += 1;
            progress.frames.end = self.position;
            let Some(expected) = recorded else { continue };
            let Some(found) = game.state_hash() else {
                continue;
            };
            progress.checked += 1;
            if found != expected {
                let desync = Desync {
                    frame: number,
                    keyframe: self.index.keyframe_at_or_before(number).map(|k| k.frame),
                    expected,
                    found,
                };
                self.first_desync.get_or_insert(desync);
                progress.desync.get_or_insert(desync);
                if self.on_desync == OnDesync::Stop {
                    self.sync_clock();
                    return Err(desync.into());
                }
            }
        }
        self.sync_clock();
        Ok(progress)
    }

    /// Brings the game to the start of frame `frame` the way a seek does: restores the nearest
    /// keyframe at or before it, then steps the game forward from there (checking state hashes
    /// as it goes). The playback clock moves to `frame`.
    ///
    /// # Errors
    /// [`Error::FrameOutOfRange`] past the last frame; [`Error::NoKeyframe`] when no keyframe
    /// is at or before `frame`; [`Error::Migration`] when migrating the keyframe fails; what
    /// the game's `restore_keyframe` returns; then as for [`play_to`](Self::play_to).
    pub fn seek<G: Replayable + ?Sized>(&mut self, game: &mut G, frame: u64) -> Result<Progress> {
        self.check_frame(frame)?;
        let keyframe = self
            .index
            .keyframe_at_or_before(frame)
            .ok_or(Error::NoKeyframe { frame })?;
        self.restore(game, &keyframe)?;
        self.position = keyframe.frame;
        self.clock.set_position(keyframe.frame);
        let mut progress = self.play_to(game, frame)?;
        progress.keyframe = Some(keyframe.frame);
        self.clock.set_position(frame);
        Ok(progress)
    }

    /// Frame `number` as recorded: its input and state hash. The position does not move.
    ///
    /// # Errors
    /// [`Error::FrameOutOfRange`] past the last frame; [`Error::Decode`] when the input does not
    /// decode as `T`; the errors of reading a chunk.
    pub fn frame<T: DeserializeOwned>(&mut self, number: u64) -> Result<Frame<T>> {
        let (input, state_hash) = self.fetch(number)?;
        Ok(Frame {
            number,
            input,
            state_hash,
        })
    }

    fn check_frame(&self, frame: u64) -> Result<()> {
        if frame > self.index.frame_count {
            return Err(Error::FrameOutOfRange {
                frame,
                frames: self.index.frame_count,
            });
        }
        Ok(())
    }

    /// After playing by hand, frames already played are no longer due.
    fn sync_clock(&mut self) {
        if self.clock.due() < self.position {
            self.clock.set_position(self.position);
        }
    }

    fn restore<G: Replayable + ?Sized>(&mut self, game: &mut G, at: &Located) -> Result<()> {
        let chunk = self.source.chunk(at)?;
        let schema_version = self.source.start().start.schema_version;
        let (header, snapshot) = open_keyframe(chunk.into_payload()?, schema_version, at.frame)?;
        let snapshot = self.compat.keyframe(snapshot, header.schema_version)?;
        game.restore_keyframe(&snapshot)
    }

    /// The input and recorded hash of frame `number`, reading its chunk unless it is the one
    /// in memory.
    fn fetch<T: DeserializeOwned>(&mut self, number: u64) -> Result<(T, Option<u64>)> {
        if number >= self.index.frame_count {
            return Err(Error::FrameOutOfRange {
                frame: number,
                frames: self.index.frame_count,
            });
        }
        let chunk_no = self
            .index
            .frames_chunk_of(number)
            .ok_or_else(|| Error::malformed(format!("no frames chunk holds frame {number}")))?;
        let cached = match self.cache.take() {
            Some(cached) if cached.chunk_no == chunk_no => cached,
            _ => self.load(chunk_no)?,
        };
        let result = cached
            .frames
            .get((number - cached.first) as usize)
            .ok_or_else(|| Error::malformed(format!("no frames chunk holds frame {number}")))
            .and_then(|f| {
                let input = &cached.chunk.payload()?[f.input.clone()];
                Ok((self.compat.input(input, number)?, f.hash))
            });
        self.cache = Some(cached);
        result
    }

    fn load(&self, chunk_no: usize) -> Result<Cached> {
        let entry = self.index.frames[chunk_no];
        let chunk = self.source.chunk(&entry.at)?;
        let frames = parse_frames(chunk.payload()?)?;
        if frames.len() as u64 != entry.count {
            return Err(Error::malformed(format!(
                "the frames chunk at byte {} changed since the replay was opened",
                entry.at.offset
            )));
        }
        Ok(Cached {
            chunk_no,
            first: entry.at.frame,
            chunk,
            frames,
        })
    }
}
