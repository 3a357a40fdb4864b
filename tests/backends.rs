//! The manager's whole behaviour against three backends, in the same test functions: real files
//! (`FsStorage`: appends, hard links, `flock`), `MemoryStorage`, and `Minimal` below, a backend
//! of the four required methods alone (no append, no locks, no copies, no ranged reads), as a
//! platform's save API, a browser's store or an object store would give.

mod common;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use common::{expected_game, game_snapshot, key, restore_game};
use savegame::migrate::Migrations;
use savegame::slot::{SlotFile, backup_name, delta_name, journal_name, pre_migration_name};
use savegame::storage::{FsStorage, MemoryStorage, Storage, StoredFile, too_large};
use savegame::{Error, SaveLoadManager, SlotId};
use savegame_testkit::wait;

const SLOT: SlotId = SlotId::Numbered(1);
const ENTITIES: usize = 30;

// ---- The minimal backend: files in a folder, through the four required methods. ----

/// Objects as files in a folder: each put is a temporary file, fsynced and renamed into place,
/// and the folder fsynced.
#[derive(Debug)]
struct Minimal(PathBuf);

impl Minimal {
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    fn sync_folder(&self) -> io::Result<()> {
        std::fs::File::open(&self.0)?.sync_all()
    }
}

impl Storage for Minimal {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.path(name)) {
            Ok(bytes) if bytes.len() as u64 > limit => Err(too_large(bytes.len() as u64)),
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let tmp = self.path(&format!("{name}~"));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, self.path(name))?;
        self.sync_folder()
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(name)) {
            Ok(()) => self.sync_folder(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.0)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with('~') {
                let len = entry.metadata()?.len();
                out.push(StoredFile { name, len });
            }
        }
        Ok(out)
    }
}

// ---- The three backends, and what each test runs against. ----

/// A backend under test, and the folder that keeps its files alive.
struct Backend {
    name: &'static str,
    storage: Box<dyn Fn() -> Box<dyn Storage>>,
    _dir: Option<tempfile::TempDir>,
}

fn backends() -> Vec<Backend> {
    let fs_dir = tempfile::tempdir().unwrap();
    let fs_path = fs_dir.path().to_path_buf();
    let minimal_dir = tempfile::tempdir().unwrap();
    let minimal_path = minimal_dir.path().to_path_buf();
    let memory = MemoryStorage::new();
    vec![
        Backend {
            name: "FsStorage",
            storage: Box::new(move || Box::new(FsStorage::new(&fs_path).unwrap())),
            _dir: Some(fs_dir),
        },
        Backend {
            name: "MemoryStorage",
            storage: Box::new(move || Box::new(memory.clone())),
            _dir: None,
        },
        Backend {
            name: "Minimal",
            storage: Box::new(move || Box::new(Minimal(minimal_path.clone()))),
            _dir: Some(minimal_dir),
        },
    ]
}

/// A storage handed to a manager, shared with the test (which plants and inspects files).
type Shared = Arc<dyn Storage>;

impl Backend {
    fn storage(&self) -> Shared {
        (self.storage)().into()
    }

    /// A manager over this backend: encrypted, MessagePack, `backups` backups.
    fn manager(&self, backups: u32) -> (SaveLoadManager, Shared) {
        let storage = self.storage();
        let manager = SaveLoadManager::builder()
            .storage(storage.clone())
            .key(key())
            .backups(backups)
            .build()
            .unwrap();
        (manager, storage)
    }
}

/// The names of the files of `slot` in `storage`, sorted; `list_names` must say the same as
/// `list` does (a backend's own `list_names` skips the sizes).
fn slot_files(storage: &dyn Storage, slot: SlotId) -> Vec<String> {
    let mut names: Vec<String> = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|f| SlotFile::parse(&f.name).is_some_and(|k| k.slot() == slot))
        .map(|f| f.name)
        .collect();
    names.sort();
    let mut by_name: Vec<String> = storage
        .list_names()
        .unwrap()
        .into_iter()
        .filter(|f| SlotFile::parse(f).is_some_and(|k| k.slot() == slot))
        .collect();
    by_name.sort();
    assert_eq!(by_name, names, "list_names and list disagree");
    names
}

fn generation(storage: &dyn Storage, name: &str) -> u64 {
    let bytes = storage.read(name, u64::MAX).unwrap().unwrap();
    savegame::format::parse_header(&bytes, Some(bytes.len() as u64))
        .unwrap()
        .generation
}

// ---- The tests: each runs against every backend. ----

#[test]
fn save_load_list_info_exists_copy_and_delete() {
    for backend in backends() {
        let (manager, storage) = backend.manager(1);
        let b = backend.name;
        assert!(!manager.exists(SLOT).unwrap(), "{b}");
        assert!(
            matches!(manager.load(SLOT), Err(Error::SlotEmpty { .. })),
            "{b}"
        );
        manager
            .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
            .unwrap();
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(1, ENTITIES),
            "{b}"
        );
        assert_eq!(loaded.report.path, storage.locate(&SLOT.file_name()), "{b}");

        let other = SlotId::Numbered(7);
        manager.copy(SLOT, other).unwrap();
        let listed: Vec<SlotId> = manager.list().unwrap().iter().map(|i| i.slot).collect();
        assert_eq!(listed, [SLOT, other], "{b}");
        let info = manager.info(other).unwrap();
        assert_eq!(info.header.unwrap().slot, other, "{b}");
        assert_eq!(
            restore_game(&manager.load(other).unwrap().snapshot).unwrap(),
            expected_game(1, ENTITIES),
            "{b}"
        );

        assert!(manager.delete(other).unwrap(), "{b}");
        assert!(!manager.exists(other).unwrap(), "{b}");
        assert_eq!(slot_files(&storage, other), Vec::<String>::new(), "{b}");
        assert!(!manager.delete(other).unwrap(), "{b}");
        assert!(manager.exists(SLOT).unwrap(), "{b}");
    }
}

#[test]
fn backups_rotate_and_a_load_falls_back_to_the_newest_sound_one() {
    for backend in backends() {
        let (manager, storage) = backend.manager(2);
        let b = backend.name;
        for seed in 1..=4 {
            manager
                .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
                .unwrap();
        }
        let name = SLOT.file_name();
        assert_eq!(
            slot_files(&storage, SLOT),
            [name.clone(), backup_name(&name, 1), backup_name(&name, 2)],
            "{b}"
        );
        assert_eq!(generation(&storage, &name), 4, "{b}");
        assert_eq!(generation(&storage, &backup_name(&name, 1)), 3, "{b}");
        assert_eq!(generation(&storage, &backup_name(&name, 2)), 2, "{b}");

        // Damage the primary: the load falls back to bak1, and says so.
        storage.put(&name, b"garbage, not a save").unwrap();
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.recovered_from_backup, Some(1), "{b}");
        assert!(loaded.report.primary_problem.is_some(), "{b}");
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(3, ENTITIES),
            "{b}"
        );
        // And bak1 too: bak2.
        storage
            .put(&backup_name(&name, 1), b"also garbage")
            .unwrap();
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.recovered_from_backup, Some(2), "{b}");
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(2, ENTITIES),
            "{b}"
        );

        // A save over a damaged primary does not keep the damaged file as a backup.
        manager
            .save(SLOT, &game_snapshot(&manager, 5, ENTITIES))
            .unwrap();
        assert_eq!(
            storage.read(&backup_name(&name, 1), u64::MAX).unwrap(),
            Some(b"also garbage".to_vec()),
            "{b}"
        );
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.recovered_from_backup, None, "{b}");
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(5, ENTITIES),
            "{b}"
        );
    }
}

#[test]
fn a_migrated_save_keeps_the_old_file_as_a_pre_migration_copy() {
    for backend in backends() {
        let (old_game, storage) = backend.manager(1);
        let b = backend.name;
        old_game
            .save(SLOT, &game_snapshot(&old_game, 1, ENTITIES))
            .unwrap();
        let name = SLOT.file_name();
        let old_bytes = storage.read(&name, u64::MAX).unwrap().unwrap();

        let new_game = SaveLoadManager::builder()
            .storage(storage.clone())
            .key(key())
            .schema_version(2)
            .migrations(Migrations::new().step(2, "nothing", |_| Ok(())))
            .build()
            .unwrap();
        let loaded = new_game.load(SLOT).unwrap();
        assert_eq!(loaded.report.migrated_from, Some(1), "{b}");
        new_game.save(SLOT, &loaded.snapshot).unwrap();
        let kept = storage
            .read(&pre_migration_name(&name, 1), u64::MAX)
            .unwrap();
        assert_eq!(kept, Some(old_bytes), "{b}");
        let again = new_game.load(SLOT).unwrap();
        assert_eq!(again.report.migrated_from, None, "{b}");
        assert_eq!(
            restore_game(&again.snapshot).unwrap(),
            expected_game(1, ENTITIES),
            "{b}"
        );
        assert!(new_game.delete(SLOT).unwrap(), "{b}");
        assert_eq!(slot_files(&storage, SLOT), Vec::<String>::new(), "{b}");
    }
}

#[test]
fn incremental_saves_apply_on_load_and_compact_into_a_new_base() {
    for backend in backends() {
        let (manager, storage) = backend.manager(1);
        let b = backend.name;
        let name = SLOT.file_name();
        manager
            .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
            .unwrap();
        for seed in 2..=4 {
            let mut changes = manager.snapshot();
            changes
                .capture("player", &common::game::Player::generate(seed))
                .unwrap();
            let report = manager.save_incremental(SLOT, &changes).unwrap();
            assert_eq!(report.sequence, seed - 1, "{b}");
            assert!(report.compacted.is_none(), "{b}");
        }
        // The deltas are where the backend keeps them: a journal, or one object each.
        let expected_files = if storage.can_append() {
            vec![name.clone(), journal_name(&name)]
        } else {
            let mut files = vec![name.clone()];
            files.extend((1..=3).map(|n| delta_name(&name, n)));
            files.sort();
            files
        };
        assert_eq!(slot_files(&storage, SLOT), expected_files, "{b}");

        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.deltas, 3, "{b}");
        assert_eq!(loaded.report.journal_problem, None, "{b}");
        let (player, world) = restore_game(&loaded.snapshot).unwrap();
        assert_eq!(player, expected_game(4, ENTITIES).0, "{b}");
        assert_eq!(world, expected_game(1, ENTITIES).1, "{b}");
        let info = manager.info(SLOT).unwrap();
        assert_eq!(info.deltas, 3, "{b}");

        // A compaction writes the merged state as a new base and removes every delta.
        manager.compact(SLOT).unwrap();
        assert_eq!(
            slot_files(&storage, SLOT),
            [name.clone(), backup_name(&name, 1)],
            "{b}"
        );
        let compacted = manager.load(SLOT).unwrap();
        assert_eq!(compacted.report.deltas, 0, "{b}");
        assert_eq!(
            restore_game(&compacted.snapshot).unwrap(),
            (player, world),
            "{b}"
        );

        // Deltas go on from the new base, numbered from 1 again; a damaged one is dropped by
        // the next incremental save, and a load stops before it.
        let mut changes = manager.snapshot();
        changes
            .capture("player", &common::game::Player::generate(9))
            .unwrap();
        assert_eq!(
            manager.save_incremental(SLOT, &changes).unwrap().sequence,
            1,
            "{b}"
        );
        assert_eq!(manager.load(SLOT).unwrap().report.deltas, 1, "{b}");
    }
}

#[test]
fn a_journal_past_its_share_of_the_base_is_compacted_automatically() {
    for backend in backends() {
        let storage = backend.storage();
        let manager = SaveLoadManager::builder()
            .storage(storage.clone())
            .key(key())
            .compact_at(10)
            .build()
            .unwrap();
        let b = backend.name;
        manager
            .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
            .unwrap();
        let mut compacted = None;
        for seed in 2..=40 {
            let mut changes = manager.snapshot();
            changes
                .capture("player", &common::game::Player::generate(seed))
                .unwrap();
            let report = manager.save_incremental(SLOT, &changes).unwrap();
            assert!(report.compaction_error.is_none(), "{b}");
            if report.compacted.is_some() {
                compacted = Some(seed);
                break;
            }
        }
        let seed = compacted.unwrap_or_else(|| panic!("{b}: never compacted"));
        let name = SLOT.file_name();
        assert_eq!(
            slot_files(&storage, SLOT),
            [name.clone(), backup_name(&name, 1)],
            "{b}"
        );
        let (player, _) = restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap();
        assert_eq!(player, expected_game(seed, ENTITIES).0, "{b}");
    }
}

#[test]
fn autosaves_rotate_through_their_slots_oldest_first() {
    for backend in backends() {
        let storage = backend.storage();
        let manager = SaveLoadManager::builder()
            .storage(storage.clone())
            .key(key())
            .autosave_slots(2)
            .build()
            .unwrap();
        let b = backend.name;
        let mut written = Vec::new();
        for seed in 1..=5 {
            let report = manager
                .autosave(&game_snapshot(&manager, seed, ENTITIES))
                .unwrap();
            written.push(report.slot);
            // Saved-at times order the rotation; make them distinct.
            wait::clock_past(report.saved_at);
        }
        let (a1, a2) = (SlotId::Autosave(1), SlotId::Autosave(2));
        assert_eq!(written, [a1, a2, a1, a2, a1], "{b}");
        let newest = manager.load(a1).unwrap();
        assert_eq!(
            restore_game(&newest.snapshot).unwrap(),
            expected_game(5, ENTITIES),
            "{b}"
        );
        let older = manager.load(a2).unwrap();
        assert_eq!(
            restore_game(&older.snapshot).unwrap(),
            expected_game(4, ENTITIES),
            "{b}"
        );
    }
}

#[test]
fn a_file_over_the_size_cap_is_refused_with_its_size() {
    for backend in backends() {
        let storage = backend.storage();
        let manager = SaveLoadManager::builder()
            .storage(storage.clone())
            .key(key())
            .backups(0)
            .max_file_size(4096)
            .build()
            .unwrap();
        let b = backend.name;
        storage.put(&SLOT.file_name(), &vec![0u8; 5000]).unwrap();
        match manager.load(SLOT) {
            Err(Error::TooLarge { size, limit, .. }) => {
                assert_eq!((size, limit), (5000, 4096), "{b}");
            }
            other => panic!("{b}: {other:?}"),
        }
    }
}

#[test]
fn no_delta_is_appended_onto_a_base_damaged_since_it_was_written() {
    // R7 on every backend: the base is checked in full (a piece at a time, or read whole where
    // the backend reads no ranges) before each delta.
    for backend in backends() {
        let (manager, storage) = backend.manager(1);
        let b = backend.name;
        let name = SLOT.file_name();
        manager
            .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
            .unwrap();
        let mut bytes = storage.read(&name, u64::MAX).unwrap().unwrap();
        let last = bytes.len() - 10;
        bytes[last] ^= 0x01;
        storage.put(&name, &bytes).unwrap();
        let mut changes = manager.snapshot();
        changes
            .capture("player", &common::game::Player::generate(2))
            .unwrap();
        let refused = manager.save_incremental(SLOT, &changes);
        assert!(
            matches!(refused, Err(Error::FullSaveNeeded { .. })),
            "{b}: {refused:?}"
        );
        assert_eq!(slot_files(&storage, SLOT), [name], "{b}: no delta written");
    }
}
