//! Incremental saves: deltas appended to a slot's journal, merged on load, compacted into a new
//! base when they grow.
//!
//! A slot with deltas is its primary file (the base) plus `<slot file>.journal`: records of the
//! save format of kind 2, one after another, each sealed and checksummed on its own. A delta
//! names its base by generation and carries a sequence number from 1. A load applies the
//! deltas that fit the base it loaded, in order, and stops at the first that does not: a torn
//! record at the end (a crash during an append), a damaged one, one for another base (a crash
//! between a compaction and the journal's removal, or a base recovered from a backup). The next
//! incremental save drops such a tail before it appends. A full save writes a new base and
//! removes the journal.

use super::engine::{Engine, lock};
use super::{DeltaReport, SaveReport};
use crate::envelope::{self, FileKind, Header};
use crate::error::{Error, Result};
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// The journal of the slot whose primary file is `name`: `slot-003.sav.journal`.
pub(super) fn journal_name(name: &str) -> String {
    format!("{name}.journal")
}

/// What the manager knows of a journal it appended to or read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JournalState {
    base_generation: u64,
    len: u64,
    next_sequence: u64,
}

/// What a load menu shows of a journal, from record headers alone.
#[derive(Debug, Default)]
pub(super) struct Summary {
    pub deltas: u32,
    pub latest: Option<Header>,
    pub len: u64,
}

/// What reading a whole journal found.
#[derive(Default)]
struct Scan {
    records: Vec<Snapshot>,
    valid_len: usize,
    problem: Option<String>,
}

impl Engine {
    /// Appends `changes` to the slot's journal, then compacts when the journal has grown past
    /// its share of the base.
    pub(super) fn save_incremental(&self, slot: SlotId, changes: &Snapshot) -> Result<DeltaReport> {
        let name = slot.file_name();
        let journal = journal_name(&name);
        let _lock = self.storage.lock(&name)?;
        let (base, base_len) = self.checked_base(slot, &name)?;
        let state = self.journal_state(slot, &journal, &base)?;
        let record = changes.seal_delta(
            slot,
            self.schema_version,
            base.generation,
            state.next_sequence,
            self.key.as_ref(),
        )?;
        let journal_len = state.len + record.len() as u64;
        if journal_len > self.max_file_size {
            return Err(Error::TooLarge {
                path: self.storage.locate(&journal),
                size: journal_len,
                limit: self.max_file_size,
            });
        }
        // Until the append is known to have completed, the journal's end is unknown.
        lock(&self.journals).remove(&journal);
        self.storage.append(&journal, &record)?;
        lock(&self.journals).insert(
            journal,
            JournalState {
                base_generation: base.generation,
                len: journal_len,
                next_sequence: state.next_sequence + 1,
            },
        );
        let mut report = DeltaReport {
            slot,
            sequence: state.next_sequence,
            bytes: record.len() as u64,
            journal_bytes: journal_len,
            compacted: None,
            compaction_error: None,
        };
        if journal_len.saturating_mul(100)
            > base_len.saturating_mul(u64::from(self.compact_percent))
        {
            match self.compact_locked(slot) {
                Ok(saved) => report.compacted = Some(saved),
                Err(e) => report.compaction_error = Some(e),
            }
        }
        Ok(report)
    }

    /// Merges the slot's base and deltas into a new base, with the slot's lock taken.
    pub(super) fn compact(&self, slot: SlotId) -> Result<SaveReport> {
        let _lock = self.storage.lock(&slot.file_name())?;
        self.compact_locked(slot)
    }

    /// A compaction with the slot's lock held. It refuses a slot whose base is damaged: the
    /// base it would merge is a backup, older than the deltas, and a new base written from it
    /// would roll the slot back and drop them for good.
    fn compact_locked(&self, slot: SlotId) -> Result<SaveReport> {
        let loaded = self.load_unlocked(slot)?;
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
        self.save_locked(slot, &loaded.snapshot)
    }

    /// The slot's base, checked in full: deltas may only be appended to a sound base at the
    /// current schema version.
    fn checked_base(&self, slot: SlotId, name: &str) -> Result<(Header, u64)> {
        let full_save = |reason: String| Error::FullSaveNeeded { slot, reason };
        let (header, len) = match self.read_header(name) {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Error::SlotEmpty { slot }),
            Err(e) => return Err(full_save(format!("its save is damaged ({e})"))),
        };
        if header.schema_version > self.schema_version {
            return Err(Error::NewerSchema {
                found: header.schema_version,
                supported: self.schema_version,
            });
        }
        if header.schema_version < self.schema_version {
            return Err(full_save(format!(
                "its save is at schema version {}, older than the game's {}",
                header.schema_version, self.schema_version
            )));
        }
        if header.slot != slot {
            return Err(Error::SlotMismatch {
                expected: slot,
                found: header.slot,
            });
        }
        // Checked in full every time, a piece at a time: a delta on a base damaged since it was
        // written would be dropped by the next load, which falls back to a backup.
        self.check_stored(name, len).map_err(|e| match e {
            e if e.is_corruption() => full_save(format!("its save is damaged ({e})")),
            e => e,
        })?;
        Ok((header, len))
    }

    /// Where the journal ends and which sequence number comes next; a torn, damaged or stale
    /// tail is dropped first (crash-safely: the journal is rewritten without it).
    fn journal_state(&self, slot: SlotId, journal: &str, base: &Header) -> Result<JournalState> {
        let on_disk = self
            .storage
            .read_head(journal, 0)?
            .map_or(0, |h| h.file_len);
        let known = lock(&self.journals).get(journal).copied();
        if let Some(state) = known
            && state.base_generation == base.generation
            && state.len == on_disk
        {
            return Ok(state);
        }
        let bytes = self
            .storage
            .read(journal, self.max_file_size)?
            .unwrap_or_default();
        let scan = self.scan(slot, &bytes, base);
        if scan.valid_len < bytes.len() {
            if scan.valid_len == 0 {
                self.storage.remove(journal)?;
            } else {
                self.storage.write(journal, &bytes[..scan.valid_len], 0)?;
            }
        }
        Ok(JournalState {
            base_generation: base.generation,
            len: scan.valid_len as u64,
            next_sequence: scan.records.len() as u64 + 1,
        })
    }

    /// Applies the journal's deltas that fit `base` to `snapshot`: how many, and why it
    /// stopped early, if it did.
    pub(super) fn apply_journal(
        &self,
        slot: SlotId,
        journal: &str,
        base: &Header,
        snapshot: &mut Snapshot,
    ) -> Result<(u32, Option<String>)> {
        let bytes = match self.storage.read(journal, self.max_file_size) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok((0, None)),
            Err(e) if e.is_corruption() => return Ok((0, Some(e.to_string()))),
            Err(e) => return Err(e),
        };
        let scan = self.scan(slot, &bytes, base);
        let count = scan.records.len();
        if scan.valid_len == bytes.len() {
            lock(&self.journals).insert(
                journal.to_owned(),
                JournalState {
                    base_generation: base.generation,
                    len: bytes.len() as u64,
                    next_sequence: count as u64 + 1,
                },
            );
        }
        for record in scan.records {
            snapshot.apply_delta(record);
        }
        Ok((count as u32, scan.problem))
    }

    /// Reads a journal's records, in order, as far as they fit `base`.
    fn scan(&self, slot: SlotId, bytes: &[u8], base: &Header) -> Scan {
        let mut scan = Scan::default();
        while scan.valid_len < bytes.len() {
            let offset = scan.valid_len;
            let rest = &bytes[offset..];
            let len = match envelope::record_len(rest) {
                Ok(Some(len)) => len,
                Ok(None) => {
                    scan.problem = Some(format!(
                        "a torn delta at byte {offset} of the journal was dropped"
                    ));
                    break;
                }
                Err(e) => {
                    scan.problem = Some(format!("the journal is damaged at byte {offset}: {e}"));
                    break;
                }
            };
            let number = scan.records.len() as u64 + 1;
            let opened =
                match envelope::open(rest[..len].to_vec(), FileKind::Delta, self.key.as_ref()) {
                    Ok(opened) => opened,
                    Err(e) => {
                        scan.problem = Some(format!("delta {number} is damaged: {e}"));
                        break;
                    }
                };
            let header = &opened.header;
            let problem = if header.generation != base.generation {
                Some(format!(
                    "delta {number} belongs to base generation {}, not {}; it and any after it \
                     were not applied",
                    header.generation, base.generation
                ))
            } else if header.schema_version != base.schema_version {
                Some(format!(
                    "delta {number} is at schema version {}, its base at {}",
                    header.schema_version, base.schema_version
                ))
            } else if opened.sequence != number {
                Some(format!(
                    "delta {number} carries sequence number {}",
                    opened.sequence
                ))
            } else {
                self.check_file(slot, header)
                    .err()
                    .map(|e| format!("delta {number}: {e}"))
            };
            if problem.is_some() {
                scan.problem = problem;
                break;
            }
            scan.records.push(Snapshot::from_opened(opened));
            scan.valid_len = offset + len;
        }
        scan
    }

    /// The base generation a leftover journal was written for (0 if none or unreadable).
    pub(super) fn journal_generation(&self, journal: &str) -> u64 {
        self.read_header_at(journal, 0, false)
            .ok()
            .flatten()
            .map_or(0, |(h, _)| h.generation)
    }

    /// How many deltas for `base_generation` the journal holds, and the newest one's header,
    /// from record headers alone.
    pub(super) fn journal_summary(&self, journal: &str, base_generation: u64) -> Summary {
        let mut summary = Summary::default();
        let Ok(Some(head)) = self.storage.read_head(journal, 0) else {
            return summary;
        };
        summary.len = head.file_len;
        let mut offset = 0u64;
        while offset < summary.len {
            let Ok(Some((header, _))) = self.read_header_at(journal, offset, false) else {
                break;
            };
            let end = offset.saturating_add(header.sections().crc.end);
            let fits = header.kind == FileKind::Delta && header.generation == base_generation;
            if !fits || end > summary.len {
                break;
            }
            summary.deltas += 1;
            summary.latest = Some(header);
            offset = end;
        }
        summary
    }
}
