//! Running an operation on a document: JSON Patch's six over every match of their paths,
//! `add_if_absent` and `map`, and the JSON equality `test` compares with (integers exactly,
//! floats as floats, a 32-bit float at its own precision).

use super::PatchOp;
use super::pattern::{Pattern, Token, pointer};
use crate::migrate::document::{Document, add_into, pointer_of};
use crate::migrate::error::MigrationError;
use crate::migrate::value::Value;

impl PatchOp {
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
pub(super) fn same_number(a: &Value, b: &Value) -> Option<bool> {
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
pub(super) fn is_int(f: f64, n: i128) -> bool {
    // 2^127: every integral f64 in [-2^127, 2^127) converts to i128 exactly.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f) && f as i128 == n
}
