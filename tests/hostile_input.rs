//! Hostile input (RELIABILITY.md S6, S7): size caps hold before anything is read or allocated,
//! lengths that lie are refused before allocation, nesting is capped, and no mutation of a
//! valid file makes the library panic.

mod common;

use common::game::{Player, World};
use common::{fix_crc, key};
use proptest::prelude::*;
use savegame::format::parse_header;
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Codec, Error, SaveLoadManager, SlotId};
use savegame_testkit::Counting;

#[global_allocator]
static ALLOC: Counting = Counting::new();

const SLOT: SlotId = SlotId::Numbered(1);

/// Tests that measure memory, or allocate a lot, take turns.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

// `ALLOC.peak_during(f)`: the property tests of this binary may run meanwhile and are counted
// too, so callers use generous bounds (a few MiB, against the gigabytes a lying length would
// ask for).

const MIB: usize = 1 << 20;

fn manager(storage: &MemoryStorage, codec: Codec, encrypted: bool) -> SaveLoadManager {
    let b = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(codec)
        .backups(0);
    if encrypted { b.key(key()) } else { b }.build().unwrap()
}

#[test]
fn a_file_over_the_size_cap_is_refused_before_it_is_read() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .max_file_size(64 * 1024)
        .build()
        .unwrap();
    let path = manager.path_of(SLOT);
    let mut big = Vec::from(savegame::format::MAGIC);
    big.resize(64 * MIB, 0xEE);
    std::fs::write(&path, &big).unwrap();
    drop(big);
    let mut result = None;
    let peak = ALLOC.peak_during(|| result = Some(manager.load(SLOT)));
    match result.unwrap() {
        Err(Error::TooLarge { size, limit, .. }) => {
            assert_eq!((size, limit), (64 * MIB as u64, 64 * 1024));
        }
        other => panic!("{other:?}"),
    }
    assert!(peak < 8 * MIB, "the 64 MiB file was read: peak {peak}");
    // The load menu reads only its head.
    let peak = ALLOC.peak_during(|| {
        let menu = manager.list().unwrap();
        assert!(matches!(
            menu[0].status,
            savegame::SlotStatus::Unreadable { .. }
        ));
    });
    assert!(peak < 8 * MIB, "list read the whole file: peak {peak}");

    // A save that would exceed the cap is refused rather than written unloadably.
    let mut snapshot = manager.snapshot();
    snapshot
        .capture("world", &World::generate(5_000, 1))
        .unwrap();
    assert!(matches!(
        manager.save(SlotId::Numbered(2), &snapshot),
        Err(Error::TooLarge { .. })
    ));
    assert!(!manager.exists(SlotId::Numbered(2)).unwrap());
}

#[test]
fn lengths_larger_than_the_file_are_refused_before_allocation() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let storage = MemoryStorage::new();
    let manager = manager(&storage, Codec::MessagePack, false);
    let mut snapshot = manager.snapshot();
    snapshot.capture("player", &Player::generate(1)).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    let clean = storage.get(&SLOT.file_name()).unwrap();
    let body = parse_header(&clean, None).unwrap().sections().payload.start as usize;
    // (offset, bytes): payload length, metadata length, label length, TOC count, TOC id
    // length, TOC memento length.
    let lies: [(usize, Vec<u8>); 6] = [
        (44, u64::MAX.to_le_bytes().to_vec()),
        (40, u32::MAX.to_le_bytes().to_vec()),
        (60, u16::MAX.to_le_bytes().to_vec()),
        (body, u32::MAX.to_le_bytes().to_vec()),
        (body + 4, u16::MAX.to_le_bytes().to_vec()),
        (body + 4 + 2 + 6 + 8, (u64::MAX / 2).to_le_bytes().to_vec()),
    ];
    for (at, value) in lies {
        let mut bytes = clean.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        fix_crc(&mut bytes);
        storage.put(&SLOT.file_name(), &bytes).unwrap();
        let mut result = None;
        let peak = ALLOC.peak_during(|| result = Some(manager.load(SLOT)));
        let err = result.unwrap().unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "offset {at}: {err}");
        assert!(peak < 8 * MIB, "offset {at}: peak {peak}");
    }
}

/// Saves a valid file whose "world" memento is the given bytes, and restores it.
fn restore_raw_world(codec: Codec, raw: Vec<u8>) -> Result<(), Error> {
    let storage = MemoryStorage::new();
    let manager = manager(&storage, codec, true);
    let mut snapshot = manager.snapshot();
    snapshot.insert_raw("world", raw).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    let loaded = manager.load(SLOT).unwrap();
    loaded.snapshot.restore("world", &mut World::default())
}

#[test]
fn a_msgpack_header_claiming_four_billion_elements_does_not_allocate_gigabytes() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    // {"entities": array32 of u32::MAX elements, then nothing}
    let mut raw = vec![0x81, 0xa8];
    raw.extend_from_slice(b"entities");
    raw.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
    let mut result = None;
    let peak = ALLOC.peak_during(|| result = Some(restore_raw_world(Codec::MessagePack, raw)));
    let err = result.unwrap().unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    assert!(peak < 16 * MIB, "peak {peak}");

    // A map32 of names claiming u32::MAX entries, and a str32 claiming 4 GiB.
    for tail in [
        &[0xdf, 0xff, 0xff, 0xff, 0xff][..],
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'x'],
    ] {
        let mut raw = vec![0x82, 0xa8];
        raw.extend_from_slice(b"entities");
        raw.push(0x90);
        raw.push(0xa5);
        raw.extend_from_slice(b"names");
        raw.extend_from_slice(tail);
        let mut result = None;
        let peak = ALLOC.peak_during(|| result = Some(restore_raw_world(Codec::MessagePack, raw)));
        assert!(matches!(result.unwrap(), Err(Error::Decode { .. })));
        assert!(peak < 16 * MIB, "peak {peak}");
    }
}

#[test]
fn nesting_ten_thousand_deep_is_a_typed_error_not_a_stack_overflow() {
    let json = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes();
    let err = restore_raw_world(Codec::Json, json).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    let mut msgpack = vec![0x91u8; 10_000];
    msgpack.push(0xc0);
    let err = restore_raw_world(Codec::MessagePack, msgpack).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    // The same through the generic path a tool would use.
    let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    assert!(
        Codec::Json
            .decode::<serde_json::Value>(deep.as_bytes())
            .is_err()
    );
}

/// Loads `bytes` as slot 1 and restores everything it can: any result but a panic is fine.
fn load_anything(storage: &MemoryStorage, manager: &SaveLoadManager, bytes: Vec<u8>) {
    storage.put(&SLOT.file_name(), &bytes).unwrap();
    let _ = manager.list();
    if let Ok(loaded) = manager.load(SLOT) {
        let _ = loaded.snapshot.restore("player", &mut Player::default());
        let _ = loaded.snapshot.restore("world", &mut World::default());
        let _ = loaded.snapshot.memento::<serde_json::Value>("world");
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    Set { at: usize, value: u8 },
    Truncate { len: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Remove { at: usize, len: usize },
    Duplicate { from: usize, len: usize, to: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, value)| Mutation::Set { at, value }),
        any::<usize>().prop_map(|len| Mutation::Truncate { len }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Mutation::Remove { at, len }),
        (any::<usize>(), 1..64usize, any::<usize>())
            .prop_map(|(from, len, to)| Mutation::Duplicate { from, len, to }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let n = bytes.len();
    match m {
        Mutation::Flip { at, mask } => bytes[at % n] ^= mask,
        Mutation::Set { at, value } => bytes[at % n] = *value,
        Mutation::Truncate { len } => bytes.truncate(len % n),
        Mutation::Insert { at, bytes: b } => {
            let at = at % n;
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Remove { at, len } => {
            let at = at % n;
            bytes.drain(at..(at + len).min(n));
        }
        Mutation::Duplicate { from, len, to } => {
            let from = from % n;
            let chunk = bytes[from..(from + len).min(n)].to_vec();
            let to = to % n;
            bytes.splice(to..to, chunk);
        }
    }
}

fn valid_files() -> Vec<(Codec, bool, Vec<u8>)> {
    let mut files = Vec::new();
    for codec in [Codec::Json, Codec::MessagePack] {
        for encrypted in [false, true] {
            let storage = MemoryStorage::new();
            let m = manager(&storage, codec, encrypted);
            let mut snapshot = m
                .snapshot()
                .with_label("fuzz")
                .with_thumbnail(vec![1, 2, 3]);
            snapshot.capture("player", &Player::generate(3)).unwrap();
            snapshot.capture("world", &World::generate(12, 3)).unwrap();
            m.save(SLOT, &snapshot).unwrap();
            files.push((codec, encrypted, storage.get(&SLOT.file_name()).unwrap()));
        }
    }
    files
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Mutated files, with the CRC recomputed half the time so the mutations reach the header,
    /// table-of-contents and codec parsers: never a panic.
    #[test]
    fn mutated_files_never_panic(
        which in 0..4usize,
        mutations in proptest::collection::vec(mutation(), 1..6),
        recompute_crc in any::<bool>(),
    ) {
        let (codec, encrypted, clean) = valid_files().swap_remove(which);
        let mut bytes = clean;
        for m in &mutations {
            apply(&mut bytes, m);
        }
        if recompute_crc && bytes.len() >= 4 {
            fix_crc(&mut bytes);
        }
        let storage = MemoryStorage::new();
        let m = manager(&storage, codec, encrypted);
        load_anything(&storage, &m, bytes);
    }

    /// Random bytes behind a valid magic: never a panic.
    #[test]
    fn random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = Vec::from(savegame::format::MAGIC);
        bytes.extend_from_slice(&tail);
        let storage = MemoryStorage::new();
        let m = manager(&storage, Codec::MessagePack, true);
        load_anything(&storage, &m, bytes.clone());
        fix_crc(&mut bytes);
        load_anything(&storage, &m, bytes);
    }
}
