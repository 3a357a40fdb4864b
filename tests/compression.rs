//! Compressed bodies (flag bits 2–3): the committed fixtures load, a compressing manager's
//! saves and deltas round-trip and are smaller, uncompressed files still load beside them, and
//! a compression bomb is a typed error under the manager's size cap.

mod common;

// The round trips below need a compression in the build; the fixtures' test does not.
#[cfg(any(feature = "lz4", feature = "zstd"))]
use common::game::{Player, World};
#[cfg(any(feature = "lz4", feature = "zstd"))]
use common::key;
#[cfg(any(feature = "lz4", feature = "zstd"))]
use savegame::storage::MemoryStorage;
#[cfg(any(feature = "lz4", feature = "zstd"))]
use savegame::{Codec, Snapshot};
use savegame::{Compression, Error, SaveLoadManager, SlotId};
use savegame_testkit::{fixture_key, repo, versions::v3};

const SLOT: SlotId = SlotId::Numbered(1);

/// The compressed fixtures: `(file, compression, encrypted, authenticated)`.
const FIXTURES: [(&str, &str, bool, bool); 6] = [
    ("format2-v3-json-lz4-plain.sav", "lz4", false, false),
    ("format2-v3-msgpack-lz4-aes.sav", "lz4", true, false),
    ("format2-v3-json-zstd-hmac.sav", "zstd", false, true),
    ("format2-v3-msgpack-zstd-aes.sav", "zstd", true, false),
    // A body of many frames: a document over 1 MiB compressed 512 KiB at a time, with a
    // `scenery` memento beside the v3 state.
    (
        "format3-v3-msgpack-zstd-pieces-aes.sav",
        "zstd",
        true,
        false,
    ),
    // The same, written as it is encoded: the table of contents in a frame of raw blocks.
    (
        "format3-v3-msgpack-zstd-pieces-streamed-aes.sav",
        "zstd",
        true,
        false,
    ),
];

fn fixture_manager(dir: &std::path::Path, encrypted: bool, authenticated: bool) -> SaveLoadManager {
    let b = SaveLoadManager::builder().directory(dir).schema_version(3);
    if encrypted {
        b.key(fixture_key())
    } else if authenticated {
        b.integrity_only(fixture_key())
    } else {
        b
    }
    .build()
    .unwrap()
}

/// Each compressed fixture loads as the state of `v3.expected.json`, in a build with its
/// feature; without it, the load is `FeatureDisabled` naming the feature.
#[test]
fn the_compressed_fixtures_load() {
    let expected: v3::Game =
        serde_json::from_str(&std::fs::read_to_string(repo("fixtures/v3.expected.json")).unwrap())
            .unwrap();
    for (name, compression, encrypted, authenticated) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            repo(&format!("fixtures/{name}")),
            dir.path().join(SLOT.file_name()),
        )
        .unwrap();
        let manager = fixture_manager(dir.path(), encrypted, authenticated);
        // The header is readable without decompressing anything.
        let info = manager.info(SLOT).unwrap();
        assert_eq!(
            info.header.as_ref().unwrap().compression.name(),
            compression,
            "{name}"
        );
        let built = (compression == "lz4" && cfg!(feature = "lz4"))
            || (compression == "zstd" && cfg!(feature = "zstd"));
        match manager.load(SLOT) {
            Ok(loaded) if built => {
                let h = &loaded.report.header;
                assert_eq!((h.encrypted, h.authenticated), (encrypted, authenticated));
                let game = v3::Game {
                    player: loaded.snapshot.memento("player").unwrap(),
                    inventory: loaded.snapshot.memento("inventory").unwrap(),
                    world: loaded.snapshot.memento("world").unwrap(),
                };
                assert_eq!(game, expected, "{name}");
                if name.contains("pieces") {
                    let scenery: Vec<u32> = loaded.snapshot.memento("scenery").unwrap();
                    assert_eq!(scenery.len(), 400_000);
                    for i in [0u32, 49_999, 50_000, 399_999] {
                        let tile = 0x1_0000 + (i % 1_000) * 7 + (i / 50_000);
                        assert_eq!(scenery[i as usize], tile, "{name}: tile {i}");
                    }
                    // Far smaller than its 2 MB document: it was compressed.
                    assert!(info.file_size < 100_000, "{}", info.file_size);
                }
            }
            Err(Error::FeatureDisabled { feature }) if !built => assert_eq!(feature, compression),
            other => panic!("{name}: {:?}", other.map(|l| l.report)),
        }
    }
}

#[cfg(any(feature = "lz4", feature = "zstd"))]
fn compressions() -> Vec<Compression> {
    let mut v = Vec::new();
    if cfg!(feature = "lz4") {
        v.push(Compression::Lz4);
    }
    if cfg!(feature = "zstd") {
        v.push(Compression::zstd());
        v.push(Compression::Zstd { level: 1 });
    }
    v
}

/// Saves, deltas and loads through a compressing manager, on every protection; the same folder
/// read by a manager that does not compress loads them too, and its own files load in turn.
#[cfg(any(feature = "lz4", feature = "zstd"))]
#[test]
fn a_compressing_manager_round_trips_saves_and_deltas_and_reads_uncompressed_files() {
    let world = World::generate(3_000, 7);
    for compression in compressions() {
        for codec in [Codec::Json, Codec::MessagePack] {
            for protection in ["plain", "aes", "hmac"] {
                let storage = std::sync::Arc::new(MemoryStorage::new());
                let build = |c: Compression| {
                    let b = SaveLoadManager::builder()
                        .storage(std::sync::Arc::clone(&storage))
                        .codec(codec)
                        .compression(c);
                    match protection {
                        "aes" => b.key(key()),
                        "hmac" => b.integrity_only(key()),
                        _ => b,
                    }
                    .build()
                    .unwrap()
                };
                let packed = build(compression);
                let unpacked = build(Compression::None);
                let what = format!("{compression} {codec} {protection}");

                let mut snapshot = unpacked.snapshot();
                snapshot.capture("world", &world).unwrap();
                let plain_size = unpacked.save(SlotId::Numbered(2), &snapshot).unwrap().bytes;
                let report = packed.save(SLOT, &snapshot).unwrap();
                assert!(
                    report.bytes * 2 < plain_size,
                    "{what}: {} of {plain_size}",
                    report.bytes
                );
                let info = packed.info(SLOT).unwrap();
                assert_eq!(
                    info.header.as_ref().unwrap().compression.name(),
                    compression.name(),
                    "{what}"
                );

                // A delta, compressed under the same setting, applied on load.
                let mut changes = packed.snapshot();
                changes.capture("player", &Player::generate(3)).unwrap();
                changes.mark_deleted("nothing-here").unwrap();
                packed.save_incremental(SLOT, &changes).unwrap();
                for reader in [&packed, &unpacked] {
                    let loaded = reader.load(SLOT).unwrap();
                    assert_eq!(loaded.report.deltas, 1, "{what}");
                    let mut w = World::default();
                    loaded.snapshot.restore("world", &mut w).unwrap();
                    assert_eq!(w, world, "{what}");
                    let mut p = Player::default();
                    loaded.snapshot.restore("player", &mut p).unwrap();
                    let expected = Player::generate(3);
                    assert_eq!((p.name, p.health), (expected.name, expected.health));
                    // An uncompressed save in the same folder loads through either manager.
                    let other = reader.load(SlotId::Numbered(2)).unwrap();
                    assert_eq!(other.report.header.compression, Compression::None);
                }
                assert_eq!(packed.list().unwrap().len(), 2);
            }
        }
    }
}

/// A compression bomb: a small plain file whose body decompresses to far more than the
/// manager's size cap. Refused as `DecompressedTooLarge` before the allocation, and the load
/// falls back to the backup, as on any damaged file.
#[cfg(any(feature = "lz4", feature = "zstd"))]
#[test]
fn a_compression_bomb_is_a_typed_error_under_the_size_cap() {
    let cap = 1 << 20;
    for compression in compressions() {
        let storage = std::sync::Arc::new(MemoryStorage::new());
        let manager = SaveLoadManager::builder()
            .storage(std::sync::Arc::clone(&storage))
            .codec(Codec::MessagePack)
            .compression(compression)
            .max_file_size(cap)
            .build()
            .unwrap();
        let mut small = manager.snapshot();
        small.capture_memento("world", &vec![0u8; 1000]).unwrap();
        manager.save(SLOT, &small).unwrap();
        manager.save(SLOT, &small).unwrap(); // the first becomes the backup
        // 64 MiB of zeros compress to a few kilobytes: a file far under the cap.
        let mut bomb = manager.snapshot();
        bomb.insert_raw("world", vec![0; 64 << 20]).unwrap();
        let bytes = bomb
            .sealer(SLOT, 1, 9)
            .compression(compression)
            .build()
            .unwrap();
        assert!((bytes.len() as u64) < cap, "{compression}: {}", bytes.len());
        let (header, _) = Snapshot::open_file(bytes.clone(), None).unwrap();
        assert_eq!(header.compression.name(), compression.name());
        savegame::storage::Storage::put(storage.as_ref(), &SLOT.file_name(), &bytes).unwrap();
        // The primary is refused; the backup (the small save) loads and says why.
        let loaded = manager.load(SLOT).unwrap();
        assert!(
            loaded.report.recovered_from_backup.is_some(),
            "{compression}"
        );
        let problem = loaded.report.primary_problem.unwrap();
        assert!(
            problem.contains(&format!("over the {cap}-byte cap")),
            "{compression}: {problem}"
        );
        // With no backup to fall back on, the load is that typed error.
        let alone = std::sync::Arc::new(MemoryStorage::new());
        savegame::storage::Storage::put(alone.as_ref(), &SLOT.file_name(), &bytes).unwrap();
        let err = SaveLoadManager::builder()
            .storage(alone)
            .max_file_size(cap)
            .build()
            .unwrap()
            .load(SLOT)
            .unwrap_err();
        assert!(
            matches!(err, Error::DecompressedTooLarge { size, limit } if size > 64 << 20 && limit == cap),
            "{compression}: {err}"
        );
    }
}

/// A manager told to compress without the feature is refused when it is built.
#[test]
fn a_compression_this_build_lacks_is_refused_when_the_manager_is_built() {
    let dir = tempfile::tempdir().unwrap();
    for (c, built) in [
        (Compression::Lz4, cfg!(feature = "lz4")),
        (Compression::zstd(), cfg!(feature = "zstd")),
    ] {
        let result = SaveLoadManager::builder()
            .directory(dir.path())
            .compression(c)
            .build();
        match result {
            Ok(_) => assert!(built),
            Err(Error::FeatureDisabled { feature }) => {
                assert!(!built);
                assert_eq!(Some(feature), c.feature());
            }
            Err(e) => panic!("{e}"),
        }
    }
    if cfg!(feature = "zstd") {
        let bad = SaveLoadManager::builder()
            .directory(dir.path())
            .compression(Compression::Zstd { level: 99 })
            .build();
        assert!(matches!(bad, Err(Error::Config { .. })));
    }
}

/// A Zstandard `save_state` of more than 1 MiB on two threads is compressed as it is encoded,
/// and the manager's fingerprints of it are taken from the pieces: an incremental state save
/// right after it finds nothing changed, and one after a change writes that member alone.
#[cfg(feature = "zstd")]
#[test]
fn a_state_compressed_as_it_is_encoded_keeps_the_fingerprints_its_deltas_need() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .compression(Compression::zstd())
        .threads(2)
        .build()
        .unwrap();
    let mut game = common::game::Game {
        player: Player::generate(1),
        world: World::generate(40_000, 1),
    };
    let saved = manager.save_state(SLOT, &game).unwrap();
    let info = manager.info(SLOT).unwrap();
    assert_eq!(info.header.unwrap().compression.name(), "zstd");
    // Over the 1 MiB from which a document is compressed as it is encoded.
    let mut snapshot = manager.snapshot();
    snapshot.capture("world", &game.world).unwrap();
    let uncompressed = snapshot.encoded_len();
    assert!(uncompressed > 1 << 20, "{uncompressed}");
    assert!(saved.bytes < uncompressed as u64 / 2, "{}", saved.bytes);

    let report = manager.save_state_incremental(SLOT, &game).unwrap();
    assert!(!report.wrote, "nothing changed: {report:?}");
    game.player.health -= 1;
    let report = manager.save_state_incremental(SLOT, &game).unwrap();
    assert!(report.wrote);
    assert_eq!(report.changed, ["player"]);

    let mut loaded = common::game::Game::default();
    manager.load_state(SLOT, &mut loaded).unwrap();
    game.player.frames_since_hit = 0;
    assert_eq!(loaded, game);
}

/// A Zstandard save on the file system is written as it is encoded (its first segment and
/// header written last, in place) while its table of contents is short; one of 1,000 mementos,
/// whose table is over the 16 KiB a table may take uncompressed, is sealed whole, its table
/// compressed with the rest. Both load.
#[cfg(feature = "zstd")]
#[test]
fn a_zstd_save_of_many_mementos_is_sealed_whole_and_both_kinds_load() {
    use savegame::storage::{Op, SimFs};

    let fs = SimFs::new();
    let manager = common::sim_builder(&fs)
        .compression(Compression::zstd())
        .build()
        .unwrap();
    // Numbers that compress poorly: a body of several segments, compressed.
    let mut rng = common::game::Rng::new(7);
    let padding: Vec<u64> = (0..200_000).map(|_| rng.below(u64::MAX)).collect();
    for (count, streamed) in [(3, true), (1_000, false)] {
        let mut snapshot = manager.snapshot();
        for i in 0..count {
            snapshot
                .capture_memento(&format!("entity/{i:05}"), &vec![i; 10])
                .unwrap();
        }
        snapshot.capture_memento("padding", &padding).unwrap();
        let start = fs.op_count();
        manager.save(SLOT, &snapshot).unwrap();
        let ops = &fs.ops()[start..];
        let in_place = ops.iter().any(|op| matches!(op, Op::WriteAt { .. }));
        assert_eq!(in_place, streamed, "{count} mementos: {ops:?}");
        let loaded = manager.load(SLOT).unwrap();
        assert!(loaded.report.header.compression == Compression::Zstd { level: 0 });
        for i in [0, count - 1] {
            let got: Vec<u64> = loaded.snapshot.memento(&format!("entity/{i:05}")).unwrap();
            assert_eq!(got, vec![i; 10]);
        }
        let got: Vec<u64> = loaded.snapshot.memento("padding").unwrap();
        assert!(got == padding);
    }
}
