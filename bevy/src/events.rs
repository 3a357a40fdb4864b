//! Asking for saves and loads (commands), and hearing how they went (messages and observer
//! events).

use std::sync::Arc;

use bevy_ecs::event::Event;
use bevy_ecs::message::Message;
use bevy_ecs::system::{Command, Commands};
use bevy_ecs::world::World;
use savegame::{LoadReport, Metadata, SaveReport, SlotId};

use crate::error::SaveError;
use crate::manager::{PendingSave, SaveManager, SaveTarget};
use crate::world::{capture, restore};

/// A background save was written: it is on disk, as after [`SaveLoadManager::save`](savegame::SaveLoadManager::save).
/// Sent as a message (read it with `MessageReader<Saved>`) and triggered as an observer event
/// (`app.add_observer(|saved: On<Saved>| …)`).
#[derive(Event, Message, Debug, Clone)]
#[non_exhaustive]
pub struct Saved {
    /// The slot written (for an autosave, the rotation's slot it went to).
    pub slot: SlotId,
    /// What the manager wrote.
    pub report: SaveReport,
    /// How many entities the save holds.
    pub entities: usize,
    /// How many `Entity` fields pointed at entities that are not saved; they were written as
    /// `Entity::PLACEHOLDER`, and load as that.
    pub unsaved_references: usize,
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

/// Saves the world: captures it when the command is applied (in the frame that queued it),
/// then hands the snapshot to the manager's worker thread, which encodes, seals and writes it.
/// [`Saved`] or [`SaveFailed`] follows in a later frame. Queue it with
/// [`SavegameCommands::save`], or apply it to a `&mut World`.
#[derive(Debug, Clone)]
#[must_use]
pub struct SaveCommand {
    target: SaveTarget,
    metadata: Metadata,
}

impl SaveCommand {
    /// A save to `slot`.
    pub fn new(slot: SlotId) -> Self {
        SaveCommand {
            target: SaveTarget::Slot(slot),
            metadata: Metadata::default(),
        }
    }

    /// A save to the autosave rotation.
    pub fn autosave() -> Self {
        SaveCommand {
            target: SaveTarget::Autosave,
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

    /// Captures now and queues the write; a failed capture is reported at once.
    pub(crate) fn run(self, world: &mut World) {
        let target = self.target;
        let captured = capture(world, self.metadata);
        let result = captured.and_then(|captured| {
            let mut manager =
                world
                    .get_resource_mut::<SaveManager>()
                    .ok_or_else(|| SaveError::NotSetUp {
                        reason: "no SaveManager resource: add SavegamePlugin".into(),
                    })?;
            let handle = match target {
                SaveTarget::Slot(slot) => manager
                    .manager()
                    .save_in_background(slot, captured.snapshot),
                SaveTarget::Autosave => manager.manager().autosave_in_background(captured.snapshot),
            };
            manager.push(PendingSave {
                target,
                handle,
                entities: captured.entities,
                unsaved_references: captured.unsaved_references,
            });
            Ok(())
        });
        if let Err(e) = result {
            report_save_failed(world, target, Arc::new(e));
        }
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

    fn load(&mut self, slot: SlotId) {
        self.queue(LoadCommand::new(slot));
    }
}
