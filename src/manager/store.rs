//! [`Store`]: typed values by key, for settings and profiles, in one file of their own.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::Engine;
use super::files::Files;
use super::journal::Journals;
use super::locks::{lock, lock_slot};
use super::report::SaveReport;
use crate::error::{Error, Result};
use crate::migrate::Migrations;
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// Typed values by key (volume, key bindings, the last profile played), persisted
/// crash-safely in a file of their own, `store.kv`, beside the slots.
///
/// Every change is written at once: [`set`](Self::set), [`remove`](Self::remove) and
/// [`edit`](Self::edit) return once the new file is durable, as a
/// [`save`](crate::SaveLoadManager::save) does. The file is a save file like any other: the
/// manager's storage, key, codec and backups, checked by its CRC32 and its AES-GCM tag, and
/// migrated on open by the store's own schema version and steps
/// ([`StoreOptions`]). It is never a slot: [`list`](crate::SaveLoadManager::list) and the
/// autosave rotation never show it.
///
/// Use a store for what belongs to the player or the machine rather than to one playthrough
/// (settings, profiles, unlocks across saves); use a slot for a game in progress, which the
/// player picks from a menu, copies and deletes.
///
/// ```
/// use savegame::SaveLoadManager;
///
/// # let dir = tempfile::tempdir().unwrap();
/// let manager = SaveLoadManager::builder().directory(dir.path()).build()?;
/// let settings = manager.store()?;
/// settings.set("volume", &0.8f32)?;
/// settings.set("profile/alice/difficulty", &"hard")?;
/// assert_eq!(settings.get::<f32>("volume")?, Some(0.8));
///
/// // Another run of the game.
/// let again = manager.store()?;
/// assert_eq!(again.get::<String>("profile/alice/difficulty")?.as_deref(), Some("hard"));
/// assert!(manager.list()?.is_empty(), "a store is not a slot");
/// # Ok::<(), savegame::Error>(())
/// ```
pub struct Store {
    engine: Engine,
    values: Mutex<Snapshot>,
}

/// The schema of a [`Store`]'s values, apart from the game's saves: its own version and
/// migration steps, so settings evolve on their own.
#[derive(Clone, Default)]
pub struct StoreOptions {
    schema_version: Option<u32>,
    migrations: Migrations,
}

impl StoreOptions {
    /// The store's schema version (default 1). A store file at an older version is migrated
    /// by [`migrations`](Self::migrations) when it is opened; one at a newer version is
    /// refused with [`Error::NewerSchema`], and never overwritten.
    #[must_use]
    pub fn schema_version(mut self, version: u32) -> Self {
        self.schema_version = Some(version);
        self
    }

    /// The steps that bring an older store file up to the store's schema version. Each key is
    /// a memento of the document they see.
    #[must_use]
    pub fn migrations(mut self, migrations: Migrations) -> Self {
        self.migrations = migrations;
        self
    }
}

impl fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreOptions")
            .field("schema_version", &self.schema_version.unwrap_or(1))
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store of the manager whose engine is `manager`: its file loaded (with backup
    /// fallback and migration), or empty when there is none.
    pub(super) fn open(manager: &Engine, options: StoreOptions) -> Result<Store> {
        let schema_version = options.schema_version.unwrap_or(1);
        if schema_version == 0 {
            return Err(Error::Config {
                reason: "schema versions start at 1".into(),
            });
        }
        options.migrations.check(schema_version)?;
        let files = &manager.files;
        let engine = Engine {
            files: Files {
                storage: Arc::clone(&files.storage),
                key: files.key.clone(),
                allow_unencrypted: files.allow_unencrypted,
                integrity_only: files.integrity_only,
                schema_version,
                max_file_size: files.max_file_size,
                compression: files.compression,
                threads: files.threads,
            },
            codec: manager.codec,
            migrations: options.migrations,
            backups: manager.backups,
            autosave_slots: 1,
            compact_percent: manager.compact_percent,
            journals: Journals::default(),
            autosave_lock: Mutex::default(),
            verified: Default::default(),
        };
        let values = read(&engine, |engine| engine.load(SlotId::Store))?;
        Ok(Store {
            engine,
            values: Mutex::new(values),
        })
    }

    /// The value under `key`, decoded as a `T`: `None` when there is none.
    ///
    /// # Errors
    /// [`Error::Decode`] when the stored value is not a `T`.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let values = lock(&self.values);
        if !values.contains(key) {
            return Ok(None);
        }
        values.memento(key).map(Some)
    }

    /// Whether there is a value under `key`.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        lock(&self.values).contains(key)
    }

    /// Every key, in order.
    #[must_use]
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = lock(&self.values).ids().map(str::to_owned).collect();
        keys.sort();
        keys
    }

    /// Stores `value` under `key`, durably.
    ///
    /// # Errors
    /// [`Error::Encode`] for a value the codec cannot encode; whatever
    /// [`save`](crate::SaveLoadManager::save) returns (a full disk, say). The store, in memory
    /// and on disk, is then as it was.
    pub fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<SaveReport> {
        self.edit(|values| values.capture_memento(key, value))
    }

    /// Removes the value under `key`, durably: whether there was one.
    ///
    /// # Errors
    /// As [`set`](Self::set).
    pub fn remove(&self, key: &str) -> Result<bool> {
        let mut had = false;
        if !self.contains(key) {
            return Ok(false);
        }
        self.edit(|values| {
            had = values.remove(key);
            Ok(())
        })?;
        Ok(had)
    }

    /// Makes several changes, written as one: `f` edits the values as a [`Snapshot`] (one
    /// memento per key: [`capture_memento`](Snapshot::capture_memento),
    /// [`remove`](Snapshot::remove)). Either all of them are durable when this returns `Ok`, or
    /// none is made.
    ///
    /// # Errors
    /// `f`'s error, or as [`set`](Self::set). The store is then as it was.
    ///
    /// The change is made to the store as it is on disk, read again under the store's lock:
    /// two `Store`s of one folder (two threads, or two processes on `FsStorage`) never undo
    /// each other's changes.
    pub fn edit(&self, f: impl FnOnce(&mut Snapshot) -> Result<()>) -> Result<SaveReport> {
        let mut values = lock(&self.values);
        let held = lock_slot(&self.engine.files, &SlotId::Store.file_name())?;
        let mut next = read(&self.engine, |engine| {
            engine.load_locked(SlotId::Store, &held)
        })?;
        f(&mut next)?;
        let report = self.engine.save_locked(SlotId::Store, &next)?;
        *values = next;
        Ok(report)
    }

    /// Reads the store's file again, for changes another `Store` of the folder made.
    ///
    /// # Errors
    /// As [`load`](crate::SaveLoadManager::load), except that a missing file is an empty store.
    pub fn reload(&self) -> Result<()> {
        // Checked as a slot's load is: a change another store is writing meanwhile is never
        // taken for damage.
        let fresh = read(&self.engine, |engine| engine.load(SlotId::Store))?;
        *lock(&self.values) = fresh;
        Ok(())
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field(
                "path",
                &self.engine.files.storage.locate(&SlotId::Store.file_name()),
            )
            .field("keys", &lock(&self.values).len())
            .finish_non_exhaustive()
    }
}

/// The store's values as `load` gives them: empty when it has no file yet.
fn read(
    engine: &Engine,
    load: impl FnOnce(&Engine) -> Result<super::report::Loaded>,
) -> Result<Snapshot> {
    match load(engine) {
        Ok(loaded) => Ok(loaded.snapshot),
        Err(Error::SlotEmpty { .. }) => Ok(Snapshot::new(engine.codec)),
        Err(e) => Err(e),
    }
}
