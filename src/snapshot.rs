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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::{Codec, CodecError, Encodable};
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::{
    self, DEFAULT_MAX_FILE_SIZE, DEFAULT_MEMENTO_VERSION, EncodeAhead, FileKind, Header, InPlace,
    Key, MAX_ID_LEN, Metadata, Opened, Protect, SealParams, Source, Trust,
};
use crate::originator::Originator;
use crate::slot::SlotId;

/// The encoded bytes of one memento: a range of a shared buffer.
#[derive(Clone)]
struct Blob {
    buf: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl Blob {
    fn owned(bytes: Vec<u8>) -> Self {
        let range = 0..bytes.len();
        Blob {
            buf: Arc::new(bytes),
            range,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// A memento of any serde type, for encoding later (perhaps on another thread).
trait ErasedMemento: Send + Sync {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError>;
}

impl<T: Serialize + Send + Sync + 'static> ErasedMemento for T {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError> {
        codec.encode_into(out, self)
    }
}

/// A captured memento, encoded when it is saved or its bytes are first needed.
///
/// A save encodes it straight into the file's buffer (or, on many threads, maybe into a
/// worker's buffer, see [`EncodeAhead`]) and keeps the memento, so a snapshot saved twice encodes it twice and holds no
/// second copy of its bytes in between. Asking for its bytes ([`Snapshot::encoded`]) encodes
/// it into a buffer of its own, once, and drops the memento.
struct Pending {
    memento: Mutex<Option<Box<dyn ErasedMemento>>>,
    encoded: OnceLock<Result<Vec<u8>, String>>,
}

impl Encodable for Pending {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let memento = self.memento.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = memento.as_ref() {
            return m.encode_into(codec, out);
        }
        drop(memento);
        // Taken by `bytes`, which set (or is setting) the encoded bytes.
        match self.encoded.wait() {
            Ok(bytes) => {
                out.extend_from_slice(bytes);
                Ok(())
            }
            Err(reason) => Err(CodecError::Codec(reason.clone().into())),
        }
    }
}

impl Pending {
    fn bytes(&self, codec: Codec) -> Result<&[u8], &str> {
        self.encoded
            .get_or_init(|| {
                let memento = self
                    .memento
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                let mut out = Vec::new();
                match memento {
                    Some(m) => m.encode_into(codec, &mut out).map_err(|e| e.to_string()),
                    None => Err("the memento was lost while encoding".to_owned()),
                }
                .map(|()| out)
            })
            .as_deref()
            .map_err(String::as_str)
    }
}

/// One memento of a snapshot: encoded bytes, or a captured memento waiting to be encoded.
#[derive(Clone)]
enum Entry {
    Encoded(Blob),
    Pending(Arc<Pending>),
}

impl Entry {
    /// Where a save takes this memento's bytes from: its bytes when it has them, or an
    /// encoding straight into the file.
    fn source(&self) -> Source<'_> {
        match self {
            Entry::Encoded(blob) => Source::Bytes(blob.bytes()),
            Entry::Pending(p) => match p.encoded.get() {
                Some(Ok(bytes)) => Source::Bytes(bytes),
                _ => Source::Encode(p.as_ref()),
            },
        }
    }

    fn bytes(&self, codec: Codec, id: &str) -> Result<&[u8]> {
        match self {
            Entry::Encoded(blob) => Ok(blob.bytes()),
            Entry::Pending(p) => p.bytes(codec).map_err(|reason| Error::Encode {
                id: id.to_owned(),
                source: reason.into(),
            }),
        }
    }
}

/// How a file is sealed: in the clear, authenticated (integrity-only) or encrypted, with the
/// key for the last two.
#[derive(Clone, Copy)]
pub(crate) enum Sealing<'a> {
    Plain,
    Authenticated(&'a Key),
    Encrypted(&'a Key),
}

impl<'a> Sealing<'a> {
    /// Encrypted with `key`, or plain without one: what the key-taking methods mean.
    pub(crate) fn encrypted_or_plain(key: Option<&'a Key>) -> Self {
        key.map_or(Sealing::Plain, Sealing::Encrypted)
    }
}

/// How a snapshot is written into a file: its sealing, its compression, and how the work is
/// done.
#[derive(Clone, Copy)]
pub(crate) struct SealWith<'a> {
    pub(crate) sealing: Sealing<'a>,
    pub(crate) compression: Compression,
    /// How many threads may encode captured mementos at once: with more than one, and more
    /// than one memento to encode, they are encoded on scoped threads (this one among them)
    /// before the file is assembled; the bytes are the same either way.
    pub(crate) threads: usize,
    /// The file's expected length (the slot's previous file's), so its buffer is allocated
    /// once; 0 when unknown.
    pub(crate) size_hint: usize,
}

impl<'a> SealWith<'a> {
    /// One thread, no size hint: what the tool-facing `seal_file*` methods do.
    pub(crate) fn new(sealing: Sealing<'a>, compression: Compression) -> Self {
        SealWith {
            sealing,
            compression,
            threads: 1,
            size_hint: 0,
        }
    }
}

/// A set of mementos keyed by originator id, plus [`Metadata`]: what a save file holds.
///
/// Each memento carries a version of its own beside the save's schema version (see
/// [`Originator::memento_version`]): [`capture`](Self::capture) records the originator's,
/// [`restore`](Self::restore) checks it, [`version`](Self::version) reads it.
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
    pub fn version(&self, id: &str) -> Option<u32> {
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
    pub fn set_version(&mut self, id: &str, version: u32) -> Result<()> {
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
            .version(id)
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
    /// (change it with [`set_version`](Self::set_version)). The bytes must be one complete
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

    /// Opens the bytes of a whole save file, whatever its name or slot: checks the CRC and the
    /// header, checks that the file has the protection `trust` asks for, decrypts or checks
    /// its tag with the trust's key, reads the table of contents. For tools that work on files
    /// (backups, files sent in a bug report); a game loads slots with
    /// [`SaveLoadManager::load`](crate::SaveLoadManager::load), which also checks the slot,
    /// the schema version, and falls back to backups.
    ///
    /// `trust` is a [`Trust`], or an `Option<&Key>`: `Some(key)` opens encrypted and
    /// integrity-only files under the key and refuses plain ones ([`Trust::keyed`]), so an
    /// integrity-only file stripped of its flag (and its CRC fixed) is refused; `None` opens
    /// plain files only ([`Trust::plain`]). A tool that knows the game's mode says it:
    /// [`Trust::encrypted`], [`Trust::authenticated`].
    ///
    /// # Errors
    /// As for [`SaveLoadManager::load`](crate::SaveLoadManager::load) on one file:
    /// [`Error::NotASave`], [`Error::ChecksumMismatch`], [`Error::Malformed`],
    /// [`Error::UnsupportedFormat`], [`Error::KeyRequired`], [`Error::NotEncrypted`],
    /// [`Error::ProtectionMismatch`], [`Error::Decrypt`], [`Error::Tampered`], ...
    ///
    /// An integrity-only file ([`Header::authenticated`]) needs the key too: its tag is
    /// checked ([`Error::Tampered`]). Without a key it is [`Error::KeyRequired`]; a tool that
    /// shows such a file to a person without the key uses
    /// [`open_file_unverified`](Self::open_file_unverified).
    ///
    /// A compressed body is decompressed under the manager's default size cap
    /// ([`DEFAULT_MAX_FILE_SIZE`](crate::format::DEFAULT_MAX_FILE_SIZE));
    /// [`Error::DecompressedTooLarge`] past it.
    pub fn open_file<'k>(
        bytes: Vec<u8>,
        trust: impl Into<Trust<'k>>,
    ) -> Result<(Header, Snapshot)> {
        let opened = format::open(
            bytes,
            FileKind::Save,
            trust.into(),
            DEFAULT_MAX_FILE_SIZE,
            1,
        )?;
        let header = opened.header.clone();
        Ok((header, Snapshot::from_opened(opened)))
    }

    /// [`open_file`](Self::open_file) with [`Trust::unverified`]: opens a plain file, and an
    /// integrity-only file **without checking its tag** (its CRC and structure are checked).
    /// For tools that show a readable save to a person who has no key; never for loading game
    /// state, whose authenticity it does not establish.
    ///
    /// # Errors
    /// As for [`open_file`](Self::open_file); [`Error::KeyRequired`] for an encrypted file.
    pub fn open_file_unverified(bytes: Vec<u8>) -> Result<(Header, Snapshot)> {
        Self::open_file(bytes, Trust::unverified())
    }

    /// The bytes of a whole save file holding this snapshot, for `slot` at `schema_version`,
    /// with the given generation, stamped with the current time, and sealed with `key` under a
    /// fresh random nonce when one is given. For tools that write files; a game saves with
    /// [`SaveLoadManager::save`](crate::SaveLoadManager::save), which also writes the file
    /// crash-safely and keeps backups.
    ///
    /// # Errors
    /// [`Error::Config`] when the metadata is over its caps or the random number generator
    /// fails.
    pub fn seal_file(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        key: Option<&Key>,
    ) -> Result<Vec<u8>> {
        let now = crate::format::now();
        self.seal_file_at(slot, schema_version, generation, now, key)
    }

    /// [`seal_file`](Self::seal_file), stamped `saved_at` instead of the current time (to
    /// millisecond precision): for tools that write a file back as it was, such as the CLI's
    /// `pack` of a `dump`. A game never needs it.
    ///
    /// # Errors
    /// As for [`seal_file`](Self::seal_file).
    pub fn seal_file_at(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        saved_at: std::time::SystemTime,
        key: Option<&Key>,
    ) -> Result<Vec<u8>> {
        self.seal_file_with(
            slot,
            schema_version,
            generation,
            saved_at,
            SealWith::new(Sealing::encrypted_or_plain(key), Compression::None),
        )
    }

    /// [`seal_file_at`](Self::seal_file_at) for an integrity-only file: the body stays
    /// readable, and an HMAC-SHA256 tag under `key` makes any edit detectable
    /// ([`Error::Tampered`] on open). What a manager built with
    /// [`integrity_only`](crate::ManagerBuilder::integrity_only) writes.
    ///
    /// # Errors
    /// As for [`seal_file`](Self::seal_file); [`Error::FeatureDisabled`] in a build without
    /// the `integrity` feature.
    pub fn seal_file_authenticated(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        saved_at: std::time::SystemTime,
        key: &Key,
    ) -> Result<Vec<u8>> {
        self.seal_file_with(
            slot,
            schema_version,
            generation,
            saved_at,
            SealWith::new(Sealing::Authenticated(key), Compression::None),
        )
    }

    /// A builder for the bytes of a whole save file holding this snapshot, with every option
    /// the `seal_file*` methods have and [compression](FileSealer::compression): for tools
    /// that write files. Plain, uncompressed and stamped with the current time unless told
    /// otherwise.
    ///
    /// ```
    /// # #[cfg(feature = "lz4")] {
    /// use savegame::{Codec, Compression, Key, SlotId, Snapshot};
    ///
    /// let mut snapshot = Snapshot::new(Codec::Json);
    /// snapshot.capture_memento("world", &vec![7u32; 10_000])?;
    /// let key = Key::from_bytes([7; 32]);
    /// let bytes = snapshot
    ///     .sealer(SlotId::Numbered(1), 1, 1)
    ///     .encrypt(&key)
    ///     .compression(Compression::Lz4)
    ///     .build()?;
    /// let (header, opened) = Snapshot::open_file(bytes, Some(&key))?;
    /// assert_eq!(header.compression, Compression::Lz4);
    /// assert_eq!(opened.memento::<Vec<u32>>("world")?, vec![7u32; 10_000]);
    /// # }
    /// # Ok::<(), savegame::Error>(())
    /// ```
    pub fn sealer(&self, slot: SlotId, schema_version: u32, generation: u64) -> FileSealer<'_> {
        FileSealer {
            snapshot: self,
            slot,
            schema_version,
            generation,
            saved_at: None,
            sealing: Sealing::Plain,
            compression: Compression::None,
            threads: 1,
        }
    }

    /// A whole save file, sealed as `sealing` says.
    pub(crate) fn seal_file_with(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        saved_at: std::time::SystemTime,
        with: SealWith<'_>,
    ) -> Result<Vec<u8>> {
        self.seal(
            FileKind::Save,
            slot,
            schema_version,
            generation,
            None,
            saved_at,
            with,
            &mut |_, _| {},
        )
    }

    /// [`seal_file_with`](Self::seal_file_with), showing `on_memento(id, bytes)` each
    /// memento's encoded bytes as the file is written (the manager's fingerprints of a saved
    /// state).
    pub(crate) fn seal_file_seeing(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        with: SealWith<'_>,
        on_memento: &mut dyn FnMut(&str, &[u8]),
    ) -> Result<Vec<u8>> {
        self.seal(
            FileKind::Save,
            slot,
            schema_version,
            generation,
            None,
            crate::format::now(),
            with,
            on_memento,
        )
    }

    /// The bytes of one journal record: this snapshot as the delta number `sequence` after the
    /// base save of generation `base_generation`, with its deletions.
    pub(crate) fn seal_delta(
        &self,
        slot: SlotId,
        schema_version: u32,
        base_generation: u64,
        sequence: u64,
        with: SealWith<'_>,
    ) -> Result<Vec<u8>> {
        let kind = FileKind::Delta;
        self.seal(
            kind,
            slot,
            schema_version,
            base_generation,
            Some(sequence),
            crate::format::now(),
            with,
            &mut |_, _| {},
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn seal(
        &self,
        kind: FileKind,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        sequence: Option<u64>,
        saved_at: std::time::SystemTime,
        with: SealWith<'_>,
        on_memento: &mut dyn FnMut(&str, &[u8]),
    ) -> Result<Vec<u8>> {
        let deleted = sequence.map(|n| (n, self.deleted_ids().collect()));
        let file = FileOf {
            codec: self.codec,
            metadata: &self.metadata,
            kind,
            slot,
            schema_version,
            generation,
            saved_at,
        };
        let mut entries = self.entries();
        // Captured mementos not encoded yet, by their index in `entries` (the same order).
        let pending: Vec<(usize, &Pending)> = self
            .mementos
            .values()
            .enumerate()
            .filter_map(|(i, entry)| match entry {
                Entry::Pending(p) if p.encoded.get().is_none() => Some((i, p.as_ref())),
                _ => None,
            })
            .collect();
        // Workers (none on one thread, where this one encodes every part in place) encode
        // from the end of the list while this thread writes the file from its start.
        let threads = with.threads.min(pending.len());
        fn values<'p>(pending: &[(usize, &'p Pending)]) -> Vec<&'p dyn Encodable> {
            pending.iter().map(|(_, p)| *p as &dyn Encodable).collect()
        }
        let ahead = EncodeAhead::new(pending.len(), threads, self.codec, with.size_hint);
        let here = values(&pending);
        let in_place = InPlace::new(&here, &ahead);
        for (k, (index, _)) in pending.iter().enumerate() {
            if let Some(entry) = entries.get_mut(*index) {
                entry.2 = Source::Ahead(&in_place, k);
            }
        }
        ahead.run(
            threads,
            || ahead.work(&values(&pending)),
            || seal_entries(&file, deleted, with, &entries, on_memento),
        )
    }

    /// `(id, memento version, where its bytes come from)` in ascending id order, for writing
    /// a file.
    fn entries(&self) -> Vec<(&str, u32, Source<'_>)> {
        self.mementos
            .iter()
            .map(|(id, entry)| {
                let version = self
                    .versions
                    .get(id)
                    .copied()
                    .unwrap_or(DEFAULT_MEMENTO_VERSION);
                (id.as_str(), version, entry.source())
            })
            .collect()
    }

    /// Applies an incremental save's changes: its mementos replace or join these, its deletions
    /// remove mementos, and its metadata becomes this snapshot's.
    pub(crate) fn apply_delta(&mut self, delta: Snapshot) {
        for id in &delta.deleted {
            self.mementos.remove(id);
            self.versions.remove(id);
        }
        for id in delta.mementos.keys() {
            self.versions.remove(id);
        }
        self.versions.extend(delta.versions);
        self.mementos.extend(delta.mementos);
        self.metadata = delta.metadata;
    }

    /// The snapshot a checked file holds; its mementos share the file's buffer.
    pub(crate) fn from_opened(opened: Opened) -> Self {
        let Opened {
            header,
            buf,
            toc,
            deleted,
            ..
        } = opened;
        let buf = Arc::new(buf);
        let versions = toc
            .iter()
            .filter(|e| e.version != DEFAULT_MEMENTO_VERSION)
            .map(|e| (e.id.clone(), e.version))
            .collect();
        let mementos = toc
            .into_iter()
            .map(|entry| {
                let blob = Blob {
                    buf: Arc::clone(&buf),
                    range: entry.range,
                };
                (entry.id, Entry::Encoded(blob))
            })
            .collect();
        Snapshot {
            codec: header.codec,
            metadata: header.metadata,
            mementos,
            versions,
            deleted: deleted.into_iter().collect(),
        }
    }
}

/// What a file is, beside its mementos: see [`seal_entries`].
pub(crate) struct FileOf<'a> {
    pub(crate) codec: Codec,
    pub(crate) metadata: &'a Metadata,
    pub(crate) kind: FileKind,
    pub(crate) slot: SlotId,
    pub(crate) schema_version: u32,
    pub(crate) generation: u64,
    pub(crate) saved_at: std::time::SystemTime,
}

/// The bytes of the file `file` of `entries` (in ascending id order), with a delta's sequence
/// number and deletions, sealed and written as `with` says; `on_memento(id, bytes)` sees each
/// memento's encoded bytes. For a snapshot, and for a state listed by reference
/// ([`Members`](crate::Members)).
pub(crate) fn seal_entries(
    file: &FileOf<'_>,
    delta: Option<(u64, Vec<&str>)>,
    with: SealWith<'_>,
    entries: &[(&str, u32, Source<'_>)],
    on_memento: &mut dyn FnMut(&str, &[u8]),
) -> Result<Vec<u8>> {
    let protect = match with.sealing {
        Sealing::Plain => Protect::Plain,
        Sealing::Authenticated(key) => Protect::Authenticated(key),
        Sealing::Encrypted(key) => Protect::Encrypted(key, format::random_nonce()?),
    };
    let params = SealParams {
        format_version: format::FORMAT_VERSION,
        codec: file.codec,
        kind: file.kind,
        slot: file.slot,
        schema_version: file.schema_version,
        generation: file.generation,
        saved_at: file.saved_at,
        metadata: file.metadata,
        protect,
        compression: with.compression,
        delta,
        threads: with.threads,
    };
    format::seal_sources(&params, entries, with.size_hint, on_memento)
}

/// The bytes of a whole save file holding a snapshot, as [`Snapshot::sealer`] is told: its
/// protection (plain, [`encrypt`](Self::encrypt)ed or [`authenticate`](Self::authenticate)d),
/// its [`compression`](Self::compression) and its time stamp.
#[must_use]
pub struct FileSealer<'a> {
    snapshot: &'a Snapshot,
    slot: SlotId,
    schema_version: u32,
    generation: u64,
    saved_at: Option<std::time::SystemTime>,
    sealing: Sealing<'a>,
    compression: Compression,
    threads: usize,
}

impl<'a> FileSealer<'a> {
    /// Encrypts the file with `key` (AES-256-GCM, a fresh random nonce), as
    /// [`Snapshot::seal_file`] with a key does.
    pub fn encrypt(mut self, key: &'a Key) -> Self {
        self.sealing = Sealing::Encrypted(key);
        self
    }

    /// Makes the file integrity-only under `key`, as [`Snapshot::seal_file_authenticated`]
    /// does.
    pub fn authenticate(mut self, key: &'a Key) -> Self {
        self.sealing = Sealing::Authenticated(key);
        self
    }

    /// Stamps the file `saved_at` (millisecond precision) instead of the current time.
    pub fn saved_at(mut self, saved_at: std::time::SystemTime) -> Self {
        self.saved_at = Some(saved_at);
        self
    }

    /// Compresses the body before it is sealed (default [`Compression::None`]). A body that
    /// would not get smaller is written uncompressed.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Encodes the captured mementos, and encrypts the file's segments, on up to `threads`
    /// threads (default 1), as a manager's [`threads`](crate::ManagerBuilder::threads) does.
    /// The bytes are the same as with one.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The file's bytes.
    ///
    /// # Errors
    /// As for [`Snapshot::seal_file`]; [`Error::FeatureDisabled`] when the compression's, the
    /// cipher's or the MAC's feature is missing from this build; [`Error::Config`] for a zstd
    /// level zstd does not have.
    pub fn build(self) -> Result<Vec<u8>> {
        let saved_at = self.saved_at.unwrap_or_else(std::time::SystemTime::now);
        self.snapshot.seal_file_with(
            self.slot,
            self.schema_version,
            self.generation,
            saved_at,
            SealWith {
                threads: self.threads,
                ..SealWith::new(self.sealing, self.compression)
            },
        )
    }
}

impl fmt::Debug for FileSealer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSealer")
            .field("slot", &self.slot)
            .field("schema_version", &self.schema_version)
            .field("generation", &self.generation)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
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
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Counter {
        value: i32,
        restores: u32,
    }

    #[derive(Serialize, Deserialize)]
    struct CounterMemento {
        value: i32,
    }

    impl Originator for Counter {
        type Memento = CounterMemento;
        fn create_memento(&self) -> CounterMemento {
            CounterMemento { value: self.value }
        }
        fn restore_memento(&mut self, m: CounterMemento) -> Result<()> {
            if m.value < 0 {
                return Err(Error::rejected("negative counter"));
            }
            self.value = m.value;
            self.restores += 1;
            Ok(())
        }
    }

    #[test]
    fn encoding_on_many_threads_writes_the_bytes_one_thread_does() {
        let at = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let make = || {
            let mut s = Snapshot::new(Codec::Json);
            for i in 0..257u64 {
                let value = i32::try_from(i * 7).unwrap();
                let c = Counter { value, restores: 0 };
                s.capture(&format!("chunk-{i:04}"), &c).unwrap();
            }
            s
        };
        let seal = |s: &Snapshot, threads: usize| {
            s.sealer(SlotId::Numbered(1), 1, 1)
                .saved_at(at)
                .threads(threads)
                .build()
                .unwrap()
        };
        let one = seal(&make(), 1);
        for threads in [2, 3, 8, 1000] {
            assert_eq!(seal(&make(), threads), one, "{threads} threads");
        }
        // Sealed twice, a snapshot writes the same file: encoded ahead, or straight into it.
        let twice = make();
        assert_eq!(seal(&twice, 4), one);
        assert_eq!(seal(&twice, 1), one);
        let twice = make();
        assert_eq!(seal(&twice, 1), one);
        assert_eq!(seal(&twice, 4), one);
        assert_eq!(twice.encoded("chunk-0003").unwrap(), br#"{"value":21}"#);
    }

    #[test]
    fn a_memento_that_fails_to_encode_on_a_thread_fails_the_save() {
        use std::collections::HashMap;
        // JSON cannot write a map with non-string keys.
        let mut s = Snapshot::new(Codec::Json);
        for i in 0..8u64 {
            s.capture_memento("ok", &i).unwrap();
            let c = Counter {
                value: i32::try_from(i).unwrap(),
                restores: 0,
            };
            s.capture(&format!("c{i}"), &c).unwrap();
        }
        let bad: HashMap<(u8, u8), u8> = HashMap::from([((1, 2), 3)]);
        struct Bad(HashMap<(u8, u8), u8>);
        impl Originator for Bad {
            type Memento = HashMap<(u8, u8), u8>;
            fn create_memento(&self) -> Self::Memento {
                self.0.clone()
            }
            fn restore_memento(&mut self, m: Self::Memento) -> Result<()> {
                self.0 = m;
                Ok(())
            }
        }
        s.capture("c5-bad", &Bad(bad)).unwrap();
        for threads in [1, 4] {
            let err = s
                .sealer(SlotId::Numbered(1), 1, 1)
                .threads(threads)
                .build()
                .unwrap_err();
            assert!(
                matches!(&err, Error::Encode { id, .. } if id == "c5-bad"),
                "{threads}: {err}"
            );
        }
    }

    #[test]
    fn capturing_an_id_twice_replaces_the_memento() {
        for codec in [Codec::Json, Codec::MessagePack] {
            let mut s = Snapshot::new(codec);
            s.capture(
                "c",
                &Counter {
                    value: 1,
                    restores: 0,
                },
            )
            .unwrap();
            s.capture(
                "c",
                &Counter {
                    value: 2,
                    restores: 0,
                },
            )
            .unwrap();
            assert_eq!(s.len(), 1);
            let mut c = Counter::default();
            s.restore("c", &mut c).unwrap();
            assert_eq!(c.value, 2);
        }
    }

    #[test]
    fn restoring_a_missing_id_is_a_typed_error_and_leaves_the_originator_alone() {
        let s = Snapshot::new(Codec::Json);
        let mut c = Counter {
            value: 7,
            restores: 0,
        };
        let err = s.restore("nobody", &mut c).unwrap_err();
        assert!(matches!(err, Error::MissingMemento { ref id } if id == "nobody"));
        assert_eq!(
            c,
            Counter {
                value: 7,
                restores: 0
            }
        );
    }

    #[test]
    fn restoring_one_originator_does_not_decode_the_others() {
        let mut s = Snapshot::new(Codec::MessagePack);
        s.capture(
            "good",
            &Counter {
                value: 3,
                restores: 0,
            },
        )
        .unwrap();
        // Bytes that decode as nothing at all: only a decode of "broken" would notice.
        s.insert_raw("broken", vec![0xc1]).unwrap();
        let mut c = Counter::default();
        s.restore("good", &mut c).unwrap();
        assert_eq!(c.value, 3);
        let err = s.restore("broken", &mut c).unwrap_err();
        assert!(
            matches!(err, Error::Decode { ref id, .. } if id == "broken"),
            "{err}"
        );
        assert_eq!(c.value, 3, "a failed decode must not touch the originator");
    }

    #[test]
    fn originators_can_reject_a_memento() {
        let mut s = Snapshot::new(Codec::Json);
        s.capture_memento("c", &CounterMemento { value: -1 })
            .unwrap();
        let err = s.restore("c", &mut Counter::default()).unwrap_err();
        assert!(matches!(err, Error::Rejected { .. }), "{err}");
    }

    #[test]
    fn ids_are_validated_and_listed_in_order() {
        let mut s = Snapshot::new(Codec::Json);
        assert!(matches!(
            s.capture("", &Counter::default()),
            Err(Error::InvalidId { .. })
        ));
        assert!(matches!(
            s.capture(&"x".repeat(MAX_ID_LEN + 1), &Counter::default()),
            Err(Error::InvalidId { .. })
        ));
        s.capture(&"x".repeat(MAX_ID_LEN), &Counter::default())
            .unwrap();
        s.capture("b", &Counter::default()).unwrap();
        s.capture("a", &Counter::default()).unwrap();
        assert_eq!(s.ids().take(2).collect::<Vec<_>>(), ["a", "b"]);
        assert!(s.contains("a"));
        assert!(s.remove("a"));
        assert!(!s.remove("a"));
        assert!(!s.contains("a"));
        assert_eq!(s.len(), 2);
    }

    #[cfg(feature = "encryption")]
    #[test]
    fn files_sealed_by_a_tool_open_again() {
        let key = Key::from_bytes([3; 32]);
        let mut s = Snapshot::new(Codec::MessagePack).with_label("tool");
        s.capture(
            "c",
            &Counter {
                value: 9,
                restores: 0,
            },
        )
        .unwrap();
        let bytes = s.seal_file(SlotId::Autosave(2), 5, 7, Some(&key)).unwrap();
        let (header, opened) = Snapshot::open_file(bytes.clone(), Some(&key)).unwrap();
        assert_eq!(opened.raw("c"), s.raw("c"));
        assert_eq!(opened.metadata().label, "tool");
        assert_eq!(opened.metadata().saved_at, Some(header.saved_at));
        assert_eq!(
            (
                header.slot,
                header.schema_version,
                header.generation,
                header.encrypted
            ),
            (SlotId::Autosave(2), 5, 7, true)
        );
        assert!(matches!(
            Snapshot::open_file(bytes, None),
            Err(Error::KeyRequired {
                purpose: crate::KeyPurpose::Decrypt
            })
        ));
    }

    #[test]
    fn encoding_failures_are_typed_and_leave_the_snapshot_unchanged() {
        use std::collections::HashMap;
        #[derive(Serialize, PartialEq, Eq, Hash)]
        struct Key {
            a: u8,
        }
        let mut s = Snapshot::new(Codec::Json);
        let mut bad = HashMap::new();
        bad.insert(Key { a: 1 }, 1);
        let err = s.capture_memento("bad", &bad).unwrap_err();
        assert!(
            matches!(err, Error::Encode { ref id, .. } if id == "bad"),
            "{err}"
        );
        assert!(s.is_empty());
    }
}
