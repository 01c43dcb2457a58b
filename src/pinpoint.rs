//! Pinpointing a refusal: when the API refuses a schema-valid request while it accepted
//! another one for the same operation, which single value makes the difference
//! (docs/pinpointing.md).
//!
//! [`differences`] lists the places where the refused request and the accepted one differ
//! (parameters other than path ones, and the leaves of a JSON body), [`with_accepted`]
//! builds the refused request with some of them set to the accepted request's values
//! (only when the result still validates against the document), and [`confirming`] builds
//! the request that records the answer: the refused request's very values, described as
//! the accepted candidate with one value changed (mutation kind `refusedValue`, intent
//! `acceptable`), so that `valid_data_refused` reports it from what is stored, at run time
//! and in a recheck alike.
//!
//! Which places are tried, and when, is decided by the caller, by sending
//! (`engine::pinpoint`).
//!
//! Depends on: `ids`, `model`, `spec::model`, `mutate::{check, place}`.

use serde_json::Value;

use crate::ids::CaseId;
use crate::model::{
    AcceptedRef, Intent, Location, Mutation, MutationKind, Strategy, TestCase, ValueOrigin,
};
use crate::mutate::check::violations;
use crate::spec::{Api, Operation};

/// How deep the body walk goes.
const DEPTH_MAX: usize = 16;
/// Places listed at most (a search halves them, so this bounds its requests too).
const DIFFERENCES_MAX: usize = 256;
/// How much of a value the description quotes.
const QUOTED_MAX: usize = 60;

/// Where a difference is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Parameter(Location, String),
    /// Object keys from the body's root.
    Body(Vec<String>),
}

/// One place where the refused request and the accepted one differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    pub target: Target,
    /// The value the refused request sent there (`None`: it sent nothing there).
    pub refused: Option<Value>,
    /// The value the accepted request sent there.
    pub accepted: Option<Value>,
    /// Where the accepted value came from.
    pub accepted_origin: Option<ValueOrigin>,
}

impl Difference {
    /// Dictionary notation: `limit`, `body.due`, `body.owner.email`.
    pub fn place(&self) -> String {
        match &self.target {
            Target::Parameter(_, name) => name.clone(),
            Target::Body(path) => {
                let mut out = "body".to_owned();
                for key in path {
                    out.push('.');
                    out.push_str(key);
                }
                out
            }
        }
    }

    /// The last name of the place: the parameter or property a document would name.
    pub fn name(&self) -> &str {
        match &self.target {
            Target::Parameter(_, name) => name,
            Target::Body(path) => path.last().map_or("body", String::as_str),
        }
    }

    /// A sentence for a person: `due="2025-01-31" refused, "2025-01-15" accepted`.
    pub fn describe(&self) -> String {
        format!(
            "{}={} refused, {} accepted",
            self.place(),
            quoted(self.refused.as_ref()),
            quoted(self.accepted.as_ref())
        )
    }
}

fn quoted(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".to_owned();
    };
    let text = value.to_string();
    if text.chars().count() <= QUOTED_MAX {
        return text;
    }
    let cut: String = text.chars().take(QUOTED_MAX).collect();
    format!("{cut}…")
}

/// The places where `refused` and `accepted` (two requests for `op`) differ, parameters
/// first (in the order the refused request sent them), then the body's leaves in document
/// order. Left out, because the API may rightly refuse a valid value there for reasons no
/// value class explains: path parameters (which resource, not what is sent), values the API
/// handed out, places named as references to what the API hands out ([`names_a_reference`]:
/// a random pagination token is rightly refused), and conditional headers (`If-Match`, ...:
/// about the resource's state). So is the body when the two sent different media types or a
/// body that is not a plain serialisation.
pub fn differences(op: &Operation, refused: &TestCase, accepted: &TestCase) -> Vec<Difference> {
    let mut out = Vec::new();
    let handed_out =
        |case: &TestCase, place: &str| case.origins.get(place) == Some(&ValueOrigin::Observed);
    let mut names: Vec<(Location, &str)> = Vec::new();
    for p in refused.parameters.iter().chain(&accepted.parameters) {
        if p.location != Location::Path && !names.contains(&(p.location, p.name.as_str())) {
            names.push((p.location, p.name.as_str()));
        }
    }
    for (location, name) in names {
        let find = |case: &TestCase| {
            case.parameters
                .iter()
                .find(|p| p.location == location && p.name == name)
                .map(|p| p.value.clone())
        };
        let (r, a) = (find(refused), find(accepted));
        if r == a
            || handed_out(refused, name)
            || handed_out(accepted, name)
            || names_a_reference(name)
            || (location == Location::Header && name.to_ascii_lowercase().starts_with("if-"))
        {
            continue;
        }
        if op
            .parameters
            .iter()
            .all(|d| d.location != location || d.name != name)
        {
            continue;
        }
        out.push(Difference {
            target: Target::Parameter(location, name.to_owned()),
            refused: r,
            accepted: a,
            accepted_origin: accepted.origins.get(name).copied(),
        });
    }
    if let (Some(r), Some(a)) = (&refused.body, &accepted.body) {
        if r.media_type.eq_ignore_ascii_case(&a.media_type)
            && r.sent_as.is_none()
            && a.sent_as.is_none()
        {
            let mut path = Vec::new();
            leaves(
                Some(&r.value),
                Some(&a.value),
                &mut path,
                &mut |path, rv, av| {
                    let place = format!("body.{}", path.join("."));
                    if handed_out(refused, &place)
                        || handed_out(accepted, &place)
                        || path.iter().any(|key| names_a_reference(key))
                    {
                        return;
                    }
                    out.push(Difference {
                        target: Target::Body(path.to_vec()),
                        refused: rv.cloned(),
                        accepted: av.cloned(),
                        accepted_origin: accepted.origins.get(&place).copied(),
                    });
                },
            );
        }
    }
    out.truncate(DIFFERENCES_MAX);
    out
}

/// Told of each place two values differ at: its object path, the refused and the accepted
/// value there.
type DifferenceVisitor<'v> = dyn FnMut(&[String], Option<&Value>, Option<&Value>) + 'v;

/// Whether a parameter or property name names something the API hands out, which a
/// generated value cannot be expected to name: an id (`id`, `petId`, `owner_ids`, `uuid`), a
/// token, cursor, key, reference or entity tag.
pub fn names_a_reference(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let n = n.strip_suffix('s').unwrap_or(&n);
    [
        "id", "uuid", "token", "cursor", "key", "ref", "etag", "after", "before",
    ]
    .iter()
    .any(|end| n.ends_with(end))
}

/// Whether a search may start from `refused`: not from a body that is an empty object,
/// which an API may rightly refuse as asking for nothing ("at least one field"), a rule
/// documents seldom state.
pub fn searchable(refused: &TestCase) -> bool {
    !refused
        .body
        .as_ref()
        .is_some_and(|b| b.value.as_object().is_some_and(|m| m.is_empty()))
}

/// Calls `found` for every place under two values where they differ: into objects both
/// sides have, a key at a time; anything else (arrays, scalars, an object against a
/// scalar) is one place.
fn leaves(
    refused: Option<&Value>,
    accepted: Option<&Value>,
    path: &mut Vec<String>,
    found: &mut DifferenceVisitor<'_>,
) {
    if refused == accepted {
        return;
    }
    match (refused, accepted) {
        (Some(Value::Object(r)), Some(Value::Object(a))) if path.len() < DEPTH_MAX => {
            let mut keys: Vec<&String> = r.keys().collect();
            keys.extend(a.keys().filter(|k| !r.contains_key(*k)));
            for key in keys {
                path.push(key.clone());
                leaves(r.get(key), a.get(key), path, found);
                path.pop();
            }
        }
        // The body as a whole is no place a value is pinned to.
        _ if path.is_empty() => {}
        _ => found(path, refused, accepted),
    }
}

/// `refused` with the places `flip` set to the accepted request's values, when every
/// parameter and the body still validate against the document (a search must not trade
/// one refusal for a broken request). Strategy `pinpoint`; no mutation; the intent of
/// `refused`.
pub fn with_accepted(
    api: &Api,
    op: &Operation,
    refused: &TestCase,
    flip: &[&Difference],
) -> Option<TestCase> {
    let mut out = refused.clone();
    out.strategy = Strategy::Pinpoint;
    for d in flip {
        match &d.target {
            Target::Parameter(location, name) => {
                let declared = op
                    .parameters
                    .iter()
                    .find(|p| p.location == *location && p.name == *name)?;
                let at = out
                    .parameters
                    .iter()
                    .position(|p| p.location == *location && p.name == *name);
                match (&d.accepted, at) {
                    (Some(v), Some(i)) => out.parameters[i].value = v.clone(),
                    (Some(v), None) => out.parameters.push(crate::model::ParameterValue {
                        location: *location,
                        name: name.clone(),
                        value: v.clone(),
                    }),
                    (None, Some(i)) if !declared.required => {
                        out.parameters.remove(i);
                    }
                    (None, _) => return None,
                }
                if let Some(v) = &d.accepted {
                    if !violations(&api.schemas, &declared.schema, v).is_empty() {
                        return None;
                    }
                }
                set_origin(&mut out, name, d.accepted_origin);
            }
            Target::Body(path) => {
                let body = out.body.as_mut()?;
                // Every parent exists: `differences` goes into objects both sides have.
                body.value = crate::mutate::place::edited(&body.value, path, d.accepted.clone())?;
                set_origin(&mut out, &d.place(), d.accepted_origin);
            }
        }
    }
    out.parameters
        .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    if let Some(body) = &out.body {
        let media = op
            .request_body
            .as_ref()?
            .content
            .iter()
            .find(|m| m.media_type.eq_ignore_ascii_case(&body.media_type))?;
        if !violations(&api.schemas, &media.schema, &body.value).is_empty() {
            return None;
        }
    }
    Some(out)
}

fn set_origin(case: &mut TestCase, place: &str, origin: Option<ValueOrigin>) {
    match origin {
        Some(o) => {
            case.origins.insert(place.to_owned(), o);
        }
        None => {
            case.origins.remove(place);
        }
    }
}

/// The request that records a pinpointed refusal: the values of `refused`, described as
/// the accepted candidate (`accepted`, answered at `accepted_seq`) with the one value at
/// `difference` changed back. Intent `acceptable`: every value is valid, and the request it
/// differs from by that one value was accepted.
pub fn confirming(
    refused: &TestCase,
    accepted: CaseId,
    accepted_seq: u64,
    difference: &Difference,
) -> TestCase {
    let mut out = refused.clone();
    out.strategy = Strategy::Mutation;
    out.intent = Intent::Acceptable;
    out.mutation = Some(Mutation {
        from: AcceptedRef {
            case: accepted,
            seq: accepted_seq,
        },
        kind: MutationKind::RefusedValue,
        place: difference.place(),
        description: difference.describe(),
    });
    out
}

/// The value `case` sends at `place` (dictionary notation, as [`Difference::place`] writes
/// it).
pub fn value_at<'c>(case: &'c TestCase, place: &str) -> Option<&'c Value> {
    match place.strip_prefix("body.") {
        Some(path) => {
            let mut at = &case.body.as_ref()?.value;
            for key in path.split('.') {
                at = at.as_object()?.get(key)?;
            }
            Some(at)
        }
        None => case
            .parameters
            .iter()
            .find(|p| p.name == place && p.location != Location::Path)
            .map(|p| &p.value),
    }
}

/// A smaller form of a pinned-down refusal (`shrink`), its record told the value it sends
/// at the pinned place; `None` when it sends none there (the refusal would be of nothing).
pub fn redescribed(mut case: TestCase) -> Option<TestCase> {
    let refused = {
        let m = case.mutation.as_ref()?;
        value_at(&case, &m.place)?.clone()
    };
    let m = case.mutation.as_mut()?;
    // The description ends with the accepted value, which shrinking never changes.
    let accepted = m
        .description
        .rsplit_once(" refused, ")
        .map(|(_, rest)| rest.to_owned())?;
    m.description = format!("{}={} refused, {accepted}", m.place, quoted(Some(&refused)));
    Some(case)
}

/// Whether the document states the rule a refusal at `place` follows: the response it
/// declares for `status` names the parameter or property in its description.
pub fn explained(op: &Operation, status: u16, place: &str) -> bool {
    let name = place.rsplit('.').next().unwrap_or(place);
    if name.is_empty() || name == "body" {
        return false;
    }
    op.response_for(status).is_some_and(|r| {
        r.description
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|word| word.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CaseBody, ParameterValue};
    use serde_json::json;

    const DOCUMENT: &str = r#"
openapi: 3.1.0
info: {title: events, version: "1"}
paths:
  /events:
    post:
      operationId: createEvent
      parameters:
        - {name: dry, in: query, schema: {type: boolean}}
        - {name: If-Match, in: header, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name, due]
              properties:
                name: {type: string, minLength: 1}
                due: {type: string, format: date}
                place: {type: object, properties: {room: {type: integer}}}
      responses:
        "201": {description: made}
        "422": {description: the due date must fall before the 29th}
"#;

    fn case(dry: Option<bool>, body: Value) -> TestCase {
        TestCase {
            operation: "createEvent".into(),
            method: "POST".into(),
            path: "/events".into(),
            parameters: dry
                .map(|d| ParameterValue {
                    location: Location::Query,
                    name: "dry".into(),
                    value: json!(d),
                })
                .into_iter()
                .collect(),
            body: Some(CaseBody {
                media_type: "application/json".into(),
                value: body,
                sent_as: None,
            }),
            strategy: Strategy::Nominal,
            mode: "random".into(),
            origins: Default::default(),
            intent: Intent::Unknown,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        }
    }

    fn api() -> Api {
        crate::spec::parse(DOCUMENT.as_bytes(), "events.yaml", None).unwrap()
    }

    #[test]
    fn differences_are_parameters_then_body_leaves() {
        let api = api();
        let op = &api.operations[0];
        let refused = case(
            Some(true),
            json!({"name": "a", "due": "2025-01-31", "place": {"room": 3}}),
        );
        let accepted = case(None, json!({"name": "a", "due": "2025-01-15", "place": {}}));
        let places: Vec<String> = differences(op, &refused, &accepted)
            .iter()
            .map(Difference::place)
            .collect();
        assert_eq!(places, ["dry", "body.due", "body.place.room"]);
    }

    #[test]
    fn references_and_conditions_are_no_places() {
        for name in [
            "id",
            "petId",
            "owner_ids",
            "_token",
            "pageToken",
            "cursor",
            "api_key",
            "ETag",
            "ref",
        ] {
            assert!(names_a_reference(name), "{name}");
        }
        for name in ["due", "name", "title", "limit", "seats", "status"] {
            assert!(!names_a_reference(name), "{name}");
        }
        let api = api();
        let op = &api.operations[0];
        let mut refused = case(
            None,
            json!({"name": "a", "due": "2025-01-31", "place": {"room": 3}}),
        );
        let mut accepted = case(
            None,
            json!({"name": "a", "due": "2025-01-15", "place": {"room": 2}}),
        );
        for (c, tag) in [(&mut refused, "\"x\""), (&mut accepted, "\"y\"")] {
            c.parameters.push(ParameterValue {
                location: Location::Header,
                name: "If-Match".into(),
                value: json!(tag),
            });
        }
        let places: Vec<String> = differences(op, &refused, &accepted)
            .iter()
            .map(Difference::place)
            .collect();
        assert_eq!(places, ["body.due", "body.place.room"]);
        assert!(!searchable(&case(None, json!({}))));
        assert!(searchable(&refused));
    }

    #[test]
    fn a_flip_keeps_the_request_valid_or_is_not_offered() {
        let api = api();
        let op = &api.operations[0];
        let refused = case(None, json!({"name": "a", "due": "2025-01-31"}));
        let accepted = case(None, json!({"name": "b", "due": "2025-01-15"}));
        let found = differences(op, &refused, &accepted);
        let due = found.iter().find(|d| d.place() == "body.due").unwrap();
        let flipped = with_accepted(&api, op, &refused, &[due]).unwrap();
        assert_eq!(
            flipped.body.unwrap().value,
            json!({"name": "a", "due": "2025-01-15"})
        );
        assert_eq!(flipped.strategy, Strategy::Pinpoint);
        // Taking a required property away would break the request: not offered.
        let gone = Difference {
            target: Target::Body(vec!["name".into()]),
            refused: Some(json!("a")),
            accepted: None,
            accepted_origin: None,
        };
        assert!(with_accepted(&api, op, &refused, &[&gone]).is_none());
        // Nor is a value the schema refuses.
        let wrong = Difference {
            target: Target::Body(vec!["name".into()]),
            refused: Some(json!("a")),
            accepted: Some(json!("")),
            accepted_origin: None,
        };
        assert!(with_accepted(&api, op, &refused, &[&wrong]).is_none());
    }

    #[test]
    fn the_confirming_request_sends_the_refused_values_and_names_both() {
        let refused = case(None, json!({"name": "a", "due": "2025-01-31"}));
        let d = Difference {
            target: Target::Body(vec!["due".into()]),
            refused: Some(json!("2025-01-31")),
            accepted: Some(json!("2025-01-15")),
            accepted_origin: None,
        };
        let c = confirming(&refused, CaseId(crate::ids::Digest::of(b"x")), 7, &d);
        assert_eq!(c.body, refused.body);
        assert_eq!(c.intent, Intent::Acceptable);
        let m = c.mutation.unwrap();
        assert_eq!(m.kind, MutationKind::RefusedValue);
        assert_eq!(m.place, "body.due");
        assert_eq!(
            m.description,
            r#"body.due="2025-01-31" refused, "2025-01-15" accepted"#
        );
    }

    #[test]
    fn a_smaller_refusal_is_described_by_what_it_sends() {
        let refused = case(
            None,
            json!({"name": "a", "due": "2025-01-31", "place": {"room": 30}}),
        );
        let d = Difference {
            target: Target::Body(vec!["place".into()]),
            refused: Some(json!({"room": 30})),
            accepted: None,
            accepted_origin: None,
        };
        let mut c = confirming(&refused, CaseId(crate::ids::Digest::of(b"x")), 7, &d);
        assert_eq!(
            c.mutation.as_ref().unwrap().description,
            r#"body.place={"room":30} refused, (absent) accepted"#
        );
        c.body.as_mut().unwrap().value =
            json!({"name": "a", "due": "2025-01-31", "place": {"room": 0}});
        let smaller = redescribed(c.clone()).unwrap();
        assert_eq!(
            smaller.mutation.unwrap().description,
            r#"body.place={"room":0} refused, (absent) accepted"#
        );
        c.body.as_mut().unwrap().value = json!({"name": "a", "due": "2025-01-31"});
        assert!(redescribed(c).is_none());
    }

    #[test]
    fn a_declared_rule_naming_the_place_explains_the_refusal() {
        let api = api();
        let op = &api.operations[0];
        assert!(explained(op, 422, "body.due"));
        assert!(!explained(op, 422, "body.name"));
        assert!(!explained(op, 400, "body.due"));
    }
}
