//! The browser backends in a real browser (headless Chromium, through wasm-bindgen-test-runner
//! and chromedriver; `scripts/test.sh` runs them): a 1 MB encrypted world in IndexedDB, the
//! load menu from head records, the fallback to a backup when the primary record is damaged,
//! a save that cannot commit, localStorage's quota with the previous save intact, and every
//! fixture of `fixtures/` loaded and migrated in the browser. Every test that saves runs twice:
//! with the saves made on the page, and through the save worker (`SaveWorker`, a dedicated
//! worker running this same module, whose entry is [`test_save_worker`]).
#![cfg(target_arch = "wasm32")]

use savegame::{Codec, Key, SaveLoadManager, SlotId, SlotStatus, Snapshot};
use savegame_testkit::versions::v3;
use savegame_web::{IndexedDbSaves, LocalStorage, SaveWorker};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const SLOT: SlotId = SlotId::Numbered(1);

fn key() -> Key {
    Key::from_bytes(savegame_testkit::TEST_KEY)
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// A database name no other test (or earlier run in the same profile) uses.
fn fresh_name(what: &str) -> String {
    format!("{what}-{}-{}", now_ms(), js_sys::Math::random())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entity {
    id: u32,
    kind: u8,
    x: f32,
    y: f32,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct World {
    seed: u32,
    entities: Vec<Entity>,
}

/// A world of about 1 MB in MessagePack: `n` entities from `seed`.
fn world(seed: u32, n: u32) -> World {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    World {
        seed,
        entities: (0..n)
            .map(|id| Entity {
                id,
                kind: (next() % 7) as u8,
                x: (next() % 100_000) as f32 / 10.0,
                y: (next() % 100_000) as f32 / 10.0,
                name: format!("entity-{:08x}", next()),
            })
            .collect(),
    }
}

fn builder() -> savegame::ManagerBuilder {
    SaveLoadManager::builder()
        .codec(Codec::MessagePack)
        .key(key())
        .backups(1)
}

/// The save worker's entry: the worker serves managers built by [`builder`].
#[wasm_bindgen]
pub fn test_save_worker() -> Result<(), String> {
    savegame_web::serve(builder).map_err(|e| e.to_string())
}

/// `builder`'s saves in the database `db`, made on the page or through a save worker.
async fn open(db: &str, builder: savegame::ManagerBuilder, worker: bool) -> IndexedDbSaves {
    let saves = IndexedDbSaves::open(db, builder).await.unwrap();
    if worker {
        saves.with_worker(SaveWorker::spawn("test_save_worker").await.unwrap())
    } else {
        saves
    }
}

/// Two tests of one promise: the saves made on the page, and through the save worker.
macro_rules! both_paths {
    ($test:ident, $page:ident, $worker:ident) => {
        #[wasm_bindgen_test]
        async fn $page() {
            $test(false).await;
        }
        #[wasm_bindgen_test]
        async fn $worker() {
            $test(true).await;
        }
    };
}

fn snapshot_of(manager: &SaveLoadManager, world: &World, label: &str) -> Snapshot {
    let mut snapshot = manager.snapshot().with_label(label);
    snapshot.capture_memento("world", world).unwrap();
    snapshot
}

both_paths!(
    a_1mb_world_saves_and_loads_encrypted,
    a_1mb_world_saves_and_loads_encrypted_in_indexeddb,
    a_1mb_world_saves_and_loads_encrypted_through_the_worker
);
async fn a_1mb_world_saves_and_loads_encrypted(worker: bool) {
    let saves = open(&fresh_name("world"), builder(), worker).await;
    let first = world(1, 24_000);
    let second = world(2, 24_000);
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &first, "first"))
        .await
        .unwrap();

    // The second save rotates the first into the backup: the save a game makes every time.
    let snapshot = snapshot_of(saves.manager(), &second, "second");
    let t0 = now_ms();
    let report = saves.save(SLOT, &snapshot).await.unwrap();
    let save_ms = now_ms() - t0;
    assert!(
        report.bytes >= 1_000_000,
        "the world is {} bytes",
        report.bytes
    );
    assert_eq!(report.generation, 2);

    let t0 = now_ms();
    let loaded = saves.load(SLOT).await.unwrap();
    let load_ms = now_ms() - t0;
    assert!(loaded.report.header.encrypted);
    assert_eq!(loaded.report.recovered_from_backup, None);
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), second);

    console_log!(
        "timing: 1 MB world ({} bytes, encrypted, MessagePack, 1 backup) in IndexedDB, \
         worker {worker}: save {save_ms:.0} ms, load {load_ms:.0} ms",
        report.bytes
    );
}

both_paths!(
    a_new_connection_sees_every_committed_save,
    a_new_connection_sees_every_committed_save_on_the_page,
    a_new_connection_sees_every_committed_save_through_the_worker
);
async fn a_new_connection_sees_every_committed_save(worker: bool) {
    let db = fresh_name("reopen");
    let saves = open(&db, builder(), worker).await;
    let w = world(3, 2_000);
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &w, "kept"))
        .await
        .unwrap();
    drop(saves);
    let reopened = IndexedDbSaves::open(&db, builder()).await.unwrap();
    let loaded = reopened.load(SLOT).await.unwrap();
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), w);
    assert_eq!(loaded.snapshot.metadata().label, "kept");
}

both_paths!(
    the_load_menu_reads_head_records_not_saves,
    the_load_menu_reads_head_records_not_saves_on_the_page,
    the_load_menu_reads_head_records_not_saves_through_the_worker
);
async fn the_load_menu_reads_head_records_not_saves(worker: bool) {
    let db = fresh_name("menu");
    let saves = open(&db, builder(), worker).await;
    let big = world(4, 24_000);
    for (n, label) in [(1, "Forest"), (2, "Temple"), (3, "第三关")] {
        let snapshot = snapshot_of(saves.manager(), &big, label)
            .with_playtime(std::time::Duration::from_secs(60 * n));
        saves
            .save(SlotId::Numbered(n as u32), &snapshot)
            .await
            .unwrap();
    }
    saves
        .autosave(&snapshot_of(saves.manager(), &big, "autosave"))
        .await
        .unwrap();

    let menu_page = IndexedDbSaves::open(&db, builder()).await.unwrap();
    let t0 = now_ms();
    let menu = menu_page.list().await.unwrap();
    let list_ms = now_ms() - t0;
    assert_eq!(menu_page.bytes_read(), 0, "a load menu reads no save whole");
    let shown: Vec<(SlotId, Option<&str>)> = menu.iter().map(|s| (s.slot, s.label())).collect();
    assert_eq!(
        shown,
        [
            (SlotId::Numbered(1), Some("Forest")),
            (SlotId::Numbered(2), Some("Temple")),
            (SlotId::Numbered(3), Some("第三关")),
            (SlotId::Autosave(1), Some("autosave")),
        ]
    );
    for slot in &menu {
        assert_eq!(slot.status, SlotStatus::Ready);
        let age = age_ms(slot.saved_at().unwrap());
        assert!(age < 600_000.0, "saved {age} ms ago: the browser's clock");
        assert!(slot.file_size >= 1_000_000);
    }
    console_log!("timing: load menu of 4 slots of 1 MB from head records: {list_ms:.0} ms");
}

/// Milliseconds from `t` to now, by the browser's clock.
fn age_ms(t: std::time::SystemTime) -> f64 {
    let at = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64);
    now_ms() - at
}

both_paths!(
    a_damaged_primary_record_falls_back_to_the_backup,
    a_damaged_primary_record_falls_back_to_the_backup_on_the_page,
    a_damaged_primary_record_falls_back_to_the_backup_through_the_worker
);
async fn a_damaged_primary_record_falls_back_to_the_backup(worker: bool) {
    let saves = open(&fresh_name("damaged"), builder(), worker).await;
    let (older, newer) = (world(5, 3_000), world(6, 3_000));
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &older, "older"))
        .await
        .unwrap();
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &newer, "newer"))
        .await
        .unwrap();

    let file = SLOT.file_name();
    let mut bytes = saves.export(&file).await.unwrap().unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    saves.import(&file, &bytes).await.unwrap();

    let loaded = saves.load(SLOT).await.unwrap();
    assert_eq!(loaded.report.recovered_from_backup, Some(1));
    assert!(loaded.report.primary_problem.is_some());
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), older);

    // A truncated primary, too.
    saves.import(&file, &bytes[..100]).await.unwrap();
    let loaded = saves.load(SLOT).await.unwrap();
    assert_eq!(loaded.report.recovered_from_backup, Some(1));

    // The next save does not rotate the damaged record into the backup.
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &newer, "after"))
        .await
        .unwrap();
    let backup = saves
        .export(&savegame::slot::backup_name(&file, 1))
        .await
        .unwrap()
        .unwrap();
    savegame::format::check_crc(&backup).unwrap();

    // Every copy damaged: a clear error, never an empty game.
    let mut wrecked = backup.clone();
    wrecked[40] ^= 1;
    saves
        .import(&savegame::slot::backup_name(&file, 1), &wrecked)
        .await
        .unwrap();
    saves.import(&file, &wrecked).await.unwrap();
    let err = saves.load(SLOT).await.unwrap_err();
    assert!(
        matches!(err, savegame_web::Error::Save(ref e) if e.is_corruption()),
        "{err}"
    );
}

both_paths!(
    a_save_that_cannot_commit_leaves_the_previous_save,
    a_save_that_cannot_commit_leaves_the_previous_save_on_the_page,
    a_save_that_cannot_commit_leaves_the_previous_save_through_the_worker
);
async fn a_save_that_cannot_commit_leaves_the_previous_save(worker: bool) {
    let db = fresh_name("closed");
    let saves = open(&db, builder(), worker).await;
    let kept = world(7, 2_000);
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &kept, "kept"))
        .await
        .unwrap();
    // The connection goes away (as when the browser closes it under a closing tab): the save
    // fails, and nothing of it is stored.
    saves.close();
    let err = saves
        .save(
            SLOT,
            &snapshot_of(saves.manager(), &world(8, 2_000), "lost"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, savegame_web::Error::Browser { .. }), "{err}");
    let reopened = IndexedDbSaves::open(&db, builder()).await.unwrap();
    let loaded = reopened.load(SLOT).await.unwrap();
    assert_eq!(loaded.report.recovered_from_backup, None);
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), kept);
    assert_eq!(loaded.report.header.generation, 1);
    let menu = reopened.list().await.unwrap();
    assert_eq!(menu.len(), 1);
    assert_eq!(
        menu[0].backups, 0,
        "no backup was rotated by the failed save"
    );
}

fn clear_local_storage() {
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    storage.clear().unwrap();
}

#[wasm_bindgen_test]
fn localstorage_saves_small_games_and_its_quota_leaves_the_previous_save() {
    clear_local_storage();
    let manager = SaveLoadManager::builder()
        .storage(LocalStorage::new("quota-test"))
        .codec(Codec::MessagePack)
        .key(key())
        .backups(1)
        .build()
        .unwrap();
    let small = world(9, 200);
    manager
        .save(SLOT, &snapshot_of(&manager, &small, "small"))
        .unwrap();
    manager
        .save(SLOT, &snapshot_of(&manager, &small, "small again"))
        .unwrap();
    let menu = manager.list().unwrap();
    assert_eq!(menu[0].label(), Some("small again"));
    assert_eq!(menu[0].backups, 1);

    // 4.5 MB of bytes that do not compress: 6 million base64 characters, over the quota.
    let mut noise = vec![0u8; 4_500_000];
    let mut state = 0x9e37_79b9u32;
    for b in &mut noise {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        *b = state as u8;
    }
    let mut huge = manager.snapshot().with_label("huge");
    huge.capture_memento("world", &serde_bytes_like(noise))
        .unwrap();
    let err = manager.save(SLOT, &huge).unwrap_err();
    assert!(savegame_web::is_quota_exceeded(&err), "{err}");
    console_log!("localStorage over its quota: {err}");

    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(loaded.report.recovered_from_backup, None);
    assert_eq!(loaded.snapshot.metadata().label, "small again");
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), small);
    let names: Vec<String> = savegame::storage::Storage::list(&LocalStorage::new("quota-test"))
        .unwrap()
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".new")),
        "no staged copy is left behind: {names:?}"
    );
    clear_local_storage();
}

/// Bytes that serialize as one MessagePack `bin`, not an array of numbers.
fn serde_bytes_like(bytes: Vec<u8>) -> Bin {
    Bin(bytes)
}

struct Bin(Vec<u8>);

impl Serialize for Bin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// Every fixture of `fixtures/`, embedded in the test binary.
const FIXTURES: [(&str, &[u8], u32, bool); 12] = [
    (
        "v1-json-plain",
        include_bytes!("../../fixtures/v1-json-plain.sav"),
        1,
        false,
    ),
    (
        "v1-json-aes",
        include_bytes!("../../fixtures/v1-json-aes.sav"),
        1,
        true,
    ),
    (
        "v1-msgpack-plain",
        include_bytes!("../../fixtures/v1-msgpack-plain.sav"),
        1,
        false,
    ),
    (
        "v1-msgpack-aes",
        include_bytes!("../../fixtures/v1-msgpack-aes.sav"),
        1,
        true,
    ),
    (
        "v2-json-plain",
        include_bytes!("../../fixtures/v2-json-plain.sav"),
        2,
        false,
    ),
    (
        "v2-json-aes",
        include_bytes!("../../fixtures/v2-json-aes.sav"),
        2,
        true,
    ),
    (
        "v2-msgpack-plain",
        include_bytes!("../../fixtures/v2-msgpack-plain.sav"),
        2,
        false,
    ),
    (
        "v2-msgpack-aes",
        include_bytes!("../../fixtures/v2-msgpack-aes.sav"),
        2,
        true,
    ),
    (
        "v3-json-plain",
        include_bytes!("../../fixtures/v3-json-plain.sav"),
        3,
        false,
    ),
    (
        "v3-json-aes",
        include_bytes!("../../fixtures/v3-json-aes.sav"),
        3,
        true,
    ),
    (
        "v3-msgpack-plain",
        include_bytes!("../../fixtures/v3-msgpack-plain.sav"),
        3,
        false,
    ),
    (
        "v3-msgpack-aes",
        include_bytes!("../../fixtures/v3-msgpack-aes.sav"),
        3,
        true,
    ),
];

const EXPECTED: [&str; 3] = [
    include_str!("../../fixtures/v1.expected.json"),
    include_str!("../../fixtures/v2.expected.json"),
    include_str!("../../fixtures/v3.expected.json"),
];

fn fixture_key() -> Key {
    let hex = include_str!("../../fixtures/test-key.hex").trim();
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    Key::from_bytes(bytes)
}

#[derive(Debug, PartialEq, Deserialize)]
struct Game {
    player: v3::Player,
    inventory: v3::Inventory,
    world: v3::World,
}

#[wasm_bindgen_test]
async fn every_old_fixture_loads_and_migrates_in_the_browser() {
    for (name, bytes, version, encrypted) in FIXTURES {
        let mut b = SaveLoadManager::builder()
            .schema_version(3)
            .migrations(savegame::embed_migrations!("../migrations").unwrap());
        if encrypted {
            b = b.key(fixture_key());
        }
        let saves = IndexedDbSaves::open(&fresh_name(name), b).await.unwrap();
        saves.import(&SLOT.file_name(), bytes).await.unwrap();
        let loaded = saves
            .load(SLOT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected: Game = serde_json::from_str(EXPECTED[version as usize - 1]).unwrap();
        let got = Game {
            player: loaded.snapshot.memento("player").unwrap(),
            inventory: loaded.snapshot.memento("inventory").unwrap(),
            world: loaded.snapshot.memento("world").unwrap(),
        };
        assert_eq!(got, expected, "{name}");
        assert_eq!(
            loaded.report.migrated_from,
            (version < 3).then_some(version)
        );
        assert_eq!(
            loaded.snapshot.metadata().label,
            format!("fixture v{version}")
        );
    }
}

/// Issue 26, hole 1, in the browser: an integrity-only save with its flag cleared and its
/// CRC fixed is refused by an integrity-only game (`NotEncrypted`), and by one that allows
/// plain saves too (its tag is left after its document: `Malformed`).
#[wasm_bindgen_test]
async fn an_integrity_only_save_stripped_of_its_flag_is_refused_in_the_browser() {
    let mut stripped = include_bytes!("../../fixtures/format2-v3-json-hmac.sav").to_vec();
    savegame_testkit::strip_flag(&mut stripped, savegame::format::FLAG_AUTHENTICATED);
    for allow_plain in [false, true] {
        let b = SaveLoadManager::builder()
            .schema_version(3)
            .integrity_only(fixture_key())
            .allow_unencrypted(allow_plain);
        let saves = IndexedDbSaves::open(&fresh_name("stripped"), b)
            .await
            .unwrap();
        saves.import(&SLOT.file_name(), &stripped).await.unwrap();
        let err = saves.load(SLOT).await.unwrap_err();
        let refused = if allow_plain {
            matches!(
                err,
                savegame_web::Error::Save(savegame::Error::Malformed { .. })
            )
        } else {
            matches!(
                err,
                savegame_web::Error::Save(savegame::Error::NotEncrypted)
            )
        };
        assert!(refused, "allow_plain {allow_plain}: {err:?}");
    }
}

/// Everything of a snapshot crosses to the worker: the label, playtime, app version, user
/// fields and thumbnail the load menu shows, each memento's version, and an autosave.
#[wasm_bindgen_test]
async fn a_snapshot_crosses_to_the_worker_whole() {
    let saves = open(&fresh_name("whole"), builder(), true).await;
    let thumbnail: Vec<u8> = (0..=255).cycle().take(3_000).collect();
    let mut snapshot = saves
        .manager()
        .snapshot()
        .with_label("Temple, 第三关")
        .with_playtime(std::time::Duration::from_millis(61_234))
        .with_app_version("1.4.2")
        .with_user_field("chapter", "3")
        .with_thumbnail(thumbnail.clone());
    snapshot.capture_memento("world", &world(11, 500)).unwrap();
    snapshot
        .capture_memento_versioned("player", &("hero", 42u32), 3)
        .unwrap();
    saves.save(SLOT, &snapshot).await.unwrap();
    let loaded = saves.load(SLOT).await.unwrap();
    let meta = loaded.snapshot.metadata();
    assert_eq!(
        (
            meta.label.as_str(),
            meta.playtime.as_millis(),
            meta.app_version.as_str()
        ),
        ("Temple, 第三关", 61_234, "1.4.2")
    );
    assert_eq!(meta.user.get("chapter").map(String::as_str), Some("3"));
    assert_eq!(meta.thumbnail.as_deref(), Some(thumbnail.as_slice()));
    assert_eq!(loaded.snapshot.memento_version("player"), Some(3));
    assert_eq!(
        loaded.snapshot.memento::<World>("world").unwrap(),
        world(11, 500)
    );
    let menu = saves.list().await.unwrap();
    assert_eq!(menu[0].label(), Some("Temple, 第三关"));

    let report = saves.autosave(&snapshot).await.unwrap();
    assert_eq!(report.slot, SlotId::Autosave(1));
    let loaded = saves.load(SlotId::Autosave(1)).await.unwrap();
    assert_eq!(loaded.snapshot.metadata().label, "Temple, 第三关");
}

/// The worker's errors arrive typed: a slot holding a save of a newer schema is refused
/// (never overwritten), and a page whose manager is not built as the worker's is refused
/// before anything is written.
#[wasm_bindgen_test]
async fn the_workers_errors_arrive_typed() {
    let db = fresh_name("typed");
    let newer = IndexedDbSaves::open(&db, builder().schema_version(2))
        .await
        .unwrap();
    let w = world(12, 300);
    newer
        .save(SLOT, &snapshot_of(newer.manager(), &w, "newer game"))
        .await
        .unwrap();
    let saves = open(&db, builder(), true).await;
    let err = saves
        .save(SLOT, &snapshot_of(saves.manager(), &w, "older game"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            savegame_web::Error::Save(savegame::Error::NewerSchema {
                found: 2,
                supported: 1
            })
        ),
        "{err:?}"
    );
    let kept = newer.load(SLOT).await.unwrap();
    assert_eq!(kept.snapshot.metadata().label, "newer game");

    // A page without the key, beside a worker that has it: refused, nothing written.
    let unkeyed = IndexedDbSaves::open(&db, SaveLoadManager::builder().codec(Codec::MessagePack))
        .await
        .unwrap()
        .with_worker(SaveWorker::spawn("test_save_worker").await.unwrap());
    let err = unkeyed
        .save(
            SlotId::Numbered(2),
            &snapshot_of(unkeyed.manager(), &w, "plain"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            savegame_web::Error::Save(savegame::Error::Config { .. })
        ),
        "{err:?}"
    );
    let menu = newer.list().await.unwrap();
    assert_eq!(menu.len(), 1, "{menu:?}");
}

/// A worker whose module exports no such entry fails to start, with a typed error that says
/// why, and no save is attempted.
#[wasm_bindgen_test]
async fn a_worker_without_its_entry_does_not_start() {
    let err = SaveWorker::spawn("no_such_entry").await.unwrap_err();
    assert!(
        matches!(err, savegame_web::Error::Unavailable { ref reason, .. } if reason.contains("no_such_entry")),
        "{err:?}"
    );
}

#[wasm_bindgen(inline_js = r#"
function opened(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
// A database as version 1 of savegame-web wrote it: `objects` and `heads`, keyed by name.
export async function make_v1(name, object, bytes) {
  const open = indexedDB.open(name, 1);
  open.onupgradeneeded = () => {
    open.result.createObjectStore("objects");
    open.result.createObjectStore("heads");
  };
  const db = await opened(open);
  const head = new Uint8Array(8 + Math.min(4096, bytes.length));
  new DataView(head.buffer).setBigUint64(0, BigInt(bytes.length), true);
  head.set(bytes.subarray(0, head.length - 8), 8);
  const tx = db.transaction(["objects", "heads"], "readwrite");
  tx.objectStore("objects").put(bytes, object);
  tx.objectStore("heads").put(head, object);
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onabort = reject; });
  db.close();
}
export async function count(name, store) {
  const db = await opened(indexedDB.open(name));
  const n = await opened(db.transaction(store).objectStore(store).count());
  db.close();
  return n;
}
"#)]
extern "C" {
    fn make_v1(name: &str, object: &str, bytes: &[u8]) -> js_sys::Promise;
    fn count(name: &str, store: &str) -> js_sys::Promise;
}

async fn stored(db: &str, store: &str) -> f64 {
    wasm_bindgen_futures::JsFuture::from(count(db, store))
        .await
        .unwrap()
        .as_f64()
        .unwrap()
}

/// A database of version 1 (each object's bytes under its own name) opens and loads as it is;
/// its object moves out as saves replace it. A backup rotation writes the new file's bytes
/// alone (the backup names the bytes the old file had), and bytes no name refers to are gone.
#[wasm_bindgen_test]
async fn a_version_1_database_loads_and_rotations_write_each_save_once() {
    let scratch = IndexedDbSaves::open(&fresh_name("scratch"), builder())
        .await
        .unwrap();
    let (first, second, third) = (world(21, 2_000), world(22, 2_000), world(23, 2_000));
    scratch
        .save(SLOT, &snapshot_of(scratch.manager(), &first, "first"))
        .await
        .unwrap();
    let bytes = scratch.export(&SLOT.file_name()).await.unwrap().unwrap();
    let db = fresh_name("v1");
    wasm_bindgen_futures::JsFuture::from(make_v1(&db, &SLOT.file_name(), &bytes))
        .await
        .unwrap();

    let saves = IndexedDbSaves::open(&db, builder()).await.unwrap();
    let loaded = saves.load(SLOT).await.unwrap();
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), first);
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &second, "second"))
        .await
        .unwrap();
    // The old file is the backup now, where version 1 put it.
    assert_eq!(
        (stored(&db, "objects").await, stored(&db, "blobs").await),
        (1.0, 1.0)
    );
    saves
        .save(SLOT, &snapshot_of(saves.manager(), &third, "third"))
        .await
        .unwrap();
    assert_eq!(
        (stored(&db, "objects").await, stored(&db, "blobs").await),
        (0.0, 2.0)
    );
    let loaded = saves.load(SLOT).await.unwrap();
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), third);

    // The backup is the second save, whole: a damaged primary falls back to it.
    let mut damaged = saves.export(&SLOT.file_name()).await.unwrap().unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 1;
    saves.import(&SLOT.file_name(), &damaged).await.unwrap();
    let loaded = saves.load(SLOT).await.unwrap();
    assert_eq!(loaded.report.recovered_from_backup, Some(1));
    assert_eq!(loaded.snapshot.memento::<World>("world").unwrap(), second);
    assert_eq!(
        stored(&db, "blobs").await,
        2.0,
        "the replaced primary's bytes are gone"
    );
}
