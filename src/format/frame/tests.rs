//! The frame's unit tests: golden bytes, round trips under every protection and compression,
//! and the refusal of every field that cannot be trusted.

use std::time::{Duration, UNIX_EPOCH};

use super::crc::{CRC_PIECE, CrcCheck, check_crc};
use super::header::{parse_header, record_len};
use super::open::open;
use super::seal::{Protect, SealParams, seal};
use super::toc::toc_entry_fixed;
use super::*;
use crate::error::{Error, Result};
use crate::format::bytes::{millis_to_system_time, read_u16, read_u32, system_time_to_millis};
use crate::format::segments;
use crate::format::trust::Trust;
#[cfg(feature = "integrity")]
use crate::protection::KeyPurpose;

mod compression;

fn metadata() -> Metadata {
    let mut m = Metadata {
        label: "Level 3".into(),
        playtime: Duration::from_millis(3_723_004),
        app_version: "1.4.2".into(),
        thumbnail: Some(vec![1, 2, 3]),
        ..Metadata::default()
    };
    m.user.insert("chapter".into(), "2".into());
    m
}

pub(super) fn params<'a>(m: &'a Metadata, protect: Protect<'a>) -> SealParams<'a> {
    SealParams {
        format_version: FORMAT_VERSION,
        codec: Codec::Json,
        kind: FileKind::Save,
        slot: SlotId::Numbered(3),
        schema_version: 7,
        generation: 2,
        saved_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        metadata: m,
        protect,
        compression: Compression::None,
        delta: None,
        threads: 2,
    }
}

/// [`params`] for a file of format version 2.
fn params_v2<'a>(m: &'a Metadata, protect: Protect<'a>) -> SealParams<'a> {
    SealParams {
        format_version: FORMAT_VERSION_2,
        ..params(m, protect)
    }
}

/// [`params`] for a file of format version 1.
fn params_v1<'a>(m: &'a Metadata, protect: Protect<'a>) -> SealParams<'a> {
    SealParams {
        format_version: 1,
        ..params(m, protect)
    }
}

const ENTRIES: [(&str, u32, &[u8]); 2] = [
    ("player", DEFAULT_MEMENTO_VERSION, b"{\"hp\":9}"),
    ("world", DEFAULT_MEMENTO_VERSION, b"[1,2]"),
];
/// The same mementos at versions of their own.
const ENTRIES_V2: [(&str, u32, &[u8]); 2] = [("player", 1, b"{\"hp\":9}"), ("world", 3, b"[1,2]")];

pub(super) fn fix_crc(bytes: &mut [u8]) {
    let at = bytes.len() - CRC_LEN;
    let crc = crc32fast::hash(&bytes[..at]);
    bytes[at..].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn unencrypted_json_files_are_readable_text_after_the_header() {
    let m = metadata();
    let bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains(r#"{"player":{"hp":9},"world":[1,2]}"#),
        "{text}"
    );
    let opened = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap();
    let found: Vec<(&str, u32, &[u8])> = opened
        .toc
        .iter()
        .map(|e| (e.id.as_str(), e.version, &opened.buf[e.range.clone()]))
        .collect();
    assert_eq!(found, ENTRIES);
    assert_eq!(opened.header.metadata.label, "Level 3");
    assert_eq!(opened.header.schema_version, 7);
    assert_eq!(opened.header.generation, 2);
    assert_eq!(opened.header.slot, SlotId::Numbered(3));
}

/// The exact bytes of one file, with the clock and nonce fixed: any change to the format
/// shows up here, and must come with a format version and a changelog entry.
#[cfg(feature = "encryption")]
#[test]
fn golden_file_bytes() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let bytes = seal(
        &params_v1(&m, Protect::Encrypted(&key, [9; NONCE_LEN])),
        &ENTRIES,
    )
    .unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN);
    let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
    assert_eq!(opened.toc.len(), 2);
}

#[cfg(feature = "encryption")]
const GOLDEN: &str = "895341560d0a1a0a0100010001010100030000000700000002000000000000007b68e5cf8b0100002f0000006400000000000000fcce38000000000007004c6576656c20330500312e342e32010007006368617074657201000000320300000001020309090909090909090909090925858494b8f0b10dc11bae4aeceaa3dfd4b063f33ceef7c06fae46a6d0747615a18983d8e2522a107fb3a5134434e3d47c549eef30e4c22f1c0a73b56c6d58e61c5db237f40aced4b792a5109dd3dfc431db966b92df5364c4c1fe070b78e2db5eee7855f682f4fd";

/// The exact bytes of the same file at format version 2, encrypted, its mementos at
/// versions 1 and 3: one segment (flag bit 4, segment size 2^18 in byte 15), its tag after
/// the ciphertext.
#[cfg(feature = "encryption")]
#[test]
fn golden_file_bytes_v2() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let bytes = seal(
        &params_v2(&m, Protect::Encrypted(&key, [9; NONCE_LEN])),
        &ENTRIES_V2,
    )
    .unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_V2_SEGMENTED);
    assert_eq!(read_u16(&bytes, OFF_FLAGS), FLAG_ENCRYPTED | FLAG_SEGMENTED);
    assert_eq!(bytes[OFF_RESERVED], 18);
    for version in [GOLDEN_V2_SEGMENTED, GOLDEN_V2] {
        let bytes: Vec<u8> = (0..version.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&version[i..i + 2], 16).unwrap())
            .collect();
        let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
        let versions: Vec<(&str, u32)> = opened
            .toc
            .iter()
            .map(|e| (e.id.as_str(), e.version))
            .collect();
        assert_eq!(versions, [("player", 1), ("world", 3)]);
    }
}

/// The exact bytes of the same file at format version 3: as at version 2 but for the version
/// field and the segment's associated data (the header with its payload length read as zero):
/// the ciphertext is the same, its tag and the CRC differ.
#[cfg(feature = "encryption")]
#[test]
fn golden_file_bytes_v3() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let protect = Protect::Encrypted(&key, [9; NONCE_LEN]);
    let bytes = seal(&params(&m, protect), &ENTRIES_V2).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_V3_SEGMENTED);
    let v2 = seal(&params_v2(&m, protect), &ENTRIES_V2).unwrap();
    assert_eq!(bytes.len(), v2.len());
    assert_eq!(read_u16(&bytes, OFF_VERSION), 3);
    // The same header but for the version, and the same metadata and nonce.
    let start = HEADER_LEN + crate::format::metadata::encoded_metadata_len(&m) + NONCE_LEN;
    assert_eq!(bytes[OFF_FLAGS..start], v2[OFF_FLAGS..start]);
    let bytes: Vec<u8> = (0..GOLDEN_V3_SEGMENTED.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&GOLDEN_V3_SEGMENTED[i..i + 2], 16).unwrap())
        .collect();
    let opened = open(
        bytes.clone(),
        FileKind::Save,
        Trust::keyed(&key),
        u64::MAX,
        2,
    )
    .unwrap();
    assert_eq!(opened.toc.len(), 2);
    // Its tag does not open as a version-2 file's: the associated data differs.
    let mut as_v2 = bytes;
    as_v2[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&2u16.to_le_bytes());
    fix_crc(&mut as_v2);
    let err = open(as_v2, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap_err();
    assert!(matches!(err, Error::Decrypt), "{err}");
}

#[cfg(feature = "encryption")]
const GOLDEN_V3_SEGMENTED: &str = "895341560d0a1a0a0300110001010112030000000700000002000000000000007b68e5cf8b0100002f0000006c00000000000000fcce38000000000007004c6576656c20330500312e342e3201000700636861707465720100000032030000000102030909090909090909090909093360ed07036863e8c92c4d9f4099acc270733928983b95676c948dd63e7f88dc7aa6e74de71bde7a0dfeef2649df58f393771737af2839eb8468fc6235fcd85a8f159e6830d2aeb9585a1a60dab9f3bbf4ceac639636890237518c07665842f7c54c36e12a4635241b8df888b2e6243d";

/// What format version 2 wrote before segmented encryption: the body as one AES-GCM
/// message, byte 15 zero. Such files load forever.
#[cfg(feature = "encryption")]
const GOLDEN_V2: &str = "895341560d0a1a0a0200010001010100030000000700000002000000000000007b68e5cf8b0100002f0000006c00000000000000fcce38000000000007004c6576656c20330500312e342e32010007006368617074657201000000320300000001020309090909090909090909090925858494b8f0b10dc11bae4ae7eaa3dfdeb063f334eef7c067ae46a6d574017ad6e590ac903e4e137fb3a50d4434e3d47c549e911294ae4e656f01ec746616ef151afa2cb35dcecba8c2f34dc2c5a682729ba772893d9f8c518d0bfb3b31360aa32b6e44daba31004f3ee852be5a33bd";

#[cfg(feature = "encryption")]
const GOLDEN_V2_SEGMENTED: &str = "895341560d0a1a0a0200110001010112030000000700000002000000000000007b68e5cf8b0100002f0000006c00000000000000fcce38000000000007004c6576656c20330500312e342e3201000700636861707465720100000032030000000102030909090909090909090909093360ed07036863e8c92c4d9f4099acc270733928983b95676c948dd63e7f88dc7aa6e74de71bde7a0dfeef2649df58f393771737af2839eb8468fc6235fcd85a8f159e6830d2aeb9585a1a60dab9f3bbf4ceac639636890237518c0707093ecd9ae08e69d108ee73fa3ee89af29c4422";

/// The exact bytes of an integrity-only file: readable, its tag at the end of the payload.
#[cfg(feature = "integrity")]
#[test]
fn golden_file_bytes_v2_authenticated() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let bytes = seal(&params_v2(&m, Protect::Authenticated(&key)), &ENTRIES_V2).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_V2_AUTHENTICATED);
    assert!(String::from_utf8_lossy(&bytes).contains(r#"{"player":{"hp":9},"world":[1,2]}"#));
    let opened = open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap();
    assert!(opened.header.authenticated && !opened.header.encrypted);
    assert_eq!(opened.header.protection(), Protection::Authenticated);
    assert_eq!(opened.toc[1].version, 3);
}

#[cfg(feature = "integrity")]
const GOLDEN_V2_AUTHENTICATED: &str = "895341560d0a1a0a0200020001010100030000000700000002000000000000007b68e5cf8b0100002f0000007c00000000000000fcce38000000000007004c6576656c20330500312e342e320100070063686170746572010000003203000000010203020000000600706c61796572010000000a0000000000000008000000000000000500776f726c64030000001b0000000000000005000000000000007b22706c61796572223a7b226870223a397d2c22776f726c64223a5b312c325d7dfb0a6a970ea1f903fd871882a7586e91240e9952b0b1c1ae7577cfa995ed56ea166b0010";

/// Every byte of an integrity-only file's header, metadata, body and tag is covered: an
/// edit with a recomputed CRC is refused, as tampered where the structure still parses.
#[cfg(feature = "integrity")]
#[test]
fn every_edit_of_an_authenticated_file_with_a_fixed_crc_is_refused() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let clean = seal(&params(&m, Protect::Authenticated(&key)), &ENTRIES_V2).unwrap();
    let body_start = HEADER_LEN + encoded_metadata_len(&m);
    for at in 0..clean.len() - CRC_LEN {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x01;
        fix_crc(&mut bytes);
        match open(bytes, FileKind::Save, Trust::keyed(&key), u64::MAX, 2) {
            Err(Error::Tampered) => {}
            // The flag bit itself: the file now says it is plain, and a manager with a key
            // refuses plain files (NotEncrypted); the format alone cannot know.
            Ok(opened) if at == OFF_FLAGS => assert!(!opened.header.authenticated),
            Err(e) if at < body_start => {
                assert!(!matches!(e, Error::ChecksumMismatch { .. }), "{e}")
            }
            other => panic!("a flip at byte {at}: {other:?}"),
        }
    }
    let other = Key::from_bytes([8; 32]);
    assert!(matches!(
        open(
            clean.clone(),
            FileKind::Save,
            Trust::authenticated(&other),
            u64::MAX,
            2
        ),
        Err(Error::Tampered)
    ));
    assert!(matches!(
        open(clean.clone(), FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::KeyRequired {
            purpose: KeyPurpose::CheckTag
        })
    ));
    let unverified = open(clean, FileKind::Save, Trust::unverified(), u64::MAX, 1).unwrap();
    assert_eq!(unverified.toc.len(), 2);
}

#[test]
fn format_1_has_no_integrity_only_files_and_no_memento_versions() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    assert!(matches!(
        seal(&params_v1(&m, Protect::Authenticated(&key)), &ENTRIES),
        Err(Error::Config { .. })
    ));
    let mut bytes = seal(&params_v1(&m, Protect::Plain), &ENTRIES_V2).unwrap();
    let opened = open(bytes.clone(), FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap();
    assert!(
        opened
            .toc
            .iter()
            .all(|e| e.version == DEFAULT_MEMENTO_VERSION)
    );
    // The authenticated bit means nothing in format 1.
    bytes[OFF_FLAGS] |= FLAG_AUTHENTICATED as u8;
    fix_crc(&mut bytes);
    assert!(matches!(
        open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::UnknownFlags { flags: 2 })
    ));
    // Both bits at once is no file of format 2.
    let mut both = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    both[OFF_FLAGS] |= (FLAG_ENCRYPTED | FLAG_AUTHENTICATED) as u8;
    fix_crc(&mut both);
    assert!(matches!(
        open(both, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::Malformed { .. })
    ));
}

/// A [`CrcCheck`] over `bytes` handed over in pieces of `piece` bytes, as a storage reads them;
/// the same result at every piece size.
fn check_in_pieces(bytes: &[u8]) -> Result<()> {
    let check = |piece: usize| {
        let mut check = CrcCheck::new(bytes.len() as u64)?;
        for chunk in bytes.chunks(piece) {
            check.update(chunk)?;
        }
        check.finish()
    };
    let whole = check(CRC_PIECE);
    for piece in [1, 5, 8, 4093, CRC_PIECE + 1] {
        assert_eq!(
            format!("{:?}", check(piece)),
            format!("{whole:?}"),
            "pieces of {piece} bytes"
        );
    }
    whole
}

#[test]
fn a_check_in_pieces_agrees_with_the_whole_file_check() {
    let m = metadata();
    let small = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    // Over three pieces, so flips land in every piece and the trailer's bytes may straddle
    // two of them.
    let big_entry = vec![0x5a; 2 * CRC_PIECE + 1000];
    let big = seal(&params(&m, Protect::Plain), &[("world", 1, &big_entry[..])]).unwrap();
    for bytes in [&small, &big] {
        assert!(check_in_pieces(bytes).is_ok());
        let len = bytes.len();
        let flips = [
            0,
            9,
            HEADER_LEN,
            CRC_PIECE,
            2 * CRC_PIECE + 3,
            len - 3,
            len - 1,
        ];
        for at in flips.into_iter().filter(|&at| at < len) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            let whole = check_crc(&damaged).unwrap_err().to_string();
            let pieces = check_in_pieces(&damaged).unwrap_err().to_string();
            assert_eq!(pieces, whole, "a flip at byte {at} of {len}");
        }
    }
    for cut in 0..small.len() {
        let whole = check_crc(&small[..cut]).map_err(|e| e.to_string());
        assert_eq!(
            check_in_pieces(&small[..cut]).map_err(|e| e.to_string()),
            whole
        );
    }
    // A file that shrinks while it is checked.
    let mut check = CrcCheck::new(big.len() as u64).unwrap();
    for chunk in big[..big.len() - 10].chunks(CRC_PIECE) {
        check.update(chunk).unwrap();
    }
    let shrunk = check.finish();
    assert!(matches!(shrunk, Err(Error::Malformed { .. })), "{shrunk:?}");
    // And one that grows.
    let mut check = CrcCheck::new(big.len() as u64 - 10).unwrap();
    let grown = big
        .chunks(CRC_PIECE)
        .try_for_each(|chunk| check.update(chunk));
    assert!(matches!(grown, Err(Error::Malformed { .. })), "{grown:?}");
}

/// One copy of the byte table: `docs/format.md`'s header table and the offsets here agree.
#[test]
fn the_byte_table_of_docs_format_md_matches_the_code() {
    let doc = include_str!("../../../docs/format.md");
    let layout = &doc[doc.find("## Layout").unwrap()..];
    let rows: Vec<(usize, usize, &str)> = layout
        .lines()
        .skip_while(|l| !l.starts_with("| 0 |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Some((cells[1].parse().ok()?, cells[2].parse().ok()?, cells[3]))
        })
        .collect();
    let code = [
        (0, MAGIC.len(), "magic"),
        (OFF_VERSION, 2, "format version"),
        (OFF_FLAGS, 2, "flags"),
        (OFF_CODEC, 1, "codec"),
        (OFF_KIND, 1, "file kind"),
        (OFF_SLOT_KIND, 1, "slot kind"),
        (OFF_RESERVED, 1, "segment size"),
        (OFF_SLOT, 4, "slot number"),
        (OFF_SCHEMA, 4, "schema version"),
        (OFF_GENERATION, 8, "generation"),
        (OFF_SAVED_AT, 8, "saved at"),
        (OFF_METADATA_LEN, 4, "metadata length *M*"),
        (OFF_PAYLOAD_LEN, 8, "payload length *P*"),
    ];
    assert_eq!(rows, code);
    assert_eq!(OFF_PAYLOAD_LEN + 8, HEADER_LEN);
    // Format version 2: the flags, the tag, the table of contents' memento version.
    let flags_row = layout
        .lines()
        .find(|l| l.starts_with("| 10 | 2 | flags |"))
        .unwrap();
    assert_eq!((FLAG_ENCRYPTED, FLAG_AUTHENTICATED), (1, 2));
    assert!(flags_row.contains("Bit 0: encrypted. Bit 1: authenticated"));
    assert_eq!(FLAG_SEGMENTED, 1 << 4);
    assert!(flags_row.contains("Bit 4: segmented"));
    assert!(layout.contains(&format!(
        "this library writes {}: 256 KiB",
        segments::SEGMENT_LOG
    )));
    assert!(layout.contains(&format!("followed by its {MAC_LEN}-byte HMAC-SHA256 tag")));
    assert!(layout.contains(&format!("bytes 0 .. end−{}", MAC_LEN + CRC_LEN)));
    assert!(layout.contains(
        "id (`u16` length, UTF-8, not empty, at most 1024 bytes), memento version (`u32`), offset (`u64`), length (`u64`)"
    ));
    assert_eq!(toc_entry_fixed(FORMAT_VERSION_2), 2 + 4 + 8 + 8);
    assert_eq!(toc_entry_fixed(1), 2 + 8 + 8);
    assert!(doc.contains(&format!("`u16`, {FORMAT_VERSION} (1 and 2 are read too)")));
    #[cfg(feature = "integrity")]
    {
        let label = std::str::from_utf8(crate::crypto::MAC_KEY_LABEL).unwrap();
        assert!(layout.contains(&format!(
            "\"{label}\")` (the label's\n{} ASCII bytes)",
            label.len()
        )));
    }
    assert!(layout.contains(&format!("| {HEADER_LEN} | *M* | metadata |")));
    assert!(layout.contains(&format!("| end−{CRC_LEN} | {CRC_LEN} | CRC32 |")));
}

#[test]
fn sections_add_up_to_the_file() {
    let m = metadata();
    let bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
    let s = header.sections();
    assert_eq!(s.header, 0..HEADER_LEN as u64);
    assert_eq!(s.crc.end, bytes.len() as u64);
    assert_eq!(
        s.metadata.end - s.metadata.start,
        u64::from(read_u32(&bytes, OFF_METADATA_LEN))
    );
    assert!(s.nonce.is_empty());
}

#[test]
fn a_table_of_contents_that_claims_too_much_is_refused_before_allocating() {
    let m = metadata();
    let mut bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    let body = parse_header(&bytes, None).unwrap().sections().payload.start as usize;
    bytes[body..body + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    fix_crc(&mut bytes);
    let err = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
}

#[test]
fn toc_ranges_outside_the_document_are_refused() {
    let m = metadata();
    let clean = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    let body = parse_header(&clean, None).unwrap().sections().payload.start as usize;
    // First entry: 4 (count) + 2 + "player" (6) + offset (8) + length (8).
    let offset_at = body + 4 + 2 + 6;
    for (at, value) in [
        (offset_at, u64::MAX),     // offset past everything
        (offset_at + 8, u64::MAX), // length overflows
        (offset_at + 8, 10_000),   // length past the document
        (offset_at, 0),            // overlaps the document's opening
    ] {
        let mut bytes = clean.clone();
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        fix_crc(&mut bytes);
        let result = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2);
        // Offset 0 lies inside the document, but over its opening: the document is then
        // not the map of its mementos.
        assert!(matches!(result, Err(Error::Malformed { .. })), "{result:?}");
    }
    // Ids out of order.
    let mut bytes = clean.clone();
    bytes[body + 6..body + 12].copy_from_slice(b"zlayer");
    fix_crc(&mut bytes);
    assert!(matches!(
        open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::Malformed { .. })
    ));
}

#[test]
fn unknown_versions_flags_codecs_and_kinds_are_typed_errors() {
    let m = metadata();
    let clean = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    type Expect = fn(&Error) -> bool;
    let cases: [(usize, &[u8], Expect); 5] = [
        (OFF_VERSION, &4u16.to_le_bytes(), |e| {
            matches!(
                e,
                Error::UnsupportedFormat {
                    found: 4,
                    supported: 3
                }
            )
        }),
        (OFF_FLAGS, &32u16.to_le_bytes(), |e| {
            matches!(e, Error::UnknownFlags { flags: 32 })
        }),
        (OFF_CODEC, &[9], |e| {
            matches!(e, Error::UnknownCodec { id: 9 })
        }),
        (OFF_KIND, &[9], |e| matches!(e, Error::Malformed { .. })),
        (OFF_RESERVED, &[1], |e| matches!(e, Error::Malformed { .. })),
    ];
    for (at, value, expected) in cases {
        let mut bytes = clean.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        fix_crc(&mut bytes);
        let err = open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2).unwrap_err();
        assert!(expected(&err), "offset {at}: {err}");
    }
}

/// A body of several segments: the same bytes from 1 and 3 threads, opened on 1 and 2;
/// the header's segment fields are checked before any decryption.
#[cfg(feature = "encryption")]
#[test]
fn a_file_of_many_segments_is_the_same_on_any_thread_count_and_its_fields_are_checked() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let world: Vec<u8> = {
        let n: Vec<String> = (0..90_000)
            .map(|i| (i * 7919 % 100_003).to_string())
            .collect();
        format!("[{}]", n.join(",")).into_bytes()
    };
    let entries = [("player", 1, &b"{\"hp\":9}"[..]), ("world", 1, &world[..])];
    let sealed = |threads| {
        let p = SealParams {
            threads,
            ..params(&m, Protect::Encrypted(&key, [9; NONCE_LEN]))
        };
        seal(&p, &entries).unwrap()
    };
    let bytes = sealed(1);
    assert_eq!(sealed(3), bytes);
    let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
    assert_eq!(header.segment_log, Some(segments::SEGMENT_LOG));
    let body = segments::body_len(header.payload_len as usize, 18).unwrap();
    assert_eq!(segments::count(body, 18), 3, "{body} bytes");
    for threads in [1, 2] {
        let opened = open(
            bytes.clone(),
            FileKind::Save,
            Trust::keyed(&key),
            u64::MAX,
            threads,
        )
        .unwrap();
        assert_eq!(&opened.buf[opened.toc[1].range.clone()], &world[..]);
    }
    let with = |at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        fix_crc(&mut b);
        open(b, FileKind::Save, Trust::keyed(&key), u64::MAX, 2).unwrap_err()
    };
    for log in [0, 11, 27, 255] {
        assert!(
            matches!(with(OFF_RESERVED, &[log]), Error::Malformed { .. }),
            "2^{log}"
        );
    }
    // Another segment size in range: the header is authenticated, so the tags fail.
    assert!(matches!(
        with(OFF_RESERVED, &[17]),
        Error::Malformed { .. } | Error::Decrypt
    ));
    // Not segmented, byte 15 still set; not segmented at all (one message).
    let flags = FLAG_ENCRYPTED.to_le_bytes();
    assert!(matches!(with(OFF_FLAGS, &flags), Error::Malformed { .. }));
    let mut one = bytes.clone();
    one[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&flags);
    one[OFF_RESERVED] = 0;
    fix_crc(&mut one);
    assert!(matches!(
        open(one, FileKind::Save, Trust::keyed(&key), u64::MAX, 2),
        Err(Error::Decrypt)
    ));
    // Segmented but not encrypted.
    let plain = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    let mut b = plain.clone();
    b[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&FLAG_SEGMENTED.to_le_bytes());
    b[OFF_RESERVED] = 18;
    fix_crc(&mut b);
    assert!(matches!(
        open(b, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::Malformed { .. })
    ));
}

/// A memento encoded as the file is written, as a captured one is.
#[cfg(feature = "msgpack")]
pub(super) struct Numbers(pub(super) Vec<u64>);

#[cfg(feature = "msgpack")]
impl crate::codec::Encodable for Numbers {
    fn encode_into(
        &self,
        codec: crate::codec::Codec,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), crate::codec::CodecError> {
        codec.encode_into(out, &self.0)
    }
    fn encode_to_writer(
        &self,
        codec: crate::codec::Codec,
        out: &mut dyn std::io::Write,
    ) -> std::result::Result<(), crate::codec::CodecError> {
        codec.encode_to_writer(out, &self.0)
    }
}

#[test]
fn timestamps_round_trip_including_before_1970() {
    for ms in [0i64, 1, -1, 1_700_000_000_123, -86_400_000] {
        assert_eq!(system_time_to_millis(millis_to_system_time(ms)), ms);
    }
}
