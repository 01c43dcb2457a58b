//! Property tests: random shapes with bounds, closed lists, patterns, formats, required lists,
//! nested objects and lists, each with a value valid against it; every operator's output is
//! then held to its intent.
//!
//! A tiny generator of its own builds the shape and the value together (from a seed proptest
//! draws), so the values are valid by construction; that is asserted first.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::tests::{api, case, from};
use super::*;
use crate::model::Location;

/// Patterns with a word that matches each.
const PATTERNS: [(&str, &str); 5] = [
    ("^[a-z]+$", "abc"),
    ("^[A-Z]{2}-[0-9]{3}$", "QX-481"),
    ("^(foo|bar)+baz?$", "foobarbaz"),
    ("^\\d{4}$", "2024"),
    ("[0-9]", "a1"),
];
/// Formats with a valid word for each.
const FORMATS: [(&str, &str); 8] = [
    ("date", "2021-02-03"),
    ("date-time", "2021-02-03T10:11:12Z"),
    ("time", "10:11:12Z"),
    ("email", "someone@example.com"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
    ("ipv4", "10.0.0.1"),
    ("ipv6", "::1"),
    ("hostname", "example.com"),
];

fn leaf(rng: &mut ChaCha8Rng) -> (Value, Value) {
    let nullable = rng.gen_bool(0.15);
    let (mut schema, value) = match rng.gen_range(0..11) {
        0 => {
            let mut s = Map::new();
            s.insert("type".into(), json!("integer"));
            let min: i64 = rng.gen_range(-50..50);
            let max: i64 = min + rng.gen_range(0..100);
            let mut v = rng.gen_range(min..=max);
            if rng.gen_bool(0.6) {
                s.insert("minimum".into(), json!(min));
            }
            if rng.gen_bool(0.6) {
                s.insert("maximum".into(), json!(max));
            }
            if rng.gen_bool(0.2) {
                s.insert("exclusiveMinimum".into(), json!(min - 1));
            }
            if rng.gen_bool(0.3) {
                let k = rng.gen_range(2..5i64);
                s.insert("multipleOf".into(), json!(k));
                v = (v / k) * k;
                if v < min {
                    v += k;
                }
                if v > max || v < min {
                    s.remove("multipleOf");
                    v = min;
                }
            }
            if rng.gen_bool(0.3) {
                s.insert(
                    "format".into(),
                    json!(if rng.gen_bool(0.5) { "int32" } else { "int64" }),
                );
            }
            (Value::Object(s), json!(v))
        }
        1 => {
            let mut s = Map::new();
            s.insert("type".into(), json!("number"));
            let v = rng.gen_range(-10.0..10.0f64);
            let v = (v * 4.0).round() / 4.0;
            if rng.gen_bool(0.5) {
                s.insert("exclusiveMinimum".into(), json!(v - 0.5));
            }
            if rng.gen_bool(0.5) {
                s.insert("maximum".into(), json!(v + 1.0));
            }
            if rng.gen_bool(0.2) {
                s.insert("format".into(), json!("float"));
            }
            (Value::Object(s), json!(v))
        }
        2 => {
            let mut s = Map::new();
            s.insert("type".into(), json!("string"));
            let len = rng.gen_range(0..12usize);
            let word: String = (0..len)
                .map(|_| *[b'a', b'b', b'c', b'x'].choose(rng).unwrap_or(&b'a') as char)
                .collect();
            if rng.gen_bool(0.5) {
                s.insert("minLength".into(), json!(rng.gen_range(0..=len)));
            }
            if rng.gen_bool(0.5) {
                s.insert("maxLength".into(), json!(len + rng.gen_range(0..4)));
            }
            (Value::Object(s), json!(word))
        }
        3 => {
            let (p, w) = PATTERNS[rng.gen_range(0..PATTERNS.len())];
            (json!({"type": "string", "pattern": p}), json!(w))
        }
        4 => {
            let (f, w) = FORMATS[rng.gen_range(0..FORMATS.len())];
            (json!({"type": "string", "format": f}), json!(w))
        }
        5 => {
            let options = ["red", "green", "blue", "Red"];
            let n = rng.gen_range(1..=options.len());
            let listed: Vec<&str> = options[..n].to_vec();
            let v = listed[rng.gen_range(0..n)];
            if rng.gen_bool(0.5) {
                (json!({"type": "string", "enum": listed}), json!(v))
            } else {
                (json!({"enum": listed}), json!(v))
            }
        }
        6 => (json!({"type": "boolean"}), json!(rng.gen_bool(0.5))),
        // Constraints with no declared type: no wrong type can be claimed.
        7 => (json!({"minLength": 2, "maxLength": 5}), json!("abc")),
        8 => (json!({"const": "fixed"}), json!("fixed")),
        9 => (
            json!({"type": "number", "multipleOf": 0.5, "minimum": -2, "exclusiveMaximum": 4}),
            json!(1.5),
        ),
        // A choice: the walk does not look past it; what is claimed of it, every alternative
        // must refuse.
        _ => (
            json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 0}]}),
            if rng.gen_bool(0.5) {
                json!("ab")
            } else {
                json!(7)
            },
        ),
    };
    if nullable {
        if let Value::Object(m) = &mut schema {
            match m.get("type").cloned() {
                Some(Value::String(t)) => {
                    m.insert("type".into(), json!([t, "null"]));
                }
                _ => {
                    schema = json!({"anyOf": [schema, {"type": "null"}]});
                }
            }
        }
    }
    (schema, value)
}

fn shape(rng: &mut ChaCha8Rng, depth: usize) -> (Value, Value) {
    let roll = rng.gen_range(0..10);
    if depth == 0 || roll < 5 {
        return leaf(rng);
    }
    if roll < 7 {
        let (item_s, item_v) = if rng.gen_bool(0.7) {
            leaf(rng)
        } else {
            shape(rng, depth - 1)
        };
        let n = rng.gen_range(0..4usize);
        let items: Vec<Value> = (0..n).map(|_| item_v.clone()).collect();
        let mut s = Map::new();
        s.insert("type".into(), json!("array"));
        s.insert("items".into(), item_s);
        if rng.gen_bool(0.4) {
            s.insert("minItems".into(), json!(rng.gen_range(0..=n)));
        }
        if rng.gen_bool(0.4) {
            s.insert("maxItems".into(), json!(n + rng.gen_range(0..3)));
        }
        if rng.gen_bool(0.2) && n <= 1 {
            s.insert("uniqueItems".into(), json!(true));
        }
        return (Value::Object(s), Value::Array(items));
    }
    object(rng, depth - 1)
}

thread_local! {
    /// Shapes the generator named, as `components.schemas` of the document it writes next.
    static DEFS: std::cell::RefCell<Vec<(String, Value)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Names a shape: it becomes a component, and the property refers to it (`$ref`), sometimes
/// through an `allOf` of one member.
fn named(rng: &mut ChaCha8Rng, s: Value) -> Value {
    let reference = DEFS.with(|d| {
        let mut d = d.borrow_mut();
        let name = format!("D{}", d.len());
        d.push((name.clone(), s));
        json!({ "$ref": format!("#/components/schemas/{name}") })
    });
    if rng.gen_bool(0.3) {
        json!({ "allOf": [reference] })
    } else {
        reference
    }
}

fn object(rng: &mut ChaCha8Rng, depth: usize) -> (Value, Value) {
    let n = rng.gen_range(1..5);
    let mut props = Map::new();
    let mut value = Map::new();
    let mut required = Vec::new();
    for i in 0..n {
        let name = format!("p{i}");
        let (s, v) = shape(rng, depth);
        let s = if rng.gen_bool(0.2) { named(rng, s) } else { s };
        props.insert(name.clone(), s);
        if rng.gen_bool(0.5) {
            required.push(json!(name));
            value.insert(name, v);
        } else if rng.gen_bool(0.7) {
            value.insert(name, v);
        }
    }
    let mut s = Map::new();
    s.insert("type".into(), json!("object"));
    s.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        s.insert("required".into(), Value::Array(required));
    }
    if rng.gen_bool(0.3) {
        s.insert("additionalProperties".into(), json!(false));
    }
    (
        Value::Object(s),
        crate::model::canonical_json(Value::Object(value)),
    )
}

/// A document with the shape as a required JSON body and two parameters.
fn document(body: &Value, p1: &Value, p2: &Value) -> String {
    let components: Map<String, Value> = DEFS.with(|d| d.borrow_mut().drain(..).collect());
    let components = Value::Object(components);
    format!(
        r#"{{"openapi": "3.1.0", "info": {{"title": "p", "version": "1"}},
  "components": {{"schemas": {components}}},
  "paths": {{"/x/{{id}}": {{"post": {{
    "parameters": [
      {{"name": "id", "in": "path", "required": true, "schema": {p1}}},
      {{"name": "q", "in": "query", "required": true, "schema": {p2}}}
    ],
    "requestBody": {{"required": true, "content": {{"application/json": {{"schema": {body}}}}}}},
    "responses": {{"200": {{"description": "ok"}}}}}}}}}}}}"#
    )
}

/// A parameter's shape: a scalar leaf that can travel in a path.
fn parameter_leaf(rng: &mut ChaCha8Rng) -> (Value, Value) {
    loop {
        let (s, v) = leaf(rng);
        let text = values::wire_text(&v);
        if !text.is_empty() && !text.contains('/') && !v.is_null() {
            return (s, v);
        }
    }
}

fn check_one(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DEFS.with(|d| d.borrow_mut().clear());
    let (body_s, body_v) = object(&mut rng, 2);
    let (p1_s, p1_v) = parameter_leaf(&mut rng);
    let (p2_s, p2_v) = parameter_leaf(&mut rng);
    let a = api(&document(&body_s, &p1_s, &p2_s));
    let op = &a.operations[0];
    let schema = &op.request_body.as_ref().expect("a body").content[0].schema;
    assert!(
        check::is_valid(&a.schemas, schema, &body_v),
        "generated body valid: {body_s} {body_v}"
    );
    let accepted = case(
        op,
        vec![(Location::Path, "id", p1_v), (Location::Query, "q", p2_v)],
        Some(body_v.clone()),
    );
    let options = MutationOptions {
        oversized_length: 300,
        oversized_items: 20,
        ..MutationOptions::default()
    };
    for kind in MutationKind::ALL {
        for at in places(op, &a.schemas, &accepted, &kind, &options) {
            for s in 0..3u64 {
                let mut r = ChaCha8Rng::seed_from_u64(seed ^ s);
                let out = apply(
                    op,
                    &a.schemas,
                    &accepted,
                    from(),
                    &kind,
                    &at,
                    &options,
                    &mut r,
                )
                .unwrap_or_else(|| panic!("{kind} offered {} but made nothing", at.name()));
                assert_eq!(out.intent, crate::model::Intent::RefusalExpected);
                holds_its_intent(&a, op, &accepted, &kind, &at, &out);
            }
        }
    }
}

fn holds_its_intent(
    a: &crate::spec::Api,
    op: &Operation,
    accepted: &TestCase,
    kind: &MutationKind,
    at: &Place,
    out: &TestCase,
) {
    let schema = &op.request_body.as_ref().expect("a body").content[0].schema;
    let m = out.mutation.as_ref().expect("recorded");
    assert_eq!(m.place, at.name());
    match &at.target {
        Target::Parameter { location, name } => {
            let decl = op
                .parameters
                .iter()
                .find(|p| p.location == *location && &p.name == name)
                .expect("declared");
            match kind {
                MutationKind::DropRequired => {
                    assert!(decl.required);
                    assert!(!out.parameters.iter().any(|p| &p.name == name));
                }
                MutationKind::WrongLocation => {
                    assert!(decl.required);
                    let moved = out
                        .parameters
                        .iter()
                        .find(|p| &p.name == name)
                        .expect("moved");
                    assert_ne!(moved.location, *location);
                }
                _ => {
                    let v = &out
                        .parameters
                        .iter()
                        .find(|p| &p.name == name)
                        .expect("carried")
                        .value;
                    let declared = place::facets(&a.schemas, &decl.schema)
                        .map(|f| place::types(&f))
                        .unwrap_or_default();
                    let reading = values::wire_reading(&declared, v);
                    let errors = check::violations(&a.schemas, &decl.schema, &reading);
                    assert!(
                        !errors.is_empty(),
                        "{kind} at {name}: {v} is valid against {}",
                        decl.schema
                    );
                    assert!(errors.iter().all(|(p, _)| p.is_empty()), "{errors:?}");
                }
            }
        }
        Target::Body => {
            let body = out.body.as_ref().expect("a body");
            match kind {
                MutationKind::NotJson => {
                    let text = body.sent_as.as_deref().expect("text");
                    assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
                }
                MutationKind::EmptyBody => assert_eq!(body.sent_as.as_deref(), Some("")),
                MutationKind::WrongContentType => {
                    assert!(!op
                        .request_body
                        .as_ref()
                        .expect("body")
                        .content
                        .iter()
                        .any(|m| m.media_type == body.media_type));
                }
                _ if body.sent_as.is_some() => {
                    assert_eq!(*kind, MutationKind::BeyondItsWidth);
                    let text = body.sent_as.as_deref().unwrap_or("");
                    // Too wide for serde_json's numbers, or it would have been sent as a value.
                    assert!(
                        text.contains("-9223372036854775809")
                            || text.contains("e309")
                            || text.contains(&"9".repeat(300))
                    );
                }
                _ => {
                    let before = check::violations(
                        &a.schemas,
                        schema,
                        &accepted.body.as_ref().expect("body").value,
                    );
                    assert!(before.is_empty());
                    let errors = check::violations(&a.schemas, schema, &body.value);
                    assert!(
                        !errors.is_empty(),
                        "{kind} at {}: {} is valid",
                        at.name(),
                        body.value
                    );
                    let expected = if *kind == MutationKind::DropRequired {
                        place::pointer_of(&at.path[..at.path.len() - 1])
                    } else {
                        at.pointer()
                    };
                    assert!(
                        errors.iter().all(|(p, _)| *p == expected),
                        "{kind} at {}: {errors:?}, expected all at {expected}",
                        at.name()
                    );
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]
    #[test]
    fn every_refusal_expected_breaks_what_the_document_states(seed in proptest::prelude::any::<u64>()) {
        check_one(seed);
    }

    #[test]
    fn mutate_never_claims_a_refusal_where_validation_passes(seed in proptest::prelude::any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        DEFS.with(|d| d.borrow_mut().clear());
        let (body_s, body_v) = object(&mut rng, 3);
        let (p1_s, p1_v) = parameter_leaf(&mut rng);
        let (p2_s, p2_v) = parameter_leaf(&mut rng);
        let a = api(&document(&body_s, &p1_s, &p2_s));
        let op = &a.operations[0];
        let schema = op.request_body.as_ref().expect("a body").content[0].schema.clone();
        proptest::prop_assert!(check::is_valid(&a.schemas, &schema, &body_v), "generated body valid");
        let accepted = case(op, vec![(Location::Path, "id", p1_v), (Location::Query, "q", p2_v)], Some(body_v));
        let options = MutationOptions { oversized_length: 300, oversized_items: 20, ..MutationOptions::default() };
        for s in 0..6u64 {
            let mut r = ChaCha8Rng::seed_from_u64(seed.wrapping_add(s));
            if let Some(out) = mutate(op, &a.schemas, &accepted, from(), &options, &mut r) {
                let m = out.mutation.clone().expect("recorded");
                let kind = m.kind;
                // Re-find the place from the case: a parameter by name, in the body the path
                // the recorded name stands for (the element of a list is not in the name).
                let candidates: Vec<Place> = if m.place == "body" {
                    vec![Place::body(Vec::new())]
                } else if let Some(p) = op.parameters.iter().find(|p| p.name == m.place) {
                    vec![Place::parameter(p.location, &p.name)]
                } else {
                    let mut all = Vec::new();
                    paths(&accepted.body.as_ref().expect("body").value, &mut Vec::new(), &mut all);
                    all.into_iter().map(Place::body).filter(|p| p.name() == m.place).collect()
                };
                let ok = candidates.iter().any(|at| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        holds_its_intent(&a, op, &accepted, &kind, at, &out)
                    }))
                    .is_ok()
                });
                proptest::prop_assert!(ok, "{kind} at {} does not hold", m.place);
            }
        }
    }
}

/// Every path in a value.
fn paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(Step::Key(k.clone()));
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                at.push(Step::Index(i));
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]
    #[test]
    fn single_violations_break_exactly_one_constraint(seed in proptest::prelude::any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        DEFS.with(|d| d.borrow_mut().clear());
        let (body_s, body_v) = object(&mut rng, 2);
        let (p1_s, p1_v) = parameter_leaf(&mut rng);
        let (p2_s, p2_v) = parameter_leaf(&mut rng);
        let a = api(&document(&body_s, &p1_s, &p2_s));
        let op = &a.operations[0];
        let schema = op.request_body.as_ref().expect("body").content[0].schema.clone();
        let base = case(op, vec![(Location::Path, "id", p1_v), (Location::Query, "q", p2_v)], Some(body_v));
        let all = violations::sites(op, &a.schemas);
        let mut cursor = violations::Cursor::new();
        let mut labels = Vec::new();
        for site in &all {
            if let Some(n) = violations::build(op, &a.schemas, &base, site) {
                labels.push(site.label());
                if let (Target::Body, Some(b)) = (&site.place.target, n.case.body.as_ref()) {
                    if site.keyword != "required" || !site.detail.is_empty() {
                        let errors = check::violations(&a.schemas, &schema, &b.value);
                        proptest::prop_assert_eq!(errors, vec![(site.place.pointer(), site.keyword.clone())]);
                    }
                }
            }
        }
        // Round-robin: each buildable site once, in order, before any repeats.
        let mut seen = Vec::new();
        for _ in 0..labels.len() {
            if let Some(n) = cursor.next(op, &a.schemas, &all, &base) {
                seen.push(n.site.label());
            }
        }
        proptest::prop_assert_eq!(seen, labels);
    }
}

/// Shrinking a random accepted request keeps it valid, and shrinking a random changed one
/// keeps its change, its intent and exactly the violations it had.
fn shrink_one(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DEFS.with(|d| d.borrow_mut().clear());
    let (body_s, body_v) = object(&mut rng, 2);
    let (p1_s, p1_v) = parameter_leaf(&mut rng);
    let (p2_s, p2_v) = parameter_leaf(&mut rng);
    let a = api(&document(&body_s, &p1_s, &p2_s));
    let op = &a.operations[0];
    let schema = &op.request_body.as_ref().expect("a body").content[0].schema;
    let param_schema = |name: &str| {
        &op.parameters
            .iter()
            .find(|p| p.name == name)
            .unwrap()
            .schema
    };
    let accepted = case(
        op,
        vec![(Location::Path, "id", p1_v), (Location::Query, "q", p2_v)],
        Some(body_v),
    );
    for c in crate::shrink::candidates(&a, op, &accepted) {
        let body = &c.body.as_ref().expect("the body stays").value;
        assert!(
            check::is_valid(&a.schemas, schema, body),
            "a shrunk valid body stays valid: {body_s} {body}"
        );
        for p in &c.parameters {
            assert!(check::is_valid(&a.schemas, param_schema(&p.name), &p.value));
        }
        assert_eq!(c.parameters.len(), 2, "required parameters stay");
        assert!(crate::shrink::size(&c) < crate::shrink::size(&accepted));
    }
    let options = MutationOptions {
        oversized_length: 300,
        oversized_items: 20,
        ..MutationOptions::default()
    };
    for kind in MutationKind::ALL {
        for at in places(op, &a.schemas, &accepted, &kind, &options) {
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            let Some(out) = apply(
                op,
                &a.schemas,
                &accepted,
                from(),
                &kind,
                &at,
                &options,
                &mut r,
            ) else {
                continue;
            };
            let broken = out
                .body
                .as_ref()
                .filter(|b| b.sent_as.is_none())
                .map(|b| check::violations(&a.schemas, schema, &b.value));
            for c in crate::shrink::candidates(&a, op, &out) {
                assert_eq!(c.mutation, out.mutation, "{kind} at {}", at.name());
                assert_eq!(c.intent, out.intent);
                assert_eq!(c.mode, out.mode);
                match &at.target {
                    Target::Parameter { location, name } => {
                        let value = |t: &TestCase| {
                            t.parameters
                                .iter()
                                .find(|p| p.location == *location && p.name == *name)
                                .map(|p| p.value.clone())
                        };
                        assert_eq!(
                            value(&c),
                            value(&out),
                            "{kind}: the changed parameter stays"
                        );
                    }
                    Target::Body => {
                        let (Some(cb), Some(ob)) = (&c.body, &out.body) else {
                            assert_eq!(c.body.is_some(), out.body.is_some());
                            continue;
                        };
                        assert_eq!(cb.sent_as, ob.sent_as);
                        assert_eq!(cb.media_type, ob.media_type);
                    }
                }
                if let (Some(broken), Some(b)) = (&broken, &c.body) {
                    assert_eq!(
                        &check::violations(&a.schemas, schema, &b.value),
                        broken,
                        "{kind} at {}: the same rules broken, no other",
                        at.name()
                    );
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]
    #[test]
    fn a_shrunk_case_keeps_its_validity_or_its_change(seed in proptest::prelude::any::<u64>()) {
        shrink_one(seed);
    }
}
