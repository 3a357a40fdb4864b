//! Property diffs: what an edit changed, as paths in the encoded value tree of a memento
//! ([`Value`]), each with its old and new value. Unity's `PropertyDiffUndo`.
//!
//! A property-diff edit ([`History::diff_edit`](super::History::diff_edit)) keeps only these
//! [`Modification`]s. Its undo writes the old values at their paths into the originator's
//! *current* memento and restores that, so a property changed since without being recorded (by
//! a script, by play between edits) is left alone; its redo writes the new values.
//!
//! How two trees are compared:
//!
//! - **Maps** (structs, `BTreeMap`s, enums with data) key by key, whatever their order: a key
//!   only one side has is a modification whose other side is absent. A map that is empty on
//!   either side, or whose keys are floats, arrays or maps, is one modification as a whole
//!   (so that a restored key keeps its exact type).
//! - **Arrays** of the same length element by element, by index. An array whose length changed
//!   is one modification as a whole: keep collections whose elements come and go in maps keyed
//!   by id, not in `Vec`s, so that adding a piece records that piece and not the whole list.
//! - Anything else is compared as a value; floats by their bits (a NaN equals itself).
//!
//! # Conflicts
//!
//! Before an undo writes a path, it checks that the path still holds the value the edit left
//! there (a redo: the value it found). When it does not, something changed the path since, and
//! the history's [`OnConflict`] rule decides.

use std::collections::BTreeMap;
use std::fmt;
use std::mem::size_of;

use super::ID;
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::migrate::Value;

/// One changed property of a recorded edit: its path, its value before the edit and after it
/// (Unity's `UndoPropertyModification`). `None` means the path did not exist on that side (a
/// map key added or removed).
///
/// A [hook](super::Recorded::modifications_mut) sees the list of an edit's modifications and may
/// drop some ([`Vec::retain`]) or change their values.
#[derive(Clone, PartialEq)]
pub struct Modification {
    pub(crate) path: Box<[Value]>,
    pub(crate) old: Option<Value>,
    pub(crate) new: Option<Value>,
    /// For a new value a hook rewrote: the value the target really held when the edit was
    /// recorded (an undo accepts either).
    pub(crate) seen: Option<Option<Value>>,
}

impl Modification {
    pub(crate) fn new(path: Vec<Value>, old: Option<Value>, new: Option<Value>) -> Self {
        Modification {
            path: path.into_boxed_slice(),
            old,
            new,
            seen: None,
        }
    }

    /// The path as an RFC 6901 JSON Pointer: `/pieces/3/at`, `/scale`; `""` for the whole
    /// memento. Map keys appear as themselves (an integer key in its decimal form), array
    /// elements by index.
    #[must_use]
    pub fn path(&self) -> String {
        pointer(&self.path)
    }

    /// The path's tokens: the map keys as the memento's codec decoded them (a string, or an
    /// integer for a MessagePack map with integer keys), and array indices as integers.
    #[must_use]
    pub fn tokens(&self) -> &[Value] {
        &self.path
    }

    /// The value before the edit (`None`: the path did not exist): what an undo writes back.
    #[must_use]
    pub fn before(&self) -> Option<&Value> {
        self.old.as_ref()
    }

    /// The value after the edit (`None`: the path was removed): what a redo writes.
    #[must_use]
    pub fn after(&self) -> Option<&Value> {
        self.new.as_ref()
    }

    /// [`before`](Self::before), decoded as a `V` (`Ok(None)`: the path did not exist).
    ///
    /// # Errors
    /// [`Error::Decode`] when the value is not a `V`.
    pub fn before_as<V: serde::de::DeserializeOwned>(&self) -> Result<Option<V>> {
        self.old.as_ref().map(decode_value).transpose()
    }

    /// [`after`](Self::after), decoded as a `V` (`Ok(None)`: the path was removed).
    ///
    /// # Errors
    /// [`Error::Decode`] when the value is not a `V`.
    pub fn after_as<V: serde::de::DeserializeOwned>(&self) -> Result<Option<V>> {
        self.new.as_ref().map(decode_value).transpose()
    }

    /// Changes the value an undo writes back (`None`: an undo removes the path).
    pub fn set_before(&mut self, value: Option<Value>) {
        self.old = value;
    }

    /// Changes the value a redo writes (`None`: a redo removes the path).
    pub fn set_after(&mut self, value: Option<Value>) {
        self.new = value;
    }

    /// Heap bytes the modification owns, besides its own size.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.path.len() * size_of::<Value>()
            + self.path.iter().map(value_heap).sum::<usize>()
            + self.old.as_ref().map_or(0, value_heap)
            + self.new.as_ref().map_or(0, value_heap)
            + self
                .seen
                .as_ref()
                .and_then(Option::as_ref)
                .map_or(0, value_heap)
    }
}

impl fmt::Debug for Modification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<Value>| v.as_ref().map_or_else(|| "absent".into(), short);
        write!(
            f,
            "Modification({:?}: {} -> {})",
            self.path(),
            side(&self.old),
            side(&self.new)
        )
    }
}

/// A modification's value as a `V`, through the value tree's serde form in the built-in codec
/// (MessagePack, or JSON without it).
fn decode_value<V: serde::de::DeserializeOwned>(value: &Value) -> Result<V> {
    let codec = super::line::default_codec();
    let bytes = codec.encode(value).map_err(|e| e.encoding(ID))?;
    codec.decode(&bytes).map_err(|e| e.decoding(ID))
}

/// A value's text for messages, cut at 60 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// What an undo or redo of a property-diff edit does with a recorded path that something else
/// changed since (a script, play, another tool), set with
/// [`HistoryBuilder::on_conflict`](super::HistoryBuilder::on_conflict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OnConflict {
    /// Refuse the whole undo or redo with [`Error::UndoConflict`](crate::Error::UndoConflict),
    /// changing nothing: the history stays where it was. The default, since only the player
    /// can say which change should win. The game may then ask, and undo again under another
    /// rule ([`History::set_on_conflict`](super::History::set_on_conflict)).
    #[default]
    Refuse,
    /// The later change wins: leave a changed path as it is now, and undo or redo the other
    /// paths of the edit.
    KeepCurrent,
    /// The undo or redo wins (last writer wins): write the recorded value over the later
    /// change, as a memento edit would. A path that can no longer be written (its parent is
    /// gone) is still an [`Error::UndoConflict`](crate::Error::UndoConflict).
    Overwrite,
}

/// The path at which an undo or redo found a conflict it could not settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub(crate) path: String,
}

/// Every modification that turns `before` into `after`.
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<Modification> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(&mut path, before, after, &mut out);
    out
}

fn walk(path: &mut Vec<Value>, a: &Value, b: &Value, out: &mut Vec<Modification>) {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) if !x.is_empty() && !y.is_empty() => {
            if !walk_maps(path, x, y, out) {
                whole(path, a, b, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                path.push(Value::Int(i as i128));
                walk(path, v, w, out);
                path.pop();
            }
        }
        _ => whole(path, a, b, out),
    }
}

fn whole(path: &[Value], a: &Value, b: &Value, out: &mut Vec<Modification>) {
    if !same(a, b) {
        out.push(Modification::new(
            path.to_vec(),
            Some(a.clone()),
            Some(b.clone()),
        ));
    }
}

/// Compares two non-empty maps key by key; `false` when their keys cannot be tokens (the
/// caller records the map as a whole).
fn walk_maps(
    path: &mut Vec<Value>,
    x: &[(Value, Value)],
    y: &[(Value, Value)],
    out: &mut Vec<Modification>,
) -> bool {
    // The usual case: the same keys in the same order (a struct, a map whose values changed).
    if x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|((k, _), (l, _))| k == l && key(k).is_some())
    {
        for ((k, v), (_, w)) in x.iter().zip(y) {
            path.push(k.clone());
            walk(path, v, w, out);
            path.pop();
        }
        return true;
    }
    let (Some(xi), Some(yi)) = (index(x), index(y)) else {
        return false;
    };
    for (k, v) in x {
        path.push(k.clone());
        match key(k).and_then(|t| yi.get(&t)) {
            Some(&j) => walk(path, v, &y[j].1, out),
            None => out.push(Modification::new(path.clone(), Some(v.clone()), None)),
        }
        path.pop();
    }
    for (k, w) in y {
        if key(k).is_some_and(|t| !xi.contains_key(&t)) {
            path.push(k.clone());
            out.push(Modification::new(path.clone(), None, Some(w.clone())));
            path.pop();
        }
    }
    true
}

/// A map key, ordered, for the keys that can be path tokens.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Null,
    Bool(bool),
    Int(i128),
    Str(&'a str),
    Bytes(&'a [u8]),
}

fn key(k: &Value) -> Option<Key<'_>> {
    Some(match k {
        Value::Null => Key::Null,
        Value::Bool(b) => Key::Bool(*b),
        Value::Int(n) => Key::Int(*n),
        Value::String(s) => Key::Str(s),
        Value::Bytes(b) => Key::Bytes(b),
        Value::Float(_) | Value::F32(_) | Value::Array(_) | Value::Map(_) => return None,
    })
}

/// A map's entries by key; `None` when a key cannot be a token or two keys are equal.
fn index(entries: &[(Value, Value)]) -> Option<BTreeMap<Key<'_>, usize>> {
    let mut map = BTreeMap::new();
    for (i, (k, _)) in entries.iter().enumerate() {
        if map.insert(key(k)?, i).is_some() {
            return None;
        }
    }
    Some(map)
}

/// Do two trees hold the same data? Floats by their bits (every NaN equals every NaN); maps
/// whatever the order of their keys.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
        }
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && (x
                    .iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| same(k, l) && same(v, w))
                    || x.iter().all(|(k, v)| {
                        y.iter()
                            .find(|(l, _)| same(k, l))
                            .is_some_and(|(_, w)| same(v, w))
                    }))
        }
        _ => a == b,
    }
}

fn same_side(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The value at `path` in `root`.
pub(crate) fn get<'a>(root: &'a Value, path: &[Value]) -> Option<&'a Value> {
    path.iter().try_fold(root, child)
}

fn child<'a>(value: &'a Value, token: &Value) -> Option<&'a Value> {
    match value {
        Value::Map(entries) => entries.iter().find(|(k, _)| k == token).map(|(_, v)| v),
        Value::Array(items) => items.get(array_index(token)?),
        _ => None,
    }
}

fn child_mut<'a>(value: &'a mut Value, token: &Value) -> Option<&'a mut Value> {
    match value {
        Value::Map(entries) => entries.iter_mut().find(|(k, _)| k == token).map(|(_, v)| v),
        Value::Array(items) => items.get_mut(array_index(token)?),
        _ => None,
    }
}

fn array_index(token: &Value) -> Option<usize> {
    match token {
        Value::Int(n) => usize::try_from(*n).ok(),
        _ => None,
    }
}

/// Writes `value` at `path` (`None` removes a map key). Returns `false`, changing nothing,
/// when the path cannot be written: its parent is missing or not a map or array, an index is
/// out of range, or an array element would be removed (which would move the ones after it).
pub(crate) fn set(root: &mut Value, path: &[Value], value: Option<Value>) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return match value {
            Some(v) => {
                *root = v;
                true
            }
            None => false,
        };
    };
    let mut at = root;
    for token in parent {
        match child_mut(at, token) {
            Some(next) => at = next,
            None => return false,
        }
    }
    match (at, value) {
        (Value::Map(entries), value) => {
            let found = entries.iter().position(|(k, _)| k == last);
            match (found, value) {
                (Some(i), Some(v)) => entries[i].1 = v,
                (Some(i), None) => {
                    entries.remove(i);
                }
                (None, Some(v)) => entries.push((last.clone(), v)),
                (None, None) => {}
            }
            true
        }
        (Value::Array(items), Some(v)) => match array_index(last).and_then(|i| items.get_mut(i)) {
            Some(slot) => {
                *slot = v;
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Undoes (`undo`) or redoes `mods` on `root` under `rule`. Returns whether anything was
/// written. On a conflict it cannot settle, returns it; `root` may then be half written (the
/// caller throws it away).
pub(crate) fn apply(
    root: &mut Value,
    mods: &[Modification],
    undo: bool,
    rule: OnConflict,
) -> Result<bool, Conflict> {
    let fits = |m: &Modification| {
        let found = get(root, &m.path);
        if undo {
            same_side(found, m.new.as_ref())
                || m.seen
                    .as_ref()
                    .is_some_and(|seen| same_side(found, seen.as_ref()))
        } else {
            same_side(found, m.old.as_ref())
        }
    };
    let fitting: Vec<bool> = mods.iter().map(fits).collect();
    if rule == OnConflict::Refuse
        && let Some(i) = fitting.iter().position(|f| !f)
    {
        return Err(Conflict {
            path: mods[i].path(),
        });
    }
    let mut wrote = false;
    let order: Box<dyn Iterator<Item = usize>> = if undo {
        Box::new((0..mods.len()).rev())
    } else {
        Box::new(0..mods.len())
    };
    for i in order {
        let m = &mods[i];
        if !fitting[i] && rule == OnConflict::KeepCurrent {
            continue;
        }
        let value = if undo { &m.old } else { &m.new };
        if fitting[i] && same_side(get(root, &m.path), value.as_ref()) {
            continue;
        }
        if !set(root, &m.path, value.clone()) {
            return Err(Conflict { path: m.path() });
        }
        wrote = true;
    }
    Ok(wrote)
}

/// Notes, on every modification whose new value is not what `after` holds at its path (a hook
/// rewrote it), the value `after` does hold: the value an undo may find there.
pub(crate) fn note_seen(mods: &mut [Modification], after: &Value) {
    for m in mods {
        let found = get(after, &m.path);
        m.seen = if same_side(found, m.new.as_ref()) {
            None
        } else {
            Some(found.cloned())
        };
    }
}

/// One modification as it is stored: `[path, old, new, seen]`, where `old` and `new` are arrays
/// of no value (absent) or one, and `seen` is null or such an array.
type Wire<'a> = (&'a [Value], &'a [Value], &'a [Value], Option<&'a [Value]>);
type WireOwned = (Vec<Value>, Vec<Value>, Vec<Value>, Option<Vec<Value>>);

/// A list of modifications encoded in `codec`: how a history holds a recorded property-diff
/// edit (more compact than the value trees), and how a history memento stores it.
pub(crate) fn encode_list(codec: Codec, mods: &[Modification]) -> Result<Vec<u8>> {
    let wire: Vec<Wire<'_>> = mods
        .iter()
        .map(|m| {
            (
                &*m.path,
                m.old.as_slice(),
                m.new.as_slice(),
                m.seen.as_ref().map(Option::as_slice),
            )
        })
        .collect();
    codec.encode(&wire).map_err(|e| e.encoding(ID))
}

/// The list [`encode_list`] encoded.
pub(crate) fn decode_list(codec: Codec, bytes: &[u8]) -> Result<Vec<Modification>> {
    let wire: Vec<WireOwned> = codec.decode(bytes).map_err(|e| e.decoding(ID))?;
    let side = |mut v: Vec<Value>| match v.len() {
        0 | 1 => Ok(v.pop()),
        _ => Err(Error::malformed(
            "undo history: a modification holds more than one value on a side",
        )),
    };
    wire.into_iter()
        .map(|(path, old, new, seen)| {
            Ok(Modification {
                path: path.into_boxed_slice(),
                old: side(old)?,
                new: side(new)?,
                seen: seen.map(side).transpose()?,
            })
        })
        .collect()
}

/// Heap bytes of a list of modifications, by capacity.
pub(crate) fn list_heap_bytes(mods: &[Modification]) -> usize {
    std::mem::size_of_val(mods) + mods.iter().map(Modification::heap_bytes).sum::<usize>()
}

/// Heap bytes a value owns (by capacity).
pub(crate) fn value_heap(value: &Value) -> usize {
    match value {
        // An inline string owns no heap bytes.
        Value::String(s) if s.is_heap_allocated() => s.capacity(),
        Value::String(_) => 0,
        Value::Bytes(b) => b.capacity(),
        Value::Array(items) => {
            items.capacity() * size_of::<Value>() + items.iter().map(value_heap).sum::<usize>()
        }
        Value::Map(entries) => {
            entries.capacity() * size_of::<(Value, Value)>()
                + entries
                    .iter()
                    .map(|(k, v)| value_heap(k) + value_heap(v))
                    .sum::<usize>()
        }
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::F32(_) => 0,
    }
}

/// Tokens as an RFC 6901 pointer (`~` as `~0`, `/` as `~1`).
pub(crate) fn pointer(path: &[Value]) -> String {
    let mut out = String::new();
    for token in path {
        out.push('/');
        let text = match token {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        };
        for c in text.chars() {
            match c {
                '~' => out.push_str("~0"),
                '/' => out.push_str("~1"),
                c => out.push(c),
            }
        }
    }
    out
}

/// One list of modifications for `first` followed by `next` (an edit from `before` to
/// `after`): what leads from the state before `first` to the state after `next`. `None` when
/// `first` cannot be taken back from `before` (a path it wrote is gone): the two stay apart.
pub(crate) fn compose(
    first: &[Modification],
    next: &[Modification],
    before: Value,
    after: &Value,
) -> Option<Vec<Modification>> {
    let mut start = before.clone();
    apply(&mut start, first, true, OnConflict::Overwrite).ok()?;
    let mut end = before;
    apply(&mut end, next, false, OnConflict::Overwrite).ok()?;
    let mut both = diff(&start, &end);
    note_seen(&mut both, after);
    Some(both)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(
            entries
                .iter()
                .map(|(k, v)| (Value::from(*k), v.clone()))
                .collect(),
        )
    }

    fn paths(mods: &[Modification]) -> Vec<String> {
        mods.iter().map(Modification::path).collect()
    }

    #[test]
    fn arrays_of_one_length_by_index_others_whole_and_empty_maps_whole() {
        let a = map(&[
            ("xs", Value::from(vec![Value::from(1), Value::from(2)])),
            ("m", Value::map()),
            ("n", Value::F32(f32::NAN)),
        ]);
        let b = map(&[
            ("xs", Value::from(vec![Value::from(1), Value::from(3)])),
            ("m", map(&[("k", Value::from(1))])),
            ("n", Value::F32(f32::NAN)),
        ]);
        assert_eq!(paths(&diff(&a, &b)), ["/xs/1", "/m"], "NaN equals itself");
        let c = map(&[
            ("xs", Value::from(vec![Value::from(1)])),
            ("m", Value::map()),
            ("n", Value::F32(f32::NAN)),
        ]);
        assert_eq!(paths(&diff(&a, &c)), ["/xs"]);
        assert_eq!(paths(&diff(&Value::from(1), &Value::from(2))), [""]);
    }

    #[test]
    fn keys_added_removed_and_reordered_are_found_by_key() {
        let a = Value::Map(vec![
            (Value::Int(1), Value::from("a")),
            (Value::Int(2), Value::from("b")),
        ]);
        let b = Value::Map(vec![
            (Value::Int(2), Value::from("b")),
            (Value::Int(3), Value::from("c")),
        ]);
        let mods = diff(&a, &b);
        assert_eq!(paths(&mods), ["/1", "/3"]);
        let mut undone = b.clone();
        assert_eq!(
            apply(&mut undone, &mods, true, OnConflict::Refuse),
            Ok(true)
        );
        assert!(same(&undone, &a), "{undone}");
        assert_eq!(
            apply(&mut undone, &mods, true, OnConflict::Refuse),
            Err(Conflict { path: "/1".into() })
        );
    }

    #[test]
    fn writes_that_would_move_array_elements_or_miss_a_parent_are_refused() {
        let mut v = map(&[("xs", Value::from(vec![Value::from(1)]))]);
        assert!(!set(&mut v, &[Value::from("xs"), Value::Int(0)], None));
        assert!(!set(
            &mut v,
            &[Value::from("xs"), Value::Int(1)],
            Some(Value::Null)
        ));
        assert!(!set(
            &mut v,
            &[Value::from("no"), Value::from("k")],
            Some(Value::Null)
        ));
        assert!(!set(&mut v, &[], None));
        assert!(set(
            &mut v,
            &[Value::from("xs"), Value::Int(0)],
            Some(Value::from(5))
        ));
        assert_eq!(v.to_string(), r#"{"xs":[5]}"#);
    }

    #[test]
    fn a_list_survives_both_codecs_with_absent_and_null_apart() {
        let mods = vec![
            Modification::new(vec![Value::from("a/b~")], None, Some(Value::Null)),
            Modification {
                seen: Some(None),
                ..Modification::new(vec![Value::Int(7)], Some(Value::from(1.5)), None)
            },
        ];
        assert_eq!(mods[0].path(), "/a~1b~0");
        for codec in [Codec::Json, Codec::MessagePack] {
            let bytes = encode_list(codec, &mods).unwrap();
            assert_eq!(decode_list(codec, &bytes).unwrap(), mods, "{codec}");
        }
        assert!(decode_list(Codec::Json, b"[[[], [1, 2], [], null]]").is_err());
        assert!(list_heap_bytes(&mods) > 0);
        assert!(format!("{:?}", mods[1]).contains("1.5 -> absent"));
    }
}
