//! Replay files (file kind 3) in `inspect`, `verify` and `list`: their header, from the start
//! and end chunks alone, and their full check, by opening them as a player would.

use std::path::Path;

use savegame::format::Protection;
use savegame::migrate::to_document;
use savegame::replay::{Player, ReplayHeader, ReplayStatus, Replayable};
use savegame::{Error, Snapshot, Trust};
use serde::de::IgnoredAny;

use super::Game;
use crate::failure::{Exit, Failure, describe};
use crate::text::{playtime, rfc3339};

/// Opens a replay as a player does: every chunk checked, decrypted with `key`.
///
/// The player is a game at the replay's own schema and input versions (nothing to migrate,
/// nothing newer), unless `game` has steps and is not older than the replay: then it is that
/// game, and the player checks the path of steps its keyframes take. A replay newer than
/// `game` is refused by the caller, after this integrity check.
///
/// # Errors
/// The library's error about `path`.
fn open(
    path: &Path,
    trust: Trust<'_>,
    header: &ReplayHeader,
    game: Option<Game<'_>>,
) -> Result<Player, Error> {
    // Replays are encrypted or plain: a plain one plays where the command's trust opens
    // plain files (no key, or --allow-plain).
    let builder = Player::builder()
        .allow_unencrypted(trust.admit(Protection::Plain).is_ok())
        .input_version(header.input_version);
    let builder = match game {
        Some(Game {
            schema,
            steps: Some(steps),
        }) if header.schema_version <= schema => {
            builder.schema_version(schema).migrations(steps.clone())
        }
        _ => builder.schema_version(header.schema_version),
    };
    let builder = match trust.key() {
        Some(key) => builder.key(key.clone()),
        None => builder,
    };
    builder.open(path)
}

/// A game that only restores keyframes, decoding each memento into a value tree: what
/// `verify` seeks to every keyframe with.
struct Keyframes;

impl Replayable for Keyframes {
    type Input = IgnoredAny;

    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        to_document(keyframe).map(drop)
    }

    fn step(&mut self, _frame: u64, _input: IgnoredAny) -> savegame::Result<()> {
        Ok(())
    }
}

/// `complete`, or `cut short: <why>`.
pub fn status_text(status: &ReplayStatus) -> String {
    match status {
        ReplayStatus::CutShort { reason, .. } => format!("cut short: {reason}"),
        _ => "complete".into(),
    }
}

/// The lines `inspect` prints for a replay, and its exit code. Opened as a game at the
/// replay's own schema version would open it; with `schema` (the game's), a replay above it
/// is marked newer (exit 1).
///
/// # Errors
/// When the header cannot be read (exit 1).
pub fn inspect(
    path: &Path,
    size: u64,
    trust: Trust<'_>,
    schema: Option<u32>,
) -> Result<(String, Exit), Failure> {
    let header = ReplayHeader::read(path, trust.key()).map_err(|e| Failure::file(path, &e))?;
    let mut exit = Exit::Ok;
    let mut out = String::new();
    let mut line = |name: &str, value: String| out.push_str(&format!("{name:<16}{value}\n"));
    line("file", crate::failure::shown(path));
    line("size", format!("{size} bytes"));
    line("kind", "replay".into());
    line("format version", header.format_version.to_string());
    line("codec", header.codec.name().to_owned());
    line(
        "encrypted",
        if header.encrypted {
            "yes (AES-256-GCM)".into()
        } else {
            "no".into()
        },
    );
    line("label", format!("{:?}", header.label()));
    line("app version", format!("{:?}", header.app_version()));
    line("recorded at", rfc3339(header.recorded_at));
    line("frame rate", format!("{} fps", header.frame_rate));
    line(
        "schema version",
        super::schema_text(header.schema_version, schema, &mut exit),
    );
    line("input version", header.input_version.to_string());
    line("seed", header.seed.to_string());
    line(
        "keyframe every",
        format!("{} frames", header.keyframe_interval),
    );
    match (
        header.frame_count(),
        header.keyframe_count(),
        header.duration(),
    ) {
        (Some(frames), Some(keyframes), Some(duration)) => {
            line("frames", frames.to_string());
            line("keyframes", keyframes.to_string());
            line("duration", playtime(duration));
        }
        _ => line(
            "totals",
            "none: the recording was cut short (see status)".into(),
        ),
    }
    match open(path, trust, &header, None) {
        Ok(player) => {
            line("status", status_text(player.status()));
            line(
                "playable",
                format!(
                    "{} frames, {} keyframes, {} with a state hash",
                    player.frame_count(),
                    player.keyframe_count(),
                    player.hashed_frames()
                ),
            );
        }
        // As for a save: what can be shown without the key is shown, and is not bad.
        Err(Error::KeyRequired { .. }) => line(
            "status",
            "encrypted: give a key (--key-file or SAVEGAME_KEY) to check its chunks".into(),
        ),
        Err(e) => {
            exit = exit.combine(crate::failure::exit_code(&e));
            line("status", format!("BAD: {}", describe(path, &e)));
        }
    }
    Ok((out, exit))
}

/// `verify`'s summary of a sound replay: every chunk checked, every keyframe restored as a
/// seek restores it (migrated with the game's steps when there are any), each of its mementos
/// decoded; then the replay's schema version against the game's, if one was given.
///
/// # Errors
/// The library's error about `path`; [`Error::NewerSchema`] for a replay newer than `game`.
pub fn verify(path: &Path, trust: Trust<'_>, game: Option<Game<'_>>) -> Result<String, Failure> {
    let fail = |e: Error| Failure::file(path, &e);
    let header = ReplayHeader::read(path, trust.key()).map_err(fail)?;
    let mut player = open(path, trust, &header, game).map_err(fail)?;
    let keyframes: Vec<u64> = player.keyframes().collect();
    for frame in keyframes {
        player.seek(&mut Keyframes, frame).map_err(fail)?;
    }
    let header = player.header();
    let mut summary = format!(
        "replay, {} fps, schema {}, {}, {} frames, {} keyframes ({}), {}",
        header.frame_rate,
        header.schema_version,
        if header.encrypted {
            "encrypted"
        } else {
            "plain"
        },
        player.frame_count(),
        player.keyframe_count(),
        playtime(player.duration()),
        status_text(player.status())
    );
    if game.is_none() {
        summary.push_str("; not checked against the game's schema version (pass --schema N)");
    }
    // The keyframes were migrated by the seeks above.
    let against = super::against_game(path, header.schema_version, game, |_, _| Ok(()))?;
    Ok(summary + &against)
}
