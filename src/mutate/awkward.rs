//! The list of awkward values, written here by hand (docs/design-notes.md, The awkward values), and
//! [`push`], which replaces one value of a request with one of them for the pushing strategy.
//!
//! The list is keyed by JSON type. It is also where `wrongType` draws its values of the wrong
//! kind from (docs/design-notes.md, Values of the wrong kind).
//!
//! Depends on: `model`, `spec::model`, `mutate::place`, `mutate::values`.

use std::sync::OnceLock;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::model::{canonical_json, Intent, Location, TestCase, ValueOrigin};
use crate::spec::{Operation, SchemaSet};

use super::place::{self, Place};
use super::values;

/// The JSON kinds the list is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JsonKind {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
    Null,
}

/// Every awkward value with its kind, in a fixed order.
pub fn list() -> &'static [(JsonKind, Value)] {
    static LIST: OnceLock<Vec<(JsonKind, Value)>> = OnceLock::new();
    LIST.get_or_init(build_list)
}

fn build_list() -> Vec<(JsonKind, Value)> {
    let mut out = Vec::new();
    let strings: Vec<String> = vec![
        String::new(),
        " ".into(),
        "   ".into(),
        "\t".into(),
        "\n".into(),
        "\r\n".into(),
        " leading".into(),
        "trailing ".into(),
        "\u{0}".into(),
        "a\u{0}b".into(),
        "\u{7}\u{8}\u{1b}".into(),
        "\u{7f}".into(),
        "line\nbreak".into(),
        "😀".into(),
        "👩‍👩‍👧‍👦".into(),
        "🏳️‍🌈".into(),
        "שלום עולם".into(),
        "مرحبا بالعالم".into(),
        "\u{202e}txt.exe".into(),
        "\u{200b}".into(),
        "\u{feff}".into(),
        "\u{00ad}".into(),
        "ß".into(),
        "ﬃ".into(),
        "İstanbul".into(),
        "ŉ".into(),
        "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇".into(),
        "漢字テキスト".into(),
        "Ω≈ç√∫".into(),
        "\u{fffd}".into(),
        "{{7*7}}".into(),
        "${7*7}".into(),
        "<%= 7*7 %>".into(),
        "#{7*7}".into(),
        "%s%s%s%n".into(),
        "%x%x%x".into(),
        "{0}".into(),
        "' OR '1'='1".into(),
        "'; DROP TABLE users; --".into(),
        // Ask the database to wait (docs/security.md, Time-based SQL injection).
        "' OR SLEEP(2)-- -".into(),
        "1 OR SLEEP(2)".into(),
        "'; SELECT pg_sleep(2)--".into(),
        "' OR 1=(SELECT 1 FROM pg_sleep(2))--".into(),
        "'; WAITFOR DELAY '0:0:2'--".into(),
        "<script>alert(1)</script>".into(),
        "\"quoted\"".into(),
        "'".into(),
        "\\".into(),
        "<>&".into(),
        "../../../../etc/passwd".into(),
        "null".into(),
        "undefined".into(),
        "NaN".into(),
        "true".into(),
        "0".into(),
        "-1".into(),
        "1.5".into(),
        "99999999999999999999".into(),
        "The quick brown fox jumps over the lazy dog.".into(),
        "A sentence. Then another one, with a comma; and a semicolon!".into(),
        "a".repeat(256),
        "x".repeat(10_000),
    ];
    out.extend(
        strings
            .into_iter()
            .map(|s| (JsonKind::String, Value::String(s))),
    );
    let integers: Vec<Value> = vec![
        json!(0),
        json!(-1),
        json!(1),
        json!(i32::MAX),
        json!(i32::MIN),
        json!(i32::MAX as i64 + 1),
        json!(i32::MIN as i64 - 1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(i64::MAX as u64 + 1),
        json!(u64::MAX),
        json!(1.5),
        json!("1"),
        json!("one"),
    ];
    out.extend(integers.into_iter().map(|v| (JsonKind::Integer, v)));
    let numbers: Vec<Value> = vec![
        json!(0.0),
        json!(-0.5),
        json!(1e-300),
        json!(1.7976931348623157e308),
        json!(-1.7976931348623157e308),
        json!(5e-324),
        json!(3.4028235e38),
        json!(0.1),
        json!(123456789012345678901234567890.0),
        json!(1e21),
        json!("1.5"),
        json!(true),
    ];
    out.extend(numbers.into_iter().map(|v| (JsonKind::Number, v)));
    let booleans: Vec<Value> = vec![
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(0.5),
        json!("true"),
        json!("yes"),
    ];
    out.extend(booleans.into_iter().map(|v| (JsonKind::Boolean, v)));
    let arrays: Vec<Value> = vec![
        json!([]),
        json!([null]),
        json!([[]]),
        json!([[], []]),
        json!([[[[[[[[[[]]]]]]]]]]),
        json!([{}]),
        json!([1, "a", true, null, {}]),
        Value::Array((0..1000).map(|i| json!(i)).collect()),
    ];
    out.extend(arrays.into_iter().map(|v| (JsonKind::Array, v)));
    let objects: Vec<Value> = vec![
        json!({}),
        json!({"": ""}),
        json!({"a": {"b": {"c": {"d": {"e": {"f": {}}}}}}}),
        json!({"__proto__": {"polluted": true}}),
        json!({"constructor": {"prototype": {}}}),
        json!({"$where": "1 == 1"}),
        json!({"key": null}),
    ];
    out.extend(objects.into_iter().map(|v| (JsonKind::Object, v)));
    out.push((JsonKind::Null, Value::Null));
    out
}

/// The delay, in seconds, of the SQL waits in `text` (`SLEEP(2)`, `pg_sleep(2)`,
/// `WAITFOR DELAY '0:0:2'`): the longest, or `None` when it asks for no wait.
pub fn delay_in(text: &str) -> Option<u32> {
    delay_pattern()
        .captures_iter(text)
        .filter_map(|c| c.get(1).or_else(|| c.get(2))?.as_str().parse::<u32>().ok())
        .max()
}

/// `text` with every SQL wait in it asking for `seconds` instead.
pub fn with_delay(text: &str, seconds: u32) -> String {
    delay_pattern()
        .replace_all(text, |c: &regex::Captures<'_>| {
            let (Some(whole), Some(digits)) = (c.get(0), c.get(1).or_else(|| c.get(2))) else {
                return c[0].to_owned();
            };
            format!(
                "{}{seconds}{}",
                &text[whole.start()..digits.start()],
                &text[digits.end()..whole.end()]
            )
        })
        .into_owned()
}

/// Where `case` asks an SQL database to wait, and how long: the first place (a parameter's
/// name, `body.a.b`, `body.tags[]`) whose value holds a wait, parameters first.
pub fn delay_place(case: &TestCase) -> Option<(String, u32)> {
    for p in &case.parameters {
        if let Some(seconds) = p.value.as_str().and_then(delay_in) {
            return Some((p.name.clone(), seconds));
        }
    }
    let body = case.body.as_ref()?;
    let mut found = None;
    find_string(&body.value, &mut "body".to_owned(), &mut |place, text| {
        found = delay_in(text).map(|seconds| (place.to_owned(), seconds));
        found.is_some()
    });
    found
}

/// Where one of `case`'s awkward values asks an SQL database to wait, and for how long
/// (0 for `SLEEP(0)`), as [`delay_place`] says; cheap for the cases that hold no awkward
/// value, which are most.
pub fn wait_asked(case: &TestCase) -> Option<(String, u32)> {
    if !case.origins.values().any(|o| *o == ValueOrigin::Awkward) {
        return None;
    }
    delay_place(case)
}

/// `case` with every SQL wait its values hold asking for `seconds` instead.
pub fn set_delay(case: &mut TestCase, seconds: u32) {
    fn rewrite(value: &mut Value, seconds: u32) {
        match value {
            Value::String(text) if delay_in(text).is_some() => *text = with_delay(text, seconds),
            Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, seconds)),
            Value::Object(map) => map.values_mut().for_each(|v| rewrite(v, seconds)),
            _ => {}
        }
    }
    for p in &mut case.parameters {
        rewrite(&mut p.value, seconds);
    }
    if let Some(body) = case.body.as_mut() {
        rewrite(&mut body.value, seconds);
    }
}

/// Calls `found` with each string in `value` and its place in dictionary notation (`place`
/// is where `value` is, extended in place rather than copied for every node), until it
/// answers true; says whether it did.
fn find_string(
    value: &Value,
    place: &mut String,
    found: &mut dyn FnMut(&str, &str) -> bool,
) -> bool {
    let at = place.len();
    let hit = match value {
        Value::String(text) => found(place, text),
        Value::Array(items) => {
            place.push_str("[]");
            items.iter().any(|item| find_string(item, place, found))
        }
        Value::Object(map) => map.iter().any(|(name, item)| {
            place.truncate(at);
            place.push('.');
            place.push_str(name);
            find_string(item, place, found)
        }),
        _ => false,
    };
    place.truncate(at);
    hit
}

/// `SLEEP(n)` (MySQL, and `pg_sleep(n)` of PostgreSQL) and `WAITFOR DELAY '0:0:n'` (SQL
/// Server).
fn delay_pattern() -> &'static regex::Regex {
    static PATTERN: OnceLock<regex::Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        regex::Regex::new(r"(?i)sleep\(\s*(\d{1,3})\s*\)|waitfor\s+delay\s+'0:0:(\d{1,2})'")
            .expect("a valid pattern")
    })
}

/// The awkward values of one kind.
pub fn of_kind(kind: JsonKind) -> Vec<Value> {
    list()
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, v)| v.clone())
        .collect()
}

/// Every awkward value once, in list order (a value listed under two kinds appears once).
pub fn all_values() -> &'static [Value] {
    static ALL: OnceLock<Vec<Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out: Vec<Value> = Vec::new();
        for (_, v) in list() {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        out
    })
}

/// The awkward values that can travel in a parameter at `location` (short enough, and
/// sendable there), in [`all_values`] order. Worked out once per location: filtering the
/// whole list for every pushing request was a percent of a run's CPU against a fast API.
fn parameter_values(location: Location) -> &'static [&'static Value] {
    static BY_LOCATION: OnceLock<[Vec<&'static Value>; 4]> = OnceLock::new();
    let lists = BY_LOCATION.get_or_init(|| {
        [
            Location::Path,
            Location::Query,
            Location::Header,
            Location::Cookie,
        ]
        .map(|location| {
            all_values()
                .iter()
                .filter(|v| {
                    values::can_travel(location, v)
                        && values::wire_text(v).chars().count() <= values::PARAMETER_WORD_LIMIT
                })
                .collect()
        })
    });
    match location {
        Location::Path => &lists[0],
        Location::Query => &lists[1],
        Location::Header => &lists[2],
        Location::Cookie => &lists[3],
    }
}

/// Replaces one value of `base` - one parameter it carries, or one place of its JSON body -
/// with an awkward one. The result says `strategy: "fuzzing"`, intent `pushing` and origin
/// `awkward` at the place; with nowhere to put a value (no parameter, no JSON body) it is the
/// base as any strategy would send it, intent `unknown` (docs/design-notes.md, Intents).
///
/// Draws: one index for the place, then one for the value, then (for a body) one per list on
/// the way, all from `rng`.
pub fn push(
    op: &Operation,
    schemas: &SchemaSet,
    base: &TestCase,
    rng: &mut ChaCha8Rng,
) -> TestCase {
    let _ = op;
    let mut case = base.clone();
    case.strategy = crate::model::Strategy::Fuzzing;
    case.mutation = None;
    case.intent = Intent::Unknown;
    let mut places: Vec<Place> = base
        .parameters
        .iter()
        .map(|p| Place::parameter(p.location, &p.name))
        .collect();
    let body_schema = base.body.as_ref().and_then(|b| {
        op.request_body
            .as_ref()
            .and_then(|rb| rb.content.iter().find(|m| m.media_type == b.media_type))
            .map(|m| m.schema.clone())
            .filter(|_| place::is_json_media(&b.media_type) && b.sent_as.is_none())
    });
    if let (Some(body), Some(schema)) = (&base.body, &body_schema) {
        let nodes = place::walk_body(schemas, schema, &body.value, 8, &mut |n| {
            rng.gen_range(0..n)
        });
        places.extend(nodes.into_iter().map(|n| Place::body(n.path)));
    }
    if places.is_empty() {
        return case;
    }
    let at = places[rng.gen_range(0..places.len())].clone();
    let pool = all_values();
    match &at.target {
        place::Target::Parameter { location, name } => {
            let fits = parameter_values(*location);
            if fits.is_empty() {
                return case;
            }
            let v = fits[rng.gen_range(0..fits.len())].clone();
            if let Some(p) = case
                .parameters
                .iter_mut()
                .find(|p| p.location == *location && &p.name == name)
            {
                p.value = v;
            }
        }
        place::Target::Body => {
            let v = pool[rng.gen_range(0..pool.len())].clone();
            if let Some(body) = case.body.as_mut() {
                if let Some(slot) = place::get_mut(&mut body.value, &at.path) {
                    *slot = v;
                }
                body.value = canonical_json(std::mem::take(&mut body.value));
            }
        }
    }
    case.origins.insert(at.name(), ValueOrigin::Awkward);
    case.intent = Intent::Pushing;
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Location;
    use crate::mutate::tests::{api, case};
    use rand::SeedableRng;

    const DOC: &str = r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /pets/{id}:
    post:
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: X-Key, in: header, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string}, tags: {type: array, items: {type: string}}}}
      responses: {'200': {description: ok}}
  /ping:
    get:
      responses: {'200': {description: ok}}
"#;

    #[test]
    fn push_replaces_one_value_and_says_so() {
        let a = api(DOC);
        let op = &a.operations[0];
        let base = case(
            op,
            vec![
                (Location::Path, "id", json!(1)),
                (Location::Header, "X-Key", json!("k")),
            ],
            Some(json!({"name": "n", "tags": ["a"]})),
        );
        let mut places = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut r1 = ChaCha8Rng::seed_from_u64(seed);
            let mut r2 = ChaCha8Rng::seed_from_u64(seed);
            let out = push(op, &a.schemas, &base, &mut r1);
            assert_eq!(
                out,
                push(op, &a.schemas, &base, &mut r2),
                "same stream, same result"
            );
            assert_eq!(out.strategy, crate::model::Strategy::Fuzzing);
            assert_eq!(out.intent, Intent::Pushing);
            assert!(out.mutation.is_none());
            let (place, origin) = out.origins.iter().next().expect("one origin");
            assert_eq!(*origin, ValueOrigin::Awkward);
            places.insert(place.clone());
            // What travels in a parameter can travel there.
            for p in &out.parameters {
                assert!(values::can_travel(p.location, &p.value), "{p:?}");
            }
            let changed = out.parameters != base.parameters;
            let body_changed = out.body != base.body;
            assert!(!(changed && body_changed), "one value replaced");
        }
        for want in [
            "id",
            "X-Key",
            "body",
            "body.name",
            "body.tags",
            "body.tags[]",
        ] {
            assert!(places.contains(want), "{want} in {places:?}");
        }
        // Nothing to push: the request any strategy would send, intent unknown.
        let ping = &a.operations[1];
        let out = push(
            ping,
            &a.schemas,
            &case(ping, vec![], None),
            &mut ChaCha8Rng::seed_from_u64(1),
        );
        assert_eq!(out.intent, Intent::Unknown);
        assert!(out.origins.is_empty());
    }

    #[test]
    fn sql_waits_are_read_and_rewritten_in_every_dialect() {
        for (text, seconds) in [
            ("' OR SLEEP(2)-- -", Some(2)),
            ("1 OR sleep( 12 )", Some(12)),
            ("'; SELECT pg_sleep(2)--", Some(2)),
            ("'; WAITFOR DELAY '0:0:2'--", Some(2)),
            ("' OR SLEEP(1) AND SLEEP(3)", Some(3)),
            ("sleep well", None),
            ("SLEEP(x)", None),
            ("", None),
        ] {
            assert_eq!(delay_in(text), seconds, "{text}");
        }
        assert_eq!(with_delay("' OR SLEEP(2)-- -", 0), "' OR SLEEP(0)-- -");
        assert_eq!(
            with_delay("'; WAITFOR DELAY '0:0:2'--", 3),
            "'; WAITFOR DELAY '0:0:3'--"
        );
        assert_eq!(
            with_delay("x pg_sleep(2) y sleep(2)", 3),
            "x pg_sleep(3) y sleep(3)"
        );
        assert_eq!(with_delay("no wait here", 3), "no wait here");
        // Every wait the list holds is one probe can read and rewrite.
        let waits: Vec<&str> = list()
            .iter()
            .filter_map(|(_, v)| v.as_str())
            .filter(|t| delay_in(t).is_some())
            .collect();
        assert!(waits.len() >= 5, "{waits:?}");
        for text in waits {
            assert_eq!(delay_in(&with_delay(text, 7)), Some(7), "{text}");
        }
    }

    #[test]
    fn a_case_says_where_it_asks_for_a_wait_and_takes_another() {
        let a = api(DOC);
        let op = &a.operations[0];
        let mut c = case(
            op,
            vec![
                (Location::Path, "id", json!(1)),
                (Location::Header, "X-Key", json!("k")),
            ],
            Some(json!({"name": "n", "tags": ["a", "1 OR SLEEP(2)"]})),
        );
        // Not an awkward value: a value of the user's that looks like one is left alone.
        assert_eq!(wait_asked(&c), None);
        c.origins.insert("body.tags[]".into(), ValueOrigin::Awkward);
        assert_eq!(wait_asked(&c), Some(("body.tags[]".into(), 2)));
        assert_eq!(delay_place(&c), Some(("body.tags[]".into(), 2)));
        set_delay(&mut c, 0);
        assert_eq!(delay_place(&c), Some(("body.tags[]".into(), 0)));
        assert_eq!(c.body.as_ref().unwrap().value["tags"][1], "1 OR SLEEP(0)");
        assert_eq!(c.body.as_ref().unwrap().value["name"], "n");
    }

    #[test]
    fn the_list_is_long_and_covers_what_it_promises() {
        let l = list();
        assert!(l.len() >= 80, "{} values", l.len());
        let has = |v: Value| l.iter().any(|(_, x)| *x == v);
        assert!(has(json!(i32::MAX as i64 + 1)));
        assert!(has(json!(i64::MAX as u64 + 1)));
        assert!(has(json!("")));
        assert!(has(json!("x".repeat(10_000))));
        assert!(has(json!("<script>alert(1)</script>")));
        assert!(has(json!([])));
        assert!(has(json!({})));
        assert!(has(Value::Null));
        for kind in [
            JsonKind::String,
            JsonKind::Integer,
            JsonKind::Number,
            JsonKind::Boolean,
            JsonKind::Array,
            JsonKind::Object,
            JsonKind::Null,
        ] {
            assert!(!of_kind(kind).is_empty());
        }
    }
}
