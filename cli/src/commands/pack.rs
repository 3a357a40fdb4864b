//! `savegame pack JSON --out FILE`: a save file from a dump, the reverse of `dump`.
//!
//! The mementos are encoded again from the dump's values, so a dump that was not edited packs
//! into the same memento bytes and metadata. The file is sealed by the library
//! ([`Snapshot::seal_file`](savegame::Snapshot::seal_file)): encrypted when a key is given,
//! stamped with the current time. It is written crash-safely (temporary file, fsync, rename,
//! folder fsync), and a file it replaces is kept as `FILE.bak1`, older backups moving up one.

use std::path::Path;
use std::process::ExitCode;

use savegame::storage::{FsStorage, Storage, parse_backup_name};
use savegame::{Codec, Error, Key, Snapshot};

use crate::dump::{Dump, DumpFailure, pack};
use crate::failure::{Exit, Failure, shown};
use crate::files::{MAX_DUMP_SIZE, MAX_SAVE_SIZE, read_capped, split_path};

/// Runs `pack`.
///
/// # Errors
/// When the dump cannot be read or is not a valid dump (exit 1), or the file cannot be
/// written (exit 1).
pub fn run(
    json: &Path,
    out: &Path,
    codec: Option<Codec>,
    schema: Option<u32>,
    key: Option<&Key>,
) -> Result<ExitCode, Failure> {
    let text = read_capped(json, MAX_DUMP_SIZE).map_err(|e| Failure::file(json, &e))?;
    let dumped: Dump = serde_json::from_slice(&text)
        .map_err(|e| Failure::bad(json, format!("not a savegame dump: {e}"), "Dump"))?;
    drop(text);
    let was_encrypted = dumped.encrypted == Some(true);
    let packed = pack(dumped, codec).map_err(|e| match e {
        DumpFailure::Library(e) => Failure::file(json, &e),
        DumpFailure::Dump(e) => Failure::bad(json, e, "Dump"),
    })?;
    let schema = schema.unwrap_or(packed.schema_version);
    if schema == 0 {
        return Err(Failure::bad(
            json,
            "at /schema_version: schema versions start at 1",
            "Dump",
        ));
    }
    let bytes = packed
        .snapshot
        .seal_file(packed.slot, schema, packed.generation, key)
        .map_err(|e| Failure::file(out, &e))?;
    if bytes.len() as u64 > MAX_SAVE_SIZE {
        let err = Error::TooLarge {
            path: out.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_SAVE_SIZE,
        };
        return Err(Failure::file(out, &err));
    }
    // What was sealed must open again before anything is replaced.
    Snapshot::open_file(bytes.clone(), key).map_err(|e| Failure::file(out, &e))?;
    let kept = write_keeping_backups(out, &bytes)?;
    let mut report = format!(
        "wrote {}: slot {}, schema {schema}, {}, {}, {} memento(s), {} bytes\n",
        shown(out),
        super::slot_name(packed.slot),
        packed.snapshot.codec().name(),
        if key.is_some() { "encrypted" } else { "plain" },
        packed.snapshot.len(),
        bytes.len()
    );
    if let Some(kept) = kept {
        report.push_str(&format!("kept the file it replaced as {}\n", shown(&kept)));
    }
    super::print(&report)?;
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
    let _lock = storage.lock(&name).map_err(|e| Failure::file(out, &e))?;
    let files = storage.list().map_err(|e| Failure::file(out, &e))?;
    let exists = files.iter().any(|f| f.name == name);
    let keep = if exists {
        let newest = files
            .iter()
            .filter_map(|f| parse_backup_name(&f.name).filter(|(p, _)| *p == name))
            .map(|(_, i)| i)
            .max()
            .unwrap_or(0);
        newest.saturating_add(1)
    } else {
        0
    };
    storage
        .write(&name, bytes, keep)
        .map_err(|e| Failure::file(out, &e))?;
    Ok(exists.then(|| storage.locate(&savegame::storage::backup_name(&name, 1))))
}
