//! The CRC32 trailer of every file of the family: [`check_crc`] over a whole file in memory,
//! [`check_crc_in_pieces`] over one read a piece at a time. The CRC is checked before any other
//! field is trusted, so damage on disk reads as damage (see [`format`](crate::format)).

use super::header::check_magic;
use super::{CRC_LEN, HEADER_LEN};
use crate::error::{Error, Result};
use crate::format::bytes::read_u32;

/// Checks a whole file's magic and its CRC32 trailer, and nothing else.
///
/// # Errors
/// [`Error::NotASave`], [`Error::Malformed`] (too short) or [`Error::ChecksumMismatch`].
pub fn check_crc(bytes: &[u8]) -> Result<()> {
    let expected = crc_trailer(bytes)?;
    let crc_at = bytes.len() - CRC_LEN;
    let found = crc32fast::hash(&bytes[..crc_at]);
    if expected != found {
        return Err(Error::ChecksumMismatch { expected, found });
    }
    Ok(())
}

/// Below this many bytes a CRC is taken on one thread: a thread's start costs more than it
/// saves.
const PARALLEL_CRC_MIN: usize = 2 << 20;

/// The CRC32 state of `bytes`, taken on up to `threads` threads (this one among them) when
/// they are many: each takes one run of them, and the states are combined in order.
pub(crate) fn crc_of(bytes: &[u8], threads: usize) -> crc32fast::Hasher {
    let threads = threads.clamp(1, bytes.len() / (PARALLEL_CRC_MIN / 2) + 1);
    let mut hasher = crc32fast::Hasher::new();
    if threads == 1 || bytes.len() < PARALLEL_CRC_MIN {
        hasher.update(bytes);
        return hasher;
    }
    let per = bytes.len().div_ceil(threads);
    let mut runs = bytes.chunks(per);
    let mine = runs.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let others: Vec<_> = runs
            .map(|run| {
                let spawned = std::thread::Builder::new()
                    .name("savegame-crc".into())
                    .spawn_scoped(scope, move || {
                        let mut part = crc32fast::Hasher::new();
                        part.update(run);
                        part
                    });
                (run, spawned)
            })
            .collect();
        hasher.update(mine);
        for (run, spawned) in others {
            // A run whose thread could not start, or (it cannot) panicked, is taken here.
            let part = spawned.ok().and_then(|t| t.join().ok()).unwrap_or_else(|| {
                let mut part = crc32fast::Hasher::new();
                part.update(run);
                part
            });
            hasher.combine(&part);
        }
    });
    hasher
}

/// [`check_crc`] on up to `threads` threads (see [`crc_of`]).
///
/// # Errors
/// As [`check_crc`].
pub(crate) fn check_crc_on(bytes: &[u8], threads: usize) -> Result<()> {
    let expected = crc_trailer(bytes)?;
    let found = crc_of(&bytes[..bytes.len() - CRC_LEN], threads).finalize();
    if expected != found {
        return Err(Error::ChecksumMismatch { expected, found });
    }
    Ok(())
}

/// The CRC32 a whole file's trailer records, once its magic and length are checked: for a
/// reader that takes the CRC of the bytes before it as it goes.
///
/// # Errors
/// [`Error::NotASave`] or [`Error::Malformed`] (too short).
pub(crate) fn crc_trailer(bytes: &[u8]) -> Result<u32> {
    check_magic(bytes)?;
    if bytes.len() < HEADER_LEN + CRC_LEN {
        return Err(Error::malformed(format!(
            "truncated: {} bytes is shorter than the smallest save",
            bytes.len()
        )));
    }
    Ok(read_u32(bytes, bytes.len() - CRC_LEN))
}

/// How many bytes [`check_crc_in_pieces`] reads at a time.
pub(super) const CRC_PIECE: usize = 1 << 20;

/// [`check_crc`] over a file of `len` bytes that `read_at(offset, n)` reads piece by piece (at
/// most a MiB at a time), so a large file is checked without being held in memory whole.
///
/// # Errors
/// As [`check_crc`]; [`Error::Malformed`] when a piece comes back short (the file changed
/// while it was checked); whatever `read_at` returns.
pub(crate) fn check_crc_in_pieces(
    len: u64,
    mut read_at: impl FnMut(u64, usize) -> Result<Vec<u8>>,
) -> Result<()> {
    let total = usize::try_from(len)
        .map_err(|_| Error::malformed(format!("{len} bytes do not fit in memory")))?;
    let crc_at = total.saturating_sub(CRC_LEN);
    let mut hasher = crc32fast::Hasher::new();
    let mut trailer = Vec::with_capacity(CRC_LEN);
    let mut offset = 0;
    while offset < total {
        let want = (total - offset).min(CRC_PIECE);
        let piece = read_at(offset as u64, want)?;
        if piece.len() != want {
            return Err(Error::malformed("the file changed while it was checked"));
        }
        if offset == 0 {
            check_magic(&piece)?;
        }
        let hashed = crc_at.saturating_sub(offset).min(piece.len());
        hasher.update(&piece[..hashed]);
        trailer.extend_from_slice(&piece[hashed..]);
        offset += want;
    }
    if total == 0 {
        check_magic(&[])?;
    }
    if total < HEADER_LEN + CRC_LEN {
        return Err(Error::malformed(format!(
            "truncated: {total} bytes is shorter than the smallest save"
        )));
    }
    let expected = read_u32(&trailer, 0);
    let found = hasher.finalize();
    if expected != found {
        return Err(Error::ChecksumMismatch { expected, found });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crc_on_many_threads_is_the_crc_on_one() {
        let bytes: Vec<u8> = (0..(5 << 20) + 3)
            .map(|i: usize| (i * 31 + i / 7) as u8)
            .collect();
        for len in [0, 1, PARALLEL_CRC_MIN - 1, PARALLEL_CRC_MIN, bytes.len()] {
            for threads in [1, 2, 3, 8, 1000] {
                assert_eq!(
                    crc_of(&bytes[..len], threads).finalize(),
                    crc32fast::hash(&bytes[..len]),
                    "{len} bytes on {threads} threads"
                );
            }
        }
    }
}
