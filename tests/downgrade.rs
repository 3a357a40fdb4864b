//! No downgrade (RELIABILITY.md S11): with a key, a file is opened only with the protection
//! the key's mode asks for, on every entry point of the core: a slot's save, a delta of its
//! journal, the key-value store, `Snapshot::open_file`, a replay. Clearing or setting a
//! protection flag and fixing the CRC is refused, and a document with bytes after its value is
//! refused, in every codec.
//!
//! The attack of issue 26: an integrity-only save with flag bit 1 cleared and its CRC fixed is
//! a well-formed plain file (an integrity-only file has no nonce), with the old tag left as
//! trailing bytes. On 1c7407f `Snapshot::open_file(bytes, Some(&key))` opened it, even edited.

mod common;

use savegame::format::{FLAG_AUTHENTICATED, FLAG_ENCRYPTED, Protection, Trust};
use savegame::replay::{Player, Recorder};
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Codec, Error, Key, SaveLoadManager, SlotId, Snapshot};
use savegame_testkit::{
    fix_crc, fix_crc_in, fixture, fixture_key, forged_plain_from_hmac_fixture, strip_flag,
    stripped_hmac_fixture,
};

const SLOT: SlotId = SlotId::Numbered(1);

/// A manager of the fixtures' story (schema 3) over `storage`, integrity-only under the
/// fixtures' key.
fn integrity_manager(storage: &MemoryStorage, allow_plain: bool) -> SaveLoadManager {
    SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .schema_version(3)
        .integrity_only(fixture_key())
        .allow_unencrypted(allow_plain)
        .build()
        .unwrap()
}

#[test]
fn snapshot_open_file_with_a_key_refuses_an_integrity_only_file_stripped_of_its_flag() {
    let stripped = stripped_hmac_fixture();
    let key = fixture_key();
    // Issue 26, hole 1: on 1c7407f this returned Ok.
    let err = Snapshot::open_file(stripped.clone(), Some(&key)).unwrap_err();
    assert!(matches!(err, Error::NotEncrypted), "{err:?}");
    // Edited as well, and made well-formed (the tag cut away, the lengths fixed): refused
    // just the same, whatever the key's mode.
    let forged = forged_plain_from_hmac_fixture();
    for trust in [
        Trust::keyed(&key),
        Trust::authenticated(&key),
        Trust::encrypted(&key),
    ] {
        let err = Snapshot::open_file(forged.clone(), trust).unwrap_err();
        assert!(matches!(err, Error::NotEncrypted), "{trust:?}: {err:?}");
    }
    // Where plain files are allowed too, the stripped file is still refused: the tag left
    // after its document is bytes after its one value.
    let err = Snapshot::open_file(stripped.clone(), Trust::keyed(&key).or_plain()).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err:?}");
    let err = Snapshot::open_file(stripped, None).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err:?}");
    // The forged one opens as what it is, plain, only where plain files are allowed.
    let (header, _) = Snapshot::open_file(forged, Trust::keyed(&key).or_plain()).unwrap();
    assert_eq!(header.protection(), Protection::Plain);
}

#[test]
fn a_manager_refuses_the_stripped_save_and_falls_back_to_nothing() {
    let storage = MemoryStorage::new();
    storage
        .put(&SLOT.file_name(), &stripped_hmac_fixture())
        .unwrap();
    let err = integrity_manager(&storage, false).load(SLOT).unwrap_err();
    assert!(matches!(err, Error::NotEncrypted), "{err:?}");
    // Allowing plain saves does not let the stripped one in: its tag is left over.
    let err = integrity_manager(&storage, true).load(SLOT).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err:?}");
    // Nor a keyless manager (plain files only).
    let keyless = SaveLoadManager::builder()
        .storage(storage.clone())
        .schema_version(3)
        .build()
        .unwrap();
    assert!(matches!(keyless.load(SLOT), Err(Error::Malformed { .. })));
    // The load menu says why, without reading the body.
    let menu = integrity_manager(&storage, false).list().unwrap();
    assert!(
        matches!(&menu[0].status, savegame::SlotStatus::Unreadable { reason } if reason.contains("not sealed")),
        "{:?}",
        menu[0].status
    );
}

#[test]
fn a_flag_set_or_cleared_with_the_crc_fixed_is_refused_in_every_mode() {
    let key = fixture_key();
    for (name, flags_to_flip) in [
        ("format2-v3-json-hmac.sav", FLAG_AUTHENTICATED),
        ("format2-v3-msgpack-hmac.sav", FLAG_AUTHENTICATED),
        ("format2-v3-json-aes.sav", FLAG_ENCRYPTED),
        ("format2-v3-msgpack-segmented-aes.sav", FLAG_ENCRYPTED),
        // An integrity-only file made to claim encryption, and the other way round.
        (
            "format2-v3-json-hmac.sav",
            FLAG_AUTHENTICATED | FLAG_ENCRYPTED,
        ),
        (
            "format2-v3-msgpack-aes.sav",
            FLAG_AUTHENTICATED | FLAG_ENCRYPTED,
        ),
    ] {
        let mut bytes = std::fs::read(fixture(name)).unwrap();
        let flags = u16::from_le_bytes([bytes[10], bytes[11]]) ^ flags_to_flip;
        bytes[10..12].copy_from_slice(&flags.to_le_bytes());
        fix_crc(&mut bytes);
        // Each reader, and whether it asks for protection (a key, plain files not allowed).
        for (trust, asks) in [
            (Trust::keyed(&key), true),
            (Trust::authenticated(&key), true),
            (Trust::encrypted(&key), true),
            (Trust::keyed(&key).or_plain(), false),
            (Trust::plain(), false),
            (Trust::unverified(), false),
        ] {
            let error = Snapshot::open_file(bytes.clone(), trust)
                .err()
                .unwrap_or_else(|| panic!("{name} ^ {flags_to_flip:#x} opened with {trust:?}"));
            // Refused as a file of the wrong protection, or one whose sealing or shape is
            // wrong: never as anything a person would read as an I/O or a decode problem.
            // An integrity-only file stripped of its flag is a well-formed plain file (it has
            // no nonce to lose); an encrypted one is not (its nonce is counted in its length).
            let made_plain = flags & (FLAG_AUTHENTICATED | FLAG_ENCRYPTED) == 0;
            if made_plain && asks && name.contains("hmac") {
                // A key asks for protection; the stripped file has none: the policy says so.
                assert!(
                    matches!(error, Error::NotEncrypted),
                    "{name} ^ {flags_to_flip:#x} with {trust:?}: {error:?}"
                );
            } else {
                assert!(
                    matches!(
                        error,
                        Error::NotEncrypted
                            | Error::ProtectionMismatch { .. }
                            | Error::KeyRequired { .. }
                            | Error::UnknownFlags { .. }
                            | Error::Malformed { .. }
                            | Error::Decrypt
                            | Error::Tampered
                    ),
                    "{name} ^ {flags_to_flip:#x} with {trust:?}: {error:?}"
                );
            }
        }
    }
}

#[test]
fn trailing_bytes_after_the_document_are_refused_in_every_codec() {
    // A plain file of each codec with bytes after its document, its lengths and CRC fixed:
    // well-formed in every other way.
    let storage = MemoryStorage::new();
    let mut codecs = vec![Codec::Json, Codec::MessagePack];
    if cfg!(feature = "bitcode") {
        codecs.push(Codec::Bitcode);
    }
    for codec in codecs {
        let manager = SaveLoadManager::builder()
            .storage(storage.clone())
            .codec(codec)
            .build()
            .unwrap();
        let mut snapshot = manager.snapshot();
        snapshot.capture_memento("a", &(1u32, "x")).unwrap();
        snapshot.capture_memento("b", &vec![2u8; 3]).unwrap();
        manager.save(SLOT, &snapshot).unwrap();
        let clean = storage.get(&SLOT.file_name()).unwrap();
        Snapshot::open_file(clean.clone(), None).unwrap();
        for extra in [&b" "[..], b"\0", b"}", &[0xc0][..], b"{\"c\":1}"] {
            let mut bytes = clean.clone();
            let crc_at = bytes.len() - 4;
            bytes.splice(crc_at..crc_at, extra.iter().copied());
            let payload = u64::from_le_bytes(bytes[44..52].try_into().unwrap());
            bytes[44..52].copy_from_slice(&(payload + extra.len() as u64).to_le_bytes());
            fix_crc(&mut bytes);
            let err = Snapshot::open_file(bytes.clone(), None).unwrap_err();
            assert!(
                matches!(err, Error::Malformed { .. }),
                "{codec:?} + {extra:?}: {err:?}"
            );
            storage.put(&SLOT.file_name(), &bytes).unwrap();
            assert!(manager.load(SLOT).is_err(), "{codec:?} + {extra:?}");
        }
        storage.put(&SLOT.file_name(), &clean).unwrap();
        manager.delete(SLOT).unwrap();
    }
}

#[test]
fn a_delta_stripped_of_its_flag_is_never_applied() {
    let storage = MemoryStorage::new();
    let key = Key::from_bytes([3; 32]);
    let manager = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .integrity_only(key)
        .compact_at(10_000)
        .build()
        .unwrap();
    let mut snapshot = manager.snapshot();
    snapshot.capture_memento("hp", &10u32).unwrap();
    manager.save(SLOT, &snapshot).unwrap();
    for hp in [20u32, 30] {
        let mut changes = manager.snapshot();
        changes.capture_memento("hp", &hp).unwrap();
        manager.save_incremental(SLOT, &changes).unwrap();
    }
    // The second record of the slot's journal, stripped and its CRC fixed.
    let journal = savegame::slot::journal_name(&SLOT.file_name());
    let mut records = storage.get(&journal).unwrap();
    let first = savegame::format::record_len(&records).unwrap().unwrap();
    let second = first
        + savegame::format::record_len(&records[first..])
            .unwrap()
            .unwrap();
    assert_eq!(second, records.len());
    strip_flag(&mut records[first..second], FLAG_AUTHENTICATED);
    storage.put(&journal, &records).unwrap();
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.snapshot.memento::<u32>("hp").unwrap(), 20);
    assert_eq!(loaded.report.deltas, 1);
    let problem = loaded.report.journal_problem.unwrap();
    assert!(problem.contains("delta 2"), "{problem}");
}

#[test]
fn the_key_value_store_refuses_a_file_stripped_of_its_flag() {
    let storage = MemoryStorage::new();
    let manager = SaveLoadManager::builder()
        .storage(storage.clone())
        .integrity_only(Key::from_bytes([4; 32]))
        .build()
        .unwrap();
    manager.store().unwrap().set("volume", &0.5f32).unwrap();
    let name = SlotId::Store.file_name();
    let mut bytes = storage.get(&name).unwrap();
    strip_flag(&mut bytes, FLAG_AUTHENTICATED);
    storage.put(&name, &bytes).unwrap();
    let err = manager.store().unwrap_err();
    assert!(matches!(err, Error::NotEncrypted), "{err:?}");
}

#[test]
fn a_replay_player_with_a_key_refuses_a_replay_whose_start_chunk_was_made_plain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("match.replay");
    let key = Key::from_bytes([5; 32]);
    let mut recorder = Recorder::builder()
        .frame_rate(60)
        .key(key.clone())
        .create(&path)
        .unwrap();
    for frame in 0..10u32 {
        recorder.frame(&frame, None).unwrap();
    }
    recorder.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // The start chunk, rewritten as a plain one: flag cleared, the nonce and the tag (its
    // whole payload) cut out, the lengths and the CRC fixed.
    let meta = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    let start_len = 52 + meta + 12 + 16 + 4;
    let mut start = bytes[..52 + meta].to_vec();
    start[10..12].copy_from_slice(&0u16.to_le_bytes());
    start[44..52].copy_from_slice(&0u64.to_le_bytes());
    start.extend_from_slice(&[0; 4]);
    let len = start.len();
    fix_crc_in(&mut start, 0..len);
    let mut forged = start;
    forged.extend_from_slice(&bytes[start_len..]);
    std::fs::write(&path, &forged).unwrap();
    let err = Player::builder().key(key.clone()).open(&path).unwrap_err();
    assert!(matches!(err, Error::NotEncrypted), "{err:?}");
}
