//! Raw bytes as the journal of a slot whose base save is valid: `slot-001.sav` holds a sound
//! save (made once: plain MessagePack, or JSON sealed with the fixed key) and
//! `slot-001.sav.journal` holds the input (as it comes, and with each record's CRC32 fixed up).
//! List the slot, load it, decode its mementos, then append one more delta and check that it
//! loads; check that every delta applied is in its base's codec, and that a manager of the other
//! codec cannot append to it. Any error is fine; a panic, a hang or a huge allocation is a bug.
//!
//! ```text
//! cargo +nightly fuzz run journal corpus-run/journal corpus/journal -- -rss_limit_mb=512 -timeout=10
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use savegame::Codec;
use savegame::storage::{MemoryStorage, Storage};
use savegame_fuzz::{SLOT, bases, journal_name, key, manager, record_codecs, variants};

fuzz_target!(|data: &[u8]| {
    for bytes in variants(data) {
        run(&bytes);
    }
});

fn run(data: &[u8]) {
    let (plain, encrypted) = bases();
    // The plain MessagePack base with a manager without a key (no compaction), writing
    // MessagePack; the sealed JSON one with the key (plain deltas refused, compaction at the
    // default share), writing JSON, and then MessagePack (deltas in another codec than their
    // base, which the library must refuse).
    for (base, key, compact, codec) in [
        (plain, None, u32::MAX, Codec::MessagePack),
        (encrypted, Some(key()), 50, Codec::Json),
        (encrypted, Some(key()), 50, Codec::MessagePack),
    ] {
        let storage = MemoryStorage::new();
        storage.put(&SLOT.file_name(), base).expect("a memory put");
        storage.put(&journal_name(), data).expect("a memory put");
        let manager = manager(&storage, key, false, compact, codec);
        let _ = manager.list();
        let _ = manager.info(SLOT);
        let loaded = match manager.load(SLOT) {
            Ok(loaded) => loaded,
            // The base is sound: a journal, whatever it holds, never makes the slot unloadable.
            Err(e) => panic!("a sound base with a bad journal failed to load: {e}"),
        };
        // A delta in another codec than its base would be decoded in the base's.
        let base_codec = loaded.report.header.codec;
        for (n, codec) in record_codecs(data, loaded.report.deltas).iter().enumerate() {
            assert_eq!(
                *codec,
                Some(base_codec),
                "delta {} was applied to a base in another codec",
                n + 1
            );
        }
        for id in loaded.snapshot.ids().map(str::to_owned).collect::<Vec<_>>() {
            let _ = loaded.snapshot.memento::<serde_json::Value>(&id);
        }
        // One more delta: the journal's bad tail is dropped first, then it must load with it.
        let mut changes = manager.snapshot();
        changes
            .capture_memento("fuzz", &1234u64)
            .expect("a u64 encodes");
        let Ok(report) = manager.save_incremental(SLOT, &changes) else {
            continue;
        };
        let again = match manager.load(SLOT) {
            Ok(again) => again,
            Err(e) => panic!("the slot failed to load after an incremental save: {e}"),
        };
        assert_eq!(
            again.snapshot.memento::<u64>("fuzz").ok(),
            Some(1234),
            "the delta just saved is in the load"
        );
        if report.compacted.is_none() {
            assert_eq!(
                u64::from(again.report.deltas),
                report.sequence,
                "every delta of the journal applies ({:?})",
                again.report.journal_problem
            );
            assert_eq!(again.report.journal_problem, None);
        }
        let _ = manager.list();
    }
}
