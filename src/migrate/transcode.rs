//! The MessagePack fast path of value-table steps: a `map` over one memento, done on its bytes.
//!
//! Migrating a memento through the generic [`Value`] tree decodes every value of it and
//! encodes every value again, though a `map` over `/world/entities/*/kind` changes one small
//! value per entity. [`map_leaves`] instead copies the memento's bytes as they are and writes
//! a new value in place of each one the path reaches.
//!
//! The result must be, byte for byte, what the tree would give (decode, map, encode with the
//! MessagePack codec). Bytes that are copied come back unchanged from the tree only when they
//! are the shortest form of their value, the form the encoder writes, so every value on the
//! way is checked to be that; anything else (a longer form, an extension type, invalid UTF-8,
//! deep nesting, a literal token that leads nowhere, a value the table has no entry for, any
//! damage) makes [`map_leaves`] give up with `None`, and the caller migrates through the tree,
//! which then gives the result or the error it always gave.
//!
//! | byte | value | shortest when |
//! |---|---|---|
//! | `00`–`7f`, `e0`–`ff` | fixint | always |
//! | `cc`, `cd`, `ce`, `cf` | u8, u16, u32, u64 (big-endian) | the value needs that width: ≥ 128, ≥ 2^8, ≥ 2^16, ≥ 2^32 |
//! | `d0`, `d1`, `d2`, `d3` | i8, i16, i32, i64 | the value is below −32, −2^7, −2^15, −2^31 |
//! | `a0`–`bf`, `d9`, `da`, `db` | str (fix, 8, 16, 32-bit length) | the length needs that width: ≥ 32, ≥ 2^8, ≥ 2^16 |
//! | `c4`, `c5`, `c6` | bin (8, 16, 32-bit length) | the length needs that width: any, ≥ 2^8, ≥ 2^16 |
//! | `90`–`9f`, `dc`, `dd` | array | the length needs that width: ≥ 16, ≥ 2^16 |
//! | `80`–`8f`, `de`, `df` | map | as arrays |
//! | `c0`, `c2`, `c3`, `ca`, `cb` | nil, false, true, f32, f64 | always |

use super::document::strict_index;
use super::patch::TableMap;
use super::value::Value;
use crate::codec::{Codec, MAX_DEPTH};

/// Nesting deeper than this gives up (well within the codec's [`MAX_DEPTH`], so the tree
/// decodes whatever the fast path accepts).
const DEPTH: usize = MAX_DEPTH / 2;

/// The bytes of `memento` with `op` applied, or `None` when the tree must do it (see the
/// [module docs](self)).
pub(crate) fn map_leaves(memento: &[u8], op: &TableMap<'_>) -> Option<Vec<u8>> {
    let encode = |v: &Value| Codec::MessagePack.encode(v).ok();
    let table = op
        .table
        .iter()
        .map(|(_, v)| encode(v))
        .collect::<Option<Vec<_>>>()?;
    let default = match op.default {
        Some(v) => Some(encode(v)?),
        None => None,
    };
    let mut t = Transcoder {
        input: memento,
        pos: 0,
        out: Vec::with_capacity(memento.len() + memento.len() / 8),
        copied: 0,
        op,
        table,
        default,
    };
    t.value(&op.below, 0)?;
    if t.pos != memento.len() {
        return None;
    }
    t.out.extend_from_slice(&memento[t.copied..]);
    Some(t.out)
}

/// What one MessagePack marker (and, for a scalar, its payload) says.
enum Head<'a> {
    Int(i128),
    /// A string's bytes, valid UTF-8.
    Str(&'a [u8]),
    /// nil, a boolean, a float or bytes: values a table matches only through their text
    /// (kept whole when they are leaves) or never.
    Other,
    Array(usize),
    Map(usize),
}

struct Transcoder<'a, 'o> {
    input: &'a [u8],
    pos: usize,
    /// The input up to `copied`, with the values mapped so far replaced.
    out: Vec<u8>,
    copied: usize,
    op: &'o TableMap<'o>,
    /// The encoded value of each table entry, in table order.
    table: Vec<Vec<u8>>,
    default: Option<Vec<u8>>,
}

impl<'a> Transcoder<'a, '_> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let bytes = self.input.get(self.pos..end)?;
        self.pos = end;
        Some(bytes)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn be<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// A length of `N` bytes that is at least `min` (else a shorter form was due).
    fn len<const N: usize>(&mut self, min: usize) -> Option<usize> {
        let bytes = self.be::<N>()?;
        let mut n = 0usize;
        for b in bytes {
            n = (n << 8) | usize::from(b);
        }
        (n >= min).then_some(n)
    }

    fn str(&mut self, len: usize) -> Option<Head<'a>> {
        let bytes = self.take(len)?;
        if !bytes.is_ascii() {
            std::str::from_utf8(bytes).ok()?;
        }
        Some(Head::Str(bytes))
    }

    /// Reads one marker, and the payload of a scalar, checking it is the shortest form.
    fn head(&mut self) -> Option<Head<'a>> {
        let marker = self.byte()?;
        let int = |n: i128, shortest: bool| shortest.then_some(Head::Int(n));
        Some(match marker {
            0x00..=0x7f => Head::Int(marker.into()),
            0xe0..=0xff => Head::Int(i128::from(marker as i8)),
            0x80..=0x8f => Head::Map(usize::from(marker & 0x0f)),
            0x90..=0x9f => Head::Array(usize::from(marker & 0x0f)),
            0xa0..=0xbf => self.str(usize::from(marker & 0x1f))?,
            0xc0 | 0xc2 | 0xc3 => Head::Other,
            0xca => self.take(4).map(|_| Head::Other)?,
            0xcb => self.take(8).map(|_| Head::Other)?,
            0xc4 => {
                let n = self.len::<1>(0)?;
                self.take(n).map(|_| Head::Other)?
            }
            0xc5 => {
                let n = self.len::<2>(1 << 8)?;
                self.take(n).map(|_| Head::Other)?
            }
            0xc6 => {
                let n = self.len::<4>(1 << 16)?;
                self.take(n).map(|_| Head::Other)?
            }
            0xcc => {
                let n = u8::from_be_bytes(self.be()?);
                int(n.into(), n >= 0x80)?
            }
            0xcd => {
                let n = u16::from_be_bytes(self.be()?);
                int(n.into(), n >= 1 << 8)?
            }
            0xce => {
                let n = u32::from_be_bytes(self.be()?);
                int(n.into(), n >= 1 << 16)?
            }
            0xcf => {
                let n = u64::from_be_bytes(self.be()?);
                int(n.into(), n >= 1 << 32)?
            }
            0xd0 => {
                let n = i8::from_be_bytes(self.be()?);
                int(n.into(), n < -32)?
            }
            0xd1 => {
                let n = i16::from_be_bytes(self.be()?);
                int(n.into(), n < -(1 << 7))?
            }
            0xd2 => {
                let n = i32::from_be_bytes(self.be()?);
                int(n.into(), n < -(1 << 15))?
            }
            0xd3 => {
                let n = i64::from_be_bytes(self.be()?);
                int(n.into(), n < -(1 << 31))?
            }
            0xd9 => {
                let n = self.len::<1>(32)?;
                self.str(n)?
            }
            0xda => {
                let n = self.len::<2>(1 << 8)?;
                self.str(n)?
            }
            0xdb => {
                let n = self.len::<4>(1 << 16)?;
                self.str(n)?
            }
            0xdc => Head::Array(self.len::<2>(16)?),
            0xdd => Head::Array(self.len::<4>(1 << 16)?),
            0xde => Head::Map(self.len::<2>(16)?),
            0xdf => Head::Map(self.len::<4>(1 << 16)?),
            // 0xc1 (never used) and the extension types.
            _ => return None,
        })
    }

    /// Reads past one whole value, checking it is in the shortest form throughout.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        match self.head()? {
            Head::Array(n) => (0..n).try_for_each(|_| self.skip(depth + 1)),
            Head::Map(n) => (0..n).try_for_each(|_| {
                self.skip(depth + 1)?;
                self.skip(depth + 1)
            }),
            Head::Int(_) | Head::Str(_) | Head::Other => Some(()),
        }
    }

    /// Copies one value, with `tokens` (`None` a wildcard) leading to the values to map.
    fn value(&mut self, tokens: &[Option<&str>], depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        let Some((token, rest)) = tokens.split_first() else {
            return self.leaf(depth);
        };
        match self.head()? {
            Head::Array(n) => {
                let only = match token {
                    Some(t) => Some(strict_index(t).filter(|&i| i < n)?),
                    None => None,
                };
                for i in 0..n {
                    if only.is_none_or(|only| only == i) {
                        self.value(rest, depth + 1)?;
                    } else {
                        self.skip(depth + 1)?;
                    }
                }
            }
            Head::Map(n) => {
                let mut found = false;
                for _ in 0..n {
                    let key_start = self.pos;
                    let hit = match self.head()? {
                        // As the tree: a wildcard takes string and integer keys, a literal
                        // the first key that is it (an integer key by its decimal form).
                        Head::Str(s) => token.is_none_or(|t| !found && s == t.as_bytes()),
                        Head::Int(k) => {
                            token.is_none_or(|t| !found && t.parse::<i128>().ok() == Some(k))
                        }
                        Head::Other => false,
                        Head::Array(_) | Head::Map(_) => {
                            self.pos = key_start;
                            self.skip(depth + 1)?;
                            false
                        }
                    };
                    if hit {
                        found = true;
                        self.value(rest, depth + 1)?;
                    } else {
                        self.skip(depth + 1)?;
                    }
                }
                if token.is_some() && !found {
                    return None;
                }
            }
            // A wildcard over a scalar matches nothing; a literal token fails the step.
            Head::Int(_) | Head::Str(_) | Head::Other => token.is_none().then_some(())?,
        }
        Some(())
    }

    /// Replaces one value by its table entry (or the default).
    fn leaf(&mut self, depth: usize) -> Option<()> {
        let start = self.pos;
        let index = match self.head()? {
            Head::Str(s) => self.op.table.iter().position(|(k, _)| k.as_bytes() == s),
            Head::Int(n) => Value::Int(n).table_index(self.op.table),
            Head::Other | Head::Array(_) | Head::Map(_) => {
                // Rare enough for the tree's own decoding of the value.
                self.pos = start;
                self.skip(depth)?;
                let value: Value = Codec::MessagePack
                    .decode(&self.input[start..self.pos])
                    .ok()?;
                value.table_index(self.op.table)
            }
        };
        let bytes = match index {
            Some(i) => self.table.get(i)?,
            None => self.default.as_ref()?,
        };
        self.out.extend_from_slice(&self.input[self.copied..start]);
        self.out.extend_from_slice(bytes);
        self.copied = self.pos;
        Some(())
    }
}
