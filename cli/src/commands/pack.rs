//! `savegame pack JSON --out FILE`: a save file from a dump, the reverse of `dump`.
//!
//! The mementos are encoded again from the dump's values, so a dump that was not edited packs
//! into the same memento bytes and metadata. The file is sealed by the library
//! ([`Snapshot::seal_file_at`](savegame::Snapshot::seal_file_at)), encrypted when a key is
//! given, for the dump's slot (or `--slot`), stamped with the dump's `saved_at` (`--now`: the
//! current time). It is written crash-safely (temporary file, fsync, rename, folder fsync), and
//! a file it replaces is kept as `FILE.bak1`, older backups moving up one.

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use savegame::backups::put_keeping_backups;
use savegame::slot::{backup_name, parse_backup_name};
use savegame::storage::{FsStorage, Storage};
use savegame::{Codec, Error, SlotId, Snapshot, Trust};

use crate::dump::{Dump, DumpFailure, pack};
use crate::failure::{Exit, Failure, shown};
use crate::files::{MAX_DUMP_SIZE, MAX_SAVE_SIZE, read_capped, split_path};
use crate::text::{parse_rfc3339, rfc3339};

/// What the command line changes from the dump.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The codec of the mementos (`--codec`) [default: the dump's].
    pub codec: Option<Codec>,
    /// The schema version (`--schema`) [default: the dump's].
    pub schema: Option<u32>,
    /// The slot (`--slot`) [default: the dump's].
    pub slot: Option<SlotId>,
    /// Stamp the current time instead of the dump's saved-at (`--now`).
    pub now: bool,
}

/// Where the file's time comes from.
enum Stamp {
    /// The dump's saved-at.
    Kept(SystemTime),
    /// The current time, and why.
    Now(&'static str),
}

/// Runs `pack`.
///
/// # Errors
/// When the dump cannot be read or is not a valid dump (exit 1), or the file cannot be
/// written (exit 1).
pub fn run(
    json: &Path,
    out: &Path,
    options: Options,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let key = trust.key();
    let text = read_capped(json, MAX_DUMP_SIZE).map_err(|e| Failure::file(json, &e))?;
    let dumped: Dump = serde_json::from_slice(&text)
        .map_err(|e| Failure::bad(json, format!("not a savegame dump: {e}"), "Dump"))?;
    drop(text);
    let was_encrypted = dumped.encrypted == Some(true);
    let stamp = match (&dumped.saved_at, options.now) {
        (_, true) => Stamp::Now("--now"),
        (None, false) => Stamp::Now("the dump has no saved_at"),
        (Some(text), false) => Stamp::Kept(parse_rfc3339(text).ok_or_else(|| {
            Failure::bad(
                json,
                format!(
                    "at /saved_at: {:?} is not an RFC 3339 time (2025-11-29T20:08:00.123Z); \
                     --now stamps the current time instead",
                    crate::text::printable(text)
                ),
                "Dump",
            )
        })?),
    };
    let packed = pack(dumped, options.codec).map_err(|e| match e {
        DumpFailure::Library(e) => Failure::file(json, &e),
        DumpFailure::Dump(e) => Failure::bad(json, e, "Dump"),
    })?;
    let schema = options.schema.unwrap_or(packed.schema_version);
    if schema == 0 {
        return Err(Failure::bad(
            json,
            "at /schema_version: schema versions start at 1",
            "Dump",
        ));
    }
    let slot = options.slot.unwrap_or(packed.slot);
    let time = match stamp {
        Stamp::Kept(time) => Some(time),
        Stamp::Now(_) => None,
    };
    let sealed = super::seal_as(
        &packed.snapshot,
        slot,
        schema,
        packed.generation,
        time,
        packed.authenticated,
        packed.compression,
        key,
    );
    let bytes = sealed.map_err(|e| Failure::file(out, &e))?;
    if bytes.len() as u64 > MAX_SAVE_SIZE {
        let err = Error::TooLarge {
            path: out.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_SAVE_SIZE,
        };
        return Err(Failure::file(out, &err));
    }
    // What was sealed must open again, at the time it was given, before anything is replaced.
    let (header, _) =
        Snapshot::open_file(bytes.clone(), trust).map_err(|e| Failure::file(out, &e))?;
    if let Stamp::Kept(time) = stamp
        && header.saved_at != time
    {
        return Err(Failure::bad(
            out,
            "the saved-at time did not read back as written; nothing was written",
            "Malformed",
        ));
    }
    let kept = write_keeping_backups(out, &bytes)?;
    let when = match stamp {
        Stamp::Kept(_) => "the dump's".to_owned(),
        Stamp::Now(why) => format!("now: {why}"),
    };
    let mut report = format!(
        "wrote {}: slot {}, schema {schema}, {}, {}, {} memento(s), {} bytes, saved at {} ({when})\n",
        shown(out),
        super::slot_name(slot),
        packed.snapshot.codec().name(),
        header.protection().name(),
        packed.snapshot.len(),
        bytes.len(),
        rfc3339(header.saved_at),
    );
    if let Some(kept) = kept {
        report.push_str(&format!("kept the file it replaced as {}\n", shown(&kept)));
    }
    super::print(&report)?;
    if let Some(named) = out
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(SlotId::from_file_name)
        .filter(|&named| named != slot)
    {
        eprintln!(
            "savegame: note: {} is the file of slot {} but holds a save for slot {}; a game \
             refuses it there [SlotMismatch] (--slot sets the slot)",
            shown(out),
            super::slot_name(named),
            super::slot_name(slot)
        );
    }
    if packed.authenticated && key.is_none() {
        eprintln!(
            "savegame: note: the dumped file was integrity-only and no key was given, so {} is \
             plain (a game with a key refuses it unless it allows unencrypted saves)",
            shown(out)
        );
    }
    if was_encrypted && key.is_none() {
        eprintln!(
            "savegame: note: the dumped file was encrypted and no key was given, so {} is not \
             encrypted (a game with a key refuses it unless it allows unencrypted saves)",
            shown(out)
        );
    }
    Ok(Exit::Ok.into())
}

/// Writes `out` atomically and durably through [`FsStorage`], under the same per-file lock a
/// game's manager takes. An existing file is kept as `out.bak1` and every existing backup moves
/// up one, so nothing is lost. Returns the backup's path when there was a file to keep.
fn write_keeping_backups(out: &Path, bytes: &[u8]) -> Result<Option<std::path::PathBuf>, Failure> {
    let (dir, name) = split_path(out)?;
    let storage = FsStorage::new(&dir).map_err(|e| Failure::file(out, &e))?;
    let _lock = storage.lock(&name).map_err(|e| Failure::io(out, e))?;
    let files = storage.list().map_err(|e| Failure::io(out, e))?;
    let exists = files.iter().any(|f| f.name == name);
    let keep = if exists {
        let newest = files
            .iter()
            .filter_map(|f| parse_backup_name(&f.name).filter(|(p, _)| *p == name))
            .map(|(_, i)| i)
            .max()
            .unwrap_or(0u32);
        newest.saturating_add(1)
    } else {
        0
    };
    put_keeping_backups(&storage, &name, bytes, keep).map_err(|e| Failure::io(out, e))?;
    Ok(exists.then(|| storage.locate(&backup_name(&name, 1))))
}
