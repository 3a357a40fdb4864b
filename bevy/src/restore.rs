//! Loading a snapshot into the world: every memento is decoded first (a failed load changes
//! nothing), then the saved entities are despawned, updated in place or spawned, their
//! components put in one type at a time for a whole batch of entities, and their links and
//! places among their parents' children restored.
//!
//! The entities to spawn are spawned together, ordered by the set of registered types each
//! has, so that each type's batch moves runs of entities of one archetype at once.

use bevy_ecs::archetype::ArchetypeId;
use bevy_ecs::entity::{Entity, EntityHashMap, EntityHashSet};
use bevy_ecs::hierarchy::{ChildOf, Children};
use bevy_ecs::query::{Has, Without};
use bevy_ecs::world::{Mut, World};
use savegame::Snapshot;
use serde::de::DeserializeOwned;

use crate::entry::{COMPONENT_PREFIX, Pending, RemoveFn, SaveRegistry};
use crate::error::SaveError;
use crate::ids::{AnyEntity, IdMap, NextSaveId, SaveId, Saveable, SavedEntity, spawn_saved};
use crate::layout::{
    DELTA_MARK, ENTITIES_ID, EntitiesMemento, EntityRecord, HIERARCHY_ID, HierarchyMemento, Link,
    NEXT_ID, NextMemento, RECORD_PREFIX, RecordsMemento, Rewritten, delta_id,
};

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Restored {
    pub(crate) entities: usize,
    pub(crate) spawned: usize,
    pub(crate) despawned: usize,
    pub(crate) dangling_references: usize,
    /// Saved children whose parent's id no entity had: left without a parent.
    pub(crate) unlinked_parents: usize,
    /// The highest number of the deltas whose rows the snapshot held (0: none).
    pub(crate) last_delta: u64,
    /// The registered resources (by index) the save does not have and the world does: left as
    /// the world had them.
    pub(crate) lacking: Vec<usize>,
    /// The entities a game's own disabling component hides that the save has (by id): updated
    /// where they are, and still hidden. In order.
    pub(crate) hidden_in_save: Vec<Entity>,
}

fn decode_own<M: DeserializeOwned>(
    snapshot: &Snapshot,
    id: &str,
    what: &'static str,
) -> Result<M, SaveError> {
    snapshot
        .memento(id)
        .map_err(|source| SaveError::Deserialize {
            type_name: what,
            id: id.into(),
            source: Box::new(source),
        })
}

/// Refuses, as malformed memento `id`, an entity id above [`SaveId::MAX`]: no entity can carry
/// it, so a load would drop that entity without a word.
fn check_ids<'a>(id: &str, ids: impl IntoIterator<Item = &'a u32>) -> Result<(), SaveError> {
    match ids.into_iter().find(|n| SaveId::new(**n).is_none()) {
        Some(n) => Err(SaveError::Malformed {
            id: id.to_owned(),
            reason: format!("entity id {n} is above the largest, {}", SaveId::MAX),
        }),
        None => Ok(()),
    }
}

/// Refuses, as malformed memento `id`, a next id above one past [`SaveId::MAX`] (every save
/// that gave an id after such a load would fail with `IdsExhausted`).
fn check_next(id: &str, next: u32) -> Result<(), SaveError> {
    if next > SaveId::MAX + 1 {
        return Err(SaveError::Malformed {
            id: id.to_owned(),
            reason: format!("the next id, {next}, is above the largest, {}", SaveId::MAX),
        });
    }
    Ok(())
}

/// The entity records deltas of the older layout left (one memento each), by id, ascending.
fn older_records(snapshot: &Snapshot) -> Result<Vec<(u32, EntityRecord)>, SaveError> {
    let prefix = format!("{RECORD_PREFIX}/");
    let mut out = Vec::new();
    // Ids are sorted, so the records are one run (just after `bevy/entities`).
    for id in snapshot
        .ids()
        .skip_while(|id| *id < prefix.as_str())
        .take_while(|id| id.starts_with(&prefix))
    {
        let entity = id[prefix.len()..]
            .parse::<u32>()
            .map_err(|_| SaveError::Malformed {
                id: id.to_owned(),
                reason: "not an entity id after the prefix".into(),
            })?;
        check_ids(id, [&entity])?;
        let record: EntityRecord = decode_own(snapshot, id, "an entity record")?;
        out.push((entity, record));
    }
    // In the order of the ids as numbers, not as text (`10` after `9`).
    out.sort_unstable_by_key(|(id, _)| *id);
    Ok(out)
}

/// The numbers of the deltas whose rows the snapshot has (`bevy/entities+<n>`,
/// `component/<name>+<n>`), ascending.
fn delta_numbers(snapshot: &Snapshot) -> Result<Vec<u64>, SaveError> {
    let mut numbers = Vec::new();
    for id in snapshot.ids() {
        let Some((base, n)) = id.rsplit_once(DELTA_MARK) else {
            continue;
        };
        if base != ENTITIES_ID && !base.starts_with(COMPONENT_PREFIX) {
            continue;
        }
        // As the plugin writes them: decimal, from 1, no sign or leading zero, and far from
        // the end of the numbers (a slot's numbers start again at each full save).
        match n.parse::<u32>() {
            Ok(m) if m > 0 && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0') => {
                numbers.push(u64::from(m));
            }
            _ => {
                return Err(SaveError::Malformed {
                    id: id.to_owned(),
                    reason: "not a delta's number after the '+'".into(),
                });
            }
        }
    }
    numbers.sort_unstable();
    numbers.dedup();
    Ok(numbers)
}

/// Every record the deltas left, by id, ascending (each id's from the last delta that wrote
/// it: the older layout's first, then the rows' in order), and what the deltas rewrote.
fn records(snapshot: &Snapshot) -> Result<(Vec<(u32, EntityRecord)>, Rewritten), SaveError> {
    let older = older_records(snapshot)?;
    let older_ids: Vec<u32> = older.iter().map(|(id, _)| *id).collect();
    let mut merged: std::collections::BTreeMap<u32, EntityRecord> = older.into_iter().collect();
    let deltas = delta_numbers(snapshot)?;
    for &n in &deltas {
        let id = delta_id(ENTITIES_ID, n);
        if !snapshot.contains(&id) {
            continue;
        }
        let rows: RecordsMemento = decode_own(snapshot, &id, "a delta's records")?;
        if rows.ids.len() != rows.records.len() {
            return Err(SaveError::Malformed {
                id,
                reason: format!("{} ids but {} records", rows.ids.len(), rows.records.len()),
            });
        }
        check_ids(&id, &rows.ids)?;
        for (entity, record) in rows.ids.into_iter().zip(rows.records) {
            merged.insert(entity, record);
        }
    }
    let records: Vec<(u32, EntityRecord)> = merged.into_iter().collect();
    let rewritten = Rewritten {
        ids: records.iter().map(|(id, _)| *id).collect(),
        older: older_ids,
        deltas,
    };
    Ok((records, rewritten))
}

/// The saved ids and links, once the deltas' records are applied to the full save's.
struct Plan {
    /// Every saved id, ascending.
    ids: Vec<u32>,
    /// The entities deltas rewrote: their values are their last delta's.
    rewritten: Rewritten,
    links: Vec<Link>,
    /// Whether the links of saved children to unsaved parents are in the save.
    unsaved_parents: bool,
    /// Whether the links carry places among the parents' children.
    positions: bool,
    next: u32,
}

fn plan(snapshot: &Snapshot) -> Result<Plan, SaveError> {
    let base: EntitiesMemento = decode_own(snapshot, ENTITIES_ID, "the entity list")?;
    check_ids(ENTITIES_ID, &base.ids)?;
    check_next(ENTITIES_ID, base.next)?;
    let hierarchy: HierarchyMemento = if snapshot.contains(HIERARCHY_ID) {
        decode_own(snapshot, HIERARCHY_ID, "the hierarchy")?
    } else {
        HierarchyMemento::default()
    };
    let pairs = hierarchy.children.len();
    if hierarchy.parents.len() != pairs
        || (!hierarchy.positions.is_empty() && hierarchy.positions.len() != pairs)
    {
        return Err(SaveError::Malformed {
            id: HIERARCHY_ID.into(),
            reason: "as many children as parents (and places) are needed".into(),
        });
    }
    let (records, rewritten) = records(snapshot)?;
    let next = if snapshot.contains(NEXT_ID) {
        let delta: NextMemento = decode_own(snapshot, NEXT_ID, "the next id")?;
        check_next(NEXT_ID, delta.next)?;
        base.next.max(delta.next)
    } else {
        base.next
    };
    let is_rewritten = |id: &u32| rewritten.ids.binary_search(id).is_ok();
    let mut ids: Vec<u32> = base
        .ids
        .into_iter()
        .filter(|id| !is_rewritten(id))
        .collect();
    ids.extend(records.iter().filter(|(_, r)| r.saved).map(|(id, _)| *id));
    ids.sort_unstable();
    ids.dedup();
    let positions = !hierarchy.positions.is_empty() || pairs == 0;
    let mut links: Vec<Link> = (0..pairs)
        .filter(|i| !is_rewritten(&hierarchy.children[*i]))
        .map(|i| Link {
            parent: hierarchy.parents[i],
            // Older saves have no places, but list each parent's children in order.
            position: hierarchy
                .positions
                .get(i)
                .copied()
                .unwrap_or_else(|| u32::try_from(i).unwrap_or(u32::MAX)),
            child: hierarchy.children[i],
        })
        .collect();
    links.extend(records.iter().filter_map(|(id, r)| {
        Some(Link {
            parent: r.parent.filter(|_| r.saved)?,
            position: r.position.unwrap_or(u32::MAX),
            child: *id,
        })
    }));
    Ok(Plan {
        ids,
        rewritten,
        links,
        unsaved_parents: hierarchy.unsaved_parents || !records.is_empty(),
        positions,
        next,
    })
}

/// Restores the saved part of the world from `snapshot`. Every memento is decoded first; on
/// any error the world is unchanged.
///
/// Saveable entities whose ids the save has are kept, with their registered components replaced
/// by the save's (unregistered components stay); saved entities it does not have are
/// despawned (their unsaved children are detached first, not despawned), those without an id
/// among them; ids it has that no entity carries are spawned. An entity the game stopped
/// saving that kept an id the save has saved is taken back ([`Saveable`] put on it, then kept
/// as above). Other entities without [`Saveable`] are not touched, but for their children
/// lists (a saved child's link to them, and its place among their children).
pub(crate) fn restore(world: &mut World, snapshot: &Snapshot) -> Result<Restored, SaveError> {
    let plan = plan(snapshot)?;
    let (mut components, resources) =
        world.resource_scope(|world, registry: Mut<SaveRegistry>| {
            registry.check()?;
            let mut components = Vec::with_capacity(registry.components.len());
            for entry in &registry.components {
                components.push((
                    (entry.decode)(world, snapshot, &entry.info, &plan.rewritten)?,
                    entry.remove,
                ));
            }
            let mut resources = Vec::with_capacity(registry.resources.len());
            for entry in &registry.resources {
                resources.push((
                    (entry.decode)(world, snapshot, &entry.info, &plan.rewritten)?,
                    entry.present,
                ));
            }
            Ok::<_, SaveError>((components, resources))
        })?;

    // Nothing fails from here on.
    let in_save = |id: u32| plan.ids.binary_search(&id).is_ok();
    let mut query = world.query_filtered::<(Entity, &SaveId, Has<Saveable>), AnyEntity>();
    let mut live = IdMap::with_capacity(plan.ids.len());
    let mut anchors = IdMap::with_capacity(0);
    let mut kept: Vec<(Entity, u32)> = Vec::new();
    let mut doomed: Vec<Entity> = Vec::new();
    // Entities the game stopped saving that kept an id the save has saved, and whether a
    // game's disabling component hides them.
    let mut unsaved_in_save: Vec<(Entity, u32, bool)> = Vec::new();
    for (entity, id, saved) in query.iter(world) {
        let id = id.get();
        if !saved {
            if in_save(id) {
                unsaved_in_save.push((entity, id, false));
            } else {
                anchors.insert(id, entity);
            }
        } else if in_save(id) {
            live.insert(id, entity);
            kept.push((entity, id));
        } else {
            doomed.push(entity);
        }
    }
    // Entities a game's own disabling component hides (the query sees Bevy's `Disabled` only):
    // one with an id the save has saved is updated where it is (taken back if unsaved), never
    // spawned again beside it; the others are left as they are, as the game's queries leave
    // them.
    let seen: Vec<ArchetypeId> = query.matched_archetypes().collect();
    if let Some(with_id) = world.component_id::<SaveId>() {
        for archetype in world.archetypes().iter() {
            if !archetype.contains(with_id) || seen.contains(&archetype.id()) {
                continue;
            }
            for hidden in archetype.entities() {
                let entity = hidden.id();
                if let Some(id) = world.get::<SaveId>(entity).map(|id| id.get())
                    && in_save(id)
                {
                    unsaved_in_save.push((entity, id, true));
                }
            }
        }
    }
    // Such an entity is taken back (saved again, updated in place), unless a saved entity
    // carries its id; a second entity with the id would be spawned otherwise.
    let mut retaken: Vec<(Entity, Saveable)> = Vec::new();
    let mut hidden_in_save: Vec<Entity> = Vec::new();
    for (entity, id, hidden) in unsaved_in_save {
        if live.get(id).is_some() {
            anchors.insert(id, entity);
        } else {
            live.insert(id, entity);
            kept.push((entity, id));
            retaken.push((entity, Saveable));
            if hidden {
                hidden_in_save.push(entity);
            }
        }
    }
    hidden_in_save.sort_unstable();
    world.insert_batch(retaken);
    // Saved entities without an id yet (spawned since the last save): not in the save either.
    let mut idless = world.query_filtered::<Entity, (SavedEntity, Without<SaveId>)>();
    doomed.extend(idless.iter(world));
    let despawned = despawn(world, &doomed);

    // Registered components a kept entity has and its save does not: removed.
    if !kept.is_empty() {
        for (pending, remove) in &components {
            let mut has: Vec<u32> = Vec::new();
            pending.for_each_id(&mut |id| has.push(id));
            has.sort_unstable();
            for (entity, id) in &kept {
                if has.binary_search(id).is_err() {
                    remove(world, *entity);
                }
            }
        }
    }

    let spawned = spawn(world, &plan, &mut components, &mut live);
    let mut dangling = 0;
    for (pending, _) in components {
        dangling += pending.apply(world, &live);
    }
    let mut lacking = Vec::new();
    for (index, (pending, present)) in resources.into_iter().enumerate() {
        if pending.absent() && present(world) {
            lacking.push(index);
        }
        dangling += pending.apply(world, &live);
    }
    let unlinked_parents = link(world, &plan, &live, &anchors, &kept);
    let next = world
        .get_resource::<NextSaveId>()
        .map_or(0, |n| n.0)
        .max(plan.next);
    world.insert_resource(NextSaveId(next));
    Ok(Restored {
        entities: plan.ids.len(),
        spawned,
        despawned,
        dangling_references: dangling,
        unlinked_parents,
        last_delta: plan.rewritten.deltas.last().copied().unwrap_or(0),
        lacking,
        hidden_in_save,
    })
}

/// Despawns `doomed`, detaching first the children that stay (unsaved ones, or saved ones the
/// save has), so that the despawn does not take them along. Returns how many it despawned.
fn despawn(world: &mut World, doomed: &[Entity]) -> usize {
    if doomed.is_empty() {
        return 0;
    }
    let set: EntityHashSet = doomed.iter().copied().collect();
    let mut detach: Vec<Entity> = Vec::new();
    for entity in doomed {
        if let Some(children) = world.get::<Children>(*entity) {
            detach.extend(children.iter().copied().filter(|c| !set.contains(c)));
        }
    }
    for child in detach {
        if let Ok(mut child) = world.get_entity_mut(child) {
            child.remove::<ChildOf>();
        }
    }
    world.flush();
    doomed.iter().filter(|e| world.despawn(**e)).count()
}

/// Spawns the saved ids no entity carries, ordered by the set of registered components each
/// will get, each with the values of one registered component in the spawn (see
/// [`Pending::spawn_with`]); returns how many.
fn spawn(
    world: &mut World,
    plan: &Plan,
    components: &mut [(Box<dyn Pending>, RemoveFn)],
    live: &mut IdMap,
) -> usize {
    let mut missing: Vec<u32> = plan
        .ids
        .iter()
        .copied()
        .filter(|id| !live.contains(*id))
        .collect();
    if missing.is_empty() {
        return 0;
    }
    let top = missing.last().copied().unwrap_or(0) as usize;
    if top < missing.len().saturating_mul(4).saturating_add(1024) {
        let mut signature = vec![0u64; top + 1];
        for (k, (pending, _)) in components.iter().enumerate().take(64) {
            let bit = 1u64 << k;
            pending.for_each_id(&mut |id| {
                if let Some(s) = signature.get_mut(id as usize) {
                    *s |= bit;
                }
            });
        }
        missing.sort_by_key(|id| signature[*id as usize]);
    }
    // Every id is one an entity can carry (`check_ids`).
    let ids: Vec<SaveId> = missing.iter().filter_map(|id| SaveId::new(*id)).collect();
    // The registered component with the most values, of those none of whose values holds an
    // entity reference (mapped once every entity is spawned), comes with the spawn.
    let first = components
        .iter_mut()
        .enumerate()
        .filter_map(|(k, (pending, _))| Some((pending.spawnable()?, k)))
        .max();
    let spawned = match first.and_then(|(n, k)| components.get_mut(k).filter(|_| n > 0)) {
        Some((pending, _)) => pending.spawn_with(world, &ids),
        None => spawn_saved(world, &ids),
    };
    for (id, entity) in ids.iter().zip(&spawned) {
        live.insert(id.get(), *entity);
    }
    spawned.len()
}

/// Restores the saved children's links and places: a link the save has is made (to the entity
/// that now carries the parent's id, saved or not), one it lacks is cut (for a save that
/// records links to unsaved parents; an older one leaves those as they are), and each parent's
/// saved children are put back at their places among its unsaved ones. Returns how many links
/// had no entity with their parent's id (those children are left without a parent).
fn link(
    world: &mut World,
    plan: &Plan,
    live: &IdMap,
    anchors: &IdMap,
    kept: &[(Entity, u32)],
) -> usize {
    let parent_of = |id: u32| live.get(id).or_else(|| anchors.get(id));
    // The link each saved child gets, if its parent is in the world: (parent, place, child),
    // in each parent's order of places (as a full save lists them; deltas' records are sorted
    // in).
    let mut links: Vec<(Entity, u32, Entity)> = Vec::with_capacity(plan.links.len());
    let mut unlinked = 0;
    for l in &plan.links {
        match (parent_of(l.parent), live.get(l.child)) {
            (Some(parent), Some(child)) => links.push((parent, l.position, child)),
            (None, Some(_)) => unlinked += 1,
            _ => {}
        }
    }
    if !plan.rewritten.ids.is_empty() {
        links.sort_unstable();
    }
    let mut wanted: EntityHashMap<(Entity, u32)> = EntityHashMap::default();
    if !kept.is_empty() {
        wanted.extend(links.iter().map(|(p, at, c)| (*c, (*p, *at))));
    }
    // Kept children: a link that is right stays where it is; another is cut.
    let mut stays: EntityHashSet = EntityHashSet::default();
    for (entity, _) in kept {
        let Some(current) = world.get::<ChildOf>(*entity).map(ChildOf::parent) else {
            continue;
        };
        let right = wanted.get(entity).is_some_and(|(p, _)| *p == current);
        let unsaved_parent = world.get::<Saveable>(current).is_none();
        if right {
            stays.insert(*entity);
        } else if (plan.unsaved_parents || !unsaved_parent || wanted.contains_key(entity))
            && let Ok(mut e) = world.get_entity_mut(*entity)
        {
            e.remove::<ChildOf>();
        }
    }
    world.insert_batch(
        links
            .iter()
            .filter(|(.., child)| !stays.contains(child))
            .map(|(parent, _, child)| (*child, ChildOf(*parent)))
            .collect::<Vec<_>>(),
    );
    // The parents' lists of children are updated by commands the links queued.
    world.flush();
    if !plan.positions {
        return unlinked;
    }
    // A parent whose children are all this load's, put in in order of their places, is in
    // order; the others (with unsaved children, or children kept) are put in order.
    let mut at = 0;
    while at < links.len() {
        let parent = links[at].0;
        let run = links[at..].iter().take_while(|l| l.0 == parent).count();
        let ours = &links[at..at + run];
        at += run;
        let in_order = world.get::<Children>(parent).is_some_and(|children| {
            children.len() == ours.len()
                && children.iter().zip(ours).all(|(c, (.., child))| c == child)
        });
        if !in_order {
            if wanted.is_empty() {
                wanted.extend(links.iter().map(|(p, at, c)| (*c, (*p, *at))));
            }
            reorder(world, parent, &wanted);
        }
    }
    unlinked
}

/// Puts `parent`'s saved children at their saved places among its children, the others
/// keeping their order in the places left.
fn reorder(world: &mut World, parent: Entity, wanted: &EntityHashMap<(Entity, u32)>) {
    let Some(children) = world.get::<Children>(parent) else {
        return;
    };
    let mut saved: Vec<(u32, Entity)> = Vec::new();
    let mut others: Vec<Entity> = Vec::new();
    for child in children.iter().copied() {
        match wanted.get(&child) {
            Some((p, position)) if *p == parent => saved.push((*position, child)),
            _ => others.push(child),
        }
    }
    saved.sort_by_key(|(position, _)| *position);
    let mut order: Vec<Entity> = Vec::with_capacity(saved.len() + others.len());
    let (mut s, mut o) = (saved.iter().peekable(), others.iter().peekable());
    while order.len() < saved.len() + others.len() {
        let at = u32::try_from(order.len()).unwrap_or(u32::MAX);
        let take_saved = match (s.peek(), o.peek()) {
            (Some((position, _)), Some(_)) => *position <= at,
            (Some(_), None) => true,
            _ => false,
        };
        let next = if take_saved {
            s.next().map(|(_, e)| *e)
        } else {
            o.next().copied()
        };
        match next {
            Some(e) => order.push(e),
            None => break,
        }
    }
    if children.iter().eq(order.iter()) {
        return;
    }
    let rank: EntityHashMap<usize> = order.iter().enumerate().map(|(i, e)| (*e, i)).collect();
    if let Some(mut children) = world.get_mut::<Children>(parent) {
        children.sort_by_key(|e| rank.get(e).copied().unwrap_or(usize::MAX));
    }
}
