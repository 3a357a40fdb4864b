//! The manager's shared state and the work it does: full saves, loads with backup fallback,
//! the load menu. Shared by the game thread and the background worker.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

use super::autosave;
use super::backups::{backups_of, put_keeping_backups};
use super::files::{self, Files};
use super::journal::{Journals, has_deltas};
use super::locks::{lock, lock_slot};
use super::menu::{SlotInfo, SlotStatus};
use super::report::{DeltaReport, LoadReport, Loaded, MigrationPlan, SaveReport};
use super::verified::Verified;
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::Header;
use crate::migrate::Migrations;
use crate::slot::{SlotFile, SlotId, backup_name, pre_migration_name};
use crate::snapshot::{SealWith, Snapshot};
use crate::storage::StorageLock;

/// Everything a manager knows and does, shared with its worker thread.
#[derive(Debug)]
pub(crate) struct Engine {
    /// The storage, the key, the schema version, the size cap, and the checks of files.
    pub(super) files: Files,
    pub(super) codec: Codec,
    pub(super) migrations: Migrations,
    pub(super) backups: u32,
    pub(super) autosave_slots: u32,
    pub(super) compact_percent: u32,
    /// What the manager knows of each journal it appended to or read whole.
    pub(super) journals: Journals,
    /// Held while an autosave picks its slot and writes it, so two autosaves never pick the same.
    pub(super) autosave_lock: Mutex<()>,
    /// The bases checked whole, while that check stands for them.
    pub(super) verified: Verified,
}

/// How many times a load reads a slot without its lock before it takes the lock: each retry
/// follows a save that replaced the base while the load read it.
const OPTIMISTIC_LOADS: usize = 3;

/// Whether a load found anything wrong: a backup loaded, a problem with the primary file or
/// with the journal.
fn troubled(report: &LoadReport) -> bool {
    report.recovered_from_backup.is_some()
        || report.primary_problem.is_some()
        || report.journal_problem.is_some()
}

/// What identifies one base file of a slot: its length and the header fields that change with
/// every full save. A load compares the base it read with the slot's primary file afterwards.
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
    /// Its length (0 if unknown): about what the new file will be, so the new file's buffer
    /// is allocated once.
    len: u64,
}

impl Engine {
    /// A full save, taking the slot's lock.
    pub(super) fn save(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        let _lock = lock_slot(&self.files, &slot.file_name())?;
        self.save_locked(slot, snapshot)
    }

    /// A full save, with the slot's lock held: a new base, and the end of its journal.
    pub(super) fn save_locked(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        let schema_version = self.files.schema_version;
        self.save_either(
            slot,
            &mut |generation, saved_at, with, sink, max_len| {
                snapshot.stream_file(
                    slot,
                    schema_version,
                    generation,
                    saved_at,
                    with,
                    sink,
                    max_len,
                    None,
                )
            },
            &mut |generation, with| {
                snapshot.seal_file_with(
                    slot,
                    schema_version,
                    generation,
                    crate::format::now(),
                    with,
                )
            },
        )
    }

    pub(super) fn save_sealed(
        &self,
        slot: SlotId,
        seal: &mut dyn FnMut(u64, SealWith<'_>) -> Result<Vec<u8>>,
    ) -> Result<SaveReport> {
        let name = slot.file_name();
        // Deltas name their base by generation: a new base must never reuse the generation
        // leftover deltas were written for.
        let leftover = self.journals.generation(&self.files, &name);
        let seal = |previous: u64, len: u64| {
            let hint = usize::try_from(len).unwrap_or(0);
            seal(
                previous.max(leftover).saturating_add(1),
                self.files.seal_with(hint),
            )
        };
        let (previous, bytes) = self.check_previous_and_seal(&name, seal)?;
        let header = crate::format::parse_header(&bytes, None)?;
        let generation = header.generation;
        let path = self.files.storage.locate(&name);
        if bytes.len() as u64 > self.files.max_file_size {
            return Err(Error::TooLarge {
                path,
                size: bytes.len() as u64,
                limit: self.files.max_file_size,
            });
        }
        if let Some((version, old)) = &previous.older {
            // The last file at an older schema version is kept as it was, before anything
            // replaces it.
            self.files.put(&pre_migration_name(&name, *version), old)?;
        }
        let keep = if previous.sound { self.backups } else { 0 };
        put_keeping_backups(self.files.storage.as_ref(), &name, &bytes, keep)
            .map_err(|e| self.files.error(&name, e))?;
        // The new base holds everything: its old deltas are obsolete.
        self.journals.clear(&self.files, &name);
        Ok(SaveReport {
            slot,
            path,
            bytes: bytes.len() as u64,
            generation,
            saved_at: header.saved_at,
        })
    }

    /// Checks the slot's current primary file (see [`previous`](Self::previous)) and seals the
    /// new one with `seal(generation of the current file)`. When the current file is about to
    /// become a backup, its check (a CRC over every byte) must pass first. The check runs on a
    /// second thread beside the seal, so it costs the save little (where no thread can be
    /// had, it runs here).
    fn check_previous_and_seal(
        &self,
        name: &str,
        mut seal: impl FnMut(u64, u64) -> Result<Vec<u8>>,
    ) -> Result<(Previous, Vec<u8>)> {
        if self.backups > 0
            && let Ok(Some((header, len))) = self.files.read_header(name)
            && header.schema_version == self.files.schema_version
        {
            let check = || self.files.check_stored(name, len);
            // The check reads the current file back and takes its CRC: on a second thread, it
            // runs beside the seal's encoding (one memento is encoded on one thread, and a
            // seal's parallel stages are short), where it costs the save little. A check that
            // fails changes the generation: the new file is then sealed again, below.
            let (checked, sealed) = std::thread::scope(|scope| {
                let thread = crate::threads::scoped(scope, "savegame-check", check);
                let sealed = seal(header.generation, len);
                let checked = match thread {
                    // A check that panicked (it has no way to) is run again here.
                    Some(thread) => thread.join().unwrap_or_else(|_| check()),
                    None => check(),
                };
                (checked, sealed)
            });
            return match checked {
                Ok(()) => {
                    let sound = Previous {
                        generation: header.generation,
                        sound: true,
                        older: None,
                        len,
                    };
                    Ok((sound, sealed?))
                }
                Err(e) if e.is_corruption() => {
                    let damaged = self.damaged_previous(name);
                    let bytes = seal(damaged.generation, len)?;
                    Ok((damaged, bytes))
                }
                Err(e) => Err(e),
            };
        }
        let previous = self.previous(name)?;
        let bytes = seal(previous.generation, previous.len)?;
        Ok((previous, bytes))
    }

    /// What is known of a primary file that is missing or damaged: never a backup, and the
    /// newest backup's generation to go on from.
    fn damaged_previous(&self, name: &str) -> Previous {
        Previous {
            generation: self.backup_generation(name),
            sound: false,
            older: None,
            len: 0,
        }
    }

    /// The slow path of [`check_previous_and_seal`](Self::check_previous_and_seal): without
    /// backups, a file at the game's schema version needs only its header (its generation);
    /// any other file (at another schema version, which may be kept as a pre-migration copy,
    /// or whose header does not parse) is read whole and checked, its CRC before its version.
    fn previous(&self, name: &str) -> Result<Previous> {
        let damaged = || self.damaged_previous(name);
        if self.backups == 0
            && let Ok(Some((header, len))) = self.files.read_header(name)
            && header.schema_version == self.files.schema_version
        {
            return Ok(Previous {
                generation: header.generation,
                sound: true,
                older: None,
                len,
            });
        }
        let bytes = match self.files.read(name) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(damaged()),
            Err(e) if e.is_corruption() => return Ok(damaged()),
            Err(e) => return Err(e),
        };
        match files::check_sound(&bytes) {
            Ok(header) => {
                if header.schema_version > self.files.schema_version {
                    return Err(Error::NewerSchema {
                        found: header.schema_version,
                        supported: self.files.schema_version,
                    });
                }
                let len = bytes.len() as u64;
                let older = (header.schema_version < self.files.schema_version)
                    .then_some((header.schema_version, bytes));
                Ok(Previous {
                    generation: header.generation,
                    sound: true,
                    older,
                    len,
                })
            }
            Err(e @ Error::UnsupportedFormat { .. }) => Err(e),
            Err(_) => Ok(damaged()),
        }
    }

    /// The generation in the newest backup's header, or 0: keeps generations increasing when
    /// the primary is missing or damaged.
    pub(super) fn backup_generation(&self, name: &str) -> u64 {
        self.files
            .read_header(&backup_name(name, 1))
            .ok()
            .flatten()
            .map_or(0, |(h, _)| h.generation)
    }

    /// Loads a slot: the newest sound copy of its base, its journal's deltas, then migration.
    ///
    /// A load takes no lock, so a game's load never waits for a save; but a save running
    /// beside it can make what it reads look older or damaged when nothing is:
    ///
    /// - A full save or a compaction may replace the base and remove the journal between the
    ///   load's read of the one and of the other, which would give an older state with nothing
    ///   reported. So once it has read both, the load checks that the slot's primary file is
    ///   still the base it read, and reads again if it is not. After [`OPTIMISTIC_LOADS`] such
    ///   retries it reads under the slot's lock.
    /// - Whatever else it reads may be half-way through a change: the file it opened written
    ///   over in place when saves recycle it as the slot's spare (torn bytes, a checksum
    ///   mismatch, then a backup), a delta half appended (a torn tail), a compaction's new base
    ///   beside the journal it is about to remove (deltas for another base). So a load that
    ///   finds anything wrong (a backup loaded, a problem with the primary file or the journal,
    ///   an error other than an empty slot) reads again under the slot's lock, which every
    ///   writer of the slot holds while it writes: what it finds then is what is on the disk,
    ///   and it is what the load returns.
    ///
    /// Checking again costs a load nothing until something looks wrong, so the spare keeps its
    /// speed: an in-place write that a reader may see torn is the price of a spare, and the
    /// lock is how a reader tells a torn read from a damaged file. Where the lock cannot be
    /// taken (a read-only folder), no save of this crate can be writing the slot either (each
    /// takes that lock first), and what the load read stands.
    pub(super) fn load(&self, slot: SlotId) -> Result<Loaded> {
        let name = slot.file_name();
        let mut unlocked = None;
        for _ in 0..OPTIMISTIC_LOADS {
            match self.read_slot(slot) {
                Ok(loaded) if !troubled(&loaded.report) => {
                    let base = &loaded.report.header;
                    let read = Stamp::of(base, base.sections().crc.end);
                    if let Ok(Some((now, len))) = self.files.read_header(&name)
                        && Stamp::of(&now, len) == read
                    {
                        return Ok(loaded);
                    }
                }
                // Nothing there is nothing a save half-way through makes of a slot: a save
                // replaces a file, never removes one. And an error about a file that read
                // whole and sound (a failed migration step, a wrong key, a newer save) is the
                // file's: only damage and I/O can come of reading beside a save.
                Err(e) if !(e.is_corruption() || matches!(e, Error::Io { .. })) => return Err(e),
                found => {
                    unlocked = Some(found);
                    break;
                }
            }
        }
        match (lock_slot(&self.files, &name), unlocked) {
            (Ok(held), _) => self.load_locked(slot, &held),
            (Err(_), Some(found)) => found,
            (Err(e), None) => Err(e),
        }
    }

    /// [`load`](Self::load) for a caller that holds the slot's lock (`held`): no save can be
    /// half-way through, so what it reads is what is on the disk.
    pub(super) fn load_locked(&self, slot: SlotId, held: &StorageLock) -> Result<Loaded> {
        let _ = held;
        self.read_slot(slot)
    }

    /// One read of the slot, trusting what it reads: right only under the slot's lock, or
    /// checked as [`load`](Self::load) does.
    fn read_slot(&self, slot: SlotId) -> Result<Loaded> {
        let name = slot.file_name();
        // The backups are looked for (a listing of the storage) only once the primary file
        // has failed: a sound save loads with no listing.
        let mut candidates = vec![(name.clone(), None)];
        let mut listed = false;
        let mut primary_problem: Option<Error> = None;
        let mut damaged = 0;
        while let Some((file, backup)) =
            next_candidate(&mut candidates, &mut listed, || self.backups(slot))?
        {
            let bytes = match self.files.read(&file) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(e) if e.is_corruption() || matches!(e, Error::Io { .. }) => {
                    damaged += 1;
                    primary_problem.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.files.open_base(slot, bytes) {
                Ok((mut snapshot, header)) => {
                    let (deltas, journal_problem) =
                        self.journals
                            .apply(&self.files, slot, &name, &header, &mut snapshot)?;
                    let snapshot = self.migrate(snapshot, header.schema_version)?;
                    let missing = backup.is_some() && primary_problem.is_none();
                    let problem = primary_problem.map(|e| e.to_string());
                    return Ok(Loaded {
                        snapshot,
                        report: LoadReport {
                            slot,
                            path: self.files.storage.locate(&file),
                            recovered_from_backup: backup,
                            primary_problem: if missing {
                                Some("the primary file is missing".into())
                            } else {
                                problem
                            },
                            migrated_from: (header.schema_version < self.files.schema_version)
                                .then_some(header.schema_version),
                            deltas,
                            journal_problem,
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

    /// The backups of `slot` a load may fall back on, newest first.
    fn backups(&self, slot: SlotId) -> Result<Vec<(String, Option<u32>)>> {
        let name = slot.file_name();
        Ok(backups_of(&self.files.list()?, slot)
            .into_iter()
            .map(|i| (backup_name(&name, i), Some(i)))
            .collect())
    }

    /// Brings a snapshot at schema version `from` up to the game's, and each memento up to
    /// the end of its own steps.
    fn migrate(&self, snapshot: Snapshot, from: u32) -> Result<Snapshot> {
        self.migrations
            .upgrade(snapshot, from, self.files.schema_version)
    }

    /// Every slot with a file, for a load menu.
    pub(super) fn list(&self) -> Result<Vec<SlotInfo>> {
        #[derive(Default)]
        struct Found {
            /// The primary file's name, as listed.
            primary: Option<String>,
            backups: u32,
            deltas: bool,
        }
        let mut slots: BTreeMap<SlotId, Found> = BTreeMap::new();
        for file in self.files.list()? {
            let Some(kind) = SlotFile::parse(&file) else {
                continue;
            };
            // The key-value store is a file of the folder, not a slot.
            if kind.slot() == SlotId::Store {
                continue;
            }
            let found = slots.entry(kind.slot()).or_default();
            match kind {
                SlotFile::Primary(_) => found.primary = Some(file),
                SlotFile::Backup(..) => found.backups += 1,
                SlotFile::Journal(_) | SlotFile::Delta(..) => found.deltas = true,
                SlotFile::PreMigration(..)
                | SlotFile::Staged(_)
                | SlotFile::Synced(_)
                | SlotFile::Conflict(_) => {}
            }
        }
        Ok(slots
            .into_iter()
            .filter(|(_, f)| f.primary.is_some() || f.backups > 0)
            .map(|(slot, f)| self.slot_info(slot, f.primary.as_deref(), f.backups, f.deltas))
            .collect())
    }

    /// What the load menu shows for one slot.
    pub(super) fn info(&self, slot: SlotId) -> Result<SlotInfo> {
        let name = slot.file_name();
        let listing = self.files.list()?;
        let backups = backups_of(&listing, slot).len() as u32;
        let has_primary = self.files.exists(&name)?;
        if !has_primary && backups == 0 {
            return Err(Error::SlotEmpty { slot });
        }
        let primary = has_primary.then_some(name.as_str());
        Ok(self.slot_info(slot, primary, backups, has_deltas(&listing, slot)))
    }

    /// What the load menu shows for `slot`, whose primary file is `primary` (its name; `None`
    /// when it has none).
    fn slot_info(
        &self,
        slot: SlotId,
        primary: Option<&str>,
        backups: u32,
        deltas: bool,
    ) -> SlotInfo {
        let unreadable = |reason: String| SlotInfo {
            slot,
            file_size: 0,
            backups,
            status: SlotStatus::Unreadable { reason },
            header: None,
            deltas: 0,
            latest: None,
            total_size: 0,
        };
        let Some(name) = primary else {
            return unreadable(format!(
                "the primary file is missing ({backups} backup(s) remain)"
            ));
        };
        let (header, file_size) = match self.files.read_header(name) {
            Ok(Some(found)) => found,
            Ok(None) => return unreadable("the primary file vanished while listing".into()),
            Err(e) => return unreadable(e.to_string()),
        };
        let status = if header.slot != slot {
            SlotStatus::Unreadable {
                reason: format!("the file belongs to slot {}", header.slot),
            }
        } else if header.schema_version > self.files.schema_version {
            SlotStatus::NewerSchema {
                found: header.schema_version,
                supported: self.files.schema_version,
            }
        } else {
            match self.files.trust().admit(header.protection()) {
                Ok(()) => SlotStatus::Ready,
                Err(Error::KeyRequired { .. }) => SlotStatus::NeedsKey,
                Err(e) => SlotStatus::Unreadable {
                    reason: e.to_string(),
                },
            }
        };
        let summary = if deltas {
            self.journals.summary(&self.files, name, header.generation)
        } else {
            Default::default()
        };
        SlotInfo {
            slot,
            file_size,
            backups,
            status,
            header: Some(header),
            deltas: summary.deltas,
            latest: summary.latest,
            total_size: file_size + summary.len,
        }
    }

    /// What loading `slot` would migrate.
    pub(super) fn plan_migration(&self, slot: SlotId) -> Result<MigrationPlan> {
        let (header, _) = self
            .files
            .read_header(&slot.file_name())?
            .ok_or(Error::SlotEmpty { slot })?;
        let from = header.schema_version;
        if from > self.files.schema_version {
            return Err(Error::NewerSchema {
                found: from,
                supported: self.files.schema_version,
            });
        }
        Ok(MigrationPlan {
            slot,
            from,
            to: self.files.schema_version,
            steps: self.migrations.plan(from, self.files.schema_version)?,
        })
    }

    /// Is there anything in `slot`?
    pub(super) fn exists(&self, slot: SlotId) -> Result<bool> {
        Ok(self.files.exists(&slot.file_name())?
            || !backups_of(&self.files.list()?, slot).is_empty())
    }

    /// Deletes every file of `slot`: its deltas (last first), backups and copies, then its
    /// primary file, so a crash part-way leaves a slot that still loads, or none.
    pub(super) fn delete(&self, slot: SlotId) -> Result<bool> {
        let name = slot.file_name();
        let _lock = lock_slot(&self.files, &name)?;
        let mut files: Vec<(u8, u64, String)> = self
            .files
            .list()?
            .into_iter()
            .filter_map(|f| {
                let order = match SlotFile::parse(&f)? {
                    found if found.slot() != slot => return None,
                    SlotFile::Delta(_, n) => (0, u64::MAX - n),
                    SlotFile::Journal(_)
                    | SlotFile::Staged(_)
                    | SlotFile::Synced(_)
                    | SlotFile::Conflict(_) => (1, 0),
                    SlotFile::Backup(_, i) => (2, u64::from(i)),
                    SlotFile::PreMigration(_, v) => (3, u64::from(v)),
                    SlotFile::Primary(_) => return None,
                };
                Some((order.0, order.1, f))
            })
            .collect();
        files.sort_unstable();
        let mut any = false;
        for (_, _, file) in files {
            self.files.delete(&file)?;
            any = true;
        }
        self.journals.clear(&self.files, &name);
        // Deleted even when missing: a storage may keep more under the name (a spare).
        any |= self.files.exists(&name)?;
        self.files.delete(&name)?;
        Ok(any)
    }

    /// An autosave: the rotation's empty slot, or else its oldest, never one holding a save
    /// from a newer version of the game.
    pub(super) fn autosave(&self, snapshot: &Snapshot) -> Result<SaveReport> {
        let _pick = lock(&self.autosave_lock);
        let slot = autosave::next_slot(&self.files, self.autosave_slots)?;
        self.save(slot, snapshot)
    }

    /// Appends `changes` to the slot's journal, then compacts when the journal has grown past
    /// its share of the base.
    pub(super) fn save_incremental(&self, slot: SlotId, changes: &Snapshot) -> Result<DeltaReport> {
        let name = slot.file_name();
        let held = lock_slot(&self.files, &name)?;
        let (base, base_len) = self.checked_base(slot, &name, changes.codec())?;
        let next = self.journals.state(&self.files, slot, &name, &base)?;
        let state = next.state;
        if changes.is_empty()
            && changes.deleted_ids().len() == 0
            && changes.metadata().shows_as(&self.shown(&name, &base))
        {
            // Nothing to write: an empty delta would only grow the journal.
            return Ok(DeltaReport {
                slot,
                sequence: state.next_sequence - 1,
                wrote: false,
                bytes: 0,
                journal_bytes: state.len,
                compacted: None,
                compaction_error: None,
            });
        }
        let record = changes.seal_delta(
            slot,
            self.files.schema_version,
            base.generation,
            state.next_sequence,
            self.files.seal_with(0),
        )?;
        let journal_len = state.len + record.len() as u64;
        if journal_len > self.files.max_file_size {
            return Err(Error::TooLarge {
                path: self.files.storage.locate(&crate::slot::journal_name(&name)),
                size: journal_len,
                limit: self.files.max_file_size,
            });
        }
        self.journals.append(&self.files, &name, next, &record)?;
        let mut report = DeltaReport {
            slot,
            sequence: state.next_sequence,
            wrote: true,
            bytes: record.len() as u64,
            journal_bytes: journal_len,
            compacted: None,
            compaction_error: None,
        };
        if journal_len.saturating_mul(100)
            > base_len.saturating_mul(u64::from(self.compact_percent))
        {
            match self.compact_locked(slot, &held) {
                Ok((saved, _)) => report.compacted = Some(saved),
                Err(e) => report.compaction_error = Some(e),
            }
        }
        Ok(report)
    }

    /// What the load menu shows of the slot whose base is `base`: its newest delta's metadata,
    /// else the base's.
    fn shown(&self, name: &str, base: &Header) -> crate::format::Metadata {
        self.journals
            .summary(&self.files, name, base.generation)
            .latest
            .map_or_else(|| base.metadata.clone(), |h| h.metadata)
    }

    /// Merges the slot's base and deltas into a new base, with the slot's lock taken; also
    /// returns the generation and the delta count it merged.
    pub(super) fn compact(&self, slot: SlotId) -> Result<(SaveReport, (u64, u32))> {
        let held = lock_slot(&self.files, &slot.file_name())?;
        self.compact_locked(slot, &held)
    }

    /// A compaction with the slot's lock held. It refuses a slot whose base is damaged: the
    /// base it would merge is a backup, older than the deltas, and a new base written from it
    /// would roll the slot back and drop them for good. Its load is under the lock, so a
    /// damaged base is damage on the disk, not a save half-way through; and it never applies
    /// a delta whose store failed (see [`journal`](super::journal)).
    fn compact_locked(&self, slot: SlotId, held: &StorageLock) -> Result<(SaveReport, (u64, u32))> {
        let loaded = self.load_locked(slot, held)?;
        let merged = (loaded.report.header.generation, loaded.report.deltas);
        if let Some(backup) = loaded.report.recovered_from_backup {
            let problem = loaded.report.primary_problem.unwrap_or_default();
            return Err(Error::FullSaveNeeded {
                slot,
                reason: format!(
                    "its save is damaged ({problem}); compacting would roll it back to backup \
                     {backup}"
                ),
            });
        }
        Ok((self.save_locked(slot, &loaded.snapshot)?, merged))
    }

    /// The slot's base, checked in full: deltas may only be appended to a sound base at the
    /// current schema version.
    fn checked_base(&self, slot: SlotId, name: &str, codec: Codec) -> Result<(Header, u64)> {
        let full_save = |reason: String| Error::FullSaveNeeded { slot, reason };
        let (header, len) = match self.files.read_header(name) {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Error::SlotEmpty { slot }),
            Err(e) => return Err(full_save(format!("its save is damaged ({e})"))),
        };
        if header.schema_version > self.files.schema_version {
            return Err(Error::NewerSchema {
                found: header.schema_version,
                supported: self.files.schema_version,
            });
        }
        if header.schema_version < self.files.schema_version {
            return Err(full_save(format!(
                "its save is at schema version {}, older than the game's {}",
                header.schema_version, self.files.schema_version
            )));
        }
        if header.slot != slot {
            return Err(Error::SlotMismatch {
                expected: slot,
                found: header.slot,
            });
        }
        if header.codec != codec {
            // A delta's mementos are merged into its base as bytes, in the base's codec.
            return Err(full_save(format!(
                "its save is in {}, the changes in {}",
                header.codec.name(),
                codec.name()
            )));
        }
        // Checked in full, a piece at a time, unless a check since its last change stands for
        // it (see `verified`): a delta on a base damaged since it was written would be
        // dropped by the next load, which falls back to a backup.
        // The shared clock: `SystemTime::now()` panics in a browser.
        let taken = crate::format::now();
        let identity = self.files.storage.identity(name).ok().flatten();
        if !self.verified.vouches(name, identity, taken) {
            self.files.check_stored(name, len).map_err(|e| match e {
                e if e.is_corruption() => full_save(format!("its save is damaged ({e})")),
                e => e,
            })?;
            self.verified.passed(name, identity, taken);
        }
        Ok((header, len))
    }
}

/// The next file a load tries: the primary first, then (listed on first need) each backup,
/// newest first.
fn next_candidate(
    candidates: &mut Vec<(String, Option<u32>)>,
    listed: &mut bool,
    backups: impl FnOnce() -> Result<Vec<(String, Option<u32>)>>,
) -> Result<Option<(String, Option<u32>)>> {
    if candidates.is_empty() && !*listed {
        *listed = true;
        let mut found = backups()?;
        // Popped from the end: the newest last.
        found.reverse();
        *candidates = found;
    }
    Ok(candidates.pop())
}
