//! The storage trait's defaults, and the lock table.

use super::*;

#[test]
fn lock_table_excludes_other_holders_until_release() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let table = Arc::new(LockTable::default());
    let first = table.lock("a");
    let _other_name = table.lock("b");
    let acquired = Arc::new(AtomicBool::new(false));
    let thread = {
        let (table, acquired) = (Arc::clone(&table), Arc::clone(&acquired));
        std::thread::spawn(move || {
            let _second = table.lock("a");
            acquired.store(true, Ordering::SeqCst);
        })
    };
    // Evidence, not a guessed while: the thread found "a" held and waits (the counter is
    // raised under the table's mutex, which the wait gives up, so the release below comes
    // once the thread waits). A lock that does not exclude lets the thread finish instead.
    while table.waiting.load(Ordering::SeqCst) == 0 && !thread.is_finished() {
        std::thread::yield_now();
    }
    assert!(!acquired.load(Ordering::SeqCst));
    drop(first);
    thread.join().unwrap();
    assert!(acquired.load(Ordering::SeqCst));
}

/// What `read_pieces` handed over, piece by piece, reading `name` in pieces of `piece`
/// bytes, stopping after `stop_after` pieces.
fn pieces_of(
    storage: &dyn Storage,
    name: &str,
    piece: usize,
    stop_after: usize,
) -> (Option<u64>, Vec<Vec<u8>>) {
    let mut got = Vec::new();
    let len = storage
        .read_pieces(name, piece, &mut |p| {
            got.push(p.to_vec());
            got.len() < stop_after
        })
        .unwrap();
    (len, got)
}

#[test]
fn read_pieces_hands_over_the_whole_object_in_order_in_pieces_of_at_most_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FsStorage::new(dir.path()).unwrap();
    let memory = MemoryStorage::new();
    let bytes: Vec<u8> = (0..10_007u32).map(|i| (i * 31 % 251) as u8).collect();
    // The file system's own (one open file, one buffer); the file system default (its
    // read_at, over the simulated file system); the storage default over read_at; and the
    // storage default over one whole read.
    let sim = FsStorage::with_file_system("/saves", SimFs::new()).unwrap();
    let whole = Whole(MemoryStorage::new());
    for storage in [&fs as &dyn Storage, &sim, &memory, &whole] {
        storage.put("a", &bytes).unwrap();
        storage.put("empty", &[]).unwrap();
        for piece in [1, 7, 4096, 10_007, 1 << 20] {
            let (len, got) = pieces_of(storage, "a", piece, usize::MAX);
            assert_eq!(len, Some(bytes.len() as u64));
            assert!(got.iter().all(|p| !p.is_empty() && p.len() <= piece));
            assert_eq!(got.concat(), bytes, "pieces of {piece}");
        }
        let (len, got) = pieces_of(storage, "a", 100, 3);
        assert_eq!((len, got.concat()), (Some(10_007), bytes[..300].to_vec()));
        assert_eq!(
            pieces_of(storage, "empty", 100, usize::MAX),
            (Some(0), vec![])
        );
        assert_eq!(
            pieces_of(storage, "missing", 100, usize::MAX),
            (None, vec![])
        );
    }
}

/// A storage with only the required methods: it does not read ranges.
#[derive(Debug)]
struct Whole(MemoryStorage);

impl Storage for Whole {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.0.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.0.put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.0.delete(name)
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        self.0.list()
    }
}

/// A storage whose object changes after the first range is read: `append` bytes are added
/// to it, or, with `append` empty, it is deleted.
#[derive(Debug)]
struct Changing {
    inner: MemoryStorage,
    append: Vec<u8>,
    reads: std::sync::atomic::AtomicUsize,
}

impl Storage for Changing {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.inner.put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        self.inner.list()
    }
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        let head = self.inner.read_at(name, offset, len)?;
        let reads = self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if reads == 0 {
            if self.append.is_empty() {
                self.inner.delete(name)?;
            } else if let Some(mut bytes) = self.inner.read(name, u64::MAX)? {
                bytes.extend_from_slice(&self.append);
                self.inner.put(name, &bytes)?;
            }
        }
        Ok(head)
    }
    fn reads_ranges(&self) -> bool {
        true
    }
}

#[test]
fn read_pieces_stops_at_a_change_of_length_and_says_the_new_one() {
    let changing = |append: &[u8]| {
        let storage = Changing {
            inner: MemoryStorage::new(),
            append: append.to_vec(),
            reads: 0.into(),
        };
        storage.put("a", &[7; 1000]).unwrap();
        storage
    };
    // Grown after the first piece: the first piece is handed over, then the read stops
    // with the new length, which a caller expecting 1000 bytes tells from damage.
    let (len, got) = pieces_of(&changing(&[1; 24]), "a", 400, usize::MAX);
    assert_eq!((len, got), (Some(1024), vec![vec![7; 400]]));
    // Gone after the first piece: the read says there is no object.
    let (len, got) = pieces_of(&changing(&[]), "a", 400, usize::MAX);
    assert_eq!((len, got), (None, vec![vec![7; 400]]));

    // The file system default, over the simulated file system: a file grown mid-read.
    let fs = SimFs::new();
    let sim = FsStorage::with_file_system("/saves", fs.clone()).unwrap();
    sim.put("a", &[7; 1000]).unwrap();
    let mut got = Vec::new();
    let len = sim
        .read_pieces("a", 400, &mut |p| {
            if got.is_empty() {
                fs.set_file("/saves/a", vec![7; 1024]);
            }
            got.push(p.to_vec());
            true
        })
        .unwrap();
    assert_eq!((len, got), (Some(1024), vec![vec![7; 400]]));
}

#[test]
fn a_file_cut_short_mid_read_hands_over_fewer_bytes_than_the_length_it_returns() {
    // The one-open-file read: the length it returns is the one the read began with, and
    // the bytes handed over stop where the file now ends, so the two disagree.
    let dir = tempfile::tempdir().unwrap();
    let fs = FsStorage::new(dir.path()).unwrap();
    fs.put("a", &[7; 10_000]).unwrap();
    let path = dir.path().join("a");
    let mut got = Vec::new();
    let len = fs
        .read_pieces("a", 1000, &mut |p| {
            if got.is_empty() {
                let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len(2500).unwrap();
            }
            got.push(p.to_vec());
            true
        })
        .unwrap();
    assert_eq!(len, Some(10_000));
    assert_eq!(got.concat(), vec![7; 2500]);
}
