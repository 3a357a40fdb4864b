//! Migration steps for the plugin's layout, which keeps a component in three forms: its column
//! in a full save (`component/<name>`, with `entities` and `values`), each delta's rows in the
//! same shape (`component/<name>+<n>`), and, in deltas of the older layout, one memento per
//! entity (`component/<name>/<id>`, the value alone); a compaction folds deltas into the slot's
//! base as they are. A change to a component must reach all three; these helpers write the
//! step once.
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
use crate::layout::DELTA_MARK;

/// Adds the per-memento steps that take component `name` from memento version `from` to
/// `to` (`from + 1`): `step` runs on each value, of the column of a full save, of each delta's
/// rows, and of each entity's memento a delta of the older layout wrote.
#[must_use]
pub fn component_step(
    migrations: Migrations,
    name: &str,
    from: u32,
    to: u32,
    step: impl Fn(&mut Value) -> Result<(), MigrationError> + Clone + Send + Sync + 'static,
) -> Migrations {
    let column = format!("{COMPONENT_PREFIX}{name}");
    let rows = format!("{column}{DELTA_MARK}*");
    let each = format!("{column}/*");
    let on_values = |id: &str| {
        let step = step.clone();
        let path = format!("/{}/values", id.replace('~', "~0").replace('/', "~1"));
        move |memento: &mut Value| {
            let values = memento
                .get_mut("values")
                .ok_or_else(|| MigrationError::new(path.clone(), "missing"))?;
            for value in values.elements_mut() {
                step(value)?;
            }
            Ok(())
        }
    };
    let (on_column, on_rows) = (on_values(&column), on_values(&rows));
    migrations
        .memento_step(column, from, to, on_column)
        .memento_step(rows, from, to, on_rows)
        .memento_step(each, from, to, step)
}

/// Renames component `old` to `new` in a whole-document step: its column, each delta's rows,
/// and each entity's memento a delta of the older layout wrote (each keeping its memento
/// version).
pub fn rename_component(doc: &mut Document, old: &str, new: &str) {
    let (old, new) = (
        format!("{COMPONENT_PREFIX}{old}"),
        format!("{COMPONENT_PREFIX}{new}"),
    );
    let (each, rows) = (format!("{old}/"), format!("{old}{DELTA_MARK}"));
    let ids: Vec<String> = doc
        .ids()
        .filter(|id| *id == old || id.starts_with(&each) || id.starts_with(&rows))
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
