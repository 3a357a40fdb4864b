//! A Zstandard body of many frames decompressed on threads, each frame straight into its own
//! part of the body: what a body compressed in pieces ([`compressing`](super::compressing))
//! allows on a load, since every one of its frames records its decompressed size.
//!
//! Only a stream whose frames all record their sizes, and whose sizes add up to the body's
//! recorded length, is split; any other (one frame, the two frames of a body written before
//! pieces, whose document frame does not record its size) is decompressed whole, as before. A
//! frame that does not decompress to exactly the size it records is [`Error::Malformed`],
//! never a part left short.

use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::threads;

/// The frames of `stream` with their recorded sizes, when there are two or more, every one
/// records its size and the sizes add up to `total`; otherwise `None`.
#[cfg(feature = "zstd")]
fn frames(stream: &[u8], total: usize) -> Option<Vec<(&[u8], usize)>> {
    let mut frames = Vec::new();
    let mut rest = stream;
    let mut sum = 0usize;
    while !rest.is_empty() {
        let len = zstd::zstd_safe::find_frame_compressed_size(rest).ok()?;
        let (frame, after) = rest.split_at_checked(len)?;
        let size = zstd::zstd_safe::get_frame_content_size(frame).ok()??;
        let size = usize::try_from(size).ok()?;
        sum = sum.checked_add(size).filter(|&sum| sum <= total)?;
        frames.push((frame, size));
        rest = after;
    }
    (sum == total && frames.len() > 1).then_some(frames)
}

/// Decompresses `stream` into `out`, a frame at a time on up to `threads` threads (this one
/// among them, the others named `savegame-decompress`; where none can be started, this one
/// does every frame). `None` where the stream is not frames that can be split (see
/// [`frames`]): the caller decompresses it whole.
#[cfg(feature = "zstd")]
pub(super) fn decompress(stream: &[u8], out: &mut [u8], threads: usize) -> Option<Result<()>> {
    if threads < 2 {
        return None;
    }
    let frames = frames(stream, out.len())?;
    let count = frames.len();
    let mut jobs = Vec::with_capacity(count);
    let mut rest = out;
    for (frame, size) in frames {
        let (part, after) = rest.split_at_mut_checked(size)?;
        jobs.push((frame, part));
        rest = after;
    }
    let jobs = Mutex::new(jobs.into_iter());
    let work = || -> Result<()> {
        let mut decompressor = zstd::bulk::Decompressor::new().map_err(damaged)?;
        loop {
            let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((frame, part)) = job else {
                return Ok(());
            };
            let made = decompressor
                .decompress_to_buffer(frame, &mut *part)
                .map_err(damaged)?;
            if made != part.len() {
                return Err(Error::malformed(format!(
                    "a zstd frame decompresses to {made} bytes, not the {} it records",
                    part.len()
                )));
            }
        }
    };
    Some(std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.min(count))
            .filter_map(|_| threads::scoped(scope, "savegame-decompress", work))
            .collect();
        let mut result = work();
        for helper in helpers {
            let theirs = helper.join().unwrap_or_else(|_| {
                Err(Error::Config {
                    reason: "a decompressing thread panicked".into(),
                })
            });
            result = result.and(theirs);
        }
        result
    }))
}

/// Without zstd there is nothing to split.
#[cfg(not(feature = "zstd"))]
pub(super) fn decompress(_: &[u8], _: &mut [u8], _: usize) -> Option<Result<()>> {
    None
}

#[cfg(feature = "zstd")]
fn damaged(e: std::io::Error) -> Error {
    Error::malformed(format!("damaged zstd stream: {e}"))
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
    use super::*;
    use crate::compression::Compression;
    use crate::threads::refusal::refusing;

    /// `body` cut into `pieces`-byte frames that record their sizes, laid end to end.
    fn pieces(body: &[u8], piece: usize) -> Vec<u8> {
        body.chunks(piece)
            .flat_map(|p| zstd::bulk::compress(p, 1).unwrap())
            .collect()
    }

    fn body(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 29) as u8 ^ (i / 999) as u8)
            .collect()
    }

    /// The compressed body as a file holds it: the recorded length, then the stream.
    fn recorded(body: &[u8], stream: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(stream);
        out
    }

    #[test]
    fn frames_that_record_their_sizes_decompress_the_same_on_any_number_of_threads() {
        let body = body(700_001);
        let compressed = recorded(&body, &pieces(&body, 65_536));
        let zstd = Compression::Zstd { level: 0 };
        for threads in [1, 2, 3, 8] {
            assert_eq!(
                zstd.decompress(&compressed, 1 << 30, threads).unwrap(),
                body
            );
        }
        let (out, refused) = refusing(|| zstd.decompress(&compressed, 1 << 30, 4));
        assert_eq!(out.unwrap(), body);
        assert!(refused.contains("savegame-decompress"), "{refused:?}");
    }

    #[test]
    fn a_stream_that_cannot_be_split_is_left_to_the_whole_decompression() {
        let body = body(300_000);
        let stream = pieces(&body, 100_000);
        assert_eq!(frames(&stream, body.len()).map(|f| f.len()), Some(3));
        // Sizes that do not add up to the recorded length, one frame, a frame without its
        // size (zstd's streaming encoder does not know it), damage in the frames' headers.
        assert!(frames(&stream, body.len() + 1).is_none());
        assert!(frames(&stream, body.len() - 1).is_none());
        let one = zstd::bulk::compress(&body, 1).unwrap();
        assert!(frames(&one, body.len()).is_none());
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        std::io::Write::write_all(&mut encoder, &body[..500]).unwrap();
        std::io::Write::flush(&mut encoder).unwrap();
        std::io::Write::write_all(&mut encoder, &body[500..1000]).unwrap();
        let mut no_size = encoder.finish().unwrap();
        assert!(matches!(
            zstd::zstd_safe::get_frame_content_size(&no_size),
            Ok(None)
        ));
        no_size.extend_from_slice(&pieces(&body[1000..], 100_000));
        assert!(frames(&no_size, body.len()).is_none());
        let zstd = Compression::Zstd { level: 0 };
        assert_eq!(
            zstd.decompress(&recorded(&body, &no_size), 1 << 30, 4)
                .unwrap(),
            body
        );
        assert!(frames(&stream[..stream.len() - 1], body.len()).is_none());
    }

    /// Damage inside a frame is `Malformed` on every thread count, never a panic or a part
    /// left as zeros.
    #[test]
    fn a_damaged_frame_is_malformed() {
        let body = body(400_000);
        let stream = pieces(&body, 100_000);
        let zstd = Compression::Zstd { level: 0 };
        let mut found = 0;
        for at in (20..stream.len()).step_by(997) {
            let mut damaged = stream.clone();
            damaged[at] ^= 0x5a;
            for threads in [1, 4] {
                match zstd.decompress(&recorded(&body, &damaged), 1 << 30, threads) {
                    Err(Error::Malformed { .. }) => found += 1,
                    // Zstandard frames carry no checksum here: a flip in a literal can
                    // decompress to other bytes of the same length, which the file's CRC
                    // and tag catch before this is reached.
                    Ok(out) => assert_eq!(out.len(), body.len()),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        assert!(found > 0);
    }
}
