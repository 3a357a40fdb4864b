//! The shared frame of every file of the family: magic, header, flags, sealing, CRC32, and
//! the body of a save and of a delta (see the byte table in [`format`](super)).

use std::ops::Range;
use std::time::SystemTime;

use super::ahead::{Ahead, Ready};
use super::bytes::{
    Reader, len_u16, len_u32, millis_to_system_time, read_u16, read_u32, read_u64,
    system_time_to_millis,
};
use super::metadata::{Metadata, encoded_metadata_len, parse_metadata, write_metadata};
use super::segments;
use super::trust::{Trust, missing_key};
use crate::codec::{Codec, Encodable};
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::protection::KeyPurpose;
use crate::slot::SlotId;

pub use crate::crypto::Key;
pub use crate::protection::Protection;

/// The first eight bytes of every file of the savegame family.
pub const MAGIC: [u8; 8] = [0x89, b'S', b'A', b'V', b'\r', b'\n', 0x1A, b'\n'];
/// The format version this library writes, and the newest it reads. Every older version (1)
/// is read too.
pub const FORMAT_VERSION: u16 = 2;
/// The first format version with per-memento versions and integrity-only files.
pub const FORMAT_VERSION_2: u16 = 2;
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
/// 2 = Zstandard; 3 is [`Error::UnknownFlags`]. A compressed body is its decompressed length
/// (`u64`) then the stream, sealed like any body.
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

/// A table-of-contents entry without its id: the id's length, the memento version (from
/// format version 2), offset and length.
const fn toc_entry_fixed(format_version: u16) -> usize {
    if format_version >= FORMAT_VERSION_2 {
        2 + 4 + 8 + 8
    } else {
        2 + 8 + 8
    }
}
/// Longest memento id, in bytes.
pub const MAX_ID_LEN: usize = 1024;

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

/// A memento's place in an opened file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TocEntry {
    pub id: String,
    /// The memento's version ([`DEFAULT_MEMENTO_VERSION`] in a format-1 file).
    pub version: u32,
    /// Absolute range in the opened file's buffer.
    pub range: Range<usize>,
}

/// A file that passed every check: CRC, header, decryption, table of contents.
#[derive(Debug)]
pub(crate) struct Opened {
    pub header: Header,
    /// The file's bytes, with the body decrypted in place; for a compressed file, the
    /// decompressed body alone. The table of contents' ranges index it.
    pub buf: Vec<u8>,
    pub toc: Vec<TocEntry>,
    /// For a delta: its sequence number (0 for a save).
    pub sequence: u64,
    /// For a delta: the ids it deletes.
    pub deleted: Vec<String>,
}

/// How [`seal`] protects a file, with the key and, to encrypt, the nonce.
#[derive(Clone, Copy)]
pub(crate) enum Protect<'a> {
    Plain,
    Authenticated(&'a Key),
    Encrypted(&'a Key, [u8; NONCE_LEN]),
}

/// What [`seal`] needs besides the mementos.
pub(crate) struct SealParams<'a> {
    /// [`FORMAT_VERSION`]; 1 only where a test writes the old layout.
    pub format_version: u16,
    pub codec: Codec,
    pub kind: FileKind,
    pub slot: SlotId,
    pub schema_version: u32,
    pub generation: u64,
    pub saved_at: SystemTime,
    pub metadata: &'a Metadata,
    pub protect: Protect<'a>,
    /// How the body is compressed before it is sealed (format version 2 on). A body that it
    /// would not make smaller is written uncompressed.
    pub compression: Compression,
    /// For a delta: its sequence number and the ids it deletes.
    pub delta: Option<(u64, Vec<&'a str>)>,
    /// Threads that may seal an encrypted body's segments at once (this one among them).
    pub threads: usize,
}

/// Writes a whole file: header, metadata, body (table of contents and document, encrypted or
/// authenticated as `params.protect` says) and CRC. `entries` are `(id, memento version,
/// encoded memento)` in ascending id order. The file is built in one buffer allocated at its
/// final size.
#[cfg(test)]
pub(crate) fn seal(params: &SealParams<'_>, entries: &[(&str, u32, &[u8])]) -> Result<Vec<u8>> {
    let sources: Vec<(&str, u32, Source<'_>)> = entries
        .iter()
        .map(|&(id, version, bytes)| (id, version, Source::Bytes(bytes)))
        .collect();
    seal_sources(params, &sources, 0, &mut |_, _| {})
}

/// Where a memento's bytes come from when a file is sealed.
pub(crate) enum Source<'a> {
    /// Encoded already.
    Bytes(&'a [u8]),
    /// Encoded now, straight into the file's buffer.
    Encode(&'a (dyn Encodable + 'a)),
    /// Entry `.1` of mementos other threads may be encoding while the file is written: what
    /// [`Ahead::take`] gives when the file reaches it.
    Ahead(&'a (dyn Ahead + 'a), usize),
}

/// [`seal`] of mementos that may be encoded as the file is written: each
/// [`Source::Encode`] is encoded into the file's buffer in its place, with no buffer of its
/// own. `size_hint` is the expected length of the file (the slot's previous one, say), so
/// that the buffer is allocated once when the mementos' sizes are not known up front (0: no
/// hint). `on_memento(id, bytes)` sees each memento's encoded bytes once they are in the
/// buffer, before compression and sealing.
pub(crate) fn seal_sources(
    params: &SealParams<'_>,
    entries: &[(&str, u32, Source<'_>)],
    size_hint: usize,
    on_memento: &mut dyn FnMut(&str, &[u8]),
) -> Result<Vec<u8>> {
    let version = params.format_version;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(Error::Config {
            reason: format!("this library writes format versions 1 to {FORMAT_VERSION}"),
        });
    }
    // From format version 2 an encrypted body is sealed in segments.
    let segment_log = (version >= FORMAT_VERSION_2
        && matches!(params.protect, Protect::Encrypted(..)))
    .then_some(segments::SEGMENT_LOG);
    let (encrypted, tag_len, flags) = match params.protect {
        Protect::Plain => (false, 0, 0),
        Protect::Encrypted(..) if segment_log.is_some() => {
            (true, TAG_LEN, FLAG_ENCRYPTED | FLAG_SEGMENTED)
        }
        Protect::Encrypted(..) => (true, TAG_LEN, FLAG_ENCRYPTED),
        Protect::Authenticated(_) if version < FORMAT_VERSION_2 => {
            return Err(Error::Config {
                reason: "format version 1 has no integrity-only files".into(),
            });
        }
        Protect::Authenticated(_) => (false, MAC_LEN, FLAG_AUTHENTICATED),
    };
    if params.compression != Compression::None && version < FORMAT_VERSION_2 {
        return Err(Error::Config {
            reason: "format version 1 has no compressed files".into(),
        });
    }
    params.compression.check()?;
    let metadata_len = encoded_metadata_len(params.metadata);
    if metadata_len > MAX_METADATA_LEN {
        return Err(Error::Config {
            reason: format!(
                "metadata is {metadata_len} bytes, over the {MAX_METADATA_LEN}-byte cap"
            ),
        });
    }
    let codec = params.codec;
    let toc_len = 4 + entries
        .iter()
        .map(|(id, ..)| toc_entry_fixed(version) + id.len())
        .sum::<usize>();
    let preamble_len = params.delta.as_ref().map_or(0, |(_, deleted)| {
        12 + deleted.iter().map(|id| 2 + id.len()).sum::<usize>()
    });
    // The document's braces (JSON `{}` even when empty) or map header; each entry's own
    // separator is in its key overhead.
    let doc_bound = 2 + entries
        .iter()
        .map(|(id, _, m)| {
            codec.key_overhead(id)
                + match m {
                    Source::Bytes(b) => b.len(),
                    Source::Encode(_) | Source::Ahead(..) => 0,
                }
        })
        .sum::<usize>();
    let body_bound = preamble_len + toc_len + doc_bound;
    let tags_bound = match segment_log {
        Some(log) => tag_len * segments::count(body_bound.max(size_hint), log),
        None => tag_len,
    };
    let capacity = HEADER_LEN
        + metadata_len
        + if encrypted { NONCE_LEN } else { 0 }
        + tags_bound
        + body_bound
        + CRC_LEN;
    let mut buf = Vec::with_capacity(capacity.max(size_hint));

    // Fixed header; the payload length is patched in once the body is written.
    buf.extend_from_slice(&MAGIC);
    buf.extend_from_slice(&version.to_le_bytes());
    buf.extend_from_slice(&flags.to_le_bytes());
    buf.push(codec.id());
    buf.push(params.kind.id());
    let (slot_kind, slot_number) = params.slot.to_raw();
    buf.push(slot_kind);
    buf.push(segment_log.unwrap_or(0));
    buf.extend_from_slice(&slot_number.to_le_bytes());
    buf.extend_from_slice(&params.schema_version.to_le_bytes());
    buf.extend_from_slice(&params.generation.to_le_bytes());
    buf.extend_from_slice(&system_time_to_millis(params.saved_at).to_le_bytes());
    buf.extend_from_slice(&len_u32(metadata_len)?.to_le_bytes());
    buf.extend_from_slice(&0u64.to_le_bytes());
    debug_assert_eq!(buf.len(), HEADER_LEN);
    write_metadata(&mut buf, params.metadata)?;
    let associated_end = buf.len();
    if let Protect::Encrypted(_, nonce) = &params.protect {
        buf.extend_from_slice(nonce);
    }

    // Body: a delta's preamble, then the table of contents with offsets patched after the
    // document is written.
    let body_start = buf.len();
    if let Some((sequence, deleted)) = &params.delta {
        buf.extend_from_slice(&sequence.to_le_bytes());
        buf.extend_from_slice(&len_u32(deleted.len())?.to_le_bytes());
        for id in deleted {
            buf.extend_from_slice(&len_u16(id.len())?.to_le_bytes());
            buf.extend_from_slice(id.as_bytes());
        }
    }
    buf.extend_from_slice(&len_u32(entries.len())?.to_le_bytes());
    let mut toc_slots = Vec::with_capacity(entries.len());
    for (id, memento_version, _) in entries {
        buf.extend_from_slice(&len_u16(id.len())?.to_le_bytes());
        buf.extend_from_slice(id.as_bytes());
        if version >= FORMAT_VERSION_2 {
            buf.extend_from_slice(&memento_version.to_le_bytes());
        }
        toc_slots.push(buf.len());
        buf.extend_from_slice(&[0u8; 16]);
    }
    let doc_start = buf.len();
    codec.open_document(&mut buf, entries.len());
    for (i, ((id, _, memento), slot)) in entries.iter().zip(&toc_slots).enumerate() {
        codec.write_document_key(&mut buf, i, id);
        let start = buf.len();
        let ready = match memento {
            Source::Bytes(bytes) => Ready::Bytes(bytes),
            Source::Encode(value) => Ready::Here(*value),
            Source::Ahead(ahead, index) => ahead.take(*index),
        };
        match ready {
            Ready::Bytes(bytes) => buf.extend_from_slice(bytes),
            Ready::Here(value) => value
                .encode_into(codec, &mut buf)
                .map_err(|e| e.encoding(id))?,
        }
        on_memento(id, &buf[start..]);
        let offset = (start - doc_start) as u64;
        let len = (buf.len() - start) as u64;
        buf[*slot..*slot + 8].copy_from_slice(&offset.to_le_bytes());
        buf[*slot + 8..*slot + 16].copy_from_slice(&len.to_le_bytes());
    }
    codec.close_document(&mut buf);

    if params.compression != Compression::None {
        // Compress the body into a new buffer behind a copy of the header, metadata and nonce.
        let body = &buf[body_start..];
        let mut out = Vec::with_capacity(body_start + 8 + body.len() / 2 + tag_len + CRC_LEN);
        out.extend_from_slice(&buf[..body_start]);
        if params.compression.compress_into(body, &mut out)? {
            let flags = flags | (params.compression.id() << COMPRESSION_SHIFT);
            out[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
            out.reserve_exact(tag_len + CRC_LEN);
            buf = out;
        }
    }

    let body_len = buf.len() - body_start;
    let tags_len = match segment_log {
        Some(log) => tag_len * segments::count(body_len, log),
        None => tag_len,
    };
    let payload_len = (body_len + tags_len) as u64;
    buf[OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 8].copy_from_slice(&payload_len.to_le_bytes());

    match params.protect {
        Protect::Plain => {}
        Protect::Encrypted(key, nonce) => {
            let (head, body) = buf.split_at_mut(body_start);
            let associated = &head[..associated_end];
            match segment_log {
                Some(log) => {
                    let tags = segments::seal(key, &nonce, associated, body, log, params.threads)?;
                    buf.extend_from_slice(&tags);
                }
                None => {
                    let tag = seal_body(key, &nonce, associated, body)?;
                    buf.extend_from_slice(&tag);
                }
            }
        }
        Protect::Authenticated(key) => {
            // The tag covers every byte before it: header, metadata and the readable body.
            let tag = key.authenticate(&buf)?;
            buf.extend_from_slice(&tag);
        }
    }

    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    debug_assert!(
        params.compression != Compression::None
            || entries.iter().any(|e| !matches!(e.2, Source::Bytes(_)))
            || buf.len() <= capacity
    );
    Ok(buf)
}

/// Checks everything about a file, decrypts its body in place and decompresses it. `trust`
/// decides what protection the file must have (see [`Trust`]) and holds the key: a file whose
/// flags record anything else is refused before its body is looked at. A compressed body that
/// records more than `max_body` bytes decompressed is [`Error::DecompressedTooLarge`].
/// `threads` may open an encrypted body's segments at once (this one among them).
pub(crate) fn open(
    mut buf: Vec<u8>,
    expected_kind: FileKind,
    trust: Trust<'_>,
    max_body: u64,
    threads: usize,
) -> Result<Opened> {
    check_crc(&buf)?;
    let crc_at = buf.len() - CRC_LEN;
    let header = parse_header(&buf[..crc_at], Some(buf.len() as u64))?;
    if header.kind != expected_kind {
        return Err(Error::WrongFileKind {
            expected: expected_kind.id(),
            found: header.kind.id(),
        });
    }
    trust.admit(header.protection())?;
    let key = trust.key();
    let sections = header.sections();
    let associated_end = sections.metadata.end as usize;
    let payload = sections.payload.start as usize..sections.payload.end as usize;

    let body = if let Some(log) = header.segment_log {
        let key = key.ok_or_else(|| missing_key(KeyPurpose::Decrypt))?;
        let body = payload.start..payload.start + segments::body_len(payload.len(), log)?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&buf[sections.nonce.start as usize..payload.start]);
        let (head, rest) = buf.split_at_mut(body.start);
        let (ciphertext, tags) = rest[..payload.len()].split_at_mut(body.len());
        segments::open(
            key,
            &nonce,
            &head[..associated_end],
            ciphertext,
            tags,
            log,
            threads,
        )?;
        body
    } else if header.encrypted {
        let key = key.ok_or_else(|| missing_key(KeyPurpose::Decrypt))?;
        if payload.len() < TAG_LEN {
            return Err(Error::malformed("encrypted payload shorter than its tag"));
        }
        let body = payload.start..payload.end - TAG_LEN;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&buf[sections.nonce.start as usize..payload.start]);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&buf[body.end..payload.end]);
        let (head, rest) = buf.split_at_mut(body.start);
        open_body(
            key,
            &nonce,
            &head[..associated_end],
            &mut rest[..body.len()],
            &tag,
        )?;
        body
    } else if header.authenticated {
        if payload.len() < MAC_LEN {
            return Err(Error::malformed(
                "authenticated payload shorter than its tag",
            ));
        }
        let body = payload.start..payload.end - MAC_LEN;
        let mut tag = [0u8; MAC_LEN];
        tag.copy_from_slice(&buf[body.end..payload.end]);
        match key {
            Some(key) => key.verify(&buf[..body.end], &tag)?,
            // Only a trust that checks no tag admits an integrity-only file without a key.
            None if trust.checks_tag() => return Err(missing_key(KeyPurpose::CheckTag)),
            None => {}
        }
        body
    } else {
        payload
    };
    // Decompressed only once the tag, if any, has checked out.
    let (buf, body) = if header.compression == Compression::None {
        (buf, body)
    } else {
        let plain = header.compression.decompress(&buf[body], max_body)?;
        let len = plain.len();
        (plain, 0..len)
    };
    let (sequence, deleted, toc_start) = if header.kind == FileKind::Delta {
        parse_delta_preamble(&buf[body.clone()])?
    } else {
        (0, Vec::new(), 0)
    };
    let toc = parse_toc(
        &buf,
        body.start + toc_start..body.end,
        header.format_version,
        header.codec,
    )?;
    Ok(Opened {
        header,
        buf,
        toc,
        sequence,
        deleted,
    })
}

/// Seals a body in place ([`Error::FeatureDisabled`] without the `encryption` feature).
pub(crate) fn seal_body(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    ad: &[u8],
    body: &mut [u8],
) -> Result<[u8; TAG_LEN]> {
    key.seal(nonce, ad, body)
}

/// Opens a body in place ([`Error::FeatureDisabled`] without the `encryption` feature).
pub(crate) fn open_body(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    ad: &[u8],
    body: &mut [u8],
    tag: &[u8; TAG_LEN],
) -> Result<()> {
    key.open(nonce, ad, body, tag)
}

/// A fresh nonce from the operating system's random number generator.
#[cfg(feature = "encryption")]
pub(crate) fn random_nonce() -> Result<[u8; NONCE_LEN]> {
    crate::crypto::random_nonce()
}

/// Without encryption nothing is sealed, and no nonce is ever used.
#[cfg(not(feature = "encryption"))]
pub(crate) fn random_nonce() -> Result<[u8; NONCE_LEN]> {
    Ok([0; NONCE_LEN])
}

/// Checks a whole file's magic and its CRC32 trailer, and nothing else.
///
/// # Errors
/// [`Error::NotASave`], [`Error::Malformed`] (too short) or [`Error::ChecksumMismatch`].
pub fn check_crc(bytes: &[u8]) -> Result<()> {
    check_magic(bytes)?;
    if bytes.len() < HEADER_LEN + CRC_LEN {
        return Err(Error::malformed(format!(
            "truncated: {} bytes is shorter than the smallest save",
            bytes.len()
        )));
    }
    let crc_at = bytes.len() - CRC_LEN;
    let expected = read_u32(bytes, crc_at);
    let found = crc32fast::hash(&bytes[..crc_at]);
    if expected != found {
        return Err(Error::ChecksumMismatch { expected, found });
    }
    Ok(())
}

/// How many bytes [`check_crc_in_pieces`] reads at a time.
const CRC_PIECE: usize = 1 << 20;

/// [`check_crc`] over a file of `len` bytes that `read_at(offset, n)` reads piece by piece (at
/// most a MiB at a time), so a large file is checked without being held in memory whole.
///
/// # Errors
/// As [`check_crc`]; [`Error::Malformed`] when a piece comes back short (the file changed
/// while it was checked); whatever `read_at` returns.
pub(crate) fn check_crc_in_pieces(
    len: u64,
    mut read_at: impl FnMut(u64, usize) -> Result<Vec<u8>>,
) -> Result<()> {
    let total = usize::try_from(len)
        .map_err(|_| Error::malformed(format!("{len} bytes do not fit in memory")))?;
    let crc_at = total.saturating_sub(CRC_LEN);
    let mut hasher = crc32fast::Hasher::new();
    let mut trailer = Vec::with_capacity(CRC_LEN);
    let mut offset = 0;
    while offset < total {
        let want = (total - offset).min(CRC_PIECE);
        let piece = read_at(offset as u64, want)?;
        if piece.len() != want {
            return Err(Error::malformed("the file changed while it was checked"));
        }
        if offset == 0 {
            check_magic(&piece)?;
        }
        let hashed = crc_at.saturating_sub(offset).min(piece.len());
        hasher.update(&piece[..hashed]);
        trailer.extend_from_slice(&piece[hashed..]);
        offset += want;
    }
    if total == 0 {
        check_magic(&[])?;
    }
    if total < HEADER_LEN + CRC_LEN {
        return Err(Error::malformed(format!(
            "truncated: {total} bytes is shorter than the smallest save"
        )));
    }
    let expected = read_u32(&trailer, 0);
    let found = hasher.finalize();
    if expected != found {
        return Err(Error::ChecksumMismatch { expected, found });
    }
    Ok(())
}

/// The length of the file, or journal record, that `bytes` starts with, from its fixed header;
/// `None` when `bytes` ends first (a torn record at the end of a journal).
///
/// # Errors
/// [`Error::NotASave`] when `bytes` does not start with the magic; [`Error::Malformed`] when
/// the lengths cannot be right.
pub fn record_len(bytes: &[u8]) -> Result<Option<usize>> {
    let n = bytes.len().min(MAGIC.len());
    if bytes[..n] != MAGIC[..n] {
        return Err(Error::NotASave);
    }
    if bytes.len() < HEADER_LEN {
        return Ok(None);
    }
    let metadata_len = read_u32(bytes, OFF_METADATA_LEN) as usize;
    if metadata_len > MAX_METADATA_LEN {
        return Err(Error::malformed("metadata length over the cap"));
    }
    let nonce_len = if read_u16(bytes, OFF_FLAGS) & FLAG_ENCRYPTED != 0 {
        NONCE_LEN
    } else {
        0
    };
    let total = usize::try_from(read_u64(bytes, OFF_PAYLOAD_LEN))
        .ok()
        .and_then(|p| p.checked_add(HEADER_LEN + metadata_len + nonce_len + CRC_LEN));
    Ok(total.filter(|&t| t <= bytes.len()))
}

/// How many leading bytes of a file [`parse_header`] needs, judging by its fixed header.
///
/// # Errors
/// [`Error::NotASave`] or [`Error::Malformed`] when `prefix` cannot be the start of a save.
pub fn header_len(prefix: &[u8]) -> Result<usize> {
    check_magic(prefix)?;
    if prefix.len() < HEADER_LEN {
        return Err(Error::malformed("truncated inside the fixed header"));
    }
    let metadata_len = read_u32(prefix, OFF_METADATA_LEN) as usize;
    if metadata_len > MAX_METADATA_LEN {
        return Err(Error::malformed(format!(
            "metadata length {metadata_len} is over the {MAX_METADATA_LEN}-byte cap"
        )));
    }
    Ok(HEADER_LEN + metadata_len)
}

/// Parses the fixed header and metadata from the start of a file. When `file_len` is given, the
/// lengths in the header must add up to it exactly. Nothing is decrypted and the CRC is not
/// checked: this is what a load menu reads.
///
/// # Errors
/// [`Error::NotASave`], [`Error::Malformed`], [`Error::UnsupportedFormat`],
/// [`Error::UnknownFlags`], [`Error::UnknownCodec`] for a header that cannot be trusted.
pub fn parse_header(bytes: &[u8], file_len: Option<u64>) -> Result<Header> {
    let needed = header_len(bytes)?;
    let format_version = read_u16(bytes, OFF_VERSION);
    let known = if format_version >= FORMAT_VERSION_2 {
        FLAG_ENCRYPTED | FLAG_AUTHENTICATED | FLAGS_COMPRESSION | FLAG_SEGMENTED
    } else {
        FLAG_ENCRYPTED
    };
    let flags = check_version_and_flags(
        format_version,
        FORMAT_VERSION,
        read_u16(bytes, OFF_FLAGS),
        known,
    )?;
    if flags == FLAG_ENCRYPTED | FLAG_AUTHENTICATED {
        return Err(Error::malformed(
            "a file is encrypted or authenticated, never both",
        ));
    }
    let compression = Compression::from_id((flags & FLAGS_COMPRESSION) >> COMPRESSION_SHIFT)
        .ok_or(Error::UnknownFlags { flags })?;
    let codec = Codec::from_id(bytes[OFF_CODEC])?;
    let kind = FileKind::from_id(bytes[OFF_KIND])
        .ok_or_else(|| Error::malformed(format!("unknown file kind {}", bytes[OFF_KIND])))?;
    let segment_log = if flags & FLAG_SEGMENTED != 0 {
        if flags & FLAG_ENCRYPTED == 0 {
            return Err(Error::malformed(
                "only an encrypted body is sealed in segments",
            ));
        }
        let log = bytes[OFF_RESERVED];
        if !segments::SEGMENT_LOGS.contains(&log) {
            return Err(Error::malformed(format!(
                "a segment size of 2^{log} bytes (2^{} to 2^{} are allowed)",
                segments::SEGMENT_LOGS.start,
                segments::SEGMENT_LOGS.end - 1
            )));
        }
        Some(log)
    } else if bytes[OFF_RESERVED] != 0 {
        return Err(Error::malformed("reserved header byte is not zero"));
    } else {
        None
    };
    let slot = SlotId::from_raw(bytes[OFF_SLOT_KIND], read_u32(bytes, OFF_SLOT))
        .ok_or_else(|| Error::malformed("unknown slot kind"))?;
    if bytes.len() < needed {
        return Err(Error::malformed("truncated inside the metadata"));
    }
    let mut metadata = parse_metadata(&bytes[HEADER_LEN..needed])?;
    let saved_at = millis_to_system_time(read_u64(bytes, OFF_SAVED_AT) as i64);
    metadata.saved_at = Some(saved_at);
    let header = Header {
        format_version,
        encrypted: flags & FLAG_ENCRYPTED != 0,
        authenticated: flags & FLAG_AUTHENTICATED != 0,
        codec,
        compression,
        kind,
        slot,
        schema_version: read_u32(bytes, OFF_SCHEMA),
        generation: read_u64(bytes, OFF_GENERATION),
        saved_at,
        metadata,
        payload_len: read_u64(bytes, OFF_PAYLOAD_LEN),
        segment_log,
    };
    if let Some(file_len) = file_len {
        let expected = header.sections().crc.end;
        if expected != file_len {
            return Err(Error::malformed(format!(
                "the header describes a {expected}-byte file but it is {file_len} bytes"
            )));
        }
    }
    Ok(header)
}

/// Checks the format version and flags fields of a file of the family: a version newer than
/// `supported` is [`Error::UnsupportedFormat`], version 0 is malformed, a flag bit outside
/// `known` (the bits that version defines) is [`Error::UnknownFlags`]. Returns the flags.
pub(crate) fn check_version_and_flags(
    version: u16,
    supported: u16,
    flags: u16,
    known: u16,
) -> Result<u16> {
    if version > supported {
        return Err(Error::UnsupportedFormat {
            found: version,
            supported,
        });
    }
    if version == 0 {
        return Err(Error::malformed("format version 0"));
    }
    if flags & !known != 0 {
        return Err(Error::UnknownFlags { flags });
    }
    Ok(flags)
}

/// The kind byte of a file of the family, once its magic is checked; see [`super::sniff`].
pub(crate) fn kind_byte(bytes: &[u8]) -> Option<u8> {
    if bytes.len() <= OFF_KIND || bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    Some(bytes[OFF_KIND])
}

/// The kind a kind byte names, if this version knows it.
pub(crate) fn kind_of(byte: u8) -> Option<FileKind> {
    FileKind::from_id(byte)
}

fn check_magic(bytes: &[u8]) -> Result<()> {
    let n = bytes.len().min(MAGIC.len());
    if bytes[..n] != MAGIC[..n] {
        return Err(Error::NotASave);
    }
    if n < MAGIC.len() {
        return Err(Error::malformed(format!(
            "truncated: only {} bytes",
            bytes.len()
        )));
    }
    Ok(())
}

/// A delta's sequence number and deleted ids, and where its table of contents starts.
fn parse_delta_preamble(body: &[u8]) -> Result<(u64, Vec<String>, usize)> {
    let mut r = Reader::new(body, "delta preamble");
    let sequence = r.u64()?;
    let count = r.u32()? as usize;
    if count > r.remaining() / 3 {
        return Err(Error::malformed(format!(
            "the delta claims {count} deletions, more than its body can hold"
        )));
    }
    let mut deleted = Vec::with_capacity(count);
    for _ in 0..count {
        let len = r.u16()? as usize;
        let id = r.str(len)?;
        if id.is_empty() {
            return Err(Error::malformed("empty deleted id"));
        }
        deleted.push(id.to_owned());
    }
    Ok((sequence, deleted, r.position()))
}

/// The table of contents at the start of `body`, each entry's range made absolute in `buf`,
/// once the document after it is checked to be exactly the codec's map of those mementos.
fn parse_toc(
    buf: &[u8],
    body: Range<usize>,
    format_version: u16,
    codec: Codec,
) -> Result<Vec<TocEntry>> {
    let mut r = Reader::new(&buf[body.clone()], "table of contents");
    let count = r.u32()? as usize;
    // The smallest entry: its fixed fields and a one-byte id.
    if count > r.remaining() / (toc_entry_fixed(format_version) + 1) {
        return Err(Error::malformed(format!(
            "table of contents claims {count} entries, more than the body can hold"
        )));
    }
    let mut raw = Vec::with_capacity(count);
    for _ in 0..count {
        let id_len = r.u16()? as usize;
        let id = r.str(id_len)?;
        let version = if format_version >= FORMAT_VERSION_2 {
            r.u32()?
        } else {
            DEFAULT_MEMENTO_VERSION
        };
        let offset = r.u64()?;
        let len = r.u64()?;
        raw.push((id, version, offset, len));
    }
    let doc_start = body.start + r.position();
    let doc_len = (body.end - doc_start) as u64;
    let mut toc = Vec::with_capacity(count);
    let mut previous: Option<&str> = None;
    let mut previous_end = 0u64;
    for (id, version, offset, len) in raw {
        if id.is_empty() {
            return Err(Error::malformed("empty memento id"));
        }
        if previous.is_some_and(|p| p >= id) {
            return Err(Error::malformed(
                "table of contents ids are not in ascending order",
            ));
        }
        let end = offset
            .checked_add(len)
            .filter(|&end| offset >= previous_end && end <= doc_len)
            .ok_or_else(|| Error::malformed(format!("memento {id:?} lies outside the document")))?;
        toc.push(TocEntry {
            id: id.to_owned(),
            version,
            range: doc_start + offset as usize..doc_start + end as usize,
        });
        previous = Some(id);
        previous_end = end;
    }
    let framed = codec.frames_document(
        &buf[doc_start..body.end],
        toc.iter().map(|e| {
            let range = e.range.start - doc_start..e.range.end - doc_start;
            (e.id.as_str(), range)
        }),
    );
    if !framed {
        return Err(Error::malformed(format!(
            "the {} document is not exactly the map of its mementos (bytes before, between or \
             after them)",
            codec.name()
        )));
    }
    Ok(toc)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn metadata() -> Metadata {
        let mut m = Metadata {
            label: "Level 3".into(),
            playtime: Duration::from_millis(3_723_004),
            app_version: "1.4.2".into(),
            thumbnail: Some(vec![1, 2, 3]),
            ..Metadata::default()
        };
        m.user.insert("chapter".into(), "2".into());
        m
    }

    fn params<'a>(m: &'a Metadata, protect: Protect<'a>) -> SealParams<'a> {
        SealParams {
            format_version: FORMAT_VERSION,
            codec: Codec::Json,
            kind: FileKind::Save,
            slot: SlotId::Numbered(3),
            schema_version: 7,
            generation: 2,
            saved_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            metadata: m,
            protect,
            compression: Compression::None,
            delta: None,
            threads: 2,
        }
    }

    /// [`params`] for a file of format version 1.
    fn params_v1<'a>(m: &'a Metadata, protect: Protect<'a>) -> SealParams<'a> {
        SealParams {
            format_version: 1,
            ..params(m, protect)
        }
    }

    const ENTRIES: [(&str, u32, &[u8]); 2] = [
        ("player", DEFAULT_MEMENTO_VERSION, b"{\"hp\":9}"),
        ("world", DEFAULT_MEMENTO_VERSION, b"[1,2]"),
    ];
    /// The same mementos at versions of their own.
    const ENTRIES_V2: [(&str, u32, &[u8]); 2] =
        [("player", 1, b"{\"hp\":9}"), ("world", 3, b"[1,2]")];

    fn fix_crc(bytes: &mut [u8]) {
        let at = bytes.len() - CRC_LEN;
        let crc = crc32fast::hash(&bytes[..at]);
        bytes[at..].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn unencrypted_json_files_are_readable_text_after_the_header() {
        let m = metadata();
        let bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains(r#"{"player":{"hp":9},"world":[1,2]}"#),
            "{text}"
        );
        let opened = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap();
        let found: Vec<(&str, u32, &[u8])> = opened
            .toc
            .iter()
            .map(|e| (e.id.as_str(), e.version, &opened.buf[e.range.clone()]))
            .collect();
        assert_eq!(found, ENTRIES);
        assert_eq!(opened.header.metadata.label, "Level 3");
        assert_eq!(opened.header.schema_version, 7);
        assert_eq!(opened.header.generation, 2);
        assert_eq!(opened.header.slot, SlotId::Numbered(3));
    }

    /// The exact bytes of one file, with the clock and nonce fixed: any change to the format
    /// shows up here, and must come with a format version and a changelog entry.
    #[cfg(feature = "encryption")]
    #[test]
    fn golden_file_bytes() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let bytes = seal(
            &params_v1(&m, Protect::Encrypted(&key, [9; NONCE_LEN])),
            &ENTRIES,
        )
        .unwrap();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN);
        let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
        assert_eq!(opened.toc.len(), 2);
    }

    #[cfg(feature = "encryption")]
    const GOLDEN: &str = "895341560d0a1a0a0100010001010100030000000700000002000000000000007b68e5cf8b0100002f0000006400000000000000fcce38000000000007004c6576656c20330500312e342e32010007006368617074657201000000320300000001020309090909090909090909090925858494b8f0b10dc11bae4aeceaa3dfd4b063f33ceef7c06fae46a6d0747615a18983d8e2522a107fb3a5134434e3d47c549eef30e4c22f1c0a73b56c6d58e61c5db237f40aced4b792a5109dd3dfc431db966b92df5364c4c1fe070b78e2db5eee7855f682f4fd";

    /// The exact bytes of the same file at format version 2, encrypted, its mementos at
    /// versions 1 and 3: one segment (flag bit 4, segment size 2^18 in byte 15), its tag after
    /// the ciphertext.
    #[cfg(feature = "encryption")]
    #[test]
    fn golden_file_bytes_v2() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let bytes = seal(
            &params(&m, Protect::Encrypted(&key, [9; NONCE_LEN])),
            &ENTRIES_V2,
        )
        .unwrap();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN_V2_SEGMENTED);
        assert_eq!(read_u16(&bytes, OFF_FLAGS), FLAG_ENCRYPTED | FLAG_SEGMENTED);
        assert_eq!(bytes[OFF_RESERVED], 18);
        for version in [GOLDEN_V2_SEGMENTED, GOLDEN_V2] {
            let bytes: Vec<u8> = (0..version.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&version[i..i + 2], 16).unwrap())
                .collect();
            let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
            let versions: Vec<(&str, u32)> = opened
                .toc
                .iter()
                .map(|e| (e.id.as_str(), e.version))
                .collect();
            assert_eq!(versions, [("player", 1), ("world", 3)]);
        }
    }

    /// What format version 2 wrote before segmented encryption: the body as one AES-GCM
    /// message, byte 15 zero. Such files load forever.
    #[cfg(feature = "encryption")]
    const GOLDEN_V2: &str = "895341560d0a1a0a0200010001010100030000000700000002000000000000007b68e5cf8b0100002f0000006c00000000000000fcce38000000000007004c6576656c20330500312e342e32010007006368617074657201000000320300000001020309090909090909090909090925858494b8f0b10dc11bae4ae7eaa3dfdeb063f334eef7c067ae46a6d574017ad6e590ac903e4e137fb3a50d4434e3d47c549e911294ae4e656f01ec746616ef151afa2cb35dcecba8c2f34dc2c5a682729ba772893d9f8c518d0bfb3b31360aa32b6e44daba31004f3ee852be5a33bd";

    #[cfg(feature = "encryption")]
    const GOLDEN_V2_SEGMENTED: &str = "895341560d0a1a0a0200110001010112030000000700000002000000000000007b68e5cf8b0100002f0000006c00000000000000fcce38000000000007004c6576656c20330500312e342e3201000700636861707465720100000032030000000102030909090909090909090909093360ed07036863e8c92c4d9f4099acc270733928983b95676c948dd63e7f88dc7aa6e74de71bde7a0dfeef2649df58f393771737af2839eb8468fc6235fcd85a8f159e6830d2aeb9585a1a60dab9f3bbf4ceac639636890237518c0707093ecd9ae08e69d108ee73fa3ee89af29c4422";

    /// The exact bytes of an integrity-only file: readable, its tag at the end of the payload.
    #[cfg(feature = "integrity")]
    #[test]
    fn golden_file_bytes_v2_authenticated() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let bytes = seal(&params(&m, Protect::Authenticated(&key)), &ENTRIES_V2).unwrap();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN_V2_AUTHENTICATED);
        assert!(String::from_utf8_lossy(&bytes).contains(r#"{"player":{"hp":9},"world":[1,2]}"#));
        let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
        assert!(opened.header.authenticated && !opened.header.encrypted);
        assert_eq!(opened.header.protection(), Protection::Authenticated);
        assert_eq!(opened.toc[1].version, 3);
    }

    #[cfg(feature = "integrity")]
    const GOLDEN_V2_AUTHENTICATED: &str = "895341560d0a1a0a0200020001010100030000000700000002000000000000007b68e5cf8b0100002f0000007c00000000000000fcce38000000000007004c6576656c20330500312e342e320100070063686170746572010000003203000000010203020000000600706c61796572010000000a0000000000000008000000000000000500776f726c64030000001b0000000000000005000000000000007b22706c61796572223a7b226870223a397d2c22776f726c64223a5b312c325d7dfb0a6a970ea1f903fd871882a7586e91240e9952b0b1c1ae7577cfa995ed56ea166b0010";

    /// Every byte of an integrity-only file's header, metadata, body and tag is covered: an
    /// edit with a recomputed CRC is refused, as tampered where the structure still parses.
    #[cfg(feature = "integrity")]
    #[test]
    fn every_edit_of_an_authenticated_file_with_a_fixed_crc_is_refused() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let clean = seal(&params(&m, Protect::Authenticated(&key)), &ENTRIES_V2).unwrap();
        let body_start = HEADER_LEN + encoded_metadata_len(&m);
        for at in 0..clean.len() - CRC_LEN {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x01;
            fix_crc(&mut bytes);
            match open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2) {
                Err(Error::Tampered) => {}
                // The flag bit itself: the file now says it is plain, and a manager with a key
                // refuses plain files (NotEncrypted); the format alone cannot know.
                Ok(opened) if at == OFF_FLAGS => assert!(!opened.header.authenticated),
                Err(e) if at < body_start => {
                    assert!(!matches!(e, Error::ChecksumMismatch { .. }), "{e}")
                }
                other => panic!("a flip at byte {at}: {other:?}"),
            }
        }
        let other = Key::from_bytes([8; 32]);
        assert!(matches!(
            open(
                clean.clone(),
                FileKind::Save,
                Trust::authenticated(&other),
                u64::MAX,
                2
            ),
            Err(Error::Tampered)
        ));
        assert!(matches!(
            open(clean.clone(), FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::KeyRequired {
                purpose: KeyPurpose::CheckTag
            })
        ));
        let unverified = open(clean, FileKind::Save, Trust::unverified(), u64::MAX, 1).unwrap();
        assert_eq!(unverified.toc.len(), 2);
    }

    #[test]
    fn format_1_has_no_integrity_only_files_and_no_memento_versions() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        assert!(matches!(
            seal(&params_v1(&m, Protect::Authenticated(&key)), &ENTRIES),
            Err(Error::Config { .. })
        ));
        let mut bytes = seal(&params_v1(&m, Protect::Plain), &ENTRIES_V2).unwrap();
        let opened = open(bytes.clone(), FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap();
        assert!(
            opened
                .toc
                .iter()
                .all(|e| e.version == DEFAULT_MEMENTO_VERSION)
        );
        // The authenticated bit means nothing in format 1.
        bytes[OFF_FLAGS] |= FLAG_AUTHENTICATED as u8;
        fix_crc(&mut bytes);
        assert!(matches!(
            open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::UnknownFlags { flags: 2 })
        ));
        // Both bits at once is no file of format 2.
        let mut both = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        both[OFF_FLAGS] |= (FLAG_ENCRYPTED | FLAG_AUTHENTICATED) as u8;
        fix_crc(&mut both);
        assert!(matches!(
            open(both, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::Malformed { .. })
        ));
    }

    /// `check_crc_in_pieces` over `bytes`, as a storage would read them.
    fn check_in_pieces(bytes: &[u8]) -> Result<()> {
        check_crc_in_pieces(bytes.len() as u64, |offset, n| {
            let start = offset as usize;
            Ok(bytes[start..(start + n).min(bytes.len())].to_vec())
        })
    }

    #[test]
    fn a_check_in_pieces_agrees_with_the_whole_file_check() {
        let m = metadata();
        let small = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        // Over three pieces, so flips land in every piece and the trailer's bytes may straddle
        // two of them.
        let big_entry = vec![0x5a; 2 * CRC_PIECE + 1000];
        let big = seal(&params(&m, Protect::Plain), &[("world", 1, &big_entry[..])]).unwrap();
        for bytes in [&small, &big] {
            assert!(check_in_pieces(bytes).is_ok());
            let len = bytes.len();
            let flips = [
                0,
                9,
                HEADER_LEN,
                CRC_PIECE,
                2 * CRC_PIECE + 3,
                len - 3,
                len - 1,
            ];
            for at in flips.into_iter().filter(|&at| at < len) {
                let mut damaged = bytes.clone();
                damaged[at] ^= 0x10;
                let whole = check_crc(&damaged).unwrap_err().to_string();
                let pieces = check_in_pieces(&damaged).unwrap_err().to_string();
                assert_eq!(pieces, whole, "a flip at byte {at} of {len}");
            }
        }
        for cut in 0..small.len() {
            let whole = check_crc(&small[..cut]).map_err(|e| e.to_string());
            assert_eq!(
                check_in_pieces(&small[..cut]).map_err(|e| e.to_string()),
                whole
            );
        }
        // A file that shrinks while it is checked.
        let shrunk = check_crc_in_pieces(big.len() as u64, |offset, n| {
            let start = offset as usize;
            Ok(big[start..(start + n).min(big.len() - 10)].to_vec())
        });
        assert!(matches!(shrunk, Err(Error::Malformed { .. })), "{shrunk:?}");
    }

    /// One copy of the byte table: `docs/format.md`'s header table and the offsets here agree.
    #[test]
    fn the_byte_table_of_docs_format_md_matches_the_code() {
        let doc = include_str!("../../docs/format.md");
        let layout = &doc[doc.find("## Layout").unwrap()..];
        let rows: Vec<(usize, usize, &str)> = layout
            .lines()
            .skip_while(|l| !l.starts_with("| 0 |"))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                Some((cells[1].parse().ok()?, cells[2].parse().ok()?, cells[3]))
            })
            .collect();
        let code = [
            (0, MAGIC.len(), "magic"),
            (OFF_VERSION, 2, "format version"),
            (OFF_FLAGS, 2, "flags"),
            (OFF_CODEC, 1, "codec"),
            (OFF_KIND, 1, "file kind"),
            (OFF_SLOT_KIND, 1, "slot kind"),
            (OFF_RESERVED, 1, "segment size"),
            (OFF_SLOT, 4, "slot number"),
            (OFF_SCHEMA, 4, "schema version"),
            (OFF_GENERATION, 8, "generation"),
            (OFF_SAVED_AT, 8, "saved at"),
            (OFF_METADATA_LEN, 4, "metadata length *M*"),
            (OFF_PAYLOAD_LEN, 8, "payload length *P*"),
        ];
        assert_eq!(rows, code);
        assert_eq!(OFF_PAYLOAD_LEN + 8, HEADER_LEN);
        // Format version 2: the flags, the tag, the table of contents' memento version.
        let flags_row = layout
            .lines()
            .find(|l| l.starts_with("| 10 | 2 | flags |"))
            .unwrap();
        assert_eq!((FLAG_ENCRYPTED, FLAG_AUTHENTICATED), (1, 2));
        assert!(flags_row.contains("Bit 0: encrypted. Bit 1: authenticated"));
        assert_eq!(FLAG_SEGMENTED, 1 << 4);
        assert!(flags_row.contains("Bit 4: segmented"));
        assert!(layout.contains(&format!(
            "this library writes {}: 256 KiB",
            segments::SEGMENT_LOG
        )));
        assert!(layout.contains(&format!("followed by its {MAC_LEN}-byte HMAC-SHA256 tag")));
        assert!(layout.contains(&format!("bytes 0 .. end−{}", MAC_LEN + CRC_LEN)));
        assert!(layout.contains(
            "id (`u16` length, UTF-8, not empty, at most 1024 bytes), memento version (`u32`), offset (`u64`), length (`u64`)"
        ));
        assert_eq!(toc_entry_fixed(FORMAT_VERSION_2), 2 + 4 + 8 + 8);
        assert_eq!(toc_entry_fixed(1), 2 + 8 + 8);
        assert!(doc.contains(&format!("`u16`, {FORMAT_VERSION} (1 is read too)")));
        #[cfg(feature = "integrity")]
        {
            let label = std::str::from_utf8(crate::crypto::MAC_KEY_LABEL).unwrap();
            assert!(layout.contains(&format!(
                "\"{label}\")` (the label's\n{} ASCII bytes)",
                label.len()
            )));
        }
        assert!(layout.contains(&format!("| {HEADER_LEN} | *M* | metadata |")));
        assert!(layout.contains(&format!("| end−{CRC_LEN} | {CRC_LEN} | CRC32 |")));
    }

    #[test]
    fn sections_add_up_to_the_file() {
        let m = metadata();
        let bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
        let s = header.sections();
        assert_eq!(s.header, 0..HEADER_LEN as u64);
        assert_eq!(s.crc.end, bytes.len() as u64);
        assert_eq!(
            s.metadata.end - s.metadata.start,
            u64::from(read_u32(&bytes, OFF_METADATA_LEN))
        );
        assert!(s.nonce.is_empty());
    }

    #[test]
    fn a_table_of_contents_that_claims_too_much_is_refused_before_allocating() {
        let m = metadata();
        let mut bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        let body = parse_header(&bytes, None).unwrap().sections().payload.start as usize;
        bytes[body..body + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        fix_crc(&mut bytes);
        let err = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }

    #[test]
    fn toc_ranges_outside_the_document_are_refused() {
        let m = metadata();
        let clean = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        let body = parse_header(&clean, None).unwrap().sections().payload.start as usize;
        // First entry: 4 (count) + 2 + "player" (6) + offset (8) + length (8).
        let offset_at = body + 4 + 2 + 6;
        for (at, value) in [
            (offset_at, u64::MAX),     // offset past everything
            (offset_at + 8, u64::MAX), // length overflows
            (offset_at + 8, 10_000),   // length past the document
            (offset_at, 0),            // overlaps the document's opening
        ] {
            let mut bytes = clean.clone();
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            fix_crc(&mut bytes);
            let result = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2);
            // Offset 0 lies inside the document, but over its opening: the document is then
            // not the map of its mementos.
            assert!(matches!(result, Err(Error::Malformed { .. })), "{result:?}");
        }
        // Ids out of order.
        let mut bytes = clean.clone();
        bytes[body + 6..body + 12].copy_from_slice(b"zlayer");
        fix_crc(&mut bytes);
        assert!(matches!(
            open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn unknown_versions_flags_codecs_and_kinds_are_typed_errors() {
        let m = metadata();
        let clean = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        type Expect = fn(&Error) -> bool;
        let cases: [(usize, &[u8], Expect); 5] = [
            (OFF_VERSION, &3u16.to_le_bytes(), |e| {
                matches!(
                    e,
                    Error::UnsupportedFormat {
                        found: 3,
                        supported: 2
                    }
                )
            }),
            (OFF_FLAGS, &32u16.to_le_bytes(), |e| {
                matches!(e, Error::UnknownFlags { flags: 32 })
            }),
            (OFF_CODEC, &[9], |e| {
                matches!(e, Error::UnknownCodec { id: 9 })
            }),
            (OFF_KIND, &[9], |e| matches!(e, Error::Malformed { .. })),
            (OFF_RESERVED, &[1], |e| matches!(e, Error::Malformed { .. })),
        ];
        for (at, value, expected) in cases {
            let mut bytes = clean.clone();
            bytes[at..at + value.len()].copy_from_slice(value);
            fix_crc(&mut bytes);
            let err = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap_err();
            assert!(expected(&err), "offset {at}: {err}");
        }
    }

    /// A body of several segments: the same bytes from 1 and 3 threads, opened on 1 and 2;
    /// the header's segment fields are checked before any decryption.
    #[cfg(feature = "encryption")]
    #[test]
    fn a_file_of_many_segments_is_the_same_on_any_thread_count_and_its_fields_are_checked() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let world: Vec<u8> = {
            let n: Vec<String> = (0..90_000)
                .map(|i| (i * 7919 % 100_003).to_string())
                .collect();
            format!("[{}]", n.join(",")).into_bytes()
        };
        let entries = [("player", 1, &b"{\"hp\":9}"[..]), ("world", 1, &world[..])];
        let sealed = |threads| {
            let p = SealParams {
                threads,
                ..params(&m, Protect::Encrypted(&key, [9; NONCE_LEN]))
            };
            seal(&p, &entries).unwrap()
        };
        let bytes = sealed(1);
        assert_eq!(sealed(3), bytes);
        let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
        assert_eq!(header.segment_log, Some(segments::SEGMENT_LOG));
        let body = segments::body_len(header.payload_len as usize, 18).unwrap();
        assert_eq!(segments::count(body, 18), 3, "{body} bytes");
        for threads in [1, 2] {
            let opened = open(
                bytes.clone(),
                FileKind::Save,
                Trust::keyed(&key),
                u64::MAX,
                threads,
            )
            .unwrap();
            assert_eq!(&opened.buf[opened.toc[1].range.clone()], &world[..]);
        }
        let with = |at: usize, value: &[u8]| {
            let mut b = bytes.clone();
            b[at..at + value.len()].copy_from_slice(value);
            fix_crc(&mut b);
            open(b, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap_err()
        };
        for log in [0, 11, 27, 255] {
            assert!(
                matches!(with(OFF_RESERVED, &[log]), Error::Malformed { .. }),
                "2^{log}"
            );
        }
        // Another segment size in range: the header is authenticated, so the tags fail.
        assert!(matches!(
            with(OFF_RESERVED, &[17]),
            Error::Malformed { .. } | Error::Decrypt
        ));
        // Not segmented, byte 15 still set; not segmented at all (one message).
        let flags = FLAG_ENCRYPTED.to_le_bytes();
        assert!(matches!(with(OFF_FLAGS, &flags), Error::Malformed { .. }));
        let mut one = bytes.clone();
        one[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&flags);
        one[OFF_RESERVED] = 0;
        fix_crc(&mut one);
        assert!(matches!(
            open(one, FileKind::Save, Trust::keyed(&key), u64::MAX, 2),
            Err(Error::Decrypt)
        ));
        // Segmented but not encrypted.
        let plain = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        let mut b = plain.clone();
        b[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&FLAG_SEGMENTED.to_le_bytes());
        b[OFF_RESERVED] = 18;
        fix_crc(&mut b);
        assert!(matches!(
            open(b, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::Malformed { .. })
        ));
    }

    /// Every compression this build has, with a body it shrinks.
    fn compressions() -> Vec<Compression> {
        let mut v = Vec::new();
        if cfg!(feature = "lz4") {
            v.push(Compression::Lz4);
        }
        if cfg!(feature = "zstd") {
            v.push(Compression::zstd());
        }
        v
    }

    fn big_entries() -> Vec<u8> {
        let items: Vec<String> = (0..2000)
            .map(|i| format!("{{\"id\":{i},\"hp\":100}}"))
            .collect();
        format!("[{}]", items.join(",")).into_bytes()
    }

    #[test]
    fn compressed_files_round_trip_under_every_protection_and_say_so_in_their_flags() {
        let m = metadata();
        let key = Key::from_bytes([7; 32]);
        let world = big_entries();
        let entries = [("player", 1, &b"{\"hp\":9}"[..]), ("world", 3, &world[..])];
        let plain_len = seal(&params(&m, Protect::Plain), &entries).unwrap().len();
        for compression in compressions() {
            let mut protects = vec![(Protect::Plain, None)];
            if cfg!(feature = "encryption") {
                protects.push((Protect::Encrypted(&key, [9; NONCE_LEN]), Some(&key)));
            }
            if cfg!(feature = "integrity") {
                protects.push((Protect::Authenticated(&key), Some(&key)));
            }
            for (protect, with) in protects {
                let with = Trust::from(with);
                for kind in [FileKind::Save, FileKind::Delta] {
                    let p = SealParams {
                        compression,
                        kind,
                        delta: (kind == FileKind::Delta).then(|| (4, vec!["gone"])),
                        threads: 2,
                        ..params(&m, protect)
                    };
                    let bytes = seal(&p, &entries).unwrap();
                    assert!(
                        bytes.len() < plain_len / 3,
                        "{compression}: {}",
                        bytes.len()
                    );
                    let flags = read_u16(&bytes, OFF_FLAGS);
                    assert_eq!(
                        (flags & FLAGS_COMPRESSION) >> COMPRESSION_SHIFT,
                        compression.id(),
                        "{flags:#x}"
                    );
                    assert_eq!(record_len(&bytes).unwrap(), Some(bytes.len()));
                    let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
                    assert_eq!(header.compression.name(), compression.name());
                    let opened = open(bytes.clone(), kind, with, u64::MAX, 2).unwrap();
                    let found: Vec<(&str, u32, &[u8])> = opened
                        .toc
                        .iter()
                        .map(|e| (e.id.as_str(), e.version, &opened.buf[e.range.clone()]))
                        .collect();
                    assert_eq!(found, entries);
                    if kind == FileKind::Delta {
                        assert_eq!(
                            (opened.sequence, &opened.deleted[..]),
                            (4, &["gone".to_owned()][..])
                        );
                    }
                    // The decompressed body is capped: a cap below it refuses the file.
                    let err = open(bytes.clone(), kind, with, 1000, 2).unwrap_err();
                    assert!(
                        matches!(err, Error::DecompressedTooLarge { limit: 1000, .. }),
                        "{err}"
                    );
                    assert!(err.is_corruption());
                    // Every single-bit flip is refused (a sample: every 7th byte, every bit).
                    for at in (0..bytes.len()).step_by(7) {
                        for bit in 0..8 {
                            let mut damaged = bytes.clone();
                            damaged[at] ^= 1 << bit;
                            let opened = open(damaged, kind, with, 1 << 20, 2);
                            assert!(opened.is_err(), "byte {at} bit {bit}");
                        }
                    }
                }
            }
        }
    }

    /// Bits 2-3 = 3 is no compression of any version; a compression flag in format 1 is unknown.
    #[test]
    fn the_undefined_compression_value_and_compression_in_format_1_are_refused() {
        let m = metadata();
        let mut bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        bytes[OFF_FLAGS] |= 0b1100;
        fix_crc(&mut bytes);
        assert!(matches!(
            open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::UnknownFlags { flags: 12 })
        ));
        let mut v1 = seal(&params_v1(&m, Protect::Plain), &ENTRIES).unwrap();
        v1[OFF_FLAGS] |= 0b0100;
        fix_crc(&mut v1);
        assert!(matches!(
            open(v1, FileKind::Save, Trust::plain(), u64::MAX, 2),
            Err(Error::UnknownFlags { flags: 4 })
        ));
        let p = SealParams {
            compression: Compression::Lz4,
            ..params_v1(&m, Protect::Plain)
        };
        assert!(matches!(seal(&p, &ENTRIES), Err(Error::Config { .. })));
        // An uncompressed body whose flags claim compression (and a fixed CRC) is a typed
        // error, never a panic.
        for id in [1u8, 2] {
            let mut lie = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
            lie[OFF_FLAGS] |= id << 2;
            fix_crc(&mut lie);
            assert!(open(lie, FileKind::Save, Trust::plain(), 1 << 20, 2).is_err());
        }
    }

    /// A body compression would not shrink is written as it is, with no compression flag.
    #[test]
    fn a_body_that_does_not_shrink_is_written_uncompressed() {
        let m = metadata();
        // 64 KiB of noise (xorshift): no compressor gains on it what its framing costs.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..1 << 16)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let entries = [("noise", 1, &noise[..])];
        for compression in compressions() {
            let p = SealParams {
                compression,
                ..params(&m, Protect::Plain)
            };
            let bytes = seal(&p, &entries).unwrap();
            assert_eq!(bytes, seal(&params(&m, Protect::Plain), &entries).unwrap());
            assert_eq!(read_u16(&bytes, OFF_FLAGS) & FLAGS_COMPRESSION, 0);
        }
    }

    #[test]
    fn timestamps_round_trip_including_before_1970() {
        for ms in [0i64, 1, -1, 1_700_000_000_123, -86_400_000] {
            assert_eq!(system_time_to_millis(millis_to_system_time(ms)), ms);
        }
    }
}
