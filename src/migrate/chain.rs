//! The migration chain: [`Migrations`] and its steps, whole-document ([`Step`]) and
//! per-memento ([`MementoStep`]), built with [`Migrations::step`] and
//! [`Migrations::memento_step`], checked for gaps and duplicates ([`Migrations::check`]), and
//! the path of steps from one version to another ([`Migrations::plan`]). Declarative steps
//! come from [`step_file`](super::step_file); running the chain is [`run`](super::run)'s.

use std::fmt;
use std::sync::Arc;

use super::document::Document;
use super::error::MigrationError;
#[cfg(feature = "json")]
use super::patch::PatchOp;
use super::value::Value;
use crate::error::{Error, Result};

/// A Rust migration step: edits the document in place.
pub type StepFn = dyn Fn(&mut Document) -> Result<(), MigrationError> + Send + Sync;

/// A per-memento migration step: edits one memento in place.
pub type MementoStepFn = dyn Fn(&mut Value) -> Result<(), MigrationError> + Send + Sync;

/// A step of one originator's memento, from one memento version to the next.
#[derive(Clone)]
pub(super) struct MementoStep {
    pub(super) id: String,
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) f: Arc<MementoStepFn>,
}

#[derive(Clone)]
pub(super) enum Action {
    Rust(Arc<StepFn>),
    #[cfg(feature = "json")]
    Patch {
        file: String,
        ops: Vec<PatchOp>,
    },
}

#[derive(Clone)]
pub(super) struct Step {
    pub(super) version: u32,
    pub(super) name: String,
    pub(super) action: Action,
    pub(super) checksum: Option<String>,
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
    pub(super) steps: Vec<Step>,
    pub(super) memento_steps: Vec<MementoStep>,
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
    pub(super) fn chain_of(&self, id: &str) -> Option<&str> {
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

    /// The steps that take a save from version `from` to `to`, in order.
    ///
    /// # Errors
    /// [`Error::NoMigrationPath`] when a step is missing.
    pub fn plan(&self, from: u32, to: u32) -> Result<Vec<StepInfo>> {
        Ok(self.path(from, to)?.into_iter().map(Step::info).collect())
    }

    pub(super) fn path(&self, from: u32, to: u32) -> Result<Vec<&Step>> {
        (from.saturating_add(1)..=to)
            .map(|v| {
                self.steps
                    .iter()
                    .find(|s| s.version == v)
                    .ok_or(Error::NoMigrationPath { from, to })
            })
            .collect()
    }
}

impl Step {
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
