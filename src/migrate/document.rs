//! [`Document`]: a whole save as migration steps see it, and JSON Pointer access into it.

use std::collections::BTreeMap;

use super::error::MigrationError;
use super::value::Value;
use crate::format::DEFAULT_MEMENTO_VERSION;

/// A save's mementos as generic trees, by originator id: what a migration step edits.
///
/// As a JSON Pointer target, the document is a map from memento id to memento: `/player/hp`
/// is field `hp` of memento `player`, and `/inventory` is the whole memento `inventory`.
///
/// ```
/// use savegame::migrate::{Document, Value};
///
/// let mut doc = Document::new();
/// doc.insert("player", [("hp".to_string(), Value::from(7))].into_iter().collect());
///
/// let player = doc.memento_mut("player")?;
/// player.rename("hp", "health");
/// player.insert_if_absent("stamina", 100);
///
/// assert_eq!(doc.pointer("/player/health"), Some(&Value::from(7)));
/// # Ok::<(), savegame::migrate::MigrationError>(())
/// ```
///
/// Each memento also has a version of its own ([`memento_version`](Self::memento_version)): the one its save
/// recorded, [`DEFAULT_MEMENTO_VERSION`] for a memento of a format-1 file or one a step
/// creates. A whole-memento move (`/hero` → `/player`) carries its version along; a memento a
/// step adds, splits out or replaces under a new id starts at the default, unless the step
/// sets one with [`set_memento_version`](Self::set_memento_version).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    mementos: BTreeMap<String, Value>,
    /// Versions other than the default, of ids in `mementos`.
    versions: BTreeMap<String, u32>,
}

impl Document {
    /// An empty document.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The ids of the mementos, in ascending order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.mementos.keys().map(String::as_str)
    }

    /// The memento `id`.
    #[must_use]
    pub fn memento(&self, id: &str) -> Option<&Value> {
        self.mementos.get(id)
    }

    /// The version of memento `id`, or `None` if there is no such memento.
    #[must_use]
    pub fn memento_version(&self, id: &str) -> Option<u32> {
        self.mementos.contains_key(id).then(|| {
            self.versions
                .get(id)
                .copied()
                .unwrap_or(DEFAULT_MEMENTO_VERSION)
        })
    }

    /// Sets the version of memento `id`.
    ///
    /// # Errors
    /// When there is no such memento.
    pub fn set_memento_version(&mut self, id: &str, version: u32) -> Result<(), MigrationError> {
        if !self.mementos.contains_key(id) {
            return Err(MigrationError::new(pointer_of(&[id]), "no such memento"));
        }
        self.put_version(id, version);
        Ok(())
    }

    fn put_version(&mut self, id: &str, version: u32) {
        if version == DEFAULT_MEMENTO_VERSION {
            self.versions.remove(id);
        } else {
            self.versions.insert(id.to_owned(), version);
        }
    }

    /// The memento `id`, to change.
    ///
    /// # Errors
    /// When there is no such memento (the error names its path).
    pub fn memento_mut(&mut self, id: &str) -> Result<&mut Value, MigrationError> {
        self.mementos
            .get_mut(id)
            .ok_or_else(|| MigrationError::new(pointer_of(&[id]), "no such memento"))
    }

    /// Adds or replaces the memento `id`; returns the old one. A replaced memento keeps its
    /// version; a new one is at [`DEFAULT_MEMENTO_VERSION`].
    pub fn insert(&mut self, id: impl Into<String>, memento: Value) -> Option<Value> {
        let id = id.into();
        if !self.mementos.contains_key(&id) {
            self.versions.remove(&id);
        }
        self.mementos.insert(id, memento)
    }

    /// Removes the memento `id` and returns it (its version goes with it).
    pub fn remove(&mut self, id: &str) -> Option<Value> {
        self.versions.remove(id);
        self.mementos.remove(id)
    }

    /// Splits field `field` out of memento `from` into a memento of its own, `to`.
    ///
    /// # Errors
    /// When `from` or its field is missing, or `to` already exists.
    pub fn split(&mut self, from: &str, field: &str, to: &str) -> Result<(), MigrationError> {
        if self.mementos.contains_key(to) {
            return Err(MigrationError::new(
                pointer_of(&[to]),
                "the memento to split into already exists",
            ));
        }
        let value = self
            .memento_mut(from)?
            .remove(field)
            .ok_or_else(|| MigrationError::new(pointer_of(&[from, field]), "no such field"))?;
        self.insert(to, value);
        Ok(())
    }

    /// Merges memento `from` into memento `into`, as its field `field`, and removes `from`.
    ///
    /// # Errors
    /// When either memento is missing, `into` is not a map, or it already has `field`.
    pub fn merge(&mut self, from: &str, into: &str, field: &str) -> Result<(), MigrationError> {
        if !self.mementos.contains_key(from) {
            return Err(MigrationError::new(pointer_of(&[from]), "no such memento"));
        }
        let target = self.memento_mut(into)?;
        if !matches!(target, Value::Map(_)) {
            return Err(MigrationError::new(
                pointer_of(&[into]),
                format!("cannot add a field to {}", target.kind()),
            ));
        }
        if target.get(field).is_some() {
            return Err(MigrationError::new(
                pointer_of(&[into, field]),
                "the field already exists",
            ));
        }
        if let Some(value) = self.remove(from) {
            self.memento_mut(into)?.insert(field, value);
        }
        Ok(())
    }

    /// The value at JSON Pointer `path` (RFC 6901; `~1` is `/`, `~0` is `~`).
    #[must_use]
    pub fn pointer(&self, path: &str) -> Option<&Value> {
        self.at(&parse_pointer(path).ok()?).ok()
    }

    /// The value at JSON Pointer `path`, to change.
    pub fn pointer_mut(&mut self, path: &str) -> Option<&mut Value> {
        let tokens = parse_pointer(path).ok()?;
        self.at_mut(&tokens).ok()
    }

    /// Takes the value at `path` out (removing it from its map or array).
    ///
    /// # Errors
    /// When nothing is there.
    pub fn take(&mut self, path: &str) -> Result<Value, MigrationError> {
        let tokens = parse_pointer(path)?;
        self.remove_at(&tokens)
    }

    /// Puts `value` at `path` with JSON Patch `add` semantics: a map field is set, an array
    /// element is inserted (`-` appends), a one-token path sets a whole memento.
    ///
    /// # Errors
    /// When the parent does not exist, or an array index is out of range.
    pub fn put(&mut self, path: &str, value: Value) -> Result<(), MigrationError> {
        let tokens = parse_pointer(path)?;
        self.add_at(&tokens, value, false).map(drop)
    }

    /// Moves the value at `from` to `to` (`take` then `put`).
    ///
    /// # Errors
    /// As for [`take`](Self::take) and [`put`](Self::put). On error the value is back at
    /// `from` (a map field at the end of its map).
    pub fn move_value(&mut self, from: &str, to: &str) -> Result<(), MigrationError> {
        let from_tokens = parse_pointer(from)?;
        let to_tokens = parse_pointer(to)?;
        self.move_at(&from_tokens, &to_tokens)
    }

    /// The mementos with their versions.
    pub(crate) fn into_versioned(self) -> impl Iterator<Item = (String, u32, Value)> {
        let Document {
            mementos,
            mut versions,
        } = self;
        mementos.into_iter().map(move |(id, value)| {
            let version = versions.remove(&id).unwrap_or(DEFAULT_MEMENTO_VERSION);
            (id, version, value)
        })
    }

    /// A document of these mementos, with their versions.
    pub(crate) fn from_versioned(mementos: impl IntoIterator<Item = (String, u32, Value)>) -> Self {
        let mut doc = Document::new();
        for (id, version, value) in mementos {
            doc.put_version(&id, version);
            doc.mementos.insert(id, value);
        }
        doc
    }

    /// Every memento, to change, in id order.
    #[cfg(feature = "json")]
    pub(crate) fn mementos_mut(&mut self) -> impl Iterator<Item = (&str, &mut Value)> {
        self.mementos.iter_mut().map(|(id, v)| (id.as_str(), v))
    }

    /// The value at `tokens`, to change.
    pub(crate) fn at_mut(&mut self, tokens: &[String]) -> Result<&mut Value, MigrationError> {
        let Some((id, rest)) = tokens.split_first() else {
            return Err(MigrationError::new(
                "",
                "the document itself is not a value",
            ));
        };
        let mut value = self.memento_mut(id)?;
        for (depth, token) in rest.iter().enumerate() {
            value = child_mut(value, token).ok_or_else(|| {
                MigrationError::new(pointer_of(&tokens[..depth + 2]), "not found")
            })?;
        }
        Ok(value)
    }

    /// The value at `tokens`.
    pub(crate) fn at(&self, tokens: &[String]) -> Result<&Value, MigrationError> {
        let Some((id, rest)) = tokens.split_first() else {
            return Err(MigrationError::new(
                "",
                "the document itself is not a value",
            ));
        };
        let mut value = self
            .mementos
            .get(id)
            .ok_or_else(|| MigrationError::new(pointer_of(&[id]), "no such memento"))?;
        for (depth, token) in rest.iter().enumerate() {
            value = child(value, token).ok_or_else(|| {
                MigrationError::new(pointer_of(&tokens[..depth + 2]), "not found")
            })?;
        }
        Ok(value)
    }

    /// JSON Patch `add` at `tokens`; with `if_absent`, an existing value is left alone.
    /// Returns whether the value was added.
    pub(crate) fn add_at(
        &mut self,
        tokens: &[String],
        value: Value,
        if_absent: bool,
    ) -> Result<bool, MigrationError> {
        match tokens {
            [] => Err(MigrationError::new("", "cannot replace the whole document")),
            [id] => {
                if if_absent && self.mementos.contains_key(id) {
                    return Ok(false);
                }
                self.insert(id.clone(), value);
                Ok(true)
            }
            [parent @ .., last] => {
                let parent = self.at_mut(parent)?;
                add_into(parent, last, value, if_absent, || pointer_of(tokens))
            }
        }
    }

    /// Removes and returns the value at `tokens`.
    pub(crate) fn remove_at(&mut self, tokens: &[String]) -> Result<Value, MigrationError> {
        let path = pointer_of(tokens);
        match tokens {
            [] => Err(MigrationError::new("", "cannot remove the whole document")),
            [id] => self
                .remove(id)
                .ok_or_else(|| MigrationError::new(path, "no such memento")),
            [parent @ .., last] => {
                let parent = self.at_mut(parent)?;
                match parent {
                    Value::Map(_) => parent
                        .remove(last)
                        .ok_or_else(|| MigrationError::new(path, "not found")),
                    Value::Array(items) => {
                        let index = array_index(last, items.len(), &path)?;
                        Ok(items.remove(index))
                    }
                    other => Err(MigrationError::new(
                        path,
                        format!("cannot remove from {}", other.kind()),
                    )),
                }
            }
        }
    }

    /// Moves a value; on error the document is unchanged.
    pub(crate) fn move_at(&mut self, from: &[String], to: &[String]) -> Result<(), MigrationError> {
        if to.len() > from.len() && to.starts_with(from) {
            return Err(MigrationError::new(
                pointer_of(to),
                "cannot move a value inside itself",
            ));
        }
        // A whole memento moves with its version.
        let version = match from {
            [id] => self.memento_version(id),
            _ => None,
        };
        let value = self.remove_at(from)?;
        let backup = value.clone();
        if let Err(e) = self.add_at(to, value, false) {
            // Put it back where it was, so a failed step leaves nothing half-done.
            let _ = self.add_at(from, backup, false);
            if let (Some(v), [id]) = (version, from) {
                self.put_version(id, v);
            }
            return Err(e);
        }
        if let (Some(v), [id]) = (version, to) {
            self.put_version(id, v);
        }
        Ok(())
    }
}

/// JSON Patch `add` of `value` as the child `last` of `parent` (a map's field, an array's
/// element, `-` for the end of an array); with `if_absent`, an existing field is left alone.
/// `path` makes the pointer for an error. Returns whether the value was added.
pub(crate) fn add_into(
    parent: &mut Value,
    last: &str,
    value: Value,
    if_absent: bool,
    path: impl Fn() -> String,
) -> Result<bool, MigrationError> {
    match parent {
        Value::Map(_) => {
            if if_absent && parent.get(last).is_some() {
                return Ok(false);
            }
            parent.insert(last, value);
            Ok(true)
        }
        Value::Array(items) => {
            if if_absent {
                return Err(MigrationError::new(
                    path(),
                    "add_if_absent needs a map field, not an array element",
                ));
            }
            let index = if last == "-" {
                items.len()
            } else {
                array_index(last, items.len() + 1, &path())?
            };
            items.insert(index, value);
            Ok(true)
        }
        other => Err(MigrationError::new(
            path(),
            format!("cannot add inside {}", other.kind()),
        )),
    }
}

fn child<'a>(value: &'a Value, token: &str) -> Option<&'a Value> {
    match value {
        Value::Map(_) => value.get(token),
        Value::Array(items) => items.get(strict_index(token)?),
        _ => None,
    }
}

pub(crate) fn child_mut<'a>(value: &'a mut Value, token: &str) -> Option<&'a mut Value> {
    match value {
        Value::Map(_) => value.get_mut(token),
        Value::Array(items) => items.get_mut(strict_index(token)?),
        _ => None,
    }
}

/// An array index as RFC 6901 writes it: digits, no leading zero (except `0` itself).
pub(crate) fn strict_index(token: &str) -> Option<usize> {
    let ok = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    if ok { token.parse().ok() } else { None }
}

fn array_index(token: &str, bound: usize, path: &str) -> Result<usize, MigrationError> {
    match strict_index(token) {
        Some(i) if i < bound => Ok(i),
        Some(i) => Err(MigrationError::new(
            path,
            format!("index {i} is out of range"),
        )),
        None => Err(MigrationError::new(
            path,
            format!("{token:?} is not an array index"),
        )),
    }
}

/// Splits a JSON Pointer into its unescaped tokens.
pub(crate) fn parse_pointer(path: &str) -> Result<Vec<String>, MigrationError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(MigrationError::new(path, "a JSON Pointer starts with '/'"));
    };
    rest.split('/')
        .map(|raw| {
            let mut out = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => {
                            return Err(MigrationError::new(
                                path,
                                "'~' must be followed by 0 or 1",
                            ));
                        }
                    }
                } else {
                    out.push(c);
                }
            }
            Ok(out)
        })
        .collect()
}

/// Writes tokens back as a JSON Pointer.
pub(crate) fn pointer_of<S: AsRef<str>>(tokens: &[S]) -> String {
    let mut out = String::new();
    for t in tokens {
        out.push('/');
        out.push_str(&t.as_ref().replace('~', "~0").replace('/', "~1"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let mut d = Document::new();
        let player: Value = [
            ("hp".to_string(), Value::from(7)),
            (
                "pos".to_string(),
                Value::from(vec![Value::from(1.5), Value::from(-2.0)]),
            ),
            (
                "inventory".to_string(),
                [("potion".to_string(), 3)].into_iter().collect(),
            ),
        ]
        .into_iter()
        .collect();
        d.insert("player", player);
        d
    }

    #[test]
    fn pointers_follow_rfc_6901() {
        assert_eq!(parse_pointer("/a~1b/c~0d/").unwrap(), ["a/b", "c~d", ""]);
        assert!(parse_pointer("a").is_err());
        assert!(parse_pointer("/a~2").is_err());
        assert_eq!(pointer_of(&["a/b", "c~d"]), "/a~1b/c~0d");
        let d = doc();
        assert_eq!(d.pointer("/player/pos/1"), Some(&Value::from(-2.0)));
        assert_eq!(d.pointer("/player/pos/01"), None);
        assert_eq!(d.pointer("/player/pos/2"), None);
        assert_eq!(d.pointer("/nobody/x"), None);
    }

    #[test]
    fn split_merge_move_and_put() {
        let mut d = doc();
        d.split("player", "inventory", "inventory").unwrap();
        assert!(d.pointer("/player/inventory").is_none());
        assert_eq!(d.pointer("/inventory/potion"), Some(&Value::from(3)));
        assert!(d.split("player", "inventory", "inventory").is_err());

        d.merge("inventory", "player", "bag").unwrap();
        assert_eq!(d.pointer("/player/bag/potion"), Some(&Value::from(3)));
        assert!(d.memento("inventory").is_none());

        d.put("/player/position", Value::map()).unwrap();
        d.move_value("/player/pos/1", "/player/position/y").unwrap();
        d.move_value("/player/pos/0", "/player/position/x").unwrap();
        assert_eq!(d.pointer("/player/pos"), Some(&Value::Array(vec![])));
        assert_eq!(d.pointer("/player/position/x"), Some(&Value::from(1.5)));

        let err = d
            .move_value("/player/hp", "/player/missing/hp")
            .unwrap_err();
        assert_eq!(err.path, "/player/missing");
        assert_eq!(
            d.pointer("/player/hp"),
            Some(&Value::from(7)),
            "a failed move changes nothing"
        );
        assert!(d.move_value("/player", "/player/inner").is_err());
    }
}
