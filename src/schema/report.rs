//! What a schema check found: a [`Report`] when it passes, a [`Failure`] when it does not, each
//! problem a [`Problem`] that says what to do. A failure's `Debug` is its full text, so a test
//! that unwraps it (or returns it) prints the message a developer reads.

use std::fmt;
use std::path::PathBuf;

use super::diff::Change;
use super::trace::TraceError;
use crate::codec::Codec;

/// A passed check: the notes worth reading (compatible changes, files updated, mementos no
/// longer in the game).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// How many mementos were checked.
    pub checked: usize,
    /// One sentence each.
    pub notes: Vec<String>,
    /// The files the check rewrote with a compatible change (to commit with it).
    pub updated: Vec<PathBuf>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "schema guard: {} mementos match their committed shapes",
            self.checked
        )?;
        for note in &self.notes {
            write!(f, "\nnote: {note}")?;
        }
        Ok(())
    }
}

/// One thing the check refused, about one memento.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The shape changed in a way old saves do not survive, and neither version moved.
    Changed {
        /// The memento id (or pattern).
        id: String,
        /// The committed file it was compared with.
        file: PathBuf,
        /// The game's schema version and the memento's version, both unchanged.
        versions: (u32, u32),
        /// Every change, the breaking ones and the others.
        changes: Vec<Change>,
        /// The codecs the verdict is for.
        codecs: Vec<Codec>,
        /// What to do, in the game's terms.
        advice: String,
    },
    /// A version moved and no migration step leads there from the committed one.
    NoStep {
        /// The memento id (or pattern).
        id: String,
        /// The committed file at the older version.
        file: PathBuf,
        /// `(schema version, memento version)` committed.
        from: (u32, u32),
        /// `(schema version, memento version)` now.
        to: (u32, u32),
        /// The missing step, in words.
        missing: String,
    },
    /// A new schema file (or fixture) was written: review it and commit it (the next run
    /// passes).
    Written {
        /// The memento id (or pattern); empty for a fixture, a save of the whole state.
        id: String,
        /// The file.
        file: PathBuf,
        /// Why: a memento seen for the first time, or a new version (and what changed since
        /// the last one).
        why: String,
    },
    /// A schema file (or fixture) is missing, and this run writes none (in CI).
    Missing {
        /// The memento id (or pattern); empty for a fixture.
        id: String,
        /// The file it should be.
        file: PathBuf,
    },
    /// A committed file is at a newer version than the game.
    Newer {
        /// The memento id (or pattern).
        id: String,
        /// The file.
        file: PathBuf,
        /// `(schema version, memento version)` committed.
        committed: (u32, u32),
        /// `(schema version, memento version)` now.
        now: (u32, u32),
    },
    /// The memento's type could not be traced.
    Untraceable {
        /// The memento id (or pattern).
        id: String,
        /// Why.
        error: TraceError,
    },
    /// The memento's version cannot be known (an empty registry, say).
    UnknownVersion {
        /// The memento id (or pattern).
        id: String,
        /// Why.
        reason: String,
    },
    /// A file or the folder could not be read or written, or a file does not parse.
    File {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The state could not list its memento types.
    Unlisted {
        /// Why.
        reason: String,
    },
}

fn shown(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// `memento "player": `, or nothing for a problem of the whole state (an empty id).
fn about(id: &str) -> String {
    if id.is_empty() {
        String::new()
    } else {
        format!("memento {id:?}: ")
    }
}

fn versions(v: (u32, u32)) -> String {
    if v.0 > 1 {
        format!("schema version {}, memento version {}", v.0, v.1)
    } else {
        format!("memento version {}", v.1)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Changed {
                id,
                file,
                versions: v,
                changes,
                codecs,
                advice,
            } => {
                writeln!(
                    f,
                    "memento {id:?} changed shape, and its version did not ({}, committed in {}):",
                    versions(*v),
                    shown(file)
                )?;
                for c in changes {
                    writeln!(f, "    {c}  [{}]", c.verdict_text(codecs))?;
                }
                write!(f, "  {advice}")
            }
            Problem::NoStep {
                id,
                file,
                from,
                to,
                missing,
            } => write!(
                f,
                "memento {id:?} went from {} ({}) to {}, and no migration step leads there: \
                 {missing}. Old saves would not load. Add the step to the game's Migrations \
                 (and to what this check is given).",
                versions(*from),
                shown(file),
                versions(*to)
            ),
            Problem::Written { id, file, why } => write!(
                f,
                "{}wrote {} ({why}). Review it and commit it: it is the record of what this \
                 version ships. The next run passes.",
                about(id),
                shown(file)
            ),
            Problem::Missing { id, file } => write!(
                f,
                "{}{} is not committed. Run the tests where they may write files (not in CI), \
                 review what they write, and commit it.",
                about(id),
                shown(file)
            ),
            Problem::Newer {
                id,
                file,
                committed,
                now,
            } => write!(
                f,
                "memento {id:?}: {} was committed at {}, newer than the game's {}: a version \
                 never goes down (saves at it exist)",
                shown(file),
                versions(*committed),
                versions(*now)
            ),
            Problem::Untraceable { id, error } => write!(f, "memento {id:?}: {error}"),
            Problem::UnknownVersion { id, reason } => write!(f, "memento {id:?}: {reason}"),
            Problem::File { path, reason } => write!(f, "{}: {reason}", shown(path)),
            Problem::Unlisted { reason } => f.write_str(reason),
        }
    }
}

impl fmt::Debug for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A failed check: every problem, and the notes of what passed.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The folder of schema files.
    pub dir: PathBuf,
    /// Every problem, memento by memento.
    pub problems: Vec<Problem>,
    /// The notes of the mementos that passed.
    pub notes: Vec<String>,
}

impl Failure {
    /// Are all the problems files this run wrote (so the next run passes)?
    #[must_use]
    pub fn only_written(&self) -> bool {
        self.problems
            .iter()
            .all(|p| matches!(p, Problem::Written { .. }))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "the schema guard found {n} problem{} with the save schemas in {}:",
            if n == 1 { "" } else { "s" },
            shown(&self.dir)
        )?;
        for p in &self.problems {
            write!(f, "\n\n- {p}")?;
        }
        for note in &self.notes {
            write!(f, "\n\nnote: {note}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The text itself: `check(..).unwrap()` and a test returning the error print it.
        write!(f, "{self}")
    }
}

impl std::error::Error for Failure {}
