//! Running the chain: a [`Document`] through the whole-document steps from one schema version
//! to another ([`Migrations::run`]) and through each memento's own steps
//! ([`Migrations::run_memento_steps`]); a loaded snapshot brought up to date
//! ([`Migrations::upgrade`], [`Migrations::migrate_snapshot`]) through its document
//! ([`to_document`], [`from_document`]), or, for MessagePack mementos that only `map`
//! operations touch, on their bytes (with `transcode`).

#[cfg(all(feature = "json", feature = "msgpack"))]
use std::collections::{BTreeMap, BTreeSet};

use super::chain::{Action, Migrations, Step};
use super::document::Document;
use super::error::MigrationError;
#[cfg(all(feature = "json", feature = "msgpack"))]
use super::patch;
#[cfg(all(feature = "json", feature = "msgpack"))]
use super::transcode;
use super::value::Value;
use crate::codec::Codec;
use crate::error::{Error, Result};
#[cfg(all(feature = "json", feature = "msgpack"))]
use crate::format::DEFAULT_MEMENTO_VERSION;
use crate::snapshot::Snapshot;

impl Migrations {
    /// Brings memento `id`, at memento version `from`, to the end of its chain; returns the
    /// version it is at after (`from` when it has no steps).
    fn migrate_memento(&self, id: &str, value: &mut Value, from: u32) -> Result<u32> {
        let (Some(chain), Some(end)) = (self.chain_of(id), self.memento_version(id)) else {
            return Ok(from);
        };
        if from > end {
            return Err(Error::NewerMemento {
                id: id.to_owned(),
                found: from,
                supported: end,
            });
        }
        let mut version = from;
        while version < end {
            let step = self
                .memento_steps
                .iter()
                .find(|s| s.id == chain && s.from == version)
                .ok_or_else(|| Error::NoMementoMigrationPath {
                    id: id.to_owned(),
                    from,
                    to: end,
                })?;
            (step.f)(value).map_err(|source| Error::MementoMigration {
                id: id.to_owned(),
                from: step.from,
                to: step.to,
                source,
            })?;
            version = step.to;
        }
        Ok(version)
    }

    /// Runs every memento's own steps on `doc` (see [`memento_step`](Self::memento_step)):
    /// each memento from its version to the end of its chain.
    ///
    /// # Errors
    /// [`Error::NewerMemento`], [`Error::NoMementoMigrationPath`] or
    /// [`Error::MementoMigration`]; on error `doc` is partly migrated and should be dropped.
    pub fn run_memento_steps(&self, doc: &mut Document) -> Result<()> {
        if self.memento_steps.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = doc.ids().map(str::to_owned).collect();
        for id in ids {
            let Some(from) = doc.memento_version(&id) else {
                continue;
            };
            let value = doc
                .memento_mut(&id)
                .map_err(|source| Error::MementoMigration {
                    id: id.clone(),
                    from,
                    to: from,
                    source,
                })?;
            let to = self.migrate_memento(&id, value, from)?;
            if to != from {
                doc.set_memento_version(&id, to)
                    .map_err(|source| Error::MementoMigration {
                        id: id.clone(),
                        from,
                        to,
                        source,
                    })?;
            }
        }
        Ok(())
    }

    /// Brings a loaded snapshot at schema version `from` up to date for a game at `to`: what a
    /// load runs. At the game's schema version only the mementos below the end of their own
    /// chains are decoded and migrated (the others keep their bytes); an older save goes
    /// through [`migrate_snapshot`](Self::migrate_snapshot). A snapshot with nothing to migrate
    /// comes back as it was.
    ///
    /// # Errors
    /// As for [`migrate_snapshot`](Self::migrate_snapshot).
    pub fn upgrade(&self, snapshot: Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        if from != to {
            return self.migrate_snapshot(&snapshot, from, to);
        }
        let stale: Vec<(String, u32)> = snapshot
            .ids()
            .filter_map(|id| {
                let version = snapshot.memento_version(id)?;
                let end = self.memento_version(id)?;
                (version != end).then(|| (id.to_owned(), version))
            })
            .collect();
        if stale.is_empty() {
            return Ok(snapshot);
        }
        let codec = snapshot.codec();
        codec.require_self_describing(MIGRATION_STEPS)?;
        let mut snapshot = snapshot;
        for (id, version) in stale {
            let raw = snapshot.encoded(&id)?;
            let mut value: Value = codec.decode(raw).map_err(|e| e.decoding(&id))?;
            let new_version = self.migrate_memento(&id, &mut value, version)?;
            snapshot.capture_memento(&id, &value)?;
            snapshot.set_memento_version(&id, new_version)?;
        }
        Ok(snapshot)
    }

    /// Runs the steps from version `from` to `to` on `doc`.
    ///
    /// # Errors
    /// [`Error::NoMigrationPath`] when a step is missing; [`Error::Migration`] when one fails.
    /// On error `doc` is partly migrated and should be dropped.
    pub fn run(&self, doc: &mut Document, from: u32, to: u32) -> Result<()> {
        for step in self.path(from, to)? {
            step.apply(doc).map_err(|source| Error::Migration {
                step: step.name.clone(),
                version: step.version,
                source,
            })?;
        }
        Ok(())
    }

    /// Migrates a whole snapshot from version `from` to `to`: decodes each memento to a
    /// [`Value`], runs the whole-document steps, then each memento's own steps
    /// ([`run_memento_steps`](Self::run_memento_steps)), and encodes the mementos again in the
    /// snapshot's codec, each at its new version.
    ///
    /// # Errors
    /// As for [`run`](Self::run) and [`run_memento_steps`](Self::run_memento_steps);
    /// [`Error::Decode`] or [`Error::Encode`] when a memento cannot be turned into a value tree
    /// or back.
    ///
    /// A MessagePack memento that only `map` operations of declarative steps touch (each
    /// within it: no other operation, wildcard memento or per-memento step reaches it) is
    /// mapped on its bytes instead, with the same result byte for byte; where that cannot be
    /// shown on the way (a value not in its shortest form, say), the memento goes through the
    /// tree like the others.
    pub fn migrate_snapshot(&self, snapshot: &Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        #[cfg(all(feature = "json", feature = "msgpack"))]
        if let Some(migrated) = self.migrate_mapping_bytes(snapshot, from, to)? {
            return Ok(migrated);
        }
        self.migrate_tree(snapshot, from, to)
    }

    /// [`migrate_snapshot`](Self::migrate_snapshot) with every memento through the tree.
    pub(super) fn migrate_tree(&self, snapshot: &Snapshot, from: u32, to: u32) -> Result<Snapshot> {
        let mut doc = to_document(snapshot)?;
        self.run(&mut doc, from, to)?;
        self.run_memento_steps(&mut doc)?;
        from_document(doc, snapshot.codec(), snapshot.metadata().clone())
    }

    /// The mementos of a MessagePack snapshot that the steps from `from` to `to` only `map`,
    /// with those operations, by (step, operation) index in `path`. Empty when a Rust step or
    /// an operation on every memento (`/*/…`) is on the way.
    #[cfg(all(feature = "json", feature = "msgpack"))]
    fn mapped_only<'s>(
        &self,
        path: &[&'s Step],
        snapshot: &Snapshot,
    ) -> BTreeMap<String, Vec<(usize, usize, patch::TableMap<'s>)>> {
        let mut found: BTreeMap<String, Vec<(usize, usize, patch::TableMap<'s>)>> = BTreeMap::new();
        if snapshot.codec() != Codec::MessagePack {
            return found;
        }
        let mut ops = Vec::new();
        for (s, step) in path.iter().enumerate() {
            match &step.action {
                Action::Rust(_) => return BTreeMap::new(),
                Action::Patch { ops: list, .. } => {
                    ops.extend(list.iter().enumerate().map(|(i, op)| (s, i, op)));
                }
            }
        }
        let mut touched_otherwise = BTreeSet::new();
        for &(s, i, op) in &ops {
            match (op.touches(), op.table_map()) {
                (patch::Touches::All, _) => return BTreeMap::new(),
                (_, Some(map)) => {
                    found
                        .entry(map.memento.to_owned())
                        .or_default()
                        .push((s, i, map));
                }
                (patch::Touches::Ids(ids), None) => {
                    touched_otherwise.extend(ids.into_iter().flatten());
                }
            }
        }
        found.retain(|id, _| {
            !touched_otherwise.contains(id.as_str())
                && snapshot.contains(id)
                && self.memento_version(id).is_none()
        });
        found
    }

    /// [`migrate_snapshot`](Self::migrate_snapshot) with the mementos that only `map`
    /// operations touch mapped on their bytes ([`transcode`]); `None` when there are none, or
    /// one of them cannot be (then the tree does the whole snapshot, as it always did).
    #[cfg(all(feature = "json", feature = "msgpack"))]
    pub(super) fn migrate_mapping_bytes(
        &self,
        snapshot: &Snapshot,
        from: u32,
        to: u32,
    ) -> Result<Option<Snapshot>> {
        // A missing step is the tree's to report (after any memento that does not decode).
        let Ok(path) = self.path(from, to) else {
            return Ok(None);
        };
        let mapped = self.mapped_only(&path, snapshot);
        if mapped.is_empty() {
            return Ok(None);
        }
        let mut done = Vec::with_capacity(mapped.len());
        for (id, ops) in &mapped {
            let Some(raw) = snapshot.raw(id) else {
                return Ok(None);
            };
            let mut bytes: Option<Vec<u8>> = None;
            for (_, _, op) in ops {
                let next = transcode::map_leaves(bytes.as_deref().unwrap_or(raw), op);
                let Some(next) = next else {
                    return Ok(None);
                };
                bytes = Some(next);
            }
            let version = snapshot
                .memento_version(id)
                .unwrap_or(DEFAULT_MEMENTO_VERSION);
            done.push((id.as_str(), version, bytes.unwrap_or_else(|| raw.to_vec())));
        }
        let skip: BTreeSet<(usize, usize)> =
            mapped.values().flatten().map(|&(s, i, _)| (s, i)).collect();
        let mut doc = document_of(snapshot, |id| !mapped.contains_key(id))?;
        for (s, step) in path.iter().enumerate() {
            step.apply_but(&mut doc, |i| skip.contains(&(s, i)))
                .map_err(|source| Error::Migration {
                    step: step.name.clone(),
                    version: step.version,
                    source,
                })?;
        }
        self.run_memento_steps(&mut doc)?;
        let mut migrated = from_document(doc, snapshot.codec(), snapshot.metadata().clone())?;
        for (id, version, bytes) in done {
            migrated.insert_raw(id, bytes)?;
            migrated.set_memento_version(id, version)?;
        }
        Ok(Some(migrated))
    }
}

/// What [`Error::NotSelfDescribing`] says cannot read a bitcode save.
const MIGRATION_STEPS: &str = "migration steps (declarative step files and Rust steps run on \
                               the generic value tree; decode the old Rust type instead)";

/// A snapshot's mementos as a [`Document`].
///
/// # Errors
/// [`Error::Decode`] when a memento is not a valid value of the snapshot's codec;
/// [`Error::NotSelfDescribing`] for a bitcode snapshot.
pub fn to_document(snapshot: &Snapshot) -> Result<Document> {
    document_of(snapshot, |_| true)
}

/// [`to_document`] of the mementos whose ids pass `keep`.
fn document_of(snapshot: &Snapshot, keep: impl Fn(&str) -> bool) -> Result<Document> {
    let codec = snapshot.codec();
    codec.require_self_describing(MIGRATION_STEPS)?;
    let mut mementos = Vec::with_capacity(snapshot.len());
    for id in snapshot.ids().filter(|id| keep(id)) {
        let raw = snapshot.raw(id).unwrap_or_default();
        let value: Value = codec.decode(raw).map_err(|e| e.decoding(id))?;
        let version = snapshot
            .memento_version(id)
            .unwrap_or(crate::format::DEFAULT_MEMENTO_VERSION);
        mementos.push((id.to_owned(), version, value));
    }
    Ok(Document::from_versioned(mementos))
}

/// A snapshot of a [`Document`]'s mementos, encoded with `codec`.
///
/// # Errors
/// [`Error::Encode`] or [`Error::InvalidId`] when a memento cannot be stored.
pub fn from_document(doc: Document, codec: Codec, metadata: crate::Metadata) -> Result<Snapshot> {
    let mut snapshot = Snapshot::new(codec);
    *snapshot.metadata_mut() = metadata;
    for (id, version, value) in doc.into_versioned() {
        snapshot.capture_memento(&id, &value)?;
        snapshot.set_memento_version(&id, version)?;
    }
    Ok(snapshot)
}

impl Step {
    fn apply(&self, doc: &mut Document) -> Result<(), MigrationError> {
        self.apply_but(doc, |_| false)
    }

    /// [`apply`](Self::apply), leaving out the operations whose indices `skip` names.
    fn apply_but(
        &self,
        doc: &mut Document,
        skip: impl Fn(usize) -> bool,
    ) -> Result<(), MigrationError> {
        match &self.action {
            Action::Rust(f) => {
                let _ = skip;
                f(doc)
            }
            #[cfg(feature = "json")]
            Action::Patch { ops, .. } => {
                for (i, op) in ops.iter().enumerate().filter(|(i, _)| !skip(*i)) {
                    op.apply(doc).map_err(|e| MigrationError {
                        reason: format!("op {i} ({}): {}", op.name(), e.reason),
                        path: e.path,
                    })?;
                }
                Ok(())
            }
        }
    }
}
