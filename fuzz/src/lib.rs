//! What the fuzz targets share: the fixed key, the slot and file names, a valid base save for
//! the journal target, a game for the replay target, and the seed files (`make_seeds`).
//!
//! Everything here goes through the public API of `savegame` only.

use std::sync::OnceLock;
use std::time::Duration;

use savegame::format::{CRC_LEN, FLAG_AUTHENTICATED, FLAG_ENCRYPTED, HEADER_LEN, MAGIC, NONCE_LEN};
use savegame::migrate::Migrations;
use savegame::replay::Player;
use savegame::replay::{OnDesync, Replayable};
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Codec, Key, Recorder, SaveLoadManager, SlotId, Snapshot};
use serde_json::{Value, json};

/// The fixed key of the targets and the seeds.
pub const KEY: [u8; 32] = [7; 32];

/// The slot every save and journal target uses: `slot-001.sav`.
pub const SLOT: SlotId = SlotId::Numbered(1);

/// The file name the replay target gives its input.
pub const REPLAY_NAME: &str = "match.replay";

/// The fixed key.
#[must_use]
pub fn key() -> Key {
    Key::from_bytes(KEY)
}

/// The journal of [`SLOT`]: `slot-001.sav.journal`.
#[must_use]
pub fn journal_name() -> String {
    format!("{}.journal", SLOT.file_name())
}

/// The crate's own declarative migrations (schema 1 → 3), so that the load target also runs
/// hostile saves through the migration engine.
///
/// # Panics
/// If the embedded steps do not parse (a bug in the crate's `migrations/` folder).
#[must_use]
pub fn migrations() -> Migrations {
    Migrations::embedded(&[
        (
            "0002_rename_hp_position_stamina.json",
            include_str!("../../migrations/0002_rename_hp_position_stamina.json"),
        ),
        (
            "0003_split_inventory_kind_ids.json",
            include_str!("../../migrations/0003_split_inventory_kind_ids.json"),
        ),
    ])
    .expect("the crate's migrations parse")
}

/// `bytes` with the CRC32 of every record recomputed: a save is one record, a journal and a
/// replay are records one after another. Every record of the family has the same frame (a
/// 52-byte header whose metadata length `M` is a u32 at byte 40 and payload length `P` a u64 at
/// byte 44, then `M`, a 12-byte nonce when flag bit 0 is set, `P`, and a CRC32 of all the bytes
/// before it), so this walks records by their declared lengths and stops at the first that does
/// not fit. Without it, almost every mutation fails the checksum and the parsers behind it are
/// never reached. `None` when nothing changed.
#[must_use]
pub fn with_fixed_crcs(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = bytes.to_vec();
    let mut offset = 0usize;
    while out.len() - offset >= HEADER_LEN + CRC_LEN && out[offset..].starts_with(&MAGIC) {
        let h = &out[offset..offset + HEADER_LEN];
        let flags = u16::from_le_bytes([h[10], h[11]]);
        let meta = u64::from(u32::from_le_bytes(h[40..44].try_into().expect("4 bytes")));
        let payload = u64::from_le_bytes(h[44..52].try_into().expect("8 bytes"));
        let nonce = if flags & FLAG_ENCRYPTED != 0 {
            NONCE_LEN as u64
        } else {
            0
        };
        let len = (HEADER_LEN as u64 + CRC_LEN as u64)
            .saturating_add(meta)
            .saturating_add(nonce)
            .saturating_add(payload);
        let Ok(len) = usize::try_from(len) else { break };
        if len > out.len() - offset {
            break;
        }
        let crc_at = offset + len - CRC_LEN;
        // A plain replay's keyframe chunk holds a whole save file as its payload: fix that one
        // first (one level down), so the outer CRC covers the fixed bytes.
        let payload_at = offset + HEADER_LEN + meta as usize;
        if nonce == 0
            && out[payload_at..crc_at].starts_with(&MAGIC)
            && let Some(inner) = with_fixed_crcs(&out[payload_at..crc_at])
        {
            out[payload_at..crc_at].copy_from_slice(&inner);
        }
        let crc = crc32fast::hash(&out[offset..crc_at]);
        out[crc_at..crc_at + CRC_LEN].copy_from_slice(&crc.to_le_bytes());
        offset += len;
    }
    (out != bytes).then_some(out)
}

/// The inputs a target runs on: the bytes as they came, and with their CRCs fixed (when that
/// changes them).
#[must_use]
pub fn variants(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![data.to_vec()];
    out.extend(with_fixed_crcs(data));
    out
}

/// The downgrades an attacker tries on a sealed save (S11): each protection flag of the
/// header (bit 0, encrypted; bit 1, authenticated) set or cleared, with the CRC32 of the whole
/// file fixed. Empty for bytes too short to hold a header.
#[must_use]
pub fn downgrades(bytes: &[u8]) -> Vec<Vec<u8>> {
    if bytes.len() < HEADER_LEN + CRC_LEN || !bytes.starts_with(&MAGIC) {
        return Vec::new();
    }
    [FLAG_ENCRYPTED, FLAG_AUTHENTICATED]
        .into_iter()
        .map(|flag| {
            let mut out = bytes.to_vec();
            let flags = u16::from_le_bytes([out[10], out[11]]) ^ flag;
            out[10..12].copy_from_slice(&flags.to_le_bytes());
            let crc_at = out.len() - CRC_LEN;
            let crc = crc32fast::hash(&out[..crc_at]);
            out[crc_at..].copy_from_slice(&crc.to_le_bytes());
            out
        })
        .collect()
}

/// A manager over `storage`: with the key (and `allow_unencrypted`) or without one, writing
/// `codec`, no backups, journals compacted at `compact_percent`.
///
/// # Panics
/// Never for a memory storage.
#[must_use]
pub fn manager(
    storage: &MemoryStorage,
    key: Option<Key>,
    allow_unencrypted: bool,
    compact_percent: u32,
    codec: Codec,
) -> SaveLoadManager {
    let builder = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(codec)
        .backups(0)
        .allow_unencrypted(allow_unencrypted)
        .compact_at(compact_percent);
    match key {
        Some(key) => builder.key(key),
        None => builder,
    }
    .build()
    .expect("a memory manager always builds")
}

/// A small game state, as a v1 save of the crate's story holds it (so the migrations apply).
fn game_snapshot(manager: &SaveLoadManager, label: &str) -> Snapshot {
    let mut snapshot = manager
        .snapshot()
        .with_label(label)
        .with_app_version("1.0.0")
        .with_playtime(Duration::from_secs(754))
        .with_user_field("map", "cave");
    snapshot
        .capture_memento(
            "player",
            &json!({"hp": 80, "pos": [1.5, -2.0], "inventory": {"potion": 3, "sword": 1}}),
        )
        .expect("a JSON value encodes");
    snapshot
        .capture_memento(
            "world",
            &json!({"entities": [
                {"id": 1, "kind": "tree", "position": {"x": 0.0, "y": 1.0, "z": 0.0}},
                {"id": 2, "kind": "chest", "position": {"x": 3.0, "y": 0.5, "z": -1.0}}
            ]}),
        )
        .expect("a JSON value encodes");
    snapshot
        .capture_memento("turn", &7u64)
        .expect("a u64 encodes");
    snapshot
}

/// The bytes of a full save of [`SLOT`] (generation 1), made through a manager.
fn full_save(key: Option<Key>, codec: Codec, label: &str) -> Vec<u8> {
    let storage = MemoryStorage::new();
    let manager = manager(&storage, key, false, u32::MAX, codec);
    manager
        .save(SLOT, &game_snapshot(&manager, label))
        .expect("a memory save succeeds");
    storage
        .get(&SLOT.file_name())
        .expect("the save was written")
}

/// The bytes of an integrity-only JSON save of [`SLOT`] under the fixed key.
fn integrity_save() -> Vec<u8> {
    let storage = MemoryStorage::new();
    let manager = SaveLoadManager::builder()
        .storage(storage.clone())
        .codec(Codec::Json)
        .backups(0)
        .integrity_only(key())
        .build()
        .expect("a memory manager always builds");
    manager
        .save(SLOT, &game_snapshot(&manager, "integrity-only"))
        .expect("a memory save succeeds");
    storage
        .get(&SLOT.file_name())
        .expect("the save was written")
}

/// The valid base saves of the journal target, made once: `(plain MessagePack, JSON encrypted
/// with KEY)`, both of [`SLOT`] at generation 1, so any journal whose deltas name generation 1
/// applies.
pub fn bases() -> &'static (Vec<u8>, Vec<u8>) {
    static BASES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    BASES.get_or_init(|| {
        (
            full_save(None, Codec::MessagePack, "base"),
            full_save(Some(key()), Codec::Json, "base"),
        )
    })
}

/// The codecs of the first `count` records of a journal, read from their headers.
#[must_use]
pub fn record_codecs(journal: &[u8], count: u32) -> Vec<Option<Codec>> {
    let mut codecs = Vec::new();
    let mut offset = 0;
    for _ in 0..count {
        let rest = &journal[offset..];
        let Ok(Some(len)) = savegame::format::record_len(rest) else {
            codecs.push(None);
            break;
        };
        codecs.push(
            savegame::format::parse_header(&rest[..len], Some(len as u64))
                .ok()
                .map(|h| h.codec),
        );
        offset += len;
    }
    codecs
}

/// The game the replay target plays into: a counter its inputs add to, whatever their shape.
#[derive(Debug, Default)]
pub struct Game {
    /// The counter.
    pub value: u64,
    /// How many frames were stepped.
    pub steps: u64,
}

impl Replayable for Game {
    type Input = Value;

    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.value = match keyframe.memento::<u64>("counter") {
            Ok(value) => value,
            Err(_) => {
                // Any other keyframe: decode every memento, as a game would restore them.
                let ids: Vec<String> = keyframe.ids().map(str::to_owned).collect();
                for id in ids {
                    let _ = keyframe.memento::<Value>(&id);
                }
                0
            }
        };
        Ok(())
    }

    fn step(&mut self, _frame: u64, input: Value) -> savegame::Result<()> {
        self.steps += 1;
        if let Some(n) = input.as_i64() {
            self.value = self.value.wrapping_add(n as u64);
        }
        Ok(())
    }

    fn state_hash(&self) -> Option<u64> {
        Some(self.value)
    }
}

/// Plays `player` through the ways a game drives one: seek to the start, play a little,
/// advance by real time at two speeds, seek to every keyframe, to the end and back, read single
/// frames. Errors are fine; the calls must not panic. Work is bounded by the file's size: each
/// frame takes at least one byte of it.
pub fn drive(player: &mut savegame::replay::Player, game: &mut Game) {
    let _ = player.header().duration();
    let _ = player.status().is_complete();
    let _ = player.duration();
    let frames = player.frame_count();
    let keyframes: Vec<u64> = player.keyframes().collect();
    let _ = player.seek(game, 0);
    let _ = player.play_to(game, frames.min(10));
    let _ = player.set_speed(4.0);
    let _ = player.advance(game, Duration::from_millis(250));
    let _ = player.set_speed(0.5);
    let _ = player.advance(game, Duration::from_millis(100));
    let _ = player.play_to(game, frames);
    for &k in keyframes.iter().take(8) {
        let _ = player.seek(game, k);
    }
    player.set_on_desync(OnDesync::Stop);
    let _ = player.seek(game, frames / 2);
    let _ = player.seek(game, frames);
    let _ = player.play_to(game, frames.saturating_add(1));
    let _ = player.seek(game, 0);
    for n in [0, frames / 3, frames.saturating_sub(1), frames] {
        let _ = player.frame::<Value>(n);
        let _ = player.frame::<u8>(n);
    }
    let _ = player.tick(Duration::from_secs(3600));
    let _ = player.is_finished();
    let _ = player.first_desync();
}

/// A seed file: its name and bytes.
pub type Seed = (&'static str, Vec<u8>);

/// Seeds of the `load` target: a plain MessagePack save, an encrypted one, a JSON one.
#[must_use]
pub fn save_seeds() -> Vec<Seed> {
    vec![
        (
            "plain-msgpack.sav",
            full_save(None, Codec::MessagePack, "plain"),
        ),
        (
            "encrypted-msgpack.sav",
            full_save(Some(key()), Codec::MessagePack, "encrypted"),
        ),
        ("plain-json.sav", full_save(None, Codec::Json, "json")),
        ("integrity-json.sav", integrity_save()),
        (
            "encrypted-json.sav",
            full_save(Some(key()), Codec::Json, "json, encrypted"),
        ),
    ]
}

/// A journal of `deltas` deltas (1 to 3) after a generation-1 base of [`SLOT`], as
/// `save_incremental` writes it.
fn journal(key: Option<Key>, codec: Codec, deltas: usize) -> Vec<u8> {
    let storage = MemoryStorage::new();
    let manager = manager(&storage, key, false, u32::MAX, codec);
    manager
        .save(SLOT, &game_snapshot(&manager, "base"))
        .expect("a memory save succeeds");
    for n in 0..deltas {
        let mut changes = manager.snapshot().with_label(format!("delta {}", n + 1));
        changes
            .capture_memento("turn", &(8 + n as u64))
            .expect("a u64 encodes");
        match n {
            0 => changes
                .capture_memento("player", &json!({"hp": 70, "pos": [2.0, -2.0]}))
                .expect("a JSON value encodes"),
            1 => changes.mark_deleted("world").expect("an id can be deleted"),
            _ => changes
                .capture_memento("quest", &json!({"stage": n, "done": false}))
                .expect("a JSON value encodes"),
        }
        let report = manager
            .save_incremental(SLOT, &changes)
            .expect("a memory delta save succeeds");
        assert!(report.compacted.is_none(), "seeds keep their journal");
    }
    storage
        .get(&journal_name())
        .expect("the journal was written")
}

/// Seeds of the `journal` target: journals of 1 to 3 deltas in the codec of the target's
/// base they fit (plain MessagePack, JSON encrypted with [`KEY`]).
#[must_use]
pub fn journal_seeds() -> Vec<Seed> {
    vec![
        ("plain-1.journal", journal(None, Codec::MessagePack, 1)),
        ("plain-3.journal", journal(None, Codec::MessagePack, 3)),
        (
            "encrypted-json-2.journal",
            journal(Some(key()), Codec::Json, 2),
        ),
    ]
}

/// Inputs for findings, by target: see the fuzz README.
#[must_use]
pub fn regression_files() -> Vec<(&'static str, Seed)> {
    vec![(
        "journal",
        // JSON deltas after the plain MessagePack base: applied, and decoded as MessagePack.
        ("mixed-codec-delta.journal", journal(None, Codec::Json, 2)),
    )]
}

/// A short replay of the counter game: keyframes every `keyframe_every` frames, small chunks
/// so the file has several, finished or cut short (no end chunk).
fn replay(
    key: Option<Key>,
    codec: Codec,
    frames: u64,
    keyframe_every: u32,
    finish: bool,
) -> Vec<u8> {
    let storage = MemoryStorage::new();
    let builder = Recorder::builder()
        .codec(codec)
        .frame_rate(30)
        .seed(42)
        .keyframe_every(keyframe_every)
        .chunk_size(64)
        .label("seed match")
        .app_version("1.0.0");
    let builder = match key {
        Some(key) => builder.key(key),
        None => builder,
    };
    let mut recorder = builder
        .create_in::<i64>(storage.clone(), REPLAY_NAME)
        .expect("a memory recorder starts");
    let mut game = Game::default();
    for frame in 0..frames {
        if recorder.keyframe_due() {
            let mut keyframe = recorder.snapshot();
            keyframe
                .capture_memento("counter", &game.value)
                .expect("a u64 encodes");
            recorder.keyframe(&keyframe).expect("a keyframe records");
        }
        // Repeated inputs (the file stores a repeat in one byte) and some changes.
        let input = (frame / 3 % 5) as i64 - 2;
        game.step(frame, Value::from(input))
            .expect("the game steps");
        let hash = (frame % 2 == 0).then_some(game.value);
        recorder.frame(&input, hash).expect("a frame records");
    }
    if finish {
        recorder.finish().expect("the replay finishes");
    } else {
        drop(recorder);
    }
    storage.get(REPLAY_NAME).expect("the replay was written")
}

/// Seeds of the `replay` target: short replays, plain and encrypted, MessagePack and JSON, one
/// cut short.
#[must_use]
pub fn replay_seeds() -> Vec<Seed> {
    vec![
        (
            "plain-msgpack.replay",
            replay(None, Codec::MessagePack, 40, 16, true),
        ),
        ("plain-json.replay", replay(None, Codec::Json, 20, 8, true)),
        (
            "encrypted-msgpack.replay",
            replay(Some(key()), Codec::MessagePack, 24, 10, true),
        ),
        (
            "cut-short.replay",
            replay(None, Codec::MessagePack, 30, 12, false),
        ),
    ]
}

/// Checks that a seed is what it claims, the way its target feeds it: a save loads, a journal's
/// deltas all apply to the target's own base, a replay opens and plays.
///
/// # Panics
/// When it is not.
pub fn check_seed(target: &str, name: &str, bytes: &[u8]) {
    let encrypted = name.starts_with("encrypted");
    let key = encrypted.then(key);
    let storage = MemoryStorage::new();
    match target {
        "load" => {
            storage
                .put(&SLOT.file_name(), bytes)
                .expect("a memory storage takes any put");
            let manager = if name.starts_with("integrity") {
                SaveLoadManager::builder()
                    .storage(storage.clone())
                    .integrity_only(self::key())
                    .build()
                    .expect("a memory manager always builds")
            } else {
                manager(&storage, key, false, 50, Codec::MessagePack)
            };
            let loaded = manager.load(SLOT).expect("a save seed loads");
            assert_eq!(loaded.snapshot.len(), 3, "{name}");
        }
        "journal" => {
            let (plain, sealed) = bases();
            let base = if encrypted { sealed } else { plain };
            storage
                .put(&SLOT.file_name(), &base)
                .expect("a memory storage takes any put");
            storage
                .put(&journal_name(), bytes)
                .expect("a memory storage takes any put");
            let codec = if encrypted {
                Codec::Json
            } else {
                Codec::MessagePack
            };
            let manager = manager(&storage, key, false, u32::MAX, codec);
            let loaded = manager.load(SLOT).expect("the base loads");
            assert_eq!(loaded.report.journal_problem, None, "{name}");
            assert!(loaded.report.deltas >= 1, "{name}");
            // The seeds' deltas count the turn up from the base's 7.
            let turn = loaded.snapshot.memento::<u64>("turn").ok();
            assert_eq!(turn, Some(7 + u64::from(loaded.report.deltas)), "{name}");
        }
        _ => {
            storage
                .put(REPLAY_NAME, bytes)
                .expect("a memory storage takes any put");
            let builder = Player::builder();
            let builder = match key {
                Some(key) => builder.key(key),
                None => builder,
            };
            let mut player = builder
                .open_in(storage, REPLAY_NAME)
                .expect("a replay seed opens");
            assert_eq!(
                player.status().is_complete(),
                !name.starts_with("cut"),
                "{name}"
            );
            let mut game = Game::default();
            let frames = player.frame_count();
            player.seek(&mut game, 0).expect("frame 0 has a keyframe");
            let progress = player.play_to(&mut game, frames).expect("the replay plays");
            assert!(
                progress.checked > 0 && progress.desync.is_none(),
                "{name}: {progress:?}"
            );
            player
                .seek(&mut game, frames / 2)
                .expect("the replay seeks");
        }
    }
}
