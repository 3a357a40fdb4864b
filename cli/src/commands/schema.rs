//! `savegame schema FILE`: the versions of a save's mementos; `savegame schema diff OLD NEW`:
//! what changed between two committed schema files (`schemas/player.v1.json`, written by the
//! schema guard in a game's tests) and whether old saves survive it, codec by codec.

use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;
use savegame::Trust;
use savegame::schema::{ALL_CODECS, SchemaFile, Verdict, diff, verdict};

use crate::failure::{Exit, Failure};
use crate::text::printable;

/// The codecs `schema diff --codec` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaCodec {
    /// JSON
    Json,
    /// MessagePack
    Msgpack,
    /// bitcode
    Bitcode,
}

impl From<SchemaCodec> for savegame::Codec {
    fn from(c: SchemaCodec) -> Self {
        match c {
            SchemaCodec::Json => savegame::Codec::Json,
            SchemaCodec::Msgpack => savegame::Codec::MessagePack,
            SchemaCodec::Bitcode => savegame::Codec::Bitcode,
        }
    }
}

/// Runs `schema FILE`: the save's schema version, codec, and each memento's id and version.
///
/// # Errors
/// When the file cannot be opened (exit 1; exit 2 when it needs a key), or stdout cannot be
/// written.
pub fn versions(path: &Path, trust: Trust<'_>) -> Result<ExitCode, Failure> {
    let bytes = super::read_save(path)?;
    let (header, snapshot, note) = super::open_readable(path, bytes, trust)?;
    let mut ids: Vec<&str> = snapshot.ids().collect();
    ids.sort_unstable();
    let width = ids
        .iter()
        .map(|id| printable(id).chars().count())
        .max()
        .unwrap_or(0)
        .max("memento".len());
    let mut out = format!(
        "{}: schema version {}, {:?}, format {}\n{:width$}  version\n",
        crate::failure::shown(path),
        header.schema_version,
        header.codec,
        header.format_version,
        "memento",
    );
    for id in ids {
        let version = snapshot
            .memento_version(id)
            .unwrap_or(savegame::format::DEFAULT_MEMENTO_VERSION);
        out.push_str(&format!("{:width$}  {version}\n", printable(id)));
    }
    super::print(&out)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok(Exit::Ok.into())
}

fn read_schema(path: &Path) -> Result<SchemaFile, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(path, format!("cannot read it: {e}"), "Io"))?;
    SchemaFile::from_json(&text).map_err(|e| Failure::usage(path, e, "Schema"))
}

/// Runs `schema diff OLD NEW`: every change, with its verdict for each codec; exit 0 when old
/// saves survive in every codec asked about (`--codec`, or all), 1 when one breaks, 2 when a
/// file cannot be read.
///
/// # Errors
/// A file that cannot be read or is not a schema file (exit 2), or stdout.
pub fn run_diff(old: &Path, new: &Path, codec: Option<SchemaCodec>) -> Result<ExitCode, Failure> {
    let a = read_schema(old)?;
    let b = read_schema(new)?;
    let codecs: Vec<savegame::Codec> = match codec {
        Some(c) => vec![c.into()],
        None => ALL_CODECS.to_vec(),
    };
    let changes = diff(&a.schema, &b.schema, &b.id);
    let mut out = String::new();
    if a.id != b.id {
        out.push_str(&format!(
            "note: the files are of two mementos, {:?} and {:?}\n",
            printable(&a.id),
            printable(&b.id)
        ));
    }
    out.push_str(&format!(
        "{} (schema version {}, memento version {}) → {} (schema version {}, memento version {})\n",
        printable(&a.id),
        a.schema_version,
        a.memento_version,
        printable(&b.id),
        b.schema_version,
        b.memento_version
    ));
    for c in &changes {
        out.push_str(&format!("  {c}  [{}]\n", c.verdict_text(&codecs)));
    }
    let worst = verdict(&changes, &codecs);
    let names: Vec<&str> = codecs.iter().map(|c| codec_word(*c)).collect();
    out.push_str(&match worst {
        Verdict::Same => format!("the same shape in {}\n", names.join(", ")),
        Verdict::Compatible => format!("compatible: old saves load in {}\n", names.join(", ")),
        Verdict::Breaking => {
            let broken: Vec<&str> = codecs
                .iter()
                .filter(|c| verdict(&changes, &[**c]) == Verdict::Breaking)
                .map(|c| codec_word(*c))
                .collect();
            let bumped =
                (b.schema_version, b.memento_version) > (a.schema_version, a.memento_version);
            format!(
                "breaking in {}: old saves need a migration step{}\n",
                broken.join(", "),
                if bumped {
                    " (the version moved: the game's steps must lead from the old one)"
                } else {
                    ", and the memento a new version"
                }
            )
        }
    });
    super::print(&out)?;
    Ok(if worst == Verdict::Breaking {
        Exit::Bad
    } else {
        Exit::Ok
    }
    .into())
}

fn codec_word(codec: savegame::Codec) -> &'static str {
    match codec {
        savegame::Codec::Json => "JSON",
        savegame::Codec::MessagePack => "MessagePack",
        other => other.name(),
    }
}
