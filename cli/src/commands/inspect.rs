//! `savegame inspect FILE`: the header and metadata, the byte offsets of each section, the CRC
//! status and whether the file is encrypted. Works on any file of a save's family whatever its
//! name (backups, pre-migration copies, files from bug reports). With a key, the mementos are
//! listed too. With `--schema N` (the game's current schema version), a file above it is
//! marked newer and the exit code is 1; without it, the schema version is only shown.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;

use savegame::format::{CRC_LEN, check_crc, parse_header};
use savegame::{Error, SlotId, Snapshot, Trust};

use super::{kind_name, schema_text};
use crate::failure::{Exit, Failure, describe};
use crate::text::{pad, playtime, printable, rfc3339};

/// Runs `inspect`.
///
/// # Errors
/// When the file cannot be read, or its header cannot be parsed (exit 1).
pub fn run(path: &Path, schema: Option<u32>, trust: Trust<'_>) -> Result<ExitCode, Failure> {
    let bytes = super::read_save(path)?;
    if super::is_replay(&bytes) {
        let (out, exit) = super::replay::inspect(path, bytes.len() as u64, trust, schema)?;
        super::print(&out)?;
        return Ok(exit.into());
    }
    let crc = check_crc(&bytes);
    if let Err(e @ Error::NotASave) = &crc {
        return Err(Failure::file(path, e));
    }
    let header = match parse_header(&bytes, Some(bytes.len() as u64)) {
        Ok(h) => h,
        Err(e) => {
            if let (Error::Malformed { .. }, Some(kind)) = (&e, super::unknown_file_kind(&bytes)) {
                return Err(Failure::bad(
                    path,
                    super::unknown_kind_message(kind),
                    "Malformed",
                ));
            }
            // A CRC failure says more than a length that no longer adds up.
            return Err(Failure::file(path, crc.as_ref().err().unwrap_or(&e)));
        }
    };
    let m = &header.metadata;
    let mut exit = Exit::Ok;
    let mut out = String::new();
    let mut line = |name: &str, value: String| {
        let _ = writeln!(out, "{name:<16}{value}");
    };
    // Text from the file is printed with Debug quoting, which escapes control characters.
    line("file", crate::failure::shown(path));
    line("size", format!("{} bytes", bytes.len()));
    line("kind", kind_name(header.kind));
    line("format version", header.format_version.to_string());
    line("codec", header.codec.name().to_owned());
    line(
        "encrypted",
        if let Some(log) = header.segment_log {
            format!(
                "yes (AES-256-GCM, in segments of {} KiB)",
                (1u64 << log) / 1024
            )
        } else if header.encrypted {
            "yes (AES-256-GCM)".into()
        } else {
            "no".into()
        },
    );
    if header.format_version >= savegame::format::FORMAT_VERSION_2 {
        line(
            "authenticated",
            if header.authenticated {
                "yes (HMAC-SHA256, integrity-only: the body is readable)".into()
            } else {
                "no".into()
            },
        );
    }
    if header.format_version >= savegame::format::FORMAT_VERSION_2 {
        line("compression", header.compression.name().to_owned());
    }
    line("slot", slot_description(header.slot));
    line(
        "schema version",
        schema_text(header.schema_version, schema, &mut exit),
    );
    line("generation", header.generation.to_string());
    line("saved at", rfc3339(header.saved_at));
    line("label", format!("{:?}", m.label));
    line(
        "playtime",
        format!("{} ({} ms)", playtime(m.playtime), m.playtime.as_millis()),
    );
    line("app version", format!("{:?}", m.app_version));
    if m.user.is_empty() {
        line("user fields", "none".into());
    } else {
        let fields: Vec<String> = m.user.iter().map(|(k, v)| format!("{k:?}={v:?}")).collect();
        line("user fields", fields.join(", "));
    }
    line(
        "thumbnail",
        m.thumbnail
            .as_ref()
            .map_or("none".into(), |t| format!("{} bytes", t.len())),
    );
    let stored = stored_crc(&bytes);
    match &crc {
        Ok(()) => line("crc32", format!("ok ({stored:#010x})")),
        Err(e) => {
            exit = exit.combine(Exit::Bad);
            line("crc32", format!("BAD: {}", describe(path, e)));
        }
    }
    let s = header.sections();
    out.push_str("sections        start      end   length\n");
    let mut section = |name: &str, r: &Range<u64>| {
        let _ = writeln!(
            out,
            "  {name:<12}{:>7}  {:>7}  {:>7}",
            r.start,
            r.end,
            r.end - r.start
        );
    };
    section("header", &s.header);
    section("metadata", &s.metadata);
    if header.encrypted {
        section("nonce", &s.nonce);
    }
    section("payload", &s.payload);
    section("crc32", &s.crc);
    if crc.is_ok() {
        if header.encrypted && trust.key().is_none() {
            out.push_str(
                "mementos        encrypted: give a key (--key-file or SAVEGAME_KEY) to list them\n",
            );
        } else {
            let unchecked = header.authenticated && trust.key().is_none();
            let opened = if unchecked {
                Snapshot::open_file_unverified(bytes)
            } else {
                Snapshot::open_file(bytes, trust)
            };
            match opened {
                Ok((_, snapshot)) => {
                    if header.authenticated {
                        line_tag(&mut out, unchecked);
                    }
                    let _ = writeln!(out, "mementos        {}", snapshot.len());
                    for id in snapshot.ids() {
                        let len = snapshot.raw(id).map_or(0, <[u8]>::len);
                        let version = match snapshot.memento_version(id) {
                            Some(v) if v != savegame::format::DEFAULT_MEMENTO_VERSION => {
                                format!("  (memento version {v})")
                            }
                            _ => String::new(),
                        };
                        let id = pad(&printable(id), 24);
                        let _ = writeln!(out, "  {id} {len:>9} bytes{version}");
                    }
                }
                Err(e) => {
                    exit = exit.combine(crate::failure::exit_code(&e));
                    let _ = writeln!(out, "mementos        cannot open: {}", describe(path, &e));
                }
            }
        }
    }
    super::print(&out)?;
    Ok(exit.into())
}

/// The `tag` line of an integrity-only file that opened: checked with the key, or not.
fn line_tag(out: &mut String, unchecked: bool) {
    let _ = writeln!(
        out,
        "{:<16}{}",
        "tag",
        if unchecked {
            "not checked: no key given (the body is shown as it is; give a key to check it)"
        } else {
            "ok (checked with the key)"
        }
    );
}

/// The CRC32 stored in the file's last four bytes.
fn stored_crc(bytes: &[u8]) -> u32 {
    let mut crc = [0u8; CRC_LEN];
    if let Some(tail) = bytes
        .len()
        .checked_sub(CRC_LEN)
        .and_then(|at| bytes.get(at..))
    {
        crc.copy_from_slice(tail);
    }
    u32::from_le_bytes(crc)
}

fn slot_description(slot: SlotId) -> String {
    format!(
        "{} (in a save folder: {})",
        super::slot_name(slot),
        slot.file_name()
    )
}
