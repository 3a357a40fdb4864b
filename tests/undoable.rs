//! `Undoable`: an originator that owns its history encodes itself once per memento edit, and
//! records exactly what a `History` beside a twin of the same originator records.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use savegame::history::{Title, Verdict};
use savegame::{Codec, History, Originator, Undoable};
use serde::{Deserialize, Serialize};

/// A level: some cells, and a counter of the mementos made of it (the encodings).
#[derive(Debug, Default)]
struct Level {
    cells: Vec<u32>,
    encodings: Arc<AtomicUsize>,
}

#[derive(Serialize, Deserialize)]
struct LevelMemento {
    cells: Vec<u32>,
}

impl Originator for Level {
    type Memento = LevelMemento;
    fn create_memento(&self) -> LevelMemento {
        self.encodings.fetch_add(1, Ordering::Relaxed);
        LevelMemento {
            cells: self.cells.clone(),
        }
    }
    fn restore_memento(&mut self, m: LevelMemento) -> savegame::Result<()> {
        self.cells = m.cells;
        Ok(())
    }
}

fn level(cells: &[u32]) -> Level {
    Level {
        cells: cells.to_vec(),
        encodings: Arc::default(),
    }
}

/// The encodings `f` makes of `undoable`'s target.
fn encodings(undoable: &mut Undoable<Level>, f: impl FnOnce(&mut Undoable<Level>)) -> usize {
    let before = undoable.encodings.load(Ordering::Relaxed);
    f(undoable);
    undoable.encodings.load(Ordering::Relaxed) - before
}

/// The bytes of a history's memento: its entries, states and cursor, all of it.
fn history_bytes(history: &History<Level>) -> Vec<u8> {
    Codec::MessagePack
        .encode(&history.create_memento())
        .unwrap_or_default()
}

#[test]
fn an_edit_after_an_edit_encodes_the_target_once() {
    let mut u = Undoable::new(level(&[0; 64]));
    let set = |i: usize, v: u32| move |l: &mut Level| l.cells[i] = v;

    // The first edit knows nothing: before and after.
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("a", set(0, 1)).unwrap())),
        2
    );
    // Every edit after an edit: only the after state.
    for i in 1..10 {
        assert_eq!(
            encodings(&mut u, |u| assert!(u.edit("b", set(i, 2)).unwrap())),
            1
        );
    }
    // An edit that changes nothing records nothing, and the next one still needs one.
    assert_eq!(
        encodings(&mut u, |u| assert!(!u.edit("c", |_| {}).unwrap())),
        1
    );
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("d", set(20, 3)).unwrap())),
        1
    );
    // Edits that merge into one entry.
    let drag = || Title::new("drag").merging(7);
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit(drag(), set(30, 4)).unwrap())),
        1
    );
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit(drag(), set(30, 5)).unwrap())),
        1
    );
    assert_eq!(u.history().len(), 12);

    // Whatever may change the target outside an edit: the next edit encodes it again.
    u.untracked_mut().cells[40] = 9;
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("e", set(41, 1)).unwrap())),
        2
    );
    assert!(u.undo().unwrap());
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("f", set(42, 1)).unwrap())),
        2
    );
    u.history_mut().mark_saved();
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("g", set(43, 1)).unwrap())),
        2
    );
    let (l, _) = u.parts_mut();
    l.cells[44] = 1;
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("h", set(45, 1)).unwrap())),
        2
    );
    // A property-diff edit: the history's newest state is not the target's.
    assert!(u.diff_edit("i", set(46, 1)).unwrap());
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("j", set(47, 1)).unwrap())),
        2
    );
    assert_eq!(
        encodings(&mut u, |u| assert!(u.edit("k", set(48, 1)).unwrap())),
        1
    );
}

#[test]
fn an_untracked_change_is_not_taken_back_by_the_next_edits_undo() {
    let mut u = Undoable::new(level(&[0, 0, 0]));
    u.edit("one", |l| l.cells[0] = 1).unwrap();
    u.untracked_mut().cells[1] = 5; // a script, play mode: not recorded
    u.edit("two", |l| l.cells[2] = 2).unwrap();
    assert!(u.undo().unwrap());
    assert_eq!(u.cells, [1, 5, 0]);
    assert!(u.undo().unwrap());
    assert_eq!(
        u.cells,
        [0, 0, 0],
        "a memento undo restores the whole state before 'one'"
    );
}

#[test]
fn a_merged_edit_that_annuls_its_entry_leaves_the_next_edit_right() {
    let mut u = Undoable::new(level(&[0, 0]));
    u.edit("place", |l| l.cells[0] = 1).unwrap();
    let drag = || Title::new("drag").merging(1);
    u.edit(drag(), |l| l.cells[1] = 4).unwrap();
    // The drag ends where it began: the merged entry goes, and the history's newest state is
    // the one before the drag, so the next edit encodes its before state again.
    u.edit(drag(), |l| l.cells[1] = 0).unwrap();
    assert_eq!(u.history().len(), 1);
    u.edit("paint", |l| l.cells[1] = 7).unwrap();
    assert_eq!(u.history().len(), 2);
    assert!(u.undo().unwrap());
    assert_eq!(u.cells, [1, 0]);
    assert!(u.undo().unwrap());
    assert_eq!(u.cells, [0, 0]);
    assert!(u.redo().unwrap());
    assert!(u.redo().unwrap());
    assert_eq!(u.cells, [1, 7]);
}

/// A history whose hook records every cell as at most 10: the after state it records is not
/// the target's.
fn capped() -> History<Level> {
    History::<Level>::builder()
        .hook(|r| {
            if let Some(Ok(mut after)) = r.after() {
                after.cells.iter_mut().for_each(|c| *c = (*c).min(10));
                if r.set_after(&after).is_err() {
                    return Verdict::Drop;
                }
            }
            Verdict::Keep
        })
        .build()
        .unwrap_or_default()
}

#[test]
fn a_hook_that_rewrites_the_after_state_makes_every_edit_encode_before_and_after() {
    let mut u = Undoable::with_history(level(&[0, 0]), capped());
    let (mut twin, mut history) = (level(&[0, 0]), capped());
    assert_eq!(
        encodings(&mut u, |u| assert!(
            u.edit("a", |l| l.cells[0] = 50).unwrap()
        )),
        2
    );
    assert_eq!(
        encodings(&mut u, |u| assert!(
            u.edit("b", |l| l.cells[1] = 1).unwrap()
        )),
        2
    );
    history.edit(&mut twin, "a", |l| l.cells[0] = 50).unwrap();
    history.edit(&mut twin, "b", |l| l.cells[1] = 1).unwrap();
    assert_eq!(history_bytes(u.history()), history_bytes(&history));
    assert!(u.undo().unwrap() && history.undo(&mut twin).unwrap());
    assert_eq!(u.cells, twin.cells);
    assert_eq!(
        u.cells,
        [50, 0],
        "b's before state is the target's, not the capped one"
    );
}

/// What a test does to an `Undoable` and, in the same way, to a `History` beside a twin level.
#[derive(Debug, Clone)]
enum Op {
    Edit(usize, u32),
    Drag(usize, u32),
    Nothing,
    Untracked(usize, u32),
    Undo,
    Redo,
    Limit(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..8, 0u32..4).prop_map(|(i, v)| Op::Edit(i, v)),
        3 => (0usize..8, 0u32..4).prop_map(|(i, v)| Op::Drag(i, v)),
        1 => Just(Op::Nothing),
        1 => (0usize..8, 0u32..4).prop_map(|(i, v)| Op::Untracked(i, v)),
        2 => Just(Op::Undo),
        2 => Just(Op::Redo),
        1 => (1usize..6).prop_map(Op::Limit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// After every operation, the target, the history's answers and every byte of the
    /// history's memento (its entries and states) are those of a `History` used beside its
    /// own level: taking the before state from the newest one never records anything else.
    #[test]
    fn an_undoable_records_what_a_history_beside_the_target_records(
        ops in proptest::collection::vec(op(), 1..50),
    ) {
        let mut u = Undoable::new(level(&[0; 8]));
        let mut twin = level(&[0; 8]);
        let mut history = History::<Level>::new();
        for op in ops {
            match op {
                Op::Edit(i, v) => {
                    let a = u.edit("edit", |l| l.cells[i] = v).unwrap();
                    let b = history.edit(&mut twin, "edit", |l| l.cells[i] = v).unwrap();
                    prop_assert_eq!(a, b);
                }
                Op::Drag(i, v) => {
                    let title = || Title::new("drag").merging(i as u64);
                    let a = u.edit(title(), |l| l.cells[i] = v).unwrap();
                    let b = history.edit(&mut twin, title(), |l| l.cells[i] = v).unwrap();
                    prop_assert_eq!(a, b);
                }
                Op::Nothing => {
                    let a = u.edit("nothing", |_| {}).unwrap();
                    let b = history.edit(&mut twin, "nothing", |_| {}).unwrap();
                    prop_assert_eq!(a, b);
                }
                Op::Untracked(i, v) => {
                    u.untracked_mut().cells[i] = v;
                    twin.cells[i] = v;
                }
                Op::Undo => prop_assert_eq!(u.undo().unwrap(), history.undo(&mut twin).unwrap()),
                Op::Redo => prop_assert_eq!(u.redo().unwrap(), history.redo(&mut twin).unwrap()),
                Op::Limit(n) => {
                    u.history_mut().set_limit(Some(n)).unwrap();
                    history.set_limit(Some(n)).unwrap();
                }
            }
            prop_assert_eq!(&u.cells, &twin.cells);
            prop_assert_eq!(u.history().len(), history.len());
            prop_assert_eq!(u.history().cursor(), history.cursor());
            prop_assert_eq!(history_bytes(u.history()), history_bytes(&history));
        }
        // And every state the history holds restores the same target.
        while u.undo().unwrap() {
            prop_assert!(history.undo(&mut twin).unwrap());
            prop_assert_eq!(&u.cells, &twin.cells);
        }
        prop_assert!(!history.undo(&mut twin).unwrap());
    }
}
