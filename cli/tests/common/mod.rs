//! Helpers shared by the command tests: the binary, the fixtures, and ways to damage files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use savegame::{Key, Snapshot};
// The helpers the library's tests share too live once, in savegame-testkit. Not every test
// binary uses each (as with dead_code above).
#[allow(unused_imports)]
pub use savegame_testkit::{fix_crc, fixture, fixture_key, fixture_key_file as key_file, repo};

/// Every save fixture of the repository.
pub const FIXTURES: [&str; 35] = [
    "v1-json-aes.sav",
    "v1-json-plain.sav",
    "v1-msgpack-aes.sav",
    "v1-msgpack-plain.sav",
    "v2-json-aes.sav",
    "v2-json-plain.sav",
    "v2-msgpack-aes.sav",
    "v2-msgpack-plain.sav",
    "v3-json-aes.sav",
    "v3-json-plain.sav",
    "v3-msgpack-aes.sav",
    "v3-msgpack-plain.sav",
    "format2-v3-json-aes.sav",
    "format2-v3-json-hmac.sav",
    "format2-v3-json-plain.sav",
    "format2-v3-msgpack-aes.sav",
    "format2-v3-msgpack-hmac.sav",
    "format2-v3-msgpack-plain.sav",
    "format2-mementos-json-hmac.sav",
    "format2-mementos-msgpack-plain.sav",
    "format2-v3-json-lz4-plain.sav",
    "format2-v3-msgpack-lz4-aes.sav",
    "format2-v3-json-zstd-hmac.sav",
    "format2-v3-msgpack-zstd-aes.sav",
    "format2-v3-bitcode-aes.sav",
    "format2-v3-json-segmented-aes.sav",
    "format2-v3-msgpack-segmented-aes.sav",
    "format3-v3-json-aes.sav",
    "format3-v3-json-hmac.sav",
    "format3-v3-json-plain.sav",
    "format3-v3-msgpack-aes.sav",
    "format3-v3-msgpack-hmac.sav",
    "format3-v3-msgpack-plain.sav",
    "format3-v3-msgpack-zstd-pieces-aes.sav",
    "format3-v3-msgpack-zstd-pieces-streamed-aes.sav",
];

/// The key for a fixture: `Some` for the encrypted and the integrity-only ones.
pub fn key_for(name: &str) -> Option<Key> {
    (name.contains("-aes") || name.contains("-hmac")).then(fixture_key)
}

/// The migrations folder of the repository.
pub fn migrations() -> PathBuf {
    repo("migrations")
}

/// The `savegame` binary, with no key in its environment.
pub fn savegame() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_savegame"));
    cmd.env_remove("SAVEGAME_KEY");
    cmd
}

/// Copies fixture `name` into `dir` as `as_name`; returns the copy's path.
pub fn copy_fixture(dir: &Path, name: &str, as_name: &str) -> PathBuf {
    let to = dir.join(as_name);
    std::fs::copy(fixture(name), &to).unwrap();
    to
}

/// Writes `bytes` as `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A fixture's bytes with one bit flipped at `byte`.
pub fn bit_flipped(name: &str, byte: usize, bit: u8) -> Vec<u8> {
    let mut bytes = std::fs::read(fixture(name)).unwrap();
    bytes[byte] ^= 1 << bit;
    bytes
}

/// The bytes of a fixture sealed again at schema version 9: a save from a newer game.
pub fn newer_schema(name: &str) -> Vec<u8> {
    let key = key_for(name);
    let bytes = std::fs::read(fixture(name)).unwrap();
    let (header, snapshot) = Snapshot::open_file(bytes, key.as_ref()).unwrap();
    snapshot
        .seal_file(header.slot, 9, header.generation, key.as_ref())
        .unwrap()
}

/// The names of the files in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The stdout of a finished command as text.
pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The stderr of a finished command as text.
pub fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Opens a save file's bytes the way a tool does.
pub fn open(bytes: Vec<u8>, key: Option<&Key>) -> (savegame::format::Header, Snapshot) {
    Snapshot::open_file(bytes, key).unwrap()
}
