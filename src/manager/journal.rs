//! Incremental saves: deltas kept beside a slot's base (a journal, or one object each), merged
//! on load, compacted into a new base when they grow.
//!
//! A slot with deltas is its primary file (the base) plus its deltas: records of the save format
//! of kind 2, each sealed and checksummed on its own. On a storage that appends they follow one
//! another in `<slot file>.journal`; on one that cannot, each is an object of its own,
//! `<slot file>.d000001` and on (see [`crate::slot`]), and a put is atomic, so no record is ever
//! torn. A delta
//! names its base by generation and carries a sequence number from 1. A load applies the
//! deltas that fit the base it loaded, in order, and stops at the first that does not: a torn
//! record at the end (a crash during an append), a damaged one, one for another base (a crash
//! between a compaction and the journal's removal, or a base recovered from a backup). The next
//! incremental save drops such a tail before it appends. A full save writes a new base and
//! removes the journal (or the delta objects, last first, so a crash leaves a prefix).
//!
//! A slot's deltas are read and written in the form its storage supports. Deltas in the other
//! form (a folder written by a storage of the other kind) are not applied, and the load reports
//! them rather than drop them unseen.
//!
//! # A failed write is final
//!
//! A delta whose append failed (its write, or its fsync: on Linux a failed fsync marks the
//! pages it failed to write clean, so they stay readable until a power cut and are gone after
//! it, whatever later fsyncs do) may be in the journal, whole and readable. Nothing may build
//! on it, and no load may return it:
//!
//! - Before the failed incremental save returns its error, the delta is cut away: the journal
//!   is put again (crash-safely: a new file, fsynced, renamed over it) with the records before
//!   it, or removed when there were none; a delta object is deleted.
//! - Should the cut fail too, the manager keeps the failed record: its loads stop before it
//!   (the report says why), and its next incremental save cuts it away as it writes the next
//!   delta. A compaction merges only what such a load gives.
//! - The manager appends only at an end it made durable itself (an append whose fsync
//!   succeeded, or a put). A journal it has not written so (its first incremental save of a
//!   run, or after another process appended) is put again whole with the new record instead:
//!   every byte written again and fsynced, so a record whose fsync failed in another process
//!   that could not cut it, readable from the page cache, is made durable rather than left a
//!   hole under the records after it.
//!
//! *Limits:* a manager that never learnt of the failure (another process, or this one after a
//! restart) sees a failed record that could not be cut as any other, and loads it, until a
//! power cut takes it (the load then stops before it). A delta whose bytes were fsynced and
//! whose only failure was the folder's fsync (for a new journal or a delta object), and that
//! could not be cut away either, is in place as a full save in the same case is: it may
//! survive a power cut.

use std::collections::HashMap;
use std::sync::Mutex;

use super::files::Files;
use super::locks::lock;
use crate::error::{Error, Result};
use crate::format::{self, FileKind, Header};
use crate::slot::{SlotFile, SlotId, delta_name, journal_name};
use crate::snapshot::Snapshot;

/// How many delta objects of the slot whose primary file is `name` there are, numbered 1, 2, …
/// without a gap: found by asking for each in turn, so no listing is needed.
fn count_objects(files: &Files, name: &str) -> Result<u64> {
    let mut n = 0;
    while files.exists(&delta_name(name, n + 1))? {
        n += 1;
    }
    Ok(n)
}

/// Deletes delta objects `to` down to `from` (inclusive) of `name`, highest first, so a crash
/// part-way leaves a run without a gap.
fn delete_objects(files: &Files, name: &str, from: u64, to: u64) -> Result<()> {
    for n in (from..=to).rev() {
        files.delete(&delta_name(name, n))?;
    }
    Ok(())
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

/// Where the next delta goes: after the deltas `state` describes, appended, or (`rewrite`)
/// with the journal put again whole, its valid records first.
#[derive(Debug)]
pub(crate) struct Next {
    pub(super) state: JournalState,
    rewrite: Option<Vec<u8>>,
}

/// The deltas for one base whose store failed and that could not be cut away: their records
/// (each may still be in the journal, or in place as an object, until a store succeeds).
#[derive(Debug, Clone)]
struct Failed {
    base_generation: u64,
    records: Vec<Vec<u8>>,
}

/// The journals a manager made durable itself: where each ends, for which base; and the
/// deltas whose store failed that are still to be cut away.
#[derive(Debug, Default)]
pub(crate) struct Journals {
    known: Mutex<HashMap<String, JournalState>>,
    failed: Mutex<HashMap<String, Failed>>,
}

impl Journals {
    /// Forgets what is known of the deltas of the slot whose primary file is `name`: where they
    /// end is unknown until they are read again.
    fn forget(&self, name: &str) {
        lock(&self.known).remove(name);
    }

    /// The records of deltas for `base_generation` of `name` whose store failed and that are
    /// still to be cut away.
    fn failed(&self, name: &str, base_generation: u64) -> Vec<Vec<u8>> {
        lock(&self.failed)
            .get(name)
            .filter(|f| f.base_generation == base_generation)
            .map_or_else(Vec::new, |f| f.records.clone())
    }

    /// Removes every delta of the slot whose primary file is `name`, after a full save made
    /// them obsolete. Best effort: deltas that remain name the old base's generation, are
    /// ignored by loads, and are dropped by the next incremental save.
    pub(super) fn clear(&self, files: &Files, name: &str) {
        self.forget(name);
        lock(&self.failed).remove(name);
        if files.storage.can_append() {
            let _ = files.delete(&journal_name(name));
        } else if let Ok(count) = count_objects(files, name) {
            let _ = delete_objects(files, name, 1, count);
        }
    }

    /// Where the slot's next delta goes. Appended after the end this manager made durable, if
    /// the journal still ends there; else the deltas are read, and those that fit `base` (not
    /// a torn, damaged or stale tail, nor a delta whose store failed) are kept: the journal is
    /// to be put again with them and the new record (see the module docs), and delta objects
    /// past them are deleted, last first.
    pub(super) fn state(
        &self,
        files: &Files,
        slot: SlotId,
        name: &str,
        base: &Header,
    ) -> Result<Next> {
        let known = lock(&self.known).get(name).copied();
        let appends = files.storage.can_append();
        if let Some(state) = known
            && state.base_generation == base.generation
        {
            // Still where this manager left it: nothing was appended by anyone else since.
            let unchanged = if appends {
                let on_disk = files
                    .read_at(&journal_name(name), 0, 0)?
                    .map_or(0, |h| h.file_len);
                on_disk == state.len
            } else {
                !files.exists(&delta_name(name, state.next_sequence))?
            };
            if unchanged {
                return Ok(Next {
                    state,
                    rewrite: None,
                });
            }
        }
        let stored = self.read(files, name)?;
        let failed = self.failed(name, base.generation);
        let scan = self.scan(files, slot, &stored.bytes, base, &failed);
        let state = JournalState {
            base_generation: base.generation,
            len: scan.valid_len as u64,
            next_sequence: scan.records.len() as u64 + 1,
        };
        if !appends {
            delete_objects(files, name, state.next_sequence, stored.objects)?;
            return Ok(Next {
                state,
                rewrite: None,
            });
        }
        // A journal that exists, not made durable by this manager: put again whole.
        let exists = stored.objects > 0;
        let rewrite = exists.then(|| stored.bytes[..scan.valid_len].to_vec());
        Ok(Next { state, rewrite })
    }

    /// Stores `record`, delta number `next.state.next_sequence`, durably: appended to the
    /// journal, put with it again whole, or put as an object of its own. Should that fail, the
    /// delta is cut away before the error is returned (see the module docs).
    ///
    /// # Errors
    /// The storage's error storing the delta; the slot's deltas are then as `next.state` says
    /// (or, if the cut failed too, the manager's loads and next delta ignore the failed one).
    pub(super) fn append(
        &self,
        files: &Files,
        name: &str,
        next: Next,
        record: &[u8],
    ) -> Result<JournalState> {
        // Until the delta is known to be durable, the journal's end is unknown.
        self.forget(name);
        let state = next.state;
        let journal = journal_name(name);
        let stored = if !files.storage.can_append() {
            files.put(&delta_name(name, state.next_sequence), record)
        } else if let Some(valid) = &next.rewrite {
            files.put(&journal, &[valid.as_slice(), record].concat())
        } else {
            files
                .storage
                .append(&journal, record)
                .map_err(|e| files.error(&journal, e))
        };
        if let Err(e) = stored {
            match self.cut(files, name, &next) {
                // The deltas are those before it, durably: none that failed is left.
                Ok(()) => {
                    lock(&self.failed).remove(name);
                    lock(&self.known).insert(name.to_owned(), state);
                }
                Err(_) => {
                    // Kept with any earlier one not cut away either: which of them is on the
                    // disk depends on where each store failed.
                    let mut failed = lock(&self.failed);
                    let entry = failed.entry(name.to_owned()).or_insert_with(|| Failed {
                        base_generation: state.base_generation,
                        records: Vec::new(),
                    });
                    if entry.base_generation != state.base_generation {
                        entry.base_generation = state.base_generation;
                        entry.records.clear();
                    }
                    entry.records.push(record.to_vec());
                }
            }
            return Err(e);
        }
        lock(&self.failed).remove(name);
        let next = JournalState {
            base_generation: state.base_generation,
            len: state.len + record.len() as u64,
            next_sequence: state.next_sequence + 1,
        };
        lock(&self.known).insert(name.to_owned(), next);
        Ok(next)
    }

    /// Cuts away whatever a failed store of the delta after `next.state` left: the journal
    /// put again with the records before it (removed if there were none), or the delta's
    /// object deleted. Durable when it returns `Ok`.
    fn cut(&self, files: &Files, name: &str, next: &Next) -> Result<()> {
        let state = next.state;
        if !files.storage.can_append() {
            return files.delete(&delta_name(name, state.next_sequence));
        }
        let journal = journal_name(name);
        if state.len == 0 {
            return files.delete(&journal);
        }
        let valid = match &next.rewrite {
            Some(valid) => valid.clone(),
            None => {
                let len = usize::try_from(state.len).unwrap_or(usize::MAX);
                match files.read(&journal)? {
                    Some(mut bytes) if bytes.len() >= len => {
                        bytes.truncate(len);
                        bytes
                    }
                    _ => return Err(Error::malformed("the journal changed while it was cut")),
                }
            }
        };
        files.put(&journal, &valid)
    }

    /// The slot's deltas as one run of records, in the form its storage keeps them.
    fn read(&self, files: &Files, name: &str) -> Result<Stored> {
        if files.storage.can_append() {
            return Ok(match files.read(&journal_name(name))? {
                Some(bytes) => Stored { bytes, objects: 1 },
                None => Stored {
                    bytes: Vec::new(),
                    objects: 0,
                },
            });
        }
        let mut stored = Stored {
            bytes: Vec::new(),
            objects: 0,
        };
        while let Some(record) = files.read(&delta_name(name, stored.objects + 1))? {
            stored.bytes.extend_from_slice(&record);
            stored.objects += 1;
        }
        Ok(stored)
    }

    /// Applies the slot's deltas that fit `base` to `snapshot` (never one whose store failed):
    /// how many, and why it stopped early, if it did.
    pub(super) fn apply(
        &self,
        files: &Files,
        slot: SlotId,
        name: &str,
        base: &Header,
        snapshot: &mut Snapshot,
    ) -> Result<(u32, Option<String>)> {
        let stored = match self.read(files, name) {
            Ok(stored) => stored,
            Err(e) if e.is_corruption() => return Ok((0, Some(e.to_string()))),
            Err(e) => return Err(e),
        };
        // What a load reads is not known to be durable: it may hold a record whose fsync
        // failed elsewhere. Only this manager's own writes tell it where it may append.
        let failed = self.failed(name, base.generation);
        let scan = self.scan(files, slot, &stored.bytes, base, &failed);
        let count = scan.records.len();
        for record in scan.records {
            snapshot.apply_delta(record);
        }
        let problem = scan.problem.or_else(|| other_form(files, name));
        Ok((count as u32, problem))
    }

    /// Reads a run of records, in order, as far as they fit `base`, and up to any of
    /// `failed`, records whose store failed.
    fn scan(
        &self,
        files: &Files,
        slot: SlotId,
        bytes: &[u8],
        base: &Header,
        failed: &[Vec<u8>],
    ) -> Scan {
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
            if failed.iter().any(|f| f.as_slice() == &rest[..len]) {
                scan.problem = Some(format!(
                    "delta {number} was not saved (storing it failed) and was not applied"
                ));
                break;
            }
            let opened = match format::open(
                rest[..len].to_vec(),
                FileKind::Delta,
                files.trust(),
                files.max_file_size,
                files.threads,
            ) {
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

    /// The base generation leftover deltas were written for (0 if none or unreadable): a new
    /// base must never reuse it.
    pub(super) fn generation(&self, files: &Files, name: &str) -> u64 {
        let first = if files.storage.can_append() {
            journal_name(name)
        } else {
            delta_name(name, 1)
        };
        files
            .read_header_at(&first, 0, false)
            .ok()
            .flatten()
            .map_or(0, |(h, _)| h.generation)
    }

    /// How many deltas for `base_generation` the slot holds, and the newest one's header, from
    /// record headers alone.
    pub(super) fn summary(&self, files: &Files, name: &str, base_generation: u64) -> Summary {
        let mut summary = Summary::default();
        let fits = |header: &Header| {
            header.kind == FileKind::Delta && header.generation == base_generation
        };
        if !files.storage.can_append() {
            for n in 1.. {
                match files.read_header_at(&delta_name(name, n), 0, true) {
                    Ok(Some((header, len))) if fits(&header) => {
                        summary.deltas += 1;
                        summary.len += len;
                        summary.latest = Some(header);
                    }
                    _ => break,
                }
            }
            return summary;
        }
        let journal = journal_name(name);
        let Ok(Some(head)) = files.read_at(&journal, 0, 0) else {
            return summary;
        };
        summary.len = head.file_len;
        let mut offset = 0u64;
        while offset < summary.len {
            let Ok(Some((header, _))) = files.read_header_at(&journal, offset, false) else {
                break;
            };
            let end = offset.saturating_add(header.sections().crc.end);
            if !fits(&header) || end > summary.len {
                break;
            }
            summary.deltas += 1;
            summary.latest = Some(header);
            offset = end;
        }
        summary
    }
}

/// The slot's records as one run of bytes.
struct Stored {
    bytes: Vec<u8>,
    /// How many objects they were read from: delta objects, or the journal (0 when there is
    /// none, else 1).
    objects: u64,
}

/// Why deltas of the slot in the form its storage does not keep (a folder written by a
/// storage of the other kind) were not applied, when there are any.
fn other_form(files: &Files, name: &str) -> Option<String> {
    let (other, form) = if files.storage.can_append() {
        (
            delta_name(name, 1),
            "delta objects (written by a storage that cannot append)",
        )
    } else {
        (
            journal_name(name),
            "a journal (written by a storage that appends)",
        )
    };
    files.exists(&other).ok()?.then(|| {
        format!(
            "the slot has {form} that were not applied: open it with that storage and compact \
             it, or save it in full"
        )
    })
}

/// Whether a slot has deltas of any form in `listing`.
pub(super) fn has_deltas(listing: &[String], slot: SlotId) -> bool {
    listing.iter().any(|f| {
        matches!(SlotFile::parse(f), Some(SlotFile::Journal(s) | SlotFile::Delta(s, _)) if s == slot)
    })
}
