//! A small terminal dungeon that saves with `savegame`.
//!
//! ```text
//! cargo run -p dungeon                        # in a terminal: play; otherwise a scripted demo
//! cargo run -p dungeon -- --save-dir /tmp/d   # keep saves there instead of the data folder
//! cargo run -p dungeon -- --script play.txt   # drive it with a script (- for stdin)
//! ```
//!
//! Walk with the arrow keys; `s` then 1-9 saves, `L` opens the load menu, `e` the editor
//! (walls, items, rooms, undo and redo), `r` watches the run so far, `Q` quits. Autosaves
//! happen every 25 turns in the background.

use std::io::{BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// What runs when no terminal is attached and no script is given: a short game, shown.
const DEMO: &str = "\
screen
south 2
east 6
save 1
east 2
menu
done
edit
room 14 3 20 8
put 17 5 potion
screen
undo
redo
done
watch
seek 5
screen
play 30
state
done
state
quit
";

struct Options {
    save_dir: Option<PathBuf>,
    script: Option<String>,
    seed: u64,
    autosave_every: u64,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        save_dir: None,
        script: None,
        seed: 1,
        autosave_every: 25,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--save-dir" => o.save_dir = Some(PathBuf::from(value("--save-dir")?)),
            "--script" => o.script = Some(value("--script")?),
            "--seed" => {
                o.seed = value("--seed")?
                    .parse()
                    .map_err(|_| "--seed takes a number")?
            }
            "--autosave" => {
                o.autosave_every = value("--autosave")?
                    .parse()
                    .map_err(|_| "--autosave takes a number of turns")?;
            }
            "--help" | "-h" => {
                return Err("usage: dungeon [--save-dir DIR] [--script FILE|-] [--seed N] [--autosave TURNS]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut app = match dungeon::app::App::new(o.save_dir, o.seed, o.autosave_every) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("dungeon: cannot open the saves: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let result = match o.script.as_deref() {
        Some("-") => dungeon::script::run(&mut app, std::io::stdin().lock(), &mut out),
        Some(path) => match std::fs::File::open(path) {
            Ok(file) => dungeon::script::run(&mut app, BufReader::new(file), &mut out),
            Err(e) => {
                eprintln!("dungeon: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
        None if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() => {
            drop(out);
            dungeon::term::run(&mut app)
        }
        None => {
            let _ = writeln!(
                out,
                "(No terminal attached: a scripted demonstration. Saves go to {}.)",
                app.saves.folder().display()
            );
            dungeon::script::run(&mut app, DEMO.as_bytes(), &mut out)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dungeon: {e}");
            ExitCode::FAILURE
        }
    }
}
