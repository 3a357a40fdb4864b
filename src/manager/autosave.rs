//! The autosave rotation: which of the autosave slots the next autosave writes.

use std::time::SystemTime;

use super::files::Files;
use crate::error::{Error, Result};
use crate::slot::SlotId;

/// The autosave slot the next autosave writes, of `count` (`autosave-1.sav` …): an empty one,
/// else a damaged one, else the oldest; never one holding a save from a newer version of the
/// game.
pub(super) fn next_slot(files: &Files, count: u32) -> Result<SlotId> {
    let mut oldest: Option<(SystemTime, SlotId)> = None;
    let mut newer = None;
    for n in 1..=count {
        let slot = SlotId::Autosave(n);
        let saved_at = match files.read_header(&slot.file_name()) {
            Ok(None) => return Ok(slot),
            // A damaged autosave is the first to be reused.
            Err(_) => SystemTime::UNIX_EPOCH,
            Ok(Some((header, _))) if header.schema_version > files.schema_version => {
                newer.get_or_insert(header.schema_version);
                continue;
            }
            Ok(Some((header, _))) => header.saved_at,
        };
        if oldest.is_none_or(|(t, _)| saved_at < t) {
            oldest = Some((saved_at, slot));
        }
    }
    match (oldest, newer) {
        (Some((_, slot)), _) => Ok(slot),
        (None, Some(found)) => Err(Error::NewerSchema {
            found,
            supported: files.schema_version,
        }),
        (None, None) => Err(Error::Config {
            reason: "there are no autosave slots".into(),
        }),
    }
}
