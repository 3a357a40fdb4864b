//! The working set an IndexedDB manager runs against: the [`Storage`] the manager sees, in
//! memory, filled from the database before each operation and committed to it after.
//!
//! IndexedDB is asynchronous and [`Storage`] is not, so the manager never talks to the database
//! itself. Before an operation, [`IndexedDbSaves`](crate::IndexedDbSaves) loads the head
//! record of every object (its length and first bytes) and the whole bytes of the objects the
//! operation will read; the manager then runs its policy synchronously against this set, which
//! records what it changed; the changes go to the database in one transaction; only when that
//! transaction completes does the async call return `Ok`. A failed commit rolls this set back.
//!
//! So a `put` here is *not* durable when it returns: this type keeps the [`Storage`] contract
//! only as part of that whole, and is never handed out on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use savegame::storage::{Head, Storage, StoredFile, too_large};

/// How many leading bytes of each object its head record keeps, at least: what the manager
/// reads first from each save for a load menu (a header and, usually, all its metadata).
pub(crate) const HEAD_BYTES: usize = 4096;

/// The bytes a head record keeps of `bytes`: [`HEAD_BYTES`], or the whole header and metadata
/// of a save whose metadata is longer (a thumbnail), so that a load menu never needs more.
pub(crate) fn head_of(bytes: &[u8]) -> &[u8] {
    let wanted = savegame::format::header_len(bytes)
        .unwrap_or(0)
        .max(HEAD_BYTES);
    &bytes[..wanted.min(bytes.len())]
}

/// One object as this set knows it.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// Only its head record: the length and the first bytes.
    Head { len: u64, head: Arc<Vec<u8>> },
    /// All of it.
    Full(Arc<Vec<u8>>),
}

impl Entry {
    fn len(&self) -> u64 {
        match self {
            Entry::Head { len, .. } => *len,
            Entry::Full(bytes) => bytes.len() as u64,
        }
    }
}

/// A change to commit: the object's new bytes, or `None` to delete it.
pub(crate) type Change = (String, Option<Arc<Vec<u8>>>);

#[derive(Debug, Default)]
struct Inner {
    entries: BTreeMap<String, Entry>,
    /// The state before the operation of every name it changed (`None`: it did not exist).
    before: BTreeMap<String, Option<Entry>>,
    /// Names whose bytes the operation wanted and this set did not have.
    misses: BTreeSet<String>,
}

/// The manager's storage in a browser: see the module docs.
#[derive(Debug, Default)]
pub(crate) struct WorkingSet {
    inner: Mutex<Inner>,
}

/// What a read of an object that is not loaded returns: the operation is run again once the
/// object has been fetched, so no caller ever acts on it.
fn not_loaded(name: &str) -> io::Error {
    io::Error::other(format!("{name} is not loaded from IndexedDB yet"))
}

impl WorkingSet {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts over from the database's head records: every object known by its head alone.
    pub(crate) fn reset(&self, heads: Vec<(String, u64, Vec<u8>)>) {
        let mut inner = self.inner();
        inner.before.clear();
        inner.misses.clear();
        inner.entries = heads
            .into_iter()
            .map(|(name, len, head)| {
                let entry = if head.len() as u64 == len {
                    Entry::Full(Arc::new(head))
                } else {
                    Entry::Head {
                        len,
                        head: Arc::new(head),
                    }
                };
                (name, entry)
            })
            .collect();
    }

    /// The names whose bytes are not loaded, of those `wanted` picks.
    pub(crate) fn unloaded(&self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        self.inner()
            .entries
            .iter()
            .filter(|(name, entry)| matches!(entry, Entry::Head { .. }) && wanted(name))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Fills in the whole bytes of `name` as read from the database (`None`: it is gone).
    pub(crate) fn fill(&self, name: &str, bytes: Option<Vec<u8>>) {
        let mut inner = self.inner();
        match bytes {
            Some(bytes) => inner
                .entries
                .insert(name.to_owned(), Entry::Full(Arc::new(bytes))),
            None => inner.entries.remove(name),
        };
    }

    /// The names the operation wanted and could not read, cleared.
    pub(crate) fn take_misses(&self) -> Vec<String> {
        std::mem::take(&mut self.inner().misses)
            .into_iter()
            .collect()
    }

    /// Undoes every change since the last [`changes`](Self::changes) was committed or rolled
    /// back.
    pub(crate) fn rollback(&self) {
        let mut inner = self.inner();
        let before = std::mem::take(&mut inner.before);
        for (name, entry) in before {
            match entry {
                Some(entry) => inner.entries.insert(name, entry),
                None => inner.entries.remove(&name),
            };
        }
    }

    /// What the operation changed, as the final state of each name it touched: what to commit.
    pub(crate) fn changes(&self) -> Vec<Change> {
        let inner = self.inner();
        inner
            .before
            .iter()
            .filter_map(|(name, before)| {
                let now = inner.entries.get(name);
                let same = match (before, now) {
                    (None, None) => true,
                    (Some(Entry::Full(a)), Some(Entry::Full(b))) => Arc::ptr_eq(a, b) || a == b,
                    _ => false,
                };
                if same {
                    return None;
                }
                let bytes = match now {
                    Some(Entry::Full(bytes)) => Some(Arc::clone(bytes)),
                    // Only puts change an entry, and a put makes it whole.
                    Some(Entry::Head { .. }) | None => None,
                };
                Some((name.clone(), bytes))
            })
            .collect()
    }

    /// The changes are committed: they are the new state to build on.
    pub(crate) fn committed(&self) {
        self.inner().before.clear();
    }

    /// Keeps `name`'s state before its first change of this operation.
    fn touch(inner: &mut Inner, name: &str) {
        if !inner.before.contains_key(name) {
            let old = inner.entries.get(name).cloned();
            inner.before.insert(name.to_owned(), old);
        }
    }

    /// Whole bytes of `name`, or a miss.
    fn bytes(&self, name: &str, limit: u64) -> io::Result<Option<Arc<Vec<u8>>>> {
        let mut inner = self.inner();
        match inner.entries.get(name) {
            None => Ok(None),
            Some(entry) if entry.len() > limit => Err(too_large(entry.len())),
            Some(Entry::Full(bytes)) => Ok(Some(Arc::clone(bytes))),
            Some(Entry::Head { .. }) => {
                inner.misses.insert(name.to_owned());
                Err(not_loaded(name))
            }
        }
    }
}

impl Storage for WorkingSet {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        Ok(self.bytes(name, limit)?.map(|b| b.to_vec()))
    }

    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut inner = self.inner();
        Self::touch(&mut inner, name);
        inner
            .entries
            .insert(name.to_owned(), Entry::Full(Arc::new(bytes.to_vec())));
        Ok(())
    }

    /// `first` (the backup rotation), then the put: no staged copy, since nothing here is
    /// stored before the one transaction that commits every change of the operation or none.
    /// (The default would copy a 10 MB save twice more in memory, and compare it once.)
    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        first()?;
        self.put(name, bytes)
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let mut inner = self.inner();
        if inner.entries.contains_key(name) {
            Self::touch(&mut inner, name);
            inner.entries.remove(name);
        }
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<StoredFile>> {
        Ok(self
            .inner()
            .entries
            .iter()
            .map(|(name, entry)| StoredFile {
                name: name.clone(),
                len: entry.len(),
            })
            .collect())
    }

    /// Served from the head record when the range lies in it: a load menu reads no save whole.
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        let mut inner = self.inner();
        let (file_len, bytes) = match inner.entries.get(name) {
            None => return Ok(None),
            Some(Entry::Full(bytes)) => (bytes.len() as u64, Arc::clone(bytes)),
            Some(Entry::Head {
                len: file_len,
                head,
            }) => {
                let end = offset.saturating_add(len as u64).min(*file_len);
                if end > head.len() as u64 {
                    inner.misses.insert(name.to_owned());
                    return Err(not_loaded(name));
                }
                (*file_len, Arc::clone(head))
            }
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let end = start.saturating_add(len).min(bytes.len());
        Ok(Some(Head {
            bytes: bytes[start..end].to_vec(),
            file_len,
        }))
    }

    /// Shares the bytes: a backup costs no copy in memory, and one put in the commit.
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        let Some(bytes) = self.bytes(from, u64::MAX)? else {
            return Ok(false);
        };
        let mut inner = self.inner();
        Self::touch(&mut inner, to);
        inner.entries.insert(to.to_owned(), Entry::Full(bytes));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_with(name: &str, bytes: &[u8], head: usize) -> WorkingSet {
        let set = WorkingSet::default();
        set.reset(vec![(
            name.into(),
            bytes.len() as u64,
            bytes[..head].to_vec(),
        )]);
        set
    }

    #[test]
    fn a_head_serves_ranges_inside_it_and_misses_outside() {
        let bytes: Vec<u8> = (0..=255).collect();
        let set = set_with("a", &bytes, 16);
        let head = set.read_at("a", 0, 16).unwrap().unwrap();
        assert_eq!((head.bytes.as_slice(), head.file_len), (&bytes[..16], 256));
        assert!(set.take_misses().is_empty());
        assert!(set.read("a", u64::MAX).is_err());
        assert!(set.read_at("a", 8, 16).is_err());
        assert_eq!(set.take_misses(), ["a"]);
        set.fill("a", Some(bytes.clone()));
        assert_eq!(set.read("a", u64::MAX).unwrap().unwrap(), bytes);
    }

    #[test]
    fn the_size_cap_is_checked_from_the_head_record() {
        let set = set_with("a", &[7; 100], 10);
        let e = set.read("a", 50).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(set.take_misses().is_empty());
    }

    #[test]
    fn changes_are_final_states_and_a_rollback_restores_the_old_ones() {
        let set = set_with("a", b"old", 3);
        set.put("a.new", b"new").unwrap();
        set.copy("a", "a.bak1").unwrap();
        set.put("a", b"new").unwrap();
        set.delete("a.new").unwrap();
        let mut changes = set.changes();
        changes.sort();
        let shown: Vec<(String, Option<Vec<u8>>)> = changes
            .into_iter()
            .map(|(n, b)| (n, b.map(|b| b.to_vec())))
            .collect();
        assert_eq!(
            shown,
            [
                ("a".into(), Some(b"new".to_vec())),
                ("a.bak1".into(), Some(b"old".to_vec())),
            ]
        );
        set.rollback();
        assert!(set.changes().is_empty());
        assert_eq!(set.read("a", 10).unwrap().unwrap(), b"old");
        assert_eq!(set.read("a.bak1", 10).unwrap(), None);
    }
}
