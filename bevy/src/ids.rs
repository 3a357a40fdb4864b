//! Which entities are saved ([`Saveable`]), and the stable ids they are saved under ([`SaveId`]).

use bevy_ecs::component::Component;
use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::entity::{Entity, EntityMapper};
use bevy_ecs::resource::Resource;
use std::collections::HashMap;

/// Marks an entity whose registered components are saved. Entities without it are never
/// saved, loaded over or despawned by a load.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Saveable;

/// The stable id of a saved entity: the same in every save and after every load, unlike its
/// [`Entity`]. The plugin gives one to each [`Saveable`] entity that has none when it is first
/// saved. A game may also give ids of its own (the entities of a hand-made level, say, so that a
/// load finds them again); ids it gives must be unique and below [`SaveId::MAX`].
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SaveId(u32);

impl SaveId {
    /// The largest id. The two values above it are reserved (`u32::MAX` has no [`Entity`], and
    /// `u32::MAX - 1` is [`Entity::PLACEHOLDER`]'s index, which stands for "no saved entity").
    pub const MAX: u32 = u32::MAX - 2;

    /// The id `id`, or `None` above [`SaveId::MAX`].
    #[must_use]
    pub const fn new(id: u32) -> Option<Self> {
        if id <= Self::MAX {
            Some(SaveId(id))
        } else {
            None
        }
    }

    /// The id as a number.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The stand-in entity written for this id in an `Entity` field: `Entity::from_raw_u32(id)`,
    /// whose index is the id.
    pub(crate) fn as_entity(self) -> Entity {
        Entity::from_raw_u32(self.0).unwrap_or(Entity::PLACEHOLDER)
    }
}

/// The next id the plugin gives out.
#[derive(Resource, Debug, Default)]
pub(crate) struct NextSaveId(pub(crate) u32);

/// Save side: a live entity becomes the stand-in of its stable id; an entity that is not saved
/// becomes [`Entity::PLACEHOLDER`], and is counted.
pub(crate) struct ToStable<'a> {
    pub(crate) ids: &'a EntityHashMap<SaveId>,
    pub(crate) unsaved: usize,
}

impl EntityMapper for ToStable<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        if source == Entity::PLACEHOLDER {
            return source;
        }
        match self.ids.get(&source) {
            Some(id) => id.as_entity(),
            None => {
                self.unsaved += 1;
                Entity::PLACEHOLDER
            }
        }
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}

/// Load side: a stand-in becomes the live entity that now has its id; anything else (the
/// placeholder, an id the save does not have) becomes [`Entity::PLACEHOLDER`].
pub(crate) struct FromStable<'a> {
    pub(crate) entities: &'a HashMap<u32, Entity>,
    pub(crate) dangling: usize,
}

impl EntityMapper for FromStable<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        if source == Entity::PLACEHOLDER {
            return source;
        }
        match self.entities.get(&source.index_u32()) {
            Some(entity) => *entity,
            None => {
                self.dangling += 1;
                Entity::PLACEHOLDER
            }
        }
    }

    fn set_mapped(&mut self, _source: Entity, _target: Entity) {}
}
