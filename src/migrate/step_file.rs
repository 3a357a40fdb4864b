//! Declarative steps from step files: a file's name (`NNNN_name.json`, the version it
//! produces) and contents into a step ([`Migrations::declarative`]), the files a game embeds
//! ([`Migrations::embedded`]) or a tool reads from a folder ([`Migrations::from_dir`]), and
//! the [`checksum`] a game's test pins them with.

#[cfg(feature = "json")]
use std::path::Path;

#[cfg(feature = "json")]
use super::chain::{Action, Migrations, Step};
#[cfg(feature = "json")]
use super::patch;
#[cfg(feature = "json")]
use crate::error::{Error, Result};

#[cfg(feature = "json")]
impl Migrations {
    /// Adds a declarative step from a file's name (`NNNN_name.json`, `NNNN` being the version
    /// it produces) and contents.
    ///
    /// # Errors
    /// [`Error::StepFile`] when the name does not follow the pattern or the contents do not
    /// parse; the error names the file and, where there is one, the operation.
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn declarative(mut self, file_name: &str, contents: &str) -> Result<Self> {
        let (version, name) = parse_file_name(file_name)?;
        let ops = patch::parse::parse_ops(contents).map_err(|(op, reason)| Error::StepFile {
            file: file_name.to_owned(),
            op,
            reason,
        })?;
        self.steps.push(Step {
            version,
            name,
            action: Action::Patch {
                file: file_name.to_owned(),
                ops,
            },
            checksum: Some(checksum(contents.as_bytes())),
        });
        Ok(self)
    }

    /// Declarative steps from `(file name, contents)` pairs: what
    /// [`embed_migrations!`](crate::embed_migrations) expands to.
    ///
    /// # Errors
    /// As for [`declarative`](Self::declarative).
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn embedded(files: &[(&str, &str)]) -> Result<Self> {
        files.iter().try_fold(Self::new(), |m, (name, contents)| {
            m.declarative(name, contents)
        })
    }

    /// Every `*.json` step file of a folder, read now (for tools; a game embeds its steps).
    ///
    /// # Errors
    /// [`Error::Io`] when the folder or a file cannot be read; [`Error::StepFile`] as for
    /// [`declarative`](Self::declarative).
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                names.push(name);
            }
        }
        names.sort();
        let mut migrations = Self::new();
        for name in names {
            let path = dir.join(&name);
            let contents = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            migrations = migrations.declarative(&name, &contents)?;
        }
        Ok(migrations)
    }
}

/// `0002_rename_hp.json` → `(2, "rename_hp")`.
#[cfg(feature = "json")]
pub(super) fn parse_file_name(file_name: &str) -> Result<(u32, String)> {
    let bad = |reason: &str| Error::StepFile {
        file: file_name.to_owned(),
        op: None,
        reason: reason.to_owned(),
    };
    let stem = file_name
        .strip_suffix(".json")
        .ok_or_else(|| bad("a step file's name ends in .json"))?;
    let (number, name) = stem
        .split_once('_')
        .ok_or_else(|| bad("a step file is named NNNN_name.json"))?;
    if number.len() != 4 || !number.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return Err(bad(
            "a step file is named NNNN_name.json, NNNN being four digits",
        ));
    }
    let version = number
        .parse()
        .map_err(|_| bad("the version is not a number"))?;
    Ok((version, name.to_owned()))
}

/// The checksum [`StepInfo::checksum`](crate::migrate::StepInfo::checksum) reports: 64-bit
/// FNV-1a of `bytes`, as 16 hex digits.
#[must_use]
pub fn checksum(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
