//! Unit tests of the simulated file system's model.

use super::*;

fn fail_next(fs: &SimFs) {
    fs.inject(Fault {
        at: fs.op_count(),
        kind: FaultKind::Io,
        mode: FaultMode::Once,
    });
}

#[test]
fn a_failed_fsync_loses_the_bytes_it_should_have_written_for_good() {
    let fs = SimFs::new();
    let path = Path::new("/journal");
    let mut file = fs.open_append(path).unwrap();
    file.write_all(b"one.").unwrap();
    file.sync().unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    file.write_all(b"two.").unwrap();
    fail_next(&fs);
    let ops = fs.op_count();
    file.sync().unwrap_err();
    // The failed fsync has no place in the public log: the indices after it stay put.
    assert_eq!(fs.op_count(), ops);
    // Readable until a crash.
    assert_eq!(fs.read(path, u64::MAX).unwrap(), b"one.two.");
    // A later fsync that succeeds writes what was written since, not the lost bytes.
    file.write_all(b"six.").unwrap();
    file.sync().unwrap();
    for after in [ops, fs.op_count()] {
        for image in fs.crash_images(after) {
            let bytes = image.fs.files()[path].clone();
            assert!(bytes.starts_with(b"one."), "{image:?}: {bytes:?}");
            let lost = bytes.get(4..8).unwrap_or_default();
            assert!(
                lost.iter().all(|&b| b == 0),
                "after {after} ops, {:?}: the lost bytes came back: {bytes:?}",
                image.data
            );
        }
    }
    let last = fs.crash_images(fs.op_count());
    assert!(
        last.iter()
            .all(|image| image.fs.files()[path] == b"one.\0\0\0\0six."),
        "the file keeps its length, the lost bytes zeros, the later ones durable"
    );
}

#[test]
fn lost_bytes_written_over_again_are_written_by_the_next_fsync() {
    let fs = SimFs::new();
    let path = Path::new("/spare");
    fs.set_file(path, b"old bytes".to_vec());
    let mut file = fs.overwrite(path).unwrap();
    file.write_all(b"NEW_BYTES").unwrap();
    fail_next(&fs);
    file.sync().unwrap_err();
    for image in fs.crash_images(fs.op_count()) {
        let bytes = image.fs.files()[path].clone();
        assert!(
            bytes == b"old bytes" || bytes == [0; 9],
            "{:?}: {bytes:?}",
            image.data
        );
    }
    // Written over again from the start: every byte is written again.
    let mut again = fs.overwrite(path).unwrap();
    again.write_all(b"NEW_BYTES").unwrap();
    again.sync().unwrap();
    for image in fs.crash_images(fs.op_count()) {
        assert_eq!(image.fs.files()[path], b"NEW_BYTES");
    }
}

#[test]
fn a_failed_folder_fsync_leaves_its_entries_pending_until_one_succeeds() {
    let fs = SimFs::new();
    let dir = Path::new("/saves");
    fs.create_dir(dir).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let mut file = fs.create(&dir.join("a")).unwrap();
    file.write_all(b"a").unwrap();
    file.sync().unwrap();
    fail_next(&fs);
    fs.sync_dir(dir).unwrap_err();
    let pending = fs.crash_images(fs.op_count());
    assert!(
        pending
            .iter()
            .any(|i| !i.fs.files().contains_key(&dir.join("a")))
    );
    fs.sync_dir(dir).unwrap();
    for image in fs.crash_images(fs.op_count()) {
        assert_eq!(image.fs.files()[&dir.join("a")], b"a");
    }
}
