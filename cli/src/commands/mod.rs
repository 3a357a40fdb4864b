//! One module per command; each is a thin layer over the library's public API.

pub mod diff;
pub mod dump;
pub mod inspect;
pub mod list;
pub mod migrate;
pub mod pack;
pub mod replay;
pub mod schema;
pub mod verify;

use std::io::Write;
use std::path::Path;

use savegame::format::FileKind;
use savegame::format::Header;
use savegame::{Error, Key, Migrations, Snapshot, Trust};

use crate::failure::{Exit, Failure};
use crate::files::{MAX_SAVE_SIZE, read_capped};

/// The game a file is checked against (`--schema N`, `--migrations DIR`). Without one, the
/// commands check a file's integrity alone: nothing in a save or a replay needs the game's
/// schema version to be checked, only to be loaded or played.
#[derive(Clone, Copy)]
pub struct Game<'a> {
    /// The game's current schema version: files above it are newer than the game.
    pub schema: u32,
    /// The steps that bring older files up to `schema` (their chain ends at `schema`).
    pub steps: Option<&'a Migrations>,
}

impl Game<'_> {
    /// [`Error::NewerSchema`] when a file at schema version `found` is newer than the game.
    ///
    /// # Errors
    /// That error, about `path`, as a failure (exit 1).
    pub fn refuse_newer(&self, path: &Path, found: u32) -> Result<(), Failure> {
        if found > self.schema {
            let err = Error::NewerSchema {
                found,
                supported: self.schema,
            };
            return Err(Failure::file(path, &err));
        }
        Ok(())
    }
}

/// Reads a save file under the size cap.
///
/// # Errors
/// [`savegame::Error::Io`] or [`savegame::Error::TooLarge`] about `path`, as a failure.
pub fn read_save(path: &Path) -> Result<Vec<u8>, Failure> {
    read_capped(path, MAX_SAVE_SIZE).map_err(|e| Failure::file(path, &e))
}

/// Reads a save file under the size cap and opens it: CRC, header, decryption, table of
/// contents.
///
/// # Errors
/// The library's error about `path`, as a failure.
pub fn open(path: &Path, trust: Trust<'_>) -> Result<(Header, Snapshot), Failure> {
    let bytes = read_save(path)?;
    Snapshot::open_file(bytes, trust).map_err(|e| Failure::file(path, &e))
}

/// Opens save bytes to show them to a person: as [`open`] does, except that an integrity-only
/// file without a key is opened without checking its tag (its body is readable; only the
/// game's key can vouch for it). Then the third value is the note to print on stderr once the
/// command has done its work (a failing command prints only its one-line error).
///
/// # Errors
/// The library's error about `path`, as a failure.
pub fn open_readable(
    path: &Path,
    bytes: Vec<u8>,
    trust: Trust<'_>,
) -> Result<(Header, Snapshot, Option<String>), Failure> {
    let unchecked = trust.key().is_none()
        && savegame::format::parse_header(&bytes, None).is_ok_and(|h| h.authenticated);
    if unchecked {
        let (header, snapshot) =
            Snapshot::open_file_unverified(bytes).map_err(|e| Failure::file(path, &e))?;
        return Ok((header, snapshot, Some(unchecked_note(path))));
    }
    let (header, snapshot) =
        Snapshot::open_file(bytes, trust).map_err(|e| Failure::file(path, &e))?;
    Ok((header, snapshot, None))
}

/// The note for an integrity-only file read without its key.
pub fn unchecked_note(path: &Path) -> String {
    format!(
        "savegame: note: {} is integrity-only and no key was given: it was read without \
         checking its tag, so nothing vouches that the game wrote it (give a key to check it)",
        crate::failure::shown(path)
    )
}

/// Seals `snapshot` as `protection` says, with `key`: authenticated or encrypted with a key,
/// plain without one; its body compressed as `compression` says.
///
/// # Errors
/// The library's error.
#[allow(clippy::too_many_arguments)] // each is one field of the header written back
pub fn seal_as(
    snapshot: &Snapshot,
    slot: savegame::SlotId,
    schema: u32,
    generation: u64,
    saved_at: Option<std::time::SystemTime>,
    authenticated: bool,
    compression: savegame::Compression,
    key: Option<&Key>,
) -> savegame::Result<Vec<u8>> {
    let time = saved_at.unwrap_or_else(std::time::SystemTime::now);
    let sealer = snapshot
        .sealer(slot, schema, generation)
        .saved_at(time)
        .compression(compression);
    match key {
        Some(key) if authenticated => sealer.authenticate(key),
        Some(key) => sealer.encrypt(key),
        None => sealer,
    }
    .build()
}

/// The kind byte of a file that has the savegame magic but is neither a save nor a replay (a
/// kind from a newer version): `None` for saves, replays and files without the magic.
pub fn unknown_file_kind(bytes: &[u8]) -> Option<u8> {
    let kind = savegame::format::kind_byte(bytes)?;
    let known = [FileKind::Save.id(), FileKind::Replay.id()];
    (!known.contains(&kind)).then_some(kind)
}

/// What to say about a file whose kind this tool does not know.
pub fn unknown_kind_message(kind: u8) -> String {
    format!(
        "file kind {kind} is not a kind this tool reads (it reads saves, their backups, and \
         replays; a journal of incremental saves is read by the game, and counted by `list`)"
    )
}

/// Writes `text` to stdout.
///
/// # Errors
/// When stdout cannot be written (a closed pipe).
pub fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::stdout(&e))
}

/// The slot as the tables show it: `1`, `autosave 2`, `quicksave`.
pub fn slot_name(slot: savegame::SlotId) -> String {
    crate::text::printable(&slot.to_string())
}

/// A slot as the command line names it: what `list` prints (`3`, `autosave 2`, `quicksave`),
/// `autosave-2`, or the slot's file name in a save folder (`slot-003.sav`, `autosave-2.sav`,
/// `quicksave.sav`).
///
/// # Errors
/// A message listing the accepted forms.
pub fn parse_slot(text: &str) -> Result<savegame::SlotId, String> {
    use savegame::SlotId;
    let text = text.trim();
    let number = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u32>().ok())
            .flatten()
    };
    let slot = if text == "quicksave" {
        Some(SlotId::Quicksave)
    } else if let Some(n) = number(text) {
        Some(SlotId::Numbered(n))
    } else if let Some(slot) = SlotId::from_file_name(text) {
        Some(slot)
    } else {
        text.strip_prefix("autosave ")
            .or_else(|| text.strip_prefix("autosave-"))
            .and_then(|rest| number(rest.trim_start()))
            .map(SlotId::Autosave)
    };
    slot.ok_or_else(|| {
        format!(
            "{:?} is not a slot: use a number (3), \"autosave N\" or autosave-N, quicksave, or \
             a slot file name (slot-003.sav)",
            crate::text::printable(text)
        )
    })
}

/// Checks a sound file at schema version `from` against the game, if one was given: newer is
/// an error; an older file goes through `migrate` (the game's steps and its schema version)
/// when there are steps. Returns what the summary line says about it.
///
/// # Errors
/// [`NewerSchema`](savegame::Error::NewerSchema), or what `migrate` returns.
pub fn against_game(
    path: &Path,
    from: u32,
    game: Option<Game<'_>>,
    migrate: impl FnOnce(&Migrations, u32) -> Result<(), Failure>,
) -> Result<String, Failure> {
    let Some(game) = game else {
        return Ok(String::new());
    };
    game.refuse_newer(path, from)?;
    let target = game.schema;
    Ok(match game.steps {
        None => String::new(),
        Some(_) if from == target => "; current with the steps".into(),
        Some(steps) => {
            migrate(steps, target)?;
            format!("; migrates to {target} ({} step(s))", target - from)
        }
    })
}

/// The `schema version` line: the file's, marked when it is newer than the game's `schema`
/// (which makes `exit` 1).
pub fn schema_text(found: u32, schema: Option<u32>, exit: &mut Exit) -> String {
    match schema {
        Some(game) if found > game => {
            *exit = exit.combine(Exit::Bad);
            format!("{found} (newer than the game's {game}) [NewerSchema]")
        }
        _ => found.to_string(),
    }
}

/// The file kind's name.
pub fn kind_name(kind: FileKind) -> String {
    match kind {
        FileKind::Save => "save".into(),
        FileKind::Delta => "delta".into(),
        FileKind::Replay => "replay".into(),
        other => format!("kind {}", other.id()),
    }
}

/// Does `bytes` start like a replay file?
pub fn is_replay(bytes: &[u8]) -> bool {
    savegame::format::sniff(bytes) == Some(savegame::format::FileKind::Replay)
}

#[cfg(test)]
mod tests {
    use savegame::SlotId;

    use super::*;

    #[test]
    fn slots_parse_as_list_prints_them_and_as_files_name_them() {
        for slot in [
            SlotId::Numbered(0),
            SlotId::Numbered(3),
            SlotId::Numbered(4_000_000_000),
            SlotId::Autosave(2),
            SlotId::Quicksave,
        ] {
            assert_eq!(parse_slot(&slot_name(slot)), Ok(slot));
            assert_eq!(parse_slot(&slot.file_name()), Ok(slot));
        }
        assert_eq!(parse_slot("autosave-7"), Ok(SlotId::Autosave(7)));
        assert_eq!(parse_slot(" 12 "), Ok(SlotId::Numbered(12)));
        for bad in [
            "",
            "-1",
            "+3",
            "5000000000",
            "autosave",
            "autosave x",
            "slot 3",
            "qs",
        ] {
            let err = parse_slot(bad).unwrap_err();
            assert!(err.contains("is not a slot"), "{bad}: {err}");
        }
    }
}
