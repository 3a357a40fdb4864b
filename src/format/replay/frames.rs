//! The payload of a frames chunk: [`FramesBuf`] gathers frames (each its input, or a mark that
//! it repeats the one before, and maybe a state hash) as they are recorded, and
//! [`parse_frames`] reads them back, every length checked before anything is allocated.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::format::bytes::{self, Reader};

/// Frame flag: a state hash follows the input.
const FRAME_HAS_HASH: u8 = 1;
/// Frame flag: the input is the previous frame's; no input bytes follow.
pub(super) const FRAME_REPEATS_INPUT: u8 = 2;

/// Frames being gathered into the payload of a frames chunk.
#[derive(Debug)]
pub(crate) struct FramesBuf {
    buf: Vec<u8>,
    count: u32,
    /// Where the last input written is, to spot a repeated one.
    last_input: Range<usize>,
}

impl FramesBuf {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.saturating_add(64));
        buf.extend_from_slice(&0u32.to_le_bytes());
        FramesBuf {
            buf,
            count: 0,
            last_input: 0..0,
        }
    }

    /// Adds a frame: its encoded input and its state hash.
    pub(crate) fn push(&mut self, input: &[u8], hash: Option<u64>) -> Result<()> {
        let repeats = self.count > 0 && self.buf[self.last_input.clone()] == *input;
        let flags = if hash.is_some() { FRAME_HAS_HASH } else { 0 }
            | if repeats { FRAME_REPEATS_INPUT } else { 0 };
        let len = bytes::len_u32(input.len())?;
        let count = self.count.checked_add(1).ok_or_else(|| Error::Config {
            reason: "too many frames for one replay chunk".into(),
        })?;
        self.buf.push(flags);
        if !repeats {
            self.buf.extend_from_slice(&len.to_le_bytes());
            let start = self.buf.len();
            self.buf.extend_from_slice(input);
            self.last_input = start..self.buf.len();
        }
        if let Some(hash) = hash {
            self.buf.extend_from_slice(&hash.to_le_bytes());
        }
        self.count = count;
        Ok(())
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The payload's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// The payload, with its frame count.
    pub(crate) fn payload(&mut self) -> &[u8] {
        self.buf[..4].copy_from_slice(&self.count.to_le_bytes());
        &self.buf
    }

    /// Empties the buffer, keeping its allocation.
    pub(crate) fn clear(&mut self) {
        self.buf.truncate(4);
        self.count = 0;
        self.last_input = 0..0;
    }
}

/// One frame of a parsed frames payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameRef {
    /// Where the encoded input is in the payload (shared with the frame before for a repeat).
    pub input: Range<usize>,
    pub hash: Option<u64>,
}

/// Parses a frames payload. Every length is checked against the bytes present before anything
/// is allocated for it.
///
/// # Errors
/// [`Error::Malformed`] for a payload that is not exactly a list of frames.
pub(crate) fn parse_frames(payload: &[u8]) -> Result<Vec<FrameRef>> {
    let mut r = Reader::new(payload, "frames chunk");
    let count = r.u32()? as usize;
    if count == 0 {
        return Err(Error::malformed("a frames chunk with no frames"));
    }
    // Every frame takes at least its flags byte.
    if count > r.remaining() {
        return Err(Error::malformed(format!(
            "a frames chunk claims {count} frames, more than its {} bytes can hold",
            r.remaining()
        )));
    }
    let mut frames: Vec<FrameRef> = Vec::with_capacity(count);
    for _ in 0..count {
        let flags = r.u8()?;
        if flags & !(FRAME_HAS_HASH | FRAME_REPEATS_INPUT) != 0 {
            return Err(Error::malformed(format!(
                "unknown frame flags {flags:#04x}"
            )));
        }
        let input = if flags & FRAME_REPEATS_INPUT != 0 {
            let previous = frames.last().ok_or_else(|| {
                Error::malformed("the first frame of a chunk repeats an input before it")
            })?;
            previous.input.clone()
        } else {
            let len = r.u32()? as usize;
            let start = r.position();
            r.bytes(len)?;
            start..start + len
        };
        let hash = if flags & FRAME_HAS_HASH != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        frames.push(FrameRef { input, hash });
    }
    if r.remaining() != 0 {
        return Err(Error::malformed(
            "trailing bytes after the frames of a chunk",
        ));
    }
    Ok(frames)
}
