//! A Zstandard body of many frames decompressed on threads, each frame straight into its own
//! part of the body: what a body compressed in pieces ([`compressing`](super::compressing))
//! allows on a load, since every one of its frames records its decompressed size.
//!
//! Only a stream whose frames all record their sizes, and whose sizes add up to the body's
//! recorded length, is split; any other (one frame, the two frames of a body written before
//! pieces, whose document frame does not record its size) is decompressed whole, as before. A
//! frame that does not decompress to exactly the size it records is [`Error::Malformed`],
//! never a part left short.

#[cfg(feature = "zstd")]
use std::sync::{Mutex, PoisonError};

#[cfg(feature = "zstd")]
use super::compressing::PIECE;
use crate::error::Result;
#[cfg(feature = "zstd")]
use crate::{error::Error, threads};

/// The frames of `stream` with their recorded sizes, when there are two or more, every one
/// records a size of at least a byte and the sizes add up to `total`; otherwise `None`. No
/// more frames are taken than the writer makes of `total` bytes (the pieces of the part
/// before the document and of the document), so that a forged stream of empty or skippable
/// frames cannot make the list, or the jobs after it, large.
#[cfg(feature = "zstd")]
fn frames(stream: &[u8], total: usize) -> Option<Vec<(&[u8], usize)>> {
    let most = total / PIECE + 2;
    let mut frames = Vec::new();
    let mut rest = stream;
    let mut sum = 0usize;
    while !rest.is_empty() {
        if frames.len() == most {
            return None;
        }
        let len = zstd::zstd_safe::find_frame_compressed_size(rest).ok()?;
        let (frame, after) = rest.split_at_checked(len).filter(|_| len > 0)?;
        let size = zstd::zstd_safe::get_frame_content_size(frame).ok()??;
        let size = usize::try_from(size).ok().filter(|&size| size > 0)?;
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
    use crate::compression::{Compression, sample};
    use crate::threads::refusal::refusing;

    /// `body` cut into `pieces`-byte frames that record their sizes, laid end to end.
    fn pieces(body: &[u8], piece: usize) -> Vec<u8> {
        body.chunks(piece)
            .flat_map(|p| zstd::bulk::compress(p, 1).unwrap())
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
        // Four frames, as the writer cuts them; the last one short.
        let body = sample(3 * PIECE + 1);
        let compressed = recorded(&body, &pieces(&body, PIECE));
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
        let body = sample(3 * PIECE);
        let stream = pieces(&body, PIECE);
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
        no_size.extend_from_slice(&pieces(&body[1000..], PIECE));
        assert!(frames(&no_size, body.len()).is_none());
        let zstd = Compression::Zstd { level: 0 };
        assert_eq!(
            zstd.decompress(&recorded(&body, &no_size), 1 << 30, 4)
                .unwrap(),
            body
        );
        assert!(frames(&stream[..stream.len() - 1], body.len()).is_none());
    }

    /// A forged stream of many empty frames (or skippable ones, which record no size) before
    /// the one that holds the body is not split: the list of frames stays small, and the
    /// whole decompression reads it as it always did.
    #[test]
    fn empty_or_skippable_frames_are_not_split() {
        let body = sample(2_000);
        let empty = zstd::bulk::compress(b"", 1).unwrap();
        // A skippable frame (RFC 8878, 3.1.2): magic 0x184D2A50, a length, then that many bytes.
        let skippable = [0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0];
        let zstd = Compression::Zstd { level: 0 };
        for filler in [&empty[..], &skippable[..]] {
            let mut stream = Vec::new();
            for _ in 0..10_000 {
                stream.extend_from_slice(filler);
            }
            stream.extend_from_slice(&zstd::bulk::compress(&body, 1).unwrap());
            assert!(frames(&stream, body.len()).is_none());
            let whole = zstd.decompress(&recorded(&body, &stream), 1 << 30, 4);
            assert_eq!(whole.unwrap(), body);
        }
        // More frames than pieces of the body could make.
        let tiny = pieces(&body, 100);
        assert!(frames(&tiny, body.len()).is_none());
        assert_eq!(
            zstd.decompress(&recorded(&body, &tiny), 1 << 30, 4)
                .unwrap(),
            body
        );
    }

    /// Damage inside a frame is `Malformed` on every thread count, never a panic or a part
    /// left as zeros.
    #[test]
    fn a_damaged_frame_is_malformed() {
        let body = sample(2 * PIECE + 5);
        let stream = pieces(&body, PIECE);
        assert_eq!(frames(&stream, body.len()).map(|f| f.len()), Some(3));
        let zstd = Compression::Zstd { level: 0 };
        let mut found = 0;
        for at in (20..stream.len()).step_by(stream.len() / 150) {
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
