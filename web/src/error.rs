//! The errors of the browser layer: the manager's own, and what the browser said.

use std::fmt;

/// What went wrong in a browser save, load or listing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The manager's error (a damaged save, a wrong key, a newer schema...), as on a desktop.
    #[error(transparent)]
    Save(#[from] savegame::Error),
    /// The browser refused the write for want of space (`QuotaExceededError`): the origin's
    /// quota is used up. Nothing was written; the previous save is intact.
    #[error("the browser's storage quota is exceeded ({operation}); nothing was written")]
    QuotaExceeded {
        /// What was being done.
        operation: &'static str,
    },
    /// The storage is not there: no `window` (a worker without IndexedDB), storage disabled
    /// by the user or by private browsing, or a database that could not be opened.
    #[error("browser storage is unavailable ({operation}): {reason}")]
    Unavailable {
        /// What was being done.
        operation: &'static str,
        /// What the browser said.
        reason: String,
    },
    /// The browser failed the operation for another reason (a transaction aborted, the
    /// database closed, the tab going away). Nothing was written.
    #[error("{operation} failed in the browser: {name}: {message}")]
    Browser {
        /// What was being done.
        operation: &'static str,
        /// The `DOMException`'s name (`AbortError`, `InvalidStateError`...), or `Error`.
        name: String,
        /// Its message.
        message: String,
    },
    /// The save worker failed: it stopped (its module crashed, the browser ended it), or it
    /// answered with an error that has no typed form on the page (its message is kept here).
    /// Whether the save was committed is then unknown; the previous save is intact either way.
    #[error("the save worker failed: {reason}")]
    Worker {
        /// What the worker, or its end, said.
        reason: String,
    },
}

/// The result of this crate's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Is this the browser's quota, reached through either backend? (A localStorage save that
    /// did not fit is a [`savegame::Error::Io`] whose source is a [`QuotaExceeded`].)
    #[must_use]
    pub fn is_quota_exceeded(&self) -> bool {
        match self {
            Error::QuotaExceeded { .. } => true,
            Error::Save(e) => is_quota_exceeded(e),
            _ => false,
        }
    }
}

/// Whether a manager's error is a browser storage quota exceeded (a [`QuotaExceeded`] inside
/// an I/O error, as [`LocalStorage`](crate::LocalStorage) returns it).
#[must_use]
pub fn is_quota_exceeded(error: &savegame::Error) -> bool {
    match error {
        savegame::Error::Io { source, .. } => {
            source.kind() == std::io::ErrorKind::StorageFull
                && source
                    .get_ref()
                    .is_some_and(|inner| inner.is::<QuotaExceeded>())
        }
        _ => false,
    }
}

/// The I/O error a browser backend returns when the browser's quota refuses a write: kind
/// [`StorageFull`](std::io::ErrorKind::StorageFull), carrying this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    /// The object that did not fit.
    pub name: String,
    /// How many bytes it would have taken (the encoded size, for localStorage's strings).
    pub bytes: u64,
}

impl fmt::Display for QuotaExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the browser's storage quota is exceeded: {} ({} bytes) does not fit; \
             the previous save is untouched",
            self.name, self.bytes
        )
    }
}

impl std::error::Error for QuotaExceeded {}

impl QuotaExceeded {
    /// This as an I/O error, kind `StorageFull`.
    pub(crate) fn into_io(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::StorageFull, self)
    }
}
