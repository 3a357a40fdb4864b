//! Cloud saves against a real S3-compatible server: moto's, on localhost (testkit's
//! `s3::Server`, a bucket per test; `scripts/test.sh` installs moto), which keeps conditional
//! writes atomic under concurrency. Two or three devices are managers with folders of their
//! own and one remote prefix. Faults come from testkit's HTTP proxy (lost answers, refused
//! requests, stripped headers, cuts, outages, requests held until they can race) and from
//! killing a device's process (a child run of this test binary) at an exact point.

use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use savegame::cloud::object_store::path::Path;
use savegame::cloud::object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};
use savegame::cloud::{CloudSync, Keep, S3, SlotSync, SyncReport};
use savegame::{Error, Key, SaveLoadManager, SlotId, Snapshot};
use savegame_testkit::s3::{ACCESS_KEY, Kind, Proxy, SECRET_KEY, Server, noise};
use tempfile::TempDir;

const PREFIX: &str = "players/alice";
const SLOT: SlotId = SlotId::Numbered(1);

fn key() -> Key {
    Key::from_bytes([7; 32])
}

fn store(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    S3::new(bucket)
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials(ACCESS_KEY, SECRET_KEY)
        .build()
        .unwrap()
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// The bucket, read and written directly, as another program would.
struct Raw(Arc<dyn ObjectStore>);

impl Raw {
    fn new(server: &Server) -> Raw {
        Raw(store(&server.endpoint(), server.bucket()))
    }

    /// The object of `slot` under `prefix`.
    fn get(&self, prefix: &str, slot: SlotId) -> Option<Vec<u8>> {
        let path = Path::from(format!("{prefix}/{}", slot.file_name()));
        match block_on(async { self.0.get(&path).await?.bytes().await }) {
            Ok(bytes) => Some(bytes.to_vec()),
            Err(savegame::cloud::object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    }

    /// Overwrites the object of `slot` under `prefix` (its ETag changes, as for any upload).
    fn put(&self, prefix: &str, slot: SlotId, bytes: Vec<u8>) {
        let path = Path::from(format!("{prefix}/{}", slot.file_name()));
        block_on(self.0.put(&path, PutPayload::from(bytes))).unwrap();
    }

    /// Every object's name under `prefix`.
    fn names(&self, prefix: &str) -> Vec<String> {
        let prefix = Path::from(prefix);
        let listed = block_on(self.0.list_with_delimiter(Some(&prefix))).unwrap();
        listed
            .objects
            .into_iter()
            .map(|m| m.location.to_string())
            .collect()
    }
}

/// One device: its own folder, manager and sync.
struct Device {
    dir: PathBuf,
    _tmp: Option<TempDir>,
    cloud: CloudSync,
}

impl Device {
    fn new(server: &Server, name: &str) -> Device {
        Device::via(&server.endpoint(), server, name)
    }

    /// A device that reaches the server at `endpoint` (a proxy's).
    fn via(endpoint: &str, server: &Server, name: &str) -> Device {
        let tmp = tempfile::tempdir().unwrap();
        let mut device = Device::at(tmp.path(), endpoint, server.bucket(), name);
        device._tmp = Some(tmp);
        device
    }

    /// The device whose folder is `dir` (again, after its process was killed).
    fn at(dir: &FsPath, endpoint: &str, bucket: &str, name: &str) -> Device {
        let manager = SaveLoadManager::builder()
            .directory(dir)
            .key(key())
            .build()
            .unwrap();
        Device::over(dir, manager, endpoint, bucket, name)
    }

    fn over(
        dir: &FsPath,
        manager: SaveLoadManager,
        endpoint: &str,
        bucket: &str,
        name: &str,
    ) -> Device {
        let cloud = CloudSync::builder(Arc::new(manager), store(endpoint, bucket))
            .prefix(PREFIX)
            .device(name)
            .attempts(2)
            .backoff(Duration::from_millis(20))
            .build()
            .unwrap();
        Device {
            dir: dir.to_owned(),
            _tmp: None,
            cloud,
        }
    }

    fn with(server: &Server, name: &str, prefix: &str, key: Key) -> Device {
        let tmp = tempfile::tempdir().unwrap();
        let manager = SaveLoadManager::builder()
            .directory(tmp.path())
            .key(key)
            .build()
            .unwrap();
        let cloud = CloudSync::builder(
            Arc::new(manager),
            store(&server.endpoint(), server.bucket()),
        )
        .prefix(prefix)
        .device(name)
        .attempts(2)
        .backoff(Duration::from_millis(20))
        .build()
        .unwrap();
        Device {
            dir: tmp.path().to_owned(),
            _tmp: Some(tmp),
            cloud,
        }
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

    fn sync(&self) -> SyncReport {
        self.cloud.sync().unwrap()
    }

    fn primary(&self, slot: SlotId) -> Vec<u8> {
        std::fs::read(self.dir.join(slot.file_name())).unwrap()
    }

    /// The labels of the slot's backups, newest first.
    fn backup_labels(&self, slot: SlotId) -> Vec<String> {
        (1..10)
            .map_while(|i| std::fs::read(self.dir.join(format!("{}.bak{i}", slot.file_name()))).ok())
            .map(|bytes| label_of(&bytes))
            .collect()
    }

    fn conflict_copy(&self, slot: SlotId) -> PathBuf {
        self.dir.join(format!("{}.conflict", slot.file_name()))
    }
}

/// Bytes as one MessagePack bin value, not a list of 20 million numbers: what a game's blob
/// would be (and what keeps a 20 MB save quick to seal and check in a debug build).
#[derive(Debug, PartialEq, Eq)]
struct Blob(Vec<u8>);

impl serde::Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Blob;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Blob, E> {
                Ok(Blob(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Blob, E> {
                Ok(Blob(v))
            }
        }
        d.deserialize_byte_buf(Visit)
    }
}

fn label_of(file: &[u8]) -> String {
    let (header, _) = Snapshot::open_file(file.to_vec(), Some(&key())).unwrap();
    header.metadata.label
}

// ---------------------------------------------------------------------------------------------
// The server.

#[test]
fn a_sync_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<CloudSync>();
    send::<savegame::cloud::SyncHandle>();
}

#[test]
fn the_server_refuses_a_stale_if_match_put_and_a_create_over_an_object() {
    let server = Server::start();
    let store = store(&server.endpoint(), server.bucket());
    let path = Path::from("players/x/slot-001.sav");
    block_on(async {
        let put = |path: &Path, mode: PutMode, body: &'static [u8]| {
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            let (store, path) = (Arc::clone(&store), path.clone());
            async move {
                store
                    .put_opts(&path, PutPayload::from_static(body), opts)
                    .await
            }
        };
        let first = put(&path, PutMode::Create, b"one").await.unwrap();
        let stale = UpdateVersion::from(first.clone());
        let second = put(&path, PutMode::Update(stale.clone()), b"two")
            .await
            .unwrap();
        assert_ne!(first.e_tag, second.e_tag);
        // The ETag device A last saw is stale now: If-Match must fail with 412.
        let refused = put(&path, PutMode::Update(stale.clone()), b"three").await;
        assert!(
            matches!(
                refused,
                Err(savegame::cloud::object_store::Error::Precondition { .. })
            ),
            "{refused:?}"
        );
        // If-None-Match: * on an existing object fails too.
        let refused = put(&path, PutMode::Create, b"four").await;
        assert!(
            matches!(
                refused,
                Err(savegame::cloud::object_store::Error::AlreadyExists { .. })
            ),
            "{refused:?}"
        );
        // If-Match on a key that is not there: refused (404, as AWS answers it).
        let missing = Path::from("players/x/slot-002.sav");
        let refused = put(&missing, PutMode::Update(stale), b"five").await;
        assert!(
            matches!(
                refused,
                Err(savegame::cloud::object_store::Error::Precondition { .. })
            ),
            "{refused:?}"
        );
        let got = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], b"two");
    });
}

/// What s3s-fs 0.14 failed in 8 to 10 rounds of 10: two `If-Match` PUTs naming one ETag,
/// reaching the server at the same moment (the proxy holds the first until the second
/// arrives), must not both win.
#[test]
fn concurrent_if_match_puts_naming_one_etag_let_exactly_one_win() {
    let server = Server::start();
    let proxy = Proxy::start(server.port());
    let direct = store(&server.endpoint(), server.bucket());
    let through = store(&proxy.endpoint(), server.bucket());
    let path = Path::from("players/x/slot-001.sav");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut tag = UpdateVersion::from(direct.put(&path, PutPayload::from_static(b"0")).await.unwrap());
        for round in 0..10 {
            proxy.gate(Kind::Put, 2);
            let put = |body: String| {
                let (store, path, tag) = (Arc::clone(&through), path.clone(), tag.clone());
                tokio::spawn(async move {
                    let opts = PutOptions {
                        mode: PutMode::Update(tag),
                        ..PutOptions::default()
                    };
                    store.put_opts(&path, PutPayload::from(body.into_bytes()), opts).await
                })
            };
            let (a, b) = (put(format!("{round}a")), put(format!("{round}b")));
            let (a, b) = (a.await.unwrap(), b.await.unwrap());
            let won: Vec<_> = [&a, &b].into_iter().filter(|r| r.is_ok()).collect();
            assert_eq!(won.len(), 1, "round {round}: {a:?} and {b:?}");
            for lost in [&a, &b].into_iter().filter(|r| r.is_err()) {
                assert!(
                    matches!(lost, Err(savegame::cloud::object_store::Error::Precondition { .. })),
                    "{lost:?}"
                );
            }
            let winner = a.as_ref().or(b.as_ref()).unwrap().clone();
            // The object is the winner's, under the winner's ETag.
            let got = direct.get(&path).await.unwrap();
            assert_eq!(got.meta.e_tag, winner.e_tag);
            let body = got.bytes().await.unwrap();
            let expected = if a.is_ok() { format!("{round}a") } else { format!("{round}b") };
            assert_eq!(&body[..], expected.as_bytes());
            tag = UpdateVersion::from(winner);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Syncing.

#[test]
fn a_save_synced_on_one_device_loads_on_another() {
    let server = Server::start();
    let (a, b) = (Device::new(&server, "desk"), Device::new(&server, "deck"));
    a.save(1, "Chapter 1", &[("player", 10), ("world", 20)]);
    let report = a.sync();
    assert_eq!(report.pushed, [SLOT]);
    // The object is the file on disk, byte for byte: sealed, the key never sent.
    let object = Raw::new(&server).get(PREFIX, SLOT).unwrap();
    assert_eq!(object, a.primary(SLOT));

    let report = b.sync();
    assert_eq!(report.pulled, [SLOT]);
    assert_eq!(b.load(1, "player"), 10);
    assert_eq!(b.load(1, "world"), 20);
    // One slot alone, from a HEAD rather than a listing.
    assert_eq!(b.cloud.sync_slot(SLOT).unwrap(), SlotSync::Unchanged);
    // Nothing changed since: both are unchanged.
    assert_eq!(a.sync().unchanged, [SLOT]);
    assert_eq!(b.sync().unchanged, [SLOT]);

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
    let (a, b) = (Device::new(&server, "desk"), Device::new(&server, "deck"));
    a.save(1, "start", &[("player", 1), ("world", 1), ("quests", 1)]);
    a.sync();
    b.sync();
    // Both play offline: A moves the player, B changes the world.
    a.save(1, "A played", &[("player", 2), ("world", 1), ("quests", 1)]);
    b.save(1, "B played", &[("player", 1), ("world", 3), ("quests", 1)]);
    assert_eq!(a.sync().pushed, [SLOT]);
    let report = b.sync();
    assert!(report.is_complete(), "{:?}", report.failed);
    assert_eq!(report.merged.len(), 1, "{report:?}");
    let merged = &report.merged[0];
    assert_eq!(merged.from_local, ["world"]);
    assert_eq!(merged.from_remote, ["player"]);
    assert_eq!((b.load(1, "player"), b.load(1, "world")), (2, 3));
    // B's merge is in the cloud, and is B's save: A pulls it.
    assert_eq!(Raw::new(&server).get(PREFIX, SLOT).unwrap(), b.primary(SLOT));
    assert_eq!(a.sync().pulled, [SLOT]);
    assert_eq!(
        (a.load(1, "player"), a.load(1, "world"), a.load(1, "quests")),
        (2, 3, 1)
    );
    assert_eq!(b.sync().unchanged, [SLOT]);
}

#[test]
fn a_device_that_writes_between_anothers_look_and_put_is_never_overwritten_unseen() {
    let server = Server::start();
    let proxy = Proxy::start(server.port());
    let a = Arc::new(Device::new(&server, "desk"));
    let b = Device::via(&proxy.endpoint(), &server, "deck");
    a.save(1, "start", &[("player", 1), ("world", 1)]);
    a.sync();
    b.sync();
    a.save(1, "A played", &[("player", 2), ("world", 1)]);
    b.save(1, "B played", &[("player", 1), ("world", 3)]);
    // B looks (the cloud holds "start"), then, just before B's If-Match PUT reaches the
    // server, A uploads its own change.
    let raced = Arc::new(AtomicBool::new(false));
    {
        let (a, raced) = (Arc::clone(&a), Arc::clone(&raced));
        proxy.before_put(move || {
            assert_eq!(a.sync().pushed, [SLOT]);
            raced.store(true, Ordering::SeqCst);
        });
    }
    let report = b.sync();
    assert!(raced.load(Ordering::SeqCst));
    // B's stale If-Match was refused; B looked again and merged A's change in.
    assert_eq!(report.merged.len(), 1, "{report:?}");
    assert_eq!((b.load(1, "player"), b.load(1, "world")), (2, 3));
    assert_eq!(a.sync().pulled, [SLOT]);
    assert_eq!((a.load(1, "player"), a.load(1, "world")), (2, 3));
}

/// What lost a change on s3s-fs in 5 rounds of 5: two devices push disjoint changes whose
/// PUTs reach the server at the same moment. One wins; the other's If-Match fails, and it
/// merges and pushes again: both changes end up in the cloud.
#[test]
fn two_devices_pushing_disjoint_changes_at_the_same_moment_lose_neither() {
    let server = Server::start();
    let proxy = Proxy::start(server.port());
    let a = Device::via(&proxy.endpoint(), &server, "desk");
    let b = Device::via(&proxy.endpoint(), &server, "deck");
    a.save(1, "start", &[("a", 0), ("b", 0)]);
    a.sync();
    b.sync();
    for round in 1..=5u64 {
        a.save(1, "A", &[("a", round), ("b", round - 1)]);
        b.save(1, "B", &[("a", round - 1), ("b", round)]);
        proxy.gate(Kind::Put, 2);
        let (ra, rb) = std::thread::scope(|s| {
            let ra = s.spawn(|| a.sync());
            let rb = s.spawn(|| b.sync());
            (ra.join().unwrap(), rb.join().unwrap())
        });
        let pushed = ra.pushed.len() + rb.pushed.len();
        let merged = ra.merged.len() + rb.merged.len();
        assert_eq!((pushed, merged), (1, 1), "round {round}: {ra:?} {rb:?}");
        // The one that merged holds both; the other pulls it.
        let (ahead, behind) = if ra.merged.is_empty() { (&b, &a) } else { (&a, &b) };
        assert_eq!((ahead.load(1, "a"), ahead.load(1, "b")), (round, round));
        assert_eq!(behind.sync().pulled, [SLOT]);
        assert_eq!((behind.load(1, "a"), behind.load(1, "b")), (round, round));
        let cloud = Raw::new(&server).get(PREFIX, SLOT).unwrap();
        assert_eq!(cloud, a.primary(SLOT));
        assert_eq!(cloud, b.primary(SLOT));
    }
}

#[test]
fn the_same_memento_changed_on_both_devices_is_a_conflict_that_keeps_both() {
    let server = Server::start();
    let (a, b) = (Device::new(&server, "desk"), Device::new(&server, "deck"));
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
    assert_eq!(a.sync().unchanged, [SLOT]);
    // A second sync reports it again.
    assert_eq!(b.sync().conflicts.len(), 1);

    // B's player keeps B's run: it goes to the cloud, A's run stays as B's newest backup.
    assert_eq!(b.cloud.resolve(SLOT, Keep::Local).unwrap(), SlotSync::Pushed);
    assert_eq!(b.backup_labels(SLOT)[0], "A's run");
    assert!(!b.conflict_copy(SLOT).exists());
    // A pulls B's run; its own becomes its newest backup.
    assert_eq!(a.sync().pulled, [SLOT]);
    assert_eq!(a.load(1, "player"), 3);
    assert_eq!(a.backup_labels(SLOT)[0], "A's run");
    assert!(b.sync().is_complete());
}

#[test]
fn keeping_the_remote_side_of_a_conflict_keeps_the_local_one_as_a_backup() {
    let server = Server::start();
    let (a, b) = (Device::new(&server, "desk"), Device::new(&server, "deck"));
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
    assert_eq!(b.backup_labels(SlotId::Numbered(2)), ["B"]);
    assert!(b.sync().unchanged.contains(&SlotId::Numbered(2)));
    assert!(matches!(
        b.cloud.resolve(SlotId::Numbered(2), Keep::Remote),
        Err(Error::SlotEmpty { .. })
    ));
}

#[test]
fn a_cut_off_upload_and_a_server_gone_mid_sync_lose_nothing() {
    let server = Server::start();
    let proxy = Proxy::start(server.port());
    let a = Device::via(&proxy.endpoint(), &server, "desk");

    // A small first version syncs; then a 4 MiB save, whose upload is cut off after 1 MiB.
    a.save(1, "v1", &[("n", 1)]);
    assert_eq!(a.sync().pushed, [SLOT]);
    let big = Blob(noise(4 << 20, 1));
    let mut snapshot = a.cloud.snapshot().with_label("v2");
    snapshot.capture_memento("n", &2u64).unwrap();
    snapshot.capture_memento("blob", &big).unwrap();
    a.cloud.save(SLOT, &snapshot).unwrap();
    let before = a.primary(SLOT);
    proxy.cut_after(1 << 20);
    let report = a.sync();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(
        matches!(report.failed[0].1, Error::Cloud { .. }),
        "{:?}",
        report.failed[0].1
    );
    // The local save is as it was; the cloud still holds v1, whole (no half upload is visible).
    assert_eq!(a.primary(SLOT), before);
    proxy.cut_after(0);
    let menu = a.cloud.remote_slots().unwrap();
    assert_eq!(menu[0].header.as_ref().unwrap().metadata.label, "v1");
    // A later sync completes, and another device gets all of it.
    assert_eq!(a.sync().pushed, [SLOT]);
    let b = Device::new(&server, "deck");
    assert_eq!(b.sync().pulled, [SLOT]);
    let loaded = b.manager().load(SLOT).unwrap();
    assert_eq!(loaded.snapshot.memento::<Blob>("blob").unwrap(), big);

    // Now the server goes away in the middle of a sync of 12 slots of 512 KiB each, once 2 MB
    // have gone up: every connection is dropped and no new one gets through.
    for n in 10..22u32 {
        let mut snapshot = a.cloud.snapshot().with_label(format!("slot {n}"));
        snapshot.capture_memento("n", &u64::from(n)).unwrap();
        snapshot
            .capture_memento("blob", &Blob(noise(512 << 10, u64::from(n))))
            .unwrap();
        a.cloud.save(SlotId::Numbered(n), &snapshot).unwrap();
    }
    proxy.down_after(2 << 20);
    let report = a.sync();
    assert!(
        !report.failed.is_empty(),
        "the server went away mid-sync: {report:?}"
    );
    assert!(
        report
            .failed
            .iter()
            .all(|(_, e)| matches!(e, Error::Cloud { .. }))
    );
    assert!(
        !report.pushed.is_empty(),
        "some slots went up before the outage: {report:?}"
    );
    for n in 10..22 {
        assert_eq!(a.load(n, "n"), u64::from(n));
    }
    // The server is back; the next sync finishes the job.
    proxy.set_down(false);
    let report = a.sync();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(
        report.pushed.len() + report.unchanged.len(),
        13,
        "{report:?}"
    );
    // Another device gets every slot, whole: nothing lost, nothing twice.
    let c = Device::new(&server, "tablet");
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
    let raw = Raw::new(&server);
    let a = Device::new(&server, "desk");
    let b = Device::new(&server, "deck");
    a.save(1, "good", &[("n", 1)]);
    a.sync();
    b.sync();
    assert_eq!(b.load(1, "n"), 1);

    // A bit flipped.
    let good = raw.get(PREFIX, SLOT).unwrap();
    let mut flipped = good.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x10;
    raw.put(PREFIX, SLOT, flipped);
    let report = b.sync();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(
        matches!(report.failed[0].1, Error::ChecksumMismatch { .. }),
        "{:?}",
        report.failed[0].1
    );
    assert_eq!(b.load(1, "n"), 1);
    // A device with nothing local refuses it too, and writes nothing.
    let fresh = Device::new(&server, "new");
    let report = fresh.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::ChecksumMismatch { .. })]),
        "{report:?}"
    );
    assert!(!fresh.manager().exists(SLOT).unwrap());

    // Another player's save, with the same game key, copied into this player's folder.
    let mallory = Device::with(&server, "evil", "players/mallory", key());
    mallory.save(1, "not yours", &[("n", 666)]);
    mallory.sync();
    raw.put(PREFIX, SLOT, raw.get("players/mallory", SLOT).unwrap());
    let report = b.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::ForeignSave { found, .. })] if found == "players/mallory"),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);

    // A save sealed with another key: the same error as a local file under a wrong key.
    let stranger = Device::with(&server, "x", "players/bob", Key::from_bytes([9; 32]));
    stranger.save(1, "bob", &[("n", 2)]);
    stranger.sync();
    raw.put(PREFIX, SLOT, raw.get("players/bob", SLOT).unwrap());
    let report = b.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::Decrypt)]),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);

    // A readable save (no protection at all) of this player and slot: refused as a load under
    // the key refuses it, the same check (the manager's own) for a download.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = SaveLoadManager::builder()
        .directory(plain_dir.path())
        .build()
        .unwrap();
    let mut snapshot = b.cloud.snapshot().with_label("plain");
    snapshot.capture_memento("n", &3u64).unwrap();
    plain.save(SLOT, &snapshot).unwrap();
    raw.put(
        PREFIX,
        SLOT,
        std::fs::read(plain.path_of(SLOT)).unwrap(),
    );
    let report = b.sync();
    assert!(
        matches!(&report.failed[..], [(_, Error::NotEncrypted)]),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);

    // Another slot's file under this slot's name.
    a.save(2, "two", &[("n", 2)]);
    a.sync();
    raw.put(PREFIX, SLOT, raw.get(PREFIX, SlotId::Numbered(2)).unwrap());
    let report = b.sync();
    assert!(
        report
            .failed
            .iter()
            .any(|(s, e)| *s == SLOT && matches!(e, Error::SlotMismatch { .. })),
        "{report:?}"
    );
    assert_eq!(b.load(1, "n"), 1);
    assert_eq!(b.primary(SLOT), good, "the local save was never touched");
    // Once the good object is back, all is well again.
    raw.put(PREFIX, SLOT, good);
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
    let cloud = CloudSync::builder(
        Arc::new(manager),
        store(&server.endpoint(), server.bucket()),
    )
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
    let b = Device::new(&server, "deck");
    let handle = b.cloud.sync_in_background();
    assert_eq!(handle.wait().unwrap().pulled, [SlotId::Numbered(4)]);
    assert_eq!(b.load(4, "n"), 9);
}

#[test]
fn an_upload_whose_record_was_lost_is_recognised_not_merged_or_duplicated() {
    let server = Server::start();
    let a = Device::new(&server, "desk");
    a.save(1, "one", &[("n", 1)]);
    assert_eq!(a.sync().pushed, [SLOT]);
    // A crash after the PUT and before the record was written: the record is gone.
    std::fs::remove_file(a.dir.join("slot-001.sav.synced")).unwrap();
    let before = a.primary(SLOT);
    assert_eq!(a.sync().unchanged, [SLOT]);
    assert_eq!(a.primary(SLOT), before, "no merge rewrote the save");
    assert_eq!(a.sync().unchanged, [SLOT]);
}

#[test]
fn incremental_saves_are_compacted_into_the_object_they_sync_as() {
    let server = Server::start();
    let (a, b) = (Device::new(&server, "desk"), Device::new(&server, "deck"));
    let mut base = a.cloud.snapshot().with_label("base");
    base.capture_memento("player", &1u64).unwrap();
    base.capture_memento("world", &noise(64 << 10, 5)).unwrap();
    a.cloud.save(SLOT, &base).unwrap();
    let mut changes = a.cloud.snapshot().with_label("delta");
    changes.capture_memento("player", &2u64).unwrap();
    let delta = a.manager().save_incremental(SLOT, &changes).unwrap();
    assert!(
        delta.compacted.is_none(),
        "the delta stays a delta until the sync"
    );
    assert_eq!(a.sync().pushed, [SLOT]);
    assert_eq!(b.sync().pulled, [SLOT]);
    assert_eq!(b.load(1, "player"), 2);
    let loaded = b.manager().load(SLOT).unwrap();
    assert_eq!(
        loaded.snapshot.memento::<Vec<u8>>("world").unwrap(),
        noise(64 << 10, 5)
    );
    assert_eq!(loaded.snapshot.metadata().label, "delta");
}
