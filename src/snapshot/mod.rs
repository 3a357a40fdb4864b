//! Snapshots: the caretaker's bag of opaque mementos, keyed by originator id, with metadata.
//!
//! A [`Snapshot`] is where type erasure happens. [`Snapshot::capture`] asks an originator for its
//! memento, on the game thread, and keeps it; the memento is encoded with the snapshot's codec
//! only when the snapshot is saved (on the worker thread, for a background save), straight into
//! the file's buffer (or its encoding thread's), or when its bytes are first needed
//! ([`Snapshot::encoded`]), into a buffer of its own, once, and then dropped. The snapshot never looks
//! inside the bytes. [`Snapshot::restore`] decodes one memento and hands it to one originator.
//! Capturing or restoring one originator never encodes or decodes another.
//!
//! A snapshot loaded from a file shares the file's buffer: its mementos are ranges of that
//! buffer, so a load copies nothing. Cloning a snapshot is cheap (the bytes are shared).
//!
//! This file holds the bag itself: capturing and restoring mementos, their versions and
//! deletions, the ids, the metadata. The rest is in its parts:
//!
//! - [`memento`]: how one memento is held: encoded bytes (a range of a shared buffer), or a
//!   captured memento waiting to be encoded.
//! - [`file`](mod@file): a snapshot into and out of a file: opening one, sealing one as a save or as a
//!   journal's delta, applying a delta.
//! - [`seal`]: how a file is sealed ([`Sealing`], [`SealWith`]) and the sealing of any list of
//!   mementos, for a snapshot and for a state listed by reference.
//! - [`sealer`]: [`FileSealer`](sealer::FileSealer), the tools' builder of a whole save file.

mod file;
mod memento;
mod seal;
pub(crate) mod sealer;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use self::memento::{Blob, Entry, Pending};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::{DEFAULT_MEMENTO_VERSION, MAX_ID_LEN, Metadata};
use crate::originator::Originator;

pub(crate) use self::seal::{FileOf, SealWith, Sealing, seal_entries, stream_entries, streams};

/// A set of mementos keyed by originator id, plus [`Metadata`]: what a save file holds.
///
/// Each memento carries a version of its own beside the save's schema version (see
/// [`Originator::memento_version`]): [`capture`](Self::capture) records the originator's,
/// [`restore`](Self::restore) checks it, [`memento_version`](Self::memento_version) reads it.
///
/// ```
/// use savegame::{Codec, Originator, Snapshot};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Default)]
/// struct Player { health: u32 }
///
/// #[derive(Serialize, Deserialize)]
/// struct PlayerMemento { health: u32 }
///
/// impl Originator for Player {
///     type Memento = PlayerMemento;
///     fn create_memento(&self) -> PlayerMemento { PlayerMemento { health: self.health } }
///     fn restore_memento(&mut self, m: PlayerMemento) -> savegame::Result<()> {
///         self.health = m.health;
///         Ok(())
///     }
/// }
///
/// let mut snapshot = Snapshot::new(Codec::MessagePack).with_label("Level 3");
/// snapshot.capture("player", &Player { health: 80 })?;
///
/// let mut restored = Player::default();
/// snapshot.restore("player", &mut restored)?;
/// assert_eq!(restored.health, 80);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Clone)]
pub struct Snapshot {
    codec: Codec,
    metadata: Metadata,
    mementos: BTreeMap<String, Entry>,
    /// The memento versions other than [`DEFAULT_MEMENTO_VERSION`], by id (only of ids in
    /// `mementos`).
    versions: BTreeMap<String, u32>,
    /// Ids an incremental save deletes from its slot.
    deleted: BTreeSet<String>,
}

impl Snapshot {
    /// An empty snapshot whose mementos will be encoded with `codec`.
    #[must_use]
    pub fn new(codec: Codec) -> Self {
        Snapshot {
            codec,
            metadata: Metadata::default(),
            mementos: BTreeMap::new(),
            versions: BTreeMap::new(),
            deleted: BTreeSet::new(),
        }
    }

    /// The codec of this snapshot's mementos; a save writes the file with it.
    #[must_use]
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Asks `originator` for its memento and keeps it under `id`. The memento is encoded when
    /// the snapshot is saved (on the worker thread, for
    /// [`save_in_background`](crate::SaveLoadManager::save_in_background)), straight into the
    /// file, or when its bytes are first needed (then once, and the memento is dropped):
    /// capturing costs the game thread only what `create_memento` costs. A blocking save of a
    /// whole state needs no capture at all: see
    /// [`save_state`](crate::SaveLoadManager::save_state).
    ///
    /// Capturing an id that is already present **replaces** its memento: the last capture wins,
    /// and the snapshot never holds two mementos for one id.
    ///
    /// # Errors
    /// [`Error::InvalidId`] for an empty id or one over 1,024 bytes; the snapshot is then
    /// unchanged. A memento the codec cannot encode (JSON, for example, cannot write a map whose
    /// keys are structs) is reported as [`Error::Encode`] by the save, or by whatever needs its
    /// bytes first.
    ///
    /// The memento is recorded at the originator's
    /// [`memento_version`](Originator::memento_version).
    pub fn capture<O: Originator + ?Sized>(&mut self, id: &str, originator: &O) -> Result<()> {
        self.capture_versioned(id, originator, originator.memento_version())
    }

    /// [`capture`](Self::capture), recording the memento at `version` instead of the
    /// originator's [`memento_version`](Originator::memento_version) (for an originator whose
    /// memento's version is known only at run time, such as a mod's).
    ///
    /// # Errors
    /// As for [`capture`](Self::capture).
    pub fn capture_versioned<O: Originator + ?Sized>(
        &mut self,
        id: &str,
        originator: &O,
        version: u32,
    ) -> Result<()> {
        check_id(id)?;
        let pending = Pending {
            memento: Mutex::new(Some(Box::new(originator.create_memento()))),
            encoded: OnceLock::new(),
        };
        self.put(id, Entry::Pending(Arc::new(pending)), version);
        Ok(())
    }

    /// Encodes `memento` now and stores it under `id` (a borrowed memento cannot wait), at
    /// memento version [`DEFAULT_MEMENTO_VERSION`]: for a memento of an originator at
    /// another version, use [`capture_memento_versioned`](Self::capture_memento_versioned).
    ///
    /// # Errors
    /// [`Error::InvalidId`], as for [`capture`](Self::capture); [`Error::Encode`] if the codec
    /// cannot encode it. On error the snapshot is unchanged.
    pub fn capture_memento<M: Serialize + ?Sized>(&mut self, id: &str, memento: &M) -> Result<()> {
        self.capture_memento_versioned(id, memento, DEFAULT_MEMENTO_VERSION)
    }

    /// [`capture_memento`](Self::capture_memento), recording the memento at `version`: what an
    /// originator at [`memento_version`](Originator::memento_version) `version` restores from
    /// (a memento built by hand, or by a tool, for such an originator).
    ///
    /// # Errors
    /// As for [`capture_memento`](Self::capture_memento).
    pub fn capture_memento_versioned<M: Serialize + ?Sized>(
        &mut self,
        id: &str,
        memento: &M,
        version: u32,
    ) -> Result<()> {
        check_id(id)?;
        let bytes = self.codec.encode(memento).map_err(|e| e.encoding(id))?;
        self.put(id, Entry::Encoded(Blob::owned(bytes)), version);
        Ok(())
    }

    fn put(&mut self, id: &str, entry: Entry, version: u32) {
        self.deleted.remove(id);
        self.mementos.insert(id.to_owned(), entry);
        self.put_version(id, version);
    }

    fn put_version(&mut self, id: &str, version: u32) {
        if version == DEFAULT_MEMENTO_VERSION {
            self.versions.remove(id);
        } else {
            self.versions.insert(id.to_owned(), version);
        }
    }

    /// The version of the memento under `id` ([`DEFAULT_MEMENTO_VERSION`] for one captured
    /// without a version, and for every memento of a format-1 file), or `None` if there is
    /// none.
    #[must_use]
    pub fn memento_version(&self, id: &str) -> Option<u32> {
        self.mementos.contains_key(id).then(|| {
            self.versions
                .get(id)
                .copied()
                .unwrap_or(DEFAULT_MEMENTO_VERSION)
        })
    }

    /// Sets the version of the memento under `id` (for tools and migrations that write a
    /// memento's bytes themselves).
    ///
    /// # Errors
    /// [`Error::MissingMemento`] if there is none.
    pub fn set_memento_version(&mut self, id: &str, version: u32) -> Result<()> {
        if !self.mementos.contains_key(id) {
            return Err(Error::MissingMemento { id: id.to_owned() });
        }
        self.put_version(id, version);
        Ok(())
    }

    /// Records that the memento `id` no longer exists (its entity was destroyed, say), for an
    /// [incremental save](crate::SaveLoadManager::save_incremental): the slot forgets it. Any
    /// memento captured under `id` in this snapshot is dropped. A full save ignores deletions:
    /// it writes exactly the mementos it holds.
    ///
    /// # Errors
    /// [`Error::InvalidId`], as for [`capture`](Self::capture).
    pub fn mark_deleted(&mut self, id: &str) -> Result<()> {
        check_id(id)?;
        self.mementos.remove(id);
        self.versions.remove(id);
        self.deleted.insert(id.to_owned());
        Ok(())
    }

    /// The ids marked deleted, in ascending order.
    pub fn deleted_ids(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.deleted.iter().map(String::as_str)
    }

    /// Decodes the memento stored under `id` and hands it to `originator`. No other memento is
    /// decoded. The memento must be at the originator's
    /// [`memento_version`](Originator::memento_version): a load migrates older ones with the
    /// game's [per-memento steps](crate::Migrations::memento_step) first.
    ///
    /// # Errors
    /// [`Error::MissingMemento`] if there is none; [`Error::NoMementoMigrationPath`] if it is at
    /// an older version than the originator's, [`Error::NewerMemento`] if at a newer one;
    /// [`Error::Decode`] if its bytes do not decode as `O::Memento`; whatever the originator's
    /// `restore_memento` returns. The originator is only called with a fully decoded memento.
    pub fn restore<O: Originator + ?Sized>(&self, id: &str, originator: &mut O) -> Result<()> {
        let memento = self.memento_for(id, originator)?;
        originator.restore_memento(memento)
    }

    /// Decodes the memento stored under `id` for `originator`, once it is known to be at the
    /// originator's [`memento_version`](Originator::memento_version): what
    /// [`restore`](Self::restore) hands to `restore_memento`, for code that decodes every
    /// memento before it changes anything (a [`SaveState`](crate::SaveState), a
    /// [`Registry`](crate::Registry)). Every restore path goes through it, so none hands an
    /// originator a memento of another version.
    ///
    /// # Errors
    /// As for [`restore`](Self::restore), but for what `restore_memento` returns.
    pub fn memento_for<O: Originator + ?Sized>(
        &self,
        id: &str,
        originator: &O,
    ) -> Result<O::Memento> {
        self.check_version(id, originator.memento_version())?;
        self.memento::<O::Memento>(id)
    }

    /// Whether the memento under `id` is at `expected`, the version its reader reads.
    ///
    /// # Errors
    /// [`Error::MissingMemento`], [`Error::NoMementoMigrationPath`] (older),
    /// [`Error::NewerMemento`] (newer).
    pub fn check_version(&self, id: &str, expected: u32) -> Result<()> {
        let found = self
            .memento_version(id)
            .ok_or_else(|| Error::MissingMemento { id: id.to_owned() })?;
        if found < expected {
            return Err(Error::NoMementoMigrationPath {
                id: id.to_owned(),
                from: found,
                to: expected,
            });
        }
        if found > expected {
            return Err(Error::NewerMemento {
                id: id.to_owned(),
                found,
                supported: expected,
            });
        }
        Ok(())
    }

    /// Decodes the memento stored under `id` without an originator, and without checking its
    /// version: for tools, migrations and tests that know what they read. A game restores
    /// through [`restore`](Self::restore) or [`memento_for`](Self::memento_for), which check
    /// that the memento is at its originator's version.
    ///
    /// # Errors
    /// [`Error::MissingMemento`] or [`Error::Decode`], as for [`restore`](Self::restore).
    pub fn memento<M: DeserializeOwned>(&self, id: &str) -> Result<M> {
        let bytes = self.encoded(id)?;
        self.codec.decode(bytes).map_err(|e| e.decoding(id))
    }

    /// The encoded bytes of the memento under `id`, in the snapshot's codec (encoding a captured
    /// memento now, if it was not yet).
    ///
    /// # Errors
    /// [`Error::MissingMemento`] if there is none; [`Error::Encode`] if it cannot be encoded.
    pub fn encoded(&self, id: &str) -> Result<&[u8]> {
        self.mementos
            .get(id)
            .ok_or_else(|| Error::MissingMemento { id: id.to_owned() })?
            .bytes(self.codec, id)
    }

    /// The encoded bytes of the memento under `id`, or `None` if there is none or it cannot be
    /// encoded (see [`encoded`](Self::encoded) for the error).
    #[must_use]
    pub fn raw(&self, id: &str) -> Option<&[u8]> {
        self.encoded(id).ok()
    }

    /// Stores already-encoded memento bytes under `id`, at [`DEFAULT_MEMENTO_VERSION`]
    /// (change it with [`set_memento_version`](Self::set_memento_version)). The bytes must be one complete
    /// value in the snapshot's codec; they are checked when decoded, not here.
    ///
    /// # Errors
    /// [`Error::InvalidId`], as for [`capture`](Self::capture).
    pub fn insert_raw(&mut self, id: &str, bytes: Vec<u8>) -> Result<()> {
        check_id(id)?;
        self.put(
            id,
            Entry::Encoded(Blob::owned(bytes)),
            DEFAULT_MEMENTO_VERSION,
        );
        Ok(())
    }

    /// The ids of the stored mementos, in ascending order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.mementos.keys().map(String::as_str)
    }

    /// Is there a memento under `id`?
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.mementos.contains_key(id)
    }

    /// Removes the memento under `id`; returns whether there was one.
    pub fn remove(&mut self, id: &str) -> bool {
        self.versions.remove(id);
        self.mementos.remove(id).is_some()
    }

    /// How many mementos the snapshot holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.mementos.len()
    }

    /// Does the snapshot hold no memento?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.mementos.is_empty()
    }

    /// Total size of the encoded mementos in bytes (encoding captured mementos now; one that
    /// cannot be encoded counts 0).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.mementos
            .iter()
            .map(|(id, e)| e.bytes(self.codec, id).map_or(0, <[u8]>::len))
            .sum()
    }

    /// The snapshot's metadata.
    #[must_use]
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The snapshot's metadata, to change.
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.metadata
    }

    /// Sets the label the load menu shows.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.metadata.label = label.into();
        self
    }

    /// Sets the playtime the load menu shows.
    #[must_use]
    pub fn with_playtime(mut self, playtime: Duration) -> Self {
        self.metadata.playtime = playtime;
        self
    }

    /// Sets the version of the game that writes the save.
    #[must_use]
    pub fn with_app_version(mut self, version: impl Into<String>) -> Self {
        self.metadata.app_version = version.into();
        self
    }

    /// Adds one of the game's own metadata fields.
    #[must_use]
    pub fn with_user_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.user.insert(key.into(), value.into());
        self
    }

    /// Sets the thumbnail the load menu shows.
    #[must_use]
    pub fn with_thumbnail(mut self, image: Vec<u8>) -> Self {
        self.metadata.thumbnail = Some(image);
        self
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: BTreeMap<&str, Option<usize>> = self
            .mementos
            .iter()
            .map(|(id, e)| match e {
                Entry::Encoded(b) => (id.as_str(), Some(b.range.len())),
                Entry::Pending(_) => (id.as_str(), None),
            })
            .collect();
        f.debug_struct("Snapshot")
            .field("codec", &self.codec)
            .field("metadata", &self.metadata)
            .field("memento_sizes", &sizes)
            .field("memento_versions", &self.versions)
            .field("deleted", &self.deleted)
            .finish()
    }
}

/// Two snapshots are equal when they have the same codec, metadata, deletions, memento
/// versions and memento bytes (captured mementos are encoded to compare them; one that cannot
/// be encoded equals nothing).
impl PartialEq for Snapshot {
    fn eq(&self, other: &Self) -> bool {
        self.codec == other.codec
            && self.metadata == other.metadata
            && self.deleted == other.deleted
            && self.versions == other.versions
            && self.mementos.len() == other.mementos.len()
            && self
                .mementos
                .iter()
                .zip(&other.mementos)
                .all(|((a, x), (b, y))| {
                    a == b
                        && matches!(
                            (x.bytes(self.codec, a), y.bytes(other.codec, b)),
                            (Ok(p), Ok(q)) if p == q
                        )
                })
    }
}

pub(crate) fn check_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "ids must not be empty"
    } else if id.len() > MAX_ID_LEN {
        "ids are at most 1024 bytes"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.chars().take(64).collect(),
        reason,
    })
}

#[cfg(test)]
mod tests;
