//! The observers that fill the incremental saves' log ([`Incremental`]) with what leaves
//! saved entities and leaves no change tick behind: a registered component, the entity's
//! `Saveable` (or the entity, despawned), its parent; and the registered resources removed.
//! (`SaveId`'s own discard hook notes the ids that go: see [`SaveId`].)

use bevy_app::App;
use bevy_ecs::component::Component;
use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::lifecycle::Remove;
use bevy_ecs::observer::On;
use bevy_ecs::query::QueryFilter;
use bevy_ecs::resource::Resource;
use bevy_ecs::system::{Query, ResMut};

use crate::ids::{AnyEntity, SaveId, Saveable, SavedEntity};
use crate::tracking::{Incremental, Left};

/// Notes, as `left`, each entity that loses `T` (by a removal, or a despawn) and holds an id,
/// among those `F` lets through.
fn note_removals<T: Component, F: QueryFilter + 'static>(app: &mut App, left: Left) {
    app.world_mut().get_resource_or_init::<Incremental>();
    app.add_observer(
        move |removed: On<Remove<T>>,
              ids: Query<&SaveId, F>,
              mut incremental: ResMut<Incremental>| {
            let entity = removed.event().entity;
            if let Ok(id) = ids.get(entity) {
                incremental.note(entity, id.get(), left);
            }
        },
    );
}

/// Notes the saved entities that lose `T`, the registry's component number `index` (by a
/// removal, or a despawn).
pub(crate) fn watch_removals<T: Component>(app: &mut App, index: usize) {
    note_removals::<T, SavedEntity>(app, Left::Component(index));
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
    note_removals::<ChildOf, SavedEntity>(app, Left::Parent);
}

/// Notes the entities that stop being saved.
pub(crate) fn watch_saveable(app: &mut App) {
    note_removals::<Saveable, AnyEntity>(app, Left::Entity);
}
