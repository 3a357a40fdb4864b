//! Migration steps for the plugin's layout, which keeps a component in two forms: its column
//! in a full save (`component/<name>`, with `entities` and `values`), and one memento per
//! entity in an incremental save's deltas (`component/<name>/<id>`, the value alone), which a
//! compaction folds into the slot's base as they are. A change to a component must reach both;
//! these helpers write the step once.
//!
//! ```
//! use savegame::Migrations;
//! use savegame_bevy::migrate::{component_step, rename_component};
//!
//! // Version 2 of the game renamed `Hp` to `Health`, and gave it a `max`.
//! let migrations = Migrations::new().step(2, "Hp is Health", |doc| {
//!     rename_component(doc, "Hp", "Health");
//!     Ok(())
//! });
//! // Later, `Health` got `regen` as its memento version 2 (registered with
//! // `save_component_versioned::<Health>("Health", 2)`).
//! let migrations = component_step(migrations, "Health", 1, 2, |health| {
//!     health.insert_if_absent("regen", 0u32);
//!     Ok(())
//! });
//! # migrations.check(2)?;
//! # Ok::<(), savegame::Error>(())
//! ```

use savegame::Migrations;
use savegame::migrate::{Document, MigrationError, Value};

use crate::entry::COMPONENT_PREFIX;

/// Adds the per-memento steps that take component `name` from memento version `from` to
/// `to` (`from + 1`): `step` runs on each value, of the column of a full save and of each
/// entity's memento a delta wrote.
#[must_use]
pub fn component_step(
    migrations: Migrations,
    name: &str,
    from: u32,
    to: u32,
    step: impl Fn(&mut Value) -> Result<(), MigrationError> + Clone + Send + Sync + 'static,
) -> Migrations {
    let column = format!("{COMPONENT_PREFIX}{name}");
    let each = format!("{column}/*");
    let on_values = step.clone();
    let path = format!("/{}/values", column.replace('~', "~0").replace('/', "~1"));
    migrations
        .memento_step(column, from, to, move |memento| {
            let values = memento
                .get_mut("values")
                .ok_or_else(|| MigrationError::new(path.clone(), "missing"))?;
            for value in values.elements_mut() {
                on_values(value)?;
            }
            Ok(())
        })
        .memento_step(each, from, to, step)
}

/// Renames component `old` to `new` in a whole-document step: its column, and each entity's
/// memento a delta wrote (each keeping its memento version).
pub fn rename_component(doc: &mut Document, old: &str, new: &str) {
    let (old, new) = (
        format!("{COMPONENT_PREFIX}{old}"),
        format!("{COMPONENT_PREFIX}{new}"),
    );
    let each = format!("{old}/");
    let ids: Vec<String> = doc
        .ids()
        .filter(|id| *id == old || id.starts_with(&each))
        .map(str::to_owned)
        .collect();
    for id in ids {
        let version = doc.memento_version(&id);
        if let Some(memento) = doc.remove(&id) {
            let renamed = format!("{new}{}", &id[old.len()..]);
            doc.insert(renamed.clone(), memento);
            if let Some(version) = version {
                // The memento was just inserted: it is there to take its version.
                let _ = doc.set_memento_version(&renamed, version);
            }
        }
    }
}
