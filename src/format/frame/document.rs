//! A body's document written into a writer as it is encoded: where each memento's bytes come
//! from ([`Source`]), and [`write_document`], which writes the document (each memento under
//! its key) and gives each memento's range for the table of contents. The streamed save
//! ([`stream`](super::stream)) and a body compressed as it is encoded
//! ([`seal`](super::seal)) both write through it.

use std::io;

use crate::codec::{Codec, Encodable};
use crate::error::Error;
use crate::format::ahead::{Ahead, Ready};

/// Where a memento's bytes come from when a file is sealed.
pub(crate) enum Source<'a> {
    /// Encoded already.
    Bytes(&'a [u8]),
    /// Encoded now, straight into the file's buffer.
    Encode(&'a (dyn Encodable + 'a)),
    /// Entry `.1` of mementos other threads may be encoding while the file is written: what
    /// [`Ahead::take`] gives when the file reaches it.
    Ahead(&'a (dyn Ahead + 'a), usize),
}

impl Source<'_> {
    /// The memento's bytes, or the value to encode in its place.
    pub(super) fn ready(&self) -> Ready<'_> {
        match self {
            Source::Bytes(bytes) => Ready::Bytes(bytes),
            Source::Encode(value) => Ready::Here(*value),
            Source::Ahead(ahead, index) => ahead.take(*index),
        }
    }
}

/// What sees each memento's encoded bytes as a file is written (the manager's fingerprints of
/// a saved state): a memento's bytes in one piece or several, in order, then its end.
pub(crate) trait SeeMementos {
    /// The next bytes of the memento being written.
    fn piece(&mut self, bytes: &[u8]);

    /// The end of memento `id`, whose pieces came since the last end.
    fn end(&mut self, id: &str);
}

/// A memento's bytes go through this on their way to the document, to be seen.
struct Seen<'a, 'o, 's> {
    out: &'a mut (dyn DocumentOut + 'o),
    see: Option<&'a mut (dyn SeeMementos + 's)>,
}

impl io::Write for Seen<'_, '_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.out.write(bytes)?;
        if let Some(see) = self.see.as_mut() {
            see.piece(&bytes[..written]);
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl DocumentOut for Seen<'_, '_, '_> {
    fn written(&self) -> usize {
        self.out.written()
    }

    fn stopped(&self) -> Option<io::Error> {
        self.out.stopped()
    }
}

/// A writer a document is written into: it knows how much it took, and says when it stopped.
pub(super) trait DocumentOut: io::Write {
    /// How many bytes it took so far.
    fn written(&self) -> usize;

    /// Its own error, if it stopped: an encoder whose writer failed reports that failure as
    /// its own, and the writer's is the one to give.
    fn stopped(&self) -> Option<io::Error>;
}

/// Why [`write_document`] stopped.
#[derive(Debug)]
pub(super) enum DocumentError {
    /// The writer's error.
    Out(io::Error),
    /// A memento that did not encode.
    Encode(Error),
}

/// Writes the document of `entries` (`(id, memento version, source)`, in ascending id order)
/// into `out`: the codec's document, each memento under its id. Returns each memento's range
/// in it, in order: its offset from the document's start, then its length, as little-endian
/// `u64`s (the table of contents' fields). `see`, if any, sees each memento's bytes.
pub(super) fn write_document(
    codec: Codec,
    entries: &[(&str, u32, Source<'_>)],
    out: &mut dyn DocumentOut,
    mut see: Option<&mut (dyn SeeMementos + '_)>,
) -> Result<Vec<[u8; 16]>, DocumentError> {
    let put =
        |out: &mut dyn DocumentOut, bytes: &[u8]| out.write_all(bytes).map_err(DocumentError::Out);
    let doc_start = out.written();
    let mut scratch = Vec::new();
    codec.open_document(&mut scratch, entries.len());
    let mut ranges = Vec::with_capacity(entries.len());
    for (i, (id, _, memento)) in entries.iter().enumerate() {
        codec.write_document_key(&mut scratch, i, id);
        put(out, &scratch)?;
        scratch.clear();
        let start = out.written();
        let mut seen = Seen {
            out: &mut *out,
            see: see.as_deref_mut(),
        };
        match memento.ready() {
            Ready::Bytes(bytes) => put(&mut seen, bytes)?,
            Ready::Here(value) => {
                let encoded = value.encode_to_writer(codec, &mut seen);
                if let Some(e) = seen.stopped() {
                    return Err(DocumentError::Out(e));
                }
                encoded.map_err(|e| DocumentError::Encode(e.encoding(id)))?;
            }
        }
        if let Some(see) = see.as_deref_mut() {
            see.end(id);
        }
        let mut range = [0u8; 16];
        range[..8].copy_from_slice(&((start - doc_start) as u64).to_le_bytes());
        range[8..].copy_from_slice(&((out.written() - start) as u64).to_le_bytes());
        ranges.push(range);
    }
    codec.close_document(&mut scratch);
    put(out, &scratch)?;
    Ok(ranges)
}
