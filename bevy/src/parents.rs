//! A full save's copy of the hierarchy, in the frame: the parents of saved children, each with
//! its id and its list of children (saved or not) copied, for the worker to find each saved
//! child's parent and place.

use std::ops::Range;

use bevy_ecs::entity::Entity;
use bevy_ecs::hierarchy::{ChildOf, Children};
use bevy_ecs::world::World;

use crate::error::SaveError;
use crate::ids::{AnyEntity, SaveId, give_ids, keep_next_above, without_ids};
use crate::ticks;

/// A parent of saved children, as the frame found it.
pub(crate) struct ParentCopy {
    /// Its id (given by the save to an unsaved parent without one).
    pub(crate) id: u32,
    /// Its children, saved or not, in `FullCopy::children`.
    pub(crate) children: Range<usize>,
}

/// A set of parents, by entity index (a bit each), with each one's entity in the order it was
/// first added.
#[derive(Default)]
struct Marked {
    bits: Vec<u64>,
    entities: Vec<Entity>,
}

impl Marked {
    /// Adds `parent`, unless it is in.
    fn add(&mut self, parent: Entity) {
        let index = parent.index_u32() as usize;
        if self.bits.len() <= index / 64 {
            self.bits.resize(index / 64 + 1, 0);
        }
        if let Some(word) = self.bits.get_mut(index / 64)
            && *word >> (index % 64) & 1 == 0
        {
            *word |= 1 << (index % 64);
            self.entities.push(parent);
        }
    }

    /// Whether `entity` is in (one added under its entity index, which a live entity has
    /// alone); takes it out.
    fn take(&mut self, entity: Entity) -> bool {
        let index = entity.index_u32() as usize;
        match self.bits.get_mut(index / 64) {
            Some(word) if *word >> (index % 64) & 1 == 1 => {
                *word &= !(1 << (index % 64));
                true
            }
            _ => false,
        }
    }

    /// The parents added and not taken since.
    fn left(self) -> impl Iterator<Item = Entity> {
        let Marked { bits, entities } = self;
        entities.into_iter().filter(move |parent| {
            let index = parent.index_u32() as usize;
            bits.get(index / 64)
                .is_some_and(|word| word >> (index % 64) & 1 == 1)
        })
    }
}

/// The parents of saved children, each with its id and its children copied. Ids are given
/// once every id the saved entities (`top`, the highest) and the parents hold is seen, so that
/// none given is one the game gave itself: first to the saved entities without one (added to
/// `entities`), then to the parents still without one (unsaved: so that the link can be saved).
pub(crate) fn copy_parents(
    world: &mut World,
    entities: &mut Vec<(Entity, u32)>,
    mut top: Option<u32>,
) -> Result<(Vec<ParentCopy>, Vec<Entity>), SaveError> {
    let mut query = ticks::saved::<&ChildOf>(world);
    // Each saved child's list holds it: the lists hold at least this many children (reserved,
    // so that the vector rarely grows: each growth of a large vector is fresh pages).
    let saved_children = query.iter(world).size_hint().1.unwrap_or(0);
    // The saved children's parents, as a set of entity indices (a parent is alive, so its
    // index is its own). Siblings are spread over tables by what else they have, so a list of
    // parents would hold each about once per child, to sort.
    let mut marked = Marked::default();
    let mut mark = |link: &ChildOf| marked.add(link.parent());
    match query.contiguous_iter(world) {
        Ok(tables) => tables.flatten().for_each(&mut mark),
        // A game's disabling component in a sparse set: row by row.
        Err(_) => query.iter(world).for_each(mark),
    }
    // Their lists, a table at a time (in order: a lookup of each parent was a few cache
    // misses, and half the frame of a full save of 100,000 entities with 10,000 parents).
    let mut copies = Vec::new();
    let mut children = Vec::with_capacity(saved_children);
    let mut without = Vec::new();
    let mut copy = |parent: Entity, list: Option<&Children>, id: Option<&SaveId>| {
        let start = children.len();
        if let Some(list) = list {
            children.extend_from_slice(list);
        }
        let range = start..children.len();
        match id {
            Some(id) => {
                top = top.max(Some(id.get()));
                copies.push(ParentCopy {
                    id: id.get(),
                    children: range,
                });
            }
            None => without.push((parent, range)),
        }
    };
    let mut lists = ticks::any::<(Entity, &Children, Option<&SaveId>)>(world);
    match lists.contiguous_iter(world) {
        Ok(tables) => {
            for (parents, lists, ids) in tables {
                for (row, (parent, list)) in parents.iter().zip(lists).enumerate() {
                    if marked.take(*parent) {
                        copy(*parent, Some(list), ids.and_then(|ids| ids.get(row)));
                    }
                }
            }
        }
        Err(_) => {
            for (parent, list, id) in lists.iter(world) {
                if marked.take(parent) {
                    copy(parent, Some(list), id);
                }
            }
        }
    }
    // Parents the pass did not meet: without a list (Bevy keeps one on every parent, unless
    // its hooks were skipped), or gone, or hidden by a game's disabling component. Looked up
    // one at a time, as every parent was.
    let mut lookup = world.query_filtered::<(Option<&Children>, Option<&SaveId>), AnyEntity>();
    for parent in marked.left() {
        if let Ok((list, id)) = lookup.get(world, parent) {
            copy(parent, list, id);
        }
    }
    // Ids are given to the parents without one in the order of their entities.
    without.sort_unstable_by_key(|(parent, _)| *parent);
    keep_next_above(world, top);
    let fresh = without_ids(world);
    if !fresh.is_empty() {
        entities.extend(give_ids(world, &fresh)?);
    }
    // A parent saved itself has its id now.
    let mut unsaved = Vec::new();
    for (parent, range) in without {
        match world.get::<SaveId>(parent) {
            Some(id) => copies.push(ParentCopy {
                id: id.get(),
                children: range,
            }),
            None => unsaved.push((parent, range)),
        }
    }
    if !unsaved.is_empty() {
        let entities: Vec<Entity> = unsaved.iter().map(|(e, _)| *e).collect();
        for ((_, id), (_, range)) in give_ids(world, &entities)?.into_iter().zip(unsaved) {
            copies.push(ParentCopy {
                id,
                children: range,
            });
        }
    }
    Ok((copies, children))
}
