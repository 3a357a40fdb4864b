//! One chunk of a replay file: the lengths read from a chunk's fixed header before its CRC can
//! be checked ([`declared_len`], [`end_chunk_len`]), [`seal_chunk`], which appends a whole
//! chunk (its payload sealed under the key when there is one), and [`open_chunk`], which
//! checks one (CRC first) and decrypts its payload in place.

use std::ops::Range;

use super::{
    CHUNK_HEADER_LEN, ChunkHeader, ChunkKind, END_META_LEN, FORMAT_VERSION, MAX_META_LEN,
    OFF_CHUNK_INDEX, OFF_CHUNK_KIND, OFF_CODEC, OFF_FILE_KIND, OFF_FLAGS, OFF_FRAME, OFF_META_LEN,
    OFF_PAYLOAD_LEN, OFF_REPLAY_ID, OFF_RESERVED, OFF_VERSION, Stream,
};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::bytes;
use crate::format::frame::crc::check_crc;
use crate::format::frame::header::check_version_and_flags;
use crate::format::frame::open::open_body;
use crate::format::frame::seal::seal_body;
use crate::format::frame::{CRC_LEN, FLAG_ENCRYPTED, FileKind, Key, MAGIC, NONCE_LEN, TAG_LEN};

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
            .ok_or_else(|| crate::format::missing_key(crate::protection::KeyPurpose::Decrypt))?;
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
            .ok_or_else(|| crate::format::missing_key(crate::protection::KeyPurpose::Decrypt))?;
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
