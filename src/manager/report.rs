//! What the manager's operations report: a save, a delta, a load, a migration plan.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::Error;
use crate::format::Header;
use crate::migrate::StepInfo;
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// What [`SaveLoadManager::save`](crate::SaveLoadManager::save) wrote.
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
    /// How many incremental saves (deltas from the slot's journal) were applied on top of the
    /// base file.
    pub deltas: u32,
    /// Why the journal's deltas stopped before its end, when they did: a torn delta left by a
    /// crash (dropped), a damaged one, or deltas written for another base (for example when the
    /// base was recovered from a backup).
    pub journal_problem: Option<String>,
    /// The loaded file's header.
    pub header: Header,
}

/// What [`SaveLoadManager::plan_migration`](crate::SaveLoadManager::plan_migration) found: which steps loading a slot would run.
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

/// What [`SaveLoadManager::save_incremental`](crate::SaveLoadManager::save_incremental) wrote.
#[derive(Debug)]
#[non_exhaustive]
pub struct DeltaReport {
    /// The slot.
    pub slot: SlotId,
    /// The delta's number since its base (1 for the first); for changes with nothing in them,
    /// the slot's last delta's (0 when it has none), since nothing was written.
    pub sequence: u64,
    /// Whether a delta was written: `false` when the changes held no memento, no deletion and
    /// no new metadata, so the journal was left as it was and a game can skip its "saved" toast.
    pub wrote: bool,
    /// The delta's size in bytes: 0 when the changes held no memento, no deletion and no new
    /// metadata, and nothing was written (the journal does not grow).
    pub bytes: u64,
    /// The journal's size after the append.
    pub journal_bytes: u64,
    /// The new base, when the journal outgrew its share of the base and was compacted.
    pub compacted: Option<SaveReport>,
    /// Why compaction failed, when it did. The delta itself is on disk either way; compaction
    /// is tried again after the next incremental save.
    pub compaction_error: Option<Error>,
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
