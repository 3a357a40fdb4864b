//! The index of a replay: every chunk read and checked once, in order, when the replay is
//! opened, one chunk in memory at a time; then where each frames chunk and keyframe is.
//!
//! The scan stops at the end chunk (the replay is complete), or where the file stops making
//! sense. What a crash or a kill during the recording can leave there (the file ending at a
//! chunk boundary or inside a chunk, zeros where unsynced data was lost, a last chunk whose
//! bytes did not all reach the disk) makes the replay [cut short](ReplayStatus::CutShort):
//! everything before it plays. Anything else (a chunk out of order, from another recording,
//! failing its AES-GCM tag, damaged with more data after it) is an error.

use super::header::ReplayTotals;
use super::source::{Located, Source};
use crate::error::{Error, Result};
use crate::format::Header;
use crate::format::replay::chunk as chunks;
use crate::format::replay::frames::parse_frames;
use crate::format::replay::meta::EndMeta;
use crate::format::replay::{CHUNK_HEADER_LEN, ChunkKind};
use crate::slot::SlotId;
use crate::snapshot::Snapshot;

/// Whether a replay file holds its whole recording.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayStatus {
    /// Every chunk checks out, and the end chunk closes the file.
    Complete,
    /// The file stops before its end chunk: the recording was interrupted (a crash, a kill, a
    /// full disk), or its last chunk was damaged since, which cannot be told apart. The frames
    /// and keyframes in the chunks before `playable_len` play.
    CutShort {
        /// How many bytes of the file hold sound chunks.
        playable_len: u64,
        /// The file's length.
        file_len: u64,
        /// Where and why the replay stops.
        reason: String,
    },
}

impl ReplayStatus {
    /// Whether the replay is [`Complete`](Self::Complete).
    #[must_use]
    pub fn is_complete(&self) -> bool {
        matches!(self, ReplayStatus::Complete)
    }
}

/// A frames chunk and how many frames it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FramesAt {
    pub at: Located,
    pub count: u64,
}

/// Where everything of a replay is.
#[derive(Debug)]
pub(crate) struct Index {
    /// The frames chunks, in frame order.
    pub frames: Vec<FramesAt>,
    /// The keyframe chunks, in frame order.
    pub keyframes: Vec<Located>,
    pub frame_count: u64,
    pub hashed_frames: u64,
    pub status: ReplayStatus,
    /// The end chunk's totals, for a complete replay.
    pub totals: Option<ReplayTotals>,
}

/// Opens the save file a keyframe chunk holds, and checks that it is the keyframe of `frame`
/// at the replay's schema version.
pub(crate) fn open_keyframe(
    payload: Vec<u8>,
    schema_version: u32,
    frame: u64,
) -> Result<(Header, Snapshot)> {
    let (header, snapshot) = Snapshot::open_file(payload, None)?;
    if header.schema_version != schema_version
        || header.generation != frame
        || header.slot != SlotId::Numbered(0)
    {
        return Err(Error::malformed(format!(
            "the keyframe of frame {frame} holds the save of another frame or schema version"
        )));
    }
    Ok((header, snapshot))
}

impl Index {
    /// Reads every chunk after the start chunk, in order.
    pub(crate) fn scan(source: &Source) -> Result<Self> {
        let start = source.start();
        let file_len = start.file_len;
        let mut index = Index {
            frames: Vec::new(),
            keyframes: Vec::new(),
            frame_count: 0,
            hashed_frames: 0,
            status: ReplayStatus::Complete,
            totals: None,
        };
        let mut offset = start.start_len;
        let mut next = 1u64;
        let cut = |offset: u64, reason: String| ReplayStatus::CutShort {
            playable_len: offset,
            file_len,
            reason,
        };
        loop {
            let remaining = file_len - offset;
            if remaining == 0 {
                index.status = cut(
                    offset,
                    format!(
                        "the file ends after chunk {} without an end chunk",
                        next - 1
                    ),
                );
                break;
            }
            let head = source.read(offset, remaining.min(CHUNK_HEADER_LEN as u64))?;
            let len = if head.len() < CHUNK_HEADER_LEN {
                None
            } else {
                chunks::declared_len(&head, start.stream.encrypted).ok()
            };
            let Some(declared) = len else {
                // No whole chunk header here: a torn one at the end, zeros, or damage.
                if chunks::is_magic_prefix(&head) && head.len() < CHUNK_HEADER_LEN {
                    index.status = cut(
                        offset,
                        format!("the file ends inside the header of chunk {next}"),
                    );
                    break;
                }
                if zeros_to_the_end(source, offset)? {
                    index.status = cut(
                        offset,
                        format!(
                            "the file holds only zeros from byte {offset}, where chunk {next} \
                             was being written"
                        ),
                    );
                    break;
                }
                return Err(Error::malformed(format!(
                    "no replay chunk starts at byte {offset}, where chunk {next} should"
                )));
            };
            let Some(len) = declared.filter(|&len| len <= remaining) else {
                index.status = cut(
                    offset,
                    format!("the file ends inside chunk {next}, from byte {offset}"),
                );
                break;
            };
            let chunk = match source.read_chunk(offset, len) {
                Ok(chunk) => chunk,
                Err(e @ Error::ChecksumMismatch { .. }) if len == remaining => {
                    index.status = cut(
                        offset,
                        format!(
                            "its last chunk (chunk {next}, from byte {offset}) is damaged: {e}"
                        ),
                    );
                    break;
                }
                Err(e) => return Err(e),
            };
            source.check_stream(&chunk, offset)?;
            let h = chunk.header;
            if h.index != next {
                return Err(Error::malformed(format!(
                    "chunk {} at byte {offset} where chunk {next} should be: chunks are missing \
                     or out of order",
                    h.index
                )));
            }
            if h.frame != index.frame_count {
                return Err(Error::malformed(format!(
                    "the {} chunk {next} is at frame {}, after {} frames",
                    h.kind.name(),
                    h.frame,
                    index.frame_count
                )));
            }
            let at = Located {
                offset,
                len,
                index: next,
                kind: h.kind,
                frame: h.frame,
            };
            match h.kind {
                ChunkKind::Start => {
                    return Err(Error::malformed(format!(
                        "a second start chunk at byte {offset}"
                    )));
                }
                ChunkKind::Frames => {
                    if !chunk.meta().is_empty() {
                        return Err(Error::malformed("a frames chunk with meta"));
                    }
                    let frames = parse_frames(chunk.payload()?)?;
                    let count = frames.len() as u64;
                    index.hashed_frames +=
                        frames.iter().filter(|f| f.hash.is_some()).count() as u64;
                    index.frames.push(FramesAt { at, count });
                    index.frame_count = index.frame_count.saturating_add(count);
                }
                ChunkKind::Keyframe => {
                    if !chunk.meta().is_empty() {
                        return Err(Error::malformed("a keyframe chunk with meta"));
                    }
                    open_keyframe(chunk.into_payload()?, start.start.schema_version, h.frame)?;
                    index.keyframes.push(at);
                }
                ChunkKind::End => {
                    let end = EndMeta::decode(chunk.meta())?;
                    if !chunk.payload()?.is_empty() {
                        return Err(Error::malformed("the end chunk has a payload"));
                    }
                    if end.keyframes != index.keyframes.len() as u64
                        || end.hashed_frames != index.hashed_frames
                    {
                        return Err(Error::malformed(format!(
                            "the end chunk counts {} keyframes and {} hashed frames; the file \
                             holds {} and {}",
                            end.keyframes,
                            end.hashed_frames,
                            index.keyframes.len(),
                            index.hashed_frames
                        )));
                    }
                    if len != remaining {
                        return Err(Error::malformed(format!(
                            "{} bytes after the replay's end chunk",
                            remaining - len
                        )));
                    }
                    index.totals = Some(ReplayTotals {
                        frames: index.frame_count,
                        keyframes: end.keyframes,
                        hashed_frames: end.hashed_frames,
                        chunks: next + 1,
                    });
                    break;
                }
            }
            offset += len;
            next += 1;
        }
        Ok(index)
    }

    /// The frames chunk that holds `frame`.
    pub(crate) fn frames_chunk_of(&self, frame: u64) -> Option<usize> {
        let i = self
            .frames
            .partition_point(|f| f.at.frame <= frame)
            .checked_sub(1)?;
        let f = &self.frames[i];
        (frame - f.at.frame < f.count).then_some(i)
    }

    /// The last keyframe at or before `frame`.
    pub(crate) fn keyframe_at_or_before(&self, frame: u64) -> Option<Located> {
        let i = self
            .keyframes
            .partition_point(|k| k.frame <= frame)
            .checked_sub(1)?;
        Some(self.keyframes[i])
    }
}

/// Whether every byte from `offset` to the end of the file is zero, read a block at a time.
fn zeros_to_the_end(source: &Source, mut offset: u64) -> Result<bool> {
    const BLOCK: u64 = 64 << 10;
    let file_len = source.start().file_len;
    while offset < file_len {
        let block = source.read(offset, BLOCK.min(file_len - offset))?;
        if block.is_empty() {
            break;
        }
        if block.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        offset += block.len() as u64;
    }
    Ok(true)
}
