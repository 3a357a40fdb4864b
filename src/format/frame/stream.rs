//! Writing a save as it is encoded (format version 3 on): a file sealed a segment at a time
//! and handed to a [`StreamSink`] as it goes, so that a save never holds its whole file.
//!
//! Uncompressed, the bytes are those [`seal_sources`](super::seal::seal_sources) writes for
//! the same file and nonce. A Zstandard body has a shape of its own (`docs/format.md`,
//! "Compressed bodies"): its length and the table of contents in a frame of raw blocks, whose
//! length is known before the document, then the document's frames, each passed on in order
//! as it is made ([`InPieces`]). What is written before what is known:
//!
//! - The body starts with the table of contents, whose ranges are known only once every
//!   memento is encoded. The segments it lies in are held back (at least one: a plain body is
//!   cut into pieces of a segment's size), while the rest of the body is cut into segments as
//!   the encoder fills them.
//! - A second thread seals each segment (the encoder goes on with the next), appends it to the
//!   sink and takes its CRC. It keeps the latest one until the next comes or the encoding
//!   ends: only then is it known whether it is the last.
//! - At the end the table's ranges are written in, its segments sealed and written over the
//!   place kept for them, the header's payload length written over its place, and the tags
//!   and the CRC (put together from the pieces' CRCs) appended.
//!
//! The segments' associated data reads the payload length as zero from format version 3
//! ([`associated_data`](super::associated_data)): it is the one thing the format had to change
//! for this.

use std::io::{self, Write as _};
use std::sync::mpsc;
use std::thread::Scope;

use super::document::{DocumentError, DocumentOut, SeeMementos, Source, write_document};
use super::seal::{
    Layout, Protect, SealParams, layout, mark_compressed, write_head, write_toc_entry,
};
use super::toc::toc_entry_fixed;
use super::{CRC_LEN, FORMAT_VERSION_3, Key, NONCE_LEN, OFF_PAYLOAD_LEN, TAG_LEN, associated_data};
use crate::compression::Compression;
use crate::compression::compressing::{InPieces, in_pieces, raw_frame, raw_frame_len};
use crate::error::Error;
use crate::format::segments;
use crate::storage::StreamSink;

/// How long the pieces of a plain body are that the writer thread appends (a plain body has no
/// segments; it is written in pieces this long as it is encoded).
const PLAIN_PIECE: usize = 1 << 18;

/// The longest table of contents a Zstandard save written as it is encoded stores uncompressed
/// (in a frame of raw blocks, so that its length is known before the document): about 500
/// mementos. A save with a longer one is sealed whole, its table compressed with the rest,
/// where the table's few dozen bytes a memento would add up (a memento per entity).
pub(crate) const MAX_RAW_TABLE: usize = 16 << 10;

/// How many filled segments may wait for the writer thread: the encoder is at most this many
/// (and the one it fills, and the one the writer holds) ahead of the disk.
const IN_FLIGHT: usize = 2;

/// Whether the file `params` describe can be written as it is encoded: a save (no delta) of
/// format version 3 on, its compression one that [`streams_compressed`], plain or encrypted
/// (an integrity-only file's tag covers its header, length and all).
pub(crate) fn streams(params: &SealParams<'_>) -> bool {
    params.format_version >= FORMAT_VERSION_3
        && params.delta.is_none()
        && streams_compressed(params.compression)
        && matches!(params.protect, Protect::Plain | Protect::Encrypted(..))
}

/// Whether a body compressed with `compression` can be written as it is encoded: none, or
/// Zstandard in pieces (LZ4 compresses a body whole).
pub(crate) fn streams_compressed(compression: Compression) -> bool {
    compression == Compression::None || in_pieces(compression)
}

/// The length of the body before the document: the table of contents of `toc_len` bytes, or,
/// `compressed`, the body's length and the table in a frame of raw blocks, whose length is
/// known before the table's ranges are.
fn before_document(compressed: bool, toc_len: usize) -> usize {
    if compressed {
        8 + raw_frame_len(toc_len)
    } else {
        toc_len
    }
}

/// Why a streamed seal stopped.
#[derive(Debug)]
pub(crate) enum StreamError {
    /// The sink's error: the storage's, for the caller to name the object.
    Sink(io::Error),
    /// The file would be longer than the cap (`size` is how long it was getting).
    TooLarge { size: u64 },
    /// Sealing failed (a memento that does not encode, a file the format cannot have).
    Seal(Error),
    /// Nothing was written, and the caller seals the file whole instead: no thread could be
    /// started to write beside the encoder, or the file is one better sealed whole (a
    /// Zstandard body whose table of contents is too long to store uncompressed,
    /// [`MAX_RAW_TABLE`]).
    SealWhole,
}

impl From<Error> for StreamError {
    fn from(e: Error) -> Self {
        StreamError::Seal(e)
    }
}

/// Writes the file of `entries` (as [`seal_sources`](super::seal::seal_sources) takes them)
/// into `sink` as it is encoded; returns its length. `max_len` caps the file's length.
/// `params` must [`stream`](streams).
pub(crate) fn seal_streamed(
    params: &SealParams<'_>,
    entries: &[(&str, u32, Source<'_>)],
    sink: &mut dyn StreamSink,
    max_len: u64,
    see: Option<&mut dyn SeeMementos>,
) -> std::result::Result<u64, StreamError> {
    if !streams(params) {
        return Err(StreamError::Seal(Error::Config {
            reason: "this file cannot be written as it is encoded".into(),
        }));
    }
    let layout = layout(params)?;
    let version = params.format_version;
    let mut head = Vec::new();
    let associated_end = write_head(&mut head, params, &layout)?;
    let compressed = in_pieces(params.compression);
    if compressed {
        mark_compressed(&mut head, layout.flags, params.compression);
    }
    let sealing = match params.protect {
        Protect::Encrypted(key, nonce) => Some((key, nonce)),
        _ => None,
    };
    let associated = associated_data(&head[..associated_end], version).into_owned();
    let piece = layout.segment_log.map_or(PLAIN_PIECE, |log| 1 << log);
    // The table of contents, then the document: the table's length is known now.
    let toc_len = 4 + entries
        .iter()
        .map(|(id, ..)| toc_entry_fixed(version) + id.len())
        .sum::<usize>();
    if compressed && toc_len > MAX_RAW_TABLE {
        return Err(StreamError::SealWhole);
    }
    // Whole segments, at least one: a file whose body fits in them is written in order, at the
    // end, in one piece (a small save makes the writes a save of bytes in hand makes).
    let held_cap = before_document(compressed, toc_len).div_ceil(piece).max(1) * piece;

    let (to_writer, from_encoder) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
    let (spare_out, spares) = mpsc::channel::<Vec<u8>>();
    let first_streamed = held_cap / piece;
    let writer = Writer {
        sealing: sealing.map(|(key, nonce)| (key, nonce, associated.as_slice())),
        first_index: first_streamed,
        placeholder_len: head.len() + held_cap,
        head: &head,
        max_len,
    };
    let (encoded, written) = std::thread::scope(|scope| {
        let thread = crate::threads::scoped(scope, "savegame-write", || {
            writer.run(from_encoder, spare_out, sink)
        });
        let Some(thread) = thread else {
            return (Err(StreamError::SealWhole), None);
        };
        let mut body = Body {
            len: 0,
            // Grown as written: a small save allocates what it needs, not a segment.
            held: Vec::new(),
            held_cap,
            piece,
            current: Vec::new(),
            to_writer: Some(to_writer),
            spares,
        };
        let encoded = encode_body(params, entries, &mut body, version, see, scope);
        // The last piece, then the end of the stream: the writer seals what it holds as the
        // last segment.
        let finished = encoded.and_then(|ranges| body.finish().map(|()| ranges));
        drop(body.to_writer.take());
        (finished, thread.join().ok())
    });
    if let Err(StreamError::SealWhole) = encoded {
        return Err(StreamError::SealWhole);
    }
    // The writer's error comes first: an encoder whose writer stopped fails for that reason.
    let streamed = match written {
        Some(Ok(streamed)) => streamed,
        Some(Err(e)) => return Err(e),
        None => {
            return Err(StreamError::Seal(Error::Config {
                reason: "the thread writing the save panicked".into(),
            }));
        }
    };
    let Encoded {
        mut held,
        ranges,
        body_len,
    } = encoded?;
    for (slot, range) in ranges {
        // The table of contents is in the held-back part, which is at least as long.
        held.get_mut(slot..slot + 16)
            .ok_or_else(|| Error::malformed("a table entry past the held-back part"))?
            .copy_from_slice(&range);
    }
    finish(
        &layout,
        sealing,
        &associated,
        head,
        held,
        body_len,
        streamed,
        sink,
        max_len,
    )
}

/// What [`encode_body`] leaves for the end: the held-back bytes, each table entry's place in
/// them with its range (offset and length, little-endian), and the body's length.
struct Encoded {
    held: Vec<u8>,
    ranges: Vec<(usize, [u8; 16])>,
    body_len: usize,
}

/// Encodes the body into `body`: the table of contents (ranges zero), then the document; or,
/// compressed, a place for the body's length and the table's frame, then the document's
/// frames, compressed on the helper threads `scope` starts, and at the end the length and the
/// table's frame written into the held-back part.
fn encode_body<'scope>(
    params: &SealParams<'_>,
    entries: &[(&str, u32, Source<'_>)],
    body: &mut Body,
    version: u16,
    see: Option<&mut dyn SeeMementos>,
    scope: &'scope Scope<'scope, '_>,
) -> std::result::Result<Encoded, StreamError> {
    let mut toc = Vec::new();
    toc.extend_from_slice(&crate::format::bytes::len_u32(entries.len())?.to_le_bytes());
    let mut slots = Vec::with_capacity(entries.len());
    for (id, memento_version, _) in entries {
        slots.push(write_toc_entry(&mut toc, version, id, *memento_version)?);
    }
    if !in_pieces(params.compression) {
        body.put(&toc)?;
        let ranges = write_document(params.codec, entries, body, see).map_err(|e| match e {
            DocumentError::Out(e) => StreamError::Sink(e),
            DocumentError::Encode(e) => StreamError::Seal(e),
        })?;
        let ranges = slots.into_iter().zip(ranges).collect();
        return Ok(Encoded {
            held: std::mem::take(&mut body.held),
            ranges,
            body_len: body.len,
        });
    };
    let before_document = before_document(true, toc.len());
    body.put(&vec![0; before_document])?;
    let mut doc =
        InPieces::new(&mut *body, params.compression, params.threads, scope).ok_or_else(|| {
            Error::Config {
                reason: format!("{} does not compress in pieces", params.compression),
            }
        })?;
    let ranges = write_document(params.codec, entries, &mut doc, see);
    let doc_len = doc.len();
    let finished = match ranges {
        Ok(ranges) => doc.finish().map(|_| ranges).map_err(DocumentError::Out),
        Err(e) => Err(e),
    };
    let ranges = finished.map_err(|e| match e {
        // The writer's own error is the one given (see `seal_streamed`).
        DocumentError::Out(_) if body.to_writer.is_none() => StreamError::Sink(stopped()),
        DocumentError::Out(e) => StreamError::Seal(Error::Config {
            reason: format!("zstd compression failed: {e}"),
        }),
        DocumentError::Encode(e) => StreamError::Seal(e),
    })?;
    for (slot, range) in slots.into_iter().zip(ranges) {
        toc[slot..slot + 16].copy_from_slice(&range);
    }
    let mut before = ((toc.len() + doc_len) as u64).to_le_bytes().to_vec();
    raw_frame(&toc, &mut before);
    let mut held = std::mem::take(&mut body.held);
    held.get_mut(..before_document)
        .ok_or_else(|| Error::malformed("the table's frame past the held-back part"))?
        .copy_from_slice(&before);
    Ok(Encoded {
        held,
        ranges: Vec::new(),
        body_len: body.len,
    })
}

/// The body as the encoder writes it: its first `held_cap` bytes kept, the rest cut into
/// pieces for the writer thread.
struct Body {
    len: usize,
    held: Vec<u8>,
    held_cap: usize,
    piece: usize,
    current: Vec<u8>,
    /// `None` once the writer stopped (or the body is finished).
    to_writer: Option<mpsc::SyncSender<Vec<u8>>>,
    /// Pieces the writer is done with, to be filled again.
    spares: mpsc::Receiver<Vec<u8>>,
}

impl Body {
    fn put(&mut self, bytes: &[u8]) -> std::result::Result<(), StreamError> {
        self.write_all(bytes).map_err(StreamError::Sink)
    }

    fn send(&mut self) -> io::Result<()> {
        let next = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.piece));
        let full = std::mem::replace(&mut self.current, next);
        let sent = match &self.to_writer {
            Some(to) => to.send(full).is_ok(),
            None => false,
        };
        if !sent {
            self.to_writer = None;
            return Err(stopped());
        }
        Ok(())
    }

    /// Hands the writer the last piece, if it has bytes.
    fn finish(&mut self) -> std::result::Result<(), StreamError> {
        if !self.current.is_empty() {
            self.send().map_err(StreamError::Sink)?;
        }
        Ok(())
    }
}

fn stopped() -> io::Error {
    io::Error::other("the save's writer stopped")
}

impl DocumentOut for InPieces<'_, &mut Body> {
    fn written(&self) -> usize {
        self.len()
    }

    fn stopped(&self) -> Option<io::Error> {
        self.failure().or_else(|| self.out().stopped())
    }
}

impl DocumentOut for Body {
    fn written(&self) -> usize {
        self.len
    }

    fn stopped(&self) -> Option<io::Error> {
        self.to_writer.is_none().then(stopped)
    }
}

impl io::Write for Body {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut rest = bytes;
        if self.len < self.held_cap {
            let take = rest.len().min(self.held_cap - self.len);
            self.held.extend_from_slice(&rest[..take]);
            self.len += take;
            rest = &rest[take..];
        }
        while !rest.is_empty() {
            if self.current.capacity() == 0 {
                self.current.reserve_exact(self.piece);
            }
            let take = rest.len().min(self.piece - self.current.len());
            self.current.extend_from_slice(&rest[..take]);
            self.len += take;
            rest = &rest[take..];
            if self.current.len() == self.piece {
                self.send()?;
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writer thread's part.
struct Writer<'a> {
    sealing: Option<(&'a Key, [u8; NONCE_LEN], &'a [u8])>,
    /// The index of the first streamed segment (after the held-back ones).
    first_index: usize,
    /// The bytes before the first streamed piece: the head and the held-back part, written
    /// as a placeholder (the head with no payload length, zeros) before it.
    placeholder_len: usize,
    head: &'a [u8],
    max_len: u64,
}

/// What the writer thread appended after the placeholder: the tags of the segments, the CRC
/// state of the pieces as written, and whether anything was (the placeholder with it).
struct Streamed {
    tags: Vec<u8>,
    crc: crc32fast::Hasher,
    pieces: usize,
    len: u64,
}

impl Writer<'_> {
    fn run(
        &self,
        pieces: mpsc::Receiver<Vec<u8>>,
        spares: mpsc::Sender<Vec<u8>>,
        sink: &mut dyn StreamSink,
    ) -> std::result::Result<Streamed, StreamError> {
        let mut out = Streamed {
            tags: Vec::new(),
            crc: crc32fast::Hasher::new(),
            pieces: 0,
            len: 0,
        };
        let mut kept: Option<Vec<u8>> = None;
        for piece in pieces {
            if let Some(previous) = kept.replace(piece) {
                self.write(previous, false, &mut out, sink, &spares)?;
            }
        }
        if let Some(last) = kept {
            self.write(last, true, &mut out, sink, &spares)?;
        }
        Ok(out)
    }

    fn write(
        &self,
        mut piece: Vec<u8>,
        last: bool,
        out: &mut Streamed,
        sink: &mut dyn StreamSink,
        spares: &mpsc::Sender<Vec<u8>>,
    ) -> std::result::Result<(), StreamError> {
        if out.pieces == 0 {
            let mut placeholder = vec![0u8; self.placeholder_len];
            placeholder[..self.head.len()].copy_from_slice(self.head);
            sink.append(&placeholder).map_err(StreamError::Sink)?;
            out.len = self.placeholder_len as u64;
        }
        if let Some((key, nonce, associated)) = self.sealing {
            let index = self.first_index + out.pieces;
            let tag = segments::seal_one(key, &nonce, associated, &mut piece, index, last)?;
            out.tags.extend_from_slice(&tag);
        }
        out.len += piece.len() as u64;
        if out.len > self.max_len {
            return Err(StreamError::TooLarge { size: out.len });
        }
        out.crc.update(&piece);
        sink.append(&piece).map_err(StreamError::Sink)?;
        out.pieces += 1;
        piece.clear();
        // The encoder may be gone (it failed): the piece is then dropped.
        let _ = spares.send(piece);
        Ok(())
    }
}

/// Seals the held-back part, writes it, the header's payload length, the tags and the CRC.
#[allow(clippy::too_many_arguments)]
fn finish(
    layout: &Layout,
    sealing: Option<(&Key, [u8; NONCE_LEN])>,
    associated: &[u8],
    mut head: Vec<u8>,
    mut held: Vec<u8>,
    body_len: usize,
    streamed: Streamed,
    sink: &mut dyn StreamSink,
    max_len: u64,
) -> std::result::Result<u64, StreamError> {
    let mut tags = Vec::new();
    if let (Some((key, nonce)), Some(log)) = (sealing, layout.segment_log) {
        let size = 1usize << log;
        let count = segments::count(held.len(), log);
        // The held-back segments come first; the last of them is the body's last when nothing
        // was streamed after them.
        for (index, segment) in held.chunks_mut(size).enumerate() {
            let last = streamed.pieces == 0 && index + 1 == count;
            tags.extend_from_slice(&segments::seal_one(
                key, &nonce, associated, segment, index, last,
            )?);
        }
        if held.is_empty() {
            // An empty body is one empty segment (no file this writer makes has one).
            let last = streamed.pieces == 0;
            tags.extend_from_slice(&segments::seal_one(
                key,
                &nonce,
                associated,
                &mut [],
                0,
                last,
            )?);
        }
    }
    tags.extend_from_slice(&streamed.tags);
    let tags_len = if layout.encrypted { tags.len() } else { 0 };
    let payload_len = (body_len + tags_len) as u64;
    head[OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 8].copy_from_slice(&payload_len.to_le_bytes());
    let total = (head.len() + body_len + tags_len + CRC_LEN) as u64;
    if total > max_len {
        return Err(StreamError::TooLarge { size: total });
    }
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head);
    crc.update(&held);
    crc.combine(&streamed.crc);
    crc.update(&tags);
    let mut end = tags;
    end.extend_from_slice(&crc.finalize().to_le_bytes());
    let sink_err = StreamError::Sink;
    if streamed.pieces == 0 {
        // Nothing went ahead: the file in order.
        sink.append(&head).map_err(sink_err)?;
        sink.append(&held).map_err(sink_err)?;
    } else {
        sink.write_at(head.len() as u64, &held).map_err(sink_err)?;
        sink.write_at(0, &head[..OFF_PAYLOAD_LEN + 8])
            .map_err(sink_err)?;
    }
    sink.append(&end).map_err(sink_err)?;
    debug_assert_eq!(TAG_LEN, 16);
    Ok(total)
}

#[cfg(all(test, feature = "encryption", feature = "msgpack", feature = "json"))]
mod tests {

    use super::*;
    use crate::codec::Codec;
    use crate::format::frame::open::open;
    use crate::format::frame::seal::seal_sources;
    use crate::format::frame::tests::Numbers;
    use crate::format::trust::Trust;
    use crate::format::{FileKind, Metadata};

    /// The frame tests' file, at the current format version, in `codec`.
    fn params<'a>(m: &'a Metadata, codec: Codec, protect: Protect<'a>) -> SealParams<'a> {
        SealParams {
            codec,
            ..crate::format::frame::tests::params(m, protect)
        }
    }

    /// Files of every shape the held-back part and the segments can take: one smaller than a
    /// segment, a body ending on a segment's boundary or just after, a table of contents
    /// longer than a segment, and mementos encoded as they are written, in pieces.
    #[test]
    fn a_file_written_as_it_is_encoded_has_the_bytes_of_one_sealed_whole() {
        let key = Key::from_bytes([7; 32]);
        let metadata = Metadata {
            label: "streamed".into(),
            ..Metadata::default()
        };
        let ids: Vec<String> = (0..20_000).map(|i| format!("entity/{i:05}")).collect();
        let blob: Vec<u8> = (0..3_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let numbers = Numbers((0..300_000u64).map(|i| i * 7_919).collect());
        let mut cases: Vec<Vec<(&str, u32, Source<'_>)>> = vec![
            vec![("small", 1, Source::Bytes(b"\"one\""))],
            vec![("encoded", 2, Source::Encode(&numbers))],
            vec![
                ("a", 1, Source::Bytes(&blob[..1 << 18])),
                ("b", 1, Source::Encode(&numbers)),
                ("c", 3, Source::Bytes(&blob)),
            ],
            ids.iter()
                .map(|id| (id.as_str(), 1, Source::Bytes(&b"[1,2,3]"[..])))
                .collect(),
        ];
        // Bodies of exactly one, two and three segments and a byte more (the table of contents
        // of one entry `x` and the document's framing are found by trying).
        for target in [1usize << 18, 2 << 18, (3 << 18) + 1] {
            for pad in 0..64 {
                let len = target - 20 - pad;
                let entries = vec![("x", 1, Source::Bytes(&blob[..len]))];
                let m = Metadata::default();
                let p = params(&m, Codec::MessagePack, Protect::Plain);
                let body = seal_sources(&p, &entries, 0, None).unwrap();
                let header = crate::format::parse_header(&body, None).unwrap();
                if header.sections().payload.end - header.sections().payload.start == target as u64
                {
                    cases.push(entries);
                    break;
                }
            }
        }
        assert_eq!(cases.len(), 7, "a body of each length was found");
        for entries in &cases {
            for codec in [Codec::MessagePack, Codec::Json] {
                for protect in [Protect::Plain, Protect::Encrypted(&key, [9; NONCE_LEN])] {
                    let p = params(&metadata, codec, protect);
                    let whole = seal_sources(&p, entries, 0, None).unwrap();
                    let mut streamed = Vec::new();
                    let len = seal_streamed(&p, entries, &mut streamed, u64::MAX, None).unwrap();
                    assert_eq!(len, streamed.len() as u64);
                    assert!(whole == streamed, "{} entries, {codec:?}", entries.len());
                    let trust = match protect {
                        Protect::Plain => Trust::plain(),
                        _ => Trust::encrypted(&key),
                    };
                    open(streamed, FileKind::Save, trust, u64::MAX, 2).unwrap();
                }
            }
        }
    }

    /// A Zstandard save written as it is encoded: the same bytes on any number of threads,
    /// opened (on one thread and on several) to the mementos a file sealed whole holds,
    /// with the body's length and the table in the first frame, stored, and the document's
    /// frames after it; small and large, plain and encrypted, with a table of 400 mementos. A
    /// table over [`MAX_RAW_TABLE`] is left to the file sealed whole, with nothing written.
    #[cfg(feature = "zstd")]
    #[test]
    fn a_zstd_file_written_as_it_is_encoded_opens_to_the_body_of_one_sealed_whole() {
        let key = Key::from_bytes([7; 32]);
        let metadata = Metadata::default();
        let ids: Vec<String> = (0..20_000).map(|i| format!("entity/{i:05}")).collect();
        let blob: Vec<u8> = (0..3_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let numbers = Numbers((0..300_000u64).map(|i| i * 7_919).collect());
        let many: Vec<(&str, u32, Source<'_>)> = ids
            .iter()
            .map(|id| (id.as_str(), 1, Source::Bytes(&b"[1,2,3]"[..])))
            .collect();
        let mut p = params(&metadata, Codec::MessagePack, Protect::Plain);
        p.compression = Compression::Zstd { level: 1 };
        let mut sink = Vec::new();
        match seal_streamed(&p, &many, &mut sink, u64::MAX, None) {
            Err(StreamError::SealWhole) => assert!(sink.is_empty()),
            other => panic!("{other:?}"),
        }
        // 400 entries of 34 bytes: under the cap.
        assert!(400 * (toc_entry_fixed(3) + 11) < MAX_RAW_TABLE);
        let cases: Vec<Vec<(&str, u32, Source<'_>)>> = vec![
            vec![("small", 1, Source::Bytes(b"\"one\""))],
            vec![
                ("a", 1, Source::Bytes(&blob[..1 << 18])),
                ("b", 1, Source::Encode(&numbers)),
                ("c", 3, Source::Bytes(&blob)),
            ],
            ids[..400]
                .iter()
                .map(|id| (id.as_str(), 1, Source::Bytes(&b"[1,2,3]"[..])))
                .collect(),
        ];
        for entries in &cases {
            for protect in [Protect::Plain, Protect::Encrypted(&key, [9; NONCE_LEN])] {
                let mut p = params(&metadata, Codec::MessagePack, protect);
                p.compression = Compression::Zstd { level: 1 };
                let trust = || match protect {
                    Protect::Plain => Trust::plain(),
                    _ => Trust::encrypted(&key),
                };
                let whole = seal_sources(&p, entries, 0, None).unwrap();
                let whole = open(whole, FileKind::Save, trust(), u64::MAX, 1).unwrap();
                let mut first = None;
                for threads in [1, 2, 4] {
                    p.threads = threads;
                    let mut streamed = Vec::new();
                    let len = seal_streamed(&p, entries, &mut streamed, u64::MAX, None).unwrap();
                    assert_eq!(len, streamed.len() as u64);
                    let first = first.get_or_insert_with(|| streamed.clone());
                    assert!(
                        *first == streamed,
                        "{} entries, {threads} threads",
                        entries.len()
                    );
                }
                let streamed = first.unwrap();
                let header = crate::format::parse_header(&streamed, None).unwrap();
                assert!(matches!(header.compression, Compression::Zstd { .. }));
                // The body: its length, then the table in a frame of raw blocks.
                let body_at = header.sections().payload.start as usize;
                let toc_len: usize = whole
                    .toc
                    .iter()
                    .map(|e| toc_entry_fixed(3) + e.id.len())
                    .sum();
                let frame = &streamed[body_at + 8..][..raw_frame_len(4 + toc_len)];
                if matches!(protect, Protect::Plain) {
                    let size = zstd::zstd_safe::get_frame_content_size(frame).unwrap();
                    assert_eq!(size, Some(4 + toc_len as u64));
                }
                for threads in [1, 2] {
                    let opened = open(streamed.clone(), FileKind::Save, trust(), u64::MAX, threads);
                    let opened = opened.unwrap();
                    assert_eq!(opened.toc.len(), whole.toc.len());
                    for (got, want) in opened.toc.iter().zip(&whole.toc) {
                        assert_eq!((&got.id, got.version), (&want.id, want.version));
                        assert!(opened.buf[got.range.clone()] == whole.buf[want.range.clone()]);
                    }
                }
            }
        }
    }

    /// Every single-bit flip of a small Zstandard save written as it is encoded is refused
    /// (the CRC, or a check before it). With the CRC made good again, an encrypted one is
    /// still refused, the compression bits and the table's raw frame being under the tag; a
    /// plain one, which no tag covers, opens or is a typed error, never a panic.
    #[cfg(feature = "zstd")]
    #[test]
    fn every_bit_flip_of_a_zstd_file_written_as_it_is_encoded_is_refused() {
        use crate::format::frame::tests::fix_crc;

        let key = Key::from_bytes([7; 32]);
        let metadata = Metadata::default();
        let entries = vec![
            ("player", 1, Source::Bytes(b"{\"hp\":9}")),
            ("world", 1, Source::Bytes(b"[1,2]")),
        ];
        for protect in [Protect::Plain, Protect::Encrypted(&key, [3; NONCE_LEN])] {
            let mut p = params(&metadata, Codec::Json, protect);
            p.compression = Compression::Zstd { level: 1 };
            let mut file = Vec::new();
            seal_streamed(&p, &entries, &mut file, u64::MAX, None).unwrap();
            let trust = || match protect {
                Protect::Plain => Trust::plain(),
                _ => Trust::encrypted(&key),
            };
            let opened = open(file.clone(), FileKind::Save, trust(), u64::MAX, 1).unwrap();
            assert_eq!(opened.toc.len(), 2);
            for bit in 0..file.len() * 8 {
                let mut flipped = file.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                // A manager's cap on what a body decompresses to (a flip in the recorded
                // length is refused under it, before anything is allocated).
                let refused = open(flipped.clone(), FileKind::Save, trust(), 1 << 20, 1);
                assert!(refused.is_err(), "bit {bit}");
                if bit / 8 >= file.len() - CRC_LEN {
                    // A flip in the CRC, made good again, is the file as it was.
                    continue;
                }
                fix_crc(&mut flipped);
                let opened = open(flipped, FileKind::Save, trust(), 1 << 20, 2);
                if matches!(protect, Protect::Encrypted(..)) {
                    assert!(opened.is_err(), "bit {bit}, the CRC made good");
                }
            }
        }
    }

    #[test]
    fn a_file_over_the_cap_stops_as_too_large_and_a_failing_sink_stops_the_encoder() {
        let key = Key::from_bytes([7; 32]);
        let metadata = Metadata::default();
        let numbers = Numbers((0..300_000u64).collect());
        let entries = vec![("n", 1, Source::Encode(&numbers))];
        let p = params(
            &metadata,
            Codec::MessagePack,
            Protect::Encrypted(&key, [1; NONCE_LEN]),
        );
        let mut sink = Vec::new();
        match seal_streamed(&p, &entries, &mut sink, 1 << 19, None) {
            Err(StreamError::TooLarge { size }) => assert!(size > 1 << 19),
            other => panic!("{other:?}"),
        }

        /// Refuses every append after the first.
        struct Full(usize);
        impl StreamSink for Full {
            fn append(&mut self, _: &[u8]) -> io::Result<()> {
                self.0 += 1;
                match self.0 {
                    1 => Ok(()),
                    _ => Err(io::Error::from(io::ErrorKind::StorageFull)),
                }
            }
            fn write_at(&mut self, _: u64, _: &[u8]) -> io::Result<()> {
                Ok(())
            }
        }
        match seal_streamed(&p, &entries, &mut Full(0), u64::MAX, None) {
            Err(StreamError::Sink(e)) => assert_eq!(e.kind(), io::ErrorKind::StorageFull),
            other => panic!("{other:?}"),
        }
    }
}
