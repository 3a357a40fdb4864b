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

// Where things are: the layout (the constants, the field offsets, the chunk kinds and the
// fields every chunk has) here; a chunk's lengths, sealing and opening in `chunk`; the start
// and end chunks' meta in `meta`; the frames payload in `frames`.
pub(crate) mod chunk;
pub(crate) mod frames;
pub(crate) mod meta;

use super::frame::{CRC_LEN, HEADER_LEN, MAX_METADATA_LEN, NONCE_LEN, TAG_LEN};
use crate::codec::Codec;

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

#[cfg(test)]
mod tests;
