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

/// What a check is given besides the case and the interaction: the body bytes (resolved
/// from the store when they were kept as blobs) and the operation's tags.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bodies<'a> {
    pub request: Option<&'a [u8]>,
    pub response: Option<&'a [u8]>,
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
        let request = &interaction.request;
        let request_bytes = body_bytes(request.body.as_ref(), bodies.request);
        let (request_body, request_text) = read_body(request_bytes);
        let mut path_params = Map::new();
        let mut query = Map::new();
        let mut cookies = Map::new();
        for p in &case.parameters {
            let into = match p.location {
                Location::Path => &mut path_params,
                Location::Query => &mut query,
                Location::Cookie => &mut cookies,
                Location::Header => continue, // read from what was sent
            };
            into.insert(p.name.clone(), p.value.clone());
        }
        let request_value = json!({
            "method": request.method,
            "operation": case.operation,
            "path": case.path,
            "url": request.url,
            "path_params": path_params,
            "query": query,
            "cookies": cookies,
            "headers": headers(&request.headers),
            "media_type": case.body.as_ref().map(|b| b.media_type.as_str()),
            "body": request_body,
            "text": request_text,
        });
        let (response_value, error, status) = match &interaction.outcome {
            Outcome::Response(r) => {
                let bytes = body_bytes(r.body.as_ref(), bodies.response);
                let (body, text) = read_body(bytes);
                let media_type = r.header("content-type").map(|v| {
                    v.split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase()
                });
                let value = json!({
                    "status": r.status,
                    "headers": headers(&r.headers),
                    "media_type": media_type,
                    "body": body,
                    "text": text,
                    "truncated": r.truncated,
                    "time_ms": interaction.timing.elapsed_us as f64 / 1000.0,
                });
                (value, Value::Null, Some(r.status))
            }
            Outcome::TransportError { kind, message } => (
                Value::Null,
                json!({ "kind": kind.name(), "message": message }),
                None,
            ),
        };
        let mutation = case.mutation.as_ref().map(|m| {
            json!({ "kind": m.kind.to_string(), "place": m.place, "description": m.description })
        });
        let case_value = json!({
            "id": interaction.case.to_string(),
            "strategy": case.strategy.as_str(),
            "mode": case.mode,
            "intent": case.intent.as_str(),
            "mutation": mutation,
            "identity": case.identity.as_deref().unwrap_or("default"),
            "tags": tags,
        });
        let step = case
            .series_step
            .as_ref()
            .map(|s| json!({ "series": s.series, "index": s.index, "bindings": s.bindings }));
        let value = json!({
            "request": request_value,
            "response": response_value,
            "error": error,
            "case": case_value,
            "step": step,
            "seq": interaction.seq,
        });
        ExchangeModel {
            value,
            operation: case.operation.clone(),
            method: case.method.clone(),
            path: case.path.clone(),
            tags: tags.to_vec(),
            status,
        }
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

/// A body as JSON (`null` when it is not JSON) and as text (`null` when it is not UTF-8).
fn read_body(bytes: Option<&[u8]>) -> (Value, Value) {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return (Value::Null, Value::Null);
    };
    let json = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
    let text = std::str::from_utf8(bytes)
        .map(|t| Value::String(t.to_string()))
        .unwrap_or(Value::Null);
    (json, text)
}
