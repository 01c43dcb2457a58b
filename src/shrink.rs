//! Shrinking: the smaller requests worth trying in place of one that showed a finding, so
//! that its reproducer holds only what the failure needs (docs/shrinking.md).
//!
//! [`candidates`] lists them, most aggressive first: every optional parameter dropped, then
//! each one; body properties dropped (all of an object's at once, then each); then values
//! simplified (strings emptied, cut to one character, cut by bisection on their length;
//! arrays emptied and halved;
//! numbers to 0 and halved). Every candidate is shorter than the request it comes from
//! ([`size`]), so a chain of accepted candidates ends. A candidate is offered only when it breaks
//! exactly the rules the request it comes from broke: none for a case built to be accepted
//! (it stays schema-valid), the same ones for a changed or negative case (its intent and
//! its mutation stay true). What the mutation changed is never touched.
//!
//! Which candidate wins is decided by the caller, by sending it (`engine::shrink`).
//!
//! Depends on: `model`, `spec::model`, `mutate::{check, place}`, `pinpoint` (a pinned-down
//! refusal's record told the smaller value it sends).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::model::{Location, TestCase};
use crate::mutate::check::{Judge, UNDECIDED};
use crate::mutate::place::edited;
use crate::spec::{Api, Operation};

/// How many candidates one call lists at most (each is judged against the schemas before
/// it is listed, which costs time, never requests).
const CANDIDATES_MAX: usize = 400;
/// How deep the body walk goes.
const DEPTH_MAX: usize = 16;

/// The size of a request as a reproducer reads it: the characters of its parameters (name
/// and value) and its body. Smaller is a better reproducer.
pub fn size(case: &TestCase) -> usize {
    let params: usize = case
        .parameters
        .iter()
        .map(|p| {
            p.name.len()
                + match &p.value {
                    Value::String(s) => s.len(),
                    other => other.to_string().len(),
                }
        })
        .sum();
    let body = case.body.as_ref().map_or(0, |b| match &b.sent_as {
        Some(text) => text.len(),
        None => b.value.to_string().len(),
    });
    params + body
}

/// How well a request shows a fault, for choosing a reproducer: a request built to be
/// valid first (intent `acceptable`, or `unknown` with no change: generated from the
/// schema, whose values the API may still refuse for reasons the document does not state);
/// a fault shown by a valid request needs no argument. Then one built to be refused (its
/// recorded change says exactly what is wrong with it); then the rest (values that push
/// the API, which say nothing of the sort). Lower is better.
pub fn intent_rank(case: &TestCase) -> u8 {
    use crate::model::Intent;
    match (case.intent, &case.mutation) {
        (Intent::Acceptable, _) | (Intent::Unknown, None) => 0,
        (Intent::RefusalExpected, _) => 1,
        _ => 2,
    }
}

/// The violations of a value, as `(instance JSON pointer, keyword)` (`mutate::check`).
type Violations = Vec<(String, String)>;

/// Called with each object of a body and its path.
type ObjectVisitor<'v> = dyn FnMut(&[String], &Map<String, Value>) + 'v;

/// Whether a request can be sent again on its own: it is no step of a series, and every
/// value the API handed out to it (an id from an earlier answer) is bound to the answer it
/// came from, so `probe replay` makes that answer again first. Any other request needs
/// state only its run had, so a reproducer is chosen among those that stand alone first.
pub fn stands_alone(case: &TestCase) -> bool {
    let bindings = match &case.series_step {
        Some(step) if step.series != crate::model::SERIES_MEMORY => return false,
        Some(step) => Some(&step.bindings),
        None => None,
    };
    case.origins.iter().all(|(place, origin)| {
        *origin != crate::model::ValueOrigin::Observed
            || bindings.is_some_and(|b| b.contains_key(place))
    })
}

/// What a candidate must keep: the rules the original broke, per parameter and for the body.
struct Guard<'a> {
    api: &'a Api,
    op: &'a Operation,
    /// The violations of each parameter the original sent, by (location, name).
    params: Vec<((Location, String), Violations)>,
    /// The body's schema and its violations, when the body can be shrunk.
    body: Option<(Judge<'a>, Violations)>,
}

impl<'a> Guard<'a> {
    fn new(api: &'a Api, op: &'a Operation, case: &TestCase) -> Guard<'a> {
        let params = case
            .parameters
            .iter()
            .map(|p| {
                let broken = op
                    .parameters
                    .iter()
                    .find(|d| d.location == p.location && d.name == p.name)
                    .map(|d| Judge::new(&api.schemas, &d.schema).violations(&p.value))
                    .unwrap_or_default();
                ((p.location, p.name.clone()), broken)
            })
            .collect();
        let body = case.body.as_ref().and_then(|b| {
            if b.sent_as.is_some() {
                return None;
            }
            let media = op
                .request_body
                .as_ref()?
                .content
                .iter()
                .find(|m| m.media_type.eq_ignore_ascii_case(&b.media_type))?;
            let judge = Judge::new(&api.schemas, &media.schema);
            let broken = judge.violations(&b.value);
            (!undecided(&broken)).then_some((judge, broken))
        });
        Guard {
            api,
            op,
            params,
            body,
        }
    }

    /// Whether parameter `name` at `location` with `value` breaks what it broke before.
    fn parameter_holds(&self, location: Location, name: &str, value: &Value) -> bool {
        let Some((_, before)) = self
            .params
            .iter()
            .find(|((l, n), _)| *l == location && n == name)
        else {
            return false;
        };
        let Some(declared) = self
            .op
            .parameters
            .iter()
            .find(|d| d.location == location && d.name == name)
        else {
            return false;
        };
        let now = Judge::new(&self.api.schemas, &declared.schema).violations(value);
        !undecided(&now) && now == *before
    }

    fn body_holds(&self, value: &Value) -> bool {
        match &self.body {
            Some((judge, before)) => {
                let now = judge.violations(value);
                !undecided(&now) && now == *before
            }
            None => false,
        }
    }
}

fn undecided(violations: &[(String, String)]) -> bool {
    violations.iter().any(|(_, k)| k == UNDECIDED)
}

/// What the mutation of `case` changed, which shrinking leaves alone: a parameter, or a
/// place in the body (as JSON pointer segments; empty: the whole body).
enum Protected {
    Nothing,
    Parameter(String),
    Body(Vec<String>),
}

fn protected(case: &TestCase) -> Protected {
    let Some(m) = case.mutation.as_ref().filter(|_| !refused_value(case)) else {
        return Protected::Nothing;
    };
    match m.place.strip_prefix("body") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') || rest.starts_with('[') => {
            let segments = rest
                .split(['.', '['])
                .map(|s| s.trim_end_matches(']'))
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            Protected::Body(segments)
        }
        _ => Protected::Parameter(
            m.place
                .rsplit_once('.')
                .map_or(m.place.as_str(), |(_, n)| n)
                .to_owned(),
        ),
    }
}

/// Smaller requests to try in place of `case`, most aggressive first, each shorter than
/// `case` ([`size`]) and each breaking exactly the rules `case` broke (see the module docs). Empty
/// when nothing can be taken away.
pub fn candidates(api: &Api, op: &Operation, case: &TestCase) -> Vec<TestCase> {
    let guard = Guard::new(api, op, case);
    let keep = protected(case);
    let mut out: Vec<TestCase> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut push = |candidate: TestCase, out: &mut Vec<TestCase>| {
        if out.len() >= CANDIDATES_MAX {
            return;
        }
        let key = fingerprint(&candidate);
        if size(&candidate) < size(case) && seen.insert(key) {
            out.push(candidate);
        }
    };

    // Parameters: the optional ones dropped, all at once, then each.
    let droppable: Vec<usize> = case
        .parameters
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            !matches!(&keep, Protected::Parameter(n) if *n == p.name)
                && op
                    .parameters
                    .iter()
                    .any(|d| d.location == p.location && d.name == p.name && !d.required)
                && p.location != Location::Path
        })
        .map(|(i, _)| i)
        .collect();
    if droppable.len() > 1 {
        let mut c = case.clone();
        c.parameters = without(&case.parameters, &droppable);
        push(c, &mut out);
    }
    for &i in &droppable {
        let mut c = case.clone();
        c.parameters = without(&case.parameters, &[i]);
        push(c, &mut out);
    }

    // The body: properties dropped, then values simplified.
    let body_frozen = matches!(&keep, Protected::Body(path) if path.is_empty());
    if let (Some(body), false) = (&case.body, body_frozen) {
        if guard.body.is_some() {
            let frozen: &[String] = match &keep {
                Protected::Body(path) => path,
                _ => &[],
            };
            let mut edits: Vec<Value> = Vec::new();
            drops(&body.value, &mut Vec::new(), frozen, &mut edits, 0);
            let handed_out = |path: &[String]| observed(case, &format!("body.{}", path.join(".")));
            simplifications(
                &body.value,
                &mut Vec::new(),
                frozen,
                &handed_out,
                &mut edits,
                0,
            );
            for value in edits {
                if out.len() >= CANDIDATES_MAX {
                    break;
                }
                if guard.body_holds(&value) {
                    let mut c = case.clone();
                    if let Some(b) = c.body.as_mut() {
                        b.value = value;
                    }
                    push(c, &mut out);
                }
            }
        }
    }

    // Parameter values simplified; never a path parameter's (it names which resource is
    // addressed, not how much is sent) nor a value the API handed out (its simpler form
    // would name something else, or something that exists only in this run).
    for (i, p) in case.parameters.iter().enumerate() {
        if matches!(&keep, Protected::Parameter(n) if *n == p.name)
            || p.location == Location::Path
            || observed(case, &p.name)
        {
            continue;
        }
        for value in simpler(&p.value) {
            if guard.parameter_holds(p.location, &p.name, &value) {
                let mut c = case.clone();
                c.parameters[i].value = value;
                push(c, &mut out);
            }
        }
    }
    // A pinned-down refusal (docs/pinpointing.md) may be simplified inside the refused
    // value too, while it is there and still refused: its record is told the value sent.
    if refused_value(case) {
        out = out
            .into_iter()
            .filter_map(crate::pinpoint::redescribed)
            .collect();
    }
    out
}

fn refused_value(case: &TestCase) -> bool {
    case.mutation
        .as_ref()
        .is_some_and(|m| m.kind == crate::model::MutationKind::RefusedValue)
}

/// Whether the value at `place` (`limit`, `body.owner.id`) came from an answer of the API.
fn observed(case: &TestCase, place: &str) -> bool {
    case.origins.get(place) == Some(&crate::model::ValueOrigin::Observed)
}

fn without<T: Clone>(items: &[T], drop: &[usize]) -> Vec<T> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, v)| v.clone())
        .collect()
}

/// A candidate's identity among those listed: its parameters and body as sent.
pub fn fingerprint(case: &TestCase) -> String {
    let params: Vec<(&str, &str, &Value)> = case
        .parameters
        .iter()
        .map(|p| (p.location.as_str(), p.name.as_str(), &p.value))
        .collect();
    let body = case
        .body
        .as_ref()
        .map(|b| (b.media_type.as_str(), b.sent_as.as_deref(), &b.value));
    serde_json::to_string(&(params, body)).unwrap_or_default()
}

/// Whether `path` is at or under `frozen` (a protected place), or above it (dropping or
/// simplifying an ancestor would change the protected place too).
fn touches(path: &[String], frozen: &[String]) -> bool {
    if frozen.is_empty() {
        return false;
    }
    let n = path.len().min(frozen.len());
    path[..n] == frozen[..n]
}

/// Bodies with properties dropped: at each object, all its (unprotected) properties at
/// once, then each; outer objects first.
fn drops(
    value: &Value,
    path: &mut Vec<String>,
    frozen: &[String],
    out: &mut Vec<Value>,
    depth: usize,
) {
    /// `root` with `keys` removed from the object at `path`.
    fn at_root(root: &Value, path: &[String], keys: &[&String]) -> Option<Value> {
        let mut out = root.clone();
        let mut at = &mut out;
        for step in path {
            at = match at {
                Value::Object(map) => map.get_mut(step)?,
                Value::Array(items) => items.get_mut(step.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        let Value::Object(map) = at else { return None };
        for k in keys {
            map.remove(k.as_str());
        }
        Some(out)
    }
    let root = value;
    walk_objects(root, path, depth, &mut |path, map: &Map<String, Value>| {
        let keys: Vec<&String> = map
            .keys()
            .filter(|k| {
                let mut p = path.to_vec();
                p.push((*k).clone());
                !touches(&p, frozen)
            })
            .collect();
        if keys.len() > 1 {
            if let Some(v) = at_root(root, path, &keys) {
                out.push(v);
            }
        }
        for k in keys {
            if let Some(v) = at_root(root, path, &[k]) {
                out.push(v);
            }
        }
    });
}

/// Calls `visit` with each object in `value` and its path, outer ones first (breadth by
/// depth is not needed: document order, parents before children).
fn walk_objects(
    value: &Value,
    path: &mut Vec<String>,
    depth: usize,
    visit: &mut ObjectVisitor<'_>,
) {
    if depth > DEPTH_MAX {
        return;
    }
    match value {
        Value::Object(map) => {
            visit(path, map);
            for (k, v) in map {
                path.push(k.clone());
                walk_objects(v, path, depth + 1, visit);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(i.to_string());
                walk_objects(v, path, depth + 1, visit);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Bodies with one value simplified (see [`simpler`]), outer values first; never a value
/// at a protected place nor one `handed_out` by the API.
fn simplifications(
    root: &Value,
    path: &mut Vec<String>,
    frozen: &[String],
    handed_out: &dyn Fn(&[String]) -> bool,
    out: &mut Vec<Value>,
    depth: usize,
) {
    fn visit(
        root: &Value,
        value: &Value,
        path: &mut Vec<String>,
        frozen: &[String],
        handed_out: &dyn Fn(&[String]) -> bool,
        out: &mut Vec<Value>,
        depth: usize,
    ) {
        if depth > DEPTH_MAX || out.len() >= CANDIDATES_MAX {
            return;
        }
        if !path.is_empty() && !touches(path, frozen) && !handed_out(path) {
            for simple in simpler(value) {
                if let Some(v) = edited(root, path, Some(simple)) {
                    out.push(v);
                }
            }
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    path.push(k.clone());
                    visit(root, v, path, frozen, handed_out, out, depth + 1);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    path.push(i.to_string());
                    visit(root, v, path, frozen, handed_out, out, depth + 1);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    visit(root, root, path, frozen, handed_out, out, depth);
}

/// The shorter lengths a string of `n` characters is cut to, shortest first: 1, then half,
/// three quarters, seven eighths, ... up to `n - 1`. The search takes the first that still
/// fails and lists again from it, and no candidate is sent twice, so the chain closes in
/// on the shortest failing length by bisection: a name that fails from 65 characters on
/// ends at exactly 65, whatever its first length (docs/shrinking.md).
fn shorter_lengths(n: usize) -> Vec<usize> {
    let mut lengths = vec![1];
    let mut gap = n / 2;
    while gap > 0 {
        lengths.push(n - gap);
        gap /= 2;
    }
    lengths.retain(|&l| l < n);
    lengths.dedup();
    lengths
}

/// Simpler forms of one value, simplest first: strings emptied, cut to one character,
/// cut by bisection ([`shorter_lengths`]); arrays emptied, cut to one element, halved; numbers to 0, halved toward 0;
/// Objects are simplified by dropping properties instead; booleans are left alone (`false`
/// is no shorter than `true`).
pub fn simpler(value: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match value {
        Value::String(s) if !s.is_empty() => {
            out.push(Value::String(String::new()));
            let chars: Vec<char> = s.chars().collect();
            out.extend(
                shorter_lengths(chars.len())
                    .into_iter()
                    .map(|n| Value::String(chars[..n].iter().collect())),
            );
        }
        Value::Array(items) if !items.is_empty() => {
            out.push(Value::Array(Vec::new()));
            if items.len() > 1 {
                out.push(Value::Array(items[..1].to_vec()));
            }
            if items.len() > 2 {
                out.push(Value::Array(items[..items.len() / 2].to_vec()));
            }
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                if i != 0 {
                    out.push(Value::from(0));
                    if i / 2 != 0 {
                        out.push(Value::from(i / 2));
                    }
                }
            } else if let Some(u) = n.as_u64() {
                out.push(Value::from(0));
                out.push(Value::from(u / 2));
            } else if let Some(f) = n.as_f64() {
                if f != 0.0 {
                    out.push(Value::from(0));
                    if f.trunc() != f && f.trunc() != 0.0 {
                        out.push(Value::from(f.trunc()));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CaseBody, Intent, ParameterValue, Strategy};

    const DOCUMENT: &str = r#"
openapi: 3.1.0
info: { title: shrink, version: "1" }
paths:
  /notes:
    post:
      operationId: createNote
      parameters:
        - { name: dryRun, in: query, schema: { type: boolean } }
        - { name: trace, in: query, schema: { type: string, minLength: 2 } }
        - { name: version, in: query, required: true, schema: { type: integer, minimum: 1 } }
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title]
              properties:
                title: { type: string, minLength: 1 }
                tags: { type: array, items: { type: string } }
                owner:
                  type: object
                  required: [id]
                  properties:
                    id: { type: integer }
                    email: { type: string, format: email }
      responses:
        "201": { description: made }
"#;

    fn api() -> Api {
        crate::spec::parse(DOCUMENT.as_bytes(), "shrink.yaml", None).expect("document loads")
    }

    fn case(body: Value) -> TestCase {
        TestCase {
            operation: "createNote".into(),
            method: "POST".into(),
            path: "/notes".into(),
            parameters: vec![
                ParameterValue {
                    location: Location::Query,
                    name: "dryRun".into(),
                    value: Value::Bool(true),
                },
                ParameterValue {
                    location: Location::Query,
                    name: "trace".into(),
                    value: Value::String("abcdef".into()),
                },
                ParameterValue {
                    location: Location::Query,
                    name: "version".into(),
                    value: Value::from(7),
                },
            ],
            body: Some(CaseBody {
                media_type: "application/json".into(),
                value: body,
                sent_as: None,
            }),
            strategy: Strategy::Nominal,
            mode: "random".into(),
            origins: Default::default(),
            intent: Intent::Acceptable,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        }
    }

    #[test]
    fn the_most_aggressive_come_first_and_every_one_stays_valid() {
        let api = api();
        let op = &api.operations[0];
        let original = case(serde_json::json!({
            "title": "a long title", "tags": ["x", "y", "z"],
            "owner": {"id": 17, "email": "a@b.example"}
        }));
        let list = candidates(&api, op, &original);
        assert!(!list.is_empty());
        // First: both optional query parameters gone at once; the required one stays.
        let names: Vec<&str> = list[0].parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["version"]);
        for c in &list {
            assert!(size(c) < size(&original));
            let body = &c.body.as_ref().unwrap().value;
            assert!(
                crate::mutate::check::is_valid(
                    &api.schemas,
                    &op.request_body.as_ref().unwrap().content[0].schema,
                    body
                ),
                "{body}"
            );
            assert!(c.body.as_ref().unwrap().value.get("title").is_some());
            let version = c.parameters.iter().find(|p| p.name == "version").unwrap();
            assert!(version.value.as_i64().unwrap() >= 1, "minimum kept");
        }
        // The title is never emptied (minLength 1), but cut to one character.
        assert!(list
            .iter()
            .any(|c| c.body.as_ref().unwrap().value["title"] == "a"));
        assert!(!list
            .iter()
            .any(|c| c.body.as_ref().unwrap().value["title"] == ""));
    }

    #[test]
    fn a_changed_case_keeps_its_change_and_breaks_only_what_it_broke() {
        let api = api();
        let op = &api.operations[0];
        let mut changed = case(serde_json::json!({"title": 42, "tags": ["x"]}));
        changed.intent = Intent::RefusalExpected;
        changed.strategy = Strategy::Mutation;
        changed.mutation = Some(crate::model::Mutation {
            from: crate::model::AcceptedRef {
                case: crate::ids::CaseId(crate::ids::Digest::of(b"a")),
                seq: 1,
            },
            kind: crate::model::MutationKind::WrongType,
            place: "body.title".into(),
            description: "a number where a string is declared".into(),
        });
        let list = candidates(&api, op, &changed);
        assert!(!list.is_empty());
        for c in &list {
            assert_eq!(
                c.body.as_ref().unwrap().value["title"],
                42,
                "the change stays"
            );
            assert_eq!(c.mutation, changed.mutation);
            assert_eq!(c.intent, Intent::RefusalExpected);
        }
        assert!(list
            .iter()
            .any(|c| c.body.as_ref().unwrap().value == serde_json::json!({"title": 42})));
    }

    #[test]
    fn simpler_values_are_simpler() {
        assert_eq!(
            simpler(&Value::from("abcd")),
            [
                Value::from(""),
                Value::from("a"),
                Value::from("ab"),
                Value::from("abc")
            ]
        );
        assert_eq!(shorter_lengths(130), [1, 65, 98, 114, 122, 126, 128, 129]);
        assert_eq!(shorter_lengths(2), [1]);
        assert!(shorter_lengths(1).is_empty());
        assert_eq!(simpler(&Value::from(-9)), [Value::from(0), Value::from(-4)]);
        assert_eq!(
            simpler(&Value::from(1.5)),
            [Value::from(0), Value::from(1.0)]
        );
        assert!(simpler(&Value::from(0)).is_empty());
        assert!(simpler(&Value::Null).is_empty());
    }
}
