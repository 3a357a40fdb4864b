//! Saving and loading whole [`SaveState`]s, and the dirty tracking behind
//! [`save_state_incremental`](super::SaveLoadManager::save_state_incremental).
//!
//! **How changes are found.** The manager keeps, for each slot it saved a state to or loaded
//! one from, a fingerprint of every memento the slot holds: its length, its CRC32 and a 64-bit
//! XXH3 of its encoded bytes (16 bytes per memento, plus its id). An incremental save
//! captures the whole state, encodes every memento (work a full save does too), and writes
//! only those whose fingerprint changed, with the ids that are gone as deletions. The game
//! marks nothing: a memento is dirty exactly when its bytes differ from the slot's.
//!
//! Measured (`benches/state.rs`) on 100,000 entity mementos, an incremental save costs about
//! what capturing and encoding them costs (the fingerprints are a small part of it), about
//! half a full save; the CHANGELOG has the numbers. A fingerprint was chosen over a kept copy
//! of each memento's bytes (faster to compare for tiny mementos, but as much memory again as
//! the save) and over a hash alone (64 bits). XXH3 replaced a SipHash: over the 4.7 MB chunked
//! world, on the saving thread, 0.19 ms against 0.85 ms (the CRC32 takes 0.08 ms).
//! A codec whose output for equal values can differ (a `HashMap`'s
//! order in JSON or MessagePack) only makes extra mementos look changed: they are written
//! again, never missed. Two different mementos look the same only if their length, CRC32 and
//! XXH3 all agree.
//!
//! **When it writes a full save instead.** The fingerprints describe the slot as this manager
//! last wrote or read it: its base file's generation and how many deltas follow it. Before an
//! incremental save the slot's header says whether that is still so (another manager or
//! process, a plain [`save`](super::SaveLoadManager::save), a backup fallback or a migration
//! may have changed it since); if it is not, or the manager knows nothing of the slot yet, or
//! the slot needs a full save ([`Error::FullSaveNeeded`]), a full save is written, and the
//! report says why.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::SaveLoadManager;
use super::background::SaveHandle;
use super::engine::Engine;
use super::locks::lock;
use super::report::{DeltaReport, LoadReport, SaveReport};
use super::worker::Target;
use crate::codec::{Codec, Encodable};
use crate::error::{Error, Result};
use crate::format::{EncodeAhead, FileKind, InPlace, Metadata, SeeMementos, Source, StreamError};
use crate::slot::SlotId;
use crate::snapshot::{FileOf, SealWith, Snapshot, seal_entries, stream_entries};
use crate::state::{Members, RestoreReport, SaveState, encode_listed};
use crate::storage::StreamSink;

/// A memento's fingerprint: length and CRC32, then an XXH3-64 of its bytes.
type Fingerprint = (u64, u64);

fn fingerprint(bytes: &[u8]) -> Fingerprint {
    let head = ((bytes.len() as u64) << 32) | u64::from(crc32fast::hash(bytes));
    (head, twox_hash::XxHash3_64::oneshot(bytes))
}

/// The [`fingerprint`]s of a file's mementos, taken from their bytes as the file is written,
/// in one piece or in many (a save written as it is encoded shows each memento in pieces).
#[derive(Default)]
struct Fingerprinting {
    prints: HashMap<String, Fingerprint>,
    /// The memento being written: its length, CRC and XXH3 so far.
    len: u64,
    crc: crc32fast::Hasher,
    xxh: twox_hash::XxHash3_64,
}

impl Fingerprinting {
    /// Forgets everything seen (a file sealed again, after a first try that failed).
    fn clear(&mut self) {
        let prints = std::mem::take(&mut self.prints);
        *self = Fingerprinting {
            prints,
            ..Fingerprinting::default()
        };
        self.prints.clear();
    }
}

impl SeeMementos for Fingerprinting {
    fn piece(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        self.crc.update(bytes);
        std::hash::Hasher::write(&mut self.xxh, bytes);
    }

    fn end(&mut self, id: &str) {
        let crc = std::mem::take(&mut self.crc).finalize();
        let xxh = std::hash::Hasher::finish(&std::mem::take(&mut self.xxh));
        let head = (std::mem::take(&mut self.len) << 32) | u64::from(crc);
        self.prints.insert(id.to_owned(), (head, xxh));
    }
}

/// What the manager knows a slot holds.
#[derive(Debug)]
struct Baseline {
    codec: Codec,
    generation: u64,
    deltas: u32,
    mementos: HashMap<String, Fingerprint>,
    /// What the slot's load menu shows (its newest file's metadata): a state whose mementos
    /// are all unchanged still has something to write when this changed (the playtime, say).
    metadata: Metadata,
}

impl Baseline {
    fn of(snapshot: &Snapshot, generation: u64, deltas: u32) -> Result<Baseline> {
        let mut mementos = HashMap::with_capacity(snapshot.len());
        for id in snapshot.ids() {
            mementos.insert(id.to_owned(), fingerprint(snapshot.encoded(id)?));
        }
        Ok(Baseline {
            codec: snapshot.codec(),
            generation,
            deltas,
            mementos,
            metadata: snapshot.metadata().clone(),
        })
    }
}

impl Baseline {
    /// The slot took `report`'s delta of the `changed` mementos (with their fingerprints),
    /// the `deleted` ids and `metadata`; returns the changed ids.
    fn advance(
        &mut self,
        report: &DeltaReport,
        changed: Vec<(String, Fingerprint)>,
        deleted: &[String],
        metadata: &Metadata,
    ) -> Vec<String> {
        match &report.compacted {
            Some(base) => {
                self.generation = base.generation;
                self.deltas = 0;
            }
            None => self.deltas = u32::try_from(report.sequence).unwrap_or(u32::MAX),
        }
        for id in deleted {
            self.mementos.remove(id);
        }
        self.metadata = metadata.clone();
        changed
            .into_iter()
            .map(|(id, print)| {
                self.mementos.insert(id.clone(), print);
                id
            })
            .collect()
    }
}

/// What the manager knows of a slot.
#[derive(Debug)]
enum Known {
    /// The fingerprints of what it holds.
    Baseline(Baseline),
    /// A background state save to it is queued, which will put its fingerprints here.
    Queued,
}

/// The fingerprints of each slot's mementos.
#[derive(Debug, Default)]
pub(super) struct Baselines {
    slots: Mutex<HashMap<SlotId, Known>>,
}

impl Baselines {
    /// Takes what the manager knows of `slot`: its fingerprints, if it has them.
    fn take(&self, slot: SlotId) -> Option<Baseline> {
        match lock(&self.slots).remove(&slot) {
            Some(Known::Baseline(b)) => Some(b),
            _ => None,
        }
    }

    fn put(&self, slot: SlotId, baseline: Baseline) {
        lock(&self.slots).insert(slot, Known::Baseline(baseline));
    }

    /// The slot's base and deltas, at generation and count `merged`, were compacted into
    /// base `generation`: fingerprints taken of exactly them now stand for that base.
    pub(super) fn compacted(&self, slot: SlotId, merged: (u64, u32), generation: u64) {
        if let Some(Known::Baseline(b)) = lock(&self.slots).get_mut(&slot)
            && (b.generation, b.deltas) == merged
        {
            b.generation = generation;
            b.deltas = 0;
        }
    }

    /// Does the manager know, or expect to know, what `slot` holds?
    fn knows(&self, slot: SlotId) -> bool {
        lock(&self.slots).contains_key(&slot)
    }

    /// A background full save of a state to `slot` is queued.
    fn expect(&self, slot: SlotId) {
        lock(&self.slots).insert(slot, Known::Queued);
    }
}

/// What [`SaveLoadManager::load_state`](super::SaveLoadManager::load_state) did: where the
/// save came from, and how the state matched it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StateLoaded {
    /// Which file was loaded, and whether it was a backup or migrated.
    pub report: LoadReport,
    /// What was restored, and the ids on either side with no partner.
    pub restore: RestoreReport,
}

/// How [`SaveLoadManager::save_state_incremental`](super::SaveLoadManager::save_state_incremental)
/// wrote the state.
#[derive(Debug)]
#[non_exhaustive]
pub enum Written {
    /// Not at all: every memento, and what the load menu shows, are as the slot holds them.
    /// The journal does not grow.
    Nothing,
    /// As a delta appended to the slot's journal: only what changed.
    Delta(DeltaReport),
    /// As a full save.
    Full {
        /// What the save wrote.
        report: SaveReport,
        /// Why not a delta: the manager knew nothing of the slot, the slot changed behind its
        /// back, or it needed a full save.
        reason: String,
    },
}

/// What [`SaveLoadManager::save_state_incremental`](super::SaveLoadManager::save_state_incremental)
/// wrote.
#[derive(Debug)]
#[non_exhaustive]
pub struct ChangesReport {
    /// The slot.
    pub slot: SlotId,
    /// A delta, a full save, or nothing.
    pub written: Written,
    /// Whether anything was written: `false` when the state is exactly what the slot holds
    /// ([`Written::Nothing`]), so a game can skip its "saved" toast without matching on
    /// [`written`](Self::written).
    pub wrote: bool,
    /// The ids whose mementos the delta holds (new or changed), in ascending order; every id,
    /// for a full save.
    pub changed: Vec<String>,
    /// The ids the delta deletes (gone from the state since the slot was written), in
    /// ascending order; none for a full save.
    pub deleted: Vec<String>,
    /// How many mementos were the same as in the slot, and not written.
    pub unchanged: usize,
}

impl ChangesReport {
    /// A full save of `snapshot`, for `reason`.
    fn full(slot: SlotId, report: SaveReport, reason: String, snapshot: &Snapshot) -> Self {
        ChangesReport {
            slot,
            written: Written::Full { report, reason },
            wrote: true,
            changed: snapshot.ids().map(str::to_owned).collect(),
            deleted: Vec::new(),
            unchanged: 0,
        }
    }

    /// Nothing written: the state is what the slot holds.
    fn nothing(slot: SlotId, deleted: Vec<String>, unchanged: usize) -> Self {
        ChangesReport {
            slot,
            written: Written::Nothing,
            wrote: false,
            changed: Vec::new(),
            deleted,
            unchanged,
        }
    }

    /// A delta of the `changed` and `deleted` ids.
    fn delta(
        slot: SlotId,
        report: DeltaReport,
        changed: Vec<String>,
        deleted: Vec<String>,
        unchanged: usize,
    ) -> Self {
        ChangesReport {
            slot,
            written: Written::Delta(report),
            wrote: true,
            changed,
            deleted,
            unchanged,
        }
    }

    /// Was the state written as a delta?
    #[must_use]
    pub fn is_delta(&self) -> bool {
        matches!(self.written, Written::Delta(_))
    }
}

/// A snapshot of `state`, with its description, in the manager's codec.
fn capture(m: &SaveLoadManager, state: &(impl SaveState + ?Sized)) -> Result<Snapshot> {
    let mut snapshot = m.snapshot();
    state.describe(snapshot.metadata_mut());
    state.capture_state(&mut snapshot)?;
    Ok(snapshot)
}

/// A full save of `snapshot`, and the fingerprints of what it wrote. The caller supersedes the
/// slot's background saves first (the worker, running one, does not).
fn full_save(engine: &Engine, slot: SlotId, snapshot: &Snapshot) -> Result<(SaveReport, Baseline)> {
    let schema_version = engine.files.schema_version;
    fingerprinted_save(
        engine,
        slot,
        snapshot.codec(),
        snapshot.len(),
        snapshot.metadata(),
        &mut |generation, saved_at, with, sink, max_len, see| {
            snapshot.stream_file(
                slot,
                schema_version,
                generation,
                saved_at,
                with,
                sink,
                max_len,
                Some(see),
            )
        },
        &mut |generation, with, see| {
            snapshot.seal_file_seeing(slot, schema_version, generation, with, see)
        },
    )
}

/// Seals a file of the given generation, as told, showing each memento's bytes to the last
/// argument.
type SealSeeing<'f> = dyn FnMut(u64, SealWith<'_>, &mut dyn SeeMementos) -> Result<Vec<u8>> + 'f;

/// Writes a file of the given generation into a sink as it is encoded (see
/// [`StreamFill`](super::streamed::StreamFill)), showing each memento's bytes to the last
/// argument.
type StreamSeeing<'f> = dyn FnMut(
        u64,
        std::time::SystemTime,
        SealWith<'_>,
        &mut dyn StreamSink,
        u64,
        &mut dyn SeeMementos,
    ) -> std::result::Result<u64, StreamError>
    + 'f;

/// A full save of the file `stream` or `seal` writes (written as it is encoded where the
/// storage allows, see [`Engine::save_either`]), and the fingerprints of its `count` mementos,
/// taken from their bytes as they are written (so a memento is encoded once, into the file),
/// with the `metadata` it is written with.
fn fingerprinted_save(
    engine: &Engine,
    slot: SlotId,
    codec: Codec,
    count: usize,
    metadata: &Metadata,
    stream: &mut StreamSeeing<'_>,
    seal: &mut SealSeeing<'_>,
) -> Result<(SaveReport, Baseline)> {
    let seen = RefCell::new(Fingerprinting {
        prints: HashMap::with_capacity(count),
        ..Fingerprinting::default()
    });
    let report = engine.save_either_locking(
        slot,
        &mut |generation, saved_at, with, sink, max_len| {
            let mut seen = seen.borrow_mut();
            seen.clear();
            stream(generation, saved_at, with, sink, max_len, &mut *seen)
        },
        &mut |generation, with| {
            let mut seen = seen.borrow_mut();
            seen.clear();
            seal(generation, with, &mut *seen)
        },
    )?;
    let baseline = Baseline {
        codec,
        generation: report.generation,
        deltas: 0,
        mementos: seen.into_inner().prints,
        metadata: metadata.clone(),
    };
    Ok((report, baseline))
}

/// [`full_save`] at once, on the calling thread: the slot's background saves are dropped (or
/// waited for, when one is running) first.
fn full_save_now(
    m: &SaveLoadManager,
    slot: SlotId,
    snapshot: &Snapshot,
) -> Result<(SaveReport, Baseline)> {
    m.background.supersede(slot);
    let saved = full_save(&m.engine, slot, snapshot)?;
    m.background.saved(slot);
    Ok(saved)
}

pub(super) fn save_state(
    m: &SaveLoadManager,
    slot: SlotId,
    state: &(impl SaveState + Sync + ?Sized),
) -> Result<SaveReport> {
    m.background.supersede(slot);
    m.baselines.take(slot);
    let mut members = Members::new();
    if !state.members(&mut members)? {
        let snapshot = capture(m, state)?;
        let (report, baseline) = full_save_now(m, slot, &snapshot)?;
        m.baselines.put(slot, baseline);
        return Ok(report);
    }
    // Encoded straight from the game's objects into the file, fingerprinted as they go.
    let members = members.into_sorted();
    let mut metadata = Metadata::default();
    state.describe(&mut metadata);
    let codec = m.engine.codec;
    let threads = m.engine.files.threads.min(members.len());
    let values: Vec<&dyn Encodable> = members.iter().map(|m| m.originator).collect();
    let ahead = EncodeAhead::new(members.len(), threads, codec, 0);
    let in_place = InPlace::new(&values, &ahead);
    let entries: Vec<(&str, u32, Source<'_>)> = members
        .iter()
        .enumerate()
        .map(|(index, member)| (&*member.id, member.version, Source::Ahead(&in_place, index)))
        .collect();
    let ids: Vec<&str> = entries.iter().map(|(id, ..)| *id).collect();
    let schema_version = m.engine.files.schema_version;
    let file_of = |generation, saved_at| FileOf {
        codec,
        metadata: &metadata,
        kind: FileKind::Save,
        slot,
        schema_version,
        generation,
        saved_at,
    };
    let save = || {
        fingerprinted_save(
            &m.engine,
            slot,
            codec,
            entries.len(),
            &metadata,
            &mut |generation, saved_at, with, sink, max_len, see| {
                let file = file_of(generation, saved_at);
                stream_entries(&file, with, &entries, sink, max_len, Some(see))
            },
            &mut |generation, with, see| {
                let file = file_of(generation, crate::format::now());
                seal_entries(&file, None, with, &entries, Some(see))
            },
        )
    };
    // The workers (none on one thread: this one then encodes every part in place) encode from
    // the end of the list while this thread takes the lock, checks the previous file and
    // writes the file from its start.
    let (report, baseline) = ahead.run(threads, || encode_listed(&ahead, state, &ids), save)?;
    m.background.saved(slot);
    m.baselines.put(slot, baseline);
    Ok(report)
}

pub(super) fn load_state(
    m: &SaveLoadManager,
    slot: SlotId,
    state: &mut (impl SaveState + ?Sized),
) -> Result<StateLoaded> {
    // Background state saves queued for the slot put their fingerprints first.
    m.background.wait_for(slot);
    m.baselines.take(slot);
    let loaded = m.load(slot)?;
    let restore = state.restore_state(&loaded.snapshot)?;
    let report = loaded.report;
    // A backup or a migrated save is not what the slot's primary file holds: the next
    // incremental save is a full one.
    if report.recovered_from_backup.is_none() && report.migrated_from.is_none() {
        let baseline = Baseline::of(&loaded.snapshot, report.header.generation, report.deltas)?;
        m.baselines.put(slot, baseline);
    }
    Ok(StateLoaded { report, restore })
}

/// Why the slot cannot take a delta over `baseline`, if it cannot.
fn stale(
    engine: &Engine,
    slot: SlotId,
    baseline: Option<&Baseline>,
    codec: Codec,
) -> Option<String> {
    let Some(baseline) = baseline else {
        return Some("the manager has not saved or loaded a state in this slot".into());
    };
    if baseline.codec != codec {
        return Some(format!(
            "the slot is in {}, the manager writes {}",
            baseline.codec.name(),
            codec.name()
        ));
    }
    match engine.info(slot) {
        Ok(info) => match &info.header {
            Some(h) if h.generation == baseline.generation && info.deltas == baseline.deltas => {
                None
            }
            _ => Some("the slot was written by something else since".into()),
        },
        Err(e) => Some(format!("the slot cannot be read: {e}")),
    }
}

pub(super) fn save_state_incremental(
    m: &SaveLoadManager,
    slot: SlotId,
    state: &(impl SaveState + ?Sized),
) -> Result<ChangesReport> {
    let snapshot = capture(m, state)?;
    // Background state saves queued for the slot put their fingerprints first.
    m.background.wait_for(slot);
    let baseline = m.baselines.take(slot);
    let full = |reason: String| -> Result<ChangesReport> {
        let (report, baseline) = full_save_now(m, slot, &snapshot)?;
        m.baselines.put(slot, baseline);
        Ok(ChangesReport::full(slot, report, reason, &snapshot))
    };
    if let Some(reason) = stale(&m.engine, slot, baseline.as_ref(), snapshot.codec()) {
        return full(reason);
    }
    let Some(mut baseline) = baseline else {
        return full("the manager has not saved or loaded a state in this slot".into());
    };

    let mut delta = Snapshot::new(snapshot.codec());
    *delta.metadata_mut() = snapshot.metadata().clone();
    let mut changed = Vec::new();
    let mut unchanged = 0;
    // How many of the slot's mementos the state still has: when that is all of them, nothing
    // was deleted, and the slot's ids need not be looked up one by one.
    let mut kept = 0;
    for id in snapshot.ids() {
        let bytes = snapshot.encoded(id)?;
        let print = fingerprint(bytes);
        match baseline.mementos.get(id) {
            Some(old) if *old == print => {
                unchanged += 1;
                kept += 1;
                continue;
            }
            Some(_) => kept += 1,
            None => {}
        }
        delta.insert_raw(id, bytes.to_vec())?;
        changed.push((id.to_owned(), print));
    }
    let mut deleted: Vec<String> = if kept == baseline.mementos.len() {
        Vec::new()
    } else {
        baseline
            .mementos
            .keys()
            .filter(|id| !snapshot.contains(id))
            .cloned()
            .collect()
    };
    deleted.sort();
    if changed.is_empty() && deleted.is_empty() && snapshot.metadata().shows_as(&baseline.metadata)
    {
        // Nothing to write: an empty delta would only grow the journal.
        m.baselines.put(slot, baseline);
        return Ok(ChangesReport::nothing(slot, deleted, unchanged));
    }
    for id in &deleted {
        delta.mark_deleted(id)?;
    }

    let report = match m.save_incremental(slot, &delta) {
        Ok(report) => report,
        Err(e @ (Error::FullSaveNeeded { .. } | Error::SlotEmpty { .. })) => {
            return full(e.to_string());
        }
        Err(e) => return Err(e),
    };
    let changed = baseline.advance(&report, changed, &deleted, snapshot.metadata());
    m.baselines.put(slot, baseline);
    Ok(ChangesReport::delta(
        slot, report, changed, deleted, unchanged,
    ))
}

/// The game thread's part of
/// [`save_state_incremental_in_background`](SaveLoadManager::save_state_incremental_in_background):
/// the dirty members' capture, or the whole state's when the manager does not know the slot.
pub(super) fn save_state_incremental_in_background<S: SaveState + ?Sized>(
    m: &SaveLoadManager,
    slot: SlotId,
    state: &S,
    dirty: &[&str],
) -> SaveHandle<ChangesReport> {
    let baselines = Arc::clone(&m.baselines);
    if !m.baselines.knows(slot) {
        let snapshot = match capture(m, state) {
            Ok(snapshot) => snapshot,
            Err(e) => return m.background.finished(Err(e)),
        };
        m.baselines.expect(slot);
        let slot_of = |report: &ChangesReport| report.slot;
        return m
            .background
            .full(
                &m.engine,
                Target::Slot(slot),
                slot_of,
                move |engine| match full_save(engine, slot, &snapshot) {
                    Ok((report, baseline)) => {
                        baselines.put(slot, baseline);
                        Ok(ChangesReport::full(
                            slot,
                            report,
                            "the manager had not saved or loaded a state in this slot".into(),
                            &snapshot,
                        ))
                    }
                    Err(e) => {
                        baselines.take(slot);
                        Err(e)
                    }
                },
            );
    }
    let mut changes = m.snapshot();
    state.describe(changes.metadata_mut());
    if let Err(e) = state.capture_members(dirty, &mut changes) {
        return m.background.finished(Err(e));
    }
    // The dirty ids the state has no member for: gone, if the slot has them.
    let gone: Vec<String> = dirty
        .iter()
        .filter(|id| !changes.contains(id))
        .map(|id| (*id).to_owned())
        .collect();
    m.background.delta(&m.engine, slot, move |engine| {
        state_delta(engine, &baselines, slot, changes, &gone)
    })
}

/// The worker's part: fingerprints the captured members, drops those the slot has already,
/// deletes the gone ones the slot has, and appends the rest, keeping the slot's fingerprints.
fn state_delta(
    engine: &Engine,
    baselines: &Baselines,
    slot: SlotId,
    mut changes: Snapshot,
    gone: &[String],
) -> Result<ChangesReport> {
    // Taken, so a failure below leaves the manager knowing nothing of the slot, and the
    // game's next call a full save.
    let Some(mut baseline) = baselines.take(slot) else {
        return Err(Error::FullSaveNeeded {
            slot,
            reason: "the manager no longer knows what it holds (a save of it failed, or was \
                     replaced)"
                .into(),
        });
    };
    if let Some(reason) = stale(engine, slot, Some(&baseline), changes.codec()) {
        return Err(Error::FullSaveNeeded { slot, reason });
    }
    let ids: Vec<String> = changes.ids().map(str::to_owned).collect();
    let mut changed = Vec::with_capacity(ids.len());
    for id in ids {
        let print = fingerprint(changes.encoded(&id)?);
        if baseline.mementos.get(&id) == Some(&print) {
            changes.remove(&id);
        } else {
            changed.push((id, print));
        }
    }
    let deleted: Vec<String> = gone
        .iter()
        .filter(|id| baseline.mementos.contains_key(*id))
        .cloned()
        .collect();
    for id in &deleted {
        changes.mark_deleted(id)?;
    }
    if changed.is_empty() && deleted.is_empty() && changes.metadata().shows_as(&baseline.metadata) {
        let unchanged = baseline.mementos.len();
        baselines.put(slot, baseline);
        return Ok(ChangesReport::nothing(slot, deleted, unchanged));
    }
    let report = engine.save_incremental(slot, &changes)?;
    let changed = baseline.advance(&report, changed, &deleted, changes.metadata());
    let unchanged = baseline.mementos.len().saturating_sub(changed.len());
    baselines.put(slot, baseline);
    Ok(ChangesReport::delta(
        slot, report, changed, deleted, unchanged,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memento seen in pieces of any size has the fingerprint of its bytes seen whole, and
    /// each memento's fingerprint starts afresh.
    #[test]
    fn fingerprints_taken_in_pieces_are_those_of_the_whole_bytes() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        for piece in [1usize, 7, 64, 4096, 65_536, 300_000] {
            let mut seen = Fingerprinting::default();
            for len in [0usize, 1, 17, 240, 300_000] {
                for part in bytes[..len].chunks(piece) {
                    seen.piece(part);
                }
                seen.end(&format!("m{len}"));
            }
            for len in [0usize, 1, 17, 240, 300_000] {
                assert_eq!(
                    seen.prints[&format!("m{len}")],
                    fingerprint(&bytes[..len]),
                    "{len} bytes in pieces of {piece}"
                );
            }
            seen.piece(b"half a memento");
            seen.clear();
            seen.piece(b"x");
            seen.end("x");
            assert_eq!(seen.prints.len(), 1);
            assert_eq!(seen.prints["x"], fingerprint(b"x"));
        }
    }
}
