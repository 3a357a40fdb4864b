//! Which rows changed since a save, a table at a time.
//!
//! Bevy keeps a change tick per row, so finding what changed is a pass over every row of the
//! component, however few changed. A `Changed<T>` query makes that pass one row at a time,
//! through the query's cursor: about 0.7 ns a row here, so 70 µs for each registered component
//! of a 100,000-entity world, in the frame of every delta. [`changed_rows`] reads the table's
//! ticks as one slice (Bevy's contiguous queries), with no branch per row, which the compiler
//! turns into vector compares: a block of 64 rows none of which changed costs its compares
//! alone; in the others, each 32 rows make a mask whose set bits are the changed rows. (Rows
//! one at a time in the blocks with a change cost more than the masks when changes are spread:
//! 1% of the rows, one in a hundred, leave a change in most blocks.)
//!
//! Contiguous queries need every component they read in tables (not sparse sets), and a filter
//! made of `With`s: [`saved`] and [`any`] build the plugin's two filters that way. Their
//! callers read a query that is not contiguous (a registered component in a sparse set, or a
//! game's disabling component in one) row by row, with the same answers.

use bevy_ecs::change_detection::Tick;
use bevy_ecs::entity_disabling::Disabled;
use bevy_ecs::query::{Allow, QueryBuilder, QueryData, QueryState};
use bevy_ecs::world::World;

use crate::ids::Saveable;

/// Rows per block, skipped whole when none changed.
const BLOCK: usize = 64;

/// Rows per mask: one bit each.
const LANES: usize = 32;

/// Whether a value whose change tick is `tick` changed since `since`, the world's tick being
/// `now`: Bevy's `Tick::is_newer_than`, as a compare of two distances back from `now`. (Bevy
/// clamps both distances to its maximum change age; `since`'s is at most that age, so the
/// clamp of `tick`'s cannot change the answer.)
#[inline]
fn newer(tick: Tick, since: u32, now: u32) -> bool {
    now.wrapping_sub(tick.get()) < since
}

/// The rows of `ticks` (a table's change ticks of one component) whose value changed since
/// `since`, the world's tick being `now`, in order.
pub(crate) fn changed_rows(ticks: &[Tick], since: Tick, now: Tick) -> impl Iterator<Item = usize> {
    let (now, since) = (now.get(), since_distance(since, now));
    ticks
        .chunks(BLOCK)
        .enumerate()
        // No early exit, so that the block compiles to vector compares.
        .filter(move |(_, block)| {
            block
                .iter()
                .fold(false, |any, t| any | newer(*t, since, now))
        })
        .flat_map(move |(b, block)| {
            block.chunks(LANES).enumerate().flat_map(move |(l, lanes)| {
                let mask = lanes.iter().enumerate().fold(0u32, |mask, (row, tick)| {
                    mask | (u32::from(newer(*tick, since, now)) << row)
                });
                Bits(mask).map(move |row| b * BLOCK + l * LANES + row)
            })
        })
}

/// The set bits of a mask, lowest first.
struct Bits(u32);

impl Iterator for Bits {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// How far back from `now` `since` is, clamped as Bevy clamps it.
fn since_distance(since: Tick, now: Tick) -> u32 {
    now.get()
        .wrapping_sub(since.get())
        .min(bevy_ecs::change_detection::MAX_CHANGE_AGE)
}

/// A query of `D` over the saved entities (with [`Saveable`], disabled ones too), with a filter
/// contiguous queries accept.
pub(crate) fn saved<D: QueryData>(world: &mut World) -> QueryState<D> {
    QueryBuilder::<D>::new(world)
        .with::<Saveable>()
        .filter::<Allow<Disabled>>()
        .build()
}

/// A query of `D` over every entity, disabled ones too, with a filter contiguous queries
/// accept.
pub(crate) fn any<D: QueryData>(world: &mut World) -> QueryState<D> {
    QueryBuilder::<D>::new(world)
        .filter::<Allow<Disabled>>()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows `is_newer_than` finds, one at a time.
    fn slow(ticks: &[Tick], since: Tick, now: Tick) -> Vec<usize> {
        (0..ticks.len())
            .filter(|row| ticks[*row].is_newer_than(since, now))
            .collect()
    }

    #[test]
    fn the_blocks_find_the_rows_is_newer_than_finds() {
        let max = bevy_ecs::change_detection::MAX_CHANGE_AGE;
        // Ticks around `since` and `now`, across the wrap of u32, and older than the maximum age.
        for (since, now) in [
            (10u32, 20u32),
            (0, 5),
            (u32::MAX - 3, 4),
            (u32::MAX, u32::MAX),
            (7, 7u32.wrapping_add(max)),
            (7, 7u32.wrapping_add(max).wrapping_add(9)),
            (3, 2),
        ] {
            let mut ticks = Vec::new();
            for k in 0..300u32 {
                let around = [since, now][(k % 2) as usize];
                let offset = (k / 2) % 7;
                ticks.push(Tick::new(around.wrapping_add(offset).wrapping_sub(3)));
                if k % 50 == 0 {
                    ticks.push(Tick::new(now.wrapping_sub(max).wrapping_sub(k)));
                }
            }
            // Long runs of old rows too, so that whole blocks are skipped.
            ticks.extend(std::iter::repeat_n(Tick::new(since.wrapping_sub(1)), 200));
            ticks.push(Tick::new(now));
            let (since, now) = (Tick::new(since), Tick::new(now));
            let fast: Vec<usize> = changed_rows(&ticks, since, now).collect();
            assert_eq!(
                fast,
                slow(&ticks, since, now),
                "since {since:?}, now {now:?}"
            );
        }
    }
    #[test]
    fn a_change_is_found_at_every_place_in_a_block_and_a_mask() {
        let (since, now) = (Tick::new(10), Tick::new(20));
        for len in [1, 31, 32, 33, 64, 65, 130] {
            for row in 0..len {
                let mut ticks = vec![Tick::new(5); len];
                ticks[row] = Tick::new(15);
                let found: Vec<usize> = changed_rows(&ticks, since, now).collect();
                assert_eq!(found, [row], "{len} rows");
                ticks[len - 1 - row] = Tick::new(20);
                let found: Vec<usize> = changed_rows(&ticks, since, now).collect();
                assert_eq!(found, slow(&ticks, since, now), "{len} rows, two changes");
            }
        }
    }

    /// The plugin's queries read tables whole in a world as Bevy makes it, and with a game's
    /// disabling component in a table; a sparse set component, or a disabling one, sends them
    /// row by row (the tests hold both ways to the same answers).
    #[test]
    fn the_plugin_s_queries_read_tables_whole_unless_a_sparse_set_forbids_it() {
        use bevy_ecs::component::Component;
        use bevy_ecs::entity::Entity;
        use bevy_ecs::hierarchy::{ChildOf, Children};
        use bevy_ecs::world::Ref;

        use crate::ids::SaveId;

        #[derive(Component)]
        struct InTable;
        #[derive(Component)]
        #[component(storage = "SparseSet")]
        struct InSparseSet;
        #[derive(Component)]
        struct HiddenInTable;
        #[derive(Component)]
        #[component(storage = "SparseSet")]
        struct HiddenInSparseSet;

        let mut world = World::new();
        let parent = world.spawn((Saveable, InTable)).id();
        let id = SaveId::new(1).unwrap();
        world.spawn((Saveable, id, InTable, InSparseSet, ChildOf(parent)));
        fn whole<D: QueryData>(world: &mut World, query: fn(&mut World) -> QueryState<D>) -> bool
        where
            D::ReadOnly: bevy_ecs::query::ContiguousQueryData,
        {
            query(world).contiguous_iter(world).is_ok()
        }
        let columns = saved::<(Entity, &SaveId, Ref<InTable>)>;
        let links = saved::<(Entity, Ref<Saveable>, Option<Ref<ChildOf>>)>;
        let lists = any::<(Entity, &Children, Option<&SaveId>)>;
        assert!(whole(&mut world, columns));
        assert!(whole(&mut world, links));
        assert!(whole(&mut world, lists));
        assert!(!whole(&mut world, saved::<Ref<InSparseSet>>));
        world.register_disabling_component::<HiddenInTable>();
        assert!(whole(&mut world, columns));
        world.register_disabling_component::<HiddenInSparseSet>();
        assert!(!whole(&mut world, columns));
        assert!(!whole(&mut world, lists));
    }
}
