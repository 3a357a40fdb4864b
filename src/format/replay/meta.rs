//! The meta blocks of a replay's first and last chunks: [`StartMeta`] (frame rate, versions,
//! keyframe interval, seed, when it was recorded, and a save's metadata block) and
//! [`EndMeta`] (the totals a finished recording writes).

use std::time::SystemTime;

use super::{END_META_LEN, MAX_META_LEN, START_FIXED_LEN};
use crate::error::{Error, Result};
use crate::format::bytes::{self, Reader};
use crate::format::metadata::{self, Metadata};

/// The start chunk's fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartMeta {
    pub frame_rate: u32,
    pub schema_version: u32,
    pub input_version: u32,
    pub keyframe_interval: u32,
    pub seed: u64,
    pub recorded_at: SystemTime,
    pub metadata: Metadata,
}

impl StartMeta {
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let len = START_FIXED_LEN + metadata::encoded_metadata_len(&self.metadata);
        if len > MAX_META_LEN {
            return Err(Error::Config {
                reason: format!(
                    "the replay's metadata is {len} bytes, over the {MAX_META_LEN}-byte cap"
                ),
            });
        }
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(&self.frame_rate.to_le_bytes());
        buf.extend_from_slice(&self.schema_version.to_le_bytes());
        buf.extend_from_slice(&self.input_version.to_le_bytes());
        buf.extend_from_slice(&self.keyframe_interval.to_le_bytes());
        buf.extend_from_slice(&self.seed.to_le_bytes());
        buf.extend_from_slice(&bytes::system_time_to_millis(self.recorded_at).to_le_bytes());
        metadata::write_metadata(&mut buf, &self.metadata)?;
        Ok(buf)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "replay start chunk");
        let frame_rate = r.u32()?;
        let schema_version = r.u32()?;
        let input_version = r.u32()?;
        let keyframe_interval = r.u32()?;
        let seed = r.u64()?;
        let recorded_at = bytes::millis_to_system_time(r.u64()? as i64);
        if frame_rate == 0 || schema_version == 0 || input_version == 0 {
            return Err(Error::malformed(
                "a replay's frame rate, schema version and input version are at least 1",
            ));
        }
        let mut metadata = metadata::parse_metadata(&bytes[r.position()..])?;
        metadata.saved_at = Some(recorded_at);
        Ok(StartMeta {
            frame_rate,
            schema_version,
            input_version,
            keyframe_interval,
            seed,
            recorded_at,
            metadata,
        })
    }
}

/// The end chunk's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EndMeta {
    pub keyframes: u64,
    pub hashed_frames: u64,
}

impl EndMeta {
    pub(crate) fn encode(self) -> [u8; END_META_LEN] {
        let mut out = [0u8; END_META_LEN];
        out[..8].copy_from_slice(&self.keyframes.to_le_bytes());
        out[8..].copy_from_slice(&self.hashed_frames.to_le_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != END_META_LEN {
            return Err(Error::malformed(format!(
                "a replay's end chunk has {END_META_LEN} bytes of meta, not {}",
                bytes.len()
            )));
        }
        Ok(EndMeta {
            keyframes: bytes::read_u64(bytes, 0),
            hashed_frames: bytes::read_u64(bytes, 8),
        })
    }
}
