//! Features are additive: code written against a build with the `encryption` (or `integrity`)
//! feature compiles against a build without it. Nothing in this file is behind a `cfg`: it uses keys the way a
//! game does, and only its expectations depend on the build. CI runs it in both builds:
//!
//! ```text
//! cargo test --test features
//! cargo test --no-default-features --features json --test features
//! ```

use savegame::format::parse_header;
use savegame::replay::{Player, Recorder};
use savegame::storage::MemoryStorage;
use savegame::{Codec, Error, Key, SaveLoadManager, SlotId, Snapshot};
use savegame_testkit::{fixture, fixture_key};

/// Whether this build can seal and open files.
const ENCRYPTION: bool = cfg!(feature = "encryption");
/// Whether this build can authenticate and check integrity-only files.
const INTEGRITY: bool = cfg!(feature = "integrity");

const SLOT: SlotId = SlotId::Numbered(1);

fn is_disabled<T>(r: &savegame::Result<T>) -> bool {
    matches!(
        r,
        Err(Error::FeatureDisabled {
            feature: "encryption"
        })
    )
}

#[test]
fn a_manager_with_a_key_seals_or_refuses_and_never_writes_in_the_clear() {
    let storage = MemoryStorage::new();
    let manager = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .key(Key::from_bytes([0x5A; 32]))
        .build()
        .unwrap();
    let mut snapshot = manager.snapshot().with_label("additive");
    snapshot
        .capture_memento("secret", &"the dragon's lair")
        .unwrap();
    let saved = manager.save(SLOT, &snapshot);

    if ENCRYPTION {
        saved.unwrap();
        let file = storage.get(&SLOT.file_name()).unwrap();
        assert!(
            parse_header(&file, Some(file.len() as u64))
                .unwrap()
                .encrypted
        );
        assert!(!String::from_utf8_lossy(&file).contains("dragon"));
        let loaded = manager.load(SLOT).unwrap();
        assert_eq!(loaded.snapshot.raw("secret"), snapshot.raw("secret"));
    } else {
        assert!(is_disabled(&saved), "{saved:?}");
        assert_eq!(
            storage.get(&SLOT.file_name()),
            None,
            "a save that cannot be sealed writes nothing"
        );
    }
}

#[test]
fn an_encrypted_file_opens_or_is_refused_as_needing_the_feature() {
    let bytes = std::fs::read(fixture("v3-json-aes.sav")).unwrap();
    let with_key = Snapshot::open_file(bytes.clone(), Some(&fixture_key()));
    let without_key = Snapshot::open_file(bytes, None);
    if ENCRYPTION {
        let (header, snapshot) = with_key.unwrap();
        assert!(header.encrypted);
        assert!(snapshot.contains("player"));
        assert!(matches!(
            without_key,
            Err(Error::KeyRequired {
                purpose: savegame::KeyPurpose::Decrypt
            })
        ));
    } else {
        assert!(is_disabled(&with_key));
        assert!(is_disabled(&without_key));
    }
}

#[test]
fn replays_take_keys_in_every_build() {
    let storage = MemoryStorage::new();
    let key = Key::from_bytes([0x11; 32]);
    let recording = Recorder::builder()
        .key(key.clone())
        .create_in::<u32>(storage.clone(), "sealed.replay");
    if ENCRYPTION {
        let mut recorder = recording.unwrap();
        recorder.frame(&7, None).unwrap();
        recorder.finish().unwrap();
        let player = Player::builder()
            .key(key.clone())
            .open_in(storage.clone(), "sealed.replay");
        assert!(player.is_ok(), "{:?}", player.err());
    } else {
        assert!(is_disabled(&recording.map(|_| ())));
        assert_eq!(storage.get("sealed.replay"), None);
    }

    // A replay recorded without a key: a player with one refuses it in every build.
    let mut plain = Recorder::builder()
        .create_in::<u32>(storage.clone(), "plain.replay")
        .unwrap();
    plain.frame(&7, None).unwrap();
    plain.finish().unwrap();
    let refused = Player::builder().key(key).open_in(storage, "plain.replay");
    assert!(matches!(refused, Err(Error::NotEncrypted)));
}

#[test]
fn keys_are_made_from_bytes_in_every_build_and_generated_only_with_the_cipher() {
    let from_hex = Key::from_hex(&"ab".repeat(32)).unwrap();
    let from_slice = Key::from_slice(&[0xAB; 32]).unwrap();
    assert_eq!(format!("{from_hex:?}"), format!("{from_slice:?}"));
    assert!(!format!("{from_hex:?}").to_lowercase().contains("ab"));
    let generated = Key::generate();
    if ENCRYPTION {
        assert!(generated.is_ok());
    } else {
        assert!(is_disabled(&generated));
    }
}

#[test]
fn an_integrity_only_manager_authenticates_or_refuses_and_never_writes_an_unchecked_file() {
    let storage = MemoryStorage::new();
    let manager = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .integrity_only(Key::from_bytes([0x5A; 32]))
        .build()
        .unwrap();
    let mut snapshot = manager.snapshot();
    snapshot.capture_memento("score", &7u32).unwrap();
    let saved = manager.save(SLOT, &snapshot);
    if INTEGRITY {
        saved.unwrap();
        let file = storage.get(&SLOT.file_name()).unwrap();
        assert!(parse_header(&file, None).unwrap().authenticated);
        assert_eq!(
            manager
                .load(SLOT)
                .unwrap()
                .snapshot
                .memento::<u32>("score")
                .unwrap(),
            7
        );
    } else {
        assert!(
            matches!(
                saved,
                Err(Error::FeatureDisabled {
                    feature: "integrity"
                })
            ),
            "{saved:?}"
        );
        assert_eq!(storage.get(&SLOT.file_name()), None);
    }
    // A committed integrity-only file: checked with the key where the build can, and readable
    // unchecked in every build.
    let bytes = std::fs::read(fixture("format2-v3-json-hmac.sav")).unwrap();
    let checked = Snapshot::open_file(bytes.clone(), Some(&fixture_key()));
    if INTEGRITY {
        assert!(checked.unwrap().0.authenticated);
    } else {
        assert!(matches!(
            checked,
            Err(Error::FeatureDisabled {
                feature: "integrity"
            })
        ));
    }
    let (_, unchecked) = Snapshot::open_file_unverified(bytes).unwrap();
    assert!(unchecked.contains("player"));
}
