//! [`FileSealer`]: the builder of a whole save file's bytes from a snapshot, with every option
//! of the `seal_file*` methods and compression, for tools that write files.

use std::fmt;

use super::Snapshot;
use super::seal::{SealWith, Sealing};
use crate::compression::Compression;
use crate::error::Result;
// The errors the docs name.
#[cfg(doc)]
use crate::error::Error;
use crate::format::Key;
use crate::slot::SlotId;

impl Snapshot {
    /// A builder for the bytes of a whole save file holding this snapshot, with every option
    /// the `seal_file*` methods have and [compression](FileSealer::compression): for tools
    /// that write files. Plain, uncompressed and stamped with the current time unless told
    /// otherwise.
    ///
    /// ```
    /// # #[cfg(feature = "lz4")] {
    /// use savegame::{Codec, Compression, Key, SlotId, Snapshot};
    ///
    /// let mut snapshot = Snapshot::new(Codec::Json);
    /// snapshot.capture_memento("world", &vec![7u32; 10_000])?;
    /// let key = Key::from_bytes([7; 32]);
    /// let bytes = snapshot
    ///     .sealer(SlotId::Numbered(1), 1, 1)
    ///     .encrypt(&key)
    ///     .compression(Compression::Lz4)
    ///     .build()?;
    /// let (header, opened) = Snapshot::open_file(bytes, Some(&key))?;
    /// assert_eq!(header.compression, Compression::Lz4);
    /// assert_eq!(opened.memento::<Vec<u32>>("world")?, vec![7u32; 10_000]);
    /// # }
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn sealer(&self, slot: SlotId, schema_version: u32, generation: u64) -> FileSealer<'_> {
        FileSealer {
            snapshot: self,
            slot,
            schema_version,
            generation,
            saved_at: None,
            sealing: Sealing::Plain,
            compression: Compression::None,
            threads: 1,
        }
    }
}

/// The bytes of a whole save file holding a snapshot, as [`Snapshot::sealer`] is told: its
/// protection (plain, [`encrypt`](Self::encrypt)ed or [`authenticate`](Self::authenticate)d),
/// its [`compression`](Self::compression) and its time stamp.
#[must_use]
pub struct FileSealer<'a> {
    snapshot: &'a Snapshot,
    slot: SlotId,
    schema_version: u32,
    generation: u64,
    saved_at: Option<std::time::SystemTime>,
    sealing: Sealing<'a>,
    compression: Compression,
    threads: usize,
}

impl<'a> FileSealer<'a> {
    /// Encrypts the file with `key` (AES-256-GCM, a fresh random nonce), as
    /// [`Snapshot::seal_file`] with a key does.
    pub fn encrypt(mut self, key: &'a Key) -> Self {
        self.sealing = Sealing::Encrypted(key);
        self
    }

    /// Makes the file integrity-only under `key`, as [`Snapshot::seal_file_authenticated`]
    /// does.
    pub fn authenticate(mut self, key: &'a Key) -> Self {
        self.sealing = Sealing::Authenticated(key);
        self
    }

    /// Stamps the file `saved_at` (millisecond precision) instead of the current time.
    pub fn saved_at(mut self, saved_at: std::time::SystemTime) -> Self {
        self.saved_at = Some(saved_at);
        self
    }

    /// Compresses the body before it is sealed (default [`Compression::None`]). A body that
    /// would not get smaller is written uncompressed, except a Zstandard document over 1 MiB,
    /// compressed as it is encoded, 512 KiB at a time (it stays compressed, a few bytes longer:
    /// `docs/format.md`, "Compressed bodies").
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Encodes the captured mementos, and encrypts the file's segments, on up to `threads`
    /// threads (default 1), as a manager's [`threads`](crate::ManagerBuilder::threads) does.
    /// The bytes are the same as with one.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The file's bytes.
    ///
    /// # Errors
    /// As for [`Snapshot::seal_file`]; [`Error::FeatureDisabled`] when the compression's, the
    /// cipher's or the MAC's feature is missing from this build; [`Error::Config`] for a zstd
    /// level zstd does not have.
    pub fn build(self) -> Result<Vec<u8>> {
        let saved_at = self.saved_at.unwrap_or_else(crate::format::now);
        self.snapshot.seal_file_with(
            self.slot,
            self.schema_version,
            self.generation,
            saved_at,
            SealWith {
                threads: self.threads,
                ..SealWith::new(self.sealing, self.compression)
            },
        )
    }
}

impl fmt::Debug for FileSealer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSealer")
            .field("slot", &self.slot)
            .field("schema_version", &self.schema_version)
            .field("generation", &self.generation)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}
