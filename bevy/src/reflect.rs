//! Components saved through Bevy's reflection ([`SavegameApp::save_reflect`], feature
//! `reflect`): for types that derive `Reflect` but not serde's traits.
//!
//! A value is written with `bevy_reflect`'s `TypedReflectSerializer` (the app's type registry,
//! read on the manager's worker) into the same layout as a serde type's, and read back through
//! a self-describing value tree (`serde_json::Value`) with `TypedReflectDeserializer`, so the
//! save's codec must describe itself: JSON or MessagePack, not bitcode. Migration steps see the
//! values as they see a serde type's. The schema guard does not trace reflected types (it
//! traces serde shapes): their shapes are not checked.

use std::any::type_name;

use bevy_app::App;
use bevy_ecs::change_detection::Tick;
use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::reflect::AppTypeRegistry;
use bevy_ecs::world::World;
use bevy_reflect::serde::{TypedReflectDeserializer, TypedReflectSerializer};
use bevy_reflect::{FromReflect, GetTypeRegistration, Reflect, TypePath, TypeRegistry};
use savegame::{MementoTypes, Snapshot};
use serde::de::DeserializeSeed;
use serde::{Serialize, Serializer};

use crate::column::{ColumnOut, Copied, Decoded, RowsOut, decode_rows};
use crate::entry::{
    COMPONENT_PREFIX, Column, ComponentEntry, Info, Pending, register_component, short_name,
};
use crate::error::SaveError;
use crate::ids::EntityIds;
use crate::layout::{Rewritten, delta_id};

/// A value serialized through the registry.
struct Reflected<'a, T> {
    value: &'a T,
    registry: &'a TypeRegistry,
}

impl<T: Reflect> Serialize for Reflected<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TypedReflectSerializer::new(self.value.as_partial_reflect(), self.registry)
            .serialize(serializer)
    }
}

/// A reflected component's values, with the registry to write them with.
struct ReflectCopied<T> {
    copied: Copied<T>,
    registry: AppTypeRegistry,
}

fn registry_of(world: &World) -> AppTypeRegistry {
    world
        .get_resource::<AppTypeRegistry>()
        .cloned()
        .unwrap_or_default()
}

fn copy_all<T: Component + Reflect + Clone>(world: &mut World) -> Box<dyn Column> {
    let registry = registry_of(world);
    let copied = Copied::<T>::all(world);
    Box::new(ReflectCopied { copied, registry })
}

fn copy_delta<T: Component + Reflect + Clone>(
    world: &mut World,
    since: Tick,
    whole: &[(Entity, u32)],
    new_from: u32,
    lost: Vec<u32>,
    unsaved: &mut usize,
) -> Box<dyn Column> {
    Box::new(ReflectCopied {
        copied: Copied::<T>::delta(world, since, whole, new_from, lost, unsaved),
        registry: registry_of(world),
    })
}

fn serialize_error(info: &Info, entity: Option<Entity>, source: savegame::Error) -> SaveError {
    SaveError::Serialize {
        type_name: info.type_name,
        entity,
        source: Box::new(source),
    }
}

impl<T: Component + Reflect> Column for ReflectCopied<T> {
    fn write_column(
        mut self: Box<Self>,
        ids: &EntityIds,
        snapshot: &mut Snapshot,
        info: &Info,
    ) -> Result<usize, SaveError> {
        let unsaved = self.copied.map_to_stable(ids);
        self.write_rows(snapshot, &info.id, info, None)?;
        Ok(unsaved)
    }

    fn touched(&self, out: &mut Vec<u32>) {
        self.copied.delta_ids(out);
    }

    fn write_delta(
        self: Box<Self>,
        snapshot: &mut Snapshot,
        info: &Info,
        number: u64,
    ) -> Result<(), SaveError> {
        let id = delta_id(&info.id, number);
        self.write_rows(snapshot, &id, info, Some(&self.copied.lost))
    }
}

impl<T: Component + Reflect> ReflectCopied<T> {
    /// Writes the values, reflected, with their entities' ids as the memento `id`: a full
    /// save's column, or with `lost` a delta's rows.
    fn write_rows(
        &self,
        snapshot: &mut Snapshot,
        id: &str,
        info: &Info,
        lost: Option<&[u32]>,
    ) -> Result<(), SaveError> {
        let registry = self.registry.read();
        let values: Vec<Reflected<'_, T>> = self
            .copied
            .values
            .iter()
            .map(|value| Reflected {
                value,
                registry: &registry,
            })
            .collect();
        let entities = &self.copied.ids;
        let written = match lost {
            None => snapshot.capture_memento_versioned(
                id,
                &ColumnOut {
                    entities,
                    values: &values,
                },
                info.version,
            ),
            Some(lost) => snapshot.capture_memento_versioned(
                id,
                &RowsOut {
                    entities,
                    values: &values,
                    lost,
                },
                info.version,
            ),
        };
        written.map_err(|source| {
            let codec = snapshot.codec();
            let culprit = values
                .iter()
                .zip(&self.copied.entities)
                .find(|(value, _)| codec.encode(*value).is_err())
                .map(|(_, entity)| *entity);
            serialize_error(info, culprit, source)
        })
    }
}

fn decode<T: Component + Reflect + FromReflect + TypePath>(
    world: &World,
    snapshot: &Snapshot,
    info: &Info,
    rewritten: &Rewritten,
) -> Result<Box<dyn Pending>, SaveError> {
    let registry = registry_of(world);
    let registry = registry.read();
    let malformed = |id: &str, reason: String| SaveError::Malformed {
        id: id.to_owned(),
        reason,
    };
    let rows = decode_rows::<serde_json::Value, T>(snapshot, info, rewritten, |id, value| {
        let reflected = TypedReflectDeserializer::of::<T>(&registry)
            .deserialize(value)
            .map_err(|e| malformed(id, format!("{}: {e}", info.type_name)))?;
        T::from_reflect(&*reflected)
            .ok_or_else(|| malformed(id, format!("not a {}", info.type_name)))
    })?;
    Ok(Box::new(Decoded(rows)))
}

/// Lists nothing: the schema guard traces serde shapes, which a reflected type has not.
fn describe(_types: &mut MementoTypes, _info: &Info) -> savegame::Result<()> {
    Ok(())
}

/// [`SavegameApp::save_reflect_as`]'s work.
pub(crate) fn save_reflect_versioned<T>(app: &mut App, name: &str, version: u32)
where
    T: Component + Reflect + FromReflect + TypePath + GetTypeRegistration + Clone,
{
    app.register_type::<T>();
    let entry = ComponentEntry {
        info: Info {
            id: format!("{COMPONENT_PREFIX}{name}"),
            version,
            type_name: type_name::<T>(),
        },
        copy_all: copy_all::<T>,
        copy_delta: copy_delta::<T>,
        decode: decode::<T>,
        remove: crate::column::remove_component::<T>,
        describe,
    };
    register_component::<T>(app, entry);
}

/// The name a reflected type is saved under by default.
pub(crate) fn default_name<T>() -> String {
    short_name(type_name::<T>())
}
