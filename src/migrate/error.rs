//! [`MigrationError`]: the leaf error of a migration step, which the crate's `Error` wraps.

use std::fmt;

/// Why a migration step failed, and where in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationError {
    /// The JSON Pointer of the place the step failed at (`/player/pos/0`), or `""` for the
    /// document as a whole.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

impl MigrationError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        MigrationError {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for MigrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "at {}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for MigrationError {}
