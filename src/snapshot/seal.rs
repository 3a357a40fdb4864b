//! How a file is sealed: in the clear, authenticated or encrypted ([`Sealing`]), compressed
//! or not, on how many threads ([`SealWith`]), and [`seal_entries`], which turns any list of
//! mementos into a file's bytes: a snapshot's, and a state's listed by reference
//! ([`Members`](crate::Members)).

use crate::codec::Codec;
use crate::compression::Compression;
use crate::error::Result;
use crate::format::{
    self, FileKind, Key, Metadata, Protect, SealParams, SeeMementos, Source, StreamError,
};
use crate::slot::SlotId;
use crate::storage::StreamSink;

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
    /// before the file is assembled; the bytes are the same either way (a Zstandard document
    /// over 1 MiB is compressed 512 KiB at a time, on these threads too).
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
/// number and deletions, sealed and written as `with` says; `see`, if any, sees each
/// memento's encoded bytes. For a snapshot, and for a state listed by reference
/// ([`Members`](crate::Members)).
pub(crate) fn seal_entries(
    file: &FileOf<'_>,
    delta: Option<(u64, Vec<&str>)>,
    with: SealWith<'_>,
    entries: &[(&str, u32, Source<'_>)],
    see: Option<&mut dyn SeeMementos>,
) -> Result<Vec<u8>> {
    let params = params(file, delta, with)?;
    format::seal_sources(&params, entries, with.size_hint, see)
}

/// Whether a save sealed as `with` says is written as it is encoded
/// ([`stream_entries`]): plain or encrypted, uncompressed or compressed in pieces (Zstandard).
pub(crate) fn streams(with: &SealWith<'_>) -> bool {
    matches!(with.sealing, Sealing::Plain | Sealing::Encrypted(_))
        && format::streams_compressed(with.compression)
}

/// Writes the save `file` of `entries` into `sink` as it is encoded, sealed as `with` says
/// (which [`streams`]); returns its length. `max_len` caps it.
pub(crate) fn stream_entries(
    file: &FileOf<'_>,
    with: SealWith<'_>,
    entries: &[(&str, u32, Source<'_>)],
    sink: &mut dyn StreamSink,
    max_len: u64,
    see: Option<&mut dyn SeeMementos>,
) -> std::result::Result<u64, StreamError> {
    let params = params(file, None, with)?;
    format::seal_streamed(&params, entries, sink, max_len, see)
}

/// What the format's writers take for `file`: a fresh nonce to encrypt with.
fn params<'a>(
    file: &FileOf<'a>,
    delta: Option<(u64, Vec<&'a str>)>,
    with: SealWith<'a>,
) -> Result<SealParams<'a>> {
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
    Ok(params)
}
