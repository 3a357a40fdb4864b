//! The kill loop itself, with real children: which moment each round's delay starts at, what a
//! round reports, and that a child which exits before it has committed anything fails the test
//! (that one which ends by itself later fails it too is a unit test of `kill.rs`).

use std::time::Duration;

use savegame_testkit::kill::{self, DelayFrom, KillLoop};

const MODE: &str = "SAVEGAME_KILL_LOOP_CHILD";

/// The children: each resumes at 5 and then behaves as its mode says.
fn child(mode: &str) {
    kill::report_ready(5);
    match mode {
        "commits-forever" => {
            for n in 6.. {
                kill::report_committed(n);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        "exits-before-committing" => {}
        other => panic!("unknown mode {other}"),
    }
    std::process::exit(0);
}

fn run(test: &str, mode: &str, rounds: usize) -> Vec<kill::Round> {
    if let Ok(mode) = std::env::var(MODE) {
        child(&mode);
    }
    let mut seen = Vec::new();
    KillLoop::new(test, &[(MODE, mode)])
        .rounds(rounds)
        .max_delay(Duration::from_millis(5))
        .run(|round| seen.push(round.clone()));
    seen
}

#[test]
fn three_rounds_in_four_wait_for_the_first_commit_and_report_the_last() {
    let rounds = run(
        "three_rounds_in_four_wait_for_the_first_commit_and_report_the_last",
        "commits-forever",
        8,
    );
    let from: Vec<DelayFrom> = rounds.iter().map(|r| r.delay_from).collect();
    let (s, c) = (DelayFrom::Start, DelayFrom::FirstCommit);
    assert_eq!(from, [s, c, c, c, s, c, c, c]);
    for round in &rounds {
        assert_eq!(round.resumed, 5);
        assert!(round.delay < Duration::from_millis(5));
        if round.delay_from == DelayFrom::FirstCommit {
            assert!(round.committed >= Some(6), "{round:?}");
        }
    }
}

#[test]
fn a_single_round_waits_for_the_first_commit() {
    let rounds = run(
        "a_single_round_waits_for_the_first_commit",
        "commits-forever",
        1,
    );
    assert_eq!(rounds[0].delay_from, DelayFrom::FirstCommit);
    assert!(rounds[0].committed.is_some());
}

#[test]
#[should_panic(expected = "before its first commit")]
fn a_child_that_exits_before_committing_fails_the_test() {
    // One round alone waits for the commit, which never comes.
    run(
        "a_child_that_exits_before_committing_fails_the_test",
        "exits-before-committing",
        1,
    );
}
