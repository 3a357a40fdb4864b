//! The sync record: what this device knows of a slot's remote object, kept beside the slot in
//! the local storage (the names are [`synced_name`](crate::slot::synced_name) and
//! [`conflict_name`](crate::slot::conflict_name)).
//!
//! A record is a short text preamble and then a whole save file, byte for byte as it was
//! uploaded or downloaded:
//!
//! ```text
//! savegame-sync 1\n
//! etag "5d41402abc4b2a76b9719d911017c592"\n     (absent when the store gave none)
//! version 3\n                                   (absent when the store gave none)
//! stamp 4660000 12 3735928559\n                 (the file's length, generation and CRC32)
//! \n
//! <the save file's bytes>
//! ```
//!
//! One record is written with one atomic put of the local storage, so the ETag and the file it
//! belongs to never disagree. The preamble is all a sync reads of it to tell whether either
//! side changed; the file (the common ancestor of a three-way merge, or the remote version of
//! a conflict) is read only when it is needed.

use crate::error::{Error, Result};
use crate::manager::sync::FileStamp;

/// The first line of every record.
const MAGIC_LINE: &str = "savegame-sync 1";
/// A preamble longer than this is not a record's.
pub(super) const MAX_PREAMBLE: usize = 2048;

/// What a record says of the remote object, without the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Preamble {
    /// The object's ETag when this device last saw it.
    pub(super) e_tag: Option<String>,
    /// The object's version, on stores that keep versions.
    pub(super) version: Option<String>,
    /// What identifies the file in the record.
    pub(super) stamp: FileStamp,
}

/// Encodes a record of `file` as the object `e_tag` / `version`.
pub(super) fn encode(e_tag: Option<&str>, version: Option<&str>, file: &[u8]) -> Result<Vec<u8>> {
    let stamp = FileStamp::of(file)?;
    let mut text = format!("{MAGIC_LINE}\n");
    for (field, value) in [("etag", e_tag), ("version", version)] {
        if let Some(value) = value {
            if value.contains('\n') || value.is_empty() {
                return Err(Error::malformed(format!(
                    "the object store gave an {field} that cannot be recorded"
                )));
            }
            text.push_str(&format!("{field} {value}\n"));
        }
    }
    text.push_str(&format!(
        "stamp {} {} {}\n\n",
        stamp.len, stamp.generation, stamp.crc
    ));
    let mut out = text.into_bytes();
    out.extend_from_slice(file);
    Ok(out)
}

/// Parses the preamble at the start of `bytes`: the preamble and where the file starts.
pub(super) fn preamble(bytes: &[u8]) -> Result<(Preamble, usize)> {
    let bad = || Error::malformed("not a sync record");
    let window = &bytes[..bytes.len().min(MAX_PREAMBLE)];
    let end = window
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or_else(bad)?;
    let text = std::str::from_utf8(&window[..end]).map_err(|_| bad())?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC_LINE) {
        return Err(bad());
    }
    let (mut e_tag, mut version, mut stamp) = (None, None, None);
    for line in lines {
        let (field, value) = line.split_once(' ').ok_or_else(bad)?;
        match field {
            "etag" => e_tag = Some(value.to_owned()),
            "version" => version = Some(value.to_owned()),
            "stamp" => {
                let mut n = value.split(' ');
                let mut next = || n.next().and_then(|v| v.parse::<u64>().ok()).ok_or_else(bad);
                let (len, generation, crc) = (next()?, next()?, next()?);
                stamp = Some(FileStamp {
                    len,
                    generation,
                    crc: u32::try_from(crc).map_err(|_| bad())?,
                });
            }
            _ => return Err(bad()),
        }
    }
    let stamp = stamp.ok_or_else(bad)?;
    Ok((
        Preamble {
            e_tag,
            version,
            stamp,
        },
        end + 2,
    ))
}

/// Parses a whole record: its preamble and the file, which must be the file it stamps.
pub(super) fn decode(mut bytes: Vec<u8>) -> Result<(Preamble, Vec<u8>)> {
    let (preamble, start) = preamble(&bytes)?;
    let file = bytes.split_off(start);
    if FileStamp::of(&file)? != preamble.stamp {
        return Err(Error::malformed(
            "the sync record's file is not the one it names",
        ));
    }
    Ok((preamble, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SlotId, Snapshot};

    fn file() -> Vec<u8> {
        let mut s = Snapshot::new(crate::Codec::Json);
        s.capture_memento("a", &1u32).unwrap();
        s.seal_file(SlotId::Numbered(1), 1, 7, None).unwrap()
    }

    #[test]
    fn a_record_round_trips_with_and_without_tags() {
        let f = file();
        for (e_tag, version) in [(Some("\"abc\""), Some("3")), (None, None)] {
            let bytes = encode(e_tag, version, &f).unwrap();
            let (p, back) = decode(bytes).unwrap();
            assert_eq!(p.e_tag.as_deref(), e_tag);
            assert_eq!(p.version.as_deref(), version);
            assert_eq!(p.stamp.generation, 7);
            assert_eq!(back, f);
        }
    }

    #[test]
    fn a_damaged_record_is_refused() {
        let f = file();
        let mut bytes = encode(Some("x"), None, &f).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(decode(bytes).is_err());
        assert!(preamble(b"savegame-sync 2\n\n").is_err());
        assert!(preamble(b"savegame-sync 1\nstamp 1 2\n\n").is_err());
        assert!(encode(Some("a\nb"), None, &f).is_err());
    }
}
