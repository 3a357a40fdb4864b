//! Declarative migration steps: JSON Patch (RFC 6902) over a [`Document`], plus what saves need
//! beyond it.
//!
//! A step file is a JSON array of operations; the operations and wildcards are described in
//! the [`migrate`](crate::migrate) module docs.
//!
//! Where step files differ from RFC 6902 and RFC 6901, on purpose:
//!
//! - A member an operation does not define is an error, where RFC 6902 §4 ignores it: these
//!   files rewrite players' saves, and a misspelt optional member (`"defualt"`) must not pass
//!   silently.
//! - A path token `*` is a wildcard. `~2` stands for a literal `*` (a map key `"*"`), beside
//!   RFC 6901's `~0` (`~`) and `~1` (`/`). RFC 6901 allows no other `~` escape, so `~2` is an
//!   invalid pointer to every RFC 6901 parser: it cannot collide with a key any pointer could
//!   name, and no file that was valid before changes meaning.
//! - `test` compares integers exactly (`9007199254740993` is not `9007199254740992`), floats as
//!   floats, and an integer with a float by their exact values.

use std::fmt;

use super::document::{Document, add_into, child_mut, pointer_of};
use super::error::MigrationError;
use super::value::Value;

/// A JSON Pointer whose tokens may be wildcards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    Any,
}

impl Pattern {
    /// An RFC 6901 pointer in which a whole token `*` is a wildcard and the escape `~2` is a
    /// literal `*`.
    fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("a path must name at least a memento".into());
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err("a JSON Pointer starts with '/'".into());
        };
        let tokens = rest
            .split('/')
            .map(|raw| {
                if raw == "*" {
                    return Ok(Token::Any);
                }
                let mut out = String::with_capacity(raw.len());
                let mut chars = raw.chars();
                while let Some(c) = chars.next() {
                    if c != '~' {
                        out.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        Some('2') => out.push('*'),
                        _ => {
                            return Err("'~' must be followed by 0, 1 or 2 \
                                        (~0 is '~', ~1 is '/', ~2 is a literal '*')"
                                .to_owned());
                        }
                    }
                }
                Ok(Token::Literal(out))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Pattern {
            text: text.to_owned(),
            tokens,
        })
    }

    fn wildcards(&self) -> usize {
        self.tokens.iter().filter(|t| **t == Token::Any).count()
    }

    /// Every concrete path the pattern's tokens before `len` match in `doc`, with the tokens
    /// its wildcards matched. Literal tokens are taken as they are (whether they exist is for
    /// the operation to find out); wildcards enumerate what exists.
    fn expand(&self, doc: &Document, len: usize) -> Vec<(Vec<String>, Vec<String>)> {
        let mut found = vec![(Vec::new(), Vec::new())];
        for token in &self.tokens[..len] {
            let mut next = Vec::new();
            for (path, bound) in found {
                match token {
                    Token::Literal(t) => {
                        let mut p = path;
                        p.push(t.clone());
                        next.push((p, bound));
                    }
                    Token::Any => {
                        for child in children(doc, &path) {
                            let mut p = path.clone();
                            p.push(child.clone());
                            let mut b = bound.clone();
                            b.push(child);
                            next.push((p, b));
                        }
                    }
                }
            }
            found = next;
        }
        found
    }

    /// The targets of an operation on this path: every match of the whole pattern when it
    /// ends in a wildcard, else every match of its parent with the last token added.
    fn targets(&self, doc: &Document) -> Vec<Vec<String>> {
        self.expand(doc, self.tokens.len())
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    /// Calls `f(value, path)` on every value the pattern's tokens before `len` match, in the
    /// order [`expand`](Self::expand) lists them, without building each path: `path` holds
    /// what leads there, for an error's pointer ([`pointer`]). Literal tokens that lead
    /// nowhere are an error, as they are for [`Document::at_mut`]; wildcards visit what
    /// exists.
    fn for_each_mut(
        &self,
        doc: &mut Document,
        len: usize,
        f: &mut Visit<'_>,
    ) -> Result<(), MigrationError> {
        let tokens = &self.tokens[..len];
        let Some((first, rest)) = tokens.split_first() else {
            return Err(MigrationError::new(
                "",
                "the document itself is not a value",
            ));
        };
        let mut path = Vec::with_capacity(tokens.len());
        match first {
            Token::Literal(id) => {
                let value = doc.memento_mut(id)?;
                path.push(Step::Literal(id));
                walk(value, rest, &mut path, f)
            }
            Token::Any => {
                for (id, value) in doc.mementos_mut() {
                    path.push(Step::Key(id.to_owned()));
                    walk(value, rest, &mut path, f)?;
                    path.pop();
                }
                Ok(())
            }
        }
    }

    /// This pattern with its wildcards replaced, in order, by `bound`.
    fn substitute(&self, bound: &[String]) -> Vec<String> {
        let mut bound = bound.iter();
        self.tokens
            .iter()
            .map(|t| match t {
                Token::Literal(s) => s.clone(),
                Token::Any => bound.next().cloned().unwrap_or_default(),
            })
            .collect()
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One step of the way to a value a pattern matched: a literal token of the pattern, an array
/// element or a map field a wildcard took.
pub(crate) enum Step<'p> {
    Literal(&'p str),
    Index(usize),
    Key(String),
}

/// What a walk does with each value it reaches, given the steps that lead there.
type Visit<'f> = dyn FnMut(&mut Value, &[Step<'_>]) -> Result<(), MigrationError> + 'f;

/// The JSON Pointer of a walk's steps.
fn pointer(path: &[Step<'_>]) -> String {
    let tokens: Vec<String> = path
        .iter()
        .map(|s| match s {
            Step::Literal(t) => (*t).to_owned(),
            Step::Index(i) => i.to_string(),
            Step::Key(k) => k.clone(),
        })
        .collect();
    pointer_of(&tokens)
}

/// [`Pattern::for_each_mut`] below `value`, reached by `path`, for the tokens left.
fn walk<'p>(
    value: &mut Value,
    tokens: &'p [Token],
    path: &mut Vec<Step<'p>>,
    f: &mut Visit<'_>,
) -> Result<(), MigrationError> {
    let Some((token, rest)) = tokens.split_first() else {
        return f(value, path);
    };
    match token {
        Token::Literal(t) => {
            path.push(Step::Literal(t));
            let Some(child) = child_mut(value, t) else {
                return Err(MigrationError::new(pointer(path), "not found"));
            };
            walk(child, rest, path, f)?;
            path.pop();
        }
        Token::Any => match value {
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push(Step::Index(i));
                    walk(item, rest, path, f)?;
                    path.pop();
                }
            }
            Value::Map(entries) => {
                for (key, item) in entries.iter_mut() {
                    let name = match key {
                        Value::String(s) => s.to_string(),
                        Value::Int(n) => n.to_string(),
                        _ => continue,
                    };
                    path.push(Step::Key(name));
                    walk(item, rest, path, f)?;
                    path.pop();
                }
            }
            _ => {}
        },
    }
    Ok(())
}

/// The tokens of the children of the value at `path` (every memento id for the root).
fn children(doc: &Document, path: &[String]) -> Vec<String> {
    if path.is_empty() {
        return doc.ids().map(str::to_owned).collect();
    }
    match doc.at(path) {
        Ok(Value::Array(items)) => (0..items.len()).map(|i| i.to_string()).collect(),
        Ok(Value::Map(entries)) => entries
            .iter()
            .filter_map(|(k, _)| match k {
                Value::String(s) => Some(s.to_string()),
                Value::Int(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// One operation of a declarative step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PatchOp {
    Add {
        path: Pattern,
        value: Value,
    },
    AddIfAbsent {
        path: Pattern,
        value: Value,
    },
    Remove {
        path: Pattern,
    },
    Replace {
        path: Pattern,
        value: Value,
    },
    Move {
        from: Pattern,
        path: Pattern,
    },
    Copy {
        from: Pattern,
        path: Pattern,
    },
    Test {
        path: Pattern,
        value: Value,
    },
    Map {
        path: Pattern,
        table: Vec<(String, Value)>,
        default: Option<Value>,
    },
}

/// Which mementos an operation reads or writes: the first tokens of its paths.
#[cfg(feature = "msgpack")]
pub(crate) enum Touches<'a> {
    /// A path starts with a wildcard: any memento.
    All,
    /// These mementos (one or two).
    Ids([Option<&'a str>; 2]),
}

/// A `map` operation's parts, for the MessagePack fast path: the memento it maps in, the
/// tokens below it (`None` a wildcard), its table and its default.
#[cfg(feature = "msgpack")]
pub(crate) struct TableMap<'a> {
    pub(crate) memento: &'a str,
    pub(crate) below: Vec<Option<&'a str>>,
    pub(crate) table: &'a [(String, Value)],
    pub(crate) default: Option<&'a Value>,
}

#[cfg(feature = "msgpack")]
impl Pattern {
    /// The memento the pattern starts at, or `None` for a wildcard.
    fn memento(&self) -> Option<&str> {
        match self.tokens.first() {
            Some(Token::Literal(id)) => Some(id),
            _ => None,
        }
    }
}

impl PatchOp {
    /// Which mementos this operation reads or writes.
    #[cfg(feature = "msgpack")]
    pub(crate) fn touches(&self) -> Touches<'_> {
        let (a, b) = match self {
            PatchOp::Move { from, path } | PatchOp::Copy { from, path } => (path, Some(from)),
            PatchOp::Add { path, .. }
            | PatchOp::AddIfAbsent { path, .. }
            | PatchOp::Remove { path }
            | PatchOp::Replace { path, .. }
            | PatchOp::Test { path, .. }
            | PatchOp::Map { path, .. } => (path, None),
        };
        let first = a.memento();
        let second = b.map(Pattern::memento);
        if first.is_none() || second == Some(None) {
            return Touches::All;
        }
        Touches::Ids([first, second.flatten()])
    }

    /// This operation's parts when it is a `map` within one named memento.
    #[cfg(feature = "msgpack")]
    pub(crate) fn table_map(&self) -> Option<TableMap<'_>> {
        let PatchOp::Map {
            path,
            table,
            default,
        } = self
        else {
            return None;
        };
        let memento = path.memento()?;
        let below = path.tokens[1..]
            .iter()
            .map(|t| match t {
                Token::Literal(s) => Some(s.as_str()),
                Token::Any => None,
            })
            .collect();
        Some(TableMap {
            memento,
            below,
            table,
            default: default.as_ref(),
        })
    }

    /// The paths this operation reads or writes, as written in the step file.
    pub(crate) fn paths(&self) -> Vec<String> {
        match self {
            PatchOp::Move { from, path } | PatchOp::Copy { from, path } => {
                vec![from.to_string(), path.to_string()]
            }
            PatchOp::Add { path, .. }
            | PatchOp::AddIfAbsent { path, .. }
            | PatchOp::Remove { path }
            | PatchOp::Replace { path, .. }
            | PatchOp::Test { path, .. }
            | PatchOp::Map { path, .. } => vec![path.to_string()],
        }
    }

    /// The operation's name in a step file.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            PatchOp::Add { .. } => "add",
            PatchOp::AddIfAbsent { .. } => "add_if_absent",
            PatchOp::Remove { .. } => "remove",
            PatchOp::Replace { .. } => "replace",
            PatchOp::Move { .. } => "move",
            PatchOp::Copy { .. } => "copy",
            PatchOp::Test { .. } => "test",
            PatchOp::Map { .. } => "map",
        }
    }

    pub(crate) fn apply(&self, doc: &mut Document) -> Result<(), MigrationError> {
        match self {
            PatchOp::Add { path, value } => add(doc, path, value, false)?,
            PatchOp::AddIfAbsent { path, value } => add(doc, path, value, true)?,
            PatchOp::Remove { path } => {
                // Last first, so removing array elements does not shift the ones still to go.
                for target in path.targets(doc).into_iter().rev() {
                    doc.remove_at(&target)?;
                }
            }
            PatchOp::Replace { path, value } => {
                path.for_each_mut(doc, path.tokens.len(), &mut |slot, _| {
                    *slot = value.clone();
                    Ok(())
                })?;
            }
            PatchOp::Test { path, value } => {
                path.for_each_mut(doc, path.tokens.len(), &mut |found, at| {
                    if same_json(found, value) {
                        Ok(())
                    } else {
                        Err(MigrationError::new(
                            pointer(at),
                            format!("test failed: found {found}, expected {value}"),
                        ))
                    }
                })?;
            }
            PatchOp::Move { from, path } | PatchOp::Copy { from, path } => {
                let is_move = matches!(self, PatchOp::Move { .. });
                let sources = from.expand(doc, from.tokens.len());
                for (source, bound) in sources.into_iter().rev() {
                    let target = path.substitute(&bound);
                    if is_move {
                        doc.move_at(&source, &target)?;
                    } else {
                        let value = doc.at(&source)?.clone();
                        doc.add_at(&target, value, false)?;
                    }
                }
            }
            PatchOp::Map {
                path,
                table,
                default,
            } => {
                path.for_each_mut(doc, path.tokens.len(), &mut |slot, at| {
                    let mapped = slot.table_entry(table).cloned().or_else(|| default.clone());
                    match mapped {
                        Some(v) => {
                            *slot = v;
                            Ok(())
                        }
                        None => Err(MigrationError::new(
                            pointer(at),
                            format!("the table has no entry for {slot}"),
                        )),
                    }
                })?;
            }
        }
        Ok(())
    }
}

/// JSON Patch `add` (or `add_if_absent`) of `value` at every match of `path`. A path whose last
/// token is a literal under a wildcard adds into each match of its parent as the walk reaches
/// it; any other goes through the listed targets.
fn add(
    doc: &mut Document,
    path: &Pattern,
    value: &Value,
    if_absent: bool,
) -> Result<(), MigrationError> {
    let n = path.tokens.len();
    if let (true, Some(Token::Literal(last))) = (n >= 2, path.tokens.last()) {
        return path.for_each_mut(doc, n - 1, &mut |parent, at| {
            let at_last = || {
                let mut p = pointer(at);
                p.push_str(&pointer_of(&[last]));
                p
            };
            add_into(parent, last, value.clone(), if_absent, at_last).map(drop)
        });
    }
    for target in path.targets(doc) {
        doc.add_at(&target, value.clone(), if_absent)?;
    }
    Ok(())
}

/// JSON equality, as RFC 6902's `test`: maps by their members whatever the order, arrays
/// element by element, numbers by [`same_number`].
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .find(|(k2, _)| same_json(k, k2))
                        .is_some_and(|(_, v2)| same_json(v, v2))
                })
        }
        _ => same_number(a, b).unwrap_or_else(|| a == b),
    }
}

/// Whether two numbers are equal, or `None` when either is not a number. Integers compare
/// exactly (a save's `u64` ids and seeds are not rounded to 53 bits); floats as floats; an
/// integer and a float when the float is that integer exactly. A 32-bit float (MessagePack
/// keeps them) compares at its own precision: the step file's number, always read as a
/// 64-bit float, is rounded to 32 bits first, so `0.1` matches a saved `0.1f32`.
fn same_number(a: &Value, b: &Value) -> Option<bool> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Int(n), Value::Float(f)) | (Value::Float(f), Value::Int(n)) => is_int(*f, *n),
        (Value::Int(n), Value::F32(f)) | (Value::F32(f), Value::Int(n)) => {
            is_int(f64::from(*f), *n)
        }
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::F32(x), Value::F32(y)) => x == y,
        // `as` rounds to the nearest f32.
        (Value::F32(x), Value::Float(y)) | (Value::Float(y), Value::F32(x)) => *y as f32 == *x,
        _ => return None,
    })
}

/// Whether `f` is exactly the integer `n`.
fn is_int(f: f64, n: i128) -> bool {
    // 2^127: every integral f64 in [-2^127, 2^127) converts to i128 exactly.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f) && f as i128 == n
}

/// Parses a step file's text into its operations. Errors say which operation (by index from 0)
/// and why.
#[cfg(feature = "json")]
pub(crate) fn parse_ops(text: &str) -> Result<Vec<PatchOp>, (Option<usize>, String)> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| (None, format!("not valid JSON: {e}")))?;
    let serde_json::Value::Array(items) = json else {
        return Err((None, "a step file is a JSON array of operations".into()));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_op(item).map_err(|reason| (Some(i), reason)))
        .collect()
}

#[cfg(feature = "json")]
fn parse_op(item: &serde_json::Value) -> Result<PatchOp, String> {
    let serde_json::Value::Object(fields) = item else {
        return Err("an operation is a JSON object".into());
    };
    let op = fields
        .get("op")
        .and_then(serde_json::Value::as_str)
        .ok_or("missing \"op\"")?;
    let allowed: &[&str] = match op {
        "add" | "add_if_absent" | "replace" | "test" => &["op", "path", "value"],
        "remove" => &["op", "path"],
        "move" | "copy" => &["op", "from", "path"],
        "map" => &["op", "path", "table", "default"],
        other => return Err(format!("unknown op {other:?}")),
    };
    // RFC 6902 §4 ignores members an operation does not define; step files refuse them, so
    // that a misspelt member cannot pass silently.
    if let Some(extra) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "{op}: unknown member {extra:?} (step files refuse members an operation does not \
             define; RFC 6902 would ignore it)"
        ));
    }
    let pattern = |name: &str| -> Result<Pattern, String> {
        let text = fields
            .get(name)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("{op}: missing \"{name}\""))?;
        Pattern::parse(text).map_err(|e| format!("{op}: bad {name} {text:?}: {e}"))
    };
    let value = || -> Result<Value, String> {
        fields
            .get("value")
            .map(from_json)
            .ok_or_else(|| format!("{op}: missing \"value\""))
    };
    Ok(match op {
        "add" => PatchOp::Add {
            path: pattern("path")?,
            value: value()?,
        },
        "add_if_absent" => PatchOp::AddIfAbsent {
            path: pattern("path")?,
            value: value()?,
        },
        "replace" => PatchOp::Replace {
            path: pattern("path")?,
            value: value()?,
        },
        "test" => PatchOp::Test {
            path: pattern("path")?,
            value: value()?,
        },
        "remove" => PatchOp::Remove {
            path: pattern("path")?,
        },
        "move" | "copy" => {
            let from = pattern("from")?;
            let path = pattern("path")?;
            if path.wildcards() > from.wildcards() {
                return Err(format!(
                    "{op}: path {path} has more wildcards than from {from}"
                ));
            }
            if op == "move" {
                PatchOp::Move { from, path }
            } else {
                PatchOp::Copy { from, path }
            }
        }
        _ => {
            let Some(serde_json::Value::Object(table)) = fields.get("table") else {
                return Err("map: \"table\" must be an object".into());
            };
            PatchOp::Map {
                path: pattern("path")?,
                table: table
                    .iter()
                    .map(|(k, v)| (k.clone(), from_json(v)))
                    .collect(),
                default: fields.get("default").map(from_json),
            }
        }
    })
}

/// A JSON value as a [`Value`]: integers as integers, other numbers as 64-bit floats.
#[cfg(feature = "json")]
pub(crate) fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i.into()),
            (_, Some(u), _) => Value::Int(u.into()),
            (_, _, Some(f)) => Value::Float(f),
            _ => Value::Null,
        },
        serde_json::Value::String(s) => Value::String(s.as_str().into()),
        serde_json::Value::Array(items) => Value::Array(items.iter().map(from_json).collect()),
        serde_json::Value::Object(fields) => Value::Map(
            fields
                .iter()
                .map(|(k, v)| (Value::String(k.as_str().into()), from_json(v)))
                .collect(),
        ),
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::*;

    fn doc(json: &str) -> Document {
        let value = from_json(&serde_json::from_str(json).unwrap());
        let Value::Map(entries) = value else {
            panic!("a document is an object")
        };
        let mut d = Document::new();
        for (k, v) in entries {
            d.insert(k.as_str().unwrap(), v);
        }
        d
    }

    fn run(ops: &str, json: &str) -> Result<Document, MigrationError> {
        let mut d = doc(json);
        for op in parse_ops(ops).unwrap() {
            op.apply(&mut d)?;
        }
        Ok(d)
    }

    fn text(d: &Document) -> String {
        d.ids()
            .map(|id| format!("{id}={}", d.memento(id).unwrap()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn each_rfc_6902_op() {
        let d = run(
            r#"[{"op":"add","path":"/p/a","value":1},
                {"op":"add","path":"/p/list/1","value":"mid"},
                {"op":"add","path":"/p/list/-","value":"end"},
                {"op":"remove","path":"/p/gone"},
                {"op":"replace","path":"/p/hp","value":9},
                {"op":"move","from":"/p/old","path":"/p/new"},
                {"op":"copy","from":"/p/new","path":"/q"},
                {"op":"test","path":"/p/hp","value":9.0}]"#,
            r#"{"p":{"hp":1,"gone":true,"old":{"x":1},"list":["a","b"]}}"#,
        )
        .unwrap();
        assert_eq!(
            text(&d),
            r#"p={"hp":9,"list":["a","mid","b","end"],"a":1,"new":{"x":1}} q={"x":1}"#
        );
    }

    #[test]
    fn rfc_6902_errors_name_the_path() {
        for (ops, path) in [
            (r#"[{"op":"remove","path":"/p/missing"}]"#, "/p/missing"),
            (
                r#"[{"op":"replace","path":"/p/missing","value":1}]"#,
                "/p/missing",
            ),
            (r#"[{"op":"add","path":"/p/no/such","value":1}]"#, "/p/no"),
            (
                r#"[{"op":"add","path":"/p/list/5","value":1}]"#,
                "/p/list/5",
            ),
            (r#"[{"op":"move","from":"/p/x","path":"/p/y"}]"#, "/p/x"),
            (r#"[{"op":"test","path":"/p/hp","value":2}]"#, "/p/hp"),
            (r#"[{"op":"remove","path":"/nobody/hp"}]"#, "/nobody"),
        ] {
            let err = run(ops, r#"{"p":{"hp":1,"list":[]}}"#).unwrap_err();
            assert_eq!(err.path, path, "{ops}: {err}");
        }
    }

    #[test]
    fn wildcards_over_arrays_maps_and_mementos() {
        let d = run(
            r#"[{"op":"add","path":"/w/entities/*/z","value":0},
                {"op":"move","from":"/w/entities/*/x","path":"/w/entities/*/pos_x"},
                {"op":"remove","path":"/w/entities/*/junk"},
                {"op":"replace","path":"/w/names/*","value":"?"},
                {"op":"add_if_absent","path":"/*/version","value":1}]"#,
            r#"{"w":{"entities":[{"x":1,"junk":1},{"x":2,"junk":2}],"names":{"a":"A","b":"B"}},
                "v":{"version":7}}"#,
        )
        .unwrap();
        assert_eq!(
            text(&d),
            r#"v={"version":7} w={"entities":[{"z":0,"pos_x":1},{"z":0,"pos_x":2}],"names":{"a":"?","b":"?"},"version":1}"#
        );
        // A wildcard that matches nothing does nothing.
        let d = run(
            r#"[{"op":"remove","path":"/w/entities/*/x"}]"#,
            r#"{"w":{"entities":[]}}"#,
        )
        .unwrap();
        assert_eq!(text(&d), r#"w={"entities":[]}"#);
        // Removing every element of an array through a wildcard works from the end.
        let d = run(
            r#"[{"op":"remove","path":"/w/list/*"}]"#,
            r#"{"w":{"list":[1,2,3]}}"#,
        )
        .unwrap();
        assert_eq!(text(&d), r#"w={"list":[]}"#);
    }

    #[test]
    fn add_if_absent_keeps_what_is_there() {
        let d = run(
            r#"[{"op":"add_if_absent","path":"/p/stamina","value":100},
                {"op":"add_if_absent","path":"/q/stamina","value":100}]"#,
            r#"{"p":{},"q":{"stamina":5}}"#,
        )
        .unwrap();
        assert_eq!(text(&d), r#"p={"stamina":100} q={"stamina":5}"#);
    }

    #[test]
    fn value_tables() {
        let ops = r#"[{"op":"map","path":"/w/e/*/kind","table":{"tree":1,"rock":2,"7":"seven","true":"yes"}}]"#;
        let d = run(
            ops,
            r#"{"w":{"e":[{"kind":"rock"},{"kind":"tree"},{"kind":7},{"kind":true}]}}"#,
        )
        .unwrap();
        assert_eq!(
            text(&d),
            r#"w={"e":[{"kind":2},{"kind":1},{"kind":"seven"},{"kind":"yes"}]}"#
        );
        let err = run(ops, r#"{"w":{"e":[{"kind":"dragon"}]}}"#).unwrap_err();
        assert_eq!(err.path, "/w/e/0/kind");
        assert!(err.reason.contains("dragon"), "{err}");
        let with_default = r#"[{"op":"map","path":"/w/e/*/kind","table":{"tree":1},"default":0}]"#;
        let d = run(with_default, r#"{"w":{"e":[{"kind":"dragon"}]}}"#).unwrap();
        assert_eq!(text(&d), r#"w={"e":[{"kind":0}]}"#);
    }

    #[test]
    fn splitting_a_memento_is_a_move_to_the_top() {
        let d = run(
            r#"[{"op":"move","from":"/player/inventory","path":"/inventory"}]"#,
            r#"{"player":{"hp":1,"inventory":{"potion":2}}}"#,
        )
        .unwrap();
        assert_eq!(text(&d), r#"inventory={"potion":2} player={"hp":1}"#);
    }

    #[test]
    fn malformed_step_files_say_which_op() {
        for (file, index, needle) in [
            ("{}", None, "array"),
            ("[", None, "JSON"),
            (
                r#"[{"op":"add","path":"/a","value":1},{"op":"explode"}]"#,
                Some(1),
                "unknown op",
            ),
            (r#"[{"op":"add","path":"/a"}]"#, Some(0), "value"),
            (r#"[{"op":"add","path":"a","value":1}]"#, Some(0), "path"),
            (
                r#"[{"op":"remove","path":"/a","vaule":1}]"#,
                Some(0),
                "vaule",
            ),
            (
                r#"[{"op":"move","from":"/a","path":"/b/*"}]"#,
                Some(0),
                "wildcards",
            ),
            (
                r#"[{"op":"map","path":"/a","table":[1]}]"#,
                Some(0),
                "table",
            ),
            (r#"[{"op":"remove","path":""}]"#, Some(0), "memento"),
            ("[1]", Some(0), "object"),
        ] {
            let (i, reason) = parse_ops(file).unwrap_err();
            assert_eq!(i, index, "{file}");
            assert!(reason.contains(needle), "{file}: {reason}");
        }
    }

    /// One case of the JSON Patch community's conformance suite, in the memento model: the
    /// case's document is the memento `d`, and its paths start with `/d`. `expected` is the
    /// memento afterwards, or `None` when the patch must fail (to parse or to apply).
    fn conformance(comment: &str, memento: &str, patch: &str, expected: Option<&str>) {
        let outcome = parse_ops(patch)
            .map_err(|(_, reason)| reason)
            .and_then(|ops| {
                let mut d = doc(&format!(r#"{{"d":{memento}}}"#));
                for op in ops {
                    op.apply(&mut d).map_err(|e| e.to_string())?;
                }
                Ok(d)
            });
        match (outcome, expected) {
            (Ok(d), Some(expected)) => {
                let found: serde_json::Value =
                    serde_json::from_str(&d.memento("d").unwrap().to_string()).unwrap();
                let expected: serde_json::Value = serde_json::from_str(expected).unwrap();
                assert_eq!(found, expected, "{comment}");
            }
            (Err(_), None) => {}
            (Ok(d), None) => panic!("{comment}: should fail, gave {}", text(&d)),
            (Err(e), Some(_)) => panic!("{comment}: should pass, failed: {e}"),
        }
    }

    #[test]
    fn rfc_6902_conformance_cases() {
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            (
                "add replaces any existing field",
                r#"{"foo":null}"#,
                r#"[{"op":"add","path":"/d/foo","value":1}]"#,
                Some(r#"{"foo":1}"#),
            ),
            (
                "add into a composite value",
                r#"{"foo":1,"baz":[{"qux":"hello"}]}"#,
                r#"[{"op":"add","path":"/d/baz/0/foo","value":"world"}]"#,
                Some(r#"{"foo":1,"baz":[{"qux":"hello","foo":"world"}]}"#),
            ),
            (
                "add out of bounds (upper)",
                r#"{"bar":[1,2]}"#,
                r#"[{"op":"add","path":"/d/bar/8","value":"5"}]"#,
                None,
            ),
            (
                "add out of bounds (lower)",
                r#"{"bar":[1,2]}"#,
                r#"[{"op":"add","path":"/d/bar/-1","value":"5"}]"#,
                None,
            ),
            (
                "0 can be an object member's name",
                r#"{"foo":1}"#,
                r#"[{"op":"add","path":"/d/0","value":"bar"}]"#,
                Some(r#"{"foo":1,"0":"bar"}"#),
            ),
            (
                "insert into an array",
                r#"{"a":["foo","sil"]}"#,
                r#"[{"op":"add","path":"/d/a/1","value":"bar"}]"#,
                Some(r#"{"a":["foo","bar","sil"]}"#),
            ),
            (
                "push through the last index + 1",
                r#"{"a":["foo","sil"]}"#,
                r#"[{"op":"add","path":"/d/a/2","value":"bar"}]"#,
                Some(r#"{"a":["foo","sil","bar"]}"#),
            ),
            (
                "add at an index past the end fails",
                r#"{"a":["foo","sil"]}"#,
                r#"[{"op":"add","path":"/d/a/3","value":"bar"}]"#,
                None,
            ),
            (
                "an array value added is not flattened",
                r#"{"a":["foo","sil"]}"#,
                r#"[{"op":"add","path":"/d/a/1","value":["bar","baz"]}]"#,
                Some(r#"{"a":["foo",["bar","baz"],"sil"]}"#),
            ),
            (
                "an object member on an array fails",
                r#"{"a":["foo","sil"]}"#,
                r#"[{"op":"add","path":"/d/a/bar","value":42}]"#,
                None,
            ),
            (
                "- appends, n levels down",
                r#"{"a":[1,2,[3,[4,5]]]}"#,
                r#"[{"op":"add","path":"/d/a/2/1/-","value":{"foo":["bar","baz"]}}]"#,
                Some(r#"{"a":[1,2,[3,[4,5,{"foo":["bar","baz"]}]]]}"#),
            ),
            (
                "1e0 is a member's name, not a number",
                r#"{"1e0":"foo"}"#,
                r#"[{"op":"test","path":"/d/1e0","value":"foo"}]"#,
                Some(r#"{"1e0":"foo"}"#),
            ),
            (
                "1e0 is not an array index",
                r#"{"a":["foo","bar"]}"#,
                r#"[{"op":"test","path":"/d/a/1e0","value":"bar"}]"#,
                None,
            ),
            (
                "an index with a leading zero is not an index",
                r#"{"a":["foo","bar"]}"#,
                r#"[{"op":"test","path":"/d/a/01","value":"bar"}]"#,
                None,
            ),
            (
                "00 is not an index",
                r#"{"a":["foo","bar"]}"#,
                r#"[{"op":"test","path":"/d/a/00","value":"foo"}]"#,
                None,
            ),
            (
                "remove with a bad number fails",
                r#"{"a":[1,2,3,4]}"#,
                r#"[{"op":"remove","path":"/d/a/1e0"}]"#,
                None,
            ),
            (
                "remove a member",
                r#"{"foo":1,"bar":[1,2,3,4]}"#,
                r#"[{"op":"remove","path":"/d/bar"}]"#,
                Some(r#"{"foo":1}"#),
            ),
            (
                "remove a nested member",
                r#"{"foo":1,"baz":[{"qux":"hello"}]}"#,
                r#"[{"op":"remove","path":"/d/baz/0/qux"}]"#,
                Some(r#"{"foo":1,"baz":[{}]}"#),
            ),
            (
                "repeated removes",
                r#"{"a":[1,2,3,4]}"#,
                r#"[{"op":"remove","path":"/d/a/1"},{"op":"remove","path":"/d/a/2"}]"#,
                Some(r#"{"a":[1,3]}"#),
            ),
            (
                "removing a member that is not there fails",
                r#"{"foo":"bar"}"#,
                r#"[{"op":"remove","path":"/d/baz"}]"#,
                None,
            ),
            (
                "removing an index that is not there fails",
                r#"{"a":["foo","bar"]}"#,
                r#"[{"op":"remove","path":"/d/a/2"}]"#,
                None,
            ),
            (
                "replace a nested value",
                r#"{"foo":[1,2,3,4],"baz":[{"qux":"hello"}]}"#,
                r#"[{"op":"replace","path":"/d/baz/0/qux","value":"world"}]"#,
                Some(r#"{"foo":[1,2,3,4],"baz":[{"qux":"world"}]}"#),
            ),
            (
                "replace under a missing parent fails",
                r#"{"bar":"baz"}"#,
                r#"[{"op":"replace","path":"/d/foo/bar","value":false}]"#,
                None,
            ),
            (
                "null is a value like any other",
                r#"{"foo":null,"n":null}"#,
                r#"[{"op":"test","path":"/d/foo","value":null},
                    {"op":"copy","from":"/d/foo","path":"/d/bar"},
                    {"op":"move","from":"/d/foo","path":"/d/baz"},
                    {"op":"remove","path":"/d/bar"},
                    {"op":"replace","path":"/d/n","value":"truthy"}]"#,
                Some(r#"{"baz":null,"n":"truthy"}"#),
            ),
            (
                "test ignores the order of members, nested too",
                r#"{"foo":{"foo":1,"bar":2},"l":[{"foo":1,"bar":2}]}"#,
                r#"[{"op":"test","path":"/d/foo","value":{"bar":2,"foo":1}},
                    {"op":"test","path":"/d/l","value":[{"bar":2,"foo":1}]}]"#,
                Some(r#"{"foo":{"foo":1,"bar":2},"l":[{"foo":1,"bar":2}]}"#),
            ),
            (
                "test of a different value fails",
                r#"{"foo":{"bar":[1,2,5,4]}}"#,
                r#"[{"op":"test","path":"/d/foo","value":[1,2]}]"#,
                None,
            ),
            (
                "RFC 6901 escapes, the empty name and unusual characters",
                r#"{"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#,
                r#"[{"op":"test","path":"/d/","value":0},
                    {"op":"test","path":"/d/a~1b","value":1},
                    {"op":"test","path":"/d/c%d","value":2},
                    {"op":"test","path":"/d/e^f","value":3},
                    {"op":"test","path":"/d/g|h","value":4},
                    {"op":"test","path":"/d/i\\j","value":5},
                    {"op":"test","path":"/d/k\"l","value":6},
                    {"op":"test","path":"/d/ ","value":7},
                    {"op":"test","path":"/d/m~0n","value":8}]"#,
                Some(r#"{"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#),
            ),
            (
                "~01 is ~1, not /",
                r#"{"~1":1,"/":2}"#,
                r#"[{"op":"replace","path":"/d/~01","value":9}]"#,
                Some(r#"{"~1":9,"/":2}"#),
            ),
            (
                "move to the same location has no effect",
                r#"{"foo":1}"#,
                r#"[{"op":"move","from":"/d/foo","path":"/d/foo"}]"#,
                Some(r#"{"foo":1}"#),
            ),
            (
                "move into an array",
                r#"{"baz":[{"qux":"hello"}],"bar":1}"#,
                r#"[{"op":"move","from":"/d/baz/0/qux","path":"/d/baz/1"}]"#,
                Some(r#"{"baz":[{},"hello"],"bar":1}"#),
            ),
            (
                "copy",
                r#"{"baz":[{"qux":"hello"}],"bar":1}"#,
                r#"[{"op":"copy","from":"/d/baz/0","path":"/d/boo"}]"#,
                Some(r#"{"baz":[{"qux":"hello"}],"bar":1,"boo":{"qux":"hello"}}"#),
            ),
            (
                "missing value",
                r#"{"a":[1]}"#,
                r#"[{"op":"add","path":"/d/a/-"}]"#,
                None,
            ),
            (
                "missing from",
                r#"{"a":[1]}"#,
                r#"[{"op":"copy","path":"/d/a/-"}]"#,
                None,
            ),
            (
                "an unrecognised op",
                r#"{"foo":1}"#,
                r#"[{"op":"spam","path":"/d/foo","value":1}]"#,
                None,
            ),
        ];
        for (comment, memento, patch, expected) in cases {
            conformance(comment, memento, patch, *expected);
        }
    }

    /// RFC 6902 §4 says members an operation does not define "MUST be ignored". Step files
    /// refuse them, deliberately: a misspelt member must not pass silently in a file that
    /// rewrites players' saves. This is the community suite's "spurious patch properties" case.
    #[test]
    fn members_an_operation_does_not_define_are_refused() {
        conformance(
            "spurious patch properties (a deliberate deviation)",
            r#"{"foo":1}"#,
            r#"[{"op":"test","path":"/d/foo","value":1,"spurious":1}]"#,
            None,
        );
        for (file, member) in [
            (
                r#"[{"op":"test","path":"/d/foo","value":1,"spurious":1}]"#,
                "spurious",
            ),
            (
                r#"[{"op":"map","path":"/d/kind","table":{"a":1},"defualt":0}]"#,
                "defualt",
            ),
            (r#"[{"op":"remove","path":"/d/foo","value":1}]"#, "value"),
            (
                r#"[{"op":"move","from":"/d/a","path":"/d/b","value":1}]"#,
                "value",
            ),
        ] {
            let (index, reason) = parse_ops(file).unwrap_err();
            assert_eq!(index, Some(0), "{file}");
            assert!(reason.contains(&format!("{member:?}")), "{file}: {reason}");
            assert!(reason.contains("RFC 6902"), "{file}: {reason}");
        }
    }

    #[test]
    fn tilde_2_is_a_literal_star() {
        let memento = r#"{"*":1,"a":2,"a*b":3,"~2":4}"#;
        // A `*` token is a wildcard: every member changes.
        conformance(
            "* is every member",
            r#"{"*":1,"a":2}"#,
            r#"[{"op":"replace","path":"/d/*","value":0}]"#,
            Some(r#"{"*":0,"a":0}"#),
        );
        conformance(
            "~2 is the member named *",
            memento,
            r#"[{"op":"replace","path":"/d/~2","value":0}]"#,
            Some(r#"{"*":0,"a":2,"a*b":3,"~2":4}"#),
        );
        conformance(
            "~2 inside a token is a *",
            memento,
            r#"[{"op":"replace","path":"/d/a~2b","value":0}]"#,
            Some(r#"{"*":1,"a":2,"a*b":0,"~2":4}"#),
        );
        conformance(
            "a * inside a token was always literal",
            memento,
            r#"[{"op":"replace","path":"/d/a*b","value":0}]"#,
            Some(r#"{"*":1,"a":2,"a*b":0,"~2":4}"#),
        );
        conformance(
            "~02 is ~ then 2: the member named ~2",
            memento,
            r#"[{"op":"remove","path":"/d/~02"}]"#,
            Some(r#"{"*":1,"a":2,"a*b":3}"#),
        );
        conformance(
            "move and copy from and to a literal *",
            r#"{"*":{"x":1},"b":{}}"#,
            r#"[{"op":"copy","from":"/d/~2/x","path":"/d/b/~2"},
                {"op":"move","from":"/d/~2","path":"/d/star"}]"#,
            Some(r#"{"b":{"*":1},"star":{"x":1}}"#),
        );
        conformance(
            "a literal * is not a wildcard in move",
            r#"{"*":1,"a":2}"#,
            r#"[{"op":"move","from":"/d/~2","path":"/d/b"}]"#,
            Some(r#"{"a":2,"b":1}"#),
        );
        // A literal * in `from` binds nothing, so `path` may not use a wildcard for it.
        let (_, reason) = parse_ops(r#"[{"op":"move","from":"/d/~2","path":"/d/*"}]"#).unwrap_err();
        assert!(reason.contains("wildcards"), "{reason}");
        for bad in ["/d/~3", "/d/~", "/d/a~"] {
            let file = format!(r#"[{{"op":"remove","path":"{bad}"}}]"#);
            let (_, reason) = parse_ops(&file).unwrap_err();
            assert!(reason.contains("~2"), "{bad}: {reason}");
        }
        // A pattern keeps its text for plans and messages.
        let ops = parse_ops(r#"[{"op":"remove","path":"/d/~2"}]"#).unwrap();
        assert_eq!(ops[0].paths(), ["/d/~2"]);
    }

    #[test]
    fn test_compares_integers_exactly_and_floats_as_floats() {
        let memento = r#"{"id":9007199254740993,"seed":18446744073709551615,
                         "low":-9223372036854775808,"n":9,"f":0.5,"ids":{"a":9007199254740993}}"#;
        for (value, passes) in [
            (r#""/d/id","value":9007199254740993"#, true),
            (r#""/d/id","value":9007199254740992"#, false),
            (r#""/d/id","value":9007199254740994"#, false),
            // The nearest f64 to the id is 9007199254740992: not the id.
            (r#""/d/id","value":9007199254740993.0"#, false),
            (r#""/d/seed","value":18446744073709551615"#, true),
            (r#""/d/seed","value":18446744073709551614"#, false),
            (r#""/d/low","value":-9223372036854775808"#, true),
            (r#""/d/low","value":-9223372036854775807"#, false),
            // An integer and a float are equal when the float is that integer exactly.
            (r#""/d/n","value":9.0"#, true),
            (r#""/d/n","value":9e0"#, true),
            (r#""/d/n","value":9.5"#, false),
            (r#""/d/f","value":0.5"#, true),
            (r#""/d/f","value":5e-1"#, true),
            (r#""/d/f","value":0.5000000000000001"#, false),
            // Inside maps and arrays too.
            (r#""/d/ids","value":{"a":9007199254740993}"#, true),
            (r#""/d/ids","value":{"a":9007199254740992}"#, false),
            (r#""/d/id","value":"9007199254740993""#, false),
        ] {
            let patch = format!(r#"[{{"op":"test","path":{value}}}]"#);
            let result = run(&patch, &format!(r#"{{"d":{memento}}}"#));
            assert_eq!(result.is_ok(), passes, "{patch}: {result:?}");
        }
    }

    #[test]
    fn test_compares_a_32_bit_float_at_its_own_precision() {
        let mut d = Document::new();
        let memento: Value = [
            ("speed".to_string(), Value::F32(0.1)),
            ("three".to_string(), Value::F32(3.0)),
            ("half".to_string(), Value::F32(0.5)),
        ]
        .into_iter()
        .collect();
        d.insert("d", memento);
        for (path, value, passes) in [
            ("/d/speed", "0.1", true),
            ("/d/speed", "0.2", false),
            ("/d/three", "3", true),
            ("/d/three", "3.0", true),
            ("/d/three", "4", false),
            ("/d/half", "0.5", true),
        ] {
            let patch = format!(r#"[{{"op":"test","path":"{path}","value":{value}}}]"#);
            let ops = parse_ops(&patch).unwrap();
            assert_eq!(ops[0].apply(&mut d).is_ok(), passes, "{patch}");
        }
        assert!(same_number(&Value::F32(0.5), &Value::F32(0.5)).unwrap());
        assert!(!same_number(&Value::F32(0.5), &Value::F32(0.25)).unwrap());
        assert!(same_number(&Value::Int(1), &"1".into()).is_none());
        assert!(!is_int(f64::NAN, 0));
        assert!(!is_int(f64::INFINITY, i128::MAX));
        assert!(is_int(-0.0, 0));
    }
}
