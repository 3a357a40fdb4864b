//! Whole-state saves: what dirty tracking costs, and derived originators against hand-written
//! ones.
//!
//! - `dirty/*`: a registry of 100,000 entity mementos (MessagePack, encrypted, real files). A
//!   full `save_state` against `save_state_incremental` with nothing changed (the cost of the
//!   detection alone: capture, encoding, fingerprints, the slot's header check, an empty
//!   delta) and with 1% changed.
//! - `detect/*`: the detection's own work over the 100,000 encoded mementos, and the
//!   alternatives it was chosen over: the fingerprint it keeps (length, CRC32, SipHash), a
//!   SipHash alone, and a full copy of every memento's bytes compared byte for byte.
//! - `derive/*`: a derived originator against the same one written by hand: create and
//!   restore a memento, and a round trip through a snapshot.
//!
//! ```text
//! cargo bench --bench state -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use savegame::{Codec, Originator, Registry, SaveLoadManager, SaveState, SlotId, Snapshot};
use savegame_testkit::key;
use serde::{Deserialize, Serialize};

const ENTITIES: usize = 100_000;

#[derive(Originator, Clone, Default)]
struct Body {
    x: f32,
    y: f32,
    z: f32,
    hp: u16,
    angry: bool,
}

fn registry() -> Registry<Body> {
    let mut r = Registry::new();
    for i in 0..ENTITIES {
        let f = i as f32;
        r.register(
            format!("e/{i:06}"),
            Body {
                x: f,
                y: -f,
                z: f * 0.5,
                hp: (i % 300) as u16,
                angry: i % 2 == 0,
            },
        )
        .unwrap();
    }
    r
}

fn manager(dir: &std::path::Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(Codec::MessagePack)
        .key(key())
        // Keep compaction out of the delta timings.
        .compact_at(100_000)
        .build()
        .unwrap()
}

fn dirty(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let manager = manager(dir.path());
    let mut world = registry();
    let slot = SlotId::Numbered(1);
    let mut g = c.benchmark_group("dirty");
    g.sample_size(10);
    g.bench_function("full save_state, 100k", |b| {
        b.iter(|| manager.save_state(slot, &world).unwrap())
    });
    manager.save_state(slot, &world).unwrap();
    g.bench_function("save_state_incremental, nothing changed, 100k", |b| {
        b.iter(|| {
            let r = manager.save_state_incremental(slot, &world).unwrap();
            assert!(!r.wrote && r.changed.is_empty());
        })
    });
    let mut round = 0u16;
    g.bench_function("save_state_incremental, 1% changed, 100k", |b| {
        b.iter(|| {
            round = round.wrapping_add(1);
            for (i, (_, body)) in world.iter_mut().enumerate() {
                if i % 100 == 0 {
                    body.hp = round;
                }
            }
            let r = manager.save_state_incremental(slot, &world).unwrap();
            assert_eq!(r.changed.len(), ENTITIES / 100);
        })
    });
    g.bench_function("capture_state and encode only, 100k", |b| {
        b.iter(|| {
            let mut s = Snapshot::new(Codec::MessagePack);
            world.capture_state(&mut s).unwrap();
            black_box(s.encoded_len())
        })
    });
    g.finish();
}

fn fingerprint(bytes: &[u8]) -> (u64, u64) {
    let mut sip = std::hash::DefaultHasher::new();
    sip.write(bytes);
    let head = ((bytes.len() as u64) << 32) | u64::from(crc32fast::hash(bytes));
    (head, sip.finish())
}

fn detect(c: &mut Criterion) {
    let world = registry();
    let mut s = Snapshot::new(Codec::MessagePack);
    world.capture_state(&mut s).unwrap();
    let encoded: Vec<(String, Vec<u8>)> = s
        .ids()
        .map(|id| (id.to_owned(), s.encoded(id).unwrap().to_vec()))
        .collect();
    let prints: HashMap<String, (u64, u64)> = encoded
        .iter()
        .map(|(id, b)| (id.clone(), fingerprint(b)))
        .collect();
    let sips: HashMap<String, u64> = encoded
        .iter()
        .map(|(id, b)| {
            let mut h = std::hash::DefaultHasher::new();
            h.write(b);
            (id.clone(), h.finish())
        })
        .collect();
    let copies: HashMap<String, Vec<u8>> = encoded.iter().cloned().collect();
    let mut g = c.benchmark_group("detect");
    g.bench_function("fingerprint (len, crc32, siphash), 100k", |b| {
        b.iter(|| {
            encoded
                .iter()
                .filter(|(id, bytes)| prints.get(id) != Some(&fingerprint(bytes)))
                .count()
        })
    });
    g.bench_function("siphash only, 100k", |b| {
        b.iter(|| {
            encoded
                .iter()
                .filter(|(id, bytes)| {
                    let mut h = std::hash::DefaultHasher::new();
                    h.write(bytes);
                    sips.get(id) != Some(&h.finish())
                })
                .count()
        })
    });
    g.bench_function("byte-for-byte copy, 100k", |b| {
        b.iter(|| {
            encoded
                .iter()
                .filter(|(id, bytes)| copies.get(id).map(Vec::as_slice) != Some(bytes.as_slice()))
                .count()
        })
    });
    g.finish();
    let bytes: usize = encoded.iter().map(|(_, b)| b.len()).sum();
    println!(
        "detect: 100k mementos, {bytes} bytes encoded; kept per memento: fingerprint 16 bytes, \
         siphash 8, copy {} on average (plus the id)",
        bytes / encoded.len()
    );
}

/// The derived originator and the same one by hand.
#[derive(Originator, Clone, Default)]
#[savegame(memento = "DerivedMemento")]
struct Derived {
    name: String,
    health: u32,
    position: (f32, f32, f32),
    inventory: BTreeMap<String, u32>,
    #[savegame(skip, reset)]
    frames_since_hit: u32,
}

#[derive(Clone, Default)]
struct Hand {
    name: String,
    health: u32,
    position: (f32, f32, f32),
    inventory: BTreeMap<String, u32>,
    frames_since_hit: u32,
}

#[derive(Serialize, Deserialize)]
struct HandMemento {
    name: String,
    health: u32,
    position: (f32, f32, f32),
    inventory: BTreeMap<String, u32>,
}

impl Originator for Hand {
    type Memento = HandMemento;
    fn create_memento(&self) -> HandMemento {
        HandMemento {
            name: self.name.clone(),
            health: self.health,
            position: self.position,
            inventory: self.inventory.clone(),
        }
    }
    fn restore_memento(&mut self, m: HandMemento) -> savegame::Result<()> {
        self.name = m.name;
        self.health = m.health;
        self.position = m.position;
        self.inventory = m.inventory;
        self.frames_since_hit = 0;
        Ok(())
    }
}

fn derive(c: &mut Criterion) {
    let inventory: BTreeMap<String, u32> = ["potion", "arrow", "key", "gem", "scroll"]
        .iter()
        .enumerate()
        .map(|(i, s)| ((*s).to_owned(), i as u32 * 7))
        .collect();
    let hand = Hand {
        name: "Aurelia".into(),
        health: 80,
        position: (1.0, 2.0, 3.0),
        inventory: inventory.clone(),
        frames_since_hit: 3,
    };
    let derived = Derived {
        name: "Aurelia".into(),
        health: 80,
        position: (1.0, 2.0, 3.0),
        inventory,
        frames_since_hit: 3,
    };
    let mut g = c.benchmark_group("derive");
    g.bench_function("hand-written: create + restore", |b| {
        let mut target = Hand::default();
        b.iter(|| target.restore_memento(black_box(&hand).create_memento()))
    });
    g.bench_function("derived: create + restore", |b| {
        let mut target = Derived::default();
        b.iter(|| target.restore_memento(black_box(&derived).create_memento()))
    });
    for codec in [Codec::MessagePack, Codec::Json] {
        g.bench_function(format!("hand-written: snapshot round trip, {codec}"), |b| {
            let mut target = Hand::default();
            b.iter_batched(
                || Snapshot::new(codec),
                |mut s| {
                    s.capture("p", &hand).unwrap();
                    s.encoded("p").unwrap();
                    s.restore("p", &mut target).unwrap();
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(format!("derived: snapshot round trip, {codec}"), |b| {
            let mut target = Derived::default();
            b.iter_batched(
                || Snapshot::new(codec),
                |mut s| {
                    s.capture("p", &derived).unwrap();
                    s.encoded("p").unwrap();
                    s.restore("p", &mut target).unwrap();
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = dirty, detect, derive
}
criterion_main!(benches);
