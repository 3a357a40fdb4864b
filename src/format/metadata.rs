//! The metadata section: what a load menu shows, readable without the key.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::bytes::{Reader, len_u16, len_u32, write_str16};
use crate::error::{Error, Result};

/// What a load menu shows about a save, stored in the file's header where it can be read
/// without decrypting anything.
///
/// Keep it small: the whole block (with the thumbnail) is capped at 4 MiB, and every
/// [`list`](crate::SaveLoadManager::list) reads it for every slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metadata {
    /// What the menu calls the save ("Level 3", "Before the boss"). At most 65,535 bytes.
    pub label: String,
    /// How long the player has played (stored with millisecond precision).
    pub playtime: Duration,
    /// The version of the game that wrote the save ("1.4.2"). At most 65,535 bytes.
    pub app_version: String,
    /// A small map of the game's own fields (chapter, difficulty, character name).
    pub user: BTreeMap<String, String>,
    /// A small image for the menu (PNG or whatever the game uses; the bytes are opaque).
    pub thumbnail: Option<Vec<u8>>,
    /// When the save was written. Set by the manager when it saves (any value here is replaced
    /// by the clock) and filled in when a save is loaded.
    pub saved_at: Option<SystemTime>,
}

impl Metadata {
    /// Whether a load menu shows `other` as it shows this, once both are in a file: the
    /// saved-at time aside (every save stamps its own), the playtime to the millisecond.
    pub(crate) fn shows_as(&self, other: &Metadata) -> bool {
        self.label == other.label
            && self.playtime.as_millis() == other.playtime.as_millis()
            && self.app_version == other.app_version
            && self.user == other.user
            && self.thumbnail == other.thumbnail
    }
}

/// Exact length of the metadata block for `m`.
pub(crate) fn encoded_metadata_len(m: &Metadata) -> usize {
    8 + 2
        + m.label.len()
        + 2
        + m.app_version.len()
        + 2
        + m.user
            .iter()
            .map(|(k, v)| 6 + k.len() + v.len())
            .sum::<usize>()
        + 4
        + m.thumbnail.as_ref().map_or(0, Vec::len)
}

pub(crate) fn write_metadata(buf: &mut Vec<u8>, m: &Metadata) -> Result<()> {
    let playtime = u64::try_from(m.playtime.as_millis()).unwrap_or(u64::MAX);
    buf.extend_from_slice(&playtime.to_le_bytes());
    write_str16(buf, &m.label, "label")?;
    write_str16(buf, &m.app_version, "app version")?;
    buf.extend_from_slice(&len_u16(m.user.len())?.to_le_bytes());
    for (k, v) in &m.user {
        write_str16(buf, k, "user field key")?;
        buf.extend_from_slice(&len_u32(v.len())?.to_le_bytes());
        buf.extend_from_slice(v.as_bytes());
    }
    let thumbnail = m.thumbnail.as_deref().unwrap_or_default();
    buf.extend_from_slice(&len_u32(thumbnail.len())?.to_le_bytes());
    buf.extend_from_slice(thumbnail);
    Ok(())
}

pub(crate) fn parse_metadata(bytes: &[u8]) -> Result<Metadata> {
    let mut r = Reader::new(bytes, "metadata");
    let playtime = Duration::from_millis(r.u64()?);
    let label_len = r.u16()? as usize;
    let label = r.str(label_len)?.to_owned();
    let version_len = r.u16()? as usize;
    let app_version = r.str(version_len)?.to_owned();
    let count = r.u16()?;
    let mut user = std::collections::BTreeMap::new();
    for _ in 0..count {
        let key_len = r.u16()? as usize;
        let key = r.str(key_len)?.to_owned();
        let value_len = r.u32()? as usize;
        let value = r.str(value_len)?.to_owned();
        if user.insert(key, value).is_some() {
            return Err(Error::malformed("duplicate user field in metadata"));
        }
    }
    let thumbnail_len = r.u32()? as usize;
    let thumbnail = r.bytes(thumbnail_len)?;
    let thumbnail = (!thumbnail.is_empty()).then(|| thumbnail.to_vec());
    if r.remaining() != 0 {
        return Err(Error::malformed("trailing bytes in metadata"));
    }
    Ok(Metadata {
        label,
        playtime,
        app_version,
        user,
        thumbnail,
        saved_at: None,
    })
}
