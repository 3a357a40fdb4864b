//! `savegame verify FILE...`: the full check of each file, one line per file.
//!
//! CRC, header, decryption, table of contents, decoding of every memento into a value tree;
//! for a replay, every chunk and every keyframe, as a player opens and seeks it. None of this
//! needs the game's schema version: without `--schema` and `--migrations`, a file at any
//! schema version is checked for integrity alone (a replay's line says so).
//!
//! With `--schema N` (the game's current schema version), a file above `N` fails as newer
//! ([`NewerSchema`](savegame::Error::NewerSchema), exit 1). With `--migrations DIR`, the chain
//! of steps is checked once (it must end at `N` when both are given; `N` is the last step's
//! version otherwise), each older save is migrated in memory, and each older replay's
//! keyframes are migrated as the game's player would migrate them (nothing is written).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use savegame::Trust;
use savegame::migrate::to_document;

use super::Game;
use crate::failure::{Exit, Failure, shown};

/// Runs `verify`. Exits with the worst result of all files: 0 when all are sound, 1 when any
/// is bad, 2 when one needs a key that was not given (and none is bad).
///
/// # Errors
/// When the migrations folder is unusable, or its steps do not end at `schema` (exit 1), or
/// stdout cannot be written.
pub fn run(
    files: &[PathBuf],
    migrations: Option<&Path>,
    schema: Option<u32>,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let steps = match migrations {
        Some(dir) => {
            let (steps, last) = super::migrate::load_steps(dir)?;
            let current = schema.unwrap_or(last);
            // The check a game's manager makes of its own steps at its schema version.
            steps.check(current).map_err(|e| Failure::file(dir, &e))?;
            Some((steps, current))
        }
        None => None,
    };
    let game = match (&steps, schema) {
        (Some((steps, current)), _) => Some(Game {
            schema: *current,
            steps: Some(steps),
        }),
        (None, Some(schema)) => Some(Game {
            schema,
            steps: None,
        }),
        (None, None) => None,
    };
    let mut worst = Exit::Ok;
    for path in files {
        let line = match verify_one(path, game, trust) {
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

fn verify_one(path: &Path, game: Option<Game<'_>>, trust: Trust<'_>) -> Result<String, Failure> {
    if super::is_replay(&super::read_save(path)?) {
        return super::replay::verify(path, trust, game);
    }
    let (header, snapshot) = super::open(path, trust)?;
    // A bitcode memento cannot be decoded without its Rust type: the structure, CRC and tag
    // are checked, the mementos are not decoded.
    if header.codec.is_self_describing() {
        to_document(&snapshot).map_err(|e| Failure::file(path, &e))?;
    }
    let summary = format!(
        "{}, slot {}, schema {}, {}, {}, {} memento(s)",
        super::kind_name(header.kind),
        super::slot_name(header.slot),
        header.schema_version,
        header.codec.name(),
        header.protection().name(),
        snapshot.len()
    );
    let from = header.schema_version;
    let against = super::against_game(path, from, game, |steps, target| {
        steps
            .migrate_snapshot(&snapshot, from, target)
            .map(drop)
            .map_err(|e| Failure::file(path, &e))
    })?;
    Ok(summary + &against)
}
