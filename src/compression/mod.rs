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
//! file larger than an uncompressed one by more than nothing; except a body Zstandard
//! compresses as it is encoded, 512 KiB at a time on the manager's threads
//! (`compressing.rs`): a document of more than 1 MiB sealed whole, and every save written as
//! it is encoded (on the file system), whose table of contents is also stored uncompressed
//! (at most 16 KiB). It stays compressed, and a part that does not shrink is stored as it is,
//! 3 bytes longer per 128 KiB and about 9 per 512 KiB frame.
//!
//! # Limits on decompression
//!
//! A compressed body records its decompressed length first. A length over the cap (the
//! manager's [`max_file_size`](crate::ManagerBuilder::max_file_size)) is refused as
//! [`Error::DecompressedTooLarge`] before anything is allocated for it, and a stream that
//! decompresses to any other length than it recorded is [`Error::Malformed`]: a compression
//! bomb is a typed error, never an allocation of gigabytes.

use std::fmt;

use crate::error::{Error, Result};

pub(crate) mod compressing;
mod frames;

/// The zstd level [`Compression::zstd`] picks: 1. On the benches' 100,000-entity world,
/// encrypted, level 1 made the JSON file smaller than zstd's own default, level 3 (0.233 of
/// the uncompressed size against 0.241), and the MessagePack one 5% larger (0.368 against
/// 0.349), for 1.29–1.38× an uncompressed MessagePack save where level 3 cost 1.62–1.72×
/// (`docs/guide/testing.md`, "Benchmarks"). For MessagePack, level −1 is the faster choice
/// (0.43 of the size, 1.22–1.26×).
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

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

    /// Appends `body`, compressed whole on this thread, to `out`: its length as a `u64`, then
    /// the stream (one LZ4 block or one Zstandard frame). Returns `false`, with `out` as it
    /// was, when that would not be smaller than `body`.
    pub(crate) fn compress_into(self, body: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        if self == Compression::None {
            return Ok(false);
        }
        let start = out.len();
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let written = match self.compress_stream(body, out) {
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
    fn compress_stream(self, body: &[u8], out: &mut Vec<u8>) -> Result<usize> {
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
                zstd::bulk::Compressor::new(level)
                    .and_then(|mut c| c.compress_to_buffer(body, &mut out[stream..]))
                    .map_err(failed)
            }
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (body, stream);
                Err(disabled(self))
            }
        }
    }

    /// Decompresses a compressed body (its recorded length, then the stream), refusing a
    /// recorded length over `limit` before allocating anything. A Zstandard body of frames
    /// that record their sizes (one compressed in pieces) is decompressed a frame at a time on
    /// up to `threads` threads.
    pub(crate) fn decompress(
        self,
        compressed: &[u8],
        limit: u64,
        threads: usize,
    ) -> Result<Vec<u8>> {
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
        if matches!(self, Compression::Zstd { .. })
            && let Some(done) = frames::decompress(stream, &mut out, threads)
        {
            return done.map(|()| out);
        }
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

/// `len` bytes that compress but are not regular, for the tests of the pieces and frames.
#[cfg(all(test, feature = "zstd"))]
fn sample(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 29) as u8 ^ (i / 4096) as u8)
        .collect()
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
            assert!(c.compress_into(&body, &mut out).unwrap(), "{c}");
            assert!(out.len() < body.len() / 2, "{c}: {}", out.len());
            assert_eq!(out[..3], [0xAA; 3]);
            assert_eq!(c.decompress(&out[3..], 1 << 20, 1).unwrap(), body);
            // Too short to gain anything: left alone.
            let mut out = Vec::new();
            assert!(!c.compress_into(b"abc", &mut out).unwrap());
            assert!(out.is_empty());
        }
        assert!(
            !Compression::None
                .compress_into(&body, &mut Vec::new())
                .unwrap()
        );
    }

    /// A compression bomb: a tiny stream that claims (or would make) far more than the cap is
    /// refused before anything is allocated for it.
    #[test]
    fn a_decompressed_size_over_the_cap_is_refused_before_allocating() {
        let body = vec![0u8; 1 << 20];
        for c in all() {
            let mut out = Vec::new();
            assert!(c.compress_into(&body, &mut out).unwrap());
            assert!(out.len() < 10_000, "{c}");
            let err = c.decompress(&out, 1000, 1).unwrap_err();
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
                c.decompress(&lie, 1 << 62, 1),
                Err(Error::DecompressedTooLarge { .. })
            ));
            // Under the cap but more than an LZ4 stream of this length can hold.
            if c == Compression::Lz4 {
                lie[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                assert!(matches!(
                    c.decompress(&lie, u64::MAX, 1),
                    Err(Error::Malformed { .. })
                ));
            }
            lie[..8].copy_from_slice(&100u64.to_le_bytes());
            assert!(matches!(
                c.decompress(&lie, 1 << 30, 1),
                Err(Error::Malformed { .. })
            ));
            lie[..8].copy_from_slice(&((1u64 << 20) + 1).to_le_bytes());
            assert!(matches!(
                c.decompress(&lie, 1 << 30, 1),
                Err(Error::Malformed { .. })
            ));
            // Garbage and truncation are malformed, never a panic.
            for cut in [0, 7, 8, 9, out.len() / 2, out.len() - 1] {
                assert!(
                    c.decompress(&out[..cut], 1 << 30, 1).is_err(),
                    "{c} cut {cut}"
                );
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
