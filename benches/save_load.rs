//! Save and load through `savegame` against a raw baseline written by hand, in the same run.
//!
//! The floors, written by hand (`Baseline`): save is `create_memento` → the codec's fastest call
//! for the same bytes into a buffer sized by the last save → AES-GCM in place → CRC32 → temp
//! file, fdatasync, rename, folder fsync; `baseline, recycled file` writes over the file the
//! last save replaced, as savegame does, so the recycled file's gain shows apart from the
//! rest. Load is read → CRC32 → AES-GCM open in place → decode. `savegame` does the same work
//! plus its header, table of contents, backup rotation (a hard link) and the previous-save
//! check.
//!
//! Workloads: a 100,000-entity world (about 7 MB as MessagePack) and a 10 KB player profile,
//! in MessagePack and JSON, with and without encryption.
//!
//! Each save group also has `baseline, no clone` (the hand pipeline encoding straight from the
//! state, `MementoOf`) and `savegame save_state` (the state listed by reference and encoded
//! straight into the file, no clone).
//!
//! The world in 1,000 chunk mementos (`chunked_world`): see the function.
//!
//! And the load menu: `list()` over 100 slots against reading their headers by hand.
//!
//! Besides criterion's times, the run prints the peak extra heap of one save and one load of
//! each (counted by a global allocator), against the payload size.
//!
//! The `protection` groups compare the three ways to seal a file on the 100,000-entity world
//! in JSON (the codec an integrity-only save is for): plain, integrity-only (HMAC-SHA256) and
//! encrypted (AES-256-GCM), sealing and opening in memory (where only the sealing differs),
//! and whole saves and loads through the manager (with the fsync'd write).
//!
//! The `compression` groups (features `lz4`, `zstd`) save and load the 100,000-entity world,
//! encrypted, through the manager (fsync'd) uncompressed, with LZ4 and with Zstandard at levels
//! -3 and -1 (zstd's fast levels), 1 and 3 (512 KiB pieces on the manager's threads), in
//! MessagePack and JSON; the run prints each file's size against the uncompressed one.
//!
//! The `bitcode` groups (feature `bitcode`) save and load the 100,000-entity world through the
//! manager with `Codec::Bitcode`, encrypted and fsync'd (and MessagePack the same way, for
//! scale), against the `savefile` crate's plain `save_file` / `load_file` of the same data (its
//! own binary format, no encryption, no fsync), the library a user might pick instead. The
//! savefile side saves a copy of the world in mirror types that derive `Savefile`, made once
//! outside the timed loop; savegame's side captures (clones) the world in every save.
//!
//! ```text
//! cargo bench --bench save_load --features bitcode -- bitcode
//! cargo bench --bench save_load
//! cargo bench --bench save_load -- protection   # the protection groups alone
//! cargo bench --bench save_load --features lz4,zstd -- compression
//! ```

#![allow(missing_docs)]

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use criterion::{Criterion, criterion_group, criterion_main};
use game::{Player, World};
use savegame::{
    Codec, Compression, Members, MementoOf, Originator, Registry, RestoreReport, SaveLoadManager,
    SaveState, SlotId, Snapshot,
};
use savegame_testkit::{Counting, TEST_KEY, game, key};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[global_allocator]
static ALLOC: Counting = Counting::new();

#[derive(Clone, Copy)]
struct Variant {
    codec: Codec,
    encrypted: bool,
}

impl Variant {
    fn name(self) -> String {
        format!("{}{}", self.codec, if self.encrypted { "+aes" } else { "" })
    }
}

/// The hand-written pipeline the framework is measured against: the floor of a save and a
/// load, the fastest honest way to do the same work by hand. Each codec is called the way
/// savegame calls it (MessagePack with struct maps and JSON, each written straight into a
/// buffer allocated at the size of the last save, which savegame knows too); AES-256-GCM in
/// place; CRC32; then the write, fdatasync, rename and folder fsync that make a save durable.
///
/// With `recycle`, the write goes over a file that already has its blocks, as savegame's
/// does: the file the last save replaced is kept (a hard link, before the rename drops its
/// name), renamed to the temporary name and written over in place (no truncate; `set_len`
/// when the size changed), so the fdatasync allocates nothing and the rename frees nothing.
/// Without it, every save makes a new file.
struct Baseline {
    dir: PathBuf,
    variant: Variant,
    cipher: Aes256Gcm,
    recycle: bool,
    /// The size of the last file: the next buffer's capacity.
    last_len: std::cell::Cell<usize>,
}

impl Baseline {
    fn new(dir: &Path, variant: Variant) -> Self {
        Baseline {
            dir: dir.to_path_buf(),
            variant,
            cipher: Aes256Gcm::new(&TEST_KEY.into()),
            recycle: false,
            last_len: std::cell::Cell::new(0),
        }
    }

    /// The same pipeline, writing over a recycled file.
    fn recycling(dir: &Path, variant: Variant) -> Self {
        Baseline {
            recycle: true,
            ..Baseline::new(dir, variant)
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(if self.recycle {
            "recycled.bin"
        } else {
            "baseline.bin"
        })
    }

    /// A buffer for the next file: the last one's size, and room for the tag, nonce and CRC.
    fn buffer(&self) -> Vec<u8> {
        Vec::with_capacity(self.last_len.get() + 64)
    }

    fn save<O: Originator>(&self, originator: &O) {
        let memento = originator.create_memento();
        let mut buf = self.buffer();
        encode_into(self.variant.codec, &mut buf, &memento);
        self.seal_and_write(buf);
    }

    /// The same pipeline encoding straight from the originator (no clone of the state).
    fn save_direct<O: Originator>(&self, originator: &O) {
        let mut buf = self.buffer();
        encode_into(self.variant.codec, &mut buf, &MementoOf(originator));
        self.seal_and_write(buf);
    }

    /// AES-GCM (when encrypted), CRC32, then the durable write.
    fn seal_and_write(&self, mut buf: Vec<u8>) {
        if self.variant.encrypted {
            let mut nonce = [0u8; 12];
            getrandom::fill(&mut nonce).unwrap();
            let tag = self
                .cipher
                .encrypt_inout_detached(&Nonce::from(nonce), b"", buf.as_mut_slice().into())
                .unwrap();
            buf.extend_from_slice(&tag);
            buf.extend_from_slice(&nonce);
        }
        let crc = crc32fast::hash(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        self.last_len.set(buf.len());
        let tmp = self.path().with_extension("tmp");
        let spare = self.path().with_extension("spare");
        let mut f = if self.recycle && std::fs::rename(&spare, &tmp).is_ok() {
            std::fs::OpenOptions::new().write(true).open(&tmp).unwrap()
        } else {
            std::fs::File::create(&tmp).unwrap()
        };
        f.write_all(&buf).unwrap();
        if self.recycle && f.metadata().unwrap().len() != buf.len() as u64 {
            f.set_len(buf.len() as u64).unwrap();
        }
        f.sync_data().unwrap();
        drop(f);
        if self.recycle {
            // Keep the file this save replaces: the next save writes over it.
            let _ = std::fs::hard_link(self.path(), &spare);
        }
        std::fs::rename(&tmp, self.path()).unwrap();
        std::fs::File::open(&self.dir).unwrap().sync_all().unwrap();
    }

    fn load<O: Originator>(&self, originator: &mut O) {
        let mut buf = std::fs::read(self.path()).unwrap();
        let crc_at = buf.len() - 4;
        let crc = u32::from_le_bytes(buf[crc_at..].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(&buf[..crc_at]));
        buf.truncate(crc_at);
        if self.variant.encrypted {
            let nonce: [u8; 12] = buf[buf.len() - 12..].try_into().unwrap();
            buf.truncate(buf.len() - 12);
            let tag: [u8; 16] = buf[buf.len() - 16..].try_into().unwrap();
            buf.truncate(buf.len() - 16);
            self.cipher
                .decrypt_inout_detached(
                    &Nonce::from(nonce),
                    b"",
                    buf.as_mut_slice().into(),
                    &Tag::from(tag),
                )
                .unwrap();
        }
        let memento = decode(self.variant.codec, &buf);
        originator.restore_memento(memento).unwrap();
    }
}

fn encode<T: Serialize>(codec: Codec, value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(codec, &mut out, value);
    out
}

/// Encodes `value` at the end of `out`, with no buffer of its own: the call savegame makes
/// (MessagePack with struct maps through a serializer over the buffer, JSON through
/// `to_writer`), the fastest one of each codec for these bytes.
fn encode_into<T: Serialize>(codec: Codec, out: &mut Vec<u8>, value: &T) {
    match codec {
        Codec::Json => serde_json::to_writer(out, value).unwrap(),
        _ => value
            .serialize(&mut rmp_serde::Serializer::new(out).with_struct_map())
            .unwrap(),
    }
}

fn decode<T: DeserializeOwned>(codec: Codec, bytes: &[u8]) -> T {
    match codec {
        Codec::Json => serde_json::from_slice(bytes).unwrap(),
        _ => rmp_serde::from_slice(bytes).unwrap(),
    }
}

fn manager(dir: &Path, variant: Variant) -> SaveLoadManager {
    let b = SaveLoadManager::builder()
        .directory(dir)
        .codec(variant.codec);
    if variant.encrypted { b.key(key()) } else { b }
        .build()
        .unwrap()
}

fn framework_save<O: Originator>(manager: &SaveLoadManager, id: &str, originator: &O) {
    let mut snapshot = manager.snapshot();
    snapshot.capture(id, originator).unwrap();
    manager.save(SlotId::Numbered(1), &snapshot).unwrap();
}

/// A state of one originator, listed by reference: what `save_state` saves without a clone.
struct One<'a, O> {
    id: &'a str,
    originator: &'a O,
}

impl<O: Originator> SaveState for One<'_, O> {
    fn capture_state(&self, snapshot: &mut Snapshot) -> savegame::Result<()> {
        snapshot.capture(self.id, self.originator)
    }
    fn restore_state(&mut self, _: &Snapshot) -> savegame::Result<RestoreReport> {
        Err(savegame::Error::rejected(
            "the bench never restores through One",
        ))
    }
    fn members<'s>(&'s self, members: &mut Members<'s>) -> savegame::Result<bool> {
        members.originator(self.id, self.originator)?;
        Ok(true)
    }
}

fn framework_save_state<O: Originator + Sync>(manager: &SaveLoadManager, id: &str, originator: &O) {
    let state = One { id, originator };
    manager.save_state(SlotId::Numbered(1), &state).unwrap();
}

fn framework_load<O: Originator>(manager: &SaveLoadManager, id: &str, originator: &mut O) {
    let loaded = manager.load(SlotId::Numbered(1)).unwrap();
    loaded.snapshot.restore(id, originator).unwrap();
}

fn bench_workload<O: Originator + Default + Sync>(
    c: &mut Criterion,
    workload: &str,
    id: &str,
    state: &O,
) {
    for variant in [
        Variant {
            codec: Codec::MessagePack,
            encrypted: true,
        },
        Variant {
            codec: Codec::MessagePack,
            encrypted: false,
        },
        Variant {
            codec: Codec::Json,
            encrypted: true,
        },
        Variant {
            codec: Codec::Json,
            encrypted: false,
        },
    ] {
        let dir = tempfile::tempdir_in(bench_dir()).unwrap();
        let baseline = Baseline::new(dir.path(), variant);
        let recycled = Baseline::recycling(dir.path(), variant);
        let manager = manager(dir.path(), variant);
        baseline.save(state);
        recycled.save(state);
        recycled.save(state); // the first save leaves the file the second writes over
        framework_save(&manager, id, state);
        framework_save(&manager, id, state); // a backup exists, as in a real game

        // Memory: one save and one load of each, outside the timed loop.
        let payload = encode(variant.codec, &state.create_memento()).len();
        let base_save = ALLOC.peak_during(|| baseline.save(state));
        let fw_save = ALLOC.peak_during(|| framework_save(&manager, id, state));
        let fw_state = ALLOC.peak_during(|| framework_save_state(&manager, id, state));
        let mut sink = O::default();
        let base_load = ALLOC.peak_during(|| baseline.load(&mut sink));
        let fw_load = ALLOC.peak_during(|| framework_load(&manager, id, &mut sink));
        let file = manager.info(SlotId::Numbered(1)).unwrap().file_size as f64;
        eprintln!(
            "memory {workload}/{}: file {file} B; savegame capture+save {:.2}x file, save_state \
             {:.2}x file",
            variant.name(),
            fw_save as f64 / file,
            fw_state as f64 / file
        );
        // The restored state itself is in both; count what the pipelines add.
        eprintln!(
            "memory {workload}/{}: payload {payload} B; save peak extra: baseline {base_save} B \
             ({:.2}x payload), savegame capture+save {fw_save} B ({:.2}x payload), savegame \
             save_state {fw_state} B ({:.2}x payload); load peak extra: baseline {base_load} B \
             ({:.2}x), savegame {fw_load} B ({:.2}x payload)",
            variant.name(),
            base_save as f64 / payload as f64,
            fw_save as f64 / payload as f64,
            fw_state as f64 / payload as f64,
            base_load as f64 / payload as f64,
            fw_load as f64 / payload as f64,
        );

        let mut group = c.benchmark_group(format!("save/{workload}/{}", variant.name()));
        group.bench_function("baseline", |b| b.iter(|| baseline.save(black_box(state))));
        group.bench_function("baseline, recycled file", |b| {
            b.iter(|| recycled.save(black_box(state)))
        });
        group.bench_function("baseline, no clone", |b| {
            b.iter(|| baseline.save_direct(black_box(state)))
        });
        group.bench_function("baseline, no clone, recycled file", |b| {
            b.iter(|| recycled.save_direct(black_box(state)))
        });
        group.bench_function("savegame", |b| {
            b.iter(|| framework_save(&manager, id, black_box(state)))
        });
        group.bench_function("savegame save_state", |b| {
            b.iter(|| framework_save_state(&manager, id, black_box(state)))
        });
        group.finish();

        let mut group = c.benchmark_group(format!("load/{workload}/{}", variant.name()));
        group.bench_function("baseline", |b| {
            b.iter(|| {
                let mut o = O::default();
                baseline.load(&mut o);
                o
            })
        });
        group.bench_function("savegame", |b| {
            b.iter(|| {
                let mut o = O::default();
                framework_load(&manager, id, &mut o);
                o
            })
        });
        group.finish();
    }
}

/// The 100,000-entity world as 1,000 chunk mementos of 100 entities, against the same world
/// as one memento and against the single-threaded hand pipeline of the same bytes (each chunk
/// encoded in turn into one buffer, AES-GCM, CRC32, temp file, fsync, rename). savegame
/// captures the chunks and saves them with 1 and with 2 encoding threads, and saves the
/// registry of chunks by reference (`save_state`, on the saving thread).
fn chunked_world(c: &mut Criterion) {
    let world = World::generate(100_000, 1);
    let mut chunks: Registry<World> = Registry::new();
    for (i, chunk) in world.chunks(100).into_iter().enumerate() {
        chunks.register(format!("chunk-{i:04}"), chunk).unwrap();
    }
    let variant = Variant {
        codec: Codec::MessagePack,
        encrypted: true,
    };
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let baseline = Baseline::new(dir.path(), variant);
    let recycled = Baseline::recycling(dir.path(), variant);
    let with_threads = |threads: usize| {
        SaveLoadManager::builder()
            .directory(dir.path())
            .codec(variant.codec)
            .key(key())
            .threads(threads)
            .build()
            .unwrap()
    };
    let (one, two) = (with_threads(1), with_threads(2));
    let ids: Vec<String> = (0..1000).map(|i| format!("chunk-{i:04}")).collect();
    let hand = |baseline: &Baseline| {
        let mut buf = baseline.buffer();
        for id in &ids {
            let chunk = chunks.get(id).unwrap();
            encode_into(variant.codec, &mut buf, &MementoOf(chunk));
        }
        baseline.seal_and_write(buf);
    };
    hand(&baseline);
    hand(&recycled);
    hand(&recycled);
    let capture_save = |manager: &SaveLoadManager| {
        let mut snapshot = manager.snapshot();
        chunks.capture_state(&mut snapshot).unwrap();
        manager.save(SlotId::Numbered(1), &snapshot).unwrap();
    };
    capture_save(&two);
    capture_save(&two);
    let mut group = c.benchmark_group("save/world-100k-in-1000-chunks/msgpack+aes");
    group.bench_function("baseline (one thread)", |b| b.iter(|| hand(&baseline)));
    group.bench_function("baseline (one thread), recycled file", |b| {
        b.iter(|| hand(&recycled))
    });
    group.bench_function("one memento: savegame", |b| {
        b.iter(|| framework_save(&one, "world", black_box(&world)))
    });
    group.bench_function("savegame capture, 1 thread", |b| {
        b.iter(|| capture_save(&one))
    });
    group.bench_function("savegame capture, 2 threads", |b| {
        b.iter(|| capture_save(&two))
    });
    group.bench_function("savegame save_state (by reference), 1 thread", |b| {
        b.iter(|| {
            one.save_state(SlotId::Numbered(1), black_box(&chunks))
                .unwrap()
        })
    });
    group.bench_function("savegame save_state (by reference), 2 threads", |b| {
        b.iter(|| {
            two.save_state(SlotId::Numbered(1), black_box(&chunks))
                .unwrap()
        })
    });
    group.finish();

    // Where the hand pipeline's time goes, so the floor of a save is visible in the same run:
    // the encoding of the chunks, AES-GCM over the bytes, the temp file's write + fsync +
    // rename, and what `capture` costs (a clone of every chunk) before any of them.
    let mut stages = c.benchmark_group("save/world-100k-in-1000-chunks/stages");
    let encode_all = || {
        let mut buf = Vec::with_capacity(6 << 20);
        for id in &ids {
            encode_into(variant.codec, &mut buf, &MementoOf(chunks.get(id).unwrap()));
        }
        buf
    };
    let bytes = encode_all();
    let cipher = Aes256Gcm::new(&TEST_KEY.into());
    stages.bench_function("encode (one thread)", |b| {
        b.iter(|| black_box(encode_all()))
    });
    stages.bench_function("AES-256-GCM (one message)", |b| {
        let mut buf = bytes.clone();
        b.iter(|| {
            let tag = cipher
                .encrypt_inout_detached(&Nonce::from([0u8; 12]), b"", buf.as_mut_slice().into())
                .unwrap();
            black_box(tag)
        })
    });
    stages.bench_function("write + fsync + rename", |b| {
        b.iter(|| {
            let tmp = dir.path().join("stage.tmp");
            let mut f = std::fs::File::create(&tmp).unwrap();
            f.write_all(&bytes).unwrap();
            f.sync_all().unwrap();
            drop(f);
            std::fs::rename(&tmp, dir.path().join("stage.bin")).unwrap();
        })
    });
    stages.bench_function("capture (clone the chunks)", |b| {
        b.iter(|| {
            let mut snapshot = two.snapshot();
            chunks.capture_state(&mut snapshot).unwrap();
            black_box(snapshot)
        })
    });
    stages.finish();
}

/// Where the bench writes: `SAVEGAME_BENCH_DIR`, or the system's temp folder.
fn bench_dir() -> PathBuf {
    std::env::var_os("SAVEGAME_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

fn world_100k(c: &mut Criterion) {
    let world = World::generate(100_000, 1);
    bench_workload(c, "world-100k", "world", &world);
}

fn profile_10k(c: &mut Criterion) {
    let mut player = Player::generate(1);
    for i in 0..600 {
        player.inventory.insert(format!("item-{i:04}"), i);
    }
    bench_workload(c, "profile-10k", "player", &player);
}

/// The load menu over 100 slots: `list()` against reading and parsing each slot file's header
/// by hand (list the folder, open each `.sav`, read its fixed header, then the rest of its
/// header, parse).
fn menu_100(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .build()
        .unwrap();
    let mut snapshot = manager.snapshot().with_label("A save in the menu");
    snapshot.capture("player", &Player::generate(1)).unwrap();
    snapshot
        .capture("world", &World::generate(2_000, 1))
        .unwrap();
    for n in 1..=100 {
        manager.save(SlotId::Numbered(n), &snapshot).unwrap();
    }
    let by_hand = |dir: &Path| {
        use std::io::Read;
        let mut headers = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "sav") {
                continue;
            }
            let mut file = std::fs::File::open(&path).unwrap();
            let mut head = vec![0; savegame::format::HEADER_LEN];
            file.read_exact(&mut head).unwrap();
            let len = savegame::format::header_len(&head).unwrap();
            head.resize(len, 0);
            file.read_exact(&mut head[savegame::format::HEADER_LEN..])
                .unwrap();
            headers.push(savegame::format::parse_header(&head, None).unwrap());
        }
        headers
    };
    assert_eq!(by_hand(dir.path()).len(), 100);
    assert_eq!(manager.list().unwrap().len(), 100);
    let mut group = c.benchmark_group("list/100-slots");
    group.bench_function("baseline", |b| b.iter(|| by_hand(black_box(dir.path()))));
    group.bench_function("savegame", |b| b.iter(|| manager.list().unwrap()));
    group.finish();
}

/// Plain, integrity-only and encrypted, on the same snapshot.
fn protection(c: &mut Criterion) {
    use savegame::Snapshot;
    let world = World::generate(100_000, 1);
    let key = key();
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot.capture("world", &world).unwrap();
    snapshot.encoded("world").unwrap(); // encoded once, outside the timed loops
    let slot = SlotId::Numbered(1);
    let now = std::time::SystemTime::now();
    let seal = |how: &str| match how {
        "plain" => snapshot.seal_file_at(slot, 1, 1, now, None),
        "authenticated" => snapshot.seal_file_authenticated(slot, 1, 1, now, &key),
        _ => snapshot.seal_file_at(slot, 1, 1, now, Some(&key)),
    };
    let kinds = ["plain", "authenticated", "encrypted"];
    eprintln!(
        "protection/world-100k/json: file {} bytes",
        seal("plain").unwrap().len()
    );
    let mut group = c.benchmark_group("protection/seal/world-100k/json");
    for how in kinds {
        group.bench_function(how, |b| b.iter(|| seal(black_box(how)).unwrap()));
    }
    group.finish();
    let mut group = c.benchmark_group("protection/open/world-100k/json");
    for how in kinds {
        let bytes = seal(how).unwrap();
        let with = (how != "plain").then_some(&key);
        group.bench_function(how, |b| {
            b.iter(|| Snapshot::open_file(black_box(bytes.clone()), with).unwrap())
        });
    }
    group.finish();

    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let managers = kinds.map(|how| {
        let b = SaveLoadManager::builder()
            .directory(dir.path().join(how))
            .codec(Codec::Json);
        let m = match how {
            "plain" => b,
            "authenticated" => b.integrity_only(savegame_testkit::key()),
            _ => b.key(savegame_testkit::key()),
        }
        .build()
        .unwrap();
        framework_save(&m, "world", &world);
        (how, m)
    });
    let mut group = c.benchmark_group("protection/save/world-100k/json");
    for (how, m) in &managers {
        group.bench_function(*how, |b| {
            b.iter(|| framework_save(m, "world", black_box(&world)))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("protection/load/world-100k/json");
    for (how, m) in &managers {
        group.bench_function(*how, |b| {
            b.iter(|| {
                let mut o = World::default();
                framework_load(m, "world", &mut o);
                o
            })
        });
    }
    group.finish();
}

/// Uncompressed, LZ4 and Zstandard (levels -3, -1, 1 and 3) on the 100,000-entity world,
/// encrypted and fsync'd through the manager, MessagePack and JSON: size, the peak heap of a
/// save, and save and load times in one run.
fn compression(c: &mut Criterion) {
    let world = World::generate(100_000, 1);
    let mut kinds = vec![("none", Compression::None)];
    if cfg!(feature = "lz4") {
        kinds.push(("lz4", Compression::Lz4));
    }
    if cfg!(feature = "zstd") {
        kinds.push(("zstd-fast-3", Compression::Zstd { level: -3 }));
        kinds.push(("zstd-fast-1", Compression::Zstd { level: -1 }));
        kinds.push(("zstd-1", Compression::Zstd { level: 1 }));
        kinds.push(("zstd-3", Compression::Zstd { level: 3 }));
    }
    for codec in [Codec::MessagePack, Codec::Json] {
        let dir = tempfile::tempdir_in(bench_dir()).unwrap();
        let managers: Vec<_> = kinds
            .iter()
            .map(|&(name, compression)| {
                let m = SaveLoadManager::builder()
                    .directory(dir.path().join(name))
                    .codec(codec)
                    .key(key())
                    .compression(compression)
                    .build()
                    .unwrap();
                framework_save(&m, "world", &world);
                framework_save(&m, "world", &world);
                (name, m)
            })
            .collect();
        let size = |m: &SaveLoadManager| m.info(SlotId::Numbered(1)).unwrap().file_size;
        let plain = size(&managers[0].1);
        for (name, m) in &managers {
            let s = size(m);
            let peak = ALLOC.peak_during(|| framework_save(m, "world", &world));
            eprintln!(
                "compression/world-100k/{codec}+aes/{name}: {s} bytes, {:.3}x uncompressed; \
                 capture+save peak heap {:.2}x the uncompressed file",
                s as f64 / plain as f64,
                peak as f64 / plain as f64
            );
        }
        let mut group = c.benchmark_group(format!("compression/save/world-100k/{codec}+aes"));
        for (name, m) in &managers {
            group.bench_function(*name, |b| {
                b.iter(|| framework_save(m, "world", black_box(&world)))
            });
        }
        group.finish();
        let mut group = c.benchmark_group(format!("compression/load/world-100k/{codec}+aes"));
        for (name, m) in &managers {
            group.bench_function(*name, |b| {
                b.iter(|| {
                    let mut o = World::default();
                    framework_load(m, "world", &mut o);
                    o
                })
            });
        }
        group.finish();
    }
}

/// Mirror types of the example world for the `savefile` baseline (savefile needs its own
/// derive on the saved types; the example game's types derive serde only).
#[cfg(feature = "bitcode")]
mod mirror {
    use savefile_derive::Savefile;
    use std::collections::HashMap;

    #[derive(Savefile, Debug, PartialEq)]
    pub struct Vec3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    #[derive(Savefile, Debug, PartialEq)]
    pub enum EntityKind {
        Tree,
        Rock,
        Chest { gold: u32 },
        Monster { hp: u16, angry: bool },
    }

    #[derive(Savefile, Debug, PartialEq)]
    pub struct Entity {
        pub id: u32,
        pub kind: EntityKind,
        pub position: Vec3,
    }

    #[derive(Savefile, Debug, PartialEq)]
    pub struct World {
        pub entities: Vec<Entity>,
        pub names: HashMap<u32, String>,
    }

    pub fn of(w: &super::World) -> World {
        use super::game::EntityKind as K;
        World {
            entities: w
                .entities
                .iter()
                .map(|e| Entity {
                    id: e.id,
                    kind: match e.kind {
                        K::Tree => EntityKind::Tree,
                        K::Rock => EntityKind::Rock,
                        K::Chest { gold } => EntityKind::Chest { gold },
                        K::Monster { hp, angry } => EntityKind::Monster { hp, angry },
                    },
                    position: Vec3 {
                        x: e.position.x,
                        y: e.position.y,
                        z: e.position.z,
                    },
                })
                .collect(),
            names: w.names.clone(),
        }
    }
}

/// bitcode through the manager (encrypted, fsync'd) against savefile's plain save and load.
#[cfg(feature = "bitcode")]
fn bitcode_vs_savefile(c: &mut Criterion) {
    let world = World::generate(100_000, 1);
    let dir = tempfile::tempdir_in(bench_dir()).unwrap();
    let plain = mirror::of(&world);
    let sf_path = dir.path().join("world.savefile");
    savefile::save_file(&sf_path, 0, &plain).unwrap();
    let back: mirror::World = savefile::load_file(&sf_path, 0).unwrap();
    assert_eq!(back, plain);
    let managers: Vec<_> = [
        ("bitcode+aes", Codec::Bitcode),
        ("msgpack+aes", Codec::MessagePack),
    ]
    .into_iter()
    .map(|(name, codec)| {
        let m = SaveLoadManager::builder()
            .directory(dir.path().join(name))
            .codec(codec)
            .key(key())
            .build()
            .unwrap();
        framework_save(&m, "world", &world);
        framework_save(&m, "world", &world);
        (name, m)
    })
    .collect();
    eprintln!(
        "bitcode/world-100k: savefile {} bytes; {}",
        std::fs::metadata(&sf_path).unwrap().len(),
        managers
            .iter()
            .map(|(n, m)| format!(
                "{n} {} bytes",
                m.info(SlotId::Numbered(1)).unwrap().file_size
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Peak extra heap of one save of each, against its file's size.
    for (name, m) in &managers {
        let file = m.info(SlotId::Numbered(1)).unwrap().file_size as f64;
        let capture = ALLOC.peak_during(|| framework_save(m, "world", &world));
        let state = ALLOC.peak_during(|| framework_save_state(m, "world", &world));
        eprintln!(
            "memory bitcode/world-100k/{name}: file {file} B; capture+save {capture} B \
             ({:.2}x file), save_state {state} B ({:.2}x file)",
            capture as f64 / file,
            state as f64 / file
        );
    }
    let mut group = c.benchmark_group("bitcode/save/world-100k");
    group.bench_function("savefile-plain", |b| {
        b.iter(|| savefile::save_file(&sf_path, 0, black_box(&plain)).unwrap())
    });
    for (name, m) in &managers {
        group.bench_function(format!("savegame-{name}"), |b| {
            b.iter(|| framework_save(m, "world", black_box(&world)))
        });
        group.bench_function(format!("savegame-{name} save_state"), |b| {
            b.iter(|| framework_save_state(m, "world", black_box(&world)))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("bitcode/load/world-100k");
    group.bench_function("savefile-plain", |b| {
        b.iter(|| savefile::load_file::<mirror::World, _>(&sf_path, 0).unwrap())
    });
    for (name, m) in &managers {
        group.bench_function(format!("savegame-{name}"), |b| {
            b.iter(|| {
                let mut o = World::default();
                framework_load(m, "world", &mut o);
                o
            })
        });
    }
    group.finish();
}

#[cfg(not(feature = "bitcode"))]
fn bitcode_vs_savefile(_: &mut Criterion) {}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    targets = world_100k, profile_10k, chunked_world, menu_100, protection, compression,
        bitcode_vs_savefile
}
criterion_main!(benches);
