//! Reading and checking a slot's files: headers, the CRC of a whole stored file (a piece at a
//! time), and the checks every opened file of a slot must pass (its slot, its schema version,
//! its encryption).

use std::io;
use std::sync::Arc;

use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::{self, FileKind, Header, Key, Trust};
use crate::slot::SlotId;
use crate::snapshot::{SealWith, Sealing, Snapshot};
use crate::storage::{Head, Storage, TooLarge};

/// How many bytes a load menu reads first from each file: the fixed header and, usually, all of
/// the metadata (a label, an app version, a few fields). A file whose metadata is longer (a
/// thumbnail) is read a second time, for exactly its header and metadata.
pub(super) const HEAD_READ: usize = 512;

/// Where a manager's files are, and what every one of them must be: the storage, the key, the
/// game's schema version, the size cap.
#[derive(Debug)]
pub(crate) struct Files {
    pub(super) storage: Arc<dyn Storage>,
    pub(super) key: Option<Key>,
    /// With the key: authenticate saves (integrity-only) instead of encrypting them.
    pub(super) integrity_only: bool,
    pub(super) allow_unencrypted: bool,
    pub(super) schema_version: u32,
    pub(super) max_file_size: u64,
    /// How what the manager writes is compressed.
    pub(super) compression: Compression,
    /// How many threads may encode a save's captured mementos, and seal or open an encrypted
    /// file's segments, at once.
    pub(super) threads: usize,
}

impl Files {
    /// How the manager seals what it writes: with its key, encrypted or (integrity-only)
    /// authenticated; without one, plain.
    pub(super) fn sealing(&self) -> Sealing<'_> {
        match &self.key {
            Some(key) if self.integrity_only => Sealing::Authenticated(key),
            Some(key) => Sealing::Encrypted(key),
            None => Sealing::Plain,
        }
    }

    /// How the manager writes a file expected to be about `size_hint` bytes long (0: unknown).
    pub(super) fn seal_with(&self, size_hint: usize) -> SealWith<'_> {
        SealWith {
            sealing: self.sealing(),
            compression: self.compression,
            threads: self.threads,
            size_hint,
        }
    }

    /// What protection the manager's files must have, with its key: the key's mode
    /// (encrypted, or integrity-only), plus plain files when it allows them; plain files alone
    /// without a key.
    pub(super) fn trust(&self) -> Trust<'_> {
        Trust::of_manager(
            self.key.as_ref(),
            self.integrity_only,
            self.allow_unencrypted,
        )
    }

    /// The crate's error for the storage's error `e` on `name`: the path added, and the read
    /// cap exceeded (a [`storage::too_large`](crate::storage::too_large) error, which carries
    /// the object's size) as [`Error::TooLarge`]. Any other error, `FileTooLarge` from a write
    /// (EFBIG: a file-size limit, a file system's largest file) among them, is [`Error::Io`]
    /// with its path and kind: `TooLarge` only ever means the read cap.
    pub(super) fn error(&self, name: &str, e: io::Error) -> Error {
        let path = self.storage.locate(name);
        let over_cap = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<TooLarge>())
            .map(|t| t.size);
        match over_cap {
            Some(size) if e.kind() == io::ErrorKind::FileTooLarge => Error::TooLarge {
                path,
                size,
                limit: self.max_file_size,
            },
            _ => Error::io(path, e),
        }
    }

    /// Reads the whole of `name`, capped at the manager's size cap.
    pub(super) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.storage
            .read(name, self.max_file_size)
            .map_err(|e| self.error(name, e))
    }

    /// Reads up to `len` bytes of `name` from `offset`.
    pub(super) fn read_at(&self, name: &str, offset: u64, len: usize) -> Result<Option<Head>> {
        self.storage
            .read_at(name, offset, len)
            .map_err(|e| self.error(name, e))
    }

    /// Whether `name` exists, from a read of none of its bytes.
    pub(super) fn exists(&self, name: &str) -> Result<bool> {
        self.storage
            .read_head(name, 0)
            .map(|h| h.is_some())
            .map_err(|e| self.error(name, e))
    }

    /// Puts `bytes` as `name`, atomically and durably.
    pub(super) fn put(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.storage
            .put(name, bytes)
            .map_err(|e| self.error(name, e))
    }

    /// Deletes `name`, durably.
    pub(super) fn delete(&self, name: &str) -> Result<()> {
        self.storage.delete(name).map_err(|e| self.error(name, e))
    }

    /// Every object in the storage.
    pub(super) fn list(&self) -> Result<Vec<String>> {
        self.storage.list_names().map_err(|e| self.error("", e))
    }

    /// Checks the whole stored file `name`, `len` bytes long, against its CRC32: a piece at a
    /// time (never held in memory whole) where the storage reads ranges, else read once.
    pub(super) fn check_stored(&self, name: &str, len: u64) -> Result<()> {
        if !self.storage.reads_ranges() {
            return match self.read(name)? {
                Some(bytes) if bytes.len() as u64 == len => format::check_crc(&bytes),
                _ => Err(Error::malformed("the file changed while it was checked")),
            };
        }
        // One read of the file, a piece at a time into one buffer where the storage can.
        let mut check = format::CrcCheck::new(len)?;
        let mut failed = None;
        let read = self
            .storage
            .read_pieces(name, format::CRC_PIECE, &mut |piece| {
                check.update(piece).map_err(|e| failed = Some(e)).is_ok()
            });
        match (read.map_err(|e| self.error(name, e))?, failed) {
            (_, Some(e)) => Err(e),
            (Some(found), None) if found == len => check.finish(),
            _ => Err(Error::malformed("the file changed while it was checked")),
        }
    }

    /// Opens one full-save file of `slot`: every check, then the snapshot (not migrated).
    pub(super) fn open_base(&self, slot: SlotId, bytes: Vec<u8>) -> Result<(Snapshot, Header)> {
        let opened = format::open(
            bytes,
            FileKind::Save,
            self.trust(),
            self.max_file_size,
            self.threads,
        )?;
        let header = opened.header.clone();
        self.check_file(slot, &header)?;
        Ok((Snapshot::from_opened(opened), header))
    }

    /// The checks every file of a slot must pass once opened.
    pub(super) fn check_file(&self, slot: SlotId, header: &Header) -> Result<()> {
        self.trust().admit(header.protection())?;
        if header.slot != slot {
            return Err(Error::SlotMismatch {
                expected: slot,
                found: header.slot,
            });
        }
        if header.schema_version > self.schema_version {
            return Err(Error::NewerSchema {
                found: header.schema_version,
                supported: self.schema_version,
            });
        }
        Ok(())
    }

    /// Reads and parses the header of `file`: `None` when it does not exist.
    pub(super) fn read_header(&self, file: &str) -> Result<Option<(Header, u64)>> {
        self.read_header_at(file, 0, true)
    }

    /// Reads and parses the header of the file, or of the journal record at `offset` of it:
    /// `(header, file length)`. With `whole_file`, the header's lengths must add up to the
    /// file's.
    pub(super) fn read_header_at(
        &self,
        file: &str,
        offset: u64,
        whole_file: bool,
    ) -> Result<Option<(Header, u64)>> {
        let Some(head) = self.read_at(file, offset, HEAD_READ)? else {
            return Ok(None);
        };
        let needed = format::header_len(&head.bytes)?;
        let head = if needed > head.bytes.len() && (needed as u64) <= head.file_len {
            match self.read_at(file, offset, needed)? {
                Some(head) => head,
                None => return Ok(None),
            }
        } else {
            head
        };
        let file_len = whole_file.then_some(head.file_len);
        let header = format::parse_header(&head.bytes, file_len)?;
        Ok(Some((header, head.file_len)))
    }
}

/// Checks a whole file's magic, CRC and header, without decrypting it.
pub(super) fn check_sound(bytes: &[u8]) -> Result<Header> {
    format::check_crc(bytes)?;
    format::parse_header(bytes, Some(bytes.len() as u64))
}
