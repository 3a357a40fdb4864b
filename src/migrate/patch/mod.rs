//! Declarative migration steps: JSON Patch (RFC 6902) over a
//! [`Document`](crate::migrate::Document), plus what saves need beyond it.
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
//!
//! This file holds the operations ([`PatchOp`]) and what the MessagePack fast path asks of
//! them. The rest is in its parts:
//!
//! - [`pattern`]: the paths: JSON Pointers with wildcards, what they match in a document, and
//!   the walk that visits it.
//! - [`parse`]: a step file's text into its operations, and JSON values into [`Value`]s.
//! - [`apply`]: each operation run on a [`Document`](crate::migrate::Document), and the
//!   equality `test` compares with.

mod apply;
pub(super) mod parse;
mod pattern;

use self::pattern::Pattern;
#[cfg(feature = "msgpack")]
use self::pattern::Token;
use crate::migrate::value::Value;

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
}

#[cfg(test)]
mod tests;
