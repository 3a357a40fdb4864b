//! Raw bytes as a slot file (as they come, and with their CRC32 fixed up): list it, load it (with the key, without one, and through the
//! crate's migrations), decode its mementos, and open it directly. Any error is fine; a panic, a
//! hang or a huge allocation is a bug.
//!
//! ```text
//! cargo +nightly fuzz run load corpus-run/load corpus/load -- -rss_limit_mb=512 -timeout=10
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Codec, Key, SaveLoadManager, Snapshot};
use savegame_fuzz::{KEY, SLOT, key, manager, migrations, variants};

fn decode_all(snapshot: &Snapshot) {
    let _ = snapshot.metadata();
    for id in snapshot.ids().map(str::to_owned).collect::<Vec<_>>() {
        let _ = snapshot.memento::<serde_json::Value>(&id);
    }
}

fuzz_target!(|data: &[u8]| {
    for bytes in variants(data) {
        run(&bytes);
    }
});

fn run(data: &[u8]) {
    let storage = MemoryStorage::new();
    storage.put(&SLOT.file_name(), data).expect("a memory put");
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
        .migrations(migrations())
        .build()
        .expect("a memory manager always builds");
    let _ = migrating.plan_migration(SLOT);
    if let Ok(loaded) = migrating.load(SLOT) {
        decode_all(&loaded.snapshot);
    }
    // A tool's way in: the file alone, no slot checks.
    if let Ok((_, snapshot)) = Snapshot::open_file(data.to_vec(), Some(&key())) {
        decode_all(&snapshot);
    }
}
