//! `savegame`: look inside, check, dump, edit and migrate the save files of the `savegame` crate.
//!
//! A thin layer over the library's public API, for the developer whose player writes "my save
//! won't load", and for the designer who needs to look inside a save.
//!
//! | command | does |
//! |---|---|
//! | `savegame list DIR [--json] [--schema N]` | the load menu of a folder, from headers and CRCs alone |
//! | `savegame inspect FILE [--schema N]` | header, metadata, section offsets, CRC status, encryption |
//! | `savegame verify FILE... [--schema N] [--migrations DIR]` | full check, one line per file |
//! | `savegame dump FILE [--pretty]` | the document as JSON on stdout |
//! | `savegame pack JSON --out FILE [--codec C] [--schema N] [--slot S] [--now]` | the reverse of `dump`, keeping its saved-at |
//! | `savegame migrate FILE --migrations DIR [--to N] [--dry-run]` | declarative steps, crash-safely |
//! | `savegame diff A B [--json] [--full] [--migrations DIR]` | what changed, memento by memento, with JSON Pointer paths |
//! | `savegame schema FILE` | the schema version of a save and the version of each memento in it |
//! | `savegame schema diff OLD.json NEW.json [--codec C]` | what changed between two committed schema files, and whether old saves survive it |
//!
//! Keys come from `--key-file K` (32 raw bytes or 64 hex digits) or the `SAVEGAME_KEY`
//! environment variable (64 hex digits), never from the command line, and are never printed.
//!
//! Exit codes: 0 ok; 1 a file is bad (damaged, wrong key, newer, a failed step, an I/O
//! error); 2 usage (a wrong argument, a key file that is not a key, a key that is needed and
//! missing). `diff` follows diff(1) instead: 0 the saves hold the same, 1 they differ, 2 any
//! failure (a bad file or a wrong key included). `schema diff` likewise: 0 old saves survive the
//! change (or there is none), 1 it breaks them in a codec, 2 a file that cannot be read.
//!
//! `--schema N` is the game's current schema version. Checking a file (`inspect`, `verify`)
//! does not need it: without it, a save or replay at any schema version is checked for
//! integrity alone (CRC, header, decryption, decoding) and is not called bad for its version.
//! With it, a file above `N` is "newer", exit 1, as with `--migrations` a file above the last
//! step is.
//!
//! The dump format is described in the `dump` module.
//!
//! This library target only carries the binary's code (so that its documentation does not
//! collide with the `savegame` library's); its one public item, [`main`], is the binary's
//! entry point and is not an API to build on.

#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod commands;
mod diff;
mod dump;
mod failure;
mod files;
mod text;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use savegame::Trust;

use crate::failure::Failure;

/// What every command's `--help` says about exit codes and keys.
const AFTER_HELP: &str = "\
Exit codes:
  0  ok
  1  a file is bad: damaged, truncated, not a save, wrong key or tampered, newer than
     supported (--schema N, or the last migration step), a failed migration step, or an
     I/O error
  2  usage: a wrong argument, a key file that is not a key, or no key for an encrypted file
diff's exit codes follow diff(1) instead: 0 the saves hold the same, 1 they differ, 2 any
failure (see diff --help).

Keys: --key-file K (32 raw bytes, or 64 hexadecimal digits) or the SAVEGAME_KEY environment
variable (64 hexadecimal digits). Keys are never taken on the command line and never printed.";

/// What `diff --help` says about its exit codes, which follow diff(1), and keys.
const DIFF_AFTER_HELP: &str = "\
Exit codes: as diff(1)'s, unlike the other commands'
  0  the saves hold the same: header, metadata and every memento
  1  they differ
  2  the comparison could not be made: a wrong argument, no key or a wrong key for an
     encrypted save, a file that is damaged or not a save, a failed migration step, or an
     I/O error

Keys: --key-file K (32 raw bytes, or 64 hexadecimal digits) or the SAVEGAME_KEY environment
variable (64 hexadecimal digits); the one key opens both saves (a plain save needs none).";

/// Look inside, check, dump, edit and migrate savegame files.
#[derive(Debug, Parser)]
#[command(name = "savegame", version, after_help = AFTER_HELP)]
struct Cli {
    /// A file holding the key: 32 raw bytes or 64 hexadecimal digits [default: the
    /// SAVEGAME_KEY environment variable]
    #[arg(long, global = true, value_name = "K")]
    key_file: Option<PathBuf>,

    /// With a key, also accept plain files (neither encrypted nor integrity-only). Refused by
    /// default, as a game with a key refuses them: a plain file is one anyone can write,
    /// including an integrity-only file stripped of its flag
    #[arg(long, global = true)]
    allow_plain: bool,

    #[command(subcommand)]
    command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
enum Command {
    /// The load menu of a folder: one row per save file, from its header and CRC alone
    #[command(after_help = AFTER_HELP)]
    List {
        /// The folder
        dir: PathBuf,
        /// Print JSON for scripts instead of a table
        #[arg(long)]
        json: bool,
        /// The game's current schema version: saves above it are marked "newer"
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        schema: Option<u32>,
    },
    /// The header and metadata of one file, the byte offsets of its sections, its CRC status
    /// and whether it is encrypted (works on backups too)
    #[command(after_help = AFTER_HELP)]
    Inspect {
        /// The file
        file: PathBuf,
        /// The game's current schema version: a file above it is marked newer (exit 1)
        /// [default: none; the file's version is only shown]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        schema: Option<u32>,
    },
    /// Full check of each file (CRC, header, decryption, decoding of every memento, and the
    /// migration steps when --migrations is given): one line per file
    #[command(after_help = AFTER_HELP)]
    Verify {
        /// The files
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// A folder of declarative steps (NNNN_name.json): checks the chain, and runs the steps
        /// on each file in memory (on a replay's keyframes)
        #[arg(long, value_name = "DIR")]
        migrations: Option<PathBuf>,
        /// The game's current schema version: files above it fail as newer (exit 1); with
        /// --migrations, where the steps must end [default: the last step's with
        /// --migrations; none without, and files are checked for integrity alone]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        schema: Option<u32>,
    },
    /// The document as JSON on stdout: metadata and each memento (`pack` reads it back)
    #[command(after_help = AFTER_HELP)]
    Dump {
        /// The file
        file: PathBuf,
        /// Indent the JSON
        #[arg(long)]
        pretty: bool,
    },
    /// Writes a save file from a dump (the reverse of `dump`); encrypted when a key is given
    #[command(after_help = AFTER_HELP)]
    Pack {
        /// The dump (JSON, as `dump` writes it)
        json: PathBuf,
        /// The save file to write (replaced atomically; a file it replaces is kept as
        /// FILE.bak1, older backups move up one)
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The codec of the mementos [default: the dump's]
        #[arg(long, value_enum)]
        codec: Option<CodecArg>,
        /// The schema version to record [default: the dump's]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        schema: Option<u32>,
        /// The slot to write the save for, as `list` shows it (3, "autosave 2", quicksave) or
        /// as its file is named (slot-003.sav) [default: the dump's]
        #[arg(long, value_name = "SLOT", value_parser = commands::parse_slot)]
        slot: Option<savegame::SlotId>,
        /// Stamp the current time [default: the dump's saved_at]
        #[arg(long)]
        now: bool,
    },
    /// What changed between two saves: header and metadata fields, then memento by memento
    /// the added, removed and changed ones, with the JSON Pointer paths that differ and their
    /// old and new values (saves of any codec, plain or encrypted)
    #[command(after_help = DIFF_AFTER_HELP)]
    Diff {
        /// The old save
        a: PathBuf,
        /// The new save
        b: PathBuf,
        /// Print JSON for scripts instead of text (always complete)
        #[arg(long)]
        json: bool,
        /// List every path and whole values [default: 50 paths per memento, values cut at 80
        /// columns]
        #[arg(long)]
        full: bool,
        /// A folder of declarative steps (NNNN_name.json): when the schema versions differ,
        /// the older save is migrated in memory to the newer one's before comparing
        /// [default: compare the mementos as stored]
        #[arg(long, value_name = "DIR")]
        migrations: Option<PathBuf>,
    },
    /// The schema version of a save and the version of each memento in it; `schema diff OLD
    /// NEW` compares two schema files
    #[command(
        after_help = AFTER_HELP,
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    Schema {
        #[command(subcommand)]
        command: Option<SchemaCommand>,
        /// The save file
        #[arg(required = true)]
        file: Option<PathBuf>,
    },
    /// Applies declarative migration steps to a save, without the game's code. Writes the
    /// result crash-safely and keeps the old file as FILE.vN.bak (N: its schema version)
    #[command(after_help = AFTER_HELP)]
    Migrate {
        /// The save file
        file: PathBuf,
        /// The folder of steps (NNNN_name.json, NNNN being the version a step produces)
        #[arg(long, value_name = "DIR")]
        migrations: PathBuf,
        /// The schema version to migrate to [default: the last step's]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        to: Option<u32>,
        /// List the steps and the paths they touch, run them in memory when the file can be
        /// opened, and write nothing
        #[arg(long)]
        dry_run: bool,
    },
}

/// What `schema diff --help` says about its exit codes.
const SCHEMA_DIFF_AFTER_HELP: &str = "\
Exit codes:
  0  old saves survive the change in every codec asked about (or nothing changed)
  1  the change breaks old saves in one of them: a version bump and a migration step are needed
  2  a file cannot be read or is not a schema file, or a wrong argument";

/// `schema`'s subcommand.
#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// What changed between two schema files of a memento (as the schema guard writes them in
    /// a game's `schemas/`), each change with whether old saves survive it, codec by codec
    #[command(after_help = SCHEMA_DIFF_AFTER_HELP)]
    Diff {
        /// The old schema file (`schemas/player.v1.json`)
        old: PathBuf,
        /// The new one
        new: PathBuf,
        /// Judge for this codec only [default: every codec]
        #[arg(long, value_enum)]
        codec: Option<commands::schema::SchemaCodec>,
    },
}

/// `--codec` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CodecArg {
    /// JSON
    Json,
    /// MessagePack
    Msgpack,
}

impl From<CodecArg> for savegame::Codec {
    fn from(c: CodecArg) -> Self {
        match c {
            CodecArg::Json => savegame::Codec::Json,
            CodecArg::Msgpack => savegame::Codec::MessagePack,
        }
    }
}

/// The `savegame` binary: parses the command line, runs the command, prints a failure as one
/// line on stderr, and returns the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("savegame: {}", failure.message);
            failure.code.into()
        }
    }
}

/// Runs one command; `Ok` carries the exit code of a command that reported its own results.
fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let key = files::load_key(cli.key_file.as_deref())?;
    // One decision about what protection a file must have, for every command: with a key, the
    // key's protection (encrypted or integrity-only, checked), plain files only if allowed.
    let key = match &key {
        Some(key) if cli.allow_plain => Trust::keyed(key).or_plain(),
        Some(key) => Trust::keyed(key),
        None => Trust::plain(),
    };
    match cli.command {
        Command::List { dir, json, schema } => commands::list::run(&dir, json, schema, key),
        Command::Inspect { file, schema } => commands::inspect::run(&file, schema, key),
        Command::Verify {
            files,
            migrations,
            schema,
        } => commands::verify::run(&files, migrations.as_deref(), schema, key),
        Command::Dump { file, pretty } => commands::dump::run(&file, pretty, key),
        Command::Pack {
            json,
            out,
            codec,
            schema,
            slot,
            now,
        } => {
            let options = commands::pack::Options {
                codec: codec.map(Into::into),
                schema,
                slot,
                now,
            };
            commands::pack::run(&json, &out, options, key)
        }
        Command::Diff {
            a,
            b,
            json,
            full,
            migrations,
        } => {
            let options = commands::diff::Options {
                json,
                full,
                migrations: migrations.as_deref(),
            };
            commands::diff::run(&a, &b, options, key)
        }
        Command::Migrate {
            file,
            migrations,
            to,
            dry_run,
        } => commands::migrate::run(&file, &migrations, to, dry_run, key),
        Command::Schema { command, file } => match (command, file) {
            (Some(SchemaCommand::Diff { old, new, codec }), _) => {
                commands::schema::run_diff(&old, &new, codec)
            }
            (None, Some(file)) => commands::schema::versions(&file, key),
            (None, None) => Err(Failure::usage_plain(
                "schema needs a save file, or `diff OLD NEW`",
                "Usage",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
