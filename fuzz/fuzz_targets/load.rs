//! Raw bytes as a slot file: load it, list it, and decode its mementos. Any error is fine; a
//! panic, a hang or a huge allocation is a bug.
//!
//! ```text
//! cargo fuzz run load -- -rss_limit_mb=512
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use savegame::storage::MemoryStorage;
use savegame::{Key, SaveLoadManager, SlotId};

fuzz_target!(|data: &[u8]| {
    let storage = MemoryStorage::new();
    storage.put(&SlotId::Numbered(1).file_name(), data.to_vec());
    for key in [None, Some(Key::from_bytes([7; 32]))] {
        let builder = SaveLoadManager::builder()
            .storage(storage.clone())
            .backups(0)
            .allow_unencrypted(true);
        let manager = match key {
            Some(key) => builder.key(key),
            None => builder,
        }
        .build()
        .expect("a memory manager always builds");
        let _ = manager.list();
        if let Ok(loaded) = manager.load(SlotId::Numbered(1)) {
            for id in loaded.snapshot.ids().map(str::to_owned).collect::<Vec<_>>() {
                let _ = loaded.snapshot.memento::<serde_json::Value>(&id);
            }
        }
    }
});
