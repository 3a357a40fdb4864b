//! The schema guard (feature `schema`): a game's tests fail when a memento type changes shape
//! without a new version and a migration step, before a release ships saves that the next one
//! would read wrong.
//!
//! A developer renames a field, forgets to bump the version, and ships: old saves then load
//! with the field at its default, a reordered bitcode struct reads garbage, a removed enum
//! variant makes saves holding it fail. The guard traces each memento type's serde shape
//! (fields, variants, options, maps, sequences), compares it with the shape committed for its
//! version (`schemas/player.v1.json`), and says which changes old saves survive in the game's
//! codec and which they do not.
//!
//! | you want to | use |
//! |---|---|
//! | check a game's mementos in its tests | [`Guard::check`] with the game's sample state (a [`SaveState`](crate::SaveState)), or [`Guard::check_originator`], or [`Guard::check_types`] with [`MementoTypes`](crate::MementoTypes) |
//! | keep a save of every version, and load them all | [`Fixtures`] |
//! | see one type's shape | [`trace`] → [`Schema`] |
//! | compare two shapes | [`diff()`] → [`Change`]s, each with a [`Verdict`] per codec |
//! | read or write a committed file | [`SchemaFile`] |
//! | compare two committed files without the game | `savegame schema diff OLD.json NEW.json` (the CLI) |
//!
//! # Setting it up
//!
//! The feature is for tests: a game turns it on in its dev-dependencies only, and its shipped
//! build carries none of it.
//!
//! ```toml
//! [dependencies]
//! savegame = "0.1"
//!
//! [dev-dependencies]
//! savegame = { version = "0.1", features = ["schema"] }
//! ```
//!
//! Then one test, with the settings the game's manager is built with, and a sample state that
//! holds one of each kind of thing (an entity in each registry):
//!
//! ```no_run
//! # use savegame::{Originator, SaveState};
//! # #[derive(Originator, Default)] struct Player { health: u32 }
//! # #[derive(SaveState, Default)] struct Game { player: Player }
//! # impl Game { fn sample() -> Game { Game::default() } }
//! # fn migrations() -> savegame::Migrations { savegame::Migrations::new() }
//! #[test]
//! fn save_schemas_are_committed() {
//!     savegame::schema::Guard::new("schemas")
//!         .schema_version(1)
//!         .migrations(migrations())
//!         .check(&Game::sample())
//!         .unwrap();
//! }
//! ```
//!
//! The first run writes `schemas/<id>.v1.json` for each memento and fails once, saying so;
//! commit the folder, and from then on the test passes until a shape changes.
//!
//! # The walk-through
//!
//! A game's `Player` has a memento at version 1, and its shape is committed. A developer adds
//! a field, `stamina: u32`, and the test fails, saying where and what to do; they raise the
//! version, and it fails again until the step from 1 to 2 is there; with it, the guard writes
//! `player.v2.json` and a fixture of the new version, and fails once more, for them to commit
//! both; then it passes, and every fixture ever written still loads. Here as a doctest, with
//! the game's two versions side by side (a game has one, and edits it):
//!
//! ```
//! use savegame::schema::{Fixtures, Guard, Problem};
//! use savegame::{Migrations, Originator, SaveState};
//!
//! mod before {
//!     #[derive(savegame::Originator, savegame::SaveState, Default)]
//!     pub struct Game { #[savegame(originator)] pub player: Player }
//!     #[derive(savegame::Originator, Default)]
//!     pub struct Player { pub health: u32 }
//! }
//! mod after {
//!     #[derive(savegame::Originator, savegame::SaveState, Default)]
//!     pub struct Game { #[savegame(originator)] pub player: Player }
//!     #[derive(savegame::Originator, Default)]
//!     #[savegame(version = 2)] // 3. raised
//!     pub struct Player { pub health: u32, pub stamina: u32 } // 1. a field added
//! }
//! # mod unbumped {
//! #     #[derive(savegame::Originator, savegame::SaveState, Default)]
//! #     pub struct Game { #[savegame(originator)] pub player: Player }
//! #     #[derive(savegame::Originator, Default)]
//! #     pub struct Player { pub health: u32, pub stamina: u32 }
//! # }
//!
//! # let repo = tempfile::tempdir().unwrap();
//! # let schemas = repo.path().join("schemas");
//! # let fixtures = repo.path().join("fixtures");
//! // The game's test, as it runs at each step (`schemas/` and `fixtures/` in the game's repo).
//! let guard = |migrations: Migrations| Guard::new(&schemas).migrations(migrations).write_files(true);
//! let kit = |migrations: Migrations| {
//!     Fixtures::new(&fixtures, move |b| b.migrations(migrations.clone())).write_files(true)
//! };
//!
//! // Version 1 is committed: the first run wrote its files, the developer committed them.
//! assert!(guard(Migrations::new()).check(&before::Game::default()).unwrap_err().only_written());
//! assert!(kit(Migrations::new()).write_missing(&before::Game::default()).unwrap_err().only_written());
//! guard(Migrations::new()).check(&before::Game::default())?;
//!
//! // 1. A field added, and nothing else: the test fails, naming the change and the fix.
//! let failure = guard(Migrations::new()).check(&unbumped::Game::default()).unwrap_err();
//! assert!(failure.to_string().contains(
//!     "/player/stamina: added (u32; no default: old saves lack it, so they fail to load"
//! ));
//! assert!(failure.to_string().contains("raise the memento's version to 2"));
//!
//! // 2. The version raised, but no step yet: it fails, naming the versions.
//! let failure = guard(Migrations::new()).check(&after::Game::default()).unwrap_err();
//! assert!(matches!(failure.problems[0], Problem::NoStep { from: (1, 1), to: (1, 2), .. }));
//!
//! // 3. The step written: the guard writes player.v2.json, the kit a fixture; both to commit.
//! let steps = || {
//!     Migrations::new().memento_step("player", 1, 2, |player| {
//!         player.insert_if_absent("stamina", 100);
//!         Ok(())
//!     })
//! };
//! assert!(guard(steps()).check(&after::Game::default()).unwrap_err().only_written());
//! assert!(kit(steps()).write_missing(&after::Game::default()).unwrap_err().only_written());
//! assert!(schemas.join("player.v1.json").exists() && schemas.join("player.v2.json").exists());
//!
//! // 4. Committed: it passes, and both fixtures load, the old one through the step.
//! guard(steps()).check(&after::Game::default())?;
//! let loaded = kit(steps()).load_all(after::Game::default)?;
//! let migrated: Vec<bool> = loaded.iter().map(|f| f.restore.is_exact()).collect();
//! assert_eq!(migrated, [true, true]);
//! # Ok::<(), savegame::schema::Failure>(())
//! ```
//!
//! Had the field been `stamina: Option<u32>` (or `#[serde(default)] stamina: u32`), old saves
//! would survive in JSON and MessagePack: the test passes with a note and updates
//! `player.v1.json`, to be committed with the change. In bitcode, which writes fields by
//! position, it is breaking like any other added field.
//!
//! # What it can and cannot see
//!
//! - **Traced through `Deserialize`** with serde-reflection: what serde asks for is the shape;
//!   no derive of the guard's own is needed. Every enum is followed to all its variants.
//! - **Defaults are found by trying**: serde-reflection cannot see `#[serde(default)]`, so each
//!   field is taken out of a valid value written as a save writes it (MessagePack with struct
//!   maps), and the memento type is asked to read it back. If it can, the field "may be
//!   missing" (`"default": true` in the file).
//! - **What it cannot trace** it names, with where it stopped and what to do: untagged,
//!   internally and adjacently tagged enums and `#[serde(flatten)]` ask serde for any value,
//!   which has no shape; a hand-written `Deserialize` that refuses made-up values needs a valid
//!   one ([`Guard::sample`], or the sample state's own mementos, which the tracer tries); for
//!   anything else, give the shape by hand ([`Guard::shape`]).
//! - **The verdicts are per codec** (the table in [`diff()`]): JSON and MessagePack (structs as
//!   maps, as savegame writes them) by field name, bitcode by position. A game that saves only
//!   in bitcode runs no migration steps (its saves are not self-describing): the guard asks it
//!   for a new version, not a step, and says it cannot check how old saves are converted.
//! - **Names of types are not compared**: no codec writes them. Renaming `struct Item` to
//!   `struct Thing` changes nothing; renaming a field or a variant does.
//! - **A version is `(schema version, memento version)`**: a game that versions its whole
//!   document with whole-document steps gets `world.s3.v1.json` files; one that versions each
//!   memento, `player.v2.json`. A new version needs a step from the last committed one, of
//!   either kind.
//! - **It checks shapes, not meanings**: a step that changes what a field means but not its
//!   type passes unnoticed, as does a new `Option` field that old saves read as `None` where
//!   the game meant something else. The fixtures ([`Fixtures`]) run the real steps.

mod diff;
mod explore;
mod file;
mod fixtures;
mod guard;
mod probe;
mod report;
mod shape;
pub(crate) mod trace;
mod traced;

pub use diff::{ALL_CODECS, Change, Verdict, diff, verdict};
pub use file::SchemaFile;
pub use fixtures::{FixtureReport, Fixtures};
pub use guard::Guard;
pub use report::{Failure, Problem, Report};
pub use shape::{Field, Schema, Type, TypeDef, Variant, VariantBody};
pub use trace::{TraceError, trace};
