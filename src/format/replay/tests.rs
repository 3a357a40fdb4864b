//! The replay layout's unit tests: frames, metas and chunks round trip, lies are refused
//! before allocating, and the golden bytes of a start and a frames chunk.

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;

use super::chunk::{declared_len, open_chunk, seal_chunk};
use super::frames::{FRAME_REPEATS_INPUT, FramesBuf, parse_frames};
use super::meta::{EndMeta, StartMeta};
use super::*;
use crate::error::Error;
use crate::format::frame::{FileKind, Key};
use crate::format::metadata::Metadata;

fn stream(encrypted: bool) -> Stream {
    Stream {
        replay_id: 0x0123_4567_89AB_CDEF,
        codec: Codec::MessagePack,
        encrypted,
    }
}

fn start_meta() -> StartMeta {
    StartMeta {
        frame_rate: 60,
        schema_version: 2,
        input_version: 3,
        keyframe_interval: 300,
        seed: 42,
        recorded_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        metadata: Metadata {
            label: "Match 7".into(),
            app_version: "1.2.0".into(),
            ..Metadata::default()
        },
    }
}

fn sealed(
    header: &ChunkHeader,
    meta: &[u8],
    payload: &[u8],
    key: Option<(&Key, [u8; NONCE_LEN])>,
) -> Vec<u8> {
    let mut out = b"before".to_vec();
    seal_chunk(&mut out, header, meta, payload, key).unwrap();
    assert_eq!(&out[..6], b"before");
    out.split_off(6)
}

fn header(kind: ChunkKind, index: u64, frame: u64, encrypted: bool) -> ChunkHeader {
    ChunkHeader {
        format_version: FORMAT_VERSION,
        stream: stream(encrypted),
        kind,
        index,
        frame,
    }
}

#[test]
fn frames_round_trip_with_repeats_and_hashes() {
    let mut frames = FramesBuf::with_capacity(64);
    frames.push(b"ab", Some(7)).unwrap();
    frames.push(b"ab", None).unwrap();
    frames.push(b"c", Some(9)).unwrap();
    frames.push(b"c", Some(10)).unwrap();
    // flags + len + input + hash, a repeat of one byte, then two more.
    assert_eq!(
        frames.len(),
        4 + (1 + 4 + 2 + 8) + 1 + (1 + 4 + 1 + 8) + (1 + 8)
    );
    let payload = frames.payload().to_vec();
    let parsed = parse_frames(&payload).unwrap();
    let inputs: Vec<&[u8]> = parsed.iter().map(|f| &payload[f.input.clone()]).collect();
    assert_eq!(inputs, [&b"ab"[..], b"ab", b"c", b"c"]);
    let hashes: Vec<Option<u64>> = parsed.iter().map(|f| f.hash).collect();
    assert_eq!(hashes, [Some(7), None, Some(9), Some(10)]);
    frames.clear();
    assert_eq!((frames.count(), frames.len()), (0, 4));
}

#[test]
fn frames_payloads_that_lie_are_refused_before_allocating() {
    let mut lies: Vec<Vec<u8>> = vec![
        u32::MAX.to_le_bytes().to_vec(), // four billion frames in no bytes
        [1, 0, 0, 0, FRAME_REPEATS_INPUT].to_vec(), // the first frame repeats nothing
        [1, 0, 0, 0, 0x80].to_vec(),     // unknown flag
        [1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF].to_vec(), // a 4 GiB input
        [0, 0, 0, 0].to_vec(),           // no frames
    ];
    let mut trailing = FramesBuf::with_capacity(8);
    trailing.push(b"x", None).unwrap();
    let mut bytes = trailing.payload().to_vec();
    bytes.push(0);
    lies.push(bytes);
    for lie in lies {
        let err = parse_frames(&lie).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{lie:?}: {err}");
    }
}

#[test]
fn start_and_end_meta_round_trip() {
    let meta = start_meta();
    let mut decoded = StartMeta::decode(&meta.encode().unwrap()).unwrap();
    assert_eq!(decoded.metadata.saved_at, Some(meta.recorded_at));
    decoded.metadata.saved_at = None;
    assert_eq!(decoded, meta);
    let end = EndMeta {
        keyframes: 10,
        hashed_frames: 3000,
    };
    assert_eq!(EndMeta::decode(&end.encode()).unwrap(), end);
    assert!(EndMeta::decode(&[0; 15]).is_err());
}

#[test]
fn chunks_round_trip_in_the_clear_and_sealed() {
    let meta = start_meta().encode().unwrap();
    let plain = sealed(&header(ChunkKind::Start, 0, 0, false), &meta, &[], None);
    let chunk = open_chunk(plain.clone(), None).unwrap();
    assert_eq!(chunk.header, header(ChunkKind::Start, 0, 0, false));
    assert_eq!(chunk.meta(), meta);
    assert_eq!(
        declared_len(&plain, false).unwrap(),
        Some(plain.len() as u64)
    );

    #[cfg(feature = "encryption")]
    {
        let key = Key::from_bytes([5; 32]);
        let h = header(ChunkKind::Frames, 3, 600, true);
        let sealed = sealed(&h, &[], b"secret frames", Some((&key, [1; NONCE_LEN])));
        assert!(!sealed.windows(13).any(|w| w == b"secret frames"));
        let opened = open_chunk(sealed.clone(), Some(&key)).unwrap();
        assert_eq!(opened.header, h);
        assert_eq!(opened.payload().unwrap(), b"secret frames");
        assert_eq!(opened.into_payload().unwrap(), b"secret frames");
        // Without the key: the header reads, the payload does not.
        let unread = open_chunk(sealed.clone(), None).unwrap();
        assert!(matches!(unread.payload(), Err(Error::KeyRequired { .. })));
        // Every header field is associated data.
        for at in [16, 24, 32] {
            let mut forged = sealed.clone();
            forged[at] ^= 1;
            let crc_at = forged.len() - CRC_LEN;
            let crc = crc32fast::hash(&forged[..crc_at]);
            forged[crc_at..].copy_from_slice(&crc.to_le_bytes());
            assert!(matches!(
                open_chunk(forged, Some(&key)),
                Err(Error::Decrypt)
            ));
        }
    }
}

#[test]
fn save_readers_refuse_a_replay_chunk_as_malformed() {
    let meta = start_meta().encode().unwrap();
    let chunk = sealed(&header(ChunkKind::Start, 0, 0, false), &meta, &[], None);
    let err = crate::format::parse_header(&chunk, Some(chunk.len() as u64)).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    let err = crate::format::open(
        chunk,
        FileKind::Save,
        crate::format::Trust::plain(),
        u64::MAX,
        1,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
}

/// The exact bytes of a start chunk and a frames chunk with the clock and nonce fixed: a
/// change to the replay layout shows up here, and must come with a new replay format
/// version and a changelog entry.
#[cfg(feature = "encryption")]
#[test]
fn golden_chunk_bytes() {
    let key = Key::from_bytes([7; 32]);
    let meta = start_meta().encode().unwrap();
    let start = sealed(
        &header(ChunkKind::Start, 0, 0, true),
        &meta,
        &[],
        Some((&key, [9; NONCE_LEN])),
    );
    let mut frames = FramesBuf::with_capacity(16);
    frames
        .push(&[0x81, 0xa1, b'x', 0x01], Some(0xABCD))
        .unwrap();
    frames.push(&[0x81, 0xa1, b'x', 0x01], None).unwrap();
    let frames = sealed(
        &header(ChunkKind::Frames, 1, 0, true),
        &[],
        frames.payload(),
        Some((&key, [10; NONCE_LEN])),
    );
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(&start), GOLDEN_START);
    assert_eq!(hex(&frames), GOLDEN_FRAMES);
    let opened = open_chunk(frames, Some(&key)).unwrap();
    assert_eq!(parse_frames(opened.payload().unwrap()).unwrap().len(), 2);
    assert_eq!(open_chunk(start, Some(&key)).unwrap().meta(), meta);
}

#[cfg(feature = "encryption")]
const GOLDEN_START: &str = "895341560d0a1a0a0100010002030001efcdab8967452301000000000000000000000000000000003e00000010000000000000003c00000002000000030000002c0100002a000000000000007b68e5cf8b010000000000000000000007004d6174636820370500312e322e3000000000000009090909090909090909090928afb7cc6a55b73d59bc3d75f374a632a10457c4";
#[cfg(feature = "encryption")]
const GOLDEN_FRAMES: &str = "895341560d0a1a0a0100010002030002efcdab8967452301010000000000000000000000000000000000000026000000000000000a0a0a0a0a0a0a0a0a0a0a0a379e3727dea0d5bb79641b03beb8008b367d3389b5c9ad7732aa52b84990768476a7883c8732b0c07d05";

proptest! {
    /// Any bytes behind a frames payload's count: a list of frames or a typed error.
    #[test]
    fn parsing_any_frames_payload_never_panics(
        count in 0u32..40,
        tail in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = count.to_le_bytes().to_vec();
        bytes.extend_from_slice(&tail);
        if let Ok(frames) = parse_frames(&bytes) {
            prop_assert_eq!(frames.len(), count as usize);
            for f in frames {
                prop_assert!(f.input.end <= bytes.len());
            }
        }
    }
}
