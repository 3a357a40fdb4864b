//! The plugin's own mementos: the save's layout, besides the registered types' (see
//! [`column`](crate::column)).
//!
//! | memento | holds |
//! |---|---|
//! | `bevy/entities` | `ids`: the stable ids of every saved entity, ascending; `next`: the next id to give out |
//! | `bevy/hierarchy` | `children`, `parents`, `positions`: a saved child, its parent (saved or not), and the child's place among all the parent's children; in each parent's order of children |
//! | `component/<name>` | `entities`: the ids of the saved entities that have the component, ascending; `values`: their values, in the same order |
//! | `resource/<name>` | the resource's value |
//!
//! An incremental save (a delta) adds, for each entity it writes:
//!
//! | memento | holds |
//! |---|---|
//! | `bevy/entity/<id>` | the entity's record: `saved` (false: it was despawned or stopped being saved), `parent`, `position`; it replaces what the full save says of the entity |
//! | `component/<name>/<id>` | the entity's value of each component it has (deleted when it lost the component since the last save: a load reads no base column for an entity a delta wrote) |
//! | `bevy/next` | `next`, the next id to give out |

use serde::{Deserialize, Serialize};

/// The memento listing the saved entities.
pub(crate) const ENTITIES_ID: &str = "bevy/entities";
/// The memento of the parent/child links of saved entities.
pub(crate) const HIERARCHY_ID: &str = "bevy/hierarchy";
/// The prefix of a delta's entity records: `bevy/entity/12`.
pub(crate) const RECORD_PREFIX: &str = "bevy/entity";
/// A delta's next id.
pub(crate) const NEXT_ID: &str = "bevy/next";

#[derive(Serialize, Deserialize, Default)]
pub(crate) struct EntitiesMemento {
    pub(crate) ids: Vec<u32>,
    pub(crate) next: u32,
}

#[derive(Serialize, Deserialize, Default)]
pub(crate) struct HierarchyMemento {
    pub(crate) children: Vec<u32>,
    pub(crate) parents: Vec<u32>,
    /// Each child's place among all its parent's children (saved or not) when saved: a load
    /// puts it back there among the unsaved ones. Empty in saves made before it existed.
    #[serde(default)]
    pub(crate) positions: Vec<u32>,
    /// Whether a child's link to an unsaved parent is in the save (its parent's id, given to
    /// the parent for that): then a saved child the save has no link for has no parent after
    /// a load. False in saves made before: a load then keeps a child's link to an unsaved
    /// parent as it finds it.
    #[serde(default)]
    pub(crate) unsaved_parents: bool,
}

/// A delta's record of one entity.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EntityRecord {
    /// False: the entity was despawned, or stopped being saved.
    pub(crate) saved: bool,
    /// Its parent's id, saved or not.
    pub(crate) parent: Option<u32>,
    /// Its place among all its parent's children.
    pub(crate) position: Option<u32>,
}

/// A delta's next id to give out.
#[derive(Serialize, Deserialize)]
pub(crate) struct NextMemento {
    pub(crate) next: u32,
}

/// One saved child's link: its id, its parent's, and its place among the parent's children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Link {
    pub(crate) parent: u32,
    pub(crate) position: u32,
    pub(crate) child: u32,
}
