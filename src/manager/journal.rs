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

use std::collections::HashMap;
use std::sync::Mutex;

use super::files::Files;
use super::locks::lock;
use crate::error::Result;
use crate::format::{self, FileKind, Header};
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// The journal of the slot whose primary file is `name`: `slot-003.sav.journal`.
pub(super) fn journal_name(name: &str) -> String {
    format!("{name}.journal")
}

/// What the manager knows of a journal it appended to or read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JournalState {
    /// The generation of the base its deltas are for.
    pub(super) base_generation: u64,
    /// Where it ends.
    pub(super) len: u64,
    /// The sequence number of the next delta.
    pub(super) next_sequence: u64,
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

/// The journals a manager appended to or read whole: where each ends, for which base.
#[derive(Debug, Default)]
pub(crate) struct Journals {
    known: Mutex<HashMap<String, JournalState>>,
}

impl Journals {
    /// Forgets what is known of `journal`: its end is unknown until it is read again.
    pub(super) fn forget(&self, journal: &str) {
        lock(&self.known).remove(journal);
    }

    /// Records that `journal` now ends at `len` with deltas for `base_generation`, the next
    /// one numbered `next_sequence`.
    pub(super) fn appended(&self, journal: &str, state: JournalState) {
        lock(&self.known).insert(journal.to_owned(), state);
    }

    /// Where the journal ends and which sequence number comes next; a torn, damaged or stale
    /// tail is dropped first (crash-safely: the journal is rewritten without it).
    pub(super) fn state(
        &self,
        files: &Files,
        slot: SlotId,
        journal: &str,
        base: &Header,
    ) -> Result<JournalState> {
        let on_disk = files
            .storage
            .read_head(journal, 0)?
            .map_or(0, |h| h.file_len);
        let known = lock(&self.known).get(journal).copied();
        if let Some(state) = known
            && state.base_generation == base.generation
            && state.len == on_disk
        {
            return Ok(state);
        }
        let bytes = files
            .storage
            .read(journal, files.max_file_size)?
            .unwrap_or_default();
        let scan = self.scan(files, slot, &bytes, base);
        if scan.valid_len < bytes.len() {
            if scan.valid_len == 0 {
                files.storage.remove(journal)?;
            } else {
                files.storage.write(journal, &bytes[..scan.valid_len], 0)?;
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
    pub(super) fn apply(
        &self,
        files: &Files,
        slot: SlotId,
        journal: &str,
        base: &Header,
        snapshot: &mut Snapshot,
    ) -> Result<(u32, Option<String>)> {
        let bytes = match files.storage.read(journal, files.max_file_size) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok((0, None)),
            Err(e) if e.is_corruption() => return Ok((0, Some(e.to_string()))),
            Err(e) => return Err(e),
        };
        let scan = self.scan(files, slot, &bytes, base);
        let count = scan.records.len();
        if scan.valid_len == bytes.len() {
            lock(&self.known).insert(
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
    fn scan(&self, files: &Files, slot: SlotId, bytes: &[u8], base: &Header) -> Scan {
        let mut scan = Scan::default();
        while scan.valid_len < bytes.len() {
            let offset = scan.valid_len;
            let rest = &bytes[offset..];
            let len = match format::record_len(rest) {
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
                match format::open(rest[..len].to_vec(), FileKind::Delta, files.key.as_ref()) {
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
            } else if header.codec != base.codec {
                // Its mementos would be decoded in the base's codec: wrong values, silently.
                Some(format!(
                    "delta {number} is in {}, its base in {}",
                    header.codec.name(),
                    base.codec.name()
                ))
            } else if opened.sequence != number {
                Some(format!(
                    "delta {number} carries sequence number {}",
                    opened.sequence
                ))
            } else {
                files
                    .check_file(slot, header)
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
    pub(super) fn generation(&self, files: &Files, journal: &str) -> u64 {
        files
            .read_header_at(journal, 0, false)
            .ok()
            .flatten()
            .map_or(0, |(h, _)| h.generation)
    }

    /// How many deltas for `base_generation` the journal holds, and the newest one's header,
    /// from record headers alone.
    pub(super) fn summary(&self, files: &Files, journal: &str, base_generation: u64) -> Summary {
        let mut summary = Summary::default();
        let Ok(Some(head)) = files.storage.read_head(journal, 0) else {
            return summary;
        };
        summary.len = head.file_len;
        let mut offset = 0u64;
        while offset < summary.len {
            let Ok(Some((header, _))) = files.read_header_at(journal, offset, false) else {
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
