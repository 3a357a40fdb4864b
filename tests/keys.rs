//! Keys and nonces (RELIABILITY.md S3, S5, S8): a wrong key is a typed error that exposes no
//! plaintext; every save draws a fresh nonce; a key is wiped from memory when dropped and never
//! printed.

mod common;

use std::collections::HashSet;

use common::game::Player;
use common::memory_manager;
use savegame::format::parse_header;
use savegame::storage::MemoryStorage;
use savegame::{Error, Key, SaveLoadManager, SlotId};
use savegame_testkit::Counting;

#[global_allocator]
static ALLOC: Counting = Counting::new();

const SLOT: SlotId = SlotId::Numbered(4);

#[test]
fn a_wrong_key_is_a_typed_error_that_exposes_no_plaintext() {
    let storage = MemoryStorage::new();
    let manager = memory_manager(&storage);
    let mut snapshot = manager.snapshot().with_label("visible label");
    let player = Player::generate(1);
    snapshot.capture("player", &player).unwrap();
    manager.save(SLOT, &snapshot).unwrap();

    let file = storage.get(&SLOT.file_name()).unwrap();
    let text = String::from_utf8_lossy(&file);
    assert!(
        !text.contains(&player.name),
        "the player's name is in the file in clear"
    );
    assert!(!text.contains("inventory"));
    // The label is metadata: readable on purpose, for the load menu.
    assert!(text.contains("visible label"));

    let wrong = SaveLoadManager::builder()
        .storage(storage.clone())
        .key(Key::from_bytes([0x42; 32]))
        .build()
        .unwrap();
    let err = wrong.load(SLOT).unwrap_err();
    assert!(matches!(err, Error::Decrypt), "{err}");
    let shown = format!("{err} {err:?}");
    assert_eq!(err.to_string(), "could not decrypt");
    assert!(
        !shown.contains(&player.name) && !shown.contains("potion"),
        "{shown}"
    );

    let keyless = SaveLoadManager::builder().storage(storage).build().unwrap();
    assert!(matches!(
        keyless.load(SLOT),
        Err(Error::KeyRequired {
            purpose: savegame::KeyPurpose::Decrypt
        })
    ));
    let menu = keyless.list().unwrap();
    assert_eq!(menu[0].status, savegame::SlotStatus::NeedsKey);
}

#[test]
fn a_manager_with_a_key_refuses_plain_saves_unless_allowed() {
    let storage = MemoryStorage::new();
    let plain = SaveLoadManager::builder()
        .storage(storage.clone())
        .build()
        .unwrap();
    let mut snapshot = plain.snapshot();
    snapshot.capture("player", &Player::generate(2)).unwrap();
    plain.save(SLOT, &snapshot).unwrap();

    let keyed = memory_manager(&storage);
    assert!(matches!(keyed.load(SLOT), Err(Error::NotEncrypted)));
    let lenient = SaveLoadManager::builder()
        .storage(storage)
        .key(common::key())
        .allow_unencrypted(true)
        .build()
        .unwrap();
    lenient.load(SLOT).unwrap();
}

#[test]
fn ten_thousand_saves_use_ten_thousand_distinct_nonces() {
    let storage = MemoryStorage::new();
    let manager = memory_manager(&storage);
    let mut snapshot = manager.snapshot();
    snapshot.capture_memento("n", &0u8).unwrap();
    let mut nonces = HashSet::new();
    for _ in 0..10_000 {
        manager.save(SLOT, &snapshot).unwrap();
        let bytes = storage.get(&SLOT.file_name()).unwrap();
        let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
        let nonce = header.sections().nonce;
        assert_eq!(nonce.end - nonce.start, 12, "96-bit nonces");
        nonces.insert(bytes[nonce.start as usize..nonce.end as usize].to_vec());
    }
    assert_eq!(nonces.len(), 10_000);
}

#[test]
fn a_dropped_key_leaves_no_key_bytes_in_freed_memory() {
    const PATTERN: u8 = 0xA5;
    // The check itself works: a plain array of the pattern is seen when freed.
    ALLOC.watch_freed(32, PATTERN);
    drop(std::hint::black_box(Box::new([PATTERN; 32])));
    assert!(
        ALLOC.take_seen(),
        "the allocator check must see an unwiped block"
    );

    // A key is wiped before its memory is freed.
    let key = Box::new(Key::from_bytes([PATTERN; 32]));
    assert_eq!(std::mem::size_of::<Key>(), 32);
    ALLOC.watch_freed(32, PATTERN);
    drop(std::hint::black_box(key));
    assert!(
        !ALLOC.take_seen(),
        "a key's bytes were still in memory when it was freed"
    );

    // So is a clone.
    let key = Box::new(Key::from_bytes([PATTERN; 32]));
    let copy = Box::new((*key).clone());
    ALLOC.watch_freed(32, PATTERN);
    drop(std::hint::black_box(key));
    drop(std::hint::black_box(copy));
    assert!(!ALLOC.take_seen());
}

#[test]
fn debug_output_never_shows_key_bytes() {
    let key = Key::from_bytes([0x5C; 32]);
    let manager = SaveLoadManager::builder()
        .storage(MemoryStorage::new())
        .key(key.clone())
        .build()
        .unwrap();
    for shown in [
        format!("{key:?}"),
        format!("{manager:?}"),
        format!("{manager:#?}"),
    ] {
        assert!(
            !shown.contains("5c") && !shown.contains("5C") && !shown.contains("92"),
            "{shown}"
        );
    }
}

#[test]
fn a_builder_given_a_key_and_integrity_only_is_an_error_not_the_last_one_winning() {
    for (first_encrypts, second_encrypts) in [(true, false), (false, true)] {
        let mut builder = SaveLoadManager::builder().storage(MemoryStorage::new());
        for encrypts in [first_encrypts, second_encrypts] {
            let key = Key::from_bytes([7; 32]);
            builder = if encrypts {
                builder.key(key)
            } else {
                builder.integrity_only(key)
            };
        }
        let err = builder.build().unwrap_err();
        assert!(
            matches!(&err, Error::Config { reason } if reason.contains("integrity_only")),
            "{err:?}"
        );
    }
}
