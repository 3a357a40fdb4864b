//! The step files' unit tests: each operation, wildcards, value tables, the refusals, and the
//! RFC 6902 conformance cases.

use super::apply::{is_int, same_number};
use super::parse::{from_json, parse_ops};
use super::*;
use crate::migrate::document::Document;
use crate::migrate::error::MigrationError;

fn doc(json: &str) -> Document {
    let value = from_json(&serde_json::from_str(json).unwrap());
    let Value::Map(entries) = value else {
        panic!("a document is an object")
    };
    let mut d = Document::new();
    for (k, v) in entries {
        d.insert(k.as_str().unwrap(), v);
    }
    d
}

fn run(ops: &str, json: &str) -> Result<Document, MigrationError> {
    let mut d = doc(json);
    for op in parse_ops(ops).unwrap() {
        op.apply(&mut d)?;
    }
    Ok(d)
}

fn text(d: &Document) -> String {
    d.ids()
        .map(|id| format!("{id}={}", d.memento(id).unwrap()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn each_rfc_6902_op() {
    let d = run(
        r#"[{"op":"add","path":"/p/a","value":1},
                {"op":"add","path":"/p/list/1","value":"mid"},
                {"op":"add","path":"/p/list/-","value":"end"},
                {"op":"remove","path":"/p/gone"},
                {"op":"replace","path":"/p/hp","value":9},
                {"op":"move","from":"/p/old","path":"/p/new"},
                {"op":"copy","from":"/p/new","path":"/q"},
                {"op":"test","path":"/p/hp","value":9.0}]"#,
        r#"{"p":{"hp":1,"gone":true,"old":{"x":1},"list":["a","b"]}}"#,
    )
    .unwrap();
    assert_eq!(
        text(&d),
        r#"p={"hp":9,"list":["a","mid","b","end"],"a":1,"new":{"x":1}} q={"x":1}"#
    );
}

#[test]
fn rfc_6902_errors_name_the_path() {
    for (ops, path) in [
        (r#"[{"op":"remove","path":"/p/missing"}]"#, "/p/missing"),
        (
            r#"[{"op":"replace","path":"/p/missing","value":1}]"#,
            "/p/missing",
        ),
        (r#"[{"op":"add","path":"/p/no/such","value":1}]"#, "/p/no"),
        (
            r#"[{"op":"add","path":"/p/list/5","value":1}]"#,
            "/p/list/5",
        ),
        (r#"[{"op":"move","from":"/p/x","path":"/p/y"}]"#, "/p/x"),
        (r#"[{"op":"test","path":"/p/hp","value":2}]"#, "/p/hp"),
        (r#"[{"op":"remove","path":"/nobody/hp"}]"#, "/nobody"),
    ] {
        let err = run(ops, r#"{"p":{"hp":1,"list":[]}}"#).unwrap_err();
        assert_eq!(err.path, path, "{ops}: {err}");
    }
}

#[test]
fn wildcards_over_arrays_maps_and_mementos() {
    let d = run(
        r#"[{"op":"add","path":"/w/entities/*/z","value":0},
                {"op":"move","from":"/w/entities/*/x","path":"/w/entities/*/pos_x"},
                {"op":"remove","path":"/w/entities/*/junk"},
                {"op":"replace","path":"/w/names/*","value":"?"},
                {"op":"add_if_absent","path":"/*/version","value":1}]"#,
        r#"{"w":{"entities":[{"x":1,"junk":1},{"x":2,"junk":2}],"names":{"a":"A","b":"B"}},
                "v":{"version":7}}"#,
    )
    .unwrap();
    assert_eq!(
        text(&d),
        r#"v={"version":7} w={"entities":[{"z":0,"pos_x":1},{"z":0,"pos_x":2}],"names":{"a":"?","b":"?"},"version":1}"#
    );
    // A wildcard that matches nothing does nothing.
    let d = run(
        r#"[{"op":"remove","path":"/w/entities/*/x"}]"#,
        r#"{"w":{"entities":[]}}"#,
    )
    .unwrap();
    assert_eq!(text(&d), r#"w={"entities":[]}"#);
    // Removing every element of an array through a wildcard works from the end.
    let d = run(
        r#"[{"op":"remove","path":"/w/list/*"}]"#,
        r#"{"w":{"list":[1,2,3]}}"#,
    )
    .unwrap();
    assert_eq!(text(&d), r#"w={"list":[]}"#);
}

#[test]
fn add_if_absent_keeps_what_is_there() {
    let d = run(
        r#"[{"op":"add_if_absent","path":"/p/stamina","value":100},
                {"op":"add_if_absent","path":"/q/stamina","value":100}]"#,
        r#"{"p":{},"q":{"stamina":5}}"#,
    )
    .unwrap();
    assert_eq!(text(&d), r#"p={"stamina":100} q={"stamina":5}"#);
}

#[test]
fn value_tables() {
    let ops = r#"[{"op":"map","path":"/w/e/*/kind","table":{"tree":1,"rock":2,"7":"seven","true":"yes"}}]"#;
    let d = run(
        ops,
        r#"{"w":{"e":[{"kind":"rock"},{"kind":"tree"},{"kind":7},{"kind":true}]}}"#,
    )
    .unwrap();
    assert_eq!(
        text(&d),
        r#"w={"e":[{"kind":2},{"kind":1},{"kind":"seven"},{"kind":"yes"}]}"#
    );
    let err = run(ops, r#"{"w":{"e":[{"kind":"dragon"}]}}"#).unwrap_err();
    assert_eq!(err.path, "/w/e/0/kind");
    assert!(err.reason.contains("dragon"), "{err}");
    let with_default = r#"[{"op":"map","path":"/w/e/*/kind","table":{"tree":1},"default":0}]"#;
    let d = run(with_default, r#"{"w":{"e":[{"kind":"dragon"}]}}"#).unwrap();
    assert_eq!(text(&d), r#"w={"e":[{"kind":0}]}"#);
}

#[test]
fn splitting_a_memento_is_a_move_to_the_top() {
    let d = run(
        r#"[{"op":"move","from":"/player/inventory","path":"/inventory"}]"#,
        r#"{"player":{"hp":1,"inventory":{"potion":2}}}"#,
    )
    .unwrap();
    assert_eq!(text(&d), r#"inventory={"potion":2} player={"hp":1}"#);
}

#[test]
fn malformed_step_files_say_which_op() {
    for (file, index, needle) in [
        ("{}", None, "array"),
        ("[", None, "JSON"),
        (
            r#"[{"op":"add","path":"/a","value":1},{"op":"explode"}]"#,
            Some(1),
            "unknown op",
        ),
        (r#"[{"op":"add","path":"/a"}]"#, Some(0), "value"),
        (r#"[{"op":"add","path":"a","value":1}]"#, Some(0), "path"),
        (
            r#"[{"op":"remove","path":"/a","vaule":1}]"#,
            Some(0),
            "vaule",
        ),
        (
            r#"[{"op":"move","from":"/a","path":"/b/*"}]"#,
            Some(0),
            "wildcards",
        ),
        (
            r#"[{"op":"map","path":"/a","table":[1]}]"#,
            Some(0),
            "table",
        ),
        (r#"[{"op":"remove","path":""}]"#, Some(0), "memento"),
        ("[1]", Some(0), "object"),
    ] {
        let (i, reason) = parse_ops(file).unwrap_err();
        assert_eq!(i, index, "{file}");
        assert!(reason.contains(needle), "{file}: {reason}");
    }
}

/// One case of the JSON Patch community's conformance suite, in the memento model: the
/// case's document is the memento `d`, and its paths start with `/d`. `expected` is the
/// memento afterwards, or `None` when the patch must fail (to parse or to apply).
fn conformance(comment: &str, memento: &str, patch: &str, expected: Option<&str>) {
    let outcome = parse_ops(patch)
        .map_err(|(_, reason)| reason)
        .and_then(|ops| {
            let mut d = doc(&format!(r#"{{"d":{memento}}}"#));
            for op in ops {
                op.apply(&mut d).map_err(|e| e.to_string())?;
            }
            Ok(d)
        });
    match (outcome, expected) {
        (Ok(d), Some(expected)) => {
            let found: serde_json::Value =
                serde_json::from_str(&d.memento("d").unwrap().to_string()).unwrap();
            let expected: serde_json::Value = serde_json::from_str(expected).unwrap();
            assert_eq!(found, expected, "{comment}");
        }
        (Err(_), None) => {}
        (Ok(d), None) => panic!("{comment}: should fail, gave {}", text(&d)),
        (Err(e), Some(_)) => panic!("{comment}: should pass, failed: {e}"),
    }
}

#[test]
fn rfc_6902_conformance_cases() {
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        (
            "add replaces any existing field",
            r#"{"foo":null}"#,
            r#"[{"op":"add","path":"/d/foo","value":1}]"#,
            Some(r#"{"foo":1}"#),
        ),
        (
            "add into a composite value",
            r#"{"foo":1,"baz":[{"qux":"hello"}]}"#,
            r#"[{"op":"add","path":"/d/baz/0/foo","value":"world"}]"#,
            Some(r#"{"foo":1,"baz":[{"qux":"hello","foo":"world"}]}"#),
        ),
        (
            "add out of bounds (upper)",
            r#"{"bar":[1,2]}"#,
            r#"[{"op":"add","path":"/d/bar/8","value":"5"}]"#,
            None,
        ),
        (
            "add out of bounds (lower)",
            r#"{"bar":[1,2]}"#,
            r#"[{"op":"add","path":"/d/bar/-1","value":"5"}]"#,
            None,
        ),
        (
            "0 can be an object member's name",
            r#"{"foo":1}"#,
            r#"[{"op":"add","path":"/d/0","value":"bar"}]"#,
            Some(r#"{"foo":1,"0":"bar"}"#),
        ),
        (
            "insert into an array",
            r#"{"a":["foo","sil"]}"#,
            r#"[{"op":"add","path":"/d/a/1","value":"bar"}]"#,
            Some(r#"{"a":["foo","bar","sil"]}"#),
        ),
        (
            "push through the last index + 1",
            r#"{"a":["foo","sil"]}"#,
            r#"[{"op":"add","path":"/d/a/2","value":"bar"}]"#,
            Some(r#"{"a":["foo","sil","bar"]}"#),
        ),
        (
            "add at an index past the end fails",
            r#"{"a":["foo","sil"]}"#,
            r#"[{"op":"add","path":"/d/a/3","value":"bar"}]"#,
            None,
        ),
        (
            "an array value added is not flattened",
            r#"{"a":["foo","sil"]}"#,
            r#"[{"op":"add","path":"/d/a/1","value":["bar","baz"]}]"#,
            Some(r#"{"a":["foo",["bar","baz"],"sil"]}"#),
        ),
        (
            "an object member on an array fails",
            r#"{"a":["foo","sil"]}"#,
            r#"[{"op":"add","path":"/d/a/bar","value":42}]"#,
            None,
        ),
        (
            "- appends, n levels down",
            r#"{"a":[1,2,[3,[4,5]]]}"#,
            r#"[{"op":"add","path":"/d/a/2/1/-","value":{"foo":["bar","baz"]}}]"#,
            Some(r#"{"a":[1,2,[3,[4,5,{"foo":["bar","baz"]}]]]}"#),
        ),
        (
            "1e0 is a member's name, not a number",
            r#"{"1e0":"foo"}"#,
            r#"[{"op":"test","path":"/d/1e0","value":"foo"}]"#,
            Some(r#"{"1e0":"foo"}"#),
        ),
        (
            "1e0 is not an array index",
            r#"{"a":["foo","bar"]}"#,
            r#"[{"op":"test","path":"/d/a/1e0","value":"bar"}]"#,
            None,
        ),
        (
            "an index with a leading zero is not an index",
            r#"{"a":["foo","bar"]}"#,
            r#"[{"op":"test","path":"/d/a/01","value":"bar"}]"#,
            None,
        ),
        (
            "00 is not an index",
            r#"{"a":["foo","bar"]}"#,
            r#"[{"op":"test","path":"/d/a/00","value":"foo"}]"#,
            None,
        ),
        (
            "remove with a bad number fails",
            r#"{"a":[1,2,3,4]}"#,
            r#"[{"op":"remove","path":"/d/a/1e0"}]"#,
            None,
        ),
        (
            "remove a member",
            r#"{"foo":1,"bar":[1,2,3,4]}"#,
            r#"[{"op":"remove","path":"/d/bar"}]"#,
            Some(r#"{"foo":1}"#),
        ),
        (
            "remove a nested member",
            r#"{"foo":1,"baz":[{"qux":"hello"}]}"#,
            r#"[{"op":"remove","path":"/d/baz/0/qux"}]"#,
            Some(r#"{"foo":1,"baz":[{}]}"#),
        ),
        (
            "repeated removes",
            r#"{"a":[1,2,3,4]}"#,
            r#"[{"op":"remove","path":"/d/a/1"},{"op":"remove","path":"/d/a/2"}]"#,
            Some(r#"{"a":[1,3]}"#),
        ),
        (
            "removing a member that is not there fails",
            r#"{"foo":"bar"}"#,
            r#"[{"op":"remove","path":"/d/baz"}]"#,
            None,
        ),
        (
            "removing an index that is not there fails",
            r#"{"a":["foo","bar"]}"#,
            r#"[{"op":"remove","path":"/d/a/2"}]"#,
            None,
        ),
        (
            "replace a nested value",
            r#"{"foo":[1,2,3,4],"baz":[{"qux":"hello"}]}"#,
            r#"[{"op":"replace","path":"/d/baz/0/qux","value":"world"}]"#,
            Some(r#"{"foo":[1,2,3,4],"baz":[{"qux":"world"}]}"#),
        ),
        (
            "replace under a missing parent fails",
            r#"{"bar":"baz"}"#,
            r#"[{"op":"replace","path":"/d/foo/bar","value":false}]"#,
            None,
        ),
        (
            "null is a value like any other",
            r#"{"foo":null,"n":null}"#,
            r#"[{"op":"test","path":"/d/foo","value":null},
                    {"op":"copy","from":"/d/foo","path":"/d/bar"},
                    {"op":"move","from":"/d/foo","path":"/d/baz"},
                    {"op":"remove","path":"/d/bar"},
                    {"op":"replace","path":"/d/n","value":"truthy"}]"#,
            Some(r#"{"baz":null,"n":"truthy"}"#),
        ),
        (
            "test ignores the order of members, nested too",
            r#"{"foo":{"foo":1,"bar":2},"l":[{"foo":1,"bar":2}]}"#,
            r#"[{"op":"test","path":"/d/foo","value":{"bar":2,"foo":1}},
                    {"op":"test","path":"/d/l","value":[{"bar":2,"foo":1}]}]"#,
            Some(r#"{"foo":{"foo":1,"bar":2},"l":[{"foo":1,"bar":2}]}"#),
        ),
        (
            "test of a different value fails",
            r#"{"foo":{"bar":[1,2,5,4]}}"#,
            r#"[{"op":"test","path":"/d/foo","value":[1,2]}]"#,
            None,
        ),
        (
            "RFC 6901 escapes, the empty name and unusual characters",
            r#"{"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#,
            r#"[{"op":"test","path":"/d/","value":0},
                    {"op":"test","path":"/d/a~1b","value":1},
                    {"op":"test","path":"/d/c%d","value":2},
                    {"op":"test","path":"/d/e^f","value":3},
                    {"op":"test","path":"/d/g|h","value":4},
                    {"op":"test","path":"/d/i\\j","value":5},
                    {"op":"test","path":"/d/k\"l","value":6},
                    {"op":"test","path":"/d/ ","value":7},
                    {"op":"test","path":"/d/m~0n","value":8}]"#,
            Some(r#"{"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#),
        ),
        (
            "~01 is ~1, not /",
            r#"{"~1":1,"/":2}"#,
            r#"[{"op":"replace","path":"/d/~01","value":9}]"#,
            Some(r#"{"~1":9,"/":2}"#),
        ),
        (
            "move to the same location has no effect",
            r#"{"foo":1}"#,
            r#"[{"op":"move","from":"/d/foo","path":"/d/foo"}]"#,
            Some(r#"{"foo":1}"#),
        ),
        (
            "move into an array",
            r#"{"baz":[{"qux":"hello"}],"bar":1}"#,
            r#"[{"op":"move","from":"/d/baz/0/qux","path":"/d/baz/1"}]"#,
            Some(r#"{"baz":[{},"hello"],"bar":1}"#),
        ),
        (
            "copy",
            r#"{"baz":[{"qux":"hello"}],"bar":1}"#,
            r#"[{"op":"copy","from":"/d/baz/0","path":"/d/boo"}]"#,
            Some(r#"{"baz":[{"qux":"hello"}],"bar":1,"boo":{"qux":"hello"}}"#),
        ),
        (
            "missing value",
            r#"{"a":[1]}"#,
            r#"[{"op":"add","path":"/d/a/-"}]"#,
            None,
        ),
        (
            "missing from",
            r#"{"a":[1]}"#,
            r#"[{"op":"copy","path":"/d/a/-"}]"#,
            None,
        ),
        (
            "an unrecognised op",
            r#"{"foo":1}"#,
            r#"[{"op":"spam","path":"/d/foo","value":1}]"#,
            None,
        ),
    ];
    for (comment, memento, patch, expected) in cases {
        conformance(comment, memento, patch, *expected);
    }
}

/// RFC 6902 §4 says members an operation does not define "MUST be ignored". Step files
/// refuse them, deliberately: a misspelt member must not pass silently in a file that
/// rewrites players' saves. This is the community suite's "spurious patch properties" case.
#[test]
fn members_an_operation_does_not_define_are_refused() {
    conformance(
        "spurious patch properties (a deliberate deviation)",
        r#"{"foo":1}"#,
        r#"[{"op":"test","path":"/d/foo","value":1,"spurious":1}]"#,
        None,
    );
    for (file, member) in [
        (
            r#"[{"op":"test","path":"/d/foo","value":1,"spurious":1}]"#,
            "spurious",
        ),
        (
            r#"[{"op":"map","path":"/d/kind","table":{"a":1},"defualt":0}]"#,
            "defualt",
        ),
        (r#"[{"op":"remove","path":"/d/foo","value":1}]"#, "value"),
        (
            r#"[{"op":"move","from":"/d/a","path":"/d/b","value":1}]"#,
            "value",
        ),
    ] {
        let (index, reason) = parse_ops(file).unwrap_err();
        assert_eq!(index, Some(0), "{file}");
        assert!(reason.contains(&format!("{member:?}")), "{file}: {reason}");
        assert!(reason.contains("RFC 6902"), "{file}: {reason}");
    }
}

#[test]
fn tilde_2_is_a_literal_star() {
    let memento = r#"{"*":1,"a":2,"a*b":3,"~2":4}"#;
    // A `*` token is a wildcard: every member changes.
    conformance(
        "* is every member",
        r#"{"*":1,"a":2}"#,
        r#"[{"op":"replace","path":"/d/*","value":0}]"#,
        Some(r#"{"*":0,"a":0}"#),
    );
    conformance(
        "~2 is the member named *",
        memento,
        r#"[{"op":"replace","path":"/d/~2","value":0}]"#,
        Some(r#"{"*":0,"a":2,"a*b":3,"~2":4}"#),
    );
    conformance(
        "~2 inside a token is a *",
        memento,
        r#"[{"op":"replace","path":"/d/a~2b","value":0}]"#,
        Some(r#"{"*":1,"a":2,"a*b":0,"~2":4}"#),
    );
    conformance(
        "a * inside a token was always literal",
        memento,
        r#"[{"op":"replace","path":"/d/a*b","value":0}]"#,
        Some(r#"{"*":1,"a":2,"a*b":0,"~2":4}"#),
    );
    conformance(
        "~02 is ~ then 2: the member named ~2",
        memento,
        r#"[{"op":"remove","path":"/d/~02"}]"#,
        Some(r#"{"*":1,"a":2,"a*b":3}"#),
    );
    conformance(
        "move and copy from and to a literal *",
        r#"{"*":{"x":1},"b":{}}"#,
        r#"[{"op":"copy","from":"/d/~2/x","path":"/d/b/~2"},
                {"op":"move","from":"/d/~2","path":"/d/star"}]"#,
        Some(r#"{"b":{"*":1},"star":{"x":1}}"#),
    );
    conformance(
        "a literal * is not a wildcard in move",
        r#"{"*":1,"a":2}"#,
        r#"[{"op":"move","from":"/d/~2","path":"/d/b"}]"#,
        Some(r#"{"a":2,"b":1}"#),
    );
    // A literal * in `from` binds nothing, so `path` may not use a wildcard for it.
    let (_, reason) = parse_ops(r#"[{"op":"move","from":"/d/~2","path":"/d/*"}]"#).unwrap_err();
    assert!(reason.contains("wildcards"), "{reason}");
    for bad in ["/d/~3", "/d/~", "/d/a~"] {
        let file = format!(r#"[{{"op":"remove","path":"{bad}"}}]"#);
        let (_, reason) = parse_ops(&file).unwrap_err();
        assert!(reason.contains("~2"), "{bad}: {reason}");
    }
    // A pattern keeps its text for plans and messages.
    let ops = parse_ops(r#"[{"op":"remove","path":"/d/~2"}]"#).unwrap();
    assert_eq!(ops[0].paths(), ["/d/~2"]);
}

#[test]
fn test_compares_integers_exactly_and_floats_as_floats() {
    let memento = r#"{"id":9007199254740993,"seed":18446744073709551615,
                         "low":-9223372036854775808,"n":9,"f":0.5,"ids":{"a":9007199254740993}}"#;
    for (value, passes) in [
        (r#""/d/id","value":9007199254740993"#, true),
        (r#""/d/id","value":9007199254740992"#, false),
        (r#""/d/id","value":9007199254740994"#, false),
        // The nearest f64 to the id is 9007199254740992: not the id.
        (r#""/d/id","value":9007199254740993.0"#, false),
        (r#""/d/seed","value":18446744073709551615"#, true),
        (r#""/d/seed","value":18446744073709551614"#, false),
        (r#""/d/low","value":-9223372036854775808"#, true),
        (r#""/d/low","value":-9223372036854775807"#, false),
        // An integer and a float are equal when the float is that integer exactly.
        (r#""/d/n","value":9.0"#, true),
        (r#""/d/n","value":9e0"#, true),
        (r#""/d/n","value":9.5"#, false),
        (r#""/d/f","value":0.5"#, true),
        (r#""/d/f","value":5e-1"#, true),
        (r#""/d/f","value":0.5000000000000001"#, false),
        // Inside maps and arrays too.
        (r#""/d/ids","value":{"a":9007199254740993}"#, true),
        (r#""/d/ids","value":{"a":9007199254740992}"#, false),
        (r#""/d/id","value":"9007199254740993""#, false),
    ] {
        let patch = format!(r#"[{{"op":"test","path":{value}}}]"#);
        let result = run(&patch, &format!(r#"{{"d":{memento}}}"#));
        assert_eq!(result.is_ok(), passes, "{patch}: {result:?}");
    }
}

#[test]
fn test_compares_a_32_bit_float_at_its_own_precision() {
    let mut d = Document::new();
    let memento: Value = [
        ("speed".to_string(), Value::F32(0.1)),
        ("three".to_string(), Value::F32(3.0)),
        ("half".to_string(), Value::F32(0.5)),
    ]
    .into_iter()
    .collect();
    d.insert("d", memento);
    for (path, value, passes) in [
        ("/d/speed", "0.1", true),
        ("/d/speed", "0.2", false),
        ("/d/three", "3", true),
        ("/d/three", "3.0", true),
        ("/d/three", "4", false),
        ("/d/half", "0.5", true),
    ] {
        let patch = format!(r#"[{{"op":"test","path":"{path}","value":{value}}}]"#);
        let ops = parse_ops(&patch).unwrap();
        assert_eq!(ops[0].apply(&mut d).is_ok(), passes, "{patch}");
    }
    assert!(same_number(&Value::F32(0.5), &Value::F32(0.5)).unwrap());
    assert!(!same_number(&Value::F32(0.5), &Value::F32(0.25)).unwrap());
    assert!(same_number(&Value::Int(1), &"1".into()).is_none());
    assert!(!is_int(f64::NAN, 0));
    assert!(!is_int(f64::INFINITY, i128::MAX));
    assert!(is_int(-0.0, 0));
}
