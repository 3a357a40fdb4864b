//! The game as a program: modes (playing, editing, watching a replay), commands from the
//! keyboard or a script, and the screen.

use std::path::PathBuf;
use std::time::Duration;

use savegame::replay::{Player as ReplayPlayer, duration_of};
use savegame::{Originator, SlotId, Snapshot};

use crate::editor::{Editor, outline};
use crate::model::{Action, Dir, Game, Item, Layout, Pos, Tile};
use crate::run::{Input, Run};
use crate::saves::{self, GameKey, Saves};
use crate::ui;

/// One thing the player (or a script) does.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Play a turn.
    Act(Action),
    /// Save to a numbered slot.
    Save(u32),
    /// Save to the quicksave slot (F5).
    Quicksave,
    /// Load a slot (the quicksave's is F9).
    Load(SlotId),
    /// Load the autosave written last.
    LoadNewestAutosave,
    /// Put a save from version 0.1 of the game into its slot, and load it: a migration.
    OldSave,
    /// Open the load menu.
    Menu,
    /// A new game from this seed (a new run).
    New(u64),
    /// Open the editor.
    Edit,
    /// Leave the editor, the replay or the menu (as [`Leave`](Self::Leave)).
    Done,
    /// Editor: move the cursor here.
    Cursor(Pos),
    /// Editor: a wall here.
    Wall(Pos),
    /// Editor: floor here.
    Floor(Pos),
    /// Editor: this item here.
    Put(Pos, Item),
    /// Editor: take the item here away.
    Take(Pos),
    /// A room outline dragged from one corner to another, one cell per frame.
    Room(Pos, Pos),
    /// Editor: undo the last change.
    Undo,
    /// Editor: redo what was undone.
    Redo,
    /// Watch the run so far from its start.
    Watch,
    /// Let this much playback time pass (a terminal's frame, or a script's `play`).
    Play(Duration),
    /// Watching: pause, or go on.
    Pause,
    /// Watching: play at this speed (1.0 is 4 frames a second).
    Speed(f64),
    /// Watching: jump to this frame of the run.
    Seek(u64),
    /// Back: leave the editor, the replay, the menu or the quit question (Esc).
    Leave,
    /// Wait for autosaves still being written.
    Flush,
    /// Quit (Q): at once when everything is saved, otherwise ask first.
    Quit,
    /// Ask whether to quit, saved or not (Esc in play: Esc means back everywhere, and one
    /// press too many must not end the game).
    AskQuit,
    /// Quit now without saving: the answer yes, or the end of a script.
    QuitNow,
    /// Quicksave, then quit (F5 at the quit question).
    SaveAndQuit,
}

/// Watching a replay.
pub struct Watching {
    /// The replay of the run.
    pub player: ReplayPlayer,
    /// The game as the replay has brought it to its position.
    pub game: Game,
    /// Playback is paused.
    pub paused: bool,
}

/// What the screen shows.
pub enum Mode {
    /// Playing.
    Play,
    /// The editor.
    Edit {
        /// Where the next edit goes.
        cursor: Pos,
        /// The layout when a room drag began, while it lasts.
        drag_start: Option<Layout>,
    },
    /// The load menu, its lines.
    Menu(Vec<String>),
    /// Watching the run so far.
    Watch(Box<Watching>),
    /// The question "quit?", over the game.
    Quitting,
}

/// The program's state.
pub struct App {
    /// The game in play.
    pub game: Game,
    /// Its saves.
    pub saves: Saves,
    /// The editor and its history.
    pub editor: Editor,
    /// What the screen shows.
    pub mode: Mode,
    /// Changes since the last save or load.
    pub dirty: bool,
    /// The editor changed the level since it was opened.
    edited: bool,
    /// The game has quit: the loop that drives it stops.
    pub quit: bool,
    /// The run being recorded (`None` once the game has quit).
    run: Option<Run>,
    seed: u64,
    /// What the last command had to say.
    pub notes: Vec<String>,
}

impl App {
    /// A new game from `seed`, with its saves in `dir` (or the platform's data folder),
    /// sealed with `key`.
    pub fn new(
        dir: Option<PathBuf>,
        seed: u64,
        autosave_every: u64,
        key: &GameKey,
    ) -> savegame::Result<App> {
        let saves = Saves::open(dir, autosave_every, key)?;
        let mut app = App {
            game: Game::new(seed),
            saves,
            editor: Editor::new()?,
            mode: Mode::Play,
            dirty: false,
            edited: false,
            quit: false,
            run: None,
            seed,
            notes: Vec::new(),
        };
        app.start_recording()?;
        Ok(app)
    }

    /// Starts recording a run from the game as it is now (a new game).
    fn start_recording(&mut self) -> savegame::Result<()> {
        if let Some(old) = self.run.take() {
            old.finish()?;
        }
        self.run = Some(Run::start(&self.saves, &self.game, self.seed)?);
        Ok(())
    }

    /// Before something changes the game: the recording's keyframe, if one is due.
    fn before_frame(&mut self) -> savegame::Result<()> {
        match &mut self.run {
            Some(run) => run.keyframe_if_due(&self.game),
            None => Ok(()),
        }
    }

    /// After it changed the game: the frame that says how.
    fn record(&mut self, input: &Input) -> savegame::Result<()> {
        match &mut self.run {
            Some(run) => run.record(input, &self.game),
            None => Ok(()),
        }
    }

    fn snapshot(&self, manual: bool) -> savegame::Result<Snapshot> {
        let mut s = self.saves.snapshot(&self.game)?;
        self.editor.capture(&mut s, manual)?;
        Ok(s)
    }

    /// Plays one turn, recording it, then lets the autosave act.
    fn turn(&mut self, action: Action) -> savegame::Result<()> {
        if self.game.is_dead() {
            self.note("You are dead. Load a save, or start a new game.");
            return Ok(());
        }
        self.before_frame()?;
        self.game.step(action);
        self.record(&Input::Turn(action))?;
        self.dirty = true;
        self.saves.poll();
        if self.saves.autosave_due(self.game.clock.turn) {
            let autosave = self.snapshot(false)?;
            self.saves.autosave(self.game.clock.turn, autosave);
        }
        Ok(())
    }

    /// Does one command; what it had to say is in [`notes`](Self::notes).
    pub fn handle(&mut self, command: Command) {
        // A terminal plays a replay with a Play every frame: what the last key said stays
        // on the screen until the next key, unless playing has something to say itself.
        if !matches!(command, Command::Play(_)) {
            self.notes.clear();
        }
        if let Err(e) = self.run(command) {
            self.notes.push(format!("Error: {e}"));
        }
        if let Some(landed) = self.saves.landed() {
            self.notes.push(landed);
        }
    }

    fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    fn run(&mut self, command: Command) -> savegame::Result<()> {
        self.saves.poll();
        match command {
            Command::Act(action) => {
                if !matches!(self.mode, Mode::Play) {
                    self.note("Leave this screen first.");
                } else {
                    self.turn(action)?;
                }
            }
            Command::Save(_) | Command::Quicksave => {
                let slot = match command {
                    Command::Save(n) => SlotId::Numbered(n),
                    _ => SlotId::Quicksave,
                };
                let snapshot = self.snapshot(true)?;
                match self.saves.save(slot, &snapshot) {
                    Ok(message) => {
                        self.editor.history.mark_saved();
                        self.dirty = false;
                        self.note(message);
                    }
                    Err(message) => self.note(message),
                }
            }
            Command::LoadNewestAutosave => match self.saves.newest_autosave() {
                Some(slot) => self.run(Command::Load(slot))?,
                None => self.note(format!(
                    "No autosave yet: one is made every {} turns.",
                    self.saves.autosave_every
                )),
            },
            Command::OldSave => match self.saves.place_old_save() {
                Ok(message) => {
                    self.run(Command::Load(saves::OLD_SAVE_SLOT))?;
                    self.notes.insert(0, message);
                }
                Err(message) => self.note(message),
            },
            Command::Load(slot) => match self.saves.load(slot) {
                Ok((game, snapshot, message)) => {
                    // The run goes on: the load is one of its frames.
                    self.before_frame()?;
                    self.game = game;
                    self.record(&Input::loaded(saves::slot_name(slot), &self.game))?;
                    self.editor.restore(&snapshot)?;
                    self.dirty = false;
                    self.mode = Mode::Play;
                    self.note(message);
                }
                Err(message) => self.note(message),
            },
            Command::Menu => self.mode = Mode::Menu(self.saves.menu()),
            Command::New(seed) => {
                self.seed = seed;
                self.game = Game::new(seed);
                self.editor = Editor::new()?;
                self.saves.slot = None;
                self.dirty = false;
                self.mode = Mode::Play;
                self.start_recording()?;
                self.note(format!("A new game, seed {seed}."));
            }
            Command::Edit => {
                // The keyframe before the edits, should one be due: the edits are one frame.
                self.before_frame()?;
                self.mode = Mode::Edit {
                    cursor: self.game.player.pos,
                    drag_start: None,
                };
                self.note("Editor: walls, items, rooms; undo and redo.");
            }
            Command::Done | Command::Leave => self.leave()?,
            Command::Cursor(pos) => {
                if let Mode::Edit { cursor, .. } = &mut self.mode {
                    *cursor = pos;
                }
            }
            Command::Wall(pos) | Command::Floor(pos) => {
                let tile = if matches!(command, Command::Wall(_)) {
                    Tile::Wall
                } else {
                    Tile::Floor
                };
                self.in_editor(pos, |editor, layout| editor.set(layout, pos, tile))?;
            }
            Command::Put(pos, item) => {
                self.in_editor(pos, |editor, layout| editor.put(layout, pos, Some(item)))?;
            }
            Command::Take(pos) => {
                self.in_editor(pos, |editor, layout| editor.put(layout, pos, None))?
            }
            Command::Room(from, to) => self.room(from, to)?,
            Command::Undo | Command::Redo => {
                if !matches!(self.mode, Mode::Edit { .. }) {
                    self.note("Undo and redo work in the editor.");
                    return Ok(());
                }
                let layout = &mut self.game.level.layout;
                let message = if command == Command::Undo {
                    self.editor.undo(layout)?
                } else {
                    self.editor.redo(layout)?
                };
                self.dirty = self.dirty || self.editor.history.is_dirty();
                self.edited = true;
                self.note(message);
            }
            Command::Watch => self.watch()?,
            Command::Play(elapsed) => {
                if let Mode::Watch(w) = &mut self.mode
                    && !w.paused
                    && !w.player.is_finished()
                {
                    w.player.advance(&mut w.game, elapsed)?;
                    if w.player.is_finished() {
                        let sync = match w.player.first_desync() {
                            Some(_) => "with a DESYNC",
                            None => "in sync all the way",
                        };
                        let end = format!(
                            "The end of the replay: the game at turn {}, {sync}.",
                            w.game.clock.turn
                        );
                        self.note(end);
                    }
                }
            }
            Command::Pause => {
                if let Mode::Watch(w) = &mut self.mode {
                    w.paused = !w.paused;
                }
            }
            Command::Speed(speed) => {
                if let Mode::Watch(w) = &mut self.mode {
                    w.player.set_speed(speed)?;
                }
            }
            Command::Seek(turn) => {
                if let Mode::Watch(w) = &mut self.mode {
                    let turn = turn.min(w.player.frame_count());
                    w.player.seek(&mut w.game, turn)?;
                    let at = |frame| ui::clock(duration_of(frame, w.player.frame_rate()));
                    let message = format!(
                        "Seek: {} of {}, the game at turn {}.",
                        at(turn),
                        at(w.player.frame_count()),
                        w.game.clock.turn
                    );
                    self.note(message);
                }
            }
            Command::Flush => self.saves.flush(),
            Command::Quit | Command::AskQuit => {
                if command == Command::Quit && !self.dirty {
                    return self.run(Command::QuitNow);
                }
                // Whatever was open is closed properly first (an edit is recorded).
                self.leave()?;
                self.mode = Mode::Quitting;
            }
            Command::SaveAndQuit => {
                self.run(Command::Quicksave)?;
                if self.dirty {
                    // The save failed (its note says why): the game stays open.
                    self.mode = Mode::Play;
                } else {
                    self.run(Command::QuitNow)?;
                }
            }
            Command::QuitNow => {
                self.mode = Mode::Play;
                self.saves.flush();
                if let Some(run) = self.run.take() {
                    let frames = run.frames();
                    let path = run.finish()?;
                    self.note(format!(
                        "Goodbye. The recording of this run ({frames} frames) is complete: {}",
                        path.display()
                    ));
                }
                self.quit = true;
            }
        }
        Ok(())
    }

    fn leave(&mut self) -> savegame::Result<()> {
        match &self.mode {
            Mode::Watch(_) | Mode::Quitting => self.note("Back to the game."),
            Mode::Edit { drag_start, .. } => {
                if drag_start.is_some() {
                    // A drag cut short: nothing recorded, the preview is taken back.
                    self.editor
                        .history
                        .cancel_edit(&mut self.game.level.layout)?;
                    self.editor.drag_from = None;
                }
                if self.edited {
                    // The run goes on: what the editor made of the level is one frame.
                    self.edited = false;
                    self.record(&Input::Edited(self.game.level.layout.create_memento()))?;
                }
            }
            _ => {}
        }
        self.mode = Mode::Play;
        Ok(())
    }

    fn in_editor(
        &mut self,
        pos: Pos,
        f: impl FnOnce(&mut Editor, &mut Layout) -> savegame::Result<String>,
    ) -> savegame::Result<()> {
        let Mode::Edit { cursor, .. } = &mut self.mode else {
            self.note("Open the editor first.");
            return Ok(());
        };
        *cursor = pos;
        let message = f(&mut self.editor, &mut self.game.level.layout)?;
        self.dirty = true;
        self.edited = true;
        self.note(message);
        Ok(())
    }

    /// A room drag: mouse down at `from`, the mouse moves one cell per frame to `to` (the
    /// preview follows every frame), mouse up. One entry in the history.
    fn room(&mut self, from: Pos, to: Pos) -> savegame::Result<()> {
        if !matches!(self.mode, Mode::Edit { .. }) {
            self.note("Open the editor first.");
            return Ok(());
        }
        self.begin_room(from)?;
        let mut corner = from;
        while corner != to {
            corner.x += (to.x - corner.x).signum();
            corner.y += (to.y - corner.y).signum();
            self.drag_room(corner);
        }
        self.end_room()
    }

    /// Mouse down: a room drag starts.
    pub fn begin_room(&mut self, corner: Pos) -> savegame::Result<()> {
        self.editor.begin_room(&self.game.level.layout, corner)?;
        if let Mode::Edit { drag_start, cursor } = &mut self.mode {
            *drag_start = Some(self.game.level.layout.clone());
            *cursor = corner;
        }
        Ok(())
    }

    /// The mouse moved: the preview follows.
    pub fn drag_room(&mut self, corner: Pos) {
        if let Mode::Edit {
            drag_start: Some(start),
            cursor,
        } = &mut self.mode
        {
            *cursor = corner;
            self.editor
                .drag_room(start, &mut self.game.level.layout, corner);
        }
    }

    /// Mouse up: the drag is one entry.
    pub fn end_room(&mut self) -> savegame::Result<()> {
        if let Mode::Edit { drag_start, .. } = &mut self.mode {
            *drag_start = None;
        }
        let recorded = self.editor.end_room(&self.game.level.layout)?;
        self.dirty |= recorded;
        self.edited |= recorded;
        self.note(if recorded {
            "Draw room"
        } else {
            "The room changed nothing."
        });
        Ok(())
    }

    /// Watches the run so far from its start; the recording goes on afterwards.
    fn watch(&mut self) -> savegame::Result<()> {
        let Some(run) = &mut self.run else {
            return Ok(());
        };
        let Some((player, game)) = run.watch(&self.saves)? else {
            self.note("Nothing to watch yet: this run has no turns.");
            return Ok(());
        };
        self.note(format!(
            "Watching the run so far: {} ({} frames).",
            ui::clock(player.duration()),
            player.frame_count()
        ));
        self.mode = Mode::Watch(Box::new(Watching {
            player,
            game,
            paused: false,
        }));
        Ok(())
    }

    /// The status line: slot, saved or not, autosave.
    pub fn status(&self) -> String {
        let slot = match self.saves.slot {
            Some(SlotId::Numbered(n)) => format!("slot {n}"),
            Some(other) => format!("{other}"),
            None => "no slot".into(),
        };
        let saved = if self.dirty {
            "unsaved changes"
        } else {
            "saved"
        };
        let backup = if self.saves.from_backup {
            " (from a backup)"
        } else {
            ""
        };
        format!("{slot}{backup} | {saved} | {}", self.saves.autosave_note)
    }

    /// The quit question and its answers, while it is asked.
    pub fn question(&self) -> Option<[String; 2]> {
        if !matches!(self.mode, Mode::Quitting) {
            return None;
        }
        Some(if self.dirty {
            [
                "Quit with unsaved changes? What you did since your last save is lost.".into(),
                "y: quit without saving  F5: quicksave, then quit  n or Esc: keep playing".into(),
            ]
        } else {
            [
                "Quit the game? Everything is saved.".into(),
                "y: quit  n or Esc: keep playing".into(),
            ]
        })
    }

    /// The screen for the current mode.
    pub fn screen(&self) -> Vec<String> {
        match &self.mode {
            Mode::Quitting => {
                let mut out = self.play_screen();
                out.extend(self.question().into_iter().flatten());
                out
            }
            Mode::Play => self.play_screen(),
            Mode::Edit { cursor, drag_start } => {
                let mut overlay = vec![(*cursor, 'X')];
                if let (Some(from), Some(_)) = (self.editor.drag_from, drag_start) {
                    overlay.extend(outline(from, *cursor).into_iter().map(|p| (p, '+')));
                    overlay.push((*cursor, 'X'));
                }
                let mut side = self.editor.panel();
                side.extend([
                    "w: wall/floor  i: item".into(),
                    "x: take  space: room".into(),
                    "u: undo  y: redo".into(),
                    "Esc: back".into(),
                ]);
                ui::screen(
                    &self.game,
                    "EDITOR",
                    &overlay,
                    &side,
                    &[ui::EDITOR_LEGEND],
                    &self.status(),
                )
            }
            Mode::Menu(lines) => {
                let mut out = vec!["== LOAD A GAME ==".to_string()];
                out.extend(lines.iter().cloned());
                out.push("1-9: load that slot  a: the newest autosave  q: the quicksave".into());
                out.push("o: put a save from version 0.1 in slot 5 and load it  Esc: back".into());
                out
            }
            Mode::Watch(w) => {
                let p = &w.player;
                let at = |frame: u64| ui::clock(duration_of(frame, p.frame_rate()));
                // The turn is the replayed game's own, in the panel above: the replay's
                // position is shown as time, so the screen has one turn counter.
                let side = vec![
                    if w.paused {
                        "REPLAY  paused".into()
                    } else {
                        format!("REPLAY  {}x", p.speed())
                    },
                    format!(
                        "{} {}/{}",
                        ui::bar(p.position(), p.frame_count()),
                        at(p.position()),
                        at(p.frame_count())
                    ),
                    match p.first_desync() {
                        Some(d) => format!("DESYNC at {}", at(d.frame)),
                        None => "in sync".into(),
                    },
                    "space: pause  f: 4x".into(),
                    "<- ->: seek  Home End".into(),
                    "Esc: back".into(),
                ];
                ui::screen(&w.game, "REPLAY", &[], &side, &[], &self.status())
            }
        }
    }

    /// The game, its panel of keys, the status line.
    fn play_screen(&self) -> Vec<String> {
        ui::screen(
            &self.game,
            "DUNGEON",
            &[],
            &[
                "arrows: walk  .: wait".into(),
                "p: potion  s1-9: save".into(),
                "F5: quicksave  F9: load it".into(),
                "L: load  e: editor".into(),
                "r: replay  Q: quit".into(),
            ],
            &[],
            &self.status(),
        )
    }

    /// One line of state for scripts and tests.
    pub fn state_line(&self) -> String {
        let g = &self.game;
        let inventory: Vec<String> = g
            .player
            .inventory
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        let walls = g
            .level
            .layout
            .tiles
            .iter()
            .filter(|t| **t == Tile::Wall)
            .count();
        let watch = match &self.mode {
            Mode::Watch(w) => format!(
                " watch={}/{} watch_hash={} desync={}",
                w.player.position(),
                w.player.frame_count(),
                w.game.state_hash(),
                w.player
                    .first_desync()
                    .map_or("none".into(), |d| d.frame.to_string())
            ),
            _ => String::new(),
        };
        format!(
            "STATE turn={} hp={} max_hp={} pos={},{} inventory={} walls={walls} items={} monsters={} \
             hash={} slot={} dirty={} undo={} redo={}{watch}",
            g.clock.turn,
            g.player.hp,
            g.player.max_hp,
            g.player.pos.x,
            g.player.pos.y,
            if inventory.is_empty() {
                "-".into()
            } else {
                inventory.join(",")
            },
            g.level.layout.items.len(),
            g.level.monsters.len(),
            g.state_hash(),
            self.saves.slot.map_or("-".into(), |s| s.to_string()),
            self.dirty,
            self.editor
                .history
                .undo_name()
                .unwrap_or("-")
                .replace(' ', "_"),
            self.editor
                .history
                .redo_name()
                .unwrap_or("-")
                .replace(' ', "_"),
        )
    }

    /// The moves of the arrow keys.
    pub fn walk(dir: Dir) -> Command {
        Command::Act(Action::Move(dir))
    }
}

#[cfg(test)]
mod tests;
