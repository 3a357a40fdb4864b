//! A Bevy plugin for `savegame`: the registered components of marked entities, and registered
//! resources, saved crash-safely (with backups, encrypted, checksummed), migrated when old,
//! and written without stalling a frame.
//!
//! Supports Bevy 0.20 (`bevy_app`, `bevy_ecs` and `bevy_time` 0.20); needs Rust 1.95.
//!
//! # Which item do I want?
//!
//! | you want to | use |
//! |---|---|
//! | add saving to an app, with the manager configured as in the library | [`SavegamePlugin::new`] with a [`savegame::ManagerBuilder`] |
//! | say which entities are saved | the [`Saveable`] marker; each gets a stable [`SaveId`] |
//! | say which components and resources are saved | [`SavegameApp::save_component`], [`SavegameApp::save_resource`] |
//! | save or load from a system | [`SavegameCommands`] on `Commands`: `commands.save(slot)`, `commands.load(slot)` |
//! | hear how a save or a load went | messages or observer events: [`Saved`], [`SaveFailed`], [`Loaded`], [`LoadFailed`] |
//! | autosave every few minutes of game time | [`SavegamePlugin::autosave_every`]; the [`Autosave`] resource |
//! | show a load menu | the [`SaveMenu`] system parameter, or [`SaveManager::slots`] |
//! | anything else the library does (delete, copy, settings store) | [`SaveManager::manager`] |
//!
//! ```
//! use bevy_app::App;
//! use bevy_ecs::prelude::*;
//! use savegame::{SaveLoadManager, SlotId};
//! use savegame_bevy::{Saveable, SavegameApp, SavegameCommands, SavegamePlugin};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Component, Clone, Serialize, Deserialize, PartialEq, Debug)]
//! struct Health(u32);
//!
//! #[derive(Resource, Clone, Serialize, Deserialize)]
//! struct Score(u64);
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let mut app = App::new();
//! app.add_plugins(SavegamePlugin::new(SaveLoadManager::builder().directory(dir.path()))?)
//!     .save_component::<Health>()
//!     .save_resource::<Score>()
//!     .insert_resource(Score(10));
//! app.world_mut().spawn((Saveable, Health(80)));
//!
//! app.world_mut().commands().save(SlotId::Numbered(1));
//! app.update(); // the capture happens in this frame; the write on the manager's worker
//! # app.world().resource::<savegame_bevy::SaveManager>().manager().flush();
//! # app.world_mut().commands().load(SlotId::Numbered(1));
//! # app.update();
//! # Ok::<(), savegame::Error>(())
//! ```
//!
//! # Design
//!
//! - **Serde first.** Registered types are serde types, as every memento of the library is:
//!   the save's mementos are then the same values a migration step (in Rust or in a
//!   declarative file) and `savegame dump` see, field by field, and by default the plugin
//!   needs neither `bevy_reflect` nor a type registry (a smaller build). A component that
//!   derives `Reflect` and not serde's traits is registered with `save_reflect` (feature
//!   `reflect`). A type is saved under a short name, not its Rust path ([`SavegameApp`]).
//! - **Opt-in.** Only [`Saveable`] entities are saved, and of them only registered components;
//!   meshes, cameras, UI and everything else never reach a save and never break one.
//! - **Stable ids.** Each saved entity has a [`SaveId`]. An `Entity` field of a registered
//!   component (marked `#[entities]` for Bevy's `MapEntities`, as `ChildOf` is) is written as
//!   the stand-in `Entity::from_raw_u32(id)` of its target's id, through Bevy's serde for
//!   `Entity`, and mapped back to the live entity with that id on load; one pointing at an
//!   unsaved entity is written, and loads, as `Entity::PLACEHOLDER` (counted in [`Saved`] and
//!   [`Loaded`]). A saved child's link to its parent is saved by the plugin, saved parent or
//!   not (an unsaved parent is given a [`SaveId`]), with the child's place among all its
//!   parent's children.
//! - **Loads replace only what is saved.** A load decodes every memento before it changes
//!   anything (a failed load leaves the world as it was), then updates saved entities in place
//!   by id (keeping their unregistered components: visuals stay), despawns saved entities the
//!   save lacks (detaching, not despawning, their unsaved children) and spawns the rest.
//!   Entities without [`Saveable`] are untouched.
//! - **Saves do not stall a frame.** A save command copies, in the frame that applies it, what
//!   it must: the saved entities' ids (giving new ones theirs), the parent/child links, and a
//!   clone of each registered component and resource, with entity references mapped to stable
//!   ids. That is all the frame pays (see the bench, `save/frame`). The copies then go to the
//!   manager's worker thread ([`savegame::SaveLoadManager::save_in_background_with`]), which
//!   serializes them into mementos, encodes the file body, compresses, seals (AES-256-GCM) and
//!   writes it crash-safely with backups. The outcome is reported in a later frame, a value
//!   that does not serialize included. The file holds the state of the frame that asked, not a
//!   later one. Loads are synchronous: the world must have the result.
//! - **Errors are values.** No function of the plugin panics; a component that fails to
//!   serialize is [`SaveError::Serialize`] naming its type and entity.
//!
//! # The save's layout
//!
//! One memento per registered type, so a migration renames a component by renaming one
//! memento, and adds a field with one loop over its values. The layout is in the README
//! (`bevy/README.md`).

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod capture;
mod column;
mod entry;
mod error;
mod events;
mod ids;
mod layout;
mod manager;
mod menu;
pub mod migrate;
mod parents;
mod plugin;
#[cfg(feature = "reflect")]
mod reflect;
mod registry;
mod restore;
mod schema;
mod ticks;
mod tracking;
mod watch;

pub use error::SaveError;
pub use events::{
    LoadCommand, LoadFailed, Loaded, SaveCommand, SaveFailed, Saved, SavegameCommands, Written,
};
pub use ids::{SaveId, Saveable};
pub use manager::{SaveManager, SaveTarget};
pub use menu::SaveMenu;
pub use plugin::{Autosave, SavegamePlugin};
pub use registry::SavegameApp;
pub use schema::memento_types;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's Bevy chapter, whose code blocks run as doctests here.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/bevy.md")]
pub struct GuideDoctests;
