//! Raw bytes as a slot file (as they come, and with their CRC32 fixed up): list it, load it
//! (with the key, without one, integrity-only, and through the crate's migrations,
//! whole-document and per memento), decode its mementos, and open it directly (checked, and
//! unchecked as tools read integrity-only files). Any error is fine; a panic, a hang or a huge
//! allocation is a bug. And the downgrade (S11): each protection flag set or cleared with the
//! CRC fixed; a file that opened under a key's mode must not open so changed under it.
//!
//! ```text
//! cargo +nightly fuzz run load corpus-run/load corpus/load -- -rss_limit_mb=512 -timeout=10
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use savegame::migrate::Migrations;
use savegame::storage::{MemoryStorage, Storage};
use savegame::format::Trust;
use savegame::{Codec, Key, SaveLoadManager, Snapshot};
use savegame_fuzz::{KEY, SLOT, downgrades, key, manager, migrations, variants};

fn decode_all(snapshot: &Snapshot) {
    let _ = snapshot.metadata();
    for id in snapshot.ids().map(str::to_owned).collect::<Vec<_>>() {
        let _ = snapshot.memento::<serde_json::Value>(&id);
    }
}

fuzz_target!(|data: &[u8]| {
    for bytes in variants(data) {
        run(&bytes);
        downgrade(&bytes);
    }
});

/// What a key's mode opened never opens once a protection flag is set or cleared and the CRC
/// fixed, under that mode; and the changed files go through every way in.
fn downgrade(data: &[u8]) {
    let key = key();
    for trust in [Trust::authenticated(&key), Trust::encrypted(&key)] {
        if Snapshot::open_file(data.to_vec(), trust).is_err() {
            continue;
        }
        for changed in downgrades(data) {
            assert!(
                Snapshot::open_file(changed.clone(), trust).is_err(),
                "a file that opened under {trust:?} opened again with a protection flag changed"
            );
            run(&changed);
        }
    }
}

fn run(data: &[u8]) {
    let storage = MemoryStorage::new();
    storage
        .put(&SLOT.file_name(), data)
        .expect("a memory storage takes any put");
    for key in [None, Some(Key::from_bytes(KEY))] {
        let manager = manager(&storage, key, true, 50, Codec::MessagePack);
        let _ = manager.list();
        let _ = manager.info(SLOT);
        let _ = manager.plan_migration(SLOT);
        if let Ok(loaded) = manager.load(SLOT) {
            decode_all(&loaded.snapshot);
        }
    }
    // The game at schema version 3: a v1 or v2 save goes through the declarative steps.
    let migrating = SaveLoadManager::builder()
        .storage(storage.clone())
        .backups(0)
        .schema_version(3)
        .migrations(
            migrations().with(Migrations::new().memento_step("player", 1, 2, |player| {
                player.rename("stamina", "energy");
                Ok(())
            })),
        )
        .build()
        .expect("a memory manager always builds");
    let _ = migrating.plan_migration(SLOT);
    if let Ok(loaded) = migrating.load(SLOT) {
        decode_all(&loaded.snapshot);
    }
    // A game whose saves are integrity-only.
    let authenticated = SaveLoadManager::builder()
        .storage(storage.clone())
        .backups(0)
        .integrity_only(key())
        .build()
        .expect("a memory manager always builds");
    if let Ok(loaded) = authenticated.load(SLOT) {
        decode_all(&loaded.snapshot);
    }
    // A tool's way in: the file alone, no slot checks.
    if let Ok((_, snapshot)) = Snapshot::open_file(data.to_vec(), Some(&key())) {
        decode_all(&snapshot);
    }
    if let Ok((_, snapshot)) = Snapshot::open_file_unverified(data.to_vec()) {
        decode_all(&snapshot);
    }
}
