//! Autosave and quicksave: the autosave rotation has slots of its own, apart from the player's
//! numbered slots, and reuses the oldest first; it never overwrites a save from a newer game.
//! Both show in the load menu, marked as what they are.

mod common;

use common::{dir_manager, key};
use savegame::{SaveLoadManager, SaveStatus, SlotId};
use savegame_testkit::wait;

fn autosave(manager: &SaveLoadManager, turn: u32) -> SlotId {
    let mut snapshot = manager.snapshot().with_label(format!("turn {turn}"));
    snapshot.capture_memento("turn", &turn).unwrap();
    let report = manager.autosave(&snapshot).unwrap();
    // Saved-at has millisecond precision: keep the rotation's order unambiguous.
    wait::clock_past(report.saved_at);
    report.slot
}

fn turn_in(manager: &SaveLoadManager, slot: SlotId) -> u32 {
    manager
        .load(slot)
        .unwrap()
        .snapshot
        .memento("turn")
        .unwrap()
}

#[test]
fn autosave_rotates_through_its_own_slots_reusing_the_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .autosave_slots(3)
        .build()
        .unwrap();
    let mut player = manager.snapshot().with_label("my save");
    player.capture_memento("turn", &0u32).unwrap();
    manager.save(SlotId::Numbered(1), &player).unwrap();

    let slots: Vec<SlotId> = (1..=7).map(|turn| autosave(&manager, turn)).collect();
    let a = SlotId::Autosave;
    assert_eq!(slots, [a(1), a(2), a(3), a(1), a(2), a(3), a(1)]);
    assert_eq!(turn_in(&manager, a(1)), 7);
    assert_eq!(turn_in(&manager, a(2)), 5);
    assert_eq!(turn_in(&manager, a(3)), 6);
    // The player's slot was never touched.
    assert_eq!(turn_in(&manager, SlotId::Numbered(1)), 0);

    // A restarted game continues the rotation from what is on disk.
    let fresh = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .autosave_slots(3)
        .build()
        .unwrap();
    assert_eq!(autosave(&fresh, 8), a(2));
}

#[test]
fn autosave_and_quicksave_show_in_the_menu_marked_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    let mut snapshot = manager.snapshot().with_label("quick");
    snapshot.capture_memento("turn", &1u32).unwrap();
    manager.save(SlotId::Quicksave, &snapshot).unwrap();
    manager.save(SlotId::Numbered(2), &snapshot).unwrap();
    autosave(&manager, 3);
    let handle = manager.autosave_in_background(snapshot.clone().with_label("background"));
    let report = handle.wait().unwrap();
    assert_eq!(report.slot, SlotId::Autosave(2));

    let menu = manager.list().unwrap();
    let marks: Vec<(SlotId, bool, bool)> = menu
        .iter()
        .map(|i| (i.slot, i.is_autosave(), i.is_quicksave()))
        .collect();
    assert_eq!(
        marks,
        [
            (SlotId::Numbered(2), false, false),
            (SlotId::Autosave(1), true, false),
            (SlotId::Autosave(2), true, false),
            (SlotId::Quicksave, false, true),
        ]
    );
    assert_eq!(menu[1].slot.to_string(), "autosave 1");
    assert_eq!(menu[3].label(), Some("quick"));
    assert_eq!(turn_in(&manager, SlotId::Quicksave), 1);
    assert!(
        manager
            .path_of(SlotId::Quicksave)
            .ends_with("quicksave.sav")
    );
}

#[test]
fn autosave_never_overwrites_a_save_from_a_newer_game_and_reuses_a_damaged_one_first() {
    let dir = tempfile::tempdir().unwrap();
    let newer = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .schema_version(5)
        .build()
        .unwrap();
    let mut future = newer.snapshot();
    future.capture_memento("turn", &99u32).unwrap();
    newer.save(SlotId::Autosave(1), &future).unwrap();
    let future_bytes = std::fs::read(newer.path_of(SlotId::Autosave(1))).unwrap();

    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .autosave_slots(2)
        .build()
        .unwrap();
    for turn in 1..=4 {
        assert_eq!(autosave(&manager, turn), SlotId::Autosave(2));
    }
    assert_eq!(
        std::fs::read(manager.path_of(SlotId::Autosave(1))).unwrap(),
        future_bytes
    );

    // With every slot newer, autosave refuses rather than overwrite.
    let only_one = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .autosave_slots(1)
        .build()
        .unwrap();
    let mut snapshot = only_one.snapshot();
    snapshot.capture_memento("turn", &5u32).unwrap();
    assert!(matches!(
        only_one.autosave(&snapshot),
        Err(savegame::Error::NewerSchema {
            found: 5,
            supported: 1
        })
    ));
    let handle = only_one.autosave_in_background(snapshot);
    assert!(handle.wait().is_err());

    // A damaged autosave slot is reused before an older sound one.
    let three = SaveLoadManager::builder()
        .directory(dir.path())
        .key(key())
        .autosave_slots(3)
        .build()
        .unwrap();
    assert_eq!(autosave(&three, 6), SlotId::Autosave(3));
    std::fs::write(three.path_of(SlotId::Autosave(3)), b"garbage").unwrap();
    assert_eq!(autosave(&three, 7), SlotId::Autosave(3));
    assert_eq!(turn_in(&three, SlotId::Autosave(3)), 7);
}

#[test]
fn a_background_autosave_waiting_in_the_queue_is_replaced_by_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let manager = dir_manager(dir.path());
    // Many autosaves in quick succession: whatever the worker's pace, none fails, every one is
    // either written or replaced by a newer one, and the newest state is on disk.
    let handles: Vec<_> = (1..=20u32)
        .map(|turn| {
            let mut s = manager.snapshot();
            s.capture_memento("turn", &turn).unwrap();
            manager.autosave_in_background(s)
        })
        .collect();
    let statuses: Vec<SaveStatus> = handles
        .into_iter()
        .map(|h| match h.wait() {
            Ok(_) => SaveStatus::Saved,
            Err(savegame::Error::Superseded) => SaveStatus::Superseded,
            Err(e) => panic!("{e}"),
        })
        .collect();
    assert_eq!(statuses.last(), Some(&SaveStatus::Saved));
    let newest = manager
        .list()
        .unwrap()
        .iter()
        .filter(|i| i.is_autosave())
        .map(|i| turn_in(&manager, i.slot))
        .max();
    assert_eq!(newest, Some(20));
}
