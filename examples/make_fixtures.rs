//! Writes the save fixtures of `fixtures/` with the library's own writer, at each schema version
//! of the migrations story (see `shared/versions.rs`), and beside them the v3 state each must
//! load as, converted by hand.
//!
//! The `v<n>-*` files were written at format version 1 and are kept as they are; this program
//! now writes format version 2, and adds the `format2-*` files: the schema-v3 state plain,
//! encrypted and integrity-only (`hmac`), and `format2-mementos-*`, whose mementos carry
//! versions of their own (`player` at memento version 1, `world` at 3) for the per-memento
//! story: a game whose `player` is at memento version 2, with one step 1 → 2 that renames
//! `stamina` to `energy` and adds `title: "wanderer"`. Its expected state, converted by hand,
//! is `format2-mementos.expected.json`.
//!
//! Format version 3 adds the `format3-*` files: the same schema-v3 state plain, encrypted and
//! integrity-only, and `format3-v3-msgpack-zstd-pieces-aes.sav`, whose Zstandard body is many
//! frames (a document over 1 MiB, compressed 512 KiB at a time), and
//! `format3-v3-msgpack-zstd-pieces-streamed-aes.sav`, the same written as it is encoded (the
//! table of contents in a frame of raw blocks before the document's frames).
//!
//! Fixtures are committed once and never regenerated: this program only writes files that do
//! not exist yet. A new schema version adds its fixtures by running it again.
//!
//! ```text
//! cargo run --example make_fixtures -- fixtures
//! ```

#[path = "shared/game.rs"]
mod game;
#[path = "shared/versions.rs"]
mod versions;

use std::path::Path;
use std::time::Duration;

use savegame::{Codec, Compression, Key, SaveLoadManager, SlotId, Snapshot};
use serde_json::json;
use versions::{expected_v2, expected_v3, v1_state};

/// The key the encrypted fixtures are sealed with (also written to `test-key.hex`).
const KEY: [u8; 32] = *b"savegame fixtures key; no secret";
const ENTITIES: usize = 24;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: make_fixtures OUTPUT_FOLDER")?;
    let out = Path::new(&out);
    std::fs::create_dir_all(out)?;
    write_new(
        &out.join("test-key.hex"),
        KEY.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
            .as_bytes(),
    )?;

    for version in 1..=3u32 {
        let (p1, w1) = v1_state(10 + u64::from(version), ENTITIES);
        let mut p2 = expected_v2(&p1);
        let expected = if version == 1 {
            expected_v3(&p2, &w1)
        } else {
            // A v2 player whose stamina is not the default, so a migration that overwrote it
            // would show.
            p2.stamina = 55;
            expected_v3(&p2, &w1)
        };
        for codec in [Codec::Json, Codec::MessagePack] {
            for encrypted in [false, true] {
                let tmp = tempfile::tempdir()?;
                let builder = SaveLoadManager::builder()
                    .directory(tmp.path())
                    .codec(codec)
                    .schema_version(version);
                let manager = if encrypted {
                    builder.key(Key::from_bytes(KEY))
                } else {
                    builder
                }
                .build()?;
                let mut snapshot: Snapshot = manager
                    .snapshot()
                    .with_label(format!("fixture v{version}"))
                    .with_app_version(format!("1.{}.0", version - 1))
                    .with_playtime(Duration::from_secs(600 * u64::from(version)));
                match version {
                    1 => {
                        snapshot.capture_memento("player", &p1)?;
                        snapshot.capture_memento("world", &w1)?;
                    }
                    2 => {
                        snapshot.capture_memento("player", &p2)?;
                        snapshot.capture_memento("world", &w1)?;
                    }
                    _ => {
                        snapshot.capture_memento("player", &expected.player)?;
                        snapshot.capture_memento("inventory", &expected.inventory)?;
                        snapshot.capture_memento("world", &expected.world)?;
                    }
                }
                let report = manager.save(SlotId::Numbered(1), &snapshot)?;
                let name = format!(
                    "v{version}-{codec}-{}.sav",
                    if encrypted { "aes" } else { "plain" }
                );
                write_new(&out.join(name), &std::fs::read(report.path)?)?;
            }
        }
        let expected = serde_json::to_string_pretty(&expected)? + "\n";
        write_new(
            &out.join(format!("v{version}.expected.json")),
            expected.as_bytes(),
        )?;
    }
    format2(out)?;
    format3(out)?;
    Ok(())
}

/// How a fixture is sealed.
#[derive(Clone, Copy)]
enum Seal {
    Plain,
    Aes,
    Hmac,
}

impl Seal {
    fn name(self) -> &'static str {
        match self {
            Seal::Plain => "plain",
            Seal::Aes => "aes",
            Seal::Hmac => "hmac",
        }
    }
}

/// A manager at schema version 3 over `dir`, sealing as `seal` says.
fn schema_v3_manager(
    dir: &Path,
    codec: Codec,
    seal: Seal,
    compression: Compression,
) -> Result<SaveLoadManager, Box<dyn std::error::Error>> {
    let builder = SaveLoadManager::builder()
        .directory(dir)
        .codec(codec)
        .compression(compression)
        .schema_version(3);
    let manager = match seal {
        Seal::Plain => builder,
        Seal::Aes => builder.key(Key::from_bytes(KEY)),
        Seal::Hmac => builder.integrity_only(Key::from_bytes(KEY)),
    }
    .build()?;
    Ok(manager)
}

/// The format-2 fixtures (see the module docs).
fn format2(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    // The state of the v3 fixtures, so `v3.expected.json` is theirs too.
    let (p1, w1) = v1_state(13, ENTITIES);
    let mut p2 = expected_v2(&p1);
    p2.stamina = 55;
    let state = expected_v3(&p2, &w1);
    // Compressed files (flag bits 2-3) and the bitcode file (codec 3) need the `lz4`, `zstd`
    // and `bitcode` features:
    // `cargo run --example make_fixtures --features lz4,zstd,bitcode -- fixtures`.
    let none = Compression::None;
    let files = [
        ("v3", Codec::Json, Seal::Plain, none),
        ("v3", Codec::Json, Seal::Aes, none),
        ("v3", Codec::Json, Seal::Hmac, none),
        ("v3", Codec::MessagePack, Seal::Plain, none),
        ("v3", Codec::MessagePack, Seal::Aes, none),
        ("v3", Codec::MessagePack, Seal::Hmac, none),
        ("mementos", Codec::Json, Seal::Hmac, none),
        ("mementos", Codec::MessagePack, Seal::Plain, none),
        ("v3", Codec::Json, Seal::Plain, Compression::Lz4),
        ("v3", Codec::MessagePack, Seal::Aes, Compression::Lz4),
        // Level 3: what `Compression::zstd()` was when these were written.
        (
            "v3",
            Codec::Json,
            Seal::Hmac,
            Compression::Zstd { level: 3 },
        ),
        (
            "v3",
            Codec::MessagePack,
            Seal::Aes,
            Compression::Zstd { level: 3 },
        ),
        // Needs the `bitcode` feature too.
        ("v3", Codec::Bitcode, Seal::Aes, none),
    ];
    // The encrypted files above were written before format 2 sealed encrypted bodies in
    // segments (flag bit 4), as one AES-GCM message each; this program now writes segments,
    // so these two are the segmented kind (their bodies are one segment long).
    let segmented = [
        ("v3", Codec::Json, Seal::Aes, none),
        ("v3", Codec::MessagePack, Seal::Aes, none),
    ];
    let files = files
        .into_iter()
        .map(|f| (f, ""))
        .chain(segmented.into_iter().map(|f| (f, "segmented-")));
    for ((story, codec, seal, compression), kind) in files {
        let tmp = tempfile::tempdir()?;
        let manager = schema_v3_manager(tmp.path(), codec, seal, compression)?;
        let mut snapshot: Snapshot = manager
            .snapshot()
            .with_label(format!("fixture format 2 {story}"))
            .with_app_version("2.0.0")
            .with_playtime(Duration::from_secs(2400));
        snapshot.capture_memento("player", &state.player)?;
        snapshot.capture_memento("inventory", &state.inventory)?;
        snapshot.capture_memento("world", &state.world)?;
        if story == "mementos" {
            snapshot.set_memento_version("player", 1)?;
            snapshot.set_memento_version("world", 3)?;
        }
        let report = manager.save(SlotId::Numbered(1), &snapshot)?;
        let packed = match compression {
            Compression::None => String::new(),
            c => format!("{}-", c.name()),
        };
        let name = format!("format2-{story}-{codec}-{packed}{kind}{}.sav", seal.name());
        write_new(&out.join(name), &std::fs::read(report.path)?)?;
    }
    // The per-memento story's expected state, by hand: player 1 -> 2 renames `stamina` to
    // `energy` and adds a title; world (at 3) and inventory (at 1) are as saved.
    let p = &state.player;
    let expected = json!({
        "player": {
            "health": p.health,
            "position": p.position,
            "energy": p.stamina,
            "title": "wanderer",
        },
        "inventory": state.inventory,
        "world": state.world,
        "memento_versions": {"player": 2, "inventory": 1, "world": 3},
    });
    let expected = serde_json::to_string_pretty(&expected)? + "\n";
    write_new(
        &out.join("format2-mementos.expected.json"),
        expected.as_bytes(),
    )?;
    Ok(())
}

/// The format-3 fixtures: the schema-v3 state of the `v3-*` files, plain, encrypted (whose
/// segments' associated data reads the payload length as zero, the one change of format 3) and
/// integrity-only, in both self-describing codecs.
fn format3(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let (p1, w1) = v1_state(13, ENTITIES);
    let mut p2 = expected_v2(&p1);
    p2.stamina = 55;
    let state = expected_v3(&p2, &w1);
    for codec in [Codec::Json, Codec::MessagePack] {
        for seal in [Seal::Plain, Seal::Aes, Seal::Hmac] {
            let tmp = tempfile::tempdir()?;
            let manager = schema_v3_manager(tmp.path(), codec, seal, Compression::None)?;
            let mut snapshot: Snapshot = manager
                .snapshot()
                .with_label("fixture format 3 v3")
                .with_app_version("3.0.0")
                .with_playtime(Duration::from_secs(3600));
            snapshot.capture_memento("player", &state.player)?;
            snapshot.capture_memento("inventory", &state.inventory)?;
            snapshot.capture_memento("world", &state.world)?;
            let report = manager.save(SlotId::Numbered(1), &snapshot)?;
            let name = format!("format3-v3-{codec}-{}.sav", seal.name());
            write_new(&out.join(name), &std::fs::read(report.path)?)?;
        }
    }
    // A Zstandard body in pieces (needs the `zstd` feature): the same state and a `scenery`
    // memento of 1.6 MB that compresses well, so that the document passes the 1 MiB from
    // which it is compressed 512 KiB at a time, each piece a frame of its own. The first was
    // sealed whole (before a Zstandard save was written as it is encoded), at level 3; the
    // second is written as it is encoded, the table in a frame of raw blocks, at level 1.
    for (name, level, version) in [
        ("format3-v3-msgpack-zstd-pieces-aes.sav", 3, "3.1.0"),
        (
            "format3-v3-msgpack-zstd-pieces-streamed-aes.sav",
            1,
            "3.2.0",
        ),
    ] {
        let tmp = tempfile::tempdir()?;
        let manager = schema_v3_manager(
            tmp.path(),
            Codec::MessagePack,
            Seal::Aes,
            Compression::Zstd { level },
        )?;
        let mut snapshot: Snapshot = manager
            .snapshot()
            .with_label("fixture format 3 v3")
            .with_app_version(version)
            .with_playtime(Duration::from_secs(4000));
        snapshot.capture_memento("player", &state.player)?;
        snapshot.capture_memento("inventory", &state.inventory)?;
        snapshot.capture_memento("world", &state.world)?;
        snapshot.capture_memento("scenery", &scenery())?;
        let report = manager.save(SlotId::Numbered(1), &snapshot)?;
        write_new(&out.join(name), &std::fs::read(report.path)?)?;
    }
    Ok(())
}

/// The `scenery` memento of the Zstandard-pieces fixture: 400,000 tiles (`u32`s, each 5 bytes
/// in MessagePack), in rows of 1,000 that repeat with a twist.
fn scenery() -> Vec<u32> {
    (0..400_000u32)
        .map(|i| 0x1_0000 + (i % 1_000) * 7 + (i / 50_000))
        .collect()
}

/// Writes `path` unless it exists: fixtures are never regenerated.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path.exists() {
        println!("kept    {}", path.display());
        return Ok(());
    }
    std::fs::write(path, bytes)?;
    println!("written {}", path.display());
    Ok(())
}
