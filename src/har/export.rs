//! A stored run as HAR 1.2: one entry per interaction, in seq order, streamed.
//!
//! The mapping (docs/har.md):
//! - `startedDateTime` is the interaction's `timing.started_ms` (the run's wall clock), in
//!   RFC 3339 with milliseconds; `time` and `timings.wait` its `elapsed_us` in milliseconds
//!   (probe measures only the whole exchange, so `send` and `receive` are 0 and the phases
//!   it does not see are -1);
//! - headers as stored (names lower case, credentials as `<probe:secret>`), then those the
//!   HTTP client added on the wire (`host`, `user-agent`, `accept` when the case set none,
//!   `content-length` for a body; [`crate::send::added`]), each with the comment `added by
//!   the HTTP client`; the query string and cookies parsed from the URL and the `cookie`
//!   header;
//! - a body that is UTF-8 is written as text; any other as base64, with
//!   `content.encoding: "base64"` in a response and `_encoding: "base64"` in `postData` (HAR
//!   1.2 gives `postData` no `encoding`);
//! - a request that got no HTTP answer has `response.status` 0 and `_error`, the kind and
//!   message of the transport failure;
//! - each entry carries `_probe`: the interaction id, its seq and the operation.
//!
//! Depends on: `model`, `ids`, `store`, `send` (the headers the client adds).

use std::io::Write;

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::ids::RunId;
use crate::model::{BodyBytes, Interaction, Outcome, RunStart};
use crate::store::{Store, StoreError};

use super::{HarError, HAR_VERSION};

/// Interactions read from the index at a time.
const PAGE: u64 = 512;

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    pub entries: u64,
}

/// Writes every interaction of `run` as one HAR 1.2 document to `out`, one entry a line.
/// Holds one page of interactions at a time.
pub fn write_har(store: &Store, run: RunId, out: &mut dyn Write) -> Result<ExportStats, HarError> {
    let start: RunStart = store.get(run.0)?;
    let head = json!({
        "version": HAR_VERSION,
        "creator": {"name": "probe", "version": env!("CARGO_PKG_VERSION")},
        "comment": format!(
            "probe run {} against {}, seed {}; credentials are the placeholder <probe:secret>",
            run, start.base_url, start.seed
        ),
    });
    // The head's fields, then `entries` streamed: `{"log":{...,"entries":[` ... `]}}`.
    let head_text = serde_json::to_string(&head).map_err(|e| HarError::Write(e.into()))?;
    let head_open = head_text.strip_suffix('}').unwrap_or(&head_text);
    write!(out, "{{\"log\":{head_open},\"entries\":[").map_err(HarError::Write)?;
    let mut stats = ExportStats::default();
    if let Some(max_seq) = store.max_seq(run)? {
        let mut from = 0u64;
        while from <= max_seq {
            let to = from.saturating_add(PAGE);
            for item in store.interactions_page(run, from..to)? {
                let interaction = store.get_interaction(&item)?;
                let entry = entry(
                    store,
                    &interaction,
                    &item.row.id.to_string(),
                    &item.row.operation,
                )?;
                out.write_all(if stats.entries == 0 { b"\n" } else { b",\n" })
                    .map_err(HarError::Write)?;
                serde_json::to_writer(&mut *out, &entry).map_err(|e| HarError::Write(e.into()))?;
                stats.entries += 1;
            }
            from = to;
        }
    }
    out.write_all(b"\n]}}\n").map_err(HarError::Write)?;
    out.flush().map_err(HarError::Write)?;
    Ok(stats)
}

/// RFC 3339 with milliseconds, UTC, for a Unix time in milliseconds.
fn date_time(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

fn name_values<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Array(
        pairs
            .into_iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect(),
    )
}

/// The query string of a URL, decoded.
fn query_string(url: &str) -> Value {
    let Some((_, query)) = url.split_once('?') else {
        return Value::Array(Vec::new());
    };
    let query = query.split('#').next().unwrap_or_default();
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    name_values(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// `cookie: a=1; b=2` as HAR cookies.
fn request_cookies(headers: &[(String, String)]) -> Value {
    let mut out = Vec::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("cookie") {
            for pair in v.split(';') {
                if let Some((name, value)) = pair.trim().split_once('=') {
                    out.push(json!({"name": name, "value": value}));
                }
            }
        }
    }
    Value::Array(out)
}

/// `set-cookie: a=1; Path=/` headers as HAR cookies (name and value only).
fn response_cookies(headers: &[(String, String)]) -> Value {
    let mut out = Vec::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("set-cookie") {
            let first = v.split(';').next().unwrap_or_default();
            if let Some((name, value)) = first.trim().split_once('=') {
                out.push(json!({"name": name, "value": value}));
            }
        }
    }
    Value::Array(out)
}

fn header_list(headers: &[(String, String)]) -> Value {
    name_values(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// The headers of a request as they went on the wire: as stored, then those the client
/// added.
fn request_headers(request: &crate::model::RequestRecord, body_len: Option<usize>) -> Value {
    let mut list = match header_list(&request.headers) {
        Value::Array(list) => list,
        _ => Vec::new(),
    };
    for (name, value) in crate::send::added::client_added(&request.url, &request.headers, body_len)
    {
        list.push(json!({"name": name, "value": value, "comment": "added by the HTTP client"}));
    }
    Value::Array(list)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A body's bytes as HAR text: itself when UTF-8, else base64 (and `true`).
fn body_text(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            true,
        ),
    }
}

fn body(store: &Store, b: &Option<BodyBytes>) -> Result<Option<Vec<u8>>, StoreError> {
    b.as_ref().map(|b| store.body_bytes(b)).transpose()
}

/// One interaction as a HAR entry.
pub fn entry(
    store: &Store,
    interaction: &Interaction,
    id: &str,
    operation: &str,
) -> Result<Value, StoreError> {
    let request = &interaction.request;
    let request_body = body(store, &request.body)?;
    let mut har_request = json!({
        "method": request.method,
        "url": request.url,
        "httpVersion": "HTTP/1.1",
        "cookies": request_cookies(&request.headers),
        "headers": request_headers(request, request_body.as_ref().map(Vec::len)),
        "queryString": query_string(&request.url),
        "headersSize": -1,
        "bodySize": request_body.as_ref().map_or(0, Vec::len),
    });
    if let Some(bytes) = &request_body {
        let (text, base64) = body_text(bytes);
        let mut post = Map::new();
        post.insert(
            "mimeType".into(),
            json!(header(&request.headers, "content-type").unwrap_or("")),
        );
        post.insert("text".into(), json!(text));
        if base64 {
            post.insert("_encoding".into(), json!("base64"));
        }
        har_request["postData"] = Value::Object(post);
    }
    let har_response = match &interaction.outcome {
        Outcome::Response(r) => {
            let response_body = body(store, &r.body)?;
            let mut content = Map::new();
            content.insert(
                "size".into(),
                json!(response_body.as_ref().map_or(0, Vec::len)),
            );
            content.insert(
                "mimeType".into(),
                json!(header(&r.headers, "content-type").unwrap_or("")),
            );
            if let Some(bytes) = &response_body {
                let (text, base64) = body_text(bytes);
                content.insert("text".into(), json!(text));
                if base64 {
                    content.insert("encoding".into(), json!("base64"));
                }
            }
            if r.truncated {
                content.insert(
                    "comment".into(),
                    json!("the body was longer than send.maxBodyBytes and was cut"),
                );
            }
            json!({
                "status": r.status,
                "statusText": reqwest::StatusCode::from_u16(r.status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or(""),
                "httpVersion": "HTTP/1.1",
                "cookies": response_cookies(&r.headers),
                "headers": header_list(&r.headers),
                "content": Value::Object(content),
                "redirectURL": header(&r.headers, "location").unwrap_or(""),
                "headersSize": -1,
                "bodySize": response_body.as_ref().map_or(0, Vec::len),
            })
        }
        Outcome::TransportError { kind, message } => json!({
            "status": 0,
            "statusText": "",
            "httpVersion": "",
            "cookies": [],
            "headers": [],
            "content": {"size": 0, "mimeType": "x-unknown"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
            "_error": format!("{}: {message}", kind.name()),
        }),
    };
    let ms = interaction.timing.elapsed_us as f64 / 1000.0;
    Ok(json!({
        "startedDateTime": date_time(interaction.timing.started_ms),
        "time": ms,
        "request": har_request,
        "response": har_response,
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": 0,
            "wait": ms,
            "receive": 0,
        },
        "_probe": {
            "interaction": id,
            "seq": interaction.seq,
            "operation": operation,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_and_cookies_are_parsed_and_binary_bodies_are_base64() {
        assert_eq!(
            query_string("http://h/x?a=1&b=%20c&a=2"),
            json!([{"name": "a", "value": "1"}, {"name": "b", "value": " c"}, {"name": "a", "value": "2"}])
        );
        assert_eq!(query_string("http://h/x"), json!([]));
        let headers = vec![("cookie".to_owned(), "a=1; s=<probe:secret>".to_owned())];
        assert_eq!(
            request_cookies(&headers),
            json!([{"name": "a", "value": "1"}, {"name": "s", "value": "<probe:secret>"}])
        );
        assert_eq!(body_text(b"{}"), ("{}".to_owned(), false));
        assert_eq!(body_text(&[0xff, 0x00]), ("/wA=".to_owned(), true));
        assert_eq!(date_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
