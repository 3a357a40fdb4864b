//! [`Migrations::memento_plan`]: the per-memento steps that take one memento from a version to
//! another, for the schema guard and tools, without running them.

use super::Migrations;
use crate::error::{Error, Result};

impl Migrations {
    /// The per-memento steps ([`memento_step`](Self::memento_step)) a load runs to take memento
    /// `id` (or pattern `prefix*`) from memento version `from` to `to`: each as `(from, to)`, in
    /// order; none when `from == to`. The steps of `id` are those a load would pick: its own,
    /// else the longest pattern that matches it.
    ///
    /// ```
    /// use savegame::Migrations;
    ///
    /// let migrations = Migrations::new()
    ///     .memento_step("player", 1, 2, |_| Ok(()))
    ///     .memento_step("player", 2, 3, |_| Ok(()));
    /// assert_eq!(migrations.memento_plan("player", 1, 3)?, [(1, 2), (2, 3)]);
    /// assert!(migrations.memento_plan("world", 1, 2).is_err());
    /// # Ok::<(), savegame::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoMementoMigrationPath`] when a step is missing (or `from > to`).
    pub fn memento_plan(&self, id: &str, from: u32, to: u32) -> Result<Vec<(u32, u32)>> {
        let missing = || Error::NoMementoMigrationPath {
            id: id.to_owned(),
            from,
            to,
        };
        if from > to {
            return Err(missing());
        }
        if from == to {
            return Ok(Vec::new());
        }
        let chain = self.chain_of(id).ok_or_else(missing)?;
        (from..to)
            .map(|v| {
                self.memento_steps
                    .iter()
                    .find(|s| s.id == chain && s.from == v)
                    .map(|s| (s.from, s.to))
                    .ok_or_else(missing)
            })
            .collect()
    }
}
