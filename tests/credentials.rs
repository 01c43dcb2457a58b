//! The credentials of an invocation against what a document declares and what a run
//! recorded:
//! - a document that declares an `Authorization` header parameter, run with `--bearer`:
//!   the API gets one `Authorization` header, the bearer, on every request, and no
//!   `valid_credentials_refused` (F205) comes of probe's own request. The fixture answers
//!   401 to a request with two `Authorization` headers, as a strict server does.
//! - `probe replay` of that run without `--bearer` stops (exit 2) naming the credential it
//!   lacks; with it, it replays; with `--without-credentials`, it replays and says the
//!   verdict was made without them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use probe::fixture::RunningFixture;
use serde_json::Value;

use crate::util::{code, findings_of, probe, run, Campaign};

const TOKEN: &str = "notes-token-3b9e51";

/// Notes behind a token; reading one note declares its `Authorization` header as a
/// parameter, as Swagger 2.0 documents do (OpenAPI 3 says to ignore such a parameter, and
/// probe does; Swagger 2.0 has no bearer scheme to declare instead). `--bearer` for a
/// document without a bearer scheme goes on every request.
const DOCUMENT: &str = r#"
swagger: "2.0"
info: {title: notes, version: "1"}
produces: [application/json]
paths:
  /notes:
    get:
      operationId: listNotes
      parameters:
        - {name: limit, in: query, type: integer, minimum: 1, maximum: 100}
      responses:
        "200":
          description: the notes
          schema: {type: array, items: {type: object}}
        "401": {description: no credentials}
  /notes/{id}:
    get:
      operationId: getNote
      parameters:
        - {name: id, in: path, required: true, type: integer, minimum: 1, maximum: 5}
        - {name: Authorization, in: header, required: true, type: string}
      responses:
        "200":
          description: a note
          schema: {type: object}
        "401": {description: no credentials}
        "404": {description: no such note}
"#;

/// The number of `Authorization` headers of each request with any.
type Seen = Arc<Mutex<Vec<usize>>>;

/// 401 unless the request carries exactly one `Authorization`, the bearer; a list `limit`
/// over 90 is a server error (a finding to replay).
fn router(seen: Seen) -> Router {
    fn allowed(seen: &Seen, headers: &HeaderMap) -> bool {
        let all: Vec<_> = headers.get_all(header::AUTHORIZATION).iter().collect();
        if !all.is_empty() {
            seen.lock().unwrap().push(all.len());
        }
        all.len() == 1 && all[0].as_bytes() == format!("Bearer {TOKEN}").as_bytes()
    }
    Router::new()
        .route(
            "/notes",
            get(
                |State(seen): State<Seen>,
                 headers: HeaderMap,
                 Query(q): Query<std::collections::HashMap<String, String>>| async move {
                    if !allowed(&seen, &headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let limit = q.get("limit").and_then(|l| l.parse::<i64>().ok());
                    if limit.is_some_and(|l| l > 90) {
                        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
                    }
                    Json(serde_json::json!([{"id": 1}])).into_response()
                },
            ),
        )
        .route(
            "/notes/{id}",
            get(
                |State(seen): State<Seen>, headers: HeaderMap, UrlPath(id): UrlPath<i64>| async move {
                    if !allowed(&seen, &headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let found: Response = if id == 1 {
                        Json(serde_json::json!({"id": 1})).into_response()
                    } else {
                        StatusCode::NOT_FOUND.into_response()
                    };
                    found
                },
            ),
        )
        .with_state(seen)
}

/// A run of the notes API with `--bearer`: the fixture, the headers it saw, the report.
fn bearer_run(dir: &Path) -> (RunningFixture, Seen, Value) {
    let seen: Seen = Arc::default();
    let fixture = RunningFixture::start(router(seen.clone())).expect("fixture starts");
    let spec = dir.join("notes.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let (out, report) = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 5,
        workers: 1,
        requests: 200,
    }
    .run(dir, &["--bearer", TOKEN]);
    assert!(
        matches!(code(&out), 0 | 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (fixture, seen, report)
}

#[test]
fn a_declared_authorization_parameter_and_a_bearer_go_out_as_one_header() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, seen, report) = bearer_run(dir.path());
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.len() > 20,
        "requests with credentials reached the API: {seen:?}"
    );
    assert!(
        seen.iter().all(|&n| n == 1),
        "one Authorization header on every request: {seen:?}"
    );
    assert_eq!(
        findings_of(&report, "valid_credentials_refused"),
        Vec::<&Value>::new(),
        "no F205 from probe's own request"
    );
}

/// `probe replay <target> --url <url>` with `extra`, without credentials from the
/// environment.
fn replay(dir: &Path, target: &str, url: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd = probe(dir);
    cmd.env_remove("PROBE_BEARER")
        .env_remove("PROBE_BASIC")
        .env_remove("PROBE_API_KEY")
        .args(["replay", target, "--url", url, "--store"])
        .arg(dir.join("store"))
        .args(extra);
    run(&mut cmd)
}

#[test]
fn replay_without_the_credentials_the_run_used_says_so_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (fixture, _, report) = bearer_run(dir.path());
    let url = fixture.base_url();
    let finding = findings_of(&report, "server_error")
        .first()
        .copied()
        .cloned()
        .expect("the run finds the server error");
    let target = finding["replay"]
        .as_str()
        .and_then(|r| r.split_whitespace().last())
        .expect("the finding names its replay target")
        .to_owned();

    // Without --bearer: exit 2, naming the credential (never its value), nothing sent.
    let out = replay(dir.path(), &target, &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("header authorization"), "{stderr}");
    assert!(stderr.contains("--without-credentials"), "{stderr}");

    // With it: replayed, reproduced.
    let out = replay(dir.path(), &target, &url, &["--bearer", TOKEN]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}");
    assert!(stdout.contains("verdict: reproduced"), "{stdout}");
    assert!(!stdout.contains("without the credentials"), "{stdout}");

    // Told to go on: replayed, and the verdict says it was made without them.
    let out = replay(dir.path(), &target, &url, &["--without-credentials"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}");
    assert!(stdout.contains("verdict: "), "{stdout}");
    assert!(
        stdout.contains(
            "the verdict was made without the credentials the run sent (header authorization)"
        ),
        "{stdout}"
    );
}
