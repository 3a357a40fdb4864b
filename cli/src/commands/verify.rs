//! `savegame verify FILE...`: the full check of each file, one line per file.
//!
//! CRC, header, decryption, table of contents, decoding of every memento into a value tree;
//! with `--migrations DIR`, the chain of steps is checked once, and each older file is migrated
//! in memory to the last step's version (nothing is written).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use savegame::migrate::to_document;
use savegame::{Error, Key, Migrations};

use crate::failure::{Exit, Failure, shown};

/// Runs `verify`. Exits with the worst result of all files: 0 when all are sound, 1 when any
/// is bad, 2 when one needs a key that was not given (and none is bad).
///
/// # Errors
/// When the migrations folder is unusable (exit 1) or stdout cannot be written.
pub fn run(
    files: &[PathBuf],
    migrations: Option<&Path>,
    key: Option<&Key>,
) -> Result<ExitCode, Failure> {
    let steps = migrations.map(super::migrate::load_steps).transpose()?;
    let mut worst = Exit::Ok;
    for path in files {
        let line = match verify_one(path, steps.as_ref(), key) {
            Ok(summary) => format!("ok    {}: {summary}\n", shown(path)),
            Err(f) => {
                worst = worst.combine(f.code);
                format!("FAIL  {}\n", f.message)
            }
        };
        super::print(&line)?;
    }
    Ok(worst.into())
}

fn verify_one(
    path: &Path,
    steps: Option<&(Migrations, u32)>,
    key: Option<&Key>,
) -> Result<String, Failure> {
    if super::replay::is_replay(&super::read_save(path)?) {
        return super::replay::verify(path, key);
    }
    let (header, snapshot) = super::open(path, key)?;
    to_document(&snapshot).map_err(|e| Failure::file(path, &e))?;
    let mut summary = format!(
        "{}, slot {}, schema {}, {}, {}, {} memento(s)",
        super::list::kind_name(header.kind),
        super::slot_name(header.slot),
        header.schema_version,
        header.codec.name(),
        if header.encrypted {
            "encrypted"
        } else {
            "plain"
        },
        snapshot.len()
    );
    if let Some((migrations, target)) = steps {
        let from = header.schema_version;
        if from > *target {
            let err = Error::NewerSchema {
                found: from,
                supported: *target,
            };
            return Err(Failure::file(path, &err));
        }
        if from == *target {
            summary.push_str("; current with the steps");
        } else {
            migrations
                .migrate_snapshot(&snapshot, from, *target)
                .map_err(|e| Failure::file(path, &e))?;
            summary.push_str(&format!(
                "; migrates to {target} ({} step(s))",
                target - from
            ));
        }
    }
    Ok(summary)
}
