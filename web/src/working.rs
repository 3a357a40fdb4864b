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

/// Where an object's bytes are in the database: in `objects` under a name (the first layout
/// kept each object there, under its own name), or in `blobs` under a key of their own. Two
/// names may share one place: a backup is the file it was, not a copy of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Loc {
    /// `objects[name]`.
    Object(String),
    /// `blobs[key]`.
    Blob(String),
}

/// One object as this set knows it.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// Only its head record: the length and the first bytes, and where the rest is.
    Head {
        len: u64,
        head: Arc<Vec<u8>>,
        at: Loc,
    },
    /// All of it; `at` is where these bytes are stored, `None` for bytes this operation put.
    Full {
        bytes: Arc<Vec<u8>>,
        at: Option<Loc>,
    },
}

impl Entry {
    fn len(&self) -> u64 {
        match self {
            Entry::Head { len, .. } => *len,
            Entry::Full { bytes, .. } => bytes.len() as u64,
        }
    }

    fn stored(&self) -> Option<&Loc> {
        match self {
            Entry::Head { at, .. } => Some(at),
            Entry::Full { at, .. } => at.as_ref(),
        }
    }

    /// Whether the database needs no write to hold `self` where it holds `before`.
    fn same_as(&self, before: &Entry) -> bool {
        match (before.stored(), self.stored(), before, self) {
            (Some(a), Some(b), _, _) => a == b,
            (_, _, Entry::Full { bytes: a, .. }, Entry::Full { bytes: b, .. }) => {
                Arc::ptr_eq(a, b) || a == b
            }
            _ => false,
        }
    }
}

/// An object as the database lists it: its name, length, head record bytes and place.
pub(crate) type Listed = (String, u64, Vec<u8>, Loc);

/// What an operation changed, as the writes of one transaction.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// New bytes, each under a fresh key in `blobs`.
    pub(crate) blobs: Vec<(String, Arc<Vec<u8>>)>,
    /// Each name set: its length, head record bytes and place.
    pub(crate) names: Vec<Listed>,
    /// Names deleted.
    pub(crate) deleted: Vec<String>,
    /// Places no name refers to any more: their bytes are deleted.
    pub(crate) garbage: Vec<Loc>,
}

impl Changes {
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty() && self.deleted.is_empty()
    }
}

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

    /// Starts over from the database's listing: every object known by its head record (whole,
    /// when the head record holds all of it).
    pub(crate) fn reset(&self, listed: Vec<Listed>) {
        let mut inner = self.inner();
        inner.before.clear();
        inner.misses.clear();
        inner.entries = listed
            .into_iter()
            .map(|(name, len, head, at)| {
                let entry = if head.len() as u64 == len {
                    Entry::Full {
                        bytes: Arc::new(head),
                        at: Some(at),
                    }
                } else {
                    Entry::Head {
                        len,
                        head: Arc::new(head),
                        at,
                    }
                };
                (name, entry)
            })
            .collect();
    }

    /// The names whose bytes are not loaded, of those `wanted` picks, with their places.
    pub(crate) fn unloaded(&self, wanted: impl Fn(&str) -> bool) -> Vec<(String, Loc)> {
        self.inner()
            .entries
            .iter()
            .filter_map(|(name, entry)| match entry {
                Entry::Head { at, .. } if wanted(name) => Some((name.clone(), at.clone())),
                _ => None,
            })
            .collect()
    }

    /// Fills in the whole bytes of `name` as read from the database (`None`: it is gone).
    pub(crate) fn fill(&self, name: &str, bytes: Option<Vec<u8>>) {
        let mut inner = self.inner();
        let at = inner.entries.get(name).and_then(|e| e.stored().cloned());
        match bytes {
            Some(bytes) => inner.entries.insert(
                name.to_owned(),
                Entry::Full {
                    bytes: Arc::new(bytes),
                    at,
                },
            ),
            None => inner.entries.remove(name),
        };
    }

    /// The names the operation wanted and could not read, with their places, cleared.
    pub(crate) fn take_misses(&self) -> Vec<(String, Loc)> {
        let mut inner = self.inner();
        let misses = std::mem::take(&mut inner.misses);
        misses
            .into_iter()
            .filter_map(|name| {
                let at = inner.entries.get(&name)?.stored()?.clone();
                Some((name, at))
            })
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

    /// What the operation changed, as the writes that commit it: new bytes under keys from
    /// `new_key` (bytes put under two names are written once), the names set and deleted,
    /// and the places no name refers to any more.
    pub(crate) fn changes(&self, mut new_key: impl FnMut() -> String) -> Changes {
        let inner = self.inner();
        let mut out = Changes::default();
        let mut candidates = Vec::new();
        for (name, before) in &inner.before {
            let now = inner.entries.get(name);
            let same = match (before, now) {
                (None, None) => true,
                (Some(b), Some(n)) => n.same_as(b),
                _ => false,
            };
            if same {
                continue;
            }
            candidates.extend(before.as_ref().and_then(Entry::stored).cloned());
            let Some(entry) = now else {
                out.deleted.push(name.clone());
                continue;
            };
            let (at, head) = match entry {
                Entry::Head { head, at, .. } => (at.clone(), head.to_vec()),
                Entry::Full { bytes, at } => {
                    let at = at.clone().unwrap_or_else(|| {
                        let shared = out.blobs.iter().find(|(_, b)| Arc::ptr_eq(b, bytes));
                        let key = shared.map_or_else(&mut new_key, |(k, _)| k.clone());
                        if shared.is_none() {
                            out.blobs.push((key.clone(), Arc::clone(bytes)));
                        }
                        Loc::Blob(key)
                    });
                    (at, head_of(bytes).to_vec())
                }
            };
            out.names.push((name.clone(), entry.len(), head, at));
        }
        let kept: BTreeSet<&Loc> = inner
            .entries
            .values()
            .filter_map(Entry::stored)
            .chain(out.names.iter().map(|(_, _, _, at)| at))
            .collect();
        candidates.sort();
        candidates.dedup();
        out.garbage = candidates
            .into_iter()
            .filter(|loc| !kept.contains(loc))
            .collect();
        out
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
            Some(Entry::Full { bytes, .. }) => Ok(Some(Arc::clone(bytes))),
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
        let bytes = Arc::new(bytes.to_vec());
        inner
            .entries
            .insert(name.to_owned(), Entry::Full { bytes, at: None });
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
            Some(Entry::Full { bytes, .. }) => (bytes.len() as u64, Arc::clone(bytes)),
            Some(Entry::Head {
                len: file_len,
                head,
                ..
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

    /// Shares the object: a backup needs no bytes read, costs no copy in memory, and in the
    /// commit only a record that names the same place.
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        let mut inner = self.inner();
        let Some(entry) = inner.entries.get(from).cloned() else {
            return Ok(false);
        };
        Self::touch(&mut inner, to);
        inner.entries.insert(to.to_owned(), entry);
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
            Loc::Blob(format!("{name}-blob")),
        )]);
        set
    }

    fn keys() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("k{n}")
        }
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
        assert_eq!(
            set.take_misses(),
            [("a".into(), Loc::Blob("a-blob".into()))]
        );
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

    /// A save with its backup rotation: the new bytes are written once, the backup names the
    /// place the old file was (its bytes never read), the oldest backup's place is freed.
    #[test]
    fn a_rotation_writes_the_new_bytes_alone_and_frees_what_no_name_keeps() {
        let set = WorkingSet::default();
        set.reset(vec![
            ("a".into(), 100, vec![1; 10], Loc::Blob("old".into())),
            (
                "a.bak1".into(),
                100,
                vec![2; 10],
                Loc::Object("a.bak1".into()),
            ),
        ]);
        set.copy("a", "a.bak1").unwrap();
        set.put("a", b"new").unwrap();
        set.copy("a", "b").unwrap();
        assert!(set.take_misses().is_empty(), "a copy reads no bytes");
        let changes = set.changes(keys());
        let blobs: Vec<(&str, &[u8])> = changes
            .blobs
            .iter()
            .map(|(k, b)| (k.as_str(), b.as_slice()))
            .collect();
        assert_eq!(
            blobs,
            [("k1", &b"new"[..])],
            "bytes under two names are written once"
        );
        let names: Vec<(&str, u64, &Loc)> = changes
            .names
            .iter()
            .map(|(n, len, _, at)| (n.as_str(), *len, at))
            .collect();
        let (new, old) = (Loc::Blob("k1".into()), Loc::Blob("old".into()));
        assert_eq!(
            names,
            [("a", 3, &new), ("a.bak1", 100, &old), ("b", 3, &new)]
        );
        assert_eq!(changes.garbage, [Loc::Object("a.bak1".into())]);
        assert!(changes.deleted.is_empty());
    }

    #[test]
    fn a_deleted_name_frees_its_place_unless_another_name_keeps_it() {
        let set = WorkingSet::default();
        let shared = Loc::Blob("s".into());
        set.reset(vec![
            ("a".into(), 3, b"abc".to_vec(), shared.clone()),
            ("b".into(), 3, b"abc".to_vec(), shared.clone()),
        ]);
        set.delete("a").unwrap();
        let changes = set.changes(keys());
        assert_eq!(changes.deleted, ["a"]);
        assert!(changes.garbage.is_empty(), "b still names {shared:?}");
        set.delete("b").unwrap();
        assert_eq!(set.changes(keys()).garbage, [shared]);
    }

    #[test]
    fn an_unchanged_object_is_not_written_and_a_rollback_restores_the_old_state() {
        let set = set_with("a", b"old", 3);
        set.put("a", b"old").unwrap();
        assert!(
            set.changes(keys()).is_empty(),
            "the same bytes again: nothing to write"
        );
        set.put("a.new", b"new").unwrap();
        set.copy("a", "a.bak1").unwrap();
        set.put("a", b"new").unwrap();
        set.delete("a.new").unwrap();
        assert_eq!(set.changes(keys()).names.len(), 2);
        set.rollback();
        assert!(set.changes(keys()).is_empty());
        assert_eq!(set.read("a", 10).unwrap().unwrap(), b"old");
        assert_eq!(set.read("a.bak1", 10).unwrap(), None);
    }
}
