//! Integrity (RELIABILITY.md S1, S2, S4): every single-bit flip, every truncation, trailing
//! bytes, header edits with a recomputed CRC, and swapped slot files are all refused, and the
//! errors tell disk damage (CRC) apart from a wrong key or tampering (AES-GCM).

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
