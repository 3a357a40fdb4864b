//! Cloud saves against a real S3-compatible server: `s3s-fs` on localhost, started by each test
//! (testkit's `s3::Server`; `scripts/test.sh` installs it). Two devices are two managers with
//! folders of their own and one remote prefix.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use savegame::cloud::object_store::path::Path;
use savegame::cloud::object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};
use savegame::cloud::{CloudSync, Keep, S3, SlotSync};
use savegame::{Error, Key, SaveLoadManager, SlotId};
use savegame_testkit::s3::{ACCESS_KEY, BUCKET, Proxy, SECRET_KEY, Server, noise};
use tempfile::TempDir;

const PREFIX: &str = "players/alice";

fn key() -> Key {
    Key::from_bytes([7; 32])
}

fn store(endpoint: &str) -> Arc<dyn ObjectStore> {
    S3::new(BUCKET)
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials(ACCESS_KEY, SECRET_KEY)
        .build()
        .unwrap()
}

/// One device: its own folder, manager and sync.
struct Device {
    _dir: TempDir,
    cloud: CloudSync,
}

impl Device {
    fn new(endpoint: &str, name: &str) -> Device {
        Device::with(endpoint, name, PREFIX, key())
    }

    fn with(endpoint: &str, name: &str, prefix: &str, key: Key) -> Device {
        let dir = tempfile::tempdir().unwrap();
        let manager = SaveLoadManager::builder()
            .directory(dir.path())
            .key(key)
            .build()
            .unwrap();
        let cloud = CloudSync::builder(Arc::new(manager), store(endpoint))
            .prefix(prefix)
            .device(name)
            .attempts(2)
            .backoff(Duration::from_millis(20))
            .build()
            .unwrap();
        Device { _dir: dir, cloud }
    }

    fn manager(&self) -> &SaveLoadManager {
        self.cloud.manager()
    }

    /// Saves these mementos (each a u64) to `slot`, labelled.
    fn save(&self, slot: u32, label: &str, mementos: &[(&str, u64)]) {
        let mut snapshot = self.cloud.snapshot().with_label(label);
        for (id, value) in mementos {
            snapshot.capture_memento(id, value).unwrap();
        }
        self.cloud.save(SlotId::Numbered(slot), &snapshot).unwrap();
    }

    fn load(&self, slot: u32, id: &str) -> u64 {
        let loaded = self.manager().load(SlotId::Numbered(slot)).unwrap();
        loaded.snapshot.memento(id).unwrap()
    }

    fn sync(&self) -> savegame::cloud::SyncReport {
        self.cloud.sync().unwrap()
    }
}

#[test]
fn a_sync_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<CloudSync>();
    send::<savegame::cloud::SyncHandle>();
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn the_server_refuses_a_stale_if_match_put_and_a_create_over_an_object() {
    let server = Server::start();
    let store = store(&server.endpoint());
    let path = Path::from("players/x/slot-001.sav");
    block_on(async {
        let put = |mode: PutMode, body: &'static [u8]| {
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            store.put_opts(&path, PutPayload::from_static(body), opts)
        };
        let first = put(PutMode::Create, b"one").await.unwrap();
        let stale = UpdateVersion::from(first.clone());
        let second = put(PutMode::Update(stale.clone()), b"two").await.unwrap();
        assert_ne!(first.e_tag, second.e_tag);
        // The ETag device A last saw is stale now: If-Match must fail with 412.
        let refused = put(PutMode::Update(stale), b"three").await;
        assert!(
            matches!(
                refused,
                Err(savegame::cloud::object_store::Error::Precondition { .. })
            ),
            "{refused:?}"
        );
        // If-None-Match: * on an existing object fails too.
        let refused = put(PutMode::Create, b"four").await;
        assert!(
            matches!(
                refused,
                Err(savegame::cloud::object_store::Error::AlreadyExists { .. })
            ),
            "{refused:?}"
        );
        let got = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], b"two");
    });
}

#[test]
fn a_save_synced_on_one_device_loads_on_another() {
    let server = Server::start();
    let (a, b) = (
        Device::new(&server.endpoint(), "desk"),
        Device::new(&server.endpoint(), "deck"),
    );
    a.save(1, "Chapter 1", &[("player", 10), ("world", 20)]);
    let report = a.sync();
    assert_eq!(report.pushed, [SlotId::Numbered(1)]);
    // The object is the file on disk, byte for byte: sealed, the key never sent.
    let on_disk = std::fs::read(a.manager().path_of(SlotId::Numbered(1))).unwrap();
    let object =
        std::fs::read(server.root().join(BUCKET).join(PREFIX).join("slot-001.sav")).unwrap();
    assert_eq!(object, on_disk);

    let report = b.sync();
    assert_eq!(report.pulled, [SlotId::Numbered(1)]);
    assert_eq!(b.load(1, "player"), 10);
    assert_eq!(b.load(1, "world"), 20);
    // One slot alone, from a HEAD rather than a listing.
    assert_eq!(
        b.cloud.sync_slot(SlotId::Numbered(1)).unwrap(),
        SlotSync::Unchanged
    );
    // Nothing changed since: both are unchanged.
    assert_eq!(a.sync().unchanged, [SlotId::Numbered(1)]);
    assert_eq!(b.sync().unchanged, [SlotId::Numbered(1)]);

    // The cloud load menu, from ranged reads of the headers.
    let menu = b.cloud.remote_slots().unwrap();
    assert_eq!(menu.len(), 1);
    let header = menu[0].header.as_ref().unwrap();
    assert_eq!(header.metadata.label, "Chapter 1");
    assert_eq!(header.metadata.user["savegame.device"], "desk");
}

#[test]
fn offline_changes_to_different_mementos_are_merged() {
    let server = Server::start();
    let (a, b) = (
        Device::new(&server.endpoint(), "desk"),
        Device::new(&server.endpoint(), "deck"),
    );
    a.save(1, "start", &[("player", 1), ("world", 1), ("quests", 1)]);
    a.sync();
    b.sync();
    // Both play offline: A moves the player, B changes the world.
    a.save(1, "A played", &[("player", 2), ("world", 1), ("quests", 1)]);
    b.save(1, "B played", &[("player", 1), ("world", 3), ("quests", 1)]);
    assert_eq!(a.sync().pushed, [SlotId::Numbered(1)]);
    let report = b.sync();
    assert!(report.is_complete(), "{:?}", report.failed);
    assert_eq!(report.merged.len(), 1, "{report:?}");
    let merged = &report.merged[0];
    assert_eq!(merged.from_local, ["world"]);
    assert_eq!(merged.from_remote, ["player"]);
    assert_eq!((b.load(1, "player"), b.load(1, "world")), (2, 3));
    // B's merge is in the cloud: A pulls it.
    assert_eq!(a.sync().pulled, [SlotId::Numbered(1)]);
    assert_eq!(
        (a.load(1, "player"), a.load(1, "world"), a.load(1, "quests")),
        (2, 3, 1)
    );
    assert_eq!(b.sync().unchanged, [SlotId::Numbered(1)]);
}

#[test]
fn a_device_that_writes_between_anothers_look_and_put_is_never_overwritten_unseen() {
    let server = Server::start();
    let proxy = Proxy::start(server.port());
    let a = Arc::new(Device::new(&server.endpoint(), "desk"));
    let b = Device::new(&proxy.endpoint(), "deck");
    a.save(1, "start", &[("player", 1), ("world", 1)]);
    a.sync();
    b.sync();
    a.save(1, "A played", &[("player", 2), ("world", 1)]);
    b.save(1, "B played", &[("player", 1), ("world", 3)]);
    // B looks (the cloud holds "start"), then, just before B's If-Match PUT reaches the
    // server, A uploads its own change.
    let raced = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let (a, raced) = (Arc::clone(&a), Arc::clone(&raced));
        proxy.before_put(move || {
            assert_eq!(a.sync().pushed, [SlotId::Numbered(1)]);
            raced.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }
    let report = b.sync();
    assert!(raced.load(std::sync::atomic::Ordering::SeqCst));
    // B's stale If-Match was refused; B looked again and merged A's change in.
    assert_eq!(report.merged.len(), 1, "{report:?}");
    assert_eq!((b.load(1, "player"), b.load(1, "world")), (2, 3));
    assert_eq!(a.sync().pulled, [SlotId::Numbered(1)]);
    assert_eq!((a.load(1, "player"), a.load(1, "world")), (2, 3));
}

#[test]
fn the_same_memento_changed_on_both_devices_is_a_conflict_that_keeps_both() {
    let server = Server::start();
    let (a, b) = (
        Device::new(&server.endpoint(), "desk"),
        Device::new(&server.endpoint(), "deck"),
    );
    a.save(1, "start", &[("player", 1)]);
    a.sync();
    b.sync();
    a.save(1, "A's run", &[("player", 2)]);
    b.save(1, "B's run", &[("player", 3)]);
    a.sync();
    let report = b.sync();
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    let conflict = &report.conflicts[0];
    assert_eq!(conflict.ids, ["player"]);
    assert_eq!(conflict.local.label, "B's run");
    assert_eq!(conflict.local.device.as_deref(), Some("deck"));
    assert_eq!(conflict.remote.label, "A's run");
    assert_eq!(conflict.remote.device.as_deref(), Some("desk"));
    assert!(conflict.remote.saved_at <= conflict.local.saved_at);
    // Nothing was overwritten: B still has its own, the cloud A's.
    assert_eq!(b.load(1, "player"), 3);
    assert_eq!(a.sync().unchanged, [SlotId::Numbered(1)]);
    // A second sync reports it again.
    assert_eq!(b.sync().conflicts.len(), 1);

    // B's player keeps B's run: it goes to the cloud, A's run stays as B's newest backup.
    assert_eq!(
        b.cloud.resolve(SlotId::Numbered(1), Keep::Local).unwrap(),
        SlotSync::Pushed
    );
    let backup = std::fs::read(savegame::slot::backup_name(
        &b.manager().path_of(SlotId::Numbered(1)).to_string_lossy(),
        1,
    ))
    .unwrap();
    let (header, kept) = savegame::Snapshot::open_file(backup, Some(&key())).unwrap();
    assert_eq!(header.metadata.label, "A's run");
    assert_eq!(kept.memento::<u64>("player").unwrap(), 2);
    // A pulls B's run; its own becomes its newest backup.
    assert_eq!(a.sync().pulled, [SlotId::Numbered(1)]);
    assert_eq!(a.load(1, "player"), 3);
    let backup = std::fs::read(savegame::slot::backup_name(
        &a.manager().path_of(SlotId::Numbered(1)).to_string_lossy(),
        1,
    ))
    .unwrap();
    let (header, _) = savegame::Snapshot::open_file(backup, Some(&key())).unwrap();
    assert_eq!(header.metadata.label, "A's run");
    assert!(b.sync().is_complete());
}

#[test]
fn keeping_the_remote_side_of_a_conflict_keeps_the_local_one_as_a_backup() {
    let server = Server::start();
    let (a, b) = (
        Device::new(&server.endpoint(), "desk"),
        Device::new(&server.endpoint(), "deck"),
    );
    a.save(2, "A", &[("player", 5)]);
    b.save(2, "B", &[("player", 6)]);
    a.sync();
    // No common ancestor, the same memento: a conflict.
    assert_eq!(b.sync().conflicts.len(), 1);
    assert_eq!(
        b.cloud.resolve(SlotId::Numbered(2), Keep::Remote).unwrap(),
        SlotSync::Pulled
    );
    assert_eq!(b.load(2, "player"), 5);
    let info = b.manager().info(SlotId::Numbered(2)).unwrap();
    assert_eq!(info.backups, 1);
    assert!(b.sync().unchanged.contains(&SlotId::Numbered(2)));
    assert!(matches!(
        b.cloud.resolve(SlotId::Numbered(2), Keep::Remote),
        Err(Error::SlotEmpty { .. })
    ));
}

#[test]
fn a_cut_off_upload_and_a_server_stopped_mid_sync_lose_nothing() {
    let server = Arc::new(Mutex::new(Server::start()));
    let (port, root, endpoint) = {
        let s = server.lock().unwrap();
        (s.port(), s.root().to_owned(), s.endpoint())
    };
    let proxy = Proxy::start(port);
    let a = Device::new(&proxy.endpoint(), "desk");
    let slot = SlotId::Numbered(1);

    // A small first version syncs; then a 20 MB save, whose upload is cut off after 1 MB.
    a.save(1, "v1", &[("n", 1)]);
    assert_eq!(a.sync().pushed, [slot]);
    let big = noise(20 << 20, 1);
    let mut snapshot = a.cloud.snapshot().with_label("v2");
    snapshot.capture_memento("n", &2u64).unwrap();
    snapshot.capture_memento("blob", &big).unwrap();
    a.cloud.save(slot, &snapshot).unwrap();
    proxy.cut_after(1 << 20);
    let report = a.sync();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(
        matches!(report.failed[0].1, Error::Cloud { .. }),
        "{:?}",
        report.failed[0].1
    );
    // The local save loads; the cloud still holds v1, whole (no half upload is visible).
    assert_eq!(a.load(1, "n"), 2);
    proxy.cut_after(0);
    let menu = a.cloud.remote_slots().unwrap();
    assert_eq!(menu[0].header.as_ref().unwrap().metadata.label, "v1");
    // A later sync completes, and another device gets all 20 MB.
    assert_eq!(a.sync().pushed, [slot]);
    let b = Device::new(&endpoint, "deck");
    assert_eq!(b.sync().pulled, [slot]);
    let loaded = b.manager().load(slot).unwrap();
    assert_eq!(loaded.snapshot.memento::<Vec<u8>>("blob").unwrap(), big);

    // Now the server is killed in the middle of a sync of 12 slots of 512 KiB each, once 2 MB
    // have gone up through the proxy.
    for n in 10..22u32 {
        let mut snapshot = a.cloud.snapshot().with_label(format!("slot {n}"));
        snapshot.capture_memento("n", &u64::from(n)).unwrap();
        snapshot
            .capture_memento("blob", &noise(512 << 10, u64::from(n)))
            .unwrap();
        a.cloud.save(SlotId::Numbered(n), &snapshot).unwrap();
    }
    {
        let server = Arc::clone(&server);
        proxy.on_bytes(2 << 20, move || server.lock().unwrap().kill());
    }
    let report = a.sync();
    assert!(
        !report.failed.is_empty(),
        "the server was killed mid-sync: {report:?}"
    );
    assert!(
        report
            .failed
            .iter()
            .all(|(_, e)| matches!(e, Error::Cloud { .. }))
    );
    assert!(
        !report.pushed.is_empty(),
        "some slots went up before the kill: {report:?}"
    );
    for n in 10..22 {
        assert_eq!(a.load(n, "n"), u64::from(n));
    }
    // The server comes back over the same folder; the next sync finishes the job.
    let restarted = Server::start_at(&root);
    proxy.retarget(restarted.port());
    let report = a.sync();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(
        report.pushed.len() + report.unchanged.len(),
        13,
        "{report:?}"
    );
    // Another device gets every slot, whole: nothing lost, nothing twice.
    let c = Device::new(&restarted.endpoint(), "tablet");
    let report = c.sync();
    assert_eq!(report.pulled.len(), 13, "{report:?}");
    for n in 10..22 {
        assert_eq!(c.load(n, "n"), u64::from(n));
    }
    assert_eq!(c.manager().list().unwrap().len(), 13);
}

#[test]
fn a_damaged_or_foreign_remote_save_is_refused_and_never_replaces_the_local_one() {
    let server = Server::start();
    let a = Device::new(&server.endpoint(), "desk");
    let b = Device::new(&server.endpoint(), "deck");
    a.save(1, "good", &[("n", 1)]);
    a.sync();
    b.sync();
    assert_eq!(b.load(1, "n"), 1);
    let object = server.root().join(BUCKET).join(PREFIX).join("slot-001.sav");
    // Objects are replaced through the S3 API (so their ETag changes, as for any upload).
    let raw = store(&server.endpoint());
    let upload = |bytes: Vec<u8>| {
        block_on(raw.put(
            &Path::from(format!("{PREFIX}/slot-001.sav")),
            PutPayload::from(bytes),
        ))
        .unwrap();
    };

    // A bit flipped.
    let good = std::fs::read(&object).unwrap();
    let mut flipped = good.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x10;
    upload(flipped);
    let report = b.sync();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(
        matches!(report.failed[0].1, Error::ChecksumMismatch { .. }),
        "{:?}",
        report.failed[0].1
    );
    assert_eq!(b.load(1, "n"), 1);
    // A device with nothing local refuses it too, and writes nothing.
    let fresh = Device::new(&server.endpoint(), "new");
    let report = fresh.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::ChecksumMismatch { .. })]),
        "{report:?}"
    );
    assert!(!fresh.manager().exists(SlotId::Numbered(1)).unwrap());

    // Another player's save, with the same game key, copied into this player's folder.
    let mallory = Device::with(&server.endpoint(), "evil", "players/mallory", key());
    mallory.save(1, "not yours", &[("n", 666)]);
    mallory.sync();
    upload(
        std::fs::read(
            server
                .root()
                .join(BUCKET)
                .join("players/mallory/slot-001.sav"),
        )
        .unwrap(),
    );
    let report = b.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::ForeignSave { found, .. })] if found == "players/mallory"),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);

    // A save sealed with another key: the same error as a local file under a wrong key.
    let stranger = Device::with(
        &server.endpoint(),
        "x",
        "players/bob",
        Key::from_bytes([9; 32]),
    );
    stranger.save(1, "bob", &[("n", 2)]);
    stranger.sync();
    upload(std::fs::read(server.root().join(BUCKET).join("players/bob/slot-001.sav")).unwrap());
    let report = b.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::Decrypt)]),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);

    // Another slot's file under this slot's name.
    a.save(2, "two", &[("n", 2)]);
    a.sync();
    upload(std::fs::read(server.root().join(BUCKET).join(PREFIX).join("slot-002.sav")).unwrap());
    let report = b.sync();
    assert!(
        report
            .failed
            .iter()
            .any(|(s, e)| *s == SlotId::Numbered(1) && matches!(e, Error::SlotMismatch { .. })),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);
    let on_disk = std::fs::read(b.manager().path_of(SlotId::Numbered(1))).unwrap();
    assert_eq!(on_disk, good, "the local save was never touched");
    // Once the good object is back, all is well again.
    upload(good);
    assert!(b.sync().is_complete());
    assert_eq!(b.load(1, "n"), 1);
}

#[test]
fn a_save_syncs_in_the_background_after_it_is_written() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .build()
        .unwrap();
    let cloud = CloudSync::builder(Arc::new(manager), store(&server.endpoint()))
        .prefix(PREFIX)
        .device("desk")
        .sync_after_save(true)
        .build()
        .unwrap();
    let mut snapshot = cloud.snapshot().with_label("auto");
    snapshot.capture_memento("n", &9u64).unwrap();
    let game_thread = std::thread::current().id();
    cloud.save(SlotId::Numbered(4), &snapshot).unwrap();
    cloud.wait_idle();
    let reports = cloud.take_background_reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].as_ref().unwrap().pushed, [SlotId::Numbered(4)]);
    assert_eq!(std::thread::current().id(), game_thread);
    let b = Device::new(&server.endpoint(), "deck");
    let handle = b.cloud.sync_in_background();
    assert_eq!(handle.wait().unwrap().pulled, [SlotId::Numbered(4)]);
    assert_eq!(b.load(4, "n"), 9);
}

#[test]
fn an_upload_whose_record_was_lost_is_recognised_not_merged_or_duplicated() {
    let server = Server::start();
    let a = Device::new(&server.endpoint(), "desk");
    a.save(1, "one", &[("n", 1)]);
    assert_eq!(a.sync().pushed, [SlotId::Numbered(1)]);
    // A crash after the PUT and before the record was written: the record is gone.
    let path = a.manager().path_of(SlotId::Numbered(1));
    std::fs::remove_file(savegame::slot::synced_name(&path.to_string_lossy())).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert_eq!(a.sync().unchanged, [SlotId::Numbered(1)]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "no merge rewrote the save"
    );
    assert_eq!(a.sync().unchanged, [SlotId::Numbered(1)]);
}

#[test]
fn incremental_saves_are_compacted_into_the_object_they_sync_as() {
    let server = Server::start();
    let (a, b) = (
        Device::new(&server.endpoint(), "desk"),
        Device::new(&server.endpoint(), "deck"),
    );
    let mut base = a.cloud.snapshot().with_label("base");
    base.capture_memento("player", &1u64).unwrap();
    base.capture_memento("world", &noise(64 << 10, 5)).unwrap();
    a.cloud.save(SlotId::Numbered(1), &base).unwrap();
    let mut changes = a.cloud.snapshot().with_label("delta");
    changes.capture_memento("player", &2u64).unwrap();
    let delta = a
        .manager()
        .save_incremental(SlotId::Numbered(1), &changes)
        .unwrap();
    assert!(
        delta.compacted.is_none(),
        "the delta stays a delta until the sync"
    );
    assert_eq!(a.sync().pushed, [SlotId::Numbered(1)]);
    assert_eq!(b.sync().pulled, [SlotId::Numbered(1)]);
    assert_eq!(b.load(1, "player"), 2);
    let loaded = b.manager().load(SlotId::Numbered(1)).unwrap();
    assert_eq!(
        loaded.snapshot.memento::<Vec<u8>>("world").unwrap(),
        noise(64 << 10, 5)
    );
    assert_eq!(loaded.snapshot.metadata().label, "delta");
}
