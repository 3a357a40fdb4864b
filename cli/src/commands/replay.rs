//! Replay files (file kind 3) in `inspect`, `verify` and `list`: their header, from the start
//! and end chunks alone, and their full check, by opening them as a player would.

use std::path::Path;

use savegame::replay::{Player, ReplayHeader, ReplayStatus};
use savegame::{Error, Key};

use crate::failure::Failure;
use crate::text::{playtime, rfc3339};

/// Byte 13 of a file of the savegame family: its kind (`docs/format.md`).
const FILE_KIND_OFFSET: usize = 13;

/// Does `bytes` start like a replay file?
pub fn is_replay(bytes: &[u8]) -> bool {
    bytes.starts_with(&savegame::envelope::MAGIC)
        && bytes.get(FILE_KIND_OFFSET) == Some(&savegame::envelope::FileKind::Replay.id())
}

/// Opens a replay as a player does: every chunk checked, decrypted with `key`.
///
/// # Errors
/// The library's error about `path`.
pub fn open(path: &Path, key: Option<&Key>) -> Result<Player, Error> {
    let builder = Player::builder().allow_unencrypted(true);
    let builder = match key {
        Some(key) => builder.key(key.clone()),
        None => builder,
    };
    builder.open(path)
}

/// `complete`, or `cut short: <why>`.
pub fn status_text(status: &ReplayStatus) -> String {
    match status {
        ReplayStatus::CutShort { reason, .. } => format!("cut short: {reason}"),
        _ => "complete".into(),
    }
}

/// The lines `inspect` prints for a replay.
///
/// # Errors
/// When the header cannot be read (exit 1), or the replay is encrypted and no key was given
/// (exit 2).
pub fn inspect(path: &Path, size: u64, key: Option<&Key>) -> Result<(String, bool), Failure> {
    let header = ReplayHeader::read(path, key).map_err(|e| Failure::file(path, &e))?;
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
    line("schema version", header.schema_version.to_string());
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
    let mut sound = true;
    match open(path, key) {
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
        Err(e) => {
            sound = false;
            line("status", format!("BAD: {e}"));
        }
    }
    Ok((out, sound))
}

/// `verify`'s summary of a sound replay.
///
/// # Errors
/// The library's error about `path`.
pub fn verify(path: &Path, key: Option<&Key>) -> Result<String, Failure> {
    let player = open(path, key).map_err(|e| Failure::file(path, &e))?;
    let header = player.header();
    Ok(format!(
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
    ))
}
