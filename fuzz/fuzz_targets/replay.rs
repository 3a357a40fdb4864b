//! Raw bytes as a replay file (as they come, and with each chunk's CRC32 fixed up): read its header, open it (without a key and with the fixed
//! key), and play it: seek, play, advance at two speeds, seek to its keyframes, read frames.
//! Any error is fine; a panic, a hang or a huge allocation is a bug.
//!
//! ```text
//! cargo +nightly fuzz run replay corpus-run/replay corpus/replay -- -rss_limit_mb=512 -timeout=10
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use savegame::ReplayHeader;
use savegame::replay::Player;
use savegame::storage::{MemoryStorage, Storage};
use savegame_fuzz::{Game, REPLAY_NAME, drive, key, variants};

fuzz_target!(|data: &[u8]| {
    for bytes in variants(data) {
        run(&bytes);
    }
});

fn run(data: &[u8]) {
    let storage = MemoryStorage::new();
    storage.put(REPLAY_NAME, data).expect("a memory put");
    let _ = ReplayHeader::read_in(&storage, REPLAY_NAME, None);
    let _ = ReplayHeader::read_in(&storage, REPLAY_NAME, Some(&key()));
    for keyed in [false, true] {
        let builder = Player::builder().allow_unencrypted(true);
        let builder = if keyed { builder.key(key()) } else { builder };
        if let Ok(mut player) = builder.open_in(storage.clone(), REPLAY_NAME) {
            drive(&mut player, &mut Game::default());
        }
    }
}
