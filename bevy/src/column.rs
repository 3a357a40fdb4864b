//! The typed work behind each registered serde type: copying its values out of the world (in
//! the frame), writing them into a snapshot (on the manager's worker), and decoding them back
//! (in a load). [`entry`](crate::entry) erases the types behind function pointers.
//!
//! A full save writes a component as one memento, its column: `component/<name>` with the ids
//! of the entities that have it, ascending, and their values in the same order. A delta writes
//! one memento per entity it changed: `component/<name>/<id>`, the value alone.

use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::query::With;
use bevy_ecs::resource::Resource;
use bevy_ecs::world::World;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::entry::{Column, Info, Pending, entity_memento_id};
use crate::error::SaveError;
use crate::ids::{EntityIds, FromStable, IdMap, SaveId, Saveable, ToStable, WorldMapper};
use savegame::{MementoTypes, Snapshot};

/// A component's memento in a full save: the ids of the entities that have it, ascending, and
/// their values in the same order (entity references written as their targets' ids).
#[derive(Serialize)]
pub(crate) struct ColumnOut<'a, T> {
    pub(crate) entities: &'a [u32],
    pub(crate) values: &'a [T],
}

/// Serialize too, for the schema guard's probes (the same fields as [`ColumnOut`]).
#[derive(Serialize, Deserialize)]
pub(crate) struct ColumnIn<T> {
    pub(crate) entities: Vec<u32>,
    pub(crate) values: Vec<T>,
}

/// The values of one component type copied in the frame: each with its entity's id, and the
/// entity (to name it if its value does not serialize).
pub(crate) struct Copied<T> {
    pub(crate) ids: Vec<u32>,
    pub(crate) entities: Vec<Entity>,
    pub(crate) values: Vec<T>,
}

impl<T: Component + Clone> Copied<T> {
    /// Copies every saved entity's `T` (its references not mapped yet: the worker maps them).
    pub(crate) fn all(world: &World) -> Self {
        let mut copied = Copied {
            ids: Vec::new(),
            entities: Vec::new(),
            values: Vec::new(),
        };
        // No state: the world has never had a `T` or a saved entity, so none has one.
        let Some(mut query) = world.try_query_filtered::<(Entity, &SaveId, &T), With<Saveable>>()
        else {
            return copied;
        };
        let iter = query.iter(world);
        // The filters are archetypal, so the upper bound is the count: no vector grows.
        let count = iter.size_hint().1.unwrap_or(0);
        copied.ids.reserve_exact(count);
        copied.entities.reserve_exact(count);
        copied.values.reserve_exact(count);
        for (entity, id, value) in iter {
            copied.ids.push(id.get());
            copied.entities.push(entity);
            copied.values.push(value.clone());
        }
        copied
    }

    /// Copies `T` of the given saved entities that have it, their references mapped now (a
    /// delta's worker has no map of the whole world); adds the references to unsaved entities
    /// to `unsaved`.
    pub(crate) fn some(world: &World, entities: &[(Entity, u32)], unsaved: &mut usize) -> Self {
        let mut mapper = WorldMapper { world, unsaved: 0 };
        let mut copied = Copied {
            ids: Vec::new(),
            entities: Vec::new(),
            values: Vec::new(),
        };
        // A query's state looks each entity up without finding `T`'s column by its type
        // again, as `World::get` does.
        let Some(state) = world.try_query::<&T>() else {
            return copied;
        };
        let query = state.query_manual(world);
        for (entity, id) in entities {
            if let Ok(value) = query.get(*entity) {
                let mut value = value.clone();
                T::map_entities(&mut value, &mut mapper);
                copied.ids.push(*id);
                copied.entities.push(*entity);
                copied.values.push(value);
            }
        }
        *unsaved += mapper.unsaved;
        copied
    }
}

impl<T: Component> Copied<T> {
    /// Maps the values' entity references to their targets' stable ids (on the worker);
    /// returns how many pointed at unsaved entities.
    pub(crate) fn map_to_stable(&mut self, ids: &EntityIds) -> usize {
        let mut mapper = ToStable { ids, unsaved: 0 };
        for value in &mut self.values {
            T::map_entities(value, &mut mapper);
        }
        mapper.unsaved
    }
}

/// Copies every saved entity's `T` ([`Copied::all`]).
pub(crate) fn copy_all<T: Component + Serialize + Clone>(world: &World) -> Box<dyn Column> {
    Box::new(Copied::<T>::all(world))
}

/// Copies `T` of the given saved entities ([`Copied::some`]).
pub(crate) fn copy_some<T: Component + Serialize + Clone>(
    world: &World,
    entities: &[(Entity, u32)],
    unsaved: &mut usize,
) -> Box<dyn Column> {
    Box::new(Copied::<T>::some(world, entities, unsaved))
}

/// Names the first value that does not serialize alone, for the error.
fn culprit<T: Serialize>(copied: &Copied<T>, snapshot: &Snapshot) -> Option<Entity> {
    let codec = snapshot.codec();
    copied
        .values
        .iter()
        .zip(&copied.entities)
        .find(|(value, _)| codec.encode(*value).is_err())
        .map(|(_, entity)| *entity)
}

impl<T: Component + Serialize + Send> Column for Copied<T> {
    fn ids(&self) -> &[u32] {
        &self.ids
    }

    fn write_column(
        mut self: Box<Self>,
        ids: &EntityIds,
        snapshot: &mut Snapshot,
        info: &Info,
    ) -> Result<usize, SaveError> {
        let unsaved = self.map_to_stable(ids);
        let column = ColumnOut {
            entities: &self.ids,
            values: &self.values,
        };
        if let Err(source) = snapshot.capture_memento_versioned(&info.id, &column, info.version) {
            return Err(SaveError::Serialize {
                type_name: info.type_name,
                entity: culprit(&self, snapshot),
                source: Box::new(source),
            });
        }
        Ok(unsaved)
    }

    fn write_each(self: Box<Self>, snapshot: &mut Snapshot, info: &Info) -> Result<(), SaveError> {
        let mut id = String::with_capacity(info.id.len() + 11);
        for ((save_id, entity), value) in self.ids.iter().zip(&self.entities).zip(&self.values) {
            entity_memento_id(&mut id, &info.id, *save_id);
            snapshot
                .capture_memento_versioned(&id, value, info.version)
                .map_err(|source| SaveError::Serialize {
                    type_name: info.type_name,
                    entity: Some(*entity),
                    source: Box::new(source),
                })?;
        }
        Ok(())
    }
}

/// A registered resource, copied in the frame with its references mapped.
pub(crate) struct CopiedResource<R>(R);

/// Copies resource `R` (if the world has it), its references mapped now.
pub(crate) fn copy_resource<R: Resource + Serialize + Clone>(
    world: &World,
    unsaved: &mut usize,
) -> Option<Box<dyn Column>> {
    let mut resource = world.get_resource::<R>()?.clone();
    let mut mapper = WorldMapper { world, unsaved: 0 };
    R::map_entities(&mut resource, &mut mapper);
    *unsaved += mapper.unsaved;
    Some(Box::new(CopiedResource(resource)))
}

impl<R: Resource + Serialize> Column for CopiedResource<R> {
    fn ids(&self) -> &[u32] {
        &[]
    }

    fn write_column(
        self: Box<Self>,
        _ids: &EntityIds,
        snapshot: &mut Snapshot,
        info: &Info,
    ) -> Result<usize, SaveError> {
        self.write_each(snapshot, info).map(|()| 0)
    }

    fn write_each(self: Box<Self>, snapshot: &mut Snapshot, info: &Info) -> Result<(), SaveError> {
        snapshot
            .capture_memento_versioned(&info.id, &self.0, info.version)
            .map_err(|source| SaveError::Serialize {
                type_name: info.type_name,
                entity: None,
                source: Box::new(source),
            })
    }
}

/// The memento `id` decoded as `M`, at the registration's version (a memento at another
/// version is refused, as `Snapshot::restore` refuses one: older and not migrated by a
/// per-memento step, `NoMementoMigrationPath`, or newer, `NewerMemento`).
pub(crate) fn decode_memento<M: DeserializeOwned>(
    snapshot: &Snapshot,
    id: &str,
    info: &Info,
) -> Result<M, SaveError> {
    snapshot
        .check_version(id, info.version)
        .and_then(|()| snapshot.memento(id))
        .map_err(|source| SaveError::Deserialize {
            type_name: info.type_name,
            id: id.to_owned(),
            source: Box::new(source),
        })
}

/// Decodes a component's values: its column (for the entities no delta rewrote) and its
/// per-entity mementos (for those a delta did: `rewritten`).
pub(crate) fn decode_component<T: Component + DeserializeOwned + Send>(
    _world: &World,
    snapshot: &Snapshot,
    info: &Info,
    rewritten: &[u32],
) -> Result<Box<dyn Pending>, SaveError> {
    let rows = decode_rows::<T, T>(snapshot, info, rewritten, Ok)?;
    Ok(Box::new(Decoded(rows)))
}

/// A component's rows, each value decoded as `V` and made a `T` by `convert`: its column's
/// (but for the `rewritten` ids) and the rewritten ids' own mementos.
pub(crate) fn decode_rows<V: DeserializeOwned, T>(
    snapshot: &Snapshot,
    info: &Info,
    rewritten: &[u32],
    mut convert: impl FnMut(V) -> Result<T, SaveError>,
) -> Result<Vec<(u32, T)>, SaveError> {
    let mut rows: Vec<(u32, T)> = Vec::new();
    if snapshot.contains(&info.id) {
        let column: ColumnIn<V> = decode_memento(snapshot, &info.id, info)?;
        if column.entities.len() != column.values.len() {
            return Err(SaveError::Malformed {
                id: info.id.clone(),
                reason: format!(
                    "{} entities but {} values",
                    column.entities.len(),
                    column.values.len()
                ),
            });
        }
        rows.reserve(column.entities.len());
        for (id, value) in column.entities.into_iter().zip(column.values) {
            if rewritten.is_empty() || rewritten.binary_search(&id).is_err() {
                rows.push((id, convert(value)?));
            }
        }
    }
    let mut id = String::new();
    for save_id in rewritten {
        entity_memento_id(&mut id, &info.id, *save_id);
        if snapshot.contains(&id) {
            rows.push((*save_id, convert(decode_memento(snapshot, &id, info)?)?));
        }
    }
    Ok(rows)
}

/// A component's decoded values, waiting for the world.
pub(crate) struct Decoded<T>(pub(crate) Vec<(u32, T)>);

impl<T: Component + Send> Pending for Decoded<T> {
    fn for_each_id(&self, f: &mut dyn FnMut(u32)) {
        for (id, _) in &self.0 {
            f(*id);
        }
    }

    fn apply(self: Box<Self>, world: &mut World, entities: &IdMap) -> usize {
        let mut mapper = FromStable {
            entities,
            dangling: 0,
        };
        // Each value at its entity's rank (spawn order), so that runs of entities in one
        // archetype move together.
        let mut batch: Vec<Option<(Entity, T)>> = Vec::new();
        batch.resize_with(entities.len(), || None);
        for (id, mut value) in self.0 {
            if let Some((entity, rank)) = entities.ranked(id) {
                T::map_entities(&mut value, &mut mapper);
                batch[rank as usize] = Some((entity, value));
            }
        }
        world.insert_batch(batch.into_iter().flatten());
        mapper.dangling
    }
}

/// Decodes a resource's memento, if the save has it.
pub(crate) fn decode_resource<R: Resource + DeserializeOwned>(
    _world: &World,
    snapshot: &Snapshot,
    info: &Info,
    _rewritten: &[u32],
) -> Result<Box<dyn Pending>, SaveError> {
    if !snapshot.contains(&info.id) {
        return Ok(Box::new(NoResource));
    }
    let resource: R = decode_memento(snapshot, &info.id, info)?;
    Ok(Box::new(DecodedResource(resource)))
}

struct DecodedResource<R>(R);

impl<R: Resource> Pending for DecodedResource<R> {
    fn for_each_id(&self, _f: &mut dyn FnMut(u32)) {}

    fn apply(self: Box<Self>, world: &mut World, entities: &IdMap) -> usize {
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

/// A resource the save does not have: the world's stays as it is.
struct NoResource;

impl Pending for NoResource {
    fn for_each_id(&self, _f: &mut dyn FnMut(u32)) {}

    fn apply(self: Box<Self>, _world: &mut World, _entities: &IdMap) -> usize {
        0
    }
}

/// Removes `T` from an entity, if it has it.
pub(crate) fn remove_component<T: Component>(world: &mut World, entity: Entity) {
    if let Ok(mut entity) = world.get_entity_mut(entity) {
        entity.remove::<T>();
    }
}

/// Lists a component's memento types: its column, and its per-entity values.
pub(crate) fn describe_component<T: Component + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    info: &Info,
) -> savegame::Result<()> {
    types.memento::<ColumnIn<T>>(info.id.clone(), info.version)?;
    types.memento::<T>(format!("{}/*", info.id), info.version)
}

/// Lists a resource's memento type.
pub(crate) fn describe_resource<R: Resource + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    info: &Info,
) -> savegame::Result<()> {
    types.memento::<R>(info.id.clone(), info.version)
}
