//! Declarative migration steps: JSON Patch (RFC 6902) over a [`Document`], plus what saves need
//! beyond it.
//!
//! A step file is a JSON array of operations; the operations and wildcards are described in
//! the [`migrate`](crate::migrate) module docs.

use std::fmt;

use super::document::{Document, parse_pointer, pointer_of};
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
    fn parse(text: &str) -> Result<Self, String> {
        let tokens = parse_pointer(text)
            .map_err(|e| e.reason)?
            .into_iter()
            .map(|t| {
                if t == "*" {
                    Token::Any
                } else {
                    Token::Literal(t)
                }
            })
            .collect::<Vec<_>>();
        if tokens.is_empty() {
            return Err("a path must name at least a memento".into());
        }
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
                Value::String(s) => Some(s.clone()),
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

impl PatchOp {
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
            PatchOp::Add { path, value } => {
                for target in path.targets(doc) {
                    doc.add_at(&target, value.clone(), false)?;
                }
            }
            PatchOp::AddIfAbsent { path, value } => {
                for target in path.targets(doc) {
                    doc.add_at(&target, value.clone(), true)?;
                }
            }
            PatchOp::Remove { path } => {
                // Last first, so removing array elements does not shift the ones still to go.
                for target in path.targets(doc).into_iter().rev() {
                    doc.remove_at(&target)?;
                }
            }
            PatchOp::Replace { path, value } => {
                for target in path.targets(doc) {
                    *doc.at_mut(&target)? = value.clone();
                }
            }
            PatchOp::Test { path, value } => {
                for target in path.targets(doc) {
                    let found = doc.at(&target)?;
                    if !same_json(found, value) {
                        return Err(MigrationError::new(
                            pointer_of(&target),
                            format!("test failed: found {found}, expected {value}"),
                        ));
                    }
                }
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
                for target in path.targets(doc) {
                    let slot = doc.at_mut(&target)?;
                    let mapped = slot
                        .table_key()
                        .and_then(|key| table.iter().find(|(k, _)| *k == key))
                        .map(|(_, v)| v.clone())
                        .or_else(|| default.clone());
                    match mapped {
                        Some(v) => *slot = v,
                        None => {
                            return Err(MigrationError::new(
                                pointer_of(&target),
                                format!("the table has no entry for {slot}"),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// JSON equality: numbers compare by value, whatever their representation.
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
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
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
    if let Some(extra) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("{op}: unexpected field {extra:?}"));
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
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(items) => Value::Array(items.iter().map(from_json).collect()),
        serde_json::Value::Object(fields) => Value::Map(
            fields
                .iter()
                .map(|(k, v)| (Value::String(k.clone()), from_json(v)))
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
}
