//! Undo and redo for in-game editors: the eight stories of the history issue, the failure
//! cases, and a proptest against a reference model (a `Vec` of states with a cursor).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use savegame::history::{
    Command, Event, HistoryMemento, Merged, MultiHistory, NoCommand, Observer, OnConflict,
    Recorded, Status, TargetSet, Targets, Title, Verdict,
};
use savegame::migrate::{Document, Value};
use savegame::{Codec, Error, History, Originator, SaveLoadManager, SlotId, Snapshot};
use serde::{Deserialize, Serialize};

// ------------------------------------------------------------------------------------------
// A furniture editor's room

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Piece {
    kind: String,
    at: (i32, i32),
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Room {
    pieces: BTreeMap<u32, Piece>,
    next_id: u32,
    /// Transient: while set, the room refuses every memento (a restore that fails).
    locked: bool,
    /// Transient: the selection, which the editor does not want undone.
    selected: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RoomMemento {
    pieces: BTreeMap<u32, Piece>,
    next_id: u32,
    selected: Option<u32>,
}

impl Originator for Room {
    type Memento = RoomMemento;

    fn create_memento(&self) -> RoomMemento {
        RoomMemento {
            pieces: self.pieces.clone(),
            next_id: self.next_id,
            selected: self.selected,
        }
    }

    fn restore_memento(&mut self, m: RoomMemento) -> savegame::Result<()> {
        if self.locked {
            return Err(Error::rejected("the room is locked"));
        }
        self.pieces = m.pieces;
        self.next_id = m.next_id;
        self.selected = m.selected;
        Ok(())
    }
}

impl Room {
    fn place(&mut self, kind: &str, at: (i32, i32)) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.pieces.insert(
            id,
            Piece {
                kind: kind.into(),
                at,
            },
        );
        id
    }

    fn at(&self, id: u32) -> Option<(i32, i32)> {
        self.pieces.get(&id).map(|p| p.at)
    }

    fn move_to(&mut self, id: u32, at: (i32, i32)) {
        if let Some(p) = self.pieces.get_mut(&id) {
            p.at = at;
        }
    }
}

const A: (i32, i32) = (0, 0);
const B: (i32, i32) = (1, 0);
const C: (i32, i32) = (2, 0);
const D: (i32, i32) = (3, 3);

/// A room with a chair at A, and an empty history.
fn room_with_chair() -> (Room, u32, History<Room>) {
    let mut room = Room::default();
    let chair = room.place("chair", A);
    (room, chair, History::new())
}

fn move_chair(history: &mut History<Room>, room: &mut Room, chair: u32, to: (i32, i32)) -> bool {
    history
        .edit(room, "Move chair", |r| r.move_to(chair, to))
        .unwrap()
}

/// Every event an observer hears.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<Event>>>);

impl Heard {
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// An observer type of the game's own (kept by the history as a trait object).
struct Buttons {
    heard: Heard,
}

impl Observer for Buttons {
    fn notify(&mut self, event: Event) {
        self.heard.0.lock().unwrap().push(event);
    }
}

fn status(can_undo: bool, can_redo: bool, dirty: bool) -> (bool, bool, bool) {
    (can_undo, can_redo, dirty)
}

fn flags(s: Status) -> (bool, bool, bool) {
    (s.can_undo, s.can_redo, s.dirty)
}

// ------------------------------------------------------------------------------------------
// The stories

#[test]
fn story_1_furniture_editor_moves_undoes_redoes_and_branches() {
    let (mut room, chair, mut history) = room_with_chair();
    assert!(move_chair(&mut history, &mut room, chair, B));
    assert!(move_chair(&mut history, &mut room, chair, C));
    assert_eq!(history.undo_name(), Some("Move chair"));

    assert!(history.undo(&mut room).unwrap());
    assert!(history.undo(&mut room).unwrap());
    assert_eq!(room.at(chair), Some(A));
    assert!(history.redo(&mut room).unwrap());
    assert_eq!(room.at(chair), Some(B));
    assert!(history.can_redo(), "C is still ahead");
    assert_eq!(history.redo_name(), Some("Move chair"));

    assert!(move_chair(&mut history, &mut room, chair, D));
    assert!(!history.can_redo(), "the C branch is gone");
    assert_eq!(history.redo_name(), None);
    assert_eq!(history.names().collect::<Vec<_>>(), ["Move chair"; 2]);

    assert!(history.undo(&mut room).unwrap());
    assert_eq!(room.at(chair), Some(B));
    assert!(history.undo(&mut room).unwrap());
    assert_eq!(room.at(chair), Some(A));
    assert!(!history.can_undo());
    assert!(!history.undo(&mut room).unwrap());
}

#[test]
fn story_2_a_drag_of_120_frames_is_one_entry() {
    let (mut room, chair, mut history) = room_with_chair();
    history.begin_edit(&room, "Drag chair").unwrap();
    for frame in 1..=120 {
        room.move_to(chair, (frame, frame / 2)); // the preview follows the mouse
    }
    assert!(history.is_editing());
    assert!(history.commit_edit(&room).unwrap());
    assert_eq!(history.len(), 1);
    assert_eq!(history.undo_name(), Some("Drag chair"));

    history.undo(&mut room).unwrap();
    assert_eq!(
        room.at(chair),
        Some(A),
        "undo returns to where the drag started"
    );
    history.redo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some((120, 60)), "redo to where it ended");

    // A drag that ends where it started records nothing.
    history.begin_edit(&room, "Drag chair").unwrap();
    for frame in 0..120 {
        room.move_to(chair, (frame, -frame));
    }
    room.move_to(chair, (120, 60));
    assert!(!history.commit_edit(&room).unwrap());
    assert_eq!(history.len(), 1);
    assert!(!history.is_editing());
}

#[test]
fn a_drag_recorded_frame_by_frame_merges_into_one_entry() {
    let (mut room, chair, mut history) = room_with_chair();
    for frame in 1..=120 {
        let title = Title::new("Drag chair").merging(u64::from(chair));
        assert!(
            history
                .edit(&mut room, title, |r| r.move_to(chair, (frame, 0)))
                .unwrap()
        );
    }
    assert_eq!(history.len(), 1);
    history.seal(); // the mouse button is released

    // The next drag is a new entry, even with the same key.
    for frame in (0..120).rev() {
        let title = Title::new("Drag chair").merging(u64::from(chair));
        history
            .edit(&mut room, title, |r| r.move_to(chair, (frame, 0)))
            .unwrap();
    }
    assert_eq!(history.len(), 2);
    history.seal();

    // A frame-by-frame drag that comes back to its start annuls its own entry.
    for x in [5, 9, 0] {
        let title = Title::new("Drag chair").merging(u64::from(chair));
        history
            .edit(&mut room, title, |r| r.move_to(chair, (x, 0)))
            .unwrap();
    }
    assert_eq!(history.len(), 2, "a drag back to the start leaves no entry");
    assert_eq!(room.at(chair), Some((0, 0)));

    history.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some((120, 0)));
    history.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(A));
}

#[test]
fn a_cancelled_drag_puts_the_piece_back_and_records_nothing() {
    let (mut room, chair, mut history) = room_with_chair();
    assert!(
        !history.cancel_edit(&mut room).unwrap(),
        "nothing to cancel"
    );
    history.begin_edit(&room, "Drag chair").unwrap();
    room.move_to(chair, D);
    assert!(history.cancel_edit(&mut room).unwrap());
    assert_eq!(room.at(chair), Some(A));
    assert!(history.is_empty());
    assert!(!history.is_editing());
}

#[test]
fn story_3_placing_a_prefab_is_one_undo() {
    let (mut room, _, mut history) = room_with_chair();
    let before = room.clone();
    history.begin_group("Place table set").unwrap();
    for (i, kind) in ["table", "chair", "chair", "chair", "lamp"]
        .iter()
        .enumerate()
    {
        history
            .edit(&mut room, format!("Place {kind}"), |r| {
                r.place(kind, (10, i32::try_from(i).unwrap()));
            })
            .unwrap();
    }
    assert!(
        history.is_empty(),
        "nothing is an entry until the group ends"
    );
    assert!(history.end_group().unwrap());
    assert_eq!(room.pieces.len(), 6);
    assert_eq!(history.len(), 1);
    assert_eq!(history.undo_name(), Some("Place table set"));

    history.undo(&mut room).unwrap();
    assert_eq!(room, before, "one undo removes all five");
    history.redo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 6);

    // Groups nest: only the outermost makes (and names) an entry.
    history
        .group(&mut room, "Furnish kitchen", |h, room| {
            h.edit(room, "Place stove", |r| {
                r.place("stove", (20, 0));
            })?;
            h.group(room, "Place fridge set", |h, room| {
                h.edit(room, "Place fridge", |r| {
                    r.place("fridge", (21, 0));
                })?;
                h.edit(room, "Place magnet", |r| {
                    r.place("magnet", (21, 1));
                })
            })?;
            Ok(())
        })
        .unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history.undo_name(), Some("Furnish kitchen"));
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 6);

    // An empty group records nothing, nor does a group whose edits cancel out.
    history.begin_group("Nothing").unwrap();
    history.begin_group("Still nothing").unwrap();
    assert!(!history.end_group().unwrap());
    assert!(!history.end_group().unwrap());
    let chair = 0;
    history.begin_group("There and back").unwrap();
    history
        .edit(&mut room, "Move", |r| r.move_to(chair, D))
        .unwrap();
    history
        .edit(&mut room, "Move", |r| r.move_to(chair, A))
        .unwrap();
    assert!(!history.end_group().unwrap());
    assert_eq!(
        history.len(),
        2,
        "the undone kitchen is still there to redo"
    );
    assert!(history.can_redo());
    assert!(matches!(history.end_group(), Err(Error::Rejected { .. })));
}

#[test]
fn story_4_a_limit_of_ten_drops_the_oldest_and_never_skips_one() {
    let mut room = Room::default();
    let chair = room.place("chair", (0, 0));
    let mut history = History::<Room>::builder().limit(10).build().unwrap();
    for x in 1..=11 {
        move_chair(&mut history, &mut room, chair, (x, 0));
    }
    assert_eq!(history.len(), 10, "the 11th edit dropped the oldest");
    for x in (1..=10).rev() {
        assert!(history.undo(&mut room).unwrap());
        assert_eq!(
            room.at(chair),
            Some((x, 0)),
            "every entry in the middle is there"
        );
    }
    assert!(!history.can_undo(), "the move from 0 to 1 is gone");
    for x in 2..=11 {
        history.redo(&mut room).unwrap();
        assert_eq!(room.at(chair), Some((x, 0)));
    }
    assert!(matches!(
        History::<Room>::builder().limit(0).build(),
        Err(Error::Config { .. })
    ));
}

/// A name of `size` letters that differs from every other `n`.
fn long_name(n: usize, size: usize) -> String {
    (0..size)
        .map(|i| char::from(b'a' + ((i * 7 + n * 13 + i / 26 * n) % 26) as u8))
        .collect()
}

/// Renames piece `n % pieces` to a long name of its own: each entry costs about twice `size`
/// bytes of deltas, while the room keeps its size.
fn rename_piece(history: &mut History<Room>, room: &mut Room, n: usize, size: usize) {
    let pieces = room.pieces.len();
    let id = u32::try_from(n % pieces).unwrap();
    let kind = long_name(n, size);
    history
        .edit(room, format!("Rename {n}"), |r| {
            if let Some(p) = r.pieces.get_mut(&id) {
                p.kind = kind;
            }
        })
        .unwrap();
}

#[test]
fn story_4_a_byte_budget_drops_the_oldest_but_keeps_the_saved_entry_and_at_least_one() {
    const BUDGET: usize = 1 << 20; // 1 MiB
    let mut room = Room::default();
    for i in 0..32 {
        room.place(&long_name(10_000 + i, 4096), (0, 0));
    }
    let full = Codec::MessagePack
        .encode(&room.create_memento())
        .unwrap()
        .len();
    let mut history = History::<Room>::builder()
        .unlimited()
        .byte_budget(BUDGET)
        .build()
        .unwrap();
    let mut states = vec![room.clone()];
    for n in 0..300 {
        rename_piece(&mut history, &mut room, n, 4096);
        states.push(room.clone());
        assert!(
            history.bytes() <= BUDGET,
            "{} bytes over a {BUDGET}-byte budget",
            history.bytes()
        );
    }
    let kept = history.len();
    assert!(kept < 300, "the budget dropped entries");
    // One full state (128 KiB), then entries of about 8 KiB each.
    assert!(kept > (BUDGET - full) / (3 * 4096), "{kept} entries kept");
    assert!(
        history.bytes() > BUDGET - BUDGET / 20,
        "the budget is used, not wasted"
    );
    // Undo walks back through the newest `kept` states in order, without a gap.
    for back in 1..=kept {
        history.undo(&mut room).unwrap();
        assert_eq!(room, states[300 - back]);
    }
    assert!(!history.can_undo());

    // Never the entry of the saved point: after a save, the budget stops at it.
    history.go_to(&mut room, history.len()).unwrap();
    history.mark_saved();
    for n in 300..450 {
        rename_piece(&mut history, &mut room, n, 4096);
    }
    assert_eq!(
        history.saved_index(),
        Some(0),
        "the saved point is the oldest kept"
    );
    assert!(
        history.bytes() > BUDGET,
        "the budget yields to the saved point"
    );
    history.go_to(&mut room, 0).unwrap();
    assert!(!history.is_dirty(), "undo still reaches the saved state");
    assert_eq!(room, states[300]);

    // Always at least one entry, whatever the budget.
    let mut tiny = History::<Room>::builder().byte_budget(1).build().unwrap();
    let mut room = states[0].clone();
    for n in 0..5 {
        rename_piece(&mut tiny, &mut room, n, 1000);
        assert_eq!(tiny.len(), 1);
    }
    tiny.undo(&mut room).unwrap();
    assert_eq!(room, {
        let mut r = states[0].clone();
        for n in 0..4 {
            rename_piece(&mut History::new(), &mut r, n, 1000);
        }
        r
    });
}

#[test]
fn story_5_the_saved_marker_says_when_the_room_is_dirty() {
    let (mut room, chair, mut history) = room_with_chair();
    assert!(
        !history.is_dirty(),
        "a new history starts at the game's state"
    );
    move_chair(&mut history, &mut room, chair, B);
    assert!(history.is_dirty());
    history.mark_saved();
    assert!(!history.is_dirty());
    move_chair(&mut history, &mut room, chair, C);
    assert!(history.is_dirty());
    history.undo(&mut room).unwrap();
    assert!(!history.is_dirty(), "back at the saved point");
    history.undo(&mut room).unwrap();
    assert!(history.is_dirty());
    history.redo(&mut room).unwrap();
    assert!(!history.is_dirty());

    // The saved entry dropped by the limit: dirty until the next save.
    let mut history = History::<Room>::builder().limit(3).build().unwrap();
    move_chair(&mut history, &mut room, chair, D);
    history.mark_saved();
    for x in 10..14 {
        move_chair(&mut history, &mut room, chair, (x, 0));
    }
    assert_eq!(history.saved_index(), None);
    history.go_to(&mut room, 0).unwrap();
    assert!(history.is_dirty());
    history.go_to(&mut room, 3).unwrap();
    assert!(history.is_dirty());
    history.mark_saved();
    assert!(!history.is_dirty());

    // Recording after undoing past the saved point loses it too.
    history.undo(&mut room).unwrap();
    move_chair(&mut history, &mut room, chair, A);
    assert!(history.is_dirty());
    assert_eq!(history.saved_index(), None);
}

#[test]
fn story_6_the_buttons_follow_notifications_not_every_edit() {
    let (mut room, chair, mut history) = room_with_chair();
    let closure_heard = Heard::default();
    let trait_heard = Heard::default();
    let sink = closure_heard.clone();
    history.add_observer(move |event: Event| sink.0.lock().unwrap().push(event));
    let buttons = history.add_observer(Buttons {
        heard: trait_heard.clone(),
    });
    let mut all = Vec::new();
    let mut heard = |expected: &[(bool, bool, bool)]| {
        let events = closure_heard.take();
        let got: Vec<_> = events.iter().map(|e| flags(e.status())).collect();
        assert_eq!(got, expected, "{events:?}");
        for e in &events {
            assert!(matches!(e, Event::Changed { .. }));
            assert_ne!(e.previous(), e.status(), "only flips are sent");
        }
        all.extend(events);
    };

    move_chair(&mut history, &mut room, chair, B);
    heard(&[status(true, false, true)]);
    move_chair(&mut history, &mut room, chair, C);
    heard(&[]); // nothing flipped
    history.undo(&mut room).unwrap();
    heard(&[status(true, true, true)]); // can-redo flipped
    history.undo(&mut room).unwrap();
    heard(&[status(false, true, false)]); // can-undo and dirty flipped, in one call
    assert!(!history.undo(&mut room).unwrap());
    heard(&[]);
    history.redo(&mut room).unwrap();
    heard(&[status(true, true, true)]);
    history.mark_saved();
    history.mark_saved();
    heard(&[status(true, true, false)]);
    history.go_to(&mut room, 2).unwrap();
    heard(&[status(true, false, true)]);

    assert_eq!(trait_heard.take(), all, "the trait object heard the same");
    assert!(history.remove_observer(buttons));
    assert!(!history.remove_observer(buttons));
    history.undo(&mut room).unwrap();
    assert_eq!(closure_heard.take().len(), 1);
    assert!(
        trait_heard.take().is_empty(),
        "a removed observer hears nothing"
    );
}

#[test]
fn story_7_leaving_the_editor_clears_everything_and_notifies_once() {
    let (mut room, chair, mut history) = room_with_chair();
    let heard = Heard::default();
    let sink = heard.clone();
    history.add_observer(move |event: Event| sink.0.lock().unwrap().push(event));
    for x in 1..=5 {
        move_chair(&mut history, &mut room, chair, (x, 0));
    }
    history.undo(&mut room).unwrap();
    history.mark_saved();
    history.begin_group("Open group").unwrap();
    heard.take();

    history.clear();
    let events = heard.take();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(matches!(events[0], Event::Cleared { .. }));
    assert_eq!(flags(events[0].previous()), status(true, true, false));
    assert_eq!(flags(events[0].status()), status(false, false, false));
    assert!(history.is_empty() && !history.can_undo() && !history.can_redo());
    assert!(!history.is_grouping());
    assert_eq!(history.bytes(), 0, "the memory is given back");
    assert!(!history.undo(&mut room).unwrap());
    assert_eq!(
        room.at(chair),
        Some((4, 0)),
        "clearing does not touch the room"
    );

    // A history cleared while dirty stays dirty: the room still has unsaved changes.
    move_chair(&mut history, &mut room, chair, A);
    history.clear();
    assert!(history.is_dirty());
}

#[test]
fn story_8_the_history_survives_a_save_and_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::MessagePack)
        .build()
        .unwrap();

    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    history
        .group(&mut room, "Place prefab", |h, room| {
            for i in 0..5 {
                h.edit(room, "Place", |r| {
                    r.place("stool", (5, i));
                })?;
            }
            Ok(())
        })
        .unwrap();
    move_chair(&mut history, &mut room, chair, C);
    move_chair(&mut history, &mut room, chair, D);
    history.undo(&mut room).unwrap(); // a redo entry travels too
    let before_save = room.clone();

    let mut snapshot = manager.snapshot().with_label("Kitchen");
    snapshot.capture("room", &room).unwrap();
    snapshot
        .capture_memento("history", &history.create_memento().marked_saved())
        .unwrap();
    manager.save(SlotId::Numbered(1), &snapshot).unwrap();
    history.mark_saved();

    // A new session: load the level, then the history.
    let loaded = manager.load(SlotId::Numbered(1)).unwrap().snapshot;
    let mut room = Room::default();
    let mut history = History::<Room>::new();
    loaded.restore("room", &mut room).unwrap();
    loaded.restore("history", &mut history).unwrap();
    assert_eq!(room, before_save);
    assert_eq!(
        history.names().collect::<Vec<_>>(),
        ["Move chair", "Place prefab", "Move chair", "Move chair"]
    );
    assert_eq!((history.cursor(), history.len()), (3, 4));
    assert!(!history.is_dirty(), "the loaded state is the saved one");

    history.redo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(D));
    assert!(history.is_dirty());
    history.go_to(&mut room, 2).unwrap();
    assert_eq!(room.at(chair), Some(B));
    assert_eq!(room.pieces.len(), 6);
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 1, "the prefab is still one undo");
    history.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(A));
    history.go_to(&mut room, 3).unwrap();
    assert!(!history.is_dirty());

    // A plain capture keeps the history's own saved point (an autosave).
    let mut autosave = Snapshot::new(Codec::Json);
    move_chair(&mut history, &mut room, chair, (9, 9));
    autosave.capture("history", &history).unwrap();
    let mut reloaded = History::<Room>::new();
    autosave.restore("history", &mut reloaded).unwrap();
    assert!(reloaded.is_dirty());
    assert_eq!(reloaded.saved_index(), Some(3));
}

#[test]
fn a_history_memento_of_another_format_version_is_refused() {
    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    let memento = history.create_memento();
    // Without property-diff edits, the oldest format that holds the history.
    assert_eq!(memento.format_version(), 1);
    let json = String::from_utf8(Codec::Json.encode(&memento).unwrap()).unwrap();
    assert!(json.starts_with(r#"{"format":1,"#), "{json}");

    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot
        .insert_raw(
            "history",
            json.replacen(r#""format":1"#, r#""format":3"#, 1)
                .into_bytes(),
        )
        .unwrap();
    let mut other = History::<Room>::new();
    let err = snapshot.restore("history", &mut other).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    assert!(
        format!("{err}").contains("undo history format 3 is not supported"),
        "{err}"
    );

    snapshot
        .insert_raw("history", br#"{"codec":"json","format":1}"#.to_vec())
        .unwrap();
    assert!(matches!(
        snapshot.restore("history", &mut other),
        Err(Error::Decode { .. })
    ));
    assert!(other.is_empty());
}

#[test]
fn a_history_restored_with_another_codec_is_re_encoded() {
    let (mut room, chair, _) = room_with_chair();
    let mut json = History::<Room>::builder()
        .codec(Codec::Json)
        .build()
        .unwrap();
    for to in [B, C, D] {
        move_chair(&mut json, &mut room, chair, to);
    }
    json.undo(&mut room).unwrap();
    let mut msgpack = History::<Room>::new();
    msgpack.restore_memento(json.create_memento()).unwrap();
    assert_eq!(msgpack.codec(), Codec::MessagePack);
    assert_eq!(msgpack.create_memento().cursor(), 2);
    msgpack.go_to(&mut room, 0).unwrap();
    assert_eq!(room.at(chair), Some(A));
    msgpack.go_to(&mut room, 3).unwrap();
    assert_eq!(room.at(chair), Some(D));
}

#[test]
fn a_damaged_or_incompatible_history_memento_is_an_error_and_changes_nothing() {
    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    move_chair(&mut history, &mut room, chair, C);
    let good = Codec::Json.encode(&history.create_memento()).unwrap();
    let edited = |path: &str, to: i128| {
        let mut doc = Document::new();
        doc.insert("h", Codec::Json.decode::<Value>(&good).unwrap());
        *doc.pointer_mut(path).unwrap() = Value::Int(to);
        let bytes = Codec::Json.encode(doc.memento("h").unwrap()).unwrap();
        Codec::Json
            .decode::<HistoryMemento<NoCommand>>(&bytes)
            .unwrap()
    };

    let mut target = History::<Room>::new();
    move_chair(&mut target, &mut room, chair, D);

    // A delta that does not fit its neighbour.
    let err = target
        .restore_memento(edited("/h/links/1/gap/old_len", 999_999))
        .unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    // A cursor past the end.
    let err = target.restore_memento(edited("/h/cursor", 7)).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    // An anchor past the last link.
    let err = target
        .restore_memento(edited("/h/anchor/link", 2))
        .unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");

    // States of another memento type (the game changed its room format).
    #[derive(Default)]
    struct Other;
    #[derive(Serialize, Deserialize)]
    struct OtherMemento {
        walls: Vec<u8>,
    }
    impl Originator for Other {
        type Memento = OtherMemento;
        fn create_memento(&self) -> OtherMemento {
            OtherMemento { walls: vec![] }
        }
        fn restore_memento(&mut self, _: OtherMemento) -> savegame::Result<()> {
            Ok(())
        }
    }
    let mut other = History::<Other>::new();
    let err = other.restore_memento(history.create_memento()).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");

    assert_eq!(target.len(), 1, "failed restores changed nothing");
    target.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(C));
}

// ------------------------------------------------------------------------------------------
// Commands

/// Room edits that know their inverse. `Move` swaps the position it holds with the piece's, so
/// it is its own inverse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum RoomCommand {
    Move { id: u32, to: (i32, i32) },
    Rename { id: u32, kind: String },
}

impl Command<Room> for RoomCommand {
    fn name(&self) -> String {
        match self {
            RoomCommand::Move { .. } => "Move".into(),
            RoomCommand::Rename { kind, .. } => format!("Rename to {kind}"),
        }
    }

    fn apply(&mut self, room: &mut Room) -> savegame::Result<()> {
        if room.locked {
            return Err(Error::rejected("locked"));
        }
        match self {
            RoomCommand::Move { id, to } => {
                let piece = room
                    .pieces
                    .get_mut(id)
                    .ok_or_else(|| Error::rejected("no such piece"))?;
                std::mem::swap(&mut piece.at, to);
            }
            RoomCommand::Rename { id, kind } => {
                let piece = room
                    .pieces
                    .get_mut(id)
                    .ok_or_else(|| Error::rejected("no such piece"))?;
                std::mem::swap(&mut piece.kind, kind);
            }
        }
        Ok(())
    }

    fn undo(&mut self, room: &mut Room) -> savegame::Result<()> {
        self.apply(room) // every command here swaps: one code path for both directions
    }

    fn merge_id(&self) -> Option<u64> {
        match self {
            RoomCommand::Move { id, .. } => Some(u64::from(*id)),
            RoomCommand::Rename { .. } => None,
        }
    }

    fn merge(&mut self, next: Self) -> Merged<Self> {
        // Both were applied: `self.to` holds where the piece was before the first move, and
        // `next.to` where it was before the second; keeping the first makes one undo take
        // both back. (A merge that annuls is in `a_command_merge_that_annuls_drops_the_entry`.)
        match (&*self, &next) {
            (RoomCommand::Move { id: a, .. }, RoomCommand::Move { id: b, .. }) if a == b => {
                Merged::Yes
            }
            _ => Merged::No(next),
        }
    }

    fn heap_size(&self) -> usize {
        match self {
            RoomCommand::Move { .. } => 0,
            RoomCommand::Rename { kind, .. } => kind.capacity(),
        }
    }
}

#[test]
fn commands_apply_undo_with_one_code_path_and_merge_by_id() {
    let mut room = Room::default();
    let chair = room.place("chair", A);
    let lamp = room.place("lamp", (5, 5));
    let mut history = History::<Room, RoomCommand>::new();

    let m = |id, to| RoomCommand::Move { id, to };
    assert!(history.apply(&mut room, m(chair, B)).unwrap());
    assert!(history.apply(&mut room, m(chair, C)).unwrap());
    assert_eq!(history.len(), 1, "moves of the chair merged");
    history.apply(&mut room, m(lamp, D)).unwrap();
    assert_eq!(history.len(), 2, "another id does not merge");
    history
        .apply(
            &mut room,
            RoomCommand::Rename {
                id: lamp,
                kind: "floor lamp".into(),
            },
        )
        .unwrap();
    assert_eq!(history.undo_name(), Some("Rename to floor lamp"));

    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces[&lamp].kind, "lamp");
    history.undo(&mut room).unwrap();
    history.undo(&mut room).unwrap();
    assert_eq!((room.at(chair), room.at(lamp)), (Some(A), Some((5, 5))));
    history.go_to(&mut room, 3).unwrap();
    assert_eq!(room.at(chair), Some(C));
    assert_eq!(room.pieces[&lamp].kind, "floor lamp");

    // No merging after an undo, into the saved point, or after a seal.
    history.go_to(&mut room, 1).unwrap();
    history.apply(&mut room, m(chair, D)).unwrap();
    assert_eq!(history.len(), 2);
    history.mark_saved();
    history.apply(&mut room, m(chair, B)).unwrap();
    assert_eq!(history.len(), 3);
    history.seal();
    history.apply(&mut room, m(chair, C)).unwrap();
    assert_eq!(history.len(), 4);

    // A command that fails records nothing.
    let err = history.apply(&mut room, m(99, A)).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }));
    assert_eq!(history.len(), 4);

    // A history of commands is saved like any other.
    let mut restored = History::<Room, RoomCommand>::new();
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot.capture("history", &history).unwrap();
    snapshot.restore("history", &mut restored).unwrap();
    restored.go_to(&mut room, 0).unwrap();
    assert_eq!((room.at(chair), room.at(lamp)), (Some(A), Some((5, 5))));
}

#[test]
fn a_command_merge_that_annuls_drops_the_entry() {
    #[derive(Clone, Serialize, Deserialize)]
    struct Nudge(i32);
    impl Command<Room> for Nudge {
        fn name(&self) -> String {
            "Nudge".into()
        }
        fn apply(&mut self, room: &mut Room) -> savegame::Result<()> {
            room.move_to(0, (room.at(0).unwrap_or(A).0 + self.0, 0));
            Ok(())
        }
        fn undo(&mut self, room: &mut Room) -> savegame::Result<()> {
            room.move_to(0, (room.at(0).unwrap_or(A).0 - self.0, 0));
            Ok(())
        }
        fn merge_id(&self) -> Option<u64> {
            Some(0)
        }
        fn merge(&mut self, next: Self) -> Merged<Self> {
            self.0 += next.0;
            if self.0 == 0 {
                Merged::Annul
            } else {
                Merged::Yes
            }
        }
    }
    let (mut room, _, _) = room_with_chair();
    let mut history = History::<Room, Nudge>::new();
    history.apply(&mut room, Nudge(3)).unwrap();
    history.apply(&mut room, Nudge(2)).unwrap();
    assert_eq!(history.len(), 1);
    history.apply(&mut room, Nudge(-5)).unwrap();
    assert!(history.is_empty(), "+3 +2 -5 is no edit at all");
    assert_eq!(room.at(0), Some(A));
}

#[test]
fn a_command_the_game_already_ran_is_registered_and_undoes_like_an_applied_one() {
    // The command pool's `Register`: the tool moved the piece itself while the mouse dragged,
    // and records the finished move once, in the state `apply` leaves a `Move` in (holding the
    // position the piece came from).
    let mut room = Room::default();
    let chair = room.place("chair", A);
    let lamp = room.place("lamp", (5, 5));
    let mut registered = History::<Room, RoomCommand>::builder()
        .limit(3)
        .build()
        .unwrap();
    let mut applied = History::<Room, RoomCommand>::builder()
        .limit(3)
        .build()
        .unwrap();
    let mut twin = room.clone();

    let m = |id, to| RoomCommand::Move { id, to };
    for (id, to) in [(chair, B), (lamp, D), (chair, C), (lamp, A)] {
        // The tool drags the piece frame by frame, then registers the move.
        let from = room.at(id).unwrap();
        for x in 0..30 {
            room.move_to(id, (x, x));
        }
        room.move_to(id, to);
        assert!(registered.record_applied(m(id, from)).unwrap());
        // The same move, run by the history.
        assert!(applied.apply(&mut twin, m(id, to)).unwrap());
        registered.seal();
        applied.seal();
        assert_eq!(room, twin);
    }
    assert_eq!(
        registered.len(),
        3,
        "full: the oldest fell out, none in the middle"
    );
    assert_eq!(registered.names().collect::<Vec<_>>(), ["Move"; 3]);

    while registered.can_undo() {
        registered.undo(&mut room).unwrap();
        applied.undo(&mut twin).unwrap();
        assert_eq!(room, twin);
    }
    assert_eq!(
        room.at(chair),
        Some(B),
        "the first move fell out of the pool"
    );
    registered.redo(&mut room).unwrap();
    applied.redo(&mut twin).unwrap();
    assert_eq!(room, twin);

    // Registering drops the redo entries, as applying does.
    let from = room.at(lamp).unwrap();
    room.move_to(lamp, (7, 7));
    registered.record_applied(m(lamp, from)).unwrap();
    assert!(!registered.can_redo());
    registered.undo(&mut room).unwrap();
    assert_eq!(room.at(lamp), Some(from));
    registered.redo(&mut room).unwrap();
    assert_eq!(room.at(lamp), Some((7, 7)));

    // Registered moves of one piece merge by id, like applied ones.
    let mut merged = History::<Room, RoomCommand>::new();
    let start = room.at(chair).unwrap();
    room.move_to(chair, B);
    merged.record_applied(m(chair, start)).unwrap();
    room.move_to(chair, C);
    merged.record_applied(m(chair, B)).unwrap();
    assert_eq!(merged.len(), 1);
    merged.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(start));

    // Inside a group, and through the hook.
    merged.set_hook(|rec: &mut Recorded<'_, Room, RoomCommand>| {
        if rec.is_command() {
            rec.set_name("Registered");
        }
        Verdict::Keep
    });
    merged.begin_group("Tidy up").unwrap();
    room.move_to(lamp, A);
    merged.record_applied(m(lamp, (7, 7))).unwrap();
    merged.end_group().unwrap();
    assert_eq!(merged.undo_name(), Some("Tidy up"));
    merged.undo(&mut room).unwrap();
    assert_eq!(room.at(lamp), Some((7, 7)));

    // Not while a memento edit is open: the edit would capture the change as well.
    let mut mixed = History::<Room, RoomCommand>::new();
    mixed.begin_edit(&room, "Drag").unwrap();
    let err = mixed.record_applied(m(chair, A)).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err}");
}

// ------------------------------------------------------------------------------------------
// Errors

#[test]
fn undo_or_redo_with_nothing_to_do_is_a_no_op_returning_false() {
    let (mut room, chair, mut history) = room_with_chair();
    let heard = Heard::default();
    let sink = heard.clone();
    history.add_observer(move |e: Event| sink.0.lock().unwrap().push(e));
    assert!(!history.undo(&mut room).unwrap());
    assert!(!history.redo(&mut room).unwrap());
    assert!(!history.go_to(&mut room, 0).unwrap());
    assert!(heard.take().is_empty());
    assert_eq!(room.at(chair), Some(A));
    assert!(matches!(
        history.go_to(&mut room, 1),
        Err(Error::Rejected { .. })
    ));
}

#[test]
fn a_failed_restore_leaves_the_history_where_it_was() {
    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    move_chair(&mut history, &mut room, chair, C);
    let heard = Heard::default();
    let sink = heard.clone();
    history.add_observer(move |e: Event| sink.0.lock().unwrap().push(e));

    room.locked = true;
    let err = history.undo(&mut room).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err}");
    assert_eq!((history.cursor(), room.at(chair)), (2, Some(C)));
    assert!(heard.take().is_empty());
    assert!(history.go_to(&mut room, 0).is_err());
    assert_eq!(history.cursor(), 2);

    room.locked = false;
    history.undo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(B));
    room.locked = true;
    assert!(history.redo(&mut room).is_err());
    assert_eq!(history.cursor(), 1);
    room.locked = false;
    history.redo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(C));
}

#[test]
fn a_group_that_fails_halfway_through_an_undo_is_rolled_back() {
    // A memento edit, then a command, in one group. Undo runs the command's undo first (it
    // works), then restores the memento (the locked room refuses): the command is applied
    // again, and the history has not moved.
    let (room, chair, _) = room_with_chair();
    let mut room = HalfLocked(room);
    let mut history = History::<HalfLocked, HalfCommand>::new();
    history.begin_group("Restyle").unwrap();
    history
        .edit(&mut room, "Place vase", |r| {
            r.0.place("vase", (2, 2));
        })
        .unwrap();
    history.apply(&mut room, HalfCommand(chair, B)).unwrap();
    history.end_group().unwrap();
    let done = room.0.pieces.clone();

    room.0.locked = true;
    let err = history.undo(&mut room).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err}");
    assert_eq!(room.0.pieces, done, "the command's undo was taken back");
    assert_eq!(history.cursor(), 1);

    room.0.locked = false;
    history.undo(&mut room).unwrap();
    assert_eq!(room.0.at(chair), Some(A));
    assert_eq!(room.0.pieces.len(), 1);
    room.0.locked = true;
    assert!(history.redo(&mut room).is_err());
    assert_eq!(
        room.0.pieces.len(),
        1,
        "a failed redo leaves the room as it was"
    );
    assert_eq!(history.cursor(), 0);
}

/// A room whose commands ignore the lock.
struct HalfLocked(Room);

impl Originator for HalfLocked {
    type Memento = RoomMemento;
    fn create_memento(&self) -> RoomMemento {
        self.0.create_memento()
    }
    fn restore_memento(&mut self, m: RoomMemento) -> savegame::Result<()> {
        self.0.restore_memento(m)
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct HalfCommand(u32, (i32, i32));

impl Command<HalfLocked> for HalfCommand {
    fn name(&self) -> String {
        "Move".into()
    }
    fn apply(&mut self, room: &mut HalfLocked) -> savegame::Result<()> {
        let piece = room
            .0
            .pieces
            .get_mut(&self.0)
            .ok_or_else(|| Error::rejected("gone"))?;
        std::mem::swap(&mut piece.at, &mut self.1);
        Ok(())
    }
    fn undo(&mut self, room: &mut HalfLocked) -> savegame::Result<()> {
        self.apply(room)
    }
}

#[test]
fn moving_through_the_history_while_an_edit_or_group_is_open_is_refused() {
    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    history.begin_edit(&room, "Drag").unwrap();
    assert!(matches!(
        history.undo(&mut room),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        history.begin_edit(&room, "Drag"),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        history.begin_group("G"),
        Err(Error::Rejected { .. })
    ));
    room.move_to(chair, C);
    history.commit_edit(&room).unwrap();
    assert!(matches!(
        history.commit_edit(&room),
        Err(Error::Rejected { .. })
    ));
    history.begin_group("G").unwrap();
    assert!(matches!(
        history.undo(&mut room),
        Err(Error::Rejected { .. })
    ));
    assert!(
        !history.redo(&mut room).unwrap(),
        "nothing to redo comes first"
    );
    history.end_group().unwrap();
    assert!(history.undo(&mut room).unwrap());
    history.begin_group("G").unwrap();
    assert!(matches!(
        history.redo(&mut room),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        history.go_to(&mut room, 0),
        Err(Error::Rejected { .. })
    ));
    assert_eq!(room.at(chair), Some(B));
}

// ------------------------------------------------------------------------------------------
// The hook and memory

#[test]
fn the_hook_can_drop_or_rewrite_an_edit_before_it_is_recorded() {
    let (mut room, chair, _) = room_with_chair();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let mut history = History::<Room>::builder()
        .hook(move |rec: &mut Recorded<'_, Room, _>| {
            log.lock().unwrap().push(rec.name().to_owned());
            let (Some(Ok(before)), Some(Ok(mut after))) = (rec.before(), rec.after()) else {
                return Verdict::Keep;
            };
            // Selecting is not an edit.
            if before.pieces == after.pieces {
                return Verdict::Drop;
            }
            // The selection is never undone or redone: record the one from before.
            after.selected = before.selected;
            rec.set_after(&after).unwrap();
            if rec.name() == "Move chair" {
                rec.set_name("Move chair (snapped)");
            }
            Verdict::Keep
        })
        .build()
        .unwrap();

    assert!(
        !history
            .edit(&mut room, "Select", |r| r.selected = Some(chair))
            .unwrap()
    );
    assert!(history.is_empty());
    assert!(
        history
            .edit(&mut room, "Move chair", |r| {
                r.move_to(chair, B);
                r.selected = None;
            })
            .unwrap()
    );
    assert_eq!(history.undo_name(), Some("Move chair (snapped)"));
    history.undo(&mut room).unwrap();
    history.redo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(B));
    assert_eq!(
        room.selected,
        Some(chair),
        "the hook kept the selection out of the record"
    );
    assert_eq!(*seen.lock().unwrap(), ["Select", "Move chair"]);
    assert!(history.remove_hook());
    assert!(
        history
            .edit(&mut room, "Select", |r| r.selected = None)
            .unwrap()
    );
}

#[test]
fn the_hook_sees_commands_too() {
    let mut room = Room::default();
    let chair = room.place("chair", A);
    let mut history = History::<Room, RoomCommand>::new();
    history.set_hook(|rec: &mut Recorded<'_, Room, RoomCommand>| {
        assert!(rec.is_command() && rec.before().is_none());
        match rec.as_command() {
            Some(RoomCommand::Rename { .. }) => Verdict::Drop,
            _ => Verdict::Keep,
        }
    });
    let rename = RoomCommand::Rename {
        id: chair,
        kind: "throne".into(),
    };
    assert!(!history.apply(&mut room, rename).unwrap());
    assert_eq!(
        room.pieces[&chair].kind, "throne",
        "a dropped command stays applied"
    );
    assert!(
        history
            .apply(&mut room, RoomCommand::Move { id: chair, to: B })
            .unwrap()
    );
    assert_eq!(history.len(), 1);
}

#[test]
fn a_large_room_costs_one_full_state_plus_the_bytes_each_edit_changed() {
    let mut room = Room::default();
    for i in 0..20_000 {
        room.place("bookshelf", (i, i));
    }
    let full = Codec::MessagePack
        .encode(&room.create_memento())
        .unwrap()
        .len();
    assert!(full > 500_000, "{full}");
    let mut history = History::<Room>::new();
    for i in 0..50 {
        history
            .edit(&mut room, "Move shelf", |r| r.move_to(i * 100, (-1, -1)))
            .unwrap();
    }
    let bytes = history.bytes();
    assert!(bytes >= full, "the full state is counted");
    assert!(
        bytes < full + 50 * 1024,
        "50 moves cost {} bytes over the full state",
        bytes - full
    );
    history.go_to(&mut room, 0).unwrap();
    assert!(room.pieces.values().all(|p| p.at != (-1, -1)));
}

// ------------------------------------------------------------------------------------------
// The reference model

/// The originator of the model test: a few cells.
#[derive(Debug, Clone, PartialEq, Default)]
struct Cells {
    cells: Vec<i64>,
    /// Fail the n-th restore, apply or undo from now (0 = the next one), once.
    fail_in: Option<usize>,
}

impl Cells {
    fn should_fail(&mut self) -> bool {
        match self.fail_in {
            Some(0) => {
                self.fail_in = None;
                true
            }
            Some(n) => {
                self.fail_in = Some(n - 1);
                false
            }
            None => false,
        }
    }
}

impl Originator for Cells {
    type Memento = Vec<i64>;
    fn create_memento(&self) -> Vec<i64> {
        self.cells.clone()
    }
    fn restore_memento(&mut self, m: Vec<i64>) -> savegame::Result<()> {
        if self.should_fail() {
            return Err(Error::rejected("injected"));
        }
        self.cells = m;
        Ok(())
    }
}

/// Adds `amount` to cell `cell` (modulo the length).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Add {
    cell: usize,
    amount: i64,
    merges: bool,
}

impl Command<Cells> for Add {
    fn name(&self) -> String {
        format!("add {} to {}", self.amount, self.cell)
    }
    fn apply(&mut self, target: &mut Cells) -> savegame::Result<()> {
        if target.should_fail() {
            return Err(Error::rejected("injected"));
        }
        let n = target.cells.len();
        target.cells[self.cell % n] += self.amount;
        Ok(())
    }
    fn undo(&mut self, target: &mut Cells) -> savegame::Result<()> {
        if target.should_fail() {
            return Err(Error::rejected("injected"));
        }
        let n = target.cells.len();
        target.cells[self.cell % n] -= self.amount;
        Ok(())
    }
    fn merge_id(&self) -> Option<u64> {
        self.merges.then_some(self.cell as u64)
    }
    fn merge(&mut self, next: Self) -> Merged<Self> {
        self.amount += next.amount;
        if self.amount == 0 {
            Merged::Annul
        } else {
            Merged::Yes
        }
    }
}

#[derive(Debug, Clone)]
enum Change {
    Set(usize, i64),
    Push(i64),
    Pop,
}

impl Change {
    fn apply(&self, cells: &mut Vec<i64>) {
        match *self {
            Change::Set(i, v) => {
                let n = cells.len();
                cells[i % n] = v;
            }
            Change::Push(v) if cells.len() < 5 => cells.push(v),
            Change::Pop if cells.len() > 1 => {
                cells.pop();
            }
            _ => {}
        }
    }
}

#[derive(Debug, Clone)]
enum Inner {
    Edit(Change),
    Cmd(usize, i64),
}

#[derive(Debug, Clone)]
enum Op {
    Edit(Change),
    /// An edit with a merge key.
    Drag(u8, Change),
    Cmd {
        cell: usize,
        amount: i64,
        merges: bool,
    },
    Group(Vec<Inner>),
    Undo,
    Redo,
    GoTo(usize),
    FailingUndo(usize),
    FailingRedo(usize),
    Limit(Option<usize>),
    MarkSaved,
    Seal,
    Reload,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0usize..5, 0i64..4).prop_map(|(i, v)| Change::Set(i, v)),
        (0i64..4).prop_map(Change::Push),
        Just(Change::Pop),
    ]
}

fn amount() -> impl Strategy<Value = i64> {
    prop_oneof![Just(-2i64), Just(-1), Just(1), Just(2)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => change().prop_map(Op::Edit),
        2 => (0u8..2, change()).prop_map(|(k, c)| Op::Drag(k, c)),
        3 => (0usize..5, amount(), any::<bool>())
            .prop_map(|(cell, amount, merges)| Op::Cmd { cell, amount, merges }),
        2 => proptest::collection::vec(
            prop_oneof![
                change().prop_map(Inner::Edit),
                (0usize..5, amount()).prop_map(|(c, a)| Inner::Cmd(c, a)),
            ],
            0..4,
        )
        .prop_map(Op::Group),
        5 => Just(Op::Undo),
        3 => Just(Op::Redo),
        1 => (0usize..12).prop_map(Op::GoTo),
        1 => (0usize..3).prop_map(Op::FailingUndo),
        1 => (0usize..3).prop_map(Op::FailingRedo),
        1 => proptest::option::of(1usize..6).prop_map(Op::Limit),
        1 => Just(Op::MarkSaved),
        1 => Just(Op::Seal),
        1 => Just(Op::Reload),
    ]
}

/// What the newest entry is, for merging.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Edit(Option<u8>),
    Cmd(Option<usize>),
    Group,
}

/// The reference: every state, a cursor into them, the saved state's index, and what each
/// entry is.
#[derive(Debug)]
struct Model {
    states: Vec<Vec<i64>>,
    kinds: Vec<Kind>,
    names: Vec<String>,
    cursor: usize,
    saved: Option<usize>,
    limit: Option<usize>,
    sealed: bool,
}

impl Model {
    fn new(start: Vec<i64>, limit: Option<usize>) -> Self {
        Model {
            states: vec![start],
            kinds: vec![],
            names: vec![],
            cursor: 0,
            saved: Some(0),
            limit,
            sealed: true,
        }
    }

    fn len(&self) -> usize {
        self.kinds.len()
    }

    fn current(&self) -> &Vec<i64> {
        &self.states[self.cursor]
    }

    /// A new entry leading to `state`: the redo entries go, then the limit applies.
    fn push(&mut self, state: Vec<i64>, kind: Kind, name: String) {
        self.states.truncate(self.cursor + 1);
        self.kinds.truncate(self.cursor);
        self.names.truncate(self.cursor);
        if self.saved.is_some_and(|s| s > self.cursor) {
            self.saved = None;
        }
        self.states.push(state);
        self.kinds.push(kind);
        self.names.push(name);
        self.cursor += 1;
        self.sealed = false;
        self.trim();
    }

    fn mergeable(&self, kind: Kind) -> bool {
        let len = self.len();
        !self.sealed
            && self.cursor == len
            && self.saved != Some(len)
            && self.kinds.last() == Some(&kind)
    }

    /// The newest entry now leads to `state` (or goes, if `state` is where it started).
    fn merge(&mut self, state: Vec<i64>, annul: bool) {
        let len = self.len();
        if annul {
            self.states.pop();
            self.kinds.pop();
            self.names.pop();
            self.cursor = len - 1;
            self.sealed = true;
        } else {
            self.states[len] = state;
        }
    }

    fn trim(&mut self) {
        while let Some(limit) = self.limit {
            if self.len() <= limit {
                break;
            }
            if self.cursor > 0 {
                self.states.remove(0);
                self.kinds.remove(0);
                self.names.remove(0);
                self.cursor -= 1;
                self.saved = match self.saved {
                    Some(0) | None => None,
                    Some(s) => Some(s - 1),
                };
            } else {
                let len = self.len();
                self.states.pop();
                self.kinds.pop();
                self.names.pop();
                if self.saved == Some(len) {
                    self.saved = None;
                }
            }
        }
    }
}

fn check(history: &History<Cells, Add>, cells: &Cells, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(&cells.cells, model.current());
    prop_assert_eq!(history.cursor(), model.cursor);
    prop_assert_eq!(history.len(), model.len());
    prop_assert_eq!(history.can_undo(), model.cursor > 0);
    prop_assert_eq!(history.can_redo(), model.cursor < model.len());
    prop_assert_eq!(history.is_dirty(), model.saved != Some(model.cursor));
    prop_assert_eq!(history.saved_index(), model.saved);
    prop_assert_eq!(history.names().collect::<Vec<_>>(), model.names.clone());
    Ok(())
}

fn new_history(limit: Option<usize>) -> History<Cells, Add> {
    let builder = History::<Cells, Add>::builder();
    match limit {
        Some(n) => builder.limit(n),
        None => builder.unlimited(),
    }
    .build()
    .unwrap()
}

fn run_model(ops: &[Op], codec: Codec) -> Result<(), TestCaseError> {
    let mut cells = Cells {
        cells: vec![0, 0],
        fail_in: None,
    };
    let mut history = new_history(None);
    if codec != history.codec() {
        history = History::<Cells, Add>::builder()
            .unlimited()
            .codec(codec)
            .build()
            .unwrap();
    }
    let mut model = Model::new(cells.cells.clone(), None);

    for (step, op) in ops.iter().enumerate() {
        let had_redo = history.can_redo();
        let len_before = history.len();
        let mut recorded_new = false;
        match op {
            Op::Edit(c) => {
                let mut next = cells.cells.clone();
                c.apply(&mut next);
                let name = format!("edit {step}");
                let r = history
                    .edit(&mut cells, name.as_str(), |t| c.apply(&mut t.cells))
                    .unwrap();
                prop_assert_eq!(r, &next != model.current());
                if r {
                    model.push(next, Kind::Edit(None), name);
                    recorded_new = true;
                }
            }
            Op::Drag(key, c) => {
                let mut next = cells.cells.clone();
                c.apply(&mut next);
                let name = format!("drag {step}");
                let title = Title::new(name.as_str()).merging(u64::from(*key));
                history
                    .edit(&mut cells, title, |t| c.apply(&mut t.cells))
                    .unwrap();
                if &next != model.current() {
                    if model.mergeable(Kind::Edit(Some(*key))) {
                        let annul = next == model.states[model.len() - 1];
                        model.merge(next, annul);
                    } else {
                        model.push(next, Kind::Edit(Some(*key)), name);
                        recorded_new = true;
                    }
                }
            }
            Op::Cmd {
                cell,
                amount,
                merges,
            } => {
                let command = Add {
                    cell: *cell,
                    amount: *amount,
                    merges: *merges,
                };
                let mut next = cells.cells.clone();
                let n = next.len();
                next[cell % n] += amount;
                let name = command.name();
                prop_assert!(history.apply(&mut cells, command).unwrap());
                let kind = Kind::Cmd(merges.then_some(*cell));
                // Merging needs the same cell, which the id carries; annul is the sum.
                if *merges && model.mergeable(kind) {
                    // The entry keeps the name of its first command.
                    let annul = next == model.states[model.len() - 1];
                    model.merge(next, annul);
                } else {
                    model.push(next, kind, name);
                    recorded_new = true;
                }
            }
            Op::Group(inner) => {
                history.begin_group(format!("group {step}")).unwrap();
                let mut next = cells.cells.clone();
                let mut has_command = false;
                for i in inner {
                    match i {
                        Inner::Edit(c) => {
                            c.apply(&mut next);
                            history
                                .edit(&mut cells, "inner", |t| c.apply(&mut t.cells))
                                .unwrap();
                        }
                        Inner::Cmd(cell, amount) => {
                            let n = next.len();
                            next[cell % n] += amount;
                            has_command = true;
                            history
                                .apply(
                                    &mut cells,
                                    Add {
                                        cell: *cell,
                                        amount: *amount,
                                        merges: false,
                                    },
                                )
                                .unwrap();
                        }
                    }
                }
                let r = history.end_group().unwrap();
                let expect = has_command || &next != model.current();
                prop_assert_eq!(r, expect);
                if expect {
                    model.push(next, Kind::Group, format!("group {step}"));
                    recorded_new = true;
                }
            }
            Op::Undo => {
                let r = history.undo(&mut cells).unwrap();
                prop_assert_eq!(r, model.cursor > 0);
                if r {
                    model.cursor -= 1;
                    model.sealed = true;
                }
            }
            Op::Redo => {
                let r = history.redo(&mut cells).unwrap();
                prop_assert_eq!(r, model.cursor < model.len());
                if r {
                    model.cursor += 1;
                    model.sealed = true;
                }
            }
            Op::GoTo(i) => {
                let i = i % (model.len() + 1);
                let r = history.go_to(&mut cells, i).unwrap();
                prop_assert_eq!(r, i != model.cursor);
                if r {
                    model.cursor = i;
                    model.sealed = true;
                }
            }
            Op::FailingUndo(n) | Op::FailingRedo(n) => {
                let undo = matches!(op, Op::FailingUndo(_));
                cells.fail_in = Some(*n);
                let r = if undo {
                    history.undo(&mut cells)
                } else {
                    history.redo(&mut cells)
                };
                let possible = if undo {
                    model.cursor > 0
                } else {
                    model.cursor < model.len()
                };
                match r {
                    Ok(moved) => {
                        prop_assert_eq!(moved, possible);
                        if moved {
                            if undo {
                                model.cursor -= 1;
                            } else {
                                model.cursor += 1;
                            }
                            model.sealed = true;
                        }
                    }
                    Err(e) => {
                        prop_assert!(possible);
                        prop_assert!(matches!(e, Error::Rejected { .. }), "{}", e);
                        // Rolled back: the model has not moved, and the target neither.
                    }
                }
                cells.fail_in = None;
            }
            Op::Limit(limit) => {
                history.set_limit(*limit).unwrap();
                model.limit = *limit;
                model.trim();
            }
            Op::MarkSaved => {
                history.mark_saved();
                model.saved = Some(model.cursor);
            }
            Op::Seal => {
                history.seal();
                model.sealed = true;
            }
            Op::Reload => {
                let memento = history.create_memento();
                let bytes = Codec::MessagePack.encode(&memento).unwrap();
                let mut fresh = new_history(model.limit);
                fresh
                    .restore_memento(Codec::MessagePack.decode(&bytes).unwrap())
                    .unwrap();
                history = fresh;
                model.sealed = true;
                // Restored entries keep no merge keys.
                for kind in &mut model.kinds {
                    *kind = match *kind {
                        Kind::Edit(_) => Kind::Edit(None),
                        Kind::Cmd(_) => Kind::Cmd(None),
                        Kind::Group => Kind::Group,
                    };
                }
            }
        }
        check(&history, &cells, &model)?;
        // Redo is cleared exactly when a new entry follows an undo, and only then.
        if recorded_new {
            prop_assert!(!history.can_redo());
        } else if matches!(op, Op::Edit(_) | Op::Group(_)) && history.len() == len_before {
            prop_assert_eq!(history.can_redo(), had_redo);
        }
    }

    // Every state is still reachable, in order, both ways.
    while model.cursor > 0 {
        history.undo(&mut cells).unwrap();
        model.cursor -= 1;
        check(&history, &cells, &model)?;
    }
    while model.cursor < model.len() {
        history.redo(&mut cells).unwrap();
        model.cursor += 1;
        check(&history, &cells, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn the_history_behaves_like_a_vec_of_states_with_a_cursor(
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        run_model(&ops, Codec::MessagePack)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn the_model_holds_with_the_json_codec_too(
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        run_model(&ops, Codec::Json)?;
    }

    #[test]
    fn a_byte_budget_drops_only_the_oldest_entries_and_holds_unless_it_must_not(
        edits in proptest::collection::vec((0usize..3, 0usize..300, any::<bool>()), 1..80),
        budget in 200usize..4000,
    ) {
        let mut history = History::<Cells>::builder()
            .unlimited()
            .byte_budget(budget)
            .build()
            .unwrap();
        let mut cells = Cells { cells: vec![0], fail_in: None };
        // The reference: the states of the current branch, and the cursor into them.
        let mut states = vec![cells.cells.clone()];
        let mut cursor = 0;
        let mut ever_saved = false;
        for (kind, size, save) in edits {
            if save {
                history.mark_saved();
                ever_saved = true;
            }
            let mut recorded = false;
            if kind == 0 {
                if history.undo(&mut cells).unwrap() {
                    cursor -= 1;
                }
            } else {
                let value = i64::try_from(states.len()).unwrap();
                recorded = history
                    .edit(&mut cells, "grow", |t| t.cells.extend((0..size).map(|_| value)))
                    .unwrap();
                if recorded {
                    states.truncate(cursor + 1);
                    states.push(cells.cells.clone());
                    cursor += 1;
                }
            }
            // Entries may only go from the front.
            while states.len() - 1 > history.len() {
                states.remove(0);
                cursor -= 1;
            }
            prop_assert_eq!(history.cursor(), cursor);
            prop_assert_eq!(&cells.cells, &states[cursor]);
            // The budget is applied when an edit is recorded, and yields only to a save.
            let protected = ever_saved && history.saved_index() == Some(0);
            prop_assert!(
                !recorded || history.bytes() <= budget || history.len() == 1 || protected,
                "{} bytes, budget {}, {} entries",
                history.bytes(),
                budget,
                history.len()
            );
        }
        // Every kept entry is there, without a gap.
        history.go_to(&mut cells, 0).unwrap();
        prop_assert_eq!(&cells.cells, &states[0]);
        for state in &states[1..] {
            history.redo(&mut cells).unwrap();
            prop_assert_eq!(&cells.cells, state);
        }
    }
}

#[test]
fn a_command_whose_merge_id_matches_a_memento_entrys_key_is_still_recorded() {
    // Found by the model test: the command was offered to a memento entry, could not merge,
    // and was lost.
    let mut cells = Cells {
        cells: vec![0, 0],
        fail_in: None,
    };
    let mut history = History::<Cells, Add>::new();
    history
        .edit(&mut cells, Title::new("drag").merging(1), |t| {
            t.cells[0] = 1
        })
        .unwrap();
    let add = Add {
        cell: 1,
        amount: -2,
        merges: true,
    };
    assert!(history.apply(&mut cells, add).unwrap());
    assert_eq!(history.len(), 2);
    history.undo(&mut cells).unwrap();
    assert_eq!(cells.cells, [1, 0]);
}

#[test]
fn the_clean_start_of_a_new_history_does_not_hold_back_the_byte_budget() {
    // Found by the budget test: the saved point of a new history (position 0) kept the budget
    // from dropping anything until the first save.
    let mut history = History::<Cells>::builder()
        .unlimited()
        .byte_budget(200)
        .build()
        .unwrap();
    let mut cells = Cells::default();
    for size in [94, 16, 30] {
        history
            .edit(&mut cells, "grow", |t| t.cells.extend(vec![7; size]))
            .unwrap();
        assert_eq!(history.len(), 1, "{} bytes", history.bytes());
    }
    // After a save, the entry that leads back to it stays.
    history.mark_saved();
    for size in [5, 6] {
        history
            .edit(&mut cells, "grow", |t| t.cells.extend(vec![8; size]))
            .unwrap();
    }
    assert_eq!(history.saved_index(), Some(0));
    assert_eq!(history.len(), 2);
}

#[test]
fn histories_can_move_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<History<Room>>();
    send_sync::<History<Room, RoomCommand>>();
    send_sync::<HistoryMemento<RoomCommand>>();
    send_sync::<MultiHistory>();
}

// ------------------------------------------------------------------------------------------
// Property-diff edits (Unity's `Undo.RecordObject`: undo restores only what was recorded)

/// A cube in a scene, as Unity's inspector shows it.
#[derive(Debug, Clone, PartialEq, Default)]
struct Cube {
    name: String,
    scale: [f32; 3],
    position: [f32; 3],
    tags: BTreeMap<String, u32>,
    selected: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CubeMemento {
    name: String,
    scale: [f32; 3],
    position: [f32; 3],
    tags: BTreeMap<String, u32>,
    selected: bool,
}

impl Originator for Cube {
    type Memento = CubeMemento;

    fn create_memento(&self) -> CubeMemento {
        CubeMemento {
            name: self.name.clone(),
            scale: self.scale,
            position: self.position,
            tags: self.tags.clone(),
            selected: self.selected,
        }
    }

    fn restore_memento(&mut self, m: CubeMemento) -> savegame::Result<()> {
        self.name = m.name;
        self.scale = m.scale;
        self.position = m.position;
        self.tags = m.tags;
        self.selected = m.selected;
        Ok(())
    }
}

fn cube() -> Cube {
    Cube {
        name: "Cube".into(),
        scale: [1.0; 3],
        position: [0.0; 3],
        tags: [("layer".to_string(), 1)].into(),
        selected: false,
    }
}

#[test]
fn story_unity_undo_puts_the_recorded_scale_back_and_keeps_the_name_a_script_changed() {
    for codec in [Codec::MessagePack, Codec::Json] {
        let mut cube = cube();
        let mut history = History::<Cube>::builder().codec(codec).build().unwrap();
        // The inspector sets Transform.Scale to (2, 2, 2): recorded.
        assert!(
            history
                .diff_edit(&mut cube, "Scale", |c| c.scale = [2.0; 3])
                .unwrap()
        );
        // A script renames the cube afterwards: not recorded.
        cube.name = "Renamed by script".into();

        assert!(history.undo(&mut cube).unwrap());
        assert_eq!(cube.scale, [1.0; 3], "{codec}: the scale is back");
        assert_eq!(
            cube.name, "Renamed by script",
            "{codec}: the new name stays"
        );
        assert!(history.redo(&mut cube).unwrap());
        assert_eq!(cube.scale, [2.0; 3]);
        assert_eq!(cube.name, "Renamed by script");
    }

    // A memento edit, by contrast, restores the whole memento: the rename is undone too.
    let mut cube = cube();
    let mut history = History::<Cube>::new();
    history
        .edit(&mut cube, "Scale", |c| c.scale = [2.0; 3])
        .unwrap();
    cube.name = "Renamed by script".into();
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.name, "Cube");
}

#[test]
fn a_recorded_path_changed_since_is_a_typed_conflict_unless_the_rule_says_otherwise() {
    let start = cube();
    let scale_and_move = |history: &mut History<Cube>, cube: &mut Cube| {
        history
            .diff_edit(cube, "Scale and move", |c| {
                c.scale = [2.0; 3];
                c.position[0] = 5.0;
            })
            .unwrap();
        // A script scales the cube again, unrecorded: the recorded scale is not there anymore.
        cube.scale[1] = 3.0;
    };

    // The default: refused, with a typed error; nothing changes, the history stays put.
    let mut cube = start.clone();
    let mut history = History::<Cube>::new();
    assert_eq!(history.on_conflict(), OnConflict::Refuse);
    scale_and_move(&mut history, &mut cube);
    let before = cube.clone();
    let err = history.undo(&mut cube).unwrap_err();
    match &err {
        Error::UndoConflict {
            entry,
            target,
            path,
            redo,
        } => {
            assert_eq!(
                (entry.as_str(), target, path.as_str(), *redo),
                ("Scale and move", &None, "/scale/1", false)
            );
        }
        other => panic!("{other}"),
    }
    assert!(format!("{err}").contains("/scale/1"), "{err}");
    assert_eq!(cube, before, "a refused undo changes nothing");
    assert_eq!(history.cursor(), 1);

    // The game asks the player, who keeps the script's change: the other paths are undone.
    history.set_on_conflict(OnConflict::KeepCurrent);
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.scale, [1.0, 3.0, 1.0]);
    assert_eq!(cube.position, [0.0; 3]);
    // Redo finds /scale/1 at 3, not at the 1 it recorded: kept again.
    history.redo(&mut cube).unwrap();
    assert_eq!(cube.scale, [2.0, 3.0, 2.0]);
    assert_eq!(cube.position[0], 5.0);

    // Last writer wins: the undo overwrites the script's change.
    let mut cube = start.clone();
    let mut history = History::<Cube>::builder()
        .on_conflict(OnConflict::Overwrite)
        .build()
        .unwrap();
    scale_and_move(&mut history, &mut cube);
    history.undo(&mut cube).unwrap();
    assert_eq!(cube, start);

    // A redo that conflicts is refused in the same way.
    let mut cube = start.clone();
    let mut history = History::<Cube>::new();
    history
        .diff_edit(&mut cube, "Rename", |c| c.name = "Crate".into())
        .unwrap();
    history.undo(&mut cube).unwrap();
    cube.name = "Barrel".into();
    let err = history.redo(&mut cube).unwrap_err();
    assert!(
        matches!(&err, Error::UndoConflict { redo: true, path, .. } if path == "/name"),
        "{err}"
    );
    assert_eq!(history.cursor(), 0);
}

#[test]
fn overwriting_a_path_whose_parent_is_gone_is_still_a_conflict() {
    let mut room = Room::default();
    let chair = room.place("chair", A);
    let lamp = room.place("lamp", B);
    let mut history = History::<Room>::builder()
        .on_conflict(OnConflict::Overwrite)
        .build()
        .unwrap();
    history
        .diff_edit(&mut room, "Move chair", |r| r.move_to(chair, C))
        .unwrap();
    // A script deletes the chair: its position has nowhere to go back to.
    room.pieces.remove(&chair);
    let err = history.undo(&mut room).unwrap_err();
    assert!(
        matches!(&err, Error::UndoConflict { path, .. } if path == &format!("/pieces/{chair}/at/0")),
        "{err}"
    );
    assert_eq!(room.at(lamp), Some(B));
    // Under KeepCurrent it is skipped instead.
    history.set_on_conflict(OnConflict::KeepCurrent);
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 1);
}

#[test]
fn placing_and_removing_a_piece_records_that_piece_by_its_key() {
    let mut room = Room::default();
    let chair = room.place("chair", A);
    let mut history = History::<Room>::new();
    let mut lamp = 0;
    history
        .diff_edit(&mut room, "Place lamp", |r| lamp = r.place("lamp", D))
        .unwrap();
    // Unrecorded: the chair moves.
    room.move_to(chair, B);
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 1, "the lamp goes");
    assert_eq!(
        room.at(chair),
        Some(B),
        "the chair stays where the script put it"
    );
    history.redo(&mut room).unwrap();
    assert_eq!(room.at(lamp), Some(D));

    history
        .diff_edit(&mut room, "Remove chair", |r| {
            r.pieces.remove(&chair);
        })
        .unwrap();
    room.move_to(lamp, C);
    history.undo(&mut room).unwrap();
    assert_eq!(
        (room.at(chair), room.at(lamp)),
        (Some(B), Some(C)),
        "the chair is back with its integer key"
    );
    // Removing the last piece empties the map: recorded as the whole map.
    history
        .diff_edit(&mut room, "Clear", |r| r.pieces.clear())
        .unwrap();
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 2);
}

#[test]
fn the_hook_sees_each_modification_and_drops_or_rewrites_single_ones() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let mut history = History::<Cube>::builder()
        .hook(move |rec: &mut Recorded<'_, Cube, _>| {
            let diff = rec.is_diff();
            let Ok(mods) = rec.modifications_mut() else {
                return Verdict::Keep;
            };
            for m in mods.iter() {
                log.lock().unwrap().push(format!(
                    "{} {}: {} -> {}",
                    if diff { "diff" } else { "memento" },
                    m.path(),
                    m.before().map_or("-".into(), Value::to_string),
                    m.after().map_or("-".into(), Value::to_string)
                ));
            }
            // Selecting is not an edit: never undone.
            mods.retain(|m| m.path() != "/selected");
            // Positions snap to whole units in what is recorded.
            for m in mods.iter_mut() {
                if m.path().starts_with("/position/")
                    && let Some(x) = m.after().and_then(Value::as_f64)
                {
                    m.set_after(Some(Value::F32(x.round() as f32)));
                }
            }
            Verdict::Keep
        })
        .build()
        .unwrap();

    let mut cube = cube();
    history
        .diff_edit(&mut cube, "Move", |c| {
            c.position[0] = 2.4;
            c.selected = true;
        })
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "diff /position/0: 0.0 -> 2.4",
            "diff /selected: false -> true"
        ]
    );
    // Undo accepts the value the cube really had (2.4), though the record says 2.
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.position[0], 0.0);
    assert!(cube.selected, "the selection was never recorded");
    history.redo(&mut cube).unwrap();
    assert_eq!(cube.position[0], 2.0, "redo writes the snapped value");
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.position[0], 0.0);

    // An edit whose every modification the hook drops records nothing.
    assert!(
        !history
            .diff_edit(&mut cube, "Select", |c| c.selected = false)
            .unwrap()
    );

    // Memento edits pass through the same list: the states are rebuilt from it.
    seen.lock().unwrap().clear();
    history.redo(&mut cube).unwrap();
    history
        .edit(&mut cube, "Move", |c| {
            c.position[1] = 7.6;
            c.selected = true;
        })
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "memento /position/1: 0.0 -> 7.6",
            "memento /selected: false -> true"
        ]
    );
    history.undo(&mut cube).unwrap();
    history.redo(&mut cube).unwrap();
    assert_eq!(cube.position[1], 8.0, "the snapped value was recorded");
    assert!(!cube.selected, "neither undo nor redo sets the selection");

    // Commands have no modifications.
    let mut commands = History::<Room, RoomCommand>::new();
    commands.set_hook(|rec: &mut Recorded<'_, Room, RoomCommand>| {
        assert!(rec.modifications().unwrap().is_empty());
        Verdict::Keep
    });
    let mut room = Room::default();
    let chair = room.place("chair", A);
    assert!(
        commands
            .apply(&mut room, RoomCommand::Move { id: chair, to: B })
            .unwrap()
    );
}

#[test]
fn diff_edits_merge_by_key_and_join_groups_and_mix_with_memento_edits() {
    // A drag recorded frame by frame, with a merge key: one entry, as for memento edits.
    let mut cube = cube();
    let mut history = History::<Cube>::new();
    for frame in 1..=30 {
        history
            .diff_edit(&mut cube, Title::new("Drag").merging(1), |c| {
                c.position = [frame as f32, 0.0, 0.0];
            })
            .unwrap();
        if frame == 10 {
            cube.name = "Renamed mid-drag".into(); // unrecorded
        }
    }
    assert_eq!(history.len(), 1);
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.position, [0.0; 3]);
    assert_eq!(cube.name, "Renamed mid-drag");
    history.redo(&mut cube).unwrap();
    assert_eq!(cube.position, [30.0, 0.0, 0.0]);
    // Dragging back to the start annuls the entry.
    history.seal();
    for x in [5.0, 30.0] {
        history
            .diff_edit(&mut cube, Title::new("Drag").merging(1), |c| {
                c.position[0] = x
            })
            .unwrap();
    }
    assert_eq!(history.len(), 1, "the second drag ended where it began");

    // A group of diff and memento edits is one undo.
    history
        .group(&mut cube, "Set up", |h, c| {
            h.diff_edit(c, "Scale", |c| c.scale = [4.0; 3])?;
            h.diff_edit(c, "Tag", |c| {
                c.tags.insert("boss".into(), 9);
            })?;
            h.edit(c, "Rename", |c| c.name = "Boss crate".into())?;
            h.diff_edit(c, "Tag", |c| {
                c.tags.remove("layer");
            })
        })
        .unwrap();
    assert_eq!(history.len(), 2);
    let set_up = cube.clone();
    history.undo(&mut cube).unwrap();
    assert_eq!(cube.scale, [1.0; 3]);
    assert_eq!(cube.name, "Renamed mid-drag");
    assert_eq!(cube.tags, BTreeMap::from([("layer".to_string(), 1)]));
    history.redo(&mut cube).unwrap();
    assert_eq!(cube, set_up);
    // The cancel of an open diff edit puts everything back.
    history.begin_diff_edit(&cube, "Drag").unwrap();
    cube.position = [9.0; 3];
    assert!(history.cancel_edit(&mut cube).unwrap());
    assert_eq!(cube, set_up);
}

/// A format 1 history memento written by savegame before property-diff edits existed (the
/// JSON form of `History::<Room>` after: move the chair A → B, place a lamp at D, move the
/// chair B → C, undo; captured with `marked_saved`).
const HISTORY_V1: &str = r#"{"format":1,"codec":"msgpack","cursor":2,"saved":2,"entries":[{"name":"Move chair","records":["Memento"]},{"name":"Place lamp","records":["Memento"]},{"name":"Move chair","records":["Memento"]}],"links":[{"gap":null,"edit":{"old_len":47,"new_len":47,"hunks":[{"at":26,"old":[0],"new":[1]}]}},{"gap":{"old_len":47,"new_len":47,"hunks":[]},"edit":{"old_len":47,"new_len":65,"hunks":[{"at":8,"old":[129],"new":[130]},{"at":28,"old":[167,110,101,120,116,95,105,100,1],"new":[1,130,164,107,105,110,100,164,108,97,109,112,162,97,116,146,3,3,167,110,101,120,116,95,105,100,2]}]}},{"gap":{"old_len":65,"new_len":65,"hunks":[]},"edit":{"old_len":65,"new_len":65,"hunks":[{"at":26,"old":[1],"new":[2]}]}}],"anchor":{"link":2,"after":false,"state":[131,166,112,105,101,99,101,115,130,0,130,164,107,105,110,100,165,99,104,97,105,114,162,97,116,146,1,0,1,130,164,107,105,110,100,164,108,97,109,112,162,97,116,146,3,3,167,110,101,120,116,95,105,100,2,168,115,101,108,101,99,116,101,100,192]}}"#;

#[test]
fn a_format_1_history_memento_still_loads_and_undoes() {
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot
        .insert_raw("history", HISTORY_V1.as_bytes().to_vec())
        .unwrap();
    let mut room = Room::default();
    let chair = room.place("chair", B);
    room.place("lamp", D);
    let mut history = History::<Room>::new();
    snapshot.restore("history", &mut history).unwrap();
    assert_eq!(
        history.names().collect::<Vec<_>>(),
        ["Move chair", "Place lamp", "Move chair"]
    );
    assert_eq!((history.cursor(), history.is_dirty()), (2, false));
    history.redo(&mut room).unwrap();
    assert_eq!(room.at(chair), Some(C));
    history.go_to(&mut room, 0).unwrap();
    assert_eq!((room.at(chair), room.pieces.len()), (Some(A), 1));
    // Written again without property-diff edits, it stays format 1.
    assert_eq!(history.create_memento().format_version(), 1);
}

#[test]
fn a_history_with_diff_edits_survives_a_save_and_a_reload_as_format_2() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::MessagePack)
        .build()
        .unwrap();

    let (mut room, chair, mut history) = room_with_chair();
    move_chair(&mut history, &mut room, chair, B);
    let mut lamp = 0;
    history
        .diff_edit(&mut room, "Place lamp", |r| lamp = r.place("lamp", D))
        .unwrap();
    history
        .group(&mut room, "Tidy", |h, r| {
            h.diff_edit(r, "Move lamp", |r| r.move_to(lamp, C))?;
            h.edit(r, "Move chair", |r| r.move_to(chair, A))
        })
        .unwrap();
    history
        .diff_edit(&mut room, "Select", |r| r.selected = Some(lamp))
        .unwrap();
    history.undo(&mut room).unwrap(); // a redo entry travels too
    let memento = history.create_memento();
    assert_eq!(memento.format_version(), 2);

    let mut snapshot = manager.snapshot();
    snapshot.capture("room", &room).unwrap();
    snapshot
        .capture_memento("history", &memento.marked_saved())
        .unwrap();
    manager.save(SlotId::Numbered(3), &snapshot).unwrap();
    let saved_room = room.clone();

    let loaded = manager.load(SlotId::Numbered(3)).unwrap().snapshot;
    let mut room = Room::default();
    let mut history = History::<Room>::new();
    loaded.restore("room", &mut room).unwrap();
    loaded.restore("history", &mut history).unwrap();
    assert_eq!(room, saved_room);
    assert_eq!(
        history.names().collect::<Vec<_>>(),
        ["Move chair", "Place lamp", "Tidy", "Select"]
    );
    assert!(!history.is_dirty());
    history.redo(&mut room).unwrap();
    assert_eq!(room.selected, Some(lamp));
    history.undo(&mut room).unwrap();
    history.undo(&mut room).unwrap();
    assert_eq!((room.at(lamp), room.at(chair)), (Some(D), Some(B)));
    // Unrecorded, after the reload: the chair is renamed.
    room.pieces.get_mut(&chair).unwrap().kind = "armchair".into();
    history.undo(&mut room).unwrap();
    assert_eq!(room.pieces.len(), 1, "the lamp goes");
    assert_eq!(
        room.pieces[&chair].kind, "armchair",
        "the diff edit's undo kept the rename"
    );

    // Through a JSON snapshot (an autosave): the diffs keep their MessagePack form inside.
    let mut autosave = Snapshot::new(Codec::Json);
    autosave.capture("history", &history).unwrap();
    let mut again = History::<Room>::new();
    autosave.restore("history", &mut again).unwrap();
    again.redo(&mut room).unwrap();
    assert_eq!(room.at(lamp), Some(D));

    // Restored into a history of another codec, a history with diff edits keeps its own.
    let mut json = History::<Room>::builder()
        .codec(Codec::Json)
        .build()
        .unwrap();
    json.restore_memento(again.create_memento()).unwrap();
    assert_eq!(json.codec(), Codec::MessagePack);
    json.go_to(&mut room, 4).unwrap();
    assert_eq!(room.selected, Some(lamp));

    // A format 1 memento may not hold a diff record.
    let text = String::from_utf8(Codec::Json.encode(&again.create_memento()).unwrap()).unwrap();
    let mut bad = Snapshot::new(Codec::Json);
    bad.insert_raw(
        "history",
        text.replacen(r#""format":2"#, r#""format":1"#, 1)
            .into_bytes(),
    )
    .unwrap();
    let err = bad.restore("history", &mut again).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
}

// ------------------------------------------------------------------------------------------
// The property-diff model: a map of values, edits recorded as diffs, scripts changing values
// unrecorded, and the three conflict rules.

#[derive(Debug, Clone, PartialEq, Default)]
struct Props {
    values: BTreeMap<String, i64>,
}

#[derive(Serialize, Deserialize)]
struct PropsMemento {
    values: BTreeMap<String, i64>,
}

impl Originator for Props {
    type Memento = PropsMemento;
    fn create_memento(&self) -> PropsMemento {
        PropsMemento {
            values: self.values.clone(),
        }
    }
    fn restore_memento(&mut self, m: PropsMemento) -> savegame::Result<()> {
        self.values = m.values;
        Ok(())
    }
}

const KEYS: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Set a key (`Some`) or remove it (`None`).
type Set = (usize, Option<i64>);

#[derive(Debug, Clone)]
enum DiffOp {
    Edit(Vec<Set>),
    Group(Vec<Set>, Vec<Set>),
    Script(Set),
    Undo,
    Redo,
}

fn set() -> impl Strategy<Value = Set> {
    (0..KEYS.len(), proptest::option::weighted(0.8, -3i64..4))
}

fn diff_op() -> impl Strategy<Value = DiffOp> {
    prop_oneof![
        4 => proptest::collection::vec(set(), 1..4).prop_map(DiffOp::Edit),
        1 => (proptest::collection::vec(set(), 1..3), proptest::collection::vec(set(), 1..3))
            .prop_map(|(a, b)| DiffOp::Group(a, b)),
        3 => set().prop_map(DiffOp::Script),
        3 => Just(DiffOp::Undo),
        2 => Just(DiffOp::Redo),
    ]
}

type State = BTreeMap<String, i64>;
/// A model entry: each changed key, its value before and after.
type ModelEntry = Vec<(String, Option<i64>, Option<i64>)>;

fn put(state: &mut State, (k, v): Set) {
    match v {
        Some(v) => state.insert(KEYS[k].into(), v),
        None => state.remove(KEYS[k]),
    };
}

fn changed(before: &State, after: &State) -> ModelEntry {
    KEYS.iter()
        .filter_map(|&k| {
            let (b, a) = (before.get(k).copied(), after.get(k).copied());
            (b != a).then(|| (k.to_string(), b, a))
        })
        .collect()
}

/// Runs an entry back (`undo`) or forth on the model's state; `Err` when the rule refuses.
fn model_run(
    state: &mut State,
    entry: &ModelEntry,
    undo: bool,
    rule: OnConflict,
) -> Result<(), ()> {
    let fits = |state: &State, (k, old, new): &(String, Option<i64>, Option<i64>)| {
        state.get(k).copied() == if undo { *new } else { *old }
    };
    if rule == OnConflict::Refuse && entry.iter().any(|m| !fits(state, m)) {
        return Err(());
    }
    for m in entry {
        if rule == OnConflict::KeepCurrent && !fits(state, m) {
            continue;
        }
        let (k, old, new) = m;
        match if undo { old } else { new } {
            Some(v) => state.insert(k.clone(), *v),
            None => state.remove(k),
        };
    }
    Ok(())
}

fn run_diff_model(ops: &[DiffOp], rule: OnConflict, codec: Codec) -> Result<(), TestCaseError> {
    const LIMIT: usize = 6;
    let mut props = Props {
        values: [("_".to_string(), 0)].into(),
    };
    let mut history = History::<Props>::builder()
        .codec(codec)
        .limit(LIMIT)
        .on_conflict(rule)
        .build()
        .unwrap();
    let mut entries: Vec<ModelEntry> = Vec::new();
    let mut cursor = 0;
    let push = |entries: &mut Vec<ModelEntry>, cursor: &mut usize, entry: ModelEntry| {
        entries.truncate(*cursor);
        entries.push(entry);
        if entries.len() > LIMIT {
            entries.remove(0);
        }
        *cursor = entries.len();
    };
    for op in ops {
        let before = props.values.clone();
        match op {
            DiffOp::Edit(sets) => {
                let recorded = history
                    .diff_edit(&mut props, "edit", |p| {
                        for &s in sets {
                            put(&mut p.values, s);
                        }
                    })
                    .unwrap();
                let entry = changed(&before, &props.values);
                prop_assert_eq!(recorded, !entry.is_empty());
                if recorded {
                    push(&mut entries, &mut cursor, entry);
                }
            }
            DiffOp::Group(first, second) => {
                history
                    .group(&mut props, "group", |h, p| {
                        for sets in [first, second] {
                            h.diff_edit(p, "edit", |p| {
                                for &s in sets {
                                    put(&mut p.values, s);
                                }
                            })?;
                        }
                        Ok(())
                    })
                    .unwrap();
                let entry = changed(&before, &props.values);
                if !entry.is_empty() {
                    push(&mut entries, &mut cursor, entry);
                }
            }
            DiffOp::Script(s) => put(&mut props.values, *s),
            DiffOp::Undo => {
                let result = history.undo(&mut props);
                if cursor == 0 {
                    prop_assert!(!result.unwrap());
                } else {
                    let mut state = before.clone();
                    match model_run(&mut state, &entries[cursor - 1], true, rule) {
                        Ok(()) => {
                            prop_assert!(result.unwrap());
                            cursor -= 1;
                        }
                        Err(()) => {
                            let refused =
                                matches!(result, Err(Error::UndoConflict { redo: false, .. }));
                            prop_assert!(refused);
                        }
                    }
                    prop_assert_eq!(&props.values, &state);
                }
            }
            DiffOp::Redo => {
                let result = history.redo(&mut props);
                if cursor == entries.len() {
                    prop_assert!(!result.unwrap());
                } else {
                    let mut state = before.clone();
                    match model_run(&mut state, &entries[cursor], false, rule) {
                        Ok(()) => {
                            prop_assert!(result.unwrap());
                            cursor += 1;
                        }
                        Err(()) => {
                            let refused =
                                matches!(result, Err(Error::UndoConflict { redo: true, .. }));
                            prop_assert!(refused);
                        }
                    }
                    prop_assert_eq!(&props.values, &state);
                }
            }
        }
        prop_assert_eq!(props.values.get("_"), Some(&0));
        prop_assert_eq!((history.cursor(), history.len()), (cursor, entries.len()));
    }
    // What the history holds survives its memento.
    let mut restored = History::<Props>::builder()
        .limit(LIMIT)
        .on_conflict(OnConflict::Overwrite)
        .build()
        .unwrap();
    restored.restore_memento(history.create_memento()).unwrap();
    let mut state = props.values.clone();
    while cursor > 0 {
        model_run(
            &mut state,
            &entries[cursor - 1],
            true,
            OnConflict::Overwrite,
        )
        .unwrap();
        restored.undo(&mut props).unwrap();
        cursor -= 1;
        prop_assert_eq!(&props.values, &state);
    }
    Ok(())
}

fn rule() -> impl Strategy<Value = OnConflict> {
    prop_oneof![
        Just(OnConflict::Refuse),
        Just(OnConflict::KeepCurrent),
        Just(OnConflict::Overwrite)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn diff_edits_undo_only_what_they_recorded_like_the_model(
        ops in proptest::collection::vec(diff_op(), 1..60),
        rule in rule(),
        json in any::<bool>(),
    ) {
        run_diff_model(&ops, rule, if json { Codec::Json } else { Codec::MessagePack })?;
    }
}

// ------------------------------------------------------------------------------------------
// Several originators of different types in one history (Unity: one Ctrl+Z undoes a
// transform, a light and a material changed by one input event)

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct Transform {
    position: (f32, f32),
    scale: f32,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct Light {
    intensity: u32,
    color: String,
    enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct Material {
    albedo: String,
    roughness: f64,
}

macro_rules! self_memento {
    ($($t:ty),*) => {$(
        impl Originator for $t {
            type Memento = $t;
            fn create_memento(&self) -> $t {
                self.clone()
            }
            fn restore_memento(&mut self, m: $t) -> savegame::Result<()> {
                *self = m;
                Ok(())
            }
        }
    )*};
}
self_memento!(Transform, Light, Material);

/// The editor's scene: the game's own container of targets, by id, so undo and redo take the
/// scene as it is (no set of targets built for each call).
struct Scene {
    transform: Transform,
    light: Light,
    material: Material,
}

impl Targets for Scene {
    fn target(&mut self, id: &str) -> Option<&mut dyn savegame::history::Target> {
        match id {
            "transform" => Some(&mut self.transform),
            "light" => Some(&mut self.light),
            "material" => Some(&mut self.material),
            _ => None,
        }
    }
}

#[test]
fn story_one_ctrl_z_undoes_a_transform_a_light_and_a_material() {
    let mut scene = Scene {
        transform: Transform {
            scale: 1.0,
            ..Transform::default()
        },
        light: Light {
            intensity: 100,
            color: "white".into(),
            enabled: true,
        },
        material: Material {
            albedo: "grey".into(),
            roughness: 0.5,
        },
    };
    let start = (
        scene.transform.clone(),
        scene.light.clone(),
        scene.material.clone(),
    );
    let mut history = MultiHistory::builder().build().unwrap();

    // One input event: "make it a campfire".
    history
        .group(&mut scene, "Campfire", |h, scene| {
            h.edit(&mut scene.transform, "transform", "Move", |t| {
                t.position = (3.0, 4.0)
            })?;
            h.edit(&mut scene.light, "light", "Warm light", |l| {
                l.color = "orange".into();
                l.intensity = 300;
            })?;
            h.edit(&mut scene.material, "material", "Embers", |m| {
                m.albedo = "red".into()
            })
        })
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history.undo_name(), Some("Campfire"));
    assert_eq!(
        history.targets_of(0).collect::<Vec<_>>(),
        ["transform", "light", "material"]
    );
    let campfire = (scene.transform.clone(), scene.material.clone());
    // Play switches the light off: not recorded.
    scene.light.enabled = false;

    // One Ctrl+Z, on the scene as it is.
    assert!(history.undo(&mut scene).unwrap());
    assert_eq!(scene.transform, start.0);
    assert_eq!(scene.material, start.2);
    assert_eq!(
        (scene.light.color.as_str(), scene.light.intensity),
        ("white", 100)
    );
    assert!(!scene.light.enabled, "the unrecorded change stays");

    assert!(history.redo(&mut scene).unwrap());
    assert_eq!(
        (&scene.transform, &scene.material),
        (&campfire.0, &campfire.1)
    );
    assert_eq!(scene.light.color, "orange");

    // Without a group, each edit is an undo of its own (Unity's IncrementCurrentGroup).
    history
        .edit(&mut scene.light, "light", "Dim", |l| l.intensity = 50)
        .unwrap();
    history
        .edit(&mut scene.material, "material", "Polish", |m| {
            m.roughness = 0.1
        })
        .unwrap();
    assert_eq!(history.len(), 3);
    assert!(history.is_dirty());

    // A target the entry names is missing: refused, and nothing changes.
    let before = (scene.light.clone(), scene.material.clone());
    let mut partial = TargetSet::new().with("light", &mut scene.light);
    let err = history.undo(&mut partial).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err}");
    drop(partial);
    assert_eq!((scene.light.clone(), scene.material.clone()), before);
    assert_eq!(history.cursor(), 3);

    // A conflict names the target.
    scene.material.roughness = 0.9; // a script
    let err = history.undo(&mut scene).unwrap_err();
    assert!(
        matches!(&err, Error::UndoConflict { target: Some(t), path, .. } if t == "material" && path == "/roughness"),
        "{err}"
    );
    history.set_on_conflict(OnConflict::Overwrite);
    history.undo(&mut scene).unwrap();
    assert_eq!(scene.material.roughness, 0.5);

    // Targets a game keeps boxed by id (a registry) serve as well.
    let mut registry: BTreeMap<String, Box<dyn savegame::history::Target>> = BTreeMap::new();
    registry.insert("transform".into(), Box::new(scene.transform.clone()));
    registry.insert("light".into(), Box::new(scene.light.clone()));
    registry.insert("material".into(), Box::new(scene.material.clone()));
    history.undo(&mut registry).unwrap(); // "Dim"
    history.undo(&mut registry).unwrap(); // "Campfire"
    assert!(!history.can_undo());
    history.redo(&mut registry).unwrap();
    assert_eq!(history.redo_name(), Some("Dim"));
}

#[test]
fn a_multi_history_hook_sees_target_paths_and_values_and_limits_drop_the_oldest() {
    let mut transform = Transform::default();
    let mut light = Light::default();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let mut history = MultiHistory::new();
    history.set_limit(Some(2)).unwrap();
    history.set_hook(move |target, mods| {
        for m in mods.iter() {
            log.lock().unwrap().push(format!(
                "{target} {} {} -> {}",
                m.path(),
                m.before().map_or("-".into(), Value::to_string),
                m.after().map_or("-".into(), Value::to_string)
            ));
        }
        mods.retain(|m| m.path() != "/enabled");
        Verdict::Keep
    });
    history.begin_group("Drag both").unwrap();
    history.begin_edit(&transform, "transform", "Drag").unwrap();
    history.begin_edit(&light, "light", "Drag").unwrap();
    for frame in 1..=10 {
        transform.position = (frame as f32, 0.0);
        light.intensity = frame;
    }
    light.enabled = true;
    assert!(history.commit_edit(&transform, "transform").unwrap());
    assert!(history.commit_edit(&light, "light").unwrap());
    assert!(history.end_group().unwrap());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "transform /position/0 0.0 -> 10.0",
            "light /intensity 0 -> 10",
            "light /enabled false -> true"
        ]
    );
    for i in 0..3 {
        history
            .edit(&mut light, "light", "Dim", |l| l.intensity = i)
            .unwrap();
    }
    assert_eq!(history.len(), 2, "the limit dropped the oldest");
    let mut scene = TargetSet::new()
        .with("transform", &mut transform)
        .with("light", &mut light);
    while history.undo(&mut scene).unwrap() {}
    drop(scene);
    assert_eq!(light.intensity, 0);
    assert_eq!(
        transform.position,
        (10.0, 0.0),
        "the drag fell out of the history"
    );
    assert!(light.enabled, "the hook kept the switch out of the record");

    // An open edit blocks moving; a cancelled one puts its target back.
    history.begin_edit(&light, "light", "Drag").unwrap();
    light.intensity = 99;
    let mut scene = TargetSet::new().with("light", &mut light);
    assert!(matches!(
        history.redo(&mut scene),
        Err(Error::Rejected { .. })
    ));
    drop(scene);
    assert!(history.cancel_edit(&mut light, "light").unwrap());
    assert_eq!(light.intensity, 0);
}

#[test]
fn a_multi_history_has_the_shape_of_a_history_builder_observers_budget_memento_merges() {
    // The builder checks its limits as History's does.
    assert!(matches!(
        MultiHistory::builder().limit(0).build(),
        Err(Error::Config { .. })
    ));
    let events = Arc::new(Mutex::new(Vec::<Status>::new()));
    let heard = Arc::clone(&events);
    let mut history = MultiHistory::builder()
        .unlimited()
        .byte_budget(1 << 20)
        .codec(savegame::Codec::Json)
        .observer(move |e: Event| heard.lock().unwrap().push(e.status()))
        .build()
        .unwrap();
    let mut scene = Scene {
        transform: Transform::default(),
        light: Light::default(),
        material: Material::default(),
    };

    // Results where History has them: no group while an edit is open.
    history.begin_edit(&scene.light, "light", "Drag").unwrap();
    assert!(matches!(
        history.begin_group("Both"),
        Err(Error::Rejected { .. })
    ));
    assert!(history.is_editing());
    history.cancel_edit(&mut scene.light, "light").unwrap();

    // A drag recorded frame by frame with a merge key is one entry.
    for x in 1..=5 {
        history
            .edit(
                &mut scene.transform,
                "transform",
                Title::new("Drag").merging(7),
                |t| t.position = (x as f32, 0.0),
            )
            .unwrap();
    }
    assert_eq!(history.len(), 1);
    history
        .edit(&mut scene.light, "light", "Switch on", |l| l.enabled = true)
        .unwrap();
    assert_eq!(history.len(), 2);
    // Observers hear only when a flag flips: can-undo and dirty at the first edit.
    let heard: Vec<(bool, bool, bool)> = events
        .lock()
        .unwrap()
        .iter()
        .map(|s| (s.can_undo, s.can_redo, s.dirty))
        .collect();
    assert_eq!(heard, [(true, false, true)]);

    // Into a save and out of it, in another session: the history still undoes.
    let mut snapshot = savegame::Snapshot::new(savegame::Codec::MessagePack);
    snapshot.capture("transform", &scene.transform).unwrap();
    snapshot.capture("light", &scene.light).unwrap();
    snapshot
        .capture_memento("history", &history.create_memento().marked_saved())
        .unwrap();
    let mut restored = MultiHistory::new();
    snapshot.restore("history", &mut restored).unwrap();
    assert_eq!(restored.len(), 2);
    assert!(!restored.is_dirty());
    assert_eq!(
        restored.codec(),
        savegame::Codec::Json,
        "the memento's codec"
    );
    assert!(restored.go_to(&mut scene, 0).unwrap());
    assert_eq!(
        scene.transform.position,
        (0.0, 0.0),
        "the merged drag is one"
    );
    assert!(!scene.light.enabled);
    assert!(restored.is_dirty());
    restored.redo(&mut scene).unwrap();
    assert_eq!(scene.transform.position, (5.0, 0.0));

    // A byte budget bounds it: the oldest entries go.
    let mut small = MultiHistory::builder().byte_budget(600).build().unwrap();
    for i in 0..50u32 {
        small
            .edit(&mut scene.light, "light", "Dim", |l| l.intensity = i + 1)
            .unwrap();
    }
    assert!(small.len() < 50 && !small.is_empty(), "{}", small.len());
    assert!(
        small.bytes() <= 600 || small.len() == 1,
        "{}",
        small.bytes()
    );

    // A damaged memento is refused and changes nothing.
    let mut memento = history.create_memento();
    let json = serde_json::to_value(&memento).unwrap();
    let mut bad = json.clone();
    bad["cursor"] = serde_json::json!(99);
    let bad: savegame::history::MultiHistoryMemento = serde_json::from_value(bad).unwrap();
    let mut untouched = MultiHistory::new();
    assert!(untouched.restore_memento(bad).is_err());
    assert!(untouched.is_empty());
    memento = serde_json::from_value(json).unwrap();
    assert_eq!(memento.len(), 2);
}
