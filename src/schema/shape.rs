//! [`Schema`]: the serde shape of one memento type, as a type expression for its root and the
//! named types (structs, enums) it uses. Its own representation, not serde-reflection's, so
//! that committed files read the same whatever tracer wrote them, and a developer can write
//! one by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A type as serde sees it: a primitive, an anonymous compound (`Option`, a sequence, a map,
/// a tuple, an array) or a reference to a named type of the [`Schema`].
///
/// Written the way Rust spells it, and parsed back ([`Type::parse`]): `u32`, `String`,
/// `bytes` (serde's byte buffers), `()`, `Option<u32>`, `Vec<Item>` (any sequence: a `Vec`, a
/// set), `Map<String, u32>` (any map), `(f32, f32)`, `[f32; 3]`, `Item`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Type {
    /// `()`.
    Unit,
    /// `bool`.
    Bool,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `i128`.
    I128,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `u128`.
    U128,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `char`.
    Char,
    /// `String` (any string).
    String,
    /// `bytes`: a byte buffer (`serde_bytes`), which codecs write apart from a `Vec<u8>`.
    Bytes,
    /// `Option<T>`.
    Option(Box<Type>),
    /// `Vec<T>`: any sequence.
    Seq(Box<Type>),
    /// `Map<K, V>`: any map.
    Map(Box<Type>, Box<Type>),
    /// `(A, B, ...)`.
    Tuple(Vec<Type>),
    /// `[T; N]`.
    Array(Box<Type>, usize),
    /// A named type of the schema: a struct or an enum (see [`TypeDef`]).
    Named(String),
}

/// The names of the primitives, in [`Type`] order.
const PRIMITIVES: [(&str, Type); 17] = [
    ("()", Type::Unit),
    ("bool", Type::Bool),
    ("i8", Type::I8),
    ("i16", Type::I16),
    ("i32", Type::I32),
    ("i64", Type::I64),
    ("i128", Type::I128),
    ("u8", Type::U8),
    ("u16", Type::U16),
    ("u32", Type::U32),
    ("u64", Type::U64),
    ("u128", Type::U128),
    ("f32", Type::F32),
    ("f64", Type::F64),
    ("char", Type::Char),
    ("String", Type::String),
    ("bytes", Type::Bytes),
];

/// Is `name` a primitive's name (which a named type cannot take)?
pub(crate) fn is_reserved(name: &str) -> bool {
    PRIMITIVES.iter().any(|(n, _)| *n == name)
}

/// Can `name` name a type in a schema: ASCII letters, digits and `_`, not starting with a
/// digit, and no primitive's name?
pub(crate) fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_reserved(name)
}

/// A usable name for each traced type name: itself where it can name a type in a schema
/// ([`is_type_name`]), otherwise its letters and digits with `_` for the rest and a suffix that
/// keeps it apart from every other (`my type` → `my_type_`). Names are in no codec's bytes, so
/// renaming them changes nothing a save holds.
pub(crate) fn usable_names<'a>(
    traced: impl Iterator<Item = &'a str> + Clone,
) -> BTreeMap<&'a str, String> {
    let mut taken: BTreeSet<String> = traced
        .clone()
        .filter(|n| is_type_name(n))
        .map(str::to_owned)
        .collect();
    let mut names = BTreeMap::new();
    for name in traced {
        let usable = if is_type_name(name) {
            name.to_owned()
        } else {
            let mut base: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
                base.insert(0, 'T');
            }
            let mut candidate = format!("{base}_");
            let mut n = 2;
            while taken.contains(&candidate) {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            taken.insert(candidate.clone());
            candidate
        };
        names.insert(name, usable);
    }
    names
}

impl Type {
    /// Parses a type as [`Display`](fmt::Display) writes it: `Map<String, Vec<Item>>`.
    ///
    /// # Errors
    /// A message saying what was expected where.
    pub fn parse(text: &str) -> Result<Type, String> {
        let mut p = Parser { text, at: 0 };
        let ty = p.ty()?;
        p.skip_space();
        if p.at != text.len() {
            return Err(p.error("the end of the type"));
        }
        Ok(ty)
    }

    /// The named types this type mentions, directly (not through them).
    pub(crate) fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Type::Option(t) | Type::Seq(t) | Type::Array(t, _) => t.names(out),
            Type::Map(k, v) => {
                k.names(out);
                v.names(out);
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| t.names(out)),
            Type::Named(n) => out.push(n),
            _ => {}
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((name, _)) = PRIMITIVES.iter().find(|(_, t)| t == self) {
            return f.write_str(name);
        }
        match self {
            Type::Option(t) => write!(f, "Option<{t}>"),
            Type::Seq(t) => write!(f, "Vec<{t}>"),
            Type::Map(k, v) => write!(f, "Map<{k}, {v}>"),
            Type::Tuple(ts) if ts.len() == 1 => write!(f, "({},)", ts[0]),
            Type::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Type::Array(t, n) => write!(f, "[{t}; {n}]"),
            Type::Named(n) => f.write_str(n),
            _ => Ok(()),
        }
    }
}

/// A recursive-descent reader of type expressions.
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text[self.at..].starts_with(' ') {
            self.at += 1;
        }
    }

    fn error(&self, expected: &str) -> String {
        format!("{:?}: expected {expected} at byte {}", self.text, self.at)
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        if self.text[self.at..].starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(&format!("`{token}`")))
        }
    }

    fn word(&mut self) -> &str {
        self.skip_space();
        let rest = &self.text[self.at..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    fn ty(&mut self) -> Result<Type, String> {
        if self.eat("(") {
            let mut items = Vec::new();
            let mut trailing_comma = false;
            while !self.eat(")") {
                items.push(self.ty()?);
                trailing_comma = self.eat(",");
                if !trailing_comma {
                    self.expect(")")?;
                    break;
                }
            }
            return Ok(match items.len() {
                0 => Type::Unit,
                1 if !trailing_comma => {
                    return Err(self.error("`,` after a 1-tuple's element: `(T,)`"));
                }
                _ => Type::Tuple(items),
            });
        }
        if self.eat("[") {
            let element = self.ty()?;
            self.expect(";")?;
            let digits = self.word();
            let size = digits
                .parse::<usize>()
                .map_err(|_| self.error("an array's length"))?;
            self.expect("]")?;
            return Ok(Type::Array(Box::new(element), size));
        }
        let start = self.at;
        let word = self.word().to_owned();
        if word.is_empty() {
            return Err(self.error("a type"));
        }
        if let Some((_, t)) = PRIMITIVES.iter().find(|(n, _)| *n == word) {
            return Ok(t.clone());
        }
        if self.eat("<") {
            let ty = match word.as_str() {
                "Option" => Type::Option(Box::new(self.ty()?)),
                "Vec" => Type::Seq(Box::new(self.ty()?)),
                "Map" => {
                    let key = self.ty()?;
                    self.expect(",")?;
                    Type::Map(Box::new(key), Box::new(self.ty()?))
                }
                _ => {
                    self.at = start;
                    return Err(self
                        .error("Option<..>, Vec<..> or Map<..> (named types take no arguments)"));
                }
            };
            self.expect(">")?;
            return Ok(ty);
        }
        if !is_type_name(&word) {
            self.at = start;
            return Err(self.error("a type name"));
        }
        Ok(Type::Named(word))
    }
}

/// A named type of a [`Schema`]: what serde calls a container.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TypeDef {
    /// A unit struct (`struct Marker;`), written as `()` by every codec.
    Unit,
    /// A newtype struct (`struct Hp(u32)`), written as its field by every codec.
    Newtype(Type),
    /// A tuple struct (`struct Pos(f32, f32)`), written as a tuple.
    Tuple(Vec<Type>),
    /// A struct with named fields, in declaration order.
    Struct(Vec<Field>),
    /// An enum: its variants by index (the position in the list); `None` where serde numbers
    /// no variant (a skipped one).
    Enum(Vec<Option<Variant>>),
}

/// A field of a struct or of a struct variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name as serde writes it (after `rename`).
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// May a saved value lack this field? True for an `Option` (serde reads a missing one as
    /// `None`) and a field with `#[serde(default)]`: the trace found that the type decodes
    /// without it. An old save that lacks such a field still loads in JSON and MessagePack.
    pub default: bool,
}

impl Field {
    /// A field that every saved value must have.
    #[must_use]
    pub fn new(name: impl Into<String>, ty: Type) -> Field {
        Field {
            name: name.into(),
            ty,
            default: false,
        }
    }

    /// This field, which saved values may lack (`Option`, `#[serde(default)]`).
    #[must_use]
    pub fn with_default(mut self) -> Field {
        self.default = true;
        self
    }
}

/// A variant of an enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The variant's name as serde writes it.
    pub name: String,
    /// What it holds.
    pub body: VariantBody,
}

impl Variant {
    /// A variant named `name` holding `body`.
    #[must_use]
    pub fn new(name: impl Into<String>, body: VariantBody) -> Variant {
        Variant {
            name: name.into(),
            body,
        }
    }
}

/// What an enum variant holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VariantBody {
    /// Nothing: `Sword`.
    Unit,
    /// One value: `Potion(u32)`.
    Newtype(Type),
    /// A tuple: `Pair(u8, u8)`.
    Tuple(Vec<Type>),
    /// Named fields: `Scroll { spell: String }`.
    Struct(Vec<Field>),
}

impl VariantBody {
    /// What kind of variant this is, for a sentence: "a unit variant".
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            VariantBody::Unit => "a unit variant",
            VariantBody::Newtype(_) => "a newtype variant",
            VariantBody::Tuple(_) => "a tuple variant",
            VariantBody::Struct(_) => "a struct variant",
        }
    }
}

impl TypeDef {
    /// What kind of type this is, for a sentence: "a struct".
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            TypeDef::Unit => "a unit struct",
            TypeDef::Newtype(_) => "a newtype struct",
            TypeDef::Tuple(_) => "a tuple struct",
            TypeDef::Struct(_) => "a struct",
            TypeDef::Enum(_) => "an enum",
        }
    }

    /// Every type this definition mentions.
    fn types(&self) -> Vec<&Type> {
        fn fields(fs: &[Field]) -> Vec<&Type> {
            fs.iter().map(|f| &f.ty).collect()
        }
        match self {
            TypeDef::Unit => Vec::new(),
            TypeDef::Newtype(t) => vec![t],
            TypeDef::Tuple(ts) => ts.iter().collect(),
            TypeDef::Struct(fs) => fields(fs),
            TypeDef::Enum(vs) => vs
                .iter()
                .flatten()
                .flat_map(|v| match &v.body {
                    VariantBody::Unit => Vec::new(),
                    VariantBody::Newtype(t) => vec![t],
                    VariantBody::Tuple(ts) => ts.iter().collect(),
                    VariantBody::Struct(fs) => fields(fs),
                })
                .collect(),
        }
    }
}

/// The serde shape of one memento type: its root type and every named type it reaches.
///
/// Traced from the type by the [guard](super::Guard) (through its `Deserialize` impl), read
/// from a committed file ([`SchemaFile::from_json`](super::SchemaFile::from_json)), or built by hand for a type the tracer
/// cannot follow ([`Guard::shape`](super::Guard::shape)):
///
/// ```
/// use savegame::schema::{Field, Schema, Type, TypeDef};
///
/// let schema = Schema::new(Type::Named("PlayerMemento".into())).with_type(
///     "PlayerMemento",
///     TypeDef::Struct(vec![
///         Field::new("health", Type::U32),
///         Field::new("title", Type::parse("Option<String>")?).with_default(),
///     ]),
/// );
/// assert_eq!(schema.check(), Ok(()));
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    root: Type,
    types: BTreeMap<String, TypeDef>,
}

impl Schema {
    /// A schema whose root is `root`, with no named types yet.
    #[must_use]
    pub fn new(root: Type) -> Schema {
        Schema {
            root,
            types: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the named type `name`.
    #[must_use]
    pub fn with_type(mut self, name: impl Into<String>, def: TypeDef) -> Schema {
        self.types.insert(name.into(), def);
        self
    }

    /// The memento's own type.
    #[must_use]
    pub fn root(&self) -> &Type {
        &self.root
    }

    /// The named type `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.types.get(name)
    }

    /// Every named type, by name.
    pub fn types(&self) -> impl ExactSizeIterator<Item = (&str, &TypeDef)> + '_ {
        self.types.iter().map(|(n, d)| (n.as_str(), d))
    }

    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut TypeDef> {
        self.types.get_mut(name)
    }

    /// Checks that every name is usable, every named type that is mentioned is defined, and
    /// every defined one is reached from the root.
    ///
    /// # Errors
    /// A sentence naming the first problem.
    pub fn check(&self) -> Result<(), String> {
        if let Some(bad) = self.types.keys().find(|n| !is_type_name(n)) {
            return Err(format!(
                "{bad:?} cannot name a type: ASCII letters, digits and `_`, and no primitive's name"
            ));
        }
        let reached = self.reachable();
        for name in &reached {
            if !self.types.contains_key(*name) {
                return Err(format!("the type {name} is used but not defined"));
            }
        }
        if let Some(unused) = self.types.keys().find(|n| !reached.contains(n.as_str())) {
            return Err(format!(
                "the type {unused} is defined but the memento does not use it"
            ));
        }
        for (name, def) in &self.types {
            let names: Vec<&str> = match def {
                TypeDef::Struct(fs) => fs.iter().map(|f| f.name.as_str()).collect(),
                TypeDef::Enum(vs) => vs.iter().flatten().map(|v| v.name.as_str()).collect(),
                _ => Vec::new(),
            };
            let unique: BTreeSet<&str> = names.iter().copied().collect();
            if unique.len() != names.len() {
                return Err(format!("{name} has two fields or variants of one name"));
            }
        }
        Ok(())
    }

    /// The names reached from the root (defined or not).
    fn reachable(&self) -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut todo = Vec::new();
        self.root.names(&mut todo);
        while let Some(name) = todo.pop() {
            if seen.insert(name)
                && let Some(def) = self.types.get(name)
            {
                for t in def.types() {
                    t.names(&mut todo);
                }
            }
        }
        seen
    }

    /// Drops the named types the root does not reach.
    pub(crate) fn prune(&mut self) {
        let reached: BTreeSet<String> = self.reachable().into_iter().map(str::to_owned).collect();
        self.types.retain(|n, _| reached.contains(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_rust_and_parse_back() {
        for text in [
            "u32",
            "()",
            "bytes",
            "String",
            "Option<Vec<Item>>",
            "Map<String, (f32, f32)>",
            "(u8,)",
            "[f32; 3]",
            "Map<u32, Map<String, [Option<bool>; 0]>>",
        ] {
            let ty = Type::parse(text).unwrap();
            assert_eq!(ty.to_string(), text);
        }
        assert_eq!(
            Type::parse(" Vec< u8 > ").unwrap(),
            Type::Seq(Box::new(Type::U8))
        );
        for bad in [
            "", "Vec<", "Item<u8>", "(u8)", "[u8]", "u32 u32", "9x", "Map<u8>",
        ] {
            assert!(Type::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn traced_names_that_cannot_name_a_type_get_one_that_can() {
        let names = usable_names(["Item", "String", "my type", "my_type_", "9lives"].into_iter());
        assert_eq!(names["Item"], "Item");
        assert_eq!(names["String"], "String_");
        assert_eq!(names["my type"], "my_type_2");
        assert_eq!(names["9lives"], "T9lives_");
        assert!(names.values().all(|n| is_type_name(n)));
    }

    #[test]
    fn a_schema_must_define_what_it_uses_and_use_what_it_defines() {
        let ok = Schema::new(Type::Named("A".into())).with_type("A", TypeDef::Unit);
        assert_eq!(ok.check(), Ok(()));
        let missing = Schema::new(Type::Named("A".into()));
        assert!(missing.check().unwrap_err().contains("not defined"));
        let extra = ok.clone().with_type("B", TypeDef::Unit);
        assert!(extra.check().unwrap_err().contains("does not use"));
        let reserved = Schema::new(Type::Named("u32".into())).with_type("u32", TypeDef::Unit);
        assert!(reserved.check().is_err());
    }
}
