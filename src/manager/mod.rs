//! The caretaker: [`SaveLoadManager`] saves snapshots to slots (at once, in the background, or
//! incrementally), loads them back, and lists them.

mod autosave;
mod background;
pub mod backups;
mod engine;
mod files;
mod journal;
mod locks;
mod menu;
mod profile;
mod report;
mod store;
mod streamed;
mod sync;
mod tracking;
mod verified;
mod worker;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use background::Background;
pub use background::{SaveHandle, SaveStatus};
use engine::Engine;
use files::Files;
use journal::Journals;
pub use menu::{SlotInfo, SlotStatus};
pub use profile::SaveProfile;
pub use report::{DeltaReport, LoadReport, Loaded, MigrationPlan, SaveReport};
pub use store::{Store, StoreOptions};
pub use sync::FileStamp;
pub use tracking::{ChangesReport, StateLoaded, Written};

use crate::codec::Codec;
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::Key;
use crate::migrate::Migrations;
use crate::slot::SlotId;
use crate::snapshot::Snapshot;
use crate::storage::{FsStorage, Storage};

pub use crate::format::DEFAULT_MAX_FILE_SIZE;
/// How many autosave slots the rotation has by default.
pub const DEFAULT_AUTOSAVE_SLOTS: u32 = 3;
/// By default a slot's journal is compacted into a new base once it grows past this share of
/// the base, in percent.
pub const DEFAULT_COMPACT_PERCENT: u32 = 50;

/// Where the manager keeps its files.
#[derive(Debug)]
enum Location {
    Dir(PathBuf),
    App {
        qualifier: String,
        organization: String,
        application: String,
    },
    Storage(Arc<dyn Storage>),
}

/// Builds a [`SaveLoadManager`]; see [`SaveLoadManager::builder`].
#[derive(Debug)]
#[must_use]
pub struct ManagerBuilder {
    location: Option<Location>,
    codec: Codec,
    key: Option<Key>,
    /// The key of [`integrity_only`](Self::integrity_only): kept apart from `key`, so that a
    /// builder given both is an error at `build()`, not the last one silently winning.
    integrity_key: Option<Key>,
    allow_unencrypted: bool,
    schema_version: u32,
    migrations: Migrations,
    backups: u32,
    max_file_size: u64,
    compression: Compression,
    autosave_slots: u32,
    compact_percent: u32,
    threads: Option<usize>,
}

impl ManagerBuilder {
    /// Keep saves in this folder (created if missing).
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.location = Some(Location::Dir(dir.into()));
        self
    }

    /// Keep saves in the platform's data folder for this game, in a `saves` folder inside it
    /// (through `directories::ProjectDirs`). On Linux that is
    /// `~/.local/share/<application>/saves`; on Windows
    /// `%APPDATA%\<organization>\<application>\data\saves`; on macOS
    /// `~/Library/Application Support/<qualifier>.<organization>.<application>/saves`.
    pub fn app(
        mut self,
        qualifier: impl Into<String>,
        organization: impl Into<String>,
        application: impl Into<String>,
    ) -> Self {
        self.location = Some(Location::App {
            qualifier: qualifier.into(),
            organization: organization.into(),
            application: application.into(),
        });
        self
    }

    /// Keep saves in a storage of your own (a [`MemoryStorage`](crate::storage::MemoryStorage),
    /// a cloud or console backend, an [`FsStorage`] over a simulated file system).
    pub fn storage(mut self, storage: impl Storage) -> Self {
        self.location = Some(Location::Storage(Arc::new(storage)));
        self
    }

    /// The codec of new snapshots ([`SaveLoadManager::snapshot`]). Loading reads whichever
    /// codec a file was written with. Default: MessagePack (JSON without the `msgpack` feature).
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Encrypt saves with this key, and decrypt with it. Without a key, saves are written in
    /// the clear (still checksummed), and encrypted saves are refused with
    /// [`Error::KeyRequired`]. With it, only encrypted files are opened: plain ones are
    /// refused ([`Error::NotEncrypted`]) unless [`allow_unencrypted`](Self::allow_unencrypted),
    /// integrity-only ones always ([`Error::ProtectionMismatch`]); see
    /// [`Trust`](crate::format::Trust). In a build without the `encryption` feature, every
    /// save and every load of an encrypted file with a key fails with
    /// [`Error::FeatureDisabled`]. A builder given this and
    /// [`integrity_only`](Self::integrity_only) fails to build ([`Error::Config`]).
    pub fn key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// Authenticate saves with this key instead of encrypting them (integrity-only mode, the
    /// `integrity` feature): the body stays readable JSON or MessagePack, and an HMAC-SHA256
    /// tag over the whole file makes any edit, even one with a recomputed CRC, fail to load
    /// with [`Error::Tampered`]. For games whose saves players (or modders, or support) may
    /// read but must not change. Only integrity-only files are opened: plain ones are refused
    /// ([`Error::NotEncrypted`]) unless [`allow_unencrypted`](Self::allow_unencrypted), and
    /// encrypted ones always ([`Error::ProtectionMismatch`]), so an integrity-only file whose
    /// flag was cleared (its CRC fixed) is never taken for a plain one. A manager without the
    /// key refuses integrity-only files ([`Error::KeyRequired`]); tools read them unchecked
    /// with [`Snapshot::open_file_unverified`]. Replays recorded by a recorder set up with
    /// [`SaveLoadManager::profile`] are encrypted with the key (replays have no integrity-only
    /// form). In a build without the `integrity` feature, every save and every
    /// load of an integrity-only file with a key fails with [`Error::FeatureDisabled`].
    /// A builder given this and [`key`](Self::key) fails to build ([`Error::Config`]).
    pub fn integrity_only(mut self, key: Key) -> Self {
        self.integrity_key = Some(key);
        self
    }

    /// With a key, also load plain saves (written by a development build without a key, say).
    /// Off by default: otherwise a player could replace a sealed save with a forged plain one,
    /// which has only a CRC to check. A save sealed in the other mode than the key's stays
    /// refused.
    pub fn allow_unencrypted(mut self, allow: bool) -> Self {
        self.allow_unencrypted = allow;
        self
    }

    /// The game's current save-schema version (default 1). Saves record it; saves with a
    /// newer version are refused and never overwritten.
    pub fn schema_version(mut self, version: u32) -> Self {
        self.schema_version = version;
        self
    }

    /// The steps that bring older saves up to the current schema version (see
    /// [`migrate`](crate::migrate)). The chain is checked by [`build`](Self::build).
    pub fn migrations(mut self, migrations: Migrations) -> Self {
        self.migrations = migrations;
        self
    }

    /// How many previous saves of each slot to keep as backups (default 1; 0 keeps none).
    pub fn backups(mut self, count: u32) -> Self {
        self.backups = count;
        self
    }

    /// The largest save file the manager writes or reads (default 256 MiB). Larger files are
    /// refused before they are read.
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Compress every file the manager writes (saves, deltas, the store) before it is sealed
    /// (default [`Compression::None`]). Loading reads any file, compressed or not, whatever
    /// this says; a compressed body's decompressed size is capped at
    /// [`max_file_size`](Self::max_file_size) ([`Error::DecompressedTooLarge`]).
    ///
    /// ```
    /// # #[cfg(feature = "lz4")] {
    /// use savegame::{Compression, SaveLoadManager};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let manager = SaveLoadManager::builder()
    ///     .directory(dir.path())
    ///     .compression(Compression::Lz4)
    ///     .build()?;
    /// # }
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// How many slots the autosave rotation uses (default 3): `autosave-1.sav` to
    /// `autosave-N.sav`, kept apart from the numbered slots.
    pub fn autosave_slots(mut self, count: u32) -> Self {
        self.autosave_slots = count;
        self
    }

    /// How many threads a save or a load may use at once (default: as many as the machine has
    /// cores, [`std::thread::available_parallelism`]). A snapshot of many captured mementos (a
    /// world in chunks, a registry's entities) is encoded on that many scoped threads, the
    /// saving thread among them, then assembled; an encrypted file's segments (256 KiB each)
    /// are encrypted, and decrypted on a load, on that many; a
    /// [`save_state`](SaveLoadManager::save_state) of many members encodes them by reference
    /// on that many, the saving thread among them; a Zstandard document over 1 MiB is
    /// compressed 512 KiB at a time on that many as it is encoded. The file's bytes are the
    /// same as with one. The threads are started by the save or load and end with it: a
    /// background save's run beside its worker, never on the game thread's time, and no pool
    /// is left behind. Where no thread can be started, the saving or loading thread does the
    /// work itself. With 1 (or one memento to encode) each memento is encoded straight into
    /// the file's buffer, which uses the least memory. 0 is taken as 1.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// Compact a slot's journal of incremental saves into a new base once the journal is
    /// larger than `percent` percent of the base (default 50).
    pub fn compact_at(mut self, percent: u32) -> Self {
        self.compact_percent = percent;
        self
    }

    /// Builds the manager, creating the save folder if needed.
    ///
    /// # Errors
    /// [`Error::Config`] when no location was given, the platform has no data folder, the
    /// schema version is 0, there are no autosave slots, or both a [`key`](Self::key) and
    /// [`integrity_only`](Self::integrity_only) were given; [`Error::MigrationChain`] when the
    /// migration steps do not lead to the schema version; [`Error::Io`] when the folder cannot
    /// be created; [`Error::FeatureDisabled`] when the [compression](Self::compression) needs a
    /// feature this build lacks, [`Error::Config`] for a zstd level zstd does not have.
    pub fn build(self) -> Result<SaveLoadManager> {
        self.compression.check()?;
        if self.schema_version == 0 {
            return Err(Error::Config {
                reason: "schema versions start at 1".into(),
            });
        }
        if self.autosave_slots == 0 {
            return Err(Error::Config {
                reason: "the autosave rotation needs at least one slot".into(),
            });
        }
        self.migrations.check(self.schema_version)?;
        let (key, integrity_only) = match (self.key, self.integrity_key) {
            (Some(_), Some(_)) => {
                return Err(Error::Config {
                    reason: "both key() and integrity_only() were given: a manager seals its \
                             files in one mode"
                        .into(),
                });
            }
            (Some(key), None) => (Some(key), false),
            (None, Some(key)) => (Some(key), true),
            (None, None) => (None, false),
        };
        let storage: Arc<dyn Storage> = match self.location {
            None => {
                return Err(Error::Config {
                    reason: "no save location: call directory(), app() or storage()".into(),
                });
            }
            Some(Location::Dir(dir)) => Arc::new(FsStorage::new(dir)?),
            Some(Location::App {
                qualifier,
                organization,
                application,
            }) => {
                let dirs = directories::ProjectDirs::from(&qualifier, &organization, &application)
                    .ok_or_else(|| Error::Config {
                        reason: "this platform has no data folder for the current user".into(),
                    })?;
                Arc::new(FsStorage::new(dirs.data_dir().join("saves"))?)
            }
            Some(Location::Storage(storage)) => storage,
        };
        Ok(SaveLoadManager {
            engine: Arc::new(Engine {
                files: Files {
                    storage,
                    key,
                    integrity_only,
                    allow_unencrypted: self.allow_unencrypted,
                    schema_version: self.schema_version,
                    max_file_size: self.max_file_size,
                    compression: self.compression,
                    threads: self.threads.unwrap_or_else(|| {
                        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
                    }),
                },
                codec: self.codec,
                migrations: self.migrations,
                backups: self.backups,
                autosave_slots: self.autosave_slots,
                compact_percent: self.compact_percent,
                journals: Journals::default(),
                autosave_lock: Mutex::default(),
                verified: Default::default(),
            }),
            background: Background::new(),
            baselines: Arc::default(),
        })
    }
}

/// The caretaker: saves [`Snapshot`]s to slots, loads them back, lists slots for a load menu.
///
/// Build one per game with [`SaveLoadManager::builder`]. It is `Send + Sync`; share it by
/// reference or in an `Arc`.
///
/// | to | call | the game thread pays |
/// |---|---|---|
/// | save now (a menu, a checkpoint) | [`save`](Self::save) | capture, encoding, sealing, the fsync'd write |
/// | save without a stall | [`save_in_background`](Self::save_in_background) | capture and a hand-off; a worker thread does the rest |
/// | save with only a copy on the game thread | [`save_in_background_with`](Self::save_in_background_with) | what it moves into the closure; the worker captures |
/// | save what changed in a big world | [`save_incremental`](Self::save_incremental) | capture of the changed mementos, encoding them, an fsync'd append |
/// | append what changed, without a stall | [`save_incremental_in_background`](Self::save_incremental_in_background), [`save_incremental_in_background_with`](Self::save_incremental_in_background_with) | capture of the changed mementos (or what it moves into the closure) and a hand-off |
/// | append a state's dirty members, without a stall | [`save_state_incremental_in_background`](Self::save_state_incremental_in_background) | a clone of each member the game marked dirty, and a hand-off |
/// | autosave | [`autosave`](Self::autosave), [`autosave_in_background`](Self::autosave_in_background) | as above; the rotation's oldest slot is reused |
/// | quicksave | [`save`](Self::save) to [`SlotId::Quicksave`] | as for `save` |
///
/// ```
/// use savegame::{Codec, SaveLoadManager, SlotId};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let manager = SaveLoadManager::builder()
///     .directory(dir.path())
///     .codec(Codec::Json)
///     .build()?;
///
/// let mut snapshot = manager.snapshot().with_label("Level 3");
/// snapshot.capture_memento("score", &1200u32)?;
/// manager.save(SlotId::Numbered(3), &snapshot)?;
///
/// let menu = manager.list()?;
/// assert_eq!(menu[0].label(), Some("Level 3"));
///
/// let loaded = manager.load(SlotId::Numbered(3))?;
/// assert_eq!(loaded.snapshot.memento::<u32>("score")?, 1200);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Debug)]
pub struct SaveLoadManager {
    engine: Arc<Engine>,
    background: Background,
    /// What each slot holds, for the dirty tracking of `save_state_incremental` (shared with
    /// the worker, which keeps it for background incremental state saves).
    baselines: Arc<tracking::Baselines>,
}

impl SaveLoadManager {
    /// A builder with the defaults: MessagePack, no key, schema version 1, one backup, a
    /// 256 MiB size cap, three autosave slots, compaction at 50%. A location (`directory`,
    /// `app` or `storage`) is required.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder {
            location: None,
            codec: if cfg!(feature = "msgpack") {
                Codec::MessagePack
            } else {
                Codec::Json
            },
            key: None,
            integrity_key: None,
            allow_unencrypted: false,
            schema_version: 1,
            migrations: Migrations::new(),
            backups: 1,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            compression: Compression::None,
            autosave_slots: DEFAULT_AUTOSAVE_SLOTS,
            compact_percent: DEFAULT_COMPACT_PERCENT,
            threads: None,
        }
    }

    /// The key-value store of this save folder ([`Store`]), at its default schema version 1.
    ///
    /// # Errors
    /// As [`load`](Self::load) of its file (a missing file is an empty store).
    pub fn store(&self) -> Result<Store> {
        self.store_with(StoreOptions::default())
    }

    /// The key-value store, with its own schema version and migration steps.
    ///
    /// # Errors
    /// As [`store`](Self::store); [`Error::Config`] or [`Error::MigrationChain`] for options
    /// that do not make a chain.
    pub fn store_with(&self, options: StoreOptions) -> Result<Store> {
        Store::open(&self.engine, options)
    }

    /// An empty snapshot in the manager's codec.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.engine.codec)
    }

    /// The storage the manager writes to.
    #[must_use]
    pub fn storage(&self) -> &dyn Storage {
        self.engine.files.storage.as_ref()
    }

    /// The game's current schema version.
    #[must_use]
    pub fn schema_version(&self) -> u32 {
        self.engine.files.schema_version
    }

    /// Where the primary file of `slot` is (or would be).
    #[must_use]
    pub fn path_of(&self, slot: SlotId) -> PathBuf {
        self.engine.files.storage.locate(&slot.file_name())
    }

    /// This manager's settings as one plain value: its codec, key (and what it asks for),
    /// schema version and migrations, for what writes or reads files beside it (a replay's
    /// recorder and player take it: `Recorder::builder().profile(&manager.profile())`).
    #[must_use]
    pub fn profile(&self) -> SaveProfile {
        let files = &self.engine.files;
        SaveProfile::new(
            self.engine.codec,
            files.schema_version,
            self.engine.migrations.clone(),
            files.key.clone(),
            files.integrity_only,
            files.allow_unencrypted,
        )
    }

    /// Saves `snapshot` to `slot`, crash-safely. When this returns `Ok`, the save is on disk
    /// (fsynced, renamed into place, folder fsynced).
    ///
    /// The slot's previous save, if it is sound, becomes its first backup. A damaged previous
    /// file is replaced without pushing the good backups out. A previous file written by a
    /// newer version of the game (newer schema or format) is never overwritten: the save is
    /// refused. A previous file at an older schema version (a save that was loaded and
    /// migrated) is first kept, byte for byte, as `<slot file>.v<old version>.bak`. The slot's
    /// journal of incremental saves, if any, ends: this save is its new base. A background save
    /// or delta to the same slot that has not started yet is dropped, as older, and one the
    /// worker is running is waited for, so that it never lands after this save.
    ///
    /// # Errors
    /// [`Error::NewerSchema`] or [`Error::UnsupportedFormat`] when the slot holds a newer save;
    /// [`Error::TooLarge`] when the file would exceed the size cap; [`Error::Encode`] when a
    /// captured memento cannot be encoded; [`Error::Io`] when writing fails (the previous save
    /// is then intact).
    pub fn save(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        self.background.supersede(slot);
        let report = self.engine.save(slot, snapshot)?;
        self.background.saved(slot);
        Ok(report)
    }

    /// Appends the mementos in `changes` (and the deletions marked with
    /// [`Snapshot::mark_deleted`]) to `slot`'s journal, as one delta on top of the slot's last
    /// full save. Capture only what changed since the last save of the slot (the entities your
    /// game marked dirty). A [`load`](Self::load) gives the base with every delta applied, in
    /// order; `changes`' metadata (label, playtime) becomes the slot's.
    ///
    /// The delta is sealed and checksummed like a full save, and durable when this returns.
    /// When the journal grows past its share of the base ([`ManagerBuilder::compact_at`]), the
    /// slot is compacted into a new base, crash-safely. A crash during an append leaves the
    /// slot as it was before it (a torn delta at the end is detected and dropped); a crash
    /// during a compaction leaves the state before or after it, which are the same.
    ///
    /// `changes` with no memento, no deletion and the metadata the slot shows already (its
    /// label, playtime, fields) write nothing, since an empty delta would only grow the
    /// journal: the report's `bytes` is 0.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when the slot has no full save yet; [`Error::FullSaveNeeded`] when
    /// its full save is damaged or at an older schema version (after a migration), or when a
    /// background save or delta to it failed since its last full save (see
    /// [`save_incremental_in_background`](Self::save_incremental_in_background)); as for
    /// [`save`](Self::save) otherwise.
    pub fn save_incremental(&self, slot: SlotId, changes: &Snapshot) -> Result<DeltaReport> {
        self.background.wait_for(slot);
        self.background.check_delta(slot)?;
        self.engine.save_incremental(slot, changes)
    }

    /// Merges `slot`'s journal of incremental saves into a new full save now.
    ///
    /// # Errors
    /// As for [`load`](Self::load) and [`save`](Self::save).
    pub fn compact(&self, slot: SlotId) -> Result<SaveReport> {
        self.background.wait_for(slot);
        let (report, merged) = self.engine.compact(slot)?;
        // The new base holds what the base and deltas held: fingerprints of them still stand.
        self.baselines.compacted(slot, merged, report.generation);
        Ok(report)
    }

    /// Saves `snapshot` to the autosave rotation: its first empty slot, or else the one
    /// written longest ago. A slot holding a save from a newer version of the game is skipped,
    /// never overwritten.
    ///
    /// # Errors
    /// As for [`save`](Self::save); [`Error::NewerSchema`] when every autosave slot holds a
    /// newer save.
    pub fn autosave(&self, snapshot: &Snapshot) -> Result<SaveReport> {
        let report = self.engine.autosave(snapshot)?;
        self.background.saved(report.slot);
        Ok(report)
    }

    /// Loads the save in `slot`: its base file and its journal of incremental saves.
    ///
    /// Everything is checked: the CRC, the header, the decryption, the table of contents. When
    /// the primary file is missing or damaged, the backups are tried, newest first, and the
    /// report says which one was used. A wrong key, a newer save or a file from another slot
    /// stops the load at once: those are never "repaired" by loading an older copy. A save
    /// from an older schema version is migrated. Background saves to the slot that are queued
    /// or running are waited for first.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when there is no file at all; [`Error::NewerSchema`],
    /// [`Error::UnsupportedFormat`], [`Error::KeyRequired`], [`Error::Decrypt`],
    /// [`Error::NotEncrypted`], [`Error::SlotMismatch`] as described; the primary's own error
    /// (such as [`Error::ChecksumMismatch`]) when it is damaged and there is no backup;
    /// [`Error::AllCopiesDamaged`] when every copy is damaged; [`Error::Migration`] or
    /// [`Error::NoMigrationPath`] when an older save cannot be migrated.
    pub fn load(&self, slot: SlotId) -> Result<Loaded> {
        self.background.wait_for(slot);
        self.engine.load(slot)
    }

    /// Every slot with a file, for a load menu, sorted by slot: numbered slots, then autosaves,
    /// then the quicksave. Reads each primary file's header (and each journal's record
    /// headers) and nothing more.
    ///
    /// A slot whose primary file is damaged is listed with
    /// [`SlotStatus::Unreadable`](crate::SlotStatus::Unreadable) (its backups may still load);
    /// one from a newer version of the game with
    /// [`SlotStatus::NewerSchema`](crate::SlotStatus::NewerSchema).
    ///
    /// # Errors
    /// [`Error::Io`] when the storage cannot be listed. Problems with single files are reported
    /// in their [`SlotInfo`], not as errors.
    pub fn list(&self) -> Result<Vec<SlotInfo>> {
        self.engine.list()
    }

    /// What the load menu shows for `slot` (see [`list`](Self::list)).
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when the slot has no file at all; [`Error::Io`] when the storage
    /// cannot be read.
    pub fn info(&self, slot: SlotId) -> Result<SlotInfo> {
        self.engine.info(slot)
    }

    /// What loading `slot` would migrate: the save's schema version, the game's, and the steps
    /// between them, from the header alone. Writes nothing.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when there is no primary file; the header's own error when it cannot
    /// be read; [`Error::NewerSchema`] for a newer save; [`Error::NoMigrationPath`] when a step
    /// is missing.
    pub fn plan_migration(&self, slot: SlotId) -> Result<MigrationPlan> {
        self.engine.plan_migration(slot)
    }

    /// Is there anything in `slot` (a primary file or a backup)?
    ///
    /// # Errors
    /// [`Error::Io`] when the storage cannot be read.
    pub fn exists(&self, slot: SlotId) -> Result<bool> {
        self.engine.exists(slot)
    }

    /// Deletes `slot`: its primary file, every backup, its journal, any pre-migration copy and
    /// the cloud sync's record and conflict copy of it (the remote object is left alone).
    /// Returns whether there was anything to delete.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be removed.
    pub fn delete(&self, slot: SlotId) -> Result<bool> {
        self.background.wait_for(slot);
        let deleted = self.engine.delete(slot)?;
        self.background.saved(slot);
        Ok(deleted)
    }

    /// Copies the save in `from` to `to` (loading it, with backup fallback and deltas, and
    /// saving it again as a full save, re-sealed for its new slot).
    ///
    /// # Errors
    /// Whatever [`load`](Self::load) and [`save`](Self::save) return.
    pub fn copy(&self, from: SlotId, to: SlotId) -> Result<SaveReport> {
        let loaded = self.load(from)?;
        self.save(to, &loaded.snapshot)
    }

    // Whole game states ([`SaveState`](crate::SaveState)): groups and registries. The work is
    // in `tracking.rs`.

    /// Saves `state` (a group or a registry) to `slot`, as [`save`](Self::save) does, with the
    /// metadata its [`describe`](crate::SaveState::describe) gives. The manager remembers what
    /// the slot now holds, so a [`save_state_incremental`](Self::save_state_incremental) after
    /// it writes only what changed.
    ///
    /// A state that lists its members ([`SaveState::members`](crate::SaveState::members):
    /// derived groups and registries do) is encoded straight from the game's objects into the
    /// file, with no copy of the state; any other is captured
    /// ([`capture_state`](crate::SaveState::capture_state)) first. The file is the same either
    /// way. With more than one [thread](crate::ManagerBuilder::threads) and many members (a
    /// world in chunks, a registry's entities), scoped worker threads list the state again and
    /// encode parts of it from the end of the list, each part into a buffer of its own, while
    /// this thread takes the slot's lock, checks the previous file and encodes the parts from
    /// the start straight into the file; the file is byte for byte what one thread writes, and
    /// the workers end with the save. That is why the state must be `Sync` (every Bevy
    /// component and resource is; a state that holds an `Rc` or a `RefCell` is captured into
    /// a [`Snapshot`](crate::Snapshot) with `capture_state` and saved with
    /// [`save`](Self::save) instead).
    ///
    /// # Errors
    /// As for [`SaveState::capture_state`](crate::SaveState::capture_state) and
    /// [`save`](Self::save); [`Error::Encode`] names a memento the codec cannot encode.
    pub fn save_state<S: crate::SaveState + Sync + ?Sized>(
        &self,
        slot: SlotId,
        state: &S,
    ) -> Result<SaveReport> {
        tracking::save_state(self, slot, state)
    }

    /// Loads `slot` (as [`load`](Self::load) does, with backups and migrations) and restores
    /// `state` from it. The result says which file was loaded and, in its
    /// [`RestoreReport`](crate::RestoreReport), how the state and the save matched: ids in the
    /// save that the game has no originator for, and originators the save has no memento for.
    ///
    /// # Errors
    /// As for [`load`](Self::load) and [`SaveState::restore_state`](crate::SaveState::restore_state)
    /// ([`Error::StateMismatch`] when the state refuses a mismatch).
    pub fn load_state<S: crate::SaveState + ?Sized>(
        &self,
        slot: SlotId,
        state: &mut S,
    ) -> Result<StateLoaded> {
        tracking::load_state(self, slot, state)
    }

    /// Saves what changed in `state` since the manager last saved it to `slot` or loaded it
    /// from there: captures the whole state, compares each memento's encoded bytes with the
    /// slot's (by fingerprint), and appends only the new and changed ones, and the ids that are
    /// gone as deletions, as one delta ([`save_incremental`](Self::save_incremental)). The game
    /// marks nothing dirty. When the manager does not know what the slot holds (no state was
    /// saved there or loaded from it yet, or something else wrote it since), it writes a full
    /// save instead, and the report says so. When nothing changed (every memento, and the
    /// label, playtime and other fields the load menu shows), nothing is written: the report's
    /// [`wrote`](ChangesReport::wrote) is `false` and its `written` is
    /// [`Written::Nothing`].
    ///
    /// # Errors
    /// As for [`save_incremental`](Self::save_incremental) and [`save`](Self::save).
    pub fn save_state_incremental<S: crate::SaveState + ?Sized>(
        &self,
        slot: SlotId,
        state: &S,
    ) -> Result<ChangesReport> {
        tracking::save_state_incremental(self, slot, state)
    }
}

impl SaveLoadManager {
    /// Saves the members of `state` that the game marked `dirty` since its last save of
    /// `slot`, in the background: the game thread captures only those (a
    /// [`Registry`](crate::Registry) clones each dirty member's memento; see
    /// [`SaveState::capture_members`](crate::SaveState::capture_members) for other states),
    /// and the worker encodes them, fingerprints them, leaves out those whose bytes the slot
    /// already has, and appends the rest as one delta, with the dirty ids the state no longer
    /// has as deletions. `dirty` holds snapshot ids (a registry's prefix included), the
    /// members changed, added or removed since the game's last call for this slot; the game
    /// then starts a new list.
    ///
    /// **What the frame pays:** a clone of each dirty member, a lookup of the slot in a map,
    /// and a hand-off; nothing proportional to the members that did not change. The first
    /// call for a slot the manager knows nothing of (no state saved there or loaded from it
    /// yet) is a full save instead, captured whole in the frame, as
    /// [`save_in_background`](Self::save_in_background) captures; the report says so.
    ///
    /// The slot's fingerprints stay those of what it holds, so this mixes with
    /// [`save_state`](Self::save_state), [`load_state`](Self::load_state) and
    /// [`save_state_incremental`](Self::save_state_incremental) (which wait for it). It is
    /// ordered as [`save_incremental_in_background`](Self::save_incremental_in_background)
    /// is; when it cannot append (a save or delta before it failed, or something else wrote
    /// the slot since the manager last did), it fails with [`Error::FullSaveNeeded`], writes
    /// nothing, and the manager forgets the slot, so that the game's next call is a full save:
    /// no change the game handed over is lost, and the slot loads as it was until then.
    ///
    /// ```
    /// use savegame::{Originator, Registry, SaveLoadManager, SlotId};
    ///
    /// #[derive(Originator, Clone, Default)]
    /// struct Chunk { tiles: Vec<u8> }
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let manager = SaveLoadManager::builder().directory(dir.path()).build()?;
    /// let mut world: Registry<Chunk> = Registry::new().with_prefix("chunk/");
    /// for i in 0..100 {
    ///     world.register(format!("{i:03}"), Chunk { tiles: vec![0; 64] })?;
    /// }
    /// let slot = SlotId::Numbered(1);
    /// manager.save_state(slot, &world)?; // the manager now knows what the slot holds
    ///
    /// // A frame changes one chunk and removes another, and asks for a save.
    /// world.get_mut("007").unwrap().tiles[3] = 9;
    /// world.unregister("042");
    /// let dirty = ["chunk/007", "chunk/042"];
    /// let handle = manager.save_state_incremental_in_background(slot, &world, dirty);
    ///
    /// let report = handle.wait()?; // later, or never: the worker writes it either way
    /// assert!(report.is_delta());
    /// assert_eq!((report.changed.as_slice(), report.deleted.as_slice()), (&["chunk/007".to_owned()][..], &["chunk/042".to_owned()][..]));
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn save_state_incremental_in_background<S, I>(
        &self,
        slot: SlotId,
        state: &S,
        dirty: I,
    ) -> SaveHandle<ChangesReport>
    where
        S: crate::SaveState + ?Sized,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let dirty: Vec<I::Item> = dirty.into_iter().collect();
        let dirty: Vec<&str> = dirty.iter().map(AsRef::as_ref).collect();
        tracking::save_state_incremental_in_background(self, slot, state, &dirty)
    }
}

impl Drop for SaveLoadManager {
    /// Writes every queued background save before the manager goes.
    fn drop(&mut self) {
        self.background.shutdown();
    }
}
