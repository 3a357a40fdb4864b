//! Compression of a file's body before it is sealed: what [`Compression`] a manager or a tool
//! writes with, and the bytes of a compressed body (see the byte table in
//! [`format`](crate::format) and `docs/format.md`).
//!
//! Two algorithms, each behind a feature: [`Compression::Lz4`] (feature `lz4`, lz4_flex: pure
//! Rust, so it builds wherever the crate does, the web included) and [`Compression::Zstd`]
//! (feature `zstd`, the reference C library: a better ratio, a native C toolchain needed).
//!
//! The body (a delta's preamble, the table of contents and the document) is compressed, then
//! encrypted or authenticated: the cipher and the MAC see the compressed bytes, and a load
//! checks the tag before it decompresses anything. A body that compression would not make
//! smaller is written uncompressed (its flags say so), so a compressing manager never writes a
//! file larger than an uncompressed one by more than nothing; except a body of more than 2 MiB
//! that Zstandard compresses as it is encoded, on more than one thread: it
//! stays compressed, and a part that does not shrink is stored as it is, 3 bytes longer per
//! 128 KiB.
//!
//! # Limits on decompression
//!
//! A compressed body records its decompressed length first. A length over the cap (the
//! manager's [`max_file_size`](crate::ManagerBuilder::max_file_size)) is refused as
//! [`Error::DecompressedTooLarge`] before anything is allocated for it, and a stream that
//! decompresses to any other length than it recorded is [`Error::Malformed`]: a compression
//! bomb is a typed error, never an allocation of gigabytes.

use std::{fmt, io};

use crate::error::{Error, Result};

/// The smallest body Zstandard compresses on more than one thread; a document that grows past
/// it is compressed as it is encoded ([`Compressing`]).
const ZSTD_PARALLEL_MIN: usize = 2 << 20;

/// The zstd level [`Compression::zstd`] picks: zstd's own default, a good speed for its ratio.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// How a file's body is compressed before it is sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Not compressed: what every file of format version 1, and every file written without a
    /// compression setting, is.
    #[default]
    None,
    /// LZ4 (block format, lz4_flex; feature `lz4`): fast to write and very fast to read; about
    /// a third of the size of a MessagePack world.
    Lz4,
    /// Zstandard (feature `zstd`) at `level` (1 to 22, or negative for zstd's fast levels;
    /// 0 is zstd's default). A file records that it is Zstandard, not the level: a header
    /// read back says `Zstd { level: 0 }`.
    Zstd {
        /// The compression level: higher is smaller and slower to write; reading is as fast
        /// at every level.
        level: i32,
    },
}

impl Compression {
    /// Zstandard at [`DEFAULT_ZSTD_LEVEL`].
    #[must_use]
    pub const fn zstd() -> Self {
        Compression::Zstd {
            level: DEFAULT_ZSTD_LEVEL,
        }
    }

    /// The name tools show: `none`, `lz4`, `zstd`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd { .. } => "zstd",
        }
    }

    /// The Cargo feature that provides this compression (`None` for [`Compression::None`]).
    #[must_use]
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Lz4 => Some("lz4"),
            Compression::Zstd { .. } => Some("zstd"),
        }
    }

    /// Does this build have the feature this compression needs (and, for Zstandard, is the
    /// level one zstd has)?
    ///
    /// # Errors
    /// [`Error::FeatureDisabled`] when the feature is missing; [`Error::Config`] for a zstd
    /// level out of zstd's range.
    pub fn check(self) -> Result<()> {
        match self {
            Compression::None => Ok(()),
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Ok(()),
            #[cfg(feature = "zstd")]
            Compression::Zstd { level } => {
                let range = zstd::compression_level_range();
                if level == 0 || range.contains(&level) {
                    Ok(())
                } else {
                    Err(Error::Config {
                        reason: format!(
                            "zstd level {level} is outside zstd's {}..={}",
                            range.start(),
                            range.end()
                        ),
                    })
                }
            }
            #[allow(unreachable_patterns)]
            other => Err(disabled(other)),
        }
    }

    /// The algorithm's value in flag bits 2–3 (0 = none, 1 = LZ4, 2 = Zstandard).
    pub(crate) const fn id(self) -> u16 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd { .. } => 2,
        }
    }

    /// The compression with id `id` (flag bits 2–3); `None` for 3, which no version defines.
    pub(crate) const fn from_id(id: u16) -> Option<Self> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd { level: 0 }),
            _ => None,
        }
    }

    /// Appends `body`, compressed, to `out`: its length as a `u64`, then the stream. Returns
    /// `false`, with `out` as it was, when that would not be smaller than `body`.
    /// Zstandard compresses a large body on up to `threads` threads (zstd's own workers, each
    /// a job of the one frame); LZ4 on one.
    pub(crate) fn compress_into(
        self,
        body: &[u8],
        out: &mut Vec<u8>,
        threads: usize,
    ) -> Result<bool> {
        if self == Compression::None {
            return Ok(false);
        }
        let start = out.len();
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let written = match self.compress_stream(body, out, threads) {
            Ok(written) => written,
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        };
        if 8 + written >= body.len() {
            out.truncate(start);
            return Ok(false);
        }
        out.truncate(start + 8 + written);
        Ok(true)
    }

    /// Appends `body` compressed to `out` (zeroed room first, then the stream); the stream's
    /// length.
    // Without a compression feature `out` only reaches the refusal, and clippy would have a
    // slice; with one it grows.
    #[cfg_attr(not(any(feature = "lz4", feature = "zstd")), allow(clippy::ptr_arg))]
    fn compress_stream(self, body: &[u8], out: &mut Vec<u8>, threads: usize) -> Result<usize> {
        let stream = out.len();
        match self {
            #[cfg(feature = "lz4")]
            Compression::Lz4 => {
                out.resize(
                    stream + lz4_flex::block::get_maximum_output_size(body.len()),
                    0,
                );
                lz4_flex::block::compress_into(body, &mut out[stream..]).map_err(|e| {
                    Error::Config {
                        reason: format!("LZ4 compression failed: {e}"),
                    }
                })
            }
            #[cfg(feature = "zstd")]
            Compression::Zstd { level } => {
                out.resize(stream + zstd::zstd_safe::compress_bound(body.len()), 0);
                let failed = |e: std::io::Error| Error::Config {
                    reason: format!("zstd compression failed: {e}"),
                };
                let mut compressor = zstd::bulk::Compressor::new(level).map_err(failed)?;
                // zstd cuts a frame into jobs of a few MiB for its workers: a smaller body
                // is one job, and a worker would only wait for it.
                if threads > 1 && body.len() >= ZSTD_PARALLEL_MIN {
                    let workers = u32::try_from(threads).unwrap_or(u32::MAX);
                    compressor
                        .set_parameter(zstd::zstd_safe::CParameter::NbWorkers(workers))
                        .map_err(failed)?;
                }
                compressor
                    .compress_to_buffer(body, &mut out[stream..])
                    .map_err(failed)
            }
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (body, stream, threads);
                Err(disabled(self))
            }
        }
    }

    /// Decompresses a compressed body (its recorded length, then the stream), refusing a
    /// recorded length over `limit` before allocating anything.
    pub(crate) fn decompress(self, compressed: &[u8], limit: u64) -> Result<Vec<u8>> {
        if compressed.len() < 8 {
            return Err(Error::malformed(
                "compressed body shorter than its length field",
            ));
        }
        let (len, stream) = compressed.split_at(8);
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(len);
        let size = u64::from_le_bytes(len_bytes);
        if size > limit {
            return Err(Error::DecompressedTooLarge { size, limit });
        }
        // No LZ4 byte stands for more than 255 bytes of output (a match-length byte), so a
        // smaller stream cannot be what it claims: refused before the allocation too.
        if self == Compression::Lz4 && size > (stream.len() as u64).saturating_mul(256) + 64 {
            return Err(Error::malformed(format!(
                "a {}-byte LZ4 stream cannot decompress to {size} bytes",
                stream.len()
            )));
        }
        let size =
            usize::try_from(size).map_err(|_| Error::DecompressedTooLarge { size, limit })?;
        if self.feature().is_none() {
            return Err(Error::malformed("an uncompressed body has no length field"));
        }
        self.check_built()?;
        let mut out = vec![0u8; size];
        let found = self.decompress_stream(stream, &mut out)?;
        if found != size {
            return Err(Error::malformed(format!(
                "the compressed body does not decompress to the {size} bytes it records"
            )));
        }
        Ok(out)
    }

    /// Is this compression's feature in this build (before anything is allocated for it)?
    fn check_built(self) -> Result<()> {
        match self {
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Ok(()),
            #[cfg(feature = "zstd")]
            Compression::Zstd { .. } => Ok(()),
            #[allow(unreachable_patterns)]
            _ => Err(disabled(self)),
        }
    }

    /// Decompresses `stream` into `out`; how many bytes it made (at most `out.len()`).
    fn decompress_stream(self, stream: &[u8], out: &mut [u8]) -> Result<usize> {
        match self {
            #[cfg(feature = "lz4")]
            Compression::Lz4 => lz4_flex::block::decompress_into(stream, out)
                .map_err(|e| Error::malformed(format!("damaged LZ4 stream: {e}"))),
            #[cfg(feature = "zstd")]
            Compression::Zstd { .. } => zstd::bulk::decompress_to_buffer(stream, out)
                .map_err(|e| Error::malformed(format!("damaged zstd stream: {e}"))),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (stream, out);
                Err(disabled(self))
            }
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::Zstd { level } if *level != 0 => write!(f, "zstd (level {level})"),
            other => f.write_str(other.name()),
        }
    }
}

fn disabled(compression: Compression) -> Error {
    Error::FeatureDisabled {
        feature: compression.feature().unwrap_or("none"),
    }
}

/// A body's document compressed as it is encoded, on zstd's worker threads beside the
/// encoder, so that a large save's compression costs little more than its encoding.
///
/// The document is written into the file's buffer, after the table of contents, until it
/// passes [`ZSTD_PARALLEL_MIN`]; a smaller one is compressed whole with the rest of the body,
/// as before. A larger one goes on into a Zstandard frame of its own as it comes (what was in
/// the buffer first), and [`finish_body`](Self::finish_body) puts the body together: its
/// length, the part before the document (a delta's preamble and the table of contents, whose
/// ranges are known only now) as a frame, then the document's frame. A decoder reads
/// consecutive frames as one stream (RFC 8878, section 3).
///
/// Such a body is kept compressed even where it did not shrink: zstd stores a block it cannot
/// make smaller as it is, with a 3-byte header per 128 KiB block.
pub(crate) struct Compressing<'a> {
    buf: &'a mut Vec<u8>,
    /// Where the document starts in `buf`.
    start: usize,
    /// The document's length so far.
    len: usize,
    compression: Compression,
    threads: usize,
    /// What the compressed document is expected to take (the slot's last file's length).
    size_hint: usize,
    stream: Option<Stream>,
    /// Why the stream failed, if it did (an encoder reports its writer's error as its own).
    failed: Option<String>,
}

impl<'a> Compressing<'a> {
    /// A document written at the end of `buf`, compressed as it goes by `compression` on
    /// `threads` threads once it passes [`ZSTD_PARALLEL_MIN`]; or `None` where that is not done:
    /// LZ4 (one block, compressed whole), one thread (nothing to overlap), or no zstd.
    pub(crate) fn new(
        buf: &'a mut Vec<u8>,
        compression: Compression,
        threads: usize,
        size_hint: usize,
    ) -> Option<Self> {
        let zstd = matches!(compression, Compression::Zstd { .. }) && cfg!(feature = "zstd");
        if !zstd || threads < 2 {
            return None;
        }
        Some(Compressing {
            start: buf.len(),
            buf,
            len: 0,
            compression,
            threads,
            size_hint,
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
    pub(crate) fn finish_body(self, body_start: usize) -> Result<bool> {
        let Some(stream) = self.stream else {
            return Ok(false);
        };
        let document = stream.finish().map_err(failed_to_compress)?;
        let first = &self.buf[body_start..self.start];
        let body_len = first.len() + self.len;
        let body_bound = 8 + zstd_bound(first.len()) + document.len();
        let mut out = Vec::with_capacity(body_start + body_bound + tail_room(body_bound));
        out.extend_from_slice(&self.buf[..body_start]);
        out.extend_from_slice(&(body_len as u64).to_le_bytes());
        let at = out.len();
        let written = self.compression.compress_stream(first, &mut out, 1)?;
        out.truncate(at + written);
        out.extend_from_slice(&document);
        *self.buf = out;
        Ok(true)
    }

    /// Starts the stream with the document so far, taken out of the buffer.
    fn start_stream(&mut self) -> io::Result<()> {
        let mut stream = Stream::new(self.compression, self.threads, self.size_hint)?;
        stream.write_all(&self.buf[self.start..])?;
        self.buf.truncate(self.start);
        self.buf.shrink_to(self.start);
        self.stream = Some(stream);
        Ok(())
    }
}

impl io::Write for Compressing<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = match &mut self.stream {
            Some(stream) => stream.write_all(bytes),
            None => {
                self.buf.extend_from_slice(bytes);
                if self.buf.len() - self.start >= ZSTD_PARALLEL_MIN {
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

/// Room for what a sealed file appends after a body of `len` bytes, so that it is appended
/// without a reallocation: a 16-byte tag per 256 KiB segment or one 32-byte MAC, and the CRC.
fn tail_room(len: usize) -> usize {
    16 * (len / (1 << 18) + 1) + 32 + 4
}

/// zstd's bound on the compression of `len` bytes (0 without zstd, where nothing is).
fn zstd_bound(len: usize) -> usize {
    #[cfg(feature = "zstd")]
    return zstd::zstd_safe::compress_bound(len);
    #[cfg(not(feature = "zstd"))]
    return {
        let _ = len;
        0
    };
}

fn failed_to_compress(e: io::Error) -> Error {
    Error::Config {
        reason: format!("zstd compression failed: {e}"),
    }
}

/// A Zstandard frame written as it comes, on zstd's worker threads.
#[cfg(feature = "zstd")]
struct Stream(zstd::stream::write::Encoder<'static, Vec<u8>>);

/// Without zstd there is no stream ([`Compressing::new`] makes none).
#[cfg(not(feature = "zstd"))]
enum Stream {}

#[cfg(feature = "zstd")]
impl Stream {
    fn new(compression: Compression, threads: usize, size_hint: usize) -> io::Result<Self> {
        let level = match compression {
            Compression::Zstd { level } => level,
            _ => 0,
        };
        let mut encoder = zstd::stream::write::Encoder::new(Vec::with_capacity(size_hint), level)?;
        encoder.multithread(u32::try_from(threads).unwrap_or(u32::MAX))?;
        Ok(Stream(encoder))
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        io::Write::write_all(&mut self.0, bytes)
    }

    fn finish(self) -> io::Result<Vec<u8>> {
        self.0.finish()
    }
}

#[cfg(not(feature = "zstd"))]
impl Stream {
    fn new(_: Compression, _: usize, _: usize) -> io::Result<Self> {
        Err(io::Error::other("zstd is not in this build"))
    }

    fn write_all(&mut self, _: &[u8]) -> io::Result<()> {
        match *self {}
    }

    fn finish(self) -> io::Result<Vec<u8>> {
        match self {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Compression> {
        let mut v = Vec::new();
        if cfg!(feature = "lz4") {
            v.push(Compression::Lz4);
        }
        if cfg!(feature = "zstd") {
            v.push(Compression::zstd());
            v.push(Compression::Zstd { level: 19 });
        }
        v
    }

    #[test]
    fn bodies_round_trip_and_incompressible_ones_stay_as_they_are() {
        let body: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in all() {
            let mut out = vec![0xAA; 3];
            assert!(c.compress_into(&body, &mut out, 1).unwrap(), "{c}");
            assert!(out.len() < body.len() / 2, "{c}: {}", out.len());
            assert_eq!(out[..3], [0xAA; 3]);
            assert_eq!(c.decompress(&out[3..], 1 << 20).unwrap(), body);
            // Too short to gain anything: left alone.
            let mut out = Vec::new();
            assert!(!c.compress_into(b"abc", &mut out, 1).unwrap());
            assert!(out.is_empty());
        }
        assert!(
            !Compression::None
                .compress_into(&body, &mut Vec::new(), 1)
                .unwrap()
        );
    }

    /// A compression bomb: a tiny stream that claims (or would make) far more than the cap is
    /// refused before anything is allocated for it.
    #[test]
    fn a_body_compressed_on_many_threads_reads_back_the_same() {
        // Large enough for zstd's workers (several jobs), and not too regular.
        let body: Vec<u8> = (0..6u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 27) as u8 ^ (i / 4096) as u8)
            .collect();
        for c in all() {
            let mut one = Vec::new();
            let mut many = Vec::new();
            assert!(c.compress_into(&body, &mut one, 1).unwrap(), "{c}");
            assert!(c.compress_into(&body, &mut many, 4).unwrap(), "{c}");
            assert_eq!(c.decompress(&one, 8 << 20).unwrap(), body, "{c}");
            assert_eq!(
                c.decompress(&many, 8 << 20).unwrap(),
                body,
                "{c} on 4 threads"
            );
        }
    }

    #[test]
    fn a_decompressed_size_over_the_cap_is_refused_before_allocating() {
        let body = vec![0u8; 1 << 20];
        for c in all() {
            let mut out = Vec::new();
            assert!(c.compress_into(&body, &mut out, 1).unwrap());
            assert!(out.len() < 10_000, "{c}");
            let err = c.decompress(&out, 1000).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::DecompressedTooLarge {
                        size: 1_048_576,
                        limit: 1000
                    }
                ),
                "{err}"
            );
            // A length field that lies: 2^63, or less than the stream holds.
            let mut lie = out.clone();
            lie[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
            assert!(matches!(
                c.decompress(&lie, 1 << 62),
                Err(Error::DecompressedTooLarge { .. })
            ));
            // Under the cap but more than an LZ4 stream of this length can hold.
            if c == Compression::Lz4 {
                lie[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                assert!(matches!(
                    c.decompress(&lie, u64::MAX),
                    Err(Error::Malformed { .. })
                ));
            }
            lie[..8].copy_from_slice(&100u64.to_le_bytes());
            assert!(matches!(
                c.decompress(&lie, 1 << 30),
                Err(Error::Malformed { .. })
            ));
            lie[..8].copy_from_slice(&((1u64 << 20) + 1).to_le_bytes());
            assert!(matches!(
                c.decompress(&lie, 1 << 30),
                Err(Error::Malformed { .. })
            ));
            // Garbage and truncation are malformed, never a panic.
            for cut in [0, 7, 8, 9, out.len() / 2, out.len() - 1] {
                assert!(c.decompress(&out[..cut], 1 << 30).is_err(), "{c} cut {cut}");
            }
        }
    }

    #[test]
    fn ids_and_names() {
        for c in [Compression::None, Compression::Lz4, Compression::zstd()] {
            let back = Compression::from_id(c.id()).unwrap();
            assert_eq!(back.name(), c.name());
        }
        assert_eq!(Compression::from_id(3), None);
        assert_eq!(Compression::Zstd { level: 7 }.to_string(), "zstd (level 7)");
        assert_eq!(Compression::from_id(2).unwrap().to_string(), "zstd");
    }
}
