//! [`SavegamePlugin`] and the autosave timer; the resource it adds is [`SaveManager`](crate::SaveManager).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bevy_app::{App, Last, Plugin, PreUpdate};
use bevy_ecs::resource::Resource;
use bevy_ecs::world::World;
use bevy_time::Time;
use savegame::{ManagerBuilder, SaveLoadManager, SlotId};

use crate::entry::SaveRegistry;
use crate::error::SaveError;
use crate::events::{
    LoadFailed, Loaded, SaveCommand, SaveFailed, Saved, Written, report_save_failed,
};
use crate::ids::NextSaveId;
use crate::manager::{PendingHandle, SaveManager, SaveTarget};
use crate::tracking::Incremental;
use crate::watch::{watch_parents, watch_saveable, watch_tick_checks};

/// Adds saving and loading to an [`App`]: the [`SaveManager`] resource, the systems that
/// report finished background saves ([`Saved`], [`SaveFailed`]) and, if asked, autosave.
///
/// The manager is built from the library's own [`ManagerBuilder`], so every option it has
/// (folder or app identity, codec, key, schema version, migrations, backups, autosave slots,
/// compression) is set the same way as without Bevy.
///
/// ```
/// use savegame::{Key, SaveLoadManager};
/// use savegame_bevy::SavegamePlugin;
/// # let dir = tempfile::tempdir().unwrap();
/// let plugin = SavegamePlugin::new(
///     SaveLoadManager::builder()
///         .directory(dir.path()) // or .app("com", "Studio", "Game")
///         .key(Key::from_bytes([7; 32]))
///         .schema_version(2)
///         .autosave_slots(3),
/// )?
/// .autosave_every(std::time::Duration::from_secs(300));
/// # Ok::<(), savegame::Error>(())
/// ```
pub struct SavegamePlugin {
    manager: Mutex<Option<SaveLoadManager>>,
    autosave_every: Option<Duration>,
}

impl SavegamePlugin {
    /// Builds the manager now, so a bad configuration is an error here rather than a failure
    /// inside the app's setup.
    ///
    /// # Errors
    /// Whatever [`ManagerBuilder::build`] returns: no location, a migration chain with a gap, a
    /// folder that cannot be created.
    pub fn new(builder: ManagerBuilder) -> savegame::Result<Self> {
        Ok(Self::with_manager(builder.build()?))
    }

    /// A plugin around a manager the game built itself.
    #[must_use]
    pub fn with_manager(manager: SaveLoadManager) -> Self {
        SavegamePlugin {
            manager: Mutex::new(Some(manager)),
            autosave_every: None,
        }
    }

    /// Autosave every `interval` of game time (Bevy's [`Time`], the virtual clock: a paused
    /// game does not autosave), to the manager's autosave rotation. Off by default.
    #[must_use]
    pub fn autosave_every(mut self, interval: Duration) -> Self {
        self.autosave_every = Some(interval);
        self
    }
}

impl Plugin for SavegamePlugin {
    fn build(&self, app: &mut App) {
        let manager = self
            .manager
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Bevy refuses a plugin added twice, so the manager is here the one time build runs.
        if let Some(manager) = manager {
            app.insert_resource(SaveManager::new(manager));
        }
        watch_saveable(app);
        watch_parents(app);
        watch_tick_checks(app);
        app.init_resource::<SaveRegistry>()
            .init_resource::<NextSaveId>()
            .init_resource::<Incremental>()
            .insert_resource(Autosave {
                interval: self.autosave_every,
                elapsed: Duration::ZERO,
            })
            .add_message::<Saved>()
            .add_message::<SaveFailed>()
            .add_message::<Loaded>()
            .add_message::<LoadFailed>()
            .add_systems(PreUpdate, report_finished_saves)
            .add_systems(Last, autosave);
    }
}

/// Reports each background save that finished since the last frame, as [`Saved`] or
/// [`SaveFailed`] (a message and an observer event). A save replaced by a newer one to the same
/// slot before it started is not reported: the newer one is. A failed save (or a delta dropped
/// by a save made at once through the manager) makes the slot's next incremental save a full
/// one.
fn report_finished_saves(world: &mut World) {
    let Some(mut manager) = world.get_resource_mut::<SaveManager>() else {
        return;
    };
    for done in manager.take_finished() {
        let counts = done.counts.get().copied().unwrap_or_default();
        // A full save replaced by a newer one leaves the newer one's mark; a delta dropped by
        // a save the game made at once through the manager leaves a slot the plugin did not
        // write.
        let keeps_mark = matches!(done.handle, PendingHandle::Full(_));
        let written = match done.handle {
            PendingHandle::Full(handle) => handle.wait().map(Written::Full),
            PendingHandle::Delta(handle) => handle.wait().map(|report| Written::Delta {
                report: Arc::new(report),
                entities: counts.written,
                removed: counts.removed,
            }),
        };
        let slot = match (&written, done.target) {
            (Ok(Written::Full(report)), _) => Some(report.slot),
            (Ok(Written::Delta { report, .. }), _) => Some(report.slot),
            (Err(_), SaveTarget::Slot(slot)) => Some(slot),
            (Err(_), _) => None,
        };
        match written {
            Ok(written) => {
                // A compaction folded the deltas' rows into the slot's base as they are: the
                // next incremental save writes a base without them.
                if let (Written::Delta { report, .. }, Some(slot)) = (&written, slot)
                    && report.compacted.is_some()
                    && let Some(mut incremental) = world.get_resource_mut::<Incremental>()
                {
                    incremental.forget(slot);
                }
                let saved = Saved {
                    slot: slot.unwrap_or(SlotId::Quicksave),
                    written,
                    entities: counts.entities,
                    unsaved_references: counts.unsaved_references,
                };
                world.write_message(saved.clone());
                world.trigger(saved);
            }
            Err(e) => {
                let superseded = matches!(e, savegame::Error::Superseded);
                if !(superseded && keeps_mark)
                    && let (Some(slot), Some(mut incremental)) =
                        (slot, world.get_resource_mut::<Incremental>())
                {
                    incremental.forget(slot);
                }
                if !superseded {
                    report_save_failed(world, done.target, Arc::new(SaveError::from_worker(e)));
                }
            }
        }
    }
}

/// The autosave timer: how often, and how much game time since the last autosave. A game may
/// change [`interval`](Self::interval) at run time (`None` stops autosaving).
#[derive(Resource, Debug, Clone)]
pub struct Autosave {
    /// Autosave after this much game time; `None`: never.
    pub interval: Option<Duration>,
    /// Game time since the last autosave (or since the start).
    pub elapsed: Duration,
}

/// Counts game time and autosaves when the interval is reached, at the end of the frame.
fn autosave(world: &mut World) {
    let delta = world
        .get_resource::<Time>()
        .map_or(Duration::ZERO, Time::delta);
    let Some(mut timer) = world.get_resource_mut::<Autosave>() else {
        return;
    };
    let Some(interval) = timer.interval else {
        return;
    };
    timer.elapsed += delta;
    if timer.elapsed < interval {
        return;
    }
    timer.elapsed = Duration::ZERO;
    SaveCommand::autosave().run(world);
}
