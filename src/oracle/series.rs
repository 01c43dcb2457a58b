//! What a series oracle looks at: the steps of one stored series, each with its test case,
//! its interaction and its reply, and helpers the series oracles share (declared fields,
//! comparisons that leave out what changes by itself).
//!
//! A series oracle is a [`super::Judge`] whose `series` method reads a [`SeriesView`]; like
//! an exchange oracle it is pure, so `probe run` and `probe recheck` give the same findings
//! for the same stored series.
//!
//! Depends on: `model`, `spec`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::{Interaction, Series, StepRole, TestCase};
use crate::spec::{Api, Operation};

use super::{Observation, OracleInfo};

/// One step of a series as stored.
pub struct StepView<'a> {
    pub role: StepRole,
    /// The operation its case names (for an `OPTIONS` step, the operation of the same path
    /// whose name the case carries).
    pub operation: Option<&'a Operation>,
    pub case: &'a TestCase,
    pub interaction: &'a Interaction,
    /// The reply's body bytes.
    pub body: Option<&'a [u8]>,
}

impl StepView<'_> {
    /// The HTTP status, when an answer came.
    pub fn status(&self) -> Option<u16> {
        self.interaction.outcome.status()
    }

    /// Whether it was answered 2xx.
    pub fn succeeded(&self) -> bool {
        self.status().is_some_and(|s| (200..300).contains(&s))
    }

    /// A reply header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.interaction.outcome.response()?.header(name)
    }

    /// The reply's body read as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(self.body?).ok()
    }

    /// `GET /pets/{petId}`: what a message names the step by.
    pub fn name(&self) -> String {
        format!("{} {}", self.case.method, self.case.path)
    }
}

/// One step of a series with what it recorded, owned: what `probe run` holds when a series
/// ends, and what `probe recheck` reads back from the store.
pub struct StepData {
    pub role: crate::model::StepRole,
    pub seq: u64,
    pub id: crate::ids::InteractionId,
    pub case: TestCase,
    pub interaction: Interaction,
    /// The reply's body bytes.
    pub body: Option<Vec<u8>>,
}

impl StepData {
    /// What the stored series keeps of the step.
    pub fn record(&self) -> crate::model::SeriesStepRecord {
        crate::model::SeriesStepRecord {
            role: self.role,
            seq: self.seq,
            interaction: self.id,
        }
    }
}

/// A series and its steps, for the series oracles.
pub struct SeriesView<'a> {
    pub api: &'a Api,
    pub series: &'a Series,
    pub steps: Vec<StepView<'a>>,
}

impl<'a> SeriesView<'a> {
    /// The first step in `role`, with its index.
    pub fn step(&self, role: StepRole) -> Option<(usize, &StepView<'a>)> {
        self.steps.iter().enumerate().find(|(_, s)| s.role == role)
    }

    /// The last step in `role` before step `before`.
    pub fn last_before(&self, role: StepRole, before: usize) -> Option<(usize, &StepView<'a>)> {
        self.steps[..before.min(self.steps.len())]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, s)| s.role == role)
    }
}

/// What a series oracle saw: the observation and the step it is about (whose interaction
/// the finding names first).
pub struct SeriesObservation {
    pub observation: Observation,
    pub step: usize,
}

/// Whether a 4xx refused a request for what it sent: not for who sent it (401, 403), where
/// (404, 405), when (409) or how often (429). The refused creations and changes of the
/// side-effect oracles are judged only then.
pub fn refused_for_what_it_sent(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 401 | 403 | 404 | 405 | 409 | 429)
}

/// An observation keyed `oracle|operation|detail`: one finding per operation and detail.
pub fn observe(
    oracle: &'static OracleInfo,
    step: usize,
    operation: &str,
    detail: &str,
    message: String,
) -> SeriesObservation {
    SeriesObservation {
        observation: super::per_operation(oracle, operation, detail, message),
        step,
    }
}

/// The properties a schema declares at its top level (through `$ref` and `allOf`), by
/// name, with their schemas.
pub fn declared_properties<'s>(api: &'s Api, schema: &'s Value) -> BTreeMap<&'s str, &'s Value> {
    let mut out = BTreeMap::new();
    collect_properties(api, schema, 8, &mut out);
    out
}

fn collect_properties<'s>(
    api: &'s Api,
    schema: &'s Value,
    depth: usize,
    out: &mut BTreeMap<&'s str, &'s Value>,
) {
    if depth == 0 {
        return;
    }
    let Some(schema) = api.schemas.deref(schema, 64) else {
        return;
    };
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            out.entry(name.as_str()).or_insert(s);
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for member in all {
            collect_properties(api, member, depth - 1, out);
        }
    }
}

/// Whether a property's schema says the server alone writes it.
pub fn read_only(api: &Api, schema: &Value) -> bool {
    api.schemas
        .deref(schema, 64)
        .and_then(|s| s.get("readOnly"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The properties of the JSON body schema an operation takes.
pub fn request_properties<'s>(api: &'s Api, op: &'s Operation) -> BTreeMap<&'s str, &'s Value> {
    op.request_body
        .iter()
        .flat_map(|b| &b.content)
        .find(|m| super::is_json(&m.media_type))
        .map(|m| declared_properties(api, &m.schema))
        .unwrap_or_default()
}

/// The properties the JSON body schema an operation takes requires.
pub fn request_required<'s>(api: &'s Api, op: &'s Operation) -> Vec<&'s str> {
    op.request_body
        .iter()
        .flat_map(|b| &b.content)
        .find(|m| super::is_json(&m.media_type))
        .and_then(|m| api.schemas.deref(&m.schema, 64))
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The properties of the JSON body a 2xx answer of `op` declares.
pub fn reply_properties<'s>(
    api: &'s Api,
    op: &'s Operation,
    status: u16,
) -> BTreeMap<&'s str, &'s Value> {
    op.response_for(status)
        .iter()
        .flat_map(|r| &r.content)
        .find(|m| super::is_json(&m.media_type))
        .map(|m| declared_properties(api, &m.schema))
        .unwrap_or_default()
}

/// A field the step `change` sent in its JSON body whose value the read `after` it shows
/// and the read `before` it did not (fields named like clocks or versions aside): (name,
/// before, after) as messages show them.
pub fn changed_field(
    change: &StepView<'_>,
    before: &Value,
    after: &Value,
) -> Option<(String, String, String)> {
    let sent = change.case.body.as_ref()?.value.as_object()?;
    for (name, value) in sent {
        if changes_by_itself(name) {
            continue;
        }
        let (Some(b), Some(a)) = (before.get(name), after.get(name)) else {
            continue;
        };
        if !same_value(b, value) && same_value(a, value) {
            return Some((name.clone(), shown(b), shown(a)));
        }
    }
    None
}

/// JSON equality where `1` and `1.0` are the same number.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a field's name says it changes by itself on every write (a clock, a version, an
/// entity tag): two reads may differ there without anything being wrong.
pub fn changes_by_itself(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    const WORDS: [&str; 14] = [
        "modified",
        "updated",
        "changed",
        "created",
        "version",
        "revision",
        "timestamp",
        "time",
        "date",
        "etag",
        "expires",
        "lastseen",
        "seq",
        "nonce",
    ];
    WORDS.iter().any(|w| n.contains(w))
}

/// Where two replies differ in the parts a repeated write must not change: numbers,
/// booleans and the sizes of arrays, at any depth, in fields both have; strings are left
/// out (clocks and tokens live there), as are fields whose name says they change by
/// themselves and numbers that read as a clock (past 10^9). Gives the JSON pointer and
/// both values of the first difference.
pub fn idempotence_difference(before: &Value, after: &Value) -> Option<(String, String, String)> {
    fn walk(
        a: &Value,
        b: &Value,
        at: &mut String,
        depth: usize,
    ) -> Option<(String, String, String)> {
        if depth > 16 {
            return None;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    if changes_by_itself(k) {
                        continue;
                    }
                    let Some(w) = y.get(k) else { continue };
                    let len = at.len();
                    at.push('/');
                    at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    let found = walk(v, w, at, depth + 1);
                    at.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            // Of an array, only its size: its items may be reordered or rewritten.
            (Value::Array(x), Value::Array(y)) => (x.len() != y.len()).then(|| {
                (
                    at.clone(),
                    format!("{} items", x.len()),
                    format!("{} items", y.len()),
                )
            }),
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64()?, y.as_f64()?);
                let clock = x.abs() >= 1e9 || y.abs() >= 1e9;
                (x != y && !clock).then(|| (at.clone(), a.to_string(), b.to_string()))
            }
            (Value::Bool(x), Value::Bool(y)) => {
                (x != y).then(|| (at.clone(), a.to_string(), b.to_string()))
            }
            _ => None,
        }
    }
    walk(before, after, &mut String::new(), 0)
}

/// Whether a field's name says it names the thing (`name`, `title`, `label`, `slug`).
pub fn name_like(field: &str) -> bool {
    let lower = field.to_ascii_lowercase();
    ["name", "title", "label", "slug"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Short text of a JSON value for a message.
pub fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeated_writes_are_compared_on_numbers_booleans_and_sizes_only() {
        let a =
            json!({"balance": 10, "name": "x", "tags": [1], "last_modified": 1700000000000_u64});
        let same =
            json!({"balance": 10.0, "name": "y", "tags": [2], "last_modified": 1700000000999_u64});
        assert_eq!(idempotence_difference(&a, &same), None);
        let more = json!({"balance": 20, "name": "x", "tags": [1]});
        assert_eq!(
            idempotence_difference(&a, &more),
            Some(("/balance".into(), "10".into(), "20".into()))
        );
        let grown = json!({"balance": 10, "tags": [1, 1]});
        assert_eq!(
            idempotence_difference(&a, &grown).map(|d| d.0),
            Some("/tags".into())
        );
        // A version counter is not a fault of the write.
        assert_eq!(
            idempotence_difference(&json!({"version": 1}), &json!({"version": 2})),
            None
        );
    }

    #[test]
    fn field_names_that_change_by_themselves() {
        for name in ["updated_at", "lastModified", "etag", "createdAt", "version"] {
            assert!(changes_by_itself(name), "{name}");
        }
        for name in ["balance", "count", "name", "format", "status"] {
            assert!(!changes_by_itself(name), "{name}");
        }
    }
}
