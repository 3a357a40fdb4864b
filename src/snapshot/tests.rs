//! The snapshot's unit tests: capture and restore, ids, encoding on many threads, files sealed
//! by a tool.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::*;
#[cfg(feature = "encryption")]
use crate::format::Key;
use crate::slot::SlotId;

#[derive(Debug, Default, PartialEq)]
struct Counter {
    value: i32,
    restores: u32,
}

#[derive(Serialize, Deserialize)]
struct CounterMemento {
    value: i32,
}

impl Originator for Counter {
    type Memento = CounterMemento;
    fn create_memento(&self) -> CounterMemento {
        CounterMemento { value: self.value }
    }
    fn restore_memento(&mut self, m: CounterMemento) -> Result<()> {
        if m.value < 0 {
            return Err(Error::rejected("negative counter"));
        }
        self.value = m.value;
        self.restores += 1;
        Ok(())
    }
}

#[test]
fn encoding_on_many_threads_writes_the_bytes_one_thread_does() {
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let make = || {
        let mut s = Snapshot::new(Codec::Json);
        for i in 0..257u64 {
            let value = i32::try_from(i * 7).unwrap();
            let c = Counter { value, restores: 0 };
            s.capture(&format!("chunk-{i:04}"), &c).unwrap();
        }
        s
    };
    let seal = |s: &Snapshot, threads: usize| {
        s.sealer(SlotId::Numbered(1), 1, 1)
            .saved_at(at)
            .threads(threads)
            .build()
            .unwrap()
    };
    let one = seal(&make(), 1);
    for threads in [2, 3, 8, 1000] {
        assert_eq!(seal(&make(), threads), one, "{threads} threads");
    }
    // Sealed twice, a snapshot writes the same file: encoded ahead, or straight into it.
    let twice = make();
    assert_eq!(seal(&twice, 4), one);
    assert_eq!(seal(&twice, 1), one);
    let twice = make();
    assert_eq!(seal(&twice, 1), one);
    assert_eq!(seal(&twice, 4), one);
    assert_eq!(twice.encoded("chunk-0003").unwrap(), br#"{"value":21}"#);
}

#[test]
fn a_memento_that_fails_to_encode_on_a_thread_fails_the_save() {
    use std::collections::HashMap;
    // JSON cannot write a map with non-string keys.
    let mut s = Snapshot::new(Codec::Json);
    for i in 0..8u64 {
        s.capture_memento("ok", &i).unwrap();
        let c = Counter {
            value: i32::try_from(i).unwrap(),
            restores: 0,
        };
        s.capture(&format!("c{i}"), &c).unwrap();
    }
    let bad: HashMap<(u8, u8), u8> = HashMap::from([((1, 2), 3)]);
    struct Bad(HashMap<(u8, u8), u8>);
    impl Originator for Bad {
        type Memento = HashMap<(u8, u8), u8>;
        fn create_memento(&self) -> Self::Memento {
            self.0.clone()
        }
        fn restore_memento(&mut self, m: Self::Memento) -> Result<()> {
            self.0 = m;
            Ok(())
        }
    }
    s.capture("c5-bad", &Bad(bad)).unwrap();
    for threads in [1, 4] {
        let err = s
            .sealer(SlotId::Numbered(1), 1, 1)
            .threads(threads)
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, Error::Encode { id, .. } if id == "c5-bad"),
            "{threads}: {err}"
        );
    }
}

#[test]
fn capturing_an_id_twice_replaces_the_memento() {
    for codec in [Codec::Json, Codec::MessagePack] {
        let mut s = Snapshot::new(codec);
        s.capture(
            "c",
            &Counter {
                value: 1,
                restores: 0,
            },
        )
        .unwrap();
        s.capture(
            "c",
            &Counter {
                value: 2,
                restores: 0,
            },
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        let mut c = Counter::default();
        s.restore("c", &mut c).unwrap();
        assert_eq!(c.value, 2);
    }
}

#[test]
fn restoring_a_missing_id_is_a_typed_error_and_leaves_the_originator_alone() {
    let s = Snapshot::new(Codec::Json);
    let mut c = Counter {
        value: 7,
        restores: 0,
    };
    let err = s.restore("nobody", &mut c).unwrap_err();
    assert!(matches!(err, Error::MissingMemento { ref id } if id == "nobody"));
    assert_eq!(
        c,
        Counter {
            value: 7,
            restores: 0
        }
    );
}

#[test]
fn restoring_one_originator_does_not_decode_the_others() {
    let mut s = Snapshot::new(Codec::MessagePack);
    s.capture(
        "good",
        &Counter {
            value: 3,
            restores: 0,
        },
    )
    .unwrap();
    // Bytes that decode as nothing at all: only a decode of "broken" would notice.
    s.insert_raw("broken", vec![0xc1]).unwrap();
    let mut c = Counter::default();
    s.restore("good", &mut c).unwrap();
    assert_eq!(c.value, 3);
    let err = s.restore("broken", &mut c).unwrap_err();
    assert!(
        matches!(err, Error::Decode { ref id, .. } if id == "broken"),
        "{err}"
    );
    assert_eq!(c.value, 3, "a failed decode must not touch the originator");
}

#[test]
fn originators_can_reject_a_memento() {
    let mut s = Snapshot::new(Codec::Json);
    s.capture_memento("c", &CounterMemento { value: -1 })
        .unwrap();
    let err = s.restore("c", &mut Counter::default()).unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err}");
}

#[test]
fn ids_are_validated_and_listed_in_order() {
    let mut s = Snapshot::new(Codec::Json);
    assert!(matches!(
        s.capture("", &Counter::default()),
        Err(Error::InvalidId { .. })
    ));
    assert!(matches!(
        s.capture(&"x".repeat(MAX_ID_LEN + 1), &Counter::default()),
        Err(Error::InvalidId { .. })
    ));
    s.capture(&"x".repeat(MAX_ID_LEN), &Counter::default())
        .unwrap();
    s.capture("b", &Counter::default()).unwrap();
    s.capture("a", &Counter::default()).unwrap();
    assert_eq!(s.ids().take(2).collect::<Vec<_>>(), ["a", "b"]);
    assert!(s.contains("a"));
    assert!(s.remove("a"));
    assert!(!s.remove("a"));
    assert!(!s.contains("a"));
    assert_eq!(s.len(), 2);
}

#[cfg(feature = "encryption")]
#[test]
fn files_sealed_by_a_tool_open_again() {
    let key = Key::from_bytes([3; 32]);
    let mut s = Snapshot::new(Codec::MessagePack).with_label("tool");
    s.capture(
        "c",
        &Counter {
            value: 9,
            restores: 0,
        },
    )
    .unwrap();
    let bytes = s.seal_file(SlotId::Autosave(2), 5, 7, Some(&key)).unwrap();
    let (header, opened) = Snapshot::open_file(bytes.clone(), Some(&key)).unwrap();
    assert_eq!(opened.raw("c"), s.raw("c"));
    assert_eq!(opened.metadata().label, "tool");
    assert_eq!(opened.metadata().saved_at, Some(header.saved_at));
    assert_eq!(
        (
            header.slot,
            header.schema_version,
            header.generation,
            header.encrypted
        ),
        (SlotId::Autosave(2), 5, 7, true)
    );
    assert!(matches!(
        Snapshot::open_file(bytes, None),
        Err(Error::KeyRequired {
            purpose: crate::KeyPurpose::Decrypt
        })
    ));
}

#[test]
fn encoding_failures_are_typed_and_leave_the_snapshot_unchanged() {
    use std::collections::HashMap;
    #[derive(Serialize, PartialEq, Eq, Hash)]
    struct Key {
        a: u8,
    }
    let mut s = Snapshot::new(Codec::Json);
    let mut bad = HashMap::new();
    bad.insert(Key { a: 1 }, 1);
    let err = s.capture_memento("bad", &bad).unwrap_err();
    assert!(
        matches!(err, Error::Encode { ref id, .. } if id == "bad"),
        "{err}"
    );
    assert!(s.is_empty());
}
