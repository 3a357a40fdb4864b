//! `savegame migrate FILE --migrations DIR`: applies declarative steps without the game's code.
//!
//! The file is checked in full and every step runs in memory first; only then is anything
//! written. Writing goes through [`FsStorage`], under the lock a game's manager takes on that
//! file (after checking that the file did not change since it was read): the old bytes are first kept as `FILE.v<old version>.bak` (the library's
//! [`pre_migration_name`], the name a game's own migrated save uses), then the migrated file
//! atomically replaces `FILE` (temporary file, fsync, rename, folder fsync). A crash at any
//! point leaves the old file, or the new file and the kept copy. A file at a newer schema
//! version than the target is refused and never written.
//!
//! The migrated file keeps its slot, codec, metadata and encryption (sealed again with the
//! same key, under a fresh nonce); its generation is one more than the old file's.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use savegame::format::Header;
use savegame::format::{check_crc, parse_header};
use savegame::migrate::StepInfo;
use savegame::slot::pre_migration_name;
use savegame::storage::{FsStorage, Storage};
use savegame::{Error, KeyPurpose, Migrations, Snapshot, Trust};

use crate::failure::{Exit, Failure, no_key, shown};
use crate::files::{MAX_SAVE_SIZE, split_path};

/// The steps of a migrations folder, their chain checked, and the version the last one
/// produces.
///
/// # Errors
/// When the folder cannot be read, a step file does not parse, the chain has a gap or a
/// duplicate, or there are no steps (exit 1, naming the folder).
pub fn load_steps(dir: &Path) -> Result<(Migrations, u32), Failure> {
    let migrations = Migrations::from_dir(dir).map_err(|e| Failure::file(dir, &e))?;
    let Some(last) = migrations.steps().last().map(|s| s.version) else {
        return Err(Failure::bad(
            dir,
            "holds no migration step files (NNNN_name.json)",
            "MigrationChain",
        ));
    };
    migrations.check(last).map_err(|e| Failure::file(dir, &e))?;
    Ok((migrations, last))
}

/// Runs `migrate`.
///
/// # Errors
/// A damaged, newer or undecryptable file, a missing step, a failing step, or a failed write
/// (exit 1); a missing key for an encrypted file that has steps to run, dry run or not
/// (exit 2). Nothing is written on any error.
pub fn run(
    path: &Path,
    migrations_dir: &Path,
    to: Option<u32>,
    dry_run: bool,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let (migrations, last) = load_steps(migrations_dir)?;
    let target = to.unwrap_or(last);
    if dry_run {
        return dry(path, &migrations, target, trust);
    }
    let bytes = super::read_save(path)?;
    let header = checked_header(path, &bytes)?;
    let from = header.schema_version;
    let Some(steps) = plan(path, &migrations, from, target)? else {
        return nothing_to_do(path, bytes, target, trust);
    };
    let (_, snapshot) =
        Snapshot::open_file(bytes.clone(), trust).map_err(|e| Failure::file(path, &e))?;
    let migrated = migrations
        .migrate_snapshot(&snapshot, from, target)
        .map_err(|e| Failure::file(path, &e))?;
    // Sealed as it was: encrypted, integrity-only or plain.
    let seal_key = if header.needs_key() {
        trust.key()
    } else {
        None
    };
    let new_bytes = super::seal_as(
        &migrated,
        header.slot,
        target,
        header.generation.saturating_add(1),
        None,
        header.authenticated,
        header.compression,
        seal_key,
    )
    .map_err(|e| Failure::file(path, &e))?;
    if new_bytes.len() as u64 > MAX_SAVE_SIZE {
        let err = Error::TooLarge {
            path: path.to_path_buf(),
            size: new_bytes.len() as u64,
            limit: MAX_SAVE_SIZE,
        };
        return Err(Failure::file(path, &err));
    }
    // What was sealed must open again, with the same mementos, before anything is written.
    let (_, reopened) =
        Snapshot::open_file(new_bytes.clone(), seal_key).map_err(|e| Failure::file(path, &e))?;
    let same = reopened.len() == migrated.len()
        && migrated
            .ids()
            .all(|id| reopened.raw(id) == migrated.raw(id));
    if !same {
        return Err(Failure::bad(
            path,
            "the migrated file does not read back as written; nothing was written",
            "Malformed",
        ));
    }

    // Only now take the lock a game's manager takes on this file (so a file that fails any
    // check leaves no lock file behind), and make sure nothing saved to it meanwhile.
    let (dir, name) = split_path(path)?;
    let storage = FsStorage::new(&dir).map_err(|e| Failure::file(path, &e))?;
    let _lock = storage.lock(&name).map_err(|e| Failure::io(path, e))?;
    if super::read_save(path)? != bytes {
        return Err(Failure::bad(
            path,
            "the file changed while it was being migrated (a game saved to it?); nothing was \
             written, try again",
            "Conflict",
        ));
    }
    let kept_name = pre_migration_name(&name, from);
    let kept_path = storage.locate(&kept_name);
    match storage.read(&kept_name, MAX_SAVE_SIZE) {
        Ok(None) => {}
        Ok(Some(existing)) if existing == bytes => {}
        Ok(Some(_)) | Err(_) => {
            return Err(Failure::bad(
                path,
                format!(
                    "{} already exists and is not this file's copy; move it away first \
                     (nothing was written)",
                    shown(&kept_path)
                ),
                "BackupExists",
            ));
        }
    }
    storage
        .put(&kept_name, &bytes)
        .map_err(|e| Failure::io(&kept_path, e))?;
    storage
        .put(&name, &new_bytes)
        .map_err(|e| Failure::io(path, e))?;

    let mut out = describe_plan(path, from, target, &steps);
    let _ = writeln!(
        out,
        "kept the schema {from} file as {}\nwrote {} at schema version {target} ({} bytes, generation {})",
        shown(&kept_path),
        shown(path),
        new_bytes.len(),
        header.generation.saturating_add(1)
    );
    super::print(&out)?;
    Ok(Exit::Ok.into())
}

/// `--dry-run`: the plan, and a run in memory when the file can be opened. Writes nothing
/// (not even a lock file). An encrypted file without a key has its plan listed, then fails as
/// a real run does (exit 2): the steps could not be checked on it.
fn dry(
    path: &Path,
    migrations: &Migrations,
    target: u32,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let bytes = super::read_save(path)?;
    let header = checked_header(path, &bytes)?;
    let from = header.schema_version;
    let Some(steps) = plan(path, migrations, from, target)? else {
        return nothing_to_do(path, bytes, target, trust);
    };
    let mut out = describe_plan(path, from, target, &steps);
    if header.needs_key() && trust.key().is_none() {
        // The plan needs no key; running the steps does, as a real run does (exit 2).
        super::print(&out)?;
        return Err(Failure::usage(
            path,
            format!(
                "{}: the steps were not run; nothing written",
                no_key(if header.encrypted {
                    KeyPurpose::Decrypt
                } else {
                    KeyPurpose::CheckTag
                })
            ),
            "KeyRequired",
        ));
    }
    let result = Snapshot::open_file(bytes, trust)
        .and_then(|(_, snapshot)| migrations.migrate_snapshot(&snapshot, from, target));
    match result {
        Ok(_) => {
            out.push_str("dry run: the steps run cleanly on this file; nothing written\n");
            super::print(&out)?;
            Ok(Exit::Ok.into())
        }
        Err(e) => {
            super::print(&out)?;
            Err(Failure::file(path, &e))
        }
    }
}

/// A file already at `target`. With a key, it is first opened as a game with that key opens
/// it (its protection, then its decryption or tag): "nothing to do" is said only of a file the
/// game would load, never of one stripped of its protection. Without a key there is nothing
/// to check it with, and a run with no steps needs none.
fn nothing_to_do(
    path: &Path,
    bytes: Vec<u8>,
    target: u32,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    if trust.key().is_some() {
        Snapshot::open_file(bytes, trust).map_err(|e| Failure::file(path, &e))?;
    }
    super::print(&format!(
        "{}: already at schema version {target}; nothing to do\n",
        shown(path)
    ))?;
    Ok(Exit::Ok.into())
}

/// The header of a file whose CRC and header are sound.
fn checked_header(path: &Path, bytes: &[u8]) -> Result<Header, Failure> {
    check_crc(bytes)
        .and_then(|()| parse_header(bytes, Some(bytes.len() as u64)))
        .map_err(|e| Failure::file(path, &e))
}

/// The steps from `from` to `target`; `None` when the file is already there.
fn plan(
    path: &Path,
    migrations: &Migrations,
    from: u32,
    target: u32,
) -> Result<Option<Vec<StepInfo>>, Failure> {
    if from > target {
        let err = Error::NewerSchema {
            found: from,
            supported: target,
        };
        return Err(Failure::file(path, &err));
    }
    if from == target {
        return Ok(None);
    }
    migrations
        .plan(from, target)
        .map(Some)
        .map_err(|e| Failure::file(path, &e))
}

fn describe_plan(path: &Path, from: u32, target: u32, steps: &[StepInfo]) -> String {
    let mut out = format!(
        "{}: schema version {from} -> {target}, {} step(s)\n",
        shown(path),
        steps.len()
    );
    for step in steps {
        let _ = write!(out, "  step {}: {}", step.version, step.name);
        if let Some(file) = &step.file {
            let _ = write!(out, " ({file}");
            if let Some(sum) = &step.checksum {
                let _ = write!(out, ", checksum {sum}");
            }
            out.push(')');
        }
        out.push('\n');
        for touch in &step.touches {
            let _ = writeln!(out, "      {touch}");
        }
    }
    out
}
