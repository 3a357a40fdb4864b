//! Replay memory (issue 5 "Memory"; RELIABILITY.md S6 applied to replays): recording a long
//! match keeps one chunk of frames and one keyframe in memory, whatever the match's length;
//! lengths in a replay file that lie are refused before anything is allocated for them; a file
//! over the size cap is refused before it is read.
//!
//! Heap use is measured with a counting global allocator. Set `SAVEGAME_REPLAY_LONG_FRAMES` to
//! record a longer match (the default is an hour at 60 fps).

mod common;

use std::ops::Range;
use std::path::Path;
use std::sync::Mutex;

use common::{fix_crc_in, key};
use savegame::format::parse_header;
use savegame::replay::{DEFAULT_CHUNK_SIZE, MAX_CHUNK_LEN, Player, Recorder};
use savegame::{Codec, Error, SaveState, Snapshot};
use savegame_testkit::Counting;
use savegame_testkit::sim;
use sim::{Sim, scripted_input};

#[global_allocator]
static ALLOC: Counting = Counting::new();

/// Tests that measure memory take turns.
static MEASURING: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;
const SEED: u64 = 77;

/// A folder on a memory file system where there is one (fsync costs nothing there, and the
/// page cache is not the heap), else the usual temporary folder.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().unwrap()
}

/// What recording a match of `frames` frames cost.
struct Recording {
    peak: usize,
    file_len: u64,
    keyframes: u64,
}

/// Records `frames` frames of a 300-body match (keyframes every 300 frames, a state hash every
/// frame, encrypted) into a real file. Only the match clock moves, so that the test measures
/// the recorder rather than the physics.
fn record_long(dir: &Path, frames: u64) -> Recording {
    let path = dir.join(format!("long-{frames}.replay"));
    let mut sim = Sim::new(SEED, 300);
    let mut keyframes = 0;
    let peak = ALLOC.peak_during(|| {
        let mut recorder = Recorder::builder()
            .key(key())
            .keyframe_every(300)
            .create(&path)
            .unwrap();
        for frame in 0..frames {
            if recorder.keyframe_due() {
                let mut keyframe = recorder.snapshot();
                sim.capture_state(&mut keyframe).unwrap();
                recorder.keyframe(&keyframe).unwrap();
            }
            sim.clock.frame += 1;
            let hash = frame.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            recorder
                .frame(&scripted_input(SEED, frame), Some(hash))
                .unwrap();
        }
        keyframes = recorder.finish().unwrap().keyframe_count().unwrap();
    });
    Recording {
        peak,
        file_len: std::fs::metadata(&path).unwrap().len(),
        keyframes,
    }
}

#[test]
fn recording_a_long_match_keeps_one_chunk_and_one_keyframe_in_memory() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let long_frames: u64 = std::env::var("SAVEGAME_REPLAY_LONG_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60 * 60 * 60);
    let mut keyframe = Snapshot::new(Codec::MessagePack);
    Sim::new(SEED, 300).capture_state(&mut keyframe).unwrap();
    let keyframe_len = keyframe.encoded_len();
    drop(keyframe);

    let dir = scratch_dir();
    let short = record_long(dir.path(), 3_000);
    let long = record_long(dir.path(), long_frames);
    assert_eq!(long.keyframes, long_frames.div_ceil(300));
    // One chunk of frames (and its sealed copy), two more in flight to the writer thread,
    // one keyframe (the snapshot, the save file it becomes, the chunk it is sealed into), and
    // small change.
    let bound = 4 * DEFAULT_CHUNK_SIZE + 4 * keyframe_len + 64 * 1024;
    eprintln!(
        "recording {long_frames} frames ({} keyframes of {keyframe_len} bytes) into a {}-byte \
         file peaked at {} bytes of heap (3,000 frames: {}); bound {bound}",
        long.keyframes, long.file_len, long.peak, short.peak
    );
    assert!(long.peak <= bound, "peak {} over {bound}", long.peak);
    // Growth with the match would be megabytes over 216,000 frames. One chunk is the slack:
    // how many chunks are in flight to the writer thread at the peak depends on the disk's
    // pace in each run (a busy machine's fsyncs are slower), not on the match's length.
    assert!(
        long.peak <= short.peak + DEFAULT_CHUNK_SIZE + 16 * 1024,
        "memory grew with the match: {} for {long_frames} frames, {} for 3,000",
        long.peak,
        short.peak
    );
    assert!(
        long.file_len > 10 * long.peak as u64,
        "the file ({} bytes) would fit in memory anyway",
        long.file_len
    );
}

/// The chunks of a replay file by the lengths in their headers (`docs/format.md`), with their
/// kind byte.
fn chunks(bytes: &[u8]) -> Vec<(u8, Range<usize>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 52 <= bytes.len() {
        let meta = u32::from_le_bytes(bytes[at + 40..at + 44].try_into().unwrap()) as usize;
        let payload = u64::from_le_bytes(bytes[at + 44..at + 52].try_into().unwrap()) as usize;
        let end = at + 52 + meta + payload + 4;
        out.push((bytes[at + 15], at..end));
        at = end;
    }
    out
}

/// A small plain replay, whose payloads a test can edit.
fn plain_replay(dir: &Path) -> Vec<u8> {
    let path = dir.join("plain.replay");
    let mut recorder = Recorder::builder()
        .keyframe_every(10)
        .chunk_size(128)
        .create(&path)
        .unwrap();
    sim::record_match(&mut recorder, SEED, 3, 30).unwrap();
    recorder.finish().unwrap();
    std::fs::read(path).unwrap()
}

/// A length in a file replaced by a lie, the CRCs recomputed over it, and what must happen.
struct Lie {
    what: &'static str,
    at: usize,
    value: Vec<u8>,
    crcs: Vec<Range<usize>>,
    cut_short: bool,
}

#[test]
fn lengths_that_lie_are_refused_before_allocation() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir();
    let clean = plain_replay(dir.path());
    let chunks = chunks(&clean);
    let start = chunks[0].1.clone();
    let (_, frames) = chunks.iter().find(|(kind, _)| *kind == 2).unwrap().clone();
    let (_, keyframe) = chunks.iter().find(|(kind, _)| *kind == 3).unwrap().clone();
    let save = keyframe.start + 52..keyframe.end - 4;
    let save_body = save.start
        + parse_header(&clean[save.clone()], None)
            .unwrap()
            .sections()
            .payload
            .start as usize;

    let big32 = u32::MAX.to_le_bytes().to_vec();
    let big64 = (u64::MAX / 2).to_le_bytes().to_vec();
    let lie = |what, at, value: &Vec<u8>, crcs: &[&Range<usize>], cut_short| Lie {
        what,
        at,
        value: value.clone(),
        crcs: crcs.iter().map(|r| (*r).clone()).collect(),
        cut_short,
    };
    let lies = [
        lie("start meta length", start.start + 40, &big32, &[], false),
        lie("start payload length", start.start + 44, &big64, &[], false),
        // A chunk that claims to run past the end of the file reads as torn.
        lie(
            "frames payload length",
            frames.start + 44,
            &big64,
            &[],
            true,
        ),
        lie("frame count", frames.start + 52, &big32, &[&frames], false),
        lie("input length", frames.start + 57, &big32, &[&frames], false),
        lie(
            "keyframe contents",
            save_body,
            &big32,
            &[&save, &keyframe],
            false,
        ),
        lie(
            "keyframe save length",
            save.start + 44,
            &big64,
            &[&save, &keyframe],
            false,
        ),
    ];
    for Lie {
        what,
        at,
        value,
        crcs,
        cut_short,
    } in lies
    {
        let mut bytes = clean.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        for range in crcs {
            fix_crc_in(&mut bytes, range);
        }
        let path = dir.path().join("lie.replay");
        std::fs::write(&path, &bytes).unwrap();
        drop(bytes);
        let mut result = None;
        let peak = ALLOC.peak_during(|| result = Some(Player::builder().open(&path)));
        match result.unwrap() {
            Ok(player) => {
                assert!(cut_short, "{what}: opened");
                assert!(!player.status().is_complete(), "{what}");
            }
            Err(e) => {
                assert!(!cut_short, "{what}: {e}");
                assert!(matches!(e, Error::Malformed { .. }), "{what}: {e}");
            }
        }
        assert!(peak < 2 * MIB, "{what}: peak {peak}");
    }
}

#[test]
fn huge_files_and_chunks_are_refused_before_they_are_read() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir();
    let clean = plain_replay(dir.path());
    let start_len = chunks(&clean)[0].1.end;

    // A start chunk, then a chunk header claiming more than a chunk may hold, in a sparse
    // 300 MiB file.
    let path = dir.path().join("huge.replay");
    let mut bytes = clean[..start_len + 52].to_vec();
    let claim = MAX_CHUNK_LEN + 1;
    bytes[start_len + 44..start_len + 52].copy_from_slice(&claim.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(300 << 20).unwrap();
    drop(file);
    let mut result = None;
    let peak = ALLOC.peak_during(|| result = Some(Player::builder().open(&path)));
    match result.unwrap() {
        Err(Error::TooLarge { size, limit, .. }) => {
            assert_eq!((size, limit), (claim + 52 + 4, MAX_CHUNK_LEN));
        }
        other => panic!("{other:?}"),
    }
    assert!(peak < 2 * MIB, "peak {peak}");

    // The same file under a size cap: refused before any chunk after the start is read.
    let mut result = None;
    let peak = ALLOC.peak_during(|| {
        result = Some(Player::builder().max_file_size(1 << 20).open(&path));
    });
    match result.unwrap() {
        Err(Error::TooLarge { size, limit, .. }) => assert_eq!((size, limit), (300 << 20, 1 << 20)),
        other => panic!("{other:?}"),
    }
    assert!(peak < MIB, "peak {peak}");
}
