//! Which entities are saved ([`Saveable`]), the stable ids they are saved under ([`SaveId`]),
//! and the maps between ids and live entities.

use std::collections::HashMap;

use bevy_ecs::archetype::Archetype;
use bevy_ecs::component::Component;
use bevy_ecs::component::ComponentId;
use bevy_ecs::entity::{Entity, EntityHashMap, EntityMapper};
use bevy_ecs::entity_disabling::{DefaultQueryFilters, Disabled};
use bevy_ecs::hierarchy::Children;
use bevy_ecs::lifecycle::HookContext;
use bevy_ecs::query::{Allow, With, Without};
use bevy_ecs::resource::Resource;
use bevy_ecs::world::{DeferredWorld, World};

use crate::error::SaveError;
use crate::tracking::{Incremental, Left};

/// Marks an entity whose registered components are saved. Entities without it are never
/// saved, loaded over or despawned by a load. A disabled entity (Bevy's `Disabled`) with it is
/// saved and loaded as any other.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Saveable;

/// The filter of the plugin's queries over any entity: Bevy's `Disabled` entities too, which
/// the default query filters would hide (a disabled entity is saved and loaded as any other;
/// a game's own disabling components still hide theirs).
pub(crate) type AnyEntity = Allow<Disabled>;

/// The filter of the plugin's queries over saved entities: those with [`Saveable`], disabled
/// ones too ([`AnyEntity`]).
pub(crate) type SavedEntity = (With<Saveable>, AnyEntity);

/// The stable id of a saved entity: the same in every save and after every load, unlike its
/// [`Entity`]. The plugin gives one to each [`Saveable`] entity that has none when it is first
/// saved, and to an unsaved entity that is the parent of a saved one (so that the child's link
/// can be saved). A game may also give ids of its own (the entities of a hand-made level, say,
/// or the unsaved root its saved entities hang from, so that a load in a new session finds
/// them again); ids it gives must be unique and below [`SaveId::MAX`]. The plugin gives out
/// only ids above every id it has seen on a saved entity or on a saved entity's parent, in a
/// save or a load, and above every id an unsaved entity, or one a game's own disabling
/// component hides, holds when it gives them, so it never gives one the game gave.
///
/// An id cannot be changed in place (the component is immutable). To give an entity another
/// id, insert the new one; or remove it, and the next save gives one. The next incremental
/// save of each slot is then a full save: the slot holds the old id in references to the
/// entity and in its saved children's links, which a delta would not write again.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[component(immutable, on_discard = note_discarded_id)]
pub struct SaveId(u32);

impl SaveId {
    /// The largest id. The two values above it are reserved (`u32::MAX` has no [`Entity`], and
    /// `u32::MAX - 1` is [`Entity::PLACEHOLDER`]'s index, which stands for "no saved entity").
    pub const MAX: u32 = u32::MAX - 2;

    /// The id `id`, or `None` above [`SaveId::MAX`].
    #[must_use]
    pub const fn new(id: u32) -> Option<Self> {
        if id <= Self::MAX {
            Some(SaveId(id))
        } else {
            None
        }
    }

    /// The id as a number.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// `SaveId`'s discard hook: notes in the incremental saves' log the entity whose id is replaced
/// or removed, before it goes, saved or not (a saved child's parent). A despawn discards the id
/// too, and is noted here as well as by the observer of `Saveable`'s removals. A hook, not an
/// observer: with an observer of the id's discards, every insert on an entity with an id runs
/// the observers' machinery (a load of 10,000 entities took 6% longer).
pub(crate) fn note_discarded_id(mut world: DeferredWorld, context: HookContext) {
    let Some(id) = world.get::<SaveId>(context.entity).copied() else {
        return;
    };
    if let Some(mut incremental) = world.get_resource_mut::<Incremental>() {
        incremental.note(context.entity, id.get(), Left::Id);
    }
}

/// The stand-in entity written for id `id` in an `Entity` field: `Entity::from_raw_u32(id)`,
/// whose index is the id.
fn stand_in(id: u32) -> Entity {
    Entity::from_raw_u32(id).unwrap_or(Entity::PLACEHOLDER)
}

/// The next id the plugin gives out.
#[derive(Resource, Debug, Default)]
pub(crate) struct NextSaveId(pub(crate) u32);

/// Live entities to their stable ids, on the worker: a vector indexed by entity index (a
/// world's indices are dense), a map for the indices far above the others.
pub(crate) struct EntityIds {
    dense: Vec<(Entity, u32)>,
    limit: usize,
    sparse: EntityHashMap<u32>,
}

impl EntityIds {
    /// The map of `entities`.
    pub(crate) fn new(entities: &[(Entity, u32)]) -> Self {
        let limit = entities.len().saturating_mul(4).saturating_add(1024);
        let top = entities
            .iter()
            .map(|(e, _)| e.index_u32() as usize)
            .filter(|i| *i < limit)
            .max()
            .map_or(0, |i| i + 1);
        let mut map = EntityIds {
            dense: vec![(Entity::PLACEHOLDER, 0); top],
            limit,
            sparse: EntityHashMap::default(),
        };
        for (entity, id) in entities {
            let at = entity.index_u32() as usize;
            if at < limit {
                map.dense[at] = (*entity, *id);
            } else {
                map.sparse.insert(*entity, *id);
            }
        }
        map
    }

    pub(crate) fn get(&self, entity: Entity) -> Option<u32> {
        let at = entity.index_u32() as usize;
        if at < self.limit {
            self.dense
                .get(at)
                .filter(|(e, _)| *e == entity)
                .map(|(_, id)| *id)
        } else {
            self.sparse.get(&entity).copied()
        }
    }
}

/// Save side, on the worker: a live entity becomes the stand-in of its stable id; an entity
/// that is not saved becomes [`Entity::PLACEHOLDER`], and is counted.
pub(crate) struct ToStable<'a> {
    pub(crate) ids: &'a EntityIds,
    pub(crate) unsaved: usize,
}

impl EntityMapper for ToStable<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        if source == Entity::PLACEHOLDER {
            return source;
        }
        match self.ids.get(source) {
            Some(id) => stand_in(id),
            None => {
                self.unsaved += 1;
                Entity::PLACEHOLDER
            }
        }
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}

/// Save side, in the frame: the same, looking each entity up in the world (for the few values
/// a delta or a resource holds). An entity a game's own disabling component hides is not
/// saved, as a full save finds it among none of its saved entities.
pub(crate) struct WorldMapper<'w> {
    world: &'w World,
    /// The game's disabling components ([`hiding`]).
    hiding: Vec<ComponentId>,
    pub(crate) unsaved: usize,
}

impl<'w> WorldMapper<'w> {
    /// A mapper over `world`, with no reference to an unsaved entity met yet.
    pub(crate) fn new(world: &'w World) -> Self {
        WorldMapper {
            world,
            hiding: hiding(world),
            unsaved: 0,
        }
    }
}

impl EntityMapper for WorldMapper<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        if source == Entity::PLACEHOLDER {
            return source;
        }
        let saved = self
            .world
            .get_entity(source)
            .ok()
            .filter(|e| e.contains::<Saveable>())
            .filter(|e| !hides(&self.hiding, e.archetype()))
            .and_then(|e| e.get::<SaveId>().copied());
        match saved {
            Some(id) => stand_in(id.get()),
            None => {
                self.unsaved += 1;
                Entity::PLACEHOLDER
            }
        }
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}

/// Stable ids to live entities, for a load, each with its rank (the order it was put in: the
/// entities kept first, then those spawned, in spawn order): a vector indexed by id for the ids
/// a plugin gives out (dense, from 0), a map for the ones above.
pub(crate) struct IdMap {
    dense: Vec<(Entity, u32)>,
    /// How far the vector may grow: ids from it on go to the map.
    limit: usize,
    sparse: HashMap<u32, (Entity, u32)>,
    len: u32,
}

impl IdMap {
    /// A map that will hold about `count` ids.
    pub(crate) fn with_capacity(count: usize) -> Self {
        IdMap {
            dense: Vec::with_capacity(count),
            limit: count.saturating_mul(4).saturating_add(1024),
            sparse: HashMap::new(),
            len: 0,
        }
    }

    /// Adds `id`, the next in rank.
    pub(crate) fn insert(&mut self, id: u32, entity: Entity) {
        let at = id as usize;
        let value = (entity, self.len);
        self.len += 1;
        if at < self.limit {
            if at >= self.dense.len() {
                self.dense.resize(at + 1, (Entity::PLACEHOLDER, 0));
            }
            self.dense[at] = value;
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// The entity with `id`, and its rank.
    pub(crate) fn ranked(&self, id: u32) -> Option<(Entity, u32)> {
        match self.dense.get(id as usize) {
            Some(v) if v.0 != Entity::PLACEHOLDER => Some(*v),
            Some(_) => None,
            None => self.sparse.get(&id).copied(),
        }
    }

    pub(crate) fn get(&self, id: u32) -> Option<Entity> {
        self.ranked(id).map(|(e, _)| e)
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.get(id).is_some()
    }

    /// How many ids it holds (one past the highest rank).
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }
}

/// Spawns a saved entity (`Saveable` and its id) for each of `ids`; returns them in order.
pub(crate) fn spawn_saved(world: &mut World, ids: &[SaveId]) -> Vec<Entity> {
    world
        .spawn_batch(ids.iter().map(|id| (Saveable, *id)))
        .collect()
}

/// Load side: a stand-in becomes the live entity that now has its id; anything else (the
/// placeholder, an id the save does not have) becomes [`Entity::PLACEHOLDER`].
pub(crate) struct FromStable<'a> {
    pub(crate) entities: &'a IdMap,
    pub(crate) dangling: usize,
}

impl EntityMapper for FromStable<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        if source == Entity::PLACEHOLDER {
            return source;
        }
        match self.entities.get(source.index_u32()) {
            Some(entity) => entity,
            None => {
                self.dangling += 1;
                Entity::PLACEHOLDER
            }
        }
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}

/// Keeps the next id the plugin gives above `top`, an id the game gave itself: it is never
/// given out again.
pub(crate) fn keep_next_above(world: &mut World, top: Option<u32>) {
    if let Some(top) = top {
        let next = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
        world.insert_resource(NextSaveId(next.max(top.saturating_add(1))));
    }
}

/// Gives ids to `entities`, in order, from the next free one; returns them with their ids. The
/// next free one is above every id an entity no save sees holds too: an unsaved one (the
/// game's own id, on an entity no save has seen yet, which a saved child may link to later),
/// or one a game's own disabling component hides (shown again, it would hold an id twice).
pub(crate) fn give_ids(
    world: &mut World,
    entities: &[Entity],
) -> Result<Vec<(Entity, u32)>, SaveError> {
    if entities.is_empty() {
        return Ok(Vec::new());
    }
    let mut unsaved = world.query_filtered::<&SaveId, (Without<Saveable>, AnyEntity)>();
    let top = unsaved.iter(world).map(|id| id.get()).max();
    keep_next_above(world, top.max(top_hidden(world)));
    let mut next = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
    let mut given = Vec::with_capacity(entities.len());
    for entity in entities {
        let id = SaveId::new(next).ok_or(SaveError::IdsExhausted)?;
        next += 1;
        given.push((*entity, id));
    }
    let pairs: Vec<(Entity, u32)> = given.iter().map(|(e, id)| (*e, id.get())).collect();
    world.insert_batch(given);
    world.insert_resource(NextSaveId(next));
    Ok(pairs)
}

/// The highest id an entity a game's own disabling component hides holds (read through the
/// archetypes: a query would leave the entity out).
fn top_hidden(world: &World) -> Option<u32> {
    let save_id = world.component_id::<SaveId>()?;
    let hiding = hiding(world);
    if hiding.is_empty() {
        return None;
    }
    world
        .archetypes()
        .iter()
        .filter(|a| a.contains(save_id) && hides(&hiding, a))
        .flat_map(|a| a.entities())
        .filter_map(|e| world.get::<SaveId>(e.id()).map(|id| id.get()))
        .max()
}

/// The disabling components a game registered (Bevy's `Disabled` aside: disabled entities are
/// saved).
pub(crate) fn hiding(world: &World) -> Vec<ComponentId> {
    let Some(filters) = world.get_resource::<DefaultQueryFilters>() else {
        return Vec::new();
    };
    let disabled = world.component_id::<Disabled>();
    filters
        .disabling_ids()
        .filter(|id| Some(*id) != disabled)
        .collect()
}

/// Whether the entities of `archetype` are hidden by one of `hiding` ([`hiding`]).
fn hides(hiding: &[ComponentId], archetype: &Archetype) -> bool {
    hiding.iter().any(|id| archetype.contains(*id))
}

/// The saved entities without an id, in the order they were spawned (mostly: indices are
/// reused), so that ids follow it.
pub(crate) fn without_ids(world: &mut World) -> Vec<Entity> {
    let mut query = world.query_filtered::<Entity, (SavedEntity, Without<SaveId>)>();
    let mut fresh: Vec<Entity> = query.iter(world).collect();
    fresh.sort_unstable();
    fresh
}

/// The entities a game's own disabling component hides (Bevy's `Disabled` aside: disabled
/// entities are saved) that a save would otherwise see: those with [`Saveable`], and parents
/// (whose saved children a save links to them), in order. Saves leave them out, as the game's
/// queries do, so a change in this set since a slot's last save may make its next save a full
/// one (a delta cannot say that an entity it does not see left, or came back: see
/// `needs_full_save`).
pub(crate) fn hidden(world: &World) -> Vec<Entity> {
    let Some(saveable) = world.component_id::<Saveable>() else {
        return Vec::new();
    };
    let children = world.component_id::<Children>();
    let hiding = hiding(world);
    if hiding.is_empty() {
        return Vec::new();
    }
    let mut hidden: Vec<Entity> = world
        .archetypes()
        .iter()
        .filter(|a| {
            (a.contains(saveable) || children.is_some_and(|c| a.contains(c))) && hides(&hiding, a)
        })
        .flat_map(|a| a.entities().iter().map(|e| e.id()))
        .collect();
    hidden.sort_unstable();
    hidden
}
