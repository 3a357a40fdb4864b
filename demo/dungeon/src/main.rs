//! A small terminal dungeon that saves with `savegame`.
//!
//! ```text
//! cargo run -p dungeon                        # in a terminal: play; otherwise a scripted demo
//! cargo run -p dungeon -- --save-dir /tmp/d   # keep saves there instead of the data folder
//! cargo run -p dungeon -- --script play.txt   # drive it with a script (- for stdin)
//! cargo run -p dungeon -- --print-key         # the save key, for the savegame CLI (dev builds)
//! ```
//!
//! Walk with the arrow keys; `s` then 1-9 saves, `L` opens the load menu, `e` the editor
//! (walls, items, rooms, undo and redo), `r` watches the run so far, `Q` quits. Autosaves
//! happen every 25 turns in the background.

use std::io::{BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use dungeon::saves::{DEV_BUILD, GameKey, KEY_ENV};

const USAGE: &str = "\
usage: dungeon [--save-dir DIR] [--script FILE|-] [--seed N] [--autosave TURNS]
       dungeon --print-key

  --save-dir DIR    keep the saves in DIR [default: the platform's data folder]
  --script FILE     play the commands in FILE (- reads stdin); see src/script.rs
  --seed N          the new game's seed [default: 1]
  --autosave TURNS  autosave every TURNS turns (0: never) [default: 25]
  --print-key       print the key the saves are sealed with, as 64 hex digits, the form
                    the savegame CLI reads from SAVEGAME_KEY or --key-file (dev builds)

Keys: the saves are sealed with the game's built-in key. A dev build (not --release) takes
the key from SAVEGAME_KEY instead when it is set, as the savegame CLI does.";

/// What runs when no terminal is attached and no script is given: a short game that shows
/// every feature the README promises, in a fresh folder of its own.
const DEMO: &str = "\
screen
south 2
east 6
save 1
east 2
quicksave
edit
room 14 3 20 8
put 17 5 potion
screen
undo
redo
done
south 4
east 4
wait 3
west 6
flush
load 1
oldsave
menu
done
watch
seek 12
screen
play 30
done
east
quit
yes
";

/// The scripted demonstration's folder: its own, emptied at each run, so it never touches
/// the player's saves and always starts from nothing.
fn demo_folder() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join("dungeon-demo");
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

struct Options {
    print_key: bool,
    save_dir: Option<PathBuf>,
    script: Option<String>,
    seed: u64,
    autosave_every: u64,
}

/// The options, or `None` for `--help`.
fn options() -> Result<Option<Options>, String> {
    let mut o = Options {
        print_key: false,
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
            "--print-key" => o.print_key = true,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(Some(o)) => o,
        Ok(None) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("dungeon: {e}");
            return ExitCode::from(2);
        }
    };
    let key = match GameKey::from_environment() {
        Ok(key) => key,
        Err(e) => {
            eprintln!("dungeon: {e}");
            return ExitCode::from(2);
        }
    };
    if !DEV_BUILD && std::env::var_os(KEY_ENV).is_some() {
        eprintln!("dungeon: {KEY_ENV} is ignored: a release build uses its built-in key");
    }
    if o.print_key {
        if !DEV_BUILD {
            eprintln!(
                "dungeon: --print-key is in dev builds only (a shipped game does not hand \
                 out its key); run it without --release"
            );
            return ExitCode::from(2);
        }
        let _ = writeln!(std::io::stdout(), "{}", key.hex());
        return ExitCode::SUCCESS;
    }
    let scripted_demo =
        o.script.is_none() && !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal());
    let save_dir = match o.save_dir {
        None if scripted_demo => match demo_folder() {
            Ok(dir) => Some(dir),
            Err(e) => {
                eprintln!("dungeon: cannot make a folder for the demonstration: {e}");
                return ExitCode::FAILURE;
            }
        },
        dir => dir,
    };
    let mut app = match dungeon::app::App::new(save_dir, o.seed, o.autosave_every, &key) {
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
        None if !scripted_demo => {
            drop(out);
            dungeon::term::run(&mut app)
        }
        None => {
            let folder = app.saves.folder();
            let _ = writeln!(
                out,
                "(No terminal attached: a scripted demonstration. Its saves go to {}, sealed \
                 with {}; your own saves are not touched.\n To look inside them with the \
                 savegame CLI afterwards:\n   export {KEY_ENV}=$(cargo run -q -p dungeon -- \
                 --print-key)\n   cargo run -q -p savegame-cli -- list {})",
                folder.display(),
                app.saves.key.source(),
                folder.display()
            );
            dungeon::script::run(&mut app, DEMO.as_bytes(), &mut out)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): nothing is wrong with the game.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dungeon: {e}");
            ExitCode::FAILURE
        }
    }
}
