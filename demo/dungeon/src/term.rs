//! Playing in a terminal: raw mode, an alternate screen, keys to commands, a redraw per frame.

use std::io::{Write, stdout};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, execute, queue, style, terminal};
use savegame::SlotId;

use crate::app::{App, Command, Mode};
use crate::model::{Action, Dir, Item, Pos, Tile};

/// Keys that start a two-key command.
#[derive(Clone, Copy, PartialEq)]
enum Pending {
    None,
    Save,
}

/// Puts the terminal back however the game ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(stdout(), terminal::LeaveAlternateScreen, cursor::Show);
    }
}

fn draw(app: &App, pending: Pending) -> std::io::Result<()> {
    let mut out = stdout();
    queue!(
        out,
        terminal::Clear(terminal::ClearType::All),
        cursor::MoveTo(0, 0)
    )?;
    let mut lines = app.screen();
    lines.extend(app.notes.iter().map(|n| format!("* {n}")));
    if pending == Pending::Save {
        lines.push("Save to which slot? 1-9 (Esc: cancel)".into());
    }
    for (i, line) in lines.iter().enumerate() {
        queue!(out, cursor::MoveTo(0, i as u16), style::Print(line))?;
    }
    out.flush()
}

fn direction(code: KeyCode) -> Option<Dir> {
    match code {
        KeyCode::Up | KeyCode::Char('k') => Some(Dir::North),
        KeyCode::Down | KeyCode::Char('j') => Some(Dir::South),
        KeyCode::Right | KeyCode::Char('l') => Some(Dir::East),
        KeyCode::Left | KeyCode::Char('h') => Some(Dir::West),
        _ => None,
    }
}

fn moved(pos: Pos, dir: Dir) -> Pos {
    match dir {
        Dir::North => Pos::new(pos.x, pos.y - 1),
        Dir::South => Pos::new(pos.x, pos.y + 1),
        Dir::East => Pos::new(pos.x + 1, pos.y),
        Dir::West => Pos::new(pos.x - 1, pos.y),
    }
}

/// What a key does in the current mode.
fn command(app: &mut App, key: KeyEvent, pending: &mut Pending) -> Option<Command> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if *pending == Pending::Save {
        *pending = Pending::None;
        return match key.code {
            KeyCode::Char(c @ '1'..='9') => Some(Command::Save(c.to_digit(10).unwrap_or(1))),
            _ => None,
        };
    }
    match &app.mode {
        Mode::Play => match key.code {
            KeyCode::Char('Q') => Some(Command::Quit),
            KeyCode::Esc => Some(Command::AskQuit),
            KeyCode::Char('.') => Some(Command::Act(Action::Wait)),
            KeyCode::Char('p') => Some(Command::Act(Action::Quaff)),
            KeyCode::Char('s') => {
                *pending = Pending::Save;
                None
            }
            KeyCode::F(5) => Some(Command::Quicksave),
            KeyCode::F(9) => Some(Command::Load(SlotId::Quicksave)),
            KeyCode::Char('L') | KeyCode::Char('o') => Some(Command::Menu),
            KeyCode::Char('e') => Some(Command::Edit),
            KeyCode::Char('r') => Some(Command::Watch),
            code => direction(code).map(App::walk),
        },
        Mode::Quitting => match key.code {
            KeyCode::Char('y' | 'Y') => Some(Command::QuitNow),
            KeyCode::F(5) => Some(Command::SaveAndQuit),
            _ => Some(Command::Leave),
        },
        Mode::Menu(_) => match key.code {
            KeyCode::Char(c @ '1'..='9') => {
                Some(Command::Load(SlotId::Numbered(c.to_digit(10).unwrap_or(1))))
            }
            KeyCode::Char('a') => Some(Command::LoadNewestAutosave),
            KeyCode::Char('q') => Some(Command::Load(SlotId::Quicksave)),
            KeyCode::Char('o') => Some(Command::OldSave),
            _ => Some(Command::Leave),
        },
        Mode::Edit { cursor, drag_start } => {
            let (cursor, dragging) = (*cursor, drag_start.is_some());
            match key.code {
                KeyCode::Esc | KeyCode::Char('e') => Some(Command::Done),
                KeyCode::Char('u') => Some(Command::Undo),
                KeyCode::Char('z') if ctrl => Some(Command::Undo),
                KeyCode::Char('y') => Some(Command::Redo),
                KeyCode::Char('w') => Some(if app.game.level.tile(cursor) == Tile::Wall {
                    Command::Floor(cursor)
                } else {
                    Command::Wall(cursor)
                }),
                KeyCode::Char('i') => {
                    let next = match app.game.level.layout.items.get(&cursor) {
                        Some(Item::Potion) => Item::Gold,
                        Some(Item::Gold) => Item::Key,
                        _ => Item::Potion,
                    };
                    Some(Command::Put(cursor, next))
                }
                KeyCode::Char('x') => Some(Command::Take(cursor)),
                KeyCode::Char(' ') => {
                    let result = if dragging {
                        app.end_room()
                    } else {
                        app.begin_room(cursor)
                    };
                    if let Err(e) = result {
                        app.notes.push(format!("Error: {e}"));
                    }
                    None
                }
                code => direction(code).map(|d| {
                    let to = moved(cursor, d);
                    if dragging {
                        app.drag_room(to);
                    }
                    Command::Cursor(to)
                }),
            }
        }
        Mode::Watch(w) => match key.code {
            KeyCode::Char(' ') => Some(Command::Pause),
            KeyCode::Char('f') => Some(Command::Speed(if w.player.speed() > 1.0 {
                1.0
            } else {
                4.0
            })),
            KeyCode::Left => Some(Command::Seek(w.player.position().saturating_sub(10))),
            KeyCode::Right => Some(Command::Seek(w.player.position() + 10)),
            KeyCode::Home => Some(Command::Seek(0)),
            KeyCode::End => Some(Command::Seek(w.player.frame_count())),
            _ => Some(Command::Leave),
        },
    }
}

/// Plays in the terminal until the player quits.
///
/// # Errors
/// When the terminal cannot be driven.
pub fn run(app: &mut App) -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    let _restore = Restore;
    execute!(stdout(), terminal::EnterAlternateScreen, cursor::Hide)?;
    let mut pending = Pending::None;
    let mut last = Instant::now();
    while !app.quit {
        draw(app, pending)?;
        if event::poll(Duration::from_millis(50))? {
            if let Event::Key(key) = event::read()?
                && key.kind == KeyEventKind::Press
                && let Some(cmd) = command(app, key, &mut pending)
            {
                app.handle(cmd);
            }
        } else {
            app.saves.poll();
        }
        // Playback runs on real time: the replay says which turns are due.
        let now = Instant::now();
        if matches!(app.mode, Mode::Watch(_)) {
            app.handle(Command::Play(now - last));
        }
        last = now;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saves::GameKey;

    fn press(app: &mut App, code: KeyCode) -> Option<Command> {
        let mut pending = Pending::None;
        command(app, KeyEvent::new(code, KeyModifiers::NONE), &mut pending)
    }

    #[test]
    fn esc_asks_before_quitting_in_play_and_means_back_everywhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let mut app =
            App::new(Some(dir.path().to_path_buf()), 1, 25, &GameKey::built_in()).unwrap();
        assert_eq!(press(&mut app, KeyCode::Esc), Some(Command::AskQuit));
        assert_eq!(press(&mut app, KeyCode::Char('Q')), Some(Command::Quit));

        app.handle(Command::AskQuit);
        assert_eq!(press(&mut app, KeyCode::Esc), Some(Command::Leave));
        assert_eq!(press(&mut app, KeyCode::Char('n')), Some(Command::Leave));
        assert_eq!(press(&mut app, KeyCode::Char('y')), Some(Command::QuitNow));
        assert_eq!(press(&mut app, KeyCode::F(5)), Some(Command::SaveAndQuit));

        app.handle(Command::Menu);
        assert_eq!(press(&mut app, KeyCode::Esc), Some(Command::Leave));
        app.handle(Command::Edit);
        assert_eq!(press(&mut app, KeyCode::Esc), Some(Command::Done));
        app.handle(Command::Leave);
        app.handle(App::walk(Dir::East));
        app.handle(Command::Watch);
        assert!(matches!(app.mode, Mode::Watch(_)), "{:?}", app.notes);
        assert_eq!(press(&mut app, KeyCode::Esc), Some(Command::Leave));
        // A pending save is cancelled by Esc.
        app.handle(Command::Leave);
        let mut pending = Pending::Save;
        let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
        assert_eq!(command(&mut app, esc, &mut pending), None);
        assert!(pending == Pending::None);
        assert!(!app.quit);
    }

    #[test]
    fn f5_quicksaves_f9_quickloads_and_the_menus_a_takes_the_newest_autosave() {
        let dir = tempfile::tempdir().unwrap();
        let mut app =
            App::new(Some(dir.path().to_path_buf()), 1, 25, &GameKey::built_in()).unwrap();
        assert_eq!(press(&mut app, KeyCode::F(5)), Some(Command::Quicksave));
        assert_eq!(
            press(&mut app, KeyCode::F(9)),
            Some(Command::Load(SlotId::Quicksave))
        );
        app.handle(Command::Menu);
        assert_eq!(
            press(&mut app, KeyCode::Char('a')),
            Some(Command::LoadNewestAutosave)
        );
        assert_eq!(
            press(&mut app, KeyCode::Char('q')),
            Some(Command::Load(SlotId::Quicksave))
        );
    }
}
