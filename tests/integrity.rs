//! Integrity (RELIABILITY.md S1, S2, S4, S9): every single-bit flip, every truncation, trailing
//! bytes, header edits with a recomputed CRC, and swapped slot files are all refused, and the
//! errors tell disk damage (CRC) apart from a wrong key or tampering (AES-GCM). Integrity-only
//! saves stay readable JSON, and refuse every flip and every edit with a fixed CRC.

mod common;

use common::game::{Player, Rng, World};
use common::{fix_crc, memory_manager};
use savegame::format::{HEADER_LEN, parse_header};
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Error, SaveLoadManager, SlotId};

const SLOT: SlotId = SlotId::Numbered(1);

/// A small encrypted save of one player, and the storage and manager it lives in.
fn small_save() -> (MemoryStorage, SaveLoadManager, Vec<u8>) {
    let storage = MemoryStorage::new();
    let manager = memory_manager(&storage);
    let mut snapshot = manager.snapshot().with_label("small");
    snapshot.capture("player", &Player::generate(5)).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    let bytes = storage.get(&SLOT.file_name()).unwrap();
    (storage, manager, bytes)
}

fn load_bytes(
    storage: &MemoryStorage,
    manager: &SaveLoadManager,
    bytes: Vec<u8>,
) -> Result<(), Error> {
    storage.put(&SLOT.file_name(), &bytes).unwrap();
    manager.load(SLOT).map(drop)
}

#[test]
fn every_single_bit_flip_of_a_small_save_is_refused_as_corruption() {
    let (storage, manager, clean) = small_save();
    assert!(
        clean.len() < 600,
        "small means small: {} bytes",
        clean.len()
    );
    let mut by_kind = std::collections::BTreeMap::new();
    for bit in 0..clean.len() * 8 {
        let mut bytes = clean.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let err = load_bytes(&storage, &manager, bytes).unwrap_err();
        assert!(
            err.is_corruption(),
            "bit {bit}: {err} is not reported as corruption"
        );
        let kind = match err {
            Error::ChecksumMismatch { .. } => "checksum",
            Error::NotASave => "magic",
            ref other => panic!("bit {bit}: unexpected {other}"),
        };
        *by_kind.entry(kind).or_insert(0) += 1;
    }
    // Flips in the magic are caught by the magic; everything else by the CRC.
    assert_eq!(by_kind["magic"], 64);
    assert_eq!(by_kind["checksum"], clean.len() * 8 - 64);
}

#[test]
fn with_the_crc_recomputed_payload_flips_fail_decryption_not_the_checksum() {
    let (storage, manager, clean) = small_save();
    let header = parse_header(&clean, Some(clean.len() as u64)).unwrap();
    let sections = header.sections();
    for byte in sections.nonce.start as usize..sections.payload.end as usize {
        for bit in [0, 3, 7] {
            let mut bytes = clean.clone();
            bytes[byte] ^= 1 << bit;
            fix_crc(&mut bytes);
            let err = load_bytes(&storage, &manager, bytes).unwrap_err();
            assert!(matches!(err, Error::Decrypt), "byte {byte}: {err}");
            assert!(!err.is_corruption());
        }
    }
}

#[test]
fn many_random_flips_of_a_large_save_are_refused() {
    let storage = MemoryStorage::new();
    let manager = memory_manager(&storage);
    let mut snapshot = manager.snapshot();
    snapshot
        .capture("world", &World::generate(20_000, 9))
        .unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    let clean = storage.get(&SLOT.file_name()).unwrap();
    assert!(clean.len() > 800_000, "{} bytes", clean.len());
    let mut rng = Rng::new(77);
    for round in 0..300 {
        let mut bytes = clean.clone();
        for _ in 0..=rng.below(8) {
            let bit = rng.below(bytes.len() as u64 * 8) as usize;
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        if bytes == clean {
            continue; // two flips of the same bit
        }
        let err = load_bytes(&storage, &manager, bytes).unwrap_err();
        assert!(err.is_corruption(), "round {round}: {err}");
    }
}

#[test]
fn truncation_at_every_length_and_trailing_bytes_are_refused() {
    let (storage, manager, clean) = small_save();
    for len in 0..clean.len() {
        let err = load_bytes(&storage, &manager, clean[..len].to_vec()).unwrap_err();
        assert!(err.is_corruption(), "truncated to {len}: {err}");
    }
    for extra in [&[0u8][..], &[0xFF; 3], &clean[..64], &vec![0; 10_000]] {
        let mut bytes = clean.clone();
        bytes.extend_from_slice(extra);
        let err = load_bytes(&storage, &manager, bytes.clone()).unwrap_err();
        assert!(err.is_corruption(), "{} trailing bytes: {err}", extra.len());
        // Even with a CRC recomputed over the longer file, the lengths do not add up.
        fix_crc(&mut bytes);
        let err = load_bytes(&storage, &manager, bytes).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }
    load_bytes(&storage, &manager, clean).unwrap();
}

#[test]
fn editing_any_header_or_metadata_byte_with_the_crc_recomputed_fails_to_open() {
    let (storage, manager, clean) = small_save();
    let header = parse_header(&clean, Some(clean.len() as u64)).unwrap();
    let associated_end = header.sections().metadata.end as usize;
    assert!(associated_end > HEADER_LEN);
    for byte in 8..associated_end {
        for delta in [1u8, 0x80] {
            let mut bytes = clean.clone();
            bytes[byte] = bytes[byte].wrapping_add(delta);
            fix_crc(&mut bytes);
            let err = load_bytes(&storage, &manager, bytes).unwrap_err();
            // Fields that are checked before decryption give their own typed error; every
            // other edit (label, playtime, generation, saved-at, schema version going down,
            // user fields, thumbnail) is caught by the AES-GCM tag over the header.
            assert!(
                matches!(
                    err,
                    Error::Decrypt
                        | Error::Malformed { .. }
                        | Error::UnsupportedFormat { .. }
                        | Error::UnknownFlags { .. }
                        | Error::UnknownCodec { .. }
                        | Error::WrongFileKind { .. }
                        | Error::SlotMismatch { .. }
                        | Error::NewerSchema { .. }
                        | Error::NotEncrypted
                ),
                "byte {byte} +{delta}: {err}"
            );
        }
    }
}

#[test]
fn swapped_slot_files_fail_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let manager = common::dir_manager(dir.path());
    for n in [1, 2] {
        let mut snapshot = manager.snapshot().with_label(format!("slot {n}"));
        snapshot
            .capture("player", &Player::generate(n.into()))
            .unwrap();
        manager.save(SlotId::Numbered(n), &snapshot).unwrap();
    }
    let (one, two) = (
        manager.path_of(SlotId::Numbered(1)),
        manager.path_of(SlotId::Numbered(2)),
    );
    let (a, b) = (std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    std::fs::write(&one, &b).unwrap();
    std::fs::write(&two, &a).unwrap();
    for (slot, found) in [(1, 2), (2, 1)] {
        match manager.load(SlotId::Numbered(slot)) {
            Err(Error::SlotMismatch { expected, found: f }) => {
                assert_eq!(
                    (expected, f),
                    (SlotId::Numbered(slot), SlotId::Numbered(found))
                );
            }
            other => panic!("slot {slot}: {other:?}"),
        }
    }
    // Rewriting the slot number in the header (and the CRC) to match does not help: the
    // header is authenticated.
    let mut forged = b.clone();
    forged[16..20].copy_from_slice(&1u32.to_le_bytes());
    fix_crc(&mut forged);
    std::fs::write(&one, forged).unwrap();
    assert!(matches!(
        manager.load(SlotId::Numbered(1)),
        Err(Error::Decrypt)
    ));
}

/// Integrity-only saves (RELIABILITY.md S9): readable, keyed, refused when edited.
#[cfg(feature = "integrity")]
mod integrity_only {
    use super::*;
    use common::game::PlayerMemento;
    use savegame::Originator;

    /// An integrity-only manager (RELIABILITY.md S9) over a real folder, JSON, the test key.
    fn integrity_manager(dir: &std::path::Path) -> SaveLoadManager {
        SaveLoadManager::builder()
            .directory(dir)
            .codec(savegame::Codec::Json)
            .integrity_only(common::key())
            .build()
            .unwrap()
    }

    /// A small integrity-only save of one player in a real folder: the folder, the manager, the
    /// file's path and bytes.
    fn small_integrity_save() -> (
        tempfile::TempDir,
        SaveLoadManager,
        std::path::PathBuf,
        Vec<u8>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let manager = integrity_manager(dir.path());
        let mut snapshot = manager.snapshot().with_label("readable");
        snapshot.capture("player", &Player::generate(5)).unwrap();
        let report = manager.save(SLOT, &snapshot).unwrap();
        let bytes = std::fs::read(&report.path).unwrap();
        (dir, manager, report.path, bytes)
    }

    #[test]
    fn an_integrity_only_save_stays_readable_json() {
        let (_dir, manager, _path, bytes) = small_integrity_save();
        let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
        assert!(header.authenticated && !header.encrypted);
        assert_eq!(
            header.protection(),
            savegame::format::Protection::Authenticated
        );
        assert_eq!(header.format_version, savegame::format::FORMAT_VERSION);
        // The document sits in the file as JSON text, whole: parse it straight from the bytes.
        let start = bytes
            .windows(10)
            .position(|w| w == br#"{"player":"#)
            .expect("the JSON document is in the file");
        let mut stream =
            serde_json::Deserializer::from_slice(&bytes[start..]).into_iter::<serde_json::Value>();
        let document = stream.next().unwrap().unwrap();
        let player: PlayerMemento = serde_json::from_value(document["player"].clone()).unwrap();
        assert_eq!(player, Player::generate(5).create_memento());
        // And what the manager loads is that.
        let loaded: PlayerMemento = manager
            .load(SLOT)
            .unwrap()
            .snapshot
            .memento("player")
            .unwrap();
        assert_eq!(loaded, player);
    }

    #[test]
    fn every_single_bit_flip_of_an_integrity_only_save_is_refused() {
        let (_dir, manager, path, clean) = small_integrity_save();
        assert!(clean.len() < 600, "{} bytes", clean.len());
        let body_start = parse_header(&clean, None).unwrap().sections().payload.start as usize;
        for fix in [false, true] {
            // With the CRC fixed, a flip in the CRC itself is undone: every other bit.
            let bits = if fix { clean.len() - 4 } else { clean.len() } * 8;
            for bit in 0..bits {
                let mut bytes = clean.clone();
                bytes[bit / 8] ^= 1 << (bit % 8);
                if fix {
                    fix_crc(&mut bytes);
                }
                std::fs::write(&path, &bytes).unwrap();
                match manager.load(SLOT) {
                    Ok(_) => panic!("bit {bit} (CRC fixed: {fix}) loaded"),
                    Err(e) if !fix => assert!(
                        matches!(e, Error::ChecksumMismatch { .. } | Error::NotASave),
                        "bit {bit}: {e}"
                    ),
                    // With the CRC fixed, a flip in the body or the tag is tampering; one in the
                    // header or the metadata may be refused by its own check first (the
                    // flags saying "plain" are refused for a game with a key: NotEncrypted).
                    Err(Error::Tampered) => {}
                    Err(e) => assert!(bit / 8 < body_start, "bit {bit}: {e}"),
                }
            }
        }
    }

    #[test]
    fn an_edit_of_an_integrity_only_save_with_a_fixed_crc_is_refused_as_tampered() {
        let (_dir, manager, path, clean) = small_integrity_save();
        let text = String::from_utf8_lossy(&clean).into_owned();
        // The kind of edit a player makes in a text editor: more health, same length.
        let at = text.find(r#""health":"#).unwrap() + r#""health":"#.len();
        let mut bytes = clean.clone();
        bytes[at] = if bytes[at] == b'9' { b'8' } else { b'9' };
        fix_crc(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let err = manager.load(SLOT).unwrap_err();
        assert!(matches!(err, Error::Tampered), "{err}");
        assert!(
            !err.is_corruption(),
            "tampering is not repaired from a backup"
        );
        // Without the tag's check (no key: a tool), the edit is visible, and marked unchecked.
        let (header, edited) = savegame::Snapshot::open_file_unverified(bytes.clone()).unwrap();
        assert!(header.authenticated);
        assert!(edited.raw("player").is_some());
        // A manager without the key refuses the file rather than vouch for it.
        let dir = path.parent().unwrap();
        let keyless = SaveLoadManager::builder().directory(dir).build().unwrap();
        assert!(matches!(
            keyless.load(SLOT),
            Err(Error::KeyRequired {
                purpose: savegame::KeyPurpose::CheckTag
            })
        ));
        // Another key is refused the same way as an edit.
        std::fs::write(&path, &clean).unwrap();
        let other = SaveLoadManager::builder()
            .directory(dir)
            .integrity_only(savegame::Key::from_bytes([1; 32]))
            .build()
            .unwrap();
        assert!(matches!(other.load(SLOT), Err(Error::Tampered)));
        manager.load(SLOT).unwrap();
    }

    #[test]
    fn saves_under_one_key_load_only_in_the_keys_mode_and_plain_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let authenticated = integrity_manager(dir.path());
        let encrypted = SaveLoadManager::builder()
            .directory(dir.path())
            .codec(savegame::Codec::Json)
            .key(common::key())
            .build()
            .unwrap();
        let plain = SaveLoadManager::builder()
            .directory(dir.path())
            .build()
            .unwrap();
        let mut snapshot = authenticated.snapshot();
        snapshot.capture("player", &Player::generate(2)).unwrap();
        for (writer, slot) in [(&authenticated, 1), (&encrypted, 2), (&plain, 3)] {
            writer.save(SlotId::Numbered(slot), &snapshot).unwrap();
        }
        // Each mode opens its own files only: a flag set or cleared is refused, whichever way.
        use savegame::format::Protection::{Authenticated, Encrypted};
        for (reader, own, other, expected, found) in [
            (&authenticated, 1, 2, Authenticated, Encrypted),
            (&encrypted, 2, 1, Encrypted, Authenticated),
        ] {
            reader.load(SlotId::Numbered(own)).unwrap();
            let err = reader.load(SlotId::Numbered(other)).unwrap_err();
            assert!(
                matches!(err, Error::ProtectionMismatch { expected: e, found: f } if e == expected && f == found),
                "{err:?}"
            );
            assert!(matches!(
                reader.load(SlotId::Numbered(3)),
                Err(Error::NotEncrypted)
            ));
        }
        // The load menu marks the integrity-only save as needing the key, without reading it.
        let menu = plain.list().unwrap();
        assert_eq!(menu[0].status, savegame::SlotStatus::NeedsKey);
        // Deltas of an integrity-only slot are integrity-only too.
        let incremental = SaveLoadManager::builder()
            .directory(dir.path())
            .codec(savegame::Codec::Json)
            .integrity_only(common::key())
            .compact_at(10_000)
            .build()
            .unwrap();
        incremental
            .save_incremental(SlotId::Numbered(1), &snapshot)
            .unwrap();
        let journal = dir.path().join("slot-001.sav.journal");
        let record = std::fs::read(journal).unwrap();
        assert!(parse_header(&record, None).unwrap().authenticated);
        assert_eq!(
            authenticated
                .load(SlotId::Numbered(1))
                .unwrap()
                .report
                .deltas,
            1
        );
    }
}
