//! The exchange model a user check sees: one request, what came back, and the test case
//! behind it, as one JSON value (`docs/checks.md`, "The exchange model"). It is a format
//! others write code against (checks in CEL, programs reading NDJSON), so it is versioned
//! by [`EXCHANGE_MODEL`]: a field may be added in a later version of the same major
//! version, never renamed or retyped.
//!
//! Built from what the store keeps (the [`TestCase`], the [`Interaction`] and the body
//! bytes, resolved by the caller), so a check judges a run recorded long ago exactly as it
//! judges one in flight, and it sees credentials only as the placeholders the store keeps.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::model::{BodyBytes, Interaction, Location, Outcome, TestCase};

/// The name and version of the exchange model, as programs receive it in their `hello`.
pub const EXCHANGE_MODEL: &str = "probe.check.exchange/1";

/// What a check is given besides the case and the interaction: the bodies, as bytes
/// (resolved from the store when they were kept as blobs) or as values read already.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bodies<'a> {
    /// The request body's bytes, for one the store kept as a blob.
    pub request: Option<&'a [u8]>,
    /// The request body as the case holds it, for one the store did not keep inline (and
    /// whose bytes are not given): the value itself, its text the value as JSON.
    pub request_value: Option<&'a Value>,
    pub response: Option<&'a [u8]>,
    /// The response body as JSON, when the caller read it already.
    pub response_json: Read<'a>,
}

/// Whether a body was read as JSON already, and what it gave.
#[derive(Clone, Copy, Debug, Default)]
pub enum Read<'a> {
    /// Not read: it is read from its bytes when a check wants it.
    #[default]
    NotRead,
    Json(&'a Value),
    /// Read, and not JSON (or absent): `null`.
    NotJson,
}

/// One exchange as a check sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExchangeModel {
    /// The whole model: `{request, response, error, case, step}`.
    pub value: Value,
    /// The operation key (`operationId`, else `METHOD /path`), for `operations = […]`.
    pub operation: String,
    pub method: String,
    pub path: String,
    pub tags: Vec<String>,
    /// The status answered, `None` when nothing came back.
    pub status: Option<u16>,
}

impl ExchangeModel {
    /// The model of `interaction`, sent for `case`, with the bodies the caller resolved
    /// (an inline body needs none; a blob's bytes are the caller's to read).
    pub fn new(
        case: &TestCase,
        interaction: &Interaction,
        bodies: Bodies<'_>,
        tags: &[String],
    ) -> ExchangeModel {
        ExchangeModel::reading(case, interaction, bodies, tags, &Reads::everything())
    }

    /// The model with only the parts `reads` names (the others are left out): what the
    /// declarative checks of a judging read, built once per exchange for all of them.
    pub fn reading(
        case: &TestCase,
        interaction: &Interaction,
        bodies: Bodies<'_>,
        tags: &[String],
        reads: &Reads,
    ) -> ExchangeModel {
        let (response, error, status) = response_value(interaction, bodies, reads);
        let mut value = Map::new();
        if reads.wants_any("request") {
            value.insert(
                "request".into(),
                request_value(case, interaction, bodies, reads),
            );
        }
        if reads.wants_any("response") {
            value.insert("response".into(), response);
        }
        if reads.wants_any("error") {
            value.insert("error".into(), error);
        }
        if reads.wants_any("case") {
            value.insert("case".into(), case_value(case, interaction, tags));
        }
        if reads.wants_any("step") {
            let step = case
                .series_step
                .as_ref()
                .map(|s| json!({ "series": s.series, "index": s.index, "bindings": s.bindings }));
            value.insert("step".into(), json!(step));
        }
        if reads.wants_any("seq") {
            value.insert("seq".into(), json!(interaction.seq));
        }
        ExchangeModel {
            value: Value::Object(value),
            operation: case.operation.clone(),
            method: case.method.clone(),
            path: case.path.clone(),
            tags: tags.to_vec(),
            status,
        }
    }
}

/// `fields` with each `(name, make)` whose field `reads` wants under `root`; `make` is
/// called only for those.
fn part(root: &str, reads: &Reads, fields: Vec<(&str, &dyn Fn() -> Value)>) -> Value {
    let mut out = Map::new();
    for (name, make) in fields {
        if reads.wants(root, name) {
            out.insert(name.to_string(), make());
        }
    }
    Value::Object(out)
}

/// `value` (a part's object) with the body and text where `reads` wants them: moved in,
/// as a body may be large.
fn with_bodies(mut value: Value, root: &str, reads: &Reads, body: Value, text: Value) -> Value {
    if let Value::Object(map) = &mut value {
        if reads.wants(root, "body") {
            map.insert("body".into(), body);
        }
        if reads.wants(root, "text") {
            map.insert("text".into(), text);
        }
    }
    value
}

fn request_value(
    case: &TestCase,
    interaction: &Interaction,
    bodies: Bodies<'_>,
    reads: &Reads,
) -> Value {
    let request = &interaction.request;
    let params = |location: Location| {
        let mut out = Map::new();
        for p in case.parameters.iter().filter(|p| p.location == location) {
            out.insert(p.name.clone(), p.value.clone());
        }
        Value::Object(out)
    };
    let wants = (
        reads.wants("request", "body"),
        reads.wants("request", "text"),
    );
    let (body, text) = match (&request.body, bodies.request, bodies.request_value) {
        // The case's value, handed over as it is rather than written out and read back.
        (None | Some(BodyBytes::Blob { .. }), None, Some(value)) => (
            if wants.0 { value.clone() } else { Value::Null },
            if wants.1 {
                Value::String(value.to_string())
            } else {
                Value::Null
            },
        ),
        _ => read_body(
            body_bytes(request.body.as_ref(), bodies.request),
            Read::NotRead,
            wants,
        ),
    };
    let value = part(
        "request",
        reads,
        vec![
            ("method", &|| json!(request.method)),
            ("operation", &|| json!(case.operation)),
            ("path", &|| json!(case.path)),
            ("url", &|| json!(request.url)),
            ("path_params", &|| params(Location::Path)),
            ("query", &|| params(Location::Query)),
            ("cookies", &|| params(Location::Cookie)),
            ("headers", &|| headers(&request.headers)),
            ("media_type", &|| {
                json!(case.body.as_ref().map(|b| b.media_type.as_str()))
            }),
        ],
    );
    with_bodies(value, "request", reads, body, text)
}

/// The `response` part (null when nothing came back), the `error` part (null when
/// something did), and the status.
fn response_value(
    interaction: &Interaction,
    bodies: Bodies<'_>,
    reads: &Reads,
) -> (Value, Value, Option<u16>) {
    match &interaction.outcome {
        Outcome::Response(r) => {
            let (body, text) = read_body(
                body_bytes(r.body.as_ref(), bodies.response),
                bodies.response_json,
                (
                    reads.wants("response", "body"),
                    reads.wants("response", "text"),
                ),
            );
            let media_type = || {
                json!(r.header("content-type").map(|v| {
                    v.split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase()
                }))
            };
            let value = part(
                "response",
                reads,
                vec![
                    ("status", &|| json!(r.status)),
                    ("headers", &|| headers(&r.headers)),
                    ("media_type", &media_type),
                    ("truncated", &|| json!(r.truncated)),
                    ("time_ms", &|| {
                        json!(interaction.timing.elapsed_us as f64 / 1000.0)
                    }),
                ],
            );
            let value = with_bodies(value, "response", reads, body, text);
            (value, Value::Null, Some(r.status))
        }
        Outcome::TransportError { kind, message } => (
            Value::Null,
            json!({ "kind": kind.name(), "message": message }),
            None,
        ),
    }
}

fn case_value(case: &TestCase, interaction: &Interaction, tags: &[String]) -> Value {
    let mutation = case.mutation.as_ref().map(
        |m| json!({ "kind": m.kind.to_string(), "place": m.place, "description": m.description }),
    );
    json!({
        "id": interaction.case.to_string(),
        "strategy": case.strategy.as_str(),
        "mode": case.mode,
        "intent": case.intent.as_str(),
        "mutation": mutation,
        "identity": case.identity.as_deref().unwrap_or("default"),
        "tags": tags,
    })
}

/// The parts of the exchange model ([`FIELDS`]) some expressions read, so that an
/// exchange's model holds only those: a check of `response.status` needs neither body
/// parsed. A part is a root (`response`), read whole, or one field of it
/// (`response.status`); `header(response, …)` reads `response.headers` only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    whole: std::collections::BTreeSet<String>,
    fields: std::collections::BTreeSet<(String, String)>,
}

impl Reads {
    /// Every part: what a program is given.
    pub fn everything() -> Reads {
        Reads {
            whole: FIELDS.iter().map(|(root, _)| root.to_string()).collect(),
            fields: Default::default(),
        }
    }

    /// Whether `root.field` is read (or `root` whole).
    pub fn wants(&self, root: &str, field: &str) -> bool {
        self.whole.contains(root) || self.fields.iter().any(|(r, f)| r == root && f == field)
    }

    /// Whether anything of `root` is read.
    pub fn wants_any(&self, root: &str) -> bool {
        self.whole.contains(root) || self.fields.iter().any(|(r, _)| r == root)
    }

    /// Both.
    pub fn add(&mut self, other: &Reads) {
        self.whole.extend(other.whole.iter().cloned());
        self.fields.extend(other.fields.iter().cloned());
    }

    /// Marks `root` read whole.
    pub fn read_whole(&mut self, root: &str) {
        self.whole.insert(root.to_string());
    }

    /// Marks `root.field` read.
    pub fn read_field(&mut self, root: &str, field: &str) {
        self.fields.insert((root.to_string(), field.to_string()));
    }
}

/// The fields of each part of the model, for the check that an expression names only
/// fields that exist (`response.stauts` is an error before anything is sent). The values
/// under `body`, `headers`, `query`, `path_params`, `cookies` and `bindings` are the API's,
/// so anything may follow them.
pub const FIELDS: &[(&str, &[&str])] = &[
    (
        "request",
        &[
            "method",
            "operation",
            "path",
            "url",
            "path_params",
            "query",
            "cookies",
            "headers",
            "media_type",
            "body",
            "text",
        ],
    ),
    (
        "response",
        &[
            "status",
            "headers",
            "media_type",
            "body",
            "text",
            "truncated",
            "time_ms",
        ],
    ),
    ("error", &["kind", "message"]),
    (
        "case",
        &[
            "id", "strategy", "mode", "intent", "mutation", "identity", "tags",
        ],
    ),
    ("step", &["series", "index", "bindings"]),
    ("seq", &[]),
];

/// Headers by lower-case name; a header sent more than once is its values joined by
/// `, ` (RFC 9110 §5.3), so `response.headers["cache-control"]` is one string.
fn headers(list: &[(String, String)]) -> Value {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in list {
        out.entry(name.to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(value);
            })
            .or_insert_with(|| value.clone());
    }
    json!(out)
}

fn body_bytes<'a>(body: Option<&'a BodyBytes>, resolved: Option<&'a [u8]>) -> Option<&'a [u8]> {
    match body {
        Some(BodyBytes::Inline(bytes)) => Some(bytes),
        Some(BodyBytes::Blob { .. }) => resolved,
        None => resolved,
    }
}

/// A body as JSON (`null` when it is not JSON; `json` when it was read already) and as
/// text (`null` when it is not UTF-8), each only where `wants` (body, text) asks for it.
fn read_body(bytes: Option<&[u8]>, json: Read<'_>, wants: (bool, bool)) -> (Value, Value) {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return (Value::Null, Value::Null);
    };
    let body = match (wants.0, json) {
        (false, _) | (true, Read::NotJson) => Value::Null,
        (true, Read::Json(value)) => value.clone(),
        (true, Read::NotRead) => serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null),
    };
    let text = match wants.1 {
        true => std::str::from_utf8(bytes)
            .map(|t| Value::String(t.to_string()))
            .unwrap_or(Value::Null),
        false => Value::Null,
    };
    (body, text)
}
