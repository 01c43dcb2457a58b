//! `probe serve`: a recorded run played back as an HTTP API.
//!
//! Each request is answered with the response recorded for the same request, matched by
//! method, path, query and body; header differences are ignored (credentials are stored as
//! placeholders anyway), and so is a query parameter that carried a credential. When the
//! same request was recorded several times with different answers, they are given in
//! recorded order per request (so a replayed sequence sees the same sequence of answers),
//! the last one again once they run out. Anything else gets a 404 whose JSON body names
//! the closest recorded request.
//!
//! Because the engine is deterministic given the same answers (docs/determinism.md), a run with the
//! same seed against `probe serve <run>` generates the same test cases as the run did.
//!
//! [`Recording::load`] reads everything it needs from the store at once, so the server
//! holds no store handle. [`router`] is plain axum: tests serve it in-process with
//! [`crate::fixture::RunningFixture::start`].
//!
//! Depends on: `store`, `model`, `ids` (and axum).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};

use crate::ids::{InteractionId, RunId};
use crate::model::{Interaction, Outcome, RunStart, SECRET_PLACEHOLDER};
use crate::store::{ObjectKind, Store, StoreError};

/// Why a run cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The text given names nothing in the store (or too much).
    #[error(transparent)]
    Lookup(StoreError),
    #[error("`{text}` names a {kind}, not a run")]
    NotARun { text: String, kind: String },
    #[error("interaction {interaction}: its recorded URL `{url}` cannot be read: {reason}")]
    BadUrl {
        interaction: InteractionId,
        url: String,
        reason: String,
    },
}

/// What identifies a request: method, path, query pairs and body (decoded, headers left out).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct RequestKey {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RequestKey {
    fn display(&self) -> String {
        let mut s = format!("{} {}", self.method, self.path);
        if !self.query.is_empty() {
            s.push('?');
            s.push_str(
                &url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(&self.query)
                    .finish(),
            );
        }
        s
    }

    fn body_text(&self) -> Option<String> {
        (!self.body.is_empty()).then(|| {
            let text = String::from_utf8_lossy(&self.body);
            text.chars().take(2000).collect()
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "method": self.method,
            "path": self.path,
            "query": self.query.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            "body": self.body_text(),
        })
    }
}

/// One recorded answer.
#[derive(Clone, Debug)]
struct Recorded {
    seq: u64,
    interaction: InteractionId,
    outcome: Outcome,
    body: Vec<u8>,
}

/// A run's requests and answers, ready to serve.
#[derive(Debug)]
pub struct Recording {
    pub run: RunId,
    /// The run's base URL path (`/v1`), also accepted in front of a recorded path.
    base_path: String,
    answers: BTreeMap<RequestKey, Vec<Recorded>>,
    /// Query parameters that carried a credential (recorded as the placeholder).
    secret_query: BTreeSet<String>,
    interactions: usize,
}

/// Headers a recorded answer carries that describe its old connection, not its content.
const HOP_BY_HOP: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
];

/// Most distinct requests compared when looking for the closest one (bounds a 404's cost).
const CLOSEST_LIMIT: usize = 5000;

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

impl Recording {
    /// Reads run `text` (id, prefix or name) and every interaction it recorded.
    pub fn load(store: &Store, text: &str) -> Result<Recording, ServeError> {
        let (kind, id) = store.resolve(text).map_err(ServeError::Lookup)?;
        if kind != ObjectKind::RunStart {
            return Err(ServeError::NotARun {
                text: text.to_owned(),
                kind: kind.name().to_owned(),
            });
        }
        let run = RunId(id);
        let start = store.get::<RunStart>(id)?;
        let base_path = url::Url::parse(&start.base_url)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        let mut recording = Recording {
            run,
            base_path,
            answers: BTreeMap::new(),
            secret_query: BTreeSet::new(),
            interactions: 0,
        };
        let mut loaded = Vec::new();
        for row in store.interactions_of(run)? {
            let i = store.get::<Interaction>(row.id.0)?;
            let url = url::Url::parse(&i.request.url).map_err(|e| ServeError::BadUrl {
                interaction: row.id,
                url: i.request.url.clone(),
                reason: e.to_string(),
            })?;
            let query = query_pairs(url.query());
            for (k, v) in &query {
                if v == SECRET_PLACEHOLDER {
                    recording.secret_query.insert(k.clone());
                }
            }
            let request_body = match &i.request.body {
                Some(b) => store.body_bytes(b)?,
                None => Vec::new(),
            };
            let response_body = match i.outcome.response().and_then(|r| r.body.as_ref()) {
                Some(b) => store.body_bytes(b)?,
                None => Vec::new(),
            };
            let key = RequestKey {
                method: i.request.method.to_ascii_uppercase(),
                path: decode(url.path()),
                query,
                body: request_body,
            };
            loaded.push((
                key,
                Recorded {
                    seq: i.seq,
                    interaction: row.id,
                    outcome: i.outcome,
                    body: response_body,
                },
            ));
        }
        for (mut key, answer) in loaded {
            key.query = recording.masked(key.query);
            recording.answers.entry(key).or_default().push(answer);
            recording.interactions += 1;
        }
        for list in recording.answers.values_mut() {
            list.sort_by_key(|a| a.seq);
        }
        Ok(recording)
    }

    /// Recorded interactions.
    pub fn len(&self) -> usize {
        self.interactions
    }

    pub fn is_empty(&self) -> bool {
        self.interactions == 0
    }

    /// Distinct requests.
    pub fn distinct(&self) -> usize {
        self.answers.len()
    }

    /// The query as compared: credential values masked, pairs in name order (the order of
    /// different names carries no meaning; repeated names keep theirs: `t=a&t=b` is a list).
    fn masked(&self, query: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = query
            .into_iter()
            .map(|(k, v)| {
                if self.secret_query.contains(&k) {
                    (k, "*".to_owned())
                } else {
                    (k, v)
                }
            })
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs
    }

    /// The keys an incoming request may stand for: its path as sent, and without the
    /// run's base path in front.
    fn keys_of(&self, method: &Method, uri: &Uri, body: &[u8]) -> Vec<RequestKey> {
        let path = decode(uri.path());
        let query = self.masked(query_pairs(uri.query()));
        let mut paths = vec![path.clone()];
        if !self.base_path.is_empty() {
            if let Some(rest) = path.strip_prefix(&self.base_path) {
                paths.push(if rest.is_empty() {
                    "/".into()
                } else {
                    rest.into()
                });
            } else {
                paths.push(format!("{}{path}", self.base_path));
            }
        }
        paths
            .into_iter()
            .map(|path| RequestKey {
                method: method.as_str().to_ascii_uppercase(),
                path,
                query: query.clone(),
                body: body.to_vec(),
            })
            .collect()
    }

    /// The recorded request most like `key`.
    fn closest(&self, key: &RequestKey) -> Option<(&RequestKey, &Recorded)> {
        let wanted = format!("{}\n{}", key.display(), key.body_text().unwrap_or_default());
        let mut best: Option<(f32, &RequestKey, &Recorded)> = None;
        for (k, answers) in self.answers.iter().take(CLOSEST_LIMIT) {
            let Some(first) = answers.first() else {
                continue;
            };
            let text = format!("{}\n{}", k.display(), k.body_text().unwrap_or_default());
            let mut score = similar::TextDiff::from_chars(wanted.as_str(), text.as_str()).ratio();
            if k.method == key.method {
                score += 1.0;
            }
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, k, first));
            }
        }
        best.map(|(_, k, r)| (k, r))
    }
}

/// Serving state: the recording and, per request, how many of its answers were given.
struct ServeState {
    recording: Recording,
    given: Mutex<HashMap<RequestKey, usize>>,
}

/// An axum router answering from `recording`.
pub fn router(recording: Recording) -> Router {
    let state = Arc::new(ServeState {
        recording,
        given: Mutex::new(HashMap::new()),
    });
    Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
        let state = state.clone();
        async move { answer(&state, &method, &uri, &body) }
    })
}

fn answer(state: &ServeState, method: &Method, uri: &Uri, body: &[u8]) -> Response {
    let recording = &state.recording;
    let keys = recording.keys_of(method, uri, body);
    for key in &keys {
        let Some(answers) = recording.answers.get(key) else {
            continue;
        };
        let index = match state.given.lock() {
            Ok(mut given) => {
                let n = given.entry(key.clone()).or_insert(0);
                let i = (*n).min(answers.len().saturating_sub(1));
                *n += 1;
                i
            }
            // A poisoned lock means a handler panicked; answering the first is still useful.
            Err(_) => 0,
        };
        if let Some(recorded) = answers.get(index) {
            return respond(recorded);
        }
    }
    let asked = keys.first().map(RequestKey::to_json).unwrap_or(Value::Null);
    let closest = keys
        .first()
        .and_then(|k| recording.closest(k))
        .map(|(k, r)| {
            let mut v = k.to_json();
            v["interaction"] = json!(r.interaction.to_string());
            v["seq"] = json!(r.seq);
            v
        });
    json_response(
        StatusCode::NOT_FOUND,
        &json!({
            "error": "probe serve: no recorded request matches this one (method, path, query and body are compared)",
            "run": recording.run.to_string(),
            "request": asked,
            "closest": closest,
        }),
    )
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn respond(recorded: &Recorded) -> Response {
    let response = match &recorded.outcome {
        Outcome::Response(r) => r,
        Outcome::TransportError { kind, message } => {
            return json_response(
                StatusCode::BAD_GATEWAY,
                &json!({
                    "error": format!("probe serve: the recorded request got no answer ({kind:?}: {message})"),
                    "interaction": recorded.interaction.to_string(),
                }),
            )
        }
    };
    let mut r = Response::new(Body::from(recorded.body.clone()));
    *r.status_mut() = StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (k, v) in &response.headers {
        if HOP_BY_HOP.contains(&k.to_ascii_lowercase().as_str()) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r.headers_mut().append(name, value);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&recorded.interaction.short(12)) {
        r.headers_mut().insert("x-probe-recorded", v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Digest;
    use crate::model::ResponseRecord;

    /// Method, path and query pairs of one recorded request.
    type RecordedRequest<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    fn recording(base_path: &str, secret: &[&str], keys: &[RecordedRequest<'_>]) -> Recording {
        let mut r = Recording {
            run: RunId(Digest::of(b"run")),
            base_path: base_path.into(),
            answers: BTreeMap::new(),
            secret_query: secret.iter().map(|s| s.to_string()).collect(),
            interactions: 0,
        };
        for (seq, (method, path, query)) in keys.iter().enumerate() {
            let key = RequestKey {
                method: method.to_string(),
                path: path.to_string(),
                query: r.masked(
                    query
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                body: Vec::new(),
            };
            r.answers.entry(key).or_default().push(Recorded {
                seq: seq as u64,
                interaction: InteractionId(Digest::of(&[seq as u8])),
                outcome: Outcome::Response(ResponseRecord {
                    status: 200,
                    headers: vec![],
                    body: None,
                    truncated: false,
                }),
                body: Vec::new(),
            });
            r.interactions += 1;
        }
        r
    }

    fn matches(r: &Recording, method: Method, uri: &str) -> bool {
        let uri: Uri = uri.parse().unwrap();
        r.keys_of(&method, &uri, b"")
            .iter()
            .any(|k| r.answers.contains_key(k))
    }

    #[test]
    fn requests_match_by_decoded_path_and_query_with_credentials_masked() {
        let r = recording(
            "/v1",
            &["api_key"],
            &[
                (
                    "GET",
                    "/v1/pets",
                    &[("limit", "5"), ("api_key", SECRET_PLACEHOLDER)],
                ),
                ("GET", "/v1/a b", &[]),
                ("GET", "/v1/t", &[("t", "a"), ("t", "b")]),
            ],
        );
        assert!(matches(&r, Method::GET, "/v1/pets?limit=5&api_key=real"));
        assert!(
            matches(&r, Method::GET, "/pets?limit=5&api_key=other"),
            "without the base path"
        );
        assert!(matches(&r, Method::GET, "/v1/a%20b"));
        assert!(matches(&r, Method::GET, "/v1/t?t=a&t=b"));
        assert!(
            !matches(&r, Method::GET, "/v1/t?t=b&t=a"),
            "a list keeps its order"
        );
        assert!(!matches(&r, Method::GET, "/v1/pets?limit=6&api_key=real"));
        assert!(!matches(&r, Method::POST, "/v1/pets?limit=5&api_key=real"));
        assert!(
            matches(&r, Method::GET, "/v1/pets?api_key=real&limit=5"),
            "names in any order"
        );
        let asked = RequestKey {
            method: "GET".into(),
            path: "/v1/pets".into(),
            query: vec![("limit".into(), "7".into())],
            body: Vec::new(),
        };
        let (closest, _) = r.closest(&asked).unwrap();
        assert_eq!(closest.path, "/v1/pets");
    }
}
