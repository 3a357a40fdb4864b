//! A save requested in frame N is captured in frame N, and frame N does not encode, seal or
//! write it: the manager's worker is held busy (its storage gated) while frame N runs, so
//! the save is still queued, untouched, when the frame ends; and what the file holds in the
//! end is frame N's state, not a later one.

mod common;

use std::io;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use bevy_app::Update;
use bevy_ecs::prelude::*;
use common::*;
use savegame::storage::{FsStorage, Head, Storage, StoredFile};
use savegame::{SaveStatus, SlotId};
use savegame_bevy::{SaveManager, SaveTarget, Saveable, Saved, SavegameCommands};

/// A storage whose puts of one file wait until the gate opens, telling the test when one
/// is waiting.
#[derive(Debug)]
struct Gated {
    inner: FsStorage,
    gated_prefix: &'static str,
    open: Arc<(Mutex<bool>, Condvar)>,
    waiting: Mutex<Sender<String>>,
}

impl Storage for Gated {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        if name.starts_with(self.gated_prefix) {
            let _ = self.waiting.lock().unwrap().send(name.to_owned());
            let (open, changed) = &*self.open;
            let mut is_open = open.lock().unwrap();
            while !*is_open {
                is_open = changed.wait(is_open).unwrap();
            }
        }
        self.inner.put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        self.inner.list()
    }
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        self.inner.read_at(name, offset, len)
    }
    fn read_head(&self, name: &str, len: usize) -> io::Result<Option<Head>> {
        self.inner.read_head(name, len)
    }
    fn locate(&self, name: &str) -> std::path::PathBuf {
        self.inner.locate(name)
    }
}

/// Opens the gate when dropped, so a failing test does not leave the worker waiting (and
/// the app's drop, which waits for the worker, hanging).
struct OpenOnDrop(Arc<(Mutex<bool>, Condvar)>);

impl OpenOnDrop {
    fn open(&self) {
        let (is_open, changed) = &*self.0;
        *is_open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        changed.notify_all();
    }
}

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.open();
    }
}

/// The health frame N sets, and the save it asks for.
#[derive(Resource, Default)]
struct Script {
    frame: u32,
    hero: Option<Entity>,
}

/// Frame 1 sets health 10 and asks for the save to slot 1; frame 2 sets 99.
fn play(mut script: ResMut<Script>, mut health: Query<&mut Health>, mut commands: Commands) {
    let Some(hero) = script.hero else { return };
    script.frame += 1;
    let Ok(mut health) = health.get_mut(hero) else {
        return;
    };
    match script.frame {
        1 => {
            health.current = 10;
            commands.save(SlotId::Numbered(1));
        }
        2 => health.current = 99,
        _ => {}
    }
}

#[test]
fn a_save_is_captured_in_its_frame_and_written_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let open = Arc::new((Mutex::new(false), Condvar::new()));
    let (tx, waiting): (Sender<String>, Receiver<String>) = channel();
    let storage = Gated {
        inner: FsStorage::new(dir.path()).unwrap(),
        gated_prefix: "slot-009",
        open: Arc::clone(&open),
        waiting: Mutex::new(tx),
    };
    let mut app = app_with(
        savegame::SaveLoadManager::builder()
            .storage(storage)
            .key(savegame::Key::from_bytes(KEY)),
    );
    // Declared after the app, so dropped before it.
    let gate = OpenOnDrop(Arc::clone(&open));
    let hero = app
        .world_mut()
        .spawn((
            Saveable,
            Health {
                current: 50,
                max: 50,
            },
        ))
        .id();
    app.insert_resource(Script {
        frame: 0,
        hero: None,
    })
    .add_systems(Update, play);

    // Frame 0: a save to slot 9, which takes the worker and holds it at the gate.
    app.world_mut().commands().save(SlotId::Numbered(9));
    app.update();
    let held = waiting.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(held.starts_with("slot-009"), "{held}");

    // Frame N (1): health 10, and the save to slot 1.
    app.world_mut().resource_mut::<Script>().hero = Some(hero);
    app.update();
    let pending: Vec<(SaveTarget, SaveStatus)> =
        app.world().resource::<SaveManager>().pending().collect();
    assert!(
        pending.contains(&(SaveTarget::Slot(SlotId::Numbered(1)), SaveStatus::Queued)),
        "{pending:?}"
    );
    // Nothing of slot 1 was written: its save has not left the queue.
    let path = app
        .world()
        .resource::<SaveManager>()
        .manager()
        .path_of(SlotId::Numbered(1));
    assert!(!path.exists());

    // Frame N + 1: health 99; still queued.
    app.update();
    assert_eq!(app.world().get::<Health>(hero).unwrap().current, 99);
    assert!(!path.exists());

    // Open the gate: both saves are written and reported.
    gate.open();
    settle(&mut app);
    let saved: Vec<SlotId> = drain::<Saved>(&mut app).iter().map(|s| s.slot).collect();
    assert_eq!(saved, [SlotId::Numbered(9), SlotId::Numbered(1)]);

    // Slot 1 holds frame N's state: 10, not 99.
    app.world_mut().commands().load(SlotId::Numbered(1));
    app.update();
    assert_eq!(app.world().get::<Health>(hero).unwrap().current, 10);
}
