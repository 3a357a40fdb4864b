//! `savegame diff A B`: what changed between two saves, memento by memento.
//!
//! Both files are opened in full (CRC, header, decryption with the one key given, which a
//! plain file ignores) and every memento is decoded into a value tree, as `dump` does, so two
//! saves of any codecs compare by content: a JSON save and a MessagePack save of the same
//! state have no memento differences (see [`crate::diff`] for what counts as the same).
//!
//! The report lists the header and metadata fields that differ (slot, schema version,
//! generation, saved-at, format version, codec, encryption, label, playtime, app version, user
//! fields, thumbnail), then the mementos: added, removed, and changed ones with the RFC 6901
//! pointers that differ (`/player/health`, the document pointers migration steps use) and their
//! old and new values in the dump's JSON form, then how many are unchanged. Ids and paths are
//! sorted. The text report cuts values at 80 columns and lists at most 50 paths per memento
//! (`--full`: everything); `--json` always gives everything.
//!
//! Saves at different schema versions are compared as stored, and the report says so: a field
//! a migration renames shows as removed and added. With `--migrations DIR`, the older save is
//! first migrated in memory to the newer one's version with those steps.
//!
//! Exit codes follow diff(1): 0 when nothing differs, 1 when something does, 2 when the
//! comparison could not be made (a usage error, a missing or wrong key, a damaged file or one
//! that is not a save, a failed migration step).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use savegame::Trust;
use savegame::format::Header;
use savegame::migrate::{Document, Value, to_document};
use serde::Serialize;

use crate::diff::{Change, Kind, changes, push_token};
use crate::dump::json_form;
use crate::failure::{Failure, shown};
use crate::text::{pad, playtime, printable, rfc3339, truncate};

/// The exit code when the saves differ (diff(1)'s).
const DIFFER: u8 = 1;
/// How many columns of a value the text report shows without `--full`.
const VALUE_COLUMNS: usize = 80;
/// How many columns of a path the text report shows without `--full`.
const PATH_COLUMNS: usize = 160;
/// How many paths of one memento the text report lists without `--full`.
const MAX_PATHS: usize = 50;

/// How `diff` reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// JSON for scripts instead of text.
    pub json: bool,
    /// Every path and whole values in the text report.
    pub full: bool,
    /// Steps that migrate the older save to the newer one's schema version first.
    pub migrations: Option<&'a Path>,
}

/// Runs `diff`: exit 0 when the saves hold the same, 1 when they differ.
///
/// # Errors
/// Any failure, with exit code 2 (diff(1)'s "trouble"; 1 means that the files differ): a file
/// that cannot be read, opened, decrypted or decoded, a missing key, a migrations folder or
/// step that fails, or stdout that cannot be written.
pub fn run(
    a: &Path,
    b: &Path,
    options: Options<'_>,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    compare(a, b, options, trust).map_err(Failure::in_diff)
}

/// One side of the comparison.
struct Side<'a> {
    path: &'a Path,
    header: Header,
    doc: Document,
}

fn open_side<'a>(path: &'a Path, trust: Trust<'_>) -> Result<Side<'a>, Failure> {
    let bytes = super::read_save(path)?;
    if super::is_replay(&bytes) {
        return Err(Failure::bad(
            path,
            "is a replay; diff compares saves (and their backups)",
            "WrongFileKind",
        ));
    }
    if let Some(kind) = super::unknown_file_kind(&bytes) {
        return Err(Failure::bad(
            path,
            super::unknown_kind_message(kind),
            "WrongFileKind",
        ));
    }
    // An integrity-only file read without its key is compared as it reads; `inspect` and
    // `verify` say whether its tag holds.
    let (header, snapshot, _unchecked) = super::open_readable(path, bytes, trust)?;
    header
        .codec
        .require_self_describing("savegame diff (it compares mementos as generic values)")
        .map_err(|e| Failure::file(path, &e))?;
    let doc = to_document(&snapshot).map_err(|e| Failure::file(path, &e))?;
    Ok(Side { path, header, doc })
}

/// What `--migrations` did.
#[derive(Debug, Serialize)]
struct Migrated {
    /// `a` or `b`: the side that was migrated.
    side: &'static str,
    from: u32,
    to: u32,
}

fn compare(
    a: &Path,
    b: &Path,
    options: Options<'_>,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let mut old = open_side(a, trust)?;
    let mut new = open_side(b, trust)?;
    let migrated = match options.migrations {
        None => None,
        Some(dir) => {
            let (steps, _) = super::migrate::load_steps(dir)?;
            let (from, to) = (old.header.schema_version, new.header.schema_version);
            let (older, side) = if from < to {
                (&mut old, "a")
            } else {
                (&mut new, "b")
            };
            let (from, to) = (from.min(to), from.max(to));
            if from == to {
                None
            } else {
                steps
                    .run(&mut older.doc, from, to)
                    .map_err(|e| Failure::file(older.path, &e))?;
                Some(Migrated { side, from, to })
            }
        }
    };
    let header = header_differences(&old.header, &new.header);
    let mementos = memento_differences(&old.doc, &new.doc);
    let report = Report {
        a: summary(&old),
        b: summary(&new),
        same: header.is_empty() && mementos.is_empty(),
        migrated,
        header,
        mementos,
    };
    let text = if options.json {
        let mut text = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::bad(a, format!("cannot write JSON: {e}"), "Json"))?;
        text.push('\n');
        text
    } else {
        report.text(options.full)
    };
    super::print(&text)?;
    Ok(if report.same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(DIFFER)
    })
}

/// The whole comparison, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Report {
    /// The first file (the old side).
    a: FileSummary,
    /// The second file (the new side).
    b: FileSummary,
    /// Whether nothing differs.
    same: bool,
    /// Which side `--migrations` migrated before comparing, if any.
    migrated: Option<Migrated>,
    /// Header and metadata fields that differ.
    header: Vec<Field>,
    /// The mementos.
    mementos: Mementos,
}

/// A file as the report names it.
#[derive(Debug, Serialize)]
struct FileSummary {
    file: String,
    slot: String,
    schema_version: u32,
    generation: u64,
    codec: &'static str,
    encrypted: bool,
    authenticated: bool,
    /// RFC 3339, UTC.
    saved_at: String,
    mementos: usize,
}

fn summary(side: &Side<'_>) -> FileSummary {
    let h = &side.header;
    FileSummary {
        file: shown(side.path),
        slot: super::slot_name(h.slot),
        schema_version: h.schema_version,
        generation: h.generation,
        codec: h.codec.name(),
        encrypted: h.encrypted,
        authenticated: h.authenticated,
        saved_at: rfc3339(h.saved_at),
        mementos: side.doc.ids().count(),
    }
}

/// A header or metadata field that differs.
#[derive(Debug, Serialize)]
struct Field {
    /// The field, named as in dumps (`schema_version`, `playtime_ms`, `user`).
    field: &'static str,
    /// For a user field: its key.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// The value in A (null when absent). For the thumbnail: its length in bytes.
    old: serde_json::Value,
    /// The value in B (null when absent).
    new: serde_json::Value,
    /// The name and the two values as the text report shows them.
    #[serde(skip)]
    text: (String, String, String),
}

fn field<T: PartialEq + Serialize>(
    out: &mut Vec<Field>,
    name: &'static str,
    shown_as: &str,
    old: T,
    new: T,
    text: impl Fn(&T) -> String,
) {
    if old != new {
        out.push(Field {
            field: name,
            key: None,
            old: serde_json::to_value(&old).unwrap_or_default(),
            new: serde_json::to_value(&new).unwrap_or_default(),
            text: (shown_as.to_owned(), text(&old), text(&new)),
        });
    }
}

fn header_differences(a: &Header, b: &Header) -> Vec<Field> {
    let mut out = Vec::new();
    let same_text = |s: &String| s.clone();
    let quoted = |s: &String| format!("{:?}", s);
    field(
        &mut out,
        "slot",
        "slot",
        super::slot_name(a.slot),
        super::slot_name(b.slot),
        same_text,
    );
    field(
        &mut out,
        "schema_version",
        "schema version",
        a.schema_version,
        b.schema_version,
        u32::to_string,
    );
    field(
        &mut out,
        "generation",
        "generation",
        a.generation,
        b.generation,
        u64::to_string,
    );
    field(
        &mut out,
        "saved_at",
        "saved at",
        rfc3339(a.saved_at),
        rfc3339(b.saved_at),
        same_text,
    );
    field(
        &mut out,
        "format_version",
        "format version",
        a.format_version,
        b.format_version,
        u16::to_string,
    );
    field(
        &mut out,
        "codec",
        "codec",
        a.codec.name(),
        b.codec.name(),
        |s| (*s).to_owned(),
    );
    field(
        &mut out,
        "encrypted",
        "encrypted",
        a.encrypted,
        b.encrypted,
        |e| if *e { "yes" } else { "no" }.to_owned(),
    );
    field(
        &mut out,
        "authenticated",
        "authenticated",
        a.authenticated,
        b.authenticated,
        |e| if *e { "yes" } else { "no" }.to_owned(),
    );
    let (m, n) = (&a.metadata, &b.metadata);
    field(
        &mut out,
        "label",
        "label",
        m.label.clone(),
        n.label.clone(),
        quoted,
    );
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    field(
        &mut out,
        "playtime_ms",
        "playtime",
        ms(m.playtime),
        ms(n.playtime),
        |t| {
            format!(
                "{} ({t} ms)",
                playtime(std::time::Duration::from_millis(*t))
            )
        },
    );
    field(
        &mut out,
        "app_version",
        "app version",
        m.app_version.clone(),
        n.app_version.clone(),
        quoted,
    );
    let mut keys: Vec<&String> = m.user.keys().chain(n.user.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (old, new) = (m.user.get(k), n.user.get(k));
        if old != new {
            let text = |v: Option<&String>| v.map_or("(none)".to_owned(), |v| format!("{v:?}"));
            out.push(Field {
                field: "user",
                key: Some(k.clone()),
                old: old.map_or(serde_json::Value::Null, |v| v.as_str().into()),
                new: new.map_or(serde_json::Value::Null, |v| v.as_str().into()),
                text: (format!("user {k:?}"), text(old), text(new)),
            });
        }
    }
    if m.thumbnail != n.thumbnail {
        let len = |t: &Option<Vec<u8>>| t.as_ref().map(Vec::len);
        let text = |t: &Option<Vec<u8>>| {
            t.as_ref()
                .map_or("none".to_owned(), |t| format!("{} bytes", t.len()))
        };
        let (mut old, new) = (text(&m.thumbnail), text(&n.thumbnail));
        if old == new {
            old.push_str(" (other bytes)");
        }
        out.push(Field {
            field: "thumbnail",
            key: None,
            old: len(&m.thumbnail).into(),
            new: len(&n.thumbnail).into(),
            text: ("thumbnail".into(), old, new),
        });
    }
    out
}

/// The mementos' differences.
#[derive(Debug, Default, Serialize)]
struct Mementos {
    /// Mementos only B has, by id.
    added: Vec<Whole>,
    /// Mementos only A has, by id.
    removed: Vec<Whole>,
    /// Mementos both have, that differ, by id.
    changed: Vec<Changed>,
    /// How many mementos both have, the same.
    unchanged: usize,
}

/// A memento added or removed whole.
#[derive(Debug, Serialize)]
struct Whole {
    id: String,
    /// In the dump's JSON form.
    value: Value,
}

/// A memento that changed, and where.
#[derive(Debug, Serialize)]
struct Changed {
    id: String,
    changes: Vec<PathChange>,
}

/// One path that differs.
#[derive(Debug, Serialize)]
struct PathChange {
    /// RFC 6901 pointer into the document: `/<id>/...`.
    path: String,
    change: Kind,
    /// In the dump's JSON form; absent when added.
    #[serde(skip_serializing_if = "Option::is_none")]
    old: Option<Value>,
    /// In the dump's JSON form; absent when removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<Value>,
}

impl From<Change> for PathChange {
    fn from(c: Change) -> Self {
        PathChange {
            path: c.path,
            change: c.kind,
            old: c.old.as_ref().map(json_form),
            new: c.new.as_ref().map(json_form),
        }
    }
}

impl Mementos {
    /// Whether no memento was added, removed or changed.
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

fn memento_differences(a: &Document, b: &Document) -> Mementos {
    let mut ids: Vec<&str> = a.ids().chain(b.ids()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Mementos::default();
    for id in ids {
        match (a.memento(id), b.memento(id)) {
            (Some(old), Some(new)) => {
                let mut prefix = String::new();
                push_token(&mut prefix, id);
                let found = changes(&prefix, old, new);
                if found.is_empty() {
                    out.unchanged += 1;
                } else {
                    out.changed.push(Changed {
                        id: id.to_owned(),
                        changes: found.into_iter().map(PathChange::from).collect(),
                    });
                }
            }
            (Some(old), None) => out.removed.push(Whole {
                id: id.to_owned(),
                value: json_form(old),
            }),
            (None, Some(new)) => out.added.push(Whole {
                id: id.to_owned(),
                value: json_form(new),
            }),
            (None, None) => {}
        }
    }
    out
}

/// A value in the dump's compact JSON, safe for the terminal, cut at [`VALUE_COLUMNS`] unless
/// `full`.
fn value_text(v: &Value, full: bool) -> String {
    let text = printable(&serde_json::to_string(v).unwrap_or_else(|_| v.to_string()));
    if full || text.len() <= VALUE_COLUMNS {
        return text;
    }
    let cut = truncate(&text, VALUE_COLUMNS);
    if cut == text {
        text
    } else {
        format!("{cut} ({} bytes)", text.len())
    }
}

impl Report {
    /// The text report.
    fn text(&self, full: bool) -> String {
        let mut out = String::new();
        for (mark, f) in [("---", &self.a), ("+++", &self.b)] {
            let _ = writeln!(
                out,
                "{mark} {}: slot {}, schema {}, generation {}, {}, {}, saved at {}",
                f.file,
                f.slot,
                f.schema_version,
                f.generation,
                f.codec,
                if f.encrypted { "encrypted" } else { "plain" },
                f.saved_at
            );
        }
        let (from, to) = (self.a.schema_version, self.b.schema_version);
        match &self.migrated {
            Some(m) => {
                let file = if m.side == "a" {
                    &self.a.file
                } else {
                    &self.b.file
                };
                let _ = writeln!(
                    out,
                    "note: {file} was migrated in memory from schema version {} to {} with the \
                     given steps before its mementos were compared",
                    m.from, m.to
                );
            }
            None if from != to => {
                let _ = writeln!(
                    out,
                    "note: the schema versions differ ({from} → {to}): the mementos are compared \
                     as stored, so what a migration renames or moves shows as removed and added \
                     (--migrations DIR migrates the older save first)"
                );
            }
            None => {}
        }
        if self.header.is_empty() {
            out.push_str("header and metadata: same\n");
        } else {
            let _ = writeln!(
                out,
                "header and metadata: {} difference(s)",
                self.header.len()
            );
            let width = self
                .header
                .iter()
                .map(|f| crate::text::width(&f.text.0))
                .max()
                .unwrap_or(0);
            for f in &self.header {
                let (name, old, new) = &f.text;
                let name = pad(&printable(name), width);
                let (old, new) = (printable(old), printable(new));
                let _ = writeln!(out, "  {name}  {old} → {new}");
            }
        }
        let m = &self.mementos;
        let _ = writeln!(
            out,
            "mementos: {} added, {} removed, {} changed, {} unchanged",
            m.added.len(),
            m.removed.len(),
            m.changed.len(),
            m.unchanged
        );
        // One list in id order, whatever happened to each.
        let mut lines: Vec<(&str, String)> = Vec::new();
        for w in &m.added {
            lines.push((
                &w.id,
                format!("+ {}: {}\n", printable(&w.id), value_text(&w.value, full)),
            ));
        }
        for w in &m.removed {
            lines.push((
                &w.id,
                format!("- {}: {}\n", printable(&w.id), value_text(&w.value, full)),
            ));
        }
        for c in &m.changed {
            let mut block = format!("~ {}: {} path(s)\n", printable(&c.id), c.changes.len());
            let shown = if full { c.changes.len() } else { MAX_PATHS };
            for p in c.changes.iter().take(shown) {
                let path = printable(&p.path);
                let path = if full {
                    path
                } else {
                    truncate(&path, PATH_COLUMNS)
                };
                let value =
                    |v: &Option<Value>| v.as_ref().map_or(String::new(), |v| value_text(v, full));
                let what = match p.change {
                    Kind::Added => format!("added {}", value(&p.new)),
                    Kind::Removed => format!("removed {}", value(&p.old)),
                    Kind::Changed => format!("{} → {}", value(&p.old), value(&p.new)),
                };
                let _ = writeln!(block, "    {path}: {what}");
            }
            if c.changes.len() > shown {
                let _ = writeln!(
                    block,
                    "    … and {} more path(s) (--full or --json lists them all)",
                    c.changes.len() - shown
                );
            }
            lines.push((&c.id, block));
        }
        lines.sort_by(|x, y| x.0.cmp(y.0));
        for (_, line) in lines {
            out.push_str(&line);
        }
        out
    }
}
