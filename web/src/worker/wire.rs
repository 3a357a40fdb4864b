//! What the page and the save worker say to each other. Each message is a JS object of two
//! fields: `head`, a JSON string of the small parts ([`Request`], [`Reply`]), and `pieces`,
//! an array of `ArrayBuffer`s (the mementos' bytes, transferred, not copied), beside a
//! `thumbnail` (a `Uint8Array`, or `null`).
//!
//! Errors cross as [`WireError`]: every error a save can end with, typed on both sides (the
//! browser's, the quota's, and the manager's that a save returns); any other arrives as
//! [`Error::Worker`] with its message.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use savegame::{SaveReport, SlotId};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// What the page asks of the worker.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Request {
    /// Save the snapshot whose mementos are the message's pieces.
    Save(SaveRequest),
    /// Close the worker's connection to `db` (the page closed its own).
    Close { db: String },
}

/// A save: where, and everything of the snapshot but the mementos' bytes (the pieces, in
/// the order of `ids`) and the thumbnail.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SaveRequest {
    pub(crate) id: u32,
    pub(crate) db: String,
    /// The slot's file name, or `None` for an autosave (the worker picks the slot).
    pub(crate) slot: Option<String>,
    /// How the page's manager is built, to check the worker's against it.
    pub(crate) settings: Settings,
    pub(crate) codec: u8,
    pub(crate) label: String,
    pub(crate) playtime_ms: u64,
    pub(crate) app_version: String,
    pub(crate) user: BTreeMap<String, String>,
    pub(crate) ids: Vec<String>,
    /// The memento version of each of `ids`.
    pub(crate) versions: Vec<u32>,
    pub(crate) deleted: Vec<String>,
}

/// What must be the same in the page's manager and the worker's, or the worker's save would
/// not be the save the page asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Settings {
    pub(crate) schema_version: u32,
    pub(crate) keyed: bool,
    pub(crate) integrity_only: bool,
}

impl Settings {
    pub(crate) fn of(manager: &savegame::SaveLoadManager) -> Self {
        let profile = manager.profile();
        Settings {
            schema_version: manager.schema_version(),
            keyed: profile.key().is_some(),
            integrity_only: profile.is_integrity_only(),
        }
    }
}

/// The worker's answer to save `id`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Reply {
    pub(crate) id: u32,
    pub(crate) result: Result<Report, WireError>,
}

/// A [`SaveReport`], as it crosses.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    slot: String,
    path: String,
    bytes: u64,
    generation: u64,
    saved_secs: u64,
    saved_nanos: u32,
}

impl From<&SaveReport> for Report {
    fn from(r: &SaveReport) -> Self {
        let since = r.saved_at.duration_since(UNIX_EPOCH).unwrap_or_default();
        Report {
            slot: r.slot.file_name(),
            path: r.path.to_string_lossy().into_owned(),
            bytes: r.bytes,
            generation: r.generation,
            saved_secs: since.as_secs(),
            saved_nanos: since.subsec_nanos(),
        }
    }
}

impl Report {
    pub(crate) fn into_report(self) -> Result<SaveReport, Error> {
        let slot = SlotId::from_file_name(&self.slot).ok_or_else(|| Error::Worker {
            reason: format!("the worker saved to {:?}, which names no slot", self.slot),
        })?;
        let saved_at = UNIX_EPOCH + Duration::new(self.saved_secs, self.saved_nanos);
        Ok(SaveReport::new(
            slot,
            PathBuf::from(self.path),
            self.bytes,
            self.generation,
            saved_at,
        ))
    }
}

/// An error, as it crosses.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireError {
    Quota {
        operation: String,
    },
    Unavailable {
        operation: String,
        reason: String,
    },
    Browser {
        operation: String,
        name: String,
        message: String,
    },
    Io {
        path: String,
        kind: String,
        message: String,
    },
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
    },
    NewerSchema {
        found: u32,
        supported: u32,
    },
    UnsupportedFormat {
        found: u16,
        supported: u16,
    },
    InvalidId {
        id: String,
        reason: String,
    },
    Config {
        reason: String,
    },
    Malformed {
        reason: String,
    },
    Worker {
        reason: String,
    },
}

/// The operations this crate names, so that one crossing keeps its `&'static str`.
const OPERATIONS: [&str; 5] = [
    "saving",
    "reading a save",
    "reading the load menu",
    "opening IndexedDB",
    "starting the save worker",
];

fn operation(name: &str) -> &'static str {
    OPERATIONS
        .into_iter()
        .find(|op| *op == name)
        .unwrap_or("saving, in the save worker")
}

/// The I/O error kinds a storage returns, by name.
const KINDS: [std::io::ErrorKind; 9] = [
    std::io::ErrorKind::NotFound,
    std::io::ErrorKind::PermissionDenied,
    std::io::ErrorKind::InvalidData,
    std::io::ErrorKind::InvalidInput,
    std::io::ErrorKind::StorageFull,
    std::io::ErrorKind::FileTooLarge,
    std::io::ErrorKind::Unsupported,
    std::io::ErrorKind::Interrupted,
    std::io::ErrorKind::Other,
];

fn kind(name: &str) -> std::io::ErrorKind {
    KINDS
        .into_iter()
        .find(|k| format!("{k:?}") == name)
        .unwrap_or(std::io::ErrorKind::Other)
}

/// The reasons [`savegame::Error::InvalidId`] gives, so that one crossing keeps its
/// `&'static str`.
fn id_reason(reason: &str) -> &'static str {
    ["ids must not be empty", "ids are at most 1024 bytes"]
        .into_iter()
        .find(|r| *r == reason)
        .unwrap_or("refused")
}

impl From<&Error> for WireError {
    fn from(e: &Error) -> Self {
        match e {
            Error::QuotaExceeded { operation } => WireError::Quota {
                operation: (*operation).into(),
            },
            Error::Unavailable { operation, reason } => WireError::Unavailable {
                operation: (*operation).into(),
                reason: reason.clone(),
            },
            Error::Browser {
                operation,
                name,
                message,
            } => WireError::Browser {
                operation: (*operation).into(),
                name: name.clone(),
                message: message.clone(),
            },
            Error::Worker { reason } => WireError::Worker {
                reason: reason.clone(),
            },
            Error::Save(e) => save_error(e),
        }
    }
}

fn save_error(e: &savegame::Error) -> WireError {
    use savegame::Error as S;
    match e {
        S::Io { path, source } => WireError::Io {
            path: path.to_string_lossy().into_owned(),
            kind: format!("{:?}", source.kind()),
            message: source.to_string(),
        },
        S::TooLarge { path, size, limit } => WireError::TooLarge {
            path: path.to_string_lossy().into_owned(),
            size: *size,
            limit: *limit,
        },
        S::NewerSchema { found, supported } => WireError::NewerSchema {
            found: *found,
            supported: *supported,
        },
        S::UnsupportedFormat { found, supported } => WireError::UnsupportedFormat {
            found: *found,
            supported: *supported,
        },
        S::InvalidId { id, reason } => WireError::InvalidId {
            id: id.clone(),
            reason: (*reason).into(),
        },
        S::Config { reason } => WireError::Config {
            reason: reason.clone(),
        },
        S::Malformed { reason } => WireError::Malformed {
            reason: reason.clone(),
        },
        other => WireError::Worker {
            reason: other.to_string(),
        },
    }
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Self {
        use savegame::Error as S;
        match e {
            WireError::Quota { operation: op } => Error::QuotaExceeded {
                operation: operation(&op),
            },
            WireError::Unavailable {
                operation: op,
                reason,
            } => Error::Unavailable {
                operation: operation(&op),
                reason,
            },
            WireError::Browser {
                operation: op,
                name,
                message,
            } => Error::Browser {
                operation: operation(&op),
                name,
                message,
            },
            WireError::Io {
                path,
                kind: k,
                message,
            } => Error::Save(S::io(path, std::io::Error::new(kind(&k), message))),
            WireError::TooLarge { path, size, limit } => Error::Save(S::TooLarge {
                path: path.into(),
                size,
                limit,
            }),
            WireError::NewerSchema { found, supported } => {
                Error::Save(S::NewerSchema { found, supported })
            }
            WireError::UnsupportedFormat { found, supported } => {
                Error::Save(S::UnsupportedFormat { found, supported })
            }
            WireError::InvalidId { id, reason } => Error::Save(S::InvalidId {
                id,
                reason: id_reason(&reason),
            }),
            WireError::Config { reason } => Error::Save(S::Config { reason }),
            WireError::Malformed { reason } => Error::Save(S::malformed(reason)),
            WireError::Worker { reason } => Error::Worker { reason },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(e: Error) -> Error {
        let json = serde_json::to_string(&WireError::from(&e)).unwrap();
        Error::from(serde_json::from_str::<WireError>(&json).unwrap())
    }

    #[test]
    fn the_errors_a_save_ends_with_cross_typed() {
        let quota = round_trip(Error::QuotaExceeded {
            operation: "saving",
        });
        assert!(matches!(
            quota,
            Error::QuotaExceeded {
                operation: "saving"
            }
        ));
        assert!(quota.is_quota_exceeded());
        let newer = round_trip(Error::Save(savegame::Error::NewerSchema {
            found: 4,
            supported: 3,
        }));
        assert!(matches!(
            newer,
            Error::Save(savegame::Error::NewerSchema {
                found: 4,
                supported: 3
            })
        ));
        let io = round_trip(Error::Save(savegame::Error::io(
            "slot-001.sav",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "full"),
        )));
        let Error::Save(savegame::Error::Io { path, source }) = io else {
            panic!("{io:?}");
        };
        assert_eq!(
            (path, source.kind()),
            ("slot-001.sav".into(), std::io::ErrorKind::StorageFull)
        );
        let browser = round_trip(Error::Browser {
            operation: "saving",
            name: "InvalidStateError".into(),
            message: "closed".into(),
        });
        assert!(
            matches!(browser, Error::Browser { ref name, .. } if name == "InvalidStateError"),
            "{browser:?}"
        );
    }

    #[test]
    fn any_other_error_keeps_its_message() {
        let e = round_trip(Error::Save(savegame::Error::Decrypt));
        assert!(matches!(e, Error::Worker { ref reason } if reason == "could not decrypt"));
    }

    #[test]
    fn a_report_crosses_to_the_nanosecond() {
        let at = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let report = SaveReport::new(SlotId::Autosave(2), "autosave-2.sav".into(), 10, 7, at);
        let back = Report::from(&report).into_report().unwrap();
        assert_eq!(back, report);
    }
}
