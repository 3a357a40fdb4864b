//! A furniture editor with undo and redo, as a terminal transcript.
//!
//! A player furnishes a room: places a chair and moves it around, undoes and redoes, drags the
//! sofa for two seconds, drops a dining set in one click, moves the table with a property-diff
//! edit (whose undo leaves alone the bench the cat pushed afterwards), saves, keeps editing,
//! quits, reloads the save in a "new session" and can still undo. The undo and redo buttons and the title bar
//! are driven by an observer, which prints only when something it shows changes.
//!
//! ```text
//! cargo run --example undo_editor                  # saves to a temporary folder
//! cargo run --example undo_editor -- --dir /tmp/x  # or to an explicit one
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use savegame::history::{Event, Status};
use savegame::{Codec, History, Originator, SaveLoadManager, SlotId};
use serde::{Deserialize, Serialize};

/// One piece of furniture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Piece {
    kind: String,
    at: (i32, i32),
}

/// The room being furnished: the originator the history records. Its memento, `RoomMemento`,
/// is derived: a copy of its fields.
#[derive(Debug, Clone, Default, PartialEq, Originator)]
struct Room {
    pieces: BTreeMap<u32, Piece>,
    next_id: u32,
}

impl Room {
    const WIDTH: i32 = 24;
    const HEIGHT: i32 = 5;

    fn place(&mut self, kind: &str, at: (i32, i32)) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.pieces.insert(
            id,
            Piece {
                kind: kind.to_owned(),
                at,
            },
        );
        id
    }

    fn move_to(&mut self, id: u32, at: (i32, i32)) {
        if let Some(piece) = self.pieces.get_mut(&id) {
            piece.at = at;
        }
    }

    fn at(&self, id: u32) -> Option<(i32, i32)> {
        self.pieces.get(&id).map(|p| p.at)
    }

    /// The room seen from above: each piece is the first letter of its kind.
    fn draw(&self) {
        let mut rows = vec![vec![b'.'; Room::WIDTH as usize]; Room::HEIGHT as usize];
        for piece in self.pieces.values() {
            let (x, y) = piece.at;
            if (0..Room::WIDTH).contains(&x) && (0..Room::HEIGHT).contains(&y) {
                rows[y as usize][x as usize] = piece.kind.as_bytes()[0];
            }
        }
        for row in rows {
            println!("      {}", String::from_utf8_lossy(&row));
        }
    }
}

/// What the editor's toolbar shows.
fn toolbar(history: &History<Room>) -> String {
    let button = |name: &str, what: Option<&str>| match what {
        Some(what) => format!("[{name}: {what}]"),
        None => format!("[{name}: -]"),
    };
    format!(
        "{} {}  title: \"Cosy room{}\"",
        button("Undo", history.undo_name()),
        button("Redo", history.redo_name()),
        if history.is_dirty() { " *" } else { "" }
    )
}

/// Prints what the player does next.
fn say(what: &str) {
    println!("\n> {what}");
}

/// Prints the toolbar.
fn show(history: &History<Room>) {
    println!("    {}", toolbar(history));
}

/// A position, as the transcript prints it.
fn pos(at: Option<(i32, i32)>) -> String {
    at.map_or_else(|| "nowhere".into(), |(x, y)| format!("({x}, {y})"))
}

/// The history panel: every entry, the cursor, and the saved point.
fn panel(history: &History<Room>) {
    println!("    history panel:");
    for (i, name) in history.names().enumerate() {
        let done = if i < history.cursor() { "x" } else { " " };
        let saved = if history.saved_index() == Some(i + 1) {
            "  <- saved"
        } else {
            ""
        };
        println!("      [{done}] {name}{saved}");
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let temp = tempfile::tempdir()?;
    let dir = match args.as_slice() {
        [flag, dir] if flag == "--dir" => PathBuf::from(dir),
        _ => temp.path().to_path_buf(),
    };
    let manager = SaveLoadManager::builder()
        .directory(&dir)
        .codec(Codec::MessagePack)
        .build()?;

    println!(
        "== Session 1: furnishing the room (saves in {})",
        dir.display()
    );
    let mut room = Room::default();
    // The room also holds 400 small things nobody moves today (off the drawing).
    for i in 0..400 {
        room.place("pebble", (-1 - i, -1));
    }
    let mut history = History::<Room>::builder().limit(50).build()?;
    history.add_observer(|event: Event| {
        // Called only when can-undo, can-redo or dirty flips: the buttons redraw then.
        let s: Status = event.status();
        let on = |b: bool| if b { "on" } else { "off" };
        let what = if matches!(event, Event::Cleared { .. }) {
            "cleared"
        } else {
            "flipped"
        };
        println!(
            "    (observer, {what}: undo button {}, redo button {}, unsaved mark {})",
            on(s.can_undo),
            on(s.can_redo),
            on(s.dirty)
        );
    });

    let (a, b, c, d) = ((2, 1), (6, 1), (10, 3), (4, 3));
    let mut chair = 0;
    say("place a chair at A (2, 1)");
    history.edit(&mut room, "Place chair", |r| chair = r.place("chair", a))?;
    show(&history);
    say("move the chair A -> B -> C");
    history.edit(&mut room, "Move chair", |r| r.move_to(chair, b))?;
    history.edit(&mut room, "Move chair", |r| r.move_to(chair, c))?;
    show(&history);
    room.draw();

    say("undo twice");
    history.undo(&mut room)?;
    history.undo(&mut room)?;
    println!("    the chair is at {} (A)", pos(room.at(chair)));
    show(&history);
    say("redo");
    history.redo(&mut room)?;
    println!("    the chair is at {} (B)", pos(room.at(chair)));
    show(&history);
    say("move the chair to D: the C branch is gone");
    history.edit(&mut room, "Move chair", |r| r.move_to(chair, d))?;
    show(&history);
    println!("    can redo: {}", history.can_redo());

    say("place a sofa, then drag it for 120 frames");
    let mut sofa = 0;
    history.edit(&mut room, "Place sofa", |r| sofa = r.place("Sofa", (8, 0)))?;
    history.begin_edit(&room, "Drag sofa")?;
    for frame in 0..120 {
        room.move_to(sofa, (8 + frame / 20, frame / 40)); // the preview, every frame
    }
    history.commit_edit(&room)?;
    println!(
        "    one entry for the whole drag; the sofa is at {}",
        pos(room.at(sofa))
    );
    show(&history);
    say("drag the sofa around and back where it was");
    history.begin_edit(&room, "Drag sofa")?;
    room.move_to(sofa, (0, 0));
    room.move_to(sofa, (13, 2));
    let recorded = history.commit_edit(&room)?;
    println!("    recorded: {recorded}");
    show(&history);

    say("place a dining set: a table and four benches, one click");
    let (mut table, mut benches) = (0, Vec::new());
    history.group(&mut room, "Place dining set", |h, room| {
        h.edit(room, "Place table", |r| table = r.place("table", (20, 3)))?;
        for (i, x) in [19, 21, 22, 18].into_iter().enumerate() {
            h.edit(room, "Place bench", |r| {
                benches.push(r.place("bench", (x, 2 + (i as i32 % 2) * 2)));
            })?;
        }
        Ok(())
    })?;
    show(&history);
    room.draw();
    say("undo");
    history.undo(&mut room)?;
    println!("    all five pieces go at once");
    show(&history);
    say("redo");
    history.redo(&mut room)?;
    show(&history);

    say("move the table with a property-diff edit; then the cat pushes a bench (unrecorded)");
    // A property-diff edit records only what changed (the table's position), so its undo
    // leaves alone what changed later without being recorded.
    history.diff_edit(&mut room, "Move table", |r| r.move_to(table, (16, 1)))?;
    room.move_to(benches[0], (23, 0)); // the cat
    show(&history);
    say("undo: the table goes back, the bench stays where the cat pushed it");
    history.undo(&mut room)?;
    println!(
        "    the table is at {}, the bench at {}",
        pos(room.at(table)),
        pos(room.at(benches[0]))
    );
    say("redo");
    history.redo(&mut room)?;
    println!("    the table is at {}", pos(room.at(table)));
    say("put down a rug");
    history.edit(&mut room, "Place rug", |r| {
        r.place("rug", (1, 4));
    })?;
    show(&history);
    room.draw();

    say("save to slot 1 (the room and its history)");
    let mut snapshot = manager.snapshot().with_label("Cosy room");
    snapshot.capture("room", &room)?;
    // This save is the history's saved point.
    snapshot.capture_memento("history", &history.create_memento().marked_saved())?;
    manager.save(SlotId::Numbered(1), &snapshot)?;
    history.mark_saved();
    show(&history);

    say("move the chair once more");
    history.edit(&mut room, "Move chair", |r| r.move_to(chair, (8, 4)))?;
    show(&history);
    say("undo: back at the saved state");
    history.undo(&mut room)?;
    show(&history);
    panel(&history);
    println!(
        "    memory: {} bytes for {} entries; one memento of the room is {} bytes",
        history.bytes(),
        history.len(),
        Codec::MessagePack.encode(&room.create_memento())?.len()
    );

    let saved_room = room.clone();
    say("leave the editor: clear()");
    history.clear();
    show(&history);

    println!("\n== Session 2: the player starts the game again and loads slot 1");
    let loaded = manager.load(SlotId::Numbered(1))?.snapshot;
    let mut room = Room::default();
    let mut history = History::<Room>::builder().limit(50).build()?;
    loaded.restore("room", &mut room)?;
    loaded.restore("history", &mut history)?;
    assert_eq!(room, saved_room);
    show(&history);
    panel(&history);
    say("undo three times: the rug, the table move, and the dining set");
    history.undo(&mut room)?;
    history.undo(&mut room)?;
    println!(
        "    the table is back at {}; the bench the cat pushed is still at {}",
        pos(room.at(table)),
        pos(room.at(benches[0]))
    );
    history.undo(&mut room)?;
    println!("    the dining set goes, as one entry still");
    show(&history);
    say("undo everything");
    history.go_to(&mut room, 0)?;
    let visible = room.pieces.values().filter(|p| p.kind != "pebble").count();
    println!("    {visible} pieces of furniture left");
    show(&history);
    say("redo everything");
    history.go_to(&mut room, history.len())?;
    show(&history);
    room.draw();
    assert_eq!(room, saved_room);
    println!("\nThe room after reloading, undoing and redoing is the saved one.");
    Ok(())
}
