//! Findings a developer acts on: one finding per cause. A fixture API of notes whose
//! server errors echo the input (a Python traceback quoting the title, a JSON detail
//! quoting the priority and the title, an HTML page naming the tag): each cause reached
//! with many different inputs is one finding, and three causes are three. Three
//! operations that share one fault (a content type the document does not declare) are
//! three findings and one cause, which the console shows once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use crate::util::{code, run_document};

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: notes, version: "1"}
paths:
  /notes:
    post:
      operationId: createNote
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title, priority]
              properties:
                title: {type: string}
                priority: {type: integer}
                tag: {type: string}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {type: object}
        "400": {description: refused}
  /alpha:
    get:
      operationId: getAlpha
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object}
  /beta:
    get:
      operationId: getBeta
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object}
  /gamma:
    get:
      operationId: getGamma
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object}
"#;

/// The distinct inputs that reached each cause, as the fixture saw them.
#[derive(Default)]
struct Seen {
    long_title: BTreeSet<String>,
    negative_priority: BTreeSet<String>,
    bad_tag: BTreeSet<String>,
}

fn router(seen: Arc<Mutex<Seen>>) -> Router {
    let plain = || async { ([(header::CONTENT_TYPE, "text/plain")], "ok") };
    Router::new()
        .route("/notes", post(create_note))
        .route("/alpha", get(plain))
        .route("/beta", get(plain))
        .route("/gamma", get(plain))
        .with_state(seen)
}

async fn create_note(State(seen): State<Arc<Mutex<Seen>>>, body: axum::body::Bytes) -> Response {
    let Ok(Value::Object(note)) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let (Some(title), Some(priority)) = (
        note.get("title").and_then(Value::as_str),
        note.get("priority").and_then(Value::as_i64),
    ) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut seen = seen.lock().unwrap();
    if title.chars().count() > 8 {
        seen.long_title.insert(title.to_owned());
        let trace = format!(
            "Traceback (most recent call last):\n  File \"/srv/notes/views.py\", line 41, in create\n    store.save(title)\n  File \"/srv/notes/store.py\", line 17, in save\n    raise ValueError(f\"title {{title!r}} is too long\")\nValueError: title '{title}' is too long\n"
        );
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            trace,
        )
            .into_response();
    }
    if priority < 0 {
        seen.negative_priority.insert(format!("{priority}/{title}"));
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(serde_json::json!({
                "title": "Internal Server Error",
                "detail": format!("priority {priority} out of range for note {title}"),
            })),
        )
            .into_response();
    }
    if let Some(tag) = note.get("tag").and_then(Value::as_str) {
        if tag.contains(|c: char| c.is_ascii_digit()) {
            seen.bad_tag.insert(tag.to_owned());
            let page = format!(
                "<!DOCTYPE html>\n<html><head><meta charset=utf-8></head><body><h1>Cannot index tag &quot;{tag}&quot;</h1><pre>at notes.index(tags.js:9)</pre></body></html>"
            );
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/html")],
                page,
            )
                .into_response();
        }
    }
    (
        StatusCode::CREATED,
        Json(serde_json::json!({"title": title})),
    )
        .into_response()
}

#[test]
fn a_cause_reached_with_many_inputs_is_one_finding_and_a_shared_cause_is_shown_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (out, report) = run_document(
        router(seen.clone()),
        &spec,
        dir.path(),
        11,
        2,
        1500,
        &["--set", "series.enabled=false"],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let seen = seen.lock().unwrap();
    assert!(
        seen.long_title.len() >= 100,
        "the fixture saw {} distinct long titles",
        seen.long_title.len()
    );
    assert!(
        seen.negative_priority.len() >= 3 && seen.bad_tag.len() >= 3,
        "each cause is reached with several inputs: {} priorities, {} tags",
        seen.negative_priority.len(),
        seen.bad_tag.len()
    );

    let findings = report["findings"].as_array().unwrap();
    let server_errors: Vec<&Value> = findings
        .iter()
        .filter(|f| f["oracle"] == "server_error")
        .collect();
    let messages: Vec<(&str, &str)> = server_errors
        .iter()
        .map(|f| {
            (
                f["message"].as_str().unwrap(),
                f["key_by_message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        server_errors.len(),
        3,
        "one finding per cause: {messages:#?}"
    );
    for expected in [
        "ValueError: title '",
        "Internal Server Error",
        "Cannot index tag \"",
    ] {
        assert!(
            messages.iter().any(|(m, _)| m.contains(expected)),
            "a finding reads {expected:?}: {messages:#?}"
        );
    }
    let long_title = server_errors
        .iter()
        .find(|f| f["message"].as_str().unwrap().contains("ValueError"))
        .unwrap();
    assert!(long_title["occurrences"].as_u64().unwrap() >= 100);

    // Three operations, one fault: three findings, one cause that lists them.
    let content: Vec<&Value> = findings
        .iter()
        .filter(|f| f["oracle"] == "content_type_declared")
        .collect();
    assert_eq!(content.len(), 3, "{content:#?}");
    let causes: Vec<&Value> = report["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["oracle"] == "content_type_declared")
        .collect();
    assert_eq!(causes.len(), 1, "{causes:#?}");
    assert_eq!(
        causes[0]["operations"],
        serde_json::json!(["getAlpha", "getBeta", "getGamma"])
    );
    assert_eq!(
        report["totals"]["causes"].as_u64().unwrap() + 2,
        report["totals"]["findings"].as_u64().unwrap()
    );
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        console.contains("also in 2 other operations: getBeta, getGamma")
            || console.contains("also in 2 other operations: getAlpha, get"),
        "{console}"
    );
    assert_eq!(
        console.matches("[content_type_declared]").count(),
        1,
        "{console}"
    );
}

const ORDERS: &str = r#"
openapi: 3.0.3
info: {title: orders, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [customer, items]
              properties:
                customer: {type: string}
                items:
                  type: array
                  items:
                    type: object
                    required: [sku]
                    properties:
                      sku: {type: string}
                      qty: {type: integer, minimum: 1}
                note: {type: string}
                coupon: {type: string}
                giftWrap: {type: boolean}
                address:
                  type: object
                  properties:
                    street: {type: string}
                    city: {type: string}
      responses:
        "201": {description: made}
        "400": {description: refused}
"#;

/// Any order with a `coupon` fails: the discount table is never loaded.
async fn create_order(body: axum::body::Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(order)) if order.contains_key("coupon") => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            "Traceback (most recent call last):\n  File \"/srv/orders/pricing.py\", line 88, in price\n    rate = DISCOUNTS[order['coupon']]\nKeyError: 'discounts not loaded'\n",
        )
            .into_response(),
        Ok(Value::Object(_)) => StatusCode::CREATED.into_response(),
        _ => StatusCode::BAD_REQUEST.into_response(),
    }
}

#[test]
fn the_reproducer_of_a_server_error_holds_only_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("orders.yaml");
    std::fs::write(&spec, ORDERS).unwrap();
    let router = Router::new().route("/orders", post(create_order));
    let (out, report) = run_document(
        router,
        &spec,
        dir.path(),
        3,
        2,
        300,
        &["--set", "series.enabled=false"],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["oracle"] == "server_error")
        .expect("the planted server error is found");
    assert!(finding["reproducer"].is_string(), "{finding:#}");
    let curl = finding["curl"].as_str().unwrap();
    let body = curl
        .split("--data-raw '")
        .nth(1)
        .and_then(|b| b.strip_suffix('\''))
        .unwrap_or_else(|| panic!("a body in {curl}"));
    let body: Value = serde_json::from_str(body).unwrap();
    let keys: BTreeSet<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["customer", "items", "coupon"]),
        "only the required properties and the one that matters: {curl}"
    );
    assert!(
        curl.len() < 200,
        "a reproducer short enough to read ({} characters): {curl}",
        curl.len()
    );
    assert!(
        report["totals"]["requests_by_kind"]["shrink"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Every candidate sent is a stored interaction linked to the finding it was sent for,
    // whether it showed it again or not.
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let keys: BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key_by_message"].as_str().unwrap())
        .collect();
    let mut candidates = 0;
    for row in store.interactions_of(crate::util::run_id(&report)).unwrap() {
        let case: probe::model::TestCase = store.get(row.case.0).unwrap();
        if case.strategy == probe::model::Strategy::Shrink {
            candidates += 1;
            let key = case
                .shrinking
                .as_deref()
                .expect("a candidate names its finding");
            assert!(keys.contains(key), "{key} is no finding of the run");
        } else {
            assert_eq!(case.shrinking, None);
        }
    }
    assert!(candidates > 0);
}
