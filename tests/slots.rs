//! Slots and the load menu: list from headers alone, info, exists, delete, copy, the advisory
//! lock, and newer saves that are refused and never overwritten.

mod common;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use common::{dir_manager, expected_game, game_snapshot, key, restore_game};
use savegame::storage::{FsStorage, Head, Storage, StorageLock, StoredFile};
use savegame::{Error, SaveLoadManager, SlotId, SlotStatus};

/// A storage that counts what is read through it.
#[derive(Debug, Clone)]
struct Counting {
    inner: FsStorage,
    whole_reads: Arc<AtomicUsize>,
    head_bytes: Arc<AtomicU64>,
    locks: Arc<AtomicUsize>,
}

impl Counting {
    /// Real files in `dir`, with nothing counted yet.
    fn in_dir(dir: &std::path::Path) -> Self {
        Counting {
            inner: FsStorage::new(dir).unwrap(),
            whole_reads: Arc::default(),
            head_bytes: Arc::default(),
            locks: Arc::default(),
        }
    }
}

impl Storage for Counting {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.whole_reads.fetch_add(1, Ordering::SeqCst);
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
        if let Some(h) = &head {
            self.head_bytes
                .fetch_add(h.bytes.len() as u64, Ordering::SeqCst);
        }
        Ok(head)
    }
    fn read_pieces(
        &self,
        name: &str,
        piece: usize,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Option<u64>> {
        // Counted as ranges read: a piece at a time, never whole.
        self.inner.read_pieces(name, piece, &mut |bytes| {
            self.head_bytes
                .fetch_add(bytes.len() as u64, Ordering::SeqCst);
            each(bytes)
        })
    }
    fn reads_ranges(&self) -> bool {
        true
    }
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        self.inner.copy(from, to)
    }
    fn put_after(
        &self,
        name: &str,
        bytes: &[u8],
        first: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        self.inner.put_after(name, bytes, first)
    }
    fn can_append(&self) -> bool {
        true
    }
    fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.inner.append(name, bytes)
    }
    fn lock(&self, name: &str) -> io::Result<Option<StorageLock>> {
        self.locks.fetch_add(1, Ordering::SeqCst);
        self.inner.lock(name)
    }
    fn locate(&self, name: &str) -> PathBuf {
        self.inner.locate(name)
    }
}

#[test]
fn the_load_menu_of_a_hundred_big_slots_reads_only_headers() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::in_dir(dir.path());
    let manager = SaveLoadManager::builder()
        .storage(counting.clone())
        .key(key())
        .build()
        .unwrap();
    // One big save, copied (with its slot binding rewritten by a real save) to 100 slots.
    let snapshot = game_snapshot(&manager, 1, 3_000);
    let mut total = 0;
    for n in 0..100 {
        let snapshot = snapshot
            .clone()
            .with_label(format!("Level {n}"))
            .with_playtime(Duration::from_secs(60 * n as u64));
        total += manager.save(SlotId::Numbered(n), &snapshot).unwrap().bytes;
    }
    counting.whole_reads.store(0, Ordering::SeqCst);
    counting.head_bytes.store(0, Ordering::SeqCst);

    let menu = manager.list().unwrap();
    assert_eq!(menu.len(), 100);
    for (n, info) in menu.iter().enumerate() {
        assert_eq!(info.slot, SlotId::Numbered(n as u32));
        assert_eq!(info.status, SlotStatus::Ready);
        assert_eq!(info.label(), Some(format!("Level {n}").as_str()));
        assert_eq!(info.playtime(), Some(Duration::from_secs(60 * n as u64)));
        assert_eq!(info.app_version(), Some("1.0.0"));
        assert_eq!(info.schema_version(), Some(1));
        assert!(info.file_size > 100_000);
    }
    assert_eq!(
        counting.whole_reads.load(Ordering::SeqCst),
        0,
        "list read a whole file"
    );
    let head = counting.head_bytes.load(Ordering::SeqCst);
    assert!(head <= 100 * 4096, "list read {head} of {total} bytes");
}

#[test]
fn a_save_checks_the_file_it_replaces_in_full_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::in_dir(dir.path());
    let manager = SaveLoadManager::builder()
        .storage(counting.clone())
        .build()
        .unwrap();
    let slot = SlotId::Numbered(1);
    let mut previous = manager
        .save(slot, &game_snapshot(&manager, 1, 2_000))
        .unwrap()
        .bytes;
    // Its own file, then one another manager (another process) wrote: each is checked over
    // every byte before it becomes the backup, a piece at a time, never held whole.
    let other = SaveLoadManager::builder()
        .directory(dir.path())
        .build()
        .unwrap();
    for (seed, by) in [(2, &manager), (3, &other), (4, &manager)] {
        counting.whole_reads.store(0, Ordering::SeqCst);
        counting.head_bytes.store(0, Ordering::SeqCst);
        let saved = by.save(slot, &game_snapshot(by, seed, 2_000)).unwrap();
        if std::ptr::eq(by, &manager) {
            assert_eq!(
                counting.whole_reads.load(Ordering::SeqCst),
                0,
                "seed {seed}"
            );
            assert!(
                counting.head_bytes.load(Ordering::SeqCst) >= previous,
                "seed {seed}: the old file was not read in full"
            );
        }
        previous = saved.bytes;
    }
    assert_eq!(manager.info(slot).unwrap().header.unwrap().generation, 4);

    // Without backups nothing is kept, and only the header is read.
    let no_backups = SaveLoadManager::builder()
        .storage(counting.clone())
        .backups(0)
        .build()
        .unwrap();
    counting.whole_reads.store(0, Ordering::SeqCst);
    counting.head_bytes.store(0, Ordering::SeqCst);
    no_backups
        .save(slot, &game_snapshot(&no_backups, 5, 2_000))
        .unwrap();
    assert_eq!(counting.whole_reads.load(Ordering::SeqCst), 0);
    assert!(counting.head_bytes.load(Ordering::SeqCst) < previous / 2);
}

#[test]
fn a_load_reads_the_slot_once_and_takes_no_lock_when_nothing_saves_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::in_dir(dir.path());
    let manager = SaveLoadManager::builder()
        .storage(counting.clone())
        .key(key())
        .build()
        .unwrap();
    let slot = SlotId::Numbered(1);
    let mut snapshot = game_snapshot(&manager, 1, 100)
        .with_label("a label")
        .with_user_field("chapter", "2")
        .with_thumbnail(vec![7; 300]);
    snapshot.metadata_mut().playtime = Duration::from_secs(61);
    manager.save(slot, &snapshot).unwrap();
    let mut changes = manager.snapshot();
    changes.capture_memento("extra", &5u8).unwrap();
    manager.save_incremental(slot, &changes).unwrap();
    counting.whole_reads.store(0, Ordering::SeqCst);
    counting.locks.store(0, Ordering::SeqCst);
    let loaded = manager.load(slot).unwrap();
    assert_eq!(loaded.report.deltas, 1);
    // The base and the journal, read whole once each; no retry, no lock.
    assert_eq!(counting.whole_reads.load(Ordering::SeqCst), 2);
    assert_eq!(counting.locks.load(Ordering::SeqCst), 0);
}

#[test]
fn the_menu_marks_damaged_newer_and_keyed_saves() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .schema_version(2)
        .build()
        .unwrap();
    let v1 = dir_manager(dir.path());
    v1.save(SlotId::Numbered(1), &game_snapshot(&v1, 1, 10))
        .unwrap();
    v2.save(SlotId::Numbered(2), &game_snapshot(&v2, 2, 10))
        .unwrap();
    v1.save(SlotId::Numbered(3), &game_snapshot(&v1, 3, 10))
        .unwrap();
    v1.save(SlotId::Numbered(3), &game_snapshot(&v1, 4, 10))
        .unwrap();
    std::fs::write(
        v1.path_of(SlotId::Numbered(3)),
        b"\x89SAV\r\n\x1a\nnonsense",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"not a save").unwrap();

    let menu = v1.list().unwrap();
    let status: Vec<_> = menu.iter().map(|i| (i.slot, i.status.clone())).collect();
    assert_eq!(status[0], (SlotId::Numbered(1), SlotStatus::Ready));
    assert_eq!(
        status[1],
        (
            SlotId::Numbered(2),
            SlotStatus::NewerSchema {
                found: 2,
                supported: 1
            }
        )
    );
    assert!(matches!(
        status[2],
        (SlotId::Numbered(3), SlotStatus::Unreadable { .. })
    ));
    assert_eq!(menu.len(), 3, "notes.txt is not a slot");
    assert_eq!(menu[2].backups, 1, "slot 3 still has its backup");

    let keyless = SaveLoadManager::builder()
        .directory(dir.path())
        .build()
        .unwrap();
    assert_eq!(
        keyless.info(SlotId::Numbered(1)).unwrap().status,
        SlotStatus::NeedsKey
    );
}

#[test]
fn a_newer_save_is_refused_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let newer = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .schema_version(4)
        .build()
        .unwrap();
    let slot = SlotId::Numbered(5);
    newer.save(slot, &game_snapshot(&newer, 1, 10)).unwrap();
    let path = newer.path_of(slot);
    let bytes = std::fs::read(&path).unwrap();

    let current = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .schema_version(3)
        .build()
        .unwrap();
    assert!(matches!(
        current.load(slot),
        Err(Error::NewerSchema {
            found: 4,
            supported: 3
        })
    ));
    assert!(matches!(
        current.save(slot, &game_snapshot(&current, 2, 10)),
        Err(Error::NewerSchema {
            found: 4,
            supported: 3
        })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert!(
        !dir.path()
            .join(format!("{}.bak1", slot.file_name()))
            .exists()
    );
    // Copying over it is refused the same way.
    current
        .save(SlotId::Numbered(6), &game_snapshot(&current, 3, 10))
        .unwrap();
    assert!(current.copy(SlotId::Numbered(6), slot).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_file_from_a_newer_format_is_refused_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let slot = SlotId::Numbered(8);
    manager.save(slot, &game_snapshot(&manager, 1, 10)).unwrap();
    let path = manager.path_of(slot);
    let mut bytes = std::fs::read(&path).unwrap();
    let newer = savegame::format::FORMAT_VERSION + 1;
    bytes[8..10].copy_from_slice(&newer.to_le_bytes());
    common::fix_crc(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        manager.load(slot),
        Err(Error::UnsupportedFormat { found, supported })
            if found == newer && supported == savegame::format::FORMAT_VERSION
    ));
    assert!(matches!(
        manager.save(slot, &game_snapshot(&manager, 2, 10)),
        Err(Error::UnsupportedFormat { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn info_exists_delete_and_copy() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let (a, b) = (SlotId::Numbered(1), SlotId::Numbered(2));
    assert!(!manager.exists(a).unwrap());
    assert!(matches!(manager.info(a), Err(Error::SlotEmpty { .. })));
    assert!(!manager.delete(a).unwrap());

    manager.save(a, &game_snapshot(&manager, 1, 50)).unwrap();
    manager.save(a, &game_snapshot(&manager, 2, 50)).unwrap();
    assert!(manager.exists(a).unwrap());
    let info = manager.info(a).unwrap();
    assert_eq!(
        (info.backups, info.header.as_ref().unwrap().generation),
        (1, 2)
    );

    let report = manager.copy(a, b).unwrap();
    assert_eq!(report.slot, b);
    let copied = manager.load(b).unwrap();
    assert_eq!(copied.report.header.slot, b);
    assert_eq!(
        restore_game(&copied.snapshot).unwrap(),
        expected_game(2, 50)
    );
    assert_eq!(copied.snapshot.metadata().label, "seed 2");

    assert!(manager.delete(a).unwrap());
    assert!(!manager.exists(a).unwrap());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("slot-001"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert!(manager.exists(b).unwrap());
}

#[test]
fn concurrent_saves_of_one_slot_never_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let managers: Vec<_> = (0..4).map(|_| Arc::new(dir_manager(dir.path()))).collect();
    let slot = SlotId::Numbered(9);
    let threads: Vec<_> = managers
        .iter()
        .enumerate()
        .map(|(t, manager)| {
            let manager = Arc::clone(manager);
            std::thread::spawn(move || {
                for i in 0..25 {
                    let seed = (t * 100 + i) as u64;
                    manager
                        .save(slot, &game_snapshot(&manager, seed, 200))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every save went through whole: the primary and its backup both load cleanly, and the
    // generations counted every one of the 100 saves.
    let loaded = managers[0].load(slot).unwrap();
    assert_eq!(loaded.report.recovered_from_backup, None);
    assert_eq!(loaded.report.header.generation, 100);
    restore_game(&loaded.snapshot).unwrap();
    std::fs::remove_file(managers[0].path_of(slot)).unwrap();
    let backup = managers[0].load(slot).unwrap();
    assert_eq!(backup.report.header.generation, 99);
}
