//! The differential property test of the direct evaluator: for expressions of its subset
//! and exchanges drawn at random (fields missing, values of the wrong type, `null`s, bodies
//! that are not JSON or not UTF-8, nothing answered), it and the `cel` crate's program give
//! the same value, or both an error.
//!
//! A small generator of its own writes the expression's text and builds the exchange from
//! a seed proptest draws, so a failure is one seed, shrunk to the smallest.

use std::collections::BTreeMap;

use cel::Value as CelValue;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::super::exchange::{Bodies, Read, Reads};
use super::super::expr::{Bound, Expression};
use crate::ids::{CaseId, Digest, RunId};
use crate::model::*;

/// Names and values an expression starts from: every part of the model the subset reads.
const LEAVES: &[&str] = &[
    "request.method",
    "request.operation",
    "request.path_params",
    "request.path_params.id",
    "request.query.limit",
    "request.query",
    "request.headers",
    "request.headers['accept']",
    "request.body",
    "request.text",
    "request.media_type",
    "response.status",
    "response.headers",
    "response.headers['x-id']",
    "response.media_type",
    "response.body",
    "response.body.id",
    "response.body.name",
    "response.body.items",
    "response.body.items[0]",
    "response.body.nested.a",
    "response.text",
    "response.time_ms",
    "response.truncated",
    "case.tags",
    "case.strategy",
    "case.mutation",
    "error",
    "error.kind",
    "step",
    "step.index",
    "seq",
    "header(response, 'X-Id')",
    "header(request, 'Accept')",
    "pointer(response.body, '/items/1')",
    "pointer(response.body, '/nested/a~1b')",
    "json(response.text)",
    "has(response.body.id)",
    "has(response.status)",
    "has(request.query.limit)",
    "has_key(response.body, 'id')",
    "has_key(response.headers, 'x-id')",
    "0",
    "1",
    "7",
    "-3",
    "200",
    "2u",
    "1.5",
    "0.0",
    "7.0",
    "'7'",
    "'a'",
    "''",
    "'x-id'",
    "'application/json'",
    "null",
    "true",
    "false",
    "[]",
];

/// An expression of the subset, `depth` operators deep at most.
fn expression(rng: &mut ChaCha8Rng, depth: u32) -> String {
    if depth == 0 || rng.gen_bool(0.3) {
        return LEAVES.choose(rng).copied().unwrap_or("0").to_string();
    }
    let mut sub = || expression(rng, depth - 1);
    let (a, b) = (sub(), sub());
    match rng.gen_range(0..30) {
        0 => format!("({a} == {b})"),
        1 => format!("({a} != {b})"),
        2 => format!("({a} < {b})"),
        3 => format!("({a} <= {b})"),
        4 => format!("({a} > {b})"),
        5 => format!("({a} >= {b})"),
        6 => format!("({a} && {b})"),
        7 => format!("({a} || {b})"),
        8 => format!("!({a})"),
        9 => format!("-({a})"),
        10 => format!("({a} ? {b} : {})", expression(rng, depth - 1)),
        11 => format!("({a} + {b})"),
        12 => format!("({a} - {b})"),
        13 => format!("({a} * {b})"),
        14 => format!("({a} / {b})"),
        15 => format!("({a} % {b})"),
        16 => format!("({a} in {b})"),
        17 => format!("size({a})"),
        18 => format!("({a}).size()"),
        19 => format!("({a}).startsWith({b})"),
        20 => format!("({a}).endsWith({b})"),
        21 => format!("({a}).contains({b})"),
        22 => format!("({a}).matches('^[0-9a-z/]+$')"),
        23 => format!("[{a}, {b}]"),
        24 => format!("({a})[{b}]"),
        25 => format!("header({a}, {b})"),
        26 => format!("pointer({a}, {b})"),
        27 => format!("has_key({a}, {b})"),
        28 => format!("({a}).id"),
        _ => format!("has(({a}).id)"),
    }
}

fn some_json(rng: &mut ChaCha8Rng) -> Value {
    match rng.gen_range(0..8) {
        0 => json!(7),
        1 => json!("7"),
        2 => json!(7.5),
        3 => Value::Null,
        4 => json!(u64::MAX),
        5 => json!([1, "a", null]),
        6 => json!({"a": 1}),
        _ => json!(-2),
    }
}

/// A response body's bytes: a JSON object with some of the fields expressions read (of
/// any type), or something that is not JSON, or nothing.
fn response_body(rng: &mut ChaCha8Rng) -> Vec<u8> {
    match rng.gen_range(0..6) {
        0 => Vec::new(),
        1 => b"not json 123".to_vec(),
        2 => vec![0xff, 0xfe, b'{'],
        3 => b"[1, 2, 3]".to_vec(),
        _ => {
            let mut body = serde_json::Map::new();
            for (key, value) in [
                ("id", some_json(rng)),
                ("name", json!("x-id")),
                ("items", json!([1, 2.5, "3", [4], {"id": 5}])),
                ("nested", json!({"a": "b", "a/b": {"id": 1}})),
                ("headers", json!({"x-id": "inner"})),
            ] {
                if rng.gen_bool(0.7) {
                    body.insert(key.into(), value);
                }
            }
            serde_json::to_vec(&body).unwrap_or_default()
        }
    }
}

fn exchange(rng: &mut ChaCha8Rng) -> (TestCase, Interaction) {
    let mut parameters = Vec::new();
    if rng.gen_bool(0.8) {
        parameters.push(ParameterValue {
            location: Location::Path,
            name: "id".into(),
            value: some_json(rng),
        });
    }
    if rng.gen_bool(0.5) {
        parameters.push(ParameterValue {
            location: Location::Query,
            name: "limit".into(),
            value: some_json(rng),
        });
    }
    let body = rng.gen_bool(0.3).then(|| CaseBody {
        media_type: "application/json".into(),
        value: json!({"id": 7, "tags": ["a"]}),
        sent_as: None,
    });
    let case = TestCase {
        operation: "getItem".into(),
        method: "GET".into(),
        path: "/items/{id}".into(),
        parameters,
        body,
        strategy: Strategy::Nominal,
        mode: "random".into(),
        origins: BTreeMap::new(),
        intent: Intent::Acceptable,
        mutation: None,
        series_step: rng.gen_bool(0.3).then(|| SeriesStep {
            series: "s".into(),
            index: 2,
            bindings: BTreeMap::from([("id".into(), "/id".into())]),
        }),
        credentials: None,
        shrinking: None,
        identity: None,
    };
    let pool = [
        ("X-Id", "a"),
        ("x-id", "b"),
        ("Content-Type", "Application/JSON; charset=utf-8"),
        ("content-type", "text/plain"),
        ("accept", "application/json"),
        ("Cache-Control", "no-store"),
    ];
    let mut headers = || {
        pool.iter()
            .filter(|_| rng.gen_bool(0.4))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    let request_headers = headers();
    let response_headers = headers();
    let outcome = match rng.gen_range(0..8) {
        0 => Outcome::TransportError {
            kind: TransportErrorKind::Timeout,
            message: "timed out".into(),
        },
        n => Outcome::Response(ResponseRecord {
            status: [200, 404, 500][n % 3],
            headers: response_headers,
            body: Some(BodyBytes::Inline(response_body(rng))),
            truncated: rng.gen_bool(0.1),
        }),
    };
    let interaction = Interaction {
        run: RunId(Digest::of(b"run")),
        seq: rng.gen_range(0..5),
        case: CaseId(Digest::of(b"case")),
        request: RequestRecord {
            method: "GET".into(),
            url: "http://127.0.0.1:1/items/7".into(),
            headers: request_headers,
            body: None,
        },
        outcome,
        timing: Timing {
            started_ms: 0,
            elapsed_us: rng.gen_range(0..10_000),
        },
        retried: None,
    };
    (case, interaction)
}

/// Whether two values are the same: the same kind and the same value (a double by its
/// bits, so a NaN is the same as a NaN), lists in order, maps key by key.
fn same(a: &CelValue, b: &CelValue) -> bool {
    match (a, b) {
        (CelValue::Float(x), CelValue::Float(y)) => x.to_bits() == y.to_bits(),
        // In order; or, as a multiset, because the `cel` crate appends a map to a list
        // (`list + step`) in its hash map's order, which differs from run to run: the
        // order of such a list is not defined, and the direct evaluator's (sorted) keys
        // are one of its orders.
        (CelValue::List(x), CelValue::List(y)) => {
            x.len() == y.len()
                && (x.iter().zip(y.iter()).all(|(x, y)| same(x, y))
                    || y.iter().all(|w| {
                        x.iter().filter(|v| same(v, w)).count()
                            == y.iter().filter(|v| same(v, w)).count()
                    }))
        }
        (CelValue::Map(x), CelValue::Map(y)) => {
            x.map.len() == y.map.len()
                && x.map
                    .iter()
                    .all(|(k, v)| y.map.get(k).is_some_and(|w| same(v, w)))
        }
        (CelValue::Null, CelValue::Null) => true,
        (CelValue::Bool(x), CelValue::Bool(y)) => x == y,
        (CelValue::Int(x), CelValue::Int(y)) => x == y,
        (CelValue::UInt(x), CelValue::UInt(y)) => x == y,
        (CelValue::String(x), CelValue::String(y)) => x == y,
        _ => false,
    }
}

/// What the two evaluators said of one expression over one exchange.
#[derive(Debug, PartialEq)]
enum Said {
    /// The expression names what the model does not have: it never reaches an evaluator.
    NotCompiled,
    SameValue,
    BothErrors,
    Differ(String),
}

fn differ(source: &str, case: &TestCase, interaction: &Interaction, read: u8) -> Option<String> {
    match said(source, case, interaction, read) {
        Said::Differ(difference) => Some(difference),
        _ => None,
    }
}

/// Both evaluators over one exchange.
fn said(source: &str, case: &TestCase, interaction: &Interaction, read: u8) -> Said {
    // A field the model does not have (`step.id`) stops the check before it judges: no
    // evaluator sees it.
    let Ok(expression) = Expression::compile(source) else {
        return Said::NotCompiled;
    };
    assert_eq!(expression.evaluator(), "direct", "{source}");
    let body = match &interaction.outcome {
        Outcome::Response(r) => match &r.body {
            Some(BodyBytes::Inline(b)) => b.clone(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    // As a run hands the body over (read already) or a recheck does (not read yet).
    let response_json = match (read, &parsed) {
        (0, _) => Read::NotRead,
        (_, Some(value)) => Read::Json(value),
        (_, None) => Read::NotJson,
    };
    let bodies = Bodies {
        request_value: case.body.as_ref().map(|b| &b.value),
        response_json,
        ..Bodies::default()
    };
    let tags = vec!["users".to_string()];
    let reads = expression.reads().clone();
    let bound = Bound::of_exchange(case, interaction, bodies, &tags, &reads);
    let direct = expression.evaluate(&bound);
    let cel = expression.evaluate_with_cel(&bound);
    let agree = match (&direct, &cel) {
        (Ok(a), Ok(b)) => same(a, b),
        (Err(_), Err(_)) => true,
        _ => false,
    };
    // The same model given as JSON (as `Bound::new` takes it) must read the same too.
    let model = super::super::ExchangeModel::reading(case, interaction, bodies, &tags, &reads);
    let from_json = Bound::new(&model.value);
    let json_direct = expression.evaluate(&from_json);
    let json_agrees = match (&json_direct, &cel) {
        (Ok(a), Ok(b)) => same(a, b),
        (Err(_), Err(_)) => true,
        _ => false,
    };
    match (agree && json_agrees, cel.is_ok()) {
        (true, true) => Said::SameValue,
        (true, false) => Said::BothErrors,
        _ => Said::Differ(format!(
            "`{source}`\n direct: {direct:?}\n from JSON: {json_direct:?}\n cel: {cel:?}\n \
             over {interaction:?}"
        )),
    }
}

/// The property above would hold vacuously if nearly every expression drawn failed on
/// both sides, or never compiled: most give a value.
#[test]
fn the_expressions_drawn_mostly_give_values() {
    let mut counts = std::collections::HashMap::new();
    for seed in 0..1000 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let depth = rng.gen_range(1..=3);
        let source = expression(&mut rng, depth);
        let (case, interaction) = exchange(&mut rng);
        let said = said(&source, &case, &interaction, (seed % 2) as u8);
        if let Said::Differ(difference) = &said {
            panic!("{difference}");
        }
        *counts.entry(format!("{said:?}")).or_insert(0) += 1;
    }
    let of = |k: &str| counts.get(k).copied().unwrap_or(0);
    assert!(of("SameValue") >= 300, "{counts:?}");
    assert!(of("BothErrors") >= 100, "{counts:?}");
    assert!(of("NotCompiled") <= 200, "{counts:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 2000, failure_persistence: None, ..Default::default()
    })]

    #[test]
    fn the_direct_evaluator_and_cel_agree(seed in 0u64..u64::MAX, read in 0u8..2) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let depth = rng.gen_range(1..=3);
        let source = expression(&mut rng, depth);
        let (case, interaction) = exchange(&mut rng);
        if let Some(difference) = differ(&source, &case, &interaction, read) {
            panic!("{difference}");
        }
    }
}

/// What the subset leaves to the `cel` crate, and the cases the CEL spec names for `&&` and
/// `||` with an error on one side.
#[test]
fn outside_the_subset_cel_evaluates_and_errors_are_absorbed_as_cel_says() {
    for source in [
        "response.body.items.all(i, i > 0)",
        "string(response.status) == '200'",
        "{'a': 1}.a == 1",
        "pointer(response, '/status') == 200",
        "size(b'abc') == 3",
    ] {
        assert_eq!(Expression::compile(source).unwrap().evaluator(), "cel");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (case, mut interaction) = exchange(&mut rng);
    interaction.outcome = Outcome::Response(ResponseRecord {
        status: 200,
        headers: vec![],
        body: Some(BodyBytes::Inline(br#"{"id": 7}"#.to_vec())),
        truncated: false,
    });
    let reads = Reads::everything();
    let tags = vec![];
    let bound = Bound::of_exchange(&case, &interaction, Bodies::default(), &tags, &reads);
    let holds = |s: &str| {
        let e = Expression::compile(s).unwrap();
        assert_eq!(e.evaluator(), "direct", "{s}");
        e.holds(&bound)
    };
    assert_eq!(holds("false && response.body.missing == 1"), Ok(false));
    assert_eq!(holds("response.body.missing == 1 && false"), Ok(false));
    assert_eq!(holds("true || response.body.missing == 1"), Ok(true));
    assert_eq!(holds("response.body.missing == 1 || true"), Ok(true));
    assert!(holds("true && response.body.missing == 1").is_err());
    assert!(holds("response.body.missing == 1 || false").is_err());
    assert_eq!(
        holds("response.body.id == 7 ? true : response.body.x"),
        Ok(true)
    );
    for source in [
        "false && response.body.missing == 1",
        "response.body.missing == 1 || true",
        "response.body.id == request.path_params.id",
    ] {
        assert!(differ(source, &case, &interaction, 0).is_none(), "{source}");
    }
}
