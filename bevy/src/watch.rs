//! The observers that fill the incremental saves' log ([`Incremental`]) with what leaves
//! saved entities and leaves no change tick behind: a registered component, the entity's
//! `Saveable` (or the entity, despawned), its parent; and the registered resources removed.
//! (`SaveId`'s own discard hook notes the ids that go: see [`SaveId`].)

use bevy_app::App;
use bevy_ecs::change_detection::{CheckChangeTicks, DetectChanges};
use bevy_ecs::component::Component;
use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::lifecycle::Remove;
use bevy_ecs::observer::On;
use bevy_ecs::resource::Resource;
use bevy_ecs::system::ResMut;
use bevy_ecs::world::DeferredWorld;

use crate::ids::{SaveId, Saveable};
use crate::tracking::{Incremental, Left};

/// Notes, as `left`, each saved entity (with [`Saveable`]: an entity losing `Saveable` itself
/// still has it when this runs) that loses `T` (by a removal, or a despawn) and holds an id.
/// The entity is read through the world, which no default query filter limits: one a game's own disabling component hides is noted too, as it must be when the
/// game shows it again before the next save (a query, built with the filters as they were when
/// the plugin was added, would miss it if the game had registered its disabling component
/// first).
fn note_removals<T: Component>(app: &mut App, left: Left) {
    app.world_mut().get_resource_or_init::<Incremental>();
    app.add_observer(move |removed: On<Remove<T>>, mut world: DeferredWorld| {
        // Nothing to note while no slot is saved incrementally.
        if !world
            .get_resource::<Incremental>()
            .is_some_and(Incremental::follows_any)
        {
            return;
        }
        let entity = removed.event().entity;
        let Ok(held) = world.get_entity(entity) else {
            return;
        };
        if let Some(saveable) = held.get_ref::<Saveable>()
            && let Some(id) = held.get::<SaveId>()
        {
            let (id, saved_from) = (id.get(), saveable.added());
            if let Some(mut incremental) = world.get_resource_mut::<Incremental>() {
                incremental.note_saved_from(entity, id, left, Some(saved_from));
            }
        }
    });
}

/// Notes the saved entities that lose `T`, the registry's component number `index` (by a
/// removal, or a despawn).
pub(crate) fn watch_removals<T: Component>(app: &mut App, index: usize) {
    note_removals::<T>(app, Left::Component(index));
}

/// Notes the removals of `R`, the registry's resource number `index` (a resource is a
/// component of an entity of its own, which the note names).
pub(crate) fn watch_resource_removals<R: Resource>(app: &mut App, index: usize) {
    app.world_mut().get_resource_or_init::<Incremental>();
    app.add_observer(
        move |removed: On<Remove<R>>, mut incremental: ResMut<Incremental>| {
            incremental.note(removed.event().entity, 0, Left::Resource(index));
        },
    );
}

/// Notes the saved entities that leave their parents.
pub(crate) fn watch_parents(app: &mut App) {
    note_removals::<ChildOf>(app, Left::Parent);
}

/// Forgets, at each of Bevy's checks of its change ticks, the slots whose mark is as old as
/// Bevy's oldest change tick ([`Incremental::forget_expired`]).
pub(crate) fn watch_tick_checks(app: &mut App) {
    app.add_observer(
        |check: On<CheckChangeTicks>, incremental: Option<ResMut<Incremental>>| {
            if let Some(mut incremental) = incremental {
                incremental.forget_expired(check.present_tick());
            }
        },
    );
}

/// Notes the entities that stop being saved.
pub(crate) fn watch_saveable(app: &mut App) {
    note_removals::<Saveable>(app, Left::Entity);
}
