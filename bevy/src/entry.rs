//! The registered components and resources, type-erased behind function pointers: what a
//! save, an incremental save and a load call for each type ([`column`](crate::column) has the
//! serde ones, `reflect` the reflected ones), and the registry that holds them.
//! [`registry`](crate::registry) has the [`SavegameApp`](crate::SavegameApp) methods that fill it.

use std::collections::HashMap;
use std::fmt::Write as _;

use bevy_app::App;
use bevy_ecs::change_detection::{DetectChanges, Tick};
use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::resource::Resource;
use bevy_ecs::world::World;

use crate::error::SaveError;
use crate::ids::{EntityIds, IdMap, SaveId, spawn_saved};
use crate::layout::{DELTA_MARK, Rewritten};
use crate::watch;
use savegame::{MementoTypes, Snapshot};

/// The prefix of component mementos: `component/Health`.
pub(crate) const COMPONENT_PREFIX: &str = "component/";
/// The prefix of resource mementos: `resource/Score`.
pub(crate) const RESOURCE_PREFIX: &str = "resource/";

/// The id of entity `id`'s own memento under `base` (`component/Health/12`), written into
/// `out`.
pub(crate) fn entity_memento_id(out: &mut String, base: &str, id: u32) {
    out.clear();
    out.push_str(base);
    out.push('/');
    let _ = write!(out, "{id}");
}

/// What a save records of a registered type, and where.
#[derive(Debug, Clone)]
pub(crate) struct Info {
    /// The memento id: the prefix and the name.
    pub(crate) id: String,
    /// The memento's version: what a save records for it, and what a load must find (after
    /// the manager's per-memento steps ran).
    pub(crate) version: u32,
    pub(crate) type_name: &'static str,
}

/// Values of one registered type copied out of the world in the frame, on their way to the
/// manager's worker, which writes them into the snapshot.
pub(crate) trait Column: Send {
    /// Writes the type's memento of a full save (a component's column), its entity references
    /// mapped through `ids` (entity to stable id); returns how many pointed at unsaved
    /// entities.
    fn write_column(
        self: Box<Self>,
        ids: &EntityIds,
        snapshot: &mut Snapshot,
        info: &Info,
    ) -> Result<usize, SaveError>;
    /// Adds the ids of the entities whose rows it holds for a delta (values and losses).
    fn touched(&self, out: &mut Vec<u32>);
    /// Writes what delta `number` holds of the type (references mapped in the frame already):
    /// a component's rows (its values with their entities' ids, and the ids of the entities
    /// that lost it) as `<id>+<number>` (called only when [`touched`](Self::touched) found
    /// some); a resource's value under its own id.
    fn write_delta(
        self: Box<Self>,
        snapshot: &mut Snapshot,
        info: &Info,
        number: u64,
    ) -> Result<(), SaveError>;
}

/// A decoded memento, waiting to be put into the world once every memento has decoded.
pub(crate) trait Pending: Send {
    /// Calls `f` with the id of every entity it has a value for.
    fn for_each_id(&self, f: &mut dyn FnMut(u32));
    /// Puts it in: components onto the entities now carrying their ids, a resource into the
    /// world. Returns how many entity references had no saved entity to point at.
    fn apply(self: Box<Self>, world: &mut World, entities: &IdMap) -> usize;
    /// A resource the save does not have (the world's stays as it is).
    fn absent(&self) -> bool {
        false
    }
    /// How many values it holds, if [`Pending::spawn_with`] can spawn entities with them;
    /// `None` where it cannot: a resource, or a component one of whose values holds an entity
    /// reference (references are mapped once every entity is spawned).
    fn spawnable(&mut self) -> Option<usize> {
        None
    }
    /// Spawns a saved entity for each of `ids`, in order, each with its value where it has one
    /// (the last, where a column holds an id twice, as [`Pending::apply`] would leave it; taken:
    /// `apply` puts in no value for these ids); returns them in the order of `ids`. One
    /// archetype move fewer for each entity than a spawn and an insert.
    fn spawn_with(&mut self, world: &mut World, ids: &[SaveId]) -> Vec<Entity> {
        spawn_saved(world, ids)
    }
}

/// Decodes a registered type's mementos (see [`ComponentEntry::decode`]).
pub(crate) type DecodeFn =
    fn(&World, &Snapshot, &Info, &Rewritten) -> Result<Box<dyn Pending>, SaveError>;

/// Copies a delta's rows of a component (see [`ComponentEntry::copy_delta`]).
pub(crate) type CopyDeltaFn =
    fn(&mut World, Tick, &[(Entity, u32)], u32, Vec<u32>, &mut usize) -> Box<dyn Column>;

/// Removes a registered component from an entity (see [`ComponentEntry::remove`]).
pub(crate) type RemoveFn = fn(&mut World, Entity);

/// A registered component.
pub(crate) struct ComponentEntry {
    pub(crate) info: Info,
    /// Copies every saved entity's value (for a full save).
    pub(crate) copy_all: fn(&mut World) -> Box<dyn Column>,
    /// Copies a delta's rows, references mapped: the values added or changed since the tick
    /// (up to the world's change tick), and every value of the entities given (which it
    /// writes whole), with the ids of the entities that lost the component (given, and the
    /// whole ones that lack it, but for those whose ids are from the number given up: they
    /// were never saved, so had nothing to lose); adds the references to unsaved entities to
    /// the count.
    pub(crate) copy_delta: CopyDeltaFn,
    /// Decodes the type's values from a snapshot: its column, then each delta's rows in
    /// order. The world is read, not changed (a reflected type's registry is in it).
    pub(crate) decode: DecodeFn,
    /// Removes the component from an entity.
    pub(crate) remove: RemoveFn,
    /// Lists the memento types, for the schema guard.
    pub(crate) describe: fn(&mut MementoTypes, &Info) -> savegame::Result<()>,
}

/// A registered resource.
pub(crate) struct ResourceEntry {
    pub(crate) info: Info,
    /// Copies the resource, references mapped, if the world has it.
    pub(crate) copy: fn(&World, &mut usize) -> Option<Box<dyn Column>>,
    /// Was it added or changed since the first tick (up to the second)?
    pub(crate) changed: fn(&World, Tick, Tick) -> bool,
    /// Does the world have it?
    pub(crate) present: fn(&World) -> bool,
    pub(crate) decode: DecodeFn,
    pub(crate) describe: fn(&mut MementoTypes, &Info) -> savegame::Result<()>,
}

/// The registered types, in registration order.
#[derive(Resource, Default)]
pub(crate) struct SaveRegistry {
    pub(crate) components: Vec<ComponentEntry>,
    pub(crate) resources: Vec<ResourceEntry>,
}

impl SaveRegistry {
    /// Refuses two types under one name.
    pub(crate) fn check(&self) -> Result<(), SaveError> {
        let mut seen: HashMap<&str, &'static str> = HashMap::new();
        let infos = self
            .components
            .iter()
            .map(|e| &e.info)
            .chain(self.resources.iter().map(|e| &e.info));
        for info in infos {
            if info.id.contains(DELTA_MARK) {
                return Err(SaveError::BadName {
                    name: info.id.clone(),
                    type_name: info.type_name,
                });
            }
            if let Some(first) = seen.insert(&info.id, info.type_name) {
                return Err(SaveError::DuplicateName {
                    name: info.id.clone(),
                    first,
                    second: info.type_name,
                });
            }
        }
        Ok(())
    }
}

/// Whether resource `R` was added or changed in `(since, now]`.
pub(crate) fn changed_resource<R: Resource>(world: &World, since: Tick, now: Tick) -> bool {
    world
        .get_resource_ref::<R>()
        .is_some_and(|r| r.last_changed().is_newer_than(since, now))
}

/// Whether the world has resource `R`.
pub(crate) fn has_resource<R: Resource>(world: &World) -> bool {
    world.contains_resource::<R>()
}

/// The last segment of a type's path, with its generic arguments: `game::Health` → `Health`.
pub(crate) fn short_name(full: &str) -> String {
    let (head, generics) = match full.find('<') {
        Some(at) => full.split_at(at),
        None => (full, ""),
    };
    let last = head.rsplit("::").next().unwrap_or(head);
    format!("{last}{generics}")
}

/// Adds a component entry, and the observer that notes when the type leaves a saved entity
/// (for incremental saves).
pub(crate) fn register_component<T: Component>(app: &mut App, entry: ComponentEntry) {
    let mut registry = app.world_mut().get_resource_or_init::<SaveRegistry>();
    let index = registry.components.len();
    registry.components.push(entry);
    watch::watch_removals::<T>(app, index);
}

/// Adds a resource entry, and the observer that notes when the resource is removed (for
/// incremental saves).
pub(crate) fn register_resource<R: Resource>(app: &mut App, entry: ResourceEntry) {
    let mut registry = app.world_mut().get_resource_or_init::<SaveRegistry>();
    let index = registry.resources.len();
    registry.resources.push(entry);
    watch::watch_resource_removals::<R>(app, index);
}

#[cfg(test)]
mod tests {
    use super::{entity_memento_id, short_name};

    #[test]
    fn short_names_keep_generics() {
        assert_eq!(short_name("game::stats::Health"), "Health");
        assert_eq!(short_name("Score"), "Score");
        assert_eq!(short_name("a::Wrap<b::Inner>"), "Wrap<b::Inner>");
    }

    #[test]
    fn entity_memento_ids_are_the_base_and_the_id() {
        let mut id = String::from("left over");
        entity_memento_id(&mut id, "component/Health", 12);
        assert_eq!(id, "component/Health/12");
    }
}
