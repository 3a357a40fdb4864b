//! Versioned migrations: saves from every earlier version of the game still load.
//!
//! A save records one schema version for its whole document (bytes 20–23 of its header). The
//! game declares its current version on the [builder](crate::ManagerBuilder::schema_version) and
//! registers one [step](Migrations::step) per version since its first: step `n` takes a save
//! from version `n - 1` to `n`. Loading an older save turns each memento into a generic
//! [`Value`] tree, runs every step from the save's version up to the current one on the
//! [`Document`], encodes the mementos again, and hands them to the originators as usual. A save
//! at the current version takes none of this path.
//!
//! A MessagePack memento that the steps only rewrite with `map` operations (a big world whose
//! entity kinds become numbers, say) skips the tree: its bytes are copied with the mapped
//! values written in place, which gives the same bytes the tree would, and is checked to on
//! the way; where it cannot be (a value not in the shortest form the encoder writes, an
//! extension type, a value the table lacks, damage), the tree does the whole save as usual, with
//! the result or the error it always gave.
//!
//! Steps come in two kinds, freely mixed:
//!
//! - **Rust steps**: a closure over the [`Document`], with helpers for the usual moves
//!   ([`Value::rename`], [`Value::insert_if_absent`], [`Document::split`], [`Document::merge`],
//!   [`Document::move_value`], …).
//! - **Declarative steps**: JSON files named `NNNN_name.json` (the version they produce), each a
//!   list of JSON Patch operations with wildcards, add-if-absent and value tables (see
//!   [the operations](#declarative-operations)). A game embeds its `migrations/` folder at build
//!   time with [`embed_migrations!`](crate::embed_migrations); a tool reads the same files at run
//!   time with [`Migrations::from_dir`].
//!
//! ```
//! use savegame::migrate::{Migrations, Value};
//!
//! let migrations = Migrations::new()
//!     .step(2, "rename_hp", |doc| {
//!         let player = doc.memento_mut("player")?;
//!         player.rename("hp", "health");
//!         player.insert_if_absent("stamina", 100);
//!         Ok(())
//!     })
//!     .declarative(
//!         "0003_kinds_as_numbers.json",
//!         r#"[{"op": "map", "path": "/world/entities/*/kind", "table": {"tree": 1, "rock": 2}}]"#,
//!     )?;
//! migrations.check(3)?;
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Declarative operations
//!
//! | op | fields | does |
//! |---|---|---|
//! | `add` | `path`, `value` | RFC 6902 add: set a map field, insert into an array (`-` appends), or add a whole memento (`/inventory`) |
//! | `remove` | `path` | RFC 6902 remove; the value must exist |
//! | `replace` | `path`, `value` | RFC 6902 replace; the value must exist |
//! | `move` | `from`, `path` | RFC 6902 move; moving `/player/inventory` to `/inventory` splits a memento, the reverse merges two |
//! | `copy` | `from`, `path` | RFC 6902 copy |
//! | `test` | `path`, `value` | RFC 6902 test: the step fails unless the value is there and equal |
//! | `add_if_absent` | `path`, `value` | add a map field only where it is missing |
//! | `map` | `path`, `table`, optional `default` | replace a value by its entry in `table`, an object keyed by the old value's text (`"tree"`, `"3"`, `"true"`); a value with no entry takes `default`, or fails the step |
//!
//! Paths are JSON Pointers whose first token is the memento id. A token `*` stands for every
//! element of an array, every value of a map, or (first) every memento; in `move` and `copy`, the
//! `*`s of `path` take the tokens the `*`s of `from` matched, in order. A wildcard that matches
//! nothing does nothing; a literal path that does not exist fails the step, as in RFC 6902.
//! `~2` names a literal `*` (`/settings/~2` is the map key `"*"`), beside RFC 6901's `~0` (`~`)
//! and `~1` (`/`); a `*` inside a longer token (`a*b`) is literal already.
//!
//! `test` compares maps whatever their order, arrays element by element, integers exactly,
//! floats as floats, an integer and a float by their exact values (`9` equals `9.0`), and a
//! 32-bit float in a save at its own precision (`0.1` equals a saved `0.1f32`).
//!
//! **Where step files differ from RFC 6902 and RFC 6901, on purpose.** These files rewrite
//! players' saves, so they are strict where the RFCs are lenient, and say exactly what they
//! address:
//!
//! - A member an operation does not define fails the file ([`Error::StepFile`]), where
//!   RFC 6902 §4 ignores it: a misspelt `"defualt"` or `"vaule"` must not pass silently.
//! - `*` is a wildcard, and `~2` the escape for a literal `*`. RFC 6901 allows no `~` escape but
//!   `~0` and `~1`, so no valid pointer contains `~2`: the escape cannot collide with a key any
//!   pointer names (as `\*` or `**` would), and no file that was valid before changes meaning.
//! - `test` never rounds integers to 53 bits: `9007199254740993` does not equal
//!   `9007199254740992` (an RFC 6902 implementation that compares numbers as doubles says it
//!   does).
//! - A path names at least a memento: the document's root (`""`) is not a path.
//!
//! The pointers of Rust steps ([`Document::pointer`], [`Document::put`] and the like) are plain
//! RFC 6901: there, `*` is an ordinary key and `~2` an error.
//!
//! # Guarantees
//!
//! - The chain is checked when the manager is built: no gap, no duplicate, no step past the
//!   current version, every step file parses ([`Migrations::check`]).
//! - A failing step stops the load with [`Error::Migration`], naming the step and the path it
//!   failed at. Loading never writes, so the file is untouched.
//! - A migrated save is written back only by the game's next save, which first keeps the
//!   pre-migration file, byte for byte, as `<slot file>.v<old version>.bak`.
//! - Migrating v1 → v3 in one load equals migrating v1 → v2, saving, and loading at v3.

// Where things are: the chain of steps and its checks in `chain`, step files in `step_file`,
// running the steps on a document or a snapshot in `run`; the value tree in `value`, the
// document of mementos in `document`, the step files' operations in `patch`, the MessagePack
// fast path of `map` operations in `transcode`, the step error in `error`.
mod chain;
mod document;
pub(crate) mod error;
mod memento_plan;
#[cfg(feature = "json")]
mod patch;
mod run;
mod step_file;
#[cfg(all(feature = "json", feature = "msgpack"))]
mod transcode;
mod value;

pub use chain::{MementoStepFn, Migrations, StepFn, StepInfo};
/// The string type of [`Value::String`] (the `compact_str` crate's), so a step can build one
/// without depending on that crate itself.
pub use compact_str::CompactString;
pub use document::Document;
pub use error::MigrationError;
pub use run::{from_document, to_document};
pub use step_file::checksum;
pub use value::Value;

// The errors the docs name.
#[cfg(doc)]
use crate::error::Error;

#[cfg(test)]
mod tests;
