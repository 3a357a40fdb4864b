//! [`Fixtures`]: a save of the game's sample state at every version it had, written once each
//! into a folder of the game's repository and never overwritten, and a check that every one of
//! them still loads, through the game's migration steps, into its current state.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::file::file_name;
use super::report::{Failure, Problem};
use crate::manager::{LoadReport, ManagerBuilder, SaveLoadManager};
use crate::slot::SlotId;
use crate::state::{MementoTypes, RestoreReport, SaveState};

/// The slot every fixture is written for and installed into (a save's header names its slot).
const SLOT: SlotId = SlotId::Numbered(1);

/// Fixtures of a game's saves, written by its own tests: one save of the sample state for
/// each combination of versions (the schema version, and each memento's) the game has had.
///
/// ```no_run
/// use savegame::schema::Fixtures;
/// # use savegame::{Originator, SaveState};
/// # #[derive(Originator, Default)] struct Player { health: u32 }
/// # #[derive(SaveState, Default)] struct Game { player: Player }
/// # impl Game { fn sample() -> Game { Game::default() } }
/// # fn migrations() -> savegame::Migrations { savegame::Migrations::new() }
///
/// fn fixtures() -> Fixtures {
///     // The settings the game's manager is built with (but its folder).
///     Fixtures::new("fixtures/saves", |builder| {
///         builder.schema_version(3).migrations(migrations())
///     })
/// }
///
/// #[test]
/// fn a_save_of_this_version_is_committed() {
///     fixtures().write_missing(&Game::sample()).unwrap();
/// }
///
/// #[test]
/// fn every_fixture_ever_written_still_loads() {
///     fixtures().load_all(Game::default).unwrap();
/// }
/// ```
///
/// A fixture is named after its versions: `sample-s3.sav` when every memento is at version 1,
/// `sample-s3-player.v2.sav` when `player` is at 2 (ids written as in schema file names). The
/// folder is the kit's: [`load_all`](Self::load_all) loads every `*.sav` in it.
pub struct Fixtures {
    dir: PathBuf,
    configure: Box<dyn Fn(ManagerBuilder) -> ManagerBuilder>,
    write: Option<bool>,
}

impl std::fmt::Debug for Fixtures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixtures")
            .field("dir", &self.dir)
            .field("write", &self.write)
            .finish_non_exhaustive()
    }
}

/// One fixture that loaded.
#[derive(Debug)]
#[non_exhaustive]
pub struct FixtureReport {
    /// The fixture.
    pub file: PathBuf,
    /// How it loaded (its schema version; whether it was migrated).
    pub load: LoadReport,
    /// How the state and the fixture matched.
    pub restore: RestoreReport,
}

/// A fresh folder under the system's temporary folder, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "savegame-fixtures-{}-{n}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Fixtures {
    /// Fixtures in `dir` (relative to the current folder: a test's is its package's), saved and
    /// loaded by managers that `configure` sets up as the game's is: its key, codec, schema
    /// version, migrations. The kit gives it a builder with a folder of its own.
    #[must_use]
    pub fn new(
        dir: impl Into<PathBuf>,
        configure: impl Fn(ManagerBuilder) -> ManagerBuilder + 'static,
    ) -> Fixtures {
        Fixtures {
            dir: dir.into(),
            configure: Box::new(configure),
            write: None,
        }
    }

    /// Write a missing fixture (`true`), or only check that it is there (`false`). Default:
    /// write, except in CI (see [`Guard`](super::Guard)).
    #[must_use]
    pub fn write_files(mut self, write: bool) -> Fixtures {
        self.write = Some(write);
        self
    }

    fn manager(&self, dir: &Path) -> Result<SaveLoadManager, String> {
        (self.configure)(SaveLoadManager::builder().directory(dir))
            .build()
            .map_err(|e| format!("cannot build the manager: {e}"))
    }

    fn failure(&self, problems: Vec<Problem>) -> Failure {
        Failure {
            dir: self.dir.clone(),
            problems,
            notes: Vec::new(),
        }
    }

    fn file_problem(&self, path: &Path, reason: impl Into<String>) -> Failure {
        self.failure(vec![Problem::File {
            path: path.to_path_buf(),
            reason: reason.into(),
        }])
    }

    /// The fixture's name for `sample` at `schema_version`.
    fn name_for<S: SaveState + ?Sized>(schema_version: u32, sample: &S) -> Result<String, String> {
        let mut types = MementoTypes::new();
        match sample.memento_types(&mut types) {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "{} cannot list its memento types (SaveState::memento_types), which name \
                     the fixture",
                    std::any::type_name::<S>()
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
        let mut versions: Vec<(String, u32)> = Vec::new();
        for t in types.iter() {
            let v = t
                .version()
                .ok_or_else(|| t.version_problem().unwrap_or_default().to_owned())?;
            if v != 1 {
                // The id part of a schema file's name.
                let name = file_name(t.id(), 1, v);
                versions.push((name.trim_end_matches(".json").to_owned(), v));
            }
        }
        versions.sort();
        let mut name = format!("sample-s{schema_version}");
        for (part, _) in &versions {
            let _ = write!(name, "-{part}");
        }
        if name.len() > 160 {
            let all: String = versions.iter().map(|(p, _)| p.as_str()).collect();
            name = format!(
                "sample-s{schema_version}-~{}",
                crate::migrate::checksum(all.as_bytes())
            );
        }
        name.push_str(".sav");
        Ok(name)
    }

    /// Makes sure the folder holds a save of `sample` at the game's current versions: writes
    /// one if none is there (never over an existing file) and fails once, saying so, for the
    /// developer to commit it; passes when it is there.
    ///
    /// # Errors
    /// [`Failure`] with [`Problem::Written`] when it wrote the fixture, [`Problem::Missing`]
    /// when it is missing and this run writes nothing (CI), [`Problem::File`] when the save or
    /// the copy failed.
    pub fn write_missing<S: SaveState + Sync + ?Sized>(&self, sample: &S) -> Result<(), Failure> {
        let scratch = Scratch::new().map_err(|e| self.file_problem(&self.dir, e.to_string()))?;
        let manager = self
            .manager(&scratch.0)
            .map_err(|e| self.file_problem(&self.dir, e))?;
        let name = Self::name_for(manager.schema_version(), sample)
            .map_err(|e| self.file_problem(&self.dir, e))?;
        let path = self.dir.join(&name);
        if path.exists() {
            return Ok(());
        }
        let write = self.write.unwrap_or_else(|| !super::guard::in_ci());
        if !write {
            return Err(self.failure(vec![Problem::Missing {
                id: String::new(),
                file: path,
            }]));
        }
        manager
            .save_state(SLOT, sample)
            .map_err(|e| self.file_problem(&path, format!("cannot save the sample: {e}")))?;
        let bytes = std::fs::read(manager.path_of(SLOT))
            .map_err(|e| self.file_problem(&path, e.to_string()))?;
        std::fs::create_dir_all(&self.dir)
            .and_then(|()| {
                use std::io::Write as _;
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                file.write_all(&bytes)?;
                file.sync_all()
            })
            .map_err(|e| self.file_problem(&path, e.to_string()))?;
        Err(self.failure(vec![Problem::Written {
            id: String::new(),
            file: path,
            why: format!(
                "a save of the sample state at schema version {}, for every later version of \
                 the game to load",
                manager.schema_version()
            ),
        }]))
    }

    /// Loads every fixture of the folder (every `*.sav`) into a fresh state from `fresh`,
    /// through the game's migration steps, as the game would load a player's old save.
    ///
    /// # Errors
    /// [`Failure`] listing each fixture that did not load ([`Problem::File`] with the error),
    /// or saying the folder has none.
    pub fn load_all<S: SaveState>(
        &self,
        fresh: impl Fn() -> S,
    ) -> Result<Vec<FixtureReport>, Failure> {
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "sav"))
                .collect(),
            Err(e) => return Err(self.file_problem(&self.dir, e.to_string())),
        };
        paths.sort();
        if paths.is_empty() {
            return Err(self.file_problem(
                &self.dir,
                "holds no fixture: Fixtures::write_missing writes the first",
            ));
        }
        let mut loaded = Vec::new();
        let mut problems = Vec::new();
        for path in paths {
            match self.load_one(&path, &fresh) {
                Ok(report) => loaded.push(report),
                Err(reason) => problems.push(Problem::File { path, reason }),
            }
        }
        if problems.is_empty() {
            Ok(loaded)
        } else {
            Err(self.failure(problems))
        }
    }

    fn load_one<S: SaveState>(
        &self,
        path: &Path,
        fresh: &impl Fn() -> S,
    ) -> Result<FixtureReport, String> {
        let scratch = Scratch::new().map_err(|e| e.to_string())?;
        let manager = self.manager(&scratch.0)?;
        std::fs::copy(path, manager.path_of(SLOT)).map_err(|e| e.to_string())?;
        let mut state = fresh();
        let loaded = manager
            .load_state(SLOT, &mut state)
            .map_err(|e| format!("does not load: {e}"))?;
        Ok(FixtureReport {
            file: path.to_path_buf(),
            load: loaded.report,
            restore: loaded.restore,
        })
    }
}
