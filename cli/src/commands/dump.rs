//! `savegame dump FILE`: the document as JSON on stdout, in the format of [`crate::dump`].

use std::path::Path;
use std::process::ExitCode;

use savegame::Trust;

use crate::dump::{DumpFailure, dump};
use crate::failure::{Exit, Failure};

/// Runs `dump`.
///
/// # Errors
/// When the file cannot be opened (exit 1; exit 2 when it needs a key), a memento does not
/// decode, or stdout cannot be written.
pub fn run(path: &Path, pretty: bool, trust: Trust<'_>) -> Result<ExitCode, Failure> {
    let bytes = super::read_save(path)?;
    let (header, snapshot, note) = super::open_readable(path, bytes, trust)?;
    let dumped = dump(&header, &snapshot).map_err(|e| match e {
        DumpFailure::Library(e) => Failure::file(path, &e),
        DumpFailure::Dump(e) => Failure::bad(path, e, "Dump"),
    })?;
    let text = if pretty {
        serde_json::to_string_pretty(&dumped)
    } else {
        serde_json::to_string(&dumped)
    };
    let mut text =
        text.map_err(|e| Failure::bad(path, format!("cannot write JSON: {e}"), "Dump"))?;
    text.push('\n');
    super::print(&text)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok(Exit::Ok.into())
}
