//! The exchange model a user check sees: one request, what came back, and the test case
//! behind it, as one JSON value (`docs/checks.md`, "The exchange model"). It is a format
//! others write code against (checks in CEL, programs reading NDJSON), so it is versioned
//! by [`EXCHANGE_MODEL`]: a field may be added in a later version of the same major
//! version, never renamed or retyped.
//!
//! Built from what the store keeps (the [`TestCase`], the [`Interaction`] and the body
//! bytes, resolved by the caller), so a check judges a run recorded long ago exactly as it
//! judges one in flight, and it sees credentials only as the placeholders the store keeps.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Value};

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

    /// The model with only the parts `reads` names (the others are left out).
    pub fn reading(
        case: &TestCase,
        interaction: &Interaction,
        bodies: Bodies<'_>,
        tags: &[String],
        reads: &Reads,
    ) -> ExchangeModel {
        let (parts, status) = parts(&Json, case, interaction, bodies, tags, reads);
        ExchangeModel {
            value: Value::Object(
                parts
                    .into_iter()
                    .map(|(name, v)| (name.to_string(), v))
                    .collect(),
            ),
            operation: case.operation.clone(),
            method: case.method.clone(),
            path: case.path.clone(),
            tags: tags.to_vec(),
            status,
        }
    }
}

/// What the exchange model is written as: JSON ([`Json`], for programs and people) or the
/// values an expression is evaluated on (`expr`'s, built straight from the exchange and
/// borrowing its strings: going through JSON first copied every body and header twice).
/// One builder ([`parts`]) writes both, so both are the same model.
pub trait Sink<'v> {
    type Out;
    fn null(&self) -> Self::Out;
    fn uint(&self, n: u64) -> Self::Out;
    fn float(&self, f: f64) -> Self::Out;
    fn bool(&self, b: bool) -> Self::Out;
    fn text(&self, text: Cow<'v, str>) -> Self::Out;
    /// A JSON value of the exchange's (a body read already, a parameter's value).
    fn borrowed(&self, value: &'v Value) -> Self::Out;
    /// A JSON value made here (a body read here, a part seldom read).
    fn owned(&self, value: Value) -> Self::Out;
    fn map(&self, entries: Vec<(Cow<'v, str>, Self::Out)>) -> Self::Out;
}

/// The model as JSON.
pub struct Json;

impl<'v> Sink<'v> for Json {
    type Out = Value;
    fn null(&self) -> Value {
        Value::Null
    }
    fn uint(&self, n: u64) -> Value {
        Value::from(n)
    }
    fn float(&self, f: f64) -> Value {
        json!(f)
    }
    fn bool(&self, b: bool) -> Value {
        Value::Bool(b)
    }
    fn text(&self, text: Cow<'v, str>) -> Value {
        Value::String(text.into_owned())
    }
    fn borrowed(&self, value: &'v Value) -> Value {
        value.clone()
    }
    fn owned(&self, value: Value) -> Value {
        value
    }
    fn map(&self, entries: Vec<(Cow<'v, str>, Value)>) -> Value {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v))
                .collect(),
        )
    }
}

/// The top-level parts of the model `reads` wants (`request`, `response`, `error`,
/// `case`, `step`, `seq`, in that order), written by `sink`, and the status answered.
pub fn parts<'v, S: Sink<'v>>(
    sink: &S,
    case: &'v TestCase,
    interaction: &'v Interaction,
    bodies: Bodies<'v>,
    tags: &'v [String],
    reads: &Reads,
) -> (Vec<(&'static str, S::Out)>, Option<u16>) {
    let mut out = Vec::with_capacity(6);
    if reads.wants_any("request") {
        out.push((
            "request",
            request_value(sink, case, interaction, bodies, reads),
        ));
    }
    let status = interaction.outcome.status();
    if reads.wants_any("response") {
        out.push(("response", response_value(sink, interaction, bodies, reads)));
    }
    if reads.wants_any("error") {
        let error = match &interaction.outcome {
            Outcome::Response(_) => sink.null(),
            Outcome::TransportError { kind, message } => {
                sink.owned(json!({ "kind": kind.name(), "message": message }))
            }
        };
        out.push(("error", error));
    }
    if reads.wants_any("case") {
        out.push(("case", sink.owned(case_value(case, interaction, tags))));
    }
    if reads.wants_any("step") {
        let step = case
            .series_step
            .as_ref()
            .map(|s| json!({ "series": s.series, "index": s.index, "bindings": s.bindings }));
        out.push(("step", sink.owned(json!(step))));
    }
    if reads.wants_any("seq") {
        out.push(("seq", sink.uint(interaction.seq)));
    }
    (out, status)
}

/// Entries of a part: each `(name, make)` whose field `reads` wants under `root`; `make`
/// is called only for those.
type Fields<'f, 'v, O> = Vec<(&'static str, &'f dyn Fn() -> O)>;

fn entries<'v, O>(root: &str, reads: &Reads, fields: Fields<'_, 'v, O>) -> Vec<(Cow<'v, str>, O)> {
    fields
        .into_iter()
        .filter(|(name, _)| reads.wants(root, name))
        .map(|(name, make)| (Cow::Borrowed(name), make()))
        .collect()
}

/// `entries` with the body and text where `reads` wants them, as a map.
fn with_bodies<'v, S: Sink<'v>>(
    sink: &S,
    mut entries: Vec<(Cow<'v, str>, S::Out)>,
    root: &str,
    reads: &Reads,
    (body, text): (S::Out, S::Out),
) -> S::Out {
    if reads.wants(root, "body") {
        entries.push((Cow::Borrowed("body"), body));
    }
    if reads.wants(root, "text") {
        entries.push((Cow::Borrowed("text"), text));
    }
    sink.map(entries)
}

fn request_value<'v, S: Sink<'v>>(
    sink: &S,
    case: &'v TestCase,
    interaction: &'v Interaction,
    bodies: Bodies<'v>,
    reads: &Reads,
) -> S::Out {
    let request = &interaction.request;
    let params = |location: Location| {
        sink.map(
            case.parameters
                .iter()
                .filter(|p| p.location == location)
                .map(|p| (Cow::Borrowed(p.name.as_str()), sink.borrowed(&p.value)))
                .collect(),
        )
    };
    let wants = (
        reads.wants("request", "body"),
        reads.wants("request", "text"),
    );
    let bodies = match (&request.body, bodies.request, bodies.request_value) {
        // The case's value, handed over as it is rather than written out and read back.
        (None | Some(BodyBytes::Blob { .. }), None, Some(value)) => (
            if wants.0 {
                sink.borrowed(value)
            } else {
                sink.null()
            },
            if wants.1 {
                sink.text(Cow::Owned(value.to_string()))
            } else {
                sink.null()
            },
        ),
        _ => read_body(
            sink,
            body_bytes(request.body.as_ref(), bodies.request),
            Read::NotRead,
            wants,
        ),
    };
    let text = |t: &'v str| sink.text(Cow::Borrowed(t));
    let fields = entries(
        "request",
        reads,
        vec![
            ("method", &|| text(&request.method)),
            ("operation", &|| text(&case.operation)),
            ("path", &|| text(&case.path)),
            ("url", &|| text(&request.url)),
            ("path_params", &|| params(Location::Path)),
            ("query", &|| params(Location::Query)),
            ("cookies", &|| params(Location::Cookie)),
            ("headers", &|| headers(sink, &request.headers)),
            ("media_type", &|| match &case.body {
                Some(b) => text(&b.media_type),
                None => sink.null(),
            }),
        ],
    );
    with_bodies(sink, fields, "request", reads, bodies)
}

/// The `response` part: null when nothing came back.
fn response_value<'v, S: Sink<'v>>(
    sink: &S,
    interaction: &'v Interaction,
    bodies: Bodies<'v>,
    reads: &Reads,
) -> S::Out {
    let Outcome::Response(r) = &interaction.outcome else {
        return sink.null();
    };
    let bodies = read_body(
        sink,
        body_bytes(r.body.as_ref(), bodies.response),
        bodies.response_json,
        (
            reads.wants("response", "body"),
            reads.wants("response", "text"),
        ),
    );
    let media_type = || match r.header("content-type") {
        Some(v) => {
            let essence = v.split(';').next().unwrap_or("").trim();
            // Most servers write it in lower case already: copied only when not.
            sink.text(match essence.bytes().any(|b| b.is_ascii_uppercase()) {
                true => Cow::Owned(essence.to_ascii_lowercase()),
                false => Cow::Borrowed(essence),
            })
        }
        None => sink.null(),
    };
    let fields = entries(
        "response",
        reads,
        vec![
            ("status", &|| sink.uint(u64::from(r.status))),
            ("headers", &|| headers(sink, &r.headers)),
            ("media_type", &media_type),
            ("truncated", &|| sink.bool(r.truncated)),
            ("time_ms", &|| {
                sink.float(interaction.timing.elapsed_us as f64 / 1000.0)
            }),
        ],
    );
    with_bodies(sink, fields, "response", reads, bodies)
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

/// Headers by lower-case name, in name order; a header sent more than once is its values
/// joined by `, ` (RFC 9110 §5.3), so `response.headers["cache-control"]` is one string.
fn headers<'v, S: Sink<'v>>(sink: &S, list: &'v [(String, String)]) -> S::Out {
    let mut out: BTreeMap<Cow<'v, str>, Cow<'v, str>> = BTreeMap::new();
    for (name, value) in list {
        // Names are lower case as received (HTTP/2 requires it, hyper writes them so):
        // copied only when not.
        let name = match name.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(name.to_ascii_lowercase()),
            false => Cow::Borrowed(name.as_str()),
        };
        out.entry(name)
            .and_modify(|v| {
                let joined = v.to_mut();
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert(Cow::Borrowed(value.as_str()));
    }
    sink.map(out.into_iter().map(|(k, v)| (k, sink.text(v))).collect())
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
fn read_body<'v, S: Sink<'v>>(
    sink: &S,
    bytes: Option<&'v [u8]>,
    json: Read<'v>,
    wants: (bool, bool),
) -> (S::Out, S::Out) {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return (sink.null(), sink.null());
    };
    let body = match (wants.0, json) {
        (false, _) | (true, Read::NotJson) => sink.null(),
        (true, Read::Json(value)) => sink.borrowed(value),
        (true, Read::NotRead) => {
            serde_json::from_slice::<Value>(bytes).map_or_else(|_| sink.null(), |v| sink.owned(v))
        }
    };
    let text = match wants.1 {
        true => std::str::from_utf8(bytes).map_or_else(|_| sink.null(), |t| sink.text(t.into())),
        false => sink.null(),
    };
    (body, text)
}
