//! The dump format: a save file as JSON that people can read and edit, and that `pack` turns
//! back into the same mementos, byte for byte.
//!
//! ```json
//! {
//!   "savegame_dump": 1,
//!   "slot": {"numbered": 1},
//!   "schema_version": 3,
//!   "generation": 1,
//!   "codec": "msgpack",
//!   "encrypted": true,
//!   "saved_at": "2025-11-29T20:08:00.123Z",
//!   "memento_versions": {"player": 3},
//!   "metadata": {
//!     "label": "Level 3",
//!     "playtime_ms": 1800000,
//!     "app_version": "1.2.0",
//!     "user": {"chapter": "2"},
//!     "thumbnail": {"$bytes": "iVBORw0KGgo="}
//!   },
//!   "mementos": {
//!     "player": {"health": 182, "position": {"x": {"$f32": 3955.56}, "y": {"$f32": -8272.22}}}
//!   }
//! }
//! ```
//!
//! - `slot` is `{"numbered": n}`, `{"autosave": n}` or `"quicksave"`. `encrypted` is for
//!   reading only: `pack` encrypts when it is given a key. `saved_at` (RFC 3339, UTC, to the
//!   millisecond) is kept by `pack` in a plain file; an encrypted file, and a dump without
//!   `saved_at`, are stamped with the time `pack` writes (as with `pack --now`). Every other
//!   field is read back by `pack`; unknown fields are refused, so a typo in an edited dump is
//!   an error, not a silently ignored field.
//! - `authenticated: true` marks a dump of an integrity-only file (format version 2): `pack`
//!   given a key writes an integrity-only file again (readable, with an HMAC-SHA256 tag)
//!   instead of an encrypted one. Absent for other files.
//! - `compression` is `"lz4"` or `"zstd"` for a file with a compressed body (format version 2);
//!   `pack` compresses again (Zstandard at its default level, 1). Absent for other files.
//! - `memento_versions` holds the memento versions other than 1 (format version 2), by id;
//!   `pack` writes them back. Absent when every memento is at version 1 (as in every file of
//!   format version 1).
//! - A memento is plain JSON wherever JSON can say what the codec said: strings, booleans,
//!   null, integers, 64-bit floats (written so they read back bit for bit), arrays, and maps
//!   whose keys are distinct strings. A JSON-codec save always dumps as plain JSON.
//! - Where JSON cannot, a one-key object carries a tag:
//!
//! | tag | for | example |
//! |---|---|---|
//! | `$f32` | a 32-bit float (MessagePack keeps them apart from 64-bit ones) | `{"$f32": 1.5}`, `{"$f32": "NaN"}` |
//! | `$f64` | a 64-bit float that JSON has no number for | `{"$f64": "inf"}`, `"-inf"`, `"NaN"` |
//! | `$bytes` | a byte string (MessagePack `bin`), standard base64 | `{"$bytes": "AAEC"}` |
//! | `$map` | a map whose keys are not all distinct strings (MessagePack integer keys), or that has a key starting with `$` | `{"$map": [[1, "one"], [70000, "many"]]}` |
//!
//! - Reading, any object with a key that starts with `$` must be exactly one of these tags:
//!   an unknown tag, or a tag beside other keys, is an error naming its JSON Pointer. Writing,
//!   a user's map that has such a key is written in the `$map` form, so no user data is ever
//!   read as a tag.
//! - Map order is kept (struct fields stay in their order), so re-encoding gives the same
//!   bytes.
//!
//! Limits: a NaN comes back as the canonical quiet NaN (its payload bits are not kept); JSON's
//! nesting cap of 128 levels applies to the dump, and each `$map` level adds two, so a
//! memento nested close to the codec's own cap of 128 with integer-keyed maps may dump but not
//! pack.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use savegame::format::Header;
use savegame::migrate::{Document, Value, from_document, to_document};
use savegame::{Codec, Metadata, SlotId, Snapshot};
use serde::{Deserialize, Serialize};

/// The version of the dump format this tool writes and reads.
pub const DUMP_FORMAT: u32 = 1;

/// A whole dump (see the [module docs](self)).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dump {
    /// The dump format's version: [`DUMP_FORMAT`].
    pub savegame_dump: u32,
    /// The slot the file was written for.
    pub slot: SlotJson,
    /// The schema version of the document.
    pub schema_version: u32,
    /// The slot's save counter.
    #[serde(default = "first_generation")]
    pub generation: u64,
    /// The codec of the mementos.
    pub codec: CodecJson,
    /// Whether the dumped file was encrypted (for reading only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// Whether the dumped file was integrity-only: `pack` with a key writes one again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authenticated: Option<bool>,
    /// How the dumped file's body was compressed (`lz4`, `zstd`): `pack` compresses again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// When the dumped file was written: RFC 3339, UTC (`pack` keeps it in plain files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_at: Option<String>,
    /// The memento versions other than 1, by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub memento_versions: BTreeMap<String, u32>,
    /// Label, playtime, app version, user fields, thumbnail.
    #[serde(default)]
    pub metadata: MetadataJson,
    /// Memento id → memento, tagged as the module docs say.
    pub mementos: Value,
}

fn first_generation() -> u64 {
    1
}

/// A slot as dumps write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotJson {
    /// A player slot.
    Numbered(u32),
    /// An autosave slot.
    Autosave(u32),
    /// The quicksave slot.
    Quicksave,
}

/// A codec as dumps write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodecJson {
    /// JSON.
    Json,
    /// MessagePack.
    Msgpack,
}

/// The metadata as dumps write it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataJson {
    /// What the menu calls the save.
    pub label: String,
    /// Playtime in milliseconds.
    pub playtime_ms: u64,
    /// The version of the game that wrote the save.
    pub app_version: String,
    /// The game's own fields.
    pub user: BTreeMap<String, String>,
    /// The thumbnail, `{"$bytes": "<base64>"}`, or null.
    pub thumbnail: Option<Value>,
}

/// Something in a dump that cannot be read back, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpError {
    /// A JSON Pointer into the dump (`/mementos/player/pos/0`).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "at {}: {}", self.path, self.reason)
        }
    }
}

/// An error found while converting, with the path built on the way back up.
struct At {
    tokens: Vec<String>,
    reason: String,
}

impl At {
    fn new(reason: impl Into<String>) -> Self {
        At {
            tokens: Vec::new(),
            reason: reason.into(),
        }
    }

    fn within(mut self, token: impl Into<String>) -> Self {
        self.tokens.push(token.into());
        self
    }

    fn into_error(self, prefix: &[&str]) -> DumpError {
        let mut path = String::new();
        let tokens = prefix
            .iter()
            .map(|t| (*t).to_owned())
            .chain(self.tokens.into_iter().rev());
        for t in tokens {
            path.push('/');
            path.push_str(&t.replace('~', "~0").replace('/', "~1"));
        }
        DumpError {
            path,
            reason: self.reason,
        }
    }
}

const TAG_F32: &str = "$f32";
const TAG_F64: &str = "$f64";
const TAG_BYTES: &str = "$bytes";
const TAG_MAP: &str = "$map";

fn tagged(tag: &str, value: Value) -> Value {
    Value::Map(vec![(Value::String(tag.into()), value)])
}

fn non_finite_name(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

fn non_finite(name: &str) -> Option<f64> {
    match name {
        "NaN" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// The JSON number for an f32: its shortest decimal form when that reads back (through an
/// f64, as JSON readers do) to the very same f32, else its exact value as an f64.
fn f32_number(x: f32) -> Value {
    let short = x.to_string().parse::<f64>().unwrap_or(f64::from(x));
    if (short as f32).to_bits() == x.to_bits() {
        Value::Float(short)
    } else {
        Value::Float(f64::from(x))
    }
}

/// A memento (or any value) in the dump's JSON form.
fn to_json(v: &Value) -> Result<Value, At> {
    Ok(match v {
        Value::Null | Value::Bool(_) | Value::String(_) => v.clone(),
        Value::Int(n) => {
            if i64::try_from(*n).is_err() && u64::try_from(*n).is_err() {
                return Err(At::new(format!("integer {n} does not fit 64 bits")));
            }
            v.clone()
        }
        Value::Float(x) if x.is_finite() => v.clone(),
        Value::Float(x) => tagged(TAG_F64, Value::String(non_finite_name(*x).into())),
        Value::F32(x) if x.is_finite() => tagged(TAG_F32, f32_number(*x)),
        Value::F32(x) => tagged(
            TAG_F32,
            Value::String(non_finite_name(f64::from(*x)).into()),
        ),
        Value::Bytes(b) => tagged(TAG_BYTES, Value::String(BASE64.encode(b).into())),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| to_json(item).map_err(|e| e.within(i.to_string())))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => {
            if plain_map(entries) {
                Value::Map(
                    entries
                        .iter()
                        .map(|(k, v)| {
                            let token = k.as_str().unwrap_or_default();
                            Ok((k.clone(), to_json(v).map_err(|e| e.within(token))?))
                        })
                        .collect::<Result<_, At>>()?,
                )
            } else {
                let pairs = entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, v))| {
                        let at = |e: At, j: usize| e.within(j.to_string()).within(i.to_string());
                        Ok(Value::Array(vec![
                            to_json(k).map_err(|e| at(e, 0))?,
                            to_json(v).map_err(|e| at(e, 1))?,
                        ]))
                    })
                    .collect::<Result<_, At>>()?;
                tagged(TAG_MAP, Value::Array(pairs))
            }
        }
    })
}

/// A value in the dump's JSON form (see the [module docs](self)), for showing it. An integer
/// beyond 64 bits, which no codec writes, is shown as its decimal text.
pub fn json_form(v: &Value) -> Value {
    to_json(v).unwrap_or_else(|_| Value::String(v.to_string().into()))
}

/// Can this map be a plain JSON object? Its keys must be distinct strings, none starting
/// with `$`.
fn plain_map(entries: &[(Value, Value)]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    entries.iter().all(|(k, _)| match k {
        Value::String(s) => !s.starts_with('$') && seen.insert(s.as_str()),
        _ => false,
    })
}

/// A value of the dump's JSON form back as the codec's value.
fn from_json(v: &Value) -> Result<Value, At> {
    match v {
        Value::Array(items) => Ok(Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| from_json(item).map_err(|e| e.within(i.to_string())))
                .collect::<Result<_, _>>()?,
        )),
        Value::Map(entries) => {
            if let Some(tag) = entries
                .iter()
                .find_map(|(k, _)| k.as_str().filter(|s| s.starts_with('$')))
            {
                if entries.len() != 1 {
                    return Err(At::new(format!(
                        "a {tag:?} tag must be the only key of its object (a map with keys \
                         starting with '$' is written as {{\"$map\": [[key, value], ...]}})"
                    )));
                }
                if ![TAG_F32, TAG_F64, TAG_BYTES, TAG_MAP].contains(&tag) {
                    return Err(At::new(format!(
                        "unknown tag {tag:?} (the tags are $f32, $f64, $bytes and $map)"
                    )));
                }
                let inner = &entries[0].1;
                return untag(tag, inner).map_err(|e| e.within(tag));
            }
            Ok(Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let token = k.as_str().unwrap_or_default();
                        Ok((k.clone(), from_json(v).map_err(|e| e.within(token))?))
                    })
                    .collect::<Result<_, At>>()?,
            ))
        }
        _ => Ok(v.clone()),
    }
}

fn untag(tag: &str, inner: &Value) -> Result<Value, At> {
    match tag {
        TAG_F32 => {
            let x = match inner {
                Value::Float(x) => *x,
                Value::Int(n) => *n as f64,
                Value::String(s) => non_finite(s).ok_or_else(|| {
                    At::new(format!(
                        "{s:?} is not a number; $f32 takes a number, \"NaN\", \"inf\" or \"-inf\""
                    ))
                })?,
                other => {
                    return Err(At::new(format!(
                        "$f32 takes a number, not {}",
                        other.kind()
                    )));
                }
            };
            let narrow = x as f32;
            if x.is_finite() && !narrow.is_finite() {
                return Err(At::new(format!(
                    "{x} is out of the range of a 32-bit float"
                )));
            }
            Ok(Value::F32(narrow))
        }
        TAG_F64 => match inner {
            Value::Float(x) => Ok(Value::Float(*x)),
            Value::Int(n) => Ok(Value::Float(*n as f64)),
            Value::String(s) => non_finite(s).map(Value::Float).ok_or_else(|| {
                At::new(format!(
                    "{s:?} is not a number; $f64 takes a number, \"NaN\", \"inf\" or \"-inf\""
                ))
            }),
            other => Err(At::new(format!(
                "$f64 takes a number, not {}",
                other.kind()
            ))),
        },
        TAG_BYTES => match inner {
            Value::String(s) => BASE64
                .decode(s)
                .map(Value::Bytes)
                .map_err(|e| At::new(format!("$bytes is not standard base64: {e}"))),
            other => Err(At::new(format!(
                "$bytes takes a base64 string, not {}",
                other.kind()
            ))),
        },
        TAG_MAP => {
            let Value::Array(pairs) = inner else {
                return Err(At::new(format!(
                    "$map takes an array of [key, value] pairs, not {}",
                    inner.kind()
                )));
            };
            let entries = pairs
                .iter()
                .enumerate()
                .map(|(i, pair)| match pair {
                    Value::Array(kv) if kv.len() == 2 => Ok((
                        from_json(&kv[0]).map_err(|e| e.within("0").within(i.to_string()))?,
                        from_json(&kv[1]).map_err(|e| e.within("1").within(i.to_string()))?,
                    )),
                    _ => {
                        Err(At::new("each $map entry is a [key, value] pair").within(i.to_string()))
                    }
                })
                .collect::<Result<_, At>>()?;
            Ok(Value::Map(entries))
        }
        other => Err(At::new(format!(
            "unknown tag {other:?} (the tags are $f32, $f64, $bytes and $map)"
        ))),
    }
}

/// The dump of an opened save.
///
/// # Errors
/// [`savegame::Error::Decode`] when a memento does not decode; a [`DumpError`] (as a
/// [`DumpFailure::Dump`]) for a value JSON cannot carry.
pub fn dump(header: &Header, snapshot: &Snapshot) -> Result<Dump, DumpFailure> {
    header
        .codec
        .require_self_describing("savegame dump (it writes mementos as generic values)")
        .map_err(DumpFailure::Library)?;
    let doc = to_document(snapshot).map_err(DumpFailure::Library)?;
    let mut mementos = Vec::new();
    for id in doc.ids() {
        let value = doc.memento(id).unwrap_or(&Value::Null);
        let json =
            to_json(value).map_err(|e| DumpFailure::Dump(e.into_error(&["mementos", id])))?;
        mementos.push((Value::String(id.into()), json));
    }
    let m = snapshot.metadata();
    Ok(Dump {
        savegame_dump: DUMP_FORMAT,
        slot: slot_json(header.slot)?,
        schema_version: header.schema_version,
        generation: header.generation,
        codec: match header.codec {
            Codec::Json => CodecJson::Json,
            Codec::MessagePack => CodecJson::Msgpack,
            other => {
                return Err(DumpFailure::Dump(DumpError {
                    path: "/codec".into(),
                    reason: format!("codec {other} has no name in dumps"),
                }));
            }
        },
        encrypted: Some(header.encrypted),
        authenticated: header.authenticated.then_some(true),
        compression: (header.compression != savegame::Compression::None)
            .then(|| header.compression.name().to_owned()),
        saved_at: Some(crate::text::rfc3339(header.saved_at)),
        memento_versions: snapshot
            .ids()
            .filter_map(|id| {
                let v = snapshot.memento_version(id)?;
                (v != savegame::format::DEFAULT_MEMENTO_VERSION).then(|| (id.to_owned(), v))
            })
            .collect(),
        metadata: MetadataJson {
            label: m.label.clone(),
            playtime_ms: u64::try_from(m.playtime.as_millis()).unwrap_or(u64::MAX),
            app_version: m.app_version.clone(),
            user: m.user.clone(),
            thumbnail: m
                .thumbnail
                .as_ref()
                .map(|t| tagged(TAG_BYTES, Value::String(BASE64.encode(t).into()))),
        },
        mementos: Value::Map(mementos),
    })
}

fn slot_json(slot: SlotId) -> Result<SlotJson, DumpFailure> {
    match slot {
        SlotId::Numbered(n) => Ok(SlotJson::Numbered(n)),
        SlotId::Autosave(n) => Ok(SlotJson::Autosave(n)),
        SlotId::Quicksave => Ok(SlotJson::Quicksave),
        other => Err(DumpFailure::Dump(DumpError {
            path: "/slot".into(),
            reason: format!("slot {other} has no form in dumps"),
        })),
    }
}

/// Why a dump could not be made or read back.
#[derive(Debug)]
pub enum DumpFailure {
    /// The library refused (a memento that does not decode or encode).
    Library(savegame::Error),
    /// The dump holds something that cannot become a save, or the save something JSON cannot
    /// carry.
    Dump(DumpError),
}

/// What a dump packs into: the snapshot and the header fields to seal it with.
#[derive(Debug)]
pub struct Packed {
    /// Mementos and metadata.
    pub snapshot: Snapshot,
    /// The slot.
    pub slot: SlotId,
    /// The schema version.
    pub schema_version: u32,
    /// The generation.
    pub generation: u64,
    /// Whether the dump was of an integrity-only file.
    pub authenticated: bool,
    /// How the dumped file was compressed.
    pub compression: savegame::Compression,
}

/// The snapshot a dump describes, in `codec` (default: the dump's).
///
/// # Errors
/// A [`DumpError`] naming the place in the dump; [`savegame::Error::Encode`] or
/// [`savegame::Error::InvalidId`] when a memento cannot be stored in the codec.
pub fn pack(dump: Dump, codec: Option<Codec>) -> Result<Packed, DumpFailure> {
    let bad = |path: &str, reason: String| {
        DumpFailure::Dump(DumpError {
            path: path.into(),
            reason,
        })
    };
    let compression = match dump.compression.as_deref() {
        None | Some("none") => savegame::Compression::None,
        Some("lz4") => savegame::Compression::Lz4,
        Some("zstd") => savegame::Compression::zstd(),
        Some(other) => {
            return Err(bad(
                "/compression",
                format!("unknown compression {other:?} (expected lz4 or zstd)"),
            ));
        }
    };
    if dump.savegame_dump != DUMP_FORMAT {
        return Err(bad(
            "/savegame_dump",
            format!(
                "dump format {} is not one this tool reads (it reads {DUMP_FORMAT})",
                dump.savegame_dump
            ),
        ));
    }
    let codec = codec.unwrap_or(match dump.codec {
        CodecJson::Json => Codec::Json,
        CodecJson::Msgpack => Codec::MessagePack,
    });
    let Value::Map(entries) = &dump.mementos else {
        return Err(bad(
            "/mementos",
            format!(
                "mementos is an object of id → memento, not {}",
                dump.mementos.kind()
            ),
        ));
    };
    let mut doc = Document::new();
    for (id, memento) in entries {
        let Some(id) = id.as_str() else {
            return Err(bad("/mementos", "memento ids are strings".into()));
        };
        let value =
            from_json(memento).map_err(|e| DumpFailure::Dump(e.into_error(&["mementos", id])))?;
        if doc.insert(id, value).is_some() {
            return Err(bad("/mementos", format!("memento id {id:?} appears twice")));
        }
    }
    let mut metadata = Metadata::default();
    metadata.label = dump.metadata.label;
    metadata.playtime = Duration::from_millis(dump.metadata.playtime_ms);
    metadata.app_version = dump.metadata.app_version;
    metadata.user = dump.metadata.user;
    metadata.thumbnail = match dump.metadata.thumbnail {
        None => None,
        Some(t) => match from_json(&t) {
            Ok(Value::Bytes(b)) => Some(b),
            Ok(other) => {
                return Err(bad(
                    "/metadata/thumbnail",
                    format!(
                        "the thumbnail is {{\"$bytes\": \"<base64>\"}} or null, not {}",
                        other.kind()
                    ),
                ));
            }
            Err(e) => return Err(DumpFailure::Dump(e.into_error(&["metadata", "thumbnail"]))),
        },
    };
    let mut snapshot = from_document(doc, codec, metadata).map_err(DumpFailure::Library)?;
    for (id, version) in &dump.memento_versions {
        snapshot.set_memento_version(id, *version).map_err(|_| {
            bad(
                "/memento_versions",
                format!("memento {id:?} has a version but is not in mementos"),
            )
        })?;
    }
    let slot = match dump.slot {
        SlotJson::Numbered(n) => SlotId::Numbered(n),
        SlotJson::Autosave(n) => SlotId::Autosave(n),
        SlotJson::Quicksave => SlotId::Quicksave,
    };
    Ok(Packed {
        snapshot,
        slot,
        schema_version: dump.schema_version,
        generation: dump.generation,
        authenticated: dump.authenticated == Some(true),
        compression,
    })
}

#[cfg(test)]
mod tests;
