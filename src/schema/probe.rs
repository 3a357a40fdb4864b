//! Which fields may a saved value lack? serde-reflection cannot see `#[serde(default)]` (nor
//! tell an `Option` field read as `None` when missing from one that must be there), so each
//! field is tried: a valid value of the memento (one the trace itself made) is written as a
//! save writes it, in MessagePack with struct maps, the field is taken out, and the memento
//! type is asked to read it back. If it can, an old save that lacks the field still loads, in
//! JSON and MessagePack alike: both give serde's derive a map of fields, and serde's rule for a
//! missing field is its own, not the codec's.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::shape::{Field, Schema, Type, TypeDef, VariantBody};

/// A MessagePack value, as rmp-serde's `deserialize_any` gives it.
#[derive(Debug, Clone)]
enum Dyn {
    Nil,
    Bool(bool),
    U64(u64),
    I64(i64),
    U128(u128),
    I128(i128),
    F32(f32),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Dyn>),
    Map(Vec<(Dyn, Dyn)>),
}

impl Serialize for Dyn {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dyn::Nil => s.serialize_unit(),
            Dyn::Bool(b) => s.serialize_bool(*b),
            Dyn::U64(n) => s.serialize_u64(*n),
            Dyn::I64(n) => s.serialize_i64(*n),
            Dyn::U128(n) => s.serialize_u128(*n),
            Dyn::I128(n) => s.serialize_i128(*n),
            Dyn::F32(n) => s.serialize_f32(*n),
            Dyn::F64(n) => s.serialize_f64(*n),
            Dyn::Str(t) => s.serialize_str(t),
            Dyn::Bin(b) => s.serialize_bytes(b),
            Dyn::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Dyn::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

struct DynVisitor;

impl<'de> Visitor<'de> for DynVisitor {
    type Value = Dyn;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any MessagePack value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Dyn, E> {
        Ok(Dyn::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Dyn, E> {
        Ok(Dyn::U64(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Dyn, E> {
        Ok(Dyn::I64(v))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Dyn, E> {
        Ok(Dyn::U128(v))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Dyn, E> {
        Ok(Dyn::I128(v))
    }
    fn visit_f32<E>(self, v: f32) -> Result<Dyn, E> {
        Ok(Dyn::F32(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Dyn, E> {
        Ok(Dyn::F64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Dyn, E> {
        Ok(Dyn::Str(v.to_owned()))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Dyn, E> {
        Ok(Dyn::Bin(v.to_vec()))
    }
    fn visit_unit<E>(self) -> Result<Dyn, E> {
        Ok(Dyn::Nil)
    }
    fn visit_none<E>(self) -> Result<Dyn, E> {
        Ok(Dyn::Nil)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Dyn, D::Error> {
        Dyn::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Dyn, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Dyn::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dyn, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Dyn::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Dyn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dyn, D::Error> {
        d.deserialize_any(DynVisitor)
    }
}

/// A struct's fields, found in a value: the named type, the variant for a struct variant, and
/// where in the value its map of fields is (the indexes of the entries or elements down to it).
struct Occurrence {
    key: (String, Option<usize>),
    at: Vec<usize>,
}

/// Sets [`Field::default`] on every field of `schema` that the memento type reads back from a
/// value without it, trying each field on the first of `witnesses` that holds its struct.
pub(crate) fn find_defaults<M: Serialize + DeserializeOwned>(schema: &mut Schema, witnesses: &[M]) {
    let mut decided: BTreeMap<(String, Option<usize>, String), bool> = BTreeMap::new();
    for witness in witnesses {
        let Ok(bytes) = rmp_serde::to_vec_named(witness) else {
            continue;
        };
        let Ok(value) = rmp_serde::from_slice::<Dyn>(&bytes) else {
            continue;
        };
        // The value as it stands must read back, or a failure below would say nothing.
        if !reads_back::<M>(&value) {
            continue;
        }
        let mut found = Vec::new();
        walk(schema, &value, schema.root(), &mut Vec::new(), &mut found);
        for occurrence in found {
            let Some(fields) = fields_of(schema, &occurrence.key) else {
                continue;
            };
            let Some(Dyn::Map(entries)) = locate(&value, &occurrence.at) else {
                continue;
            };
            for field in fields {
                let key = (
                    occurrence.key.0.clone(),
                    occurrence.key.1,
                    field.name.clone(),
                );
                if decided.contains_key(&key) {
                    continue;
                }
                let present = entries
                    .iter()
                    .position(|(k, _)| matches!(k, Dyn::Str(name) if *name == field.name));
                let may_lack = match present {
                    // The value already lacks it (`skip_serializing_if`) and reads back.
                    None => true,
                    Some(entry) => {
                        let mut without = value.clone();
                        if let Some(Dyn::Map(entries)) = locate_mut(&mut without, &occurrence.at) {
                            entries.remove(entry);
                        }
                        reads_back::<M>(&without)
                    }
                };
                decided.insert(key, may_lack);
            }
        }
    }
    for ((name, variant, field), may_lack) in decided {
        if let Some(fields) = fields_of_mut(schema, &name, variant)
            && let Some(f) = fields.iter_mut().find(|f| f.name == field)
        {
            f.default = may_lack;
        }
    }
}

fn reads_back<M: DeserializeOwned>(value: &Dyn) -> bool {
    rmp_serde::to_vec_named(value).is_ok_and(|bytes| rmp_serde::from_slice::<M>(&bytes).is_ok())
}

fn fields_of<'s>(schema: &'s Schema, key: &(String, Option<usize>)) -> Option<&'s [Field]> {
    match (schema.get(&key.0)?, key.1) {
        (TypeDef::Struct(fields), None) => Some(fields),
        (TypeDef::Enum(variants), Some(i)) => match &variants.get(i)?.as_ref()?.body {
            VariantBody::Struct(fields) => Some(fields),
            _ => None,
        },
        _ => None,
    }
}

fn fields_of_mut<'s>(
    schema: &'s mut Schema,
    name: &str,
    variant: Option<usize>,
) -> Option<&'s mut Vec<Field>> {
    match (schema.get_mut(name)?, variant) {
        (TypeDef::Struct(fields), None) => Some(fields),
        (TypeDef::Enum(variants), Some(i)) => match &mut variants.get_mut(i)?.as_mut()?.body {
            VariantBody::Struct(fields) => Some(fields),
            _ => None,
        },
        _ => None,
    }
}

/// The child `i` of a value: an array's element, or a map entry's value (`2 * i + 1`) or key
/// (`2 * i`).
fn child(value: &Dyn, i: usize) -> Option<&Dyn> {
    match value {
        Dyn::Array(items) => items.get(i),
        Dyn::Map(entries) => entries
            .get(i / 2)
            .map(|(k, v)| if i.is_multiple_of(2) { k } else { v }),
        _ => None,
    }
}

fn child_mut(value: &mut Dyn, i: usize) -> Option<&mut Dyn> {
    match value {
        Dyn::Array(items) => items.get_mut(i),
        Dyn::Map(entries) => entries
            .get_mut(i / 2)
            .map(|(k, v)| if i.is_multiple_of(2) { k } else { v }),
        _ => None,
    }
}

fn locate<'v>(value: &'v Dyn, at: &[usize]) -> Option<&'v Dyn> {
    at.iter().try_fold(value, |v, i| child(v, *i))
}

fn locate_mut<'v>(value: &'v mut Dyn, at: &[usize]) -> Option<&'v mut Dyn> {
    at.iter().try_fold(value, |v, i| child_mut(v, *i))
}

/// Finds every struct in `value`, read as `ty`.
fn walk(schema: &Schema, value: &Dyn, ty: &Type, at: &mut Vec<usize>, out: &mut Vec<Occurrence>) {
    let into = |i: usize, ty: &Type, out: &mut Vec<Occurrence>, at: &mut Vec<usize>| {
        if let Some(v) = child(value, i) {
            at.push(i);
            walk(schema, v, ty, at, out);
            at.pop();
        }
    };
    match ty {
        Type::Option(inner) if !matches!(value, Dyn::Nil) => walk(schema, value, inner, at, out),
        Type::Seq(inner) | Type::Array(inner, _) => {
            if let Dyn::Array(items) = value {
                for i in 0..items.len() {
                    into(i, inner, out, at);
                }
            }
        }
        Type::Tuple(types) => {
            for (i, t) in types.iter().enumerate() {
                into(i, t, out, at);
            }
        }
        Type::Map(k, v) => {
            if let Dyn::Map(entries) = value {
                for i in 0..entries.len() {
                    into(2 * i, k, out, at);
                    into(2 * i + 1, v, out, at);
                }
            }
        }
        Type::Named(name) => match schema.get(name) {
            Some(TypeDef::Newtype(inner)) => walk(schema, value, inner, at, out),
            Some(TypeDef::Tuple(types)) => {
                for (i, t) in types.iter().enumerate() {
                    into(i, t, out, at);
                }
            }
            Some(TypeDef::Struct(fields)) => {
                out.push(Occurrence {
                    key: (name.clone(), None),
                    at: at.clone(),
                });
                walk_fields(schema, value, fields, at, out);
            }
            Some(TypeDef::Enum(variants)) => {
                // rmp-serde: a unit variant is its name; any other, a map from its name to
                // its value.
                let Dyn::Map(entries) = value else { return };
                let Some((Dyn::Str(tag), inner)) = entries.first() else {
                    return;
                };
                let Some((index, variant)) = variants
                    .iter()
                    .enumerate()
                    .find_map(|(i, v)| Some((i, v.as_ref().filter(|v| v.name == *tag)?)))
                else {
                    return;
                };
                at.push(1);
                match &variant.body {
                    VariantBody::Unit => {}
                    VariantBody::Newtype(t) => walk(schema, inner, t, at, out),
                    VariantBody::Tuple(types) => {
                        for (i, t) in types.iter().enumerate() {
                            if let Some(v) = child(inner, i) {
                                at.push(i);
                                walk(schema, v, t, at, out);
                                at.pop();
                            }
                        }
                    }
                    VariantBody::Struct(fields) => {
                        out.push(Occurrence {
                            key: (name.clone(), Some(index)),
                            at: at.clone(),
                        });
                        walk_fields(schema, inner, fields, at, out);
                    }
                }
                at.pop();
            }
            Some(TypeDef::Unit) | None => {}
        },
        _ => {}
    }
}

fn walk_fields(
    schema: &Schema,
    value: &Dyn,
    fields: &[Field],
    at: &mut Vec<usize>,
    out: &mut Vec<Occurrence>,
) {
    let Dyn::Map(entries) = value else { return };
    for (i, (key, v)) in entries.iter().enumerate() {
        let Dyn::Str(name) = key else { continue };
        if let Some(field) = fields.iter().find(|f| f.name == *name) {
            at.push(2 * i + 1);
            walk(schema, v, &field.ty, at, out);
            at.pop();
        }
    }
}
