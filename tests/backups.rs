//! Backups (RELIABILITY.md R5), on the real file system: the previous good save is kept; a
//! deleted, truncated, zeroed or bit-flipped primary falls back to it, and the load says so;
//! when every copy is bad the error is clear, never a silent empty game.

mod common;

use std::path::{Path, PathBuf};

use common::{dir_manager, expected_game, flip_in_place, game_snapshot, key, restore_game};
use savegame::{Error, SaveLoadManager, SlotId, SlotStatus};

const SLOT: SlotId = SlotId::Numbered(2);
const ENTITIES: usize = 100;

fn backup(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("{}.bak{n}", SLOT.file_name()))
}

/// A folder with two saves of SLOT: seed 1 (now the backup) and seed 2 (the primary).
fn two_saves() -> (tempfile::TempDir, SaveLoadManager, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let manager = dir_manager(tmp.path());
    for seed in [1, 2] {
        manager
            .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
            .unwrap();
    }
    let primary = manager.path_of(SLOT);
    (tmp, manager, primary)
}

type Damage = fn(&Path);

fn damages() -> Vec<(&'static str, Damage)> {
    vec![
        ("deleted", |p| std::fs::remove_file(p).unwrap()),
        ("emptied", |p| std::fs::write(p, b"").unwrap()),
        ("truncated to its header", |p| truncate(p, 40)),
        ("truncated by one byte", |p| {
            let len = std::fs::metadata(p).unwrap().len();
            truncate(p, len - 1)
        }),
        ("truncated in half", |p| {
            let len = std::fs::metadata(p).unwrap().len();
            truncate(p, len / 2)
        }),
        ("zeroed", |p| {
            let len = std::fs::metadata(p).unwrap().len();
            std::fs::write(p, vec![0u8; len as usize]).unwrap()
        }),
        ("bit-flipped in the payload", |p| flip(p, 0.6)),
        ("bit-flipped in the header", |p| flip(p, 0.0)),
        ("bit-flipped in the CRC", |p| flip(p, 1.0)),
    ]
}

fn truncate(p: &Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.set_len(len).unwrap();
}

/// Flips one bit at `where_` (0 = first byte after the magic, 1 = last byte) of the file.
fn flip(p: &Path, where_: f64) {
    let mut bytes = std::fs::read(p).unwrap();
    let last = bytes.len() - 1;
    let at = 9 + ((last - 9) as f64 * where_) as usize;
    bytes[at] ^= 0x10;
    std::fs::write(p, bytes).unwrap();
}

#[test]
fn a_damaged_or_missing_primary_falls_back_to_the_backup_and_says_so() {
    for (what, damage) in damages() {
        let (tmp, manager, primary) = two_saves();
        let backup_bytes = std::fs::read(backup(tmp.path(), 1)).unwrap();
        damage(&primary);

        let loaded = manager.load(SLOT).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(loaded.report.recovered_from_backup, Some(1), "{what}");
        assert_eq!(loaded.report.path, backup(tmp.path(), 1), "{what}");
        let problem = loaded.report.primary_problem.clone().unwrap();
        assert!(!problem.is_empty(), "{what}");
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(1, ENTITIES),
            "{what}"
        );
        // Loading changed nothing on disk.
        assert_eq!(std::fs::read(backup(tmp.path(), 1)).unwrap(), backup_bytes);

        // The menu marks the damage (or the missing primary), and still lists the slot.
        let info = manager.info(SLOT).unwrap();
        assert!(
            matches!(info.status, SlotStatus::Unreadable { .. })
                || what.contains("bit-flipped in the payload")
                || what.contains("CRC"),
            "{what}: {:?}",
            info.status
        );
        assert_eq!(info.backups, 1);
    }
}

#[test]
fn a_damaged_primary_is_never_rotated_into_the_backups() {
    let (tmp, manager, primary) = two_saves();
    let good_backup = std::fs::read(backup(tmp.path(), 1)).unwrap();
    flip(&primary, 0.5);
    // The game starts again and finds the damage.
    drop(manager);
    let manager = dir_manager(tmp.path());
    manager
        .save(SLOT, &game_snapshot(&manager, 3, ENTITIES))
        .unwrap();
    // The good backup (seed 1) is still the backup; the damaged seed-2 file is gone.
    assert_eq!(std::fs::read(backup(tmp.path(), 1)).unwrap(), good_backup);
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.report.recovered_from_backup, None);
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(3, ENTITIES)
    );
}

#[test]
fn a_file_damaged_after_its_own_manager_wrote_it_is_never_rotated_into_the_backups() {
    for backups in [1, 3] {
        let tmp = tempfile::tempdir().unwrap();
        let manager = SaveLoadManager::builder()
            .directory(tmp.path())
            .key(key())
            .backups(backups)
            .build()
            .unwrap();
        let saves = u64::from(backups) + 1;
        for seed in 1..=saves {
            manager
                .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
                .unwrap();
        }
        let good: Vec<Vec<u8>> = (1..=backups)
            .map(|n| std::fs::read(backup(tmp.path(), n)).unwrap())
            .collect();
        // The same manager, in the same run, saves again over its own file, damaged since.
        flip_in_place(&manager.path_of(SLOT));
        manager
            .save(SLOT, &game_snapshot(&manager, saves + 1, ENTITIES))
            .unwrap();
        for n in 1..=backups {
            assert_eq!(
                std::fs::read(backup(tmp.path(), n)).unwrap(),
                good[n as usize - 1],
                "backups({backups}): backup {n} was replaced"
            );
        }
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.recovered_from_backup, None);
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(saves + 1, ENTITIES)
        );
        // With the new save damaged too, the load falls back to a good backup, never to the
        // damaged file.
        flip_in_place(&manager.path_of(SLOT));
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.report.recovered_from_backup, Some(1));
        assert_eq!(
            restore_game(&loaded.snapshot).unwrap(),
            expected_game(saves - 1, ENTITIES)
        );
    }
}

#[test]
fn a_save_over_a_backup_that_a_crash_left_linked_to_the_slot_leaves_no_temp_file() {
    let (tmp, manager, primary) = two_saves();
    // A crash between `rename(.bak.tmp, .bak1)` and `rename(.tmp, slot)` leaves `.bak1` a
    // second name of the slot's file.
    let slot_bytes = std::fs::read(&primary).unwrap();
    std::fs::remove_file(backup(tmp.path(), 1)).unwrap();
    std::fs::hard_link(&primary, backup(tmp.path(), 1)).unwrap();
    manager
        .save(SLOT, &game_snapshot(&manager, 3, ENTITIES))
        .unwrap();
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    let name = SLOT.file_name();
    assert_eq!(names, [name.clone(), format!("{name}.bak1")]);
    assert_eq!(std::fs::read(backup(tmp.path(), 1)).unwrap(), slot_bytes);
    assert_eq!(
        restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
        expected_game(3, ENTITIES)
    );
}

#[test]
fn every_copy_damaged_is_a_clear_error() {
    let (tmp, manager, primary) = two_saves();
    flip(&primary, 0.5);
    std::fs::write(backup(tmp.path(), 1), b"garbage").unwrap();
    match manager.load(SLOT) {
        Err(Error::AllCopiesDamaged {
            slot,
            copies,
            primary,
        }) => {
            assert_eq!(slot, SLOT);
            assert_eq!(copies, 2);
            assert!(
                matches!(*primary, Error::ChecksumMismatch { .. }),
                "{primary}"
            );
        }
        other => panic!("expected AllCopiesDamaged, got {other:?}"),
    }
    // The message says what happened and to which slot.
    let message = manager.load(SLOT).unwrap_err().to_string();
    assert!(
        message.contains("slot 2") && message.contains("damaged"),
        "{message}"
    );
}

#[test]
fn a_single_damaged_copy_reports_its_own_error() {
    let tmp = tempfile::tempdir().unwrap();
    let manager = dir_manager(tmp.path());
    manager
        .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
        .unwrap();
    flip(&manager.path_of(SLOT), 0.5);
    assert!(matches!(
        manager.load(SLOT),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn nothing_at_all_is_slot_empty_not_an_empty_game() {
    let (tmp, manager, primary) = two_saves();
    std::fs::remove_file(primary).unwrap();
    std::fs::remove_file(backup(tmp.path(), 1)).unwrap();
    assert!(matches!(
        manager.load(SLOT),
        Err(Error::SlotEmpty { slot }) if slot == SLOT
    ));
    assert!(!manager.exists(SLOT).unwrap());
}

#[test]
fn n_backups_keep_the_n_previous_saves_newest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(tmp.path())
        .key(key())
        .backups(3)
        .build()
        .unwrap();
    for seed in 1..=5 {
        manager
            .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
            .unwrap();
    }
    // Primary 5, then 4, 3, 2; seed 1 fell out.
    for (n, generation) in [(1, 4), (2, 3), (3, 2)] {
        let bytes = std::fs::read(backup(tmp.path(), n)).unwrap();
        let header = savegame::format::parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
        assert_eq!(header.generation, generation);
    }
    assert!(!backup(tmp.path(), 4).exists());
    assert_eq!(manager.info(SLOT).unwrap().backups, 3);

    // With the primary and the newest backup damaged, the load walks on to the next one.
    flip(&manager.path_of(SLOT), 0.5);
    truncate(&backup(tmp.path(), 1), 10);
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.report.recovered_from_backup, Some(2));
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(3, ENTITIES)
    );
}

// ---- The spare: the file the rotation drops, written over by the next save. ----

fn spare(dir: &Path) -> PathBuf {
    dir.join(format!(".{}.spare", SLOT.file_name()))
}

/// Every file of the slot in `dir`, hidden ones included.
fn slot_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(&SLOT.file_name()) && !n.ends_with(".lock"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_dropped_backup_becomes_the_spare_the_next_save_writes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(tmp.path())
        .key(key())
        .backups(2)
        .build()
        .unwrap();
    // Saves of growing and shrinking size, so a spare is written over by a longer and by a
    // shorter file.
    let sizes = [100, 300, 50, 200, 10, 400, 100];
    for (seed, entities) in (1..).zip(sizes) {
        manager
            .save(SLOT, &game_snapshot(&manager, seed, entities))
            .unwrap();
        let n = seed as usize;
        // The fourth save is the first to drop a backup (seed 1's file, then `.bak2`) and so
        // to keep it.
        assert_eq!(spare(tmp.path()).exists(), n >= 4, "after save {seed}");
        // Every copy is whole, at its generation, with its own bytes.
        let primary = manager.load(SLOT).unwrap();
        assert_eq!(
            restore_game(&primary.snapshot).unwrap(),
            expected_game(seed, entities)
        );
        for back in 1..=2u32.min(seed as u32 - 1) {
            let bytes = std::fs::read(backup(tmp.path(), back)).unwrap();
            let header = savegame::format::parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
            assert_eq!(header.generation, seed - u64::from(back));
            savegame::format::check_crc(&bytes).unwrap();
        }
        #[cfg(unix)]
        if n >= 4 {
            use std::os::unix::fs::MetadataExt;
            // The spare is a file of its own: no backup's second name, written over.
            let meta = std::fs::metadata(spare(tmp.path())).unwrap();
            assert_eq!(meta.nlink(), 1);
            for path in [
                manager.path_of(SLOT),
                backup(tmp.path(), 1),
                backup(tmp.path(), 2),
            ] {
                assert_ne!(std::fs::metadata(path).unwrap().ino(), meta.ino());
            }
        }
    }
    // The load menu and the listing never show it.
    assert_eq!(manager.list().unwrap().len(), 1);
    assert_eq!(manager.info(SLOT).unwrap().backups, 2);
    // Deleting the slot deletes the spare too: a deleted save leaves nothing on the disk.
    assert!(manager.delete(SLOT).unwrap());
    assert_eq!(slot_files(tmp.path()), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_spare_with_a_second_name_is_never_written_over() {
    let (tmp, manager, _) = two_saves();
    // A spare that is also another file's name (planted; the library never makes one).
    let keepsake = tmp.path().join("keepsake.bin");
    std::fs::write(&keepsake, b"not a save, and not to be changed").unwrap();
    std::fs::hard_link(&keepsake, spare(tmp.path())).unwrap();
    manager
        .save(SLOT, &game_snapshot(&manager, 3, ENTITIES))
        .unwrap();
    assert_eq!(
        std::fs::read(&keepsake).unwrap(),
        b"not a save, and not to be changed"
    );
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(3, ENTITIES)
    );
}

#[test]
fn a_slot_deleted_with_only_its_spare_and_backups_left_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let manager = dir_manager(tmp.path());
    for seed in 1..=3 {
        manager
            .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
            .unwrap();
    }
    assert!(spare(tmp.path()).exists());
    std::fs::remove_file(manager.path_of(SLOT)).unwrap();
    assert!(manager.delete(SLOT).unwrap());
    assert_eq!(slot_files(tmp.path()), Vec::<String>::new());
}
