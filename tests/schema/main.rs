//! The schema guard (RELIABILITY.md M9): each kind of change to a memento type, against a
//! committed schema, gets its verdict per codec; versions need steps; files are written once,
//! as a snapshot test writes them; fixtures of every version load. Every test works in a temp
//! folder with files the guard itself wrote, except the last, which checks the crate's own
//! fixtures game against the schemas committed in `schemas/`.

mod changes;
mod kit;
mod states;

use std::path::Path;

use savegame::schema::{Failure, Guard};
use savegame::{Codec, MementoTypes};
use serde::{Deserialize, Serialize};

/// Memento `id` at `version` of type `M`.
pub(crate) fn one<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    id: &str,
    version: u32,
) -> MementoTypes {
    let mut types = MementoTypes::new();
    types.memento::<M>(id, version).unwrap();
    types
}

pub(crate) fn guard(dir: &Path, codec: Codec) -> Guard {
    Guard::new(dir).codec(codec).write_files(true)
}

/// Commits `M` as memento `id` at `version`: the first run writes the file and fails once,
/// the second passes.
pub(crate) fn commit<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    dir: &Path,
    id: &str,
    version: u32,
) {
    let first = guard(dir, Codec::MessagePack)
        .check_types(&one::<M>(id, version))
        .unwrap_err();
    assert!(first.only_written(), "{first}");
    guard(dir, Codec::MessagePack)
        .check_types(&one::<M>(id, version))
        .unwrap();
}

/// The check of `M` at `version` against what `commit` wrote, in `codec`.
pub(crate) fn against<M: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static>(
    dir: &Path,
    codec: Codec,
    version: u32,
) -> Result<savegame::schema::Report, Failure> {
    guard(dir, codec).check_types(&one::<M>("player", version))
}

pub(crate) fn problem_text(failure: &Failure) -> String {
    failure.to_string()
}
