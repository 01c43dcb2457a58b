//! What replies leak (`reply_leaks`, F209). A fixture API of notes with two planted leaks:
//! creating a note with a long title answers 500 with a Python traceback naming `/app/…py`
//! files, and a search whose query is not plain letters answers 400 with the database
//! driver's `SQLSTATE[42000]` error. Its twin answers the same requests with the same
//! statuses and plain JSON errors. The first run shows exactly one stack trace and one SQL
//! error (the traceback's paths are no third finding); the twin's shows none.
//!
//! And markup shown back (`reflected_markup`, F201): a search page that shows the query in
//! HTML as it came, and its twin that escapes it.

use std::collections::{BTreeSet, HashMap};

use axum::extract::Query;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::util::{code, findings_of, run_document};

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
              required: [title]
              properties:
                title: {type: string}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {type: object}
        "400": {description: refused}
  /search:
    get:
      operationId: searchNotes
      parameters:
        - {name: q, in: query, required: true, schema: {type: string}}
      responses:
        "200":
          description: found
          content:
            application/json:
              schema: {type: array}
        "400": {description: refused}
"#;

/// Whether the fixture leaks, or answers like its correct twin.
#[derive(Clone, Copy)]
enum Flavour {
    Leaky,
    Plain,
}

fn router(flavour: Flavour) -> Router {
    Router::new()
        .route(
            "/notes",
            post(move |body: axum::body::Bytes| create_note(flavour, body)),
        )
        .route(
            "/search",
            get(move |query: Query<HashMap<String, String>>| search(flavour, query)),
        )
}

fn refuse(detail: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "detail": detail }))).into_response()
}

async fn create_note(flavour: Flavour, body: axum::body::Bytes) -> Response {
    let Ok(Value::Object(note)) = serde_json::from_slice::<Value>(&body) else {
        return refuse("the body is no JSON object");
    };
    let Some(title) = note.get("title").and_then(Value::as_str) else {
        return refuse("title is required");
    };
    if title.chars().count() <= 4 {
        return (StatusCode::CREATED, Json(json!({ "title": title }))).into_response();
    }
    match flavour {
        Flavour::Leaky => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            format!(
                "Traceback (most recent call last):\n  File \"/app/notes/views.py\", line 41, in create\n    store.save(title)\n  File \"/app/notes/store.py\", line 17, in save\n    raise ValueError(title)\nValueError: title {title:?} is too long\n"
            ),
        )
            .into_response(),
        Flavour::Plain => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "detail": "the title could not be saved" })),
        )
            .into_response(),
    }
}

async fn search(flavour: Flavour, Query(query): Query<HashMap<String, String>>) -> Response {
    let Some(q) = query.get("q") else {
        return refuse("q is required");
    };
    if !q.is_empty() && q.chars().all(|c| c.is_ascii_alphabetic()) {
        return Json(json!([])).into_response();
    }
    match flavour {
        Flavour::Leaky => (
            StatusCode::BAD_REQUEST,
            Json(json!({
                "error": format!("SQLSTATE[42000]: Syntax error or access violation: 1064 You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '{q}' at line 1"),
            })),
        )
            .into_response(),
        Flavour::Plain => refuse("q may hold letters only"),
    }
}

/// The `reply_leaks` findings of a run against `flavour`: (operation, key).
fn leaks(flavour: Flavour) -> (i32, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let (out, report) = run_document(
        router(flavour),
        &spec,
        dir.path(),
        5,
        2,
        60,
        &["--set", "series.enabled=false"],
    );
    let found = findings_of(&report, "reply_leaks")
        .into_iter()
        .cloned()
        .collect();
    (code(&out), found)
}

#[test]
fn a_traceback_and_a_driver_error_are_one_finding_each_and_plain_errors_none() {
    let (exit, found) = leaks(Flavour::Leaky);
    assert_eq!(exit, 1);
    let keys: BTreeSet<(&str, &str)> = found
        .iter()
        .map(|f| {
            (
                f["operation"].as_str().unwrap(),
                f["key_by_message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            ("createNote", "reply_leaks|createNote|stack_trace"),
            ("searchNotes", "reply_leaks|searchNotes|sql_error"),
        ]),
        "{found:#?}"
    );
    for f in &found {
        assert_eq!(f["code"], "F209", "{f:#}");
        assert_eq!(f["severity"], "medium", "{f:#}");
    }
    let message = |op: &str| {
        found
            .iter()
            .find(|f| f["operation"] == op)
            .and_then(|f| f["message"].as_str())
            .unwrap()
            .to_owned()
    };
    let trace = message("createNote");
    assert!(
        trace.starts_with(
            "createNote answered 500 with a Python stack trace: File \"/app/notes/store.py\", line 17, in save"
        ),
        "{trace}"
    );
    let sql = message("searchNotes");
    assert!(
        sql.starts_with(
            "searchNotes answered 400 with an SQL error: SQLSTATE[42000]: Syntax error"
        ),
        "{sql}"
    );
    assert!(
        !sql.contains('\n') && sql.len() < 200,
        "one short line: {sql}"
    );

    let (_, found) = leaks(Flavour::Plain);
    assert!(found.is_empty(), "the twin leaks nothing: {found:#?}");
}

/// A search page: the query shown back in HTML, escaped or not.
const SEARCH: &str = r#"
openapi: 3.0.3
info: {title: search, version: "1"}
paths:
  /search:
    get:
      operationId: search
      parameters:
        - {name: q, in: query, required: true, schema: {type: string}}
      responses:
        "200":
          description: the results page
          content:
            text/html:
              schema: {type: string}
"#;

fn search_page(escapes: bool) -> Router {
    Router::new().route(
        "/search",
        get(
            move |Query(query): Query<HashMap<String, String>>| async move {
                let q = query.get("q").cloned().unwrap_or_default();
                let shown = if escapes {
                    q.replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;")
                        .replace('"', "&quot;")
                } else {
                    q
                };
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    format!(
                        "<!doctype html><html><body><p>No results for {shown}</p></body></html>"
                    ),
                )
                    .into_response()
            },
        ),
    )
}

fn reflected(escapes: bool) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("search.yaml");
    std::fs::write(&spec, SEARCH).unwrap();
    let (out, report) = run_document(search_page(escapes), &spec, dir.path(), 5, 2, 300, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    findings_of(&report, "reflected_markup")
        .into_iter()
        .cloned()
        .collect()
}

#[test]
fn markup_shown_back_unescaped_in_html_is_found_and_escaped_markup_is_not() {
    let found = reflected(false);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["code"], "F201");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("search answered 200 with an HTML page that holds `<script")
            && message.contains("`, sent in the request, unescaped"),
        "{message}"
    );
    assert!(reflected(true).is_empty());
}
