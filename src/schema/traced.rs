//! What a trace knows so far: the shapes seen (with `Unknown` where no pass has looked
//! inside yet), how a pass's findings merge into them, and which variant the next pass should
//! make to learn more. The explorer (`explore.rs`) drives it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de;

use super::shape::Type;

/// A type as traced so far: `Unknown` where no pass has seen inside yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Unknown,
    Prim(Type),
    Option(Box<Ty>),
    Seq(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Tuple(Vec<Ty>),
    Named(&'static str),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    Unit,
    Newtype(Ty),
    Tuple(Vec<Ty>),
    Struct(Vec<(&'static str, Ty)>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Def {
    Unit,
    Newtype(Ty),
    Tuple(Vec<Ty>),
    Struct(Vec<(&'static str, Ty)>),
    Enum(Vec<(&'static str, Option<Body>)>),
}

/// Why a trace stopped.
#[derive(Debug, Clone)]
pub(crate) struct ExploreError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) at: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The type asked for any value (untagged enums, flatten).
    Any,
    /// The type's own code refused the made-up value.
    Custom,
    /// Two types of one name disagree.
    Conflict,
    /// Passes ended with something never seen.
    Incomplete,
}

impl fmt::Display for ExploreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExploreError {}

impl de::Error for ExploreError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ExploreError {
            kind: ErrorKind::Custom,
            message: msg.to_string(),
            at: Vec::new(),
        }
    }
}

pub(crate) fn error(kind: ErrorKind, message: impl Into<String>) -> ExploreError {
    ExploreError {
        kind,
        message: message.into(),
        at: Vec::new(),
    }
}

/// Merges what a pass saw into what was known; says whether anything was learned.
pub(crate) fn merge(known: &mut Ty, seen: Ty) -> Result<bool, ExploreError> {
    let conflict = |a: &Ty, b: &Ty| {
        error(
            ErrorKind::Conflict,
            format!("one place holds two shapes ({a:?} and {b:?})"),
        )
    };
    match (&mut *known, seen) {
        (_, Ty::Unknown) => Ok(false),
        (Ty::Unknown, seen) => {
            *known = seen;
            Ok(true)
        }
        (Ty::Prim(a), Ty::Prim(b)) if *a == b => Ok(false),
        (Ty::Named(a), Ty::Named(b)) if *a == b => Ok(false),
        (Ty::Option(a), Ty::Option(b)) | (Ty::Seq(a), Ty::Seq(b)) => merge(a, *b),
        (Ty::Map(k, v), Ty::Map(k2, v2)) => Ok(merge(k, *k2)? | merge(v, *v2)?),
        (Ty::Tuple(a), Ty::Tuple(b)) if a.len() == b.len() => {
            let mut learned = false;
            for (x, y) in a.iter_mut().zip(b) {
                learned |= merge(x, y)?;
            }
            Ok(learned)
        }
        (a, b) => Err(conflict(a, &b)),
    }
}

pub(crate) fn merge_fields(
    known: &mut [(&'static str, Ty)],
    seen: Vec<(&'static str, Ty)>,
) -> Result<bool, ExploreError> {
    let mut learned = false;
    for ((_, k), (_, s)) in known.iter_mut().zip(seen) {
        learned |= merge(k, s)?;
    }
    Ok(learned)
}

pub(crate) fn merge_body(known: &mut Option<Body>, seen: Body) -> Result<bool, ExploreError> {
    let Some(body) = known else {
        *known = Some(seen);
        return Ok(true);
    };
    match (body, seen) {
        (Body::Unit, Body::Unit) => Ok(false),
        (Body::Newtype(a), Body::Newtype(b)) => merge(a, b),
        (Body::Tuple(a), Body::Tuple(b)) if a.len() == b.len() => {
            let mut learned = false;
            for (x, y) in a.iter_mut().zip(b) {
                learned |= merge(x, y)?;
            }
            Ok(learned)
        }
        (Body::Struct(a), Body::Struct(b)) if a.len() == b.len() => merge_fields(a, b),
        _ => Err(error(ErrorKind::Conflict, "a variant holds two shapes")),
    }
}

impl Ty {
    pub(crate) fn complete(&self) -> bool {
        match self {
            Ty::Unknown => false,
            Ty::Prim(_) | Ty::Named(_) => true,
            Ty::Option(t) | Ty::Seq(t) => t.complete(),
            Ty::Map(k, v) => k.complete() && v.complete(),
            Ty::Tuple(ts) => ts.iter().all(Ty::complete),
        }
    }

    /// The named types it mentions; `direct` leaves out those behind an option, a sequence
    /// or a map (which a pass can leave empty).
    pub(crate) fn names(&self, direct: bool, out: &mut Vec<&'static str>) {
        match self {
            Ty::Named(n) => out.push(n),
            Ty::Option(t) | Ty::Seq(t) if !direct => t.names(direct, out),
            Ty::Map(k, v) if !direct => {
                k.names(direct, out);
                v.names(direct, out);
            }
            Ty::Tuple(ts) => ts.iter().for_each(|t| t.names(direct, out)),
            _ => {}
        }
    }
}

impl Body {
    pub(crate) fn types(&self) -> Vec<&Ty> {
        match self {
            Body::Unit => Vec::new(),
            Body::Newtype(t) => vec![t],
            Body::Tuple(ts) => ts.iter().collect(),
            Body::Struct(fs) => fs.iter().map(|(_, t)| t).collect(),
        }
    }
}

impl Def {
    /// Every type it holds, and whether every variant has been seen.
    pub(crate) fn parts(&self) -> (Vec<&Ty>, bool) {
        match self {
            Def::Unit => (Vec::new(), true),
            Def::Newtype(t) => (vec![t], true),
            Def::Tuple(ts) => (ts.iter().collect(), true),
            Def::Struct(fs) => (fs.iter().map(|(_, t)| t).collect(), true),
            Def::Enum(vs) => (
                vs.iter()
                    .flat_map(|(_, b)| b.iter().flat_map(Body::types))
                    .collect(),
                vs.iter().all(|(_, b)| b.is_some()),
            ),
        }
    }
}

#[derive(Default)]
pub(crate) struct Ctx {
    pub(crate) defs: BTreeMap<&'static str, Def>,
    pub(crate) learned: bool,
    /// The named types being made, outermost first.
    pub(crate) stack: Vec<&'static str>,
    /// Variants being made: (enum, index).
    pub(crate) in_progress: BTreeSet<(&'static str, usize)>,
    /// Named types not complete, or leading to one that is not, at the start of this pass.
    pub(crate) needs_work: BTreeSet<&'static str>,
    /// Where the pass is, for errors: `Player.bag`.
    pub(crate) location: Vec<String>,
}

impl Ctx {
    pub(crate) fn compute_needs_work(&mut self) {
        let mut needs: BTreeSet<&'static str> = self
            .defs
            .iter()
            .filter(|(_, d)| {
                let (types, all_seen) = d.parts();
                !all_seen || types.iter().any(|t| !t.complete())
            })
            .map(|(n, _)| *n)
            .collect();
        loop {
            let before = needs.len();
            for (name, def) in &self.defs {
                let mut refs = Vec::new();
                def.parts().0.iter().for_each(|t| t.names(false, &mut refs));
                if refs.iter().any(|r| needs.contains(r)) {
                    needs.insert(name);
                }
            }
            if needs.len() == before {
                break;
            }
        }
        self.needs_work = needs;
    }

    /// Inside a recursion: the innermost named type is made already further out.
    pub(crate) fn recursing(&self) -> bool {
        match self.stack.split_last() {
            Some((last, rest)) => rest.contains(last),
            None => false,
        }
    }

    pub(crate) fn located(&self, mut e: ExploreError) -> ExploreError {
        if e.at.is_empty()
            && let Some(at) = self.location.last()
        {
            e.at.push(at.clone());
        }
        e
    }

    /// The variant of `name` to make now.
    pub(crate) fn pick(&self, name: &'static str, count: usize) -> usize {
        let Some(Def::Enum(variants)) = self.defs.get(name) else {
            return 0;
        };
        let free = |i: &usize| !self.in_progress.contains(&(name, *i));
        let on_stack = |b: &Body| {
            let mut refs = Vec::new();
            b.types().iter().for_each(|t| t.names(true, &mut refs));
            refs.iter().any(|r| self.stack.contains(r))
        };
        let ends = |i: &usize| match &variants[*i].1 {
            Some(b) => !on_stack(b),
            None => false,
        };
        let unseen = (0..count).filter(free).find(|i| variants[*i].1.is_none());
        if self.recursing() || self.stack.iter().filter(|n| **n == name).count() > 1 {
            // Inside a recursion: a variant that ends, else one not seen (which may).
            return (0..count)
                .filter(free)
                .find(|i| matches!(variants[*i].1, Some(Body::Unit)))
                .or_else(|| (0..count).filter(free).find(ends))
                .or(unseen)
                .unwrap_or(0);
        }
        let leads_on = |i: &usize| match &variants[*i].1 {
            Some(b) => {
                let mut refs = Vec::new();
                b.types().iter().for_each(|t| {
                    t.names(false, &mut refs);
                    if !t.complete() {
                        refs.push(name);
                    }
                });
                refs.iter()
                    .any(|r| self.needs_work.contains(r) && !self.stack.contains(r))
                    || b.types().iter().any(|t| !t.complete())
            }
            None => false,
        };
        unseen
            .or_else(|| (0..count).filter(free).find(leads_on))
            .or_else(|| (0..count).filter(free).find(ends))
            .unwrap_or(0)
    }
}
