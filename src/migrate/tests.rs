//! The chain's unit tests: its checks, plans, step file names and checksums, and the
//! MessagePack fast path against the tree.

#[cfg(feature = "json")]
use super::step_file::parse_file_name;
use super::*;
#[cfg(all(feature = "json", feature = "msgpack"))]
use crate::codec::Codec;
use crate::error::Error;
#[cfg(all(feature = "json", feature = "msgpack"))]
use crate::error::Result;
#[cfg(all(feature = "json", feature = "msgpack"))]
use crate::snapshot::Snapshot;

fn noop(version: u32) -> Migrations {
    Migrations::new().step(version, format!("v{version}"), |_| Ok(()))
}

#[test]
fn the_chain_check_rejects_gaps_duplicates_and_steps_past_current() {
    let chain = noop(2).with(noop(3));
    chain.check(3).unwrap();
    Migrations::new().check(1).unwrap();

    let err = |m: Migrations, current| m.check(current).unwrap_err().to_string();
    assert!(err(noop(2).with(noop(4)), 4).contains("gap"));
    assert!(err(noop(2).with(noop(3)), 4).contains("gap"));
    assert!(err(noop(2).with(noop(2)), 2).contains("two steps"));
    assert!(err(noop(2).with(noop(3)), 2).contains("past the current"));
    assert!(err(noop(1), 1).contains("start at 1"));
}

#[test]
fn plans_list_the_steps_in_order_and_refuse_missing_ones() {
    let chain = noop(3).with(noop(2)).with(noop(4));
    let plan = chain.plan(1, 4).unwrap();
    assert_eq!(
        plan.iter().map(|s| s.version).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    assert!(chain.plan(2, 3).unwrap().len() == 1);
    assert!(chain.plan(4, 4).unwrap().is_empty());
    assert!(matches!(
        noop(3).plan(1, 3),
        Err(Error::NoMigrationPath { from: 1, to: 3 })
    ));
}

#[cfg(feature = "json")]
#[test]
fn step_file_names_and_checksums() {
    assert_eq!(
        parse_file_name("0002_rename_hp.json").unwrap(),
        (2, "rename_hp".into())
    );
    for bad in [
        "2_x.json",
        "0002.json",
        "0002_.json",
        "0002_x.txt",
        "00a2_x.json",
    ] {
        assert!(
            matches!(parse_file_name(bad), Err(Error::StepFile { ref file, .. }) if file == bad),
            "{bad}"
        );
    }
    assert_eq!(checksum(b""), "cbf29ce484222325");
    assert_eq!(checksum(b"a"), "af63dc4c8601ec8c");
    let m = Migrations::new().declarative("0002_x.json", "[]").unwrap();
    assert_eq!(
        m.steps()[0].checksum.as_deref(),
        Some(checksum(b"[]").as_str())
    );
    let err = Migrations::new()
        .declarative(
            "0002_x.json",
            r#"[{"op":"remove","path":"/a"},{"op":"nope"}]"#,
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::StepFile { ref file, op: Some(1), .. } if file == "0002_x.json"),
        "{err}"
    );
}

/// Every memento's bytes and version, or the error's text.
#[cfg(all(feature = "json", feature = "msgpack"))]
fn outcome(result: Result<Snapshot>) -> Result<Vec<(String, u32, Vec<u8>)>, String> {
    let snapshot = result.map_err(|e| e.to_string())?;
    Ok(snapshot
        .ids()
        .map(|id| {
            let bytes = snapshot.raw(id).unwrap_or_default().to_vec();
            (
                id.to_owned(),
                snapshot.memento_version(id).unwrap_or(0),
                bytes,
            )
        })
        .collect())
}

/// Migrates mementos of raw MessagePack bytes with the step files, through the bytes
/// where it can and through the tree alone, and checks both give the same, byte for byte
/// (or the same error); returns whether the bytes path was taken.
#[cfg(all(feature = "json", feature = "msgpack"))]
fn same_both_ways(steps: &[(&str, &str)], mementos: &[(&str, Vec<u8>)]) -> bool {
    let migrations = Migrations::embedded(steps).unwrap();
    let mut snapshot = Snapshot::new(Codec::MessagePack);
    for (id, bytes) in mementos {
        snapshot.insert_raw(id, bytes.clone()).unwrap();
    }
    snapshot.set_memento_version(mementos[0].0, 4).unwrap();
    let to = 1 + steps.len() as u32;
    let fast = migrations.migrate_mapping_bytes(&snapshot, 1, to).unwrap();
    let took_bytes = fast.is_some();
    let tree = outcome(migrations.migrate_tree(&snapshot, 1, to));
    assert_eq!(outcome(migrations.migrate_snapshot(&snapshot, 1, to)), tree);
    if let Some(fast) = fast {
        assert_eq!(outcome(Ok(fast)), tree);
    }
    took_bytes
}

#[cfg(all(feature = "json", feature = "msgpack"))]
fn set_at(v: &mut Value, path: &[&str], new: Value) {
    let mut at = v;
    for t in path {
        at = match at {
            Value::Array(items) => &mut items[t.parse::<usize>().unwrap()],
            other => other.get_mut(t).unwrap(),
        };
    }
    *at = new;
}

#[cfg(all(feature = "json", feature = "msgpack"))]
fn mp(v: &Value) -> Vec<u8> {
    Codec::MessagePack.encode(v).unwrap()
}

#[cfg(all(feature = "json", feature = "msgpack"))]
fn obj(fields: Vec<(&str, Value)>) -> Value {
    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

#[cfg(all(feature = "json", feature = "msgpack"))]
#[test]
fn mapping_on_the_bytes_gives_what_the_tree_gives() {
    const KINDS: &str = r#"[{"op": "map", "path": "/world/entities/*/kind",
            "table": {"tree": 1, "rock": "stone", "7": [1, {"a": null}], "true": 2.5,
                      "null": -40, "-129": 70000}}]"#;
    let scalars = [
        Value::from("tree"),
        Value::from("rock"),
        Value::from(7),
        Value::from(true),
        Value::Null,
        Value::from(-129),
    ];
    let entity = |i: usize, kind: Value| {
        obj(vec![
            ("id", Value::from(i as u64 * 977)),
            ("kind", kind),
            ("x", Value::from(i as f32 * 0.5)),
            ("y", Value::from(-(i as f64))),
        ])
    };
    let entities: Vec<Value> = (0..300)
        .map(|i| entity(i, scalars[i % scalars.len()].clone()))
        .collect();
    let world = obj(vec![
        ("name", Value::from("x".repeat(300))),
        ("blob", Value::Bytes(vec![7; 300])),
        ("entities", Value::from(entities)),
        ("big", Value::from(u64::MAX)),
        ("small", Value::from(i64::MIN)),
    ]);
    let player = obj(vec![("hp", Value::from(3))]);
    let both = |w: &Value| vec![("world", mp(w)), ("player", mp(&player))];
    assert!(same_both_ways(&[("0002_k.json", KINDS)], &both(&world)));

    // A kind the table lacks fails the same way, with or without another step.
    let mut odd = world.clone();
    set_at(&mut odd, &["entities", "5", "kind"], Value::from("cloud"));
    assert!(!same_both_ways(&[("0002_k.json", KINDS)], &both(&odd)));
    // ... unless there is a default, which also takes arrays, maps, floats and bytes.
    let with_default = r#"[{"op": "map", "path": "/world/entities/*/kind",
            "table": {"tree": 1}, "default": {"d": [0]}}]"#;
    for kind in [
        Value::from("cloud"),
        Value::from(vec![Value::from(1)]),
        Value::map(),
        Value::from(1.5),
        Value::from(0.25f32),
        Value::Bytes(vec![1]),
    ] {
        let mut odd = world.clone();
        set_at(&mut odd, &["entities", "3", "kind"], kind);
        assert!(same_both_ways(
            &[("0002_k.json", with_default)],
            &both(&odd)
        ));
    }

    // Literal indices and keys, integer keys, duplicate keys, wildcards over maps and
    // over scalars, a path that leads nowhere.
    let map_at = |path: &str| {
        format!(r#"[{{"op": "map", "path": "{path}", "table": {{"1": "one", "a": "A"}}}}]"#)
    };
    let tricky = Value::Map(vec![
        (
            Value::from("list"),
            Value::from(vec![Value::from(1), Value::from("a"), Value::from(2)]),
        ),
        (Value::from(5), Value::from("a")),
        (Value::from(70_000), Value::from(1)),
        (Value::from("dup"), Value::from(1)),
        (Value::from("dup"), Value::from(1)),
        (Value::from(vec![Value::from(1)]), Value::from(1)),
        (Value::from("s"), Value::from(1)),
    ]);
    let tricky = vec![("world", mp(&tricky))];
    for (path, fast) in [
        ("/world/list/1", true),
        ("/world/list/*", false),
        ("/world/list/01", false),
        ("/world/list/3", false),
        ("/world/5", true),
        ("/world/70000", true),
        ("/world/dup", true),
        ("/world/*", false),
        ("/world/s/*", true),
        ("/world/s/x", false),
        ("/world/missing", false),
    ] {
        let steps = map_at(path);
        assert_eq!(
            same_both_ways(&[("0002_m.json", &steps)], &tricky),
            fast,
            "{path}"
        );
    }

    // Another operation on the memento, a wildcard memento or a Rust step: the tree.
    let moved = r#"[{"op": "move", "from": "/player/hp", "path": "/world/hp"}]"#;
    assert!(!same_both_ways(
        &[("0002_k.json", KINDS), ("0003_m.json", moved)],
        &both(&world)
    ));
    let any = r#"[{"op": "map", "path": "/*/kind", "table": {}}]"#;
    assert!(!same_both_ways(
        &[("0002_k.json", KINDS), ("0003_a.json", any)],
        &both(&world)
    ));
    let player_only = r#"[{"op": "move", "from": "/player/hp", "path": "/player/health"}]"#;
    assert!(same_both_ways(
        &[("0002_k.json", KINDS), ("0003_p.json", player_only)],
        &both(&world)
    ));
}

#[cfg(all(feature = "json", feature = "msgpack"))]
#[test]
fn bytes_not_in_their_shortest_form_go_through_the_tree() {
    const MAP: &str = r#"[{"op": "map", "path": "/w/*/k", "table": {"a": 1}, "default": 0}]"#;
    // [{"k": "a", "v": <value>}] with `value` as raw bytes.
    let with = |value: &[u8]| {
        let mut b = vec![0x91, 0x82, 0xa1, b'k', 0xa1, b'a', 0xa1, b'v'];
        b.extend_from_slice(value);
        vec![("w", b)]
    };
    let shortest: [&[u8]; 12] = [
        &[0x7f],
        &[0xe0],
        &[0xcc, 0x80],
        &[0xcd, 0x01, 0x00],
        &[0xce, 0x00, 0x01, 0x00, 0x00],
        &[0xcf, 0, 0, 0, 1, 0, 0, 0, 0],
        &[0xd0, 0xdf],
        &[0xd1, 0xff, 0x7f],
        &[0xd2, 0xff, 0xff, 0x7f, 0xff],
        &[0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff],
        &[0xca, 0x7f, 0xc0, 0x00, 0x01],
        &[0xc4, 0x00],
    ];
    for value in shortest {
        assert!(
            same_both_ways(&[("0002_m.json", MAP)], &with(value)),
            "{value:x?}"
        );
    }
    let longer: [&[u8]; 14] = [
        &[0xcc, 0x7f],
        &[0xcd, 0x00, 0xff],
        &[0xce, 0x00, 0x00, 0xff, 0xff],
        &[0xcf, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        &[0xd0, 0xe0],
        &[0xd0, 0x05],
        &[0xd1, 0xff, 0x80],
        &[0xd2, 0xff, 0xff, 0x80, 0x00],
        &[0xd3, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0],
        &[0xd9, 0x01, b'a'],
        &[0xdc, 0x00, 0x00],
        &[0xde, 0x00, 0x00],
        &[0xc5, 0x00, 0x00],
        &[0xd4, 0x01, 0x02],
    ];
    for value in longer {
        assert!(
            !same_both_ways(&[("0002_m.json", MAP)], &with(value)),
            "{value:x?}"
        );
    }
    // Damage: truncated, trailing bytes, invalid UTF-8, the unused marker.
    for bytes in [
        vec![0x91, 0x82, 0xa1, b'k'],
        vec![0x90, 0x00],
        vec![0x91, 0x81, 0xa1, b'k', 0xa1, 0xff],
        vec![0x91, 0x81, 0xa1, b'k', 0xc1],
    ] {
        assert!(!same_both_ways(&[("0002_m.json", MAP)], &[("w", bytes)]));
    }
}

#[cfg(all(feature = "json", feature = "msgpack"))]
fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let key = prop_oneof![
        prop::sample::select(vec!["k", "a", "tree", "*", "1"]).prop_map(Value::from),
        (0u64..3).prop_map(Value::from),
        Just(Value::Null),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-200i64..300).prop_map(Value::from),
        any::<f32>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec!["a", "tree", "k", "é", ""]).prop_map(Value::from),
        (0usize..300).prop_map(|n| Value::from("y".repeat(n))),
        prop::collection::vec(any::<u8>(), 0..3).prop_map(Value::Bytes),
    ];
    leaf.prop_recursive(4, 48, 20, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..20).prop_map(Value::Map),
        ]
    })
}

#[cfg(all(feature = "json", feature = "msgpack"))]
proptest::proptest! {
    #[test]
    fn mapping_on_the_bytes_gives_what_the_tree_gives_for_any_value(
        value in any_value(),
        tokens in proptest::collection::vec(
            proptest::sample::select(vec!["*", "k", "0", "1", "~2", "tree"]), 0..4),
        default in proptest::option::of(proptest::sample::select(vec!["0", "[1]", "null"])),
        damage in proptest::option::of((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>())),
    ) {
        let path: String = tokens.iter().map(|t| format!("/{t}")).collect();
        let default = default.map(|d| format!(r#", "default": {d}"#)).unwrap_or_default();
        let steps = format!(
            r#"[{{"op": "map", "path": "/w{path}", "table": {{"a": 1, "tree": "x", "1": [2],
                    "true": {{"b": 2.5}}, "null": "n"}}{default}}}]"#
        );
        let mut bytes = mp(&value);
        if let Some((at, byte)) = damage {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        same_both_ways(&[("0002_m.json", &steps)], &[("w", bytes), ("o", mp(&value))]);
    }
}

#[cfg(feature = "json")]
#[test]
fn a_failing_step_names_itself_its_version_and_the_path() {
    let m = Migrations::new()
        .declarative(
            "0002_rename.json",
            r#"[{"op":"move","from":"/p/hp","path":"/p/health"}]"#,
        )
        .unwrap();
    let mut doc = Document::new();
    doc.insert("p", Value::map());
    match m.run(&mut doc, 1, 2).unwrap_err() {
        Error::Migration {
            step,
            version,
            source,
        } => {
            assert_eq!((step.as_str(), version), ("rename", 2));
            assert_eq!(source.path, "/p/hp");
            assert!(source.reason.contains("op 0 (move)"), "{}", source.reason);
        }
        other => panic!("{other}"),
    }
}
