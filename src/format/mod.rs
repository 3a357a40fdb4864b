//! The byte format of every file of the family, and nothing else: the magic, the file kinds,
//! the shared frame (header, flags, the AES-GCM sealing over the header, the CRC32), the body
//! of a save and of a delta, the replay chunks, and the little-endian reader. It is the leaf of
//! the crate: it imports only [`error`](crate::Error), [`codec`](crate::codec) (a codec is a byte
//! in the header), [`compression`](crate::compression) (so is a compression, in the flags),
//! [`SlotId`](crate::SlotId) (so is a slot) and the key.
//!
//! [`sniff`] tells what kind of file some bytes start, for tools.
//!
//! # Saves and deltas
//!
//! ```text
//! offset     size  field
//! 0          8     magic               89 53 41 56 0D 0A 1A 0A  ("\x89SAV\r\n\x1a\n")
//! 8          2     format version      u16, 2 (1 is read too: see below)
//! 10         2     flags               u16; bit 0 = encrypted; bit 1 = authenticated
//!                                      (integrity-only; never with bit 0); bits 2-3 the
//!                                      body's compression: 0 none, 1 LZ4, 2 Zstandard (3 is
//!                                      unknown); every other bit must be 0
//! 12         1     codec               1 = JSON, 2 = MessagePack, 3 = bitcode (its document is
//!                                      the mementos back to back, not self-describing)
//! 13         1     file kind           1 = save, 2 = delta (an incremental save), 3 = replay
//!                                      (a different layout from here on: see [`replay`])
//! 14         1     slot kind           1 = numbered, 2 = autosave, 3 = quicksave
//! 15         1     reserved            must be 0
//! 16         4     slot number         u32 (0 for quicksave)
//! 20         4     schema version      u32, the game's save-schema version
//! 24         8     generation          u64, 1 for a slot's first save, +1 for each save after
//! 32         8     saved at            i64, milliseconds since 1970-01-01T00:00:00Z
//! 40         4     metadata length M   u32, at most MAX_METADATA_LEN
//! 44         8     payload length P    u64
//! 52         M     metadata            see below
//! 52+M       12    nonce               only when encrypted
//! ...        P     payload             the body (compressed: its length u64, then the LZ4 block
//!                                      or Zstandard frame); when encrypted, ciphertext then a
//!                                      16-byte tag;
//!                                      when authenticated, the body then a 32-byte
//!                                      HMAC-SHA256 tag of every byte before the tag
//! end-4      4     CRC32               IEEE CRC32 of every byte before it
//!
//! metadata:
//!   8                playtime           u64, milliseconds
//!   2 + n            label              u16 length, UTF-8
//!   2 + n            app version        u16 length, UTF-8
//!   2                user field count   u16, then per field:
//!     2 + n            key              u16 length, UTF-8
//!     4 + n            value            u32 length, UTF-8
//!   4 + n            thumbnail          u32 length (0 = none), raw bytes
//!
//! body (plaintext):
//!   4                entry count N      u32
//!   N times:                            the table of contents, ids in ascending byte order
//!     2 + n            id               u16 length, UTF-8, not empty
//!     4                memento version  u32, the memento's own data version (not in
//!                                       format version 1, whose mementos are all at 1)
//!     8                offset           u64, of the memento within the document
//!     8                length           u64, of the memento
//!   rest             document           the codec's map of id -> memento: a JSON object or a
//!                                       MessagePack map, each memento's bytes exactly at its
//!                                       table-of-contents range
//!
//! body of a delta (file kind 2), before the table of contents:
//!   8                sequence           u64, 1 for the first delta after its base, +1 after
//!   4                deleted count D    u32, then D times:
//!     2 + n            id               u16 length, UTF-8: a memento the delta deletes
//! ```
//!
//! In a delta, the generation field holds the generation of the base save it applies to.
//! Deltas are appended one after another to the slot's journal file, each a complete file of
//! this format with its own nonce and CRC.
//!
//! All integers are little-endian except inside the MessagePack document, which is MessagePack.
//!
//! - The header and metadata (bytes `0..52+M`) are the AES-GCM associated data: editing any of
//!   them, or moving a file to another slot, makes the file fail to open.
//! - An integrity-only file's tag is HMAC-SHA256, under a key derived from the game's key, of
//!   every byte before the tag: editing anything (and fixing the CRC) fails with
//!   [`Error::Tampered`](crate::Error::Tampered).
//! - Format version 1 is version 2 without flag bit 1 and without the memento version in the
//!   table of contents; this library reads it forever and writes version 2.
//! - The CRC32 sits at the end of the file in every format version, so it is checked before the
//!   format version is trusted: a bit flip in the version field reads as corruption, not as a
//!   file from the future. A CRC failure means damage on disk; an AES-GCM failure with a good
//!   CRC means a wrong key or a deliberate edit.
//! - The file's length must equal `52 + M + (12 if encrypted) + P + 4` exactly.
//! - The table of contents lets a load find each memento without parsing the document, and the
//!   document keeps the payload a valid JSON or MessagePack value for people and tools.

mod ahead;
mod bytes;
mod frame;
mod metadata;
pub mod replay;
mod segments;
mod trust;

pub(crate) use ahead::{EncodeAhead, InPlace};
pub(crate) use bytes::{millis_to_system_time, now, system_time_to_millis};
pub use frame::crc::check_crc;
pub(crate) use frame::crc::{CRC_PIECE, CrcCheck};
pub use frame::header::{header_len, parse_header, record_len};
pub(crate) use frame::open::{Opened, open};
pub(crate) use frame::seal::{
    Protect, SealParams, SeeMementos, Source, random_nonce, seal_sources,
};
pub(crate) use frame::stream::{StreamError, seal_streamed, streams_compressed};
pub use frame::{
    CRC_LEN, DEFAULT_MAX_FILE_SIZE, DEFAULT_MEMENTO_VERSION, FLAG_AUTHENTICATED, FLAG_ENCRYPTED,
    FLAG_SEGMENTED, FLAGS_COMPRESSION, FORMAT_VERSION, FORMAT_VERSION_2, FORMAT_VERSION_3,
    FileKind, HEADER_LEN, Header, Key, MAC_LEN, MAGIC, MAX_ID_LEN, MAX_METADATA_LEN, NONCE_LEN,
    Protection, Sections, TAG_LEN,
};
pub use metadata::Metadata;
pub use trust::Trust;
pub(crate) use trust::missing_key;

/// What kind of file `bytes` start (the first 14 bytes are enough): `None` when they do not
/// start with the family's magic, or name a kind this version does not know (see
/// [`kind_byte`]). It reads the kind byte only and checks nothing else: a file it names may
/// still be damaged.
///
/// ```
/// use savegame::format::{FileKind, sniff};
/// # let dir = tempfile::tempdir().unwrap();
/// let manager = savegame::SaveLoadManager::builder().directory(dir.path()).build()?;
/// let report = manager.save(savegame::SlotId::Numbered(1), &manager.snapshot())?;
/// let bytes = std::fs::read(report.path).unwrap();
/// assert_eq!(sniff(&bytes), Some(FileKind::Save));
/// assert_eq!(sniff(b"not a save file"), None);
/// # Ok::<(), savegame::Error>(())
/// ```
#[must_use]
pub fn sniff(bytes: &[u8]) -> Option<FileKind> {
    kind_byte(bytes).and_then(frame::header::kind_of)
}

/// The kind byte of a file that starts with the family's magic, whether or not this version
/// knows the kind: for tools that tell a user a file is of a newer kind. `None` when `bytes`
/// do not start with the magic (or are shorter than 14 bytes).
#[must_use]
pub fn kind_byte(bytes: &[u8]) -> Option<u8> {
    frame::header::kind_byte(bytes)
}
