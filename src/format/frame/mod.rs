//! The shared frame of every file of the family: its layout (the magic, the format versions,
//! the flags, the fixed header's field offsets, the caps), the file kinds, and the [`Header`]
//! a file's first bytes parse into (see the byte table in [`format`](super)).
//!
//! The frame's work is in its parts, which import this layout and one another, never the
//! other way:
//!
//! - [`header`]: reading the fixed header and metadata, and the lengths a journal or a load
//!   menu needs before the whole file is read.
//! - [`crc`]: the CRC32 trailer, checked over a whole file or piece by piece.
//! - [`toc`]: the body's table of contents (and a delta's preamble before it), and the check
//!   that the document is exactly the map of its mementos.
//! - [`document`]: a body's document written into a writer as it is encoded (a streamed
//!   save's, a body compressed as it goes).
//! - [`seal`]: writing a whole file: header, metadata, body, compression, encryption or the
//!   integrity tag, CRC.
//! - [`stream`]: writing a save as it is encoded, a segment at a time (format version 3).
//! - [`open`]: checking and opening a whole file: CRC, header, the protection the caller
//!   trusts, decryption or the tag, decompression, table of contents.

pub(super) mod crc;
pub(super) mod document;
pub(super) mod header;
pub(super) mod open;
pub(super) mod seal;
pub(super) mod stream;
pub(super) mod toc;

use std::ops::Range;
use std::time::SystemTime;

use crate::codec::Codec;
use crate::compression::Compression;
use crate::format::metadata::{Metadata, encoded_metadata_len};
use crate::slot::SlotId;

pub use crate::crypto::Key;
pub use crate::protection::Protection;

/// The first eight bytes of every file of the savegame family.
pub const MAGIC: [u8; 8] = [0x89, b'S', b'A', b'V', b'\r', b'\n', 0x1A, b'\n'];
/// The format version this library writes, and the newest it reads. Every older version (1
/// and 2) is read too.
pub const FORMAT_VERSION: u16 = 3;
/// The first format version with per-memento versions and integrity-only files.
pub const FORMAT_VERSION_2: u16 = 2;
/// The first format version whose segments' associated data reads the header's payload
/// length as zero: a save is sealed a segment at a time as it is encoded, before its length
/// is known (see "Segmented encryption" in `docs/format.md`).
pub const FORMAT_VERSION_3: u16 = 3;
/// The default cap on a save file's size, and on a compressed body's decompressed size: 256 MiB
/// (a manager's [`max_file_size`](crate::ManagerBuilder::max_file_size) sets its own).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 256 << 20;
/// Length of the fixed header.
pub const HEADER_LEN: usize = 52;
/// Length of the CRC32 trailer.
pub const CRC_LEN: usize = 4;
/// The largest metadata block accepted (labels, user fields and a thumbnail).
pub const MAX_METADATA_LEN: usize = 4 << 20;
/// Flag bit: the payload is AES-256-GCM ciphertext followed by its tag.
pub const FLAG_ENCRYPTED: u16 = 1;
/// Flag bit (format version 2 on): the payload is the readable body followed by an
/// HMAC-SHA256 tag of every byte before the tag. Never set together with [`FLAG_ENCRYPTED`].
pub const FLAG_AUTHENTICATED: u16 = 2;
/// Flag bits 2–3 (format version 2): the body's compression, 0 = none, 1 = LZ4,
/// 2 = Zstandard; 3 is [`Error::UnknownFlags`](crate::Error::UnknownFlags). A compressed body
/// is its decompressed length (`u64`) then the stream, sealed like any body.
pub const FLAGS_COMPRESSION: u16 = 0b1100;
/// Flag bit 4 (format version 2, only with [`FLAG_ENCRYPTED`]): the body is encrypted as
/// segments of `2^n` bytes, `n` in the header's byte 15, each its own AES-256-GCM message;
/// the tags follow the ciphertext, in order (see "Segmented encryption" in `docs/format.md`).
pub const FLAG_SEGMENTED: u16 = 1 << 4;
/// Where the compression field starts in the flags.
const COMPRESSION_SHIFT: u16 = 2;
/// The memento version of every memento of a format-1 file (which records none), and of a
/// memento captured without one.
pub const DEFAULT_MEMENTO_VERSION: u32 = 1;
/// Length of a nonce in bytes.
pub const NONCE_LEN: usize = 12;
/// Length of an AES-GCM tag in bytes.
pub const TAG_LEN: usize = 16;
/// Length of the HMAC-SHA256 tag of an integrity-only file, in bytes.
pub const MAC_LEN: usize = crate::crypto::MAC_LEN;

const OFF_VERSION: usize = 8;
const OFF_FLAGS: usize = 10;
const OFF_CODEC: usize = 12;
const OFF_KIND: usize = 13;
const OFF_SLOT_KIND: usize = 14;
/// Reserved (0), or a segmented file's segment size as a power of two.
const OFF_RESERVED: usize = 15;
const OFF_SLOT: usize = 16;
const OFF_SCHEMA: usize = 20;
const OFF_GENERATION: usize = 24;
const OFF_SAVED_AT: usize = 32;
const OFF_METADATA_LEN: usize = 40;
const OFF_PAYLOAD_LEN: usize = 44;
/// Longest memento id, in bytes.
pub const MAX_ID_LEN: usize = 1024;

/// The associated data of a segmented file's segments, from its first bytes `head` (the fixed
/// header and the metadata): those bytes as they are up to format version 2; from format
/// version 3, with the payload-length field read as zero, so that a writer can seal segments
/// before it knows the payload's length. The length is still bound to the segments: it
/// decides how the payload is cut into segments and which is the last, and any other cut
/// fails a segment's tag (see "Segmented encryption" in `docs/format.md`).
pub(crate) fn associated_data(head: &[u8], format_version: u16) -> std::borrow::Cow<'_, [u8]> {
    let length = OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 8;
    if format_version < FORMAT_VERSION_3 || head.len() < length.end {
        return std::borrow::Cow::Borrowed(head);
    }
    let mut zeroed = head.to_vec();
    zeroed[length].fill(0);
    std::borrow::Cow::Owned(zeroed)
}

/// What a file of the savegame family holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A full save of a slot.
    Save,
    /// An incremental save: the changes since a base save, appended to the slot's journal.
    Delta,
    /// A replay: chunks of recorded frames and keyframes (see [`replay`](crate::replay)). Only
    /// the first 14 bytes of its chunks follow the layout of this module; a save reader refuses
    /// it as malformed.
    Replay,
}

impl FileKind {
    /// The kind byte in the header.
    #[must_use]
    pub const fn id(self) -> u8 {
        match self {
            FileKind::Save => 1,
            FileKind::Delta => 2,
            FileKind::Replay => 3,
        }
    }

    fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(FileKind::Save),
            2 => Some(FileKind::Delta),
            3 => Some(FileKind::Replay),
            _ => None,
        }
    }
}

/// Everything a file's header and metadata say: what a load menu or an inspection tool shows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Header {
    /// The format version of the file.
    pub format_version: u16,
    /// Whether the payload is encrypted.
    pub encrypted: bool,
    /// Whether the payload is readable and carries an HMAC-SHA256 tag (an integrity-only
    /// file, format version 2 on).
    pub authenticated: bool,
    /// The codec of the mementos.
    pub codec: Codec,
    /// How the body is compressed (format version 2 on; a Zstandard file does not record its
    /// level, so it reads as `Zstd { level: 0 }`).
    pub compression: Compression,
    /// What the file holds.
    pub kind: FileKind,
    /// The slot the file was written for.
    pub slot: SlotId,
    /// The schema version of the document.
    pub schema_version: u32,
    /// The slot's save counter: 1 for its first save, one more for each save after.
    pub generation: u64,
    /// When the file was written (millisecond precision).
    pub saved_at: SystemTime,
    /// Label, playtime, app version, user fields, thumbnail.
    pub metadata: Metadata,
    /// Length of the payload section in bytes (including the tag, or tags, when encrypted).
    pub payload_len: u64,
    /// For a body encrypted in segments (format version 2, [`FLAG_SEGMENTED`]): the segment
    /// size as a power of two (18: 256 KiB). `None` for a body encrypted as one message, and
    /// for a file that is not encrypted.
    pub segment_log: Option<u8>,
}

impl Header {
    /// How the body is protected.
    #[must_use]
    pub fn protection(&self) -> Protection {
        if self.encrypted {
            Protection::Encrypted
        } else if self.authenticated {
            Protection::Authenticated
        } else {
            Protection::Plain
        }
    }

    /// Does opening the file need the key (it is encrypted, or its tag is to be checked)?
    #[must_use]
    pub fn needs_key(&self) -> bool {
        self.encrypted || self.authenticated
    }

    /// Byte ranges of the file's sections, for tools that show where everything is.
    #[must_use]
    pub fn sections(&self) -> Sections {
        let metadata_len = encoded_metadata_len(&self.metadata) as u64;
        let header = 0..HEADER_LEN as u64;
        let metadata = header.end..header.end + metadata_len;
        let nonce_len = if self.encrypted { NONCE_LEN as u64 } else { 0 };
        let nonce = metadata.end..metadata.end + nonce_len;
        let payload = nonce.end..nonce.end.saturating_add(self.payload_len);
        let crc = payload.end..payload.end.saturating_add(CRC_LEN as u64);
        Sections {
            header,
            metadata,
            nonce,
            payload,
            crc,
        }
    }
}

/// Byte ranges of a file's sections (see [`Header::sections`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sections {
    /// The fixed header.
    pub header: Range<u64>,
    /// The metadata block.
    pub metadata: Range<u64>,
    /// The nonce (empty when not encrypted).
    pub nonce: Range<u64>,
    /// The payload (the body, or its ciphertext and tag; the body compressed when the header
    /// says so).
    pub payload: Range<u64>,
    /// The CRC32 trailer.
    pub crc: Range<u64>,
}

#[cfg(test)]
mod tests;
