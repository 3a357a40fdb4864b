//! What the game saves: the registered components and resources, type-erased, and the
//! [`SavegameApp`] methods that register them.

use std::any::type_name;
use std::collections::HashMap;

use bevy_app::App;
use bevy_ecs::component::Component;
use bevy_ecs::entity::{Entity, EntityHashMap};
use bevy_ecs::query::With;
use bevy_ecs::resource::Resource;
use bevy_ecs::world::World;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::SaveError;
use crate::ids::{FromStable, SaveId, Saveable, ToStable};
use savegame::{MementoTypes, Snapshot};

/// The prefix of component mementos: `component/Health`.
pub(crate) const COMPONENT_PREFIX: &str = "component/";
/// The prefix of resource mementos: `resource/Score`.
pub(crate) const RESOURCE_PREFIX: &str = "resource/";

/// The registered types, in registration order.
#[derive(Resource, Default)]
pub(crate) struct SaveRegistry {
    pub(crate) components: Vec<Entry>,
    pub(crate) resources: Vec<Entry>,
}

/// What capture and restore need of one registered type, without its type.
pub(crate) struct Entry {
    /// The memento id: the prefix and the name.
    pub(crate) id: String,
    /// The memento's version: what a save records for it, and what a load must find (after
    /// the manager's per-memento steps ran).
    pub(crate) version: u32,
    pub(crate) type_name: &'static str,
    pub(crate) capture: CaptureFn,
    pub(crate) decode: DecodeFn,
    /// Removes the component from an entity (for a component; a no-op for a resource).
    pub(crate) remove: fn(&mut World, Entity),
    /// Lists the memento's type, for the schema guard.
    pub(crate) describe: DescribeFn,
}

/// Lists the entry's memento type (the column of a component, the resource) under its id.
pub(crate) type DescribeFn = fn(&mut MementoTypes, &Entry) -> savegame::Result<()>;

fn describe_component<T: Component + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    entry: &Entry,
) -> savegame::Result<()> {
    types.memento::<ColumnIn<T>>(entry.id.clone(), entry.version)
}

fn describe_resource<R: Resource + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    entry: &Entry,
) -> savegame::Result<()> {
    types.memento::<R>(entry.id.clone(), entry.version)
}

/// Captures the type into the snapshot under the entry's id; returns how many entity
/// references pointed at entities that are not saved.
pub(crate) type CaptureFn =
    fn(&mut World, &EntityHashMap<SaveId>, &mut Snapshot, &Entry) -> Result<usize, SaveError>;
/// Decodes the type's memento, if the snapshot has it, into something to apply later.
pub(crate) type DecodeFn = fn(&Snapshot, &Entry) -> Result<Option<Box<dyn Pending>>, SaveError>;

/// A decoded memento, waiting to be put into the world once every memento has decoded.
pub(crate) trait Pending: Send {
    /// Puts it in: components onto the entities now carrying their ids, a resource into the
    /// world. Returns how many entity references had no saved entity to point at.
    fn apply(self: Box<Self>, world: &mut World, entities: &HashMap<u32, Entity>) -> usize;
}

/// A component's memento: the ids of the entities that have it, ascending, and their values
/// in the same order (entity references written as their targets' ids).
#[derive(Serialize)]
struct ColumnOut<'a, T> {
    entities: &'a [u32],
    values: &'a [T],
}

/// Serialize too, for the schema guard's probes (the same fields as [`ColumnOut`]).
#[derive(Serialize, Deserialize)]
struct ColumnIn<T> {
    entities: Vec<u32>,
    values: Vec<T>,
}

fn capture_component<T: Component + Serialize + Clone>(
    world: &mut World,
    ids: &EntityHashMap<SaveId>,
    snapshot: &mut Snapshot,
    entry: &Entry,
) -> Result<usize, SaveError> {
    let mut query = world.query_filtered::<(Entity, &T), With<Saveable>>();
    let mut mapper = ToStable { ids, unsaved: 0 };
    let mut rows: Vec<(u32, Entity, T)> = Vec::new();
    for (entity, value) in query.iter(world) {
        let Some(id) = ids.get(&entity) else { continue };
        let mut value = value.clone();
        T::map_entities(&mut value, &mut mapper);
        rows.push((id.get(), entity, value));
    }
    rows.sort_unstable_by_key(|row| row.0);
    let entities: Vec<u32> = rows.iter().map(|row| row.0).collect();
    let (live, values): (Vec<Entity>, Vec<T>) = rows.into_iter().map(|r| (r.1, r.2)).unzip();
    let column = ColumnOut {
        entities: &entities,
        values: &values,
    };
    if let Err(source) = snapshot.capture_memento_versioned(&entry.id, &column, entry.version) {
        // Find the value that failed, to name its entity.
        let codec = snapshot.codec();
        let culprit = values
            .iter()
            .zip(&live)
            .find(|(value, _)| {
                Snapshot::new(codec)
                    .capture_memento("probe", value)
                    .is_err()
            })
            .map(|(_, entity)| *entity);
        return Err(SaveError::Serialize {
            type_name: entry.type_name,
            entity: culprit,
            source: Box::new(source),
        });
    }
    Ok(mapper.unsaved)
}

struct PendingColumn<T>(ColumnIn<T>);

impl<T: Component + Send> Pending for PendingColumn<T> {
    fn apply(self: Box<Self>, world: &mut World, entities: &HashMap<u32, Entity>) -> usize {
        let ColumnIn {
            entities: ids,
            values,
        } = self.0;
        let mut mapper = FromStable {
            entities,
            dangling: 0,
        };
        let batch: Vec<(Entity, T)> = ids
            .into_iter()
            .zip(values)
            .filter_map(|(id, mut value)| {
                let entity = *entities.get(&id)?;
                T::map_entities(&mut value, &mut mapper);
                Some((entity, value))
            })
            .collect();
        world.insert_batch(batch);
        mapper.dangling
    }
}

/// The entry's memento decoded as `T`, or `None` when the save does not have it. A memento
/// at another version than the registration's is refused, as `Snapshot::restore` refuses one:
/// older and not migrated by a per-memento step (`NoMementoMigrationPath`), or newer
/// (`NewerMemento`).
fn decode<T: DeserializeOwned>(snapshot: &Snapshot, entry: &Entry) -> Result<Option<T>, SaveError> {
    if !snapshot.contains(&entry.id) {
        return Ok(None);
    }
    snapshot
        .check_version(&entry.id, entry.version)
        .and_then(|()| snapshot.memento(&entry.id))
        .map(Some)
        .map_err(|source| SaveError::Deserialize {
            type_name: entry.type_name,
            id: entry.id.clone(),
            source: Box::new(source),
        })
}

fn decode_component<T: Component + DeserializeOwned + Send>(
    snapshot: &Snapshot,
    entry: &Entry,
) -> Result<Option<Box<dyn Pending>>, SaveError> {
    let Some(column) = decode::<ColumnIn<T>>(snapshot, entry)? else {
        return Ok(None);
    };
    if column.entities.len() != column.values.len() {
        return Err(SaveError::Malformed {
            id: entry.id.clone(),
            reason: format!(
                "{} entities but {} values",
                column.entities.len(),
                column.values.len()
            ),
        });
    }
    Ok(Some(Box::new(PendingColumn(column))))
}

fn remove_component<T: Component>(world: &mut World, entity: Entity) {
    if let Ok(mut entity) = world.get_entity_mut(entity) {
        entity.remove::<T>();
    }
}

fn capture_resource<R: Resource + Serialize + Clone>(
    world: &mut World,
    ids: &EntityHashMap<SaveId>,
    snapshot: &mut Snapshot,
    entry: &Entry,
) -> Result<usize, SaveError> {
    let Some(resource) = world.get_resource::<R>() else {
        return Ok(0);
    };
    let mut resource = resource.clone();
    let mut mapper = ToStable { ids, unsaved: 0 };
    R::map_entities(&mut resource, &mut mapper);
    snapshot
        .capture_memento_versioned(&entry.id, &resource, entry.version)
        .map_err(|source| SaveError::Serialize {
            type_name: entry.type_name,
            entity: None,
            source: Box::new(source),
        })?;
    Ok(mapper.unsaved)
}

struct PendingResource<R>(R);

impl<R: Resource> Pending for PendingResource<R> {
    fn apply(self: Box<Self>, world: &mut World, entities: &HashMap<u32, Entity>) -> usize {
        let mut resource = self.0;
        let mut mapper = FromStable {
            entities,
            dangling: 0,
        };
        R::map_entities(&mut resource, &mut mapper);
        world.insert_resource(resource);
        mapper.dangling
    }
}

fn decode_resource<R: Resource + DeserializeOwned + Clone>(
    snapshot: &Snapshot,
    entry: &Entry,
) -> Result<Option<Box<dyn Pending>>, SaveError> {
    Ok(decode::<R>(snapshot, entry)?
        .map(|resource| Box::new(PendingResource(resource)) as Box<dyn Pending>))
}

fn no_remove(_world: &mut World, _entity: Entity) {}

/// The last segment of a type's path, with its generic arguments: `game::Health` → `Health`.
pub(crate) fn short_name(full: &str) -> String {
    let (head, generics) = match full.find('<') {
        Some(at) => full.split_at(at),
        None => (full, ""),
    };
    let last = head.rsplit("::").next().unwrap_or(head);
    format!("{last}{generics}")
}

/// Registers what a game saves. Implemented for [`App`]; call after adding
/// [`SavegamePlugin`](crate::SavegamePlugin) or before, in any order.
///
/// Each type is saved under a name: by default the last segment of its Rust path (`Health`
/// for `game::stats::Health`); the `_as` methods choose one. The name, not the Rust path, is
/// what a save holds, so moving a type to another module keeps old saves loading, and renaming
/// it is a migration step that renames `component/<old>` to `component/<new>`.
pub trait SavegameApp {
    /// Saves component `T` on every [`Saveable`] entity that has it. Its `Entity` fields (those
    /// `#[entities]` marks for Bevy's [`Component::map_entities`]) are saved as the stable ids
    /// of the entities they point at, and point at the same logical entities after a load.
    fn save_component<T>(&mut self) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// [`save_component`](Self::save_component), under the name `name`.
    fn save_component_as<T>(&mut self, name: &str) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// [`save_component_as`](Self::save_component_as), at memento version `version` (the
    /// others register at 1). Raise it when `T` changes shape, and give the manager a
    /// per-memento step for `component/<name>` from the old version
    /// ([`Migrations::memento_step`](savegame::Migrations::memento_step)): a load migrates
    /// older saves' memento, and refuses one at a version no step leads from, or at a newer
    /// one ([`SaveError::Deserialize`] with `NoMementoMigrationPath` or `NewerMemento`).
    fn save_component_versioned<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// Saves resource `R`; a load replaces it (and leaves it as it is when the save has none).
    /// Its `Entity` fields are mapped as a component's are: mark them `#[entities]` and derive
    /// `MapEntities` beside `Resource` (`#[derive(Resource, MapEntities)]`; Bevy 0.20's
    /// `Resource` derive reads the attribute but does not declare it).
    fn save_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;

    /// [`save_resource`](Self::save_resource), under the name `name`.
    fn save_resource_as<R>(&mut self, name: &str) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;

    /// [`save_resource_as`](Self::save_resource_as), at memento version `version`, as
    /// [`save_component_versioned`](Self::save_component_versioned) is for a component.
    fn save_resource_versioned<R>(&mut self, name: &str, version: u32) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;
}

impl SavegameApp for App {
    fn save_component<T>(&mut self) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        self.save_component_as::<T>(&short_name(type_name::<T>()))
    }

    fn save_component_as<T>(&mut self, name: &str) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        self.save_component_versioned::<T>(name, savegame::format::DEFAULT_MEMENTO_VERSION)
    }

    fn save_component_versioned<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        let entry = Entry {
            id: format!("{COMPONENT_PREFIX}{name}"),
            version,
            type_name: type_name::<T>(),
            capture: capture_component::<T>,
            decode: decode_component::<T>,
            remove: remove_component::<T>,
            describe: describe_component::<T>,
        };
        self.world_mut()
            .get_resource_or_init::<SaveRegistry>()
            .components
            .push(entry);
        self
    }

    fn save_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        self.save_resource_as::<R>(&short_name(type_name::<R>()))
    }

    fn save_resource_as<R>(&mut self, name: &str) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        self.save_resource_versioned::<R>(name, savegame::format::DEFAULT_MEMENTO_VERSION)
    }

    fn save_resource_versioned<R>(&mut self, name: &str, version: u32) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        let entry = Entry {
            id: format!("{RESOURCE_PREFIX}{name}"),
            version,
            type_name: type_name::<R>(),
            capture: capture_resource::<R>,
            decode: decode_resource::<R>,
            remove: no_remove,
            describe: describe_resource::<R>,
        };
        self.world_mut()
            .get_resource_or_init::<SaveRegistry>()
            .resources
            .push(entry);
        self
    }
}

impl SaveRegistry {
    /// Refuses two types under one name.
    pub(crate) fn check(&self) -> Result<(), SaveError> {
        let mut seen: HashMap<&str, &'static str> = HashMap::new();
        for entry in self.components.iter().chain(&self.resources) {
            if let Some(first) = seen.insert(&entry.id, entry.type_name) {
                return Err(SaveError::DuplicateName {
                    name: entry.id.clone(),
                    first,
                    second: entry.type_name,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn short_names_keep_generics() {
        assert_eq!(short_name("game::stats::Health"), "Health");
        assert_eq!(short_name("Score"), "Score");
        assert_eq!(short_name("a::Wrap<b::Inner>"), "Wrap<b::Inner>");
    }
}
