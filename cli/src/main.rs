//! The `savegame` binary. Its code and documentation are in the `savegame_cli` library target.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    savegame_cli::main()
}
