//! Single-violation negatives built from the schema (docs/design-notes.md, Single-violation negatives): for an operation where
//! nothing has been accepted yet, every constraint that can be broken, with its place; a value
//! that breaks exactly that one, built on a valid base (a test case the generator produced);
//! and a cursor that walks the constraints round-robin, so that every one is tried once
//! before any repeats.
//!
//! A built value is kept only if the validator reports exactly one error, at the place, for
//! that keyword: if `-1` for a `minimum: 0` also broke a `multipleOf`, the candidate is
//! discarded and the next one tried.
//!
//! The result says `strategy: "negative"`, intent `refusal_expected`, and `mode`
//! `<keyword>@<place>`; it carries no [`crate::model::Mutation`], since no accepted
//! interaction was changed ([`Negative`] carries the same facts for the engine).
//!
//! Depends on: `model`, `spec::model`, `schema::keyword`, `mutate::{check, place, values,
//! operators}`.

use crate::schema::keyword::Keywords;
use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::model::{canonical_json, Intent, Location, ParameterValue, TestCase};
use crate::spec::{Operation, SchemaSet};

use super::check;
use super::operators::{bound_values, enum_breakers, pattern_breakers};
use super::place::{self, Place, Step, Target};
use super::values;

/// How deep the schema walk goes.
const SITE_DEPTH: usize = 8;
/// How deep a container built to reach a site may be.
const MINIMAL_DEPTH: usize = 6;

/// One constraint that can be broken, and where.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The value that breaks it (for `required`: the object, or the request, that lacks it).
    pub place: Place,
    /// The keyword broken: `type`, `required`, `minLength`, `enum`, ..., or `required` of a
    /// parameter or body (the place is then the parameter or `body`).
    pub keyword: String,
    /// What is broken, for a person: the bound, the member's name, the pattern.
    pub detail: String,
}

impl Site {
    /// `keyword@place`, with the member for `required`.
    pub fn label(&self) -> String {
        if self.keyword == "required" && !self.detail.is_empty() {
            format!("required@{}.{}", self.place.name(), self.detail)
        } else {
            format!("{}@{}", self.keyword, self.place.name())
        }
    }
}

/// A built negative and the site it breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct Negative {
    pub case: TestCase,
    pub site: Site,
    pub description: String,
}

/// The keywords of a value that can be broken one at a time.
const LEAF_KEYWORDS: [&str; 15] = [
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
];

/// Every breakable constraint of an operation, parameters in declaration order, then the body
/// in schema order. Deterministic.
pub fn sites(op: &Operation, schemas: &SchemaSet) -> Vec<Site> {
    let mut out = Vec::new();
    for p in &op.parameters {
        if p.location == Location::Header && values::client_written_header(&p.name) {
            continue;
        }
        let at = Place::parameter(p.location, &p.name);
        if p.required && p.location != Location::Path {
            out.push(Site {
                place: at.clone(),
                keyword: "required".into(),
                detail: String::new(),
            });
        }
        let Some(f) = place::facets(schemas, &p.schema) else {
            continue;
        };
        if place::is_choice(&f) {
            continue;
        }
        for k in LEAF_KEYWORDS {
            if !f.has_keyword(k) {
                continue;
            }
            let types = place::types(&f);
            if k == "type"
                && (types.is_empty()
                    || types
                        .iter()
                        .any(|t| !matches!(t.as_str(), "integer" | "number" | "boolean" | "null")))
            {
                // On the wire a parameter is text: a word is never the wrong kind for one
                // that may be text.
                continue;
            }
            if k == "format" && !breakable_format(&f) {
                continue;
            }
            out.push(Site {
                place: at.clone(),
                keyword: k.into(),
                detail: detail(&f, k),
            });
        }
    }
    if let Some(body) = &op.request_body {
        if body.required {
            out.push(Site {
                place: Place::body(Vec::new()),
                keyword: "required".into(),
                detail: String::new(),
            });
        }
        if let Some(m) = body
            .content
            .iter()
            .find(|m| place::is_json_media(&m.media_type))
        {
            let mut stack = Vec::new();
            body_sites(schemas, &m.schema, Vec::new(), &mut stack, &mut out);
        }
    }
    out
}

fn breakable_format(f: &Map<String, Value>) -> bool {
    f.keyword("format")
        .and_then(Value::as_str)
        .is_some_and(|fmt| {
            !values::format_breakers(fmt).is_empty() || check::width_edges(fmt).is_some()
        })
}

fn detail(f: &Map<String, Value>, k: &str) -> String {
    match f.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

fn body_sites(
    schemas: &SchemaSet,
    schema: &Value,
    path: Vec<Step>,
    stack: &mut Vec<String>,
    out: &mut Vec<Site>,
) {
    if path.len() > SITE_DEPTH {
        return;
    }
    // A shape met again on the way down is a recursion: its sites are already listed.
    let reference = schema
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(r) = &reference {
        if stack.contains(r) {
            return;
        }
        stack.push(r.clone());
    }
    let Some(f) = place::facets(schemas, schema) else {
        if reference.is_some() {
            stack.pop();
        }
        return;
    };
    if f.keyword("readOnly") == Some(&Value::Bool(true)) || place::is_choice(&f) {
        if reference.is_some() {
            stack.pop();
        }
        return;
    }
    let at = Place::body(path.clone());
    for k in LEAF_KEYWORDS {
        if !f.has_keyword(k) || (k == "format" && !breakable_format(&f)) {
            continue;
        }
        if k == "type" && place::types(&f).is_empty() {
            continue;
        }
        out.push(Site {
            place: at.clone(),
            keyword: k.into(),
            detail: detail(&f, k),
        });
    }
    for name in place::required(&f) {
        let read_only = f
            .get("properties")
            .and_then(|p| p.get(&name))
            .and_then(|s| place::facets(schemas, s))
            .is_some_and(|s| s.get("readOnly") == Some(&Value::Bool(true)));
        if !read_only {
            out.push(Site {
                place: at.clone(),
                keyword: "required".into(),
                detail: name,
            });
        }
    }
    if f.keyword("additionalProperties") == Some(&Value::Bool(false)) {
        out.push(Site {
            place: at.clone(),
            keyword: "additionalProperties".into(),
            detail: "false".into(),
        });
    }
    if let Some(Value::Object(props)) = f.keyword("properties") {
        for (name, sub) in props {
            let mut p = path.clone();
            p.push(Step::Key(name.clone()));
            body_sites(schemas, sub, p, stack, out);
        }
    }
    if let Some(items) = f.keyword("items") {
        let mut p = path.clone();
        p.push(Step::Index(0));
        body_sites(schemas, items, p, stack, out);
    }
    if reference.is_some() {
        stack.pop();
    }
}

/// Builds the negative for one site on `base`; `None` when no candidate breaks exactly that
/// one constraint (or the site cannot be reached from this base).
pub fn build(
    op: &Operation,
    schemas: &SchemaSet,
    base: &TestCase,
    site: &Site,
) -> Option<Negative> {
    let mut case = base.clone();
    case.strategy = crate::model::Strategy::Negative;
    case.intent = Intent::RefusalExpected;
    case.mutation = None;
    case.series_step = None;
    case.mode = site.label();
    let description = match &site.place.target {
        Target::Parameter { location, name } => {
            break_parameter(op, schemas, base, site, &mut case, *location, name)?
        }
        Target::Body
            if site.keyword == "required"
                && site.place.path.is_empty()
                && site.detail.is_empty() =>
        {
            if !op.request_body.as_ref().is_some_and(|b| b.required) {
                return None;
            }
            case.body = None;
            "left out the required body".to_string()
        }
        Target::Body => break_body(op, schemas, site, &mut case)?,
    };
    Some(Negative {
        case,
        site: site.clone(),
        description,
    })
}

/// Breaks the one constraint `site` names on parameter `name` of `case` (leaves it out, for
/// `required`); what was done, described.
fn break_parameter(
    op: &Operation,
    schemas: &SchemaSet,
    base: &TestCase,
    site: &Site,
    case: &mut TestCase,
    location: Location,
    name: &str,
) -> Option<String> {
    let decl = op
        .parameters
        .iter()
        .find(|p| p.location == location && p.name == name)?;
    if site.keyword == "required" {
        case.parameters
            .retain(|p| !(p.location == location && p.name == name));
        return Some(format!("left out the required parameter {name}"));
    }
    let f = place::facets(schemas, &decl.schema)?;
    let declared = place::types(&f);
    let current = base
        .parameters
        .iter()
        .find(|p| p.location == location && p.name == name)
        .map(|p| p.value.clone())
        .or_else(|| minimal(schemas, &decl.schema, 0))?;
    let chosen = candidates(&f, &site.keyword, &current, false)
        .into_iter()
        .filter(|v| values::can_travel(location, v) || v.is_array())
        .find(|v| {
            let reading = values::wire_reading(&declared, v);
            let errors = check::violations(schemas, &decl.schema, &reading);
            exactly(&errors, "", &site.keyword)
        })?;
    let text = chosen.to_string();
    match case
        .parameters
        .iter_mut()
        .find(|p| p.location == location && p.name == name)
    {
        Some(p) => p.value = chosen,
        None => {
            case.parameters.push(ParameterValue {
                location,
                name: name.to_owned(),
                value: chosen,
            });
            case.parameters
                .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
        }
    }
    Some(format!(
        "sent {} to break {} ({}) of {name}",
        short(&text),
        site.keyword,
        site.detail
    ))
}

/// Breaks the one constraint `site` names inside the JSON body of `case`; what was done,
/// described.
fn break_body(
    op: &Operation,
    schemas: &SchemaSet,
    site: &Site,
    case: &mut TestCase,
) -> Option<String> {
    let body = case.body.as_mut()?;
    if !place::is_json_media(&body.media_type) || body.sent_as.is_some() {
        return None;
    }
    let schema = op
        .request_body
        .as_ref()?
        .content
        .iter()
        .find(|m| m.media_type.eq_ignore_ascii_case(&body.media_type))?
        .schema
        .clone();
    let mut value = body.value.clone();
    if !reach(schemas, &schema, &mut value, &site.place.path) {
        return None;
    }
    let pointer = site.place.pointer();
    let made = broken_body(schemas, &schema, site, value, &pointer)?;
    if !exactly(
        &check::violations(schemas, &schema, &made),
        &pointer,
        &site.keyword,
    ) {
        return None;
    }
    body.value = canonical_json(made);
    Some(format!(
        "broke {} ({}) at {}",
        site.keyword,
        site.detail,
        site.place.name()
    ))
}

/// `value` (a body) with the constraint `site` names broken: a required property left
/// out, an undeclared one added, or the first candidate that breaks exactly that keyword at
/// `pointer`.
fn broken_body(
    schemas: &SchemaSet,
    schema: &Value,
    site: &Site,
    mut value: Value,
    pointer: &str,
) -> Option<Value> {
    match site.keyword.as_str() {
        "required" => {
            let obj = place::get_mut(&mut value, &site.place.path)?.as_object_mut()?;
            obj.shift_remove(&site.detail);
            Some(value)
        }
        "additionalProperties" => {
            let obj = place::get_mut(&mut value, &site.place.path)?.as_object_mut()?;
            let mut name = "probeUndeclared".to_string();
            while obj.contains_key(&name) {
                name.push('_');
            }
            obj.insert(name, json!(1));
            Some(value)
        }
        keyword => {
            let f = place::facets(schemas, &node_schema(schemas, schema, &site.place.path)?)?;
            let mut current = place::get(&value, &site.place.path)?.clone();
            if current.as_array().is_some_and(Vec::is_empty)
                && matches!(keyword, "maxItems" | "uniqueItems")
            {
                // A list to lengthen needs an item to repeat.
                let item = minimal(schemas, f.keyword("items")?, 0)?;
                current = json!([item]);
            }
            candidates(&f, keyword, &current, true)
                .into_iter()
                .find_map(|v| {
                    {
                        let mut whole = value.clone();
                        *place::get_mut(&mut whole, &site.place.path)? = v;
                        Some(whole)
                    }
                    .filter(|whole| {
                        exactly(&check::violations(schemas, schema, whole), pointer, keyword)
                    })
                })
        }
    }
}

/// Exactly one error, at `pointer`, for `keyword`.
fn exactly(errors: &[(String, String)], pointer: &str, keyword: &str) -> bool {
    errors.len() == 1 && errors[0].0 == pointer && errors[0].1 == keyword
}

fn short(text: &str) -> String {
    if text.chars().count() > 40 {
        let head: String = text.chars().take(24).collect();
        format!("{head}... ({} characters)", text.chars().count())
    } else {
        text.to_string()
    }
}

/// The schema at a path of the body, following properties and items.
fn node_schema(schemas: &SchemaSet, root: &Value, path: &[Step]) -> Option<Value> {
    let mut at = root.clone();
    for step in path {
        let f = place::facets(schemas, &at)?;
        at = match step {
            Step::Key(k) => f.keyword("properties")?.get(k)?.clone(),
            Step::Index(_) => f.keyword("items")?.clone(),
        };
    }
    Some(at)
}

/// Makes sure the containers along `path` exist in `value`, building what is missing from a
/// minimal valid value of its shape.
fn reach(schemas: &SchemaSet, root: &Value, value: &mut Value, path: &[Step]) -> bool {
    let mut schema = root.clone();
    let mut at: &mut Value = value;
    for step in path {
        let Some(f) = place::facets(schemas, &schema) else {
            return false;
        };
        let sub = match step {
            Step::Key(k) => f.keyword("properties").and_then(|p| p.get(k)).cloned(),
            Step::Index(_) => f.keyword("items").cloned(),
        };
        let Some(sub) = sub else { return false };
        match (step, at) {
            (Step::Key(k), Value::Object(m)) => {
                if !m.contains_key(k) {
                    let Some(made) = minimal(schemas, &sub, 0) else {
                        return false;
                    };
                    m.insert(k.clone(), made);
                }
                let Some(next) = m.get_mut(k) else {
                    return false;
                };
                at = next;
            }
            (Step::Index(_), Value::Array(items)) => {
                if items.is_empty() {
                    let Some(made) = minimal(schemas, &sub, 0) else {
                        return false;
                    };
                    items.push(made);
                }
                let Some(next) = items.first_mut() else {
                    return false;
                };
                at = next;
            }
            _ => return false,
        }
        schema = sub;
    }
    true
}

/// A small value valid against simple shapes (the validator has the last word).
fn minimal(schemas: &SchemaSet, schema: &Value, depth: usize) -> Option<Value> {
    if depth > MINIMAL_DEPTH {
        return None;
    }
    let f = place::facets(schemas, schema)?;
    if let Some(Value::Array(e)) = f.keyword("enum") {
        return e.first().cloned();
    }
    if let Some(c) = f.keyword("const") {
        return Some(c.clone());
    }
    if let Some(Value::Array(ex)) = f.keyword("examples") {
        if let Some(x) = ex.first() {
            return Some(x.clone());
        }
    }
    let types = place::types(&f);
    let t = types
        .first()
        .map(String::as_str)
        .unwrap_or(if f.has_keyword("properties") {
            "object"
        } else {
            "string"
        });
    Some(match t {
        "string" => {
            if f.has_keyword("pattern") {
                return None;
            }
            if let Some(fmt) = f.keyword("format").and_then(Value::as_str) {
                let sample = match fmt {
                    "date" => "2021-01-01",
                    "date-time" => "2021-01-01T00:00:00Z",
                    "time" => "00:00:00Z",
                    "email" => "someone@example.com",
                    "uuid" => "123e4567-e89b-12d3-a456-426614174000",
                    "uri" | "url" => "https://example.com/",
                    "ipv4" => "10.0.0.1",
                    "ipv6" => "::1",
                    "hostname" => "example.com",
                    _ => "a",
                };
                return Some(json!(sample));
            }
            let n = f
                .get("minLength")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1) as usize;
            json!("a".repeat(n.min(1000)))
        }
        "integer" | "number" => {
            let lo = f
                .get("minimum")
                .and_then(Value::as_f64)
                .or_else(|| {
                    f.keyword("exclusiveMinimum")
                        .and_then(Value::as_f64)
                        .map(|x| x.floor() + 1.0)
                })
                .unwrap_or(0.0)
                .max(0.0)
                .ceil();
            let k = f
                .get("multipleOf")
                .and_then(Value::as_f64)
                .filter(|k| *k > 0.0);
            let v = match k {
                Some(k) => (lo / k).ceil() * k,
                None => lo,
            };
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                json!(v as i64)
            } else {
                json!(v)
            }
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        "array" => {
            let n = f.keyword("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            if n == 0 {
                json!([])
            } else {
                let item = minimal(schemas, f.keyword("items")?, depth + 1)?;
                if n > 1 && f.keyword("uniqueItems") == Some(&Value::Bool(true)) {
                    return None;
                }
                Value::Array(vec![item; n.min(100)])
            }
        }
        "object" => {
            let mut m = Map::new();
            let props = f.keyword("properties").and_then(Value::as_object);
            for name in place::required(&f) {
                let sub = props.and_then(|p| p.get(&name))?;
                m.insert(name, minimal(schemas, sub, depth + 1)?);
            }
            Value::Object(m)
        }
        _ => return None,
    })
}

/// Candidate values breaking `keyword`, most likely to break it alone first.
fn candidates(f: &Map<String, Value>, keyword: &str, current: &Value, in_body: bool) -> Vec<Value> {
    let declared = place::types(f);
    match keyword {
        "type" => {
            let pool: Vec<Value> = if in_body {
                vec![
                    json!("probe"),
                    json!(12345),
                    json!(1.5),
                    json!(true),
                    json!([]),
                    json!({}),
                    Value::Null,
                ]
            } else {
                vec![json!("probe"), json!("1.5"), json!("2"), json!("true")]
            };
            pool.into_iter()
                .filter(|v| !values::reads_as_declared(&declared, v))
                .collect()
        }
        "enum" | "const" => enum_breakers(f, current),
        "pattern" => pattern_breakers(f, current),
        "format" => {
            let fmt = f.keyword("format").and_then(Value::as_str).unwrap_or("");
            let mut out: Vec<Value> = values::format_breakers(fmt)
                .into_iter()
                .map(|w| json!(w))
                .collect();
            match fmt {
                "int32" => out.extend([json!(i32::MAX as i64 + 1), json!(i32::MIN as i64 - 1)]),
                "int64" => out.push(json!(i64::MAX as u64 + 1)),
                "float" => out.push(json!(f32::MAX as f64 * 10.0)),
                _ => {}
            }
            out
        }
        "multipleOf" => {
            let k = f
                .keyword("multipleOf")
                .and_then(Value::as_f64)
                .unwrap_or(1.0);
            let v = current.as_f64().unwrap_or(0.0);
            let mut out = Vec::new();
            for x in [v + 1.0, v - 1.0, v + k / 2.0, v - k / 2.0] {
                if let Some(n) = serde_json::Number::from_f64(x) {
                    if x.fract() == 0.0 && x.abs() < 9.0e15 {
                        out.push(json!(x as i64));
                    } else {
                        out.push(Value::Number(n));
                    }
                }
            }
            out
        }
        "uniqueItems" => match current {
            Value::Array(items) => {
                let mut out = Vec::new();
                if let Some(first) = items.first() {
                    let mut twice = items.clone();
                    twice.push(first.clone());
                    out.push(Value::Array(twice));
                    out.push(Value::Array(vec![first.clone(), first.clone()]));
                }
                out
            }
            _ => Vec::new(),
        },
        bound => {
            let label = format!("its {bound}");
            let mut out: Vec<Value> = bound_values(f, current, in_body)
                .into_iter()
                .filter(|(_, what)| what.contains(&label))
                .map(|(v, _)| v)
                .collect();
            // From nothing: a value of the declared kind just past the bound.
            if out.is_empty() {
                let n = f.get(bound).and_then(Value::as_u64).unwrap_or(0) as usize;
                match bound {
                    "minLength" if n >= 1 => out.push(json!("a".repeat(n - 1))),
                    "maxLength" if n < 100_000 => out.push(json!("a".repeat(n + 1))),
                    _ => {}
                }
            }
            out
        }
    }
}

/// The round-robin over an operation's sites, kept by the engine per operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    next: usize,
    /// Sites that could be built at least once (for reporting coverage).
    tried: BTreeSet<usize>,
}

impl Cursor {
    pub fn new() -> Cursor {
        Cursor::default()
    }

    /// The next negative, from the site after the last one tried, on `base`. Sites that cannot
    /// be built on this base are passed over (at most one full turn); `None` when none can.
    pub fn next(
        &mut self,
        op: &Operation,
        schemas: &SchemaSet,
        sites: &[Site],
        base: &TestCase,
    ) -> Option<Negative> {
        for _ in 0..sites.len() {
            let i = self.next % sites.len();
            self.next = (i + 1) % sites.len();
            if let Some(n) = build(op, schemas, base, &sites[i]) {
                self.tried.insert(i);
                return Some(n);
            }
        }
        None
    }

    /// How many distinct sites have been built so far.
    pub fn covered(&self) -> usize {
        self.tried.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::tests::{api, case};

    const DOC: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /pets:
    post:
      parameters:
        - {name: limit, in: query, required: true, schema: {type: integer, minimum: 1, maximum: 50}}
        - {name: q, in: query, schema: {type: string, maxLength: 5}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/NewPet'}
      responses: {'200': {description: ok}}
components:
  schemas:
    NewPet:
      type: object
      required: [name, age]
      additionalProperties: false
      properties:
        name: {type: string, minLength: 1, maxLength: 40}
        age: {type: integer, minimum: 0, maximum: 50}
        tag: {type: string, enum: [cat, dog]}
        parent: {$ref: '#/components/schemas/NewPet'}
        toys: {type: array, maxItems: 2, items: {type: object, required: [label], properties: {label: {type: string, pattern: "^[a-z]+$"}}}}
"#;

    fn fixture() -> (crate::spec::Api, TestCase) {
        let a = api(DOC);
        let op = a.operations[0].clone();
        let base = case(
            &op,
            vec![(Location::Query, "limit", json!(5))],
            Some(json!({"name": "Rex", "age": 3, "toys": [{"label": "ball"}]})),
        );
        (a, base)
    }

    #[test]
    fn sites_follow_the_design_note() {
        let (a, _) = fixture();
        let labels: Vec<String> = sites(&a.operations[0], &a.schemas)
            .iter()
            .map(Site::label)
            .collect();
        for want in [
            "required@limit",
            "type@limit",
            "minimum@limit",
            "maximum@limit",
            "maxLength@q",
            "required@body",
            "type@body",
            "required@body.name",
            "required@body.age",
            "additionalProperties@body",
            "type@body.name",
            "minLength@body.name",
            "maxLength@body.name",
            "type@body.age",
            "minimum@body.age",
            "maximum@body.age",
            "enum@body.tag",
            "maxItems@body.toys",
            "required@body.toys[].label",
            "pattern@body.toys[].label",
        ] {
            assert!(labels.contains(&want.to_string()), "{want} in {labels:?}");
        }
        // The recursion through `parent` is listed once.
        assert!(!labels.iter().any(|l| l.contains("parent.parent")));
        assert!(!labels.contains(&"type@q".to_string()));
    }

    #[test]
    fn each_built_value_breaks_exactly_one_constraint_at_its_place() {
        let (a, base) = fixture();
        let op = &a.operations[0];
        let schema = op
            .request_body
            .as_ref()
            .map(|b| b.content[0].schema.clone())
            .unwrap_or_default();
        assert!(check::is_valid(
            &a.schemas,
            &schema,
            base.body.as_ref().map(|b| &b.value).unwrap_or(&Value::Null)
        ));
        let all = sites(op, &a.schemas);
        let mut built = 0;
        for site in &all {
            let Some(n) = build(op, &a.schemas, &base, site) else {
                continue;
            };
            built += 1;
            assert_eq!(n.case.intent, Intent::RefusalExpected);
            match (&site.place.target, n.case.body.as_ref()) {
                (Target::Body, Some(b))
                    if site.keyword != "required"
                        || !site.place.path.is_empty()
                        || !site.detail.is_empty() =>
                {
                    let errors = check::violations(&a.schemas, &schema, &b.value);
                    assert_eq!(
                        errors,
                        vec![(site.place.pointer(), site.keyword.clone())],
                        "{}",
                        site.label()
                    );
                }
                (Target::Body, None) => assert_eq!(site.keyword, "required"),
                (Target::Parameter { name, .. }, _) => {
                    let decl = op
                        .parameters
                        .iter()
                        .find(|p| &p.name == name)
                        .expect("declared");
                    match n.case.parameters.iter().find(|p| &p.name == name) {
                        None => assert_eq!(site.keyword, "required"),
                        Some(p) => {
                            let declared = place::facets(&a.schemas, &decl.schema)
                                .map(|f| place::types(&f))
                                .unwrap_or_default();
                            let errors = check::violations(
                                &a.schemas,
                                &decl.schema,
                                &values::wire_reading(&declared, &p.value),
                            );
                            assert_eq!(
                                errors,
                                vec![(String::new(), site.keyword.clone())],
                                "{}",
                                site.label()
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        let missing: Vec<String> = all
            .iter()
            .filter(|s| build(op, &a.schemas, &base, s).is_none())
            .map(Site::label)
            .collect();
        // A wrong type for a word with a closed list breaks the list too: never exactly one.
        assert_eq!(missing, vec!["type@body.tag".to_string()]);
        assert_eq!(built + 1, all.len());
    }

    #[test]
    fn the_cursor_tries_every_site_once_before_any_repeats() {
        let (a, base) = fixture();
        let op = &a.operations[0];
        let all = sites(op, &a.schemas);
        let buildable: Vec<String> = all
            .iter()
            .filter(|s| build(op, &a.schemas, &base, s).is_some())
            .map(Site::label)
            .collect();
        let mut cursor = Cursor::new();
        let mut seen = Vec::new();
        for _ in 0..buildable.len() {
            let n = cursor
                .next(op, &a.schemas, &all, &base)
                .expect("a negative");
            seen.push(n.site.label());
        }
        assert_eq!(seen, buildable);
        let again = cursor
            .next(op, &a.schemas, &all, &base)
            .expect("a negative");
        assert_eq!(again.site.label(), buildable[0]);
        assert_eq!(cursor.covered(), buildable.len());
    }
}
