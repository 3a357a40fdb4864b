//! A document compressed with Zstandard as it is encoded, 512 KiB at a time on the manager's
//! threads: [`Compressing`], the writer a Zstandard save's document is encoded into.
//!
//! The document is cut into pieces of [`PIECE`] bytes, at fixed lengths, and each piece is
//! compressed into a Zstandard frame of its own by whichever thread is free: the encoding
//! thread, when the pieces wait, and the helper threads it starts (`savegame-compress`, as many
//! as the manager's threads less the encoding one). The frames are then laid end to end, which
//! a decoder reads as one stream (RFC 8878, section 3). So the bytes are the same on any number
//! of threads, none of them waits on another's frame, and where no helper can be started the
//! encoding thread compresses every piece itself.
//!
//! Pieces cost next to nothing in size: 512 KiB is four of zstd's 128 KiB blocks, and level
//! 1's window (level 3 reaches back 2 MiB in a large input). (The bench's 100,000-entity world in
//! MessagePack, 6.1 MB: its encrypted file at level 1 was 2,260,174 bytes in one frame, and is
//! 2,259,328 in pieces of 512 KiB; at level 3 2,147,910 and 2,140,924.) Smaller pieces share
//! the work out more evenly at the end, when the last ones are compressed: 512 KiB takes about
//! 1.2 ms at level 1 on the 2-core test machine.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

use super::Compression;
use crate::error::{Error, Result};
use crate::threads;

/// The document's length past which it leaves the file's buffer and is compressed as it comes
/// (two pieces). A smaller one is compressed whole with the rest of the body (and left
/// uncompressed if that would not make it smaller): one piece would gain nothing from threads.
const STREAM_MIN: usize = 1 << 20;

/// The length of the pieces a document is cut into, each compressed into a frame of its own.
pub(super) const PIECE: usize = 512 << 10;

/// Which frame a piece becomes: the part of the body (the head, then the document) and its
/// number in that part. The frames are laid out in this order.
type Key = (u8, usize);

/// The part before the document: a delta's preamble and the table of contents, whose ranges
/// are known only once the document is written.
const HEAD: u8 = 0;
/// The document.
const DOCUMENT: u8 = 1;

/// A body's document compressed as it is encoded, so that a large save's compression costs
/// little more than its encoding (see the [module](self)).
///
/// The document is written into the file's buffer, after the table of contents, until it
/// passes [`STREAM_MIN`]; a smaller one is compressed whole with the rest of the body, as it
/// would be without this. A larger one leaves the buffer in pieces as it comes, and
/// [`finish_body`](Self::finish_body) puts the body together: its length, the head's frames,
/// then the document's.
///
/// Such a body is kept compressed even where it did not shrink: zstd stores a block it cannot
/// make smaller as it is, with a 3-byte header per 128 KiB block, and each frame adds a header
/// of about 9 bytes.
pub(crate) struct Compressing<'a, 'scope, 'env> {
    buf: &'a mut Vec<u8>,
    /// Where the document starts in `buf`.
    start: usize,
    /// The document's length so far.
    len: usize,
    level: i32,
    threads: usize,
    scope: &'scope Scope<'scope, 'env>,
    /// Once the document has passed [`STREAM_MIN`]: its pieces and the threads compressing
    /// them.
    stream: Option<Stream<'scope>>,
    /// Why compressing failed, if it did (an encoder reports its writer's error as its own).
    failed: Option<String>,
}

impl<'a, 'scope, 'env> Compressing<'a, 'scope, 'env> {
    /// A document written at the end of `buf`, compressed by `compression` on up to `threads`
    /// threads (this one among them, the others started in `scope`) once it passes
    /// [`STREAM_MIN`]; or `None` where that is not done: LZ4 (one block, compressed whole) or
    /// no zstd in this build.
    pub(crate) fn new(
        buf: &'a mut Vec<u8>,
        compression: Compression,
        threads: usize,
        scope: &'scope Scope<'scope, 'env>,
    ) -> Option<Self> {
        let Compression::Zstd { level } = compression else {
            return None;
        };
        if !cfg!(feature = "zstd") {
            return None;
        }
        Some(Compressing {
            start: buf.len(),
            buf,
            len: 0,
            level,
            threads: threads.max(1),
            scope,
            stream: None,
            failed: None,
        })
    }

    /// The document's length so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The buffer before the document (where the table of contents' ranges are written once
    /// the document is).
    pub(crate) fn before_document(&mut self) -> &mut [u8] {
        &mut self.buf[..self.start]
    }

    /// Why compressing failed, if it did.
    pub(crate) fn failure(&self) -> Option<io::Error> {
        self.failed.as_deref().map(io::Error::other)
    }

    /// Puts the body together once the document is written, `body_start` being where the body
    /// starts in the buffer (the part before it stays as it is). Returns `false` when the
    /// document stayed in the buffer: the body is then in the buffer uncompressed, for
    /// [`compress_into`](Compression::compress_into). Returns `true` when the buffer now
    /// holds the compressed body in place of the uncompressed one.
    pub(crate) fn finish_body(mut self, body_start: usize) -> Result<bool> {
        if let Some(why) = self.failed.take() {
            return Err(failed_to_compress(io::Error::other(why)));
        }
        let Some(mut stream) = self.stream.take() else {
            return Ok(false);
        };
        stream.flush_piece().map_err(failed_to_compress)?;
        for (n, piece) in self.buf[body_start..self.start].chunks(PIECE).enumerate() {
            let mut owned = stream.spare();
            owned.extend_from_slice(piece);
            stream.hand((HEAD, n), owned).map_err(failed_to_compress)?;
        }
        let frames = stream.finish().map_err(failed_to_compress)?;
        // The body takes the place of the uncompressed one in the file's buffer, which kept
        // its room (the size of the slot's last file) for it.
        let body_len = self.start - body_start + self.len;
        let framed: usize = frames.values().map(Vec::len).sum();
        self.buf.truncate(body_start);
        self.buf.reserve_exact(8 + framed + tail_room(8 + framed));
        self.buf.extend_from_slice(&(body_len as u64).to_le_bytes());
        for frame in frames.values() {
            self.buf.extend_from_slice(frame);
        }
        Ok(true)
    }

    /// Starts the stream with the document so far, taken out of the buffer (which keeps its
    /// room, for the compressed body), and the helper threads that compress its pieces.
    fn start_stream(&mut self) -> io::Result<()> {
        let shared = Arc::new(Shared::default());
        let mut workers = Vec::new();
        for _ in 1..self.threads {
            let theirs = Arc::clone(&shared);
            let level = self.level;
            let started = threads::scoped(self.scope, "savegame-compress", move || {
                let mut frames = Frames::new(level);
                while let Some((key, piece)) = theirs.next() {
                    let frame = frames.compress(&piece);
                    theirs.done(key, frame, piece);
                }
            });
            // One that cannot be started leaves its share to the threads that were.
            workers.extend(started);
        }
        let mut stream = Stream {
            shared,
            workers,
            own: Frames::new(self.level),
            piece: Vec::with_capacity(PIECE),
            pieces: 0,
        };
        stream.write(&self.buf[self.start..])?;
        self.buf.truncate(self.start);
        self.stream = Some(stream);
        Ok(())
    }
}

impl io::Write for Compressing<'_, '_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = match &mut self.stream {
            Some(stream) => stream.write(bytes),
            None => {
                self.buf.extend_from_slice(bytes);
                if self.buf.len() - self.start > STREAM_MIN {
                    self.start_stream()
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = written {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        self.len += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A document on its way out in pieces: the piece being filled, and the board the helper
/// threads take pieces from.
struct Stream<'scope> {
    shared: Arc<Shared>,
    workers: Vec<ScopedJoinHandle<'scope, ()>>,
    /// The encoding thread's own compressor, for the pieces it compresses itself.
    own: Frames,
    piece: Vec<u8>,
    /// How many of the document's pieces were handed over.
    pieces: usize,
}

impl Stream<'_> {
    /// Adds `bytes` to the document, handing over each piece as it fills.
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = PIECE - self.piece.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.piece.extend_from_slice(now);
            bytes = later;
            if self.piece.len() == PIECE {
                self.flush_piece()?;
            }
        }
        Ok(())
    }

    /// Hands over the piece being filled, if it has anything in it.
    fn flush_piece(&mut self) -> io::Result<()> {
        if self.piece.is_empty() {
            return Ok(());
        }
        let next = self.spare();
        let piece = std::mem::replace(&mut self.piece, next);
        let key = (DOCUMENT, self.pieces);
        self.pieces += 1;
        self.hand(key, piece)
    }

    /// An empty buffer for a piece: one a compressed piece left, or a new one.
    fn spare(&mut self) -> Vec<u8> {
        self.shared
            .board()
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(PIECE))
    }

    /// Puts a piece on the board for the helpers. This thread compresses it itself when there
    /// is no helper, and compresses the oldest waiting piece when more wait than there are
    /// helpers, so that the pieces held in memory stay few however fast the encoder goes.
    fn hand(&mut self, key: Key, piece: Vec<u8>) -> io::Result<()> {
        let job = if self.workers.is_empty() {
            Some((key, piece))
        } else {
            let mut board = self.shared.board();
            if let Some(why) = &board.failed {
                return Err(io::Error::other(why.clone()));
            }
            board.todo.push_back((key, piece));
            self.shared.changed.notify_one();
            if board.todo.len() > self.workers.len() {
                board.todo.pop_front()
            } else {
                None
            }
        };
        if let Some((key, piece)) = job {
            // This thread's own failure stops the document at once.
            let frame = self.own.compress(&piece)?;
            self.shared.done(key, Ok(frame), piece);
        }
        Ok(())
    }

    /// Closes the board, compresses what is left on it beside the helpers, waits for them,
    /// and returns every frame by its key.
    fn finish(mut self) -> io::Result<BTreeMap<Key, Vec<u8>>> {
        self.shared.close();
        while let Some((key, piece)) = self.shared.take() {
            let frame = self.own.compress(&piece);
            self.shared.done(key, frame, piece);
        }
        // Every helper is joined before any error is given, so that none is left to the
        // scope's own join.
        let mut panicked = false;
        for worker in std::mem::take(&mut self.workers) {
            panicked |= worker.join().is_err();
        }
        if panicked {
            return Err(io::Error::other("a compressing thread panicked"));
        }
        let mut board = self.shared.board();
        if let Some(why) = board.failed.take() {
            return Err(io::Error::other(why));
        }
        Ok(std::mem::take(&mut board.frames))
    }
}

impl Drop for Stream<'_> {
    /// A document abandoned part way (its encoding failed): the helpers drop what waits and
    /// end, so that the scope around them can end too.
    fn drop(&mut self) {
        let mut board = self.shared.board();
        board.todo.clear();
        board.closed = true;
        self.shared.changed.notify_all();
    }
}

/// The pieces waiting for a thread, and the frames made of them.
#[derive(Default)]
struct Board {
    todo: VecDeque<(Key, Vec<u8>)>,
    frames: BTreeMap<Key, Vec<u8>>,
    /// Buffers of pieces already compressed, for the next pieces.
    spare: Vec<Vec<u8>>,
    /// No more pieces will come: a helper that finds none waiting ends.
    closed: bool,
    /// Why a piece could not be compressed, if one could not (the save then fails).
    failed: Option<String>,
}

/// The board, shared by the encoding thread and its helpers.
#[derive(Default)]
struct Shared {
    board: Mutex<Board>,
    /// Signalled when a piece is put on the board, and when it closes.
    changed: Condvar,
}

impl Shared {
    fn board(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A helper's next piece: waits for one; `None` once the board is closed and empty.
    fn next(&self) -> Option<(Key, Vec<u8>)> {
        let mut board = self.board();
        loop {
            if let Some(job) = board.todo.pop_front() {
                return Some(job);
            }
            if board.closed {
                return None;
            }
            board = self
                .changed
                .wait(board)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A waiting piece, if there is one, without waiting.
    fn take(&self) -> Option<(Key, Vec<u8>)> {
        self.board().todo.pop_front()
    }

    /// Files the frame of the piece `key` (or why it failed), and keeps its buffer.
    fn done(&self, key: Key, frame: io::Result<Vec<u8>>, mut piece: Vec<u8>) {
        piece.clear();
        let mut board = self.board();
        match frame {
            Ok(frame) => {
                board.frames.insert(key, frame);
            }
            Err(e) => {
                board.failed.get_or_insert_with(|| e.to_string());
            }
        }
        board.spare.push(piece);
    }

    /// No more pieces will come.
    fn close(&self) {
        self.board().closed = true;
        self.changed.notify_all();
    }
}

/// One thread's Zstandard compressor, made at its first piece and kept for the rest.
struct Frames {
    level: i32,
    #[cfg(feature = "zstd")]
    compressor: Option<zstd::bulk::Compressor<'static>>,
}

impl Frames {
    fn new(level: i32) -> Self {
        Frames {
            level,
            #[cfg(feature = "zstd")]
            compressor: None,
        }
    }

    /// `piece` as one Zstandard frame, compressed into room for the largest frame it can make
    /// and then given back the room it did not use, so that the frames held until the body is
    /// put together take what they compressed to. (glibc's allocator shrinks a block in place:
    /// there the frame is not copied to be kept.)
    #[cfg(feature = "zstd")]
    fn compress(&mut self, piece: &[u8]) -> io::Result<Vec<u8>> {
        let compressor = match &mut self.compressor {
            Some(compressor) => compressor,
            None => self
                .compressor
                .insert(zstd::bulk::Compressor::new(self.level)?),
        };
        let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(piece.len()));
        compressor.compress_to_buffer(piece, &mut frame)?;
        frame.shrink_to_fit();
        Ok(frame)
    }

    /// Without zstd no piece is made ([`Compressing::new`] makes no stream).
    #[cfg(not(feature = "zstd"))]
    fn compress(&mut self, _: &[u8]) -> io::Result<Vec<u8>> {
        Err(io::Error::other(format!(
            "zstd (level {}) is not in this build",
            self.level
        )))
    }
}

/// Room for what a sealed file appends after a body of `len` bytes, so that it is appended
/// without a reallocation: a 16-byte tag per 256 KiB segment or one 32-byte MAC, and the CRC.
fn tail_room(len: usize) -> usize {
    16 * (len / (1 << 18) + 1) + 32 + 4
}

fn failed_to_compress(e: io::Error) -> Error {
    Error::Config {
        reason: format!("zstd compression failed: {e}"),
    }
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
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

    /// Neither LZ4 nor no compression is compressed as it is encoded.
    #[test]
    fn only_zstd_is_compressed_as_it_is_encoded() {
        let mut buf = Vec::new();
        std::thread::scope(|scope| {
            assert!(Compressing::new(&mut buf, Compression::None, 4, scope).is_none());
            assert!(Compressing::new(&mut buf, Compression::Lz4, 4, scope).is_none());
        });
    }
}
