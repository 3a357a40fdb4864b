//! A snapshot into and out of a file: [`Snapshot::open_file`] and the snapshot a checked file
//! holds (sharing its buffer), the `seal_file*` methods and the manager's sealing of a save or
//! a journal's delta (encoding captured mementos on several threads while the file is
//! written), and applying a delta to the snapshot of its base.

use std::sync::Arc;

use super::Snapshot;
use super::memento::{Blob, Entry, Pending};
#[cfg(doc)]
use super::seal::streams;
use super::seal::{FileOf, SealWith, Sealing, seal_entries, stream_entries};
use crate::codec::Encodable;
use crate::compression::Compression;
use crate::error::Result;
// The errors the docs name.
#[cfg(doc)]
use crate::error::Error;
use crate::format::{
    self, DEFAULT_MAX_FILE_SIZE, DEFAULT_MEMENTO_VERSION, EncodeAhead, FileKind, Header, InPlace,
    Key, Opened, Source, Trust,
};
use crate::format::{SeeMementos, StreamError};
use crate::slot::SlotId;
use crate::storage::StreamSink;

impl Snapshot {
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
            None,
        )
    }

    /// [`seal_file_with`](Self::seal_file_with), showing `see` each
    /// memento's encoded bytes as the file is written (the manager's fingerprints of a saved
    /// state).
    pub(crate) fn seal_file_seeing(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        with: SealWith<'_>,
        see: &mut dyn SeeMementos,
    ) -> Result<Vec<u8>> {
        self.seal(
            FileKind::Save,
            slot,
            schema_version,
            generation,
            None,
            crate::format::now(),
            with,
            Some(see),
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
            None,
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
        see: Option<&mut dyn SeeMementos>,
    ) -> Result<Vec<u8>> {
        let deleted = sequence.map(|n| (n, self.deleted_ids().collect()));
        let file = self.file_of(kind, slot, schema_version, generation, saved_at);
        self.write_entries(with.threads, with.size_hint, |entries| {
            seal_entries(&file, deleted, with, entries, see)
        })
    }

    /// A whole save file written into `sink` as it is encoded (the manager's save of a
    /// snapshot whose sealing [`streams`]); returns its length. `max_len` caps it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stream_file(
        &self,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        saved_at: std::time::SystemTime,
        with: SealWith<'_>,
        sink: &mut dyn StreamSink,
        max_len: u64,
        see: Option<&mut dyn SeeMementos>,
    ) -> std::result::Result<u64, StreamError> {
        let file = self.file_of(FileKind::Save, slot, schema_version, generation, saved_at);
        self.write_entries(with.threads, 0, |entries| {
            stream_entries(&file, with, entries, sink, max_len, see)
        })
    }

    /// What a file of this snapshot is, beside its mementos.
    fn file_of(
        &self,
        kind: FileKind,
        slot: SlotId,
        schema_version: u32,
        generation: u64,
        saved_at: std::time::SystemTime,
    ) -> FileOf<'_> {
        FileOf {
            codec: self.codec,
            metadata: &self.metadata,
            kind,
            slot,
            schema_version,
            generation,
            saved_at,
        }
    }

    /// Runs `write` over the snapshot's entries, in ascending id order, with the captured
    /// mementos not encoded yet encoded ahead of it by up to `threads - 1` workers (`write`
    /// encodes the rest in place as it reaches them).
    fn write_entries<R>(
        &self,
        threads: usize,
        size_hint: usize,
        write: impl FnOnce(&[(&str, u32, Source<'_>)]) -> R,
    ) -> R {
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
        let threads = threads.min(pending.len());
        fn values<'p>(pending: &[(usize, &'p Pending)]) -> Vec<&'p dyn Encodable> {
            pending.iter().map(|(_, p)| *p as &dyn Encodable).collect()
        }
        let ahead = EncodeAhead::new(pending.len(), threads, self.codec, size_hint);
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
            || write(&entries),
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
