//! [`Value`]: a memento as a generic tree, which migration steps edit.

use std::fmt;

use compact_str::CompactString;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A memento as a generic tree, the way a migration step sees it.
///
/// It keeps everything either codec can say: MessagePack's integer map keys (a
/// `HashMap<u32, _>`), 32-bit floats and byte strings survive a round trip unchanged. Maps keep
/// their order.
///
/// Strings are [`CompactString`]s (re-exported as [`savegame::migrate::CompactString`](crate::migrate::CompactString)):
/// a `String` that keeps up to 24 bytes inline, so the field names and short values of a big
/// memento cost no allocation of their own. It derefs to `str`, compares with `&str` and
/// `String`, and converts from both (`Value::String("hp".into())`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `None`, `()`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (any `i64` or `u64`).
    Int(i128),
    /// A 64-bit float.
    Float(f64),
    /// A 32-bit float (MessagePack keeps them apart).
    F32(f32),
    /// A string (inline up to 24 bytes).
    String(CompactString),
    /// A byte string (MessagePack `bin`).
    Bytes(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// A map, in its original order; keys are usually strings, sometimes integers.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// An empty map.
    #[must_use]
    pub fn map() -> Self {
        Value::Map(Vec::new())
    }

    /// Does `key` (a map key) match the pointer token `token`? Strings match themselves;
    /// integer keys match their decimal form.
    pub(crate) fn key_matches(key: &Value, token: &str) -> bool {
        match key {
            Value::String(s) => s == token,
            Value::Int(n) => token.parse::<i128>().ok() == Some(*n),
            _ => false,
        }
    }

    /// The map key for `token` in this map: an integer when the map's keys are integers and
    /// the token is one, a string otherwise.
    pub(crate) fn key_for(&self, token: &str) -> Value {
        if let Value::Map(entries) = self
            && matches!(entries.first(), Some((Value::Int(_), _)))
            && let Ok(n) = token.parse::<i128>()
        {
            return Value::Int(n);
        }
        Value::String(token.into())
    }

    /// The value of field `key` of a map.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| Self::key_matches(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of field `key` of a map, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| Self::key_matches(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets field `key` of a map (replacing it in place, or adding it at the end); returns the
    /// old value. Does nothing and returns `None` on a value that is not a map.
    pub fn insert(&mut self, key: &str, value: impl Into<Value>) -> Option<Value> {
        let value = value.into();
        if let Some(slot) = self.get_mut(key) {
            return Some(std::mem::replace(slot, value));
        }
        let key = self.key_for(key);
        if let Value::Map(entries) = self {
            entries.push((key, value));
        }
        None
    }

    /// Sets field `key` of a map only if it is absent; returns whether it was set.
    pub fn insert_if_absent(&mut self, key: &str, value: impl Into<Value>) -> bool {
        if self.get(key).is_some() || !matches!(self, Value::Map(_)) {
            return false;
        }
        self.insert(key, value);
        true
    }

    /// Removes field `key` of a map and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        match self {
            Value::Map(entries) => {
                let i = entries
                    .iter()
                    .position(|(k, _)| Self::key_matches(k, key))?;
                Some(entries.remove(i).1)
            }
            _ => None,
        }
    }

    /// Renames field `from` of a map to `to`, keeping its place; returns whether it existed.
    /// An existing field `to` is replaced.
    pub fn rename(&mut self, from: &str, to: &str) -> bool {
        if from == to {
            return self.get(from).is_some();
        }
        let new_key = self.key_for(to);
        let Value::Map(entries) = self else {
            return false;
        };
        let Some(i) = entries.iter().position(|(k, _)| Self::key_matches(k, from)) else {
            return false;
        };
        if let Some(j) = entries.iter().position(|(k, _)| Self::key_matches(k, to)) {
            entries.remove(j);
        }
        let i = entries
            .iter()
            .position(|(k, _)| Self::key_matches(k, from))
            .unwrap_or(i);
        entries[i].0 = new_key;
        true
    }

    /// The elements of an array, to change (empty for anything else).
    pub fn elements_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        match self {
            Value::Array(items) => items.iter_mut(),
            _ => [].iter_mut(),
        }
    }

    /// The values of a map, to change (empty for anything else).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        let entries: &mut [(Value, Value)] = match self {
            Value::Map(entries) => entries,
            _ => &mut [],
        };
        entries.iter_mut().map(|(_, v)| v)
    }

    /// The string, if this is one.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one that fits an `i64`.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(n) => i64::try_from(*n).ok(),
            _ => None,
        }
    }

    /// The number as an `f64`, if this is a number.
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            Value::F32(f) => Some(f64::from(*f)),
            _ => None,
        }
    }

    /// The text a value-mapping table matches this value by: strings as themselves, numbers,
    /// booleans and null as their JSON text. `None` for arrays, maps and bytes.
    #[cfg(feature = "json")]
    pub(crate) fn table_key(&self) -> Option<String> {
        Some(match self {
            Value::String(s) => s.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".into(),
            Value::Float(f) => f.to_string(),
            Value::F32(f) => f.to_string(),
            Value::Bytes(_) | Value::Array(_) | Value::Map(_) => return None,
        })
    }

    /// The value a value-mapping table gives this one (matched by [`table_key`](Self::table_key)),
    /// without making the key of a string.
    #[cfg(feature = "json")]
    pub(crate) fn table_entry<'t>(&self, table: &'t [(String, Value)]) -> Option<&'t Value> {
        self.table_index(table).map(|i| &table[i].1)
    }

    /// The index in `table` of [`table_entry`](Self::table_entry)'s entry.
    #[cfg(feature = "json")]
    pub(crate) fn table_index(&self, table: &[(String, Value)]) -> Option<usize> {
        match self {
            Value::String(s) => table.iter().position(|(k, _)| k == s),
            other => {
                let key = other.table_key()?;
                table.iter().position(|(k, _)| *k == key)
            }
        }
    }

    /// What kind of value this is, for error messages.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) | Value::F32(_) => "a float",
            Value::String(_) => "a string",
            Value::Bytes(_) => "bytes",
            Value::Array(_) => "an array",
            Value::Map(_) => "a map",
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                Value::Int(n.into())
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<f32> for Value {
    fn from(f: f32) -> Self {
        Value::F32(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.into())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s.into())
    }
}

impl From<CompactString> for Value {
    fn from(s: CompactString) -> Self {
        Value::String(s)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Self {
        Value::Array(items)
    }
}

impl<V: Into<Value>> FromIterator<(String, V)> for Value {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        Value::Map(
            iter.into_iter()
                .map(|(k, v)| (Value::String(k.into()), v.into()))
                .collect(),
        )
    }
}

impl fmt::Display for Value {
    /// Compact JSON-like text, for messages and tools.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::F32(x) => write!(f, "{x:?}"),
            Value::String(s) => write!(f, "{s:?}"),
            Value::Bytes(b) => write!(f, "<{} bytes>", b.len()),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(n) => {
                if let Ok(u) = u64::try_from(*n) {
                    s.serialize_u64(u)
                } else if let Ok(i) = i64::try_from(*n) {
                    s.serialize_i64(i)
                } else {
                    Err(serde::ser::Error::custom(format!(
                        "integer {n} does not fit 64 bits"
                    )))
                }
            }
            Value::Float(x) => s.serialize_f64(*x),
            Value::F32(x) => s.serialize_f32(*x),
            Value::String(v) => s.serialize_str(v),
            Value::Bytes(b) => s.serialize_bytes(b),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Int(n.into()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Int(n.into()))
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<Value, E> {
        Ok(Value::Int(n))
    }

    fn visit_f32<E: de::Error>(self, x: f32) -> Result<Value, E> {
        Ok(Value::F32(x))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
        Ok(Value::Float(x))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.into()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s.into()))
    }

    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Value, E> {
        Ok(Value::Bytes(b.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, b: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Bytes(b))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // Never trust a length claim for preallocation beyond a small bound.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Value::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::codec::Codec;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Kind {
        Unit,
        Tuple(u8, i16),
        Struct { f: f32 },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        names: HashMap<u32, String>,
        small: f32,
        big: f64,
        negative: i64,
        huge: u64,
        maybe: Option<String>,
        nothing: Option<u8>,
        kinds: Vec<Kind>,
        tree: BTreeMap<String, Vec<u16>>,
        unit: (),
    }

    fn sample() -> Sample {
        Sample {
            names: [(1, "one".to_string()), (70_000, "many".to_string())].into(),
            small: 0.1,
            big: 1e300,
            negative: i64::MIN,
            huge: u64::MAX,
            maybe: Some("x".into()),
            nothing: None,
            kinds: vec![Kind::Unit, Kind::Tuple(7, -7), Kind::Struct { f: 2.5 }],
            tree: [("a".to_string(), vec![1, 2])].into(),
            unit: (),
        }
    }

    #[test]
    fn every_shape_survives_a_round_trip_through_value_in_both_codecs() {
        for codec in [Codec::Json, Codec::MessagePack] {
            let bytes = codec.encode(&sample()).unwrap();
            let value: Value = codec.decode(&bytes).unwrap();
            let again = codec.encode(&value).unwrap();
            let back: Sample = codec.decode(&again).unwrap();
            assert_eq!(back, sample(), "{codec}");
            if codec == Codec::MessagePack {
                // Bit for bit, even: integer keys, f32 and bin stay what they were.
                assert_eq!(again, bytes);
            }
        }
    }

    #[test]
    fn msgpack_integer_keys_are_addressable_by_their_decimal_form() {
        let bytes = Codec::MessagePack.encode(&sample()).unwrap();
        let mut value: Value = Codec::MessagePack.decode(&bytes).unwrap();
        let names = value.get_mut("names").unwrap();
        assert_eq!(names.get("70000").and_then(Value::as_str), Some("many"));
        names.insert("5", "five");
        assert!(matches!(&names, Value::Map(e) if e.iter().any(|(k, _)| *k == Value::Int(5))));
    }

    #[test]
    fn field_helpers() {
        let mut v: Value = [("hp".to_string(), Value::from(7))].into_iter().collect();
        assert!(v.rename("hp", "health"));
        assert!(!v.rename("hp", "health"));
        assert_eq!(v.get("health"), Some(&Value::Int(7)));
        assert!(v.insert_if_absent("stamina", 100));
        assert!(!v.insert_if_absent("stamina", 5));
        assert_eq!(v.insert("stamina", 6), Some(Value::Int(100)));
        assert_eq!(v.remove("stamina"), Some(Value::Int(6)));
        assert_eq!(v.to_string(), r#"{"health":7}"#);
        v.insert("other", 1);
        assert!(v.rename("other", "health"));
        assert_eq!(v.to_string(), r#"{"health":1}"#);
    }
}
