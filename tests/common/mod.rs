//! Helpers shared by the integration tests.
#![allow(dead_code)]

// The helpers the CLI's tests and the benches share too live once, in savegame-testkit. Not
// every test binary uses each (as with dead_code above).
#[allow(unused_imports)]
pub use savegame_testkit::{TEST_KEY, fix_crc, fix_crc_in, game, key, rerun_self};

use std::path::Path;

use game::{Player, World};
use savegame::storage::{FsStorage, SimFs};
use savegame::{Codec, ManagerBuilder, SaveLoadManager, Snapshot};

/// The folder crash tests put their saves in, inside a [`SimFs`].
pub const SIM_DIR: &str = "/saves";

/// A builder over a simulated file system ([`SIM_DIR`] in `fs`), encrypted with the test key,
/// and otherwise the defaults: for the tests that vary one setting of [`sim_manager`]'s.
pub fn sim_builder(fs: &SimFs) -> ManagerBuilder {
    SaveLoadManager::builder()
        .storage(FsStorage::with_file_system(SIM_DIR, fs.clone()).unwrap())
        .key(key())
}

/// A manager over a simulated file system, MessagePack, encrypted, one backup.
pub fn sim_manager(fs: &SimFs) -> SaveLoadManager {
    sim_builder(fs).codec(Codec::MessagePack).build().unwrap()
}

/// A builder over a real folder, encrypted with the test key, and otherwise the defaults: for
/// the tests that vary one setting of [`dir_manager`]'s.
pub fn dir_builder(dir: &Path) -> ManagerBuilder {
    SaveLoadManager::builder().directory(dir).key(key())
}

/// A manager over a real folder, MessagePack, encrypted, one backup.
pub fn dir_manager(dir: &Path) -> SaveLoadManager {
    dir_builder(dir).codec(Codec::MessagePack).build().unwrap()
}

/// A snapshot of a generated player and world.
pub fn game_snapshot(manager: &SaveLoadManager, seed: u64, entities: usize) -> Snapshot {
    let mut snapshot = manager
        .snapshot()
        .with_label(format!("seed {seed}"))
        .with_app_version("1.0.0");
    snapshot.capture("player", &Player::generate(seed)).unwrap();
    snapshot
        .capture("world", &World::generate(entities, seed))
        .unwrap();
    snapshot
}

/// The player and world a snapshot holds.
pub fn restore_game(snapshot: &Snapshot) -> savegame::Result<(Player, World)> {
    let mut player = Player::default();
    let mut world = World::default();
    snapshot.restore("player", &mut player)?;
    snapshot.restore("world", &mut world)?;
    Ok((player, world))
}

/// The player and world [`game_snapshot`] captured for `seed`, as a restore gives them back.
pub fn expected_game(seed: u64, entities: usize) -> (Player, World) {
    let mut player = Player::generate(seed);
    player.frames_since_hit = 0;
    (player, World::generate(entities, seed))
}

/// A manager over `storage`, encrypted, without backups (so a damaged file is reported, not
/// worked around).
pub fn memory_manager(storage: &savegame::storage::MemoryStorage) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(storage.clone())
        .key(key())
        .backups(0)
        .build()
        .unwrap()
}

/// Flips one bit in the payload of the file, in place: the same inode, length and header, as a
/// failing SD card leaves it.
pub fn flip_in_place(p: &Path) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p)
        .unwrap();
    let at = file.metadata().unwrap().len() - 100;
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x04]).unwrap();
    file.sync_all().unwrap();
}

/// A thread's id, scheduling policy and nice value, from its `/proc/.../stat` (fields 1, 41
/// and 19; the command name before them is in parentheses and may hold spaces).
#[cfg(target_os = "linux")]
pub fn scheduling(stat: &str) -> (u32, u32, i32) {
    let stat = std::fs::read_to_string(stat).unwrap();
    let (tid, after) = stat.split_once(" (").unwrap();
    let after = after.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `fields[0]` is field 3 (the state).
    let field = |n: usize| fields[n - 3];
    (
        tid.parse().unwrap(),
        field(41).parse().unwrap(),
        field(19).parse().unwrap(),
    )
}
