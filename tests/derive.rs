//! `#[derive(Originator)]` and `#[derive(SaveState)]`: the shapes they accept, what they
//! generate, and that a derived impl saves and loads as a hand-written one does, through real
//! files with real codecs and encryption.

mod common;

use std::collections::BTreeMap;
use std::marker::PhantomData;

use savegame::{
    Codec, Error, Members, MementoOf, Originator, SaveLoadManager, SaveState, SlotId, Snapshot,
};
use serde::{Deserialize, Serialize};

/// The example game's player (whose memento is derived too), to compare with.
use common::game;

/// The codecs this build has (the test also runs without `msgpack`).
fn codecs() -> Vec<Codec> {
    let mut codecs = vec![Codec::Json];
    if cfg!(feature = "msgpack") {
        codecs.push(Codec::MessagePack);
    }
    codecs
}

/// A manager over a real folder: the fastest codec this build has, encrypted when it can be.
fn manager(dir: &std::path::Path) -> SaveLoadManager {
    let builder = SaveLoadManager::builder()
        .directory(dir)
        .codec(codecs().pop().unwrap());
    let builder = if cfg!(feature = "encryption") {
        builder.key(common::key())
    } else {
        builder
    };
    builder.build().unwrap()
}

#[derive(Originator, Debug, Clone, Default, PartialEq)]
#[savegame(derive(Debug, Clone, PartialEq))]
struct Player {
    name: String,
    health: u32,
    inventory: BTreeMap<String, u32>,
    #[savegame(skip)]
    cursor: u32,
    #[savegame(skip, reset)]
    frames_since_hit: u32,
}

#[test]
fn the_memento_is_a_copy_of_the_saved_fields_and_skip_keeps_or_resets() {
    let p = Player {
        name: "Ada".into(),
        health: 80,
        inventory: [("potion".to_string(), 2)].into(),
        cursor: 5,
        frames_since_hit: 9,
    };
    let m: PlayerMemento = p.create_memento();
    assert_eq!(
        m,
        PlayerMemento {
            name: "Ada".into(),
            health: 80,
            inventory: [("potion".to_string(), 2)].into(),
        }
    );
    let mut q = Player {
        cursor: 1,
        frames_since_hit: 4,
        ..Player::default()
    };
    q.restore_memento(m).unwrap();
    assert_eq!(q.name, "Ada");
    assert_eq!(q.cursor, 1, "skip leaves the field as it is");
    assert_eq!(q.frames_since_hit, 0, "skip, reset resets it");
}

#[test]
fn a_derived_memento_has_the_bytes_of_the_hand_written_one() {
    // The example game's PlayerMemento is written by hand with the same fields: the derived
    // one must encode identically, so a type can switch to the derive without a migration.
    #[derive(Originator)]
    #[savegame(memento = "DerivedPlayerMemento")]
    struct DerivedPlayer {
        name: String,
        health: u32,
        position: Option<game::Vec3>,
        inventory: BTreeMap<String, u32>,
        #[savegame(skip, reset)]
        #[allow(dead_code)]
        frames_since_hit: u32,
    }
    let hand = game::Player::generate(7);
    let derived = DerivedPlayer {
        name: hand.name.clone(),
        health: hand.health,
        position: hand.position,
        inventory: hand.inventory.clone(),
        frames_since_hit: 3,
    };
    for codec in codecs() {
        let mut a = Snapshot::new(codec);
        a.capture("p", &hand).unwrap();
        let mut b = Snapshot::new(codec);
        b.capture("p", &derived).unwrap();
        assert_eq!(a.raw("p"), b.raw("p"), "{codec:?}");
        let mut back = game::Player::default();
        b.restore("p", &mut back).unwrap();
        assert_eq!(back.inventory, hand.inventory);
        let _: DerivedPlayerMemento = derived.create_memento();
    }
}

#[derive(Originator, Default, Debug, PartialEq)]
#[savegame(derive(Debug, PartialEq), serde(deny_unknown_fields))]
struct Renamed {
    #[serde(rename = "hp")]
    health: u32,
    #[serde(default)]
    stamina: u32,
}

#[test]
fn serde_field_attributes_reach_the_memento() {
    let mut s = Snapshot::new(Codec::Json);
    s.capture(
        "r",
        &Renamed {
            health: 3,
            stamina: 4,
        },
    )
    .unwrap();
    assert_eq!(s.raw("r").unwrap(), br#"{"hp":3,"stamina":4}"#);
    s.insert_raw("old", br#"{"hp":5}"#.to_vec()).unwrap();
    let mut r = Renamed::default();
    s.restore("old", &mut r).unwrap();
    assert_eq!(
        r,
        Renamed {
            health: 5,
            stamina: 0
        }
    );
    s.insert_raw("odd", br#"{"hp":5,"mana":1}"#.to_vec())
        .unwrap();
    let err = s.restore("odd", &mut r).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
}

/// A tuple struct, a generic one, and a type parameter only a skipped field uses.
#[derive(Originator, Default, Debug, PartialEq)]
struct Pair(u8, #[savegame(skip)] u8, String);

#[derive(Originator, Default, Debug, PartialEq)]
struct Stack<T, U> {
    items: Vec<T>,
    #[savegame(skip)]
    scratch: PhantomData<U>,
}

#[test]
fn tuple_and_generic_structs() {
    let p = Pair(1, 2, "x".into());
    let m: PairMemento = p.create_memento();
    assert_eq!((m.0, m.1.as_str()), (1, "x"));
    let mut q = Pair(0, 9, String::new());
    q.restore_memento(m).unwrap();
    assert_eq!(q, Pair(1, 9, "x".into()));

    let s: Stack<u16, std::rc::Rc<()>> = Stack {
        items: vec![1, 2, 3],
        scratch: PhantomData,
    };
    let mut snap = Snapshot::new(codecs().pop().unwrap());
    snap.capture("s", &s).unwrap();
    let mut t: Stack<u16, std::rc::Rc<()>> = Stack::default();
    snap.restore("s", &mut t).unwrap();
    assert_eq!(t.items, [1, 2, 3]);
}

/// An originator inside an originator: the outer memento holds the inner one.
#[derive(Originator, Default, Debug, PartialEq)]
#[savegame(derive(Debug))]
struct Party {
    #[savegame(originator)]
    leader: Player,
    gold: u64,
}

#[derive(Originator, Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
#[savegame(self_memento, validate = "Weather::check")]
enum Weather {
    #[default]
    Clear,
    Rain {
        mm: u32,
    },
}

impl Weather {
    fn check(w: &Weather) -> savegame::Result<()> {
        match w {
            Weather::Rain { mm } if *mm > 500 => Err(Error::rejected("too much rain")),
            _ => Ok(()),
        }
    }
}

#[test]
fn nested_originators_and_self_mementos() {
    let party = Party {
        leader: Player {
            name: "Bo".into(),
            cursor: 3,
            ..Player::default()
        },
        gold: 12,
    };
    let m: PartyMemento = party.create_memento();
    assert_eq!(m.leader.name, "Bo");
    let mut back = Party::default();
    back.restore_memento(m).unwrap();
    assert_eq!(back.leader.name, "Bo");
    assert_eq!(back.leader.cursor, 0);
    assert_eq!(back.gold, 12);

    let mut w = Weather::Clear;
    w.restore_memento(Weather::Rain { mm: 3 }).unwrap();
    assert_eq!(w, Weather::Rain { mm: 3 });
    let err = w.restore_memento(Weather::Rain { mm: 900 }).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }));
    assert_eq!(
        w,
        Weather::Rain { mm: 3 },
        "a rejected memento changes nothing"
    );
}

/// A group: ids are field names, renamable; skipped fields are not part of it; an optional
/// member may be missing.
#[derive(SaveState, Default, Debug, PartialEq)]
struct Game {
    player: Player,
    #[savegame(id = "sky")]
    weather: Weather,
    #[savegame(optional)]
    party: Party,
    #[savegame(skip)]
    fps: u32,
}

#[test]
fn a_group_saves_and_loads_in_one_call_through_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let manager = manager(dir.path());
    let game = Game {
        player: Player {
            name: "Cy".into(),
            health: 40,
            ..Player::default()
        },
        weather: Weather::Rain { mm: 7 },
        party: Party {
            gold: 5,
            ..Party::default()
        },
        fps: 60,
    };
    manager.save_state(SlotId::Numbered(1), &game).unwrap();
    let loaded = manager.load(SlotId::Numbered(1)).unwrap();
    assert_eq!(
        loaded.snapshot.ids().collect::<Vec<_>>(),
        ["party", "player", "sky"]
    );

    let mut back = Game {
        fps: 30,
        ..Game::default()
    };
    let outcome = manager.load_state(SlotId::Numbered(1), &mut back).unwrap();
    assert!(outcome.restore.is_exact(), "{:?}", outcome.restore);
    assert_eq!(outcome.restore.restored, 3);
    assert_eq!(back.player, game.player);
    assert_eq!(back.weather, game.weather);
    assert_eq!(back.party, game.party);
    assert_eq!(back.fps, 30, "a skipped member is not restored");
}

#[test]
fn a_group_reports_missing_members_before_changing_anything() {
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot.capture("sky", &Weather::Rain { mm: 1 }).unwrap();
    snapshot.capture_memento("history", &[1, 2, 3]).unwrap();
    let mut game = Game {
        weather: Weather::Rain { mm: 2 },
        ..Game::default()
    };
    match game.restore_state(&snapshot).unwrap_err() {
        Error::StateMismatch {
            not_in_save,
            not_in_game,
        } => {
            assert_eq!(not_in_save, ["player"], "optional members are not required");
            assert!(not_in_game.is_empty());
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        game.weather,
        Weather::Rain { mm: 2 },
        "nothing was restored"
    );

    // With the player there: the optional party is reported missing, and the snapshot's own
    // extra memento is reported as nobody's.
    snapshot.capture("player", &Player::default()).unwrap();
    let report = game.restore_state(&snapshot).unwrap();
    assert_eq!(report.not_in_save, ["party"]);
    assert_eq!(report.not_in_game, ["history"]);
    assert_eq!(game.weather, Weather::Rain { mm: 1 });
}

#[test]
fn a_group_finds_an_undecodable_member_before_changing_anything() {
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot.capture("player", &Player::default()).unwrap();
    snapshot.insert_raw("sky", b"17".to_vec()).unwrap();
    let mut game = Game::default();
    game.player.health += 9;
    let err = game.restore_state(&snapshot).unwrap_err();
    assert!(
        matches!(err, Error::Decode { ref id, .. } if id == "sky"),
        "{err}"
    );
    assert_eq!(game.player.health, 9);
}

/// A keyframe with a group: `restore_keyframe` is one line.
#[derive(SaveState, Default, Debug, PartialEq)]
struct Sim {
    clock: Tick,
}

#[derive(Originator, Default, Debug, PartialEq)]
struct Tick {
    frame: u64,
}

impl savegame::replay::Replayable for Sim {
    type Input = u64;
    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.restore_state(keyframe).map(drop)
    }
    fn step(&mut self, _frame: u64, input: u64) -> savegame::Result<()> {
        self.clock.frame += input;
        Ok(())
    }
    fn state_hash(&self) -> Option<u64> {
        Some(self.clock.frame)
    }
}

#[test]
fn replays_take_a_group_as_their_keyframes() {
    use savegame::replay::Replayable;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.replay");
    let mut sim = Sim::default();
    let mut recorder = savegame::Recorder::builder()
        .keyframe_every(10)
        .create(&path)
        .unwrap();
    for frame in 0..50 {
        if recorder.keyframe_due() {
            let mut keyframe = recorder.snapshot();
            sim.capture_state(&mut keyframe).unwrap();
            recorder.keyframe(&keyframe).unwrap();
        }
        sim.step(frame, 2).unwrap();
        recorder.frame(&2u64, sim.state_hash()).unwrap();
    }
    recorder.finish().unwrap();
    let mut player = savegame::replay::Player::builder().open(&path).unwrap();
    let mut replayed = Sim::default();
    player.seek(&mut replayed, 50).unwrap();
    assert_eq!(replayed, sim);
}

#[test]
fn derives_work_with_json_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::Json)
        .build()
        .unwrap();
    let game = Game::default();
    let report = manager.save_state(SlotId::Quicksave, &game).unwrap();
    let text = std::fs::read(report.path).unwrap();
    assert!(text.windows(7).any(|w| w == b"\"sky\":\""), "readable JSON");
    let mut back = Game::default();
    manager.load_state(SlotId::Quicksave, &mut back).unwrap();
    assert_eq!(back, game);
}

/// The demo and the examples save their games through the derives and groups: no list of
/// originators by id is left in them. (The undo editor example saves its room beside the
/// history's "saved" memento on purpose, showing the explicit `Snapshot` API, which always
/// works; it is the one file allowed to name ids.)
#[test]
fn the_demo_and_the_examples_list_no_originators_by_hand() {
    let mut files = Vec::new();
    for dir in ["demo/dungeon/src", "examples", "examples/shared"] {
        for entry in std::fs::read_dir(savegame_testkit::repo(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("undo_editor.rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 10, "{files:?}");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for pattern in [
            ".capture(\"",
            ".restore(\"",
            ".capture(&self.",
            "restore_memento(player",
        ] {
            assert!(
                !text.contains(pattern),
                "{} still lists originators by hand ({pattern})",
                path.display()
            );
        }
    }
    let model =
        std::fs::read_to_string(savegame_testkit::repo("demo/dungeon/src/model.rs")).unwrap();
    assert!(model.contains("SaveState, Originator)]"));
    let sim = std::fs::read_to_string(savegame_testkit::repo("examples/shared/sim.rs")).unwrap();
    assert!(sim.contains("self.restore_state(keyframe).map(drop)"));
}

/// With a serde attribute a reference may not mean the same through (`with`,
/// `skip_serializing_if`), the derive keeps the memento-making default.
#[derive(Originator, Default, Debug, PartialEq)]
struct Guarded {
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    tags: Vec<String>,
    level: u8,
}

/// Every codec this build has, bitcode too.
fn all_codecs() -> Vec<Codec> {
    let mut codecs = codecs();
    if cfg!(feature = "bitcode") {
        codecs.push(Codec::Bitcode);
    }
    codecs
}

/// Encodes `o` both ways: its memento, and straight from it.
fn both_ways<O: Originator>(codec: Codec, o: &O) -> (Vec<u8>, Vec<u8>) {
    let memento = codec.encode(&o.create_memento()).unwrap();
    let direct = codec.encode(&MementoOf(o)).unwrap();
    (memento, direct)
}

#[test]
fn a_derived_originator_serializes_straight_to_its_mementos_bytes() {
    let player = Player {
        name: "Ann \"the\" Bold".into(),
        health: 77,
        inventory: BTreeMap::from([("rope".into(), 2), ("torch".into(), 5)]),
        cursor: 4,
        frames_since_hit: 9,
    };
    let party = Party {
        leader: player.clone(),
        gold: 12,
    };
    let stack: Stack<u16, ()> = Stack {
        items: vec![1, 2, 3],
        scratch: PhantomData,
    };
    for codec in all_codecs() {
        let pairs = [
            ("player", both_ways(codec, &player)),
            ("party (nested)", both_ways(codec, &party)),
            (
                "renamed fields",
                both_ways(
                    codec,
                    &Renamed {
                        health: 3,
                        stamina: 4,
                    },
                ),
            ),
            ("tuple struct", both_ways(codec, &Pair(1, 2, "x".into()))),
            ("generic (the default)", both_ways(codec, &stack)),
            ("self memento", both_ways(codec, &Weather::Rain { mm: 3 })),
            (
                "the demo's player",
                both_ways(codec, &game::Player::default()),
            ),
        ];
        for (what, (memento, direct)) in pairs {
            assert_eq!(memento, direct, "{what} in {codec}");
        }
        // bitcode cannot skip a field conditionally at all.
        if codec != Codec::Bitcode {
            let (memento, direct) = both_ways(
                codec,
                &Guarded {
                    tags: vec![],
                    level: 2,
                },
            );
            assert_eq!(memento, direct, "guarded (the default) in {codec}");
        }
    }
}

#[test]
fn a_state_listed_by_reference_saves_what_a_captured_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let manager = manager(dir.path());
    let mut game = Game::default();
    game.player.name = "Cy".into();
    game.player.health = 40;

    let mut members = Members::new();
    assert!(
        game.members(&mut members).unwrap(),
        "a derived group lists its members"
    );
    assert_eq!(members.len(), game_ids().len());

    manager.save_state(SlotId::Numbered(1), &game).unwrap();
    let listed = manager.load(SlotId::Numbered(1)).unwrap().snapshot;
    let mut captured = manager.snapshot();
    game.capture_state(&mut captured).unwrap();
    manager.save(SlotId::Numbered(2), &captured).unwrap();
    let captured = manager.load(SlotId::Numbered(2)).unwrap().snapshot;

    assert_eq!(listed.ids().collect::<Vec<_>>(), game_ids());
    assert_eq!(captured.ids().collect::<Vec<_>>(), game_ids());
    for id in game_ids() {
        assert_eq!(
            listed.encoded(id).unwrap(),
            captured.encoded(id).unwrap(),
            "{id}"
        );
        assert_eq!(
            listed.memento_version(id),
            captured.memento_version(id),
            "{id}"
        );
    }
    let mut back = Game::default();
    manager.load_state(SlotId::Numbered(1), &mut back).unwrap();
    assert_eq!(back.player.name, "Cy");
    assert_eq!(back.player.health, 40);
}

/// The ids of [`Game`], in a file's order.
fn game_ids() -> [&'static str; 3] {
    ["party", "player", "sky"]
}
