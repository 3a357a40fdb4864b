//! The replay file's bytes: chunks of the savegame file family, appended one after another.
//!
//! ```text
//! file:  start chunk, then frames and keyframe chunks in frame order, then an end chunk
//!
//! every chunk:
//! offset     size  field
//! 0          8     magic               89 53 41 56 0D 0A 1A 0A, as every file of the family
//! 8          2     format version      u16, 1 (the replay layout's own version)
//! 10         2     flags               u16; bit 0 = encrypted; every other bit must be 0
//! 12         1     codec               1 = JSON, 2 = MessagePack: the codec of the inputs
//! 13         1     file kind           3 = replay
//! 14         1     reserved            must be 0 (where a save has its slot kind, never 0)
//! 15         1     chunk kind          1 = start, 2 = frames, 3 = keyframe, 4 = end
//! 16         8     replay id           u64, random, the same in every chunk of one recording
//! 24         8     chunk index         u64, 0 for the start chunk, +1 for each chunk after
//! 32         8     frame               u64: start 0; frames: the number of its first frame;
//!                                      keyframe: the frames played before it; end: the frame count
//! 40         4     meta length M       u32, at most MAX_META_LEN
//! 44         8     payload length P    u64
//! 52         M     meta                plaintext, start and end chunks only (M = 0 otherwise)
//! 52+M       12    nonce               only when encrypted: fresh from the OS RNG for each chunk
//! ...        P     payload             when encrypted, the ciphertext then a 16-byte tag
//! end-4      4     CRC32               IEEE CRC32 of every byte of the chunk before it
//!
//! start meta:
//!   4                frame rate          u32, frames per second, at least 1
//!   4                schema version      u32, the keyframes' save-schema version, at least 1
//!   4                input version       u32, the inputs' format version, at least 1
//!   4                keyframe interval   u32, frames between the keyframes asked for (0 = none)
//!   8                seed                u64, the game's seed (opaque to the library)
//!   8                recorded at         i64, milliseconds since 1970-01-01T00:00:00Z
//!   rest             metadata            a save's metadata block: playtime, label, app version,
//!                                        user fields, thumbnail (see [`format`](super))
//!
//! end meta:
//!   8                keyframe count      u64
//!   8                hashed frames       u64, how many frames carry a state hash
//!
//! frames payload (plaintext):
//!   4                frame count N       u32, at least 1
//!   N times:
//!     1                flags             bit 0 = a state hash follows; bit 1 = the same input
//!                                        as the frame before (never on a chunk's first frame)
//!     4 + n            input             u32 length, the input in the codec (absent with bit 1)
//!     8                state hash        u64 (only with bit 0)
//!
//! keyframe payload (plaintext): a whole save file (see [`format`](super)): file kind 1,
//!   unencrypted, slot numbered 0, generation = the chunk's frame, schema version = the start
//!   chunk's, holding the keyframe's snapshot.
//!
//! start and end payloads: empty (P = 0, or P = 16 when encrypted: the tag alone).
//! ```
//!
//! All integers are little-endian.
//!
//! - The first 14 bytes of every chunk are those of every file of the family, so tools tell a
//!   replay by its kind byte. The fixed header is 52 bytes with the meta and payload lengths
//!   where a save has its metadata and payload lengths, and a chunk is framed like a save:
//!   `52 + M + (12 if encrypted) + P + 4` bytes, CRC32 last.
//! - The header and meta (bytes `0..52+M`) are the AES-GCM associated data: with a key, the
//!   replay id, the chunk's index and kind, its frame and the start and end chunks' fields are
//!   authenticated, so chunks from another recording, reordered, dropped or relabelled fail.
//! - The end chunk has a fixed length (`72` bytes, `100` when encrypted), so a reader finds it
//!   at the end of the file without reading what lies between.

use std::ops::Range;
use std::time::SystemTime;

use super::bytes::{self, Reader};
use super::frame::crc::check_crc;
use super::frame::header::check_version_and_flags;
use super::frame::open::open_body;
use super::frame::seal::seal_body;
use super::frame::{
    CRC_LEN, FLAG_ENCRYPTED, FileKind, HEADER_LEN, Key, MAGIC, MAX_METADATA_LEN, NONCE_LEN, TAG_LEN,
};
use super::metadata::{self, Metadata};
use crate::codec::Codec;
use crate::error::{Error, Result};

/// The replay layout version this library writes, and the newest it reads.
pub const FORMAT_VERSION: u16 = 1;
/// The largest chunk written or read, in bytes (a keyframe must fit in one chunk).
pub const MAX_CHUNK_LEN: u64 = 256 << 20;
/// Length of a chunk's fixed header: the same as a save's.
pub(crate) const CHUNK_HEADER_LEN: usize = HEADER_LEN;
/// Length of the start chunk's meta before its metadata block.
const START_FIXED_LEN: usize = 32;
/// The largest meta block accepted.
pub(crate) const MAX_META_LEN: usize = START_FIXED_LEN + MAX_METADATA_LEN;
/// Length of the end chunk's meta.
const END_META_LEN: usize = 16;
/// The longest start chunk: its meta at the cap, and an encrypted, empty payload.
pub(crate) const MAX_START_LEN: u64 =
    (CHUNK_HEADER_LEN + MAX_META_LEN + NONCE_LEN + TAG_LEN + CRC_LEN) as u64;

const OFF_VERSION: usize = 8;
const OFF_FLAGS: usize = 10;
const OFF_CODEC: usize = 12;
const OFF_FILE_KIND: usize = 13;
const OFF_RESERVED: usize = 14;
const OFF_CHUNK_KIND: usize = 15;
const OFF_REPLAY_ID: usize = 16;
const OFF_CHUNK_INDEX: usize = 24;
const OFF_FRAME: usize = 32;
const OFF_META_LEN: usize = 40;
const OFF_PAYLOAD_LEN: usize = 44;

/// Frame flag: a state hash follows the input.
const FRAME_HAS_HASH: u8 = 1;
/// Frame flag: the input is the previous frame's; no input bytes follow.
const FRAME_REPEATS_INPUT: u8 = 2;

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkKind {
    /// The replay's fields: frame rate, versions, seed, metadata.
    Start,
    /// Consecutive frames: inputs and state hashes.
    Frames,
    /// A snapshot of the game's originators, as a save file.
    Keyframe,
    /// The totals; the recording finished.
    End,
}

impl ChunkKind {
    const fn id(self) -> u8 {
        match self {
            ChunkKind::Start => 1,
            ChunkKind::Frames => 2,
            ChunkKind::Keyframe => 3,
            ChunkKind::End => 4,
        }
    }

    fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(ChunkKind::Start),
            2 => Some(ChunkKind::Frames),
            3 => Some(ChunkKind::Keyframe),
            4 => Some(ChunkKind::End),
            _ => None,
        }
    }

    pub(crate) const fn name(self) -> &'static str {
        match self {
            ChunkKind::Start => "start",
            ChunkKind::Frames => "frames",
            ChunkKind::Keyframe => "keyframe",
            ChunkKind::End => "end",
        }
    }
}

/// What every chunk of one recording shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stream {
    pub replay_id: u64,
    pub codec: Codec,
    pub encrypted: bool,
}

/// A chunk's fixed header, less its lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub format_version: u16,
    pub stream: Stream,
    pub kind: ChunkKind,
    pub index: u64,
    pub frame: u64,
}

/// The length of a chunk with these section lengths, or `None` if it overflows.
fn framed_len(meta_len: u64, payload_len: u64, encrypted: bool) -> Option<u64> {
    let nonce = if encrypted { NONCE_LEN as u64 } else { 0 };
    (CHUNK_HEADER_LEN as u64 + nonce + CRC_LEN as u64)
        .checked_add(meta_len)?
        .checked_add(payload_len)
}

/// The length of the end chunk of a replay, encrypted or not.
pub(crate) fn end_chunk_len(encrypted: bool) -> u64 {
    let tag = if encrypted { TAG_LEN as u64 } else { 0 };
    framed_len(END_META_LEN as u64, tag, encrypted).unwrap_or(u64::MAX)
}

/// The length the chunk starting with `head` (at least its fixed header) claims, read before
/// its CRC can be checked: only the magic and the two lengths are looked at. `encrypted` is the
/// replay's, not this chunk's flag, so a damaged flag cannot move the chunk's end. `None` when
/// the lengths overflow (a chunk that cannot fit in any file).
///
/// # Errors
/// [`Error::NotASave`] when `head` does not start with the magic.
pub(crate) fn declared_len(head: &[u8], encrypted: bool) -> Result<Option<u64>> {
    if head.len() < CHUNK_HEADER_LEN || head[..MAGIC.len()] != MAGIC {
        return Err(Error::NotASave);
    }
    let meta_len = u64::from(bytes::read_u32(head, OFF_META_LEN));
    let payload_len = bytes::read_u64(head, OFF_PAYLOAD_LEN);
    Ok(framed_len(meta_len, payload_len, encrypted))
}

/// Whether the flags of the fixed header `head` say encrypted (before the CRC is checked).
pub(crate) fn says_encrypted(head: &[u8]) -> bool {
    head.len() >= CHUNK_HEADER_LEN && bytes::read_u16(head, OFF_FLAGS) & FLAG_ENCRYPTED != 0
}

/// Does `bytes` start like a chunk (a prefix of the magic, or the whole magic)?
pub(crate) fn is_magic_prefix(bytes: &[u8]) -> bool {
    let n = bytes.len().min(MAGIC.len());
    bytes[..n] == MAGIC[..n]
}

/// Appends a whole chunk to `out`: header, meta, payload (sealed with the key and nonce when
/// given), CRC. `out` grows once, by exactly the chunk's length.
pub(crate) fn seal_chunk(
    out: &mut Vec<u8>,
    header: &ChunkHeader,
    meta: &[u8],
    payload: &[u8],
    key: Option<(&Key, [u8; NONCE_LEN])>,
) -> Result<()> {
    let encrypted = key.is_some();
    debug_assert_eq!(encrypted, header.stream.encrypted);
    if meta.len() > MAX_META_LEN {
        return Err(Error::Config {
            reason: format!(
                "the replay's metadata is {} bytes, over the {MAX_META_LEN}-byte cap",
                meta.len()
            ),
        });
    }
    let payload_len = payload.len() as u64 + if encrypted { TAG_LEN as u64 } else { 0 };
    let total = framed_len(meta.len() as u64, payload_len, encrypted)
        .and_then(|t| usize::try_from(t).ok())
        .ok_or_else(|| Error::Config {
            reason: "a replay chunk too large for this machine".into(),
        })?;
    out.reserve_exact(total);
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(if encrypted { FLAG_ENCRYPTED } else { 0 }).to_le_bytes());
    out.push(header.stream.codec.id());
    out.push(FileKind::Replay.id());
    out.push(0);
    out.push(header.kind.id());
    out.extend_from_slice(&header.stream.replay_id.to_le_bytes());
    out.extend_from_slice(&header.index.to_le_bytes());
    out.extend_from_slice(&header.frame.to_le_bytes());
    out.extend_from_slice(&bytes::len_u32(meta.len())?.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    debug_assert_eq!(out.len() - start, CHUNK_HEADER_LEN);
    out.extend_from_slice(meta);
    let associated_end = out.len();
    if let Some((key, nonce)) = key {
        out.extend_from_slice(&nonce);
        let body_start = out.len();
        out.extend_from_slice(payload);
        let (head, body) = out.split_at_mut(body_start);
        let tag = seal_body(key, &nonce, &head[start..associated_end], body)?;
        out.extend_from_slice(&tag);
    } else {
        out.extend_from_slice(payload);
    }
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len() - start, total);
    Ok(())
}

/// A chunk that passed its checks (CRC, header, lengths, and the AES-GCM tag when it was
/// opened with a key), its payload decrypted in place.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub header: ChunkHeader,
    buf: Vec<u8>,
    meta: Range<usize>,
    /// `None` for an encrypted chunk opened without a key: its meta is readable, its payload
    /// is not.
    payload: Option<Range<usize>>,
}

impl Chunk {
    /// The plaintext meta block.
    pub(crate) fn meta(&self) -> &[u8] {
        &self.buf[self.meta.clone()]
    }

    /// The plaintext payload.
    ///
    /// # Errors
    /// [`Error::KeyRequired`] when the chunk is encrypted and was opened without a key.
    pub(crate) fn payload(&self) -> Result<&[u8]> {
        let range = self
            .payload
            .clone()
            .ok_or_else(|| super::missing_key(crate::protection::KeyPurpose::Decrypt))?;
        Ok(&self.buf[range])
    }

    /// The plaintext payload, in the chunk's own buffer (moved down, not copied elsewhere).
    ///
    /// # Errors
    /// As for [`payload`](Self::payload).
    pub(crate) fn into_payload(mut self) -> Result<Vec<u8>> {
        let range = self
            .payload
            .clone()
            .ok_or_else(|| super::missing_key(crate::protection::KeyPurpose::Decrypt))?;
        self.buf.truncate(range.end);
        self.buf.drain(..range.start);
        Ok(self.buf)
    }
}

/// Checks a whole chunk and decrypts its payload in place when it is encrypted and a key is
/// given. The CRC is checked first, before any field is trusted.
///
/// # Errors
/// [`Error::NotASave`], [`Error::ChecksumMismatch`], [`Error::Malformed`],
/// [`Error::UnsupportedFormat`], [`Error::UnknownFlags`], [`Error::UnknownCodec`],
/// [`Error::WrongFileKind`], [`Error::Decrypt`].
pub(crate) fn open_chunk(mut buf: Vec<u8>, key: Option<&Key>) -> Result<Chunk> {
    check_crc(&buf)?;
    let format_version = bytes::read_u16(&buf, OFF_VERSION);
    let encrypted = check_version_and_flags(
        format_version,
        FORMAT_VERSION,
        bytes::read_u16(&buf, OFF_FLAGS),
        FLAG_ENCRYPTED,
    )? & FLAG_ENCRYPTED
        != 0;
    let codec = Codec::from_id(buf[OFF_CODEC])?;
    if buf[OFF_FILE_KIND] != FileKind::Replay.id() {
        return Err(Error::WrongFileKind {
            expected: FileKind::Replay.id(),
            found: buf[OFF_FILE_KIND],
        });
    }
    if buf[OFF_RESERVED] != 0 {
        return Err(Error::malformed("reserved replay chunk byte is not zero"));
    }
    let kind = ChunkKind::from_id(buf[OFF_CHUNK_KIND]).ok_or_else(|| {
        Error::malformed(format!("unknown replay chunk kind {}", buf[OFF_CHUNK_KIND]))
    })?;
    let meta_len = bytes::read_u32(&buf, OFF_META_LEN) as usize;
    if meta_len > MAX_META_LEN {
        return Err(Error::malformed(format!(
            "replay chunk meta length {meta_len} is over the {MAX_META_LEN}-byte cap"
        )));
    }
    let payload_len = bytes::read_u64(&buf, OFF_PAYLOAD_LEN);
    if framed_len(meta_len as u64, payload_len, encrypted) != Some(buf.len() as u64) {
        return Err(Error::malformed(format!(
            "the replay chunk's lengths do not add up to its {} bytes",
            buf.len()
        )));
    }
    let header = ChunkHeader {
        format_version,
        stream: Stream {
            replay_id: bytes::read_u64(&buf, OFF_REPLAY_ID),
            codec,
            encrypted,
        },
        kind,
        index: bytes::read_u64(&buf, OFF_CHUNK_INDEX),
        frame: bytes::read_u64(&buf, OFF_FRAME),
    };
    let meta = CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + meta_len;
    let crc_at = buf.len() - CRC_LEN;
    let payload = if !encrypted {
        Some(meta.end..crc_at)
    } else {
        let body_start = meta.end + NONCE_LEN;
        if crc_at - body_start < TAG_LEN {
            return Err(Error::malformed(
                "encrypted replay chunk shorter than its tag",
            ));
        }
        let body = body_start..crc_at - TAG_LEN;
        match key {
            None => None,
            Some(key) => {
                let mut nonce = [0u8; NONCE_LEN];
                nonce.copy_from_slice(&buf[meta.end..body_start]);
                let mut tag = [0u8; TAG_LEN];
                tag.copy_from_slice(&buf[body.end..crc_at]);
                let (head, rest) = buf.split_at_mut(body_start);
                open_body(
                    key,
                    &nonce,
                    &head[..meta.end],
                    &mut rest[..body.len()],
                    &tag,
                )?;
                Some(body)
            }
        }
    };
    Ok(Chunk {
        header,
        buf,
        meta,
        payload,
    })
}

/// The start chunk's fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartMeta {
    pub frame_rate: u32,
    pub schema_version: u32,
    pub input_version: u32,
    pub keyframe_interval: u32,
    pub seed: u64,
    pub recorded_at: SystemTime,
    pub metadata: Metadata,
}

impl StartMeta {
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let len = START_FIXED_LEN + metadata::encoded_metadata_len(&self.metadata);
        if len > MAX_META_LEN {
            return Err(Error::Config {
                reason: format!(
                    "the replay's metadata is {len} bytes, over the {MAX_META_LEN}-byte cap"
                ),
            });
        }
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(&self.frame_rate.to_le_bytes());
        buf.extend_from_slice(&self.schema_version.to_le_bytes());
        buf.extend_from_slice(&self.input_version.to_le_bytes());
        buf.extend_from_slice(&self.keyframe_interval.to_le_bytes());
        buf.extend_from_slice(&self.seed.to_le_bytes());
        buf.extend_from_slice(&bytes::system_time_to_millis(self.recorded_at).to_le_bytes());
        metadata::write_metadata(&mut buf, &self.metadata)?;
        Ok(buf)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "replay start chunk");
        let frame_rate = r.u32()?;
        let schema_version = r.u32()?;
        let input_version = r.u32()?;
        let keyframe_interval = r.u32()?;
        let seed = r.u64()?;
        let recorded_at = bytes::millis_to_system_time(r.u64()? as i64);
        if frame_rate == 0 || schema_version == 0 || input_version == 0 {
            return Err(Error::malformed(
                "a replay's frame rate, schema version and input version are at least 1",
            ));
        }
        let mut metadata = metadata::parse_metadata(&bytes[r.position()..])?;
        metadata.saved_at = Some(recorded_at);
        Ok(StartMeta {
            frame_rate,
            schema_version,
            input_version,
            keyframe_interval,
            seed,
            recorded_at,
            metadata,
        })
    }
}

/// The end chunk's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EndMeta {
    pub keyframes: u64,
    pub hashed_frames: u64,
}

impl EndMeta {
    pub(crate) fn encode(self) -> [u8; END_META_LEN] {
        let mut out = [0u8; END_META_LEN];
        out[..8].copy_from_slice(&self.keyframes.to_le_bytes());
        out[8..].copy_from_slice(&self.hashed_frames.to_le_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != END_META_LEN {
            return Err(Error::malformed(format!(
                "a replay's end chunk has {END_META_LEN} bytes of meta, not {}",
                bytes.len()
            )));
        }
        Ok(EndMeta {
            keyframes: bytes::read_u64(bytes, 0),
            hashed_frames: bytes::read_u64(bytes, 8),
        })
    }
}

/// Frames being gathered into the payload of a frames chunk.
#[derive(Debug)]
pub(crate) struct FramesBuf {
    buf: Vec<u8>,
    count: u32,
    /// Where the last input written is, to spot a repeated one.
    last_input: Range<usize>,
}

impl FramesBuf {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.saturating_add(64));
        buf.extend_from_slice(&0u32.to_le_bytes());
        FramesBuf {
            buf,
            count: 0,
            last_input: 0..0,
        }
    }

    /// Adds a frame: its encoded input and its state hash.
    pub(crate) fn push(&mut self, input: &[u8], hash: Option<u64>) -> Result<()> {
        let repeats = self.count > 0 && self.buf[self.last_input.clone()] == *input;
        let flags = if hash.is_some() { FRAME_HAS_HASH } else { 0 }
            | if repeats { FRAME_REPEATS_INPUT } else { 0 };
        let len = bytes::len_u32(input.len())?;
        let count = self.count.checked_add(1).ok_or_else(|| Error::Config {
            reason: "too many frames for one replay chunk".into(),
        })?;
        self.buf.push(flags);
        if !repeats {
            self.buf.extend_from_slice(&len.to_le_bytes());
            let start = self.buf.len();
            self.buf.extend_from_slice(input);
            self.last_input = start..self.buf.len();
        }
        if let Some(hash) = hash {
            self.buf.extend_from_slice(&hash.to_le_bytes());
        }
        self.count = count;
        Ok(())
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The payload's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// The payload, with its frame count.
    pub(crate) fn payload(&mut self) -> &[u8] {
        self.buf[..4].copy_from_slice(&self.count.to_le_bytes());
        &self.buf
    }

    /// Empties the buffer, keeping its allocation.
    pub(crate) fn clear(&mut self) {
        self.buf.truncate(4);
        self.count = 0;
        self.last_input = 0..0;
    }
}

/// One frame of a parsed frames payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameRef {
    /// Where the encoded input is in the payload (shared with the frame before for a repeat).
    pub input: Range<usize>,
    pub hash: Option<u64>,
}

/// Parses a frames payload. Every length is checked against the bytes present before anything
/// is allocated for it.
///
/// # Errors
/// [`Error::Malformed`] for a payload that is not exactly a list of frames.
pub(crate) fn parse_frames(payload: &[u8]) -> Result<Vec<FrameRef>> {
    let mut r = Reader::new(payload, "frames chunk");
    let count = r.u32()? as usize;
    if count == 0 {
        return Err(Error::malformed("a frames chunk with no frames"));
    }
    // Every frame takes at least its flags byte.
    if count > r.remaining() {
        return Err(Error::malformed(format!(
            "a frames chunk claims {count} frames, more than its {} bytes can hold",
            r.remaining()
        )));
    }
    let mut frames: Vec<FrameRef> = Vec::with_capacity(count);
    for _ in 0..count {
        let flags = r.u8()?;
        if flags & !(FRAME_HAS_HASH | FRAME_REPEATS_INPUT) != 0 {
            return Err(Error::malformed(format!(
                "unknown frame flags {flags:#04x}"
            )));
        }
        let input = if flags & FRAME_REPEATS_INPUT != 0 {
            let previous = frames.last().ok_or_else(|| {
                Error::malformed("the first frame of a chunk repeats an input before it")
            })?;
            previous.input.clone()
        } else {
            let len = r.u32()? as usize;
            let start = r.position();
            r.bytes(len)?;
            start..start + len
        };
        let hash = if flags & FRAME_HAS_HASH != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        frames.push(FrameRef { input, hash });
    }
    if r.remaining() != 0 {
        return Err(Error::malformed(
            "trailing bytes after the frames of a chunk",
        ));
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use proptest::prelude::*;

    use super::*;

    fn stream(encrypted: bool) -> Stream {
        Stream {
            replay_id: 0x0123_4567_89AB_CDEF,
            codec: Codec::MessagePack,
            encrypted,
        }
    }

    fn start_meta() -> StartMeta {
        StartMeta {
            frame_rate: 60,
            schema_version: 2,
            input_version: 3,
            keyframe_interval: 300,
            seed: 42,
            recorded_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            metadata: Metadata {
                label: "Match 7".into(),
                app_version: "1.2.0".into(),
                ..Metadata::default()
            },
        }
    }

    fn sealed(
        header: &ChunkHeader,
        meta: &[u8],
        payload: &[u8],
        key: Option<(&Key, [u8; NONCE_LEN])>,
    ) -> Vec<u8> {
        let mut out = b"before".to_vec();
        seal_chunk(&mut out, header, meta, payload, key).unwrap();
        assert_eq!(&out[..6], b"before");
        out.split_off(6)
    }

    fn header(kind: ChunkKind, index: u64, frame: u64, encrypted: bool) -> ChunkHeader {
        ChunkHeader {
            format_version: FORMAT_VERSION,
            stream: stream(encrypted),
            kind,
            index,
            frame,
        }
    }

    #[test]
    fn frames_round_trip_with_repeats_and_hashes() {
        let mut frames = FramesBuf::with_capacity(64);
        frames.push(b"ab", Some(7)).unwrap();
        frames.push(b"ab", None).unwrap();
        frames.push(b"c", Some(9)).unwrap();
        frames.push(b"c", Some(10)).unwrap();
        // flags + len + input + hash, a repeat of one byte, then two more.
        assert_eq!(
            frames.len(),
            4 + (1 + 4 + 2 + 8) + 1 + (1 + 4 + 1 + 8) + (1 + 8)
        );
        let payload = frames.payload().to_vec();
        let parsed = parse_frames(&payload).unwrap();
        let inputs: Vec<&[u8]> = parsed.iter().map(|f| &payload[f.input.clone()]).collect();
        assert_eq!(inputs, [&b"ab"[..], b"ab", b"c", b"c"]);
        let hashes: Vec<Option<u64>> = parsed.iter().map(|f| f.hash).collect();
        assert_eq!(hashes, [Some(7), None, Some(9), Some(10)]);
        frames.clear();
        assert_eq!((frames.count(), frames.len()), (0, 4));
    }

    #[test]
    fn frames_payloads_that_lie_are_refused_before_allocating() {
        let mut lies: Vec<Vec<u8>> = vec![
            u32::MAX.to_le_bytes().to_vec(), // four billion frames in no bytes
            [1, 0, 0, 0, FRAME_REPEATS_INPUT].to_vec(), // the first frame repeats nothing
            [1, 0, 0, 0, 0x80].to_vec(),     // unknown flag
            [1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF].to_vec(), // a 4 GiB input
            [0, 0, 0, 0].to_vec(),           // no frames
        ];
        let mut trailing = FramesBuf::with_capacity(8);
        trailing.push(b"x", None).unwrap();
        let mut bytes = trailing.payload().to_vec();
        bytes.push(0);
        lies.push(bytes);
        for lie in lies {
            let err = parse_frames(&lie).unwrap_err();
            assert!(matches!(err, Error::Malformed { .. }), "{lie:?}: {err}");
        }
    }

    #[test]
    fn start_and_end_meta_round_trip() {
        let meta = start_meta();
        let mut decoded = StartMeta::decode(&meta.encode().unwrap()).unwrap();
        assert_eq!(decoded.metadata.saved_at, Some(meta.recorded_at));
        decoded.metadata.saved_at = None;
        assert_eq!(decoded, meta);
        let end = EndMeta {
            keyframes: 10,
            hashed_frames: 3000,
        };
        assert_eq!(EndMeta::decode(&end.encode()).unwrap(), end);
        assert!(EndMeta::decode(&[0; 15]).is_err());
    }

    #[test]
    fn chunks_round_trip_in_the_clear_and_sealed() {
        let meta = start_meta().encode().unwrap();
        let plain = sealed(&header(ChunkKind::Start, 0, 0, false), &meta, &[], None);
        let chunk = open_chunk(plain.clone(), None).unwrap();
        assert_eq!(chunk.header, header(ChunkKind::Start, 0, 0, false));
        assert_eq!(chunk.meta(), meta);
        assert_eq!(
            declared_len(&plain, false).unwrap(),
            Some(plain.len() as u64)
        );

        #[cfg(feature = "encryption")]
        {
            let key = Key::from_bytes([5; 32]);
            let h = header(ChunkKind::Frames, 3, 600, true);
            let sealed = sealed(&h, &[], b"secret frames", Some((&key, [1; NONCE_LEN])));
            assert!(!sealed.windows(13).any(|w| w == b"secret frames"));
            let opened = open_chunk(sealed.clone(), Some(&key)).unwrap();
            assert_eq!(opened.header, h);
            assert_eq!(opened.payload().unwrap(), b"secret frames");
            assert_eq!(opened.into_payload().unwrap(), b"secret frames");
            // Without the key: the header reads, the payload does not.
            let unread = open_chunk(sealed.clone(), None).unwrap();
            assert!(matches!(unread.payload(), Err(Error::KeyRequired { .. })));
            // Every header field is associated data.
            for at in [16, 24, 32] {
                let mut forged = sealed.clone();
                forged[at] ^= 1;
                let crc_at = forged.len() - CRC_LEN;
                let crc = crc32fast::hash(&forged[..crc_at]);
                forged[crc_at..].copy_from_slice(&crc.to_le_bytes());
                assert!(matches!(
                    open_chunk(forged, Some(&key)),
                    Err(Error::Decrypt)
                ));
            }
        }
    }

    #[test]
    fn save_readers_refuse_a_replay_chunk_as_malformed() {
        let meta = start_meta().encode().unwrap();
        let chunk = sealed(&header(ChunkKind::Start, 0, 0, false), &meta, &[], None);
        let err = crate::format::parse_header(&chunk, Some(chunk.len() as u64)).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        let err = crate::format::open(
            chunk,
            FileKind::Save,
            crate::format::Trust::plain(),
            u64::MAX,
            1,
        )
        .unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }

    /// The exact bytes of a start chunk and a frames chunk with the clock and nonce fixed: a
    /// change to the replay layout shows up here, and must come with a new replay format
    /// version and a changelog entry.
    #[cfg(feature = "encryption")]
    #[test]
    fn golden_chunk_bytes() {
        let key = Key::from_bytes([7; 32]);
        let meta = start_meta().encode().unwrap();
        let start = sealed(
            &header(ChunkKind::Start, 0, 0, true),
            &meta,
            &[],
            Some((&key, [9; NONCE_LEN])),
        );
        let mut frames = FramesBuf::with_capacity(16);
        frames
            .push(&[0x81, 0xa1, b'x', 0x01], Some(0xABCD))
            .unwrap();
        frames.push(&[0x81, 0xa1, b'x', 0x01], None).unwrap();
        let frames = sealed(
            &header(ChunkKind::Frames, 1, 0, true),
            &[],
            frames.payload(),
            Some((&key, [10; NONCE_LEN])),
        );
        let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(&start), GOLDEN_START);
        assert_eq!(hex(&frames), GOLDEN_FRAMES);
        let opened = open_chunk(frames, Some(&key)).unwrap();
        assert_eq!(parse_frames(opened.payload().unwrap()).unwrap().len(), 2);
        assert_eq!(open_chunk(start, Some(&key)).unwrap().meta(), meta);
    }

    #[cfg(feature = "encryption")]
    const GOLDEN_START: &str = "895341560d0a1a0a0100010002030001efcdab8967452301000000000000000000000000000000003e00000010000000000000003c00000002000000030000002c0100002a000000000000007b68e5cf8b010000000000000000000007004d6174636820370500312e322e3000000000000009090909090909090909090928afb7cc6a55b73d59bc3d75f374a632a10457c4";
    #[cfg(feature = "encryption")]
    const GOLDEN_FRAMES: &str = "895341560d0a1a0a0100010002030002efcdab8967452301010000000000000000000000000000000000000026000000000000000a0a0a0a0a0a0a0a0a0a0a0a379e3727dea0d5bb79641b03beb8008b367d3389b5c9ad7732aa52b84990768476a7883c8732b0c07d05";

    proptest! {
        /// Any bytes behind a frames payload's count: a list of frames or a typed error.
        #[test]
        fn parsing_any_frames_payload_never_panics(
            count in 0u32..40,
            tail in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut bytes = count.to_le_bytes().to_vec();
            bytes.extend_from_slice(&tail);
            if let Ok(frames) = parse_frames(&bytes) {
                prop_assert_eq!(frames.len(), count as usize);
                for f in frames {
                    prop_assert!(f.input.end <= bytes.len());
                }
            }
        }
    }
}
