//! Reading a file's fixed header and metadata: the lengths a journal or a load menu needs from
//! the first bytes alone ([`record_len`], [`header_len`]), and [`parse_header`], which checks
//! every field of the header (magic, format version, flags, codec, kinds, the reserved or
//! segment byte, the lengths) before any of it is trusted. Nothing here decrypts or checks the
//! CRC: [`open`](super::open) does, over the whole file.

use super::{
    COMPRESSION_SHIFT, CRC_LEN, FLAG_AUTHENTICATED, FLAG_ENCRYPTED, FLAG_SEGMENTED,
    FLAGS_COMPRESSION, FORMAT_VERSION, FORMAT_VERSION_2, FileKind, HEADER_LEN, Header, MAGIC,
    MAX_METADATA_LEN, NONCE_LEN, OFF_CODEC, OFF_FLAGS, OFF_GENERATION, OFF_KIND, OFF_METADATA_LEN,
    OFF_PAYLOAD_LEN, OFF_RESERVED, OFF_SAVED_AT, OFF_SCHEMA, OFF_SLOT, OFF_SLOT_KIND, OFF_VERSION,
};
use crate::codec::Codec;
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::bytes::{millis_to_system_time, read_u16, read_u32, read_u64};
use crate::format::metadata::parse_metadata;
use crate::format::segments;
use crate::slot::SlotId;

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

/// The kind byte of a file of the family, once its magic is checked; see
/// [`sniff`](crate::format::sniff).
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

pub(super) fn check_magic(bytes: &[u8]) -> Result<()> {
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
