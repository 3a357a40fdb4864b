//! The caretaker: [`SaveLoadManager`] saves snapshots to slots, loads them back, and lists them.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use crate::codec::Codec;
use crate::envelope::{self, FileKind, Header, Key};
use crate::error::{Error, Result};
use crate::migrate::{Migrations, StepInfo};
use crate::slot::{SlotId, SlotInfo, SlotStatus};
use crate::snapshot::Snapshot;
use crate::storage::{FsStorage, Storage, backup_name, parse_backup_name, pre_migration_name};

/// The default cap on a save file's size: 256 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 256 << 20;

/// How many bytes a load menu reads first from each file: the fixed header and, usually, all of
/// the metadata.
const HEAD_READ: usize = 4096;

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
    allow_unencrypted: bool,
    schema_version: u32,
    migrations: Migrations,
    backups: u32,
    max_file_size: u64,
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
    /// [`Error::KeyRequired`].
    #[cfg(feature = "encryption")]
    #[cfg_attr(docsrs, doc(cfg(feature = "encryption")))]
    pub fn key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// With a key, also load saves that are not encrypted (written by a development build
    /// without a key, say). Off by default: otherwise a player could replace an encrypted save
    /// with a forged plain one, which has only a CRC to check.
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

    /// Builds the manager, creating the save folder if needed.
    ///
    /// # Errors
    /// [`Error::Config`] when no location was given, the platform has no data folder, or the
    /// schema version is 0; [`Error::MigrationChain`] when the migration steps do not lead to
    /// the schema version; [`Error::Io`] when the folder cannot be created.
    pub fn build(self) -> Result<SaveLoadManager> {
        if self.schema_version == 0 {
            return Err(Error::Config {
                reason: "schema versions start at 1".into(),
            });
        }
        self.migrations.check(self.schema_version)?;
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
            storage,
            codec: self.codec,
            key: self.key,
            allow_unencrypted: self.allow_unencrypted,
            schema_version: self.schema_version,
            migrations: self.migrations,
            backups: self.backups,
            max_file_size: self.max_file_size,
            verified: Mutex::default(),
        })
    }
}

/// What [`SaveLoadManager::save`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SaveReport {
    /// The slot.
    pub slot: SlotId,
    /// Where the file is.
    pub path: PathBuf,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The slot's save counter after this save.
    pub generation: u64,
    /// The time stamped into the file.
    pub saved_at: SystemTime,
}

/// Where a loaded save came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadReport {
    /// The slot.
    pub slot: SlotId,
    /// The file that was loaded.
    pub path: PathBuf,
    /// `Some(n)` when the primary file was missing or damaged and backup `n` was loaded
    /// instead (1 is the newest backup). A game should tell the player.
    pub recovered_from_backup: Option<u32>,
    /// Why the primary file could not be used, when a backup was loaded.
    pub primary_problem: Option<String>,
    /// `Some(v)` when the save was at schema version `v`, older than the game's, and was
    /// migrated on load. It is written back at the current version by the next save, which
    /// first keeps the old file as `<slot file>.v<v>.bak`.
    pub migrated_from: Option<u32>,
    /// The loaded file's header.
    pub header: Header,
}

/// What [`SaveLoadManager::plan_migration`] found: which steps loading a slot would run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationPlan {
    /// The slot.
    pub slot: SlotId,
    /// The save's schema version.
    pub from: u32,
    /// The game's schema version.
    pub to: u32,
    /// The steps, in order (empty when the save is current).
    pub steps: Vec<StepInfo>,
}

/// A loaded save: the snapshot and where it came from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Loaded {
    /// The mementos and metadata.
    pub snapshot: Snapshot,
    /// Which file, and whether it was a backup.
    pub report: LoadReport,
}

/// The caretaker: saves [`Snapshot`]s to slots, loads them back, lists slots for a load menu.
///
/// Build one per game with [`SaveLoadManager::builder`]. It is `Send + Sync`; share it by
/// reference or in an `Arc`.
///
/// ```
/// use savegame::{Codec, SaveLoadManager, SlotId};
///
/// let dir = tempfile::tempdir()?;
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SaveLoadManager {
    storage: Arc<dyn Storage>,
    codec: Codec,
    key: Option<Key>,
    allow_unencrypted: bool,
    schema_version: u32,
    migrations: Migrations,
    backups: u32,
    max_file_size: u64,
    /// Primary files this manager wrote, or read and checked in full, by name. A save trusts
    /// such a file as sound (to rotate it into the backups) without reading it again, as long
    /// as its header and length are unchanged; any other file is read and checked in full.
    verified: Mutex<HashMap<String, Stamp>>,
}

/// What identifies a file the manager has seen whole: its length and header fields that change
/// with every save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    generation: u64,
    saved_at: SystemTime,
}

impl Stamp {
    fn of(header: &Header, len: u64) -> Self {
        Stamp {
            len,
            generation: header.generation,
            saved_at: header.saved_at,
        }
    }
}

/// What the manager knows of a slot's current primary file before replacing it.
struct Previous {
    /// Its generation, when its header could be read.
    generation: u64,
    /// Whether it passed the checksum and header checks (only then is it kept as a backup).
    sound: bool,
    /// A sound file at an older schema version, with its version: kept as a pre-migration
    /// backup before it is replaced.
    older: Option<(u32, Vec<u8>)>,
}

impl SaveLoadManager {
    /// A builder with the defaults: MessagePack, no key, schema version 1, one backup, a
    /// 256 MiB size cap. A location (`directory`, `app` or `storage`) is required.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder {
            location: None,
            codec: if cfg!(feature = "msgpack") {
                Codec::MessagePack
            } else {
                Codec::Json
            },
            key: None,
            allow_unencrypted: false,
            schema_version: 1,
            migrations: Migrations::new(),
            backups: 1,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }

    /// An empty snapshot in the manager's codec.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.codec)
    }

    /// The storage the manager writes to.
    #[must_use]
    pub fn storage(&self) -> &dyn Storage {
        self.storage.as_ref()
    }

    /// The game's current schema version.
    #[must_use]
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// Where the primary file of `slot` is (or would be).
    #[must_use]
    pub fn path_of(&self, slot: SlotId) -> PathBuf {
        self.storage.locate(&slot.file_name())
    }

    /// Saves `snapshot` to `slot`, crash-safely. When this returns `Ok`, the save is on disk
    /// (fsynced, renamed into place, folder fsynced).
    ///
    /// The slot's previous save, if it is sound, becomes its first backup. A damaged previous
    /// file is replaced without pushing the good backups out. A previous file written by a
    /// newer version of the game (newer schema or format) is never overwritten: the save is
    /// refused. A previous file at an older schema version (a save that was loaded and
    /// migrated) is first kept, byte for byte, as `<slot file>.v<old version>.bak`.
    ///
    /// # Errors
    /// [`Error::NewerSchema`] or [`Error::UnsupportedFormat`] when the slot holds a newer save;
    /// [`Error::TooLarge`] when the file would exceed the size cap; [`Error::Io`] when writing
    /// fails (the previous save is then intact).
    pub fn save(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        let name = slot.file_name();
        let _lock = self.storage.lock(&name)?;
        let previous = self.previous(&name)?;
        let generation = previous.generation.saturating_add(1);
        let bytes = snapshot.seal_file(slot, self.schema_version, generation, self.key.as_ref())?;
        let header = envelope::parse_header(&bytes, None)?;
        let path = self.storage.locate(&name);
        if bytes.len() as u64 > self.max_file_size {
            return Err(Error::TooLarge {
                path,
                size: bytes.len() as u64,
                limit: self.max_file_size,
            });
        }
        if let Some((version, old)) = &previous.older {
            // The last file at an older schema version is kept as it was, before anything
            // replaces it.
            self.storage
                .write(&pre_migration_name(&name, *version), old, 0)?;
        }
        let keep = if previous.sound { self.backups } else { 0 };
        let stamp = Stamp::of(&header, bytes.len() as u64);
        self.forget(&name);
        self.storage.write(&name, &bytes, keep)?;
        self.remember(&name, stamp);
        Ok(SaveReport {
            slot,
            path,
            bytes: bytes.len() as u64,
            generation,
            saved_at: header.saved_at,
        })
    }

    fn remember(&self, name: &str, stamp: Stamp) {
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        verified.insert(name.to_owned(), stamp);
    }

    fn forget(&self, name: &str) {
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        verified.remove(name);
    }

    fn is_verified(&self, name: &str, stamp: Stamp) -> bool {
        let verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        verified.get(name) == Some(&stamp)
    }

    /// Checks the slot's current primary file before it is replaced: from its header alone when
    /// it is the file this manager last wrote or checked, in full otherwise.
    fn previous(&self, name: &str) -> Result<Previous> {
        if let Ok(Some((header, len))) = self.read_header(name)
            && header.schema_version == self.schema_version
            && self.is_verified(name, Stamp::of(&header, len))
        {
            return Ok(Previous {
                generation: header.generation,
                sound: true,
                older: None,
            });
        }
        let bytes = match self.storage.read(name, self.max_file_size) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Ok(Previous {
                    generation: self.backup_generation(name),
                    sound: false,
                    older: None,
                });
            }
            Err(e) if e.is_corruption() => {
                return Ok(Previous {
                    generation: self.backup_generation(name),
                    sound: false,
                    older: None,
                });
            }
            Err(e) => return Err(e),
        };
        match check_sound(&bytes) {
            Ok(header) => {
                if header.schema_version > self.schema_version {
                    return Err(Error::NewerSchema {
                        found: header.schema_version,
                        supported: self.schema_version,
                    });
                }
                let older = (header.schema_version < self.schema_version)
                    .then_some((header.schema_version, bytes));
                Ok(Previous {
                    generation: header.generation,
                    sound: true,
                    older,
                })
            }
            Err(e @ Error::UnsupportedFormat { .. }) => Err(e),
            Err(_) => Ok(Previous {
                generation: self.backup_generation(name),
                sound: false,
                older: None,
            }),
        }
    }

    /// The generation in the newest backup's header, or 0: keeps generations increasing when
    /// the primary is missing or damaged.
    fn backup_generation(&self, name: &str) -> u64 {
        self.read_header(&backup_name(name, 1))
            .ok()
            .flatten()
            .map_or(0, |(h, _)| h.generation)
    }

    /// Loads the save in `slot`.
    ///
    /// Everything is checked: the CRC, the header, the decryption, the table of contents. When
    /// the primary file is missing or damaged, the backups are tried, newest first, and the
    /// report says which one was used. A wrong key, a newer save or a file from another slot
    /// stops the load at once: those are never "repaired" by loading an older copy.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when there is no file at all; [`Error::NewerSchema`],
    /// [`Error::UnsupportedFormat`], [`Error::KeyRequired`], [`Error::Decrypt`],
    /// [`Error::NotEncrypted`],
    /// [`Error::SlotMismatch`] as described; the primary's own error (such as
    /// [`Error::ChecksumMismatch`]) when it is damaged and there is no backup; and
    /// [`Error::AllCopiesDamaged`] when every copy is damaged.
    pub fn load(&self, slot: SlotId) -> Result<Loaded> {
        let name = slot.file_name();
        let mut candidates = vec![(name.clone(), None)];
        candidates.extend(
            self.backups_of(&name)?
                .into_iter()
                .map(|i| (backup_name(&name, i), Some(i))),
        );
        let mut primary_problem: Option<Error> = None;
        let mut damaged = 0;
        for (file, backup) in candidates {
            let bytes = match self.storage.read(&file, self.max_file_size) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(e) if e.is_corruption() || matches!(e, Error::Io { .. }) => {
                    damaged += 1;
                    primary_problem.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let len = bytes.len() as u64;
            match self.open(slot, bytes) {
                Ok((snapshot, header)) => {
                    if backup.is_none() {
                        self.remember(&file, Stamp::of(&header, len));
                    }
                    let missing = backup.is_some() && primary_problem.is_none();
                    let problem = primary_problem.map(|e| e.to_string());
                    return Ok(Loaded {
                        snapshot,
                        report: LoadReport {
                            slot,
                            path: self.storage.locate(&file),
                            recovered_from_backup: backup,
                            primary_problem: if missing {
                                Some("the primary file is missing".into())
                            } else {
                                problem
                            },
                            migrated_from: (header.schema_version < self.schema_version)
                                .then_some(header.schema_version),
                            header,
                        },
                    });
                }
                Err(e) if e.is_corruption() => {
                    damaged += 1;
                    primary_problem.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match primary_problem {
            None => Err(Error::SlotEmpty { slot }),
            Some(e) if damaged == 1 => Err(e),
            Some(e) => Err(Error::AllCopiesDamaged {
                slot,
                copies: damaged,
                primary: Box::new(e),
            }),
        }
    }

    /// Opens one file of `slot`: every check, then the snapshot.
    fn open(&self, slot: SlotId, bytes: Vec<u8>) -> Result<(Snapshot, Header)> {
        let opened = envelope::open(bytes, FileKind::Save, self.key.as_ref())?;
        let header = opened.header.clone();
        self.check_encryption(&header)?;
        if header.slot != slot {
            return Err(Error::SlotMismatch {
                expected: slot,
                found: header.slot,
            });
        }
        if header.schema_version > self.schema_version {
            return Err(Error::NewerSchema {
                found: header.schema_version,
                supported: self.schema_version,
            });
        }
        let snapshot = Snapshot::from_opened(opened);
        if header.schema_version == self.schema_version {
            return Ok((snapshot, header));
        }
        let migrated = self.migrations.migrate_snapshot(
            &snapshot,
            header.schema_version,
            self.schema_version,
        )?;
        Ok((migrated, header))
    }

    /// Refuses a plain save when the manager has a key (unless allowed).
    fn check_encryption(&self, header: &Header) -> Result<()> {
        if self.key.is_some() && !header.encrypted && !self.allow_unencrypted {
            return Err(Error::NotEncrypted);
        }
        Ok(())
    }

    /// Indices of the backups of `name` present in the storage, ascending.
    fn backups_of(&self, name: &str) -> Result<Vec<u32>> {
        let mut found: Vec<u32> = self
            .storage
            .list()?
            .iter()
            .filter_map(|f| match parse_backup_name(&f.name) {
                Some((primary, i)) if primary == name => Some(i),
                _ => None,
            })
            .collect();
        found.sort_unstable();
        Ok(found)
    }

    /// Reads and parses the header of `file`: `None` when it does not exist.
    fn read_header(&self, file: &str) -> Result<Option<(Header, u64)>> {
        let Some(head) = self.storage.read_head(file, HEAD_READ)? else {
            return Ok(None);
        };
        let needed = envelope::header_len(&head.bytes)?;
        let head = if needed > head.bytes.len() && (needed as u64) <= head.file_len {
            match self.storage.read_head(file, needed)? {
                Some(head) => head,
                None => return Ok(None),
            }
        } else {
            head
        };
        let header = envelope::parse_header(&head.bytes, Some(head.file_len))?;
        Ok(Some((header, head.file_len)))
    }

    /// Every slot with a file, for a load menu, sorted by slot: numbered slots, then autosaves,
    /// then the quicksave. Reads each primary file's header and nothing more.
    ///
    /// A slot whose primary file is damaged is listed with [`SlotStatus::Unreadable`] (its
    /// backups may still load); one from a newer version of the game with
    /// [`SlotStatus::NewerSchema`].
    ///
    /// # Errors
    /// [`Error::Io`] when the storage cannot be listed. Problems with single files are reported
    /// in their [`SlotInfo`], not as errors.
    pub fn list(&self) -> Result<Vec<SlotInfo>> {
        let mut slots: BTreeMap<SlotId, (Option<u64>, u32)> = BTreeMap::new();
        for file in self.storage.list()? {
            if let Some(slot) = SlotId::from_file_name(&file.name) {
                slots.entry(slot).or_default().0 = Some(file.len);
            } else if let Some(slot) =
                parse_backup_name(&file.name).and_then(|(p, _)| SlotId::from_file_name(p))
            {
                slots.entry(slot).or_default().1 += 1;
            }
        }
        Ok(slots
            .into_iter()
            .map(|(slot, (len, backups))| self.slot_info(slot, len.is_some(), backups))
            .collect())
    }

    /// What the load menu shows for `slot` (see [`list`](Self::list)).
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when the slot has no file at all; [`Error::Io`] when the storage
    /// cannot be listed.
    pub fn info(&self, slot: SlotId) -> Result<SlotInfo> {
        let name = slot.file_name();
        let backups = self.backups_of(&name)?.len() as u32;
        let has_primary = self.storage.read_head(&name, 0)?.is_some();
        if !has_primary && backups == 0 {
            return Err(Error::SlotEmpty { slot });
        }
        Ok(self.slot_info(slot, has_primary, backups))
    }

    fn slot_info(&self, slot: SlotId, has_primary: bool, backups: u32) -> SlotInfo {
        let unreadable = |reason: String| SlotInfo {
            slot,
            file_size: 0,
            backups,
            status: SlotStatus::Unreadable { reason },
            header: None,
        };
        if !has_primary {
            return unreadable(format!(
                "the primary file is missing ({backups} backup(s) remain)"
            ));
        }
        let (header, file_size) = match self.read_header(&slot.file_name()) {
            Ok(Some(found)) => found,
            Ok(None) => return unreadable("the primary file vanished while listing".into()),
            Err(e) => return unreadable(e.to_string()),
        };
        let status = if header.slot != slot {
            SlotStatus::Unreadable {
                reason: format!("the file belongs to slot {}", header.slot),
            }
        } else if header.schema_version > self.schema_version {
            SlotStatus::NewerSchema {
                found: header.schema_version,
                supported: self.schema_version,
            }
        } else if header.encrypted && self.key.is_none() {
            SlotStatus::NeedsKey
        } else if let Err(e) = self.check_encryption(&header) {
            SlotStatus::Unreadable {
                reason: e.to_string(),
            }
        } else {
            SlotStatus::Ready
        };
        SlotInfo {
            slot,
            file_size,
            backups,
            status,
            header: Some(header),
        }
    }

    /// What loading `slot` would migrate: the save's schema version, the game's, and the steps
    /// between them, from the header alone. Writes nothing.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when there is no primary file; the header's own error when it cannot
    /// be read; [`Error::NewerSchema`] for a newer save; [`Error::NoMigrationPath`] when a step
    /// is missing.
    pub fn plan_migration(&self, slot: SlotId) -> Result<MigrationPlan> {
        let (header, _) = self
            .read_header(&slot.file_name())?
            .ok_or(Error::SlotEmpty { slot })?;
        let from = header.schema_version;
        if from > self.schema_version {
            return Err(Error::NewerSchema {
                found: from,
                supported: self.schema_version,
            });
        }
        Ok(MigrationPlan {
            slot,
            from,
            to: self.schema_version,
            steps: self.migrations.plan(from, self.schema_version)?,
        })
    }

    /// Is there anything in `slot` (a primary file or a backup)?
    ///
    /// # Errors
    /// [`Error::Io`] when the storage cannot be read.
    pub fn exists(&self, slot: SlotId) -> Result<bool> {
        let name = slot.file_name();
        Ok(self.storage.read_head(&name, 0)?.is_some() || !self.backups_of(&name)?.is_empty())
    }

    /// Deletes `slot`: its primary file and every backup. Returns whether there was anything
    /// to delete.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be removed.
    pub fn delete(&self, slot: SlotId) -> Result<bool> {
        let name = slot.file_name();
        let _lock = self.storage.lock(&name)?;
        let mut any = false;
        for i in self.backups_of(&name)? {
            self.storage.remove(&backup_name(&name, i))?;
            any = true;
        }
        let prefix = format!("{name}.v");
        for file in self.storage.list()? {
            if file.name.starts_with(&prefix) && file.name.ends_with(".bak") {
                self.storage.remove(&file.name)?;
                any = true;
            }
        }
        if self.storage.read_head(&name, 0)?.is_some() {
            self.storage.remove(&name)?;
            any = true;
        }
        Ok(any)
    }

    /// Copies the save in `from` to `to` (loading it, with backup fallback, and saving it
    /// again, re-sealed for its new slot).
    ///
    /// # Errors
    /// Whatever [`load`](Self::load) and [`save`](Self::save) return.
    pub fn copy(&self, from: SlotId, to: SlotId) -> Result<SaveReport> {
        let loaded = self.load(from)?;
        self.save(to, &loaded.snapshot)
    }
}

/// Checks a whole file's magic, CRC and header, without decrypting it.
fn check_sound(bytes: &[u8]) -> Result<Header> {
    envelope::check_crc(bytes)?;
    envelope::parse_header(bytes, Some(bytes.len() as u64))
}
