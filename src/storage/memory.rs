//! [`MemoryStorage`]: named blobs in memory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Head, LockTable, Storage, StorageLock, StoredFile, backup_name};
use crate::error::{Error, Result};

/// Save files kept in memory, for tests and tools, or for a platform whose own layer persists
/// a blob store. Writes are atomic (a map update under a mutex); nothing is durable beyond the
/// process. Clones share the same files.
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

    /// Stores `bytes` under `name` directly, with no backup rotation: for tests that plant a
    /// damaged or foreign file.
    pub fn put(&self, name: &str, bytes: Vec<u8>) {
        self.files().insert(name.to_owned(), Arc::new(bytes));
    }

    fn files(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Vec<u8>>>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for MemoryStorage {
    fn locate(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("memory:{name}"))
    }

    fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let Some(bytes) = self.files().get(name).cloned() else {
            return Ok(None);
        };
        if bytes.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: self.locate(name),
                size: bytes.len() as u64,
                limit,
            });
        }
        Ok(Some(bytes.as_ref().clone()))
    }

    fn read_at(&self, name: &str, offset: u64, len: usize) -> Result<Option<Head>> {
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

    fn append(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let mut files = self.files();
        let mut contents = files
            .get(name)
            .map(|b| b.as_ref().clone())
            .unwrap_or_default();
        contents.extend_from_slice(bytes);
        files.insert(name.to_owned(), Arc::new(contents));
        Ok(())
    }

    fn write(&self, name: &str, bytes: &[u8], keep_previous: u32) -> Result<()> {
        let mut files = self.files();
        if keep_previous > 0
            && let Some(old) = files.get(name).cloned()
        {
            for i in (1..keep_previous).rev() {
                if let Some(b) = files.remove(&backup_name(name, i)) {
                    files.insert(backup_name(name, i + 1), b);
                }
            }
            files.insert(backup_name(name, 1), old);
        }
        files.insert(name.to_owned(), Arc::new(bytes.to_vec()));
        Ok(())
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.files().remove(name);
        Ok(())
    }

    fn list(&self) -> Result<Vec<StoredFile>> {
        Ok(self
            .files()
            .iter()
            .map(|(name, bytes)| StoredFile {
                name: name.clone(),
                len: bytes.len() as u64,
            })
            .collect())
    }

    fn lock(&self, name: &str) -> Result<StorageLock> {
        Ok(self.locks.lock(name))
    }
}
