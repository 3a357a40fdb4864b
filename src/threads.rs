//! The threads a save or a load starts beside the calling one, each named and each optional:
//! a thread that cannot be started (the process is out of threads, or of memory for a stack)
//! leaves its work to the caller, which does it itself. Every caller of [`scoped`] has that
//! fallback, and the unit tests take each one: they save and load with every such thread
//! refused.
//!
//! The threads that outlive a call (the manager's worker, a replay's writer) wait for their
//! work as background work ([`waiting`]).

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

/// Runs `wait`, in which a thread waits for work that another thread (the game's) hands it, as
/// background work, then makes the thread usual work again to do what it was handed. On Linux
/// the waiting thread is `SCHED_BATCH`: waking it never preempts the thread that woke it.
/// Without that, a game thread that handed a save to the worker was often preempted by the
/// worker it had just woken, and paid for part of the save in its frame (savegame-bevy's
/// bench: a 100,000-entity delta's frame 0.48–0.52 ms, 0.30–0.33 ms with it). Once awake, the
/// thread is `SCHED_OTHER` again while it works: a `SCHED_BATCH` thread woken by its own I/O
/// waits for a busy core's time slice to end each time, and with every core busy a save until
/// on disk took five times as long.
///
/// Only a thread that runs `SCHED_OTHER` (the default) is changed, and then at nice 0 (a
/// process run at a higher nice value keeps it, unless it is privileged). A refusal (a sandbox
/// that forbids the call) leaves the thread as it was. Elsewhere than on Linux, `wait` runs as
/// it is.
pub(crate) fn waiting<T>(wait: impl FnOnce() -> T) -> T {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::NormalThreadSchedulePolicy::{Batch, Other};
        use thread_priority::ThreadSchedulePolicy::Normal;
        if !thread_priority::thread_schedule_policy().is_ok_and(|p| p == Normal(Other)) {
            return wait();
        }
        set_policy(Normal(Batch));
        let woken = wait();
        set_policy(Normal(Other));
        woken
    }
    #[cfg(not(target_os = "linux"))]
    wait()
}

/// Sets the calling thread's policy, at nice 0 (`ThreadPriorityOsValue`'s default). The policy
/// is set first, then the nice value: a refused nice value leaves the policy set. Either
/// refusal only costs what [`waiting`] is for, so neither is an error.
#[cfg(target_os = "linux")]
fn set_policy(policy: thread_priority::ThreadSchedulePolicy) {
    let _ = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        thread_priority::ThreadPriority::Os(thread_priority::ThreadPriorityOsValue::default()),
        policy,
    );
}

/// In the unit tests: runs code on this thread with the threads it would start refused (all
/// of them, or those of chosen names), and says which threads it asked for.
#[cfg(test)]
pub(crate) mod refusal {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    /// While refusing: which names to refuse (`None`: every one), and the names of the
    /// threads asked for so far, refused or not.
    struct Refusing {
        only: Option<Vec<String>>,
        asked: BTreeSet<String>,
    }

    thread_local! {
        static REFUSING: RefCell<Option<Refusing>> = const { RefCell::new(None) };
    }

    /// Whether to refuse a thread named `name` (and notes that it was asked for).
    pub(super) fn refuse(name: &str) -> bool {
        REFUSING.with(|refusing| {
            let mut refusing = refusing.borrow_mut();
            let Some(refusing) = refusing.as_mut() else {
                return false;
            };
            refusing.asked.insert(name.to_owned());
            refusing
                .only
                .as_ref()
                .is_none_or(|only| only.iter().any(|o| o == name))
        })
    }

    /// Ends the refusing when dropped, so that a test that fails inside it leaves the thread
    /// as it found it.
    struct Guard;

    impl Drop for Guard {
        fn drop(&mut self) {
            REFUSING.with(|refusing| refusing.borrow_mut().take());
        }
    }

    fn run<R>(only: Option<Vec<String>>, f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        REFUSING.with(|refusing| {
            *refusing.borrow_mut() = Some(Refusing {
                only,
                asked: BTreeSet::new(),
            });
        });
        let guard = Guard;
        let result = f();
        let names = REFUSING.with(|refusing| {
            refusing
                .borrow_mut()
                .take()
                .map(|r| r.asked)
                .unwrap_or_default()
        });
        drop(guard);
        (result, names)
    }

    /// Runs `f` with every thread this thread would start refused; returns what it returned
    /// and the names of the threads refused.
    pub(crate) fn refusing<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        run(None, f)
    }

    /// Runs `f` with the threads named in `names` refused and every other started; returns
    /// what it returned and the names of every thread asked for. A fallback that an earlier
    /// refusal would pass by (a save that falls back to another path first) is then reached.
    pub(crate) fn refusing_only<R>(names: &[&str], f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        run(Some(names.iter().map(|&n| n.to_owned()).collect()), f)
    }
}

#[cfg(test)]
mod tests {
    use super::refusal::{refusing, refusing_only};
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

    /// An encrypted MessagePack manager over the folder `dir`, keeping two backups, on four
    /// threads.
    fn encrypted_manager(dir: &std::path::Path) -> SaveLoadManager {
        SaveLoadManager::builder()
            .directory(dir)
            .codec(Codec::MessagePack)
            .key(Key::from_bytes([7; 32]))
            .backups(2)
            .threads(4)
            .build()
            .unwrap()
    }

    /// Saves (one over another, so the first is checked before it becomes a backup), a delta,
    /// and loads, each with every thread it would start refused: each is done by the calling
    /// thread instead, and loads back what was saved.
    #[test]
    fn with_no_thread_to_be_had_every_save_and_load_is_done_by_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let encrypted = encrypted_manager(&dir.path().join("encrypted"));
        let plain = SaveLoadManager::builder()
            .directory(dir.path().join("plain"))
            .codec(Codec::MessagePack)
            .threads(4)
            .build()
            .unwrap();
        // Zstandard compresses a document of over 1 MiB a piece at a time on helper threads,
        // and a load decompresses the pieces' frames on them.
        #[cfg(feature = "zstd")]
        let compressed = SaveLoadManager::builder()
            .directory(dir.path().join("compressed"))
            .codec(Codec::MessagePack)
            .key(Key::from_bytes([7; 32]))
            .compression(crate::Compression::Zstd { level: 1 })
            .threads(4)
            .build()
            .unwrap();
        let managers = [
            &encrypted,
            &plain,
            #[cfg(feature = "zstd")]
            &compressed,
        ];
        let slot = SlotId::Numbered(1);
        let ((), refused) = refusing(|| {
            for manager in managers {
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
            "savegame-check-streamed",
            "savegame-encode",
            "savegame-seal",
            "savegame-crc",
            #[cfg(feature = "zstd")]
            "savegame-compress",
            #[cfg(feature = "zstd")]
            "savegame-decompress",
        ] {
            assert!(
                refused.contains(name),
                "{name} was never refused: {refused:?}"
            );
        }
        // The same saves with threads: the files load the same.
        for manager in managers {
            for turn in 0..2 {
                manager.save(slot, &world(manager, turn)).unwrap();
                holds(&manager.load(slot).unwrap().snapshot, turn);
            }
        }
    }

    /// With every thread refused, a streamed save falls back to the save sealed whole before
    /// its check would run (no writer thread), so the streamed save's own fallback, the check
    /// of the file it demotes done by the calling thread, is reached only with that one
    /// thread refused: the save is then written as it is encoded, the file it demoted is a
    /// sound backup, and a damaged current file is found (the save sealed whole then saves).
    #[test]
    fn a_streamed_save_with_no_thread_for_its_check_checks_on_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let manager = encrypted_manager(dir.path());
        let slot = SlotId::Numbered(1);
        manager.save(slot, &world(&manager, 0)).unwrap();
        let ((), asked) = refusing_only(&["savegame-check-streamed"], || {
            manager.save(slot, &world(&manager, 1)).unwrap();
        });
        assert!(asked.contains("savegame-check-streamed"), "{asked:?}");
        assert!(
            asked.contains("savegame-write"),
            "written as encoded: {asked:?}"
        );
        assert!(
            !asked.contains("savegame-check"),
            "the save sealed whole never ran: {asked:?}"
        );
        holds(&manager.load(slot).unwrap().snapshot, 1);
        // The demoted file is the first save, whole: put back as the slot's file, it loads.
        let name = slot.file_name();
        std::fs::copy(
            dir.path().join(crate::slot::backup_name(&name, 1)),
            dir.path().join(&name),
        )
        .unwrap();
        holds(&manager.load(slot).unwrap().snapshot, 0);
        // The check on the calling thread does check: with the current file damaged, the
        // streamed save writes nothing and the save sealed whole takes over.
        let path = dir.path().join(&name);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let ((), asked) = refusing_only(&["savegame-check-streamed"], || {
            manager.save(slot, &world(&manager, 2)).unwrap();
        });
        assert!(asked.contains("savegame-check"), "{asked:?}");
        holds(&manager.load(slot).unwrap().snapshot, 2);
    }
}
