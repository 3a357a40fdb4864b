//! Versioned migrations: saves from every earlier version of the game still load.
//!
//! A save records one schema version for its whole document (bytes 20–23 of its header). The
//! game declares its current version on the [builder](crate::ManagerBuilder::schema_version) and
//! registers one [step](Migrations::step) per version since its first: step `n` takes a save
//! from version `n - 1` to `n`. Loading an older save turns each memento into a generic
//! [`Value`] tree, runs every step from the save's version up to the current one on the
//! [`Document`], encodes the mementos again, and hands them to the originators as usual. A save
//! at the current version takes none of this path.
//!
//! A MessagePack memento that the steps only rewrite with `map` operations (a big world whose
//! entity kinds become numbers, say) skips the tree: its bytes are copied with the mapped
//! values written in place, which gives the same bytes the tree would, and is checked to on
//! the way; where it cannot be (a value not in the shortest form the encoder writes, an
//! extension type, a value the table lacks, damage), the tree does the whole save as usual, with
//! the result or the error it always gave.
//!
//! Steps come in two kinds, freely mixed:
//!
//! - **Rust steps**: a closure over the [`Document`], with helpers for the usual moves
//!   ([`Value::rename`], [`Value::insert_if_absent`], [`Document::split`], [`Document::merge`],
//!   [`Document::move_value`], …).
//! - **Declarative steps**: JSON files named `NNNN_name.json` (the version they produce), each a
//!   list of JSON Patch operations with wildcards, add-if-absent and value tables (see
//!   [the operations](#declarative-operations)). A game embeds its `migrations/` folder at build
//!   time with [`embed_migrations!`](crate::embed_migrations); a tool reads the same files at run
//!   time with [`Migrations::from_dir`].
//!
//! ```
//! use savegame::migrate::{Migrations, Value};
//!
//! let migrations = Migrations::new()
//!     .step(2, "rename_hp", |doc| {
//!         let player = doc.memento_mut("player")?;
//!         player.rename("hp", "health");
//!         player.insert_if_absent("stamina", 100);
//!         Ok(())
//!     })
//!     .declarative(
//!         "0003_kinds_as_numbers.json",
//!         r#"[{"op": "map", "path": "/world/entities/*/kind", "table": {"tree": 1, "rock": 2}}]"#,
//!     )?;
//! migrations.check(3)?;
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Declarative operations
//!
//! | op | fields | does |
//! |---|---|---|
//! | `add` | `path`, `value` | RFC 6902 add: set a map field, insert into an array (`-` appends), or add a whole memento (`/inventory`) |
//! | `remove` | `path` | RFC 6902 remove; the value must exist |
//! | `replace` | `path`, `value` | RFC 6902 replace; the value must exist |
//! | `move` | `from`, `path` | RFC 6902 move; moving `/player/inventory` to `/inventory` splits a memento, the reverse merges two |
//! | `copy` | `from`, `path` | RFC 6902 copy |
//! | `test` | `path`, `value` | RFC 6902 test: the step fails unless the value is there and equal |
//! | `add_if_absent` | `path`, `value` | add a map field only where it is missing |
//! | `map` | `path`, `table`, optional `default` | replace a value by its entry in `table`, an object keyed by the old value's text (`"tree"`, `"3"`, `"true"`); a value with no entry takes `default`, or fails the step |
//!
//! Paths are JSON Pointers whose first token is the memento id. A token `*` stands for every
//! element of an array, every value of a map, or (first) every memento; in `move` and `copy`, the
//! `*`s of `path` take the tokens the `*`s of `from` matched, in order. A wildcard that matches
//! nothing does nothing; a literal path that does not exist fails the step, as in RFC 6902.
//! `~2` names a literal `*` (`/settings/~2` is the map key `"*"`), beside RFC 6901's `~0` (`~`)
//! and `~1` (`/`); a `*` inside a longer token (`a*b`) is literal already.
//!
//! `test` compares maps whatever their order, arrays element by element, integers exactly,
//! floats as floats, an integer and a float by their exact values (`9` equals `9.0`), and a
//! 32-bit float in a save at its own precision (`0.1` equals a saved `0.1f32`).
//!
//! **Where step files differ from RFC 6902 and RFC 6901, on purpose.** These files rewrite
//! players' saves, so they are strict where the RFCs are lenient, and say exactly what they
//! address:
//!
//! - A member an operation does not define fails the file ([`Error::StepFile`]), where
//!   RFC 6902 §4 ignores it: a misspelt `"defualt"` or `"vaule"` must not pass silently.
//! - `*` is a wildcard, and `~2` the escape for a literal `*`. RFC 6901 allows no `~` escape but
//!   `~0` and `~1`, so no valid pointer contains `~2`: the escape cannot collide with a key any
//!   pointer names (as `\*` or `**` would), and no file that was valid before changes meaning.
//! - `test` never rounds integers to 53 bits: `9007199254740993` does not equal
//!   `9007199254740992` (an RFC 6902 implementation that compares numbers as doubles says it
//!   does).
//! - A path names at least a memento: the document's root (`""`) is not a path.
//!
//! The pointers of Rust steps ([`Document::pointer`], [`Document::put`] and the like) are plain
//! RFC 6901: there, `*` is an ordinary key and `~2` an error.
//!
//! # Guarantees
//!
//! - The chain is checked when the manager is built: no gap, no duplicate, no step past the
//!   current version, every step file parses ([`Migrations::check`]).
//! - A failing step stops the load with [`Error::Migration`], naming the step and the path it
//!   failed at. Loading never writes, so the file is untouched.
//! - A migrated save is written back only by the game's next save, which first keeps the
//!   pre-migration file, byte for byte, as `<slot file>.v<old version>.bak`.
//! - Migrating v1 → v3 in one load equals migrating v1 → v2, saving, and loading at v3.

mod document;
pub(crate) mod error;
mod memento_plan;
#[cfg(feature = "json")]
mod patch;
#[cfg(all(feature = "json", feature = "msgpack"))]
mod transcode;
mod value;

#[cfg(all(feature = "json", feature = "msgpack"))]
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
#[cfg(feature = "json")]
use std::path::Path;
use std::sync::Arc;

/// The string type of [`Value::String`] (the `compact_str` crate's), so a step can build one
/// without depending on that crate itself.
pub use compact_str::CompactString;
pub use document::Document;
pub use error::MigrationError;
pub use value::Value;

use crate::codec::Codec;
use crate::error::{Error, Result};
#[cfg(all(feature = "json", feature = "msgpack"))]
use crate::format::DEFAULT_MEMENTO_VERSION;
use crate::snapshot::Snapshot;
#[cfg(feature = "json")]
use patch::PatchOp;

/// A Rust migration step: edits the document in place.
pub type StepFn = dyn Fn(&mut Document) -> Result<(), MigrationError> + Send + Sync;

/// A per-memento migration step: edits one memento in place.
pub type MementoStepFn = dyn Fn(&mut Value) -> Result<(), MigrationError> + Send + Sync;

/// A step of one originator's memento, from one memento version to the next.
#[derive(Clone)]
struct MementoStep {
    id: String,
    from: u32,
    to: u32,
    f: Arc<MementoStepFn>,
}

#[derive(Clone)]
enum Action {
    Rust(Arc<StepFn>),
    #[cfg(feature = "json")]
    Patch {
        file: String,
        ops: Vec<PatchOp>,
    },
}

#[derive(Clone)]
struct Step {
    version: u32,
    name: String,
    action: Action,
    checksum: Option<String>,
}

/// What a step is, for plans and tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepInfo {
    /// The schema version the step produces.
    pub version: u32,
    /// The step's name (`rename_hp`; for a file `0002_rename_hp.json`, `rename_hp`).
    pub name: String,
    /// The step file's name, for declarative steps.
    pub file: Option<String>,
    /// A checksum of the step file's bytes (64-bit FNV-1a, hex), for declarative steps: a
    /// game's test can pin it so a released step never changes.
    pub checksum: Option<String>,
    /// The operations and the paths they touch (`"move /player/hp -> /player/health"`), for
    /// declarative steps; `["(Rust code)"]` for Rust steps.
    pub touches: Vec<String>,
}

/// The migration steps of a game, from its first schema version to its current one.
#[derive(Clone, Default)]
pub struct Migrations {
    steps: Vec<Step>,
    memento_steps: Vec<MementoStep>,
}

impl fmt::Debug for Migrations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let memento_steps: Vec<String> = self
            .memento_steps
            .iter()
            .map(|s| format!("{} {}→{}", s.id, s.from, s.to))
            .collect();
        f.debug_struct("Migrations")
            .field("steps", &self.steps())
            .field("memento_steps", &memento_steps)
            .finish()
    }
}

impl Migrations {
    /// No steps.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a Rust step that produces schema version `version` (from `version - 1`).
    #[must_use]
    pub fn step(
        mut self,
        version: u32,
        name: impl Into<String>,
        f: impl Fn(&mut Document) -> Result<(), MigrationError> + Send + Sync + 'static,
    ) -> Self {
        self.steps.push(Step {
            version,
            name: name.into(),
            action: Action::Rust(Arc::new(f)),
            checksum: None,
        });
        self
    }

    /// Adds a declarative step from a file's name (`NNNN_name.json`, `NNNN` being the version
    /// it produces) and contents.
    ///
    /// # Errors
    /// [`Error::StepFile`] when the name does not follow the pattern or the contents do not
    /// parse; the error names the file and, where there is one, the operation.
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn declarative(mut self, file_name: &str, contents: &str) -> Result<Self> {
        let (version, name) = parse_file_name(file_name)?;
        let ops = patch::parse_ops(contents).map_err(|(op, reason)| Error::StepFile {
            file: file_name.to_owned(),
            op,
            reason,
        })?;
        self.steps.push(Step {
            version,
            name,
            action: Action::Patch {
                file: file_name.to_owned(),
                ops,
            },
            checksum: Some(checksum(contents.as_bytes())),
        });
        Ok(self)
    }

    /// Declarative steps from `(file name, contents)` pairs: what
    /// [`embed_migrations!`](crate::embed_migrations) expands to.
    ///
    /// # Errors
    /// As for [`declarative`](Self::declarative).
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn embedded(files: &[(&str, &str)]) -> Result<Self> {
        files.iter().try_fold(Self::new(), |m, (name, contents)| {
            m.declarative(name, contents)
        })
    }

    /// Every `*.json` step file of a folder, read now (for tools; a game embeds its steps).
    ///
    /// # Errors
    /// [`Error::Io`] when the folder or a file cannot be read; [`Error::StepFile`] as for
    /// [`declarative`](Self::declarative).
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                names.push(name);
            }
        }
        names.sort();
        let mut migrations = Self::new();
        for name in names {
            let path = dir.join(&name);
            let contents = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            migrations = migrations.declarative(&name, &contents)?;
        }
        Ok(migrations)
    }

    /// Adds a step for one originator's memento: it takes memento `id` from memento version
    /// `from` to `to` (`to` must be `from + 1`; [`check`](Self::check) says so), whatever the
    /// save's schema version, so parts of a game (mods, DLC, plugins) evolve apart. The step
    /// edits the memento alone. The end of an id's chain is the version a load brings its
    /// memento to, and should be its originator's
    /// [`memento_version`](crate::Originator::memento_version).
    ///
    /// Order on load: first every whole-document step from the save's schema version to the
    /// game's (which may rename, split and merge mementos), then, for each memento under the
    /// id it has after them (in ascending id order), its own steps from its recorded version
    /// to the end of its chain.
    ///
    /// An `id` that ends in `*` is a pattern: its steps are those of every memento whose id
    /// starts with what comes before the `*` (`"monster/*"`: each entity of a
    /// [`Registry`](crate::Registry) with the prefix `monster/`). A memento with steps under
    /// its own id follows those; otherwise the longest pattern that matches it.
    ///
    /// ```
    /// use savegame::migrate::Migrations;
    ///
    /// let migrations = Migrations::new().memento_step("player", 2, 3, |player| {
    ///     player.rename("hp", "health");
    ///     Ok(())
    /// });
    /// migrations.check(1)?;
    /// assert_eq!(migrations.memento_version("player"), Some(3));
    /// # Ok::<(), savegame::Error>(())
    /// ```
    #[must_use]
    pub fn memento_step(
        mut self,
        id: impl Into<String>,
        from: u32,
        to: u32,
        f: impl Fn(&mut Value) -> Result<(), MigrationError> + Send + Sync + 'static,
    ) -> Self {
        self.memento_steps.push(MementoStep {
            id: id.into(),
            from,
            to,
            f: Arc::new(f),
        });
        self
    }

    /// The version a load brings memento `id` to: the end of its chain of
    /// [per-memento steps](Self::memento_step), or `None` if it has none (its mementos are
    /// then left at whatever version they were saved at).
    #[must_use]
    pub fn memento_version(&self, id: &str) -> Option<u32> {
        let chain = self.chain_of(id)?;
        self.memento_steps
            .iter()
            .filter(|s| s.id == chain)
            .map(|s| s.to)
            .max()
    }

    /// The step id whose chain memento `id` follows: its own, else the longest pattern
    /// (`prefix*`) that matches it; `None` when no step is for it.
    fn chain_of(&self, id: &str) -> Option<&str> {
        let steps = || self.memento_steps.iter().map(|s| s.id.as_str());
        if let Some(own) = steps().find(|s| *s == id) {
            return Some(own);
        }
        steps()
            .filter(|s| {
                s.strip_suffix('*')
                    .is_some_and(|prefix| id.starts_with(prefix))
            })
            .max_by_key(|s| s.len())
    }

    /// Adds every step of `other`.
    #[must_use]
    pub fn with(mut self, other: Migrations) -> Self {
        self.steps.extend(other.steps);
        self.memento_steps.extend(other.memento_steps);
        self
    }

    /// The steps, in version order.
    #[must_use]
    pub fn steps(&self) -> Vec<StepInfo> {
        let mut steps: Vec<&Step> = self.steps.iter().collect();
        steps.sort_by_key(|s| s.version);
        steps.into_iter().map(Step::info).collect()
    }

    /// Checks the chain for a game at schema version `current`: step versions are unique,
    /// consecutive, and end at `current` (when there are any), and none is below 2. Each
    /// memento's chain of [per-memento steps](Self::memento_step) goes up one version a step,
    /// from version 1 or later, with no gap and no duplicate.
    ///
    /// # Errors
    /// [`Error::MigrationChain`] saying what is wrong.
    pub fn check(&self, current: u32) -> Result<()> {
        self.check_memento_chains()?;
        let mut versions: Vec<u32> = self.steps.iter().map(|s| s.version).collect();
        versions.sort_unstable();
        let bad = |reason: String| Err(Error::MigrationChain { reason });
        if let Some(w) = versions.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("two steps produce version {}", w[0]));
        }
        if let Some(w) = versions.windows(2).find(|w| w[1] != w[0] + 1) {
            return bad(format!(
                "gap: no step produces version {} (steps jump from {} to {})",
                w[0] + 1,
                w[0],
                w[1]
            ));
        }
        match (versions.first(), versions.last()) {
            (Some(&first), _) if first < 2 => bad(format!(
                "a step produces version {first}; versions start at 1, so the first step produces 2 or more"
            )),
            (_, Some(&last)) if last > current => bad(format!(
                "a step produces version {last}, past the current version {current}"
            )),
            (_, Some(&last)) if last < current => bad(format!(
                "gap: no step produces version {} (the current version is {current})",
                last + 1
            )),
            _ => Ok(()),
        }
    }

    fn check_memento_chains(&self) -> Result<()> {
        let bad = |reason: String| Err(Error::MigrationChain { reason });
        let mut ids: Vec<&str> = self.memento_steps.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let mut chain: Vec<&MementoStep> =
                self.memento_steps.iter().filter(|s| s.id == id).collect();
            chain.sort_by_key(|s| s.from);
            if let Some(s) = chain.iter().find(|s| s.to != s.from.saturating_add(1)) {
                return bad(format!(
                    "memento {id:?}: a step goes from version {} to {}; each step goes up one version",
                    s.from, s.to
                ));
            }
            if let Some(s) = chain.iter().find(|s| s.from == 0) {
                return bad(format!(
                    "memento {id:?}: a step starts at version {}; memento versions start at 1",
                    s.from
                ));
            }
            if let Some(w) = chain.windows(2).find(|w| w[0].from == w[1].from) {
                return bad(format!(
                    "memento {id:?}: two steps start at version {}",
                    w[0].from
                ));
            }
            if let Some(w) = chain.windows(2).find(|w| w[1].from != w[0].to) {
                return bad(format!(
                    "memento {id:?}: gap: no step from version {} (steps jump from {} to {})",
                    w[0].to, w[0].to, w[1].from
                ));
            }
        }
        Ok(())
    }

    /// Brings memento `id`, at memento version `from`, to the end of its chain; returns the
    /// version it is at after (`from` when it has no steps).
    fn migrate_memento(&self, id: &str, value: &mut Value, from: u32) -> Result<u32> {
        let (Some(chain), Some(end)) = (self.chain_of(id), self.memento_version(id)) else {
            return Ok(from);
        };
        if from > end {
            return Err(Error::NewerMemento {
                id: id.to_owned(),
                found: from,
                supported: end,
            });
        }
        let mut version = from;
        while version < end {
            let step = self
                .memento_steps
                .iter()
                .find(|s| s.id == chain && s.from == version)
                .ok_or_else(|| Error::NoMementoMigrationPath {
                    id: id.to_owned(),
                    from,
                    to: end,
                })?;
            (step.f)(value).map_err(|source| Error::MementoMigration {
                id: id.to_owned(),
                from: step.from,
                to: step.to,
                source,
            })?;
            version = step.to;
        }
        Ok(version)
    }

    /// Runs every memento's own steps on `doc` (see [`memento_step`](Self::memento_step)):
    /// each memento from its version to the end of its chain.
    ///
    /// # Errors
    /// [`Error::NewerMemento`], [`Error::NoMementoMigrationPath`] or
    /// [`Error::MementoMigration`]; on error `doc` is partly migrated and should be dropped.
    pub fn run_memento_steps(&self, doc: &mut Document) -> Result<()> {
        if self.memento_steps.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = doc.ids().map(str::to_owned).collect();
        for id in ids {
            let Some(from) = doc.version(&id) else {
                continue;
            };
            let value = doc
                .memento_mut(&id)
                .map_err(|source| Error::MementoMigration {
                    id: id.clone(),
                    from,
                    to: from,
                    source,
                })?;
            let to = self.migrate_memento(&id, value, from)?;
            if to != from {
                doc.set_version(&id, to)
                    .map_err(|source| Error::MementoMigration {
                        id: id.clone(),
                        from,
                        to,
                        source,
                    })?;
            }
        }
        Ok(())
    }

    /// Brings a loaded snapshot at schema version `from` up to date for a game at `to`: what a
    /// load runs. At the game's schema version only the mementos below the end of their own
    /// chains are decoded and migrated (the others keep their bytes); an older save goes
    /// through [`migrate_snapshot`](Self::migrate_snapshot). A snapshot with nothing to migrate
    /// comes back as it was.
    ///
    /// # Errors
    /// As for [`migrate_snapshot`](Self::migrate_snapshot).
    pub fn upgrade(&self, snapshot: Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        if from != to {
            return self.migrate_snapshot(&snapshot, from, to);
        }
        let stale: Vec<(String, u32)> = snapshot
            .ids()
            .filter_map(|id| {
                let version = snapshot.version(id)?;
                let end = self.memento_version(id)?;
                (version != end).then(|| (id.to_owned(), version))
            })
            .collect();
        if stale.is_empty() {
            return Ok(snapshot);
        }
        let codec = snapshot.codec();
        codec.require_self_describing(MIGRATION_STEPS)?;
        let mut snapshot = snapshot;
        for (id, version) in stale {
            let raw = snapshot.encoded(&id)?;
            let mut value: Value = codec.decode(raw).map_err(|e| e.decoding(&id))?;
            let new_version = self.migrate_memento(&id, &mut value, version)?;
            snapshot.capture_memento(&id, &value)?;
            snapshot.set_version(&id, new_version)?;
        }
        Ok(snapshot)
    }

    /// The steps that take a save from version `from` to `to`, in order.
    ///
    /// # Errors
    /// [`Error::NoMigrationPath`] when a step is missing.
    pub fn plan(&self, from: u32, to: u32) -> Result<Vec<StepInfo>> {
        Ok(self.path(from, to)?.into_iter().map(Step::info).collect())
    }

    fn path(&self, from: u32, to: u32) -> Result<Vec<&Step>> {
        (from.saturating_add(1)..=to)
            .map(|v| {
                self.steps
                    .iter()
                    .find(|s| s.version == v)
                    .ok_or(Error::NoMigrationPath { from, to })
            })
            .collect()
    }

    /// Runs the steps from version `from` to `to` on `doc`.
    ///
    /// # Errors
    /// [`Error::NoMigrationPath`] when a step is missing; [`Error::Migration`] when one fails.
    /// On error `doc` is partly migrated and should be dropped.
    pub fn run(&self, doc: &mut Document, from: u32, to: u32) -> Result<()> {
        for step in self.path(from, to)? {
            step.apply(doc).map_err(|source| Error::Migration {
                step: step.name.clone(),
                version: step.version,
                source,
            })?;
        }
        Ok(())
    }

    /// Migrates a whole snapshot from version `from` to `to`: decodes each memento to a
    /// [`Value`], runs the whole-document steps, then each memento's own steps
    /// ([`run_memento_steps`](Self::run_memento_steps)), and encodes the mementos again in the
    /// snapshot's codec, each at its new version.
    ///
    /// # Errors
    /// As for [`run`](Self::run) and [`run_memento_steps`](Self::run_memento_steps);
    /// [`Error::Decode`] or [`Error::Encode`] when a memento cannot be turned into a value tree
    /// or back.
    ///
    /// A MessagePack memento that only `map` operations of declarative steps touch (each
    /// within it: no other operation, wildcard memento or per-memento step reaches it) is
    /// mapped on its bytes instead, with the same result byte for byte; where that cannot be
    /// shown on the way (a value not in its shortest form, say), the memento goes through the
    /// tree like the others.
    pub fn migrate_snapshot(&self, snapshot: &Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        #[cfg(all(feature = "json", feature = "msgpack"))]
        if let Some(migrated) = self.migrate_mapping_bytes(snapshot, from, to)? {
            return Ok(migrated);
        }
        self.migrate_tree(snapshot, from, to)
    }

    /// [`migrate_snapshot`](Self::migrate_snapshot) with every memento through the tree.
    fn migrate_tree(&self, snapshot: &Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        let mut doc = to_document(snapshot)?;
        self.run(&mut doc, from, to)?;
        self.run_memento_steps(&mut doc)?;
        from_document(doc, snapshot.codec(), snapshot.metadata().clone())
    }

    /// The mementos of a MessagePack snapshot that the steps from `from` to `to` only `map`,
    /// with those operations, by (step, operation) index in `path`. Empty when a Rust step or
    /// an operation on every memento (`/*/…`) is on the way.
    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn mapped_only<'s>(
        &self,
        path: &[&'s Step],
        snapshot: &Snapshot,
    ) -> BTreeMap<String, Vec<(usize, usize, patch::TableMap<'s>)>> {
        let mut found: BTreeMap<String, Vec<(usize, usize, patch::TableMap<'s>)>> = BTreeMap::new();
        if snapshot.codec() != Codec::MessagePack {
            return found;
        }
        let mut ops = Vec::new();
        for (s, step) in path.iter().enumerate() {
            match &step.action {
                Action::Rust(_) => return BTreeMap::new(),
                Action::Patch { ops: list, .. } => {
                    ops.extend(list.iter().enumerate().map(|(i, op)| (s, i, op)));
                }
            }
        }
        let mut touched_otherwise = BTreeSet::new();
        for &(s, i, op) in &ops {
            match (op.touches(), op.table_map()) {
                (patch::Touches::All, _) => return BTreeMap::new(),
                (_, Some(map)) => {
                    found
                        .entry(map.memento.to_owned())
                        .or_default()
                        .push((s, i, map));
                }
                (patch::Touches::Ids(ids), None) => {
                    touched_otherwise.extend(ids.into_iter().flatten());
                }
            }
        }
        found.retain(|id, _| {
            !touched_otherwise.contains(id.as_str())
                && snapshot.contains(id)
                && self.memento_version(id).is_none()
        });
        found
    }

    /// [`migrate_snapshot`](Self::migrate_snapshot) with the mementos that only `map`
    /// operations touch mapped on their bytes ([`transcode`]); `None` when there are none, or
    /// one of them cannot be (then the tree does the whole snapshot, as it always did).
    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn migrate_mapping_bytes(
        &self,
        snapshot: &Snapshot,
        from: u32,
        to: u32,
    ) -> Result<Option<Snapshot>> {
        // A missing step is the tree's to report (after any memento that does not decode).
        let Ok(path) = self.path(from, to) else {
            return Ok(None);
        };
        let mapped = self.mapped_only(&path, snapshot);
        if mapped.is_empty() {
            return Ok(None);
        }
        let mut done = Vec::with_capacity(mapped.len());
        for (id, ops) in &mapped {
            let Some(raw) = snapshot.raw(id) else {
                return Ok(None);
            };
            let mut bytes: Option<Vec<u8>> = None;
            for (_, _, op) in ops {
                let next = transcode::map_leaves(bytes.as_deref().unwrap_or(raw), op);
                let Some(next) = next else {
                    return Ok(None);
                };
                bytes = Some(next);
            }
            let version = snapshot.version(id).unwrap_or(DEFAULT_MEMENTO_VERSION);
            done.push((id.as_str(), version, bytes.unwrap_or_else(|| raw.to_vec())));
        }
        let skip: BTreeSet<(usize, usize)> =
            mapped.values().flatten().map(|&(s, i, _)| (s, i)).collect();
        let mut doc = document_of(snapshot, |id| !mapped.contains_key(id))?;
        for (s, step) in path.iter().enumerate() {
            step.apply_but(&mut doc, |i| skip.contains(&(s, i)))
                .map_err(|source| Error::Migration {
                    step: step.name.clone(),
                    version: step.version,
                    source,
                })?;
        }
        self.run_memento_steps(&mut doc)?;
        let mut migrated = from_document(doc, snapshot.codec(), snapshot.metadata().clone())?;
        for (id, version, bytes) in done {
            migrated.insert_raw(id, bytes)?;
            migrated.set_version(id, version)?;
        }
        Ok(Some(migrated))
    }
}

/// What [`Error::NotSelfDescribing`] says cannot read a bitcode save.
const MIGRATION_STEPS: &str = "migration steps (declarative step files and Rust steps run on \
                               the generic value tree; decode the old Rust type instead)";

/// A snapshot's mementos as a [`Document`].
///
/// # Errors
/// [`Error::Decode`] when a memento is not a valid value of the snapshot's codec;
/// [`Error::NotSelfDescribing`] for a bitcode snapshot.
pub fn to_document(snapshot: &Snapshot) -> Result<Document> {
    document_of(snapshot, |_| true)
}

/// [`to_document`] of the mementos whose ids pass `keep`.
fn document_of(snapshot: &Snapshot, keep: impl Fn(&str) -> bool) -> Result<Document> {
    let codec = snapshot.codec();
    codec.require_self_describing(MIGRATION_STEPS)?;
    let mut mementos = Vec::with_capacity(snapshot.len());
    for id in snapshot.ids().filter(|id| keep(id)) {
        let raw = snapshot.raw(id).unwrap_or_default();
        let value: Value = codec.decode(raw).map_err(|e| e.decoding(id))?;
        let version = snapshot
            .version(id)
            .unwrap_or(crate::format::DEFAULT_MEMENTO_VERSION);
        mementos.push((id.to_owned(), version, value));
    }
    Ok(Document::from_versioned(mementos))
}

/// A snapshot of a [`Document`]'s mementos, encoded with `codec`.
///
/// # Errors
/// [`Error::Encode`] or [`Error::InvalidId`] when a memento cannot be stored.
pub fn from_document(doc: Document, codec: Codec, metadata: crate::Metadata) -> Result<Snapshot> {
    let mut snapshot = Snapshot::new(codec);
    *snapshot.metadata_mut() = metadata;
    for (id, version, value) in doc.into_versioned() {
        snapshot.capture_memento(&id, &value)?;
        snapshot.set_version(&id, version)?;
    }
    Ok(snapshot)
}

impl Step {
    fn apply(&self, doc: &mut Document) -> Result<(), MigrationError> {
        self.apply_but(doc, |_| false)
    }

    /// [`apply`](Self::apply), leaving out the operations whose indices `skip` names.
    fn apply_but(
        &self,
        doc: &mut Document,
        skip: impl Fn(usize) -> bool,
    ) -> Result<(), MigrationError> {
        match &self.action {
            Action::Rust(f) => {
                let _ = skip;
                f(doc)
            }
            #[cfg(feature = "json")]
            Action::Patch { ops, .. } => {
                for (i, op) in ops.iter().enumerate().filter(|(i, _)| !skip(*i)) {
                    op.apply(doc).map_err(|e| MigrationError {
                        reason: format!("op {i} ({}): {}", op.name(), e.reason),
                        path: e.path,
                    })?;
                }
                Ok(())
            }
        }
    }

    fn info(&self) -> StepInfo {
        let (file, touches) = match &self.action {
            Action::Rust(_) => (None, vec!["(Rust code)".to_owned()]),
            #[cfg(feature = "json")]
            Action::Patch { file, ops } => (
                Some(file.clone()),
                ops.iter()
                    .map(|op| format!("{} {}", op.name(), op.paths().join(" -> ")))
                    .collect(),
            ),
        };
        StepInfo {
            version: self.version,
            name: self.name.clone(),
            file,
            checksum: self.checksum.clone(),
            touches,
        }
    }
}

/// `0002_rename_hp.json` → `(2, "rename_hp")`.
#[cfg(feature = "json")]
fn parse_file_name(file_name: &str) -> Result<(u32, String)> {
    let bad = |reason: &str| Error::StepFile {
        file: file_name.to_owned(),
        op: None,
        reason: reason.to_owned(),
    };
    let stem = file_name
        .strip_suffix(".json")
        .ok_or_else(|| bad("a step file's name ends in .json"))?;
    let (number, name) = stem
        .split_once('_')
        .ok_or_else(|| bad("a step file is named NNNN_name.json"))?;
    if number.len() != 4 || !number.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return Err(bad(
            "a step file is named NNNN_name.json, NNNN being four digits",
        ));
    }
    let version = number
        .parse()
        .map_err(|_| bad("the version is not a number"))?;
    Ok((version, name.to_owned()))
}

/// The checksum [`StepInfo::checksum`] reports: 64-bit FNV-1a of `bytes`, as 16 hex digits.
#[must_use]
pub fn checksum(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop(version: u32) -> Migrations {
        Migrations::new().step(version, format!("v{version}"), |_| Ok(()))
    }

    #[test]
    fn the_chain_check_rejects_gaps_duplicates_and_steps_past_current() {
        let chain = noop(2).with(noop(3));
        chain.check(3).unwrap();
        Migrations::new().check(1).unwrap();

        let err = |m: Migrations, current| m.check(current).unwrap_err().to_string();
        assert!(err(noop(2).with(noop(4)), 4).contains("gap"));
        assert!(err(noop(2).with(noop(3)), 4).contains("gap"));
        assert!(err(noop(2).with(noop(2)), 2).contains("two steps"));
        assert!(err(noop(2).with(noop(3)), 2).contains("past the current"));
        assert!(err(noop(1), 1).contains("start at 1"));
    }

    #[test]
    fn plans_list_the_steps_in_order_and_refuse_missing_ones() {
        let chain = noop(3).with(noop(2)).with(noop(4));
        let plan = chain.plan(1, 4).unwrap();
        assert_eq!(
            plan.iter().map(|s| s.version).collect::<Vec<_>>(),
            [2, 3, 4]
        );
        assert!(chain.plan(2, 3).unwrap().len() == 1);
        assert!(chain.plan(4, 4).unwrap().is_empty());
        assert!(matches!(
            noop(3).plan(1, 3),
            Err(Error::NoMigrationPath { from: 1, to: 3 })
        ));
    }

    #[cfg(feature = "json")]
    #[test]
    fn step_file_names_and_checksums() {
        assert_eq!(
            parse_file_name("0002_rename_hp.json").unwrap(),
            (2, "rename_hp".into())
        );
        for bad in [
            "2_x.json",
            "0002.json",
            "0002_.json",
            "0002_x.txt",
            "00a2_x.json",
        ] {
            assert!(
                matches!(parse_file_name(bad), Err(Error::StepFile { ref file, .. }) if file == bad),
                "{bad}"
            );
        }
        assert_eq!(checksum(b""), "cbf29ce484222325");
        assert_eq!(checksum(b"a"), "af63dc4c8601ec8c");
        let m = Migrations::new().declarative("0002_x.json", "[]").unwrap();
        assert_eq!(
            m.steps()[0].checksum.as_deref(),
            Some(checksum(b"[]").as_str())
        );
        let err = Migrations::new()
            .declarative(
                "0002_x.json",
                r#"[{"op":"remove","path":"/a"},{"op":"nope"}]"#,
            )
            .unwrap_err();
        assert!(
            matches!(err, Error::StepFile { ref file, op: Some(1), .. } if file == "0002_x.json"),
            "{err}"
        );
    }

    /// Every memento's bytes and version, or the error's text.
    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn outcome(result: Result<Snapshot>) -> Result<Vec<(String, u32, Vec<u8>)>, String> {
        let snapshot = result.map_err(|e| e.to_string())?;
        Ok(snapshot
            .ids()
            .map(|id| {
                let bytes = snapshot.raw(id).unwrap_or_default().to_vec();
                (id.to_owned(), snapshot.version(id).unwrap_or(0), bytes)
            })
            .collect())
    }

    /// Migrates mementos of raw MessagePack bytes with the step files, through the bytes
    /// where it can and through the tree alone, and checks both give the same, byte for byte
    /// (or the same error); returns whether the bytes path was taken.
    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn same_both_ways(steps: &[(&str, &str)], mementos: &[(&str, Vec<u8>)]) -> bool {
        let migrations = Migrations::embedded(steps).unwrap();
        let mut snapshot = Snapshot::new(Codec::MessagePack);
        for (id, bytes) in mementos {
            snapshot.insert_raw(id, bytes.clone()).unwrap();
        }
        snapshot.set_version(mementos[0].0, 4).unwrap();
        let to = 1 + steps.len() as u32;
        let fast = migrations.migrate_mapping_bytes(&snapshot, 1, to).unwrap();
        let took_bytes = fast.is_some();
        let tree = outcome(migrations.migrate_tree(&snapshot, 1, to));
        assert_eq!(outcome(migrations.migrate_snapshot(&snapshot, 1, to)), tree);
        if let Some(fast) = fast {
            assert_eq!(outcome(Ok(fast)), tree);
        }
        took_bytes
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn set_at(v: &mut Value, path: &[&str], new: Value) {
        let mut at = v;
        for t in path {
            at = match at {
                Value::Array(items) => &mut items[t.parse::<usize>().unwrap()],
                other => other.get_mut(t).unwrap(),
            };
        }
        *at = new;
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn mp(v: &Value) -> Vec<u8> {
        Codec::MessagePack.encode(v).unwrap()
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn obj(fields: Vec<(&str, Value)>) -> Value {
        fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    #[test]
    fn mapping_on_the_bytes_gives_what_the_tree_gives() {
        const KINDS: &str = r#"[{"op": "map", "path": "/world/entities/*/kind",
            "table": {"tree": 1, "rock": "stone", "7": [1, {"a": null}], "true": 2.5,
                      "null": -40, "-129": 70000}}]"#;
        let scalars = [
            Value::from("tree"),
            Value::from("rock"),
            Value::from(7),
            Value::from(true),
            Value::Null,
            Value::from(-129),
        ];
        let entity = |i: usize, kind: Value| {
            obj(vec![
                ("id", Value::from(i as u64 * 977)),
                ("kind", kind),
                ("x", Value::from(i as f32 * 0.5)),
                ("y", Value::from(-(i as f64))),
            ])
        };
        let entities: Vec<Value> = (0..300)
            .map(|i| entity(i, scalars[i % scalars.len()].clone()))
            .collect();
        let world = obj(vec![
            ("name", Value::from("x".repeat(300))),
            ("blob", Value::Bytes(vec![7; 300])),
            ("entities", Value::from(entities)),
            ("big", Value::from(u64::MAX)),
            ("small", Value::from(i64::MIN)),
        ]);
        let player = obj(vec![("hp", Value::from(3))]);
        let both = |w: &Value| vec![("world", mp(w)), ("player", mp(&player))];
        assert!(same_both_ways(&[("0002_k.json", KINDS)], &both(&world)));

        // A kind the table lacks fails the same way, with or without another step.
        let mut odd = world.clone();
        set_at(&mut odd, &["entities", "5", "kind"], Value::from("cloud"));
        assert!(!same_both_ways(&[("0002_k.json", KINDS)], &both(&odd)));
        // ... unless there is a default, which also takes arrays, maps, floats and bytes.
        let with_default = r#"[{"op": "map", "path": "/world/entities/*/kind",
            "table": {"tree": 1}, "default": {"d": [0]}}]"#;
        for kind in [
            Value::from("cloud"),
            Value::from(vec![Value::from(1)]),
            Value::map(),
            Value::from(1.5),
            Value::from(0.25f32),
            Value::Bytes(vec![1]),
        ] {
            let mut odd = world.clone();
            set_at(&mut odd, &["entities", "3", "kind"], kind);
            assert!(same_both_ways(
                &[("0002_k.json", with_default)],
                &both(&odd)
            ));
        }

        // Literal indices and keys, integer keys, duplicate keys, wildcards over maps and
        // over scalars, a path that leads nowhere.
        let map_at = |path: &str| {
            format!(r#"[{{"op": "map", "path": "{path}", "table": {{"1": "one", "a": "A"}}}}]"#)
        };
        let tricky = Value::Map(vec![
            (
                Value::from("list"),
                Value::from(vec![Value::from(1), Value::from("a"), Value::from(2)]),
            ),
            (Value::from(5), Value::from("a")),
            (Value::from(70_000), Value::from(1)),
            (Value::from("dup"), Value::from(1)),
            (Value::from("dup"), Value::from(1)),
            (Value::from(vec![Value::from(1)]), Value::from(1)),
            (Value::from("s"), Value::from(1)),
        ]);
        let tricky = vec![("world", mp(&tricky))];
        for (path, fast) in [
            ("/world/list/1", true),
            ("/world/list/*", false),
            ("/world/list/01", false),
            ("/world/list/3", false),
            ("/world/5", true),
            ("/world/70000", true),
            ("/world/dup", true),
            ("/world/*", false),
            ("/world/s/*", true),
            ("/world/s/x", false),
            ("/world/missing", false),
        ] {
            let steps = map_at(path);
            assert_eq!(
                same_both_ways(&[("0002_m.json", &steps)], &tricky),
                fast,
                "{path}"
            );
        }

        // Another operation on the memento, a wildcard memento or a Rust step: the tree.
        let moved = r#"[{"op": "move", "from": "/player/hp", "path": "/world/hp"}]"#;
        assert!(!same_both_ways(
            &[("0002_k.json", KINDS), ("0003_m.json", moved)],
            &both(&world)
        ));
        let any = r#"[{"op": "map", "path": "/*/kind", "table": {}}]"#;
        assert!(!same_both_ways(
            &[("0002_k.json", KINDS), ("0003_a.json", any)],
            &both(&world)
        ));
        let player_only = r#"[{"op": "move", "from": "/player/hp", "path": "/player/health"}]"#;
        assert!(same_both_ways(
            &[("0002_k.json", KINDS), ("0003_p.json", player_only)],
            &both(&world)
        ));
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    #[test]
    fn bytes_not_in_their_shortest_form_go_through_the_tree() {
        const MAP: &str = r#"[{"op": "map", "path": "/w/*/k", "table": {"a": 1}, "default": 0}]"#;
        // [{"k": "a", "v": <value>}] with `value` as raw bytes.
        let with = |value: &[u8]| {
            let mut b = vec![0x91, 0x82, 0xa1, b'k', 0xa1, b'a', 0xa1, b'v'];
            b.extend_from_slice(value);
            vec![("w", b)]
        };
        let shortest: [&[u8]; 12] = [
            &[0x7f],
            &[0xe0],
            &[0xcc, 0x80],
            &[0xcd, 0x01, 0x00],
            &[0xce, 0x00, 0x01, 0x00, 0x00],
            &[0xcf, 0, 0, 0, 1, 0, 0, 0, 0],
            &[0xd0, 0xdf],
            &[0xd1, 0xff, 0x7f],
            &[0xd2, 0xff, 0xff, 0x7f, 0xff],
            &[0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff],
            &[0xca, 0x7f, 0xc0, 0x00, 0x01],
            &[0xc4, 0x00],
        ];
        for value in shortest {
            assert!(
                same_both_ways(&[("0002_m.json", MAP)], &with(value)),
                "{value:x?}"
            );
        }
        let longer: [&[u8]; 14] = [
            &[0xcc, 0x7f],
            &[0xcd, 0x00, 0xff],
            &[0xce, 0x00, 0x00, 0xff, 0xff],
            &[0xcf, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
            &[0xd0, 0xe0],
            &[0xd0, 0x05],
            &[0xd1, 0xff, 0x80],
            &[0xd2, 0xff, 0xff, 0x80, 0x00],
            &[0xd3, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0],
            &[0xd9, 0x01, b'a'],
            &[0xdc, 0x00, 0x00],
            &[0xde, 0x00, 0x00],
            &[0xc5, 0x00, 0x00],
            &[0xd4, 0x01, 0x02],
        ];
        for value in longer {
            assert!(
                !same_both_ways(&[("0002_m.json", MAP)], &with(value)),
                "{value:x?}"
            );
        }
        // Damage: truncated, trailing bytes, invalid UTF-8, the unused marker.
        for bytes in [
            vec![0x91, 0x82, 0xa1, b'k'],
            vec![0x90, 0x00],
            vec![0x91, 0x81, 0xa1, b'k', 0xa1, 0xff],
            vec![0x91, 0x81, 0xa1, b'k', 0xc1],
        ] {
            assert!(!same_both_ways(&[("0002_m.json", MAP)], &[("w", bytes)]));
        }
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            prop::sample::select(vec!["k", "a", "tree", "*", "1"]).prop_map(Value::from),
            (0u64..3).prop_map(Value::from),
            Just(Value::Null),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-200i64..300).prop_map(Value::from),
            any::<f32>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop::sample::select(vec!["a", "tree", "k", "é", ""]).prop_map(Value::from),
            (0usize..300).prop_map(|n| Value::from("y".repeat(n))),
            prop::collection::vec(any::<u8>(), 0..3).prop_map(Value::Bytes),
        ];
        leaf.prop_recursive(4, 48, 20, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..20).prop_map(Value::Map),
            ]
        })
    }

    #[cfg(all(feature = "json", feature = "msgpack"))]
    proptest::proptest! {
        #[test]
        fn mapping_on_the_bytes_gives_what_the_tree_gives_for_any_value(
            value in any_value(),
            tokens in proptest::collection::vec(
                proptest::sample::select(vec!["*", "k", "0", "1", "~2", "tree"]), 0..4),
            default in proptest::option::of(proptest::sample::select(vec!["0", "[1]", "null"])),
            damage in proptest::option::of((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>())),
        ) {
            let path: String = tokens.iter().map(|t| format!("/{t}")).collect();
            let default = default.map(|d| format!(r#", "default": {d}"#)).unwrap_or_default();
            let steps = format!(
                r#"[{{"op": "map", "path": "/w{path}", "table": {{"a": 1, "tree": "x", "1": [2],
                    "true": {{"b": 2.5}}, "null": "n"}}{default}}}]"#
            );
            let mut bytes = mp(&value);
            if let Some((at, byte)) = damage {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            same_both_ways(&[("0002_m.json", &steps)], &[("w", bytes), ("o", mp(&value))]);
        }
    }

    #[cfg(feature = "json")]
    #[test]
    fn a_failing_step_names_itself_its_version_and_the_path() {
        let m = Migrations::new()
            .declarative(
                "0002_rename.json",
                r#"[{"op":"move","from":"/p/hp","path":"/p/health"}]"#,
            )
            .unwrap();
        let mut doc = Document::new();
        doc.insert("p", Value::map());
        match m.run(&mut doc, 1, 2).unwrap_err() {
            Error::Migration {
                step,
                version,
                source,
            } => {
                assert_eq!((step.as_str(), version), ("rename", 2));
                assert_eq!(source.path, "/p/hp");
                assert!(source.reason.contains("op 0 (move)"), "{}", source.reason);
            }
            other => panic!("{other}"),
        }
    }
}
