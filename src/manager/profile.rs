//! [`SaveProfile`]: what a manager's files are, as one plain value, for what writes or reads
//! files of the family beside the manager without being part of it (a replay recorder and
//! player, a tool): the codec, the key and what it asks for, the schema version and the
//! migrations.

use crate::codec::Codec;
use crate::format::{Key, Trust};
use crate::migrate::Migrations;

/// A manager's settings, handed out by
/// [`SaveLoadManager::profile`](crate::SaveLoadManager::profile): a replay set up like the
/// game's saves (`Recorder::builder().profile(&manager.profile())`, and so
/// `Player::builder()`) seals its chunks with the same key and migrates its keyframes with the
/// same steps, and the manager knows nothing of replays.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SaveProfile {
    /// The codec of new saves.
    pub codec: Codec,
    /// The game's current schema version.
    pub schema_version: u32,
    /// The game's migration steps.
    pub migrations: Migrations,
    key: Option<Key>,
    integrity_only: bool,
    allow_unencrypted: bool,
}

impl SaveProfile {
    pub(crate) fn new(
        codec: Codec,
        schema_version: u32,
        migrations: Migrations,
        key: Option<Key>,
        integrity_only: bool,
        allow_unencrypted: bool,
    ) -> Self {
        SaveProfile {
            codec,
            schema_version,
            migrations,
            key,
            integrity_only,
            allow_unencrypted,
        }
    }

    /// The key files are sealed with, if any (never printed: `Key`'s `Debug` shows none of
    /// it).
    #[must_use]
    pub fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// Whether the key authenticates files (integrity-only) rather than encrypting them.
    #[must_use]
    pub fn is_integrity_only(&self) -> bool {
        self.key.is_some() && self.integrity_only
    }

    /// Whether plain files are opened too, beside those the key seals.
    #[must_use]
    pub fn allows_unencrypted(&self) -> bool {
        self.allow_unencrypted
    }

    /// What protection the manager's files must have to be opened (see [`Trust`]).
    #[must_use]
    pub fn trust(&self) -> Trust<'_> {
        Trust::of_manager(
            self.key.as_ref(),
            self.integrity_only,
            self.allow_unencrypted,
        )
    }
}
