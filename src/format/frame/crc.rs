//! The CRC32 trailer of every file of the family: [`check_crc`] over a whole file in memory,
//! [`CrcCheck`] over one read a piece at a time (a large file is checked without being held in
//! memory whole). The CRC is checked before any other
//! field is trusted, so damage on disk reads as damage (see [`format`](crate::format)).

use super::header::check_magic;
use super::{CRC_LEN, HEADER_LEN, MAGIC};
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
                let spawned = crate::threads::scoped(scope, "savegame-crc", move || {
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
            let part = spawned.and_then(|t| t.join().ok()).unwrap_or_else(|| {
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

/// How many bytes a check of a stored file reads at a time.
pub(crate) const CRC_PIECE: usize = 1 << 18;

/// [`check_crc`] over a file of `len` bytes handed over a piece at a time, in order, of any
/// sizes: [`update`](Self::update) with each, then [`finish`](Self::finish).
pub(crate) struct CrcCheck {
    total: usize,
    offset: usize,
    hasher: crc32fast::Hasher,
    /// The file's first bytes, until its magic is checked.
    magic: Vec<u8>,
    trailer: Vec<u8>,
}

impl CrcCheck {
    /// A check of a file of `len` bytes.
    ///
    /// # Errors
    /// [`Error::Malformed`] when `len` does not fit in memory.
    pub(crate) fn new(len: u64) -> Result<Self> {
        let total = usize::try_from(len)
            .map_err(|_| Error::malformed(format!("{len} bytes do not fit in memory")))?;
        Ok(Self {
            total,
            offset: 0,
            hasher: crc32fast::Hasher::new(),
            magic: Vec::with_capacity(MAGIC.len()),
            trailer: Vec::with_capacity(CRC_LEN),
        })
    }

    /// Takes the next piece of the file.
    ///
    /// # Errors
    /// [`Error::NotASave`] when the file does not start with the magic; [`Error::Malformed`]
    /// when the pieces run past the length (the file changed while it was checked).
    pub(crate) fn update(&mut self, piece: &[u8]) -> Result<()> {
        if piece.len() > self.total - self.offset {
            return Err(Error::malformed("the file changed while it was checked"));
        }
        if self.magic.len() < MAGIC.len() {
            let take = (MAGIC.len() - self.magic.len()).min(piece.len());
            self.magic.extend_from_slice(&piece[..take]);
            if self.magic.len() == MAGIC.len() || self.offset + piece.len() == self.total {
                check_magic(&self.magic)?;
            }
        }
        let crc_at = self.total.saturating_sub(CRC_LEN);
        let hashed = crc_at.saturating_sub(self.offset).min(piece.len());
        self.hasher.update(&piece[..hashed]);
        self.trailer.extend_from_slice(&piece[hashed..]);
        self.offset += piece.len();
        Ok(())
    }

    /// The check, once every piece was taken.
    ///
    /// # Errors
    /// As [`check_crc`]; [`Error::Malformed`] when fewer bytes came than the length (the file
    /// changed while it was checked).
    pub(crate) fn finish(self) -> Result<()> {
        if self.offset != self.total {
            return Err(Error::malformed("the file changed while it was checked"));
        }
        if self.total == 0 {
            check_magic(&[])?;
        }
        if self.total < HEADER_LEN + CRC_LEN {
            return Err(Error::malformed(format!(
                "truncated: {} bytes is shorter than the smallest save",
                self.total
            )));
        }
        let expected = read_u32(&self.trailer, 0);
        let found = self.hasher.finalize();
        if expected != found {
            return Err(Error::ChecksumMismatch { expected, found });
        }
        Ok(())
    }
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
