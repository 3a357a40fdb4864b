//! Asking for saves and loads (commands), and hearing how they went (messages and observer
//! events).

use std::sync::{Arc, OnceLock};

use bevy_ecs::entity::Entity;
use bevy_ecs::event::Event;
use bevy_ecs::message::Message;
use bevy_ecs::system::{Command, Commands};
use bevy_ecs::world::World;
use savegame::{DeltaReport, LoadReport, Metadata, SaveReport, SlotId};

use crate::capture::{Delta, copy_delta, copy_full, needs_full_save};
use crate::error::SaveError;
use crate::ids::hidden;
use crate::manager::Counts;
use crate::manager::{PendingHandle, PendingSave, SaveManager, SaveTarget};
use crate::restore::restore;
use crate::tracking::{Incremental, Left, Unheld};

/// A background save was written: it is on disk, as after [`SaveLoadManager::save`](savegame::SaveLoadManager::save)
/// (or, for an incremental save, appended as after
/// [`save_incremental`](savegame::SaveLoadManager::save_incremental)). Sent as a message (read
/// it with `MessageReader<Saved>`) and triggered as an observer event
/// (`app.add_observer(|saved: On<Saved>| …)`).
#[derive(Event, Message, Debug, Clone)]
#[non_exhaustive]
pub struct Saved {
    /// The slot written (for an autosave, the rotation's slot it went to).
    pub slot: SlotId,
    /// What the manager wrote: a full save, or a delta.
    pub written: Written,
    /// How many saved entities the world had when the save was asked for.
    pub entities: usize,
    /// How many `Entity` fields pointed at entities that are not saved; they were written as
    /// `Entity::PLACEHOLDER`, and load as that (for a delta: of the values it wrote).
    pub unsaved_references: usize,
}

/// What a background save wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Written {
    /// A full save.
    Full(SaveReport),
    /// A delta on the slot's journal ([`SavegameCommands::save_incremental`]).
    Delta {
        /// What the manager appended (and whether it compacted the journal).
        report: Arc<DeltaReport>,
        /// How many entities it wrote: spawned, or with a registered component, a parent or a
        /// place among their parent's children changed since the slot's last save.
        entities: usize,
        /// How many entities it removed: despawned, or no longer [`Saveable`](crate::Saveable).
        removed: usize,
    },
}

impl Written {
    /// The full save's report, or `None` for a delta.
    #[must_use]
    pub fn full(&self) -> Option<&SaveReport> {
        match self {
            Written::Full(report) => Some(report),
            Written::Delta { .. } => None,
        }
    }

    /// Whether it was a delta.
    #[must_use]
    pub fn is_delta(&self) -> bool {
        matches!(self, Written::Delta { .. })
    }
}

/// A save failed: it could not be captured (a component that does not serialize, named with
/// its entity), or the manager could not write it (a read-only folder, a full disk, a slot
/// holding a newer save). The slot's previous save is intact. Sent as a message and triggered
/// as an observer event, like [`Saved`].
#[derive(Event, Message, Debug, Clone)]
#[non_exhaustive]
pub struct SaveFailed {
    /// Where the save was going.
    pub slot: SaveTarget,
    /// Why it failed.
    pub error: Arc<SaveError>,
}

/// A save was loaded into the world. Sent as a message and triggered as an observer event.
#[derive(Event, Message, Debug, Clone)]
#[non_exhaustive]
pub struct Loaded {
    /// The slot.
    pub slot: SlotId,
    /// Which file was loaded: a backup if the primary was damaged, a migration if it was old.
    pub report: LoadReport,
    /// How many saved entities the world now has from the save.
    pub entities: usize,
    /// How many of them were spawned (the others were saved entities already in the world,
    /// found by their [`SaveId`](crate::SaveId) and updated in place).
    pub spawned: usize,
    /// How many saved entities the save does not have were despawned.
    pub despawned: usize,
    /// How many `Entity` fields pointed at an entity the save does not have, and were set to
    /// `Entity::PLACEHOLDER`.
    pub dangling_references: usize,
}

/// A load failed; the world is unchanged. Sent as a message and triggered as an observer event.
#[derive(Event, Message, Debug, Clone)]
#[non_exhaustive]
pub struct LoadFailed {
    /// The slot.
    pub slot: SlotId,
    /// Why it failed: no save, every copy damaged, a wrong key, a failed migration, a memento
    /// that does not decode into its registered type.
    pub error: Arc<SaveError>,
}

pub(crate) fn report_save_failed(world: &mut World, slot: SaveTarget, error: Arc<SaveError>) {
    let failed = SaveFailed { slot, error };
    world.write_message(failed.clone());
    world.trigger(failed);
}

/// Saves the world: copies its saved values when the command is applied (in the frame that
/// queued it), then hands the copies to the manager's worker thread, which serializes them
/// into a snapshot, encodes, seals and writes it. [`Saved`] or [`SaveFailed`] follows in a
/// later frame. Queue it with [`SavegameCommands::save`] (or `save_incremental`, `autosave`),
/// or apply it to a `&mut World`.
#[derive(Debug, Clone)]
#[must_use]
pub struct SaveCommand {
    target: SaveTarget,
    incremental: bool,
    metadata: Metadata,
}

impl SaveCommand {
    /// A full save to `slot`.
    pub fn new(slot: SlotId) -> Self {
        SaveCommand {
            target: SaveTarget::Slot(slot),
            incremental: false,
            metadata: Metadata::default(),
        }
    }

    /// An incremental save to `slot`: a delta on the slot's journal with what changed since
    /// the plugin last saved the slot or loaded it (see
    /// [`SavegameCommands::save_incremental`]); a full save when the plugin has not, when
    /// the slot's last save failed, after its journal was compacted, or when a delta cannot
    /// say what changed (listed there).
    pub fn incremental(slot: SlotId) -> Self {
        SaveCommand {
            incremental: true,
            ..SaveCommand::new(slot)
        }
    }

    /// A save to the autosave rotation.
    pub fn autosave() -> Self {
        SaveCommand {
            target: SaveTarget::Autosave,
            incremental: false,
            metadata: Metadata::default(),
        }
        .with_label("Autosave")
    }

    /// What the load menu shows for the save ("Level 3").
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.metadata.label = label.into();
        self
    }

    /// The save's whole metadata (label, playtime, app version, thumbnail, fields of the
    /// game's own).
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Copies the world's saved values now and queues the rest: the worker serializes them,
    /// then encodes, seals and writes. A failed copy is reported at once; a value that does
    /// not serialize, or two entities with one id, when the worker meets them.
    pub(crate) fn run(self, world: &mut World) {
        let target = self.target;
        if let Err(e) = self.queue(world) {
            if let SaveTarget::Slot(slot) = target
                && let Some(mut incremental) = world.get_resource_mut::<Incremental>()
            {
                incremental.forget(slot);
            }
            report_save_failed(world, target, Arc::new(e));
        }
    }

    fn queue(self, world: &mut World) -> Result<(), SaveError> {
        let SaveCommand {
            target,
            incremental,
            metadata,
        } = self;
        if world.get_resource::<SaveManager>().is_none() {
            return Err(SaveError::NotSetUp {
                reason: "no SaveManager resource: add SavegamePlugin".into(),
            });
        }
        let now = world.change_tick();
        let slot = match target {
            SaveTarget::Slot(slot) => Some(slot),
            SaveTarget::Autosave => None,
        };
        let tracking = world.get_resource_or_init::<Incremental>();
        let mark = slot.and_then(|s| tracking.live_mark(s, now));
        // A slot is followed once an incremental save was asked of it; only a followed slot
        // keeps the hidden saved entities of its last save.
        let follow = slot.filter(|_| incremental || mark.is_some());
        let hidden = follow.map(|_| hidden(world)).unwrap_or_default();
        let counts: Arc<OnceLock<Counts>> = Arc::default();
        let told = Arc::clone(&counts);
        // Changes a delta cannot say make the save a full one.
        let mark = match (slot, mark) {
            (Some(slot), Some(mark)) if incremental => {
                (!needs_full_save(world, slot, mark, now, &hidden)).then_some(mark)
            }
            _ => None,
        };
        // A delta's copy, or the metadata for a full save.
        let delta = match (slot, mark) {
            (Some(slot), Some(mark)) => match copy_delta(world, metadata, slot, mark, now)? {
                Delta::Copied(copy) => Ok((slot, mark, copy)),
                Delta::Full(metadata) => Err(metadata),
            },
            _ => Err(metadata),
        };
        let handle = match delta {
            Ok((slot, mark, copy)) => {
                // The slot's next delta takes the next number; this one's removals join the
                // ids the slot may hold in references only.
                let mut tracking = world.resource_mut::<Incremental>();
                tracking.mark(
                    slot,
                    now,
                    mark.delta.saturating_add(1),
                    Unheld::Add(copy.removed()),
                );
                tracking.note_hidden(slot, hidden);
                let make = move || {
                    let (snapshot, found) = copy.make().map_err(SaveError::into_worker)?;
                    let _ = told.set(found);
                    Ok(snapshot)
                };
                let manager = world.resource::<SaveManager>().manager();
                PendingHandle::Delta(manager.save_incremental_in_background_with(slot, make))
            }
            Err(metadata) => {
                let copy = copy_full(world, metadata)?;
                // A full save: the next delta is number 1, and no id is held in references
                // only.
                if let Some(slot) = follow {
                    let mut tracking = world.resource_mut::<Incremental>();
                    tracking.mark(slot, now, 1, Unheld::None);
                    tracking.note_hidden(slot, hidden);
                }
                let make = move || {
                    let (snapshot, found) = copy.make().map_err(SaveError::into_worker)?;
                    let _ = told.set(found);
                    Ok(snapshot)
                };
                let manager = world.resource::<SaveManager>().manager();
                PendingHandle::Full(match slot {
                    Some(slot) => manager.save_in_background_with(slot, make),
                    None => manager.autosave_in_background_with(make),
                })
            }
        };
        // Changes made after this, in this frame, are newer than the mark.
        world.increment_change_tick();
        world.resource_mut::<SaveManager>().push(PendingSave {
            target,
            handle,
            counts,
        });
        Ok(())
    }
}

impl Command for SaveCommand {
    type Out = ();

    fn apply(self, world: &mut World) {
        self.run(world);
    }
}

/// Loads a slot into the world, at once, when the command is applied: reads it (with backup
/// fallback and migrations), decodes every memento, and only then changes the world (see
/// [`SavegameCommands::load`]). Reports [`Loaded`] or [`LoadFailed`] before it returns.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct LoadCommand {
    slot: SlotId,
}

impl LoadCommand {
    /// A load of `slot`.
    pub fn new(slot: SlotId) -> Self {
        LoadCommand { slot }
    }

    fn run(self, world: &mut World) -> Result<Loaded, SaveError> {
        let loaded = world
            .get_resource::<SaveManager>()
            .ok_or_else(|| SaveError::NotSetUp {
                reason: "no SaveManager resource: add SavegamePlugin".into(),
            })?
            .manager()
            .load(self.slot)?;
        let restored = restore(world, &loaded.snapshot)?;
        // A slot followed for incremental saves now holds what the world holds, with no id
        // that no entity has.
        let now = world.change_tick();
        // The hidden entities the load leaves, for a slot followed for incremental saves.
        let followed = world
            .get_resource::<Incremental>()
            .is_some_and(|i| i.mark_of(self.slot).is_some());
        let hidden_now = if followed { hidden(world) } else { Vec::new() };
        let mut incremental = world.get_resource_or_init::<Incremental>();
        let report = &loaded.report;
        if restored.dangling_references > 0 || restored.unlinked_parents > 0 {
            // The slot holds ids, in references or children's links, that no entity here has:
            // a delta would leave them for an entity given one of them later to take, so its
            // next save is a full one, which holds none.
            incremental.forget(self.slot);
        } else if report.recovered_from_backup.is_some() || report.migrated_from.is_some() {
            // A backup, or a save migrated from an older version, is not what the slot's
            // primary file holds (the manager refuses a delta on it): its next save is a full
            // one.
            incremental.forget(self.slot);
        } else if followed {
            incremental.mark(
                self.slot,
                now,
                restored.last_delta.saturating_add(1),
                Unheld::None,
            );
            // The slot holds the hidden entities the save has (the game hid them since it was
            // written), and lacks the others: one of the first still hidden at the next save,
            // or any shown since, makes it a full one.
            incremental.note_loaded_hidden(self.slot, hidden_now, restored.hidden_in_save);
            // The registered resources the save lacks and the world has: the slot does not
            // hold them, so its next delta writes them (noted after the mark, as a removal put
            // back).
            for &index in &restored.lacking {
                incremental.note(Entity::PLACEHOLDER, 0, Left::Resource(index));
            }
        }
        world.increment_change_tick();
        Ok(Loaded {
            slot: self.slot,
            report: loaded.report,
            entities: restored.entities,
            spawned: restored.spawned,
            despawned: restored.despawned,
            dangling_references: restored.dangling_references,
        })
    }
}

impl Command for LoadCommand {
    type Out = ();

    fn apply(self, world: &mut World) {
        match self.run(world) {
            Ok(loaded) => {
                world.write_message(loaded.clone());
                world.trigger(loaded);
            }
            Err(e) => {
                let failed = LoadFailed {
                    slot: self.slot,
                    error: Arc::new(e),
                };
                world.write_message(failed.clone());
                world.trigger(failed);
            }
        }
    }
}

/// Saving and loading from any system, through [`Commands`]:
///
/// ```
/// use bevy_ecs::prelude::*;
/// use savegame::SlotId;
/// use savegame_bevy::SavegameCommands;
///
/// fn quicksave_on_f5(mut commands: Commands /* , keys: Res<ButtonInput<KeyCode>> */) {
///     commands.save(SlotId::Quicksave);
/// }
/// ```
pub trait SavegameCommands {
    /// Saves to `slot`: the capture happens when the commands are applied, in this frame;
    /// the rest on the manager's worker ([`SaveCommand`]).
    fn save(&mut self, slot: SlotId);
    /// Saves to `slot` under a label for the load menu.
    fn save_labelled(&mut self, slot: SlotId, label: impl Into<String>);
    /// Saves to the autosave rotation.
    fn autosave(&mut self);
    /// Saves to `slot` incrementally: a delta on the slot's journal holding only the saved
    /// entities spawned, changed (a registered component added, changed or removed, by Bevy's
    /// change ticks; a parent or a place among its siblings changed) or removed (despawned,
    /// or no longer [`Saveable`](crate::Saveable)) since the plugin last saved the slot or
    /// loaded it, and the registered resources changed since. The first incremental save of a
    /// slot in a run is a full save, and so is the one after a failed save of it, after a
    /// compaction of its journal, after the game gave an entity another `SaveId` or took its
    /// id away, after it removed a registered resource, after a load of the slot that found a
    /// reference or a parent's id with no entity, and the one that would write a saved entity
    /// under an id the slot's deltas removed (the slot may hold it in references), and the one
    /// that saves an entity alive at the slot's last save and not saved then (`Saveable`
    /// added to it since: the slot may hold references to it as no entity). So is the one
    /// after the game hid a saved entity with a disabling component of its own, or showed one
    /// again, or did so to the parent of a saved child (saves leave hidden entities out, and
    /// links and references to them, and a delta does not see them), and, after a load, the
    /// first while an entity the save has is hidden or once one hidden at the load is shown.
    /// The frame pays a pass over the registered components' change ticks and a copy of the
    /// changed values; the manager's worker serializes, seals and appends, and compacts the
    /// journal when it grows past its share of the slot
    /// ([`ManagerBuilder::compact_at`](savegame::ManagerBuilder::compact_at)).
    fn save_incremental(&mut self, slot: SlotId);
    /// Loads `slot` ([`LoadCommand`]). Saved entities the save has (by [`SaveId`](crate::SaveId))
    /// are updated in place, keeping their unregistered components; saved entities it does
    /// not have are despawned (their unsaved children are detached, not despawned); the rest
    /// are spawned. Entities without [`Saveable`](crate::Saveable) are not touched.
    fn load(&mut self, slot: SlotId);
}

impl SavegameCommands for Commands<'_, '_> {
    fn save(&mut self, slot: SlotId) {
        self.queue(SaveCommand::new(slot));
    }

    fn save_labelled(&mut self, slot: SlotId, label: impl Into<String>) {
        self.queue(SaveCommand::new(slot).with_label(label));
    }

    fn autosave(&mut self) {
        self.queue(SaveCommand::autosave());
    }

    fn save_incremental(&mut self, slot: SlotId) {
        self.queue(SaveCommand::incremental(slot));
    }

    fn load(&mut self, slot: SlotId) {
        self.queue(LoadCommand::new(slot));
    }
}
