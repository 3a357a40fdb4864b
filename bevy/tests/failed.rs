//! Saves that fail are reported, and leave the previous save loading: a save into a
//! read-only folder is `SaveFailed`; a component that does not serialize is an error naming
//! its type and its entity.

mod common;

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame::storage::{FsStorage, Head, Storage, StoredFile};
use savegame_bevy::{
    LoadFailed, Loaded, SaveError, SaveFailed, SaveTarget, Saveable, Saved, SavegameApp,
    SavegameCommands,
};
use serde::{Deserialize, Serialize};

/// Makes a folder read-only for as long as it lives: permissions 0o555, and, for root (whom
/// permissions do not stop), the immutable attribute (`chattr +i`). Where neither works (root
/// on a file system without the attribute), the folder's storage refuses writes itself, as a
/// read-only file system would, and the test says so.
struct ReadOnly {
    dir: PathBuf,
    emulated: Arc<AtomicBool>,
}

impl ReadOnly {
    fn new(dir: &Path, emulated: Arc<AtomicBool>) -> Self {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let guard = ReadOnly {
            dir: dir.to_owned(),
            emulated,
        };
        if !guard.refuses_writes() {
            let _ = Command::new("chattr").arg("+i").arg(dir).status();
        }
        if !guard.refuses_writes() {
            eprintln!(
                "{} stays writable (permissions and chattr +i both failed): its storage refuses writes instead",
                dir.display()
            );
            guard.emulated.store(true, Ordering::SeqCst);
        }
        guard
    }

    fn refuses_writes(&self) -> bool {
        let probe = self.dir.join("probe");
        let refused = std::fs::write(&probe, b"x").is_err();
        let _ = std::fs::remove_file(probe);
        refused
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        self.emulated.store(false, Ordering::SeqCst);
        let _ = Command::new("chattr").arg("-i").arg(&self.dir).status();
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
    }
}

/// Files in a folder, refusing every write while `read_only` is set.
#[derive(Debug)]
struct Folder {
    inner: FsStorage,
    read_only: Arc<AtomicBool>,
}

impl Folder {
    fn check(&self) -> io::Result<()> {
        if self.read_only.load(Ordering::SeqCst) {
            Err(io::Error::from(io::ErrorKind::ReadOnlyFilesystem))
        } else {
            Ok(())
        }
    }
}

impl Storage for Folder {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(name, limit)
    }
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.check()?;
        self.inner.put(name, bytes)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.check()?;
        self.inner.delete(name)
    }
    fn list(&self) -> io::Result<Vec<StoredFile>> {
        self.inner.list()
    }
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        self.inner.read_at(name, offset, len)
    }
    fn copy(&self, from: &str, to: &str) -> io::Result<bool> {
        self.check()?;
        self.inner.copy(from, to)
    }
    fn locate(&self, name: &str) -> PathBuf {
        self.inner.locate(name)
    }
}

#[test]
fn a_save_into_a_read_only_folder_fails_and_the_previous_save_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    let emulated = Arc::new(AtomicBool::new(false));
    let folder = Folder {
        inner: FsStorage::new(&saves).unwrap(),
        read_only: Arc::clone(&emulated),
    };
    let mut app = app_with(
        savegame::SaveLoadManager::builder()
            .storage(folder)
            .key(savegame::Key::from_bytes(KEY)),
    );
    let hero = app
        .world_mut()
        .spawn((Saveable, Health { current: 7, max: 9 }))
        .id();
    app.world_mut().commands().save(SlotId::Numbered(1));
    app.update();
    settle(&mut app);
    assert_eq!(drain::<Saved>(&mut app).len(), 1);

    let read_only = ReadOnly::new(&saves, emulated);
    app.world_mut().get_mut::<Health>(hero).unwrap().current = 1;
    app.world_mut().commands().save(SlotId::Numbered(1));
    app.update();
    settle(&mut app);
    assert!(drain::<Saved>(&mut app).is_empty());
    let failed = drain::<SaveFailed>(&mut app);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].slot, SaveTarget::Slot(SlotId::Numbered(1)));
    assert!(
        matches!(&*failed[0].error, SaveError::Savegame(e) if matches!(**e, savegame::Error::Io { .. })),
        "{:?}",
        failed[0].error
    );

    // The folder is still read-only: the load reads the previous save.
    app.world_mut().commands().load(SlotId::Numbered(1));
    app.update();
    assert!(drain::<LoadFailed>(&mut app).is_empty());
    let loaded = drain::<Loaded>(&mut app);
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].report.recovered_from_backup, None);
    assert_eq!(
        app.world().get::<Health>(hero),
        Some(&Health { current: 7, max: 9 })
    );
    drop(read_only);
}

/// Serializes, except the value 13.
#[derive(Component, Clone, Debug, Deserialize)]
struct Fussy(u32);

impl Serialize for Fussy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0 == 13 {
            Err(serde::ser::Error::custom("13 is unlucky"))
        } else {
            serializer.serialize_u32(self.0)
        }
    }
}

#[test]
fn a_component_that_does_not_serialize_is_named_with_its_entity() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    app.save_component::<Fussy>();
    for n in [1, 2, 13, 4] {
        app.world_mut().spawn((Saveable, Fussy(n)));
    }
    let culprit = {
        let world = app.world_mut();
        let mut query = world.query::<(Entity, &Fussy)>();
        query.iter(world).find(|(_, f)| f.0 == 13).unwrap().0
    };
    app.world_mut().commands().save(SlotId::Numbered(2));
    // The values are copied in the frame and serialized on the worker: the failure is
    // reported in a later frame, and nothing is written.
    app.update();
    settle(&mut app);
    let failed = drain::<SaveFailed>(&mut app);
    assert_eq!(failed.len(), 1);
    match &*failed[0].error {
        SaveError::Serialize {
            type_name, entity, ..
        } => {
            assert!(type_name.ends_with("Fussy"), "{type_name}");
            assert_eq!(*entity, Some(culprit));
        }
        other => panic!("{other:?}"),
    }
    let message = failed[0].error.to_string();
    assert!(
        message.contains("Fussy") && message.contains(&culprit.to_string()),
        "{message}"
    );
    settle(&mut app);
    assert!(drain::<Saved>(&mut app).is_empty());
    assert!(!dir.path().join(SlotId::Numbered(2).file_name()).exists());
}

#[test]
fn two_entities_with_one_save_id_fail_the_save_and_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    let first = world
        .spawn((
            Saveable,
            savegame_bevy::SaveId::new(7).unwrap(),
            Label("a".into()),
        ))
        .id();
    let second = world
        .spawn((
            Saveable,
            savegame_bevy::SaveId::new(7).unwrap(),
            Label("b".into()),
        ))
        .id();
    app.world_mut().commands().save(SlotId::Numbered(5));
    app.update();
    settle(&mut app);
    let failed = drain::<SaveFailed>(&mut app);
    assert_eq!(failed.len(), 1);
    match &*failed[0].error {
        SaveError::DuplicateSaveId {
            id,
            first: a,
            second: b,
        } => {
            assert_eq!(*id, 7);
            let mut named = [*a, *b];
            named.sort();
            let mut expected = [first, second];
            expected.sort();
            assert_eq!(named, expected);
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir.path().join(SlotId::Numbered(5).file_name()).exists());
}

/// Two types under one name, or a name with a `+` (which marks a delta's rows in a save), fail
/// every save and load at once, naming the types; nothing is written.
#[test]
fn a_name_taken_twice_or_holding_a_plus_fails_the_save() {
    let dir = tempfile::tempdir().unwrap();
    for (name, expect) in [
        ("Label", "registered under the name"),
        ("Fussy+1", "holds a '+'"),
    ] {
        let mut app = app(dir.path());
        app.save_component_as::<Fussy>(name);
        app.world_mut().spawn((Saveable, Fussy(1)));
        app.world_mut().commands().save(SlotId::Numbered(6));
        app.update();
        let failed = drain::<SaveFailed>(&mut app);
        assert_eq!(failed.len(), 1, "{name}");
        let message = failed[0].error.to_string();
        assert!(
            matches!(
                &*failed[0].error,
                SaveError::DuplicateName { .. } | SaveError::BadName { .. }
            ) && message.contains(expect)
                && message.contains("Fussy"),
            "{message}"
        );
        assert!(!dir.path().join(SlotId::Numbered(6).file_name()).exists());
    }
}
