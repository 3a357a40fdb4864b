//! The one error type of the crate.
//!
//! Every fallible function returns [`Result`]. Variants are structured: they say what went wrong
//! and where (a path, a slot, a memento id), so a game can show a useful message and a tool can
//! tell the kinds apart. Errors from foreign crates (serde_json, rmp-serde) are boxed, so their
//! types never become part of this crate's API.

use std::path::PathBuf;

use crate::migrate::error::MigrationError;
use crate::protection::{KeyPurpose, Protection};
use crate::slot::SlotId;

/// A boxed error from a foreign crate (a codec, usually).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while saving or loading.
///
/// The variants fall into a few families:
///
/// - **I/O:** [`Error::Io`], [`Error::TooLarge`]. Always carry the path.
/// - **Damaged file** (disk corruption, truncation, a file that is not a save):
///   [`Error::NotASave`], [`Error::ChecksumMismatch`], [`Error::Malformed`],
///   [`Error::DecompressedTooLarge`]. Loading falls back
///   to a backup copy on these; see [`Error::is_corruption`].
/// - **Refused on purpose:** [`Error::UnsupportedFormat`], [`Error::NewerSchema`],
///   [`Error::UnknownCodec`], [`Error::UnknownFlags`], [`Error::SlotMismatch`]. A newer file is
///   never overwritten.
/// - **Keys:** [`Error::KeyRequired`], [`Error::Decrypt`] (a wrong key or a tampered file; it
///   deliberately says nothing more), [`Error::Tampered`] (the same for an integrity-only file),
///   [`Error::NotEncrypted`], [`Error::ProtectionMismatch`].
/// - **Content:** [`Error::MissingMemento`], [`Error::Encode`], [`Error::Decode`],
///   [`Error::InvalidId`].
/// - **Groups and registries** ([`SaveState`](crate::SaveState)): [`Error::StateMismatch`],
///   [`Error::DuplicateId`].
/// - **Migrations:** [`Error::Migration`], [`Error::NoMigrationPath`],
///   [`Error::MigrationChain`], [`Error::StepFile`]; per memento [`Error::MementoMigration`],
///   [`Error::NoMementoMigrationPath`], [`Error::NewerMemento`].
/// - **Replays:** [`Error::NewerInputFormat`], [`Error::NoInputMigrationPath`] (refused before
///   playback starts, with [`Error::NewerSchema`] and [`Error::NoMigrationPath`] for keyframes);
///   [`Error::FrameOutOfRange`], [`Error::NoKeyframe`], [`Error::Desync`],
///   [`Error::RecordingStopped`].
/// - **Undo history:** [`Error::UndoConflict`] (besides [`Error::Rejected`] for a history used
///   in a way that makes no sense).
/// - **Cloud saves** (`savegame-cloud`): [`Error::Cloud`] (the object store failed, after its
///   retries), [`Error::ConditionIgnored`] (a store that does not keep conditional writes),
///   [`Error::ForeignSave`] (a remote save of another player). A damaged remote
///   object is refused with the same errors as a damaged local file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or folder the operation was about.
        path: PathBuf,
        /// The error the operating system gave.
        #[source]
        source: std::io::Error,
    },

    /// A file is larger than the configured size cap; it was not read.
    #[error("{} is {size} bytes, over the {limit}-byte cap", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },

    /// The slot has no save at all (no primary file and no backup).
    #[error("slot {slot} is empty")]
    SlotEmpty {
        /// The slot that was asked for.
        slot: SlotId,
    },

    /// The bytes do not start with the save-file magic: not a save, or damaged beyond
    /// recognition (for example zeroed, or mangled by a text-mode transfer).
    #[error("not a savegame file (bad magic bytes)")]
    NotASave,

    /// The CRC32 at the end of the file does not match its contents: the file was damaged on
    /// disk or in transit (not a wrong key).
    #[error(
        "checksum mismatch: the file is corrupt (stored {expected:#010x}, computed {found:#010x})"
    )]
    ChecksumMismatch {
        /// The CRC32 stored in the file.
        expected: u32,
        /// The CRC32 computed over the bytes read.
        found: u32,
    },

    /// The file's structure is inconsistent (a length that does not fit, a truncated field,
    /// trailing bytes, a bad table of contents).
    #[error("malformed save file: {reason}")]
    Malformed {
        /// What is inconsistent.
        reason: String,
    },

    /// The file was written with a newer format version than this library reads.
    #[error("save format version {found} is newer than the supported version {supported}")]
    UnsupportedFormat {
        /// The format version in the file.
        found: u16,
        /// The newest format version this library reads.
        supported: u16,
    },

    /// The save was written by a newer version of the game (a newer schema version). It is
    /// refused, and never overwritten by a save or an autosave.
    #[error("save schema version {found} is newer than this game's version {supported}")]
    NewerSchema {
        /// The schema version in the file.
        found: u32,
        /// The game's current schema version.
        supported: u32,
    },

    /// The file names a codec this library does not know.
    #[error("unknown codec id {id}")]
    UnknownCodec {
        /// The codec byte in the file.
        id: u8,
    },

    /// The file sets flag bits this library does not know.
    #[error("unknown flags {flags:#06x}")]
    UnknownFlags {
        /// The flags field of the file.
        flags: u16,
    },

    /// The file is not the kind of file that was expected (for example a replay where a save
    /// was expected).
    #[error("unexpected file kind {found} (expected {expected})")]
    WrongFileKind {
        /// The kind byte that was expected.
        expected: u8,
        /// The kind byte in the file.
        found: u8,
    },

    /// The file belongs to another slot (for example two slot files swapped on disk).
    #[error("the file belongs to slot {found}, not slot {expected}")]
    SlotMismatch {
        /// The slot that was being loaded.
        expected: SlotId,
        /// The slot recorded in the file's header.
        found: SlotId,
    },

    /// The save needs a key and none was given: it is encrypted (`purpose`
    /// [`KeyPurpose::Decrypt`]), or it is integrity-only and its tag is to be checked
    /// ([`KeyPurpose::CheckTag`]; the body is readable, and a tool may show it unchecked).
    #[error("{}", purpose.describe())]
    KeyRequired {
        /// What the key is needed for.
        purpose: KeyPurpose,
    },

    /// The manager has a key but the save is neither encrypted nor authenticated (an
    /// integrity-only file): refused, so that a player cannot replace a sealed save with a
    /// forged plain one. See
    /// [`ManagerBuilder::allow_unencrypted`](crate::ManagerBuilder::allow_unencrypted).
    #[error(
        "the save is not sealed with a key (neither encrypted nor authenticated), and this game only loads sealed saves"
    )]
    NotEncrypted,

    /// The save is sealed with a key, but not in the mode the key asks for: an integrity-only
    /// file where the game encrypts ([`ManagerBuilder::key`](crate::ManagerBuilder::key)), or
    /// an encrypted one where it authenticates
    /// ([`ManagerBuilder::integrity_only`](crate::ManagerBuilder::integrity_only)). A file is
    /// opened only with the protection its key's mode asks for, whatever its flags say (see
    /// [`Trust`](crate::format::Trust)).
    #[error("the save is {found}, and this game only loads {expected} saves")]
    ProtectionMismatch {
        /// The protection the key's mode asks for.
        expected: Protection,
        /// The protection the file's flags record.
        found: Protection,
    },

    /// The save could not be decrypted: the key is wrong or the file was tampered with.
    /// Deliberately says nothing more.
    #[error("could not decrypt")]
    Decrypt,

    /// An integrity-only save's HMAC-SHA256 tag does not match its bytes: the file was edited
    /// (and its CRC fixed, since damage is reported as [`Error::ChecksumMismatch`] first), or
    /// the key is wrong. Deliberately says nothing more.
    #[error(
        "the save was tampered with (or the key is wrong): its authentication tag does not match"
    )]
    Tampered,

    /// A compressed body records a decompressed length over the cap (the manager's
    /// [`max_file_size`](crate::ManagerBuilder::max_file_size)): refused before anything is
    /// allocated for it, so a compression bomb costs nothing.
    #[error("the compressed body would decompress to {size} bytes, over the {limit}-byte cap")]
    DecompressedTooLarge {
        /// The decompressed length the file records.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },

    /// What was asked needs the mementos read without their Rust types (a declarative
    /// migration step, a dump, a diff), and the file's codec is not self-describing
    /// (bitcode): only code that decodes the memento into its type
    /// can read it.
    #[error(
        "the {codec} codec is not self-describing: its mementos can only be read by the Rust \
         type that wrote them, not by {what}"
    )]
    NotSelfDescribing {
        /// The codec's name.
        codec: &'static str,
        /// What could not read them (for example "declarative migration steps").
        what: &'static str,
    },

    /// The file needs a feature that this build of the library leaves out.
    #[error("this build of savegame lacks the `{feature}` feature needed for this file")]
    FeatureDisabled {
        /// The Cargo feature that is missing.
        feature: &'static str,
    },

    /// The snapshot holds no memento for this originator id.
    #[error("the snapshot has no memento for id {id:?}")]
    MissingMemento {
        /// The id that was asked for.
        id: String,
    },

    /// A snapshot and a [`SaveState`](crate::SaveState) do not match, in a way the state was
    /// told to refuse: members of a group with no memento in the snapshot, or (for a
    /// [`Registry`](crate::Registry) told so) registered ids with no memento and mementos with
    /// no registered originator. Raised before anything is restored. The two lists tell the
    /// cases apart; either may be empty.
    #[error(
        "the save does not match the game: {} with no memento in the save {:?}, {} in the save \
         with no originator {:?}",
        not_in_save.len(), not_in_save, not_in_game.len(), not_in_game
    )]
    StateMismatch {
        /// Ids of the game's originators that the snapshot has no memento for.
        not_in_save: Vec<String>,
        /// Ids of mementos in the snapshot that no originator of the game takes.
        not_in_game: Vec<String>,
    },

    /// An id was registered twice in a [`Registry`](crate::Registry).
    #[error("the id {id:?} is already registered")]
    DuplicateId {
        /// The id.
        id: String,
    },

    /// An originator id is unusable (empty, or too long).
    #[error("invalid memento id {id:?}: {reason}")]
    InvalidId {
        /// The id.
        id: String,
        /// Why it is refused.
        reason: &'static str,
    },

    /// A memento could not be encoded.
    #[error("could not encode memento {id:?}: {source}")]
    Encode {
        /// The originator id.
        id: String,
        /// The codec's error.
        #[source]
        source: BoxError,
    },

    /// A memento could not be decoded (its bytes do not match the memento type, or they break a
    /// decode limit such as the nesting depth).
    #[error("could not decode memento {id:?}: {source}")]
    Decode {
        /// The originator id.
        id: String,
        /// The codec's error.
        #[source]
        source: BoxError,
    },

    /// An originator refused a memento in `restore_memento` (see [`Error::rejected`]).
    #[error("memento rejected: {reason}")]
    Rejected {
        /// The originator's reason.
        reason: String,
    },

    /// A migration step failed. Loading stops; nothing on disk changes.
    #[error("migration step {step:?} (to schema version {version}) failed {source}")]
    Migration {
        /// The step's name.
        step: String,
        /// The schema version the step produces.
        version: u32,
        /// Where in the document it failed, and why.
        #[source]
        source: MigrationError,
    },

    /// A per-memento migration step ([`Migrations::memento_step`](crate::Migrations::memento_step))
    /// failed. Loading stops; nothing on disk changes.
    #[error("migration of memento {id:?} from version {from} to {to} failed {source}")]
    MementoMigration {
        /// The memento's id.
        id: String,
        /// The memento version the step starts from.
        from: u32,
        /// The memento version the step produces.
        to: u32,
        /// Where in the memento it failed, and why.
        #[source]
        source: MigrationError,
    },

    /// A memento is at an older version than its originator reads, and no chain of
    /// per-memento steps leads from it to the originator's.
    #[error("no migration path for memento {id:?} from version {from} to {to}")]
    NoMementoMigrationPath {
        /// The memento's id.
        id: String,
        /// The memento's version in the save.
        from: u32,
        /// The version its originator reads.
        to: u32,
    },

    /// A memento was written at a newer version than this game reads (by a newer game, mod or
    /// DLC): refused, on load when it is past the end of its steps, and on restore when it is
    /// past its originator's [`memento_version`](crate::Originator::memento_version).
    #[error("memento {id:?} is at version {found}, newer than this game's version {supported}")]
    NewerMemento {
        /// The memento's id.
        id: String,
        /// The memento's version in the save.
        found: u32,
        /// The newest version this game reads.
        supported: u32,
    },

    /// The save is older than the game, and no chain of steps leads from its version to the
    /// game's.
    #[error("no migration path from schema version {from} to {to}")]
    NoMigrationPath {
        /// The save's schema version.
        from: u32,
        /// The game's schema version.
        to: u32,
    },

    /// The migration steps do not form a chain to the game's version (a gap, a duplicate, a
    /// step past the current version). Reported when the manager is built.
    #[error("migration chain: {reason}")]
    MigrationChain {
        /// What is wrong.
        reason: String,
    },

    /// A declarative step file is malformed.
    #[error("step file {file}{}: {reason}", op.map(|i| format!(", op {i}")).unwrap_or_default())]
    StepFile {
        /// The file's name.
        file: String,
        /// The index (from 0) of the operation at fault, when one is.
        op: Option<usize>,
        /// What is wrong.
        reason: String,
    },

    /// An incremental save needs a full save of the slot first: its base is damaged, or at an
    /// older schema version (the save was migrated on load).
    #[error("slot {slot} needs a full save before an incremental one: {reason}")]
    FullSaveNeeded {
        /// The slot.
        slot: SlotId,
        /// Why.
        reason: String,
    },

    /// A newer background save to the same slot replaced this one before it started; the
    /// newer save's handle has the outcome.
    #[error("superseded by a newer save to the same slot")]
    Superseded,

    /// Code run by a background save (a memento's `Serialize`, usually) panicked. The previous
    /// save is intact.
    #[error("a background save panicked: {message}")]
    BackgroundPanic {
        /// The panic's message.
        message: String,
    },

    /// A replay's inputs were recorded in a newer input format than the game reads. Refused
    /// when the replay is opened, before playback starts.
    #[error(
        "the replay's input format version {found} is newer than this game's version {supported}"
    )]
    NewerInputFormat {
        /// The input format version in the replay.
        found: u32,
        /// The game's input format version.
        supported: u32,
    },

    /// A replay's inputs are in an older input format, and no chain of input migrations leads
    /// from it to the game's. Refused when the replay is opened, before playback starts.
    #[error("no input migration path from input format version {from} to {to}")]
    NoInputMigrationPath {
        /// The replay's input format version.
        from: u32,
        /// The game's input format version.
        to: u32,
    },

    /// A replay was asked for a frame it does not hold.
    #[error("frame {frame} is past the end of the replay ({frames} frames)")]
    FrameOutOfRange {
        /// The frame asked for.
        frame: u64,
        /// How many frames the replay holds (those that can be played, for a replay cut short).
        frames: u64,
    },

    /// A replay has no keyframe at or before the frame a seek asked for.
    #[error("the replay has no keyframe at or before frame {frame}")]
    NoKeyframe {
        /// The frame the seek asked for.
        frame: u64,
    },

    /// During replay playback, the game's state hash after a frame differs from the one
    /// recorded: the game is not deterministic, or not the same game. Returned only when the
    /// player is told to stop on a desync; otherwise the mismatch is reported and playback
    /// goes on.
    #[error(
        "desync at frame {frame}: the state hash is {found:#018x}, the recording says {expected:#018x} (last keyframe before it: {})",
        keyframe.map_or_else(|| "none".to_owned(), |k| format!("frame {k}"))
    )]
    Desync {
        /// The frame after which the hashes differ.
        frame: u64,
        /// The nearest keyframe at or before that frame: seek there and step to `frame` to
        /// reproduce the desync.
        keyframe: Option<u64>,
        /// The hash the recording holds.
        expected: u64,
        /// The hash the game computed.
        found: u64,
    },

    /// A replay recorder stopped after an earlier error (a failed write, say): the chunks
    /// written before it still play, and nothing more is written.
    #[error("the recording stopped after an earlier error: {reason}")]
    RecordingStopped {
        /// The earlier error.
        reason: String,
    },

    /// An undo or redo of a property-diff edit ([`History::diff_edit`](crate::History::diff_edit))
    /// found that a path it recorded was changed since by something the history did not record,
    /// and the history's [`OnConflict`](crate::history::OnConflict) rule does not settle it.
    /// Nothing was changed; the history is where it was.
    #[error(
        "cannot {} {entry:?}: {path:?}{} changed since the edit was recorded",
        if *redo { "redo" } else { "undo" },
        target.as_ref().map(|t| format!(" of {t:?}")).unwrap_or_default()
    )]
    UndoConflict {
        /// The name of the history entry.
        entry: String,
        /// The id of the target, in a history of several targets.
        target: Option<String>,
        /// The RFC 6901 pointer of the path in the target's memento.
        path: String,
        /// A redo (rather than an undo) found it.
        redo: bool,
    },

    /// The manager or a storage was configured wrongly.
    #[error("configuration error: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },

    /// The object store of a cloud sync failed on `object` (no network, a timeout, a server
    /// error that outlasted the retries, an upload cut off). Nothing local was changed by the
    /// step that failed; a later sync takes it up again.
    #[error("cloud sync: {action} {object} failed: {source}")]
    Cloud {
        /// What the sync was doing ("upload", "download", "list", ...).
        action: &'static str,
        /// The object's path in the store (or the prefix, for a listing).
        object: String,
        /// The object store's error, boxed.
        source: BoxError,
    },

    /// The object store of a cloud sync ignores a condition of the conditional writes that
    /// keep two devices from overwriting each other unseen: the sync's probe of the store (run
    /// once per store and prefix, before the sync first trusts it) saw a write go through that
    /// the condition should have refused. Nothing was synced.
    #[error(
        "the object store {store} ignores {condition} (under {prefix:?}): a sync through it could \
         overwrite another device's save unseen, so nothing was synced"
    )]
    ConditionIgnored {
        /// The store, as it names itself (for S3: its bucket).
        store: String,
        /// The sync's prefix in it.
        prefix: String,
        /// The condition it let through.
        condition: WriteCondition,
    },

    /// A remote save names another owner (the `savegame.owner` user field the cloud sync
    /// stamps on saves) than this sync's prefix: a file copied from another player's folder.
    /// It is refused and never replaces a local save.
    #[error("the remote save belongs to {found:?}, not to {expected:?}")]
    ForeignSave {
        /// The owner this sync expects (its prefix).
        expected: String,
        /// The owner the file names.
        found: String,
    },

    /// Every copy of a slot (the primary file and each backup) is damaged.
    #[error(
        "slot {slot}: every copy is damaged ({copies} tried); the primary failed with: {primary}"
    )]
    AllCopiesDamaged {
        /// The slot.
        slot: SlotId,
        /// How many files were tried.
        copies: usize,
        /// Why the primary file failed.
        primary: Box<Error>,
    },
}

impl Error {
    /// Is this a sign of a damaged file (corruption, truncation, garbage)? Loading falls back to
    /// a backup on these, and only on these: a wrong key or a newer save is never "repaired" by
    /// silently loading an older copy.
    #[must_use]
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::NotASave
                | Error::ChecksumMismatch { .. }
                | Error::Malformed { .. }
                | Error::TooLarge { .. }
                | Error::DecompressedTooLarge { .. }
                | Error::AllCopiesDamaged { .. }
        )
    }

    /// The error an [`Originator`](crate::Originator) returns from `restore_memento` when a
    /// memento is unacceptable (a value out of range, a reference to nothing).
    #[must_use]
    pub fn rejected(reason: impl Into<String>) -> Self {
        Error::Rejected {
            reason: reason.into(),
        }
    }

    /// [`Error::Io`] about `path`: for code beside the manager (a sync, a storage's caller)
    /// that reports an operating-system error as the crate does.
    #[must_use]
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// [`Error::Malformed`] saying `reason`: for code beside the manager that reads files of
    /// its own (a sync's record) and reports their damage as the crate does.
    #[must_use]
    pub fn malformed(reason: impl Into<String>) -> Self {
        Error::Malformed {
            reason: reason.into(),
        }
    }
}

/// A condition of the conditional writes a cloud sync rests on (`savegame-cloud`), named by
/// [`Error::ConditionIgnored`] when a store lets a write through that it should refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteCondition {
    /// `If-None-Match: *`: a create over an existing object is refused.
    CreateIfAbsent,
    /// `If-Match`: a replace that names a stale ETag (or version) is refused.
    ReplaceIfMatch,
}

impl std::fmt::Display for WriteCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WriteCondition::CreateIfAbsent => {
                "If-None-Match: * (it let a create over an existing object through)"
            }
            WriteCondition::ReplaceIfMatch => {
                "If-Match (it let a replace naming a stale ETag through)"
            }
        })
    }
}
