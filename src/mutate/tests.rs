//! Unit tests of the operators, one or more per kind and per rule of where a kind never goes.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::*;
use crate::ids::{CaseId, Digest};
use crate::model::AcceptedRef;
use crate::model::{canonical_json, CaseBody, Location, ParameterValue};
use crate::spec::{self, Api};

pub(crate) fn api(yaml: &str) -> Api {
    spec::parse(yaml.as_bytes(), "test.yaml", None).expect("test document loads")
}

pub(crate) fn from() -> AcceptedRef {
    AcceptedRef {
        case: CaseId(Digest::of(b"accepted")),
        seq: 0,
    }
}

pub(crate) fn case(
    op: &Operation,
    params: Vec<(Location, &str, Value)>,
    body: Option<Value>,
) -> TestCase {
    TestCase {
        operation: op.key.name(),
        method: op.key.method.clone(),
        path: op.key.path.clone(),
        parameters: params
            .into_iter()
            .map(|(location, name, value)| ParameterValue {
                location,
                name: name.to_string(),
                value,
            })
            .collect(),
        body: body.map(|v| CaseBody {
            media_type: "application/json".into(),
            value: canonical_json(v),
            sent_as: None,
        }),
        strategy: crate::model::Strategy::Nominal,
        mode: "random".into(),
        origins: BTreeMap::new(),
        intent: Intent::Unknown,
        mutation: None,
        series_step: None,
        credentials: None,
        shrinking: None,
        identity: None,
    }
}

const PETS: &str = r#"
openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets/{petId}:
    put:
      operationId: updatePet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer, format: int32}}
        - {name: limit, in: query, required: true, schema: {type: integer, minimum: 1, maximum: 100}}
        - {name: sort, in: query, schema: {type: string, enum: [asc, desc]}}
        - {name: code, in: query, schema: {type: string, pattern: "^[A-Z]{3}$"}}
        - {name: since, in: query, schema: {type: string, format: date}}
        - {name: name, in: query, schema: {type: string}}
        - {name: X-Trace, in: header, required: true, schema: {type: string, maxLength: 8}}
        - {name: Accept, in: header, required: true, schema: {type: string}}
        - {name: flag, in: query, schema: {type: boolean}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pet'}
      responses:
        '200': {description: ok}
components:
  schemas:
    Pet:
      type: object
      required: [name, age, owner]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string, minLength: 1, maxLength: 10}
        nick: {type: string}
        age: {type: integer, minimum: 0, maximum: 30}
        weight: {type: number, exclusiveMinimum: 0, multipleOf: 0.5}
        kind: {type: string, enum: [cat, dog]}
        born: {type: string, format: date}
        note: {type: string, nullable: true}
        anything: {}
        either: {anyOf: [{type: string}, {type: integer}]}
        tags:
          type: array
          minItems: 1
          maxItems: 3
          items: {type: object, required: [label], properties: {label: {type: string, pattern: "^[a-z]+$"}}}
        ids: {type: array, uniqueItems: true, maxItems: 2, items: {type: integer}}
        big: {type: integer, format: int64}
        owner:
          type: object
          required: [email]
          properties:
            email: {type: string, format: email}
"#;

fn pets() -> (Api, TestCase) {
    let api = api(PETS);
    let op = api.operations[0].clone();
    let accepted = case(
        &op,
        vec![
            (Location::Path, "petId", json!(7)),
            (Location::Query, "limit", json!(10)),
            (Location::Query, "sort", json!("asc")),
            (Location::Query, "code", json!("ABC")),
            (Location::Query, "since", json!("2021-02-03")),
            (Location::Query, "name", json!("rex")),
            (Location::Header, "X-Trace", json!("abc")),
            (Location::Header, "Accept", json!("application/json")),
            (Location::Query, "flag", json!(true)),
        ],
        Some(json!({
            "name": "Rex", "nick": "r", "age": 3, "weight": 4.5, "kind": "dog", "born": "2020-01-01",
            "note": "n", "anything": {"x": 1}, "either": "s",
            "tags": [{"label": "a"}, {"label": "b"}], "ids": [1, 2], "big": 5,
            "owner": {"email": "a@example.com"}
        })),
    );
    (api, accepted)
}

fn names(ps: &[Place]) -> Vec<String> {
    ps.iter().map(Place::name).collect()
}

fn places_of(kind: MutationKind) -> Vec<String> {
    let (api, accepted) = pets();
    names(&places(
        &api.operations[0],
        &api.schemas,
        &accepted,
        &kind,
        &MutationOptions::default(),
    ))
}

fn apply_at(kind: MutationKind, place_name: &str, seed: u64) -> TestCase {
    let (api, accepted) = pets();
    let op = &api.operations[0];
    let options = MutationOptions::default();
    let all = places(op, &api.schemas, &accepted, &kind, &options);
    let place = all
        .iter()
        .find(|p| p.name() == place_name)
        .unwrap_or_else(|| panic!("{kind} has no place {place_name}: {:?}", names(&all)));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let out = apply(
        op,
        &api.schemas,
        &accepted,
        from(),
        &kind,
        place,
        &options,
        &mut rng,
    )
    .expect("a change holds");
    let m = out.mutation.as_ref().expect("a mutation is recorded");
    assert_eq!(m.kind, kind);
    assert_eq!(m.place, place_name);
    assert_eq!(out.intent, Intent::RefusalExpected);
    assert_eq!(out.strategy, crate::model::Strategy::Mutation);
    out
}

fn body_of(c: &TestCase) -> &Value {
    &c.body.as_ref().expect("a body").value
}

fn param<'c>(c: &'c TestCase, name: &str) -> Option<&'c ParameterValue> {
    c.parameters.iter().find(|p| p.name == name)
}

#[test]
fn drop_required_goes_to_required_members_and_parameters_only() {
    let got = places_of(MutationKind::DropRequired);
    assert_eq!(
        got,
        vec![
            "limit",
            "X-Trace",
            "body.age",
            "body.name",
            "body.owner",
            "body.owner.email",
            "body.tags[].label"
        ]
    );
    // Never a path value, never a header the client writes itself, never an optional member.
    assert!(!got.contains(&"petId".to_string()));
    assert!(!got.contains(&"Accept".to_string()));
    let out = apply_at(MutationKind::DropRequired, "body.owner.email", 1);
    assert_eq!(body_of(&out)["owner"], json!({}));
    let out = apply_at(MutationKind::DropRequired, "limit", 1);
    assert!(param(&out, "limit").is_none());
}

#[test]
fn read_only_properties_are_never_places() {
    let (api, mut accepted) = pets();
    if let Some(b) = accepted.body.as_mut() {
        b.value["id"] = json!(5);
    }
    for kind in MutationKind::ALL {
        let ps = places(
            &api.operations[0],
            &api.schemas,
            &accepted,
            &kind,
            &MutationOptions::default(),
        );
        assert!(!names(&ps).contains(&"body.id".to_string()), "{kind}");
    }
}

#[test]
fn wrong_location_moves_required_parameters_to_another_place() {
    assert_eq!(
        places_of(MutationKind::WrongLocation),
        vec!["limit", "X-Trace"]
    );
    let out = apply_at(MutationKind::WrongLocation, "limit", 3);
    let moved = param(&out, "limit").expect("still carried");
    assert_ne!(moved.location, Location::Query);
    // Parameters stay ordered by (location, name).
    let order: Vec<(Location, String)> = out
        .parameters
        .iter()
        .map(|p| (p.location, p.name.clone()))
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
}

#[test]
fn wrong_type_is_judged_against_the_declared_kind() {
    let got = places_of(MutationKind::WrongType);
    for p in [
        "petId",
        "limit",
        "flag",
        "body.name",
        "body.age",
        "body.tags",
        "body.owner",
    ] {
        assert!(got.contains(&p.to_string()), "{p} in {got:?}");
    }
    // A word is never the wrong kind for a parameter that may be text; no type, no claim; an
    // anyOf that admits every kind tried is not offered; the root is wrongRoot's.
    for p in ["name", "code", "body.anything", "body"] {
        assert!(!got.contains(&p.to_string()), "{p} in {got:?}");
    }
    for seed in 0..20 {
        let out = apply_at(MutationKind::WrongType, "limit", seed);
        let v = &param(&out, "limit").expect("carried").value;
        let reading = values::wire_reading(&["integer".to_string()], v);
        assert!(
            !values::admitted_by(&["integer".to_string()], &reading),
            "{v}"
        );
        assert_ne!(v, &json!("1e3"), "1e3 reads as a whole number");
        // The words name the value sent and the kind declared (written for the kept
        // candidate only).
        let said = &out.mutation.as_ref().expect("a mutation").description;
        let sent: String = v.to_string().chars().take(16).collect();
        assert!(
            said.starts_with("sent ")
                && said.contains(&sent)
                && said.ends_with(" where a whole number is declared at limit"),
            "{said}"
        );
        let out = apply_at(MutationKind::WrongType, "body.age", seed);
        assert!(!values::admitted_by(
            &["integer".to_string()],
            &body_of(&out)["age"]
        ));
    }
}

#[test]
fn outside_a_bound_steps_exactly_one_past() {
    let (api, accepted) = pets();
    let op = &api.operations[0];
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let out = apply_at(MutationKind::OutsideABound, "limit", seed);
        seen.insert(param(&out, "limit").expect("carried").value.to_string());
        let out = apply_at(MutationKind::OutsideABound, "body.weight", seed);
        seen.insert(format!("w{}", body_of(&out)["weight"]));
        let out = apply_at(MutationKind::OutsideABound, "body.name", seed);
        seen.insert(format!(
            "n{}",
            body_of(&out)["name"]
                .as_str()
                .map(|s| s.chars().count())
                .unwrap_or(99)
        ));
        let out = apply_at(MutationKind::OutsideABound, "body.tags", seed);
        seen.insert(format!(
            "t{}",
            body_of(&out)["tags"].as_array().map(Vec::len).unwrap_or(99)
        ));
    }
    let want: std::collections::BTreeSet<String> = ["0", "101", "w0", "n0", "n11", "t0", "t4"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(seen, want);
    // uniqueItems: never lengthened by repeating an item.
    let ps = places(
        op,
        &api.schemas,
        &accepted,
        &MutationKind::OutsideABound,
        &MutationOptions::default(),
    );
    assert!(!names(&ps).contains(&"body.ids".to_string()));
}

#[test]
fn outside_a_bound_minds_integer_and_multiple_of() {
    let a = api(r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                i: {type: integer, minimum: 0.5, exclusiveMaximum: 10.5}
                m: {type: integer, multipleOf: 5, minimum: 12, maximum: 40}
                x: {type: number, exclusiveMinimum: 2.5}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(op, vec![], Some(json!({"i": 3, "m": 20, "x": 3.0})));
    let options = MutationOptions::default();
    let ctx = operators::Ctx::new(op, &a.schemas, &accepted, &options, &mut |_| 0);
    let got = |name: &str| -> Vec<Value> {
        let p = Place::body(vec![Step::Key(name.into())]);
        ctx.candidates(&MutationKind::OutsideABound, &p)
            .into_iter()
            .filter(|c| ctx.holds(&MutationKind::OutsideABound, &p, c))
            .filter_map(|c| match c.change {
                operators::Change::SetBody(v) => Some(v),
                _ => None,
            })
            .collect()
    };
    assert_eq!(got("i"), vec![json!(0), json!(11)]);
    assert_eq!(got("m"), vec![json!(10), json!(45)]);
    assert_eq!(got("x"), vec![json!(2.5)]);
}

#[test]
fn break_an_enumeration_sends_a_value_off_the_list() {
    assert_eq!(
        places_of(MutationKind::BreakAnEnumeration),
        vec!["sort", "body.kind"]
    );
    for seed in 0..10 {
        let out = apply_at(MutationKind::BreakAnEnumeration, "body.kind", seed);
        let v = &body_of(&out)["kind"];
        assert!(v != &json!("cat") && v != &json!("dog") && v.is_string());
    }
}

#[test]
fn break_a_pattern_and_a_format() {
    assert_eq!(
        places_of(MutationKind::BreakAPattern),
        vec!["code", "body.tags[].label"]
    );
    let out = apply_at(MutationKind::BreakAPattern, "code", 2);
    assert_ne!(param(&out, "code").map(|p| &p.value), Some(&json!("ABC")));
    assert_eq!(
        places_of(MutationKind::BreakAFormat),
        vec!["since", "body.born", "body.owner.email"]
    );
    let out = apply_at(MutationKind::BreakAFormat, "body.born", 0);
    assert!(values::format_breakers("date").contains(&body_of(&out)["born"].as_str().unwrap_or("")));
}

#[test]
fn hostile_pattern_is_bounded() {
    let a = api(r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    get:
      parameters:
        - {name: q, in: query, schema: {type: string, pattern: "^(a+)+$"}}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(
        op,
        vec![(Location::Query, "q", json!("a".repeat(60)))],
        None,
    );
    let started = std::time::Instant::now();
    let ps = places(
        op,
        &a.schemas,
        &accepted,
        &MutationKind::BreakAPattern,
        &MutationOptions::default(),
    );
    assert!(started.elapsed().as_secs() < 10);
    assert_eq!(names(&ps), vec!["q"]);
}

#[test]
fn send_null_only_where_nothing_on_the_way_allows_it() {
    let got = places_of(MutationKind::SendNull);
    assert!(got.contains(&"body.name".to_string()));
    assert!(got.contains(&"body.owner".to_string()));
    // nullable: true, no rule at all, never a parameter.
    for p in ["body.note", "body.anything", "limit", "name"] {
        assert!(!got.contains(&p.to_string()), "{p}");
    }
}

#[test]
fn send_empty_only_where_a_rule_forbids_empty() {
    let got = places_of(MutationKind::SendEmpty);
    for p in [
        "limit",
        "sort",
        "code",
        "since",
        "flag",
        "body.name",
        "body.tags",
        "body.owner",
        "body.born",
        "body.kind",
    ] {
        assert!(got.contains(&p.to_string()), "{p} in {got:?}");
    }
    // A word with no rule, a path value, a list that may be empty.
    for p in ["name", "petId", "body.nick", "body.ids", "X-Trace"] {
        assert!(!got.contains(&p.to_string()), "{p} in {got:?}");
    }
}

#[test]
fn oversize_goes_past_stated_maxima_only() {
    assert_eq!(
        places_of(MutationKind::Oversize),
        vec!["X-Trace", "body.name", "body.tags"]
    );
    let out = apply_at(MutationKind::Oversize, "body.name", 0);
    assert_eq!(
        body_of(&out)["name"].as_str().map(|s| s.chars().count()),
        Some(10_000)
    );
    let out = apply_at(MutationKind::Oversize, "body.tags", 0);
    assert_eq!(body_of(&out)["tags"].as_array().map(Vec::len), Some(1_000));
}

#[test]
fn body_level_kinds() {
    assert_eq!(places_of(MutationKind::WrongRoot), vec!["body"]);
    let out = apply_at(MutationKind::WrongRoot, "body", 0);
    assert!(!body_of(&out).is_object());
    let out = apply_at(MutationKind::EmptyBody, "body", 0);
    assert_eq!(
        out.body.as_ref().and_then(|b| b.sent_as.as_deref()),
        Some("")
    );
    for seed in 0..30 {
        let out = apply_at(MutationKind::NotJson, "body", seed);
        let b = out.body.as_ref().expect("body");
        let text = b.sent_as.as_deref().expect("sent as text");
        assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
        // The value keeps the accepted body it was made from.
        assert_eq!(b.value, pets().1.body.expect("body").value);
    }
    let out = apply_at(MutationKind::WrongContentType, "body", 0);
    let b = out.body.as_ref().expect("body");
    assert_ne!(b.media_type, "application/json");
    assert!(b.sent_as.is_some());
}

#[test]
fn empty_body_only_for_required_bodies_and_nothing_for_forms() {
    let a = api(r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    post:
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [a], properties: {a: {type: string}}}
          application/x-www-form-urlencoded:
            schema: {type: object, required: [a], properties: {a: {type: string}}}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(op, vec![], Some(json!({"a": "x"})));
    let o = MutationOptions::default();
    assert!(places(op, &a.schemas, &accepted, &MutationKind::EmptyBody, &o).is_empty());
    assert_eq!(
        names(&places(
            op,
            &a.schemas,
            &accepted,
            &MutationKind::WrongContentType,
            &o
        )),
        vec!["body"]
    );
    let mut form = accepted.clone();
    if let Some(b) = form.body.as_mut() {
        b.media_type = "application/x-www-form-urlencoded".into();
    }
    for kind in MutationKind::ALL {
        assert!(
            places(op, &a.schemas, &form, &kind, &o).is_empty(),
            "{kind} on a form body"
        );
    }
}

#[test]
fn beyond_its_width() {
    let got = places_of(MutationKind::BeyondItsWidth);
    // weight: an exclusiveMinimum rules out a negative number thousands of digits long.
    assert_eq!(got, vec!["petId", "body.age", "body.big", "body.weight"]);
    let out = apply_at(MutationKind::BeyondItsWidth, "petId", 0);
    let v = &param(&out, "petId").expect("carried").value;
    assert!(v == &json!(2147483648i64) || v == &json!(-2147483649i64));
    let mut texts = 0;
    for seed in 0..20 {
        let out = apply_at(MutationKind::BeyondItsWidth, "body.big", seed);
        let b = out.body.as_ref().expect("body");
        if let Some(t) = &b.sent_as {
            texts += 1;
            assert!(
                t.contains("\"big\":-9223372036854775809") || t.contains(&"9".repeat(400)),
                "{}",
                &t[..60.min(t.len())]
            );
        } else {
            assert_eq!(b.value["big"], json!(9223372036854775808u64));
        }
    }
    assert!(texts > 0);
}

#[test]
fn mutate_chooses_a_kind_then_a_place_and_is_deterministic() {
    let (api, accepted) = pets();
    let op = &api.operations[0];
    let options = MutationOptions::default();
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut a = ChaCha8Rng::seed_from_u64(seed);
        let mut b = ChaCha8Rng::seed_from_u64(seed);
        let x = mutate(op, &api.schemas, &accepted, from(), &options, &mut a).expect("a change");
        let y = mutate(op, &api.schemas, &accepted, from(), &options, &mut b).expect("a change");
        assert_eq!(x, y);
        kinds.insert(x.mutation.expect("recorded").kind);
    }
    assert_eq!(kinds.len(), 15, "{kinds:?}");
}

#[test]
fn nothing_on_draws_nothing() {
    let (api, accepted) = pets();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let before = rng.clone();
    assert!(mutate(
        &api.operations[0],
        &api.schemas,
        &accepted,
        from(),
        &MutationOptions::none(),
        &mut rng
    )
    .is_none());
    assert_eq!(rng, before);
}

#[test]
fn nothing_to_change_is_none() {
    let a = api(r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    get:
      parameters:
        - {name: q, in: query, schema: {type: string}}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(op, vec![(Location::Query, "q", json!("x"))], None);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert!(mutate(
        op,
        &a.schemas,
        &accepted,
        from(),
        &MutationOptions::default(),
        &mut rng
    )
    .is_none());
}

#[test]
fn what_is_never_kept() {
    let (api, accepted) = pets();
    let _ = api;
    assert!(can_be_kept(&accepted, 200));
    assert!(!can_be_kept(&accepted, 400));
    let mut deleted = accepted.clone();
    deleted.method = "DELETE".into();
    assert!(!can_be_kept(&deleted, 204));
    let mut pushed = accepted.clone();
    pushed.intent = Intent::Pushing;
    assert!(!can_be_kept(&pushed, 200));
    let mut changed = accepted;
    changed.strategy = crate::model::Strategy::Mutation;
    assert!(!can_be_kept(&changed, 200));
}

#[test]
fn options_from_settings() {
    let mut s = BTreeMap::new();
    s.insert("mutation.wrongType".to_string(), "false".to_string());
    s.insert("mutation.oversizedLength".to_string(), "500".to_string());
    let o = MutationOptions::from_settings(&|k: &str| s.get(k).cloned()).expect("reads");
    assert_eq!(o.enabled.len(), 14);
    assert!(!o.enabled.contains(&MutationKind::WrongType));
    assert_eq!(o.oversized_length, 500);
    s.insert("mutation.violations".to_string(), "false".to_string());
    let o = MutationOptions::from_settings(&|k: &str| s.get(k).cloned()).expect("reads");
    assert!(o.enabled.is_empty());
    s.insert("mutation.notJson".to_string(), "maybe".to_string());
    assert!(MutationOptions::from_settings(&|k: &str| s.get(k).cloned()).is_err());
    for k in MutationKind::ALL {
        assert_eq!(k.as_str().parse::<MutationKind>(), Ok(k.clone()));
        assert_eq!(serde_json::to_value(&k).ok(), Some(json!(k.as_str())));
    }
}

#[test]
fn a_kind_a_person_names_must_be_known_and_a_near_miss_is_named() {
    assert_eq!(
        "wrongTyp".parse::<MutationKind>(),
        Err("`wrongTyp` is not a kind of mutation; did you mean `wrongType`?".to_string())
    );
    assert_eq!(
        "swapHeaders".parse::<MutationKind>(),
        Err("`swapHeaders` is not a kind of mutation".to_string())
    );
    // The switches are settings: a mistyped one is refused by name, with the closest known.
    let mut s = crate::settings::Settings::default();
    let err = s
        .set("mutation.breakAPatern", "false", "probe.toml")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown setting `mutation.breakAPatern` (from probe.toml); did you mean `mutation.breakAPattern`?"
    );
}

#[test]
fn wrong_location_never_where_the_name_is_declared_or_cannot_travel() {
    let a = api(r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    get:
      parameters:
        - {name: token, in: query, required: true, schema: {type: string}}
        - {name: token, in: header, schema: {type: string}}
        - {name: "odd name", in: query, required: true, schema: {type: string}}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(
        op,
        vec![
            (Location::Query, "odd name", json!("v")),
            (Location::Query, "token", json!("t")),
        ],
        None,
    );
    let o = MutationOptions::default();
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let token = Place::parameter(Location::Query, "token");
        let out = apply(
            op,
            &a.schemas,
            &accepted,
            from(),
            &MutationKind::WrongLocation,
            &token,
            &o,
            &mut rng,
        )
        .expect("a cookie is left");
        let moved = out
            .parameters
            .iter()
            .find(|p| p.name == "token")
            .map(|p| p.location);
        assert_eq!(moved, Some(Location::Cookie));
        let odd = Place::parameter(Location::Query, "odd name");
        assert!(apply(
            op,
            &a.schemas,
            &accepted,
            from(),
            &MutationKind::WrongLocation,
            &odd,
            &o,
            &mut rng
        )
        .is_none());
    }
}

#[test]
fn a_changed_parameter_loses_its_old_origin() {
    let (api, mut accepted) = pets();
    accepted
        .origins
        .insert("limit".into(), crate::model::ValueOrigin::Invention);
    accepted
        .origins
        .insert("body".into(), crate::model::ValueOrigin::Invention);
    let op = &api.operations[0];
    let o = MutationOptions::default();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let limit = Place::parameter(Location::Query, "limit");
    let out = apply(
        op,
        &api.schemas,
        &accepted,
        from(),
        &MutationKind::OutsideABound,
        &limit,
        &o,
        &mut rng,
    )
    .expect("a bound");
    assert!(!out.origins.contains_key("limit"));
    let name = Place::body(vec![Step::Key("name".into())]);
    let out = apply(
        op,
        &api.schemas,
        &accepted,
        from(),
        &MutationKind::Oversize,
        &name,
        &o,
        &mut rng,
    )
    .expect("oversize");
    // A body keeps the origin it had: the record of the change describes it.
    assert_eq!(
        out.origins.get("body"),
        Some(&crate::model::ValueOrigin::Invention)
    );
}

#[test]
fn a_nullable_number_parameter_still_takes_a_wrong_type() {
    let a = api(r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /x:
    get:
      parameters:
        - {name: n, in: query, schema: {type: integer, nullable: true}}
      responses: {'200': {description: ok}}
"#);
    let op = &a.operations[0];
    let accepted = case(op, vec![(Location::Query, "n", json!(3))], None);
    let ps = places(
        op,
        &a.schemas,
        &accepted,
        &MutationKind::WrongType,
        &MutationOptions::default(),
    );
    assert_eq!(names(&ps), vec!["n"]);
}
