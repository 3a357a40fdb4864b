//! Save and load game state: memento snapshots, sealed slot files, crash-safe storage.
//!
//! # Which type do I want?
//!
//! | you want to | use |
//! |---|---|
//! | make a game object saveable | `#[derive(Originator)]` (a memento struct is generated), or implement [`Originator`] by hand |
//! | save and load a whole game (player, world, quests) in one call | `#[derive(SaveState)]` on the struct of originators, then [`SaveLoadManager::save_state`] / [`load_state`](SaveLoadManager::load_state) |
//! | save objects that are spawned and destroyed at run time | a [`Registry`] of them, by id; it reports ids the save and the game do not share ([`RestoreReport`]) |
//! | save only what changed, without marking anything dirty | [`SaveLoadManager::save_state_incremental`] |
//! | collect the state of many objects into one save by hand | [`Snapshot`]: [`capture`](Snapshot::capture) each, [`restore`](Snapshot::restore) each |
//! | save to numbered slots, load them, show a load menu | [`SaveLoadManager`], built with [`SaveLoadManager::builder`] |
//! | name a slot | [`SlotId`] |
//! | show a load menu | [`SaveLoadManager::list`] → [`SlotInfo`] |
//! | save without stalling a frame | [`SaveLoadManager::save_in_background`] → [`SaveHandle`] |
//! | save only what changed in a big world | [`SaveLoadManager::save_incremental`], [`Snapshot::mark_deleted`] |
//! | autosave and quicksave | [`SaveLoadManager::autosave_in_background`], [`SlotId::Quicksave`] |
//! | keep settings and profiles by key, outside the slots | [`SaveLoadManager::store`] → [`Store`] |
//! | encrypt saves | a [`Key`] on the builder (feature `encryption`) |
//! | keep saves readable but refuse edited ones | [`ManagerBuilder::integrity_only`] with a [`Key`] (feature `integrity`) |
//! | change one originator's memento without bumping the whole save | [`Originator::memento_version`] and [`Migrations::memento_step`] |
//! | pick JSON, MessagePack or bitcode | [`Codec`] |
//! | make save files smaller | [`ManagerBuilder::compression`] with a [`Compression`] (features `lz4`, `zstd`) |
//! | load saves from older versions of the game | [`Migrations`] on the builder, steps in Rust or in `migrations/*.json` ([`migrate`], [`embed_migrations!`]) |
//! | keep saves somewhere other than files | implement [`storage::Storage`] |
//! | test your game's saving against crashes and full disks | `storage::SimFs` (feature `testing`) under [`storage::FsStorage`] |
//! | record a match, play it back at any speed, seek, catch desyncs | [`Recorder`] and [`replay::Player`], your game as [`replay::Replayable`] ([`replay`]) |
//! | keep the same slots on every device, with conflicts caught and disjoint changes merged | `savegame_cloud::CloudSync` over an object store (the `savegame-cloud` crate), or a sync of the game's own on the manager's seam ([`FileStamp`], [`SaveLoadManager::replace_if_unchanged`]) |
//! | fail your tests when a memento type changes shape without a new version and a step | `schema::Guard` in your tests (feature `schema`, in dev-dependencies) |
//! | let players undo and redo in an editor, and keep the history in a save | [`History`]: memento edits or [`history::Command`]s, groups, limits, a saved marker ([`history`]); [`Undoable`] when the history owns the originator, for one encoding per edit |
//!
//! ```
//! use savegame::{Codec, Originator, SaveLoadManager, SlotId};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Default, PartialEq)]
//! struct Player { health: u32, x: f32, y: f32 }
//!
//! #[derive(Serialize, Deserialize)]
//! struct PlayerMemento { health: u32, pos: (f32, f32) }
//!
//! impl Originator for Player {
//!     type Memento = PlayerMemento;
//!     fn create_memento(&self) -> PlayerMemento {
//!         PlayerMemento { health: self.health, pos: (self.x, self.y) }
//!     }
//!     fn restore_memento(&mut self, m: PlayerMemento) -> savegame::Result<()> {
//!         (self.health, self.x, self.y) = (m.health, m.pos.0, m.pos.1);
//!         Ok(())
//!     }
//! }
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let manager = SaveLoadManager::builder()
//!     .directory(dir.path()) // or .app("com", "Studio", "Game") for the platform's data folder
//!     .codec(Codec::MessagePack)
//!     .build()?;
//!
//! let player = Player { health: 80, x: 1.5, y: -2.0 };
//! let mut snapshot = manager.snapshot().with_label("Level 3");
//! snapshot.capture("player", &player)?;
//! manager.save(SlotId::Numbered(3), &snapshot)?;
//!
//! let loaded = manager.load(SlotId::Numbered(3))?;
//! let mut restored = Player::default();
//! loaded.snapshot.restore("player", &mut restored)?;
//! assert_eq!(restored, player);
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `json` | yes | [`Codec::Json`] (serde_json) |
//! | `msgpack` | yes | [`Codec::MessagePack`] (rmp-serde) |
//! | `encryption` | yes | AES-256-GCM sealing with a [`Key`], and [`Key::generate`] (aes-gcm, getrandom) |
//! | `integrity` | yes | integrity-only saves: readable bodies with an HMAC-SHA256 tag under a [`Key`] (hmac, sha2) |
//! | `lz4` | no | [`Compression::Lz4`]: LZ4 bodies before sealing (lz4_flex, pure Rust: builds for the web) |
//! | `zstd` | no | [`Compression::Zstd`]: Zstandard bodies before sealing, level configurable (zstd, a C library) |
//! | `bitcode` | no | [`Codec::Bitcode`] (bitcode, serde): the smallest and fastest; not self-describing, so migration steps and dumps refuse it ([`Error::NotSelfDescribing`]) |
//! | `testing` | no | `storage::SimFs` and its faults and crash images, for crash-testing a game's saving |
//! | `schema` | no | `schema`: the schema guard for a game's tests: each memento type's serde shape traced, compared with the committed one per codec, fixtures of every version (serde-reflection, serde_json, rmp-serde) |
//!
//! Features are additive: [`Key`] and every method that takes one exist in every build, so code
//! that compiles with a feature compiles without it. A build without `encryption` refuses at
//! run time what needs the cipher, with [`Error::FeatureDisabled`] (see [`crypto`]); one
//! without `integrity`, what needs the HMAC.
//!
//! # Design
//!
//! - **Mementos are opaque.** An [`Originator`] chooses its memento type; a [`Snapshot`]
//!   encodes it on capture and stores bytes. Restoring one originator decodes only its memento.
//!   A loaded snapshot's mementos are ranges of the file's buffer: nothing is copied.
//! - **One file per save.** A header (readable without the key), metadata for the load menu,
//!   the body (encrypted, authenticated or plain), a CRC32. The byte layout (format version 3;
//!   files of versions 1 and 2 load forever) is in `docs/format.md` and at the top of the
//!   `format` module. On the file system, a save (of a snapshot, or `save_state`), plain or
//!   encrypted, uncompressed or Zstandard, is written as it is encoded, a 256 KiB segment at a
//!   time, so it never holds its whole file in memory.
//! - **Two kinds of version.** A save's schema version covers its whole document; each memento
//!   also has a version of its own ([`Originator::memento_version`]). A load runs the
//!   whole-document steps first, then each memento's own ([`Migrations::memento_step`]).
//! - **Crash-safe writes.** A save is written to a temporary file, fsynced, the previous save is
//!   hard-linked as a backup, the temporary file is renamed over the slot file, and the folder
//!   is fsynced. A crash at any point leaves the old save or the new one. `save()` returning
//!   `Ok` means the data is on disk. An advisory lock keeps two savers of one slot (threads or
//!   processes) from interleaving.
//! - **Backups.** The previous sound save of each slot is kept (`backups(n)` keeps n). A load
//!   whose primary file is missing or damaged falls back to the newest sound backup and says so
//!   in its [`LoadReport`]. A damaged file is never rotated into the backups: a save checks
//!   the current file's CRC32 over every byte (a piece at a time) before demoting it, and an
//!   incremental save checks its base the same way before appending to it.
//! - **Loads are never stale, nor falsely alarmed.** A load takes no lock; it checks, once it
//!   has read the base and its journal, that no save replaced the base meanwhile, and reads
//!   again if one did. So it gives a state at least as new as every save that returned before
//!   it began. One that finds damage reads again under the slot's lock before it falls back or
//!   reports it, so a save running beside it (writing over the file it read, appending a
//!   delta) is never taken for damage.
//! - **A failed fsync is final.** A save whose fsync failed returns the error and is never
//!   built upon nor loaded: its file never gets the slot's name, a delta is cut away from the
//!   journal, and a folder whose fsync failed is fsynced again before a save into it returns
//!   `Ok`.
//! - **Storage is a trait, and a small one.** Nothing outside [`storage`] touches `std::fs`. A
//!   backend implements `read`, `put`, `delete` and `list`; backups, journals, locks and
//!   pre-migration copies are the manager's, built on those. A backend without append keeps
//!   each incremental save as an object of its own; one without locks gets the manager's lock
//!   between threads.
//! - **No copy of the state on a blocking save.** [`SaveLoadManager::save_state`] encodes each
//!   originator straight from the game's objects ([`Originator::serialize_memento`], derived
//!   as a view by reference) into the file's buffer, which is sized from the slot's previous
//!   file: its peak heap is about the file's size. A state of many members (a world in
//!   chunks) is encoded on [`threads`](ManagerBuilder::threads) threads, by reference still
//!   (the state is `Sync`), the parts the saving thread reaches first straight into the file.
//!   A captured snapshot (needed for a
//!   background save, which must not borrow the game) holds each `create_memento`'s copy,
//!   encoded into the file's buffer when it is saved, or on
//!   [`threads`](ManagerBuilder::threads) scoped threads when it has many
//!   mementos, with the same bytes.
//! - **Dirty tracking by comparison.** [`SaveLoadManager::save_state_incremental`] keeps a
//!   16-byte fingerprint (length, CRC32, XXH3-64) of each memento a slot holds, and writes the
//!   mementos whose encoded bytes differ, with vanished ids as deletions; when the slot changed
//!   behind its back (another process, a plain save) it writes a full save instead. It costs a
//!   capture and an encoding of the whole state per save; see [`state`].
//!
//! - **In a browser** (`wasm32-unknown-unknown`) it builds with the default features: the time
//!   is `Date.now()` and the randomness `crypto.getRandomValues`. There are no threads, so
//!   background saves run inside the call. IndexedDB (async saves) and localStorage live in
//!   the `savegame-web` crate.
//!
//! **Limits.** The folders the library creates are made durable (each parent fsynced) before
//! the first save into them, and every folder above the save folder is fsynced once before a
//! storage's first save, whoever made it.
//! Atomicity rests on `rename` being atomic and on fsync doing what it says; on
//! Windows the folder cannot be fsynced, and durability of the rename rests on NTFS's journal.
//! On file systems without hard links, the backup is a copy (slower, equally safe).
//!
//! # Security
//!
//! - **Integrity:** every file ends with a CRC32 of all its bytes; damage is reported as
//!   [`Error::ChecksumMismatch`], [`Error::Malformed`] or [`Error::NotASave`], never as a
//!   silently wrong game.
//! - **Encryption:** AES-256-GCM with a fresh 96-bit nonce from the OS random number generator
//!   for every save. The header and metadata are associated data, so editing them, or moving a
//!   file to another slot, makes it fail to open. A wrong key is [`Error::Decrypt`], which
//!   deliberately says nothing more. A [`Key`] is zeroized on drop and never printed.
//! - **Integrity without secrecy:** [`ManagerBuilder::integrity_only`] writes readable bodies
//!   with an HMAC-SHA256 tag of the whole file (under a key derived from the [`Key`]); an edit,
//!   even with its CRC recomputed, or a wrong key, is [`Error::Tampered`]. A manager without
//!   the key refuses such a file ([`Error::KeyRequired`]); tools read it unchecked with
//!   [`Snapshot::open_file_unverified`].
//! - **A key embedded in a game is obfuscation, not secrecy.** It stops casual edits and makes
//!   tampering detectable; it does not stop a player who extracts the key from the binary.
//! - **Hostile files:** a file over the size cap is refused before it is read; every length in
//!   a file is checked against the bytes present before anything is allocated for it; decoding
//!   is capped at [`codec::MAX_DEPTH`] levels of nesting. No input makes the library panic.

#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "msgpack")]
mod chunked;
pub mod codec;
pub mod compression;
pub mod crypto;
mod error;
pub mod format;
pub mod history;
mod manager;
pub mod migrate;
mod originator;
mod protection;
pub mod replay;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub mod schema;
pub mod slot;
mod snapshot;
pub mod state;
pub mod storage;
mod threads;

pub use codec::Codec;
pub use compression::Compression;
pub use crypto::Key;
pub use error::{BoxError, Error, Result, WriteCondition};
pub use format::{Metadata, Trust};
pub use history::{History, Undoable};
pub use manager::backups;
pub use manager::{
    ChangesReport, DeltaReport, LoadReport, Loaded, ManagerBuilder, MigrationPlan, SaveHandle,
    SaveLoadManager, SaveReport, SaveStatus, StateLoaded, Written,
};
pub use manager::{FileStamp, SaveProfile, SlotInfo, SlotStatus, Store, StoreOptions};
pub use migrate::Migrations;
pub use originator::{MementoOf, Originator};
pub use protection::KeyPurpose;
pub use replay::{Recorder, ReplayHeader};
/// Embeds a folder of declarative migration steps (`NNNN_name.json`) at build time and parses
/// them: `savegame::embed_migrations!("migrations")` is a `Result<Migrations>`. The folder is
/// relative to the calling crate's `Cargo.toml`. Needs the `json` feature.
///
/// The expansion names this crate the way the calling crate's `Cargo.toml` does, so a renamed
/// dependency (`sg = { package = "savegame", … }`) works. A crate that reaches `savegame` only
/// through another crate's re-export says where it is:
/// `embed_migrations!("migrations", crate = my_engine::savegame)`.
///
/// ```
/// # // The crate's own migrations folder holds the steps of its v1 → v3 story.
/// let migrations = savegame::embed_migrations!("migrations")?;
/// assert_eq!(migrations.steps().len(), 2);
/// # Ok::<(), savegame::Error>(())
/// ```
pub use savegame_macros::embed_migrations;
pub use slot::SlotId;
pub use snapshot::Snapshot;
pub use snapshot::sealer::FileSealer;
pub use state::{Members, MementoTypes, Registry, RestoreReport, SaveState};

/// Derives [`Originator`](trait@Originator): a memento struct beside the type and both
/// methods. The attributes and examples are in the trait's documentation.
pub use savegame_macros::Originator;
/// Derives [`SaveState`](trait@SaveState) for a struct of originators, one id per field. The
/// attributes and examples are in the trait's documentation.
pub use savegame_macros::SaveState;

/// What the derives' expansions use. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's chapters, whose code blocks run as doctests here (the Bevy, browser and cloud
/// chapters run in the crates they are about).
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../docs/guide/saves.md")]
    pub struct Saves;
    #[doc = include_str!("../docs/guide/whole-game.md")]
    pub struct WholeGame;
    #[doc = include_str!("../docs/guide/background.md")]
    pub struct Background;
    #[doc = include_str!("../docs/guide/migrations.md")]
    pub struct Migrations;
    #[doc = include_str!("../docs/guide/undo.md")]
    pub struct Undo;
    #[doc = include_str!("../docs/guide/replays.md")]
    pub struct Replays;
    #[doc = include_str!("../docs/guide/cli.md")]
    pub struct Cli;
    #[doc = include_str!("../docs/guide/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../docs/guide/format.md")]
    pub struct Format;
}
