//! The frame's tests of compressed bodies: round trips under every protection, a body
//! compressed as it is encoded, and the refusal of compression flags that cannot be.

use super::*;

/// Every compression this build has, with a body it shrinks.
fn compressions() -> Vec<Compression> {
    let mut v = Vec::new();
    if cfg!(feature = "lz4") {
        v.push(Compression::Lz4);
    }
    if cfg!(feature = "zstd") {
        v.push(Compression::zstd());
    }
    v
}

fn big_entries() -> Vec<u8> {
    let items: Vec<String> = (0..2000)
        .map(|i| format!("{{\"id\":{i},\"hp\":100}}"))
        .collect();
    format!("[{}]", items.join(",")).into_bytes()
}

/// `len` bytes of noise (xorshift), which no compressor shrinks.
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every protection this build has, with `key`, and the trust that opens it.
fn protections(key: &Key) -> Vec<(Protect<'_>, Trust<'_>)> {
    let mut protects = vec![(Protect::Plain, Trust::plain())];
    if cfg!(feature = "encryption") {
        protects.push((
            Protect::Encrypted(key, [9; NONCE_LEN]),
            Trust::from(Some(key)),
        ));
    }
    if cfg!(feature = "integrity") {
        protects.push((Protect::Authenticated(key), Trust::from(Some(key))));
    }
    protects
}

#[test]
fn compressed_files_round_trip_under_every_protection_and_say_so_in_their_flags() {
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let world = big_entries();
    let entries = [("player", 1, &b"{\"hp\":9}"[..]), ("world", 3, &world[..])];
    let plain_len = seal(&params(&m, Protect::Plain), &entries).unwrap().len();
    for compression in compressions() {
        for (protect, with) in protections(&key) {
            for kind in [FileKind::Save, FileKind::Delta] {
                let p = SealParams {
                    compression,
                    kind,
                    delta: (kind == FileKind::Delta).then(|| (4, vec!["gone"])),
                    threads: 2,
                    ..params(&m, protect)
                };
                let bytes = seal(&p, &entries).unwrap();
                assert!(
                    bytes.len() < plain_len / 3,
                    "{compression}: {}",
                    bytes.len()
                );
                let flags = read_u16(&bytes, OFF_FLAGS);
                assert_eq!(
                    (flags & FLAGS_COMPRESSION) >> COMPRESSION_SHIFT,
                    compression.id(),
                    "{flags:#x}"
                );
                assert_eq!(record_len(&bytes).unwrap(), Some(bytes.len()));
                let header = parse_header(&bytes, Some(bytes.len() as u64)).unwrap();
                assert_eq!(header.compression.name(), compression.name());
                let opened = open(bytes.clone(), kind, with, u64::MAX, 2).unwrap();
                let found: Vec<(&str, u32, &[u8])> = opened
                    .toc
                    .iter()
                    .map(|e| (e.id.as_str(), e.version, &opened.buf[e.range.clone()]))
                    .collect();
                assert_eq!(found, entries);
                if kind == FileKind::Delta {
                    assert_eq!(
                        (opened.sequence, &opened.deleted[..]),
                        (4, &["gone".to_owned()][..])
                    );
                }
                // The decompressed body is capped: a cap below it refuses the file.
                let err = open(bytes.clone(), kind, with, 1000, 2).unwrap_err();
                assert!(
                    matches!(err, Error::DecompressedTooLarge { limit: 1000, .. }),
                    "{err}"
                );
                assert!(err.is_corruption());
                // Every single-bit flip is refused (a sample: every 7th byte, every bit).
                for at in (0..bytes.len()).step_by(7) {
                    for bit in 0..8 {
                        let mut damaged = bytes.clone();
                        damaged[at] ^= 1 << bit;
                        let opened = open(damaged, kind, with, 1 << 20, 2);
                        assert!(opened.is_err(), "byte {at} bit {bit}");
                    }
                }
            }
        }
    }
}

/// A body of more than 1 MiB compressed with Zstandard is compressed as it is encoded,
/// 512 KiB at a time into frames of their own: the same bytes on one thread as on four, opening to the
/// mementos of the uncompressed file under every protection. A body that does not shrink stays
/// compressed, a few bytes longer than the uncompressed file.
#[cfg(all(feature = "zstd", feature = "msgpack"))]
#[test]
fn a_large_body_compressed_as_it_is_encoded_is_the_same_on_any_number_of_threads() {
    use super::seal::{Source, seal_sources};
    let m = metadata();
    let key = Key::from_bytes([7; 32]);
    let numbers = Numbers((0..400_000u64).map(|i| i * 7_919).collect());
    let blob: Vec<u8> = (0..3_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let noise = noise(3_000_000);
    let shrinking = vec![
        ("a", 1, Source::Bytes(&b"[1,2,3]"[..])),
        ("b", 2, Source::Encode(&numbers)),
        ("c", 1, Source::Bytes(&blob)),
    ];
    let incompressible = vec![("n", 1, Source::Bytes(&noise[..]))];
    for (protect, with) in protections(&key) {
        for (entries, shrinks) in [(&shrinking, true), (&incompressible, false)] {
            let at = |threads, compression| SealParams {
                codec: crate::codec::Codec::MessagePack,
                compression,
                threads,
                ..params(&m, protect)
            };
            let uncompressed = seal_sources(&at(2, Compression::None), entries, 0, None).unwrap();
            let one = seal_sources(&at(1, Compression::zstd()), entries, 0, None).unwrap();
            let streamed = seal_sources(&at(4, Compression::zstd()), entries, 0, None).unwrap();
            assert!(one == streamed, "one thread and four write other bytes");
            let flags = read_u16(&streamed, OFF_FLAGS);
            assert_eq!((flags & FLAGS_COMPRESSION) >> COMPRESSION_SHIFT, 2);
            if shrinks {
                assert!(
                    streamed.len() < uncompressed.len() / 2,
                    "{} against {}",
                    streamed.len(),
                    uncompressed.len()
                );
            } else {
                // Compressed whole, it would stay uncompressed; as it is encoded, it stays
                // compressed, its blocks stored as they are.
                assert!(streamed.len() >= uncompressed.len());
                assert!(
                    streamed.len() < uncompressed.len() + 1024,
                    "{}",
                    streamed.len()
                );
            }
            let mementos = |bytes: Vec<u8>| {
                let opened = open(bytes, FileKind::Save, with, u64::MAX, 2).unwrap();
                opened
                    .toc
                    .iter()
                    .map(|e| {
                        (
                            e.id.clone(),
                            e.version,
                            opened.buf[e.range.clone()].to_vec(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let expected = mementos(uncompressed);
            assert_eq!(mementos(streamed.clone()), expected);
            // Damage anywhere in it is refused.
            for at in (0..streamed.len()).step_by(99_991) {
                let mut damaged = streamed.clone();
                damaged[at] ^= 0x10;
                assert!(
                    open(damaged, FileKind::Save, with, u64::MAX, 2).is_err(),
                    "{at}"
                );
            }
        }
    }
}

/// Bits 2-3 = 3 is no compression of any version; a compression flag in format 1 is unknown.
#[test]
fn the_undefined_compression_value_and_compression_in_format_1_are_refused() {
    let m = metadata();
    let mut bytes = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
    bytes[OFF_FLAGS] |= 0b1100;
    fix_crc(&mut bytes);
    assert!(matches!(
        open(bytes, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::UnknownFlags { flags: 12 })
    ));
    let mut v1 = seal(&params_v1(&m, Protect::Plain), &ENTRIES).unwrap();
    v1[OFF_FLAGS] |= 0b0100;
    fix_crc(&mut v1);
    assert!(matches!(
        open(v1, FileKind::Save, Trust::plain(), u64::MAX, 2),
        Err(Error::UnknownFlags { flags: 4 })
    ));
    let p = SealParams {
        compression: Compression::Lz4,
        ..params_v1(&m, Protect::Plain)
    };
    assert!(matches!(seal(&p, &ENTRIES), Err(Error::Config { .. })));
    // An uncompressed body whose flags claim compression (and a fixed CRC) is a typed
    // error, never a panic.
    for id in [1u8, 2] {
        let mut lie = seal(&params(&m, Protect::Plain), &ENTRIES).unwrap();
        lie[OFF_FLAGS] |= id << 2;
        fix_crc(&mut lie);
        assert!(open(lie, FileKind::Save, Trust::plain(), 1 << 20, 2).is_err());
    }
}

/// A body compression would not shrink is written as it is, with no compression flag.
#[test]
fn a_body_that_does_not_shrink_is_written_uncompressed() {
    let m = metadata();
    // 64 KiB of noise: no compressor gains on it what its framing costs.
    let noise = noise(1 << 16);
    let entries = [("noise", 1, &noise[..])];
    for compression in compressions() {
        let p = SealParams {
            compression,
            ..params(&m, Protect::Plain)
        };
        let bytes = seal(&p, &entries).unwrap();
        assert_eq!(bytes, seal(&params(&m, Protect::Plain), &entries).unwrap());
        assert_eq!(read_u16(&bytes, OFF_FLAGS) & FLAGS_COMPRESSION, 0);
    }
}
