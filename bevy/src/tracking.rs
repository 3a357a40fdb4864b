//! What an incremental save needs to know: for each slot the plugin saved or loaded, the
//! world's change tick at that moment (components changed since are Bevy's change ticks
//! newer than it), and a log of what left saved entities since (despawned entities, removed
//! components, parents and ids, which leave no tick behind), kept only while a slot needs it.
//! The observers in [`watch`](crate::watch) and `SaveId`'s discard hook fill the log.
//!
//! It also keeps, for each slot, the ids the slot may hold in references although it holds no
//! entity with them (the slot's deltas removed them, and did not rewrite the references that
//! hold them): a saved entity given one of them makes the next save a full one, which writes
//! those references as no entity, where a delta would leave them pointing at it. (A load that
//! finds a reference or a parent's id with no entity makes the slot's next save a full one
//! instead: see `LoadCommand`.) And it keeps, for each slot, the saved entities and the
//! parents a game's own disabling component hid at the slot's last save or load (after a
//! load, with those of them the save has): a save leaves them out, and links to them, so a
//! change in them may make the next save a full one. A slot whose mark is as old as Bevy's
//! oldest change tick is forgotten (its next save is a full one).

use std::collections::{BTreeSet, HashMap};

use bevy_ecs::change_detection::{MAX_CHANGE_AGE, Tick};
use bevy_ecs::entity::Entity;
use bevy_ecs::resource::Resource;
use savegame::SlotId;

/// The longest the removal log grows (entries) before the slot that holds it back the most is
/// forgotten (its next incremental save is then a full one).
const LOG_LIMIT: usize = 1 << 20;

/// Where a slot stands: the change tick of its last save or load, the log's length then, and
/// the number its next delta takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    pub(crate) tick: Tick,
    pub(crate) seq: u64,
    pub(crate) delta: u64,
}

impl Mark {
    /// Whether the mark is as old as Bevy's oldest change tick at `now`, or older: Bevy
    /// clamps older ticks to that age, so a change made after the mark could read as older
    /// than it, and the slot's next save must be a full one.
    pub(crate) fn expired(&self, now: Tick) -> bool {
        now.get().wrapping_sub(self.tick.get()) >= MAX_CHANGE_AGE
    }
}

/// What a mark does with the ids a slot may hold in references and holds no entity with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unheld<'a> {
    /// None now: a full save, or a load whose every reference found its entity.
    None,
    /// These besides those held before: a delta's removals.
    Add(&'a [u32]),
}

/// Something that left a saved entity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Removal {
    seq: u64,
    pub(crate) entity: Entity,
    pub(crate) id: u32,
    pub(crate) left: Left,
    /// When the entity's `Saveable` was added, if it had one: it was saved (or hidden) at every
    /// save since.
    pub(crate) saved_from: Option<Tick>,
}

/// What left a saved entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// The entity itself: despawned, or its `Saveable` removed.
    Entity,
    /// The registered component of this index in the registry.
    Component(usize),
    /// Its `ChildOf`: it left its parent (which leaves no change tick on the child).
    Parent,
    /// Not an entity's: the registered resource of this index in the registry, removed from
    /// the world.
    Resource(usize),
    /// Its `SaveId`, the one noted: replaced (by another id or the same), removed, or
    /// despawned with the entity. Noted for unsaved entities too (a saved child's parent).
    Id,
}

/// The incremental saves' memory: a mark per slot, the ids each slot holds in references
/// only, and the removal log.
#[derive(Resource, Debug, Default)]
pub(crate) struct Incremental {
    slots: HashMap<SlotId, Mark>,
    /// By slot: the ids it may hold in references and holds no entity with.
    unheld: HashMap<SlotId, BTreeSet<u32>>,
    /// By slot: the saved entities and parents a game's disabling component hid when the slot
    /// was last saved or loaded (`ids::hidden`).
    hidden: HashMap<SlotId, Hidden>,
    log: Vec<Removal>,
    next_seq: u64,
}

/// The entities a game's disabling component hid when a slot was last saved or loaded.
#[derive(Debug, Default)]
struct Hidden {
    /// In order.
    entities: Vec<Entity>,
    /// Those among them the slot holds, in order: after a load, the ones the save has (it may
    /// hold one the game hid since it was written), which the load updated where they are.
    /// After a save, none: a save leaves hidden entities out, and links to them.
    held: Vec<Entity>,
}

impl Incremental {
    /// The slot was saved or loaded at `tick`: its next delta holds what changed after it, and
    /// takes the number `delta` (higher than any delta's the slot holds). `unheld`: the ids the
    /// slot may now hold in references and holds no entity with, beside those it held before
    /// (`Unheld::Add`, a delta's removals), or instead of them (`Unheld::None`: a full save, or
    /// a load whose every reference found its entity).
    pub(crate) fn mark(&mut self, slot: SlotId, tick: Tick, delta: u64, unheld: Unheld<'_>) {
        let seq = self.next_seq;
        self.slots.insert(slot, Mark { tick, seq, delta });
        match unheld {
            Unheld::None => {
                self.unheld.remove(&slot);
            }
            Unheld::Add(ids) if !ids.is_empty() => {
                let held = self.unheld.entry(slot).or_default();
                held.extend(ids.iter().copied());
                if held.len() > LOG_LIMIT {
                    // Its next save is a full one, which holds no such id.
                    self.forget(slot);
                }
            }
            Unheld::Add(_) => {}
        }
        self.trim();
    }

    /// The slot's next incremental save is a full one (its last save failed, or the plugin
    /// cannot say what it holds).
    pub(crate) fn forget(&mut self, slot: SlotId) {
        self.slots.remove(&slot);
        self.unheld.remove(&slot);
        self.hidden.remove(&slot);
        self.trim();
    }

    /// The slot was saved with `hidden` left out (see [`Incremental::hidden_since`]).
    pub(crate) fn note_hidden(&mut self, slot: SlotId, hidden: Vec<Entity>) {
        self.note_loaded_hidden(slot, hidden, Vec::new());
    }

    /// The slot was loaded with `hidden` hidden, `held` among them (in order) the ones the
    /// save has (see [`Incremental::hidden_since`]).
    pub(crate) fn note_loaded_hidden(
        &mut self,
        slot: SlotId,
        hidden: Vec<Entity>,
        held: Vec<Entity>,
    ) {
        if hidden.is_empty() {
            self.hidden.remove(&slot);
        } else {
            let entities = hidden;
            self.hidden.insert(slot, Hidden { entities, held });
        }
    }

    /// How the saved entities and parents a game's disabling component hides differ from those
    /// hidden when `slot` was last saved or loaded (`hidden`: as `ids::hidden` finds them now,
    /// in order): those hidden since (or, after a load, hidden then and held by the slot: a
    /// save would leave them out), and those no longer hidden (the slot lacks them, or after
    /// a load may hold them as they were when it was saved).
    pub(crate) fn hidden_since(&self, slot: SlotId, hidden: &[Entity]) -> [Vec<Entity>; 2] {
        let (then, held) = self.hidden.get(&slot).map_or((&[][..], &[][..]), |h| {
            (h.entities.as_slice(), h.held.as_slice())
        });
        let since = hidden
            .iter()
            .filter(|e| then.binary_search(e).is_err() || held.binary_search(e).is_ok())
            .copied()
            .collect();
        let shown = then
            .iter()
            .filter(|e| hidden.binary_search(e).is_err())
            .copied()
            .collect();
        [since, shown]
    }

    /// Forgets the slots whose mark has expired at `now` (see [`Mark::expired`]): called at
    /// each of Bevy's checks of its change ticks, so that no mark grows old enough for the
    /// distance back to it to wrap.
    pub(crate) fn forget_expired(&mut self, now: Tick) {
        let expired: Vec<SlotId> = self
            .slots
            .iter()
            .filter(|(_, mark)| mark.expired(now))
            .map(|(slot, _)| *slot)
            .collect();
        for slot in expired {
            self.forget(slot);
        }
    }

    /// The slot's mark, unless it expired at `now` ([`Mark::expired`]): a mark older than
    /// Bevy's oldest change tick is none, as Bevy clamps older ticks to that age, so a change
    /// made that long ago would read as older than the mark.
    pub(crate) fn live_mark(&self, slot: SlotId, now: Tick) -> Option<Mark> {
        self.mark_of(slot).filter(|mark| !mark.expired(now))
    }

    /// Whether a slot is saved incrementally: removals are noted only then.
    pub(crate) fn follows_any(&self) -> bool {
        !self.slots.is_empty()
    }

    pub(crate) fn mark_of(&self, slot: SlotId) -> Option<Mark> {
        self.slots.get(&slot).copied()
    }

    /// Whether `slot` may hold `id` in references and holds no entity with it.
    pub(crate) fn unheld(&self, slot: SlotId, id: u32) -> bool {
        self.unheld.get(&slot).is_some_and(|ids| ids.contains(&id))
    }

    /// What left saved entities after `mark`.
    pub(crate) fn removals_since(&self, mark: Mark) -> &[Removal] {
        let from = self.log.partition_point(|r| r.seq < mark.seq);
        &self.log[from..]
    }

    /// Notes that `left` left the saved entity `entity` (id `id`), if a slot needs to know.
    pub(crate) fn note(&mut self, entity: Entity, id: u32, left: Left) {
        self.note_saved_from(entity, id, left, None);
    }

    /// [`note`](Self::note), with when the entity's `Saveable` was added, if it has one.
    pub(crate) fn note_saved_from(
        &mut self,
        entity: Entity,
        id: u32,
        left: Left,
        saved_from: Option<Tick>,
    ) {
        if self.slots.is_empty() {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.log.push(Removal {
            seq,
            entity,
            id,
            left,
            saved_from,
        });
        if self.log.len() > LOG_LIMIT {
            let oldest = self
                .slots
                .iter()
                .min_by_key(|(_, m)| m.seq)
                .map(|(slot, _)| *slot);
            if let Some(slot) = oldest {
                self.forget(slot);
            }
        }
    }

    /// Drops the entries every slot has seen.
    fn trim(&mut self) {
        match self.slots.values().map(|m| m.seq).min() {
            None => self.log.clear(),
            Some(oldest) => {
                let seen = self.log.partition_point(|r| r.seq < oldest);
                self.log.drain(..seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Incremental, Left, Tick, Unheld};
    use bevy_ecs::entity::Entity;
    use savegame::SlotId;

    #[test]
    fn the_log_keeps_what_a_marked_slot_has_not_seen_and_nothing_else() {
        let mut inc = Incremental::default();
        inc.note(Entity::PLACEHOLDER, 1, Left::Entity);
        assert!(inc.log.is_empty(), "no slot to keep it for");
        inc.mark(SlotId::Numbered(1), Tick::new(5), 1, Unheld::None);
        inc.note(Entity::PLACEHOLDER, 2, Left::Entity);
        inc.mark(SlotId::Numbered(2), Tick::new(6), 1, Unheld::Add(&[9, 4]));
        inc.mark(SlotId::Numbered(2), Tick::new(6), 2, Unheld::Add(&[7]));
        let two_holds = |inc: &Incremental, id| inc.unheld(SlotId::Numbered(2), id);
        assert!(
            [4, 7, 9].iter().all(|id| two_holds(&inc, *id)),
            "kept across deltas"
        );
        assert!(!two_holds(&inc, 5) && !inc.unheld(SlotId::Numbered(1), 4));
        inc.note(Entity::PLACEHOLDER, 3, Left::Component(0));
        let one = inc.mark_of(SlotId::Numbered(1)).unwrap();
        let two = inc.mark_of(SlotId::Numbered(2)).unwrap();
        let ids = |m| {
            inc.removals_since(m)
                .iter()
                .map(|r| r.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(one), [2, 3]);
        assert_eq!(ids(two), [3]);
        inc.mark(SlotId::Numbered(1), Tick::new(7), 2, Unheld::None);
        assert_eq!(inc.log.len(), 1, "the entry both slots saw is dropped");
        inc.forget(SlotId::Numbered(1));
        inc.forget(SlotId::Numbered(2));
        assert!(inc.log.is_empty());
        assert!(!two_holds(&inc, 4), "forgotten with the slot");
    }

    /// A mark expires once it is as old as Bevy's oldest change tick, across the wrap of the
    /// tick counter, and Bevy's check forgets the slots whose mark expired.
    #[test]
    fn a_mark_as_old_as_bevy_s_oldest_tick_expires_and_its_slot_is_forgotten() {
        use bevy_ecs::change_detection::MAX_CHANGE_AGE;
        let mut inc = Incremental::default();
        let (old, young) = (SlotId::Numbered(1), SlotId::Numbered(2));
        let start = u32::MAX - 10;
        inc.mark(old, Tick::new(start), 1, Unheld::None);
        inc.mark(young, Tick::new(start.wrapping_add(5)), 1, Unheld::None);
        let at = |age: u32| Tick::new(start.wrapping_add(age));
        let mark = inc.mark_of(old).unwrap();
        assert!(!mark.expired(at(0)) && !mark.expired(at(MAX_CHANGE_AGE - 1)));
        assert!(mark.expired(at(MAX_CHANGE_AGE)) && mark.expired(at(u32::MAX)));
        // A save asks for the live mark: none once it expired, before Bevy's check forgets it.
        assert!(inc.live_mark(old, at(MAX_CHANGE_AGE - 1)).is_some());
        assert!(inc.live_mark(old, at(MAX_CHANGE_AGE)).is_none());
        inc.forget_expired(at(MAX_CHANGE_AGE - 1));
        assert!(inc.mark_of(old).is_some(), "not yet");
        inc.forget_expired(at(MAX_CHANGE_AGE + 1));
        assert!(inc.mark_of(old).is_none(), "forgotten");
        assert!(inc.mark_of(young).is_some(), "the younger mark stays");
    }
}
