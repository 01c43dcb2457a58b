//! Recorded versus now: the status, the headers that matter and the body of two answers
//! to the same request, compared after volatile values are normalised.
//!
//! Volatile values (timestamps, dates, UUIDs, generated ids, digit runs) differ between
//! any two answers of a live API; they are replaced by `#` (through
//! [`crate::oracle::normalise::volatile`], the same normalisation the distinct keys use)
//! before comparing, so that only meaningful differences show. The body diff is a line
//! diff (`similar`) of pretty-printed JSON when both bodies are JSON, else of the text.
//!
//! Pure: no store, no network. Depends on: `model`, `oracle::normalise`.

use serde::Serialize;
use serde_json::Value;
use similar::TextDiff;

use crate::model::{canonical_json, Outcome};
use crate::oracle::normalise;

/// One answer, with its body bytes at hand.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    pub outcome: &'a Outcome,
    pub body: Option<&'a [u8]>,
}

/// One header that matters, recorded and now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderChange {
    pub name: String,
    pub recorded: Option<String>,
    pub now: Option<String>,
}

/// What differs between the recorded answer and the new one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// `None` stands for a transport error.
    pub recorded_status: Option<u16>,
    pub now_status: Option<u16>,
    /// The transport error, when one replaced an answer: recorded, now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now_error: Option<String>,
    /// Headers that matter whose normalised values differ.
    pub headers: Vec<HeaderChange>,
    /// A unified diff of the normalised bodies; `None` when they are equal.
    pub body_diff: Option<String>,
    /// Whether anything meaningful differs.
    pub differs: bool,
}

/// The headers compared: `content-type`, `location`, and those `declared` by the document
/// for the answer (lower case).
pub fn headers_that_matter(declared: &[String]) -> Vec<String> {
    let mut names = vec!["content-type".to_owned(), "location".to_owned()];
    for d in declared {
        let d = d.to_ascii_lowercase();
        if !names.contains(&d) {
            names.push(d);
        }
    }
    names
}

/// Compares two answers; `headers` are the (lower-case) header names that matter.
pub fn compare(recorded: Answer<'_>, now: Answer<'_>, headers: &[String]) -> Comparison {
    let error = |o: &Outcome| match o {
        Outcome::TransportError { kind, message } => Some(format!("{kind:?}: {message}")),
        Outcome::Response(_) => None,
    };
    let mut header_changes = Vec::new();
    for name in headers {
        let value = |o: &Outcome| o.response().and_then(|r| r.header(name)).map(str::to_owned);
        let (a, b) = (value(recorded.outcome), value(now.outcome));
        let norm = |v: &Option<String>| v.as_deref().map(|t| normalise_header(name, t));
        if norm(&a) != norm(&b) {
            header_changes.push(HeaderChange {
                name: name.clone(),
                recorded: a,
                now: b,
            });
        }
    }
    let body_diff = body_diff(recorded.body, now.body);
    let recorded_status = recorded.outcome.status();
    let now_status = now.outcome.status();
    let differs = recorded_status != now_status
        || std::mem::discriminant(recorded.outcome) != std::mem::discriminant(now.outcome)
        || !header_changes.is_empty()
        || body_diff.is_some();
    Comparison {
        recorded_status,
        now_status,
        recorded_error: error(recorded.outcome),
        now_error: error(now.outcome),
        headers: header_changes,
        body_diff,
        differs,
    }
}

fn normalise_header(name: &str, value: &str) -> String {
    if name == "content-type" {
        // `application/json; charset=utf-8` and `application/json;charset=UTF-8` are one type.
        return value
            .split(';')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(";");
    }
    normalise::volatile(value)
}

/// The body as comparable text: normalised pretty JSON, normalised text lines, or a note
/// for bytes that are not UTF-8.
fn comparable(body: Option<&[u8]>) -> (bool, String) {
    let Some(bytes) = body.filter(|b| !b.is_empty()) else {
        return (false, String::new());
    };
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        // Keys sorted: the order an API writes them in carries no meaning.
        let text = serde_json::to_string_pretty(&normalise_json(None, canonical_json(v)))
            .unwrap_or_default();
        return (true, text + "\n");
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let mut out = String::new();
            for line in text.lines() {
                out.push_str(&normalise::volatile(line));
                out.push('\n');
            }
            (false, out)
        }
        // Binary bodies: compared by their hash, shown by length.
        Err(_) => (
            false,
            format!(
                "({} bytes, not UTF-8, blake3 {})\n",
                bytes.len(),
                &blake3::hash(bytes).to_hex()[..16]
            ),
        ),
    }
}

/// A unified diff of the normalised bodies, or `None` when they are equal.
pub fn body_diff(recorded: Option<&[u8]>, now: Option<&[u8]>) -> Option<String> {
    let (_, a) = comparable(recorded);
    let (_, b) = comparable(now);
    if a == b {
        return None;
    }
    let diff = TextDiff::from_lines(&a, &b);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("recorded", "now")
        .to_string();
    Some(if text.is_empty() {
        // Only a trailing newline differs (an empty body against a non-empty one).
        "--- recorded\n+++ now\n(the bodies differ only in emptiness)\n".to_owned()
    } else {
        text
    })
}

/// Whether a JSON property name names an identifier (`id`, `petId`, `pet_id`, `uuid`).
fn id_like(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    k == "id" || k.ends_with("id") || k == "uuid" || k.ends_with("uuid")
}

/// Replaces volatile leaves: strings through [`normalise::volatile`], numbers under
/// id-like names, and numbers that read as epoch seconds or milliseconds.
pub fn normalise_json(key: Option<&str>, value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = normalise_json(Some(&k), v);
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| normalise_json(key, v)).collect())
        }
        Value::String(s) => Value::String(normalise::volatile(&s)),
        Value::Number(n) => {
            let epoch_like = n.as_u64().is_some_and(|u| {
                (1_000_000_000..10_000_000_000).contains(&u)
                    || (1_000_000_000_000..10_000_000_000_000).contains(&u)
            });
            if key.is_some_and(id_like) || epoch_like {
                Value::String("#".into())
            } else {
                Value::Number(n)
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ResponseRecord, TransportErrorKind};
    use serde_json::json;

    fn response(status: u16, headers: &[(&str, &str)]) -> Outcome {
        Outcome::Response(ResponseRecord {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: None,
            truncated: false,
        })
    }

    #[test]
    fn volatile_values_do_not_count() {
        let a = br#"{"id": 17, "name": "Rex", "created": "2026-01-01T10:00:00Z",
                     "ref": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "at": 1767261600000}"#;
        let b = br#"{"id": 3, "name": "Rex", "created": "2026-12-01T21:00:00Z",
                     "ref": "a1b2c3d4-0000-4000-8000-000000000001", "at": 1796000000000}"#;
        assert_eq!(body_diff(Some(a), Some(b)), None);
        let c = br#"{"id": 3, "name": "Max"}"#;
        let d = body_diff(Some(a), Some(c)).unwrap();
        assert!(d.contains("-  \"name\": \"Rex\""), "{d}");
        assert!(d.contains("+  \"name\": \"Max\""), "{d}");
        // Key order carries no meaning.
        assert_eq!(
            body_diff(Some(br#"{"a": 1, "b": 2}"#), Some(br#"{"b": 2, "a": 1}"#)),
            None
        );
        // A count is not an id: it is compared.
        assert!(body_diff(Some(br#"{"pets": 1}"#), Some(br#"{"pets": 2}"#)).is_some());
    }

    /// Arbitrary JSON, a few levels deep.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z0-9 :-]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-zA-Z]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// An answer compared with itself never differs, whatever it holds, and
        /// normalising twice changes nothing more than normalising once.
        #[test]
        fn an_answer_is_the_same_as_itself(v in json_value()) {
            let bytes = serde_json::to_vec(&v).unwrap();
            proptest::prop_assert_eq!(body_diff(Some(&bytes), Some(&bytes)), None);
            let once = normalise_json(None, canonical_json(v));
            let twice = normalise_json(None, once.clone());
            proptest::prop_assert_eq!(once, twice);
        }
    }

    #[test]
    fn text_bodies_are_compared_by_line() {
        assert_eq!(
            body_diff(Some(b"user 4711 not found"), Some(b"user 12 not found")),
            None
        );
        let d = body_diff(Some(b"pets=1\nok"), Some(b"fine\nok")).unwrap();
        assert!(d.contains("+fine"), "{d}");
        assert!(body_diff(Some(b""), Some(b"x")).is_some());
        assert!(body_diff(Some(&[0xff, 0x00]), Some(&[0xff, 0x01])).is_some());
    }

    #[test]
    fn status_headers_and_transport_errors() {
        let names = headers_that_matter(&["X-Total-Count".into()]);
        assert_eq!(names, ["content-type", "location", "x-total-count"]);
        let a = response(
            201,
            &[
                ("content-type", "application/json; charset=utf-8"),
                ("location", "/pets/17"),
            ],
        );
        let b = response(
            201,
            &[
                ("content-type", "application/json;charset=UTF-8"),
                ("location", "/pets/4"),
            ],
        );
        let none = Answer {
            outcome: &a,
            body: None,
        };
        let c = compare(
            none,
            Answer {
                outcome: &b,
                body: None,
            },
            &names,
        );
        assert!(!c.differs, "{c:?}");
        let d = response(200, &[("content-type", "text/plain")]);
        let c = compare(
            none,
            Answer {
                outcome: &d,
                body: None,
            },
            &names,
        );
        assert!(c.differs);
        assert_eq!(c.headers.len(), 2, "{c:?}");
        let e = Outcome::TransportError {
            kind: TransportErrorKind::Refused,
            message: "connection refused".into(),
        };
        let c = compare(
            none,
            Answer {
                outcome: &e,
                body: None,
            },
            &names,
        );
        assert!(c.differs && c.now_status.is_none() && c.now_error.is_some());
        assert_eq!(json!(c)["now_status"], Value::Null);
    }
}
