//! Reading files under a size cap, and keys.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use savegame::crypto::KEY_LEN;
use savegame::{Error, Key};
use zeroize::Zeroizing;

use crate::failure::{Failure, describe};

/// The largest save file the tool reads: the library's default cap (256 MiB).
pub const MAX_SAVE_SIZE: u64 = 256 << 20;
/// The largest dump `pack` reads. A dump is larger than its save (text numbers, base64), so
/// the cap is four times the save cap.
pub const MAX_DUMP_SIZE: u64 = 4 * MAX_SAVE_SIZE;
/// The largest key file read: a key is 32 bytes, or 64 hex digits and a line end.
const MAX_KEY_FILE_SIZE: u64 = 1024;
/// The environment variable that may hold the key, as 64 hex digits.
pub const KEY_ENV: &str = "SAVEGAME_KEY";

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The whole file, refused with [`Error::TooLarge`] before it is read when it is over `limit`
/// bytes, and never read past `limit + 1` bytes should it grow while being read.
///
/// # Errors
/// [`Error::Io`] (including for a folder), [`Error::TooLarge`].
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let file = File::open(path).map_err(|e| io(path, e))?;
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            std::io::ErrorKind::IsADirectory
        } else {
            std::io::ErrorKind::InvalidInput
        };
        return Err(io(path, std::io::Error::new(what, "not a regular file")));
    }
    let too_large = |size| Error::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(too_large(buf.len() as u64));
    }
    Ok(buf)
}

/// Up to the first `len` bytes of a file.
///
/// # Errors
/// [`Error::Io`].
pub fn read_head(path: &Path, len: u64) -> Result<Vec<u8>, Error> {
    let file = File::open(path).map_err(|e| io(path, e))?;
    let mut buf = Vec::new();
    file.take(len)
        .read_to_end(&mut buf)
        .map_err(|e| io(path, e))?;
    Ok(buf)
}

/// The key from `--key-file`, else from `SAVEGAME_KEY`, else none. The bytes read are wiped
/// once the key is made, and no message repeats them.
///
/// # Errors
/// A usage failure (exit 2) when the key file cannot be read or is not a key, or when
/// `SAVEGAME_KEY` is set and is not 64 hex digits.
pub fn load_key(key_file: Option<&Path>) -> Result<Option<Key>, Failure> {
    if let Some(path) = key_file {
        let bytes = Zeroizing::new(
            read_capped(path, MAX_KEY_FILE_SIZE)
                .map_err(|e| Failure::usage(path, key_file_problem(path, &e), "Config"))?,
        );
        return key_from_file_bytes(&bytes)
            .map(Some)
            .ok_or_else(|| Failure::usage(path, not_a_key(bytes.len()), "Config"));
    }
    match std::env::var(KEY_ENV) {
        Ok(text) => {
            let text = Zeroizing::new(text);
            if text.trim().is_empty() {
                return Ok(None);
            }
            Key::from_hex(&text).map(Some).map_err(|_| {
                Failure::usage_plain(
                    format!("{KEY_ENV} is set but is not 64 hexadecimal digits"),
                    "Config",
                )
            })
        }
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Failure::usage_plain(
            format!("{KEY_ENV} is set but is not 64 hexadecimal digits"),
            "Config",
        )),
    }
}

fn key_file_problem(path: &Path, err: &Error) -> String {
    let d = describe(path, err);
    // describe() ends with the kind; the failure adds its own.
    let message = d.rsplit_once(" [").map_or(d.as_str(), |(m, _)| m);
    format!("cannot read the key file: {message}")
}

fn not_a_key(len: usize) -> String {
    format!(
        "not a key: a key file holds {KEY_LEN} raw bytes or {} hexadecimal digits (this one has {len} bytes)",
        KEY_LEN * 2
    )
}

/// 32 bytes are the key itself; anything else must be 64 hex digits (whitespace around them
/// is ignored).
fn key_from_file_bytes(bytes: &[u8]) -> Option<Key> {
    if bytes.len() == KEY_LEN {
        return Key::from_slice(bytes).ok();
    }
    let text = std::str::from_utf8(bytes).ok()?;
    Key::from_hex(text).ok()
}

/// The folder a file is in (`.` for a bare file name) and its name, for
/// [`FsStorage`](savegame::storage::FsStorage).
///
/// # Errors
/// When the path has no file name, or the name is not UTF-8.
pub fn split_path(path: &Path) -> Result<(PathBuf, String), Failure> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Failure::usage(path, "not a file name this tool can write", "Config"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [7u8; 100]).unwrap();
        assert_eq!(read_capped(&path, 100).unwrap().len(), 100);
        assert!(matches!(
            read_capped(&path, 99),
            Err(Error::TooLarge {
                size: 100,
                limit: 99,
                ..
            })
        ));
        assert!(matches!(read_capped(dir.path(), 99), Err(Error::Io { .. })));
        assert_eq!(read_head(&path, 8).unwrap(), [7u8; 8]);
    }

    #[test]
    fn key_files_hold_raw_bytes_or_hex() {
        assert!(key_from_file_bytes(&[1u8; 32]).is_some());
        let hex = "ab".repeat(32);
        assert!(key_from_file_bytes(hex.as_bytes()).is_some());
        assert!(key_from_file_bytes(format!("{hex}\n").as_bytes()).is_some());
        assert!(key_from_file_bytes(&[1u8; 31]).is_none());
        assert!(key_from_file_bytes("zz".repeat(32).as_bytes()).is_none());
        assert!(!not_a_key(5).contains("ab"));
    }

    #[test]
    fn bare_file_names_live_in_the_current_folder() {
        let (dir, name) = split_path(Path::new("slot-001.sav")).unwrap();
        assert_eq!((dir, name.as_str()), (PathBuf::from("."), "slot-001.sav"));
        let (dir, name) = split_path(Path::new("a/b/x.sav")).unwrap();
        assert_eq!((dir, name.as_str()), (PathBuf::from("a/b"), "x.sav"));
        assert!(split_path(Path::new("/")).is_err());
    }
}
