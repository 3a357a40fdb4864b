//! How a snapshot holds one memento ([`Entry`]): its encoded bytes ([`Blob`], a range of a
//! buffer shared with the file it was loaded from, or its own), or a captured memento
//! ([`Pending`]) that is encoded when the snapshot is saved, straight into the file, or once,
//! when its bytes are first asked for.

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::Serialize;

use crate::codec::{Codec, CodecError, Encodable};
use crate::error::{Error, Result};
use crate::format::Source;

/// The encoded bytes of one memento: a range of a shared buffer.
#[derive(Clone)]
pub(super) struct Blob {
    pub(super) buf: Arc<Vec<u8>>,
    pub(super) range: Range<usize>,
}

impl Blob {
    pub(super) fn owned(bytes: Vec<u8>) -> Self {
        let range = 0..bytes.len();
        Blob {
            buf: Arc::new(bytes),
            range,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// A memento of any serde type, for encoding later (perhaps on another thread).
pub(super) trait ErasedMemento: Send + Sync {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError>;
    fn encode_to_writer(&self, codec: Codec, out: &mut dyn io::Write) -> Result<(), CodecError>;
}

impl<T: Serialize + Send + Sync + 'static> ErasedMemento for T {
    fn encode_into(&self, codec: Codec, out: &mut Vec<u8>) -> Result<(), CodecError> {
        codec.encode_into(out, self)
    }

    fn encode_to_writer(&self, codec: Codec, out: &mut dyn io::Write) -> Result<(), CodecError> {
        codec.encode_to_writer(out, self)
    }
}

/// A captured memento, encoded when it is saved or its bytes are first needed.
///
/// A save encodes it straight into the file's buffer (or, on many threads, maybe into a
/// worker's buffer, see [`EncodeAhead`](crate::format::EncodeAhead)) and keeps the memento,
/// so a snapshot saved twice encodes it twice and holds no second copy of its bytes in
/// between. Asking for its bytes ([`Snapshot::encoded`](crate::Snapshot::encoded)) encodes it
/// into a buffer of its own, once, and drops the memento.
pub(super) struct Pending {
    pub(super) memento: Mutex<Option<Box<dyn ErasedMemento>>>,
    pub(super) encoded: OnceLock<Result<Vec<u8>, String>>,
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

    fn encode_to_writer(&self, codec: Codec, out: &mut dyn io::Write) -> Result<(), CodecError> {
        let memento = self.memento.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = memento.as_ref() {
            return m.encode_to_writer(codec, out);
        }
        drop(memento);
        match self.encoded.wait() {
            Ok(bytes) => out
                .write_all(bytes)
                .map_err(|e| CodecError::Codec(Box::new(e))),
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
pub(super) enum Entry {
    Encoded(Blob),
    Pending(Arc<Pending>),
}

impl Entry {
    /// Where a save takes this memento's bytes from: its bytes when it has them, or an
    /// encoding straight into the file.
    pub(super) fn source(&self) -> Source<'_> {
        match self {
            Entry::Encoded(blob) => Source::Bytes(blob.bytes()),
            Entry::Pending(p) => match p.encoded.get() {
                Some(Ok(bytes)) => Source::Bytes(bytes),
                _ => Source::Encode(p.as_ref()),
            },
        }
    }

    pub(super) fn bytes(&self, codec: Codec, id: &str) -> Result<&[u8]> {
        match self {
            Entry::Encoded(blob) => Ok(blob.bytes()),
            Entry::Pending(p) => p.bytes(codec).map_err(|reason| Error::Encode {
                id: id.to_owned(),
                source: reason.into(),
            }),
        }
    }
}
