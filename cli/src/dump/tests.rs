//! The dump's JSON form: values round-trip bit for bit, bad tags are errors with their path.

use std::collections::HashMap;

use serde::Serialize;

use super::*;

/// Dump JSON text of a value, and the value read back from that text.
fn through_text(v: &Value) -> (String, Value) {
    let json = to_json(v).ok().unwrap();
    let text = serde_json::to_string(&json).unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    let back = from_json(&parsed).ok().unwrap();
    (text, back)
}

fn same(a: &Value, b: &Value) -> bool {
    // PartialEq on floats says NaN != NaN; compare the bytes MessagePack makes instead.
    Codec::MessagePack.encode(a).unwrap() == Codec::MessagePack.encode(b).unwrap()
}

#[test]
fn ordinary_data_is_plain_json() {
    let v: Value = serde_json::from_str(r#"{"b":1,"a":[true,null,"x",-2,1.5,0.0]}"#).unwrap();
    let (text, back) = through_text(&v);
    assert_eq!(text, r#"{"b":1,"a":[true,null,"x",-2,1.5,0.0]}"#);
    assert_eq!(back, v);
}

#[derive(Serialize)]
struct Exotic {
    names: HashMap<u32, String>,
    small: f32,
    tiny: f32,
    odd: f32,
    nan32: f32,
    inf64: f64,
    ninf32: f32,
    #[serde(with = "bytes")]
    blob: Vec<u8>,
    dollar: BTreeMap<String, u8>,
    lone_dollar: BTreeMap<String, u8>,
    negative_zero: f32,
}

mod bytes {
    pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }
}

fn exotic() -> Exotic {
    Exotic {
        names: [(1, "one".to_string()), (70_000, "many".to_string())].into(),
        small: 0.1,
        tiny: 1e-42, // subnormal
        odd: 16_777_217.0,
        nan32: f32::NAN,
        inf64: f64::INFINITY,
        ninf32: f32::NEG_INFINITY,
        blob: vec![0, 1, 2, 255],
        dollar: [("$f32".to_string(), 1), ("x".to_string(), 2)].into(),
        lone_dollar: [("$ref".to_string(), 3)].into(),
        negative_zero: -0.0,
    }
}

#[test]
fn msgpack_values_round_trip_bit_for_bit_through_the_json_text() {
    let bytes = Codec::MessagePack.encode(&exotic()).unwrap();
    let value: Value = Codec::MessagePack.decode(&bytes).unwrap();
    let (text, back) = through_text(&value);
    assert!(same(&back, &value), "{text}");
    assert_eq!(Codec::MessagePack.encode(&back).unwrap(), bytes, "{text}");
    assert!(text.contains(r#""small":{"$f32":0.1}"#), "{text}");
    assert!(text.contains(r#"{"$f32":"NaN"}"#), "{text}");
    assert!(text.contains(r#"{"$f64":"inf"}"#), "{text}");
    assert!(text.contains(r#"{"$bytes":"AAEC/w=="}"#), "{text}");
    assert!(text.contains(r#"[1,"one"]"#), "{text}");
    assert!(
        text.contains(r#""lone_dollar":{"$map":[["$ref",3]]}"#),
        "{text}"
    );
}

#[test]
fn every_f32_bit_pattern_class_survives() {
    let mut samples = vec![
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        1e-45,
        3.402_823_5e38,
        0.3,
        -8272.22,
        1e20,
    ];
    // A spread over the whole bit space.
    let mut bits = 0x9e37_79b9u32;
    for _ in 0..20_000 {
        bits = bits.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let x = f32::from_bits(bits);
        if x.is_finite() {
            samples.push(x);
        }
    }
    for x in samples {
        let (text, back) = through_text(&Value::F32(x));
        match back {
            Value::F32(y) => assert_eq!(y.to_bits(), x.to_bits(), "{x:e} via {text}"),
            other => panic!("{other:?}"),
        }
    }
}

#[derive(Serialize)]
struct Edges {
    f32s: Vec<f32>,
    f64s: Vec<f64>,
    ints: (u64, i64, i8, u8),
    text: String,
    unit: (),
    none: Option<u8>,
}

#[test]
fn json_codec_mementos_encode_again_to_the_same_bytes() {
    let edges = Edges {
        f32s: vec![
            1e20,
            1e-7,
            123_456_790_000.0,
            3.4e38,
            1e16,
            0.1,
            -0.0,
            16_777_217.0,
            1e-45,
        ],
        f64s: vec![1e21, 1e22, 1e-7, 0.1 + 0.2, 5e-324, 1e300, -0.0, 2.0],
        ints: (u64::MAX, i64::MIN, -1, 255),
        text: "quote \" backslash \\ tab \t nul \u{0} bell \u{7} é \u{1F5E1}".into(),
        unit: (),
        none: None,
    };
    let bytes = Codec::Json.encode(&edges).unwrap();
    let value: Value = Codec::Json.decode(&bytes).unwrap();
    let (text, back) = through_text(&value);
    assert!(!text.contains("\"$"), "JSON mementos need no tags: {text}");
    assert_eq!(
        String::from_utf8(Codec::Json.encode(&back).unwrap()).unwrap(),
        String::from_utf8(bytes).unwrap()
    );
}

#[test]
fn f64_values_survive_bit_for_bit() {
    for x in [
        0.1,
        1e300,
        -2.5e-308,
        5e-324,
        1.0,
        100.0,
        f64::MAX,
        0.30000000000000004,
    ] {
        let (text, back) = through_text(&Value::Float(x));
        assert_eq!(back, Value::Float(x), "{text}");
    }
}

#[test]
fn bad_tags_are_errors_with_their_path() {
    for (json, path, needle) in [
        (r#"{"a":{"$f16":1}}"#, "/mementos/m/a", "unknown tag"),
        (r#"{"a":{"$f32":1,"b":2}}"#, "/mementos/m/a", "only key"),
        (
            r#"{"a":[{"$f32":"x"}]}"#,
            "/mementos/m/a/0/$f32",
            "not a number",
        ),
        (
            r#"{"a":{"$f32":1e300}}"#,
            "/mementos/m/a/$f32",
            "out of the range",
        ),
        (r#"{"a":{"$bytes":"!!"}}"#, "/mementos/m/a/$bytes", "base64"),
        (r#"{"a":{"$map":[[1]]}}"#, "/mementos/m/a/$map/0", "pair"),
        (r#"{"a":{"$map":{}}}"#, "/mementos/m/a/$map", "array"),
    ] {
        let v: Value = serde_json::from_str(json).unwrap();
        let err = from_json(&v).err().unwrap().into_error(&["mementos", "m"]);
        assert_eq!(err.path, path, "{json}");
        assert!(err.reason.contains(needle), "{json}: {}", err.reason);
    }
}

#[test]
fn pointer_tokens_are_escaped() {
    let v: Value = serde_json::from_str(r#"{"a/b":{"c~d":{"$f32":true}}}"#).unwrap();
    let err = from_json(&v).err().unwrap().into_error(&["mementos", "m"]);
    assert_eq!(err.path, "/mementos/m/a~1b/c~0d/$f32");
}
