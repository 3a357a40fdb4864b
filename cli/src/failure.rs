//! What a command that fails prints (one line) and exits with.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use savegame::{Error, KeyPurpose};

/// The tool's exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Everything is fine.
    Ok = 0,
    /// A file is bad: damaged, wrong key, newer, a failed step, an I/O error.
    Bad = 1,
    /// The command line is wrong, or a needed key is missing or is not a key. (For `diff`,
    /// whose 1 says that the saves differ as diff(1)'s does, any failure: see
    /// [`Failure::in_diff`].)
    Usage = 2,
}

impl Exit {
    /// The exit code of a run that had both results: a bad file outweighs a missing key,
    /// which outweighs success.
    #[must_use]
    pub fn combine(self, other: Exit) -> Exit {
        if self == Exit::Bad || other == Exit::Bad {
            Exit::Bad
        } else {
            self.max(other)
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// A failed command: its exit code and the one line that says what is wrong, and with what.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: Exit,
    /// One line: `<path>: <what is wrong> [<error kind>]`.
    pub message: String,
}

impl Failure {
    /// A library error about `path`: the line names the path, the error and its kind.
    pub fn file(path: &Path, err: &Error) -> Self {
        Failure {
            code: exit_code(err),
            message: format!("{}: {}", shown(path), describe(path, err)),
        }
    }

    /// A storage's I/O error on `path`, as the library would report it.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        let err = Error::Io {
            path: path.to_path_buf(),
            source: err,
        };
        Self::file(path, &err)
    }

    /// A problem found by the tool itself about `path` (`kind` names it, like an error kind).
    pub fn bad(path: &Path, what: impl fmt::Display, kind: &str) -> Self {
        Failure {
            code: Exit::Bad,
            message: format!("{}: {} [{kind}]", shown(path), one_line(&what.to_string())),
        }
    }

    /// A usage problem about `path` (a key file, say).
    pub fn usage(path: &Path, what: impl fmt::Display, kind: &str) -> Self {
        Failure {
            code: Exit::Usage,
            message: format!("{}: {} [{kind}]", shown(path), one_line(&what.to_string())),
        }
    }

    /// A usage problem not tied to a file.
    pub fn usage_plain(what: impl fmt::Display, kind: &str) -> Self {
        Failure {
            code: Exit::Usage,
            message: format!("{} [{kind}]", one_line(&what.to_string())),
        }
    }

    /// This failure as `diff` reports it: exit code 2, diff(1)'s "trouble", whatever the
    /// cause, since `diff`'s exit code 1 means that the saves differ.
    #[must_use]
    pub fn in_diff(self) -> Self {
        Failure {
            code: Exit::Usage,
            ..self
        }
    }

    /// Writing to stdout failed (a closed pipe, a full disk).
    pub fn stdout(err: &std::io::Error) -> Self {
        Failure {
            code: Exit::Bad,
            message: format!("stdout: {err} [Io]"),
        }
    }
}

/// What the tool says about a file that needs a key when none was given: what the key is
/// for (to decrypt it, or to check an integrity-only file's tag), and where to give one.
pub fn no_key(purpose: KeyPurpose) -> String {
    format!("{} (use --key-file or SAVEGAME_KEY)", purpose.describe())
}

/// The exit code for a library error: 2 when the user must supply a key, 1 otherwise.
pub fn exit_code(err: &Error) -> Exit {
    match err {
        Error::KeyRequired { .. } => Exit::Usage,
        _ => Exit::Bad,
    }
}

/// `<message> [<Kind>]` for a library error about `path`, on one line. An I/O error about
/// `path` itself does not repeat the path.
pub fn describe(path: &Path, err: &Error) -> String {
    let message = match err {
        Error::Io { path: p, source } if p == path => format!("I/O error: {source}"),
        Error::KeyRequired { purpose } => no_key(*purpose),
        _ => err.to_string(),
    };
    format!("{} [{}]", one_line(&message), kind(err))
}

/// The name of the error's variant: the typed kind a script can match on.
pub fn kind(err: &Error) -> Cow<'static, str> {
    Cow::Borrowed(match err {
        Error::Io { .. } => "Io",
        Error::TooLarge { .. } => "TooLarge",
        Error::SlotEmpty { .. } => "SlotEmpty",
        Error::NotASave => "NotASave",
        Error::ChecksumMismatch { .. } => "ChecksumMismatch",
        Error::Malformed { .. } => "Malformed",
        Error::UnsupportedFormat { .. } => "UnsupportedFormat",
        Error::NewerSchema { .. } => "NewerSchema",
        Error::UnknownCodec { .. } => "UnknownCodec",
        Error::UnknownFlags { .. } => "UnknownFlags",
        Error::WrongFileKind { .. } => "WrongFileKind",
        Error::SlotMismatch { .. } => "SlotMismatch",
        Error::KeyRequired { .. } => "KeyRequired",
        Error::NotEncrypted => "NotEncrypted",
        Error::ProtectionMismatch { .. } => "ProtectionMismatch",
        Error::Decrypt => "Decrypt",
        Error::FeatureDisabled { .. } => "FeatureDisabled",
        Error::MissingMemento { .. } => "MissingMemento",
        Error::InvalidId { .. } => "InvalidId",
        Error::Encode { .. } => "Encode",
        Error::Decode { .. } => "Decode",
        Error::Rejected { .. } => "Rejected",
        Error::Migration { .. } => "Migration",
        Error::NoMigrationPath { .. } => "NoMigrationPath",
        Error::MigrationChain { .. } => "MigrationChain",
        Error::StepFile { .. } => "StepFile",
        Error::FullSaveNeeded { .. } => "FullSaveNeeded",
        Error::Superseded => "Superseded",
        Error::BackgroundPanic { .. } => "BackgroundPanic",
        Error::Config { .. } => "Config",
        Error::AllCopiesDamaged { .. } => "AllCopiesDamaged",
        // A variant newer than this list: its name as Debug writes it.
        other => return debug_name(other),
    })
}

/// The variant name at the start of a value's derived `Debug` text (`NewKind { .. }`).
fn debug_name(err: &Error) -> Cow<'static, str> {
    let name: String = format!("{err:?}")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    if name.is_empty() {
        Cow::Borrowed("Error")
    } else {
        Cow::Owned(name)
    }
}

/// A path as shown in messages.
pub fn shown(path: &Path) -> String {
    crate::text::printable(&path.display().to_string())
}

/// Text from a file or an error, made safe for one terminal line: control characters
/// (newlines, escape sequences) are escaped.
pub fn one_line(s: &str) -> String {
    crate::text::printable(s)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn io_errors_about_the_file_do_not_repeat_its_path() {
        let path = PathBuf::from("saves/slot-001.sav");
        let err = Error::Io {
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        let f = Failure::file(&path, &err);
        assert_eq!(f.message, "saves/slot-001.sav: I/O error: gone [Io]");
        assert_eq!(f.code, Exit::Bad);
    }

    #[test]
    fn a_missing_key_is_a_usage_error_and_the_rest_are_bad_files() {
        let path = PathBuf::from("a.sav");
        assert_eq!(
            Failure::file(
                &path,
                &Error::KeyRequired {
                    purpose: KeyPurpose::Decrypt
                }
            )
            .code,
            Exit::Usage
        );
        let f = Failure::file(
            &path,
            &Error::ChecksumMismatch {
                expected: 1,
                found: 2,
            },
        );
        assert_eq!(f.code, Exit::Bad);
        assert!(
            f.message.starts_with("a.sav: checksum mismatch"),
            "{}",
            f.message
        );
        assert!(f.message.ends_with("[ChecksumMismatch]"), "{}", f.message);
    }

    #[test]
    fn diff_reports_every_failure_as_trouble() {
        let f = Failure::file(Path::new("a.sav"), &Error::Decrypt).in_diff();
        assert_eq!(f.code, Exit::Usage);
        assert!(f.message.ends_with("[Decrypt]"), "{}", f.message);
    }

    #[test]
    fn a_bad_file_outweighs_a_missing_key() {
        assert_eq!(Exit::Usage.combine(Exit::Bad), Exit::Bad);
        assert_eq!(Exit::Ok.combine(Exit::Usage), Exit::Usage);
        assert_eq!(Exit::Ok.combine(Exit::Ok), Exit::Ok);
    }

    #[test]
    fn every_kind_is_named_even_one_newer_than_the_list() {
        assert_eq!(kind(&Error::Superseded), "Superseded");
        assert_eq!(kind(&Error::Decrypt), "Decrypt");
        assert_eq!(debug_name(&Error::NotASave), "NotASave");
        let io = Error::Io {
            path: "x".into(),
            source: std::io::Error::other("boom"),
        };
        assert_eq!(debug_name(&io), "Io");
    }

    #[test]
    fn messages_stay_on_one_line() {
        let f = Failure::bad(Path::new("x\ny.sav"), "a\nb\u{1b}[31m", "Test");
        assert!(!f.message.contains('\n'), "{}", f.message);
        assert!(!f.message.contains('\u{1b}'), "{}", f.message);
    }
}
