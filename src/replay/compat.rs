//! Whether a game can play a replay, decided when it is opened: the keyframes' schema version
//! and the inputs' format version against the game's, and the migrations that bring older
//! keyframes and inputs up to date.

use serde::de::DeserializeOwned;

use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::format::replay::meta::StartMeta;
use crate::migrate::{Document, Migrations, Value};
use crate::snapshot::Snapshot;

/// The id under which an input migration step finds the frame's input in its document.
pub const INPUT_ID: &str = "input";

/// The versions of a replay and of the game, with the steps between them.
#[derive(Debug, Clone)]
pub(crate) struct Compat {
    codec: Codec,
    schema_from: u32,
    schema_to: u32,
    migrations: Migrations,
    input_from: u32,
    input_to: u32,
    input_migrations: Migrations,
}

/// What the game declares.
pub(crate) struct GameVersions {
    pub schema_version: u32,
    pub migrations: Migrations,
    pub input_version: u32,
    pub input_migrations: Migrations,
}

impl Compat {
    /// Refuses a replay the game cannot play: keyframes or inputs from a newer game, or older
    /// ones with a missing migration step.
    pub(crate) fn check(start: &StartMeta, codec: Codec, game: GameVersions) -> Result<Self> {
        if start.schema_version > game.schema_version {
            return Err(Error::NewerSchema {
                found: start.schema_version,
                supported: game.schema_version,
            });
        }
        if start.input_version > game.input_version {
            return Err(Error::NewerInputFormat {
                found: start.input_version,
                supported: game.input_version,
            });
        }
        game.migrations
            .plan(start.schema_version, game.schema_version)?;
        game.input_migrations
            .plan(start.input_version, game.input_version)
            .map_err(|_| Error::NoInputMigrationPath {
                from: start.input_version,
                to: game.input_version,
            })?;
        Ok(Compat {
            codec,
            schema_from: start.schema_version,
            schema_to: game.schema_version,
            migrations: game.migrations,
            input_from: start.input_version,
            input_to: game.input_version,
            input_migrations: game.input_migrations,
        })
    }

    /// Brings a keyframe at schema version `from` (its save header's) up to the game's.
    pub(crate) fn keyframe(&self, snapshot: Snapshot, from: u32) -> Result<Snapshot> {
        if from != self.schema_from {
            return Err(Error::malformed(format!(
                "a keyframe at schema version {from} in a replay recorded at {}",
                self.schema_from
            )));
        }
        self.migrations.upgrade(snapshot, from, self.schema_to)
    }

    /// Decodes the input of `frame`, migrating it first when it is from an older format.
    pub(crate) fn input<T: DeserializeOwned>(&self, bytes: &[u8], frame: u64) -> Result<T> {
        let id = || format!("{INPUT_ID} of frame {frame}");
        if self.input_from == self.input_to {
            return self.codec.decode(bytes).map_err(|e| e.decoding(&id()));
        }
        let value: Value = self.codec.decode(bytes).map_err(|e| e.decoding(&id()))?;
        let mut doc = Document::new();
        doc.insert(INPUT_ID, value);
        self.input_migrations
            .run(&mut doc, self.input_from, self.input_to)?;
        let value = doc
            .remove(INPUT_ID)
            .ok_or_else(|| Error::MissingMemento { id: id() })?;
        let bytes = self.codec.encode(&value).map_err(|e| e.encoding(&id()))?;
        self.codec.decode(&bytes).map_err(|e| e.decoding(&id()))
    }
}
