//! Crash safety over a simulated file system (RELIABILITY.md R1, R3, R4).
//!
//! R1: for every prefix of a save's file operations, every post-crash state (each prefix of
//! the unsynced folder operations, unsynced data dropped, torn, zeroed or kept) loads the old
//! save or the new one, bit-exact, and never fails while an old save existed.
//! R3: the exact order of operations (fsync before rename, folder fsync after rename).
//! R4: ENOSPC or EIO at each operation, once or from then on: a typed error, the previous save
//! still loads, no temporary file left.

mod common;

use std::io;
use std::path::{Path, PathBuf};

use common::{SIM_DIR, expected_game, game_snapshot, restore_game, sim_manager};
use savegame::storage::{Fault, FaultKind, FaultMode, Op, SimFs};
use savegame::{Compression, Error, SaveLoadManager, SlotId};

const SLOT: SlotId = SlotId::Numbered(1);
const ENTITIES: usize = 40;
/// A world whose save is written as it is encoded in several segments: over a megabyte.
const STREAMED: usize = 16_000;

/// How a test makes the save it crashes or faults: `save` of a snapshot of the game of `seed`
/// with `entities` entities, or `save_state` of the same game (the same mementos, encoded
/// straight from the game's objects and fingerprinted as they are written).
type NewSave = fn(&SaveLoadManager, u64, usize) -> savegame::Result<savegame::SaveReport>;

fn snapshot_save(
    manager: &SaveLoadManager,
    seed: u64,
    entities: usize,
) -> savegame::Result<savegame::SaveReport> {
    manager.save(SLOT, &game_snapshot(manager, seed, entities))
}

fn state_save(
    manager: &SaveLoadManager,
    seed: u64,
    entities: usize,
) -> savegame::Result<savegame::SaveReport> {
    let game = common::game::Game {
        player: common::game::Player::generate(seed),
        world: common::game::World::generate(entities, seed),
    };
    manager.save_state(SLOT, &game)
}

fn primary() -> PathBuf {
    Path::new(SIM_DIR).join(SLOT.file_name())
}

fn file(fs: &SimFs, path: &Path) -> Option<Vec<u8>> {
    fs.files().get(path).cloned()
}

fn temp_files(fs: &SimFs) -> Vec<PathBuf> {
    fs.files()
        .into_keys()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

/// Saves `count` generations (seeds 1..=count) to SLOT.
fn save_generations(manager: &SaveLoadManager, count: u64) {
    for seed in 1..=count {
        manager
            .save(SLOT, &game_snapshot(manager, seed, ENTITIES))
            .unwrap();
    }
}

/// Checks one post-crash state: `old` is the seed of the save that existed before (if any),
/// `new` the seed of the save that was being written.
/// The manager a game over `fs` makes after a crash: the same settings as before it.
fn manager_after(fs: &SimFs, backups: u32) -> SaveLoadManager {
    compressing_manager_after(fs, backups, Compression::None)
}

/// The same, compressing its saves with `compression`.
fn compressing_manager_after(
    fs: &SimFs,
    backups: u32,
    compression: Compression,
) -> SaveLoadManager {
    common::sim_builder(fs)
        .backups(backups)
        .compression(compression)
        .build()
        .unwrap()
}

fn check_image(
    fs: &SimFs,
    (backups, compression): (u32, Compression),
    old: Option<(u64, &[u8])>,
    new: (u64, &[u8]),
    committed: bool,
    entities: usize,
) {
    let manager = compressing_manager_after(fs, backups, compression);
    match manager.load(SLOT) {
        Ok(loaded) => {
            let bytes = file(fs, &loaded.report.path).expect("the loaded file exists");
            let game = restore_game(&loaded.snapshot).unwrap();
            if bytes == new.1 {
                assert_eq!(game, expected_game(new.0, entities));
            } else {
                let (seed, old_bytes) = old.expect("without an old save only the new one may load");
                assert_eq!(
                    bytes, old_bytes,
                    "neither the old nor the new save, bit for bit"
                );
                assert!(
                    !committed,
                    "the save returned Ok, so the new save must load"
                );
                // Earlier saves are of the small world (`save_generations`).
                assert_eq!(game, expected_game(seed, ENTITIES));
            }
        }
        Err(e) => {
            assert!(
                old.is_none(),
                "an error while a valid old save existed: {e}"
            );
            assert!(!committed, "the save returned Ok, so it must load: {e}");
            assert!(matches!(e, Error::SlotEmpty { .. }), "{e}");
        }
    }
    // The game goes on after the crash: the next save works, leaves no temporary file, and
    // loads.
    manager
        .save(SLOT, &game_snapshot(&manager, 99, entities))
        .unwrap();
    assert_eq!(temp_files(fs), Vec::<PathBuf>::new());
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(99, entities)
    );
}

fn crash_at_every_point(earlier_saves: u64, backups: u32, entities: usize) -> usize {
    crash_at_every_point_of(earlier_saves, backups, entities, snapshot_save)
}

fn crash_at_every_point_of(
    earlier_saves: u64,
    backups: u32,
    entities: usize,
    new_save: NewSave,
) -> usize {
    crash_at_every_point_compressed(
        earlier_saves,
        backups,
        entities,
        new_save,
        Compression::None,
    )
}

/// [`crash_at_every_point_of`] with a manager that compresses its saves with `compression`.
fn crash_at_every_point_compressed(
    earlier_saves: u64,
    backups: u32,
    entities: usize,
    new_save: NewSave,
    compression: Compression,
) -> usize {
    let fs = SimFs::new();
    let manager = compressing_manager_after(&fs, backups, compression);
    save_generations(&manager, earlier_saves);
    let old = file(&fs, &primary());
    let start = fs.op_count();
    let new_seed = earlier_saves + 1;
    new_save(&manager, new_seed, entities).unwrap();
    let end = fs.op_count();
    let new = file(&fs, &primary()).unwrap();
    let mut images = 0;
    for after in start..=end {
        for image in fs.crash_images(after) {
            let old = old.as_deref().map(|b| (earlier_saves, b));
            check_image(
                &image.fs,
                (backups, compression),
                old,
                (new_seed, &new),
                after == end,
                entities,
            );
            images += 1;
        }
    }
    images
}

#[test]
fn a_crash_during_the_first_save_leaves_an_empty_slot_or_the_new_save() {
    assert!(crash_at_every_point(0, 1, ENTITIES) > 20);
}

#[test]
fn a_crash_during_a_save_leaves_the_old_save_or_the_new_one() {
    assert!(crash_at_every_point(1, 1, ENTITIES) > 40);
}

#[test]
fn a_crash_during_backup_rotation_leaves_the_old_save_or_the_new_one() {
    // Three earlier saves with three backups: the save under test copies (links) bak2 to bak3
    // and bak1 to bak2 before linking the old save as bak1.
    assert!(crash_at_every_point(3, 3, ENTITIES) > 60);
}

/// A save of several segments is written as it is encoded: its first segment and its header
/// are written last, over the place kept for them. A crash at any point of it leaves the old
/// save or the new one, and the backups whole.
#[test]
fn a_crash_during_a_save_written_as_it_is_encoded_leaves_the_old_save_or_the_new_one() {
    assert!(crash_at_every_point(1, 2, STREAMED) > 40);
}

/// Faults at every operation of a save written as it is encoded, its writes over the places
/// kept for the header and the first segment among them.
#[test]
fn io_faults_at_every_operation_of_a_save_written_as_it_is_encoded_keep_the_previous_save() {
    io_faults_at_every_operation(1, STREAMED);
}

/// `save_state` of a state listed by members is written as it is encoded too, each memento
/// fingerprinted from its pieces: a crash at any point of it leaves the old save or the new
/// one.
#[test]
fn a_crash_during_a_state_save_written_as_it_is_encoded_leaves_the_old_save_or_the_new_one() {
    assert!(crash_at_every_point_of(1, 2, STREAMED, state_save) > 40);
}

/// A Zstandard save of a document over 1 MiB, compressed 512 KiB at a time on the manager's
/// threads, its frames sealed and written as they come: a crash at any point of it leaves the
/// old save or the new one, and the backups whole.
#[cfg(feature = "zstd")]
#[test]
fn a_crash_during_a_compressed_save_leaves_the_old_save_or_the_new_one() {
    let probe = compressing_manager_after(&SimFs::new(), 2, Compression::zstd());
    // A world of over 1 MiB encoded.
    let entities = 20_000;
    let document = game_snapshot(&probe, 2, entities).encoded_len();
    assert!(
        document > 1 << 20,
        "{document}: compressed whole, not in pieces"
    );
    let images =
        crash_at_every_point_compressed(1, 2, entities, snapshot_save, Compression::zstd());
    assert!(images > 40, "{images}");
}

/// ENOSPC and EIO at every operation of a Zstandard save in pieces (a world of over 1 MiB
/// encoded): the typed error, the previous save, no temporary file, and the next save.
#[cfg(feature = "zstd")]
#[test]
fn io_faults_at_every_operation_of_a_compressed_save_keep_the_previous_save() {
    io_faults_at_every_operation_compressed(1, 20_000, snapshot_save, Compression::zstd());
}

/// Faults at every operation of a `save_state` written as it is encoded.
#[test]
fn io_faults_at_every_operation_of_a_state_save_written_as_it_is_encoded_keep_the_previous_save() {
    io_faults_at_every_operation_of(1, STREAMED, state_save);
}

/// The slot's backups in `fs`, by path.
fn backups(fs: &SimFs) -> Vec<(PathBuf, Vec<u8>)> {
    let prefix = format!("{}.bak", primary().display());
    fs.files()
        .into_iter()
        .filter(|(p, _)| {
            let p = p.to_string_lossy();
            p.starts_with(&prefix) && !p.ends_with(".tmp")
        })
        .collect()
}

/// Every backup in `fs` is, bit for bit, one of `known`: a save file that was whole.
fn backups_are_whole(fs: &SimFs, known: &[Vec<u8>], context: &str) {
    for (path, bytes) in backups(fs) {
        assert!(
            known.contains(&bytes),
            "{} is not a whole save ({context})",
            path.display()
        );
    }
}

/// A crash at every point of a save that writes over the slot's spare (the file the rotation
/// before it dropped) and keeps another: the old save or the new one loads, every backup is a
/// whole earlier save, and one save more after the crash leaves them so. The simulated file
/// system writes a spare over in place, every other name of it included, so a spare that was
/// still a backup's second name would show here as a damaged backup.
fn crash_over_the_spare(earlier_saves: u64, backups: u32) -> usize {
    let fs = SimFs::new();
    let manager = manager_after(&fs, backups);
    save_generations(&manager, earlier_saves);
    let spare = PathBuf::from(format!("{SIM_DIR}/.{}.spare", SLOT.file_name()));
    assert!(file(&fs, &spare).is_some(), "the rotations kept a spare");
    let mut known: Vec<Vec<u8>> = fs.files().into_values().collect();
    let old = file(&fs, &primary());
    let start = fs.op_count();
    let new_seed = earlier_saves + 1;
    manager
        .save(SLOT, &game_snapshot(&manager, new_seed, ENTITIES))
        .unwrap();
    let end = fs.op_count();
    assert!(
        fs.ops()[start..].contains(&Op::Overwrite(PathBuf::from(format!(
            "{}.tmp",
            primary().display()
        )))),
        "the save wrote over the spare: {:?}",
        &fs.ops()[start..]
    );
    let new = file(&fs, &primary()).unwrap();
    known.push(new.clone());
    backups_are_whole(&fs, &known, "after the save");
    let mut images = 0;
    for after in start..=end {
        for image in fs.crash_images(after) {
            backups_are_whole(&image.fs, &known, &format!("after {after} ops, {image:?}"));
            let primary_then = file(&image.fs, &primary());
            let old = old.as_deref().map(|b| (earlier_saves, b));
            check_image(
                &image.fs,
                (backups, Compression::None),
                old,
                (new_seed, &new),
                after == end,
                ENTITIES,
            );
            let mut later = known.clone();
            later.extend(primary_then);
            later.extend(file(&image.fs, &primary()));
            backups_are_whole(&image.fs, &later, "after a save after the crash");
            images += 1;
        }
    }
    images
}

#[test]
fn a_crash_during_a_save_over_the_spare_keeps_the_saves_and_backups_whole() {
    assert!(crash_over_the_spare(3, 1) > 40);
    assert!(crash_over_the_spare(4, 2) > 60);
}

#[test]
fn a_crash_without_backups_leaves_the_old_save_or_the_new_one() {
    assert!(crash_at_every_point(2, 0, ENTITIES) > 20);
}

#[test]
fn save_fsyncs_before_rename_and_fsyncs_the_folder_after() {
    let fs = SimFs::new();
    let manager = SaveLoadManager::builder()
        .storage(savegame::storage::FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap())
        .backups(2)
        .build()
        .unwrap();
    save_generations(&manager, 2);
    let start = fs.op_count();
    let snapshot = game_snapshot(&manager, 3, ENTITIES);
    manager.save(SLOT, &snapshot).unwrap();
    let ops = fs.ops()[start..].to_vec();

    let dir = PathBuf::from(SIM_DIR);
    let name = SLOT.file_name();
    let at = |suffix: &str| dir.join(format!("{name}{suffix}"));
    let len = file(&fs, &primary()).unwrap().len();
    assert_eq!(
        ops,
        vec![
            Op::Create(at(".tmp")),
            Op::Write {
                path: at(".tmp"),
                len
            },
            Op::Sync(at(".tmp")),
            // The backups move up once the new bytes are safe: each a hard link, renamed into
            // place.
            Op::Link {
                from: at(".bak1"),
                to: at(".bak2.tmp")
            },
            Op::Rename {
                from: at(".bak2.tmp"),
                to: at(".bak2")
            },
            Op::Link {
                from: primary(),
                to: at(".bak1.tmp")
            },
            Op::Rename {
                from: at(".bak1.tmp"),
                to: at(".bak1")
            },
            Op::Rename {
                from: at(".tmp"),
                to: primary()
            },
            Op::SyncDir(dir),
        ]
    );
}

#[test]
fn first_save_order_has_no_rotation() {
    let fs = SimFs::new();
    let manager = sim_manager(&fs);
    let start = fs.op_count();
    manager
        .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
        .unwrap();
    let ops = fs.ops()[start..].to_vec();
    let kinds: Vec<&str> = ops
        .iter()
        .map(|op| match op {
            Op::Create(_) => "create",
            Op::Write { .. } => "write",
            Op::Sync(_) => "fsync",
            Op::Rename { .. } => "rename",
            Op::SyncDir(_) => "fsync dir",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["create", "write", "fsync", "rename", "fsync dir"]);
}

/// A save folder several levels below anything that exists, as `app(...)` makes on a new
/// machine.
const DEEP_DIR: &str = "/home/player/.local/share/game/saves";

fn deep_manager(fs: &SimFs) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(savegame::storage::FsStorage::with_file_system(DEEP_DIR, fs.clone()).unwrap())
        .key(common::key())
        .build()
        .unwrap()
}

#[test]
fn the_folders_a_manager_creates_are_made_durable_top_down() {
    let fs = SimFs::new();
    fs.set_file("/home/.profile", b"exists".to_vec());
    let _manager = deep_manager(&fs);
    let made = [
        "/home/player",
        "/home/player/.local",
        "/home/player/.local/share",
        "/home/player/.local/share/game",
        DEEP_DIR,
    ];
    let mut expected: Vec<Op> = made.iter().map(|d| Op::CreateDir(d.into())).collect();
    // Each created folder's entry is durable once its parent is fsynced, from the top down.
    expected.extend(
        made.iter()
            .map(|d| Op::SyncDir(Path::new(d).parent().unwrap().into())),
    );
    assert_eq!(fs.ops(), expected);
    // A folder that exists is not created, nor its parent fsynced, again.
    let start = fs.op_count();
    let _again = deep_manager(&fs);
    assert_eq!(fs.op_count(), start);
}

#[test]
fn a_power_cut_after_the_first_save_into_a_new_folder_tree_keeps_the_save() {
    let fs = SimFs::new();
    let manager = deep_manager(&fs);
    manager
        .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
        .unwrap();
    let end = fs.op_count();
    let primary = Path::new(DEEP_DIR).join(SLOT.file_name());
    let new = file(&fs, &primary).unwrap();
    let mut images = 0;
    // Every crash point from the creation of the first folder to the save's return.
    for after in 0..=end {
        for image in fs.crash_images(after) {
            let manager = deep_manager(&image.fs);
            match manager.load(SLOT) {
                Ok(loaded) => {
                    assert_eq!(file(&image.fs, &loaded.report.path).unwrap(), new);
                    assert_eq!(
                        restore_game(&loaded.snapshot).unwrap(),
                        expected_game(1, ENTITIES)
                    );
                }
                Err(e) => {
                    assert!(
                        after < end,
                        "the first save returned Ok, but after a crash: {e} ({image:?})"
                    );
                    assert!(matches!(e, Error::SlotEmpty { .. }), "{e}");
                }
            }
            images += 1;
        }
    }
    assert!(images > 40, "{images}");
}

#[test]
fn a_save_after_a_crash_between_the_backup_renames_leaves_no_temp_file() {
    let fs = SimFs::new();
    let manager = sim_manager(&fs);
    save_generations(&manager, 2);
    let start = fs.op_count();
    manager
        .save(SLOT, &game_snapshot(&manager, 3, ENTITIES))
        .unwrap();
    let staged = PathBuf::from(format!("{}.bak1.tmp", primary().display()));
    let backup = PathBuf::from(format!("{}.bak1", primary().display()));
    // The crash: right after `.bak1.tmp` became `.bak1`, before the new file was renamed over
    // the slot, with every folder entry kept. `.bak1` is then a second name of the slot's file.
    let ops = fs.ops();
    let rename = start
        + ops[start..]
            .iter()
            .position(|op| {
                *op == Op::Rename {
                    from: staged.clone(),
                    to: backup.clone(),
                }
            })
            .unwrap();
    let image = fs
        .crash_images(rename + 1)
        .into_iter()
        .find(|i| {
            i.entries_kept == i.entries_pending && i.data == savegame::storage::DataLoss::Kept
        })
        .unwrap();
    let crashed = image.fs;
    assert_eq!(file(&crashed, &backup), file(&crashed, &primary()));
    let manager = sim_manager(&crashed);
    assert_eq!(
        restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
        expected_game(2, ENTITIES)
    );
    // The next save: no temporary file is left, the old save is the backup.
    manager
        .save(SLOT, &game_snapshot(&manager, 4, ENTITIES))
        .unwrap();
    assert_eq!(temp_files(&crashed), Vec::<PathBuf>::new());
    let bytes = file(&crashed, &backup).unwrap();
    let header = savegame::format::parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
    assert_eq!(header.generation, 2);
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(
        restore_game(&loaded.snapshot).unwrap(),
        expected_game(4, ENTITIES)
    );
}

fn io_kind(e: &Error) -> io::ErrorKind {
    match e {
        Error::Io { source, .. } => source.kind(),
        other => panic!("expected an I/O error, got {other}"),
    }
}

#[test]
fn io_faults_at_every_operation_keep_the_previous_save() {
    io_faults_at_every_operation(1, ENTITIES);
}

/// The same over a slot with a spare: the save under test writes over the file the rotation
/// before it dropped, and keeps the backup it drops as the next spare.
#[test]
fn io_faults_at_every_operation_of_a_save_over_the_spare_keep_the_previous_save() {
    io_faults_at_every_operation(3, ENTITIES);
}

/// ENOSPC and EIO, once and from then on, at every operation of a save after `earlier`
/// saves: a typed error naming the path, the previous save loads, no temporary file is left,
/// and once the disk works again the next save works.
fn io_faults_at_every_operation(earlier: u64, entities: usize) {
    io_faults_at_every_operation_of(earlier, entities, snapshot_save);
}

fn io_faults_at_every_operation_of(earlier: u64, entities: usize, new_save: NewSave) {
    io_faults_at_every_operation_compressed(earlier, entities, new_save, Compression::None);
}

/// The manager of the fault tests over `fs` (`common::sim_manager`), compressing its saves
/// with `compression`.
fn fault_manager(fs: &SimFs, compression: Compression) -> SaveLoadManager {
    common::sim_builder(fs)
        .codec(savegame::Codec::MessagePack)
        .compression(compression)
        .build()
        .unwrap()
}

/// [`io_faults_at_every_operation_of`] with a manager that compresses its saves.
fn io_faults_at_every_operation_compressed(
    earlier: u64,
    entities: usize,
    new_save: NewSave,
    compression: Compression,
) {
    // How many operations a save over `earlier` saves takes.
    let probe = SimFs::new();
    let probe_manager = fault_manager(&probe, compression);
    save_generations(&probe_manager, earlier);
    let start = probe.op_count();
    new_save(&probe_manager, earlier + 1, entities).unwrap();
    let save_ops = probe.op_count() - start;
    assert!(save_ops >= 7, "{:?}", probe.ops());
    // A save of several segments writes its header and first segment last, in place, as does
    // a Zstandard one; an LZ4 one is sealed whole first.
    assert_eq!(
        probe.ops()[start..]
            .iter()
            .any(|op| matches!(op, Op::WriteAt { .. })),
        (entities == STREAMED && compression == Compression::None)
            || matches!(compression, Compression::Zstd { .. }),
        "{:?}",
        &probe.ops()[start..]
    );
    if earlier > 1 {
        assert!(
            probe.ops()[start..]
                .iter()
                .any(|op| matches!(op, Op::Overwrite(_))),
            "the save wrote over the spare: {:?}",
            &probe.ops()[start..]
        );
    }

    let mut checked = 0;
    for index in 0..save_ops {
        for kind in [FaultKind::NoSpace, FaultKind::Io] {
            for mode in [FaultMode::Once, FaultMode::FromThenOn] {
                let fs = SimFs::new();
                let manager = fault_manager(&fs, compression);
                save_generations(&manager, earlier);
                let old = file(&fs, &primary()).unwrap();
                let known: Vec<Vec<u8>> = fs.files().into_values().collect();
                let at = fs.op_count() + index;
                fs.inject(Fault { at, kind, mode });

                let err = new_save(&manager, earlier + 1, entities).unwrap_err();
                let expected = match kind {
                    FaultKind::NoSpace => io::ErrorKind::StorageFull,
                    _ => io::ErrorKind::Other,
                };
                assert_eq!(io_kind(&err), expected, "fault at op {index}: {err}");
                assert!(
                    err.to_string().contains(SIM_DIR),
                    "the error names the path: {err}"
                );
                assert_eq!(
                    temp_files(&fs),
                    Vec::<PathBuf>::new(),
                    "fault at op {index}"
                );
                backups_are_whole(&fs, &known, &format!("fault at op {index}"));

                let failed_op = &fs.ops()[at.min(fs.op_count() - 1)..];
                let loaded = manager.load(SLOT).unwrap();
                let bytes = file(&fs, &loaded.report.path).unwrap();
                // Only a failed fsync of the folder comes after the new file was renamed into
                // place; then the new save is what the folder shows, and it is whole.
                let after_commit = index == save_ops - 1;
                if after_commit {
                    assert!(
                        matches!(failed_op.last(), Some(Op::Rename { .. })),
                        "{failed_op:?}"
                    );
                    assert_eq!(
                        restore_game(&loaded.snapshot).unwrap(),
                        expected_game(earlier + 1, entities)
                    );
                } else {
                    assert_eq!(bytes, old, "fault at op {index} ({kind:?}, {mode:?})");
                    assert_eq!(loaded.report.recovered_from_backup, None);
                }

                // Once the disk works again, saving works again.
                fs.clear_faults();
                new_save(&manager, earlier + 2, entities).unwrap();
                let loaded = manager.load(SLOT).unwrap();
                assert_eq!(
                    restore_game(&loaded.snapshot).unwrap(),
                    expected_game(earlier + 2, entities)
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, save_ops * 4);
}

// ---- The policy on a storage without append, copies or locks, and compaction. ----

/// `FsStorage` over a `SimFs` seen through the four required methods alone: what the manager
/// does on a backend without append, hard links, staging or locks (a browser's store, an
/// object store), crash-tested operation by operation.
#[derive(Debug)]
struct RequiredOnly(savegame::storage::FsStorage);

impl savegame::storage::Storage for RequiredOnly {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.0.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.0.put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.0.delete(name)
    }
    fn list(&self) -> io::Result<Vec<savegame::storage::StoredFile>> {
        self.0.list()
    }
}

/// A manager over `fs`, through every method of `FsStorage` (`all = true`) or through the
/// required methods alone.
fn manager_over(fs: &SimFs, all: bool, backups: u32) -> SaveLoadManager {
    manager_built(fs, all, SaveLoadManager::builder().backups(backups))
}

/// [`manager_over`], compacting a slot's deltas once they outweigh `compact_at` percent of
/// its base.
fn manager_compacting(fs: &SimFs, all: bool, backups: u32, compact_at: u32) -> SaveLoadManager {
    let builder = SaveLoadManager::builder()
        .backups(backups)
        .compact_at(compact_at);
    manager_built(fs, all, builder)
}

fn manager_built(fs: &SimFs, all: bool, builder: savegame::ManagerBuilder) -> SaveLoadManager {
    let storage = savegame::storage::FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap();
    let builder = builder.key(common::key());
    let builder = if all {
        builder.storage(storage)
    } else {
        builder.storage(RequiredOnly(storage))
    };
    builder.build().unwrap()
}

/// The player a delta with `seed` holds.
fn player_changes(manager: &SaveLoadManager, seed: u64) -> savegame::Snapshot {
    let mut changes = manager.snapshot();
    changes
        .capture("player", &common::game::Player::generate(seed))
        .unwrap();
    changes
}

/// The game after a base of seed 1 and deltas of the player up to `seed`.
fn expected_after_deltas(seed: u64) -> (common::game::Player, common::game::World) {
    (
        expected_game(seed, ENTITIES).0,
        expected_game(1, ENTITIES).1,
    )
}

/// Every post-crash state of the operations `start..=end` of `fs` loads one of `states`
/// (the last only if `committed`: the operation returned Ok), and the game goes on: an
/// incremental save and a full save work on it and load back.
fn check_logical_images(
    fs: &SimFs,
    all: bool,
    backups: u32,
    (start, end): (usize, usize),
    old: (u64, u64),
    new: (u64, u64),
) -> usize {
    let mut images = 0;
    for after in start..=end {
        for image in fs.crash_images(after) {
            let manager = manager_over(&image.fs, all, backups);
            let loaded = manager
                .load(SLOT)
                .unwrap_or_else(|e| panic!("after op {after}, {image:?}: {e}"));
            let game = restore_game(&loaded.snapshot).unwrap();
            let (old_state, new_state) =
                (expected_after_deltas(old.0), expected_after_deltas(new.0));
            let deltas = u64::from(loaded.report.deltas);
            if game != new_state {
                assert!(
                    game == old_state,
                    "after op {after}: neither state ({image:?})"
                );
                assert!(
                    after < end,
                    "the operation returned Ok, so its state must load"
                );
            }
            assert!(
                [old.1, new.1].contains(&deltas),
                "after op {after}: {deltas} deltas applied"
            );
            // The game goes on: a delta on top, then a full save.
            manager
                .save_incremental(SLOT, &player_changes(&manager, 77))
                .unwrap();
            assert_eq!(
                restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
                expected_after_deltas(77),
                "after op {after}"
            );
            manager
                .save(SLOT, &game_snapshot(&manager, 88, ENTITIES))
                .unwrap();
            let reloaded = manager.load(SLOT).unwrap();
            assert_eq!(reloaded.report.deltas, 0);
            assert_eq!(
                restore_game(&reloaded.snapshot).unwrap(),
                expected_game(88, ENTITIES)
            );
            assert_eq!(temp_files(&image.fs), Vec::<PathBuf>::new());
            images += 1;
        }
    }
    images
}

#[test]
fn a_crash_during_a_save_with_backups_through_the_required_methods_alone() {
    for earlier in [0, 1, 3] {
        let fs = SimFs::new();
        let manager = manager_over(&fs, false, 2);
        save_generations(&manager, earlier);
        let old = file(&fs, &primary());
        let start = fs.op_count();
        manager
            .save(SLOT, &game_snapshot(&manager, earlier + 1, ENTITIES))
            .unwrap();
        let end = fs.op_count();
        let new = file(&fs, &primary()).unwrap();
        let mut images = 0;
        for after in start..=end {
            for image in fs.crash_images(after) {
                let manager = manager_over(&image.fs, false, 2);
                match manager.load(SLOT) {
                    Ok(loaded) => {
                        let path = Path::new(SIM_DIR).join(&loaded.report.path);
                        let bytes = file(&image.fs, &path).unwrap();
                        let game = restore_game(&loaded.snapshot).unwrap();
                        if bytes == new {
                            assert_eq!(game, expected_game(earlier + 1, ENTITIES));
                        } else {
                            assert!(Some(&bytes) == old.as_ref(), "after op {after}: neither");
                            assert!(after < end, "the save returned Ok");
                            assert_eq!(game, expected_game(earlier, ENTITIES));
                        }
                    }
                    Err(e) => {
                        assert!(old.is_none() && after < end, "after op {after}: {e}");
                        assert!(matches!(e, Error::SlotEmpty { .. }), "{e}");
                    }
                }
                manager
                    .save(SLOT, &game_snapshot(&manager, 99, ENTITIES))
                    .unwrap();
                assert_eq!(
                    restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
                    expected_game(99, ENTITIES)
                );
                images += 1;
            }
        }
        assert!(images > 20, "{images}");
    }
}

#[test]
fn a_crash_during_an_incremental_save_without_append_leaves_the_old_deltas_or_the_new_one() {
    let fs = SimFs::new();
    let manager = manager_over(&fs, false, 1);
    manager
        .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
        .unwrap();
    for seed in 2..=3 {
        manager
            .save_incremental(SLOT, &player_changes(&manager, seed))
            .unwrap();
    }
    let start = fs.op_count();
    manager
        .save_incremental(SLOT, &player_changes(&manager, 4))
        .unwrap();
    let end = fs.op_count();
    let images = check_logical_images(&fs, false, 1, (start, end), (3, 2), (4, 3));
    assert!(images > 10, "{images}");
}

#[test]
fn a_crash_during_a_compaction_leaves_the_same_state_with_or_without_append() {
    for all in [true, false] {
        let fs = SimFs::new();
        let manager = manager_over(&fs, all, 1);
        manager
            .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
            .unwrap();
        for seed in 2..=4 {
            manager
                .save_incremental(SLOT, &player_changes(&manager, seed))
                .unwrap();
        }
        let start = fs.op_count();
        manager.compact(SLOT).unwrap();
        let end = fs.op_count();
        assert!(end - start > 4, "{:?}", &fs.ops()[start..]);
        // Before the compaction: the base and 3 deltas; after: a new base with none. The state
        // is the same either way.
        let images = check_logical_images(&fs, all, 1, (start, end), (4, 3), (4, 0));
        assert!(images > 20, "{images}");
    }
}

#[test]
fn io_faults_at_every_operation_of_a_save_through_the_required_methods_keep_the_previous_save() {
    let probe = SimFs::new();
    let probe_manager = manager_over(&probe, false, 2);
    save_generations(&probe_manager, 2);
    let start = probe.op_count();
    save_generations(&probe_manager, 1);
    let save_ops = probe.op_count() - start;
    for index in 0..save_ops {
        for mode in [FaultMode::Once, FaultMode::FromThenOn] {
            let fs = SimFs::new();
            let manager = manager_over(&fs, false, 2);
            save_generations(&manager, 2);
            let backup = PathBuf::from(format!("{}.bak1", primary().display()));
            let (old, old_backup) = (file(&fs, &primary()).unwrap(), file(&fs, &backup));
            let at = fs.op_count() + index;
            fs.inject(Fault {
                at,
                kind: FaultKind::NoSpace,
                mode,
            });
            match manager.save(SLOT, &game_snapshot(&manager, 3, ENTITIES)) {
                Err(e) => {
                    assert_eq!(io_kind(&e), io::ErrorKind::StorageFull, "op {index}: {e}");
                    let loaded = manager.load(SLOT).unwrap();
                    let game = restore_game(&loaded.snapshot).unwrap();
                    if game != expected_game(3, ENTITIES) {
                        // The new bytes never replaced the old: the old save is in place, and
                        // its backup is the one before it or, when only the last put failed
                        // after the backups moved, the old save itself.
                        assert_eq!(game, expected_game(2, ENTITIES), "op {index}");
                        assert!(file(&fs, &primary()).unwrap() == old, "op {index}");
                        let now = file(&fs, &backup);
                        assert!(
                            now == old_backup || now.as_ref() == Some(&old),
                            "op {index}: the backup is neither"
                        );
                    }
                }
                // A fault in the best-effort removal of the staged copy is not an error of
                // the save, which was committed.
                Ok(_) => assert_eq!(
                    restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
                    expected_game(3, ENTITIES)
                ),
            }
            fs.clear_faults();
            manager
                .save(SLOT, &game_snapshot(&manager, 4, ENTITIES))
                .unwrap();
            assert_eq!(
                restore_game(&manager.load(SLOT).unwrap().snapshot).unwrap(),
                expected_game(4, ENTITIES)
            );
            // R4: once saving works again, nothing staged or temporary is left behind.
            let staged: Vec<PathBuf> = fs
                .files()
                .into_keys()
                .filter(|p| p.to_string_lossy().ends_with(".new"))
                .collect();
            assert_eq!(staged, Vec::<PathBuf>::new(), "op {index} ({mode:?})");
            assert_eq!(
                temp_files(&fs),
                Vec::<PathBuf>::new(),
                "op {index} ({mode:?})"
            );
        }
    }
}

// ---- R9: a failed fsync is final. ----
//
// `SimFs` loses for good the bytes an fsync failed to write, as Linux does, and leaves the
// entries of a folder whose fsync failed pending. Each test below fails an fsync of a run in
// turn, then checks every crash image of every point of the run: every save that returned Ok
// loads (or a newer one), and a save that failed is never what a load returns.

/// A save folder below three folders that do not exist yet.
const NEW_TREE: &str = "/studio/game/saves";

/// What became of one save of a run.
#[derive(Debug)]
struct Outcome {
    /// The seed it saved.
    seed: u64,
    ok: bool,
    /// How many operations had been logged when it returned.
    at: usize,
    /// A save that failed only at the fsync of its folder, after its file (whole, fsynced) was
    /// renamed into place: it is in place but not known to be durable, and loads until a
    /// power cut takes it (the one failed save that may load; see the guide's guarantees,
    /// docs/guide/format.md).
    in_place: bool,
}

/// The seed of the game a loaded snapshot holds (its label says which, its contents must
/// agree), checked against `expected(seed)`.
fn seed_of<T: PartialEq + std::fmt::Debug>(
    loaded: &savegame::Loaded,
    restore: impl Fn(&savegame::Snapshot) -> T,
    expected: impl Fn(u64) -> T,
) -> u64 {
    let label = &loaded.snapshot.metadata().label;
    let seed: u64 = label
        .strip_prefix("seed ")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("label {label:?}"));
    assert_eq!(restore(&loaded.snapshot), expected(seed), "{label}");
    seed
}

/// Which fsyncs (of a file or of a folder) of `fs`'s log come at or after `from`.
fn fsyncs(fs: &SimFs, from: usize) -> Vec<usize> {
    let ops = fs.ops();
    (from..ops.len())
        .filter(|&i| matches!(ops[i], Op::Sync(_) | Op::SyncDir(_)))
        .collect()
}

/// How a fault at an fsync lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lasting {
    /// The fsync fails, and the disk works again.
    Once,
    /// The fsync fails and so do the next three operations (whatever cleans up after it),
    /// then the disk works again.
    Burst,
    /// Every operation fails from the fsync on, but removing a file.
    FromThenOn,
}

fn arm(fs: &SimFs, at: usize, lasting: Lasting) {
    let (mode, count) = match lasting {
        Lasting::Once => (FaultMode::Once, 1),
        Lasting::Burst => (FaultMode::Once, 4),
        Lasting::FromThenOn => (FaultMode::FromThenOn, 1),
    };
    // A failed operation is not logged: each `Once` fault at `at` fails the next operation.
    for _ in 0..count {
        fs.inject(Fault {
            at,
            kind: FaultKind::Io,
            mode,
        });
    }
}

/// Checks every crash image of every point of `fs`'s log from `from` on against the run's
/// `outcomes`: `load(image)` gives the seed loaded (`None`: the slot is empty). After a save
/// returned Ok, it loads, or a newer one; after a save returned an error, it never loads.
/// (Before the fault, at `from`, a run is the same as one without faults, whose every crash
/// point the tests above check.)
fn check_every_crash_image(
    fs: &SimFs,
    outcomes: &[Outcome],
    (from, context): (usize, &str),
    load: impl Fn(&SimFs) -> Option<u64>,
) -> usize {
    let mut images = 0;
    for at in from..=fs.op_count() {
        let returned = outcomes
            .iter()
            .filter(|o| o.ok && o.at <= at)
            .map(|o| o.seed)
            .max();
        for image in fs.crash_images(at) {
            let loaded = load(&image.fs);
            let what = || {
                format!(
                    "{context}: crash after op {at} (kept {} of {} folder entries, unsynced data \
                     {:?})",
                    image.entries_kept, image.entries_pending, image.data
                )
            };
            if let Some(want) = returned {
                assert!(
                    loaded >= Some(want),
                    "{}: save {want} returned Ok, but the slot loads {loaded:?}",
                    what()
                );
            }
            if let Some(seed) = loaded {
                // A crash before a save returns may keep it or not, whatever it would have
                // returned; once it has returned an error, it is never what loads.
                let outcome = outcomes.iter().find(|o| o.seed == seed).unwrap();
                assert!(
                    outcome.ok || outcome.in_place || outcome.at > at,
                    "{}: save {seed} failed, and the slot loads it",
                    what()
                );
            }
            images += 1;
        }
    }
    images
}

/// A game's run: it builds its manager (again, should that fail) over `NEW_TREE`, then saves
/// seeds 1 to 4, going on after a failed save. A disk that never works again saves nothing.
fn build_and_save(fs: &SimFs) -> Vec<Outcome> {
    let built = (0..3).find_map(|_| {
        let storage = savegame::storage::FsStorage::with_file_system(NEW_TREE, fs.clone());
        let manager = SaveLoadManager::builder()
            .storage(storage.ok()?)
            .key(common::key())
            .build();
        manager.ok()
    });
    let Some(manager) = built else {
        return Vec::new();
    };
    let primary = Path::new(NEW_TREE).join(SLOT.file_name());
    (1..=4)
        .map(|seed| {
            let start = fs.op_count();
            let ok = manager
                .save(SLOT, &game_snapshot(&manager, seed, ENTITIES))
                .is_ok();
            Outcome {
                seed,
                ok,
                at: fs.op_count(),
                in_place: !ok && failed_after_its_commit(&fs.ops()[start..], &primary),
            }
        })
        .collect()
}

/// Whether a failed save, whose logged operations are `ops`, failed only after its commit:
/// the fsync of its file succeeded (failed operations are not logged), the file was renamed
/// over `primary`, and nothing after that succeeded (the folder's fsync failed).
fn failed_after_its_commit(ops: &[Op], primary: &Path) -> bool {
    let Some(Op::Rename { from, to }) = ops.last() else {
        return false;
    };
    let written = ops
        .iter()
        .rposition(|op| matches!(op, Op::Write { path, .. } if path == from));
    let synced = ops.iter().rposition(|op| *op == Op::Sync(from.clone()));
    to == primary && synced > written
}

fn new_tree_seed(fs: &SimFs) -> Option<u64> {
    let storage = savegame::storage::FsStorage::with_file_system(NEW_TREE, fs.clone()).unwrap();
    let manager = SaveLoadManager::builder()
        .storage(storage)
        .key(common::key())
        .build()
        .unwrap();
    match manager.load(SLOT) {
        Ok(loaded) => Some(seed_of(
            &loaded,
            |s| restore_game(s).unwrap(),
            |seed| expected_game(seed, ENTITIES),
        )),
        Err(Error::SlotEmpty { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_folder_whose_fsync_failed_is_fsynced_again_before_a_save_into_it_returns_ok() {
    let probe = SimFs::new();
    let outcomes = build_and_save(&probe);
    assert!(outcomes.iter().all(|o| o.ok), "{outcomes:?}");
    let probe_ops = probe.ops();
    let mut images = 0;
    for index in fsyncs(&probe, 0) {
        for lasting in [Lasting::Once, Lasting::Burst, Lasting::FromThenOn] {
            let fs = SimFs::new();
            arm(&fs, index, lasting);
            let outcomes = build_and_save(&fs);
            let context = format!("EIO ({lasting:?}) at {:?} (op {index})", probe_ops[index]);
            images += check_every_crash_image(&fs, &outcomes, (index, &context), new_tree_seed);
        }
    }
    assert!(images > 500, "{images}");
}

/// The changes of turn `seed`: the player, labelled with the seed.
fn labelled_changes(manager: &SaveLoadManager, seed: u64) -> savegame::Snapshot {
    let mut changes = player_changes(manager, seed).with_label(format!("seed {seed}"));
    changes.metadata_mut().app_version = "1.0.0".into();
    changes
}

fn incremental_seed(manager: &SaveLoadManager) -> u64 {
    let loaded = manager.load(SLOT).unwrap_or_else(|e| panic!("{e}"));
    seed_of(&loaded, |s| restore_game(s).unwrap(), expected_after_deltas)
}

/// A game's run of incremental saves over `fs`: a full save of seed 1, then the changes of
/// seeds 2 to 6, each an incremental save, going on after one that failed. Right after a
/// failure, the manager's own loads, and (`fresh`) a new manager's, give the last save that
/// returned Ok, never the failed one.
///
/// `at_folder_fsync`: the fault is at an fsync of the folder. The first delta that fails then
/// had its bytes fsynced; should it also fail to be cut away durably (the disk still
/// failing), it is in place like a full save whose folder fsync failed, and may survive a
/// power cut: the run says so when a crash image at its return loads it.
fn incremental_run(
    fs: &SimFs,
    (all, compact_at): (bool, u32),
    (fresh, at_folder_fsync): (bool, bool),
    context: &str,
) -> Vec<Outcome> {
    let manager = manager_compacting(fs, all, 1, compact_at);
    manager
        .save(SLOT, &game_snapshot(&manager, 1, ENTITIES))
        .unwrap();
    let mut outcomes = vec![Outcome {
        seed: 1,
        ok: true,
        at: fs.op_count(),
        in_place: false,
    }];
    for seed in 2..=6 {
        let result = manager.save_incremental(SLOT, &labelled_changes(&manager, seed));
        let last_ok = outcomes.iter().filter(|o| o.ok).map(|o| o.seed).max();
        if let Err(e) = &result {
            let own = incremental_seed(&manager);
            assert_eq!(
                Some(own),
                last_ok,
                "{context}: save {seed} failed ({e}), and its own manager loads {own}"
            );
            if fresh {
                let other = incremental_seed(&manager_compacting(fs, all, 1, compact_at));
                assert_eq!(
                    Some(other),
                    last_ok,
                    "{context}: save {seed} failed ({e}), and a new manager loads {other}"
                );
            }
        }
        let first_failure = result.is_err() && outcomes.iter().all(|o| o.ok);
        let in_place = first_failure
            && at_folder_fsync
            && fs.crash_images(fs.op_count()).iter().any(|image| {
                incremental_seed(&manager_compacting(&image.fs, all, 1, compact_at)) == seed
            });
        outcomes.push(Outcome {
            seed,
            ok: result.is_ok(),
            at: fs.op_count(),
            in_place,
        });
    }
    outcomes
}

/// EIO at each fsync in turn of a run of incremental saves, once, in a burst, and from then
/// on: no save that returned Ok is lost after a crash, and no failed one ever loads.
fn fsync_faults_in_incremental_saves(all: bool, compact_at: u32) -> usize {
    let probe = SimFs::new();
    let probe_manager = manager_compacting(&probe, all, 1, compact_at);
    probe_manager
        .save(SLOT, &game_snapshot(&probe_manager, 1, ENTITIES))
        .unwrap();
    let start = probe.op_count();
    let mut compactions = 0;
    for seed in 2..=6 {
        let report = probe_manager
            .save_incremental(SLOT, &labelled_changes(&probe_manager, seed))
            .unwrap();
        compactions += usize::from(report.compacted.is_some());
    }
    assert_eq!(
        compactions > 0,
        compact_at < 100,
        "{compactions} compactions at {compact_at}%"
    );
    let probe_ops = probe.ops();
    let (mut images, mut failures) = (0, 0);
    for index in fsyncs(&probe, start) {
        for lasting in [Lasting::Once, Lasting::Burst, Lasting::FromThenOn] {
            let fs = SimFs::new();
            let context = format!(
                "append {all}, compact at {compact_at}%: EIO ({lasting:?}) at {:?} (op {index})",
                probe_ops[index]
            );
            // The base is saved before the fault.
            arm(&fs, index, lasting);
            let at_folder_fsync = matches!(probe_ops[index], Op::SyncDir(_));
            let outcomes = incremental_run(
                &fs,
                (all, compact_at),
                (lasting == Lasting::Once, at_folder_fsync),
                &context,
            );
            // A fault in a compaction fails no save: the delta is in, the compaction is
            // tried again after the next one.
            failures += outcomes.iter().filter(|o| !o.ok).count();
            images += check_every_crash_image(&fs, &outcomes, (index, &context), |image| {
                let manager = manager_compacting(image, all, 1, compact_at);
                match manager.load(SLOT) {
                    Err(Error::SlotEmpty { .. }) => None,
                    _ => Some(incremental_seed(&manager)),
                }
            });
        }
    }
    assert!(failures > 10, "{failures} saves failed");
    images
}

#[test]
fn a_journal_record_whose_fsync_failed_is_never_built_upon_nor_loaded() {
    assert!(fsync_faults_in_incremental_saves(true, 1_000) > 500);
}

#[test]
fn a_delta_object_whose_put_failed_is_never_built_upon_nor_loaded() {
    assert!(fsync_faults_in_incremental_saves(false, 1_000) > 500);
}

#[test]
fn a_compaction_never_makes_a_delta_whose_fsync_failed_part_of_a_base() {
    assert!(fsync_faults_in_incremental_saves(true, 20) > 500);
    assert!(fsync_faults_in_incremental_saves(false, 20) > 500);
}
