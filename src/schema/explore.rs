//! The guard's own tracer: a serde `Deserializer` that makes up a value of the memento type,
//! pass after pass, recording what the type asks for, and steering each pass to what it has
//! not seen yet, so that every variant of every enum is found however deep it sits (behind a
//! `Vec`, an `Option`, another enum's variant).
//!
//! serde-reflection explores an `Option` or a sequence only the first time it meets it, and an
//! enum's variants only as often as the path to it comes up, so an enum inside a `Vec<Item>`
//! is seen once. Here a pass always goes into options, sequences and maps (except inside a
//! recursion, where it stops), and at each enum picks a variant not yet seen, else one that
//! leads to something not yet complete, else one that ends. Passes repeat until one learns
//! nothing; a type still not complete then is named in the error.

use std::collections::BTreeMap;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use super::shape::{Field, Schema, Type, TypeDef, Variant, VariantBody, usable_names};
use super::traced::{Body, Ctx, Def, Ty, error, merge, merge_body, merge_fields};
pub(crate) use super::traced::{ErrorKind, ExploreError};

/// The most passes over the root.
const MAX_PASSES: usize = 4096;
/// How deep a made-up value may nest before the pass gives up on it.
const MAX_DEPTH: usize = 128;

/// Makes one value, recording its shape into `out`.
struct Explorer<'c> {
    ctx: &'c mut Ctx,
    out: &'c mut Ty,
    depth: usize,
}

impl<'c> Explorer<'c> {
    /// Records what this value is, in the pass's own slot (what is learned for good is
    /// merged into the definitions, and the root, by the callers).
    fn set(&mut self, ty: Ty) -> Result<(), ExploreError> {
        merge(self.out, ty).map_err(|e| self.ctx.located(e))?;
        Ok(())
    }

    fn deeper(&self) -> Result<usize, ExploreError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.ctx.located(error(
                ErrorKind::Incomplete,
                "a made-up value nests too deep: a recursive type with no way to end",
            )));
        }
        Ok(self.depth + 1)
    }

    /// Enters named type `name`, defined as `fresh` if it is new.
    fn enter(&mut self, name: &'static str, fresh: Def) -> Result<(), ExploreError> {
        if !is_kind_of(self.ctx.defs.get(name), &fresh) {
            return Err(self.ctx.located(error(
                ErrorKind::Conflict,
                format!("two types named {name} disagree"),
            )));
        }
        if !self.ctx.defs.contains_key(name) {
            self.ctx.defs.insert(name, fresh);
            self.ctx.learned = true;
        }
        self.ctx.stack.push(name);
        Ok(())
    }

    fn leave(&mut self, name: &'static str) -> Result<(), ExploreError> {
        self.ctx.stack.pop();
        self.set(Ty::Named(name))
    }
}

/// Is `known` (if any) the same kind of definition as `fresh`, with the same field names?
fn is_kind_of(known: Option<&Def>, fresh: &Def) -> bool {
    match (known, fresh) {
        (None, _) => true,
        (Some(Def::Unit), Def::Unit) | (Some(Def::Newtype(_)), Def::Newtype(_)) => true,
        (Some(Def::Tuple(a)), Def::Tuple(b)) => a.len() == b.len(),
        (Some(Def::Struct(a)), Def::Struct(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
        }
        (Some(Def::Enum(a)), Def::Enum(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
        }
        _ => false,
    }
}

macro_rules! primitive {
    ($method:ident, $prim:ident, $visit:ident, $value:expr) => {
        fn $method<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ExploreError> {
            self.set(Ty::Prim(Type::$prim))?;
            visitor.$visit($value)
        }
    };
}

impl<'de> de::Deserializer<'de> for Explorer<'_> {
    type Error = ExploreError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ExploreError> {
        Err(self.ctx.located(error(
            ErrorKind::Any,
            "it asks serde for any value (deserialize_any)",
        )))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ExploreError> {
        Err(self.ctx.located(error(
            ErrorKind::Any,
            "it asks serde to skip a value of any shape (deserialize_ignored_any)",
        )))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ExploreError> {
        Err(self.ctx.located(error(
            ErrorKind::Any,
            "it asks for a field name outside a struct (deserialize_identifier)",
        )))
    }

    primitive!(deserialize_bool, Bool, visit_bool, false);
    primitive!(deserialize_i8, I8, visit_i8, 1);
    primitive!(deserialize_i16, I16, visit_i16, 1);
    primitive!(deserialize_i32, I32, visit_i32, 1);
    primitive!(deserialize_i64, I64, visit_i64, 1);
    primitive!(deserialize_i128, I128, visit_i128, 1);
    primitive!(deserialize_u8, U8, visit_u8, 1);
    primitive!(deserialize_u16, U16, visit_u16, 1);
    primitive!(deserialize_u32, U32, visit_u32, 1);
    primitive!(deserialize_u64, U64, visit_u64, 1);
    primitive!(deserialize_u128, U128, visit_u128, 1);
    primitive!(deserialize_f32, F32, visit_f32, 1.0);
    primitive!(deserialize_f64, F64, visit_f64, 1.0);
    primitive!(deserialize_char, Char, visit_char, 'a');
    primitive!(deserialize_str, String, visit_str, "a");
    primitive!(deserialize_string, String, visit_string, "a".to_owned());
    primitive!(deserialize_bytes, Bytes, visit_bytes, &[]);
    primitive!(deserialize_byte_buf, Bytes, visit_byte_buf, Vec::new());

    fn deserialize_unit<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ExploreError> {
        self.set(Ty::Prim(Type::Unit))?;
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ExploreError> {
        if self.ctx.recursing() {
            self.set(Ty::Option(Box::new(Ty::Unknown)))?;
            return visitor.visit_none();
        }
        let depth = self.deeper()?;
        let mut inner = Ty::Unknown;
        let value = visitor.visit_some(Explorer {
            ctx: &mut *self.ctx,
            out: &mut inner,
            depth,
        })?;
        self.set(Ty::Option(Box::new(inner)))?;
        Ok(value)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        self.enter(name, Def::Unit)?;
        let value = visitor.visit_unit()?;
        self.leave(name)?;
        Ok(value)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        self.enter(name, Def::Newtype(Ty::Unknown))?;
        let depth = self.deeper()?;
        let mut inner = Ty::Unknown;
        let value = visitor.visit_newtype_struct(Explorer {
            ctx: &mut *self.ctx,
            out: &mut inner,
            depth,
        })?;
        if let Some(Def::Newtype(known)) = self.ctx.defs.get_mut(name) {
            self.ctx.learned |= merge(known, inner)?;
        }
        self.leave(name)?;
        Ok(value)
    }

    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ExploreError> {
        let len = usize::from(!self.ctx.recursing());
        let depth = self.deeper()?;
        let mut items = vec![Ty::Unknown];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items[..len],
            at: 0,
            depth,
            names: None,
        })?;
        let item = items.pop().unwrap_or(Ty::Unknown);
        self.set(Ty::Seq(Box::new(item)))?;
        Ok(value)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        mut self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        let depth = self.deeper()?;
        let mut items = vec![Ty::Unknown; len];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items,
            at: 0,
            depth,
            names: None,
        })?;
        self.set(Ty::Tuple(items))?;
        Ok(value)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        self.enter(name, Def::Tuple(vec![Ty::Unknown; len]))?;
        let depth = self.deeper()?;
        let mut items = vec![Ty::Unknown; len];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items,
            at: 0,
            depth,
            names: None,
        })?;
        if let Some(Def::Tuple(known)) = self.ctx.defs.get_mut(name) {
            for (k, s) in known.iter_mut().zip(items) {
                self.ctx.learned |= merge(k, s)?;
            }
        }
        self.leave(name)?;
        Ok(value)
    }

    fn deserialize_map<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ExploreError> {
        let entries = usize::from(!self.ctx.recursing());
        let depth = self.deeper()?;
        let (mut key, mut value_ty) = (Ty::Unknown, Ty::Unknown);
        let value = visitor.visit_map(Entries {
            ctx: &mut *self.ctx,
            key: &mut key,
            value: &mut value_ty,
            left: entries,
            depth,
        })?;
        self.set(Ty::Map(Box::new(key), Box::new(value_ty)))?;
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        let fresh: Vec<(&'static str, Ty)> = fields.iter().map(|f| (*f, Ty::Unknown)).collect();
        self.enter(name, Def::Struct(fresh))?;
        let depth = self.deeper()?;
        let mut items = vec![Ty::Unknown; fields.len()];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items,
            at: 0,
            depth,
            names: Some((name, fields)),
        })?;
        if let Some(Def::Struct(known)) = self.ctx.defs.get_mut(name) {
            let seen = fields.iter().copied().zip(items).collect();
            self.ctx.learned |= merge_fields(known, seen)?;
        }
        self.leave(name)?;
        Ok(value)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        if variants.is_empty() {
            return Err(self.ctx.located(error(
                ErrorKind::Any,
                format!("the enum {name} has no variants"),
            )));
        }
        let fresh = Def::Enum(variants.iter().map(|v| (*v, None)).collect());
        self.enter(name, fresh)?;
        let index = self.ctx.pick(name, variants.len());
        let depth = self.deeper()?;
        self.ctx.in_progress.insert((name, index));
        self.ctx
            .location
            .push(format!("{name}::{}", variants[index]));
        let mut body = None;
        let value = visitor.visit_enum(Choice {
            ctx: &mut *self.ctx,
            index,
            name,
            body: &mut body,
            depth,
        });
        self.ctx.location.pop();
        self.ctx.in_progress.remove(&(name, index));
        let value = value?;
        if let (Some(seen), Some(Def::Enum(known))) = (body, self.ctx.defs.get_mut(name)) {
            self.ctx.learned |= merge_body(&mut known[index].1, seen)?;
        }
        self.leave(name)?;
        Ok(value)
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The elements of a sequence, tuple or struct.
struct Elements<'c> {
    ctx: &'c mut Ctx,
    slots: &'c mut [Ty],
    at: usize,
    depth: usize,
    names: Option<(&'static str, &'static [&'static str])>,
}

impl<'de> SeqAccess<'de> for Elements<'_> {
    type Error = ExploreError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ExploreError> {
        let Some(slot) = self.slots.get_mut(self.at) else {
            return Ok(None);
        };
        let located = self
            .names
            .and_then(|(ty, fields)| fields.get(self.at).map(|f| format!("{ty}.{f}")));
        if let Some(at) = &located {
            self.ctx.location.push(at.clone());
        }
        self.at += 1;
        let value = seed.deserialize(Explorer {
            ctx: &mut *self.ctx,
            out: slot,
            depth: self.depth,
        });
        if located.is_some() {
            self.ctx.location.pop();
        }
        // An error made by the element's own Deserialize (a validating one refusing the value
        // made up for it) knows nothing of where it is: it is this field's.
        value.map(Some).map_err(|mut e| {
            if e.at.is_empty()
                && let Some(at) = located
            {
                e.at.push(at);
            }
            e
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.slots.len() - self.at)
    }
}

/// The entries of a map (none or one).
struct Entries<'c> {
    ctx: &'c mut Ctx,
    key: &'c mut Ty,
    value: &'c mut Ty,
    left: usize,
    depth: usize,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = ExploreError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ExploreError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(Explorer {
            ctx: &mut *self.ctx,
            out: self.key,
            depth: self.depth,
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ExploreError> {
        seed.deserialize(Explorer {
            ctx: &mut *self.ctx,
            out: self.value,
            depth: self.depth,
        })
    }
}

/// The variant a pass makes.
struct Choice<'c> {
    ctx: &'c mut Ctx,
    index: usize,
    name: &'static str,
    body: &'c mut Option<Body>,
    depth: usize,
}

impl<'de, 'c> EnumAccess<'de> for Choice<'c> {
    type Error = ExploreError;
    type Variant = Choice<'c>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Choice<'c>), ExploreError> {
        let index = u32::try_from(self.index).map_err(|_| {
            error(
                ErrorKind::Conflict,
                format!("{} has too many variants", self.name),
            )
        })?;
        let id: de::value::U32Deserializer<ExploreError> = index.into_deserializer();
        let value = seed.deserialize(id)?;
        Ok((value, self))
    }
}

impl<'de> VariantAccess<'de> for Choice<'_> {
    type Error = ExploreError;

    fn unit_variant(self) -> Result<(), ExploreError> {
        *self.body = Some(Body::Unit);
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, ExploreError> {
        let mut inner = Ty::Unknown;
        let value = seed.deserialize(Explorer {
            ctx: &mut *self.ctx,
            out: &mut inner,
            depth: self.depth,
        })?;
        *self.body = Some(Body::Newtype(inner));
        Ok(value)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        let mut items = vec![Ty::Unknown; len];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items,
            at: 0,
            depth: self.depth,
            names: None,
        })?;
        *self.body = Some(Body::Tuple(items));
        Ok(value)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ExploreError> {
        let mut items = vec![Ty::Unknown; fields.len()];
        let value = visitor.visit_seq(Elements {
            ctx: &mut *self.ctx,
            slots: &mut items,
            at: 0,
            depth: self.depth,
            names: Some((self.name, fields)),
        })?;
        *self.body = Some(Body::Struct(fields.iter().copied().zip(items).collect()));
        Ok(value)
    }
}

/// Traces `M`: its schema, and the value each pass made (valid `M`s, for the probes).
pub(crate) fn explore<M: DeserializeOwned>() -> Result<(Schema, Vec<M>), ExploreError> {
    let mut ctx = Ctx::default();
    let mut root = Ty::Unknown;
    let mut witnesses = Vec::new();
    for _ in 0..MAX_PASSES {
        ctx.learned = false;
        ctx.compute_needs_work();
        ctx.location.clear();
        let mut seen = Ty::Unknown;
        let value = M::deserialize(Explorer {
            ctx: &mut ctx,
            out: &mut seen,
            depth: 0,
        })?;
        ctx.learned |= merge(&mut root, seen)?;
        witnesses.push(value);
        if !ctx.learned {
            break;
        }
    }
    ctx.compute_needs_work();
    let direct: Vec<&'static str> = ctx
        .needs_work
        .iter()
        .copied()
        .filter(|n| {
            ctx.defs.get(n).is_some_and(|d| {
                let (types, all_seen) = d.parts();
                !all_seen || types.iter().any(|t| !t.complete())
            })
        })
        .collect();
    if !direct.is_empty() || !root.complete() {
        return Err(ExploreError {
            kind: ErrorKind::Incomplete,
            message: "the trace could not reach all of it (a recursion with no way to end?)".into(),
            at: direct.iter().map(|n| (*n).to_owned()).collect(),
        });
    }
    Ok((convert(&root, &ctx.defs), witnesses))
}

/// The traced shapes as a [`Schema`], names made usable (names are in no codec's bytes).
fn convert(root: &Ty, defs: &BTreeMap<&'static str, Def>) -> Schema {
    let names = usable_names(defs.keys().copied());
    let ty = |t: &Ty| to_type(t, &names);
    let fields = |fs: &[(&'static str, Ty)]| {
        fs.iter()
            .map(|(n, t)| Field::new(*n, ty(t)))
            .collect::<Vec<_>>()
    };
    let mut schema = Schema::new(ty(root));
    for (name, def) in defs {
        let def = match def {
            Def::Unit => TypeDef::Unit,
            Def::Newtype(t) => TypeDef::Newtype(ty(t)),
            Def::Tuple(ts) => TypeDef::Tuple(ts.iter().map(ty).collect()),
            Def::Struct(fs) => TypeDef::Struct(fields(fs)),
            Def::Enum(vs) => TypeDef::Enum(
                vs.iter()
                    .map(|(n, b)| {
                        let body = match b.as_ref()? {
                            Body::Unit => VariantBody::Unit,
                            Body::Newtype(t) => VariantBody::Newtype(ty(t)),
                            Body::Tuple(ts) => VariantBody::Tuple(ts.iter().map(ty).collect()),
                            Body::Struct(fs) => VariantBody::Struct(fields(fs)),
                        };
                        Some(Variant::new(*n, body))
                    })
                    .collect(),
            ),
        };
        if let Some(usable) = names.get(name) {
            schema = schema.with_type(usable.clone(), def);
        }
    }
    schema.prune();
    schema
}

fn to_type(t: &Ty, names: &BTreeMap<&str, String>) -> Type {
    let boxed = |t: &Ty| Box::new(to_type(t, names));
    match t {
        Ty::Unknown => Type::Unit,
        Ty::Prim(p) => p.clone(),
        Ty::Option(t) => Type::Option(boxed(t)),
        Ty::Seq(t) => Type::Seq(boxed(t)),
        Ty::Map(k, v) => Type::Map(boxed(k), boxed(v)),
        // A tuple of one type twice or more is written as an array (serde cannot tell them
        // apart, and the diff takes them as the same).
        Ty::Tuple(ts) if ts.len() > 1 && ts.iter().all(|x| x == &ts[0]) => {
            Type::Array(boxed(&ts[0]), ts.len())
        }
        // An empty tuple (`[T; 0]`) is not `()` in a codec's bytes, and `()` is what it would
        // read back as: written as the empty array it is.
        Ty::Tuple(ts) if ts.is_empty() => Type::Array(Box::new(Type::Unit), 0),
        Ty::Tuple(ts) => Type::Tuple(ts.iter().map(|t| to_type(t, names)).collect()),
        Ty::Named(n) => Type::Named(names.get(n).cloned().unwrap_or_else(|| (*n).to_owned())),
    }
}
