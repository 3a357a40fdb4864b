//! The plugin's own mementos: the save's layout, besides the registered types' (see
//! [`column`](crate::column)).
//!
//! | memento | holds |
//! |---|---|
//! | `bevy/entities` | `ids`: the stable ids of every saved entity, ascending; `next`: the next id to give out |
//! | `bevy/hierarchy` | `children`, `parents`, `positions`: a saved child, its parent (saved or not), and the child's place among all the parent's children; in each parent's order of children |
//! | `component/<name>` | `entities`: the ids of the saved entities that have the component, in the world's order (not sorted); `values`: their values, in the same order |
//! | `resource/<name>` | the resource's value |
//!
//! An incremental save (a delta) adds its rows, under its number `<n>` (1 for the first delta
//! after a full save, then 2, 3, …):
//!
//! | memento | holds |
//! |---|---|
//! | `bevy/entities+<n>` | `ids`, `records`: the entities newly saved (spawned, or `Saveable` put back on), moved in the hierarchy (a new parent, none, or a new place among the children) or removed (despawned, or no longer saved), and each one's record: `saved` (false: removed), `parent`, `position`. A record replaces what the full save and earlier deltas say of the entity's membership and link |
//! | `component/<name>+<n>` | `entities`, `values`: the values added or changed since the last save, and every value of a newly saved entity; `lost`: the entities that lost the component (an entity saved again, with `Saveable` put back on, that lacks it among them; one saved for the first time had nothing to lose) |
//! | `bevy/next` | `next`, the next id to give out |
//!
//! A load starts from the full save's mementos and applies the deltas in the order of their
//! numbers: a value replaces the entity's, a loss removes it, a record replaces its membership
//! and link. A compaction folds the rows into the base as they are; the plugin's next
//! incremental save of the slot is then a full one.
//!
//! Deltas written before rows (`fixtures/v2-deltas.sav`) hold one memento per entity instead,
//! which loads still read: `bevy/entity/<id>` (its record) and `component/<name>/<id>` (its
//! value of each component it has; deleted when it lost the component); such an entity has no
//! other values. A slot holds both kinds only when older deltas reached it behind the plugin's
//! back (a copy, a restored file) after it began saving it incrementally; a load then applies
//! the older kind first.

use serde::{Deserialize, Serialize};

/// The memento listing the saved entities.
pub(crate) const ENTITIES_ID: &str = "bevy/entities";
/// The memento of the parent/child links of saved entities.
pub(crate) const HIERARCHY_ID: &str = "bevy/hierarchy";
/// The prefix of the entity records of deltas written before they were batched:
/// `bevy/entity/12`.
pub(crate) const RECORD_PREFIX: &str = "bevy/entity";
/// What comes between a memento's id and a delta's number in the id of the delta's rows of it:
/// `bevy/entities+3`, `component/Health+3`.
pub(crate) const DELTA_MARK: char = '+';
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

/// A delta's records: each entity newly saved, moved in the hierarchy or removed (`ids`), and
/// its record (`records`, in the same order).
#[derive(Serialize, Deserialize, Default)]
pub(crate) struct RecordsMemento {
    pub(crate) ids: Vec<u32>,
    pub(crate) records: Vec<EntityRecord>,
}

/// The id of delta `n`'s rows of memento `base`: `component/Health+3`.
pub(crate) fn delta_id(base: &str, n: u64) -> String {
    format!("{base}{DELTA_MARK}{n}")
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

/// What the deltas in a snapshot rewrote: the entities with a record, and the deltas' numbers.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    /// The ids of the entities with a record, ascending.
    pub(crate) ids: Vec<u32>,
    /// The ids of the entities with a record of the older layout, ascending: their values are
    /// their own mementos, not their columns' (before any rows).
    pub(crate) older: Vec<u32>,
    /// The numbers of the deltas whose rows the snapshot has, ascending.
    pub(crate) deltas: Vec<u64>,
}
