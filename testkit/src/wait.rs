//! Waiting for evidence, never for a guessed while: a test that needs something to have
//! happened (a thread parked at a gate, a child's first commit, the clock past a time stamp)
//! polls for that very thing, and gives up only after a bound far beyond any machine's pace,
//! with a message that says what it waited for.
//!
//! The bound is `SAVEGAME_TEST_WAIT_SECS` seconds (default 120): on a machine slower than that
//! lets for, raise it; a bound that runs out is a test failure, never a pass.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The environment variable that sets [`bound`], in seconds.
pub const WAIT_SECS_ENV: &str = "SAVEGAME_TEST_WAIT_SECS";

/// How long a test waits for evidence before it fails: `SAVEGAME_TEST_WAIT_SECS` seconds, or
/// 120. It bounds hangs; nothing that passes ever waits that long.
pub fn bound() -> Duration {
    let secs = std::env::var(WAIT_SECS_ENV)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(120.0);
    Duration::from_secs_f64(secs)
}

/// Polls `done` (every millisecond, after a first try at once) until it holds.
///
/// # Panics
/// When it still does not hold after [`bound`], naming `what` was waited for.
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let bound = bound();
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < bound,
            "waited {bound:?} for {what} ({WAIT_SECS_ENV} raises the bound)"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `time` to the millisecond, as save files store it (`saved_at`): truncated towards the past.
pub fn to_millis(time: SystemTime) -> SystemTime {
    let since = time.duration_since(UNIX_EPOCH).expect("a time after 1970");
    UNIX_EPOCH + Duration::from_millis(since.as_millis() as u64)
}

/// The current time to the millisecond (see [`to_millis`]): a lower bound for the `saved_at`
/// of any save made from now on.
pub fn now_millis() -> SystemTime {
    to_millis(SystemTime::now())
}

/// Waits until the system clock reads a later millisecond than `time`, so that a save made
/// next has a later `saved_at` than one stamped `time` (the autosave rotation orders by it).
///
/// # Panics
/// When the clock has not passed `time` after [`bound`] (a clock set back by that much).
pub fn clock_past(time: SystemTime) {
    let stamp = to_millis(time);
    until("the clock to pass a save's time stamp", || {
        now_millis() > stamp
    });
}
