//! Unit tests of the generator and validator, per keyword family.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::*;
use crate::spec::model::SchemaSet;

const MODES: [Mode; 4] = [Mode::Example, Mode::Min, Mode::Max, Mode::Random];

fn set(defs: Value) -> SchemaSet {
    let mut s = SchemaSet::default();
    if let Value::Object(m) = defs {
        for (k, v) in m {
            s.defs.insert(k, v);
        }
    }
    s
}

/// Generates in every mode from many seeds; every value must validate (independent validator).
fn check_all(schemas: &SchemaSet, schema: &Value, direction: Direction) -> Vec<Value> {
    let options = GenerateOptions {
        direction,
        ..GenerateOptions::default()
    };
    let g = Generator::new(schemas, options);
    let v = Validator::new_for(schemas, schema, ValidateOptions::default(), direction)
        .expect("schema compiles");
    let mut out = Vec::new();
    for mode in MODES {
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let value = g
                .generate(schema, mode, &mut rng)
                .unwrap_or_else(|e| panic!("{mode:?} seed {seed}: {e}"));
            assert!(
                v.is_valid(&value),
                "{mode:?} seed {seed}: {value} invalid: {:?}",
                v.errors(&value)
            );
            out.push(value);
        }
    }
    out
}

fn check(schema: Value) -> Vec<Value> {
    check_all(&SchemaSet::default(), &schema, Direction::Request)
}

fn one(schemas: &SchemaSet, schema: &Value, mode: Mode) -> Value {
    let g = Generator::new(schemas, GenerateOptions::default());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    g.generate(schema, mode, &mut rng).expect("generates")
}

#[test]
fn types_single_and_lists() {
    for t in [
        "null", "boolean", "integer", "number", "string", "array", "object",
    ] {
        check(json!({ "type": t }));
    }
    let values = check(json!({ "type": ["string", "null"] }));
    assert!(values.iter().any(Value::is_null));
    assert!(values.iter().any(Value::is_string));
    check(json!({}));
    check(json!(true));
}

#[test]
fn enum_and_const() {
    let values = check(json!({ "type": "string", "enum": ["a", "b", "c"] }));
    assert!(values
        .iter()
        .all(|v| ["a", "b", "c"].contains(&v.as_str().unwrap_or(""))));
    check(json!({ "enum": [1, "x", null] }));
    let values = check(json!({ "const": { "k": [1, 2] } }));
    assert!(values.iter().all(|v| v == &json!({ "k": [1, 2] })));
    assert_eq!(
        one(
            &SchemaSet::default(),
            &json!({"enum": ["a", "b"]}),
            Mode::Max
        ),
        json!("b")
    );
}

#[test]
fn numeric_bounds() {
    check(json!({ "type": "integer", "minimum": 5, "maximum": 9 }));
    check(json!({ "type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 7 }));
    check(json!({ "type": "integer", "maximum": -1000000 }));
    check(json!({ "type": "integer", "format": "int32" }));
    check(json!({ "type": "integer", "format": "int64", "minimum": 9007199254740993i64 }));
    check(json!({ "type": "number", "minimum": 0.5, "maximum": 0.75 }));
    check(json!({ "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 }));
    check(json!({ "type": "number", "exclusiveMinimum": 1e-9, "maximum": 2e-9 }));
    check(json!({ "type": "number", "format": "float" }));
    let s = SchemaSet::default();
    assert_eq!(
        one(&s, &json!({"type": "integer", "minimum": 3}), Mode::Min),
        json!(3)
    );
    assert_eq!(
        one(&s, &json!({"type": "integer", "maximum": 3}), Mode::Max),
        json!(3)
    );
    assert_eq!(
        one(
            &s,
            &json!({"type": "integer", "exclusiveMaximum": 3}),
            Mode::Max
        ),
        json!(2)
    );
}

#[test]
fn multiple_of_integers_and_decimals() {
    check(json!({ "type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 100 }));
    check(json!({ "type": "integer", "multipleOf": 0.5 }));
    check(json!({ "type": "integer", "multipleOf": 2.5 }));
    check(json!({ "type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 10 }));
    check(json!({ "type": "number", "multipleOf": 0.1 }));
    check(json!({ "type": "number", "multipleOf": 3, "exclusiveMinimum": 3 }));
    check(
        json!({ "type": "number", "multipleOf": 0.25, "exclusiveMinimum": -1, "exclusiveMaximum": 1 }),
    );
}

#[test]
fn impossible_numbers_are_refused() {
    let g_set = SchemaSet::default();
    let g = Generator::new(&g_set, GenerateOptions::default());
    for schema in [
        json!({ "type": "integer", "minimum": 5, "maximum": 4 }),
        json!({ "type": "integer", "multipleOf": 10, "minimum": 1, "maximum": 9 }),
        json!({ "type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1 }),
        json!({ "type": "string", "minLength": 5, "maxLength": 2 }),
        json!({ "type": "array", "minItems": 3, "maxItems": 1 }),
        json!({ "type": "string", "minLength": 1_000_000_000u64 }),
        json!({ "type": "array", "minItems": 1_000_000_000u64, "uniqueItems": true }),
        json!(false),
    ] {
        let e = g.can_generate(&schema).expect_err("impossible");
        assert!(e.to_string().contains("admits no value"), "{e}");
    }
}

#[test]
fn string_lengths_in_code_points() {
    let values = check(json!({ "type": "string", "minLength": 3, "maxLength": 5 }));
    for v in &values {
        let n = v.as_str().map(|s| s.chars().count()).unwrap_or(0);
        assert!((3..=5).contains(&n));
    }
    let s = SchemaSet::default();
    assert_eq!(one(&s, &json!({"type": "string"}), Mode::Min), json!(""));
    let max = one(&s, &json!({"type": "string"}), Mode::Max);
    assert_eq!(max.as_str().map(|s| s.chars().count()), Some(64));
    let big = one(&s, &json!({"type": "string", "minLength": 100}), Mode::Max);
    assert_eq!(big.as_str().map(|s| s.chars().count()), Some(100));
    check(json!({ "type": "string", "maxLength": 0 }));
}

#[test]
fn patterns() {
    check(json!({ "type": "string", "pattern": "^[A-Z]{2}-\\d{3}$" }));
    check(json!({ "type": "string", "pattern": "^(foo|bar)+baz?$" }));
    check(json!({ "type": "string", "pattern": "[a-z]+@[a-z]+\\.com" }));
    check(json!({ "type": "string", "pattern": "^\\w+$", "minLength": 10, "maxLength": 12 }));
    check(json!({ "type": "string", "pattern": "abc", "minLength": 10 }));
    check(json!({ "type": "string", "pattern": "^[^\\s]{3,}$" }));
    check(json!({ "type": "string", "pattern": "^\\p{L}+$" }));
    check(json!({ "type": "string", "pattern": "^(?i)yes|no$" }));
    check(json!({ "type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$", "format": "date" }));
    // The pattern demands more than the default cap.
    check(json!({ "type": "string", "pattern": "^[a-z]{100}$" }));
}

#[test]
fn hostile_patterns_return_fast() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let start = std::time::Instant::now();
    for p in [
        "(a*)*b",
        "^(\\w+\\s?)*$",
        "^(a|a)*$",
        "((a+)+)+c",
        "(x+x+)+y",
        "(.*){20}",
    ] {
        for _ in 0..50 {
            let s = generate_matching(p, &mut rng, 64).expect("generates");
            assert!(s.chars().count() <= 64);
        }
        check(json!({ "type": "string", "pattern": p }));
    }
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    let e = generate_matching("a{1000}", &mut rng, 64).expect_err("too long");
    assert!(matches!(e, PatternError::TooLong { .. }), "{e}");
}

#[test]
fn unsupported_patterns_error_cleanly() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for p in ["(?=a)b", "(?<!x)y", "(a)\\1"] {
        let e = generate_matching(p, &mut rng, 10).expect_err("unsupported");
        assert!(matches!(e, PatternError::Unsupported { .. }), "{p}: {e}");
    }
    let e = generate_matching("a{", &mut rng, 10).expect_err("syntax");
    assert!(
        matches!(
            e,
            PatternError::Syntax { .. } | PatternError::Unsupported { .. }
        ),
        "{e}"
    );
    let s = SchemaSet::default();
    let g = Generator::new(&s, GenerateOptions::default());
    let e = g
        .can_generate(&json!({ "type": "string", "pattern": "(?=a)b" }))
        .expect_err("unsupported");
    assert!(e.to_string().contains("pattern at #/pattern"), "{e}");
}

#[test]
fn formats_pass_format_checks() {
    for f in format::STRING_FORMATS {
        let values = check(json!({ "type": "string", "format": f }));
        assert!(values.iter().all(Value::is_string), "{f}");
    }
    check(json!({ "type": "string", "format": "byte", "minLength": 8, "maxLength": 16 }));
    for f in ["email", "uri", "uri-reference", "hostname"] {
        check(json!({ "type": "string", "format": f, "minLength": 30, "maxLength": 40 }));
        check(json!({ "type": "string", "format": f, "maxLength": 22 }));
    }
    for f in ["binary", "password", "unknown-format"] {
        check(json!({ "type": "string", "format": f, "minLength": 2, "maxLength": 6 }));
    }
    for f in ["float", "double"] {
        check(json!({ "type": "number", "format": f }));
    }
    for v in check(json!({ "type": "integer", "format": "int32" })) {
        let n = v.as_i64().unwrap_or(i64::MAX);
        assert!(n >= i32::MIN as i64 && n <= i32::MAX as i64);
    }
}

#[test]
fn format_checks_are_asserted() {
    let s = SchemaSet::default();
    let on = Validator::new(
        &s,
        &json!({"format": "date"}),
        ValidateOptions {
            check_formats: true,
        },
    )
    .expect("compiles");
    let off = Validator::new(
        &s,
        &json!({"format": "date"}),
        ValidateOptions {
            check_formats: false,
        },
    )
    .expect("compiles");
    assert!(!on.is_valid(&json!("2024-13-45")));
    assert!(off.is_valid(&json!("2024-13-45")));
    let byte = Validator::new(&s, &json!({"format": "byte"}), ValidateOptions::default())
        .expect("compiles");
    assert!(byte.is_valid(&json!("aGVsbG8=")));
    assert!(!byte.is_valid(&json!("not base64!")));
}

#[test]
fn arrays() {
    let values = check(
        json!({ "type": "array", "items": { "type": "integer" }, "minItems": 2, "maxItems": 4 }),
    );
    assert!(values
        .iter()
        .all(|v| v.as_array().is_some_and(|a| (2..=4).contains(&a.len()))));
    check(
        json!({ "type": "array", "items": { "type": "integer", "minimum": 0, "maximum": 20 }, "uniqueItems": true, "minItems": 5 }),
    );
    check(
        json!({ "type": "array", "items": { "enum": ["a", "b", "c"] }, "uniqueItems": true, "minItems": 3 }),
    );
    check(
        json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "integer" }], "items": false }),
    );
    check(
        json!({ "type": "array", "prefixItems": [{ "type": "string" }], "items": { "type": "boolean" }, "minItems": 3 }),
    );
    check(json!({ "type": "array", "items": { "type": "integer" }, "contains": { "const": 42 } }));
    check(
        json!({ "type": "array", "contains": { "type": "string" }, "minContains": 2, "maxItems": 3 }),
    );
    let s = SchemaSet::default();
    assert_eq!(
        one(
            &s,
            &json!({"type": "array", "items": {"type": "string"}}),
            Mode::Min
        ),
        json!([])
    );
    let max = one(
        &s,
        &json!({"type": "array", "items": {"type": "string"}}),
        Mode::Max,
    );
    assert_eq!(max.as_array().map(Vec::len), Some(5));
}

#[test]
fn objects() {
    let schema = json!({
        "type": "object",
        "required": ["id", "name"],
        "properties": {
            "id": { "type": "integer" },
            "name": { "type": "string", "minLength": 1 },
            "tag": { "type": "string" },
            "extra": { "type": "boolean" }
        },
        "additionalProperties": false
    });
    check(schema.clone());
    let s = SchemaSet::default();
    let min = one(&s, &schema, Mode::Min);
    assert_eq!(
        min.as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["id".to_string(), "name".to_string()])
    );
    let max = one(&s, &schema, Mode::Max);
    assert_eq!(
        max.as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "id".into(),
            "name".into(),
            "tag".into(),
            "extra".into()
        ])
    );
    check(json!({ "type": "object", "additionalProperties": { "type": "integer" } }));
    check(
        json!({ "type": "object", "additionalProperties": { "type": "integer" }, "minProperties": 3 }),
    );
    check(
        json!({ "type": "object", "patternProperties": { "^x-[a-z]+$": { "type": "string" } }, "additionalProperties": false, "minProperties": 2 }),
    );
    check(
        json!({ "type": "object", "properties": { "a": {}, "b": {}, "c": {} }, "maxProperties": 1 }),
    );
    check(
        json!({ "type": "object", "properties": { "a": {"type": "integer"} }, "minProperties": 3 }),
    );
    check(json!({ "type": "object", "required": ["undeclared"] }));
    check(
        json!({ "type": "object", "propertyNames": { "pattern": "^[a-z]{3}$" }, "minProperties": 2 }),
    );
}

#[test]
fn read_only_skipped_in_requests_write_only_in_responses() {
    let schema = json!({
        "type": "object",
        "required": ["id", "name", "password"],
        "properties": {
            "id": { "type": "integer", "readOnly": true },
            "name": { "type": "string" },
            "password": { "type": "string", "writeOnly": true }
        }
    });
    let s = SchemaSet::default();
    for v in check_all(&s, &schema, Direction::Request) {
        assert!(v.get("id").is_none() && v.get("password").is_some(), "{v}");
    }
    for v in check_all(&s, &schema, Direction::Response) {
        assert!(v.get("id").is_some() && v.get("password").is_none(), "{v}");
    }
    // Through a reference too.
    let defs = set(json!({ "Id": { "type": "integer", "readOnly": true } }));
    let schema = json!({ "type": "object", "required": ["id"], "properties": { "id": { "$ref": "#/$defs/Id" } } });
    for v in check_all(&defs, &schema, Direction::Request) {
        assert_eq!(v, json!({}));
    }
}

#[test]
fn refs_and_recursion() {
    let defs = set(json!({
        "Tree": {
            "type": "object",
            "required": ["value", "children"],
            "properties": {
                "value": { "type": "integer" },
                "children": { "type": "array", "items": { "$ref": "#/$defs/Tree" } }
            }
        },
        "List": {
            "type": "object",
            "required": ["head"],
            "properties": {
                "head": { "type": "string" },
                "next": { "anyOf": [{ "$ref": "#/$defs/List" }, { "type": "null" }] }
            }
        },
        "Nullable": {
            "type": ["object", "null"],
            "properties": { "self": { "$ref": "#/$defs/Nullable" } },
            "required": ["self"]
        },
        "Infinite": {
            "type": "object",
            "required": ["next"],
            "properties": { "next": { "$ref": "#/$defs/Infinite" } }
        },
        "A": { "$ref": "#/$defs/B" },
        "B": { "type": "string", "minLength": 2 }
    }));
    check_all(
        &defs,
        &json!({ "$ref": "#/$defs/Tree" }),
        Direction::Request,
    );
    check_all(
        &defs,
        &json!({ "$ref": "#/$defs/List" }),
        Direction::Request,
    );
    check_all(
        &defs,
        &json!({ "$ref": "#/$defs/Nullable" }),
        Direction::Request,
    );
    check_all(&defs, &json!({ "$ref": "#/$defs/A" }), Direction::Request);
    let g = Generator::new(&defs, GenerateOptions::default());
    let e = g
        .can_generate(&json!({ "$ref": "#/$defs/Infinite" }))
        .expect_err("infinite");
    assert!(matches!(e, GenerateError::Recursion { .. }), "{e}");
    assert!(e.to_string().contains("#/$defs/Infinite"), "{e}");
    let e = g
        .can_generate(&json!({ "$ref": "#/$defs/Missing" }))
        .expect_err("dangling");
    assert!(
        matches!(
            e,
            GenerateError::Schema(_) | GenerateError::DanglingRef { .. }
        ),
        "{e}"
    );
}

#[test]
fn all_of_merges() {
    let defs = set(json!({
        "Base": { "type": "object", "required": ["id"], "properties": { "id": { "type": "integer", "minimum": 1 } } },
        "Named": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string", "maxLength": 8 } } }
    }));
    let schema = json!({ "allOf": [{ "$ref": "#/$defs/Base" }, { "$ref": "#/$defs/Named" }, { "properties": { "id": { "maximum": 5 } } }] });
    for v in check_all(&defs, &schema, Direction::Request) {
        assert!(v.get("id").is_some() && v.get("name").is_some());
    }
    check(
        json!({ "allOf": [{ "type": "integer", "minimum": 0 }, { "maximum": 10 }, { "multipleOf": 3 }, { "multipleOf": 2 }] }),
    );
    check(
        json!({ "allOf": [{ "type": ["string", "null"] }, { "type": "string", "minLength": 2 }] }),
    );
    check(json!({ "allOf": [{ "enum": [1, 2, 3] }, { "enum": [2, 3, 4] }] }));
    check(json!({ "allOf": [{ "type": "string", "pattern": "^a" }, { "pattern": "b$" }] }));
    let sibling = json!({ "$ref": "#/$defs/Base", "properties": { "extra": { "type": "boolean" } }, "required": ["extra"] });
    for v in check_all(&defs, &sibling, Direction::Request) {
        assert!(v.get("id").is_some() && v.get("extra").is_some());
    }
}

#[test]
fn one_of_any_of_not() {
    let values = check(
        json!({ "oneOf": [{ "type": "integer", "multipleOf": 2 }, { "type": "integer", "multipleOf": 3 }] }),
    );
    assert!(values
        .iter()
        .all(|v| v.as_i64().is_some_and(|n| (n % 2 == 0) != (n % 3 == 0))));
    check(json!({ "oneOf": [{ "type": "string" }, { "type": "string", "maxLength": 3 }] }));
    check(json!({ "anyOf": [{ "type": "string", "minLength": 2 }, { "type": "boolean" }] }));
    check(json!({ "type": "integer", "minimum": 0, "maximum": 3, "not": { "const": 0 } }));
    check(json!({ "type": "string", "not": { "enum": ["", "a"] } }));
    check(json!({ "not": { "type": "null" } }));
    check(json!({
        "type": "object",
        "properties": { "kind": { "type": "string" } },
        "oneOf": [
            { "required": ["a"], "properties": { "a": { "type": "integer" } } },
            { "required": ["b"], "properties": { "b": { "type": "string" } } }
        ]
    }));
    let s = SchemaSet::default();
    let g = Generator::new(&s, GenerateOptions::default());
    let e = g
        .can_generate(&json!({ "type": "boolean", "not": { "type": "boolean" } }))
        .expect_err("never");
    assert!(e.to_string().contains("not"), "{e}");
}

#[test]
fn discriminator_sets_the_property() {
    let defs = set(json!({
        "Cat": { "type": "object", "required": ["petType", "meow"], "properties": { "petType": { "type": "string" }, "meow": { "type": "boolean" } } },
        "Dog": { "type": "object", "required": ["petType", "bark"], "properties": { "petType": { "type": "string" }, "bark": { "type": "string" } } }
    }));
    let schema = json!({
        "oneOf": [{ "$ref": "#/$defs/Cat" }, { "$ref": "#/$defs/Dog" }],
        "discriminator": { "propertyName": "petType", "mapping": { "cat": "#/$defs/Cat" } }
    });
    let values = check_all(&defs, &schema, Direction::Request);
    for v in &values {
        let t = v.get("petType").and_then(Value::as_str);
        if v.get("meow").is_some() {
            assert_eq!(t, Some("cat"));
        } else {
            assert_eq!(t, Some("Dog"));
        }
    }
    assert!(values.iter().any(|v| v.get("meow").is_some()));
    assert!(values.iter().any(|v| v.get("bark").is_some()));
}

#[test]
fn examples_are_used_in_example_mode() {
    let s = SchemaSet::default();
    let schema = json!({ "type": "object", "properties": { "name": { "type": "string", "examples": ["Rex"] }, "age": { "type": "integer", "example": 3 } } });
    assert_eq!(
        one(&s, &schema, Mode::Example),
        json!({ "name": "Rex", "age": 3 })
    );
    assert_eq!(
        one(
            &s,
            &json!({ "type": "integer", "default": 9 }),
            Mode::Example
        ),
        json!(9)
    );
    // An invalid example is not returned.
    let v = one(
        &s,
        &json!({ "type": "integer", "example": "x" }),
        Mode::Example,
    );
    assert!(v.is_i64());
}

#[test]
fn deterministic_for_a_seed() {
    let defs = set(json!({
        "Pet": { "type": "object", "required": ["id"], "properties": {
            "id": { "type": "integer" }, "name": { "type": "string", "pattern": "^[a-z]+\\d*$" },
            "tags": { "type": "array", "items": { "type": "string", "format": "uuid" } },
            "kind": { "enum": ["cat", "dog"] }, "weight": { "type": "number", "multipleOf": 0.1 }
        } }
    }));
    let schema = json!({ "$ref": "#/$defs/Pet" });
    let g1 = Generator::new(&defs, GenerateOptions::default());
    let g2 = Generator::new(&defs, GenerateOptions::default());
    for mode in MODES {
        for seed in 0..20 {
            let a = g1
                .generate(&schema, mode, &mut ChaCha8Rng::seed_from_u64(seed))
                .map(|v| v.to_string());
            let b = g2
                .generate(&schema, mode, &mut ChaCha8Rng::seed_from_u64(seed))
                .map(|v| v.to_string());
            assert_eq!(a, b);
        }
    }
}

/// A path parameter's value comes from its schema made ready once (merged, with its
/// validator): it is what generating from `{"allOf": [schema, {"minLength": 1}]}` gives for
/// the same random numbers, never empty, and valid against the parameter's own schema.
#[test]
fn path_values_are_the_checked_schemas_values_and_never_empty() {
    let defs = set(json!({ "Slug": { "type": "string", "pattern": "^[a-z]{0,6}$" } }));
    let schemas = [
        json!({ "type": "integer", "minimum": 1, "maximum": 1000000 }),
        json!({ "type": "string" }),
        json!({ "type": "string", "maxLength": 3 }),
        json!({ "$ref": "#/$defs/Slug" }),
        json!({ "type": "string", "format": "uuid" }),
        json!({ "enum": ["", "a", "bc"] }),
        json!({ "type": "string", "example": "ab" }),
        json!({ "type": ["string", "null"], "minLength": 2 }),
        json!({ "$ref": "#/$defs/Slug", "description": "beside the reference" }),
        // No value has these shapes: both refuse them, with the same reason. The first
        // cannot be merged (the walk merges it and says why), the second merges to no type.
        json!({ "allOf": [false] }),
        json!({ "allOf": [{ "type": "string" }, { "type": "integer" }] }),
    ];
    let ready = Generator::new(&defs, GenerateOptions::default());
    let plain = Generator::new(&defs, GenerateOptions::default());
    for schema in &schemas {
        let own = Validator::new_for(
            &defs,
            schema,
            ValidateOptions::default(),
            Direction::Request,
        )
        .expect("compiles");
        let checked = json!({ "allOf": [schema, { "minLength": 1 }] });
        for mode in MODES {
            for seed in 0..30 {
                let mut a = ChaCha8Rng::seed_from_u64(seed);
                let mut b = ChaCha8Rng::seed_from_u64(seed);
                let got = ready.generate_path_value(schema, mode, &mut a);
                let want = plain.generate(&checked, mode, &mut b);
                assert_eq!(
                    got.as_ref()
                        .map(Value::to_string)
                        .map_err(ToString::to_string),
                    want.as_ref()
                        .map(Value::to_string)
                        .map_err(ToString::to_string),
                    "{schema} {mode:?} seed {seed}"
                );
                // The same random numbers drawn: the stream goes on alike.
                assert_eq!(
                    a.get_word_pos(),
                    b.get_word_pos(),
                    "{schema} {mode:?} seed {seed}"
                );
                if let Ok(v) = got {
                    assert!(own.is_valid(&v), "{schema}: {v}");
                    assert_ne!(v, json!(""), "{schema}: an empty path value");
                }
            }
        }
    }
}

#[test]
fn validator_reports_issues() {
    let defs = set(
        json!({ "Pet": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" }, "age": { "type": "integer" } } } }),
    );
    let v = Validator::new(
        &defs,
        &json!({ "$ref": "#/$defs/Pet" }),
        ValidateOptions::default(),
    )
    .expect("compiles");
    let issues = v.errors(&json!({ "age": "old" }));
    assert_eq!(issues.len(), 2, "{issues:?}");
    assert!(issues
        .iter()
        .any(|i| i.keyword == "required" && i.instance_path.is_empty()));
    assert!(issues
        .iter()
        .any(|i| i.keyword == "type" && i.instance_path == "/age"));
    assert!(v.errors(&json!({ "name": "x" })).is_empty());
    let e = Validator::new(&defs, &json!({ "type": 12 }), ValidateOptions::default())
        .expect_err("invalid");
    assert!(e.to_string().starts_with("invalid schema at"), "{e}");
}

#[test]
fn discriminator_through_inheritance() {
    let defs = set(json!({
        "Pet": { "type": "object", "required": ["petType"], "properties": { "petType": { "type": "string" }, "name": { "type": "string" } },
                 "discriminator": { "propertyName": "petType", "mapping": { "cat": "#/$defs/Cat" } } },
        "Cat": { "allOf": [{ "$ref": "#/$defs/Pet" }, { "properties": { "meow": { "type": "boolean" } } }] },
        "Dog": { "allOf": [{ "$ref": "#/$defs/Pet" }, { "properties": { "bark": { "type": "string" } } }] }
    }));
    for v in check_all(&defs, &json!({ "$ref": "#/$defs/Cat" }), Direction::Request) {
        assert_eq!(v.get("petType"), Some(&json!("cat")), "{v}");
    }
    for v in check_all(&defs, &json!({ "$ref": "#/$defs/Dog" }), Direction::Request) {
        assert_eq!(v.get("petType"), Some(&json!("Dog")), "{v}");
    }
}

#[test]
fn wide_recursion_stays_bounded() {
    let mut props = serde_json::Map::new();
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        props.insert(name.into(), json!({ "$ref": "#/$defs/Wide" }));
    }
    props.insert(
        "list".into(),
        json!({ "type": "array", "items": { "$ref": "#/$defs/Wide" } }),
    );
    let defs = set(json!({ "Wide": { "type": ["object", "null"], "properties": props } }));
    let start = std::time::Instant::now();
    let values = check_all(
        &defs,
        &json!({ "$ref": "#/$defs/Wide" }),
        Direction::Request,
    );
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
    assert!(values.iter().all(|v| v.to_string().len() < 2_000_000));
}

#[test]
fn extreme_numeric_ranges() {
    check(json!({ "type": "number", "minimum": -1.7e308, "maximum": 1.7e308 }));
    check(json!({ "type": "integer", "minimum": -9.0e18, "maximum": 9.0e18 }));
    check(json!({ "type": "integer", "minimum": 1e30 }).clone()).len();
}

#[test]
fn generator_is_shareable_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Generator<'static>>();
    shareable::<Validator>();
}

#[test]
fn discriminator_decides_overlapping_one_of() {
    // Cat and Dog overlap (neither closes its properties): plain JSON Schema would find every
    // value matching both; the discriminator names the one branch.
    let defs = set(json!({
        "Cat": { "type": "object", "required": ["kind"], "properties": { "kind": { "type": "string" }, "lives": { "type": "integer" } } },
        "Dog": { "type": "object", "required": ["kind"], "properties": { "kind": { "type": "string" } } }
    }));
    let schema = json!({
        "oneOf": [{ "$ref": "#/$defs/Cat" }, { "$ref": "#/$defs/Dog" }],
        "discriminator": { "propertyName": "kind", "mapping": { "cat": "#/$defs/Cat", "kitty": "#/components/schemas/Cat" } }
    });
    let v = Validator::new(&defs, &schema, ValidateOptions::default()).expect("compiles");
    assert!(v.is_valid(&json!({ "kind": "cat", "lives": 9 })));
    assert!(v.is_valid(&json!({ "kind": "kitty" })));
    assert!(v.is_valid(&json!({ "kind": "Dog" })));
    assert!(!v.is_valid(&json!({ "kind": "bird" })));
    let values = check_all(&defs, &schema, Direction::Response);
    assert!(values.iter().any(|v| v["kind"] == json!("cat")));
    assert!(values.iter().any(|v| v["kind"] == json!("Dog")));
}

#[test]
fn common_openapi_patterns() {
    for p in [
        "^\\/api\\/v1\\/[a-z]+$",
        "^[^<>]*$",
        "^\\+?[1-9]\\d{1,14}$",
        "^#?([a-f0-9]{6}|[a-f0-9]{3})$",
        "^[A-Za-z0-9+/]+={0,2}$",
        "^\\S+$",
        "^[\\u0041-\\u005A]+$",
        "^(?<year>\\d{4})-(?<month>0[1-9]|1[0-2])$",
        "^[\\w\\-\\.]+@[\\w\\-]+\\.[a-z]{2,}$",
        "^[a-zA-Z0-9_-]{3,16}$",
        "^\\d+(\\.\\d{1,2})?$",
        "^(https?|ftp)://[^\\s/$.?#].[^\\s]*$",
        "^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        "^\\p{Lu}\\p{Ll}+$",
        "^[A-Z]{3}$|^[0-9]{3}$",
        "\\bword\\b",
    ] {
        check(json!({ "type": "string", "pattern": p }));
    }
}
