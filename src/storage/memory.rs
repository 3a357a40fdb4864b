//! [`MemoryStorage`]: named objects in memory.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Head, LockTable, Storage, StorageLock, StoredFile, too_large};

/// Save files kept in memory, for tests and tools, or for a platform whose own layer persists
/// a blob store. Puts are atomic (a map update under a mutex); nothing is durable beyond the
/// process. Clones share the same files and the same locks. It appends and copies in place, and
/// reads ranges.
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    files: Arc<Mutex<BTreeMap<String, Arc<Vec<u8>>>>>,
    locks: Arc<LockTable>,
}

impl MemoryStorage {
    /// An empty storage.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the bytes stored under `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        self.files().get(name).map(|b| b.as_ref().clone())
    }

    fn files(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Vec<u8>>>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for MemoryStorage {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let Some(bytes) = self.files().get(name).cloned() else {
            return Ok(None);
        };
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(Some(bytes.as_ref().clone()))
    }

    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.files()
            .insert(name.to_owned(), Arc::new(bytes.to_vec()));
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.files().remove(name);
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<StoredFile>> {
        Ok(self
            .files()
            .iter()
            .map(|(name, bytes)| StoredFile {
                name: name.clone(),
                len: bytes.len() as u64,
            })
            .collect())
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        Ok(self.files().get(name).map(|bytes| {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let end = start.saturating_add(len).min(bytes.len());
            Head {
                bytes: bytes[start..end].to_vec(),
                file_len: bytes.len() as u64,
            }
        }))
    }

    fn reads_ranges(&self) -> bool {
        true
    }

    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        let mut files = self.files();
        let Some(bytes) = files.get(from).cloned() else {
            return Ok(false);
        };
        files.insert(to.to_owned(), bytes);
        Ok(true)
    }

    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        // Nothing to stage: the bytes are safe in this call until they are put.
        first()?;
        self.put(name, bytes)
    }

    fn can_append(&self) -> bool {
        true
    }

    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut files = self.files();
        let mut contents = files
            .get(name)
            .map(|b| b.as_ref().clone())
            .unwrap_or_default();
        contents.extend_from_slice(bytes);
        files.insert(name.to_owned(), Arc::new(contents));
        Ok(())
    }

    fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> {
        Ok(Some(self.locks.lock(name)))
    }

    fn locate(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("memory:{name}"))
    }
}
