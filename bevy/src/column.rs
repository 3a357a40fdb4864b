//! The typed work behind each registered serde type: copying its values out of the world (in
//! the frame), writing them into a snapshot (on the manager's worker), and decoding them back
//! (in a load). [`entry`](crate::entry) erases the types behind function pointers.
//!
//! A full save writes a component as one memento, its column: `component/<name>` with the ids
//! of the entities that have it and their values in the same order. Delta `n` writes its rows
//! in the same shape, with the entities that lost the component: `component/<name>+<n>`
//! (deltas of the older layout wrote one memento per entity, `component/<name>/<id>`, which
//! loads still read).

use std::collections::{BTreeMap, HashMap};

use bevy_ecs::change_detection::{ContiguousRef, DetectChanges, Tick};
use bevy_ecs::component::Component;
use bevy_ecs::entity::{Entity, EntityMapper};
use bevy_ecs::resource::Resource;
use bevy_ecs::world::{Ref, World};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::entry::{Column, Info, Pending, entity_memento_id};
use crate::error::SaveError;
use crate::ids::{
    AnyEntity, EntityIds, FromStable, IdMap, SaveId, Saveable, ToStable, WorldMapper, spawn_saved,
};
use crate::layout::{DELTA_MARK, Rewritten, delta_id};
use crate::ticks;
use savegame::{MementoTypes, Snapshot};

/// A component's memento in a full save: the ids of the entities that have it (not sorted), and
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

/// A delta's rows of a component: the values it writes, with their entities' ids, and the
/// ids of the entities that lost the component (see [`layout`](crate::layout)).
#[derive(Serialize)]
pub(crate) struct RowsOut<'a, T> {
    pub(crate) entities: &'a [u32],
    pub(crate) values: &'a [T],
    pub(crate) lost: &'a [u32],
}

/// Serialize too, for the schema guard's probes (the same fields as [`RowsOut`]).
#[derive(Serialize, Deserialize)]
pub(crate) struct RowsIn<T> {
    pub(crate) entities: Vec<u32>,
    pub(crate) values: Vec<T>,
    #[serde(default)]
    pub(crate) lost: Vec<u32>,
}

/// The values of one component type copied in the frame: each with its entity's id, and the
/// entity (to name it if its value does not serialize); for a delta, also the ids of the
/// entities that lost it.
pub(crate) struct Copied<T> {
    pub(crate) ids: Vec<u32>,
    pub(crate) entities: Vec<Entity>,
    pub(crate) values: Vec<T>,
    pub(crate) lost: Vec<u32>,
}

impl<T> Copied<T> {
    /// Adds the ids of the entities whose rows it holds for a delta (values and losses).
    pub(crate) fn delta_ids(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.ids);
        out.extend_from_slice(&self.lost);
    }

    fn empty() -> Self {
        Copied {
            ids: Vec::new(),
            entities: Vec::new(),
            values: Vec::new(),
            lost: Vec::new(),
        }
    }
}

impl<T: Component + Clone> Copied<T> {
    /// Copies every saved entity's `T` (its references not mapped yet: the worker maps them).
    pub(crate) fn all(world: &mut World) -> Self {
        let mut copied = Copied::empty();
        let mut query = ticks::saved::<(Entity, &SaveId, &T)>(world);
        let world: &World = world;
        // The filters are archetypal, so the upper bound is the count: no vector grows (each
        // growth of a large vector is fresh pages, each a fault: twice the copy's time).
        let count = query.iter(world).size_hint().1.unwrap_or(0);
        copied.ids.reserve_exact(count);
        copied.entities.reserve_exact(count);
        copied.values.reserve_exact(count);
        match query.contiguous_iter(world) {
            // A table at a time, each column copied whole.
            Ok(tables) => {
                for (entities, ids, values) in tables {
                    copied.ids.extend(ids.iter().map(|id| id.get()));
                    copied.entities.extend_from_slice(entities);
                    copied.values.extend_from_slice(values);
                }
            }
            // `T`, or a game's disabling component, in a sparse set: row by row.
            Err(_) => {
                for (entity, id, value) in query.iter(world) {
                    copied.ids.push(id.get());
                    copied.entities.push(entity);
                    copied.values.push(value.clone());
                }
            }
        }
        copied
    }

    /// Copies `T` of the given saved entities that have it, their references mapped now (a
    /// delta's worker has no map of the whole world); adds the references to unsaved entities
    /// to `unsaved`.
    fn some(world: &World, entities: &[(Entity, u32)], unsaved: &mut usize) -> Self {
        let mut mapper = WorldMapper::new(world);
        let mut copied = Copied::empty();
        // A query's state looks each entity up without finding `T`'s column by its type
        // again, as `World::get` does.
        let Some(state) = world.try_query_filtered::<&T, AnyEntity>() else {
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

impl<T: Component + Clone> Copied<T> {
    /// A delta's rows of `T`, references mapped now (a delta's worker has no map of the whole
    /// world): the value of each saved entity whose `T` was added or changed since `since`
    /// (Bevy's change ticks, read in the same pass as the values), but for the `whole` ones
    /// (ascending by entity); then every value of the `whole` ones, each that lacks `T` among
    /// the `lost` (unless its id is `new_from` or above: given in this delta, it was never
    /// saved), with `lost` (the ids of entities that lost `T` since). Adds the references to
    /// unsaved entities to `unsaved`.
    pub(crate) fn delta(
        world: &mut World,
        since: Tick,
        whole: &[(Entity, u32)],
        new_from: u32,
        lost: Vec<u32>,
        unsaved: &mut usize,
    ) -> Self {
        let mut copied = world.last_change_tick_scope(since, |world| {
            let mut query = ticks::saved::<(Entity, &SaveId, Ref<T>)>(world);
            let world: &World = world;
            let mut copied = Copied::empty();
            let mut mapper = WorldMapper::new(world);
            let mut take = |entity: Entity, id: u32, value: &T| {
                if whole.binary_search_by_key(&entity, |(e, _)| *e).is_ok() {
                    return;
                }
                let mut value = value.clone();
                T::map_entities(&mut value, &mut mapper);
                copied.ids.push(id);
                copied.entities.push(entity);
                copied.values.push(value);
            };
            match query.contiguous_iter(world) {
                Ok(tables) => {
                    let mut rows: Vec<(usize, Entity, u32)> = Vec::new();
                    let mut found: Vec<usize> = Vec::new();
                    for (entities, ids, values) in tables {
                        let (values, ticks) = ContiguousRef::split(values);
                        let since = ticks.last_run();
                        // The changed rows first, then their entities and ids, each in a loop
                        // of its own: nothing touched those since the last save, so their loads
                        // miss the cache, and in a short loop many are in flight at once (20 µs
                        // less of a 100,000-entity delta's frame than one loop doing it all).
                        found.clear();
                        found.extend(ticks::changed_rows(
                            ticks.changed(),
                            since,
                            ticks.this_run(),
                        ));
                        rows.clear();
                        rows.extend(found.iter().filter_map(|row| {
                            Some((*row, *entities.get(*row)?, ids.get(*row)?.get()))
                        }));
                        for (row, entity, id) in &rows {
                            if let Some(value) = values.get(*row) {
                                take(*entity, *id, value);
                            }
                        }
                    }
                }
                // `T`, or a game's disabling component, in a sparse set: row by row.
                Err(_) => {
                    for (entity, id, value) in query.iter(world) {
                        if value.is_changed() {
                            take(entity, id.get(), &value);
                        }
                    }
                }
            }
            *unsaved += mapper.unsaved;
            copied
        });
        copied.lost = lost;
        if !whole.is_empty() {
            let mut some = Copied::<T>::some(world, whole, unsaved);
            // `some` is in the order of `whole`: the ones it skipped lack `T`.
            let mut has = some.entities.iter().peekable();
            for (entity, id) in whole {
                if has.next_if_eq(&entity).is_none() && *id < new_from {
                    copied.lost.push(*id);
                }
            }
            copied.ids.append(&mut some.ids);
            copied.entities.append(&mut some.entities);
            copied.values.append(&mut some.values);
        }
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
pub(crate) fn copy_all<T: Component + Serialize + Clone>(world: &mut World) -> Box<dyn Column> {
    Box::new(Copied::<T>::all(world))
}

/// A delta's rows of `T` ([`Copied::delta`]).
pub(crate) fn copy_delta<T: Component + Serialize + Clone>(
    world: &mut World,
    since: Tick,
    whole: &[(Entity, u32)],
    new_from: u32,
    lost: Vec<u32>,
    unsaved: &mut usize,
) -> Box<dyn Column> {
    Box::new(Copied::<T>::delta(
        world, since, whole, new_from, lost, unsaved,
    ))
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

    fn touched(&self, out: &mut Vec<u32>) {
        self.delta_ids(out);
    }

    fn write_delta(
        self: Box<Self>,
        snapshot: &mut Snapshot,
        info: &Info,
        number: u64,
    ) -> Result<(), SaveError> {
        let rows = RowsOut {
            entities: &self.ids,
            values: &self.values,
            lost: &self.lost,
        };
        snapshot
            .capture_memento_versioned(&delta_id(&info.id, number), &rows, info.version)
            .map_err(|source| SaveError::Serialize {
                type_name: info.type_name,
                entity: culprit(&self, snapshot),
                source: Box::new(source),
            })
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
    let mut mapper = WorldMapper::new(world);
    R::map_entities(&mut resource, &mut mapper);
    *unsaved += mapper.unsaved;
    Some(Box::new(CopiedResource(resource)))
}

impl<R: Resource + Serialize> Column for CopiedResource<R> {
    fn write_column(
        self: Box<Self>,
        _ids: &EntityIds,
        snapshot: &mut Snapshot,
        info: &Info,
    ) -> Result<usize, SaveError> {
        self.write_delta(snapshot, info, 0).map(|()| 0)
    }

    fn touched(&self, _out: &mut Vec<u32>) {}

    fn write_delta(
        self: Box<Self>,
        snapshot: &mut Snapshot,
        info: &Info,
        _number: u64,
    ) -> Result<(), SaveError> {
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

/// Decodes a component's values: its column (for the entities no delta rewrote) and the rows
/// of the last delta that wrote each of the others.
pub(crate) fn decode_component<T: Component + DeserializeOwned + Send>(
    _world: &World,
    snapshot: &Snapshot,
    info: &Info,
    rewritten: &Rewritten,
) -> Result<Box<dyn Pending>, SaveError> {
    let rows = decode_rows::<T, T>(snapshot, info, rewritten, |_, value| Ok(value))?;
    Ok(Box::new(Decoded(rows)))
}

/// A component's rows, each value decoded as `V` and made a `T` by `convert` (told the id of
/// the memento the value is from, for its errors): its column's,
/// then each delta's rows in order (a value replaces the entity's, a loss removes it); for an
/// entity a delta of the older layout rewrote, its own memento instead of the column's.
pub(crate) fn decode_rows<V: DeserializeOwned, T>(
    snapshot: &Snapshot,
    info: &Info,
    rewritten: &Rewritten,
    mut convert: impl FnMut(&str, V) -> Result<T, SaveError>,
) -> Result<Vec<(u32, T)>, SaveError> {
    // What the deltas say, by id: the value an entity's last delta gave it, or none (a loss).
    let mut changed: BTreeMap<u32, Option<T>> = BTreeMap::new();
    let mut id = String::new();
    // A delta of the older layout: each entity it wrote has its own memento, or no value
    // (older than any rows).
    for save_id in &rewritten.older {
        entity_memento_id(&mut id, &info.id, *save_id);
        let value = if snapshot.contains(&id) {
            Some(convert(&id, decode_memento(snapshot, &id, info)?)?)
        } else {
            None
        };
        changed.insert(*save_id, value);
    }
    for &n in &rewritten.deltas {
        let id = delta_id(&info.id, n);
        if !snapshot.contains(&id) {
            continue;
        }
        let delta: RowsIn<V> = decode_memento(snapshot, &id, info)?;
        check_lengths(&id, delta.entities.len(), delta.values.len())?;
        for save_id in delta.lost {
            changed.insert(save_id, None);
        }
        for (save_id, value) in delta.entities.into_iter().zip(delta.values) {
            changed.insert(save_id, Some(convert(&id, value)?));
        }
    }
    let mut rows: Vec<(u32, T)> = Vec::new();
    if snapshot.contains(&info.id) {
        let column: ColumnIn<V> = decode_memento(snapshot, &info.id, info)?;
        check_lengths(&info.id, column.entities.len(), column.values.len())?;
        rows.reserve(column.entities.len());
        for (id, value) in column.entities.into_iter().zip(column.values) {
            if changed.is_empty() || !changed.contains_key(&id) {
                rows.push((id, convert(&info.id, value)?));
            }
        }
    }
    rows.extend(
        changed
            .into_iter()
            .filter_map(|(id, value)| Some((id, value?))),
    );
    Ok(rows)
}

/// A column-shaped memento must have a value for each entity.
fn check_lengths(id: &str, entities: usize, values: usize) -> Result<(), SaveError> {
    if entities == values {
        return Ok(());
    }
    Err(SaveError::Malformed {
        id: id.to_owned(),
        reason: format!("{entities} entities but {values} values"),
    })
}

/// Finds whether a value has entity references: counts them, and changes none.
struct Probe(usize);

impl EntityMapper for Probe {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        self.0 += 1;
        source
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}

/// A component's decoded values, waiting for the world.
pub(crate) struct Decoded<T>(pub(crate) Vec<(u32, T)>);

impl<T: Component + Send> Pending for Decoded<T> {
    fn for_each_id(&self, f: &mut dyn FnMut(u32)) {
        for (id, _) in &self.0 {
            f(*id);
        }
    }

    fn spawnable(&mut self) -> Option<usize> {
        let mut probe = Probe(0);
        for (_, value) in &mut self.0 {
            T::map_entities(value, &mut probe);
            if probe.0 > 0 {
                return None;
            }
        }
        Some(self.0.len())
    }

    fn spawn_with(&mut self, world: &mut World, ids: &[SaveId]) -> Vec<Entity> {
        // Where each id's value is (its last, where a column holds an id twice, as `apply`
        // leaves it): a vector indexed by id for the ids a plugin gives out (dense, from 0), a
        // map for others.
        let top = self.0.iter().map(|(id, _)| *id as usize).max().unwrap_or(0);
        let dense = top < self.0.len().saturating_mul(4).saturating_add(1024);
        let mut by_index: Vec<u32> = vec![u32::MAX; if dense { top + 1 } else { 0 }];
        let mut by_map: HashMap<u32, u32> = HashMap::new();
        for (k, (id, _)) in self.0.iter().enumerate() {
            let k = u32::try_from(k).unwrap_or(u32::MAX);
            match by_index.get_mut(*id as usize) {
                Some(slot) => *slot = k,
                None => {
                    by_map.insert(*id, k);
                }
            }
        }
        let at = |id: u32| match by_index.get(id as usize) {
            Some(k) => Some(*k as usize),
            None => by_map.get(&id).map(|k| *k as usize),
        };
        let mut values: Vec<Option<(u32, T)>> =
            std::mem::take(&mut self.0).into_iter().map(Some).collect();
        let mut take = |id: u32| values.get_mut(at(id)?)?.take().map(|(_, value)| value);
        // Runs of entities with a value and without, each spawned as one batch, in order.
        let mut spawned = Vec::with_capacity(ids.len());
        let mut with: Vec<(Saveable, SaveId, T)> = Vec::new();
        let mut without: Vec<SaveId> = Vec::new();
        for id in ids {
            match take(id.get()) {
                Some(value) => {
                    if !without.is_empty() {
                        spawned.extend(spawn_saved(world, &without));
                        without.clear();
                    }
                    with.push((Saveable, *id, value));
                }
                None => {
                    if !with.is_empty() {
                        spawned.extend(world.spawn_batch(with.drain(..)));
                    }
                    without.push(*id);
                }
            }
        }
        spawned.extend(world.spawn_batch(with));
        spawned.extend(spawn_saved(world, &without));
        // What is left, but for the earlier values of the ids spawned with their last.
        let taken: Vec<bool> = values
            .iter()
            .map(|v| {
                v.as_ref()
                    .and_then(|(id, _)| at(*id))
                    .is_some_and(|k| values.get(k).is_some_and(Option::is_none))
            })
            .collect();
        self.0 = values
            .into_iter()
            .zip(taken)
            .filter_map(|(value, taken)| value.filter(|_| !taken))
            .collect();
        spawned
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
    _rewritten: &Rewritten,
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

    fn absent(&self) -> bool {
        true
    }
}

/// Removes `T` from an entity, if it has it.
pub(crate) fn remove_component<T: Component>(world: &mut World, entity: Entity) {
    if let Ok(mut entity) = world.get_entity_mut(entity) {
        entity.remove::<T>();
    }
}

/// Lists a component's memento types: its column, a delta's rows (the column's shape), and
/// the per-entity values of deltas of the older layout (which loads still read).
pub(crate) fn describe_component<T: Component + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    info: &Info,
) -> savegame::Result<()> {
    types.memento::<ColumnIn<T>>(info.id.clone(), info.version)?;
    types.memento::<RowsIn<T>>(format!("{}{DELTA_MARK}*", info.id), info.version)?;
    types.memento::<T>(format!("{}/*", info.id), info.version)
}

/// Lists a resource's memento type.
pub(crate) fn describe_resource<R: Resource + Serialize + DeserializeOwned>(
    types: &mut MementoTypes,
    info: &Info,
) -> savegame::Result<()> {
    types.memento::<R>(info.id.clone(), info.version)
}
