//! [`memento_types`]: what the plugin saves, as the schema guard (`savegame::schema`, the
//! feature `schema` of `savegame`) checks it in a game's tests.

use bevy_ecs::world::World;
use savegame::MementoTypes;

use crate::entry::SaveRegistry;
use crate::layout::{
    DELTA_MARK, ENTITIES_ID, EntitiesMemento, EntityRecord, HIERARCHY_ID, HierarchyMemento,
    NEXT_ID, NextMemento, RECORD_PREFIX, RecordsMemento,
};

/// The memento type of every registered component (`component/<name>`: the column of the
/// entities that have it; `component/<name>+*`: a delta's rows; `component/<name>/*`: a value
/// in a delta of the older layout) and resource (`resource/<name>`), each at the version it
/// was registered at, and the plugin's own (`bevy/entities`, `bevy/hierarchy`, a delta's
/// records `bevy/entities+*`, …): what a save of this world holds, for
/// `savegame::schema::Guard::check_types`.
///
/// ```no_run
/// # fn app() -> bevy_app::App { bevy_app::App::new() }
/// # fn migrations() -> savegame::Migrations { savegame::Migrations::new() }
/// #[test]
/// fn save_schemas_are_committed() {
///     let app = app(); // the game's App, with its save_component and save_resource calls
///     let types = savegame_bevy::memento_types(app.world()).unwrap();
///     # #[cfg(any())]
///     savegame::schema::Guard::new("schemas")
///         .migrations(migrations())
///         .check_types(&types)
///         .unwrap();
/// }
/// ```
///
/// # Errors
/// [`savegame::Error::InvalidId`] for a registered name that makes an unusable id.
pub fn memento_types(world: &World) -> savegame::Result<MementoTypes> {
    let mut types = MementoTypes::new();
    if let Some(registry) = world.get_resource::<SaveRegistry>() {
        for entry in &registry.components {
            (entry.describe)(&mut types, &entry.info)?;
        }
        for entry in &registry.resources {
            (entry.describe)(&mut types, &entry.info)?;
        }
    }
    types.memento::<EntitiesMemento>(ENTITIES_ID, savegame::format::DEFAULT_MEMENTO_VERSION)?;
    types.memento::<HierarchyMemento>(HIERARCHY_ID, savegame::format::DEFAULT_MEMENTO_VERSION)?;
    types.memento::<RecordsMemento>(
        format!("{ENTITIES_ID}{DELTA_MARK}*"),
        savegame::format::DEFAULT_MEMENTO_VERSION,
    )?;
    types.memento::<EntityRecord>(
        format!("{RECORD_PREFIX}/*"),
        savegame::format::DEFAULT_MEMENTO_VERSION,
    )?;
    types.memento::<NextMemento>(NEXT_ID, savegame::format::DEFAULT_MEMENTO_VERSION)?;
    Ok(types)
}
