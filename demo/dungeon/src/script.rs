//! Scripted play: one command per line, for tests and for running without a terminal.
//!
//! ```text
//! # a comment
//! east 3            # walk (north, south, east, west; also n s e w), optionally N times
//! wait 2            # let turns pass
//! quaff             # drink a potion
//! save 2            # save to slot 2
//! load 2            # load slot 2 (or A1 for autosave 1, A for the newest autosave, Q for the quicksave)
//! quicksave         # save to the quicksave slot (F5); quickload loads it (F9)
//! oldsave           # put a save from version 0.1 in slot 5 and load it (the menu's o)
//! menu              # show the load menu
//! new 7             # a new game from seed 7
//! edit              # open the editor
//! wall 5 4          # editor: a wall at x=5, y=4   (floor 5 4 takes it away)
//! put 6 4 potion    # editor: an item (potion, gold, key)   (take 6 4 removes it)
//! room 3 3 9 7      # editor: drag a room outline from one corner to the other
//! undo / redo       # editor
//! done              # leave the editor (or the replay, or the menu)
//! watch             # watch the run so far from its start
//! play 5            # watching: let 5 seconds of playback pass
//! speed 4 / pause   # watching: 4x, pause and resume
//! seek 120          # watching: jump to turn 120
//! flush             # wait until autosaves have landed
//! screen            # print the screen
//! state             # print one STATE line (for tests)
//! quit              # quit (Q): asks first when there are unsaved changes
//! yes / no          # the answer: quit without saving / keep playing (also back)
//! ```
//!
//! The end of a script quits without asking, as closing the window would.
//!
//! Every command prints what the game said, each line starting with `> `. A line that cannot
//! be understood is reported and skipped: a script never crashes the game.

use std::io::{BufRead, Write};
use std::time::Duration;

use savegame::SlotId;

use crate::app::{App, Command};
use crate::model::{Action, Dir, Item, Pos};

/// What a script line asks for: a game command, or something for the script itself.
enum Line {
    Game(Command, u32),
    Screen,
    State,
}

fn number<T: std::str::FromStr>(word: Option<&str>, what: &str) -> Result<T, String> {
    word.ok_or_else(|| format!("{what} is missing"))?
        .parse()
        .map_err(|_| format!("{what} is not a number"))
}

fn pos(words: &mut std::str::SplitWhitespace<'_>) -> Result<Pos, String> {
    Ok(Pos::new(
        number(words.next(), "x")?,
        number(words.next(), "y")?,
    ))
}

fn slot(word: Option<&str>) -> Result<SlotId, String> {
    match word {
        Some("Q" | "q") => Ok(SlotId::Quicksave),
        Some(w) if w.starts_with(['A', 'a']) => {
            Ok(SlotId::Autosave(number(Some(&w[1..]), "autosave slot")?))
        }
        w => Ok(SlotId::Numbered(number(w, "slot")?)),
    }
}

fn parse(line: &str) -> Result<Option<Line>, String> {
    let line = line.split('#').next().unwrap_or("").trim();
    let mut words = line.split_whitespace();
    let Some(word) = words.next() else {
        return Ok(None);
    };
    let times = |w: Option<&str>| w.map_or(Ok(1), |w| number(Some(w), "count"));
    let dir = match word {
        "north" | "n" => Some(Dir::North),
        "south" | "s" => Some(Dir::South),
        "east" | "e" => Some(Dir::East),
        "west" | "w" => Some(Dir::West),
        _ => None,
    };
    if let Some(dir) = dir {
        return Ok(Some(Line::Game(
            Command::Act(Action::Move(dir)),
            times(words.next())?,
        )));
    }
    let command = match word {
        "wait" => {
            return Ok(Some(Line::Game(
                Command::Act(Action::Wait),
                times(words.next())?,
            )));
        }
        "quaff" => Command::Act(Action::Quaff),
        "save" => Command::Save(number(words.next(), "slot")?),
        "load" => match words.next() {
            Some("A" | "a") => Command::LoadNewestAutosave,
            w => Command::Load(slot(w)?),
        },
        "quicksave" => Command::Quicksave,
        "oldsave" => Command::OldSave,
        "quickload" => Command::Load(SlotId::Quicksave),
        "menu" => Command::Menu,
        "new" => Command::New(number(words.next(), "seed")?),
        "edit" => Command::Edit,
        "done" | "back" => Command::Done,
        "wall" => Command::Wall(pos(&mut words)?),
        "floor" => Command::Floor(pos(&mut words)?),
        "put" => {
            let at = pos(&mut words)?;
            let name = words.next().ok_or("which item?")?;
            Command::Put(
                at,
                Item::from_name(name).ok_or_else(|| format!("no item {name:?}"))?,
            )
        }
        "take" => Command::Take(pos(&mut words)?),
        "room" => Command::Room(pos(&mut words)?, pos(&mut words)?),
        "undo" => Command::Undo,
        "redo" => Command::Redo,
        "watch" => Command::Watch,
        "play" => Command::Play(Duration::from_secs_f64(number(words.next(), "seconds")?)),
        "pause" => Command::Pause,
        "speed" => Command::Speed(number(words.next(), "speed")?),
        "seek" => Command::Seek(number(words.next(), "turn")?),
        "flush" => Command::Flush,
        "quit" => Command::Quit,
        "yes" => Command::QuitNow,
        "no" => Command::Leave,
        "screen" => return Ok(Some(Line::Screen)),
        "state" => return Ok(Some(Line::State)),
        other => return Err(format!("unknown command {other:?}")),
    };
    Ok(Some(Line::Game(command, 1)))
}

/// Runs a script against `app`, writing what happens to `out`. Stops when the game quits, or
/// at the end of the script (which quits without asking, so the recording and autosaves are
/// finished).
///
/// # Errors
/// Only when `out` cannot be written.
pub fn run(app: &mut App, script: impl BufRead, out: &mut impl Write) -> std::io::Result<()> {
    for (n, line) in script.lines().enumerate() {
        let line = line?;
        match parse(&line) {
            Ok(None) => continue,
            Err(e) => writeln!(out, "> line {}: {e}", n + 1)?,
            Ok(Some(Line::Screen)) => {
                for row in app.screen() {
                    writeln!(out, "{row}")?;
                }
                // The screen showed the game's messages; they are not printed again.
                app.game.messages.clear();
            }
            Ok(Some(Line::State)) => writeln!(out, "{}", app.state_line())?,
            Ok(Some(Line::Game(command, times))) => {
                for _ in 0..times {
                    // Notes were printed as they came; a Play keeps the last key's (for a
                    // terminal's screen), which a script must not print twice.
                    app.notes.clear();
                    app.handle(command.clone());
                    for note in &app.notes {
                        writeln!(out, "> {note}")?;
                    }
                }
                for message in app.game.messages.drain(..) {
                    writeln!(out, "> {message}")?;
                }
                if let (Command::Menu, crate::app::Mode::Menu(lines)) = (&command, &app.mode) {
                    for l in lines {
                        writeln!(out, "{l}")?;
                    }
                }
                for l in app.question().into_iter().flatten() {
                    writeln!(out, "? {l}")?;
                }
            }
        }
        if app.quit {
            return Ok(());
        }
    }
    app.handle(Command::QuitNow);
    Ok(())
}
