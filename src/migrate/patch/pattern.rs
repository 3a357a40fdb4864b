//! The paths of step files: RFC 6901 pointers whose whole token `*` is a wildcard (and `~2`
//! a literal `*`), what a pattern matches in a document ([`Pattern::expand`],
//! [`Pattern::targets`]), and the walk that visits every value it matches in place
//! ([`Pattern::for_each_mut`]), keeping the steps that lead there for an error's pointer.

use std::fmt;

use crate::migrate::document::{Document, child_mut, pointer_of};
use crate::migrate::error::MigrationError;
use crate::migrate::value::Value;

/// A JSON Pointer whose tokens may be wildcards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    text: String,
    pub(super) tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Literal(String),
    Any,
}

impl Pattern {
    /// An RFC 6901 pointer in which a whole token `*` is a wildcard and the escape `~2` is a
    /// literal `*`.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
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

    pub(super) fn wildcards(&self) -> usize {
        self.tokens.iter().filter(|t| **t == Token::Any).count()
    }

    /// Every concrete path the pattern's tokens before `len` match in `doc`, with the tokens
    /// its wildcards matched. Literal tokens are taken as they are (whether they exist is for
    /// the operation to find out); wildcards enumerate what exists.
    pub(super) fn expand(&self, doc: &Document, len: usize) -> Vec<(Vec<String>, Vec<String>)> {
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
    pub(super) fn targets(&self, doc: &Document) -> Vec<Vec<String>> {
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
    pub(super) fn for_each_mut(
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
    pub(super) fn substitute(&self, bound: &[String]) -> Vec<String> {
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
pub(super) fn pointer(path: &[Step<'_>]) -> String {
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

#[cfg(feature = "msgpack")]
impl Pattern {
    /// The memento the pattern starts at, or `None` for a wildcard.
    pub(super) fn memento(&self) -> Option<&str> {
        match self.tokens.first() {
            Some(Token::Literal(id)) => Some(id),
            _ => None,
        }
    }
}
