//! The tests of [`Compressing`] and [`InPieces`], and of the raw frame.

use std::io::Write;

use super::*;
use crate::compression::sample;
use crate::threads::refusal::{refusing, refusing_only};

const ZSTD: Compression = Compression::Zstd { level: 1 };

/// `buf` holds a header of 5 bytes, then a body: a head of `head` bytes and the document,
/// written in uneven pieces through [`Compressing`] on `threads` threads. Returns the
/// buffer after `finish_body`, and whether the body was compressed as it was encoded.
fn write(head: &[u8], doc: &[u8], threads: usize) -> (Vec<u8>, bool) {
    let mut buf = b"HEAD:".to_vec();
    buf.extend_from_slice(head);
    std::thread::scope(|scope| {
        let mut out = Compressing::new(&mut buf, ZSTD, threads, scope).unwrap();
        let mut rest = doc;
        for size in [7, 100_000, 1 << 20, 3 << 20].into_iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at(size.min(rest.len()));
            out.write_all(now).unwrap();
            rest = later;
        }
        assert_eq!(out.len(), doc.len());
        let compressed = out.finish_body(5).unwrap();
        (buf, compressed)
    })
}

/// The body a compressed buffer from [`write`] holds.
fn body(buf: &[u8]) -> Vec<u8> {
    assert_eq!(&buf[..5], b"HEAD:");
    ZSTD.decompress(&buf[5..], 1 << 30, 1).unwrap()
}

#[test]
fn a_large_document_is_the_same_bytes_on_any_number_of_threads_and_reads_back() {
    // Over the streaming length, not a whole number of pieces, and a head of more than
    // one piece (a delta's preamble and a large table of contents).
    let doc = sample(5 * PIECE + 12_345);
    let head = sample(PIECE + 99);
    let (one, compressed) = write(&head, &doc, 1);
    assert!(compressed);
    assert!(one.len() < (head.len() + doc.len()) / 2, "{}", one.len());
    let mut whole = head.clone();
    whole.extend_from_slice(&doc);
    assert_eq!(body(&one), whole);
    for threads in [2, 4, 16] {
        let (many, compressed) = write(&head, &doc, threads);
        assert!(compressed);
        assert_eq!(many, one, "on {threads} threads");
    }
}

#[test]
fn with_no_helper_to_be_had_the_encoding_thread_compresses_every_piece() {
    let doc = sample(3 * PIECE + 1);
    let (with, _) = write(b"toc", &doc, 4);
    let ((without, compressed), refused) = refusing(|| write(b"toc", &doc, 4));
    assert!(compressed);
    assert!(refused.contains("savegame-compress"), "{refused:?}");
    assert_eq!(without, with);
    // Some refused and some not: the same bytes.
    let ((some, _), asked) = refusing_only(&["savegame-compress"], || write(b"toc", &doc, 1));
    assert!(
        !asked.contains("savegame-compress"),
        "one thread asks for no helper"
    );
    assert_eq!(some, with);
}

#[test]
fn a_small_document_stays_in_the_buffer_to_be_compressed_whole() {
    let doc = sample(STREAM_MIN);
    let (buf, compressed) = write(b"toc", &doc, 4);
    assert!(!compressed);
    assert_eq!(&buf[..8], b"HEAD:toc");
    assert_eq!(&buf[8..], &doc[..]);
}

/// A document abandoned part way, its encoding failed: the helpers end and the scope
/// around them returns (a helper left waiting would hang this test).
#[test]
fn an_abandoned_document_lets_its_helpers_end() {
    let doc = sample(4 * PIECE);
    let mut buf = Vec::new();
    std::thread::scope(|scope| {
        let mut out = Compressing::new(&mut buf, ZSTD, 4, scope).unwrap();
        out.write_all(&doc).unwrap();
        drop(out);
    });
}

/// A frame of raw blocks is as long as it says, records its size (so a load may split the
/// frames around it) and decompresses to its bytes, alone or before a compressed frame.
#[test]
fn a_raw_frame_has_its_length_and_decompresses_to_its_bytes() {
    for len in [
        0,
        1,
        4 + 26,
        RAW_BLOCK - 1,
        RAW_BLOCK,
        RAW_BLOCK + 1,
        3 * RAW_BLOCK + 7,
    ] {
        let bytes = sample(len);
        let mut frame = Vec::new();
        raw_frame(&bytes, &mut frame);
        assert_eq!(frame.len(), raw_frame_len(len), "{len}");
        let size = zstd::zstd_safe::get_frame_content_size(&frame).unwrap();
        assert_eq!(size, Some(len as u64));
        assert_eq!(
            zstd::zstd_safe::find_frame_compressed_size(&frame),
            Ok(frame.len())
        );
        let after = sample(PIECE + 3);
        frame.extend_from_slice(&zstd::bulk::compress(&after, 1).unwrap());
        let mut whole = bytes.clone();
        whole.extend_from_slice(&after);
        assert_eq!(
            zstd::stream::decode_all(&frame[..]).unwrap(),
            whole,
            "{len}"
        );
    }
}

/// The frames passed on in order are the document's frames, the same bytes on any number
/// of threads, and a writer that fails stops the document with its error.
#[test]
fn frames_passed_on_in_order_make_the_document() {
    let doc = sample(5 * PIECE + 999);
    let pass = |threads| {
        std::thread::scope(|scope| {
            let mut out = InPieces::new(Vec::new(), ZSTD, threads, scope).unwrap();
            for piece in doc.chunks(100_003) {
                out.write_all(piece).unwrap();
            }
            assert_eq!(out.len(), doc.len());
            out.finish().unwrap()
        })
    };
    let one = pass(1);
    assert_eq!(zstd::stream::decode_all(&one[..]).unwrap(), doc);
    for threads in [2, 4] {
        assert!(pass(threads) == one, "on {threads} threads");
    }

    /// Takes that many bytes, then fails.
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if bytes.len() > self.0 {
                return Err(io::Error::from(io::ErrorKind::StorageFull));
            }
            self.0 -= bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    std::thread::scope(|scope| {
        let mut out = InPieces::new(Full(1_000), ZSTD, 2, scope).unwrap();
        let written = doc
            .chunks(1 << 16)
            .try_for_each(|piece| out.write_all(piece));
        assert_eq!(written.unwrap_err().kind(), io::ErrorKind::StorageFull);
        assert!(out.failure().is_some());
        assert!(out.write_all(b"more").is_err() && out.finish().is_err());
    });
}

/// Neither LZ4 nor no compression is compressed as it is encoded.
#[test]
fn only_zstd_is_compressed_as_it_is_encoded() {
    let mut buf = Vec::new();
    std::thread::scope(|scope| {
        assert!(Compressing::new(&mut buf, Compression::None, 4, scope).is_none());
        assert!(Compressing::new(&mut buf, Compression::Lz4, 4, scope).is_none());
        assert!(InPieces::new(Vec::new(), Compression::Lz4, 4, scope).is_none());
        assert!(!in_pieces(Compression::Lz4) && in_pieces(ZSTD));
    });
}
