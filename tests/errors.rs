//! Errors tell the truth: a write that the operating system refuses for the file's size
//! (EFBIG, under a file-size limit) is `Error::Io` with its path and kind, not the read cap's
//! `TooLarge`, and the previous save survives it; `TooLarge` only ever means the read cap.
//!
//! The hole of issue 26: `manager/files.rs` turned every `ErrorKind::FileTooLarge` into
//! `TooLarge { size: cap + 1 }`, so a 580 KB save under `RLIMIT_FSIZE` failed with
//! "slot-001.sav is 268435457 bytes, over the 268435456-byte cap", its cause lost.

mod common;

use std::io;
use std::path::Path;
use std::process::Stdio;

use common::rerun_self;
use savegame::storage::{MemoryStorage, Storage, too_large};
use savegame::{Codec, Error, SaveLoadManager, SlotId};

const SLOT: SlotId = SlotId::Numbered(1);
const CHILD_DIR: &str = "SAVEGAME_EFBIG_CHILD_DIR";
const TEST: &str = "a_write_past_the_file_size_limit_is_io_with_its_path_not_the_read_cap";

fn manager(dir: &Path) -> SaveLoadManager {
    SaveLoadManager::builder()
        .directory(dir)
        .codec(Codec::MessagePack)
        .build()
        .unwrap()
}

/// In the child, under `ulimit -f 64` (64 KiB) with SIGXFSZ ignored, so that a write past
/// the limit fails with EFBIG rather than killing the process: a small save fits, a 580 KB
/// one does not.
fn child(dir: &Path) {
    let manager = manager(dir);
    let mut small = manager.snapshot();
    small.capture_memento("data", &vec![1u8; 1_000]).unwrap();
    manager.save(SLOT, &small).unwrap();
    let mut big = manager.snapshot();
    big.capture_memento("data", &vec![2u8; 580_000]).unwrap();
    match manager.save(SLOT, &big) {
        Err(Error::Io { path, source }) => {
            assert_eq!(source.kind(), io::ErrorKind::FileTooLarge, "{source}");
            assert!(path.starts_with(dir), "{}", path.display());
            println!("@@IO {} {source}", path.display());
        }
        other => println!("@@WRONG {other:?}"),
    }
    let loaded = manager.load(SLOT).unwrap();
    assert_eq!(
        loaded.snapshot.memento::<Vec<u8>>("data").unwrap().len(),
        1_000
    );
    println!("PREVIOUS SURVIVES");
}

#[test]
fn a_write_past_the_file_size_limit_is_io_with_its_path_not_the_read_cap() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child(Path::new(&dir));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let own = rerun_self(TEST, &[(CHILD_DIR, dir)]);
    // The shell ignores SIGXFSZ (an ignored signal stays ignored across exec) and sets the
    // limit, then becomes the test binary.
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 64 && exec "$0" "$@""#)
        .arg(own.get_program())
        .args(own.get_args())
        .env(CHILD_DIR, dir)
        .stderr(Stdio::inherit());
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("@@IO "),
        "the save did not fail with Error::Io: {stdout}"
    );
    assert!(stdout.contains("PREVIOUS SURVIVES"), "{stdout}");
}

/// A storage whose puts fail with `FileTooLarge` and no size: what `std::fs` gives for EFBIG.
#[derive(Debug, Clone)]
struct Efbig(MemoryStorage);

impl Storage for Efbig {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        self.0.read(name, limit)
    }
    fn put(&self, _name: &str, _bytes: &[u8]) -> io::Result<()> {
        Err(io::ErrorKind::FileTooLarge.into())
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.0.delete(name)
    }
    fn list(&self) -> io::Result<Vec<savegame::storage::StoredFile>> {
        self.0.list()
    }
}

#[test]
fn too_large_only_ever_means_the_read_cap() {
    let memory = MemoryStorage::new();
    let manager = SaveLoadManager::builder()
        .storage(Efbig(memory.clone()))
        .max_file_size(10_000)
        .build()
        .unwrap();
    let err = manager.save(SLOT, &manager.snapshot()).unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == io::ErrorKind::FileTooLarge),
        "{err:?}"
    );
    // The read cap is TooLarge, with the file's real size.
    memory.put(&SLOT.file_name(), &[0; 20_000]).unwrap();
    let err = manager.load(SLOT).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                size: 20_000,
                limit: 10_000,
                ..
            }
        ),
        "{err:?}"
    );
    // As a storage reports it.
    let e = too_large(20_000);
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
}
