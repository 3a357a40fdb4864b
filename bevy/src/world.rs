//! Capture of the saved part of a world into a [`Snapshot`], and its restore.
//!
//! A save holds, besides the registered types' mementos (see [`registry`](crate::registry)):
//!
//! | memento | holds |
//! |---|---|
//! | `bevy/entities` | `ids`: the stable ids of every saved entity, ascending; `next`: the next id to give out |
//! | `bevy/hierarchy` | `children` and `parents`: pairs of ids, a saved child and its saved parent, in each parent's order of children |
//! | `component/<name>` | `entities`: the ids of the saved entities that have the component, ascending; `values`: their values, in the same order |
//! | `resource/<name>` | the resource's value |

use std::collections::{HashMap, HashSet};

use bevy_ecs::entity::{Entity, EntityHashMap};
use bevy_ecs::hierarchy::{ChildOf, Children};
use bevy_ecs::query::With;
use bevy_ecs::world::World;
use serde::{Deserialize, Serialize};

use crate::error::SaveError;
use crate::ids::{NextSaveId, SaveId, Saveable};
use crate::manager::SaveManager;
use crate::registry::{Pending, SaveRegistry};
use savegame::{Metadata, Snapshot};

/// The memento listing the saved entities.
pub(crate) const ENTITIES_ID: &str = "bevy/entities";
/// The memento of the parent/child links between saved entities.
pub(crate) const HIERARCHY_ID: &str = "bevy/hierarchy";

#[derive(Serialize, Deserialize)]
pub(crate) struct EntitiesMemento {
    ids: Vec<u32>,
    next: u32,
}

#[derive(Serialize, Deserialize, Default)]
pub(crate) struct HierarchyMemento {
    children: Vec<u32>,
    parents: Vec<u32>,
}

/// What a capture found.
pub(crate) struct Captured {
    pub(crate) snapshot: Snapshot,
    pub(crate) entities: usize,
    pub(crate) unsaved_references: usize,
}

/// What a restore did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Restored {
    pub(crate) entities: usize,
    pub(crate) spawned: usize,
    pub(crate) despawned: usize,
    pub(crate) dangling_references: usize,
}

/// Gives every saved entity without a [`SaveId`] one, and returns each saved entity's id.
fn assign_ids(world: &mut World) -> Result<EntityHashMap<SaveId>, SaveError> {
    let mut query = world.query_filtered::<(Entity, Option<&SaveId>), With<Saveable>>();
    let mut ids = EntityHashMap::default();
    let mut owners: HashMap<u32, Entity> = HashMap::new();
    let mut without = Vec::new();
    let mut next = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
    for (entity, id) in query.iter(world) {
        match id {
            Some(id) => {
                if let Some(first) = owners.insert(id.get(), entity) {
                    return Err(SaveError::DuplicateSaveId {
                        id: id.get(),
                        first,
                        second: entity,
                    });
                }
                next = next.max(id.get().saturating_add(1));
                ids.insert(entity, *id);
            }
            None => without.push(entity),
        }
    }
    // In the order the entities were spawned, so ids follow it (mostly: indices are reused).
    without.sort_unstable();
    let mut fresh = Vec::with_capacity(without.len());
    for entity in without {
        let id = SaveId::new(next).ok_or(SaveError::IdsExhausted)?;
        next += 1;
        ids.insert(entity, id);
        fresh.push((entity, id));
    }
    world.insert_batch(fresh);
    world.insert_resource(NextSaveId(next));
    Ok(ids)
}

/// Captures the saved entities' registered components, the registered resources, the
/// hierarchy and the entity list into a snapshot in the manager's codec.
pub(crate) fn capture(world: &mut World, metadata: Metadata) -> Result<Captured, SaveError> {
    let mut snapshot = world
        .get_resource::<SaveManager>()
        .ok_or_else(|| SaveError::NotSetUp {
            reason: "no SaveManager resource: add SavegamePlugin".into(),
        })?
        .manager()
        .snapshot();
    *snapshot.metadata_mut() = metadata;
    let ids = assign_ids(world)?;

    let mut sorted: Vec<(SaveId, Entity)> = ids.iter().map(|(e, id)| (*id, *e)).collect();
    sorted.sort_unstable();
    let next = world.get_resource::<NextSaveId>().map_or(0, |n| n.0);
    let entities = EntitiesMemento {
        ids: sorted.iter().map(|(id, _)| id.get()).collect(),
        next,
    };
    snapshot.capture_memento(ENTITIES_ID, &entities)?;

    let mut hierarchy = HierarchyMemento::default();
    for (parent_id, parent) in &sorted {
        let Some(children) = world.get::<Children>(*parent) else {
            continue;
        };
        for child in children.iter() {
            if let Some(child_id) = ids.get(child) {
                hierarchy.children.push(child_id.get());
                hierarchy.parents.push(parent_id.get());
            }
        }
    }
    snapshot.capture_memento(HIERARCHY_ID, &hierarchy)?;

    let unsaved_references =
        world.resource_scope(|world, registry: bevy_ecs::world::Mut<SaveRegistry>| {
            registry.check()?;
            let mut unsaved = 0;
            for entry in registry.components.iter().chain(&registry.resources) {
                unsaved += (entry.capture)(world, &ids, &mut snapshot, entry)?;
            }
            Ok::<_, SaveError>(unsaved)
        })?;
    Ok(Captured {
        snapshot,
        entities: sorted.len(),
        unsaved_references,
    })
}

/// Restores the saved part of the world from `snapshot`. Every memento is decoded first; on
/// any error the world is unchanged.
///
/// Saveable entities whose ids the save has are kept, with their registered components replaced
/// by the save's (unregistered components stay); saved entities it does not have are
/// despawned (their unsaved children are detached first, not despawned); ids it has that no
/// entity carries are spawned. Entities without [`Saveable`] are not touched.
pub(crate) fn restore(world: &mut World, snapshot: &Snapshot) -> Result<Restored, SaveError> {
    let entities: EntitiesMemento =
        snapshot
            .memento(ENTITIES_ID)
            .map_err(|source| SaveError::Deserialize {
                type_name: "the entity list",
                id: ENTITIES_ID.into(),
                source: Box::new(source),
            })?;
    let hierarchy: HierarchyMemento = if snapshot.contains(HIERARCHY_ID) {
        snapshot
            .memento(HIERARCHY_ID)
            .map_err(|source| SaveError::Deserialize {
                type_name: "the hierarchy",
                id: HIERARCHY_ID.into(),
                source: Box::new(source),
            })?
    } else {
        HierarchyMemento::default()
    };
    if hierarchy.children.len() != hierarchy.parents.len() {
        return Err(SaveError::Malformed {
            id: HIERARCHY_ID.into(),
            reason: "as many children as parents are needed".into(),
        });
    }
    let pending: Vec<Box<dyn Pending>> =
        world.resource_scope(|_, registry: bevy_ecs::world::Mut<SaveRegistry>| {
            registry.check()?;
            let mut pending = Vec::new();
            for entry in registry.components.iter().chain(&registry.resources) {
                if let Some(p) = (entry.decode)(snapshot, entry)? {
                    pending.push(p);
                }
            }
            Ok::<_, SaveError>(pending)
        })?;

    // Nothing fails from here on.
    let in_save: HashSet<u32> = entities.ids.iter().copied().collect();
    let mut query = world.query_filtered::<(Entity, &SaveId), With<Saveable>>();
    let existing: Vec<(u32, Entity)> = query
        .iter(world)
        .map(|(entity, id)| (id.get(), entity))
        .collect();
    let doomed: HashSet<Entity> = existing
        .iter()
        .filter(|(id, _)| !in_save.contains(id))
        .map(|(_, entity)| *entity)
        .collect();
    // Children of despawned entities that stay (unsaved ones, or saved ones the save has) are
    // detached first, so the despawn does not take them along.
    let mut detach: Vec<Entity> = Vec::new();
    for entity in &doomed {
        if let Some(children) = world.get::<Children>(*entity) {
            detach.extend(children.iter().filter(|c| !doomed.contains(c)));
        }
    }
    for child in detach {
        if let Ok(mut child) = world.get_entity_mut(child) {
            child.remove::<ChildOf>();
        }
    }
    let mut despawned = 0;
    for entity in &doomed {
        if world.despawn(*entity) {
            despawned += 1;
        }
    }

    let mut live: HashMap<u32, Entity> = existing
        .into_iter()
        .filter(|(id, _)| in_save.contains(id))
        .collect();
    let kept: Vec<Entity> = live.values().copied().collect();
    world.resource_scope(|world, registry: bevy_ecs::world::Mut<SaveRegistry>| {
        for entity in &kept {
            for entry in &registry.components {
                (entry.remove)(world, *entity);
            }
        }
    });
    // A kept entity's link to a saved parent comes from the save (or goes).
    for entity in &kept {
        let parent = world.get::<ChildOf>(*entity).map(ChildOf::parent);
        if parent.is_some_and(|p| world.get::<Saveable>(p).is_some())
            && let Ok(mut entity) = world.get_entity_mut(*entity)
        {
            entity.remove::<ChildOf>();
        }
    }
    let mut spawned = 0;
    for id in &entities.ids {
        if live.contains_key(id) {
            continue;
        }
        let Some(save_id) = SaveId::new(*id) else {
            continue;
        };
        let entity = world.spawn((Saveable, save_id)).id();
        live.insert(*id, entity);
        spawned += 1;
    }

    let mut dangling = 0;
    for p in pending {
        dangling += p.apply(world, &live);
    }
    for (child, parent) in hierarchy.children.iter().zip(&hierarchy.parents) {
        if let (Some(child), Some(parent)) = (live.get(child), live.get(parent))
            && let Ok(mut child) = world.get_entity_mut(*child)
        {
            child.insert(ChildOf(*parent));
        }
    }
    let next = world
        .get_resource::<NextSaveId>()
        .map_or(0, |n| n.0)
        .max(entities.next);
    world.insert_resource(NextSaveId(next));
    Ok(Restored {
        entities: entities.ids.len(),
        spawned,
        despawned,
        dangling_references: dangling,
    })
}
