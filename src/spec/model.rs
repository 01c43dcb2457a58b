//! The operation model: what the rest of probe knows of an API, independent of the
//! document's dialect (Swagger 2.0, OpenAPI 3.0, OpenAPI 3.1).
//!
//! Schemas are kept as JSON Schema 2020-12 values (`serde_json::Value`). The loader
//! rewrites every dialect's quirks into that one form (`nullable: true` becomes a type
//! list, boolean `exclusiveMinimum` becomes a number, Swagger `definitions` become shared
//! schemas, ...) and rewrites every `$ref` to `#/$defs/<key>` naming an entry of
//! [`SchemaSet`]. A recursive shape is therefore a cycle through the set, never an
//! infinite value; the generator and the validator follow the references with bounds.
//!
//! Depends on nothing else in probe.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::model::Location;

/// Which dialect the document was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpecVersion {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

/// Every schema a `$ref` can name, keyed by the name that follows `#/$defs/`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchemaSet {
    pub defs: BTreeMap<String, Value>,
}

impl SchemaSet {
    /// The prefix every rewritten reference starts with.
    pub const REF_PREFIX: &'static str = "#/$defs/";

    /// The schema a rewritten `$ref` names (`#/$defs/<key>`, `<key>` JSON-pointer escaped).
    pub fn resolve_ref(&self, reference: &str) -> Option<&Value> {
        let key = reference.strip_prefix(Self::REF_PREFIX)?;
        let key = key.replace("~1", "/").replace("~0", "~");
        self.defs.get(&key)
    }

    /// Follows `$ref` chains from `schema` until a schema with content, at most `limit`
    /// steps. Returns `None` for a dangling or content-free chain.
    pub fn deref<'a>(&'a self, mut schema: &'a Value, limit: usize) -> Option<&'a Value> {
        for _ in 0..limit {
            match schema.get("$ref").and_then(Value::as_str) {
                Some(r) => schema = self.resolve_ref(r)?,
                None => return Some(schema),
            }
        }
        None
    }

    /// Escapes a key for use after [`Self::REF_PREFIX`].
    pub fn escape_key(key: &str) -> String {
        key.replace('~', "~0").replace('/', "~1")
    }

    /// A standalone JSON Schema document for `schema`: the schema itself with every shared
    /// schema under `$defs`, ready for a validator.
    pub fn standalone(&self, schema: &Value) -> Value {
        let mut root = serde_json::Map::new();
        root.insert(
            "$schema".into(),
            Value::String("https://json-schema.org/draft/2020-12/schema".into()),
        );
        root.insert(
            "$defs".into(),
            Value::Object(
                self.defs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
        );
        match schema {
            Value::Object(map) => {
                for (k, v) in map {
                    if k != "$defs" {
                        root.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Bool(false) => {
                root.insert("not".into(), serde_json::json!({}));
            }
            _ => {}
        }
        Value::Object(root)
    }
}

/// An operation's stable key: the `operationId`, else `METHOD /path`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OperationKey {
    pub id: Option<String>,
    /// Upper case: `GET`, `POST`, ...
    pub method: String,
    /// The path template as written, `/pets/{petId}`, relative to the base path.
    pub path: String,
}

impl OperationKey {
    /// `operationId`, else `METHOD /path`.
    pub fn name(&self) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => self.method_path(),
        }
    }
    /// `METHOD /path`.
    pub fn method_path(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
    /// Whether `selector` names this operation (either spelling).
    pub fn is_named(&self, selector: &str) -> bool {
        self.id.as_deref() == Some(selector) || self.method_path().eq_ignore_ascii_case(selector)
    }
}

/// Serialisation style of a parameter (OpenAPI 3 names; Swagger `collectionFormat` mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ParameterStyle {
    Matrix,
    Label,
    Form,
    Simple,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

/// One parameter of an operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub location: Location,
    pub required: bool,
    pub style: ParameterStyle,
    pub explode: bool,
    /// JSON Schema 2020-12 (may be a `$ref`).
    pub schema: Value,
    /// Examples from `example`/`examples`, in document order.
    pub examples: Vec<Value>,
    pub deprecated: bool,
}

/// One media type of a request or response body.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MediaType {
    /// As written, e.g. `application/json`, `application/*+json`, `multipart/form-data`.
    pub media_type: String,
    /// JSON Schema 2020-12; `true` when the document gives none.
    pub schema: Value,
    /// Examples from `example`/`examples`, in document order.
    pub examples: Vec<Value>,
}

/// The request body of an operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestBody {
    pub required: bool,
    pub content: Vec<MediaType>,
}

/// Which statuses a response entry covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StatusPattern {
    /// One status, `404`.
    Exact(u16),
    /// A class, `4XX` → `Range(4)`.
    Range(u8),
    /// `default`.
    Default,
}

/// `404`, `4XX` or `default`, as a document writes them.
impl std::fmt::Display for StatusPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatusPattern::Exact(s) => write!(f, "{s}"),
            StatusPattern::Range(c) => write!(f, "{c}XX"),
            StatusPattern::Default => f.write_str("default"),
        }
    }
}

impl StatusPattern {
    /// Whether `status` falls under this entry (a `default` covers everything).
    pub fn matches(&self, status: u16) -> bool {
        match self {
            StatusPattern::Exact(s) => *s == status,
            StatusPattern::Range(c) => status / 100 == *c as u16,
            StatusPattern::Default => true,
        }
    }
}

/// A header a response declares.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResponseHeader {
    pub name: String,
    pub required: bool,
    pub schema: Value,
}

/// One declared response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Response {
    pub status: StatusPattern,
    pub description: String,
    pub content: Vec<MediaType>,
    pub headers: Vec<ResponseHeader>,
    /// OpenAPI 3.x `links`: where values of this answer go next.
    #[serde(default)]
    pub links: Vec<Link>,
}

/// An OpenAPI link: values of an answer (or of its request) that fill parameters of another
/// operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// The link's name in the document.
    pub name: String,
    /// The target, by `operationId` or by `operationRef` resolved to the operation's JSON
    /// pointer (`/paths/~1users~1{id}/get`).
    pub target: LinkTarget,
    /// (parameter name without a location prefix, runtime expression such as
    /// `$response.body#/id`).
    pub parameters: Vec<(String, String)>,
}

/// Which operation a link leads to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkTarget {
    OperationId(String),
    /// The operation's pointer in the document.
    Pointer(String),
}

/// How a security scheme carries credentials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecurityScheme {
    /// `Authorization: Bearer ...` (also OAuth2 and OpenID Connect, which end in a bearer token).
    Bearer,
    /// `Authorization: Basic ...`.
    Basic,
    /// An API key in a header, query parameter or cookie.
    ApiKey { location: Location, name: String },
}

/// One operation of the API.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Operation {
    pub key: OperationKey,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    /// Path-level and operation-level parameters merged (operation wins), document order.
    pub parameters: Vec<Parameter>,
    pub request_body: Option<RequestBody>,
    /// Exact statuses first, then ranges, then `default`.
    pub responses: Vec<Response>,
    /// Names of the security schemes any one of which the operation accepts; empty = none.
    pub security: Vec<String>,
    /// Whether the document lets anyone call it too (an empty requirement, `{}`, among
    /// those it lists).
    #[serde(default)]
    pub security_optional: bool,
    pub deprecated: bool,
    /// JSON pointer of the operation in the document, `/paths/~1pets/get`.
    pub pointer: String,
}

impl Operation {
    /// The response entry that covers `status`: exact, then range, then default.
    pub fn response_for(&self, status: u16) -> Option<&Response> {
        let exact = self
            .responses
            .iter()
            .find(|r| r.status == StatusPattern::Exact(status));
        exact
            .or_else(|| {
                self.responses.iter().find(|r| {
                    matches!(r.status, StatusPattern::Range(_)) && r.status.matches(status)
                })
            })
            .or_else(|| {
                self.responses
                    .iter()
                    .find(|r| r.status == StatusPattern::Default)
            })
    }
}

/// An operation that cannot be tested, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedOperation {
    pub key: OperationKey,
    pub pointer: String,
    pub reason: String,
}

/// A loaded, resolved API description.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Api {
    pub title: String,
    pub version: String,
    pub spec_version: SpecVersion,
    /// `servers[].url` (Swagger: scheme + host + basePath), as written.
    pub servers: Vec<String>,
    /// The path prefix of the first server (`/v1`), which the base URL given may lack.
    pub base_path: String,
    /// Testable operations in document order.
    pub operations: Vec<Operation>,
    pub skipped: Vec<SkippedOperation>,
    pub schemas: SchemaSet,
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Security requirement names that apply where an operation names none.
    pub default_security: Vec<String>,
}

/// Whether a media type carries JSON (`application/json`, `application/problem+json`,
/// `text/json`; parameters and case ignored).
pub fn is_json(media_type: &str) -> bool {
    let m = media_type.split(';').next().unwrap_or("").trim();
    m.eq_ignore_ascii_case("application/json")
        || m.eq_ignore_ascii_case("text/json")
        || m.len() >= 5 && m.as_bytes()[m.len() - 5..].eq_ignore_ascii_case(b"+json")
}
