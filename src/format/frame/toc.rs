//! Reading a body: a delta's preamble (its sequence number and the ids it deletes), then the
//! table of contents, checked entry by entry, and the check that the document after it is
//! exactly the codec's map of those mementos. [`seal`](super::seal) writes both.

use std::ops::Range;

use super::{DEFAULT_MEMENTO_VERSION, FORMAT_VERSION_2};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::bytes::Reader;

/// A table-of-contents entry without its id: the id's length, the memento version (from
/// format version 2), offset and length.
pub(super) const fn toc_entry_fixed(format_version: u16) -> usize {
    if format_version >= FORMAT_VERSION_2 {
        2 + 4 + 8 + 8
    } else {
        2 + 8 + 8
    }
}

/// A memento's place in an opened file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TocEntry {
    pub id: String,
    /// The memento's version ([`DEFAULT_MEMENTO_VERSION`] in a format-1 file).
    pub version: u32,
    /// Absolute range in the opened file's buffer.
    pub range: Range<usize>,
}

/// A delta's sequence number and deleted ids, and where its table of contents starts.
pub(super) fn parse_delta_preamble(body: &[u8]) -> Result<(u64, Vec<String>, usize)> {
    let mut r = Reader::new(body, "delta preamble");
    let sequence = r.u64()?;
    let count = r.u32()? as usize;
    if count > r.remaining() / 3 {
        return Err(Error::malformed(format!(
            "the delta claims {count} deletions, more than its body can hold"
        )));
    }
    let mut deleted = Vec::with_capacity(count);
    for _ in 0..count {
        let len = r.u16()? as usize;
        let id = r.str(len)?;
        if id.is_empty() {
            return Err(Error::malformed("empty deleted id"));
        }
        deleted.push(id.to_owned());
    }
    Ok((sequence, deleted, r.position()))
}

/// The table of contents at the start of `body`, each entry's range made absolute in `buf`,
/// once the document after it is checked to be exactly the codec's map of those mementos.
pub(super) fn parse_toc(
    buf: &[u8],
    body: Range<usize>,
    format_version: u16,
    codec: Codec,
) -> Result<Vec<TocEntry>> {
    let mut r = Reader::new(&buf[body.clone()], "table of contents");
    let count = r.u32()? as usize;
    // The smallest entry: its fixed fields and a one-byte id.
    if count > r.remaining() / (toc_entry_fixed(format_version) + 1) {
        return Err(Error::malformed(format!(
            "table of contents claims {count} entries, more than the body can hold"
        )));
    }
    let mut raw = Vec::with_capacity(count);
    for _ in 0..count {
        let id_len = r.u16()? as usize;
        let id = r.str(id_len)?;
        let version = if format_version >= FORMAT_VERSION_2 {
            r.u32()?
        } else {
            DEFAULT_MEMENTO_VERSION
        };
        let offset = r.u64()?;
        let len = r.u64()?;
        raw.push((id, version, offset, len));
    }
    let doc_start = body.start + r.position();
    let doc_len = (body.end - doc_start) as u64;
    let mut toc = Vec::with_capacity(count);
    let mut previous: Option<&str> = None;
    let mut previous_end = 0u64;
    for (id, version, offset, len) in raw {
        if id.is_empty() {
            return Err(Error::malformed("empty memento id"));
        }
        if previous.is_some_and(|p| p >= id) {
            return Err(Error::malformed(
                "table of contents ids are not in ascending order",
            ));
        }
        let end = offset
            .checked_add(len)
            .filter(|&end| offset >= previous_end && end <= doc_len)
            .ok_or_else(|| Error::malformed(format!("memento {id:?} lies outside the document")))?;
        toc.push(TocEntry {
            id: id.to_owned(),
            version,
            range: doc_start + offset as usize..doc_start + end as usize,
        });
        previous = Some(id);
        previous_end = end;
    }
    let framed = codec.frames_document(
        &buf[doc_start..body.end],
        toc.iter().map(|e| {
            let range = e.range.start - doc_start..e.range.end - doc_start;
            (e.id.as_str(), range)
        }),
    );
    if !framed {
        return Err(Error::malformed(format!(
            "the {} document is not exactly the map of its mementos (bytes before, between or \
             after them)",
            codec.name()
        )));
    }
    Ok(toc)
}
