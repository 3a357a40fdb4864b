//! Loading the 100,000-entity world of the migrations story saved at v1 (so every load runs
//! both steps of `migrations/`) against loading the same world saved at v3 (the fast path), in
//! the same run. MessagePack, encrypted.
//!
//! ```text
//! cargo bench --bench migrate
//! ```

#![allow(missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use savegame::{Codec, SaveLoadManager, SlotId};
use savegame_testkit::{key, versions};
use versions::{expected_v2, expected_v3, v1_state, v3};

const ENTITIES: usize = 100_000;

fn bench_dir() -> PathBuf {
    std::env::var_os("SAVEGAME_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

fn manager(dir: &std::path::Path, version: u32) -> SaveLoadManager {
    let steps = savegame::embed_migrations!("migrations").unwrap();
    let steps = if version == 3 {
        steps
    } else {
        savegame::Migrations::new()
    };
    SaveLoadManager::builder()
        .directory(dir)
        .codec(Codec::MessagePack)
        .key(key())
        .schema_version(version)
        .migrations(steps)
        .build()
        .unwrap()
}

fn migrate(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let (p1, w1) = v1_state(1, ENTITIES);
    let expected = expected_v3(&expected_v2(&p1), &w1);

    let old = SlotId::Numbered(1);
    let current = SlotId::Numbered(3);
    let v1 = manager(dir.path(), 1);
    let mut snapshot = v1.snapshot();
    snapshot.capture_memento("player", &p1).unwrap();
    snapshot.capture_memento("world", &w1).unwrap();
    v1.save(old, &snapshot).unwrap();

    let v3 = manager(dir.path(), 3);
    let mut snapshot = v3.snapshot();
    snapshot
        .capture_memento("player", &expected.player)
        .unwrap();
    snapshot
        .capture_memento("inventory", &expected.inventory)
        .unwrap();
    snapshot.capture_memento("world", &expected.world).unwrap();
    v3.save(current, &snapshot).unwrap();

    let load = |slot| {
        let loaded = v3.load(slot).unwrap();
        v3::Game {
            player: loaded.snapshot.memento("player").unwrap(),
            inventory: loaded.snapshot.memento("inventory").unwrap(),
            world: loaded.snapshot.memento("world").unwrap(),
        }
    };
    assert_eq!(load(old), expected);
    assert_eq!(load(current), expected);

    let mut group = c.benchmark_group("load/world-100k/msgpack+aes");
    group.bench_function("at v3 (no migration)", |b| b.iter(|| load(current)));
    group.bench_function("from v1 (two steps)", |b| b.iter(|| load(old)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    targets = migrate
}
criterion_main!(benches);
