//! Segmented encryption (format version 2, flag bit 4): an encrypted body sealed as segments of
//! a fixed size, each its own AES-256-GCM message, so that several cores can seal and open
//! one file at once.
//!
//! The body's ciphertext stays in one piece, in place, as with one message; the segments' tags
//! follow it in order. Segment `i` of `n` is sealed under the file's nonce with the last five
//! bytes XORed with `i` (big-endian `u32`) and a last-segment byte (1 for segment `n − 1`), and
//! with the file's header and metadata as associated data, as a whole-body message is. This is
//! the STREAM construction (Hoang, Reyhanitabar, Rogaway and Vizár, 2015) over one random
//! nonce: a segment moved, swapped, dropped or taken from another file fails its tag, and so
//! does a file cut short after a segment boundary. An empty body is one empty segment.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use crate::crypto::{Key, NONCE_LEN, TAG_LEN};
use crate::error::{Error, Result};

/// The segment size this library writes, as a power of two: 2¹⁸ bytes (256 KiB). Small enough
/// that a 5 MB save splits evenly across cores, large enough that the tags add 0.006%.
pub(crate) const SEGMENT_LOG: u8 = 18;
/// The segment sizes a file may declare: 2¹² (4 KiB) to 2²⁶ (64 MiB).
pub(crate) const SEGMENT_LOGS: Range<u8> = 12..27;

/// The number of segments of a body of `body_len` bytes: at least one.
pub(crate) fn count(body_len: usize, segment_log: u8) -> usize {
    body_len.div_ceil(1 << segment_log).max(1)
}

/// The body's length in a segmented payload of `payload_len` bytes, or
/// [`Error::Malformed`] when no body has that payload.
pub(crate) fn body_len(payload_len: usize, segment_log: u8) -> Result<usize> {
    let sealed = (1usize << segment_log) + TAG_LEN;
    let n = payload_len.div_ceil(sealed);
    let body = payload_len
        .checked_sub(n * TAG_LEN)
        .filter(|&body| n >= 1 && count(body, segment_log) == n);
    body.ok_or_else(|| Error::malformed("the encrypted payload is not whole segments and tags"))
}

/// The nonce of segment `index` of `count`.
fn nonce_of(nonce: &[u8; NONCE_LEN], index: usize, count: usize) -> Result<[u8; NONCE_LEN]> {
    segment_nonce(nonce, index, index + 1 == count)
}

/// The nonce of segment `index`, the last one or not.
fn segment_nonce(nonce: &[u8; NONCE_LEN], index: usize, last: bool) -> Result<[u8; NONCE_LEN]> {
    let position = u32::try_from(index)
        .map_err(|_| Error::malformed("more than 2³² segments"))?
        .to_be_bytes();
    let mut out = *nonce;
    for (byte, p) in out[NONCE_LEN - 5..NONCE_LEN - 1].iter_mut().zip(position) {
        *byte ^= p;
    }
    out[NONCE_LEN - 1] ^= u8::from(last);
    Ok(out)
}

/// Encrypts `segment`, segment `index` of a body (the last one or not), in place, and returns
/// its tag: one segment of [`seal`], for a writer that seals a body as it is written.
pub(crate) fn seal_one(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    associated: &[u8],
    segment: &mut [u8],
    index: usize,
    last: bool,
) -> Result<[u8; TAG_LEN]> {
    key.seal(&segment_nonce(nonce, index, last)?, associated, segment)
}

/// Encrypts `body` in place as segments of `2^segment_log` bytes, on up to `threads` threads
/// (this one among them), and returns the tags, in order.
pub(crate) fn seal(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    associated: &[u8],
    body: &mut [u8],
    segment_log: u8,
    threads: usize,
) -> Result<Sealed> {
    let mut tags = vec![0u8; count(body.len(), segment_log) * TAG_LEN];
    let each = |nonce: &[u8; NONCE_LEN], segment: &mut [u8], tag: &mut [u8]| -> Result<()> {
        tag.copy_from_slice(&key.seal(nonce, associated, segment)?);
        Ok(())
    };
    let (result, crc) = in_parts(
        nonce,
        body,
        &mut tags,
        segment_log,
        threads,
        Crc::After,
        &each,
    );
    result.map(|()| Sealed { tags, crc })
}

/// What [`seal`] made: the segments' tags, in order, and the CRC32 state of the body's
/// ciphertext, taken by each thread over its share as it sealed it (so a file's CRC costs no
/// pass of its own over the body).
pub(crate) struct Sealed {
    pub(crate) tags: Vec<u8>,
    pub(crate) crc: crc32fast::Hasher,
}

/// Decrypts `body` in place, checking each segment's tag in `tags` (which are only read), on
/// up to `threads` threads (this one among them). [`Error::Decrypt`] if any tag fails; the
/// body is then unusable.
pub(crate) fn open(
    key: &Key,
    nonce: &[u8; NONCE_LEN],
    associated: &[u8],
    body: &mut [u8],
    tags: &mut [u8],
    segment_log: u8,
    threads: usize,
) -> (Result<()>, crc32fast::Hasher) {
    if tags.len() != count(body.len(), segment_log) * TAG_LEN {
        let mut crc = crc32fast::Hasher::new();
        crc.update(body);
        return (
            Err(Error::malformed("the tags do not match the segments")),
            crc,
        );
    }
    let each = |nonce: &[u8; NONCE_LEN], segment: &mut [u8], tag: &mut [u8]| -> Result<()> {
        let tag = <[u8; TAG_LEN]>::try_from(&*tag)
            .map_err(|_| Error::malformed("a segment's tag is cut short"))?;
        key.open(nonce, associated, segment, &tag)
    };
    in_parts(nonce, body, tags, segment_log, threads, Crc::Before, &each)
}

/// The segments of `part` (one empty segment for an empty part).
fn segments_mut(part: &mut [u8], segment_log: u8) -> impl Iterator<Item = &mut [u8]> {
    let empty = part.is_empty();
    let size = 1usize << segment_log;
    let whole = (!empty).then(|| part.chunks_mut(size));
    whole
        .into_iter()
        .flatten()
        .chain(empty.then(|| &mut [][..]))
}

/// What is done to each segment: `each(its nonce, its bytes, its tag)`.
type Each<'a> = dyn Fn(&[u8; NONCE_LEN], &mut [u8], &mut [u8]) -> Result<()> + Sync + 'a;

type Run<'a> = Mutex<Option<(usize, &'a mut [u8], &'a mut [u8])>>;

/// When [`in_parts`] takes a segment into the CRC: as it is stored, which is before `each`
/// when opening (the ciphertext, decrypted in place after) and after it when sealing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Crc {
    Before,
    After,
}

/// A run's outcome: the first error `each` met (the run goes on hashing after it), and the
/// CRC32 state of the run's bytes as stored.
type Outcome = (Result<()>, crc32fast::Hasher);

/// Runs `each(nonce of segment i, segment i, tag i)` over every segment of `body`, with the
/// segments cut into one run of whole segments per thread, on up to `threads` threads (this
/// one among them, and never more than there are segments). Each thread also takes its run
/// into a CRC32 state as the bytes are stored (see [`Crc`]), and goes on hashing past a
/// segment `each` refused, so the whole body's CRC is known whatever failed: a reader tells
/// damage (the CRC) from tampering (a tag) as when the CRC is checked first. Returns the
/// first error in segment order, and the body's CRC state.
fn in_parts(
    nonce: &[u8; NONCE_LEN],
    body: &mut [u8],
    tags: &mut [u8],
    segment_log: u8,
    threads: usize,
    crc: Crc,
    each: &Each<'_>,
) -> Outcome {
    let n = count(body.len(), segment_log);
    let work = |first: usize, part: &mut [u8], tags: &mut [u8]| -> Outcome {
        let mut hasher = crc32fast::Hasher::new();
        let mut result = Ok(());
        for (i, (segment, tag)) in segments_mut(part, segment_log)
            .zip(tags.chunks_exact_mut(TAG_LEN))
            .enumerate()
        {
            if crc == Crc::Before {
                hasher.update(segment);
            }
            if result.is_ok() {
                result = nonce_of(nonce, first + i, n).and_then(|nonce| each(&nonce, segment, tag));
            }
            if crc == Crc::After {
                hasher.update(segment);
            }
        }
        (result, hasher)
    };
    let threads = threads.clamp(1, n);
    if threads == 1 {
        return work(0, body, tags);
    }
    let per = n.div_ceil(threads);
    let mut runs: Vec<Run<'_>> = Vec::with_capacity(threads);
    let (mut body, mut tags, mut first) = (body, tags, 0);
    while first < n {
        let segments = per.min(n - first);
        let bytes = (segments << segment_log).min(body.len());
        let (run_body, rest_body) = body.split_at_mut(bytes);
        let (run_tags, rest_tags) = tags.split_at_mut(segments * TAG_LEN);
        runs.push(Mutex::new(Some((first, run_body, run_tags))));
        (body, tags, first) = (rest_body, rest_tags, first + segments);
    }
    // A run is taken once: by its thread, or here when the thread could not start. One taken
    // already (its thread panicked part-way) has nothing left to give: `None`.
    let run = |slot: &Run<'_>| -> Option<Outcome> {
        let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        taken.map(|(first, bytes, tags)| work(first, bytes, tags))
    };
    let (mine, others) = runs.split_at(1);
    std::thread::scope(|scope| {
        let threads: Vec<_> = others
            .iter()
            .map(|slot| crate::threads::scoped(scope, "savegame-seal", move || run(slot)))
            .collect();
        let mut outcomes: Vec<Option<Outcome>> = mine.iter().map(run).collect();
        for (slot, thread) in others.iter().zip(threads) {
            outcomes.push(match thread {
                Some(thread) => thread.join().unwrap_or(None),
                None => run(slot),
            });
        }
        let mut result = Ok(());
        let mut hasher = crc32fast::Hasher::new();
        for outcome in outcomes {
            match outcome {
                Some((done, part)) => {
                    result = result.and(done);
                    hasher.combine(&part);
                }
                None => {
                    // The body's CRC is unknown: what is returned must not pass for a sound
                    // file's, and the error says why.
                    result = result.and(Err(Error::Config {
                        reason: "a sealing thread panicked".into(),
                    }));
                }
            }
        }
        (result, hasher)
    })
}

#[cfg(all(test, feature = "encryption"))]
mod tests {
    use super::*;

    const LOG: u8 = 12;
    const SIZE: usize = 1 << LOG;

    fn key() -> Key {
        Key::from_bytes([3; 32])
    }

    fn body(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// The payload of `plain`: ciphertext, then the tags.
    fn sealed(plain: &[u8], threads: usize) -> Vec<u8> {
        let mut out = plain.to_vec();
        let sealed = seal(&key(), &[5; NONCE_LEN], b"head", &mut out, LOG, threads).unwrap();
        // The threads' CRC is the ciphertext's, as a pass over it would find.
        assert_eq!(sealed.crc.finalize(), crc32fast::hash(&out));
        out.extend_from_slice(&sealed.tags);
        out
    }

    /// Opens a payload made by [`sealed`].
    fn opened(payload: &[u8], threads: usize) -> Result<Vec<u8>> {
        let len = body_len(payload.len(), LOG)?;
        let (mut body, mut tags) = (payload[..len].to_vec(), payload[len..].to_vec());
        let (result, crc) = open(
            &key(),
            &[5; NONCE_LEN],
            b"head",
            &mut body,
            &mut tags,
            LOG,
            threads,
        );
        // The CRC of the stored ciphertext, whole, even past a segment that failed.
        assert_eq!(crc.finalize(), crc32fast::hash(&payload[..len]));
        result?;
        Ok(body)
    }

    #[test]
    fn the_payload_length_names_exactly_one_body_length() {
        for len in (0..4 * SIZE + 3)
            .step_by(7)
            .chain([SIZE - 1, SIZE, SIZE + 1, 2 * SIZE])
        {
            let payload = len + count(len, LOG) * TAG_LEN;
            assert_eq!(body_len(payload, LOG).unwrap(), len, "{len}");
        }
        // The lengths between: a partial tag, or a segment with no room for its tag.
        let valid: std::collections::HashSet<usize> = (0..3 * SIZE)
            .map(|len| len + count(len, LOG) * TAG_LEN)
            .collect();
        for payload in 0..3 * SIZE {
            assert_eq!(
                body_len(payload, LOG).is_ok(),
                valid.contains(&payload),
                "{payload}"
            );
        }
    }

    #[test]
    fn every_thread_count_writes_the_same_bytes_and_each_opens_them() {
        for len in [0, 1, SIZE - 1, SIZE, SIZE + 1, 5 * SIZE + 17] {
            let plain = body(len);
            let one = sealed(&plain, 1);
            assert_eq!(one.len(), len + count(len, LOG) * TAG_LEN);
            assert!(len == 0 || one[..len] != plain[..], "encrypted");
            for threads in [2, 3, 8, 100] {
                assert_eq!(
                    sealed(&plain, threads),
                    one,
                    "{len} bytes on {threads} threads"
                );
                assert_eq!(opened(&one, threads).unwrap(), plain);
            }
        }
    }

    #[test]
    fn a_segment_moved_dropped_changed_or_from_another_place_fails_its_tag() {
        let plain = body(3 * SIZE + 100);
        let payload = sealed(&plain, 2);
        let tags_at = plain.len();
        let tag = |i: usize| tags_at + i * TAG_LEN..tags_at + (i + 1) * TAG_LEN;
        // Two whole segments swapped, with their tags.
        let mut swapped = payload.clone();
        swapped.copy_within(SIZE..2 * SIZE, 0);
        swapped[SIZE..2 * SIZE].copy_from_slice(&payload[..SIZE]);
        swapped.copy_within(tag(1), tag(0).start);
        swapped[tag(1)].copy_from_slice(&payload[tag(0)]);
        assert!(matches!(opened(&swapped, 2), Err(Error::Decrypt)));
        // Cut after the third segment: the third is not sealed as the last one.
        let mut cut = payload[..3 * SIZE].to_vec();
        cut.extend_from_slice(&payload[tags_at..tags_at + 3 * TAG_LEN]);
        assert!(matches!(opened(&cut, 2), Err(Error::Decrypt)));
        // One bit anywhere, in a segment or a tag.
        for at in [0, SIZE - 1, SIZE, 3 * SIZE + 99, tags_at, payload.len() - 1] {
            let mut flipped = payload.clone();
            flipped[at] ^= 0x40;
            assert!(
                matches!(opened(&flipped, 2), Err(Error::Decrypt)),
                "byte {at}"
            );
        }
        // Other associated data (another header).
        let (mut body, mut tags) = (payload[..tags_at].to_vec(), payload[tags_at..].to_vec());
        let (other, _) = open(
            &key(),
            &[5; NONCE_LEN],
            b"hEad",
            &mut body,
            &mut tags,
            LOG,
            1,
        );
        assert!(matches!(other, Err(Error::Decrypt)));
    }
}
