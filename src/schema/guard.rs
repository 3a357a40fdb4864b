//! [`Guard`]: the check a game's tests run, comparing each memento's traced shape with the one
//! committed for its version, and the version history with the game's migration steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::diff::{Change, Verdict, diff, verdict};
use super::file::{SchemaFile, file_name, read_dir};
use super::report::{Failure, Problem, Report};
use super::shape::Schema;
use super::trace::{SampleFn, TraceInput, sample_of};
use crate::codec::Codec;
use crate::migrate::Migrations;
use crate::originator::Originator;
use crate::state::{MementoType, MementoTypes, SaveState};

/// The schema guard: run in a game's own tests, it fails them when a memento type changed
/// shape without a new version, or got a new version without a migration step.
///
/// For each memento of the state, at the game's schema version and the memento's own
/// version, it traces the memento type's shape and compares it with the committed file for
/// those versions (`schemas/player.v2.json`; see [`SchemaFile`] for the names):
///
/// - **No file yet** (a new memento, a new version): it writes one and fails once, saying so,
///   as a snapshot test does; commit the file and the next run passes. Where a file for an
///   older version exists, a migration step must lead from it (a per-memento step for a new
///   memento version, whole-document steps for a new schema version), or it fails naming the
///   versions. Old versions' files are never touched: they are the record of every shape the
///   game shipped.
/// - **The same shape**: it passes.
/// - **A change old saves survive** in the game's codecs (a new `Option` field in JSON or
///   MessagePack): it passes with a note, and brings the file up to date (commit it with the
///   change).
/// - **A change they do not survive** (a rename, a type change, a removed variant, anything
///   positional in bitcode): it fails, listing each change by path and saying what to do.
///
/// Where it runs in CI (the `CI` environment variable is set, and not `false` or `0`), it
/// writes nothing: a missing file fails, so what a developer forgot to commit cannot pass
/// there. [`write_files`](Self::write_files) says otherwise.
///
/// ```no_run
/// use savegame::schema::Guard;
/// # use savegame::{Originator, SaveState};
/// # #[derive(Originator, Default)] struct Player { health: u32 }
/// # #[derive(SaveState, Default)] struct Game { player: Player }
/// # impl Game { fn sample() -> Game { Game::default() } }
/// # fn migrations() -> savegame::Migrations { savegame::Migrations::new() }
///
/// #[test]
/// fn save_schemas_are_committed() {
///     Guard::new("schemas") // beside Cargo.toml
///         .schema_version(3) // the manager's `schema_version`
///         .migrations(migrations()) // the manager's `migrations`
///         .codec(savegame::Codec::MessagePack) // the manager's codec
///         .check(&Game::sample())
///         .unwrap();
/// }
/// ```
pub struct Guard {
    dir: PathBuf,
    schema_version: u32,
    migrations: Migrations,
    codecs: Vec<Codec>,
    samples: Vec<SampleFn>,
    shapes: BTreeMap<String, Schema>,
    write: Option<bool>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("dir", &self.dir)
            .field("schema_version", &self.schema_version)
            .field("codecs", &self.codecs)
            .field("samples", &self.samples.len())
            .field("shapes", &self.shapes.keys().collect::<Vec<_>>())
            .field("write", &self.write)
            .finish()
    }
}

/// Is this run in CI, where nothing is written?
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

impl Guard {
    /// A guard of the schema files in `dir` (relative to the current folder, which for a
    /// test is its package's), for a game at schema version 1 with no migration steps,
    /// saving in the manager's default codec (MessagePack).
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Guard {
        Guard {
            dir: dir.into(),
            schema_version: 1,
            migrations: Migrations::new(),
            codecs: vec![Codec::MessagePack],
            samples: Vec::new(),
            shapes: BTreeMap::new(),
            write: None,
        }
    }

    /// The game's schema version ([`ManagerBuilder::schema_version`](crate::ManagerBuilder::schema_version)).
    #[must_use]
    pub fn schema_version(mut self, version: u32) -> Guard {
        self.schema_version = version;
        self
    }

    /// The game's migration steps ([`ManagerBuilder::migrations`](crate::ManagerBuilder::migrations)):
    /// a new version needs a step from the last committed one.
    #[must_use]
    pub fn migrations(mut self, migrations: Migrations) -> Guard {
        self.migrations = migrations;
        self
    }

    /// The codec the game saves with ([`ManagerBuilder::codec`](crate::ManagerBuilder::codec)):
    /// what survives a change depends on it (see [`diff`](super::diff())).
    #[must_use]
    pub fn codec(mut self, codec: Codec) -> Guard {
        self.codecs = vec![codec];
        self
    }

    /// Every codec the game has saved with: a change must be survivable in each, since old
    /// saves of each exist.
    #[must_use]
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Guard {
        self.codecs = codecs.into_iter().collect();
        self.codecs.dedup();
        self
    }

    /// A valid value of a type whose hand-written `Deserialize` refuses the values the tracer
    /// makes up (a validated name, a non-zero id). The tracer falls back on it, and on the
    /// sample state's own mementos, when such a type stops a trace.
    #[must_use]
    pub fn sample<T: Serialize + Send + Sync + 'static>(mut self, value: T) -> Guard {
        self.samples.push(sample_of(value));
        self
    }

    /// The shape of memento `id` (or pattern), given by hand instead of traced: for a type the
    /// tracer cannot follow (an untagged enum, `#[serde(flatten)]`, a hand-written
    /// `Deserialize` that asks for any value). Keep it true by hand: the guard compares it as
    /// if it were traced.
    #[must_use]
    pub fn shape(mut self, id: impl Into<String>, schema: Schema) -> Guard {
        self.shapes.insert(id.into(), schema);
        self
    }

    /// Write missing and updated schema files (`true`), or only check (`false`). Default:
    /// write, except in CI.
    #[must_use]
    pub fn write_files(mut self, write: bool) -> Guard {
        self.write = Some(write);
        self
    }

    /// Checks every memento of `state` (its [`memento_types`](SaveState::memento_types)),
    /// best a sample state that holds one of each kind of thing (an entity in each registry).
    ///
    /// # Errors
    /// [`Failure`], listing every problem: its text says what to do.
    pub fn check<S: SaveState + ?Sized>(&self, state: &S) -> Result<Report, Failure> {
        let mut types = MementoTypes::new();
        match state.memento_types(&mut types) {
            Ok(true) => self.check_types(&types),
            Ok(false) => Err(self.failure(vec![Problem::Unlisted {
                reason: format!(
                    "{} cannot list its memento types: implement SaveState::memento_types \
                     (derive SaveState), or list them with MementoTypes and check_types",
                    std::any::type_name::<S>()
                ),
            }])),
            Err(e) => Err(self.failure(vec![Problem::Unlisted {
                reason: e.to_string(),
            }])),
        }
    }

    /// Checks one originator's memento under `id`: a derived or hand-written
    /// [`Originator`] that is not part of a [`SaveState`].
    ///
    /// # Errors
    /// As for [`check`](Self::check).
    pub fn check_originator<O: Originator + ?Sized>(
        &self,
        id: &str,
        originator: &O,
    ) -> Result<Report, Failure> {
        let mut types = MementoTypes::new();
        if let Err(e) = types.originator(id, originator) {
            return Err(self.failure(vec![Problem::Unlisted {
                reason: e.to_string(),
            }]));
        }
        self.check_types(&types)
    }

    /// Checks every memento type of `types`.
    ///
    /// # Errors
    /// As for [`check`](Self::check).
    pub fn check_types(&self, types: &MementoTypes) -> Result<Report, Failure> {
        if types.is_empty() {
            return Err(self.failure(vec![Problem::Unlisted {
                reason: "the state lists no memento types: there is nothing to check".into(),
            }]));
        }
        let write = self.write.unwrap_or_else(|| !in_ci());
        let files = match read_dir(&self.dir) {
            Ok(files) => files,
            Err((path, reason)) => return Err(self.failure(vec![Problem::File { path, reason }])),
        };
        let mut problems = Vec::new();
        let mut report = Report::default();
        for entry in types.iter() {
            report.checked += 1;
            let theirs: Vec<&(PathBuf, SchemaFile)> =
                files.iter().filter(|(_, f)| f.id == entry.id()).collect();
            if let Err(problem) = self.check_one(entry, &theirs, write, &mut report) {
                problems.push(problem);
            }
        }
        for (path, file) in &files {
            if !types.iter().any(|t| t.id() == file.id) {
                let note = format!(
                    "{}: memento {:?} is no longer in the game; the file stays (old saves may \
                     hold it)",
                    path.display(),
                    file.id
                );
                if !report.notes.contains(&note) {
                    report.notes.push(note);
                }
            }
        }
        if problems.is_empty() {
            Ok(report)
        } else {
            let mut failure = self.failure(problems);
            failure.notes = report.notes;
            Err(failure)
        }
    }

    fn failure(&self, problems: Vec<Problem>) -> Failure {
        Failure {
            dir: self.dir.clone(),
            problems,
            notes: Vec::new(),
        }
    }

    // A check runs once per memento, in a test: the size of its error does not matter.
    #[allow(clippy::result_large_err)]
    fn check_one(
        &self,
        entry: &MementoType,
        files: &[&(PathBuf, SchemaFile)],
        write: bool,
        report: &mut Report,
    ) -> Result<(), Problem> {
        let id = entry.id().to_owned();
        let Some(memento_version) = entry.version() else {
            return Err(Problem::UnknownVersion {
                id,
                reason: entry.version_problem().unwrap_or_default().to_owned(),
            });
        };
        let now = (self.schema_version, memento_version);
        let current = match self.shapes.get(&id) {
            Some(schema) => schema.clone(),
            None => {
                let samples: Vec<SampleFn> =
                    self.samples.iter().chain(&entry.sample).cloned().collect();
                let input = TraceInput { samples: &samples };
                (entry.trace)(&input).map_err(|error| Problem::Untraceable {
                    id: id.clone(),
                    error,
                })?
            }
        };
        let at = |f: &SchemaFile| (f.schema_version, f.memento_version);
        if let Some((path, f)) = files
            .iter()
            .map(|p| (&p.0, &p.1))
            .find(|(_, f)| at(f).0 > now.0 || at(f).1 > now.1)
        {
            return Err(Problem::Newer {
                id,
                file: path.clone(),
                committed: at(f),
                now,
            });
        }
        let exact: Vec<&(PathBuf, SchemaFile)> = files
            .iter()
            .copied()
            .filter(|(_, f)| at(f) == now)
            .collect();
        if let [first, second, ..] = exact.as_slice() {
            return Err(Problem::File {
                path: second.0.clone(),
                reason: format!(
                    "holds memento {id:?} at the versions {} holds too: keep one",
                    first.0.display()
                ),
            });
        }
        let older = files
            .iter()
            .filter(|(_, f)| at(f) != now)
            .max_by_key(|(_, f)| at(f));
        // Every step from the last older version must be there, even when this version's
        // file is committed (a step removed later would strand old saves).
        if let Some((path, f)) = older {
            if self.steps_run() {
                self.steps_from(&id, path, at(f), now)?;
            } else if at(f) != now {
                report.notes.push(format!(
                    "memento {id:?}: a new version since {}; bitcode saves run no migration \
                     steps, so the guard cannot check how old ones are converted (decode the \
                     old type with Snapshot::memento and capture the new one)",
                    path.display()
                ));
            }
        }
        let new_file = SchemaFile {
            id: id.clone(),
            schema_version: now.0,
            memento_version: now.1,
            schema: current,
        };
        if let Some((path, committed)) = exact.first().map(|p| (&p.0, &p.1)) {
            let changes = diff(&committed.schema, &new_file.schema, &id);
            match verdict(&changes, &self.codecs) {
                Verdict::Breaking => {
                    return Err(Problem::Changed {
                        id: id.clone(),
                        file: path.clone(),
                        versions: now,
                        advice: self.advice(&id, now, path, &changes),
                        changes,
                        codecs: self.codecs.clone(),
                    });
                }
                v => {
                    let text = new_file.to_json();
                    let stale = std::fs::read_to_string(path).map_or(true, |t| t != text);
                    if v == Verdict::Compatible || !changes.is_empty() {
                        report.notes.push(format!(
                            "memento {id:?} changed in ways old saves survive ({}): {}",
                            path.display(),
                            describe(&changes, &self.codecs)
                        ));
                    }
                    if stale && write {
                        std::fs::write(path, &text).map_err(|e| Problem::File {
                            path: path.clone(),
                            reason: e.to_string(),
                        })?;
                        report.updated.push(path.clone());
                    }
                }
            }
            return Ok(());
        }
        let path = self.dir.join(file_name(&id, now.0, now.1));
        let why = match older {
            None => "the first schema of this memento".to_owned(),
            Some((old_path, f)) => {
                let changes = diff(&f.schema, &new_file.schema, &id);
                if changes.is_empty() {
                    format!("a new version; the shape is that of {}", old_path.display())
                } else {
                    format!(
                        "a new version; since {}: {}",
                        old_path.display(),
                        describe(&changes, &self.codecs)
                    )
                }
            }
        };
        if !write {
            return Err(Problem::Missing { id, file: path });
        }
        std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&path, new_file.to_json()))
            .map_err(|e| Problem::File {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Err(Problem::Written {
            id,
            file: path,
            why,
        })
    }

    /// The steps from the committed versions `from` to `now`.
    #[allow(clippy::result_large_err)]
    fn steps_from(
        &self,
        id: &str,
        path: &Path,
        from: (u32, u32),
        now: (u32, u32),
    ) -> Result<(), Problem> {
        let mut missing = Vec::new();
        if from.0 < now.0 && self.migrations.plan(from.0, now.0).is_err() {
            let absent: Vec<String> = (from.0 + 1..=now.0)
                .filter(|v| !self.migrations.steps().iter().any(|s| s.version == *v))
                .map(|v| v.to_string())
                .collect();
            missing.push(format!(
                "no whole-document step produces schema version {} (Migrations::step)",
                absent.join(", ")
            ));
        }
        if from.1 < now.1 && self.migrations.memento_plan(id, from.1, now.1).is_err() {
            let absent: Vec<String> = (from.1..now.1)
                .filter(|v| self.migrations.memento_plan(id, *v, v + 1).is_err())
                .map(|v| format!("Migrations::memento_step({id:?}, {v}, {}, ..)", v + 1))
                .collect();
            missing.push(format!("no per-memento step {}", absent.join(", ")));
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Problem::NoStep {
                id: id.to_owned(),
                file: path.to_path_buf(),
                from,
                to: now,
                missing: missing.join("; "),
            })
        }
    }

    /// What to do about a breaking change at versions `now`, committed in `path`.
    /// Can the game's saves run migration steps? Not if they are all bitcode, which is not
    /// self-describing: a bitcode game converts an old memento by decoding its old type.
    fn steps_run(&self) -> bool {
        self.codecs.iter().any(|c| c.is_self_describing())
    }

    fn advice(&self, id: &str, now: (u32, u32), path: &Path, changes: &[Change]) -> String {
        let (s, m) = now;
        let next = file_name(id, s, m + 1);
        if !self.steps_run() {
            return format!(
                "Old saves would load wrong or not at all. To fix it, raise the memento's \
                 version to {} (#[savegame(version = {})], or Originator::memento_version) and \
                 convert old saves in Rust: bitcode saves run no migration steps, so decode a \
                 memento at version {m} as the old type (Snapshot::memento) and capture the new \
                 one. The next run writes {next}: commit it beside {}, which stays.",
                m + 1,
                m + 1,
                path.display()
            );
        }
        let hints = step_hints(id, changes);
        let bump_memento = format!(
            "raise the memento's version to {} (#[savegame(version = {})] on a derived \
             originator, Originator::memento_version on one by hand, the version a registry \
             or plugin registers it at) and add a step from {m} to {} that turns the old shape \
             into the new one (Migrations::memento_step({id:?}, {m}, {}, |memento| ..)); the \
             next run writes {next}",
            m + 1,
            m + 1,
            m + 1,
            m + 1,
        );
        let doc = if s > 1 || !self.migrations.steps().is_empty() {
            format!(
                ", or raise the game's schema version to {} with a whole-document step that \
                 produces it (Migrations::step({}, ..)), and the next run writes {}",
                s + 1,
                s + 1,
                file_name(id, s + 1, m)
            )
        } else {
            String::new()
        };
        format!(
            "Old saves would load wrong or not at all. To fix it, {bump_memento}{doc}: commit \
             it beside {}, which stays.{hints} (If no build with the committed shape ever \
             shipped, delete {} instead and run again.)",
            path.display(),
            path.display()
        )
    }
}

/// What a step does about the memento's own fields, where the change says: a rename is
/// `rename`, a field added with no default is `insert_if_absent`.
fn step_hints(id: &str, changes: &[Change]) -> String {
    let top = format!("/{}/", id.replace('~', "~0").replace('/', "~1"));
    let mut hints = Vec::new();
    for c in changes {
        let Some(field) = c.path.strip_prefix(&top).filter(|f| !f.contains('/')) else {
            continue;
        };
        if let Some(rest) = c.what.strip_prefix("renamed to ") {
            let new = rest.split(' ').next().unwrap_or_default();
            hints.push(format!("memento.rename({field:?}, {new:?})"));
        } else if c.what.starts_with("added (") && c.named == Verdict::Breaking {
            hints.push(format!(
                "memento.insert_if_absent({field:?}, <its value for old saves>)"
            ));
        }
    }
    if hints.is_empty() {
        String::new()
    } else {
        format!(" In the step: {}.", hints.join("; "))
    }
}

/// The changes in one line: `/player/title: added (..) [compatible in MessagePack]; ...`.
fn describe(changes: &[Change], codecs: &[Codec]) -> String {
    if changes.is_empty() {
        return "no change in what the codecs write".into();
    }
    changes
        .iter()
        .map(|c| format!("{c} [{}]", c.verdict_text(codecs)))
        .collect::<Vec<_>>()
        .join("; ")
}
