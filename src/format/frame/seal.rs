//! Writing a whole file: the fixed header, the metadata, the body (a delta's preamble, the
//! table of contents, the document, each memento encoded in its place), the body's
//! compression, its encryption (in segments from format version 2) or its integrity tag, and
//! the CRC, in one buffer allocated at the file's final size.

use std::time::SystemTime;

use super::crc::crc_of;
use super::document::{DocumentError, DocumentOut, write_document};
pub(crate) use super::document::{SeeMementos, Source};
use super::toc::toc_entry_fixed;
use super::{
    COMPRESSION_SHIFT, CRC_LEN, FLAG_AUTHENTICATED, FLAG_ENCRYPTED, FLAG_SEGMENTED, FORMAT_VERSION,
    FORMAT_VERSION_2, FileKind, HEADER_LEN, Key, MAC_LEN, MAGIC, MAX_METADATA_LEN, NONCE_LEN,
    OFF_FLAGS, OFF_PAYLOAD_LEN, TAG_LEN, associated_data,
};
use crate::codec::Codec;
use crate::compression::Compression;
use crate::compression::compressing::Compressing;
use crate::error::{Error, Result};
use crate::format::ahead::Ready;
use crate::format::bytes::{len_u16, len_u32, system_time_to_millis};
use crate::format::metadata::{Metadata, encoded_metadata_len, write_metadata};
use crate::format::segments;
use crate::slot::SlotId;

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
    /// would not make smaller is written uncompressed, unless it was compressed as it was
    /// encoded ([`Compressing`]: then it stays compressed).
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
    seal_sources(params, &sources, 0, None)
}

/// [`seal`] of mementos that may be encoded as the file is written: each
/// [`Source::Encode`] is encoded into the file's buffer in its place, with no buffer of its
/// own. `size_hint` is the expected length of the file (the slot's previous one, say), so
/// that the buffer is allocated once when the mementos' sizes are not known up front (0: no
/// hint). `see`, if any, sees each memento's encoded bytes, before compression and sealing. A
/// large body compressed with Zstandard is compressed as it is encoded ([`Compressing`]).
pub(crate) fn seal_sources(
    params: &SealParams<'_>,
    entries: &[(&str, u32, Source<'_>)],
    size_hint: usize,
    mut see: Option<&mut dyn SeeMementos>,
) -> Result<Vec<u8>> {
    let version = params.format_version;
    let layout = layout(params)?;
    let Layout {
        segment_log,
        encrypted,
        tag_len,
        flags,
        metadata_len,
    } = layout;
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
    // The payload length is patched in once the body is written.
    let associated_end = write_head(&mut buf, params, &layout)?;

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
        toc_slots.push(write_toc_entry(&mut buf, version, id, *memento_version)?);
    }
    let compressed = write_compressing(
        &mut buf,
        params,
        entries,
        &toc_slots,
        body_start,
        see.as_deref_mut(),
    )?;
    let compressed = match compressed {
        Some(compressed) => compressed,
        None => {
            let doc_start = buf.len();
            codec.open_document(&mut buf, entries.len());
            for (i, ((id, _, memento), slot)) in entries.iter().zip(&toc_slots).enumerate() {
                codec.write_document_key(&mut buf, i, id);
                let start = buf.len();
                match memento.ready() {
                    Ready::Bytes(bytes) => buf.extend_from_slice(bytes),
                    Ready::Here(value) => value
                        .encode_into(codec, &mut buf)
                        .map_err(|e| e.encoding(id))?,
                }
                if let Some(see) = see.as_deref_mut() {
                    see.piece(&buf[start..]);
                    see.end(id);
                }
                let offset = (start - doc_start) as u64;
                let len = (buf.len() - start) as u64;
                buf[*slot..*slot + 8].copy_from_slice(&offset.to_le_bytes());
                buf[*slot + 8..*slot + 16].copy_from_slice(&len.to_le_bytes());
            }
            codec.close_document(&mut buf);
            false
        }
    };

    if compressed {
        mark_compressed(&mut buf, flags, params.compression);
    } else if params.compression != Compression::None {
        // Compress the body into a new buffer behind a copy of the header, metadata and nonce.
        let body = &buf[body_start..];
        let mut out = Vec::with_capacity(body_start + 8 + body.len() / 2 + tag_len + CRC_LEN);
        out.extend_from_slice(&buf[..body_start]);
        if params.compression.compress_into(body, &mut out)? {
            mark_compressed(&mut out, flags, params.compression);
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

    // The CRC of the bytes before it; for a body sealed in segments, the sealing threads took
    // the body's share of it as they went.
    let mut crc = crc32fast::Hasher::new();
    match params.protect {
        Protect::Plain => crc = crc_of(&buf, params.threads),
        Protect::Encrypted(key, nonce) => {
            let (head, body) = buf.split_at_mut(body_start);
            let associated = &head[..associated_end];
            match segment_log {
                Some(log) => {
                    let associated = associated_data(associated, version);
                    let sealed =
                        segments::seal(key, &nonce, &associated, body, log, params.threads)?;
                    crc.update(&buf[..body_start]);
                    crc.combine(&sealed.crc);
                    crc.update(&sealed.tags);
                    buf.extend_from_slice(&sealed.tags);
                }
                None => {
                    let tag = seal_body(key, &nonce, associated, body)?;
                    buf.extend_from_slice(&tag);
                    crc.update(&buf);
                }
            }
        }
        Protect::Authenticated(key) => {
            // The tag covers every byte before it: header, metadata and the readable body.
            let tag = key.authenticate(&buf)?;
            crc = crc_of(&buf, params.threads);
            crc.update(&tag);
            buf.extend_from_slice(&tag);
        }
    }

    let crc = crc.finalize();
    buf.extend_from_slice(&crc.to_le_bytes());
    debug_assert!(
        params.compression != Compression::None
            || entries.iter().any(|e| !matches!(e.2, Source::Bytes(_)))
            || buf.len() <= capacity
    );
    Ok(buf)
}

/// Writes the document after the table of contents in `buf` through [`Compressing`], and the
/// table's ranges: `None` where the body is not compressed as it is encoded (nothing was
/// written), `Some(true)` when `buf` now holds the compressed body, `Some(false)` when the
/// document was small enough to stay in `buf` uncompressed, to be compressed whole.
fn write_compressing(
    buf: &mut Vec<u8>,
    params: &SealParams<'_>,
    entries: &[(&str, u32, Source<'_>)],
    toc_slots: &[usize],
    body_start: usize,
    see: Option<&mut (dyn SeeMementos + '_)>,
) -> Result<Option<bool>> {
    std::thread::scope(|scope| {
        let Some(mut doc) = Compressing::new(buf, params.compression, params.threads, scope) else {
            return Ok(None);
        };
        let ranges = write_document(params.codec, entries, &mut doc, see).map_err(|e| match e {
            DocumentError::Encode(e) => e,
            DocumentError::Out(e) => Error::Config {
                reason: format!("zstd compression failed: {e}"),
            },
        })?;
        let head = doc.before_document();
        for (slot, range) in toc_slots.iter().zip(ranges) {
            head[*slot..*slot + 16].copy_from_slice(&range);
        }
        doc.finish_body(body_start).map(Some)
    })
}

impl DocumentOut for Compressing<'_, '_, '_> {
    fn written(&self) -> usize {
        self.len()
    }

    fn stopped(&self) -> Option<std::io::Error> {
        self.failure()
    }
}

/// How a file's body is protected, and the fixed sizes around it: what [`layout`] works out
/// from a file's parameters.
pub(super) struct Layout {
    /// The segment size of an encrypted body (format version 2 on), as a power of two.
    pub(super) segment_log: Option<u8>,
    pub(super) encrypted: bool,
    /// The length of each segment's tag, or of the whole body's.
    pub(super) tag_len: usize,
    pub(super) flags: u16,
    pub(super) metadata_len: usize,
}

/// The layout of the file `params` describe, or [`Error::Config`] for one the format version
/// cannot have, or metadata over its cap.
pub(super) fn layout(params: &SealParams<'_>) -> Result<Layout> {
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
    Ok(Layout {
        segment_log,
        encrypted,
        tag_len,
        flags,
        metadata_len,
    })
}

/// Writes a file's first bytes into `buf`: the fixed header, its payload length 0 (to be
/// written once known), the metadata and an encrypted file's nonce. Returns where the
/// metadata ends: the end of the segments' associated data.
pub(super) fn write_head(
    buf: &mut Vec<u8>,
    params: &SealParams<'_>,
    layout: &Layout,
) -> Result<usize> {
    buf.extend_from_slice(&MAGIC);
    buf.extend_from_slice(&params.format_version.to_le_bytes());
    buf.extend_from_slice(&layout.flags.to_le_bytes());
    buf.push(params.codec.id());
    buf.push(params.kind.id());
    let (slot_kind, slot_number) = params.slot.to_raw();
    buf.push(slot_kind);
    buf.push(layout.segment_log.unwrap_or(0));
    buf.extend_from_slice(&slot_number.to_le_bytes());
    buf.extend_from_slice(&params.schema_version.to_le_bytes());
    buf.extend_from_slice(&params.generation.to_le_bytes());
    buf.extend_from_slice(&system_time_to_millis(params.saved_at).to_le_bytes());
    buf.extend_from_slice(&len_u32(layout.metadata_len)?.to_le_bytes());
    buf.extend_from_slice(&0u64.to_le_bytes());
    debug_assert_eq!(buf.len(), HEADER_LEN);
    write_metadata(buf, params.metadata)?;
    let associated_end = buf.len();
    if let Protect::Encrypted(_, nonce) = &params.protect {
        buf.extend_from_slice(nonce);
    }
    Ok(associated_end)
}

/// Writes `flags` with `compression`'s bits into the header at the start of `file`: its body is
/// stored compressed so.
pub(super) fn mark_compressed(file: &mut [u8], flags: u16, compression: Compression) {
    let flags = flags | (compression.id() << COMPRESSION_SHIFT);
    file[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
}

/// Writes the table of contents' entry of memento `id` (at `memento_version`) with its range
/// zero; returns where the range's 16 bytes are, to be written once the memento is.
pub(super) fn write_toc_entry(
    buf: &mut Vec<u8>,
    format_version: u16,
    id: &str,
    memento_version: u32,
) -> Result<usize> {
    buf.extend_from_slice(&len_u16(id.len())?.to_le_bytes());
    buf.extend_from_slice(id.as_bytes());
    if format_version >= FORMAT_VERSION_2 {
        buf.extend_from_slice(&memento_version.to_le_bytes());
    }
    let slot = buf.len();
    buf.extend_from_slice(&[0u8; 16]);
    Ok(slot)
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
