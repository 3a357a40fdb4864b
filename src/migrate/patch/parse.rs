//! Reading a step file: its text into operations ([`parse_ops`]), each checked for the
//! members it defines and the paths it names, and JSON values into [`Value`]s
//! ([`from_json`]).

use super::PatchOp;
use super::pattern::Pattern;
use crate::migrate::value::Value;

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
