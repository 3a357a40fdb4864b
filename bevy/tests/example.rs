//! The example game (`examples/game.rs`) runs headless: it quicksaves, autosaves on game
//! time through the rotation, loads its quicksave, and lists its slots.

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/game.rs"]
mod game;

use std::time::Duration;

use savegame::SlotId;

#[test]
fn the_example_game_saves_autosaves_and_loads_headless() {
    let dir = tempfile::tempdir().unwrap();
    // 45 frames of 100 ms game time: quicksaves at turns 10, 20, 30, 40; autosaves every
    // 2 s of game time, at frames 20 and 40, which fill the two autosave slots.
    let mut app = game::run_headless(dir.path(), 45, Duration::from_millis(100)).unwrap();
    let log = app.world().resource::<game::RunLog>();
    // Quicksaves at turns 10, 20, 30 and 40; autosaves after 2 s and 4 s of game time (frames
    // 20 and 40), the second in the rotation's second slot. A save is reported in the frame
    // after it was written, so frame 20's quicksave (queued in Update) and autosave (in Last)
    // are reported together, in that order.
    assert_eq!(
        log.saved,
        [
            SlotId::Quicksave,
            SlotId::Quicksave,
            SlotId::Autosave(1),
            SlotId::Quicksave,
            SlotId::Quicksave,
            SlotId::Autosave(2),
        ]
    );
    assert_eq!(log.loaded, [SlotId::Quicksave]);
    assert_eq!(log.menu.len(), 3, "{:?}", log.menu);
    assert!(
        log.menu.iter().any(|l| l.ends_with("Turn 40")),
        "{:?}",
        log.menu
    );

    // The quicksave of turn 40 was loaded: the turn counter went back from 45.
    let turn = app.world().resource::<game::Turn>().0;
    assert_eq!(turn, 40);
    let (_, health) = game::hero(app.world_mut()).unwrap();
    assert!(health.current < 30, "the monsters bit: {health:?}");
}
