//! Where a replay is read from: chunks of a file in a [`Storage`], read one at a time.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::Key;
use crate::format::replay::chunk::{self as chunks, Chunk};
use crate::format::replay::meta::{EndMeta, StartMeta};
use crate::format::replay::{CHUNK_HEADER_LEN, ChunkKind, MAX_CHUNK_LEN, MAX_START_LEN, Stream};
use crate::storage::{FsStorage, Storage};

/// A chunk's place in the file, and what it must say about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Located {
    pub offset: u64,
    pub len: u64,
    pub index: u64,
    pub kind: ChunkKind,
    pub frame: u64,
}

/// A replay file in a storage, and what its start chunk says.
#[derive(Debug)]
pub(crate) struct Source {
    storage: Arc<dyn Storage>,
    name: String,
    key: Option<Key>,
    read: StartRead,
}

/// The folder storage and file name of `path`.
pub(crate) fn file_storage(path: &Path) -> Result<(FsStorage, String)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::Config {
            reason: format!("{} does not name a file", path.display()),
        })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok((FsStorage::new(dir)?, name.to_owned()))
}

/// What the start chunk of a replay file says, and where the file ends.
#[derive(Debug, Clone)]
pub(crate) struct StartRead {
    /// The file's length when the start chunk was read.
    pub file_len: u64,
    /// The start chunk's length.
    pub start_len: u64,
    pub stream: Stream,
    pub format_version: u16,
    pub start: StartMeta,
}

/// Reads and checks the start chunk of `name`: with a key, its AES-GCM tag too.
pub(crate) fn read_start(
    storage: &dyn Storage,
    name: &str,
    key: Option<&Key>,
) -> Result<StartRead> {
    let head = storage
        .read_at(name, 0, CHUNK_HEADER_LEN)
        .map_err(|e| Error::io(storage.locate(name), e))?
        .ok_or_else(|| Error::io(storage.locate(name), io::ErrorKind::NotFound.into()))?;
    let file_len = head.file_len;
    if head.bytes.len() < CHUNK_HEADER_LEN {
        return Err(if chunks::is_magic_prefix(&head.bytes) {
            Error::malformed(format!(
                "truncated: {file_len} bytes is shorter than a replay's start chunk"
            ))
        } else {
            Error::NotASave
        });
    }
    // The start chunk's own flag is all there is to go by here; a damaged one makes the CRC
    // check fail.
    let encrypted = chunks::says_encrypted(&head.bytes);
    let len = chunks::declared_len(&head.bytes, encrypted)?
        .filter(|&len| len <= file_len)
        .ok_or_else(|| {
            Error::malformed(format!(
                "truncated: the file ends inside the replay's start chunk ({file_len} bytes)"
            ))
        })?;
    if len > MAX_START_LEN {
        return Err(Error::malformed(format!(
            "the replay's start chunk claims {len} bytes, more than it can hold"
        )));
    }
    let bytes = read_exact(storage, name, 0, len)?;
    let chunk = chunks::open_chunk(bytes, key)?;
    let h = chunk.header;
    if h.kind != ChunkKind::Start || h.index != 0 || h.frame != 0 {
        return Err(Error::malformed(format!(
            "the replay starts with a {} chunk numbered {}, not its start chunk",
            h.kind.name(),
            h.index
        )));
    }
    // The start chunk's payload is empty (the tag alone, when encrypted).
    if chunk.payload().is_ok_and(|p| !p.is_empty()) {
        return Err(Error::malformed("the replay's start chunk has a payload"));
    }
    Ok(StartRead {
        file_len,
        start_len: len,
        stream: h.stream,
        format_version: h.format_version,
        start: StartMeta::decode(chunk.meta())?,
    })
}

/// The end chunk at the very end of the file, if there is a sound one of this replay: its
/// frame (the frame count), index, and meta. Damage is not an error here: it means the replay
/// has no readable end, as one cut short.
///
/// # Errors
/// [`Error::Io`] when reading fails.
pub(crate) fn read_end(
    storage: &dyn Storage,
    name: &str,
    start: &StartRead,
    key: Option<&Key>,
) -> Result<Option<(u64, u64, EndMeta)>> {
    let len = chunks::end_chunk_len(start.stream.encrypted);
    let Some(offset) = start
        .file_len
        .checked_sub(len)
        .filter(|&o| o >= start.start_len)
    else {
        return Ok(None);
    };
    let bytes = match read_exact(storage, name, offset, len) {
        Ok(bytes) => bytes,
        Err(Error::Io { source, path }) => return Err(Error::Io { source, path }),
        Err(_) => return Ok(None),
    };
    let Ok(chunk) = chunks::open_chunk(bytes, key) else {
        return Ok(None);
    };
    let h = chunk.header;
    if h.kind != ChunkKind::End
        || h.stream != start.stream
        || h.format_version != start.format_version
        || h.index == 0
    {
        return Ok(None);
    }
    Ok(EndMeta::decode(chunk.meta())
        .ok()
        .map(|end| (h.frame, h.index, end)))
}

impl Source {
    /// Reads and checks the start chunk of `name`: with a key, its AES-GCM tag too.
    pub(crate) fn open(storage: Arc<dyn Storage>, name: &str, key: Option<Key>) -> Result<Self> {
        let read = read_start(storage.as_ref(), name, key.as_ref())?;
        Ok(Source {
            storage,
            name: name.to_owned(),
            key,
            read,
        })
    }

    /// The key chunks are opened with.
    pub(crate) fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// The start chunk's fields and the file's length.
    pub(crate) fn start(&self) -> &StartRead {
        &self.read
    }

    /// Where the file is, for error messages.
    pub(crate) fn path(&self) -> std::path::PathBuf {
        self.storage.locate(&self.name)
    }

    /// Up to `len` bytes from `offset` (fewer at the end of the file).
    pub(crate) fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let head = self
            .storage
            .read_at(&self.name, offset, len)
            .map_err(|e| Error::io(self.path(), e))?
            .ok_or_else(|| Error::io(self.path(), io::ErrorKind::NotFound.into()))?;
        Ok(head.bytes)
    }

    /// The chunk at `offset`, exactly `len` bytes, checked, decrypted when there is a key.
    pub(crate) fn read_chunk(&self, offset: u64, len: u64) -> Result<Chunk> {
        if len > MAX_CHUNK_LEN {
            return Err(Error::TooLarge {
                path: self.path(),
                size: len,
                limit: MAX_CHUNK_LEN,
            });
        }
        let bytes = read_exact(self.storage.as_ref(), &self.name, offset, len)?;
        chunks::open_chunk(bytes, self.key.as_ref())
    }

    /// Checks that `chunk` belongs to this replay.
    pub(crate) fn check_stream(&self, chunk: &Chunk, offset: u64) -> Result<()> {
        let h = &chunk.header;
        if h.stream.replay_id != self.read.stream.replay_id {
            return Err(Error::malformed(format!(
                "the chunk at byte {offset} belongs to another recording"
            )));
        }
        if h.stream != self.read.stream || h.format_version != self.read.format_version {
            return Err(Error::malformed(format!(
                "the chunk at byte {offset} has another codec, format version or encryption \
                 than its replay"
            )));
        }
        Ok(())
    }

    /// The chunk the index found at `at`, read again and checked to be that very chunk.
    pub(crate) fn chunk(&self, at: &Located) -> Result<Chunk> {
        let chunk = self.read_chunk(at.offset, at.len)?;
        self.check_stream(&chunk, at.offset)?;
        let h = &chunk.header;
        if (h.kind, h.index, h.frame) != (at.kind, at.index, at.frame) {
            return Err(Error::malformed(format!(
                "the chunk at byte {} changed since the replay was opened",
                at.offset
            )));
        }
        Ok(chunk)
    }
}

/// Exactly `len` bytes of `name` from `offset`.
fn read_exact(storage: &dyn Storage, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    let want = usize::try_from(len).map_err(|_| Error::malformed("a chunk too large to read"))?;
    let head = storage
        .read_at(name, offset, want)
        .map_err(|e| Error::io(storage.locate(name), e))?
        .ok_or_else(|| Error::io(storage.locate(name), io::ErrorKind::NotFound.into()))?;
    if head.bytes.len() != want {
        return Err(Error::malformed(format!(
            "the file ends inside the chunk at byte {offset}: it changed since it was opened"
        )));
    }
    Ok(head.bytes)
}
