//! The sync records: what this device knows of a slot's remote object, kept beside the slot
//! in the local storage (the names are [`synced_name`](savegame::slot::synced_name) and
//! [`conflict_name`](savegame::slot::conflict_name)), and which stores this device has found to
//! keep conditional writes ([`TRUST_NAME`]). Their format, and how the
//! sync reads and writes them in the manager's storage.
//!
//! A slot's record is a short text preamble and then a whole save file, byte for byte as it was
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
//! Before an upload the record also names the upload, so that a device killed after its PUT
//! landed, and before it heard so, knows the object for its own however much it saved since.
//! Such a record says `savegame-sync 2`, may lack the `stamp` line and the file (a slot never
//! synced before), and ends its preamble with:
//!
//! ```text
//! pending 4660100 13 1234567890\n   (the file being uploaded)
//! base 4660000 12 987654321\n       (the local file it was made from, when that is not the
//!                                    upload itself: a merge; its bytes follow the file's)
//! ```
//!
//! Before a file from the cloud (or a merge the cloud took) replaces the local one, the record
//! also names it, so that a device killed between the two writes knows the local file for the
//! cloud's version rather than a change of its own:
//!
//! ```text
//! pulled 4660200 14 1122334455\n    (the file being put in place)
//! pulled-etag "0cc175b9c0f1b6a8"\n  (its object's ETag and version, when the store gave them)
//! pulled-version 4\n
//! ```
//!
//! While the local file is the one named, the record stands for that file and its tag
//! ([`Preamble::in_effect`]); otherwise for the file and tag of its first lines.
//!
//! One record is written with one atomic put of the local storage, so the ETag and the file it
//! belongs to never disagree. The preamble is all a sync reads of it to tell whether either
//! side changed; the files (the common ancestor of a three-way merge, the remote version of a
//! conflict, the base of a merge in flight) are read only when they are needed.
//!
//! The trust record, `cloud.synced`, holds one line per store and prefix that passed the
//! probe of [`Remote::probe`](super::remote::Remote::probe):
//!
//! ```text
//! savegame-cloud 1\n
//! trusted\tAmazonS3(game-saves)\tplayers/4242\n
//! ```

use crate::Inner;
use crate::remote::Tag;
use savegame::FileStamp;
use savegame::slot::{SlotId, synced_name};
use savegame::{Error, Result};

/// The first line of a record with no upload in flight.
const MAGIC_LINE: &str = "savegame-sync 1";
/// The first line of a record that names an upload in flight.
const PENDING_LINE: &str = "savegame-sync 2";
/// A preamble longer than this is not a record's.
pub(super) const MAX_PREAMBLE: usize = 2048;

/// The local storage's name of the trust record.
pub(super) const TRUST_NAME: &str = "cloud.synced";
/// A trust record longer than this is not one.
pub(super) const MAX_TRUST: u64 = 64 * 1024;
/// The first line of the trust record.
const TRUST_LINE: &str = "savegame-cloud 1";

/// An upload that may have landed without this device hearing so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pending {
    /// The file uploaded.
    pub(super) upload: FileStamp,
    /// The local file it was made from, when that is another (a merge).
    pub(super) base: Option<FileStamp>,
}

/// A file from the cloud about to replace the local one, and its object's tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pulled {
    pub(super) stamp: FileStamp,
    pub(super) e_tag: Option<String>,
    pub(super) version: Option<String>,
}

/// What a record says of the remote object, without the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Preamble {
    /// The object's ETag when this device last saw it.
    pub(super) e_tag: Option<String>,
    /// The object's version, on stores that keep versions.
    pub(super) version: Option<String>,
    /// What identifies the file in the record: `None` when there is none (only an upload is
    /// recorded, of a slot never synced before).
    pub(super) stamp: Option<FileStamp>,
    /// The upload in flight, if any.
    pub(super) pending: Option<Pending>,
    /// The install in flight, if any.
    pub(super) pulled: Option<Pulled>,
}

impl Preamble {
    /// The record as it stands when the local file is stamped `local`: the install it names,
    /// once the local file is that file; else what its first lines say.
    pub(super) fn in_effect(self, local: Option<FileStamp>) -> Preamble {
        match self.pulled {
            Some(pulled) if local == Some(pulled.stamp) => Preamble {
                e_tag: pulled.e_tag,
                version: pulled.version,
                stamp: Some(pulled.stamp),
                pending: self.pending,
                pulled: None,
            },
            _ => self,
        }
    }
}

/// A whole record.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) preamble: Preamble,
    /// The file last synced (empty when the preamble has no stamp).
    pub(super) file: Vec<u8>,
    /// The base of the pending upload, when it is not the upload itself.
    pub(super) base: Option<Vec<u8>>,
}

/// What a record is made of, to encode it.
pub(super) struct Parts<'a> {
    pub(super) e_tag: Option<&'a str>,
    pub(super) version: Option<&'a str>,
    /// The file last synced, if any.
    pub(super) file: Option<&'a [u8]>,
    /// The upload in flight: its stamp, and the bytes of its base when that is another file.
    pub(super) pending: Option<(FileStamp, Option<&'a [u8]>)>,
    /// The install in flight: the file's stamp, its object's ETag and version.
    pub(super) pulled: Option<(FileStamp, Option<&'a str>, Option<&'a str>)>,
}

fn stamp_line(field: &str, stamp: &FileStamp) -> String {
    format!("{field} {} {} {}\n", stamp.len, stamp.generation, stamp.crc)
}

/// Encodes a record.
pub(super) fn encode(parts: &Parts<'_>) -> Result<Vec<u8>> {
    let magic = if parts.pending.is_some() || parts.pulled.is_some() {
        PENDING_LINE
    } else {
        MAGIC_LINE
    };
    let mut text = format!("{magic}\n");
    for (field, value) in [("etag", parts.e_tag), ("version", parts.version)] {
        if let Some(value) = value {
            if value.contains('\n') || value.is_empty() {
                return Err(Error::malformed(format!(
                    "the object store gave an {field} that cannot be recorded"
                )));
            }
            text.push_str(&format!("{field} {value}\n"));
        }
    }
    if let Some(file) = parts.file {
        text.push_str(&stamp_line("stamp", &FileStamp::of(file)?));
    } else if parts.pending.is_none() && parts.pulled.is_none() {
        return Err(Error::malformed(
            "a sync record without a file or an upload",
        ));
    }
    if let Some((upload, base)) = &parts.pending {
        text.push_str(&stamp_line("pending", upload));
        if let Some(base) = base {
            text.push_str(&stamp_line("base", &FileStamp::of(base)?));
        }
    }
    if let Some((stamp, e_tag, version)) = &parts.pulled {
        text.push_str(&stamp_line("pulled", stamp));
        for (field, value) in [("pulled-etag", e_tag), ("pulled-version", version)] {
            if let Some(value) = value {
                if value.contains('\n') || value.is_empty() {
                    return Err(Error::malformed(format!(
                        "the object store gave an {field} that cannot be recorded"
                    )));
                }
                text.push_str(&format!("{field} {value}\n"));
            }
        }
    }
    text.push('\n');
    let mut out = text.into_bytes();
    out.extend_from_slice(parts.file.unwrap_or_default());
    if let Some((_, Some(base))) = &parts.pending {
        out.extend_from_slice(base);
    }
    Ok(out)
}

/// Parses the preamble at the start of `bytes`: the preamble and where the files start.
pub(super) fn preamble(bytes: &[u8]) -> Result<(Preamble, usize)> {
    let bad = || Error::malformed("not a sync record");
    let window = &bytes[..bytes.len().min(MAX_PREAMBLE)];
    let end = window
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or_else(bad)?;
    let text = std::str::from_utf8(&window[..end]).map_err(|_| bad())?;
    let mut lines = text.lines();
    let pending_allowed = match lines.next() {
        Some(MAGIC_LINE) => false,
        Some(PENDING_LINE) => true,
        _ => return Err(bad()),
    };
    let (mut e_tag, mut version, mut stamp, mut upload, mut base) = (None, None, None, None, None);
    let (mut pulled, mut pulled_e_tag, mut pulled_version) = (None, None, None);
    for line in lines {
        let (field, value) = line.split_once(' ').ok_or_else(bad)?;
        let parse_stamp = || {
            let mut n = value.split(' ');
            let mut next = || n.next().and_then(|v| v.parse::<u64>().ok()).ok_or_else(bad);
            let (len, generation, crc) = (next()?, next()?, next()?);
            Ok::<_, Error>(FileStamp::new(
                len,
                generation,
                u32::try_from(crc).map_err(|_| bad())?,
            ))
        };
        match field {
            "etag" => e_tag = Some(value.to_owned()),
            "version" => version = Some(value.to_owned()),
            "stamp" => stamp = Some(parse_stamp()?),
            "pending" if pending_allowed => upload = Some(parse_stamp()?),
            "base" if pending_allowed => base = Some(parse_stamp()?),
            "pulled" if pending_allowed => pulled = Some(parse_stamp()?),
            "pulled-etag" if pending_allowed => pulled_e_tag = Some(value.to_owned()),
            "pulled-version" if pending_allowed => pulled_version = Some(value.to_owned()),
            _ => return Err(bad()),
        }
    }
    let pending = match (upload, base) {
        (Some(upload), base) => Some(Pending { upload, base }),
        (None, None) => None,
        (None, Some(_)) => return Err(bad()),
    };
    let pulled = match pulled {
        Some(stamp) => Some(Pulled {
            stamp,
            e_tag: pulled_e_tag,
            version: pulled_version,
        }),
        None if pulled_e_tag.is_none() && pulled_version.is_none() => None,
        None => return Err(bad()),
    };
    // A record that says it names something in flight names something, and one with nothing
    // in flight has its file.
    let in_flight = pending.is_some() || pulled.is_some();
    if pending_allowed != in_flight || (stamp.is_none() && !in_flight) {
        return Err(bad());
    }
    Ok((
        Preamble {
            e_tag,
            version,
            stamp,
            pending,
            pulled,
        },
        end + 2,
    ))
}

/// Parses a whole record: its preamble and the files, which must be the files it stamps.
pub(super) fn decode(bytes: Vec<u8>) -> Result<Record> {
    let wrong = || Error::malformed("the sync record's files are not the ones it names");
    let (preamble, start) = preamble(&bytes)?;
    let rest = &bytes[start..];
    let file_len = preamble.stamp.map_or(0, |s| s.len);
    let file_len = usize::try_from(file_len).map_err(|_| wrong())?;
    if rest.len() < file_len {
        return Err(wrong());
    }
    let (file, after) = rest.split_at(file_len);
    if let Some(stamp) = preamble.stamp
        && FileStamp::of(file)? != stamp
    {
        return Err(wrong());
    }
    let base = match preamble.pending.and_then(|p| p.base) {
        Some(stamp) => {
            if FileStamp::of(after)? != stamp {
                return Err(wrong());
            }
            Some(after.to_vec())
        }
        None if after.is_empty() => None,
        None => return Err(wrong()),
    };
    Ok(Record {
        preamble,
        file: file.to_vec(),
        base,
    })
}

/// The stores and prefixes the trust record names as trusted, from its bytes.
pub(super) fn trusted(bytes: &[u8]) -> Vec<(String, String)> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    if lines.next() != Some(TRUST_LINE) {
        return Vec::new();
    }
    lines
        .filter_map(|line| {
            let mut fields = line.split('\t');
            match (fields.next(), fields.next(), fields.next(), fields.next()) {
                (Some("trusted"), Some(store), Some(prefix), None) => {
                    Some((store.to_owned(), prefix.to_owned()))
                }
                _ => None,
            }
        })
        .collect()
}

/// The trust record naming `entries`; `None` when one cannot be written down (a name with a
/// tab or a line break), and then the store is probed again by the next sync.
pub(super) fn encode_trusted(entries: &[(String, String)]) -> Option<Vec<u8>> {
    let mut text = format!("{TRUST_LINE}\n");
    for (store, prefix) in entries {
        if [store, prefix]
            .iter()
            .any(|f| f.contains(['\t', '\n', '\r']))
        {
            return None;
        }
        text.push_str(&format!("trusted\t{store}\t{prefix}\n"));
    }
    Some(text.into_bytes())
}

/// The records, as the sync reads and writes them in the manager's storage.
impl Inner {
    pub(crate) fn read_preamble(&self, name: &str) -> Result<Option<Preamble>> {
        let head = self
            .storage()
            .read_head(name, MAX_PREAMBLE)
            .map_err(self.io(name))?;
        match head {
            None => Ok(None),
            Some(head) => preamble(&head.bytes).map(|(p, _)| Some(p)),
        }
    }

    /// Reads a whole record: `None` when there is none. A damaged record is as good as none
    /// (it is only this device's memory of the last sync; the next sync rebuilds it).
    pub(crate) fn read_record(&self, name: &str) -> Result<Option<Record>> {
        // A record holds at most two files (the last synced one and the base of a merge).
        let limit = self
            .manager
            .max_file_size()
            .saturating_mul(2)
            .saturating_add(MAX_PREAMBLE as u64);
        let bytes = self.storage().read(name, limit).map_err(self.io(name))?;
        Ok(bytes.and_then(|b| decode(b).ok()))
    }

    /// The slot's record, whole, as it stands ([`Preamble::in_effect`]): when it names
    /// an install that happened, the local file and its tag.
    pub(crate) fn read_synced(&self, slot: SlotId) -> Result<Option<Record>> {
        let name = slot.file_name();
        let Some(mut record) = self.read_record(&synced_name(&name))? else {
            return Ok(None);
        };
        let mut local = None;
        if let Some(pulled) = &record.preamble.pulled {
            let bytes = self
                .storage()
                .read(&name, self.manager.max_file_size())
                .map_err(self.io(&name))?;
            if let Some(bytes) = bytes
                && FileStamp::of(&bytes).ok() == Some(pulled.stamp)
            {
                local = Some(pulled.stamp);
                record.file = bytes;
            }
        }
        record.preamble = record.preamble.in_effect(local);
        Ok(Some(record))
    }

    /// Writes a record, whole, under `name`.
    pub(crate) fn put_record(&self, name: &str, parts: &Parts<'_>) -> Result<()> {
        let bytes = encode(parts)?;
        self.storage().put(name, &bytes).map_err(self.io(name))
    }

    /// Records `file` as what the cloud holds of `slot`, as `tag`: the slot is settled.
    pub(crate) fn write_record(&self, slot: SlotId, tag: &Tag, file: &[u8]) -> Result<()> {
        self.put_record(
            &synced_name(&slot.file_name()),
            &Parts {
                e_tag: tag.e_tag.as_deref(),
                version: tag.version.as_deref(),
                file: Some(file),
                pending: None,
                pulled: None,
            },
        )
    }

    /// Records, before it is sent, that the file stamped `upload` is being uploaded as `slot`,
    /// made from the local file `base` when that is another file (a merge): a device killed
    /// after the PUT landed, and before it heard so, then knows the object for its own,
    /// whatever it saved since. The record's tag and file stay what they were.
    pub(crate) fn note_upload(
        &self,
        slot: SlotId,
        upload: FileStamp,
        base: Option<&[u8]>,
    ) -> Result<()> {
        let known = self.read_synced(slot)?;
        let synced = known.as_ref().filter(|r| r.preamble.stamp.is_some());
        self.put_record(
            &synced_name(&slot.file_name()),
            &Parts {
                e_tag: synced.and_then(|r| r.preamble.e_tag.as_deref()),
                version: synced.and_then(|r| r.preamble.version.as_deref()),
                file: synced.map(|r| &r.file[..]),
                pending: Some((upload, base)),
                pulled: None,
            },
        )
    }

    /// Records, before it is put in place, that the file stamped `file` (the cloud's, as
    /// `tag`) is about to replace the local one: a device killed between the two writes then
    /// takes the local file for that version of the cloud's, not for a change of its own. The
    /// rest of the record (its tag and file, an upload in flight) stays what it was.
    pub(crate) fn note_install(&self, slot: SlotId, file: FileStamp, tag: &Tag) -> Result<()> {
        let known = self.read_synced(slot)?;
        let synced = known.as_ref().filter(|r| r.preamble.stamp.is_some());
        let pending = known
            .as_ref()
            .and_then(|r| r.preamble.pending.map(|p| (p.upload, r.base.as_deref())));
        self.put_record(
            &synced_name(&slot.file_name()),
            &Parts {
                e_tag: synced.and_then(|r| r.preamble.e_tag.as_deref()),
                version: synced.and_then(|r| r.preamble.version.as_deref()),
                file: synced.map(|r| &r.file[..]),
                pending,
                pulled: Some((file, tag.e_tag.as_deref(), tag.version.as_deref())),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use savegame::{SlotId, Snapshot};

    fn file(generation: u64) -> Vec<u8> {
        let mut s = Snapshot::new(savegame::Codec::Json);
        s.capture_memento("a", &generation).unwrap();
        s.seal_file(SlotId::Numbered(1), 1, generation, None)
            .unwrap()
    }

    fn plain<'a>(e_tag: Option<&'a str>, version: Option<&'a str>, f: &'a [u8]) -> Parts<'a> {
        Parts {
            e_tag,
            version,
            file: Some(f),
            pending: None,
            pulled: None,
        }
    }

    #[test]
    fn a_record_round_trips_with_and_without_tags() {
        let f = file(7);
        for (e_tag, version) in [(Some("\"abc\""), Some("3")), (None, None)] {
            let bytes = encode(&plain(e_tag, version, &f)).unwrap();
            assert!(bytes.starts_with(b"savegame-sync 1\n"));
            let record = decode(bytes).unwrap();
            let p = &record.preamble;
            assert_eq!(p.e_tag.as_deref(), e_tag);
            assert_eq!(p.version.as_deref(), version);
            assert_eq!(p.stamp.unwrap().generation, 7);
            assert_eq!(p.pending, None);
            assert_eq!(record.file, f);
            assert!(record.base.is_none());
        }
    }

    #[test]
    fn a_record_of_an_upload_in_flight_round_trips() {
        let (ancestor, upload, base) = (file(3), file(5), file(4));
        let up = FileStamp::of(&upload).unwrap();
        // A merge: the upload and its base, beside the ancestor.
        let bytes = encode(&Parts {
            pending: Some((up, Some(&base))),
            ..plain(Some("\"e\""), None, &ancestor)
        })
        .unwrap();
        assert!(bytes.starts_with(b"savegame-sync 2\n"));
        let record = decode(bytes).unwrap();
        assert_eq!(record.file, ancestor);
        assert_eq!(record.base.as_deref(), Some(&base[..]));
        let pending = record.preamble.pending.unwrap();
        assert_eq!(pending.upload, up);
        assert_eq!(pending.base, Some(FileStamp::of(&base).unwrap()));
        // A first upload of a slot: no ancestor, no base.
        let bytes = encode(&Parts {
            e_tag: None,
            version: None,
            file: None,
            pending: Some((up, None)),
            pulled: None,
        })
        .unwrap();
        let record = decode(bytes).unwrap();
        assert_eq!(record.preamble.stamp, None);
        assert!(record.file.is_empty() && record.base.is_none());
        assert_eq!(record.preamble.pending.unwrap().base, None);
    }

    #[test]
    fn a_record_of_an_install_in_flight_stands_for_it_once_it_is_in_place() {
        let (old, new) = (file(3), file(4));
        let new_stamp = FileStamp::of(&new).unwrap();
        let bytes = encode(&Parts {
            pulled: Some((new_stamp, Some("\"n\""), Some("9"))),
            ..plain(Some("\"o\""), None, &old)
        })
        .unwrap();
        assert!(bytes.starts_with(b"savegame-sync 2\n"));
        let record = decode(bytes).unwrap();
        assert_eq!(record.file, old);
        let old_stamp = FileStamp::of(&old).unwrap();
        let before = record.preamble.clone().in_effect(Some(old_stamp));
        assert_eq!(before.e_tag.as_deref(), Some("\"o\""));
        assert_eq!(before.stamp, Some(old_stamp));
        let after = record.preamble.in_effect(Some(new_stamp));
        assert_eq!(after.e_tag.as_deref(), Some("\"n\""));
        assert_eq!(after.version.as_deref(), Some("9"));
        assert_eq!(after.stamp, Some(new_stamp));
        assert_eq!(after.pulled, None);
    }

    #[test]
    fn a_damaged_record_is_refused() {
        let f = file(7);
        let mut bytes = encode(&plain(Some("x"), None, &f)).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(decode(bytes).is_err());
        assert!(preamble(b"savegame-sync 3\n\n").is_err());
        assert!(preamble(b"savegame-sync 1\nstamp 1 2\n\n").is_err());
        // An upload is named only in a record that says so.
        assert!(preamble(b"savegame-sync 1\nstamp 1 2 3\npending 1 2 3\n\n").is_err());
        assert!(preamble(b"savegame-sync 2\nstamp 1 2 3\nbase 1 2 3\n\n").is_err());
        assert!(preamble(b"savegame-sync 2\n\n").is_err());
        assert!(preamble(b"savegame-sync 2\nstamp 1 2 3\n\n").is_err());
        assert!(preamble(b"savegame-sync 2\nstamp 1 2 3\npulled-etag x\n\n").is_err());
        assert!(encode(&plain(Some("a\nb"), None, &f)).is_err());
        // Trailing bytes after the file are no record's.
        let mut bytes = encode(&plain(None, None, &f)).unwrap();
        bytes.push(0);
        assert!(decode(bytes).is_err());
    }

    #[test]
    fn the_trust_record_round_trips_and_ignores_what_it_cannot_read() {
        let entries = vec![
            ("AmazonS3(saves)".to_owned(), "players/1".to_owned()),
            ("InMemory".to_owned(), "p".to_owned()),
        ];
        let bytes = encode_trusted(&entries).unwrap();
        assert_eq!(trusted(&bytes), entries);
        assert!(trusted(b"savegame-cloud 2\ntrusted\ta\tb\n").is_empty());
        assert!(trusted(b"\xff").is_empty());
        assert!(encode_trusted(&[("a\tb".to_owned(), "p".to_owned())]).is_none());
    }
}
