//! Security oracles: auth that is not enforced. A fixture API of notes whose operations
//! declare HTTP basic auth, with the fault planted (a read and a write that answer 2xx
//! without credentials, or with credentials it cannot know), and correct twins: one that
//! answers 401 to both, and one whose public operations declare no security. probe runs
//! with the right credentials; the faulty build yields `ignored_authentication` for each
//! operation (F207 for the read, F208 for the write), the twins none, and no credential
//! value appears in anything probe wrote.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::util::{findings_of, run_document};

const USER_PASS: &str = "alice:wonderland-7731";

fn document(security: &str) -> String {
    format!(
        r#"
openapi: 3.0.3
info: {{title: notes, version: "1"}}
components:
  securitySchemes:
    basicAuth: {{type: http, scheme: basic}}
security: {security}
paths:
  /notes:
    get:
      operationId: listNotes
      responses:
        "200":
          description: the notes
          content:
            application/json:
              schema: {{type: array, items: {{type: object}}}}
        "401": {{description: no credentials}}
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
                title: {{type: string, maxLength: 20}}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {{type: object}}
        "401": {{description: no credentials}}
"#
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    /// Answers every request, credentials or not.
    Ignores,
    /// Answers 401 without the right credentials.
    Enforces,
}

fn router(variant: Variant) -> Router {
    let allowed = move |headers: &HeaderMap| {
        use base64::Engine as _;
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(USER_PASS)
        );
        variant == Variant::Ignores
            || headers
                .get(header::AUTHORIZATION)
                .is_some_and(|v| v.as_bytes() == expected.as_bytes())
    };
    Router::new().route(
        "/notes",
        get(move |headers: HeaderMap| async move {
            if !allowed(&headers) {
                return StatusCode::UNAUTHORIZED.into_response();
            }
            Json(serde_json::json!([{"title": "a"}])).into_response()
        })
        .post(
            move |headers: HeaderMap, body: axum::body::Bytes| async move {
                if !allowed(&headers) {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Object(_)) => {
                        (StatusCode::CREATED, Json(serde_json::json!({"id": 1}))).into_response()
                    }
                    _ => StatusCode::BAD_REQUEST.into_response(),
                }
            },
        ),
    )
}

/// The `ignored_authentication` findings of one run, by operation, with their codes and
/// the run's directory (to search what probe wrote).
fn run(security: &str, variant: Variant) -> (Vec<(String, String, String)>, tempfile::TempDir) {
    run_with(security, variant, &["--basic", USER_PASS])
}

fn run_with(
    security: &str,
    variant: Variant,
    credentials: &[&str],
) -> (Vec<(String, String, String)>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, document(security)).unwrap();
    let (out, report) = run_document(
        router(variant),
        &spec,
        dir.path(),
        9,
        2,
        200,
        &[credentials, &["--set", "series.enabled=false"]].concat(),
    );
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found: Vec<(String, String, String)> = findings_of(&report, "ignored_authentication")
        .into_iter()
        .map(|f| {
            (
                f["operation"].as_str().unwrap().to_owned(),
                f["code"].as_str().unwrap_or_default().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    (found, dir)
}

/// Every file under `dir`, as bytes.
fn everything_written(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

#[test]
fn auth_that_is_not_enforced_is_found_for_each_operation() {
    let (found, dir) = run("[{basicAuth: []}]", Variant::Ignores);
    let ops: Vec<(&str, &str)> = found
        .iter()
        .map(|(op, code, _)| (op.as_str(), code.as_str()))
        .collect();
    // Withheld and unknown credentials: two findings an operation.
    assert_eq!(
        ops,
        [
            ("createNote", "F208"),
            ("createNote", "F208"),
            ("listNotes", "F207"),
            ("listNotes", "F207")
        ],
        "{found:#?}"
    );
    assert!(found
        .iter()
        .any(|(_, _, m)| m.contains("with no credentials")));
    assert!(found
        .iter()
        .any(|(_, _, m)| m.contains("with credentials the API cannot know")));
    // No credential anywhere probe wrote: not the password, not its base64.
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(USER_PASS);
    for (path, bytes) in everything_written(dir.path()) {
        for secret in ["wonderland-7731", encoded.as_str()] {
            assert!(
                memchr::memmem::find(&bytes, secret.as_bytes()).is_none(),
                "{} holds a credential",
                path.display()
            );
        }
    }
}

#[test]
fn a_run_without_credentials_reports_what_answered_anyway() {
    // The user gave none: every request is sent without, and judged so; nothing more is sent.
    let (found, _) = run_with("[{basicAuth: []}]", Variant::Ignores, &[]);
    let ops: Vec<&str> = found.iter().map(|(op, _, _)| op.as_str()).collect();
    assert_eq!(ops, ["createNote", "listNotes"], "{found:#?}");
    assert!(found
        .iter()
        .all(|(_, _, m)| m.contains("with no credentials")));
}

#[test]
fn enforced_auth_and_public_operations_are_no_finding() {
    let (found, _) = run("[{basicAuth: []}]", Variant::Enforces);
    assert!(found.is_empty(), "{found:#?}");
    // Public: the document declares no security, the API asks for none.
    let (found, _) = run("[]", Variant::Ignores);
    assert!(found.is_empty(), "{found:#?}");
    // Optional: an empty requirement lets anyone in.
    let (found, _) = run("[{}, {basicAuth: []}]", Variant::Ignores);
    assert!(found.is_empty(), "{found:#?}");
}
