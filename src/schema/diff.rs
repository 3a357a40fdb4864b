//! What changed between two shapes of a memento, and which codecs' old saves survive it.
//!
//! The rules, per codec family:
//!
//! | change | JSON, MessagePack (fields by name) | bitcode (by position) |
//! |---|---|---|
//! | a field added that may be missing (`Option`, `#[serde(default)]`) | compatible | breaking |
//! | a field added that must be there | breaking: old saves lack it | breaking |
//! | a field that may be missing made one that must be there | breaking: saves that lack it | same |
//! | a field removed | breaking: old saves' values are dropped | breaking |
//! | a field renamed | breaking: a remove and an add | compatible at the same position |
//! | fields reordered | same | breaking |
//! | a type changed | breaking, except the widenings below | breaking |
//! | `u8` → `u32`, `i32` → `i64`, `u32` → `i64`, `f32` → `f64`, `char` → `String` | compatible | breaking |
//! | `T` → `Option<T>`, `[T; N]` or a tuple of `T`s → `Vec<T>` | compatible | breaking |
//! | a variant added | compatible | compatible after the last, breaking before it |
//! | a variant removed or renamed | breaking: saves holding it | breaking if removed; compatible if renamed in place |
//! | variants reordered | same | breaking: bitcode stores the index |
//! | a newtype struct added or removed around a type (`Hp(u32)` ↔ `u32`), a tuple struct ↔ a tuple | same | same |
//!
//! Paths are JSON Pointers that start at the memento's id, as a migration step's do:
//! `/player/inventory/items`, `*` for every element of a sequence or value of a map, a
//! variant's name for what it holds (`/player/class/Mage`).

use std::collections::BTreeSet;
use std::fmt;

use super::shape::{Field, Schema, Type, TypeDef, Variant, VariantBody};
use crate::codec::Codec;

/// Do old saves survive a change?
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Nothing changed in what the codec writes.
    Same,
    /// Old saves load, and mean what they meant.
    Compatible,
    /// Old saves fail to load, or load wrong.
    Breaking,
}

/// One difference between two shapes of a memento.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// Where: a JSON Pointer from the memento's id (`/player/inventory/items`).
    pub path: String,
    /// What: `Vec<u32> → Vec<Item>`, `renamed to health (u32)`, `added (Option<String>; may be missing)`.
    pub what: String,
    /// For the codecs that write fields by name: JSON, MessagePack.
    pub named: Verdict,
    /// For bitcode, which writes everything by position.
    pub positional: Verdict,
}

impl Change {
    /// The verdict for `codec`.
    #[must_use]
    pub fn verdict(&self, codec: Codec) -> Verdict {
        if codec.is_self_describing() {
            self.named
        } else {
            self.positional
        }
    }

    /// Which of `codecs` it breaks, and which it does not, in words: `breaking in bitcode;
    /// compatible in JSON, MessagePack`.
    #[must_use]
    pub fn verdict_text(&self, codecs: &[Codec]) -> String {
        let mut parts = Vec::new();
        for (verdict, word) in [
            (Verdict::Breaking, "breaking"),
            (Verdict::Compatible, "compatible"),
            (Verdict::Same, "the same bytes"),
        ] {
            let names: Vec<&str> = codecs
                .iter()
                .filter(|c| self.verdict(**c) == verdict)
                .map(|c| codec_name(*c))
                .collect();
            if !names.is_empty() {
                parts.push(format!("{word} in {}", names.join(", ")));
            }
        }
        parts.join("; ")
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.what)
    }
}

/// A codec's name in a sentence.
pub(crate) fn codec_name(codec: Codec) -> &'static str {
    match codec {
        Codec::Json => "JSON",
        Codec::MessagePack => "MessagePack",
        Codec::Bitcode => "bitcode",
    }
}

/// Every codec, for a comparison that knows no game.
pub const ALL_CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Bitcode];

/// The worst verdict of `changes` for any of `codecs` (`Same` when there are none).
#[must_use]
pub fn verdict(changes: &[Change], codecs: &[Codec]) -> Verdict {
    changes
        .iter()
        .flat_map(|c| codecs.iter().map(|codec| c.verdict(*codec)))
        .max()
        .unwrap_or(Verdict::Same)
}

/// What changed from `old` to `new`, a memento's two shapes, with paths from `/<id>`.
#[must_use]
pub fn diff(old: &Schema, new: &Schema, id: &str) -> Vec<Change> {
    let mut d = Differ {
        old,
        new,
        seen: BTreeSet::new(),
        out: Vec::new(),
    };
    let root = format!("/{}", escape(id));
    d.ty(old.root(), new.root(), &root);
    d.out
}

/// A JSON Pointer token: `~` as `~0`, `/` as `~1`.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn join(path: &str, token: &str) -> String {
    format!("{path}/{}", escape(token))
}

struct Differ<'a> {
    old: &'a Schema,
    new: &'a Schema,
    seen: BTreeSet<(String, String)>,
    out: Vec<Change>,
}

/// A type with its newtype structs, tuple structs and unit structs written out (they write
/// the bytes of what they hold in every codec); structs and enums stay named.
fn expand(schema: &Schema, ty: &Type, depth: usize) -> Type {
    let inner = |t: &Type| Box::new(expand(schema, t, depth));
    match ty {
        Type::Option(t) => Type::Option(inner(t)),
        Type::Seq(t) => Type::Seq(inner(t)),
        Type::Map(k, v) => Type::Map(inner(k), inner(v)),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| expand(schema, t, depth)).collect()),
        Type::Array(t, n) => Type::Array(inner(t), *n),
        Type::Named(name) if depth < 16 => match schema.get(name) {
            Some(TypeDef::Newtype(t)) => expand(schema, t, depth + 1),
            Some(TypeDef::Tuple(ts)) => {
                Type::Tuple(ts.iter().map(|t| expand(schema, t, depth + 1)).collect())
            }
            Some(TypeDef::Unit) => Type::Unit,
            _ => ty.clone(),
        },
        other => other.clone(),
    }
}

/// The kind of a named type, to tell a struct from an enum without looking inside.
fn kind<'s>(schema: &'s Schema, name: &str) -> Option<&'s str> {
    schema.get(name).map(TypeDef::kind)
}

/// Widening that a self-describing codec reads back: `from`'s every value is one of `to`'s.
fn widens(from: &Type, to: &Type) -> bool {
    use Type::{Char, F32, F64, I8, I16, I32, I64, String, U8, U16, U32, U64};
    matches!(
        (from, to),
        (U8, U16 | U32 | U64 | I16 | I32 | I64)
            | (U16, U32 | U64 | I32 | I64)
            | (U32, U64 | I64)
            | (I8, I16 | I32 | I64)
            | (I16, I32 | I64)
            | (I32, I64)
            | (F32, F64)
            | (Char, String)
    )
}

impl Differ<'_> {
    /// Do two expanded types have the same outline, named types matched by kind alone?
    fn outline_eq(&self, a: &Type, b: &Type) -> bool {
        match (a, b) {
            (Type::Option(x), Type::Option(y)) | (Type::Seq(x), Type::Seq(y)) => {
                self.outline_eq(x, y)
            }
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.outline_eq(k1, k2) && self.outline_eq(v1, v2)
            }
            (Type::Tuple(xs), Type::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| self.outline_eq(x, y))
            }
            (Type::Array(x, n), Type::Array(y, m)) => n == m && self.outline_eq(x, y),
            (Type::Array(x, n), Type::Tuple(ys)) => {
                *n == ys.len() && ys.iter().all(|y| self.outline_eq(x, y))
            }
            (Type::Tuple(xs), Type::Array(y, m)) => {
                xs.len() == *m && xs.iter().all(|x| self.outline_eq(x, y))
            }
            (Type::Named(p), Type::Named(q)) => {
                kind(self.old, p).is_some() && kind(self.old, p) == kind(self.new, q)
            }
            _ => a == b,
        }
    }

    /// Do old values of `a` read back as `b` in JSON and MessagePack?
    fn reads_as(&self, a: &Type, b: &Type) -> bool {
        if self.outline_eq(a, b) || widens(a, b) {
            return true;
        }
        match (a, b) {
            (x, Type::Option(y)) if !matches!(x, Type::Option(_)) => self.reads_as(x, y),
            (Type::Option(x), Type::Option(y)) | (Type::Seq(x), Type::Seq(y)) => {
                self.reads_as(x, y)
            }
            (Type::Array(x, _), Type::Seq(y)) => self.reads_as(x, y),
            (Type::Tuple(xs), Type::Seq(y)) => xs.iter().all(|x| self.reads_as(x, y)),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.reads_as(k1, k2) && self.reads_as(v1, v2)
            }
            (Type::Tuple(xs), Type::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| self.reads_as(x, y))
            }
            (Type::Array(x, n), Type::Array(y, m)) => n == m && self.reads_as(x, y),
            _ => false,
        }
    }

    fn push(&mut self, path: String, what: String, named: Verdict, positional: Verdict) {
        self.out.push(Change {
            path,
            what,
            named,
            positional,
        });
    }

    fn ty(&mut self, a: &Type, b: &Type, path: &str) {
        let ea = expand(self.old, a, 0);
        let eb = expand(self.new, b, 0);
        if self.outline_eq(&ea, &eb) {
            self.inside(&ea, &eb, path);
            return;
        }
        let named = if self.reads_as(&ea, &eb) {
            Verdict::Compatible
        } else {
            Verdict::Breaking
        };
        let (sa, sb) = (a.to_string(), b.to_string());
        let what = if sa == sb {
            // The same name for another kind of type.
            let ka = self.kind_of(self.old, &ea);
            let kb = self.kind_of(self.new, &eb);
            format!("{sa}: {ka} → {kb}")
        } else {
            format!("{sa} → {sb}")
        };
        self.push(path.to_owned(), what, named, Verdict::Breaking);
    }

    fn kind_of(&self, schema: &Schema, ty: &Type) -> String {
        match ty {
            Type::Named(n) => kind(schema, n).unwrap_or("an undefined type").to_owned(),
            other => other.to_string(),
        }
    }

    /// Two types of one outline: compares what their named types hold.
    fn inside(&mut self, a: &Type, b: &Type, path: &str) {
        match (a, b) {
            (Type::Option(x), Type::Option(y)) => self.inside(x, y, path),
            (Type::Seq(x), Type::Seq(y)) => self.inside(x, y, &join(path, "*")),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.inside(k1, k2, &format!("{path} (keys)"));
                self.inside(v1, v2, &join(path, "*"));
            }
            (Type::Tuple(xs), Type::Tuple(ys)) => {
                for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
                    self.inside(x, y, &join(path, &i.to_string()));
                }
            }
            (Type::Array(x, _), Type::Array(y, _)) => self.inside(x, y, &join(path, "*")),
            (Type::Array(x, _), Type::Tuple(ys)) => {
                for (i, y) in ys.iter().enumerate() {
                    self.inside(x, y, &join(path, &i.to_string()));
                }
            }
            (Type::Tuple(xs), Type::Array(y, _)) => {
                for (i, x) in xs.iter().enumerate() {
                    self.inside(x, y, &join(path, &i.to_string()));
                }
            }
            (Type::Named(p), Type::Named(q)) => self.named(p, q, path),
            _ => {}
        }
    }

    fn named(&mut self, p: &str, q: &str, path: &str) {
        if !self.seen.insert((p.to_owned(), q.to_owned())) {
            return;
        }
        let (Some(da), Some(db)) = (self.old.get(p), self.new.get(q)) else {
            return;
        };
        match (da, db) {
            (TypeDef::Struct(fa), TypeDef::Struct(fb)) => self.fields(fa, fb, path),
            (TypeDef::Enum(va), TypeDef::Enum(vb)) => self.variants(va, vb, path),
            (TypeDef::Newtype(x), TypeDef::Newtype(y)) => self.ty(x, y, path),
            (TypeDef::Tuple(xs), TypeDef::Tuple(ys)) => {
                self.ty(&Type::Tuple(xs.clone()), &Type::Tuple(ys.clone()), path);
            }
            _ => {}
        }
    }

    fn same_type(&self, a: &Type, b: &Type) -> bool {
        self.outline_eq(&expand(self.old, a, 0), &expand(self.new, b, 0))
    }

    fn fields(&mut self, fa: &[Field], fb: &[Field], path: &str) {
        // Pairs (old index, new index) of fields that are the same field.
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for (i, f) in fa.iter().enumerate() {
            if let Some(j) = fb.iter().position(|g| g.name == f.name) {
                pairs.push((i, j));
            }
        }
        let mut removed: Vec<usize> = (0..fa.len())
            .filter(|i| !pairs.iter().any(|p| p.0 == *i))
            .collect();
        let mut added: Vec<usize> = (0..fb.len())
            .filter(|j| !pairs.iter().any(|p| p.1 == *j))
            .collect();
        // A field removed and one added of the same type at the same place is a rename; so is
        // the only one of each, of the same type, wherever they are.
        let mut renames: Vec<(usize, usize)> = Vec::new();
        for &i in &removed {
            if added.contains(&i) && self.same_type(&fa[i].ty, &fb[i].ty) {
                renames.push((i, i));
            }
        }
        if renames.is_empty()
            && removed.len() == 1
            && added.len() == 1
            && self.same_type(&fa[removed[0]].ty, &fb[added[0]].ty)
        {
            renames.push((removed[0], added[0]));
        }
        removed.retain(|i| !renames.iter().any(|r| r.0 == *i));
        added.retain(|j| !renames.iter().any(|r| r.1 == *j));
        let same_count = fa.len() == fb.len();

        for &(i, j) in &renames {
            let positional = if i == j && same_count {
                Verdict::Same
            } else {
                Verdict::Breaking
            };
            self.push(
                join(path, &fa[i].name),
                format!(
                    "renamed to {} ({}): old saves' {} would be dropped and {} missing",
                    fb[j].name, fb[j].ty, fa[i].name, fb[j].name
                ),
                Verdict::Breaking,
                positional,
            );
        }
        for &i in &removed {
            self.push(
                join(path, &fa[i].name),
                format!(
                    "removed ({}): old saves' values of it would be dropped",
                    fa[i].ty
                ),
                Verdict::Breaking,
                Verdict::Breaking,
            );
        }
        for &j in &added {
            let f = &fb[j];
            let (what, named) = if f.default {
                (
                    format!(
                        "added ({}; may be missing: old saves load it as its default)",
                        f.ty
                    ),
                    Verdict::Compatible,
                )
            } else {
                (
                    format!(
                        "added ({}; no default: old saves lack it, so they fail to load; \
                         make it an Option or give it #[serde(default)])",
                        f.ty
                    ),
                    Verdict::Breaking,
                )
            };
            self.push(join(path, &f.name), what, named, Verdict::Breaking);
        }
        // Order, for bitcode: the fields both have, by old position, must keep their order.
        let mut kept: Vec<(usize, usize)> = pairs.iter().chain(&renames).copied().collect();
        kept.sort_unstable();
        if kept.windows(2).any(|w| w[0].1 > w[1].1) {
            let names = |fs: &[Field], order: Vec<usize>| {
                order
                    .into_iter()
                    .map(|i| fs[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let before = names(fa, kept.iter().map(|p| p.0).collect());
            let mut after_order: Vec<usize> = kept.iter().map(|p| p.1).collect();
            after_order.sort_unstable();
            let after = names(fb, after_order);
            self.push(
                path.to_owned(),
                format!(
                    "fields reordered ({before} → {after}): bitcode writes fields by position, \
                     so old saves would read each value into another field"
                ),
                Verdict::Same,
                Verdict::Breaking,
            );
        }
        for (i, j) in pairs.into_iter().chain(renames) {
            if fa[i].default && !fb[j].default {
                self.push(
                    join(path, &fb[j].name),
                    "may no longer be missing: saves that lack it (written before it was \
                     added) would fail to load"
                        .into(),
                    Verdict::Breaking,
                    Verdict::Same,
                );
            }
            self.ty(&fa[i].ty, &fb[j].ty, &join(path, &fb[j].name));
        }
    }

    fn variants(&mut self, va: &[Option<Variant>], vb: &[Option<Variant>], path: &str) {
        let listed = |vs: &[Option<Variant>]| -> Vec<(usize, Variant)> {
            vs.iter()
                .enumerate()
                .filter_map(|(i, v)| Some((i, v.clone()?)))
                .collect()
        };
        let (la, lb) = (listed(va), listed(vb));
        let by_name =
            |l: &[(usize, Variant)], name: &str| l.iter().find(|(_, v)| v.name == name).cloned();
        let mut renumbered = Vec::new();
        let mut compare = Vec::new();
        for (i, v) in &la {
            if let Some((j, w)) = by_name(&lb, &v.name) {
                if *i != j {
                    renumbered.push(format!("{} {i} → {j}", v.name));
                }
                compare.push((v.clone(), w));
                continue;
            }
            // Gone by name: renamed in place, or removed.
            let in_place = lb
                .iter()
                .find(|(j, w)| j == i && by_name(&la, &w.name).is_none())
                .map(|(_, w)| w.clone());
            match in_place {
                Some(w) if self.same_body(&v.body, &w.body) => {
                    self.push(
                        join(path, &v.name),
                        format!(
                            "variant renamed to {}: saves holding {} would no longer load",
                            w.name, v.name
                        ),
                        Verdict::Breaking,
                        Verdict::Same,
                    );
                    compare.push((v.clone(), w));
                }
                _ => self.push(
                    join(path, &v.name),
                    format!(
                        "variant removed ({}): saves holding it would no longer load",
                        v.body.kind()
                    ),
                    Verdict::Breaking,
                    Verdict::Breaking,
                ),
            }
        }
        let last_old = la.iter().map(|(i, _)| *i).max();
        for (j, w) in &lb {
            let known =
                by_name(&la, &w.name).is_some() || compare.iter().any(|(_, c)| c.name == w.name);
            if known {
                continue;
            }
            let appended = last_old.is_none_or(|last| *j > last);
            let (what, positional) = if appended {
                (
                    format!("variant added ({}, index {j})", w.body.kind()),
                    Verdict::Compatible,
                )
            } else {
                (
                    format!(
                        "variant added at index {j}, among the old ones: bitcode stores the \
                         index, so old saves would read as another variant"
                    ),
                    Verdict::Breaking,
                )
            };
            self.push(join(path, &w.name), what, Verdict::Compatible, positional);
        }
        if !renumbered.is_empty() {
            self.push(
                path.to_owned(),
                format!(
                    "variants renumbered ({}): bitcode stores the index, so old saves would \
                     read as another variant",
                    renumbered.join(", ")
                ),
                Verdict::Same,
                Verdict::Breaking,
            );
        }
        for (v, w) in compare {
            self.body(&v.body, &w.body, &join(path, &w.name));
        }
    }

    fn same_body(&self, a: &VariantBody, b: &VariantBody) -> bool {
        match (a, b) {
            (VariantBody::Unit, VariantBody::Unit) => true,
            (VariantBody::Newtype(x), VariantBody::Newtype(y)) => self.same_type(x, y),
            (VariantBody::Tuple(xs), VariantBody::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| self.same_type(x, y))
            }
            (VariantBody::Struct(fa), VariantBody::Struct(fb)) => {
                fa.len() == fb.len()
                    && fa
                        .iter()
                        .zip(fb)
                        .all(|(f, g)| f.name == g.name && self.same_type(&f.ty, &g.ty))
            }
            _ => false,
        }
    }

    fn body(&mut self, a: &VariantBody, b: &VariantBody, path: &str) {
        match (a, b) {
            (VariantBody::Unit, VariantBody::Unit) => {}
            (VariantBody::Newtype(x), VariantBody::Newtype(y)) => self.ty(x, y, path),
            (VariantBody::Tuple(xs), VariantBody::Tuple(ys)) => {
                self.ty(&Type::Tuple(xs.clone()), &Type::Tuple(ys.clone()), path);
            }
            (VariantBody::Struct(fa), VariantBody::Struct(fb)) => self.fields(fa, fb, path),
            _ => self.push(
                path.to_owned(),
                format!("{} → {}", a.kind(), b.kind()),
                Verdict::Breaking,
                Verdict::Breaking,
            ),
        }
    }
}
