//! The bitcode codec (feature `bitcode`, codec id 3): the committed fixture loads into the
//! game's Rust types, saves round-trip under every protection, and what needs a
//! self-describing codec (migration steps, which run on the generic value tree) is refused
//! with a typed error, while a Rust migration that decodes the old type by hand works.
#![cfg(feature = "bitcode")]

mod common;

use common::game::World;
use common::key;
use savegame::migrate::Migrations;
use savegame::storage::MemoryStorage;
use savegame::{Codec, Error, SaveLoadManager, SlotId, Snapshot};
use savegame_testkit::{fixture_key, repo, versions::v3};

const SLOT: SlotId = SlotId::Numbered(1);

#[test]
fn the_bitcode_fixture_loads_into_the_games_types() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("fixtures/format2-v3-bitcode-aes.sav"),
        dir.path().join(SLOT.file_name()),
    )
    .unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .schema_version(3)
        .key(fixture_key())
        .build()
        .unwrap();
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.report.header.codec, Codec::Bitcode);
    let expected: v3::Game =
        serde_json::from_str(&std::fs::read_to_string(repo("fixtures/v3.expected.json")).unwrap())
            .unwrap();
    let game = v3::Game {
        player: loaded.snapshot.memento("player").unwrap(),
        inventory: loaded.snapshot.memento("inventory").unwrap(),
        world: loaded.snapshot.memento("world").unwrap(),
    };
    assert_eq!(game, expected);
}

#[test]
fn bitcode_saves_round_trip_under_every_protection_and_are_smaller() {
    let world = World::generate(2_000, 3);
    let mut sizes = Vec::new();
    for codec in [Codec::MessagePack, Codec::Bitcode] {
        for protection in ["plain", "aes", "hmac"] {
            let b = SaveLoadManager::builder()
                .storage(MemoryStorage::new())
                .codec(codec);
            let m = match protection {
                "aes" => b.key(key()),
                "hmac" => b.integrity_only(key()),
                _ => b,
            }
            .build()
            .unwrap();
            let mut snapshot = m.snapshot();
            snapshot.capture("world", &world).unwrap();
            let report = m.save(SLOT, &snapshot).unwrap();
            sizes.push((codec, report.bytes));
            let loaded = m.load(SLOT).unwrap();
            let mut w = World::default();
            loaded.snapshot.restore("world", &mut w).unwrap();
            assert_eq!(w, world, "{codec} {protection}");
        }
    }
    assert!(sizes[3].1 * 2 < sizes[0].1, "{sizes:?}");
}

/// Migration steps run on the generic value tree, which bitcode cannot be read as: a bitcode
/// save at an older schema is refused with `NotSelfDescribing`, and nothing changes on disk.
/// A game migrates it in Rust, decoding the old type by hand.
#[test]
fn migration_steps_refuse_a_bitcode_save_and_a_typed_rust_migration_works() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct OldPlayer {
        hp: u32,
    }
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct NewPlayer {
        health: u32,
        stamina: u32,
    }
    let storage = std::sync::Arc::new(MemoryStorage::new());
    let old = SaveLoadManager::builder()
        .storage(std::sync::Arc::clone(&storage))
        .codec(Codec::Bitcode)
        .build()
        .unwrap();
    let mut snapshot = old.snapshot();
    snapshot
        .capture_memento("player", &OldPlayer { hp: 7 })
        .unwrap();
    old.save(SLOT, &snapshot).unwrap();
    let before = old
        .load(SLOT)
        .unwrap()
        .snapshot
        .encoded("player")
        .unwrap()
        .to_vec();

    let migrations = Migrations::new().step(2, "rename hp", |_doc| Ok(()));
    let new = SaveLoadManager::builder()
        .storage(std::sync::Arc::clone(&storage))
        .codec(Codec::Bitcode)
        .schema_version(2)
        .migrations(migrations)
        .build()
        .unwrap();
    let err = new.load(SLOT).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotSelfDescribing {
                codec: "bitcode",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        old.load(SLOT).unwrap().snapshot.encoded("player").unwrap(),
        &before[..],
        "nothing changed on disk"
    );

    // The typed way: open the old file, decode the old type, capture the new one.
    let (header, snapshot) = Snapshot::open_file(
        savegame::storage::Storage::read(storage.as_ref(), &SLOT.file_name(), 1 << 20)
            .unwrap()
            .unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(header.schema_version, 1);
    let p: OldPlayer = snapshot.memento("player").unwrap();
    let mut migrated = Snapshot::new(Codec::Bitcode);
    migrated
        .capture_memento(
            "player",
            &NewPlayer {
                health: p.hp,
                stamina: 100,
            },
        )
        .unwrap();
    let bytes = migrated.sealer(SLOT, 2, 2).build().unwrap();
    let (_, back) = Snapshot::open_file(bytes, None).unwrap();
    assert_eq!(
        back.memento::<NewPlayer>("player").unwrap(),
        NewPlayer {
            health: 7,
            stamina: 100
        }
    );
    assert!(matches!(
        savegame::migrate::to_document(&back),
        Err(Error::NotSelfDescribing { .. })
    ));
}

/// Hostile bytes as a bitcode memento: a typed error, never a panic or a huge allocation.
#[test]
fn garbage_bitcode_is_a_decode_error() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for len in [0usize, 1, 3, 8, 64, 1000] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let r: Result<World, _> = Codec::Bitcode.decode(&bytes);
        assert!(r.is_err() || len > 0, "{len}");
        let r: Result<Vec<String>, _> = Codec::Bitcode.decode(&[0xff; 16]);
        assert!(r.is_err());
    }
}
