//! [`ReplayHeader`]: what a replay is, read from its first and last chunks alone.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::source::{self, StartRead};
use crate::codec::Codec;
use crate::error::Result;
use crate::format::Key;
use crate::format::Metadata;
use crate::storage::Storage;

/// What a replay's header says: what a replay browser shows, read without reading the frames
/// and keyframes between its first and last chunks.
///
/// The frame rate, versions, seed and metadata are in the start chunk, written when the
/// recording begins. The frame count, keyframe count and duration are only known when it
/// ends: they are in the end chunk, which has a fixed length and closes the file, so reading
/// them costs one more small read at the end of the file. A replay cut short (a crash or a
/// kill during the recording) has no end chunk: its [`totals`](Self::totals) are `None`, and
/// [`Player::open`](super::PlayerBuilder::open) counts what it can play.
///
/// Like a save's metadata, the header is plaintext: it reads without the key. With the key,
/// its AES-GCM tags are checked too.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayHeader {
    /// The replay layout's format version.
    pub format_version: u16,
    /// Whether the chunks' payloads are encrypted.
    pub encrypted: bool,
    /// The codec of the inputs.
    pub codec: Codec,
    /// A random number that every chunk of this recording carries.
    pub replay_id: u64,
    /// Frames per second of the recording: playback runs at this rate.
    pub frame_rate: u32,
    /// The game's save-schema version when it recorded: the keyframes' version.
    pub schema_version: u32,
    /// The game's input format version when it recorded.
    pub input_version: u32,
    /// How many frames apart the recorder asked for keyframes (0: it did not).
    pub keyframe_interval: u32,
    /// The game's seed for the match.
    pub seed: u64,
    /// When the recording started (millisecond precision).
    pub recorded_at: SystemTime,
    /// Label, app version, user fields and thumbnail, as a save has.
    pub metadata: Metadata,
    /// The totals of the end chunk; `None` for a replay cut short (or still being recorded).
    pub totals: Option<ReplayTotals>,
}

/// What a finished replay holds, from its end chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayTotals {
    /// How many frames were recorded.
    pub frames: u64,
    /// How many keyframes were recorded.
    pub keyframes: u64,
    /// How many frames carry a state hash.
    pub hashed_frames: u64,
    /// How many chunks the file has, the start and end chunks included.
    pub chunks: u64,
}

impl ReplayHeader {
    /// Reads the header of the replay file at `path`: its start chunk and, at the end of the
    /// file, its end chunk. Nothing in between is read. With a key, the chunks' tags are
    /// checked; without one, the header of an encrypted replay still reads.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when the file cannot be read (kind `NotFound` when
    /// there is none); [`Error::NotASave`](crate::Error::NotASave),
    /// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch),
    /// [`Error::Malformed`](crate::Error::Malformed),
    /// [`Error::UnsupportedFormat`](crate::Error::UnsupportedFormat),
    /// [`Error::WrongFileKind`](crate::Error::WrongFileKind) or
    /// [`Error::Decrypt`](crate::Error::Decrypt) when the start chunk is not a sound replay
    /// start. A damaged or missing end chunk is not an error: `totals` is then `None`.
    pub fn read(path: impl AsRef<Path>, key: Option<&Key>) -> Result<Self> {
        let (storage, name) = source::file_storage(path.as_ref())?;
        Self::read_in(&storage, &name, key)
    }

    /// Reads the header of the replay file `name` in `storage`, as [`read`](Self::read) does.
    ///
    /// # Errors
    /// As for [`read`](Self::read).
    pub fn read_in(storage: &dyn Storage, name: &str, key: Option<&Key>) -> Result<Self> {
        let start = source::read_start(storage, name, key)?;
        let totals =
            source::read_end(storage, name, &start, key)?.map(|(frames, last_index, end)| {
                ReplayTotals {
                    frames,
                    keyframes: end.keyframes,
                    hashed_frames: end.hashed_frames,
                    chunks: last_index.saturating_add(1),
                }
            });
        Ok(Self::from_start(&start, totals))
    }

    pub(crate) fn from_start(start: &StartRead, totals: Option<ReplayTotals>) -> Self {
        let meta = &start.start;
        ReplayHeader {
            format_version: start.format_version,
            encrypted: start.stream.encrypted,
            codec: start.stream.codec,
            replay_id: start.stream.replay_id,
            frame_rate: meta.frame_rate,
            schema_version: meta.schema_version,
            input_version: meta.input_version,
            keyframe_interval: meta.keyframe_interval,
            seed: meta.seed,
            recorded_at: meta.recorded_at,
            metadata: meta.metadata.clone(),
            totals,
        }
    }

    /// The version of the game that recorded ("1.4.2").
    #[must_use]
    pub fn app_version(&self) -> &str {
        &self.metadata.app_version
    }

    /// The replay's label ("Match 12").
    #[must_use]
    pub fn label(&self) -> &str {
        &self.metadata.label
    }

    /// Whether the replay has its end chunk: the recording finished.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.totals.is_some()
    }

    /// How many frames were recorded; `None` for a replay cut short.
    #[must_use]
    pub fn frame_count(&self) -> Option<u64> {
        self.totals.map(|t| t.frames)
    }

    /// How many keyframes were recorded; `None` for a replay cut short.
    #[must_use]
    pub fn keyframe_count(&self) -> Option<u64> {
        self.totals.map(|t| t.keyframes)
    }

    /// How long the replay plays at its frame rate; `None` for a replay cut short.
    #[must_use]
    pub fn duration(&self) -> Option<Duration> {
        self.frame_count()
            .map(|frames| duration_of(frames, self.frame_rate))
    }
}

/// How long `frames` frames last at `frame_rate` frames per second (to the nanosecond,
/// rounded down).
#[must_use]
pub fn duration_of(frames: u64, frame_rate: u32) -> Duration {
    let nanos = u128::from(frames) * 1_000_000_000 / u128::from(frame_rate.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_frames_over_the_rate() {
        assert_eq!(duration_of(3_000, 60), Duration::from_secs(50));
        assert_eq!(duration_of(1, 60), Duration::from_nanos(16_666_666));
        assert_eq!(duration_of(0, 60), Duration::ZERO);
        assert_eq!(duration_of(u64::MAX, 1), Duration::from_nanos(u64::MAX));
    }
}
