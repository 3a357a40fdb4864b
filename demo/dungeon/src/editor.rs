//! Editor mode: place and remove walls and items, drag a room outline, undo and redo. The
//! history records the level's layout (its walls and items, not its monsters), and goes into
//! every save, so a player who reloads can still undo.

use savegame::{History, Originator, Snapshot};

use crate::model::{Item, Layout, Pos, Tile};

/// The memento id of the editor's history in a save.
pub const HISTORY_ID: &str = "editor";

/// The editor's state: its history and a drag in progress.
pub struct Editor {
    /// The layout's history: what undo and redo walk.
    pub history: History<Layout>,
    /// The corner a room drag started from, while the drag lasts.
    pub drag_from: Option<Pos>,
}

/// The cells of a room outline with corners `a` and `b`.
pub fn outline(a: Pos, b: Pos) -> Vec<Pos> {
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    let mut cells = Vec::new();
    for x in x0..=x1 {
        cells.push(Pos::new(x, y0));
        cells.push(Pos::new(x, y1));
    }
    for y in y0 + 1..y1 {
        cells.push(Pos::new(x0, y));
        cells.push(Pos::new(x1, y));
    }
    cells
}

impl Editor {
    /// A fresh editor: up to 200 entries and 1 MiB of history.
    pub fn new() -> savegame::Result<Editor> {
        Ok(Editor {
            history: History::builder().limit(200).byte_budget(1 << 20).build()?,
            drag_from: None,
        })
    }

    /// Sets one cell; records nothing if it was already so.
    pub fn set(&mut self, layout: &mut Layout, pos: Pos, tile: Tile) -> savegame::Result<String> {
        let name = if tile == Tile::Wall {
            "Place wall"
        } else {
            "Remove wall"
        };
        let recorded = self.history.edit(layout, name, |l| {
            l.set_tile(pos, tile);
        })?;
        Ok(if recorded {
            format!("{name} at {},{}", pos.x, pos.y)
        } else {
            "Nothing changed.".into()
        })
    }

    /// Puts `item` at `pos` (or takes what lies there when `item` is `None`).
    pub fn put(
        &mut self,
        layout: &mut Layout,
        pos: Pos,
        item: Option<Item>,
    ) -> savegame::Result<String> {
        if layout.tile(pos) == Tile::Wall {
            return Ok("Items go on the floor.".into());
        }
        let name = match item {
            Some(item) => format!("Place {}", item.name()),
            None => "Remove item".to_string(),
        };
        let recorded = self.history.edit(layout, name.as_str(), |l| match item {
            Some(item) => {
                l.items.insert(pos, item);
            }
            None => {
                l.items.remove(&pos);
            }
        })?;
        Ok(if recorded {
            name
        } else {
            "Nothing changed.".into()
        })
    }

    /// Starts dragging a room outline from `corner` (mouse down).
    pub fn begin_room(&mut self, layout: &Layout, corner: Pos) -> savegame::Result<()> {
        self.history.begin_edit(layout, "Draw room")?;
        self.drag_from = Some(corner);
        Ok(())
    }

    /// The drag moved to `corner`: the preview follows, every frame. Walls the preview drew
    /// are rebuilt from the state at the drag's start, so shrinking the outline works.
    pub fn drag_room(&mut self, start: &Layout, layout: &mut Layout, corner: Pos) {
        if let Some(from) = self.drag_from {
            layout.tiles.clone_from(&start.tiles);
            for cell in outline(from, corner) {
                layout.set_tile(cell, Tile::Wall);
            }
        }
    }

    /// Ends the drag (mouse up): one history entry, however many frames it took.
    pub fn end_room(&mut self, layout: &Layout) -> savegame::Result<bool> {
        self.drag_from = None;
        self.history.commit_edit(layout)
    }

    /// Undo: what was taken back.
    pub fn undo(&mut self, layout: &mut Layout) -> savegame::Result<String> {
        let name = self.history.undo_name().map(str::to_owned);
        Ok(match (self.history.undo(layout)?, name) {
            (true, Some(name)) => format!("Undid: {name}"),
            _ => "Nothing to undo.".into(),
        })
    }

    /// Redo: what was done again.
    pub fn redo(&mut self, layout: &mut Layout) -> savegame::Result<String> {
        let name = self.history.redo_name().map(str::to_owned);
        Ok(match (self.history.redo(layout)?, name) {
            (true, Some(name)) => format!("Redid: {name}"),
            _ => "Nothing to redo.".into(),
        })
    }

    /// The editor's panel: what undo and redo would do.
    pub fn panel(&self) -> Vec<String> {
        vec![
            "EDITOR".into(),
            format!("Undo: {}", self.history.undo_name().unwrap_or("-")),
            format!("Redo: {}", self.history.redo_name().unwrap_or("-")),
            match self.history.len() {
                1 => "1 entry".to_string(),
                n => format!("{n} entries"),
            },
        ]
    }

    /// Puts the history into a save. A manual save is the history's saved point; an
    /// autosave is not (after loading one, the editor still shows unsaved changes).
    pub fn capture(&self, snapshot: &mut Snapshot, manual: bool) -> savegame::Result<()> {
        let memento = self.history.create_memento();
        let memento = if manual {
            memento.marked_saved()
        } else {
            memento
        };
        snapshot.capture_memento(HISTORY_ID, &memento)
    }

    /// Takes the history back from a save (a fresh one when the save has none).
    pub fn restore(&mut self, snapshot: &Snapshot) -> savegame::Result<()> {
        if snapshot.contains(HISTORY_ID) {
            snapshot.restore(HISTORY_ID, &mut self.history)
        } else {
            self.history.clear();
            Ok(())
        }
    }
}
