//! Codecs: how mementos become bytes, and the limits that keep hostile input harmless.
//!
//! Three codecs are built in: [`Codec::Json`] (human-readable; feature `json`),
//! [`Codec::MessagePack`] (compact and fast; feature `msgpack`) and [`Codec::Bitcode`] (the
//! fastest and smallest; feature `bitcode`). Structs are written as maps with field names in
//! JSON and MessagePack, so a migration can address fields by name and a tool can show them.
//!
//! # Bitcode is not self-describing
//!
//! A bitcode memento has no field names and no type tags: only the Rust type that wrote it
//! can read it. So whatever reads mementos as a generic value tree refuses a bitcode save
//! with [`Error::NotSelfDescribing`]: the migration steps of [`Migrations`](crate::Migrations)
//! (declarative step files and Rust steps alike, which run on that tree), the CLI's `dump`,
//! `diff` and `migrate`, property-diff undo edits and replay input migrations. A game that
//! changes a bitcode memento's type migrates it in Rust by decoding the old type
//! ([`Snapshot::memento`](crate::Snapshot::memento)`::<OldType>`) and capturing the new one.
//! Headers, metadata, memento ids, versions and sizes read as with any codec.
//!
//! # Limits on decode
//!
//! - **Nesting depth:** at most [`MAX_DEPTH`] levels of arrays and maps. Deeper input is refused
//!   with a typed error before it can exhaust the stack.
//! - **Size:** a codec only ever sees bytes that the manager has already read under its file
//!   size cap, so no input is larger than that cap. Lengths inside the input (a MessagePack
//!   array header that claims 2^32 elements, a string that claims 4 GiB) are checked against
//!   the bytes actually present before anything is allocated for them: preallocation is
//!   capped by serde at about 1 MiB per collection, and string and byte lengths are checked
//!   against the remaining input.

use std::fmt;
use std::io;
use std::str::FromStr;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{BoxError, Error};

/// The deepest nesting of arrays and maps a codec decodes.
pub const MAX_DEPTH: usize = 128;

/// A serialization format for mementos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// JSON (serde_json). Text, readable in any editor when the save is not encrypted.
    Json,
    /// MessagePack (rmp-serde), structs as maps. Smaller and faster than JSON.
    MessagePack,
    /// bitcode (its serde support; feature `bitcode`): compact and fast, and **not
    /// self-describing** (see [the module docs](self#bitcode-is-not-self-describing)).
    Bitcode,
}

impl Codec {
    /// The byte that identifies the codec in a save file's header.
    #[must_use]
    pub const fn id(self) -> u8 {
        match self {
            Codec::Json => 1,
            Codec::MessagePack => 2,
            Codec::Bitcode => 3,
        }
    }

    /// The codec with header byte `id`.
    ///
    /// # Errors
    /// [`Error::UnknownCodec`] for a byte no codec uses.
    pub const fn from_id(id: u8) -> Result<Self, Error> {
        match id {
            1 => Ok(Codec::Json),
            2 => Ok(Codec::MessagePack),
            3 => Ok(Codec::Bitcode),
            _ => Err(Error::UnknownCodec { id }),
        }
    }

    /// The codec's short name: `json`, `msgpack` or `bitcode`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Json => "json",
            Codec::MessagePack => "msgpack",
            Codec::Bitcode => "bitcode",
        }
    }

    /// Can a memento of this codec be read without its Rust type, as a generic value tree
    /// (what migration steps, dumps and diffs need)? JSON and MessagePack can; bitcode cannot.
    #[must_use]
    pub const fn is_self_describing(self) -> bool {
        !matches!(self, Codec::Bitcode)
    }

    /// [`Error::NotSelfDescribing`] for `what` when this codec is not self-describing.
    ///
    /// # Errors
    /// That error, for [`Codec::Bitcode`].
    pub fn require_self_describing(self, what: &'static str) -> Result<(), Error> {
        if self.is_self_describing() {
            Ok(())
        } else {
            Err(Error::NotSelfDescribing {
                codec: self.name(),
                what,
            })
        }
    }

    /// Encodes `value`.
    ///
    /// # Errors
    /// The codec's own error (for example JSON cannot write a map whose keys are not strings or
    /// numbers), or [`Error::FeatureDisabled`] when this build lacks the codec.
    pub fn encode<T: Serialize + ?Sized>(self, value: &T) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::new();
        self.encode_into(&mut out, value)?;
        Ok(out)
    }

    /// Encodes `value` at the end of `out`, with no buffer of its own (JSON and MessagePack
    /// write into `out` as they go; bitcode encodes into its own buffer first). On error,
    /// `out` may hold part of the value after its old end.
    /// Encodes `value` into `out` as it goes: the bytes of [`encode_into`](Self::encode_into),
    /// handed to `out` in pieces of up to 64 KiB (bitcode's whole, as it encodes at once).
    pub(crate) fn encode_to_writer<T: Serialize + ?Sized>(
        self,
        out: &mut dyn io::Write,
        value: &T,
    ) -> Result<(), CodecError> {
        let codec_error = |e: Box<dyn std::error::Error + Send + Sync>| CodecError::Codec(e);
        match self {
            #[cfg(feature = "json")]
            Codec::Json => {
                let mut buffered = io::BufWriter::with_capacity(WRITER_BUFFER, out);
                serde_json::to_writer(&mut buffered, value).map_err(|e| codec_error(e.into()))?;
                io::Write::flush(&mut buffered).map_err(|e| codec_error(e.into()))
            }
            // rmp-serde into a bounded writer runs at half its speed into a `Vec`:
            // `chunked` lets it write into one and hands `out` the pieces.
            #[cfg(feature = "msgpack")]
            Codec::MessagePack => {
                crate::chunked::encode(out, value).map_err(|e| codec_error(e.into()))
            }
            _ => {
                let mut bytes = Vec::new();
                self.encode_into(&mut bytes, value)?;
                out.write_all(&bytes).map_err(|e| codec_error(e.into()))
            }
        }
    }

    pub(crate) fn encode_into<T: Serialize + ?Sized>(
        self,
        out: &mut Vec<u8>,
        value: &T,
    ) -> Result<(), CodecError> {
        match self {
            #[cfg(feature = "json")]
            Codec::Json => {
                serde_json::to_writer(&mut *out, value).map_err(|e| CodecError::Codec(Box::new(e)))
            }
            #[cfg(feature = "msgpack")]
            Codec::MessagePack => {
                let mut serializer = rmp_serde::Serializer::new(&mut *out).with_struct_map();
                value
                    .serialize(&mut serializer)
                    .map_err(|e| CodecError::Codec(Box::new(e)))
            }
            #[cfg(feature = "bitcode")]
            Codec::Bitcode => {
                let bytes =
                    bitcode::serialize(value).map_err(|e| CodecError::Codec(Box::new(e)))?;
                out.extend_from_slice(&bytes);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (out, value);
                Err(CodecError::Disabled(self.feature()))
            }
        }
    }

    /// Decodes one complete value from `bytes`, under the limits described in the
    /// [module docs](self). Trailing bytes after the value are an error.
    ///
    /// # Errors
    /// The codec's own error (wrong shape, depth limit, truncated input, trailing bytes), or
    /// [`Error::FeatureDisabled`] when this build lacks the codec.
    pub fn decode<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T, CodecError> {
        match self {
            #[cfg(feature = "json")]
            Codec::Json => {
                // serde_json refuses nesting deeper than 128 (its fixed recursion limit, equal to
                // MAX_DEPTH) and rejects trailing characters other than whitespace.
                serde_json::from_slice(bytes).map_err(|e| CodecError::Codec(Box::new(e)))
            }
            #[cfg(feature = "msgpack")]
            Codec::MessagePack => decode_msgpack(bytes),
            // bitcode checks every length against the bytes present and refuses trailing
            // bytes; its nesting is the Rust type's, not the input's.
            #[cfg(feature = "bitcode")]
            Codec::Bitcode => {
                bitcode::deserialize(bytes).map_err(|e| CodecError::Codec(Box::new(e)))
            }
            #[allow(unreachable_patterns)]
            _ => {
                // A build without any codec reads no bytes.
                let _ = bytes;
                Err(CodecError::Disabled(self.feature()))
            }
        }
    }

    /// The Cargo feature that provides this codec.
    #[must_use]
    pub const fn feature(self) -> &'static str {
        match self {
            Codec::Json => "json",
            Codec::MessagePack => "msgpack",
            Codec::Bitcode => "bitcode",
        }
    }

    /// Writes the opening of a document that maps `count` ids to mementos.
    pub(crate) fn open_document(self, out: &mut Vec<u8>, count: usize) {
        match self {
            Codec::Json => out.push(b'{'),
            Codec::MessagePack => write_msgpack_map_len(out, count),
            // bitcode's document is its mementos one after another: the table of contents
            // is the only map (bitcode has no self-describing map to wrap them in).
            Codec::Bitcode => {}
        }
    }

    /// Writes the key of the `index`-th entry of a document (with any separator before it).
    pub(crate) fn write_document_key(self, out: &mut Vec<u8>, index: usize, key: &str) {
        match self {
            Codec::Json => {
                if index > 0 {
                    out.push(b',');
                }
                write_json_string(out, key);
                out.push(b':');
            }
            Codec::MessagePack => write_msgpack_str(out, key),
            Codec::Bitcode => {}
        }
    }

    /// Writes the end of a document.
    pub(crate) fn close_document(self, out: &mut Vec<u8>) {
        if self == Codec::Json {
            out.push(b'}');
        }
    }

    /// Whether `doc` is exactly the document that [`open_document`](Self::open_document),
    /// [`write_document_key`](Self::write_document_key) and
    /// [`close_document`](Self::close_document) write around mementos with these ids at these
    /// ranges of `doc`, in order: nothing before, between or after them that the writer would
    /// not have put there. So a document is one value, with no bytes left over after it (an
    /// integrity-only file stripped of its flag keeps its tag there), in every codec.
    pub(crate) fn frames_document<'i>(
        self,
        doc: &[u8],
        entries: impl ExactSizeIterator<Item = (&'i str, std::ops::Range<usize>)>,
    ) -> bool {
        let mut expected = Vec::new();
        self.open_document(&mut expected, entries.len());
        let mut at = 0;
        for (i, (id, range)) in entries.enumerate() {
            self.write_document_key(&mut expected, i, id);
            if range.start < at || doc.get(at..range.start) != Some(&expected[..]) {
                return false;
            }
            expected.clear();
            at = range.end;
        }
        self.close_document(&mut expected);
        doc.get(at..) == Some(&expected[..])
    }

    /// An upper bound on the bytes [`open_document`](Self::open_document),
    /// [`write_document_key`](Self::write_document_key) and
    /// [`close_document`](Self::close_document) add for one key, so buffers are sized once.
    pub(crate) fn key_overhead(self, key: &str) -> usize {
        match self {
            // Quotes, colon, comma, and at most 6 bytes (\u00XX) per escaped byte.
            Codec::Json => 4 + key.len() * 6,
            Codec::MessagePack => 5 + key.len(),
            Codec::Bitcode => 0,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Codec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "json" => Ok(Codec::Json),
            "msgpack" | "messagepack" => Ok(Codec::MessagePack),
            "bitcode" => Ok(Codec::Bitcode),
            _ => Err(Error::Config {
                reason: format!("unknown codec {s:?} (expected json, msgpack or bitcode)"),
            }),
        }
    }
}

/// A value that can be encoded into a buffer with a codec chosen later: a captured memento,
/// or an originator serialized straight from the game's state.
pub(crate) trait Encodable {
    /// Encodes the value at the end of `out` (see [`Codec::encode_into`]).
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError>;

    /// Encodes the value into `out` as it goes, the same bytes as
    /// [`encode_into`](Self::encode_into) (a save written as it is encoded). The default
    /// encodes into a buffer first.
    fn encode_to_writer(&self, codec: Codec, out: &mut dyn io::Write) -> Result<(), CodecError> {
        let mut bytes = Vec::new();
        self.encode_into(codec, &mut bytes)?;
        out.write_all(&bytes)
            .map_err(|e| CodecError::Codec(Box::new(e)))
    }
}

/// How much a JSON encoding into a writer gathers before it hands the writer a piece:
/// serde_json writes a few bytes at a time, and the writer is a trait object.
#[cfg(feature = "json")]
const WRITER_BUFFER: usize = 1 << 16;

/// Why a codec could not encode or decode a value.
#[derive(Debug)]
pub enum CodecError {
    /// The codec's own error.
    Codec(BoxError),
    /// This build lacks the codec's feature.
    Disabled(&'static str),
}

impl CodecError {
    /// Turns this into an [`Error::Encode`] about memento `id`.
    pub(crate) fn encoding(self, id: &str) -> Error {
        match self {
            CodecError::Codec(source) => Error::Encode {
                id: id.to_owned(),
                source,
            },
            CodecError::Disabled(feature) => Error::FeatureDisabled { feature },
        }
    }

    /// Turns this into an [`Error::Decode`] about memento `id`.
    pub(crate) fn decoding(self, id: &str) -> Error {
        match self {
            CodecError::Codec(source) => Error::Decode {
                id: id.to_owned(),
                source,
            },
            CodecError::Disabled(feature) => Error::FeatureDisabled { feature },
        }
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Codec(e) => e.fmt(f),
            CodecError::Disabled(feature) => write!(f, "the `{feature}` feature is disabled"),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Codec(e) => Some(e.as_ref()),
            CodecError::Disabled(_) => None,
        }
    }
}

#[cfg(feature = "msgpack")]
fn decode_msgpack<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    use serde::Deserialize;
    use serde::de::IgnoredAny;

    let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
    de.set_max_depth(MAX_DEPTH);
    let value = T::deserialize(&mut de).map_err(|e| CodecError::Codec(Box::new(e)))?;
    // A complete value must use every byte. Reading a marker from empty input is the only way
    // to get an end-of-input error at a value boundary, so anything else means trailing bytes.
    match IgnoredAny::deserialize(&mut de) {
        Err(rmp_serde::decode::Error::InvalidMarkerRead(e))
            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            Ok(value)
        }
        _ => Err(CodecError::Codec(
            "trailing bytes after the MessagePack value".into(),
        )),
    }
}

/// Writes a MessagePack map header for `len` entries (fixmap, map16 or map32; big-endian as
/// MessagePack requires).
fn write_msgpack_map_len(out: &mut Vec<u8>, len: usize) {
    if len < 16 {
        out.push(0x80 | len as u8);
    } else if let Ok(n) = u16::try_from(len) {
        out.push(0xde);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0xdf);
        out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    }
}

/// Writes a MessagePack string (fixstr, str8, str16 or str32).
fn write_msgpack_str(out: &mut Vec<u8>, s: &str) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if let Ok(n) = u8::try_from(len) {
        out.push(0xd9);
        out.push(n);
    } else if let Ok(n) = u16::try_from(len) {
        out.push(0xda);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    }
    out.extend_from_slice(s.as_bytes());
}

/// Writes `s` as a JSON string literal.
fn write_json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    enum Shape {
        Unit,
        Circle(f64),
        Rect { w: f64, h: f64 },
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Everything {
        bytes: Vec<u8>,
        by_id: HashMap<u32, String>,
        maybe: Option<i64>,
        nothing: Option<String>,
        shapes: Vec<Shape>,
        ratio: f64,
        nested: BTreeMap<String, Vec<u16>>,
    }

    fn codecs() -> Vec<Codec> {
        vec![Codec::Json, Codec::MessagePack]
    }

    proptest! {
        #[test]
        fn mementos_round_trip_in_both_codecs(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            by_id in proptest::collection::hash_map(any::<u32>(), ".{0,8}", 0..8),
            maybe in any::<Option<i64>>(),
            ratio in -1.0e300f64..1.0e300,
            w in -1.0e6f64..1.0e6,
            nested in proptest::collection::btree_map("[a-z]{0,6}", proptest::collection::vec(any::<u16>(), 0..4), 0..4),
        ) {
            let value = Everything {
                bytes,
                by_id,
                maybe,
                nothing: None,
                shapes: vec![Shape::Unit, Shape::Circle(w), Shape::Rect { w, h: -w }],
                ratio,
                nested,
            };
            for codec in codecs() {
                let encoded = codec.encode(&value).unwrap();
                let decoded: Everything = codec.decode(&encoded).unwrap();
                prop_assert_eq!(&decoded, &value);
            }
        }
    }

    #[test]
    fn nesting_deeper_than_the_cap_is_refused() {
        let deep_json = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let err = Codec::Json
            .decode::<serde_json::Value>(deep_json.as_bytes())
            .unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");

        // 10,000 nested one-element MessagePack arrays.
        let mut deep_msgpack = vec![0x91u8; 10_000];
        deep_msgpack.push(0xc0);
        let err = Codec::MessagePack
            .decode::<serde_json::Value>(&deep_msgpack)
            .unwrap_err();
        assert!(err.to_string().contains("depth"), "{err}");

        // Right at the cap both still decode.
        let ok_json = format!("{}{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        Codec::Json
            .decode::<serde_json::Value>(ok_json.as_bytes())
            .unwrap();
        let mut ok_msgpack = vec![0x91u8; MAX_DEPTH - 1];
        ok_msgpack.push(0xc0);
        Codec::MessagePack
            .decode::<serde_json::Value>(&ok_msgpack)
            .unwrap();
    }

    #[test]
    fn a_huge_length_claim_does_not_allocate() {
        // An array32 header claiming u32::MAX elements followed by almost nothing: refused with
        // an end-of-input error, and serde preallocates at most about 1 MiB for it.
        let hostile = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert!(Codec::MessagePack.decode::<Vec<u64>>(&hostile).is_err());
        // A str32 claiming 4 GiB.
        let hostile = [0xdb, 0xff, 0xff, 0xff, 0xff, b'a'];
        assert!(Codec::MessagePack.decode::<String>(&hostile).is_err());
        // A map32 claiming u32::MAX entries.
        let hostile = [0xdf, 0xff, 0xff, 0xff, 0xff];
        assert!(
            Codec::MessagePack
                .decode::<HashMap<u32, u32>>(&hostile)
                .is_err()
        );
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = Codec::MessagePack.encode(&42u32).unwrap();
        bytes.push(0xc0);
        assert!(Codec::MessagePack.decode::<u32>(&bytes).is_err());
        let mut bytes = Codec::MessagePack.encode(&42u32).unwrap();
        bytes.push(0xcd); // a truncated uint16 after the value
        assert!(Codec::MessagePack.decode::<u32>(&bytes).is_err());
        assert!(Codec::Json.decode::<u32>(b"42 x").is_err());
        assert_eq!(Codec::Json.decode::<u32>(b"42 \n").unwrap(), 42);
    }

    #[test]
    fn documents_are_valid_in_their_codec() {
        let entries: Vec<(String, Vec<u8>)> = (0..40)
            .map(|i| (format!("id \"{i}\"\n"), vec![i as u8; i]))
            .collect();
        for codec in codecs() {
            let mut doc = Vec::new();
            let mut budget = 2;
            codec.open_document(&mut doc, entries.len());
            for (i, (key, value)) in entries.iter().enumerate() {
                budget += codec.key_overhead(key) + codec.encode(value).unwrap().len();
                codec.write_document_key(&mut doc, i, key);
                doc.extend_from_slice(&codec.encode(value).unwrap());
            }
            codec.close_document(&mut doc);
            assert!(doc.len() <= budget);
            let decoded: BTreeMap<String, Vec<u8>> = codec.decode(&doc).unwrap();
            assert_eq!(decoded, entries.iter().cloned().collect());
        }
    }

    #[test]
    fn codec_ids_round_trip() {
        for codec in codecs() {
            assert_eq!(Codec::from_id(codec.id()).unwrap(), codec);
            assert_eq!(codec.name().parse::<Codec>().unwrap(), codec);
        }
        assert!(matches!(
            Codec::from_id(0),
            Err(Error::UnknownCodec { id: 0 })
        ));
        assert!(matches!(
            Codec::from_id(4),
            Err(Error::UnknownCodec { id: 4 })
        ));
        assert_eq!(Codec::from_id(3).unwrap(), Codec::Bitcode);
        assert_eq!("bitcode".parse::<Codec>().unwrap(), Codec::Bitcode);
        assert!(!Codec::Bitcode.is_self_describing());
        assert!(Codec::Json.is_self_describing() && Codec::MessagePack.is_self_describing());
        assert!(matches!(
            Codec::Bitcode.require_self_describing("a test"),
            Err(Error::NotSelfDescribing {
                codec: "bitcode",
                what: "a test"
            })
        ));
    }

    /// bitcode round-trips every shape serde has, refuses trailing bytes and truncation, and
    /// its document is its mementos one after another.
    #[cfg(feature = "bitcode")]
    #[test]
    fn bitcode_round_trips_and_refuses_trailing_and_truncated_input() {
        let value = Everything {
            bytes: vec![1, 2, 3],
            by_id: HashMap::from([(7, "seven".into())]),
            maybe: Some(-5),
            nothing: None,
            shapes: vec![
                Shape::Unit,
                Shape::Circle(1.5),
                Shape::Rect { w: 2.0, h: -3.0 },
            ],
            ratio: f64::MIN_POSITIVE,
            nested: BTreeMap::from([("a".into(), vec![1, 65535])]),
        };
        let c = Codec::Bitcode;
        let encoded = c.encode(&value).unwrap();
        assert_eq!(c.decode::<Everything>(&encoded).unwrap(), value);
        let mut trailing = encoded.clone();
        trailing.push(0);
        assert!(c.decode::<Everything>(&trailing).is_err());
        for cut in 0..encoded.len() {
            assert!(
                c.decode::<Everything>(&encoded[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let mut doc = Vec::new();
        c.open_document(&mut doc, 2);
        c.write_document_key(&mut doc, 0, "a");
        c.close_document(&mut doc);
        assert!(doc.is_empty());
        assert_eq!(c.key_overhead("anything"), 0);
    }
}
