//! The threads a save or a load starts beside the calling one, each named and each optional:
//! a thread that cannot be started (the process is out of threads, or of memory for a stack)
//! leaves its work to the caller, which does it itself. Every caller of [`scoped`] has that
//! fallback, and the unit tests take each one: they save and load with every such thread
//! refused.

use std::thread::{Scope, ScopedJoinHandle};

/// Starts `work` on a thread named `name` within `scope`; `None` when no thread could be
/// started, and the caller does the work itself.
pub(crate) fn scoped<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    name: &str,
    work: impl FnOnce() -> T + Send + 'scope,
) -> Option<ScopedJoinHandle<'scope, T>> {
    #[cfg(test)]
    if refusal::refuse(name) {
        return None;
    }
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, work)
        .ok()
}

/// In the unit tests: runs code on this thread with every thread it would start refused, and
/// says which it refused.
#[cfg(test)]
pub(crate) mod refusal {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    thread_local! {
        /// The names of the threads refused so far, while refusing.
        static REFUSED: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
    }

    /// Whether to refuse a thread named `name` (and, if so, notes its name).
    pub(super) fn refuse(name: &str) -> bool {
        REFUSED.with(|refused| {
            refused
                .borrow_mut()
                .as_mut()
                .map(|names| names.insert(name.to_owned()))
                .is_some()
        })
    }

    /// Runs `f` with every thread this thread would start refused; returns what it returned
    /// and the names of the threads refused.
    pub(crate) fn refusing<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        REFUSED.with(|refused| *refused.borrow_mut() = Some(BTreeSet::new()));
        let result = f();
        let names = REFUSED.with(|refused| refused.borrow_mut().take().unwrap_or_default());
        (result, names)
    }
}

#[cfg(test)]
mod tests {
    use super::refusal::refusing;
    use crate::{Codec, Key, Originator, SaveLoadManager, SlotId, Snapshot};

    /// A game object whose memento is encoded when the snapshot is saved (captured, not
    /// encoded: what the encoding workers take).
    struct Thing(Vec<u32>);

    impl Originator for Thing {
        type Memento = Vec<u32>;
        fn create_memento(&self) -> Vec<u32> {
            self.0.clone()
        }
        fn restore_memento(&mut self, memento: Vec<u32>) -> crate::Result<()> {
            self.0 = memento;
            Ok(())
        }
    }

    /// 3,000 mementos of about a KiB each: a file of several segments, over the size whose
    /// CRC is taken on several threads.
    fn world(manager: &SaveLoadManager, turn: u32) -> Snapshot {
        let mut snapshot = manager.snapshot();
        for i in 0..3_000u32 {
            let thing = Thing((0..256).map(|k| k ^ i.wrapping_mul(turn + 7)).collect());
            snapshot.capture(&format!("e{i:05}"), &thing).unwrap();
        }
        snapshot
    }

    fn holds(snapshot: &Snapshot, turn: u32) {
        for i in [0u32, 1_234, 2_999] {
            let value: Vec<u32> = snapshot.memento(&format!("e{i:05}")).unwrap();
            assert_eq!(value[3], 3 ^ i.wrapping_mul(turn + 7), "e{i:05}");
        }
    }

    /// Saves (one over another, so the first is checked before it becomes a backup), a delta,
    /// and loads, each with every thread it would start refused: each is done by the calling
    /// thread instead, and the files are those of a run with threads.
    #[test]
    fn with_no_thread_to_be_had_every_save_and_load_is_done_by_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let encrypted = SaveLoadManager::builder()
            .directory(dir.path().join("encrypted"))
            .codec(Codec::MessagePack)
            .key(Key::from_bytes([7; 32]))
            .backups(2)
            .threads(4)
            .build()
            .unwrap();
        let plain = SaveLoadManager::builder()
            .directory(dir.path().join("plain"))
            .codec(Codec::MessagePack)
            .threads(4)
            .build()
            .unwrap();
        let slot = SlotId::Numbered(1);
        let ((), refused) = refusing(|| {
            for manager in [&encrypted, &plain] {
                for turn in 0..2 {
                    manager.save(slot, &world(manager, turn)).unwrap();
                    holds(&manager.load(slot).unwrap().snapshot, turn);
                }
                let mut changes = manager.snapshot();
                changes.capture_memento("e00005", &vec![9u32; 256]).unwrap();
                manager.save_incremental(slot, &changes).unwrap();
                let loaded = manager.load(slot).unwrap();
                holds(&loaded.snapshot, 1);
                assert_eq!(loaded.snapshot.memento::<Vec<u32>>("e00005").unwrap()[3], 9);
            }
        });
        for name in [
            "savegame-write",
            "savegame-check",
            "savegame-encode",
            "savegame-seal",
            "savegame-crc",
        ] {
            assert!(
                refused.contains(name),
                "{name} was never refused: {refused:?}"
            );
        }
        // The same saves with threads: the files load the same.
        for turn in 0..2 {
            encrypted.save(slot, &world(&encrypted, turn)).unwrap();
            holds(&encrypted.load(slot).unwrap().snapshot, turn);
        }
    }
}
