//! Replay integrity (RELIABILITY.md S1, S2, S4, S7 applied to replays): bit flips, truncation
//! at every length, trailing bytes, chunks reordered, dropped, duplicated, relabelled or
//! spliced in from another recording, and mutated files, never panic and never play a frame
//! that was not recorded.
//!
//! A replay is append-only and crash-tolerant, so damage confined to its end (where a crash
//! during the last write leaves it) opens as a replay cut short that plays up to the damage;
//! damage anywhere before is a typed error. Either way, what plays is exactly what was
//! recorded, and a damaged replay never reads as complete.

mod common;

use std::ops::Range;

use common::{fix_crc_in, key};
use proptest::prelude::*;
use savegame::replay::{Player, Recorder, ReplayHeader, ReplayStatus};
use savegame::storage::{MemoryStorage, Storage};
use savegame::{Codec, Error};
use savegame_testkit::sim;
use sim::{Input, Sim};

const NAME: &str = "match.replay";
const SEED: u64 = 5;
const BODIES: usize = 1;
const FRAMES: u64 = 16;

/// A small recording of the scripted match: frames and keyframe chunks between a start and an
/// end chunk.
fn small_replay(codec: Codec, encrypted: bool, seed: u64) -> Vec<u8> {
    let storage = MemoryStorage::new();
    let builder = Recorder::builder()
        .codec(codec)
        .seed(seed)
        .keyframe_every(8)
        .chunk_size(64)
        .label("integrity");
    let builder = if encrypted {
        builder.key(key())
    } else {
        builder
    };
    let mut recorder = builder.create_in(storage.clone(), NAME).unwrap();
    sim::record_match(&mut recorder, seed, BODIES, FRAMES).unwrap();
    recorder.finish().unwrap();
    storage.get(NAME).unwrap()
}

/// The chunks of a replay file, by the lengths in their headers (`docs/format.md`).
fn chunks(bytes: &[u8], encrypted: bool) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 52 <= bytes.len() {
        let meta = u32::from_le_bytes(bytes[at + 40..at + 44].try_into().unwrap()) as usize;
        let payload = u64::from_le_bytes(bytes[at + 44..at + 52].try_into().unwrap()) as usize;
        let end = at + 52 + meta + if encrypted { 12 } else { 0 } + payload + 4;
        if end > bytes.len() {
            break;
        }
        out.push(at..end);
        at = end;
    }
    out
}

fn open(bytes: Vec<u8>, encrypted: bool) -> savegame::Result<Player> {
    let storage = MemoryStorage::new();
    storage.put(NAME, &bytes).unwrap();
    let builder = Player::builder();
    let builder = if encrypted {
        builder.key(key())
    } else {
        builder
    };
    builder.open_in(storage, NAME)
}

/// What a damaged replay may do: refuse with a typed error, or open cut short and play only
/// frames that were recorded, as recorded.
fn check_damaged(result: savegame::Result<Player>, what: &str) -> Option<u64> {
    let mut player = match result {
        Err(e) => {
            assert!(
                e.is_corruption()
                    || matches!(
                        e,
                        Error::Decrypt
                            | Error::UnsupportedFormat { .. }
                            | Error::UnknownFlags { .. }
                            | Error::UnknownCodec { .. }
                            | Error::WrongFileKind { .. }
                    ),
                "{what}: {e}"
            );
            return None;
        }
        Ok(player) => player,
    };
    assert!(
        matches!(player.status(), ReplayStatus::CutShort { .. }),
        "{what}: a damaged replay reads as complete"
    );
    check_frames(&mut player, what);
    Some(player.frame_count())
}

/// The states of the scripted match.
fn straight() -> &'static [u64] {
    static HASHES: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    HASHES.get_or_init(|| sim::straight_hashes(SEED, BODIES, FRAMES))
}

/// Every frame that plays is the recorded one, and every keyframe restores.
fn check_frames(player: &mut Player, what: &str) {
    let straight = straight();
    for n in 0..player.frame_count() {
        let frame = player.frame::<Input>(n).unwrap();
        assert_eq!(
            frame.input,
            sim::scripted_input(SEED, n),
            "{what}: frame {n}"
        );
        assert_eq!(frame.state_hash, Some(straight[n as usize + 1]), "{what}");
    }
    let keyframes: Vec<u64> = player.keyframes().collect();
    for k in keyframes {
        let mut sim = Sim::new(0, 0);
        player.seek(&mut sim, k).unwrap();
        assert_eq!(sim.hash(), straight[k as usize], "{what}: keyframe {k}");
    }
}

#[test]
fn the_small_replay_is_what_it_should_be() {
    for encrypted in [false, true] {
        let bytes = small_replay(Codec::MessagePack, encrypted, SEED);
        let chunks = chunks(&bytes, encrypted);
        assert_eq!(chunks.last().unwrap().end, bytes.len());
        assert!(chunks.len() >= 6, "{} chunks", chunks.len());
        eprintln!(
            "SIZE {} bytes, {} chunks: {:?}",
            bytes.len(),
            chunks.len(),
            chunks
        );
        let mut player = open(bytes, encrypted).unwrap();
        assert_eq!(player.status(), &ReplayStatus::Complete);
        assert_eq!((player.frame_count(), player.keyframe_count()), (FRAMES, 2));
        check_frames(&mut player, "clean");
    }
}

#[test]
fn every_single_bit_flip_is_refused_or_cuts_the_replay_short_at_its_last_chunk() {
    let clean = small_replay(Codec::MessagePack, true, SEED);
    let chunks = chunks(&clean, true);
    let (start, last) = (chunks[0].clone(), chunks[chunks.len() - 1].clone());
    let mut cut = 0;
    for bit in 0..clean.len() * 8 {
        let mut bytes = clean.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let byte = bit / 8;
        let result = open(bytes, true);
        let in_lengths = chunks
            .iter()
            .any(|c| (c.start + 40..c.start + 52).contains(&byte));
        if start.contains(&byte) {
            assert!(result.is_err(), "bit {bit}: a damaged start chunk opened");
        } else if !last.contains(&byte) && !in_lengths {
            // Damage before the last chunk, elsewhere than a length field, is an error.
            let err = result.unwrap_err();
            assert!(err.is_corruption(), "bit {bit}: {err}");
            continue;
        }
        if check_damaged(result, &format!("bit {bit}")).is_some() {
            cut += 1;
        }
    }
    // Flips in the end chunk cut the replay short, with every frame still playing.
    assert!(
        cut >= (last.len() - 8) * 8,
        "{cut} flips cut the replay short"
    );
}

#[test]
fn edits_with_the_crc_recomputed_fail_the_tag_or_the_order_checks() {
    let clean = small_replay(Codec::MessagePack, true, SEED);
    let chunks = chunks(&clean, true);
    for chunk in &chunks {
        for byte in chunk.start + 8..chunk.end - 4 {
            for mask in [0x01, 0x80] {
                let mut bytes = clean.clone();
                bytes[byte] ^= mask;
                fix_crc_in(&mut bytes, chunk.clone());
                let what = format!("byte {byte} ^ {mask:#x}");
                // The lengths, and the start chunk's flags (whose encrypted bit says whether
                // a nonce is there), say where the chunk ends: an edit there moves the CRC.
                let in_lengths = (chunk.start + 40..chunk.start + 52).contains(&byte)
                    || (chunk.start == 0 && (10..12).contains(&byte));
                let result = open(bytes, true);
                if !in_lengths {
                    // Any other edit of a header, meta, nonce, payload or tag: the tag (the
                    // header is associated data) or a check before it refuses the file.
                    let err = result.err().unwrap_or_else(|| panic!("{what} opened"));
                    assert!(
                        !matches!(err, Error::ChecksumMismatch { .. }),
                        "{what}: {err}"
                    );
                }
                check_damaged(open_again(&clean, byte, mask, chunk), &what);
            }
        }
    }
}

fn open_again(
    clean: &[u8],
    byte: usize,
    mask: u8,
    chunk: &Range<usize>,
) -> savegame::Result<Player> {
    let mut bytes = clean.to_vec();
    bytes[byte] ^= mask;
    fix_crc_in(&mut bytes, chunk.clone());
    open(bytes, true)
}

#[test]
fn truncation_at_every_length_cuts_the_replay_short_and_trailing_bytes_are_refused() {
    for encrypted in [false, true] {
        let clean = small_replay(Codec::MessagePack, encrypted, SEED);
        let chunks = chunks(&clean, encrypted);
        let end_chunk = chunks.last().unwrap().clone();
        let mut previous = 0;
        for len in 0..clean.len() {
            let result = open(clean[..len].to_vec(), encrypted);
            if len < chunks[0].end {
                let err = result.unwrap_err();
                assert!(err.is_corruption(), "truncated to {len}: {err}");
                continue;
            }
            let frames = check_damaged(result, &format!("truncated to {len}"))
                .unwrap_or_else(|| panic!("truncated to {len}: a whole start chunk, yet refused"));
            assert!(frames >= previous, "truncated to {len}");
            previous = frames;
            if len >= end_chunk.start {
                assert_eq!(frames, FRAMES, "only the end chunk is missing");
            }
            // The header reads, without totals.
            let storage = MemoryStorage::new();
            storage.put(NAME, &clean[..len]).unwrap();
            let header = ReplayHeader::read_in(&storage, NAME, None).unwrap();
            assert_eq!(header.totals, None, "truncated to {len}");
        }
        let extras: [&[u8]; 4] = [&[0], &[0xFF; 3], &clean[end_chunk.clone()], &[0; 10_000]];
        for extra in extras {
            let mut bytes = clean.clone();
            bytes.extend_from_slice(extra);
            let err = open(bytes, encrypted).unwrap_err();
            assert!(
                matches!(err, Error::Malformed { .. }),
                "{} bytes: {err}",
                extra.len()
            );
        }
        assert!(open(clean, encrypted).unwrap().status().is_complete());
    }
}

#[test]
fn chunks_reordered_dropped_duplicated_relabelled_or_from_another_recording_are_refused() {
    let clean = small_replay(Codec::MessagePack, true, SEED);
    let other = small_replay(Codec::MessagePack, true, SEED);
    assert_ne!(clean, other);
    let chunks = chunks(&clean, true);
    let other_chunks = self::chunks(&other, true);
    assert_eq!(chunks, other_chunks, "same settings, same layout");
    let n = chunks.len();
    let join = |order: &[&[u8]]| order.concat();
    let c = |i: usize| &clean[chunks[i].clone()];

    let swapped: Vec<&[u8]> = (0..n)
        .map(|i| {
            c(if i == 2 {
                3
            } else if i == 3 {
                2
            } else {
                i
            })
        })
        .collect();
    let dropped: Vec<&[u8]> = (0..n).filter(|&i| i != 2).map(c).collect();
    let duplicated: Vec<&[u8]> = (0..n)
        .flat_map(|i| if i == 2 { vec![c(i), c(i)] } else { vec![c(i)] })
        .collect();
    let spliced: Vec<&[u8]> = (0..n)
        .map(|i| {
            if i == 2 {
                &other[other_chunks[2].clone()]
            } else {
                c(i)
            }
        })
        .collect();
    let end_moved: Vec<&[u8]> = (0..n - 1).map(c).chain([c(n - 1), c(n - 2)]).collect();
    for (what, bytes) in [
        ("two chunks swapped", join(&swapped)),
        ("a chunk dropped", join(&dropped)),
        ("a chunk duplicated", join(&duplicated)),
        ("a chunk of another recording", join(&spliced)),
        ("a chunk after the end", join(&end_moved)),
    ] {
        let err = open(bytes, true).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{what}: {err}");
    }
    // Relabelling a chunk (its index, or its frame) breaks its tag.
    for field in [24, 32] {
        let mut bytes = clean.clone();
        bytes[chunks[2].start + field] ^= 1;
        fix_crc_in(&mut bytes, chunks[2].clone());
        assert!(
            matches!(open(bytes, true), Err(Error::Decrypt)),
            "field {field}"
        );
    }
    // Dropping the end chunk is a truncation: the replay says it was cut short.
    let no_end: Vec<&[u8]> = (0..n - 1).map(c).collect();
    let player = open(join(&no_end), true).unwrap();
    assert!(!player.status().is_complete());
    assert_eq!(player.frame_count(), FRAMES);
}

/// An edit of a file: a bit flip, or a splice that replaces `remove` bytes at `at` with
/// `insert`, or with as many bytes copied from elsewhere in the file (truncation, insertion,
/// removal and duplication are all splices).
#[derive(Debug, Clone)]
enum Edit {
    Flip {
        at: usize,
        bit: u8,
    },
    Splice {
        at: usize,
        remove: usize,
        insert: Vec<u8>,
        copy_from: Option<usize>,
    },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..8u8).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        (
            any::<usize>(),
            prop_oneof![0..64usize, Just(usize::MAX)],
            proptest::collection::vec(any::<u8>(), 0..24),
            proptest::option::of(any::<usize>()),
        )
            .prop_map(|(at, remove, insert, copy_from)| Edit::Splice {
                at,
                remove,
                insert,
                copy_from,
            }),
    ]
}

impl Edit {
    fn apply(&self, bytes: &mut Vec<u8>) {
        let n = bytes.len();
        if n == 0 {
            return;
        }
        match self {
            Edit::Flip { at, bit } => bytes[at % n] ^= 1 << bit,
            Edit::Splice {
                at,
                remove,
                insert,
                copy_from,
            } => {
                let at = at % n;
                let end = at.saturating_add(*remove).min(n);
                let insert = match copy_from {
                    Some(from) => {
                        let from = from % n;
                        bytes[from..(from + insert.len()).min(n)].to_vec()
                    }
                    None => insert.clone(),
                };
                bytes.splice(at..end, insert);
            }
        }
    }
}

/// Opens `bytes` and does everything a game or a tool could with it: any result but a panic.
fn use_anything(bytes: Vec<u8>, encrypted: bool) {
    let storage = MemoryStorage::new();
    storage.put(NAME, &bytes).unwrap();
    let _ = ReplayHeader::read_in(&storage, NAME, None);
    let _ = ReplayHeader::read_in(&storage, NAME, Some(&key()));
    let builder = Player::builder().allow_unencrypted(true);
    let builder = if encrypted {
        builder.key(key())
    } else {
        builder
    };
    if let Ok(mut player) = builder.open_in(storage, NAME) {
        for n in 0..player.frame_count().min(64) {
            let _ = player.frame::<Input>(n);
            let _ = player.frame::<serde_json::Value>(n);
        }
        // Restore keyframes, but step no hostile input through the simulation's arithmetic:
        // the game's own code is not what this test is about.
        let keyframes: Vec<u64> = player.keyframes().collect();
        for k in keyframes {
            let _ = player.seek(&mut Sim::new(0, 0), k);
        }
        let _ = player.tick(std::time::Duration::from_secs(1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Mutated replays, with every chunk's CRC recomputed half the time so that the mutations
    /// reach the header, meta, frames and keyframe parsers: never a panic.
    #[test]
    fn mutated_replays_never_panic(
        which in 0..4usize,
        edits in proptest::collection::vec(edit(), 1..5),
        recompute_crcs in any::<bool>(),
    ) {
        let (codec, encrypted) = [
            (Codec::MessagePack, false),
            (Codec::MessagePack, true),
            (Codec::Json, false),
            (Codec::Json, true),
        ][which];
        let mut bytes = small_replay(codec, encrypted, SEED);
        for e in &edits {
            e.apply(&mut bytes);
        }
        if recompute_crcs {
            for chunk in chunks(&bytes, encrypted) {
                fix_crc_in(&mut bytes, chunk);
            }
        }
        use_anything(bytes, encrypted);
    }

    /// Random bytes behind a replay chunk's first 16 bytes: never a panic.
    #[test]
    fn random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let clean = small_replay(Codec::MessagePack, false, SEED);
        let mut bytes = clean[..16].to_vec();
        bytes.extend_from_slice(&tail);
        use_anything(bytes.clone(), false);
        if bytes.len() >= 56 {
            let len = bytes.len();
            fix_crc_in(&mut bytes, 0..len);
        }
        use_anything(bytes, false);
    }
}
