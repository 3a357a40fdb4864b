//! Registries of originators that come and go, and the dirty tracking of
//! `save_state_incremental`: real files in a temporary folder, real codecs.

mod common;

use savegame::format::{self, FileKind};
use savegame::{
    Codec, Error, Originator, Registry, SaveLoadManager, SaveState, SlotId, Snapshot, Written,
};

#[derive(Originator, Debug, Clone, Default, PartialEq)]
struct Entity {
    x: i32,
    hp: u32,
    #[savegame(skip, reset)]
    selected: bool,
}

#[derive(Originator, Debug, Clone, Default, PartialEq)]
struct Hero {
    level: u32,
}

/// A game with a fixed originator and a registry of entities under a prefix.
#[derive(SaveState, Debug, Default)]
struct World {
    hero: Hero,
    #[savegame(flatten)]
    entities: Registry<Entity>,
}

fn world(n: usize) -> World {
    let mut w = World {
        hero: Hero { level: 3 },
        entities: Registry::new().with_prefix("e/"),
    };
    for i in 0..n {
        w.entities
            .register(
                format!("{i:05}"),
                Entity {
                    x: i as i32,
                    hp: 10,
                    selected: false,
                },
            )
            .unwrap();
    }
    w
}

#[test]
fn registering_an_id_twice_is_an_error_and_changes_nothing() {
    let mut r = Registry::new();
    r.register("a", Entity::default()).unwrap().hp = 5;
    let err = r.register("a", Entity::default()).unwrap_err();
    assert!(
        matches!(err, Error::DuplicateId { ref id } if id == "a"),
        "{err}"
    );
    assert_eq!(r.get("a").unwrap().hp, 5);
    assert_eq!(r.len(), 1);
    assert!(matches!(
        r.register("", Entity::default()),
        Err(Error::InvalidId { .. })
    ));
    // Unregistering frees the id.
    assert_eq!(r.unregister("a").unwrap().hp, 5);
    r.register("a", Entity::default()).unwrap();
}

#[test]
fn a_load_tells_missing_in_the_save_from_missing_in_the_game() {
    let dir = tempfile::tempdir().unwrap();
    let manager = plain_manager(dir.path());
    let slot = SlotId::Numbered(1);
    let saved = world(3); // e/00000, e/00001, e/00002
    manager.save_state(slot, &saved).unwrap();

    // The next session registers 00001 and 00002 and a new 00009, but not 00000.
    let mut next = world(0);
    for id in ["00001", "00002", "00009"] {
        next.entities.register(id, Entity::default()).unwrap();
    }
    let outcome = manager.load_state(slot, &mut next).unwrap();
    let report = outcome.restore;
    assert_eq!(report.not_in_game, ["e/00000"], "saved, not registered");
    assert_eq!(report.not_in_save, ["e/00009"], "registered, not saved");
    assert_eq!(report.restored, 3, "the hero and two entities");
    assert!(!report.is_exact());
    assert!(matches!(
        report.clone().exact(),
        Err(Error::StateMismatch { .. })
    ));
    assert_eq!(next.entities.get("00001").unwrap().x, 1);
    assert_eq!(next.hero.level, 3);
    // One registry's ids, as it names them: what `register` and `unregister` take.
    let unsaved = report.not_in_save_of(&next.entities);
    assert_eq!(unsaved, ["00009"]);
    assert_eq!(next.entities.unregister(unsaved[0]).map(|_| ()), Some(()));
    let unknown = report.not_in_game_of(&next.entities);
    assert_eq!(unknown, ["00000"]);
    next.entities
        .register(unknown[0], Entity::default())
        .unwrap();
    assert_eq!(next.entities.own_id("e/00000"), Some("00000"));
    assert_eq!(next.entities.own_id("hero"), None);

    // The game chooses: each case can be an error, raised before anything changes.
    for (deny_save, deny_game) in [(true, false), (false, true)] {
        let mut strict = world(0);
        strict.entities = Registry::new()
            .with_prefix("e/")
            .deny_not_in_save(deny_save)
            .deny_not_in_game(deny_game);
        for id in ["00001", "00002", "00009"] {
            strict.entities.register(id, Entity::default()).unwrap();
        }
        match manager.load_state(slot, &mut strict).unwrap_err() {
            Error::StateMismatch {
                not_in_save,
                not_in_game,
            } => {
                if deny_save {
                    assert_eq!(
                        (not_in_save, not_in_game.len()),
                        (vec!["e/00009".into()], 0)
                    );
                } else {
                    assert_eq!(
                        (not_in_save.len(), not_in_game),
                        (0, vec!["e/00000".into()])
                    );
                }
            }
            other => panic!("{other}"),
        }
        assert_eq!(strict.entities.get("00001"), Some(&Entity::default()));
    }

    // A spawner makes what the save holds.
    let mut spawning = world(0);
    spawning.entities = Registry::new()
        .with_prefix("e/")
        .spawn_with(|_| Some(Entity::default()))
        .deny_not_in_game(true);
    let report = manager.load_state(slot, &mut spawning).unwrap().restore;
    assert!(report.is_exact(), "{report:?}");
    assert_eq!(spawning.entities.len(), 3);
    assert_eq!(spawning.entities.get("00002").unwrap().x, 2);
}

#[test]
fn a_registry_alone_reports_every_unregistered_memento() {
    let mut snapshot = Snapshot::new(Codec::Json);
    snapshot.capture("a", &Entity::default()).unwrap();
    snapshot.capture("b", &Hero::default()).unwrap();
    let mut r = Registry::<Entity>::new();
    r.register("a", Entity::default()).unwrap();
    let report = r.restore_state(&snapshot).unwrap();
    assert_eq!(report.not_in_game, ["b"]);
    assert!(report.not_in_save.is_empty());
}

/// The ids of the mementos and the deletions of every delta in `slot`'s journal, read from
/// the file's bytes as `docs/format.md` lays them out (unencrypted files only).
fn journal_records(manager: &SaveLoadManager, slot: SlotId) -> Vec<(Vec<String>, Vec<String>)> {
    let mut path = manager.path_of(slot).into_os_string();
    path.push(".journal");
    let bytes = std::fs::read(path).unwrap();
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = format::record_len(&bytes[at..]).unwrap().unwrap();
        let record = &bytes[at..at + len];
        let header = format::parse_header(record, Some(len as u64)).unwrap();
        assert_eq!(header.kind, FileKind::Delta);
        assert!(!header.encrypted);
        let payload = header.sections().payload;
        let body = &record[payload.start as usize..payload.end as usize];
        let mut r = Reader(body);
        let _sequence = r.u64();
        let deleted = (0..r.u32()).map(|_| r.id()).collect();
        let ids = (0..r.u32())
            .map(|_| {
                let id = r.id();
                if header.format_version >= 2 {
                    r.u32(); // the memento's version
                }
                r.u64();
                r.u64();
                id
            })
            .collect();
        records.push((ids, deleted));
        at += len;
    }
    records
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn id(&mut self) -> String {
        let n = u16::from_le_bytes(self.take(2).try_into().unwrap()) as usize;
        String::from_utf8(self.take(n).to_vec()).unwrap()
    }
}

fn plain_manager(dir: &std::path::Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(if cfg!(feature = "msgpack") {
            Codec::MessagePack
        } else {
            Codec::Json
        })
        // Compaction would fold the deltas into the base before the test reads them.
        .compact_at(10_000)
        .build()
        .unwrap()
}

/// The same mementos, byte for byte, in both snapshots.
fn same_mementos(a: &Snapshot, b: &Snapshot) -> bool {
    a.ids().eq(b.ids()) && a.ids().all(|id| a.raw(id) == b.raw(id))
}

#[test]
fn after_a_full_save_an_incremental_save_writes_exactly_the_changed_one_percent() {
    let dir = tempfile::tempdir().unwrap();
    let manager = plain_manager(dir.path());
    let slot = SlotId::Numbered(4);
    let mut game = world(10_000);
    manager.save_state(slot, &game).unwrap();

    // 1% of the entities change; a skipped field changing is no change.
    let changed: Vec<String> = (0..10_000)
        .step_by(100)
        .map(|i| format!("{i:05}"))
        .collect();
    for id in &changed {
        game.entities.get_mut(id).unwrap().hp -= 1;
    }
    game.entities.get_mut("00001").unwrap().selected = true;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(report.is_delta(), "{:?}", report.written);
    let expected: Vec<String> = changed.iter().map(|id| format!("e/{id}")).collect();
    assert_eq!(report.changed, expected);
    assert!(report.deleted.is_empty());
    assert_eq!(report.unchanged, 10_001 - 100);

    // The journal holds exactly those mementos.
    let records = journal_records(&manager, slot);
    assert_eq!(records, [(expected.clone(), vec![])]);

    // Entities destroyed and spawned: deletions and new mementos in the next delta.
    for id in ["00003", "00004"] {
        game.entities.unregister(id).unwrap();
    }
    game.entities.register("10000", Entity::default()).unwrap();
    game.hero.level += 1;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert_eq!(report.changed, ["e/10000", "hero"]);
    assert_eq!(report.deleted, ["e/00003", "e/00004"]);
    let records = journal_records(&manager, slot);
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[1],
        (
            vec!["e/10000".to_string(), "hero".into()],
            vec!["e/00003".to_string(), "e/00004".into()]
        )
    );

    // Nothing changed (nor the label or playtime): nothing is written.
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(report.changed.is_empty() && report.deleted.is_empty());
    assert!(!report.wrote);

    // A load of base + deltas is the state a full save of it gives.
    let full_slot = SlotId::Numbered(5);
    manager.save_state(full_slot, &game).unwrap();
    let incremental = manager.load(slot).unwrap();
    assert_eq!(incremental.report.deltas, 2);
    let full = manager.load(full_slot).unwrap();
    assert!(same_mementos(&incremental.snapshot, &full.snapshot));

    let mut loaded = world(0);
    loaded.entities = Registry::new()
        .with_prefix("e/")
        .spawn_with(|_| Some(Entity::default()));
    let outcome = manager.load_state(slot, &mut loaded).unwrap();
    assert!(outcome.restore.is_exact(), "{:?}", outcome.restore);
    assert_eq!(loaded.hero, game.hero);
    assert_eq!(loaded.entities.len(), game.entities.len());
    for (id, e) in game.entities.iter() {
        let mut expected = e.clone();
        expected.selected = false; // skip, reset
        assert_eq!(loaded.entities.get(id), Some(&expected), "{id}");
    }
}

#[test]
fn the_slot_changing_behind_the_managers_back_gives_a_full_save_not_a_wrong_delta() {
    let dir = tempfile::tempdir().unwrap();
    let manager = plain_manager(dir.path());
    let slot = SlotId::Numbered(2);
    let mut game = world(20);

    // Nothing known of the slot yet: a full save.
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(matches!(report.written, Written::Full { .. }));
    assert_eq!(report.changed.len(), 21);

    // Another manager (another process) writes the slot: this one's fingerprints are stale.
    let other = plain_manager(dir.path());
    let mut stale = world(20);
    stale.entities.get_mut("00007").unwrap().hp = 99;
    other.save_state(slot, &stale).unwrap();

    game.entities.get_mut("00001").unwrap().hp = 1;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    match &report.written {
        Written::Full { reason, .. } => assert!(reason.contains("something else"), "{reason}"),
        other => panic!("a delta over a base it does not know: {other:?}"),
    }
    // The slot holds this game, 00007 included, not a mix.
    let mut loaded = world(20);
    manager.load_state(slot, &mut loaded).unwrap();
    assert_eq!(loaded.entities.get("00007").unwrap().hp, 10);
    assert_eq!(loaded.entities.get("00001").unwrap().hp, 1);

    // After the load the manager knows the slot again: deltas from here.
    game.entities.get_mut("00002").unwrap().hp = 2;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(report.is_delta());
    assert_eq!(report.changed, ["e/00002"]);
}

#[test]
fn a_compaction_by_the_manager_keeps_its_deltas_going_and_one_by_another_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let manager = plain_manager(dir.path());
    let slot = SlotId::Numbered(3);
    let mut game = world(20);
    manager.save_state(slot, &game).unwrap();
    game.entities.get_mut("00001").unwrap().hp = 1;
    assert!(
        manager
            .save_state_incremental(slot, &game)
            .unwrap()
            .is_delta()
    );

    // This manager compacts: the new base holds what its fingerprints describe.
    let compacted = manager.compact(slot).unwrap();
    game.entities.get_mut("00002").unwrap().hp = 2;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(report.is_delta(), "{:?}", report.written);
    assert_eq!(report.changed, ["e/00002"]);
    // In the background too (the path a game's frame takes).
    game.entities.get_mut("00003").unwrap().hp = 3;
    manager.compact(slot).unwrap();
    let handle = manager.save_state_incremental_in_background(slot, &game, ["e/00003"]);
    assert!(handle.wait().is_ok());
    assert!(manager.flush().is_empty());
    assert!(manager.info(slot).unwrap().deltas == 1);

    // Another manager compacts after saving a change of its own: stale, so a full save.
    let other = plain_manager(dir.path());
    let mut theirs = world(20);
    theirs.entities.get_mut("00009").unwrap().hp = 99;
    other.save_state_incremental(slot, &theirs).unwrap();
    other.compact(slot).unwrap();
    game.entities.get_mut("00004").unwrap().hp = 4;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(
        matches!(report.written, Written::Full { .. }),
        "{:?}",
        report.written
    );
    let mut loaded = world(20);
    manager.load_state(slot, &mut loaded).unwrap();
    assert_eq!(loaded.entities.get("00009").unwrap().hp, 10);
    assert_eq!(loaded.entities.get("00004").unwrap().hp, 4);
    assert!(compacted.generation > 0);
}

#[test]
fn an_incremental_save_with_nothing_changed_writes_nothing() {
    // Issue 26, hole 6: on 1c7407f an empty delta was appended, the journal grew, and the
    // load menu's delta count went up.
    let dir = tempfile::tempdir().unwrap();
    let manager = plain_manager(dir.path());
    let slot = SlotId::Numbered(3);
    let mut game = world(10);
    manager.save_state(slot, &game).unwrap();
    game.entities.get_mut("00001").unwrap().hp = 1;
    assert!(manager.save_state_incremental(slot, &game).unwrap().wrote);
    let before = manager.info(slot).unwrap();
    assert_eq!(before.deltas, 1);
    let files = |dir: &std::path::Path| {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().into_string().unwrap(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        names.sort();
        names
    };
    let on_disk = files(dir.path());
    for _ in 0..3 {
        let report = manager.save_state_incremental(slot, &game).unwrap();
        assert!(!report.wrote);
        assert!(
            matches!(report.written, Written::Nothing),
            "{:?}",
            report.written
        );
        assert!(report.changed.is_empty() && report.deleted.is_empty());
        assert_eq!(report.unchanged, 11);
    }
    assert_eq!(files(dir.path()), on_disk, "nothing on disk changed");
    assert_eq!(manager.info(slot).unwrap().deltas, 1);
    // An empty snapshot through save_incremental writes nothing either.
    let report = manager.save_incremental(slot, &manager.snapshot()).unwrap();
    assert_eq!((report.bytes, report.sequence), (0, 1));
    assert_eq!(files(dir.path()), on_disk);
    // A change after that is a delta again, numbered on from the last one.
    game.entities.get_mut("00002").unwrap().hp = 2;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert!(report.wrote && report.is_delta());
    assert_eq!(manager.info(slot).unwrap().deltas, 2);
}

#[cfg(feature = "encryption")]
#[test]
fn incremental_saves_of_a_state_work_encrypted_too() {
    let dir = tempfile::tempdir().unwrap();
    let manager = common::dir_manager(dir.path());
    let slot = SlotId::Autosave(1);
    let mut game = world(50);
    manager.save_state(slot, &game).unwrap();
    game.entities.get_mut("00010").unwrap().x = -1;
    let report = manager.save_state_incremental(slot, &game).unwrap();
    assert_eq!(report.changed, ["e/00010"]);
    let mut loaded = world(50);
    manager.load_state(slot, &mut loaded).unwrap();
    assert_eq!(loaded.entities.get("00010").unwrap().x, -1);
}

/// Sealing an empty JSON delta (an incremental save with nothing changed) overran the
/// buffer's size estimate by one byte (`{}` is two), a debug assertion in `format`.
#[test]
fn an_empty_json_delta_is_sealed_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let manager = SaveLoadManager::builder()
        .directory(dir.path())
        .codec(Codec::Json)
        .compact_at(10_000)
        .build()
        .unwrap();
    let slot = SlotId::Numbered(1);
    manager.save(slot, &manager.snapshot()).unwrap();
    manager
        .save_incremental(slot, &manager.snapshot().with_label("later"))
        .unwrap();
    let loaded = manager.load(slot).unwrap();
    assert_eq!(loaded.report.deltas, 1);
    assert_eq!(loaded.snapshot.metadata().label, "later");
}

// ---- `save_state` on several threads: the same file as on one. ----

fn threaded_manager(dir: &std::path::Path, codec: Codec, threads: usize) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(codec)
        .threads(threads)
        .build()
        .unwrap()
}

/// The file's bytes but the header, whose time stamp differs between two saves, and the CRC
/// over it.
fn body_of(manager: &SaveLoadManager, slot: SlotId) -> Vec<u8> {
    let bytes = std::fs::read(manager.path_of(slot)).unwrap();
    bytes[format::HEADER_LEN..bytes.len() - format::CRC_LEN].to_vec()
}

#[test]
fn save_state_on_many_threads_writes_the_file_one_thread_writes() {
    let game = world(997);
    let codecs = [
        #[cfg(feature = "json")]
        Codec::Json,
        #[cfg(feature = "msgpack")]
        Codec::MessagePack,
    ];
    for codec in codecs {
        let one_dir = tempfile::tempdir().unwrap();
        let one = threaded_manager(one_dir.path(), codec, 1);
        let slot = SlotId::Numbered(1);
        one.save_state(slot, &game).unwrap();
        let expected = body_of(&one, slot);
        for threads in [2, 3, 8, 2000] {
            let dir = tempfile::tempdir().unwrap();
            let many = threaded_manager(dir.path(), codec, threads);
            // Twice: the second save checks the first file and rotates it, with the workers
            // encoding beside it.
            for _ in 0..2 {
                many.save_state(slot, &game).unwrap();
                assert_eq!(
                    body_of(&many, slot),
                    expected,
                    "{codec:?} on {threads} threads"
                );
            }
            let mut loaded = world(997);
            for (_, entity) in loaded.entities.iter_mut() {
                entity.x = -1;
            }
            let outcome = many.load_state(slot, &mut loaded).unwrap();
            assert!(outcome.restore.is_exact());
            assert_eq!(loaded.entities.get("00996").unwrap().x, 996);
            // The fingerprints taken as the file was written are right: the incremental save
            // after it finds nothing changed, and writes nothing (not a full save).
            let report = many.save_state_incremental(slot, &game).unwrap();
            assert!(matches!(report.written, Written::Nothing), "{report:?}");
            assert_eq!(report.changed, Vec::<String>::new());
            assert_eq!(report.unchanged, 998);
        }
    }
}

/// An entity whose memento cannot be encoded (a map with non-string keys, in JSON; a
/// `Serialize` that fails, in every codec).
#[derive(Debug, Default)]
struct Cursed(bool);

#[derive(serde::Serialize, serde::Deserialize)]
struct CursedMemento;

impl Originator for Cursed {
    type Memento = CursedMemento;
    fn create_memento(&self) -> CursedMemento {
        CursedMemento
    }
    fn restore_memento(&mut self, _: CursedMemento) -> savegame::Result<()> {
        Ok(())
    }
    fn serialize_memento<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>
    where
        Self: Sized,
    {
        if self.0 {
            return Err(serde::ser::Error::custom("cursed"));
        }
        serde::Serialize::serialize(&CursedMemento, serializer)
    }
}

#[test]
fn a_memento_that_fails_on_a_worker_thread_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let manager = threaded_manager(dir.path(), Codec::Json, 4);
    let slot = SlotId::Numbered(2);
    let mut many: Registry<Cursed> = Registry::new();
    for i in 0..400 {
        many.register(format!("{i:04}"), Cursed(false)).unwrap();
    }
    manager.save_state(slot, &many).unwrap();
    let before = std::fs::read(manager.path_of(slot)).unwrap();
    // Near the end: a part the workers take first.
    many.get_mut("0390").unwrap().0 = true;
    let err = manager.save_state(slot, &many).unwrap_err();
    assert!(
        matches!(err, Error::Encode { ref id, .. } if id == "0390"),
        "{err}"
    );
    assert_eq!(std::fs::read(manager.path_of(slot)).unwrap(), before);
}
