//! `savegame list DIR`: the load menu of a folder, from each file's header and CRC alone.
//!
//! Every regular file that has the savegame magic or ends in `.sav` is a row, whatever its
//! name (a game's `slot-003.sav`, or a file sent in a bug report). Backups (`NAME.bak1`, ...)
//! and pre-migration copies (`NAME.v1.bak`) are counted on their primary's row; a primary that
//! is gone while its backups remain is a `missing` row. A save's journal of incremental saves
//! (`NAME.journal`) is counted on its row: the deltas column is the number of records, from
//! the start of the journal, whose CRC and header are sound and which name the save's
//! generation. Hidden files (lock files) and `*.tmp` are skipped. Nothing is decrypted: "ok"
//! means the CRC and the header are sound.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use savegame::format::Header;
use savegame::format::{FileKind, MAGIC, check_crc, parse_header, record_len};
use savegame::slot::{parse_backup_name, parse_delta_name, parse_pre_migration_name};
use savegame::{Error, SlotId, Trust};
use serde::Serialize;

use crate::failure::{Exit, Failure, describe};
use crate::files::{MAX_SAVE_SIZE, read_capped, read_head};
use crate::text::{playtime, printable, rfc3339, short_time, table, truncate};

/// One row of the menu.
#[derive(Debug, Serialize)]
struct Row {
    /// The file's name in the folder.
    file: String,
    /// The slot its header names: `1`, `autosave 2`, `quicksave`.
    slot: Option<String>,
    /// The file kind (`save`).
    kind: Option<String>,
    label: Option<String>,
    /// RFC 3339, UTC.
    saved_at: Option<String>,
    playtime_ms: Option<u64>,
    app_version: Option<String>,
    schema_version: Option<u32>,
    format_version: Option<u16>,
    codec: Option<&'static str>,
    encrypted: Option<bool>,
    generation: Option<u64>,
    /// The primary file's size in bytes (0 when missing).
    size: u64,
    /// How many backups and pre-migration copies are beside it.
    backups: usize,
    backup_files: Vec<String>,
    /// Incremental saves on top of the full save: sound records of `NAME.journal` that name
    /// this save's generation.
    deltas: u32,
    /// `ok`, `corrupt`, `needs key`, `newer`, `unknown kind`, `missing` or `unreadable`.
    status: &'static str,
    /// Why the status is not `ok`, with the error kind.
    problem: Option<String>,
    #[serde(skip)]
    order: Option<SlotId>,
    #[serde(skip)]
    playtime_text: Option<String>,
    #[serde(skip)]
    saved_short: Option<String>,
}

impl Row {
    fn new(file: &str, size: u64, backup_files: Vec<String>) -> Self {
        Row {
            file: printable(file),
            slot: None,
            kind: None,
            label: None,
            saved_at: None,
            playtime_ms: None,
            app_version: None,
            schema_version: None,
            format_version: None,
            codec: None,
            encrypted: None,
            generation: None,
            size,
            backups: backup_files.len(),
            backup_files: backup_files.iter().map(|b| printable(b)).collect(),
            deltas: 0,
            status: "ok",
            problem: None,
            order: None,
            playtime_text: None,
            saved_short: None,
        }
    }

    fn fill(&mut self, h: &Header) {
        self.slot = Some(super::slot_name(h.slot));
        self.kind = Some(super::kind_name(h.kind));
        self.label = Some(printable(&h.metadata.label));
        self.saved_at = Some(rfc3339(h.saved_at));
        self.saved_short = Some(short_time(h.saved_at));
        self.playtime_ms = Some(u64::try_from(h.metadata.playtime.as_millis()).unwrap_or(u64::MAX));
        self.playtime_text = Some(playtime(h.metadata.playtime));
        self.app_version = Some(printable(&h.metadata.app_version));
        self.schema_version = Some(h.schema_version);
        self.format_version = Some(h.format_version);
        self.codec = Some(h.codec.name());
        self.encrypted = Some(h.encrypted);
        self.generation = Some(h.generation);
        self.order = Some(h.slot);
    }

    fn cells(&self) -> Vec<String> {
        let or_dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
        vec![
            self.file.clone(),
            or_dash(&self.slot),
            or_dash(&self.kind),
            truncate(self.label.as_deref().unwrap_or("-"), 32),
            or_dash(&self.saved_short),
            or_dash(&self.playtime_text),
            truncate(self.app_version.as_deref().unwrap_or("-"), 12),
            self.schema_version.map_or("-".into(), |v| v.to_string()),
            self.size.to_string(),
            self.backups.to_string(),
            self.deltas.to_string(),
            self.status.to_owned(),
        ]
    }
}

/// Runs `list`.
///
/// # Errors
/// When the folder cannot be read (exit 1). Problems with single files are rows, not errors.
pub fn run(
    dir: &Path,
    json: bool,
    schema: Option<u32>,
    trust: Trust<'_>,
) -> Result<ExitCode, Failure> {
    let rows = scan(dir, schema, trust.key().is_some())?;
    if json {
        let mut text = serde_json::to_string_pretty(&rows)
            .map_err(|e| Failure::bad(dir, format!("cannot write JSON: {e}"), "Json"))?;
        text.push('\n');
        super::print(&text)?;
        return Ok(Exit::Ok.into());
    }
    let header = [
        "FILE",
        "SLOT",
        "KIND",
        "LABEL",
        "SAVED AT (UTC)",
        "PLAYTIME",
        "APP",
        "SCHEMA",
        "SIZE",
        "BACKUPS",
        "DELTAS",
        "STATUS",
    ];
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    let mut text = if rows.is_empty() {
        format!("no save files in {}\n", crate::failure::shown(dir))
    } else {
        table(&header, &cells)
    };
    for row in &rows {
        if let Some(problem) = &row.problem {
            text.push_str(&format!("{}: {problem}\n", row.file));
        }
    }
    super::print(&text)?;
    Ok(Exit::Ok.into())
}

struct Found {
    name: String,
    len: u64,
}

fn scan(dir: &Path, schema: Option<u32>, has_key: bool) -> Result<Vec<Row>, Failure> {
    let io = |e: std::io::Error| {
        Failure::file(
            dir,
            &Error::Io {
                path: dir.to_path_buf(),
                source: e,
            },
        )
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Lock files, temporary and staged files, and deltas (counted on their save's row).
        let companion = name.ends_with(".journal")
            || name.ends_with(".new")
            || parse_delta_name(&name).is_some();
        if name.starts_with('.') || name.ends_with(".tmp") || companion {
            continue;
        }
        // Follows symbolic links; a file removed meanwhile is simply not listed.
        match std::fs::metadata(entry.path()) {
            Ok(meta) if meta.is_file() => files.push(Found {
                name,
                len: meta.len(),
            }),
            _ => {}
        }
    }
    let mut backups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut primaries = Vec::new();
    for f in files {
        let primary = parse_backup_name(&f.name)
            .map(|(p, _)| p)
            .or_else(|| parse_pre_migration_name(&f.name).map(|(p, _)| p));
        match primary {
            Some(p) => backups.entry(p.to_owned()).or_default().push(f.name),
            None => primaries.push(f),
        }
    }
    let mut rows = Vec::new();
    for f in &primaries {
        let path = dir.join(&f.name);
        let has_magic = read_head(&path, MAGIC.len() as u64).is_ok_and(|h| h == MAGIC);
        if !has_magic && !f.name.ends_with(".sav") {
            continue;
        }
        let mut own = backups.remove(&f.name).unwrap_or_default();
        own.sort();
        rows.push(row_for(&path, &f.name, f.len, own, schema, has_key));
    }
    for (primary, mut own) in backups {
        let any_save = own
            .iter()
            .any(|b| read_head(&dir.join(b), MAGIC.len() as u64).is_ok_and(|h| h == MAGIC));
        if !any_save && !primary.ends_with(".sav") {
            continue;
        }
        own.sort();
        let mut row = Row::new(&primary, 0, own);
        row.status = "missing";
        row.problem = Some(format!(
            "the file is missing; {} backup(s) remain",
            row.backups
        ));
        row.order = SlotId::from_file_name(&primary);
        rows.push(row);
    }
    rows.sort_by(|a, b| {
        let key = |r: &Row| (r.order.is_none(), r.order);
        key(a).cmp(&key(b)).then_with(|| a.file.cmp(&b.file))
    });
    Ok(rows)
}

fn row_for(
    path: &Path,
    name: &str,
    len: u64,
    backups: Vec<String>,
    schema: Option<u32>,
    has_key: bool,
) -> Row {
    let mut row = Row::new(name, len, backups);
    let bytes = match read_capped(path, MAX_SAVE_SIZE) {
        Ok(bytes) => bytes,
        Err(e) => {
            row.status = if matches!(e, Error::TooLarge { .. }) {
                "corrupt"
            } else {
                "unreadable"
            };
            row.problem = Some(describe(path, &e));
            return row;
        }
    };
    if super::is_replay(&bytes) {
        replay_row(&mut row, path, schema, has_key);
        return row;
    }
    // The header for display, even when the file is damaged further on.
    if let Ok(h) = parse_header(&bytes, None) {
        row.fill(&h);
    }
    let checked = check_crc(&bytes).and_then(|()| parse_header(&bytes, Some(bytes.len() as u64)));
    match checked {
        Ok(h) => {
            let journal = path.with_file_name(format!("{name}.journal"));
            row.deltas = count_deltas(&journal, h.generation);
            row.mark_against(h.schema_version, h.needs_key(), schema, has_key);
        }
        Err(e) => {
            let unknown = matches!(e, Error::Malformed { .. })
                .then(|| super::unknown_file_kind(&bytes))
                .flatten();
            if let Some(kind) = unknown {
                row.status = "unknown kind";
                row.kind = Some(format!("kind {kind}"));
                row.problem = Some(format!("{} [Malformed]", super::unknown_kind_message(kind)));
            } else {
                row.status = match e {
                    Error::UnsupportedFormat { .. }
                    | Error::UnknownCodec { .. }
                    | Error::UnknownFlags { .. } => "newer",
                    _ => "corrupt",
                };
                row.problem = Some(describe(path, &e));
            }
        }
    }
    row
}

impl Row {
    /// Marks a sound file "newer" when its schema is above the game's (`--schema`), or "needs
    /// key" when it is sealed with a key (encrypted or integrity-only, as a game's load menu
    /// says) and no key was given; whether it marked it.
    fn mark_against(
        &mut self,
        found: u32,
        needs_key: bool,
        schema: Option<u32>,
        has_key: bool,
    ) -> bool {
        if let Some(game) = schema.filter(|&game| found > game) {
            self.status = "newer";
            self.problem = Some(format!(
                "schema version {found} is newer than the game's {game} [NewerSchema]"
            ));
        } else if needs_key && !has_key {
            self.status = "needs key";
        } else {
            return false;
        }
        true
    }
}

/// A replay's row: its header from the start and end chunks alone.
fn replay_row(row: &mut Row, path: &Path, schema: Option<u32>, has_key: bool) {
    row.kind = Some("replay".into());
    match savegame::replay::ReplayHeader::read(path, None) {
        Ok(h) => {
            row.label = Some(printable(h.label()));
            row.saved_at = Some(rfc3339(h.recorded_at));
            row.saved_short = Some(short_time(h.recorded_at));
            if let Some(d) = h.duration() {
                row.playtime_ms = Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                row.playtime_text = Some(playtime(d));
            }
            row.app_version = Some(printable(h.app_version()));
            row.schema_version = Some(h.schema_version);
            row.encrypted = Some(h.encrypted);
            row.codec = Some(h.codec.name());
            if !row.mark_against(h.schema_version, h.encrypted, schema, has_key) && !h.is_complete()
            {
                row.status = "cut short";
            }
        }
        Err(e) => {
            row.status = "corrupt";
            row.problem = Some(describe(path, &e));
        }
    }
}

/// How many records from the start of `journal` are sound deltas (CRC and header) of the save
/// of generation `base`: what a load would apply, short of decrypting them.
fn count_deltas(journal: &Path, base: u64) -> u32 {
    let Ok(bytes) = read_capped(journal, MAX_SAVE_SIZE) else {
        return 0;
    };
    let mut count = 0;
    let mut rest = bytes.as_slice();
    while let Ok(Some(len)) = record_len(rest) {
        let record = &rest[..len];
        let sound = check_crc(record).and_then(|()| parse_header(record, Some(len as u64)));
        match sound {
            Ok(h) if h.kind == FileKind::Delta && h.generation == base => count += 1,
            _ => break,
        }
        rest = &rest[len..];
    }
    count
}
