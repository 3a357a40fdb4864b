//! The program's behaviour at its edges: questions before quitting, the replay screen, the legend.

use savegame::Key;
use savegame::replay::ReplayHeader;

use super::*;

fn app(dir: &tempfile::TempDir) -> App {
    App::new(Some(dir.path().to_path_buf()), 1, 25, &GameKey::built_in()).unwrap()
}

/// The recording is finished (it has its end chunk) once the game has quit.
fn recording_finished(dir: &tempfile::TempDir) -> bool {
    let key = Key::from_bytes(saves::KEY);
    ReplayHeader::read(dir.path().join("last-run.replay"), Some(&key))
        .unwrap()
        .is_complete()
}

#[test]
fn quitting_with_unsaved_changes_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    app.handle(App::walk(Dir::East));
    assert!(app.dirty);
    app.handle(Command::Quit);
    assert!(!app.quit);
    assert!(matches!(app.mode, Mode::Quitting));
    let [question, answers] = app.question().unwrap();
    assert!(question.contains("unsaved changes"), "{question}");
    assert!(answers.contains("F5"), "{answers}");
    assert!(app.screen().ends_with(&[question, answers]));

    // No: back to the game, which goes on.
    app.handle(Command::Leave);
    assert!(matches!(app.mode, Mode::Play));
    assert!(app.question().is_none());
    app.handle(App::walk(Dir::East));
    assert_eq!(app.game.clock.turn, 2);

    // Yes: quits without saving, and the recording is finished.
    app.handle(Command::Quit);
    app.handle(Command::QuitNow);
    assert!(app.quit);
    assert!(app.question().is_none(), "answered, no longer asked");
    assert!(!app.saves.manager().exists(SlotId::Quicksave).unwrap());
    assert!(recording_finished(&dir));
}

#[test]
fn quitting_when_everything_is_saved_does_not_ask() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    app.handle(App::walk(Dir::East));
    app.handle(Command::Save(1));
    assert!(!app.dirty, "{:?}", app.notes);
    app.handle(Command::Quit);
    assert!(app.quit);
    assert!(recording_finished(&dir));
}

#[test]
fn esc_in_play_asks_even_when_everything_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    app.handle(Command::AskQuit);
    assert!(!app.quit);
    let [question, _] = app.question().unwrap();
    assert!(question.contains("Everything is saved"), "{question}");
    app.handle(Command::Leave);
    assert!(matches!(app.mode, Mode::Play));
    assert!(!app.quit);
}

#[test]
fn f5_at_the_question_quicksaves_then_quits() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    for _ in 0..3 {
        app.handle(App::walk(Dir::South));
    }
    let played = app.game.state_hash();
    app.handle(Command::Quit);
    app.handle(Command::SaveAndQuit);
    assert!(app.quit, "{:?}", app.notes);

    // A new session loads the quicksave: the game as it was.
    let mut again = App::new(Some(dir.path().to_path_buf()), 99, 25, &GameKey::built_in()).unwrap();
    again.handle(Command::Load(SlotId::Quicksave));
    assert_eq!(again.game.state_hash(), played, "{:?}", again.notes);
}

/// Issue 16: the replay screen showed "turn 6/31" next to "Turn 32".
#[test]
fn the_replay_screen_has_one_turn_counter() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    for _ in 0..6 {
        app.handle(App::walk(Dir::South));
    }
    app.handle(Command::Watch);
    app.handle(Command::Play(Duration::from_secs(1)));
    let screen = app.screen();
    let counters: Vec<&String> = screen
        .iter()
        .filter(|l| l.to_lowercase().contains("turn "))
        .collect();
    assert_eq!(counters.len(), 1, "{screen:#?}");
    assert!(counters[0].contains("Turn 4"), "{counters:?}");
    // The replay's position is time: 4 of 6 frames at 4 a second.
    assert!(
        screen
            .iter()
            .any(|l| l.contains("[########----] 0:01/0:01")),
        "{screen:#?}"
    );
}

#[test]
fn what_a_key_said_while_watching_stays_on_screen_as_the_replay_plays() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    for _ in 0..3 {
        app.handle(App::walk(Dir::South));
    }
    app.handle(Command::Watch);
    app.handle(Command::Seek(1));
    assert_eq!(app.notes, ["Seek: 0:00 of 0:00, the game at turn 1."]);
    // Frames of a terminal's loop: the seek's note stays; the end is said once.
    for _ in 0..3 {
        app.handle(Command::Play(Duration::from_millis(400)));
    }
    assert_eq!(
        app.notes,
        [
            "Seek: 0:00 of 0:00, the game at turn 1.",
            "The end of the replay: the game at turn 3, in sync all the way."
        ]
    );
}

/// Issue 16: the map had no legend for its symbols.
#[test]
fn every_symbol_on_the_map_is_in_its_legend() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    let mut seen = std::collections::BTreeSet::new();
    let mut check = |screen: Vec<String>| {
        // Entries are "symbol name", two spaces apart.
        let legend: String = screen
            .iter()
            .filter(|l| l.starts_with(ui::LEGEND) || l.starts_with(ui::EDITOR_LEGEND))
            .flat_map(|l| l.split("  ").filter_map(|entry| entry.chars().next()))
            .collect();
        for row in &screen[1..=crate::model::HEIGHT as usize] {
            for glyph in row.chars().take(crate::model::WIDTH as usize) {
                assert!(legend.contains(glyph), "{glyph:?} is not in {legend:?}");
                seen.insert(glyph);
            }
        }
    };
    check(app.screen());
    app.handle(Command::Edit);
    app.begin_room(Pos::new(14, 3)).unwrap();
    app.drag_room(Pos::new(18, 6));
    check(app.screen());
    // The test looked at every kind of thing the map draws.
    let all: std::collections::BTreeSet<char> = "@rg!$k#.X+".chars().collect();
    assert_eq!(seen, all);
}

#[test]
fn quitting_from_the_editor_keeps_the_edit_in_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(&dir);
    app.handle(App::walk(Dir::East));
    app.handle(Command::Edit);
    app.handle(Command::Wall(Pos::new(5, 5)));
    app.handle(Command::Quit);
    assert!(matches!(app.mode, Mode::Quitting));
    // Changed her mind: the run so far has the turn and the edit.
    app.handle(Command::Leave);
    app.handle(Command::Watch);
    let Mode::Watch(w) = &app.mode else {
        panic!("not watching: {:?}", app.notes)
    };
    assert_eq!(w.player.frame_count(), 2);
}
