//! [`Recorder`]: records a match into a replay file, appending one chunk at a time.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::appender::Appender;
use super::header::{ReplayHeader, ReplayTotals};
use super::source::{self, StartRead};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::Metadata;
use crate::format::replay::chunk::seal_chunk;
use crate::format::replay::frames::FramesBuf;
use crate::format::replay::meta::{EndMeta, StartMeta};
use crate::format::replay::{ChunkHeader, ChunkKind, FORMAT_VERSION, MAX_CHUNK_LEN, Stream};
use crate::format::{self, Key};
use crate::manager::SaveProfile;
use crate::slot::SlotId;
use crate::snapshot::Snapshot;
use crate::storage::Storage;

/// The default size of a frames chunk's payload: 64 KiB.
pub const DEFAULT_CHUNK_SIZE: usize = 64 << 10;
/// The smallest chunk size accepted.
const MIN_CHUNK_SIZE: usize = 64;

/// Builds a [`Recorder`]; see [`Recorder::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RecorderBuilder {
    codec: Codec,
    key: Option<Key>,
    frame_rate: u32,
    seed: u64,
    schema_version: u32,
    input_version: u32,
    keyframe_interval: u32,
    chunk_size: usize,
    metadata: Metadata,
    writer_thread: bool,
}

impl RecorderBuilder {
    /// Whether chunks are appended and fsynced on a writer thread of the recorder's own
    /// (default `true`): a frame that fills a chunk then hands it over and returns, and the
    /// fsync is not on the game thread's time. At most two chunks' worth are in flight; a
    /// disk slower than the recording makes the game wait at the third. A failed write is
    /// reported by the next [`frame`](Recorder::frame), [`keyframe`](Recorder::keyframe),
    /// [`flush`](Recorder::flush) or [`finish`](Recorder::finish), and
    /// [`durable_frames`](Recorder::durable_frames) counts what the thread has made durable.
    /// With `false`, or where there are no threads (`wasm32-unknown-unknown`), each append is
    /// made on the game thread, in the call that fills the chunk.
    pub fn writer_thread(mut self, threaded: bool) -> Self {
        self.writer_thread = threaded;
        self
    }

    /// The codec of the inputs (default MessagePack, JSON without the `msgpack` feature).
    /// Keyframes keep the codec of their snapshot.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Encrypt every chunk's payload with this key (AES-256-GCM, a fresh nonce per chunk).
    /// In a build without the `encryption` feature, recording with a key fails with
    /// [`Error::FeatureDisabled`](crate::Error::FeatureDisabled).
    pub fn key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// Set up as a game's saves are, from its manager's
    /// [`profile`](crate::SaveLoadManager::profile): the codec, the key and the schema version
    /// (the keyframes are saves of the game). Set the frame rate and the rest after it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let manager = savegame::SaveLoadManager::builder()
    ///     .directory(dir.path())
    ///     .key(savegame::Key::from_bytes([1; 32]))
    ///     .build()?;
    /// let recorder: savegame::Recorder<u8> = savegame::Recorder::builder()
    ///     .profile(&manager.profile())
    ///     .frame_rate(30)
    ///     .create(dir.path().join("match.replay"))?;
    /// # drop(recorder);
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn profile(mut self, profile: &SaveProfile) -> Self {
        self.codec = profile.codec;
        self.schema_version = profile.schema_version;
        self.key = profile.key().cloned();
        self
    }

    /// The game's frame rate, in frames per second (default 60): playback runs at it.
    pub fn frame_rate(mut self, frames_per_second: u32) -> Self {
        self.frame_rate = frames_per_second;
        self
    }

    /// The game's seed for the match (default 0), kept in the header for the game's use.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The game's save-schema version (default 1): the version of the keyframes.
    pub fn schema_version(mut self, version: u32) -> Self {
        self.schema_version = version;
        self
    }

    /// The game's input format version (default 1): bump it when the input type changes.
    pub fn input_version(mut self, version: u32) -> Self {
        self.input_version = version;
        self
    }

    /// Ask for a keyframe every `frames` frames, from frame 0 (default 300; 0 never asks):
    /// [`Recorder::keyframe_due`] says when.
    pub fn keyframe_every(mut self, frames: u32) -> Self {
        self.keyframe_interval = frames;
        self
    }

    /// How many bytes of frames and sealed keyframes to gather before they are written in
    /// one append, made durable (default 64 KiB). Smaller chunks lose less to a crash, and
    /// cost a little more room and more fsyncs; what is gathered is most of what the recorder
    /// keeps in memory.
    pub fn chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// The replay's label ("Match 12").
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.metadata.label = label.into();
        self
    }

    /// The version of the game that records ("1.4.2").
    pub fn app_version(mut self, version: impl Into<String>) -> Self {
        self.metadata.app_version = version.into();
        self
    }

    /// Adds one of the game's own header fields (map, players, mode).
    pub fn user_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.user.insert(key.into(), value.into());
        self
    }

    /// A small image for a replay browser.
    pub fn thumbnail(mut self, image: Vec<u8>) -> Self {
        self.metadata.thumbnail = Some(image);
        self
    }

    /// Starts recording into the file at `path` (replacing any file there): see
    /// [`create_in`](Self::create_in).
    ///
    /// # Errors
    /// As for [`create_in`](Self::create_in).
    pub fn create<I: Serialize>(self, path: impl AsRef<Path>) -> Result<Recorder<I>> {
        let (storage, name) = source::file_storage(path.as_ref())?;
        self.create_in(storage, &name)
    }

    /// Starts recording into the file `name` of `storage`, replacing any file of that name:
    /// writes the start chunk (frame rate, versions, seed, metadata) and makes it durable.
    ///
    /// # Errors
    /// [`Error::Config`] for a frame rate, schema or input version of 0, a chunk size under
    /// 64 bytes or over [`MAX_CHUNK_LEN`], metadata over its caps, or a storage that cannot
    /// append ([`Storage::can_append`]); [`Error::Io`] when the file cannot be written.
    pub fn create_in<I: Serialize>(self, storage: impl Storage, name: &str) -> Result<Recorder<I>> {
        let config = |reason: &str| {
            Err(Error::Config {
                reason: reason.to_owned(),
            })
        };
        if self.frame_rate == 0 {
            return config("a replay's frame rate is at least 1 frame per second");
        }
        if self.schema_version == 0 || self.input_version == 0 {
            return config("schema and input versions start at 1");
        }
        if !(MIN_CHUNK_SIZE as u64..=MAX_CHUNK_LEN / 2).contains(&(self.chunk_size as u64)) {
            return config("a replay's chunk size is between 64 bytes and 128 MiB");
        }
        if !storage.can_append() {
            return config(
                "a replay is recorded by appending chunks, and this storage cannot append",
            );
        }
        let start = StartMeta {
            frame_rate: self.frame_rate,
            schema_version: self.schema_version,
            input_version: self.input_version,
            keyframe_interval: self.keyframe_interval,
            seed: self.seed,
            recorded_at: format::now(),
            metadata: self.metadata,
        };
        let stream = Stream {
            replay_id: new_replay_id(),
            codec: self.codec,
            encrypted: self.key.is_some(),
        };
        let meta = start.encode()?;
        let storage: Arc<dyn Storage> = Arc::new(storage);
        storage
            .delete(name)
            .map_err(|e| Error::io(storage.locate(name), e))?;
        let mut writer = Writer {
            appender: Appender::new(Arc::clone(&storage), name, self.writer_thread),
            storage,
            name: name.to_owned(),
            key: self.key,
            stream,
            next_index: 0,
            batch: Vec::new(),
            stopped: None,
        };
        writer.seal(ChunkKind::Start, 0, &meta, &[])?;
        writer.write_batch(0)?;
        writer.wait()?;
        Ok(Recorder {
            writer,
            start,
            chunk_size: self.chunk_size,
            frames: 0,
            sealed_frames: 0,
            pending: FramesBuf::with_capacity(self.chunk_size),
            keyframes: 0,
            hashed_frames: 0,
            keyframe_at: None,
            _input: PhantomData,
        })
    }
}

/// A random id for a new recording: every chunk carries it, so chunks of two recordings
/// cannot be mixed. `RandomState` is seeded from the operating system's randomness.
fn new_replay_id() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let now = format::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    // A browser has no process ids (`process::id` panics on wasm32-unknown-unknown); there the
    // time, and `RandomState`'s keys (which change at each call), tell recordings apart.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Records a match into a replay file: each frame's input (a serde type of the game's) and
/// state hash, and keyframes (snapshots of the game's originators) when they are due.
///
/// The file is written append-only. Frames are gathered in memory, and sealed into a chunk
/// when a keyframe comes (the keyframe is sealed into the next); sealed chunks are written
/// together, in one append made durable before the next, whenever a
/// [chunk size](RecorderBuilder::chunk_size) of them has gathered, by a
/// [writer thread](RecorderBuilder::writer_thread) of the recorder's own. So the recorder's
/// memory is about four chunk sizes (two gathering, two in flight) plus one keyframe being
/// sealed, whatever the match's length; a crash loses at most what was not yet durable
/// ([`durable_frames`](Self::durable_frames) says how much is), and the file opens as a
/// replay cut short; and the game thread never waits for an fsync, unless the disk falls two
/// chunks behind.
///
/// [`finish`](Self::finish) writes the end chunk with the totals. Dropping a recorder without
/// finishing it writes what was gathered (errors ignored) but no end chunk: the replay reads
/// as cut short.
///
/// The position is the number of frames recorded; a keyframe given at position `n` holds the
/// state at the start of frame `n`, before its input is applied; a frame's state hash is the
/// state after it.
pub struct Recorder<I> {
    writer: Writer,
    start: StartMeta,
    chunk_size: usize,
    /// Frames recorded.
    frames: u64,
    /// Frames sealed into chunks (written or in the batch).
    sealed_frames: u64,
    /// Frames not sealed yet.
    pending: FramesBuf,
    keyframes: u64,
    hashed_frames: u64,
    /// The position of the last keyframe given.
    keyframe_at: Option<u64>,
    _input: PhantomData<fn(&I)>,
}

/// Seals chunks into a batch, and hands the batch to the appender.
struct Writer {
    storage: Arc<dyn Storage>,
    appender: Appender,
    name: String,
    key: Option<Key>,
    stream: Stream,
    next_index: u64,
    /// Sealed chunks not written yet.
    batch: Vec<u8>,
    /// Why the recorder stopped, after a failed write.
    stopped: Option<String>,
}

impl Writer {
    fn check_running(&self) -> Result<()> {
        match &self.stopped {
            Some(reason) => Err(Error::RecordingStopped {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Seals the next chunk into the batch.
    fn seal(&mut self, kind: ChunkKind, frame: u64, meta: &[u8], payload: &[u8]) -> Result<()> {
        self.check_running()?;
        let size = (meta.len() + payload.len()) as u64 + 64;
        if size > MAX_CHUNK_LEN {
            return Err(Error::TooLarge {
                path: self.storage.locate(&self.name),
                size,
                limit: MAX_CHUNK_LEN,
            });
        }
        let header = ChunkHeader {
            format_version: FORMAT_VERSION,
            stream: self.stream,
            kind,
            index: self.next_index,
            frame,
        };
        let key = match &self.key {
            Some(key) => Some((key, format::random_nonce()?)),
            None => None,
        };
        seal_chunk(&mut self.batch, &header, meta, payload, key)?;
        self.next_index += 1;
        Ok(())
    }

    /// Hands the batch over to be appended and made durable (on the writer thread, where
    /// there is one); once it is, `frames` frames are durable. A failed append may leave a
    /// torn chunk at the end of the file; nothing may follow it, so the recorder stops.
    fn write_batch(&mut self, frames: u64) -> Result<()> {
        self.check_running()?;
        if self.batch.is_empty() {
            return Ok(());
        }
        let submitted = self.appender.submit(&mut self.batch, frames);
        self.stop_on(submitted)
    }

    /// Waits until everything handed over is durable.
    fn wait(&mut self) -> Result<()> {
        self.check_running()?;
        let waited = self.appender.wait();
        self.stop_on(waited)
    }

    /// An append's outcome: a failure stops the recorder, and is reported this once as the
    /// storage's error (afterwards as [`Error::RecordingStopped`]).
    fn stop_on(&mut self, outcome: std::io::Result<()>) -> Result<()> {
        outcome.map_err(|e| {
            let e = Error::io(self.storage.locate(&self.name), e);
            self.stopped = Some(e.to_string());
            e
        })
    }
}

impl<I> fmt::Debug for Recorder<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.writer.storage.locate(&self.writer.name))
            .field("frames", &self.frames)
            .field("durable_frames", &self.durable_frames())
            .field("keyframes", &self.keyframes)
            .field("stopped", &self.writer.stopped)
            .finish_non_exhaustive()
    }
}

impl Recorder<()> {
    /// A builder with the defaults: MessagePack, no key, 60 frames per second, seed 0, schema
    /// and input version 1, a keyframe asked for every 300 frames, 64 KiB chunks.
    pub fn builder() -> RecorderBuilder {
        RecorderBuilder {
            codec: if cfg!(feature = "msgpack") {
                Codec::MessagePack
            } else {
                Codec::Json
            },
            key: None,
            frame_rate: 60,
            seed: 0,
            schema_version: 1,
            input_version: 1,
            keyframe_interval: 300,
            chunk_size: DEFAULT_CHUNK_SIZE,
            metadata: Metadata::default(),
            writer_thread: true,
        }
    }
}

impl<I> Recorder<I> {
    /// How many frames have been recorded: the number of the next frame.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.frames
    }

    /// How many of the recorded frames are in chunks written and made durable: what a crash
    /// now would leave.
    #[must_use]
    pub fn durable_frames(&self) -> u64 {
        self.writer.appender.durable()
    }

    /// How many keyframes have been given.
    #[must_use]
    pub fn keyframe_count(&self) -> u64 {
        self.keyframes
    }

    /// Whether the builder's interval asks for a keyframe at this position (frame 0, N, 2N, …)
    /// and none has been given for it yet. Give it before recording the frame.
    #[must_use]
    pub fn keyframe_due(&self) -> bool {
        let interval = u64::from(self.start.keyframe_interval);
        interval > 0
            && self.frames.is_multiple_of(interval)
            && self.keyframe_at != Some(self.frames)
    }

    /// An empty snapshot in the recorder's codec, to capture a keyframe into.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.writer.stream.codec)
    }

    /// Records `snapshot` as the keyframe of the current position (the state at the start of
    /// the next frame): it is encoded and sealed now, and written with the next append.
    /// Keyframes are what seeking restores; give one whenever
    /// [`keyframe_due`](Self::keyframe_due) says so, and at frame 0 at least. They go through
    /// the game's schema versions and migrations when played.
    ///
    /// # Errors
    /// [`Error::Encode`] when a captured memento cannot be encoded; [`Error::TooLarge`] for a
    /// keyframe over [`MAX_CHUNK_LEN`]; [`Error::Io`] when writing fails (the recorder then
    /// stops); [`Error::RecordingStopped`] after an earlier failure.
    pub fn keyframe(&mut self, snapshot: &Snapshot) -> Result<()> {
        self.writer.check_running()?;
        let save = snapshot.seal_file(
            SlotId::Numbered(0),
            self.start.schema_version,
            self.frames,
            None,
        )?;
        self.seal_frames()?;
        self.writer
            .seal(ChunkKind::Keyframe, self.frames, &[], &save)?;
        drop(save);
        self.keyframes += 1;
        self.keyframe_at = Some(self.frames);
        if self.writer.batch.len() >= self.chunk_size {
            self.write_batch()?;
        }
        Ok(())
    }

    /// Writes everything gathered so far, and makes it durable, so that it survives a crash.
    /// The recorder does this by itself whenever a chunk size has gathered.
    ///
    /// # Errors
    /// [`Error::Io`] when writing fails (the recorder then stops);
    /// [`Error::RecordingStopped`] after an earlier failure.
    pub fn flush(&mut self) -> Result<()> {
        self.seal_frames()?;
        self.write_batch()?;
        self.writer.wait()
    }

    /// Writes what was gathered, then the end chunk with the totals: the replay is complete.
    /// Returns its header, as a reader will see it.
    ///
    /// # Errors
    /// [`Error::Io`] when writing fails; [`Error::RecordingStopped`] after an earlier failure.
    /// The replay then reads as cut short.
    pub fn finish(mut self) -> Result<ReplayHeader> {
        self.seal_frames()?;
        let end = EndMeta {
            keyframes: self.keyframes,
            hashed_frames: self.hashed_frames,
        };
        self.writer
            .seal(ChunkKind::End, self.frames, &end.encode(), &[])?;
        self.write_batch()?;
        self.writer.wait()?;
        let start = StartRead {
            file_len: 0,
            start_len: 0,
            stream: self.writer.stream,
            format_version: FORMAT_VERSION,
            start: self.start.clone(),
        };
        let totals = ReplayTotals {
            frames: self.frames,
            keyframes: self.keyframes,
            hashed_frames: self.hashed_frames,
            chunks: self.writer.next_index,
        };
        Ok(ReplayHeader::from_start(&start, Some(totals)))
    }

    /// Seals the frames gathered into a chunk in the batch.
    fn seal_frames(&mut self) -> Result<()> {
        self.writer.check_running()?;
        if self.pending.count() == 0 {
            return Ok(());
        }
        let first = self.frames - u64::from(self.pending.count());
        self.writer
            .seal(ChunkKind::Frames, first, &[], self.pending.payload())?;
        self.pending.clear();
        self.sealed_frames = self.frames;
        Ok(())
    }

    /// Hands what is sealed over to be written, without waiting for it.
    fn write_batch(&mut self) -> Result<()> {
        self.writer.write_batch(self.sealed_frames)
    }
}

impl<I: Serialize> Recorder<I> {
    /// Records the next frame: its input, and the state hash after it (or `None`). Returns the
    /// frame's number. The frame is written with the next append.
    ///
    /// # Errors
    /// [`Error::Encode`] when the input cannot be encoded (nothing is recorded then);
    /// [`Error::Io`] when writing fails (the recorder then stops);
    /// [`Error::RecordingStopped`] after an earlier failure.
    pub fn frame(&mut self, input: &I, state_hash: Option<u64>) -> Result<u64> {
        self.writer.check_running()?;
        let bytes = self
            .writer
            .stream
            .codec
            .encode(input)
            .map_err(|e| e.encoding(&format!("input of frame {}", self.frames)))?;
        self.pending.push(&bytes, state_hash)?;
        let number = self.frames;
        self.frames += 1;
        if state_hash.is_some() {
            self.hashed_frames += 1;
        }
        if self.pending.len() + self.writer.batch.len() >= self.chunk_size {
            // Handed to the writer thread: the fsync is not this frame's.
            self.seal_frames()?;
            self.write_batch()?;
        }
        Ok(number)
    }
}

impl<I> Drop for Recorder<I> {
    /// Writes what was gathered, so that it plays; the replay has no end chunk.
    fn drop(&mut self) {
        if self.writer.stopped.is_none() {
            // Nothing to report an error to; what was written before still plays.
            let _ = self.flush();
        }
    }
}
