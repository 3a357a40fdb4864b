//! Cloud sync against a real S3-compatible server on localhost (moto's, started here), in one
//! run:
//!
//! - `cloud_round_trip`: a 4.66 MB save (incompressible, encrypted) synced up by one device and
//!   down by another: `CloudSync::sync` on A (check the local file, conditional PUT, record)
//!   then on B (list, GET, every check a load makes, install with a backup, record); against
//!   the floor, a plain `object_store` put and get of the same bytes through the same client
//!   settings.
//! - `cloud_load_menu`: `CloudSync::remote_slots` over 100 slots of 1 MiB each (a listing and
//!   100 ranged GETs of 4 KiB; a menu needs no ETags, so none is asked for where the
//!   listing lacks them), against downloading the 100 objects whole.
//! - Requests per sync (printed, counted by testkit's proxy, not timed): a device with 1, 10
//!   and 100 slots syncs them unchanged, with one changed here (a push) and with one changed by
//!   another device (a pull); every request is billed on a real store. Then `cloud_sync_100`
//!   times the sync of 100 unchanged slots.
//!
//! ```text
//! cargo bench -p savegame-cloud --bench cloud
//! ```

#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use savegame::{Key, SaveLoadManager, SlotId};
use savegame_cloud::object_store::path::Path;
use savegame_cloud::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use savegame_cloud::{CloudSync, S3};
use savegame_testkit::proxy::{Counts, Proxy};
use savegame_testkit::s3::{ACCESS_KEY, SECRET_KEY, Server, noise};

/// The size of the save the round trip moves: 4.66 MB.
const SAVE_BYTES: usize = 4_660_000;

fn store(server: &Server) -> Arc<dyn ObjectStore> {
    store_at(server, &server.endpoint())
}

fn store_at(server: &Server, endpoint: &str) -> Arc<dyn ObjectStore> {
    S3::new(server.bucket())
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials(ACCESS_KEY, SECRET_KEY)
        .build()
        .unwrap()
}

fn device(server: &Server, dir: &std::path::Path, prefix: &str) -> CloudSync {
    device_at(server, &server.endpoint(), dir, prefix)
}

fn device_at(server: &Server, endpoint: &str, dir: &std::path::Path, prefix: &str) -> CloudSync {
    let manager = SaveLoadManager::builder()
        .directory(dir)
        .key(Key::from_bytes([3; 32]))
        .build()
        .unwrap();
    CloudSync::builder(Arc::new(manager), store_at(server, endpoint))
        .prefix(prefix)
        .build()
        .unwrap()
}

fn save(cloud: &CloudSync, slot: SlotId, len: usize, seed: u64) -> u64 {
    let mut snapshot = cloud.snapshot().with_label(format!("save {seed}"));
    snapshot
        .capture_memento("world", &serde_bytes(noise(len, seed)))
        .unwrap();
    cloud.manager().save(slot, &snapshot).unwrap().bytes
}

/// Raw bytes as one MessagePack bin value (not a list of numbers).
fn serde_bytes(bytes: Vec<u8>) -> Bytes {
    Bytes(bytes)
}

struct Bytes(Vec<u8>);

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// One row of the request table: what each kind of sync cost.
fn row(counts: Counts) -> String {
    let mut kinds = Vec::new();
    for (n, kind) in [
        (counts.list, "LIST"),
        (counts.head, "HEAD"),
        (counts.get, "GET"),
        (counts.put, "PUT"),
        (counts.delete, "DELETE"),
        (counts.other, "other"),
    ] {
        if n > 0 {
            kinds.push(format!("{n} {kind}"));
        }
    }
    format!("{:>3} ({})", counts.total(), kinds.join(" + "))
}

/// Requests per sync, for 1, 10 and 100 slots of 4 KiB, each device behind a counting proxy.
/// Returns the device with 100 slots (and its folder and proxy), for the timed sync.
fn requests_per_sync(server: &Server) -> (CloudSync, tempfile::TempDir, Proxy) {
    println!("requests per sync (moto, counted by the proxy):");
    println!(
        "| slots | first sync (probe, uploads) | unchanged | one changed here | one changed elsewhere |"
    );
    println!("|---|---|---|---|---|");
    let mut kept = None;
    for slots in [1u32, 10, 100] {
        let prefix = format!("bench/requests-{slots}");
        let (proxy, other_proxy) = (Proxy::start(server.port()), Proxy::start(server.port()));
        let dir = tempfile::tempdir().unwrap();
        let other_dir = tempfile::tempdir().unwrap();
        let here = device_at(server, &proxy.endpoint(), dir.path(), &prefix);
        let there = device_at(server, &other_proxy.endpoint(), other_dir.path(), &prefix);
        for n in 1..=slots {
            save(&here, SlotId::Numbered(n), 4096, u64::from(n));
        }
        assert_eq!(here.sync().unwrap().pushed.len(), slots as usize);
        let first = proxy.take_counts();
        assert_eq!(there.sync().unwrap().pulled.len(), slots as usize);
        let unchanged_report = here.sync().unwrap();
        assert_eq!(unchanged_report.unchanged.len(), slots as usize);
        let unchanged = proxy.take_counts();
        save(&here, SlotId::Numbered(1), 4096, 1000);
        assert_eq!(here.sync().unwrap().pushed, [SlotId::Numbered(1)]);
        let pushed = proxy.take_counts();
        other_proxy.take_counts();
        assert_eq!(there.sync().unwrap().pulled, [SlotId::Numbered(1)]);
        let pulled = other_proxy.take_counts();
        println!(
            "| {slots} | {} | {} | {} | {} |",
            row(first),
            row(unchanged),
            row(pushed),
            row(pulled)
        );
        if slots == 100 {
            kept = Some((here, dir, proxy));
        }
    }
    kept.unwrap()
}

fn bench(c: &mut Criterion) {
    let server = Server::start();
    let (hundred, _hundred_dir, hundred_proxy) = requests_per_sync(&server);
    let mut group = c.benchmark_group("cloud_sync_100");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("sync of 100 unchanged slots (one LIST)", |bench| {
        bench.iter(|| assert_eq!(hundred.sync().unwrap().unchanged.len(), 100));
    });
    group.finish();
    // Every timed sync was one listing, and nothing else.
    let timed = hundred_proxy.take_counts();
    assert_eq!(timed.total(), timed.list, "{timed:?}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // The round trip of one 4.66 MB save, A up and B down.
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = device(&server, dir_a.path(), "bench/round-trip");
    let b = device(&server, dir_b.path(), "bench/round-trip");
    let slot = SlotId::Numbered(1);
    let size = save(&a, slot, SAVE_BYTES - 300, 0);
    println!("cloud round trip: the save file is {size} bytes");
    let mut seed = 1;
    let mut group = c.benchmark_group("cloud_round_trip");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("savegame sync up and down (4.66 MB)", |bench| {
        bench.iter_batched(
            || {
                seed += 1;
                save(&a, slot, SAVE_BYTES - 300, seed);
            },
            |()| {
                let up = a.sync().unwrap();
                assert_eq!(up.pushed, [slot]);
                let down = b.sync().unwrap();
                assert_eq!(down.pulled, [slot]);
            },
            BatchSize::PerIteration,
        );
    });
    let floor_store = store(&server);
    let bytes = std::fs::read(a.manager().path_of(slot)).unwrap();
    let path = Path::from("bench/floor/slot-001.sav");
    group.bench_function("object_store put + get (floor, 4.66 MB)", |bench| {
        bench.iter(|| {
            runtime.block_on(async {
                floor_store
                    .put(&path, PutPayload::from(bytes.clone()))
                    .await
                    .unwrap();
                let got = floor_store.get(&path).await.unwrap().bytes().await.unwrap();
                assert_eq!(got.len(), bytes.len());
            })
        });
    });
    group.finish();

    // The cloud load menu over 100 slots of 1 MiB.
    let dir_m = tempfile::tempdir().unwrap();
    let menu = device(&server, dir_m.path(), "bench/menu");
    for n in 1..=100 {
        save(&menu, SlotId::Numbered(n), 1 << 20, u64::from(n));
    }
    assert!(menu.sync().unwrap().is_complete());
    let mut group = c.benchmark_group("cloud_load_menu");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("remote_slots over 100 slots (ranged GETs)", |bench| {
        bench.iter(|| assert_eq!(menu.remote_slots().unwrap().len(), 100));
    });
    let whole = store(&server);
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("downloading the 100 objects whole", |bench| {
        bench.iter(|| {
            runtime.block_on(async {
                for n in 1..=100 {
                    let path =
                        Path::from(format!("bench/menu/{}", SlotId::Numbered(n).file_name()));
                    whole.get(&path).await.unwrap().bytes().await.unwrap();
                }
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
