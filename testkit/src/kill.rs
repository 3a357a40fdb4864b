//! SIGKILL at random moments of a child's writing: the one loop every kill test runs
//! (`tests/kill.rs` for saves, `tests/store.rs` for the key-value store, `tests/replay_crash.rs`
//! for recordings).
//!
//! The test runs its own binary again as the child ([`rerun_self`](crate::rerun_self)), which
//! writes in a loop and says on stdout how far it got, a line each time:
//! [`report_ready`] once it has started (with where it resumed), [`report_committed`] after
//! each unit of work is durable (a save or a change returned `Ok`, a chunk was made durable).
//! The parent's [`KillLoop::run`] starts a child, waits, kills it with SIGKILL, and hands the
//! test a [`Round`]: what the child reported before it died. The test then checks what is on
//! disk against it.
//!
//! # On a slow machine
//! A kill a random while after the child *started* proves little when the machine is busy:
//! the child may not have written anything yet, and under other builds as few as a fifth of
//! such kills came after a first write. So in three rounds of four the random delay starts at
//! the child's first commit, which the loop waits for: those kills land in the middle of the
//! child's writing however slow the machine, and the tests' checks that half the kills came
//! after a commit hold. Rounds 0, 4, 8, … (when there are two rounds or more) start the delay
//! when the child is ready, as a kill in a process's start and its first write (in round 0,
//! the first write into an empty folder) must be survived too.
//!
//! Every wait is for a line from the child, bounded by [`wait::bound`]; a
//! child that exits by itself (a failed save panics in it) fails the test with its stderr.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::game::Rng;
use crate::wait;

/// The environment variable that sets the number of rounds (for a longer run).
pub const ROUNDS_ENV: &str = "SAVEGAME_KILL_ROUNDS";

const READY: &str = "READY ";
const COMMITTED: &str = "COMMITTED ";

/// `SAVEGAME_KILL_ROUNDS` when it is set (for a longer run), else `default`.
pub fn rounds_from_env(default: usize) -> usize {
    std::env::var(ROUNDS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// In the child: it has started, resuming from `resumed` (what it loaded; 0 for nothing).
pub fn report_ready(resumed: u64) {
    // stdout is line-buffered: each line reaches the pipe when it is printed.
    println!("{READY}{resumed}");
}

/// In the child: `n` is durable (printed only once the write that made it so returned `Ok`).
pub fn report_committed(n: u64) {
    println!("{COMMITTED}{n}");
}

/// What a child said, parsed from one line of its stdout.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Said {
    Ready(u64),
    Committed(u64),
}

fn parse(line: &str) -> Option<Said> {
    // The test harness may print "test <name> ... " on the line before the child's first.
    let number = |rest: &str| rest.trim().parse().ok();
    if let Some((_, rest)) = line.split_once(READY) {
        return number(rest).map(Said::Ready);
    }
    let (_, rest) = line.split_once(COMMITTED)?;
    number(rest).map(Said::Committed)
}

/// When a round's random delay started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayFrom {
    /// When the child reported it was ready.
    Start,
    /// When the child reported its first commit.
    FirstCommit,
}

/// One kill, as the child reported it.
#[derive(Debug, Clone)]
pub struct Round {
    /// The round's number, from 0.
    pub number: usize,
    /// Where the child resumed, as it said when ready.
    pub resumed: u64,
    /// The highest number the child reported committed before it was killed, if any.
    pub committed: Option<u64>,
    /// When the random delay before the kill started.
    pub delay_from: DelayFrom,
    /// The random delay.
    pub delay: Duration,
}

/// What a whole run did.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Kills made.
    pub rounds: usize,
    /// Rounds whose delay started at the child's start.
    pub from_start: usize,
    /// How long the run took (reported, never asserted on).
    pub elapsed: Duration,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} kills ({} timed from the child's start, {} from its first commit) in {:.1?}",
            self.rounds,
            self.from_start,
            self.rounds - self.from_start,
            self.elapsed
        )
    }
}

/// The parent's loop: start a child, wait, SIGKILL it, let the test check; so many rounds.
#[derive(Debug, Clone)]
#[must_use]
pub struct KillLoop {
    test: String,
    env: Vec<(String, String)>,
    rounds: usize,
    max_delay: Duration,
    seed: u64,
}

impl KillLoop {
    /// Kills of the child run by the test `test` of this binary, with `env` set (the child
    /// finds out it is the child from it). 100 rounds, delays up to 80 ms, seed 0.
    pub fn new(test: &str, env: &[(&str, &str)]) -> Self {
        KillLoop {
            test: test.to_owned(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            rounds: 100,
            max_delay: Duration::from_millis(80),
            seed: 0,
        }
    }

    /// Makes `rounds` kills (a test passes [`rounds_from_env`] its default).
    pub fn rounds(mut self, rounds: usize) -> Self {
        self.rounds = rounds;
        self
    }

    /// Each kill comes a random while up to `max` after the moment its round waits for.
    pub fn max_delay(mut self, max: Duration) -> Self {
        self.max_delay = max;
        self
    }

    /// The seed of the random delays.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many rounds [`run`](Self::run) makes.
    pub fn round_count(&self) -> usize {
        self.rounds
    }

    /// Makes every round, calling `check` after each kill (the child is dead and reaped).
    ///
    /// # Panics
    /// When a child does not start, exits by itself, or does not report what its round waits
    /// for within [`wait::bound`]; and when `check` panics.
    pub fn run(self, mut check: impl FnMut(&Round)) -> Summary {
        let started = Instant::now();
        let mut rng = Rng::new(self.seed);
        let mut from_start = 0;
        for number in 0..self.rounds {
            let delay_from = if number % 4 == 0 && self.rounds > 1 {
                from_start += 1;
                DelayFrom::Start
            } else {
                DelayFrom::FirstCommit
            };
            let delay = Duration::from_micros(rng.below(self.max_delay.as_micros().max(1) as u64));
            let mut child = Running::start(&self.test, &self.env);
            let resumed = child.wait_for("start (READY)", |said| match said {
                Said::Ready(n) => Some(n),
                Said::Committed(_) => None,
            });
            if delay_from == DelayFrom::FirstCommit {
                child.wait_for("first commit (COMMITTED)", |said| match said {
                    Said::Committed(n) => Some(n),
                    Said::Ready(_) => None,
                });
            }
            std::thread::sleep(delay);
            let committed = child.kill();
            check(&Round {
                number,
                resumed,
                committed,
                delay_from,
                delay,
            });
        }
        Summary {
            rounds: self.rounds,
            from_start,
            elapsed: started.elapsed(),
        }
    }
}

/// A child being run, with threads reading its stdout (parsed) and its stderr (kept whole).
struct Running {
    process: Child,
    said: Receiver<Said>,
    stdout: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
    committed: Option<u64>,
}

impl Running {
    fn start(test: &str, env: &[(String, String)]) -> Self {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut process = crate::rerun_self(test, &env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let out = process.stdout.take().expect("piped");
        let mut err = process.stderr.take().expect("piped");
        let (tx, said) = mpsc::channel();
        let stdout = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(s) = parse(&line)
                    && tx.send(s).is_err()
                {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        Running {
            process,
            said,
            stdout: Some(stdout),
            stderr: Some(stderr),
            committed: None,
        }
    }

    fn note(&mut self, said: Said) {
        if let Said::Committed(n) = said {
            self.committed = Some(self.committed.map_or(n, |c| c.max(n)));
        }
    }

    /// Waits for the first line `want` picks, bounded by [`wait::bound`].
    fn wait_for(&mut self, what: &str, want: impl Fn(Said) -> Option<u64>) -> u64 {
        let bound = wait::bound();
        let deadline = Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.said.recv_timeout(left) {
                Ok(said) => {
                    self.note(said);
                    if let Some(n) = want(said) {
                        return n;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.process.kill();
                    let (_, stderr) = self.reap();
                    panic!(
                        "waited {bound:?} for the child's {what} ({} raises the bound); its \
                         stderr:\n{stderr}",
                        wait::WAIT_SECS_ENV
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let (status, stderr) = self.reap();
                    panic!("the child exited ({status}) before its {what}; its stderr:\n{stderr}");
                }
            }
        }
    }

    /// Waits for the child's end, and for everything it printed.
    fn reap(&mut self) -> (ExitStatus, String) {
        let status = self.process.wait().expect("the child is waited for");
        if let Some(stdout) = self.stdout.take() {
            stdout.join().expect("the stdout reader");
        }
        let stderr = self
            .stderr
            .take()
            .map(|e| e.join().expect("the stderr reader"))
            .unwrap_or_default();
        (status, stderr)
    }

    /// SIGKILLs the child; returns the most it reported committed, every line read.
    fn kill(mut self) -> Option<u64> {
        self.process.kill().expect("SIGKILL is sent");
        let (status, stderr) = self.reap();
        ended_by_the_kill(status, &stderr);
        while let Ok(said) = self.said.try_recv() {
            self.note(said);
        }
        self.committed
    }
}

/// Checks that a child ended by SIGKILL, not by itself (a panic, a failed save, an exit).
fn ended_by_the_kill(status: ExitStatus, stderr: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(9),
            "the child ended by itself ({status}), not by the kill; its stderr:\n{stderr}"
        );
    }
    #[cfg(not(unix))]
    let _ = (status, stderr);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_or_without_the_harness_before_them() {
        assert_eq!(parse("READY 7"), Some(Said::Ready(7)));
        assert_eq!(parse("test a_test ... READY 0"), Some(Said::Ready(0)));
        assert_eq!(parse("COMMITTED 12"), Some(Said::Committed(12)));
        assert_eq!(parse("running 1 test"), None);
        assert_eq!(parse("COMMITTED twelve"), None);
    }

    #[cfg(unix)]
    fn status_of(script: &str) -> ExitStatus {
        let mut child = std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap();
        if script.starts_with("sleep") {
            child.kill().unwrap();
        }
        child.wait().unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_child_ended_by_the_kill_passes() {
        ended_by_the_kill(status_of("sleep 100"), "");
    }

    #[cfg(unix)]
    #[test]
    #[should_panic(expected = "ended by itself (exit status: 3)")]
    fn a_child_that_ended_by_itself_fails() {
        ended_by_the_kill(status_of("exit 3"), "");
    }
}
