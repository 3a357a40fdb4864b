//! A document compressed with Zstandard as it is encoded, 512 KiB at a time on the manager's
//! threads: [`Compressing`], the writer a Zstandard body sealed whole is encoded into, and
//! [`InPieces`], the one of a save written as it is encoded, which passes each frame on in
//! order as it is made.
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
    level: i32,
    threads: usize,
    scope: &'scope Scope<'scope, 'env>,
    /// Once the document has passed [`STREAM_MIN`]: its pieces and the threads compressing
    /// them.
    stream: Option<Stream<'scope>>,
    tally: Tally,
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
        let level = zstd_level(compression)?;
        Some(Compressing {
            start: buf.len(),
            buf,
            level,
            threads: threads.max(1),
            scope,
            stream: None,
            tally: Tally::default(),
        })
    }

    /// The document's length so far.
    pub(crate) fn len(&self) -> usize {
        self.tally.len
    }

    /// The buffer before the document (where the table of contents' ranges are written once
    /// the document is).
    pub(crate) fn before_document(&mut self) -> &mut [u8] {
        &mut self.buf[..self.start]
    }

    /// Why compressing failed, if it did.
    pub(crate) fn failure(&self) -> Option<io::Error> {
        self.tally.failure()
    }

    /// Puts the body together once the document is written, `body_start` being where the body
    /// starts in the buffer (the part before it stays as it is). Returns `false` when the
    /// document stayed in the buffer: the body is then in the buffer uncompressed, for
    /// [`compress_into`](Compression::compress_into). Returns `true` when the buffer now
    /// holds the compressed body in place of the uncompressed one.
    pub(crate) fn finish_body(mut self, body_start: usize) -> Result<bool> {
        self.tally.check().map_err(failed_to_compress)?;
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
        let body_len = self.start - body_start + self.tally.len;
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
        let mut stream = Stream::start(self.level, self.threads, self.scope, false);
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
        self.tally.count(written, bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether a document compressed with `compression` can be compressed in pieces as it is
/// encoded and passed on in order ([`InPieces`]): Zstandard, in a build with it.
pub(crate) fn in_pieces(compression: Compression) -> bool {
    zstd_level(compression).is_some()
}

/// The level of a Zstandard `compression` in a build with zstd; `None` for anything else.
fn zstd_level(compression: Compression) -> Option<i32> {
    match compression {
        Compression::Zstd { level } if cfg!(feature = "zstd") => Some(level),
        _ => None,
    }
}

/// What a writer of a document took so far, and why it stopped, if it did: once one write
/// failed, every later one fails for the same reason (an encoder reports its writer's error
/// as its own).
#[derive(Default)]
struct Tally {
    len: usize,
    failed: Option<String>,
}

impl Tally {
    /// Counts a write of `len` bytes that did `written`.
    fn count(&mut self, written: io::Result<()>, len: usize) -> io::Result<usize> {
        if let Err(e) = written {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        self.len += len;
        Ok(len)
    }

    fn failure(&self) -> Option<io::Error> {
        self.failed.as_deref().map(io::Error::other)
    }

    /// `Ok` unless a write failed.
    fn check(&self) -> io::Result<()> {
        self.failure().map_or(Ok(()), Err)
    }
}

/// A document compressed in pieces as it is encoded, each piece's frame passed on to `out` in
/// order as soon as it and every frame before it are made: how a save written as it is
/// encoded (`format::frame::stream`) compresses, so that its frames are sealed and written
/// while later pieces are still being encoded and compressed. The frames are those
/// [`Compressing`] makes of the same document; only a few wait here at any time (those made
/// ahead of an earlier one still being compressed).
pub(crate) struct InPieces<'scope, W> {
    out: W,
    stream: Stream<'scope>,
    /// The number of the next frame to pass on.
    next: usize,
    tally: Tally,
}

impl<'scope, W: io::Write> InPieces<'scope, W> {
    /// A document passed on to `out` compressed by `compression` on up to `threads` threads
    /// (this one among them, the others started in `scope`); `None` for anything but zstd in a
    /// build with it.
    pub(crate) fn new<'env>(
        out: W,
        compression: Compression,
        threads: usize,
        scope: &'scope Scope<'scope, 'env>,
    ) -> Option<Self> {
        let level = zstd_level(compression)?;
        Some(InPieces {
            out,
            stream: Stream::start(level, threads, scope, true),
            next: 0,
            tally: Tally::default(),
        })
    }

    /// The document's length so far.
    pub(crate) fn len(&self) -> usize {
        self.tally.len
    }

    /// Where the frames go.
    pub(crate) fn out(&self) -> &W {
        &self.out
    }

    /// Why compressing or passing a frame on failed, if it did.
    pub(crate) fn failure(&self) -> Option<io::Error> {
        self.tally.failure()
    }

    /// Compresses the last piece, waits for the helpers and passes every frame left on;
    /// returns where they went.
    pub(crate) fn finish(self) -> io::Result<W> {
        self.tally.check()?;
        let InPieces {
            mut out,
            mut stream,
            next,
            ..
        } = self;
        stream.flush_piece()?;
        let pieces = stream.pieces;
        let frames = stream.finish()?;
        // Those before `next` were passed on; the rest are every later piece's, in order.
        if !frames.keys().map(|&(_, n)| n).eq(next..pieces) {
            return Err(io::Error::other("a piece of the document has no frame"));
        }
        for frame in frames.values() {
            out.write_all(frame)?;
        }
        Ok(out)
    }

    /// Passes on the frames that are next in order, giving each one's buffer back as it
    /// takes the next (one lock a frame).
    fn pass_ready(&mut self) -> io::Result<()> {
        let mut passed: Option<Vec<u8>> = None;
        loop {
            let frame = {
                let mut board = self.stream.shared.board();
                board.frame_spare.extend(passed.take());
                board.frames.remove(&(DOCUMENT, self.next))
            };
            let Some(frame) = frame else {
                return Ok(());
            };
            self.out.write_all(&frame)?;
            self.next += 1;
            passed = Some(frame);
        }
    }
}

impl<W: io::Write> io::Write for InPieces<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.tally.check()?;
        let written = self.stream.write(bytes).and_then(|()| self.pass_ready());
        self.tally.count(written, bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The largest block of a Zstandard frame (RFC 8878, 3.1.1.2.4).
const RAW_BLOCK: usize = 128 << 10;

/// The length of [`raw_frame`] of `len` bytes.
pub(crate) fn raw_frame_len(len: usize) -> usize {
    // Magic, descriptor, an 8-byte content size; then a 3-byte header per block.
    4 + 1 + 8 + 3 * len.div_ceil(RAW_BLOCK).max(1) + len
}

/// Appends `bytes` to `out` as one Zstandard frame of raw (stored) blocks, which records its
/// content size (RFC 8878: a single-segment frame, 8-byte content size, no checksum). Its
/// length depends on nothing but `bytes.len()` ([`raw_frame_len`]), so a writer can keep its
/// place before it knows what goes in it.
pub(crate) fn raw_frame(bytes: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    // Frame_Content_Size_flag 3 (8 bytes), Single_Segment_flag; no checksum, no dictionary.
    out.push(0b1110_0000);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    let count = bytes.len().div_ceil(RAW_BLOCK).max(1);
    let mut blocks = bytes.chunks(RAW_BLOCK);
    for n in 0..count {
        let block = blocks.next().unwrap_or_default();
        // Last_Block, Block_Type 0 (raw), Block_Size: 24 bits, little-endian.
        let header = (block.len() as u32) << 3 | u32::from(n + 1 == count);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(block);
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

impl<'scope> Stream<'scope> {
    /// A stream compressed at `level` on up to `threads` threads: this one, and the helpers it
    /// starts in `scope` (where one cannot be started, the others do its share).
    /// `recycles`: the frames are passed on as they come, and their buffers come back for the
    /// next frames ([`InPieces`]); otherwise each is kept at its size until the end.
    fn start<'env>(
        level: i32,
        threads: usize,
        scope: &'scope Scope<'scope, 'env>,
        recycles: bool,
    ) -> Self {
        let shared = Arc::new(Shared {
            recycles,
            ..Shared::default()
        });
        let mut workers = Vec::new();
        for _ in 1..threads.max(1) {
            let theirs = Arc::clone(&shared);
            let started = threads::scoped(scope, "savegame-compress", move || {
                let mut frames = Frames::new(level);
                while let Some((key, piece)) = theirs.next() {
                    let frame = frames.compress(&piece, theirs.room());
                    theirs.done(key, frame, piece);
                }
            });
            workers.extend(started);
        }
        Stream {
            shared,
            workers,
            own: Frames::new(level),
            piece: Vec::with_capacity(PIECE),
            pieces: 0,
        }
    }

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
            let frame = self.own.compress(&piece, self.shared.room())?;
            self.shared.done(key, Ok(frame), piece);
        }
        Ok(())
    }

    /// Closes the board, compresses what is left on it beside the helpers, waits for them,
    /// and returns every frame by its key.
    fn finish(mut self) -> io::Result<BTreeMap<Key, Vec<u8>>> {
        self.shared.close();
        while let Some((key, piece)) = self.shared.take() {
            let frame = self.own.compress(&piece, self.shared.room());
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
    /// A document abandoned part way (its encoding or its writing failed): the helpers drop
    /// what waits and end, and are joined here, so that one that panicked cannot make the
    /// scope around them panic where the save returns its error.
    fn drop(&mut self) {
        {
            let mut board = self.shared.board();
            board.todo.clear();
            board.closed = true;
            self.shared.changed.notify_all();
        }
        for worker in std::mem::take(&mut self.workers) {
            // Its panic, if it had one, changes nothing: the document is abandoned.
            let _ = worker.join();
        }
    }
}

/// The pieces waiting for a thread, and the frames made of them.
#[derive(Default)]
struct Board {
    todo: VecDeque<(Key, Vec<u8>)>,
    frames: BTreeMap<Key, Vec<u8>>,
    /// Buffers of pieces already compressed, for the next pieces.
    spare: Vec<Vec<u8>>,
    /// Buffers of frames passed on, for the next frames (where the frames are recycled).
    frame_spare: Vec<Vec<u8>>,
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
    /// Whether frames' buffers come back once passed on (see [`Stream::start`]).
    recycles: bool,
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

    /// A buffer to compress a frame into: one a frame passed on left, or a new one.
    fn room(&self) -> Vec<u8> {
        if !self.recycles {
            return Vec::new();
        }
        self.board().frame_spare.pop().unwrap_or_default()
    }

    /// Files the frame of the piece `key` (or why it failed), and keeps its buffer. A frame kept
    /// until the end gives back the room it did not use, so that the frames held take what
    /// they compressed to (glibc's allocator shrinks a block in place, without a copy).
    fn done(&self, key: Key, mut frame: io::Result<Vec<u8>>, mut piece: Vec<u8>) {
        piece.clear();
        if let (false, Ok(frame)) = (self.recycles, &mut frame) {
            frame.shrink_to_fit();
        }
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

    /// `piece` as one Zstandard frame, compressed into `frame` (emptied first, and grown to
    /// room for the largest frame the piece can make).
    #[cfg(feature = "zstd")]
    fn compress(&mut self, piece: &[u8], mut frame: Vec<u8>) -> io::Result<Vec<u8>> {
        let compressor = match &mut self.compressor {
            Some(compressor) => compressor,
            None => self
                .compressor
                .insert(zstd::bulk::Compressor::new(self.level)?),
        };
        frame.clear();
        frame.reserve(zstd::zstd_safe::compress_bound(piece.len()));
        compressor.compress_to_buffer(piece, &mut frame)?;
        Ok(frame)
    }

    /// Without zstd no piece is made ([`Compressing::new`] makes no stream).
    #[cfg(not(feature = "zstd"))]
    fn compress(&mut self, _: &[u8], _: Vec<u8>) -> io::Result<Vec<u8>> {
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
mod tests;
