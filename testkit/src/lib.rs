//! The helpers savegame's own integration tests, CLI tests and benchmarks share, each written
//! once: the example game's model, CRC fix-ups for edited files, the test keys, the repository's
//! paths, a counting global allocator, a real S3-compatible server (moto's) with a
//! fault-injecting HTTP proxy for the cloud tests, the SIGKILL loop of the kill tests, and
//! waits for evidence (never for a guessed while). A dev-dependency only; never published.

pub mod alloc;
pub mod kill;
pub mod proxy;
pub mod s3;
pub mod wait;

// The example game's shared modules. The published examples include them with `#[path]`
// themselves (they cannot depend on this crate); every test and bench uses these.
#[allow(missing_docs)]
#[path = "../../examples/shared/game.rs"]
pub mod game;
#[allow(missing_docs)]
#[path = "../../examples/shared/sim.rs"]
pub mod sim;
#[allow(missing_docs)]
#[path = "../../examples/shared/versions.rs"]
pub mod versions;

pub use alloc::Counting;

use std::ops::Range;
use std::path::{Path, PathBuf};

use savegame::Key;

/// The fixed key of the integration tests.
pub const TEST_KEY: [u8; 32] = *b"savegame-test-key-0123456789abcd";

/// [`TEST_KEY`] as a [`Key`].
pub fn key() -> Key {
    Key::from_bytes(TEST_KEY)
}

/// A path in the repository (relative to the workspace root).
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs this same test binary again as a child process, for the single test `test_name`, with
/// `env` set: how a test checks what happens in a new process.
pub fn rerun_self(test_name: &str, env: &[(&str, &str)]) -> std::process::Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--exact", test_name, "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A fixture's path (read only: tests that write copy it first).
pub fn fixture(name: &str) -> PathBuf {
    repo(&format!("fixtures/{name}"))
}

/// The key file of the encrypted fixtures (64 hex digits).
pub fn fixture_key_file() -> PathBuf {
    fixture("test-key.hex")
}

/// The key of the encrypted fixtures.
pub fn fixture_key() -> Key {
    Key::from_hex(&std::fs::read_to_string(fixture_key_file()).unwrap()).unwrap()
}

/// Clears a flag bit of a whole file (bytes 10-11 of its header) and fixes its CRC: the
/// downgrade an attacker tries on a sealed file (S11).
pub fn strip_flag(bytes: &mut [u8], flag: u16) {
    let flags = u16::from_le_bytes([bytes[10], bytes[11]]) & !flag;
    bytes[10..12].copy_from_slice(&flags.to_le_bytes());
    fix_crc(bytes);
}

/// `fixtures/format2-v3-json-hmac.sav`, an integrity-only save, stripped of its
/// authenticated flag (bit 1) with its CRC fixed: a well-formed plain file, with the old tag
/// left as 32 bytes after the document. Every entry point refuses it (issue 26, hole 1).
pub fn stripped_hmac_fixture() -> Vec<u8> {
    let mut bytes = std::fs::read(fixture("format2-v3-json-hmac.sav")).unwrap();
    strip_flag(&mut bytes, savegame::format::FLAG_AUTHENTICATED);
    bytes
}

/// [`stripped_hmac_fixture`] with its payload length cut by the tag's 32 bytes and the tag
/// dropped, then its body edited (the player's health, `148` in the fixture's JSON, becomes
/// `999`): a plain file that is well-formed in every way, which only the refusal of plain files
/// under a key stops.
pub fn forged_plain_from_hmac_fixture() -> Vec<u8> {
    let mut bytes = stripped_hmac_fixture();
    let crc_at = bytes.len() - 4;
    let tag = savegame::format::MAC_LEN;
    bytes.drain(crc_at - tag..crc_at);
    let payload = u64::from_le_bytes(bytes[44..52].try_into().unwrap()) - tag as u64;
    bytes[44..52].copy_from_slice(&payload.to_le_bytes());
    let health = bytes
        .windows(12)
        .position(|w| w == b"\"health\":148")
        .unwrap();
    bytes[health + 9..health + 12].copy_from_slice(b"999");
    fix_crc(&mut bytes);
    bytes
}

/// Recomputes the CRC32 trailer of a whole save file (its last 4 bytes), as an attacker who
/// edits a file would, so that the edit is not seen as corruption.
pub fn fix_crc(bytes: &mut [u8]) {
    fix_crc_in(bytes, 0..bytes.len());
}

/// Recomputes the CRC32 trailer of the part `range` of `bytes` (a replay chunk, say): the CRC32
/// of the range without its last 4 bytes, written little-endian into them.
pub fn fix_crc_in(bytes: &mut [u8], range: Range<usize>) {
    let at = range.end - 4;
    let crc = crc32fast::hash(&bytes[range.start..at]);
    bytes[at..range.end].copy_from_slice(&crc.to_le_bytes());
}
