//! Writes the seed corpus of the fuzz targets, made with the library: `corpus/load`,
//! `corpus/journal` and `corpus/replay` under the fuzz folder (each seed checked first), and the
//! inputs of findings that are made with the library, under `regressions/`.
//!
//! ```text
//! cargo run --manifest-path fuzz/Cargo.toml --example make_seeds [DIR]   # default: fuzz/
//! ```
//!
//! Saves are stamped with the time and sealed under fresh nonces, so remade seeds differ in
//! bytes from the committed ones, not in what they exercise.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let out = root.join("corpus");
    for (target, seeds) in [
        ("load", savegame_fuzz::save_seeds()),
        ("journal", savegame_fuzz::journal_seeds()),
        ("replay", savegame_fuzz::replay_seeds()),
    ] {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in seeds {
            savegame_fuzz::check_seed(target, name, &bytes);
            std::fs::write(dir.join(name), &bytes)?;
            println!("{:>6} bytes  {}/{name}", bytes.len(), dir.display());
        }
    }
    for (target, (name, bytes)) in savegame_fuzz::regression_files() {
        let dir = root.join("regressions").join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), &bytes)?;
        println!("{:>6} bytes  {}/{name}", bytes.len(), dir.display());
    }
    Ok(())
}
