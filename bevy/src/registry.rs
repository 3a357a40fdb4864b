//! The [`SavegameApp`] methods that register what the game saves, into the plugin's
//! registry ([`entry`](crate::entry)), with the serde functions of [`column`](crate::column).

use std::any::type_name;

use bevy_app::App;
use bevy_ecs::component::Component;
use bevy_ecs::resource::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::column;
use crate::entry::{
    COMPONENT_PREFIX, ComponentEntry, Info, RESOURCE_PREFIX, ResourceEntry, changed_resource,
    has_resource, register_component, register_resource, short_name,
};

/// Registers what a game saves. Implemented for [`App`]; call after adding
/// [`SavegamePlugin`](crate::SavegamePlugin) or before, in any order.
///
/// Each type is saved under a name: by default the last segment of its Rust path (`Health`
/// for `game::stats::Health`); the `_as` methods choose one. The name, not the Rust path, is
/// what a save holds, so moving a type to another module keeps old saves loading, and renaming
/// it is a migration step that renames `component/<old>` to `component/<new>`
/// ([`migrate::rename_component`](crate::migrate::rename_component)).
pub trait SavegameApp {
    /// Saves component `T` on every [`Saveable`](crate::Saveable) entity that has it. Its `Entity` fields (those
    /// `#[entities]` marks for Bevy's [`Component::map_entities`]) are saved as the stable ids
    /// of the entities they point at, and point at the same logical entities after a load.
    fn save_component<T>(&mut self) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// [`save_component`](Self::save_component), under the name `name`.
    fn save_component_as<T>(&mut self, name: &str) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// [`save_component_as`](Self::save_component_as), at memento version `version` (the
    /// others register at 1). Raise it when `T` changes shape, and give the manager the steps
    /// from the old version ([`migrate::component_step`](crate::migrate::component_step)
    /// registers one for the column of full saves, one for the rows of incremental saves, and
    /// one for the per-entity values of their older layout): a load migrates older saves' mementos, and refuses one at a
    /// version no step leads from, or at a newer one ([`SaveError::Deserialize`](crate::SaveError::Deserialize) with
    /// `NoMementoMigrationPath` or `NewerMemento`).
    fn save_component_versioned<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send;

    /// Saves component `T`, which derives `Reflect` but not serde's traits, through Bevy's
    /// reflection (`bevy_reflect`'s serde, with the app's type registry; `T` is registered in
    /// it): as [`save_component`](Self::save_component) saves a serde type, in the same layout,
    /// entity references mapped the same way. Feature `reflect`. The codec must describe
    /// itself (JSON or MessagePack: a reflected value is read back through a value tree), and
    /// the schema guard does not check the type's shape.
    #[cfg(feature = "reflect")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reflect")))]
    fn save_reflect<T>(&mut self) -> &mut Self
    where
        T: Component
            + bevy_reflect::Reflect
            + bevy_reflect::FromReflect
            + bevy_reflect::TypePath
            + bevy_reflect::GetTypeRegistration
            + Clone;

    /// [`save_reflect`](Self::save_reflect), under the name `name`, at memento version
    /// `version` (1 for a type that never changed).
    #[cfg(feature = "reflect")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reflect")))]
    fn save_reflect_as<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component
            + bevy_reflect::Reflect
            + bevy_reflect::FromReflect
            + bevy_reflect::TypePath
            + bevy_reflect::GetTypeRegistration
            + Clone;

    /// Saves resource `R`; a load replaces it (and leaves it as it is when the save has none).
    /// Its `Entity` fields are mapped as a component's are: mark them `#[entities]` and derive
    /// `MapEntities` beside `Resource` (`#[derive(Resource, MapEntities)]`; Bevy 0.20's
    /// `Resource` derive reads the attribute but does not declare it).
    fn save_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;

    /// [`save_resource`](Self::save_resource), under the name `name`.
    fn save_resource_as<R>(&mut self, name: &str) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;

    /// [`save_resource_as`](Self::save_resource_as), at memento version `version`, as
    /// [`save_component_versioned`](Self::save_component_versioned) is for a component.
    fn save_resource_versioned<R>(&mut self, name: &str, version: u32) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone;
}

impl SavegameApp for App {
    fn save_component<T>(&mut self) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        self.save_component_as::<T>(&short_name(type_name::<T>()))
    }

    fn save_component_as<T>(&mut self, name: &str) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        self.save_component_versioned::<T>(name, savegame::format::DEFAULT_MEMENTO_VERSION)
    }

    fn save_component_versioned<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component + Serialize + DeserializeOwned + Clone + Send,
    {
        let entry = ComponentEntry {
            info: Info {
                id: format!("{COMPONENT_PREFIX}{name}"),
                version,
                type_name: type_name::<T>(),
            },
            copy_all: column::copy_all::<T>,
            copy_delta: column::copy_delta::<T>,
            decode: column::decode_component::<T>,
            remove: column::remove_component::<T>,
            describe: column::describe_component::<T>,
        };
        register_component::<T>(self, entry);
        self
    }

    #[cfg(feature = "reflect")]
    fn save_reflect<T>(&mut self) -> &mut Self
    where
        T: Component
            + bevy_reflect::Reflect
            + bevy_reflect::FromReflect
            + bevy_reflect::TypePath
            + bevy_reflect::GetTypeRegistration
            + Clone,
    {
        let name = crate::reflect::default_name::<T>();
        self.save_reflect_as::<T>(&name, savegame::format::DEFAULT_MEMENTO_VERSION)
    }

    #[cfg(feature = "reflect")]
    fn save_reflect_as<T>(&mut self, name: &str, version: u32) -> &mut Self
    where
        T: Component
            + bevy_reflect::Reflect
            + bevy_reflect::FromReflect
            + bevy_reflect::TypePath
            + bevy_reflect::GetTypeRegistration
            + Clone,
    {
        crate::reflect::save_reflect_versioned::<T>(self, name, version);
        self
    }

    fn save_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        self.save_resource_as::<R>(&short_name(type_name::<R>()))
    }

    fn save_resource_as<R>(&mut self, name: &str) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        self.save_resource_versioned::<R>(name, savegame::format::DEFAULT_MEMENTO_VERSION)
    }

    fn save_resource_versioned<R>(&mut self, name: &str, version: u32) -> &mut Self
    where
        R: Resource + Serialize + DeserializeOwned + Clone,
    {
        let entry = ResourceEntry {
            info: Info {
                id: format!("{RESOURCE_PREFIX}{name}"),
                version,
                type_name: type_name::<R>(),
            },
            copy: column::copy_resource::<R>,
            changed: changed_resource::<R>,
            present: has_resource::<R>,
            decode: column::decode_resource::<R>,
            describe: column::describe_resource::<R>,
        };
        register_resource::<R>(self, entry);
        self
    }
}
