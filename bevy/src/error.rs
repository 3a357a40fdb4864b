//! What can go wrong when the plugin saves or loads: [`SaveError`].

use bevy_ecs::entity::Entity;

/// Why a save or a load of the world failed. The world is unchanged by a failed load, and a
/// failed save leaves the slot's previous save as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// A registered component of a saved entity (or a registered resource, with no entity)
    /// could not be serialized by the manager's codec.
    #[error("could not serialize {type_name} of {entity}: {source}", entity = entity.map_or_else(|| "the resource".to_owned(), |e| format!("entity {e}")))]
    Serialize {
        /// The Rust type (`std::any::type_name`).
        type_name: &'static str,
        /// The entity whose component failed; `None` for a resource.
        entity: Option<Entity>,
        /// The codec's error.
        #[source]
        source: Box<savegame::Error>,
    },
    /// A memento of the save could not be decoded into the registered type (after the
    /// migrations ran): a field renamed without a step, a type changed.
    #[error("could not read {type_name} from the save (memento {id}): {source}")]
    Deserialize {
        /// The Rust type the memento was decoded into.
        type_name: &'static str,
        /// The memento's id in the save.
        id: String,
        /// The codec's error.
        #[source]
        source: Box<savegame::Error>,
    },
    /// A memento of the save is not shaped the way the plugin writes it (its entity and
    /// value lists differ in length, say).
    #[error("the save's memento {id} is malformed: {reason}")]
    Malformed {
        /// The memento's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// Two saved entities carry the same [`SaveId`](crate::SaveId).
    #[error("entities {first} and {second} both have save id {id}")]
    DuplicateSaveId {
        /// The id.
        id: u32,
        /// One entity with it.
        first: Entity,
        /// Another.
        second: Entity,
    },
    /// Two registered types were given the same name in the save.
    #[error("{first} and {second} are both registered under the name {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
        /// One type.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
    /// A registered type's name holds `+`, which in a save marks a delta's rows of a memento
    /// (`component/Health+3`).
    #[error("{type_name} is registered under the name {name:?}, which holds a '+'")]
    BadName {
        /// The name.
        name: String,
        /// The type.
        type_name: &'static str,
    },
    /// Every stable id is taken (more than four billion saved entities were ever spawned).
    #[error("no save ids are left")]
    IdsExhausted,
    /// The plugin's manager is not in the world (the plugin was not added, or the manager
    /// could not be built).
    #[error("the savegame plugin is not set up: {reason}")]
    NotSetUp {
        /// What is missing.
        reason: String,
    },
    /// The manager refused or failed: an I/O error, a damaged file, a wrong key, a newer save,
    /// a failed migration.
    #[error(transparent)]
    Savegame(Box<savegame::Error>),
}

impl From<savegame::Error> for SaveError {
    fn from(e: savegame::Error) -> Self {
        SaveError::Savegame(Box::new(e))
    }
}

/// The memento id a capture error made on the manager's worker is carried under.
const WORLD_ID: &str = "bevy/world";

impl SaveError {
    /// The error a snapshot made on the manager's worker hands the manager: the manager's own
    /// as it was, the plugin's own (a component that does not serialize) carried inside
    /// [`savegame::Error::Encode`], to be taken out by [`from_worker`](Self::from_worker).
    pub(crate) fn into_worker(self) -> savegame::Error {
        match self {
            SaveError::Savegame(e) => *e,
            own => savegame::Error::Encode {
                id: WORLD_ID.into(),
                source: Box::new(own),
            },
        }
    }

    /// A background save's error, with the plugin's own taken back out of the manager's.
    pub(crate) fn from_worker(e: savegame::Error) -> Self {
        match e {
            savegame::Error::Encode { id, source } if id == WORLD_ID => {
                match source.downcast::<SaveError>() {
                    Ok(own) => *own,
                    Err(source) => savegame::Error::Encode { id, source }.into(),
                }
            }
            other => other.into(),
        }
    }
}
