//! Tracing a memento type's shape through serde with serde-reflection: its `Deserialize` impl
//! is driven with made-up values until every struct and every variant of every enum has been
//! seen, and what it asked for becomes a [`Schema`].
//!
//! serde-reflection finds an enum's variants one pass at a time, and only for the enums it is
//! told to look at; the loop here tells it about every enum the trace has met (starting again
//! when a pass meets a new one), so a memento's nested enums are complete without the game
//! listing them.

use std::any::type_name;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_reflection::{
    ContainerFormat, Format, Named, Registry, Samples, Tracer, TracerConfig, VariantFormat,
};

use super::explore::{ErrorKind, ExploreError, explore};
use super::probe;
use super::shape::{Field, Schema, Type, TypeDef, Variant, VariantBody, usable_names};

/// A sample value, recorded into a tracer before it traces a type: serde-reflection hands it
/// to a hand-written `Deserialize` that refuses made-up values.
pub(crate) type SampleFn =
    Arc<dyn Fn(&mut Tracer, &mut Samples) -> serde_reflection::Result<()> + Send + Sync>;

/// What a trace may use beside the type: samples of types that refuse made-up values.
#[derive(Default)]
pub(crate) struct TraceInput<'a> {
    pub(crate) samples: &'a [SampleFn],
}

/// Traces one memento type.
pub(crate) type TraceFn = fn(&TraceInput<'_>) -> Result<Schema, TraceError>;

/// The sample `value`, as a [`SampleFn`].
pub(crate) fn sample_of<T: Serialize + Send + Sync + 'static>(value: T) -> SampleFn {
    Arc::new(move |tracer, samples| tracer.trace_value(samples, &value).map(drop))
}

/// The most passes one trace makes (each finds at least one more variant of an enum).
const MAX_PASSES: usize = 10_000;
/// The most variant indexes an enum may have (serde numbers them from 0).
const MAX_VARIANTS: u32 = 1 << 16;

/// Why a memento type's shape could not be traced.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The Rust type that was traced.
    pub type_name: &'static str,
    /// Where in it the trace stopped, as far as it could tell (`Inventory.slot`).
    pub at: Vec<String>,
    /// What serde-reflection said.
    pub reason: String,
    /// What that usually means, and what to do.
    pub hint: &'static str,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot trace the shape of {}", self.type_name)?;
        if !self.at.is_empty() {
            write!(f, " (it stopped at {})", self.at.join(", "))?;
        }
        write!(f, ": {}. {}", self.reason, self.hint)
    }
}

impl fmt::Debug for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for TraceError {}

const HINT_ANY: &str = "A type in it asks serde for \"any\" value, which a shape cannot \
    describe: an untagged, internally tagged or adjacently tagged enum, #[serde(flatten)], or a \
    hand-written Deserialize that calls deserialize_any. Give the memento's shape by hand \
    (Guard::shape), or use an externally tagged enum and plain fields";
const HINT_CUSTOM: &str = "A hand-written Deserialize refused the values the tracer made up \
    (zeros, empty strings, the first variant). Give a valid value of that type \
    (Guard::sample), or make the sample state hold one; or give the memento's shape by hand \
    (Guard::shape)";
const HINT_INCOMPATIBLE: &str = "Two types traced under one name disagree: a generic type used \
    with two different parameters, two types of one name from different modules, or a \
    Serialize and a Deserialize that disagree. Rename one (#[serde(rename = \"...\")]), or give \
    the memento's shape by hand (Guard::shape)";
const HINT_NESTED: &str = "With samples, the trace falls back on serde-reflection, which reaches \
    an enum inside a sequence or another enum's variant only once. Give the memento's shape by \
    hand (Guard::shape)";
const HINT_OTHER: &str = "Give the memento's shape by hand (Guard::shape)";
const HINT_RECURSION: &str = "A recursive type the tracer found no way to end (every variant \
    holds the type again, with no Option or Vec between): give the memento's shape by hand \
    (Guard::shape)";

impl TraceError {
    fn new<M>(error: &serde_reflection::Error, at: Vec<String>) -> TraceError {
        use serde_reflection::Error as E;
        let hint = match error {
            E::NotSupported(what) if what.contains("any") || what.contains("identifier") => {
                HINT_ANY
            }
            E::Custom(_) | E::UnexpectedDeserializationFormat(..) => HINT_CUSTOM,
            E::Incompatible(..) => HINT_INCOMPATIBLE,
            _ => HINT_OTHER,
        };
        TraceError {
            type_name: type_name::<M>(),
            at,
            reason: format!("serde-reflection: {error}"),
            hint,
        }
    }

    fn explored<M>(e: ExploreError) -> TraceError {
        let hint = match e.kind {
            ErrorKind::Any => HINT_ANY,
            ErrorKind::Custom => HINT_CUSTOM,
            ErrorKind::Conflict => HINT_INCOMPATIBLE,
            ErrorKind::Incomplete => HINT_RECURSION,
        };
        TraceError {
            type_name: type_name::<M>(),
            at: e.at,
            reason: e.message,
            hint,
        }
    }

    fn incomplete<M>(reason: String) -> TraceError {
        TraceError {
            type_name: type_name::<M>(),
            at: Vec::new(),
            reason,
            hint: HINT_OTHER,
        }
    }
}

/// Traces `M`'s serde shape: every field, variant, option, sequence and map it holds, and,
/// for each field, whether a saved value may lack it ([`Field::default`]).
///
/// ```
/// use savegame::schema::{Type, TypeDef};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Player { health: u32, title: Option<String>, bag: Vec<Item> }
/// #[derive(serde::Serialize, serde::Deserialize)]
/// enum Item { Sword, Potion(u8) }
///
/// let schema = savegame::schema::trace::<Player>()?;
/// assert_eq!(schema.root(), &Type::Named("Player".into()));
/// let Some(TypeDef::Struct(fields)) = schema.get("Player") else { panic!() };
/// assert_eq!(fields[2].ty.to_string(), "Vec<Item>");
/// assert!(fields[1].default && !fields[0].default);
/// assert!(matches!(schema.get("Item"), Some(TypeDef::Enum(v)) if v.len() == 2));
/// # Ok::<(), savegame::schema::TraceError>(())
/// ```
///
/// # Errors
/// [`TraceError`] for a type serde-reflection cannot follow: one that asks for any value
/// (untagged enums, `#[serde(flatten)]`), a hand-written `Deserialize` that refuses made-up
/// values, two types of one name.
pub fn trace<M: Serialize + DeserializeOwned>() -> Result<Schema, TraceError> {
    trace_with::<M>(&TraceInput::default())
}

/// [`trace`], falling back on serde-reflection with the input's samples when a hand-written
/// `Deserialize` refuses the values the guard's own tracer makes up.
pub(crate) fn trace_with<M: Serialize + DeserializeOwned>(
    input: &TraceInput<'_>,
) -> Result<Schema, TraceError> {
    let (mut schema, witnesses) = match explore::<M>() {
        Ok(done) => done,
        Err(e) => {
            let custom = e.kind == ErrorKind::Custom;
            match attempt::<M>(input.samples) {
                Ok(done) if custom && !input.samples.is_empty() => done,
                _ => return Err(TraceError::explored::<M>(e)),
            }
        }
    };
    probe::find_defaults(&mut schema, &witnesses);
    Ok(schema)
}

/// One trace, from a fresh tracer each time it meets enums it did not know: the schema and
/// the values each pass made (valid `M`s, for the probes).
fn attempt<M: DeserializeOwned>(samples: &[SampleFn]) -> Result<(Schema, Vec<M>), TraceError> {
    let mut enums: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut tracer = Tracer::new(TracerConfig::default());
        let mut recorded = Samples::new();
        for sample in samples {
            sample(&mut tracer, &mut recorded).map_err(|e| TraceError::new::<M>(&e, Vec::new()))?;
        }
        let mut witnesses = Vec::new();
        let mut root = None;
        for _ in 0..MAX_PASSES {
            let (format, value) = match tracer.trace_type_once::<M>(&recorded) {
                Ok(done) => done,
                Err(e) => {
                    let at = unknown_spots(&tracer.registry_unchecked());
                    return Err(TraceError::new::<M>(&e, at));
                }
            };
            witnesses.push(value);
            let mut progress = false;
            if let Format::TypeName(name) = &format
                && !enums.contains(name)
            {
                progress |= tracer.check_incomplete_enum(name).is_some();
            }
            for name in &enums {
                progress |= tracer.check_incomplete_enum(name).is_some();
            }
            root = Some(format);
            if !progress {
                break;
            }
        }
        let root = root.ok_or_else(|| TraceError::incomplete::<M>("no pass ran".into()))?;
        let registry = tracer.registry_unchecked();
        let found: BTreeSet<String> = registry
            .iter()
            .filter(|(_, c)| matches!(c, ContainerFormat::Enum(_)))
            .map(|(n, _)| n.clone())
            .collect();
        if found.is_subset(&enums) {
            let schema = convert::<M>(&root, &registry)?;
            return Ok((schema, witnesses));
        }
        enums.extend(found);
    }
}

/// The containers whose shape the trace did not finish: `Inventory.slot`.
fn unknown_spots(registry: &Registry) -> Vec<String> {
    let mut out = Vec::new();
    for (name, container) in registry {
        match container {
            ContainerFormat::Struct(fields) => {
                for f in fields.iter().filter(|f| has_unknown(&f.value)) {
                    out.push(format!("{name}.{}", f.name));
                }
            }
            ContainerFormat::NewTypeStruct(f) if has_unknown(f) => out.push(name.clone()),
            ContainerFormat::TupleStruct(fs) if fs.iter().any(has_unknown) => {
                out.push(name.clone());
            }
            ContainerFormat::Enum(variants) => {
                for v in variants.values().filter(|v| variant_unknown(&v.value)) {
                    out.push(format!("{name}::{}", v.name));
                }
            }
            _ => {}
        }
    }
    out
}

fn has_unknown(format: &Format) -> bool {
    match format {
        Format::Variable(v) => v.borrow().as_ref().is_none_or(has_unknown),
        Format::Option(f) | Format::Seq(f) => has_unknown(f),
        Format::TupleArray { content, .. } => has_unknown(content),
        Format::Map { key, value } => has_unknown(key) || has_unknown(value),
        Format::Tuple(fs) => fs.iter().any(has_unknown),
        _ => false,
    }
}

fn variant_unknown(variant: &VariantFormat) -> bool {
    match variant {
        VariantFormat::Variable(v) => v.borrow().as_ref().is_none_or(variant_unknown),
        VariantFormat::NewType(f) => has_unknown(f),
        VariantFormat::Tuple(fs) => fs.iter().any(has_unknown),
        VariantFormat::Struct(fs) => fs.iter().any(|f| has_unknown(&f.value)),
        VariantFormat::Unit => false,
    }
}

/// serde-reflection's formats as a [`Schema`], with the type names made usable (a name that
/// is a primitive's, or has characters a type expression cannot hold, gets another: names are
/// not part of any codec's bytes).
fn convert<M>(root: &Format, registry: &Registry) -> Result<Schema, TraceError> {
    let names = usable_names(registry.keys().map(String::as_str));
    let c = Converter { names: &names };
    let bad = |what: String| TraceError::incomplete::<M>(what);
    let root = c
        .ty(root)
        .ok_or_else(|| bad("the shape of the memento's own type is not complete".into()))?;
    let mut schema = Schema::new(root);
    // A container whose shape is not complete fails the trace only if the memento reaches it
    // (a sample's type need not be part of it).
    let mut incomplete = Vec::new();
    for (name, container) in registry {
        let Some(usable) = names.get(name.as_str()) else {
            continue;
        };
        match c.container(container) {
            Some(def) => schema = schema.with_type(usable.clone(), def),
            None => incomplete.push(usable.clone()),
        }
    }
    schema.prune();
    schema.check().map_err(|reason| {
        match incomplete
            .iter()
            .find(|n| reason.contains(&format!(" {n} ")))
        {
            Some(name) => TraceError {
                type_name: type_name::<M>(),
                at: vec![name.clone()],
                reason: format!("the trace did not reach every variant of the enum {name}"),
                hint: HINT_NESTED,
            },
            None => bad(reason),
        }
    })?;
    Ok(schema)
}

struct Converter<'a> {
    names: &'a BTreeMap<&'a str, String>,
}

impl Converter<'_> {
    fn ty(&self, format: &Format) -> Option<Type> {
        let boxed = |f: &Format| self.ty(f).map(Box::new);
        Some(match format {
            Format::Variable(v) => return v.borrow().as_ref().and_then(|f| self.ty(f)),
            Format::TypeName(n) => Type::Named(self.names.get(n.as_str())?.clone()),
            Format::Unit => Type::Unit,
            Format::Bool => Type::Bool,
            Format::I8 => Type::I8,
            Format::I16 => Type::I16,
            Format::I32 => Type::I32,
            Format::I64 => Type::I64,
            Format::I128 => Type::I128,
            Format::U8 => Type::U8,
            Format::U16 => Type::U16,
            Format::U32 => Type::U32,
            Format::U64 => Type::U64,
            Format::U128 => Type::U128,
            Format::F32 => Type::F32,
            Format::F64 => Type::F64,
            Format::Char => Type::Char,
            Format::Str => Type::String,
            Format::Bytes => Type::Bytes,
            Format::Option(f) => Type::Option(boxed(f)?),
            Format::Seq(f) => Type::Seq(boxed(f)?),
            Format::Map { key, value } => Type::Map(boxed(key)?, boxed(value)?),
            Format::Tuple(fs) if fs.is_empty() => Type::Array(Box::new(Type::Unit), 0),
            Format::Tuple(fs) => Type::Tuple(self.all(fs)?),
            Format::TupleArray { content, size } => Type::Array(boxed(content)?, *size),
        })
    }

    fn all(&self, formats: &[Format]) -> Option<Vec<Type>> {
        formats.iter().map(|f| self.ty(f)).collect()
    }

    fn fields(&self, fields: &[Named<Format>]) -> Option<Vec<Field>> {
        fields
            .iter()
            .map(|f| Some(Field::new(f.name.clone(), self.ty(&f.value)?)))
            .collect()
    }

    fn container(&self, container: &ContainerFormat) -> Option<TypeDef> {
        Some(match container {
            ContainerFormat::UnitStruct => TypeDef::Unit,
            ContainerFormat::NewTypeStruct(f) => TypeDef::Newtype(self.ty(f)?),
            ContainerFormat::TupleStruct(fs) => TypeDef::Tuple(self.all(fs)?),
            ContainerFormat::Struct(fs) => TypeDef::Struct(self.fields(fs)?),
            ContainerFormat::Enum(variants) => {
                // A variant whose index the trace did not settle has a provisional one near
                // u32::MAX: the enum is not complete.
                let count = match variants.keys().next_back() {
                    None => 0,
                    Some(last) => last.checked_add(1).filter(|n| *n <= MAX_VARIANTS)?,
                };
                let mut list: Vec<Option<Variant>> = vec![None; count as usize];
                for (index, v) in variants {
                    let body = self.variant(&v.value)?;
                    list[*index as usize] = Some(Variant::new(v.name.clone(), body));
                }
                TypeDef::Enum(list)
            }
        })
    }

    fn variant(&self, variant: &VariantFormat) -> Option<VariantBody> {
        Some(match variant {
            VariantFormat::Variable(v) => return v.borrow().as_ref().and_then(|v| self.variant(v)),
            VariantFormat::Unit => VariantBody::Unit,
            VariantFormat::NewType(f) => VariantBody::Newtype(self.ty(f)?),
            VariantFormat::Tuple(fs) => VariantBody::Tuple(self.all(fs)?),
            VariantFormat::Struct(fs) => VariantBody::Struct(self.fields(fs)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Outer {
        state: State,
        list: Vec<Inner>,
        bag: Vec<Item>,
    }

    #[derive(Serialize, Deserialize)]
    enum Item {
        Sword,
        Potion(u8),
        Scroll { spell: Option<Mood> },
    }

    #[derive(Serialize, Deserialize)]
    enum State {
        Idle,
        Walking { to: Inner, mood: Option<Mood> },
    }

    #[derive(Serialize, Deserialize)]
    enum Mood {
        Calm,
        Angry(u8),
        Sad(Option<Box<Mood>>),
    }

    #[derive(Serialize, Deserialize)]
    struct Inner(i16, i16);

    #[test]
    fn enums_inside_variants_sequences_and_recursions_are_complete() {
        let schema = trace::<Outer>().unwrap();
        let Some(TypeDef::Enum(moods)) = schema.get("Mood") else {
            panic!("{schema:?}")
        };
        let names: Vec<&str> = moods.iter().flatten().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["Calm", "Angry", "Sad"]);
        assert_eq!(
            schema.get("Inner"),
            Some(&TypeDef::Tuple(vec![Type::I16, Type::I16]))
        );
    }

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Loose {
        Number(u32),
        Text(String),
    }

    #[derive(Serialize, Deserialize)]
    struct HasLoose {
        id: u32,
        value: Loose,
    }

    #[test]
    fn an_untagged_enum_is_named_where_the_trace_stopped() {
        let err = trace::<HasLoose>().unwrap_err();
        assert!(err.type_name.ends_with("HasLoose"), "{err}");
        assert_eq!(err.at, ["HasLoose.value"]);
        assert!(err.to_string().contains("untagged"), "{err}");
    }

    #[derive(Serialize, Deserialize)]
    enum Expr {
        Add(Box<Expr>, Box<Expr>),
        Lit(u32),
        List(Vec<Expr>),
    }

    #[derive(Serialize, Deserialize)]
    struct Tree {
        children: Vec<Tree>,
        next: Option<Box<Tree>>,
        root: Expr,
    }

    #[derive(Serialize, Deserialize)]
    struct Odd {
        none: [u8; 0],
        one: (u8,),
        pair: (u8, u8),
        unit: (),
    }

    #[test]
    fn odd_tuples_read_back_from_their_file_as_traced() {
        let schema = trace::<Odd>().unwrap();
        let file = super::super::SchemaFile {
            id: "odd".into(),
            schema_version: 1,
            memento_version: 1,
            schema: schema.clone(),
        };
        let back = super::super::SchemaFile::from_json(&file.to_json()).unwrap();
        assert_eq!(back.schema, schema);
        assert_eq!(super::super::diff(&schema, &back.schema, "odd"), []);
    }

    #[test]
    fn recursive_types_end() {
        let schema = trace::<Tree>().unwrap();
        let Some(TypeDef::Enum(exprs)) = schema.get("Expr") else {
            panic!("{schema:?}")
        };
        assert_eq!(exprs.len(), 3);
        assert!(exprs.iter().all(Option::is_some));
    }
}
