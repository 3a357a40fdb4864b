//! What changed between two value trees: the paths that differ, as RFC 6901 JSON Pointers, with
//! the old and the new values.
//!
//! - Maps are compared key by key, whatever their order. A key's pointer token is the key
//!   itself, or an integer key's decimal form (as the migration steps' pointers name it), so a
//!   JSON save's `{"7": …}` and a MessagePack save's `{7: …}` are the same map. A map with two
//!   keys of the same token (`7` and `"7"`) is compared as a whole.
//! - Arrays are compared index by index: an element added at the end is one `added` path, but
//!   one inserted at the front changes every index after it.
//! - Values of different kinds differ, except the forms one value takes in the two codecs: a
//!   32-bit float equals the 64-bit float a JSON save holds for it (its shortest decimal), and
//!   a byte string equals an array of the same byte values. Floats are equal when their bits
//!   are (so `-0.0` differs from `0.0`); every NaN equals every NaN.
//! - Paths come out in a fixed order: map keys sorted by token (integer keys by value, first),
//!   array indices ascending.

use std::collections::BTreeMap;

use savegame::migrate::Value;
use serde::Serialize;

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Only the new tree has it.
    Added,
    /// Only the old tree has it.
    Removed,
    /// Both have it, with different values.
    Changed,
}

/// One path that differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The RFC 6901 pointer (below the prefix given to [`changes`]).
    pub path: String,
    /// How it differs.
    pub kind: Kind,
    /// The old value (`None` when added).
    pub old: Option<Value>,
    /// The new value (`None` when removed).
    pub new: Option<Value>,
}

/// Appends `token` to a pointer, escaped as RFC 6901 says (`~` as `~0`, `/` as `~1`).
pub fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Every path where `new` differs from `old`, each pointer starting with `prefix`.
pub fn changes(prefix: &str, old: &Value, new: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    let mut path = prefix.to_owned();
    walk(&mut path, old, new, &mut out);
    out
}

/// Whether two trees hold the same data (see the module docs).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => match (by_token(x), by_token(y)) {
            (Some(x), Some(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((k, v), (l, w))| same(k, l) && same(v, w))
            }
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::Float(x), Value::Float(y)) => same_f64(*x, *y),
        (Value::F32(x), Value::F32(y)) => same_f64(f64::from(*x), f64::from(*y)),
        (Value::Float(x), Value::F32(y)) | (Value::F32(y), Value::Float(x)) => {
            same_f64(*x, f64::from(*y)) || same_f64(*x, shortest(*y))
        }
        (Value::Bytes(bytes), Value::Array(items)) | (Value::Array(items), Value::Bytes(bytes)) => {
            bytes.len() == items.len()
                && bytes
                    .iter()
                    .zip(items)
                    .all(|(b, v)| matches!(v, Value::Int(n) if *n == i128::from(*b)))
        }
        _ => a == b,
    }
}

fn same_f64(x: f64, y: f64) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

/// The 64-bit float of an f32's shortest decimal form: what the JSON codec writes for it and
/// reads back.
fn shortest(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// The pointer token of a map key: a string itself, an integer its decimal form, anything
/// else its compact text.
fn token(key: &Value) -> String {
    match key {
        Value::String(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// A map's entries by pointer token, sorted; `None` when two keys share a token.
fn by_token(entries: &[(Value, Value)]) -> Option<BTreeMap<String, &Value>> {
    let mut map = BTreeMap::new();
    for (k, v) in entries {
        if map.insert(token(k), v).is_some() {
            return None;
        }
    }
    Some(map)
}

/// Map keys in order: integer tokens by value (`2` before `10`), before the other tokens in
/// byte order.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<i128>(), b.parse::<i128>()) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

fn walk(path: &mut String, old: &Value, new: &Value, out: &mut Vec<Change>) {
    let len = path.len();
    match (old, new) {
        (Value::Map(x), Value::Map(y)) => {
            let (Some(x), Some(y)) = (by_token(x), by_token(y)) else {
                changed(path, old, new, out);
                return;
            };
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort_by(|a, b| key_order(a, b));
            keys.dedup();
            for key in keys {
                push_token(path, key);
                match (x.get(key), y.get(key)) {
                    (Some(v), Some(w)) => walk(path, v, w, out),
                    (Some(v), None) => out.push(Change {
                        path: path.clone(),
                        kind: Kind::Removed,
                        old: Some((*v).clone()),
                        new: None,
                    }),
                    (None, Some(w)) => out.push(Change {
                        path: path.clone(),
                        kind: Kind::Added,
                        old: None,
                        new: Some((*w).clone()),
                    }),
                    (None, None) => {}
                }
                path.truncate(len);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                push_token(path, &i.to_string());
                match (x.get(i), y.get(i)) {
                    (Some(v), Some(w)) => walk(path, v, w, out),
                    (Some(v), None) => out.push(Change {
                        path: path.clone(),
                        kind: Kind::Removed,
                        old: Some(v.clone()),
                        new: None,
                    }),
                    (None, Some(w)) => out.push(Change {
                        path: path.clone(),
                        kind: Kind::Added,
                        old: None,
                        new: Some(w.clone()),
                    }),
                    (None, None) => {}
                }
                path.truncate(len);
            }
        }
        _ => changed(path, old, new, out),
    }
}

fn changed(path: &str, old: &Value, new: &Value, out: &mut Vec<Change>) {
    if !same(old, new) {
        out.push(Change {
            path: path.to_owned(),
            kind: Kind::Changed,
            old: Some(old.clone()),
            new: Some(new.clone()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn paths(old: &str, new: &str) -> Vec<(String, Kind)> {
        changes("/m", &json(old), &json(new))
            .into_iter()
            .map(|c| (c.path, c.kind))
            .collect()
    }

    #[test]
    fn nested_changes_are_paths_in_key_order() {
        let got = paths(
            r#"{"b":{"x":1,"y":[1,2,3]},"a":"same","gone":true}"#,
            r#"{"a":"same","new":null,"b":{"y":[1,5],"x":2}}"#,
        );
        assert_eq!(
            got,
            [
                ("/m/b/x".to_owned(), Kind::Changed),
                ("/m/b/y/1".to_owned(), Kind::Changed),
                ("/m/b/y/2".to_owned(), Kind::Removed),
                ("/m/gone".to_owned(), Kind::Removed),
                ("/m/new".to_owned(), Kind::Added),
            ]
        );
    }

    #[test]
    fn old_and_new_values_are_kept() {
        let c = changes("/m", &json(r#"{"hp":[1]}"#), &json(r#"{"hp":[1,{"a":2}]}"#));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].path, "/m/hp/1");
        assert_eq!((c[0].kind, &c[0].old), (Kind::Added, &None));
        assert_eq!(c[0].new, Some(json(r#"{"a":2}"#)));
    }

    #[test]
    fn indices_sort_as_numbers_and_tokens_are_escaped() {
        let old = json(&format!("[{}]", ["0"; 12].join(",")));
        let new = json(&format!("[{}]", ["1"; 12].join(",")));
        let got: Vec<String> = changes("", &old, &new)
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(got[..3], ["/0", "/1", "/2"]);
        assert_eq!(got[10..], ["/10", "/11"]);
        let keys =
            |n: &[i128]| Value::Map(n.iter().map(|&k| (Value::Int(k), Value::Int(k))).collect());
        let got: Vec<String> = changes("", &keys(&[10, 2]), &keys(&[-1, 3]))
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(got, ["/-1", "/2", "/3", "/10"]);
        assert_eq!(
            paths(r#"{"a/b":{"c~d":1}}"#, r#"{"a/b":{"c~d":2}}"#),
            [("/m/a~1b/c~0d".to_owned(), Kind::Changed)]
        );
    }

    #[test]
    fn kinds_that_differ_change_the_whole_value() {
        assert_eq!(
            paths(r#"{"a":[1]}"#, r#"{"a":{"0":1}}"#),
            [("/m/a".to_owned(), Kind::Changed)]
        );
        assert_eq!(paths("1", "1.0"), [("/m".to_owned(), Kind::Changed)]);
        assert!(paths(r#"{"a":[1,{"b":null}]}"#, r#"{"a":[1,{"b":null}]}"#).is_empty());
    }

    #[test]
    fn the_two_codecs_forms_of_one_value_are_the_same() {
        // MessagePack: f32, integer keys, bytes. JSON: the f32's shortest decimal, string
        // keys, an array of numbers.
        let msgpack = Value::Map(vec![
            (Value::String("x".into()), Value::F32(0.1)),
            (
                Value::String("names".into()),
                Value::Map(vec![(Value::Int(7), Value::String("seven".into()))]),
            ),
            (Value::String("blob".into()), Value::Bytes(vec![0, 255])),
            (Value::String("nan".into()), Value::F32(f32::NAN)),
        ]);
        let from_json = json(r#"{"names":{"7":"seven"},"x":0.1,"blob":[0,255],"nan":null}"#);
        let got = changes("", &msgpack, &from_json);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            got[0].path, "/nan",
            "JSON has no NaN: null is another value"
        );
        assert!(same(&Value::Float(f64::NAN), &Value::F32(f32::NAN)));
        assert!(!same(&Value::F32(0.0), &Value::F32(-0.0)));
        assert!(!same(&Value::F32(0.1), &Value::Float(0.10000001)));
        assert!(!same(&Value::Bytes(vec![1]), &json("[2]")));
    }

    #[test]
    fn maps_with_clashing_tokens_compare_whole() {
        let clash = Value::Map(vec![
            (Value::Int(7), Value::Int(1)),
            (Value::String("7".into()), Value::Int(2)),
        ]);
        let other = Value::Map(vec![
            (Value::Int(7), Value::Int(1)),
            (Value::String("7".into()), Value::Int(3)),
        ]);
        let got = changes("/m", &clash, &other);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].path.as_str(), got[0].kind), ("/m", Kind::Changed));
        assert!(changes("/m", &clash, &clash.clone()).is_empty());
    }
}
