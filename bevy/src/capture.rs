//! Saving the world in two halves: what the frame copies out of it ([`copy_full`],
//! [`copy_delta`]), and what the manager's worker makes of the copies ([`FullCopy::make`],
//! [`DeltaCopy::make`]): the snapshot of a full save, or the mementos of a delta.
//!
//! **What the frame pays.** A full save: one pass over the saved entities for their ids (new
//! ones get theirs), one pass per registered component to clone its values (entity references
//! are not mapped yet), one over the saved children's links marking their parents in a set of
//! entity indices, one over the entities with children copying the marked ones' lists (both in
//! [`crate::parents`]), and a clone of each registered resource. Each pass reads a table at a
//! time where the query allows it (Bevy's contiguous queries: a column of `Copy` values is
//! copied as one slice), and the vectors as long as the world are sized before they are filled
//! (a large vector's growth is fresh pages, each a fault). No hash map, no sorting, no serde:
//! the worker builds the map from entities to ids, sorts, maps references and serializes. A
//! delta: one pass per registered component over its change ticks (a table at a time, in blocks
//! of rows: [`ticks`]), cloning each changed value as it passes (its references mapped, by
//! looking their targets up); one pass over `Saveable`'s and `ChildOf`'s ticks together, and
//! one over `Children`'s, for the entities whose record it writes (newly saved, or moved in the
//! hierarchy: each looked up for its parent and place), and the newly saved entities' every
//! value. An entity whose values alone changed costs only them.

use bevy_ecs::change_detection::{ContiguousRef, DetectChanges, Tick};
use bevy_ecs::entity::Entity;
use bevy_ecs::hierarchy::{ChildOf, Children};
use bevy_ecs::query::Has;
use bevy_ecs::world::Ref;
use bevy_ecs::world::{Mut, World};
use savegame::{Metadata, SlotId, Snapshot};

use crate::entry::{Column, Info, SaveRegistry};
use crate::error::SaveError;
use crate::ids::{
    AnyEntity, EntityIds, NextSaveId, SaveId, Saveable, give_ids, keep_next_above, without_ids,
};
use crate::layout::{
    ENTITIES_ID, EntitiesMemento, EntityRecord, HIERARCHY_ID, HierarchyMemento, NEXT_ID,
    NextMemento, RecordsMemento, delta_id,
};
use crate::manager::{Counts, SaveManager};
use crate::parents::{ParentCopy, copy_parents};
use crate::ticks;
use crate::tracking::{Incremental, Left, Mark};

/// An empty snapshot in the manager's codec, with `metadata`.
fn template(world: &World, metadata: Metadata) -> Result<Snapshot, SaveError> {
    let mut snapshot = world
        .get_resource::<SaveManager>()
        .ok_or_else(|| SaveError::NotSetUp {
            reason: "no SaveManager resource: add SavegamePlugin".into(),
        })?
        .manager()
        .snapshot();
    *snapshot.metadata_mut() = metadata;
    Ok(snapshot)
}

/// What a full save copied in the frame.
pub(crate) struct FullCopy {
    snapshot: Snapshot,
    /// Every saved entity with its id.
    entities: Vec<(Entity, u32)>,
    next: u32,
    parents: Vec<ParentCopy>,
    children: Vec<Entity>,
    columns: Vec<(Info, Box<dyn Column>)>,
    resources: Vec<(Info, Box<dyn Column>)>,
    /// References of the resources to unsaved entities (mapped in the frame).
    unsaved_references: usize,
}

/// Copies what a full save of the world needs (see the module's docs for the cost).
pub(crate) fn copy_full(world: &mut World, metadata: Metadata) -> Result<FullCopy, SaveError> {
    let snapshot = template(world, metadata)?;
    let mut query = ticks::saved::<(Entity, &SaveId)>(world);
    // The filters are archetypal, so the upper bound is the count: the vector never grows.
    let count = query.iter(world).size_hint().1.unwrap_or(0);
    let mut entities: Vec<(Entity, u32)> = Vec::with_capacity(count);
    let mut top = None;
    match query.contiguous_iter(world) {
        Ok(tables) => {
            for (these, ids) in tables {
                top = top.max(ids.iter().map(|id| id.get()).max());
                entities.extend(these.iter().zip(ids).map(|(e, id)| (*e, id.get())));
            }
        }
        // A game's disabling component in a sparse set: row by row.
        Err(_) => {
            for (entity, id) in query.iter(world) {
                top = top.max(Some(id.get()));
                entities.push((entity, id.get()));
            }
        }
    }
    let (parents, children) = copy_parents(world, &mut entities, top)?;
    let next = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
    world.resource_scope(|world, registry: Mut<SaveRegistry>| {
        registry.check()?;
        let mut columns = Vec::with_capacity(registry.components.len());
        for entry in &registry.components {
            columns.push((entry.info.clone(), (entry.copy_all)(world)));
        }
        let mut resources = Vec::with_capacity(registry.resources.len());
        let mut unsaved_references = 0;
        for entry in &registry.resources {
            if let Some(copied) = (entry.copy)(world, &mut unsaved_references) {
                resources.push((entry.info.clone(), copied));
            }
        }
        Ok(FullCopy {
            snapshot,
            entities,
            next,
            parents,
            children,
            columns,
            resources,
            unsaved_references,
        })
    })
}

impl FullCopy {
    /// Makes the full save's snapshot (on the manager's worker).
    ///
    /// # Errors
    /// [`SaveError::DuplicateSaveId`] for two saved entities with one id;
    /// [`SaveError::Serialize`] for a value the codec refuses.
    pub(crate) fn make(self) -> Result<(Snapshot, Counts), SaveError> {
        let FullCopy {
            mut snapshot,
            entities,
            next,
            mut parents,
            children,
            columns,
            resources,
            unsaved_references,
        } = self;
        let sorted = match sorted_ids(&entities) {
            Ok(sorted) => sorted,
            Err(twice) => {
                let mut owners = entities.iter().filter(|(_, id)| *id == twice);
                let (first, second) = (owners.next(), owners.next());
                return Err(SaveError::DuplicateSaveId {
                    id: twice,
                    first: first.map_or(Entity::PLACEHOLDER, |o| o.0),
                    second: second.map_or(Entity::PLACEHOLDER, |o| o.0),
                });
            }
        };
        let ids = EntityIds::new(&entities);
        let memento = EntitiesMemento { ids: sorted, next };
        snapshot.capture_memento(ENTITIES_ID, &memento)?;

        parents.sort_unstable_by_key(|p| p.id);
        let mut hierarchy = HierarchyMemento {
            unsaved_parents: true,
            ..HierarchyMemento::default()
        };
        for parent in &parents {
            for (position, child) in children[parent.children.clone()].iter().enumerate() {
                if let Some(child) = ids.get(*child) {
                    hierarchy.children.push(child);
                    hierarchy.parents.push(parent.id);
                    hierarchy
                        .positions
                        .push(u32::try_from(position).unwrap_or(u32::MAX));
                }
            }
        }
        snapshot.capture_memento(HIERARCHY_ID, &hierarchy)?;

        let mut unsaved = unsaved_references;
        for (info, column) in columns.into_iter().chain(resources) {
            unsaved += column.write_column(&ids, &mut snapshot, &info)?;
        }
        let counts = Counts {
            entities: entities.len(),
            unsaved_references: unsaved,
            ..Counts::default()
        };
        Ok((snapshot, counts))
    }
}

/// The ids of `entities`, ascending, or `Err` with an id two entities hold. Ids are dense (the
/// plugin gives them out from 0), so a bitmap of them sorts them in one pass.
fn sorted_ids(entities: &[(Entity, u32)]) -> Result<Vec<u32>, u32> {
    let top = entities
        .iter()
        .map(|(_, id)| *id as usize)
        .max()
        .unwrap_or(0);
    if top > entities.len().saturating_mul(8).saturating_add(4096) {
        let mut sorted: Vec<u32> = entities.iter().map(|(_, id)| *id).collect();
        sorted.sort_unstable();
        return match sorted.windows(2).find(|w| w[0] == w[1]) {
            Some(pair) => Err(pair[0]),
            None => Ok(sorted),
        };
    }
    let mut bits = vec![0u64; top / 64 + 1];
    for (_, id) in entities {
        let (word, bit) = (*id as usize / 64, 1u64 << (id % 64));
        if bits[word] & bit != 0 {
            return Err(*id);
        }
        bits[word] |= bit;
    }
    let mut sorted = Vec::with_capacity(entities.len());
    for (w, word) in bits.iter().enumerate() {
        let mut rest = *word;
        while rest != 0 {
            let bit = rest.trailing_zeros();
            sorted.push(u32::try_from(w * 64).unwrap_or(u32::MAX) + bit);
            rest &= rest - 1;
        }
    }
    Ok(sorted)
}

/// What a delta copied in the frame.
pub(crate) struct DeltaCopy {
    snapshot: Snapshot,
    /// The delta's number since the slot's last full save: its rows' ids end in it.
    number: u64,
    /// The records it writes: of the entities written whole, and of those whose place in the
    /// hierarchy changed.
    records: Vec<(u32, EntityRecord)>,
    /// The ids it removes.
    removed: Vec<u32>,
    next: u32,
    columns: Vec<(Info, Box<dyn Column>)>,
    resources: Vec<(Info, Box<dyn Column>)>,
    unsaved_references: usize,
    /// Saved entities in the world.
    entities: usize,
}

/// A delta's copy, or the metadata back for a full save.
pub(crate) enum Delta {
    /// What the delta writes.
    Copied(Box<DeltaCopy>),
    /// The save must be a full one: an entity the delta would write holds an id that the slot
    /// may hold in references to an entity gone (see [`Incremental::unheld`]), which a delta
    /// would leave pointing at it; or an entity alive at the mark and not saved then is saved
    /// now, and the slot may hold references to it as no entity, which a delta would leave so.
    /// A full save writes every reference as it is.
    Full(Metadata),
}

/// Copies what changed in the world since `slot`'s `mark` (see the module's docs for the
/// cost). `now` is the world's change tick, which the caller marks the slot with.
pub(crate) fn copy_delta(
    world: &mut World,
    metadata: Metadata,
    slot: SlotId,
    mark: Mark,
    now: Tick,
) -> Result<Delta, SaveError> {
    // Entities the delta writes whole (their record, and each value, or its loss): those newly
    // saved, spawned or with `Saveable` put (back) on (those without an id get theirs with
    // the records, in `records_of`); a value lost while not saved left no trace.
    let mut whole = without_ids(world);
    let since = mark.tick;
    // Entities whose record the delta writes: the whole ones, and those whose place in the
    // hierarchy changed. One pass over the saved entities' ticks of `Saveable` and `ChildOf`.
    let mut moved: Vec<Entity> = Vec::new();
    world.last_change_tick_scope(since, |world| {
        let mut query = ticks::saved::<(Entity, Ref<Saveable>, Option<Ref<ChildOf>>)>(world);
        match query.contiguous_iter(world) {
            Ok(tables) => {
                for (entities, saveable, link) in tables {
                    let (_, saveable) = ContiguousRef::split(saveable);
                    let (since, now) = (saveable.last_run(), saveable.this_run());
                    for row in ticks::changed_rows(saveable.changed(), since, now) {
                        whole.extend(entities.get(row));
                    }
                    if let Some(link) = link {
                        let (_, link) = ContiguousRef::split(link);
                        for row in ticks::changed_rows(link.changed(), since, now) {
                            moved.extend(entities.get(row));
                        }
                    }
                }
            }
            // A game's disabling component in a sparse set: row by row.
            Err(_) => {
                for (entity, saveable, link) in query.iter(world) {
                    if saveable.is_changed() {
                        whole.push(entity);
                    }
                    if link.is_some_and(|link| link.is_changed()) {
                        moved.push(entity);
                    }
                }
            }
        }
        // A parent whose children were reordered: each saved child's place changed.
        let mut query = ticks::any::<Ref<Children>>(world);
        match query.contiguous_iter(world) {
            Ok(tables) => {
                for lists in tables {
                    let (lists, changes) = ContiguousRef::split(lists);
                    let (since, now) = (changes.last_run(), changes.this_run());
                    for row in ticks::changed_rows(changes.changed(), since, now) {
                        if let Some(list) = lists.get(row) {
                            moved.extend_from_slice(list);
                        }
                    }
                }
            }
            Err(_) => {
                for list in query.iter(world) {
                    if list.is_changed() {
                        moved.extend_from_slice(&list);
                    }
                }
            }
        }
    });
    // What left saved entities since the mark: the entity itself, its parent, its id, or one
    // of its components (by the component's index in the registry).
    let mut removed: Vec<(Entity, u32)> = Vec::new();
    let mut lost: Vec<(usize, u32)> = Vec::new();
    // Resources removed and put back since, or left in the world by a load of a save that
    // lacks them: written whatever their ticks.
    let mut put_back: Vec<usize> = Vec::new();
    // Entities that lost `Saveable` since the mark and had it from before: saved at the mark.
    let mut saved_then: Vec<Entity> = Vec::new();
    if let Some(incremental) = world.get_resource::<Incremental>() {
        for removal in incremental.removals_since(mark) {
            match removal.left {
                Left::Entity => {
                    removed.push((removal.entity, removal.id));
                    if removal
                        .saved_from
                        .is_some_and(|tick| !tick.is_newer_than(since, now))
                    {
                        saved_then.push(removal.entity);
                    }
                }
                Left::Parent => moved.push(removal.entity),
                Left::Component(index) => lost.push((index, removal.id)),
                // Its id discarded: by a despawn, or with the same id put back (an entity
                // now under another id, or none, makes the save a full one: see
                // `needs_full_save`). The id goes unless the entity is saved under it still.
                Left::Id => removed.push((removal.entity, removal.id)),
                // Removed for good makes the save a full one (`needs_full_save`).
                Left::Resource(index) => put_back.push(index),
            }
        }
    }
    whole.sort_unstable();
    whole.dedup();
    // An entity alive at the mark and not saved then, saved now (`Saveable` added after the
    // mark, and not one that lost it since and had it from before): the slot may hold
    // references to it written as no entity, which a delta would leave as they are, and a
    // full save writes to it. (Each save that found such an entity was a full one, so the
    // slot holds no such reference to an entity saved then.)
    saved_then.sort_unstable();
    let newly_saved =
        |e: &Entity| saved_since(world, *e, since, now) && saved_then.binary_search(e).is_err();
    if whole.iter().any(newly_saved) {
        return Ok(Delta::Full(metadata));
    }
    moved.extend_from_slice(&whole);
    moved.sort_unstable();
    moved.dedup();
    world.resource_scope(|world, registry: Mut<SaveRegistry>| {
        registry.check()?;
        let (linked, records, new_from) = records_of(world, &moved)?;
        // `linked` is in the order of the entities, as `whole` is.
        let whole: Vec<(Entity, u32)> = linked
            .into_iter()
            .filter(|(entity, _)| whole.binary_search(entity).is_ok())
            .collect();
        let mut gone: Vec<u32> = removed
            .iter()
            .filter(|(entity, id)| {
                // Despawned, or no longer saved; not one saved again since.
                !world.get_entity(*entity).is_ok_and(|e| {
                    e.contains::<Saveable>() && e.get::<SaveId>().map(|s| s.get()) == Some(*id)
                })
            })
            .map(|(_, id)| *id)
            .collect();
        gone.sort_unstable();
        gone.dedup();
        // An id the slot may hold in references to an entity gone, given to one the delta
        // writes: gone since the mark (and given again since: a game's own id, on an entity
        // spawned again), or before it.
        let incremental = world.get_resource::<Incremental>();
        let unheld = |id: u32| incremental.is_some_and(|i| i.unheld(slot, id));
        let given_again = records
            .iter()
            .any(|(id, _)| gone.binary_search(id).is_ok() || unheld(*id));
        if given_again {
            return Ok(Delta::Full(metadata));
        }
        // A removed entity's values went with it (a despawn removes each component).
        lost.retain(|(_, id)| gone.binary_search(id).is_err());
        lost.sort_unstable();
        lost.dedup();
        let mut unsaved = 0;
        let mut columns = Vec::with_capacity(registry.components.len());
        for (index, entry) in registry.components.iter().enumerate() {
            let from = lost.partition_point(|(i, _)| *i < index);
            let to = lost.partition_point(|(i, _)| *i <= index);
            let its = lost.get(from..to).unwrap_or_default();
            let its: Vec<u32> = its.iter().map(|(_, id)| *id).collect();
            let copied = (entry.copy_delta)(world, since, &whole, new_from, its, &mut unsaved);
            columns.push((entry.info.clone(), copied));
        }
        let mut resources = Vec::new();
        for (index, entry) in registry.resources.iter().enumerate() {
            if ((entry.changed)(world, since, now) || put_back.contains(&index))
                && let Some(copied) = (entry.copy)(world, &mut unsaved)
            {
                resources.push((entry.info.clone(), copied));
            }
        }
        Ok(Delta::Copied(Box::new(DeltaCopy {
            snapshot: template(world, metadata)?,
            number: mark.delta,
            records,
            removed: gone,
            next: world.get_resource::<NextSaveId>().map_or(0, |n| n.0),
            columns,
            resources,
            unsaved_references: unsaved,
            entities: saved_count(world),
        })))
    })
}

/// Whether what changed since `mark` is more than a delta can say, so that the save must be a
/// full one:
/// - an entity alive now holds another id than one it held at `mark`, or none (the game
///   inserted a new [`SaveId`] or removed it): the slot holds the old id in references in
///   entities the delta does not write, and in the links of saved children whose unsaved
///   parent it is;
/// - a registered resource was removed, and is still missing: a load leaves a resource the
///   save lacks as it is;
/// - a saved entity alive at `mark`, and not hidden then (or, after a load, hidden and held by
///   the slot), is hidden by a game's disabling component now (the slot may hold it; a full
///   save leaves it out), or one hidden then is saved and shown now (the slot lacks it).
///   `hidden`: the hidden saved entities and parents now (`ids::hidden`). Hidden entities
///   spawned since, and ones despawned, change nothing;
/// - a parent of a saved entity alive at `mark` is hidden now and was not then, or the
///   reverse: the slot holds the child's link as it was (a full save links no child to a
///   hidden parent), and the delta writes the child only if its own link changed.
///
/// [`copy_delta`] finds two more cases, once it knows what it writes: an entity alive at
/// `mark` saved since (the slot may hold references to it as no entity), and a new entity
/// under an id the slot may hold in references ([`Delta::Full`]).
pub(crate) fn needs_full_save(
    world: &World,
    slot: SlotId,
    mark: Mark,
    now: Tick,
    hidden: &[Entity],
) -> bool {
    let Some(incremental) = world.get_resource::<Incremental>() else {
        return false;
    };
    let [since, shown] = incremental.hidden_since(slot, hidden);
    // Saved now, and alive at `mark`: the slot may hold it (`Saveable` may have been taken off
    // and put back since, which renews its added tick).
    let held = |entity: &Entity| {
        world.get_entity(*entity).is_ok_and(|e| {
            e.contains::<Saveable>() && !e.spawn_tick().is_newer_than(mark.tick, now)
        })
    };
    let saved = |entity: &Entity| {
        world
            .get_entity(*entity)
            .is_ok_and(|e| e.contains::<Saveable>())
    };
    let holds_held = |parent: &Entity| {
        world
            .get::<Children>(*parent)
            .is_some_and(|children| children.iter().any(&held))
    };
    if since.iter().any(held)
        || shown.iter().any(saved)
        || since.iter().chain(&shown).any(holds_held)
    {
        return true;
    }
    let registry = world.get_resource::<SaveRegistry>();
    incremental
        .removals_since(mark)
        .iter()
        .any(|removal| match removal.left {
            Left::Id => world
                .get_entity(removal.entity)
                .is_ok_and(|e| e.get::<SaveId>().map(|id| id.get()) != Some(removal.id)),
            Left::Resource(index) => registry
                .and_then(|r| r.resources.get(index))
                .is_some_and(|entry| !(entry.present)(world)),
            Left::Entity | Left::Component(_) | Left::Parent => false,
        })
}

/// Whether `entity` was alive at `since` and its [`Saveable`] was added after it.
fn saved_since(world: &World, entity: Entity, since: Tick, now: Tick) -> bool {
    world.get_entity(entity).is_ok_and(|e| {
        !e.spawn_tick().is_newer_than(since, now)
            && e.get_ref::<Saveable>()
                .is_some_and(|saveable| saveable.added().is_newer_than(since, now))
    })
}

/// How many saved entities (with an id) the world has, from its archetypes' sizes.
fn saved_count(world: &World) -> usize {
    let (Some(saveable), Some(id)) = (
        world.component_id::<Saveable>(),
        world.component_id::<SaveId>(),
    ) else {
        return 0;
    };
    world
        .archetypes()
        .iter()
        .filter(|a| a.contains(saveable) && a.contains(id))
        .map(|a| a.len() as usize)
        .sum()
}

/// A delta's written entities with their ids, their records by id, and the first id given in
/// this delta (the entities from it up were never saved before).
type Records = (Vec<(Entity, u32)>, Vec<(u32, EntityRecord)>, u32);

/// The saved entities among `changed` (ascending) with their ids, and their records: each
/// one's parent's id and its place among the parent's children. Entities newly saved without
/// an id, and parents without one, are given one here, after every id the entities and their
/// parents already hold is seen, so that none given is one the game gave itself.
fn records_of(world: &mut World, changed: &[Entity]) -> Result<Records, SaveError> {
    let mut written: Vec<(Entity, u32)> = Vec::with_capacity(changed.len());
    let mut records: Vec<(u32, EntityRecord)> = Vec::with_capacity(changed.len());
    // Written entities without an id yet (newly saved): their index.
    let mut unnamed: Vec<usize> = Vec::new();
    // Records whose parent has no id yet: their index, and the parent.
    let mut orphans: Vec<(usize, Entity)> = Vec::new();
    // The highest id seen, of an entity or of a parent.
    let mut top = None;
    {
        // Query states find each entity's components without looking their columns up by
        // type each time, as `World::get` does.
        let saved =
            world.query_filtered::<(Option<&SaveId>, Has<Saveable>, Option<&ChildOf>), AnyEntity>();
        let parents = world.query_filtered::<(Option<&Children>, Option<&SaveId>), AnyEntity>();
        let (saved, parents) = (saved.query_manual(world), parents.query_manual(world));
        for &entity in changed {
            let Ok((id, true, link)) = saved.get(entity) else {
                continue;
            };
            let id = match id {
                Some(id) => {
                    top = top.max(Some(id.get()));
                    id.get()
                }
                None => {
                    unnamed.push(records.len());
                    0
                }
            };
            written.push((entity, id));
            let mut record = EntityRecord {
                saved: true,
                parent: None,
                position: None,
            };
            // A parent a game's disabling component hides (or one gone, its link made with
            // Bevy's hooks skipped): no link, as a full save finds none (`copy_parents`).
            if let Some((parent, Ok((list, parent_id)))) =
                link.map(|link| (link.parent(), parents.get(link.parent())))
            {
                record.position = list
                    .and_then(|list| list.iter().position(|c| *c == entity))
                    .map(|p| u32::try_from(p).unwrap_or(u32::MAX));
                match parent_id {
                    Some(parent_id) => {
                        record.parent = Some(parent_id.get());
                        top = top.max(Some(parent_id.get()));
                    }
                    None => orphans.push((records.len(), parent)),
                }
            }
            records.push((id, record));
        }
    }
    keep_next_above(world, top);
    let new_from = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
    // In the order of the entities, as the ids of a full save follow it.
    let entities: Vec<Entity> = unnamed
        .iter()
        .filter_map(|&index| written.get(index).map(|(entity, _)| *entity))
        .collect();
    for (index, (_, id)) in unnamed.into_iter().zip(give_ids(world, &entities)?) {
        if let (Some(entity), Some(record)) = (written.get_mut(index), records.get_mut(index)) {
            entity.1 = id;
            record.0 = id;
        }
    }
    // A parent newly saved itself has its id now; the others are given one.
    let mut parents: Vec<Entity> = orphans
        .iter()
        .map(|(_, parent)| *parent)
        .filter(|parent| world.get::<SaveId>(*parent).is_none())
        .collect();
    parents.sort_unstable();
    parents.dedup();
    give_ids(world, &parents)?;
    for (index, parent) in orphans {
        let id = world
            .get::<SaveId>(parent)
            .map(|id| id.get())
            .ok_or(SaveError::IdsExhausted)?;
        if let Some((_, record)) = records.get_mut(index) {
            record.parent = Some(id);
        }
    }
    Ok((written, records, new_from))
}

impl DeltaCopy {
    /// The ids it removes (ascending): the slot may still hold them in references that the
    /// delta does not write.
    pub(crate) fn removed(&self) -> &[u32] {
        &self.removed
    }

    /// Makes the delta's snapshot (on the manager's worker): its rows (see
    /// [`layout`](crate::layout)): the records of the entities newly saved, moved in the
    /// hierarchy or removed, and each component's changed values and losses; the next id and
    /// the changed resources.
    ///
    /// # Errors
    /// [`SaveError::Serialize`] for a value the codec refuses.
    pub(crate) fn make(self) -> Result<(Snapshot, Counts), SaveError> {
        let DeltaCopy {
            mut snapshot,
            number,
            records,
            removed,
            next,
            columns,
            resources,
            unsaved_references,
            entities,
        } = self;
        // The entities it writes something of: a record, a value, a loss.
        let mut written: Vec<u32> = records.iter().map(|(id, _)| *id).collect();
        // New ids come with records (a spawned entity, a parent given an id).
        let new_ids = !records.is_empty();
        if !records.is_empty() || !removed.is_empty() {
            let gone = EntityRecord {
                saved: false,
                parent: None,
                position: None,
            };
            let (mut ids, mut records): (Vec<u32>, Vec<EntityRecord>) = records.into_iter().unzip();
            ids.extend_from_slice(&removed);
            records.resize(ids.len(), gone);
            let rows = RecordsMemento { ids, records };
            snapshot.capture_memento(&delta_id(ENTITIES_ID, number), &rows)?;
        }
        // A component's rows, when it has any.
        for (info, column) in columns {
            let before = written.len();
            column.touched(&mut written);
            if written.len() > before {
                column.write_delta(&mut snapshot, &info, number)?;
            }
        }
        for (info, column) in resources {
            column.write_delta(&mut snapshot, &info, number)?;
        }
        if new_ids {
            snapshot.capture_memento(NEXT_ID, &NextMemento { next })?;
        }
        written.sort_unstable();
        written.dedup();
        let counts = Counts {
            entities,
            unsaved_references,
            written: written.len(),
            removed: removed.len(),
        };
        Ok((snapshot, counts))
    }
}
