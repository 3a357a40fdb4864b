//! Opening a whole file: the CRC first, then the header, the protection the caller trusts,
//! the body decrypted in place (in segments or as one message) or its integrity tag checked,
//! the body decompressed, a delta's preamble and the table of contents read.

use super::crc::{check_crc, check_crc_on, crc_trailer};
use super::header::parse_header;
use super::toc::{TocEntry, parse_delta_preamble, parse_toc};
use super::{CRC_LEN, FileKind, Header, Key, MAC_LEN, NONCE_LEN, TAG_LEN, associated_data};
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::segments;
use crate::format::trust::{Trust, missing_key};
use crate::protection::KeyPurpose;

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
    let expected_crc = crc_trailer(&buf)?;
    let crc_at = buf.len() - CRC_LEN;
    let header =
        parse_header(&buf[..crc_at], Some(buf.len() as u64)).map_err(|e| damage_first(&buf, e))?;
    // A body sealed in segments has its CRC taken as its segments are opened, on every thread
    // that opens them; any other file is checked first, whole.
    if header.segment_log.is_none() {
        check_crc_on(&buf, threads)?;
    }
    if header.kind != expected_kind {
        return Err(damage_first(
            &buf,
            Error::WrongFileKind {
                expected: expected_kind.id(),
                found: header.kind.id(),
            },
        ));
    }
    trust
        .admit(header.protection())
        .map_err(|e| damage_first(&buf, e))?;
    let key = trust.key();
    let sections = header.sections();
    let associated_end = sections.metadata.end as usize;
    let payload = sections.payload.start as usize..sections.payload.end as usize;

    let body = if let Some(log) = header.segment_log {
        let key = key.ok_or_else(|| missing_key(KeyPurpose::Decrypt))?;
        let body = payload.start..payload.start + segments::body_len(payload.len(), log)?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&buf[sections.nonce.start as usize..payload.start]);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&buf[..body.start]);
        let (head, rest) = buf.split_at_mut(body.start);
        let (ciphertext, tags) = rest[..payload.len()].split_at_mut(body.len());
        let associated = associated_data(&head[..associated_end], header.format_version);
        let (opened, body_crc) =
            segments::open(key, &nonce, &associated, ciphertext, tags, log, threads);
        crc.combine(&body_crc);
        crc.update(&buf[body.end..crc_at]);
        // Damage is told apart from tampering as when the CRC is checked first: a file whose
        // CRC fails is damaged, whatever its tags say.
        let found = crc.finalize();
        if found != expected_crc {
            return Err(Error::ChecksumMismatch {
                expected: expected_crc,
                found,
            });
        }
        opened?;
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
        let plain = header
            .compression
            .decompress(&buf[body], max_body, threads)?;
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

/// Opens a body in place ([`Error::FeatureDisabled`] without the `encryption` feature).
/// `error`, unless the file is damaged (its CRC fails), which is said first: a field that made
/// no sense in a damaged file reads as the damage, as when the CRC is checked before anything.
fn damage_first(buf: &[u8], error: Error) -> Error {
    match check_crc(buf) {
        Err(damage) => damage,
        Ok(()) => error,
    }
}

pub(crate) fn open_body(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    ad: &[u8],
    body: &mut [u8],
    tag: &[u8; TAG_LEN],
) -> Result<()> {
    key.open(nonce, ad, body, tag)
}
