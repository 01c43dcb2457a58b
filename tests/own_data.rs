//! What is the client's own data is not a leak (issue 49, the safe VAmPI build's false
//! alarms): a secret the owner stored and reads back, the document's example password that
//! happens to be the identity's and comes back in a validation message or inside a longer
//! value, the run's token answered again by a login, and a login's 401 to a wrong password
//! (not valid credentials refused). A reply that echoes the credential
//! the request carried is still found.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::util::{code, findings_of, run_document};

const PASSWORD: &str = "ann-pw-77";
const TOKEN: &str = "tok-ann-5521";

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: notes of their own, version: "1"}
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
security: [{token: []}]
paths:
  /login:
    post:
      operationId: logIn
      security: []
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [username, password]
              properties:
                username: {type: string, example: ann}
                password: {type: string, example: ann-pw-77}
      responses:
        "200": {description: a token}
        "401": {description: wrong}
  /notes:
    post:
      operationId: createNote
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title, secret]
              properties:
                title: {type: string, maxLength: 20, example: groceries}
                secret: {type: string, maxLength: 40, example: ann-pw-77secret}
      responses:
        "201": {description: kept}
        "400": {description: not a note}
  /notes/{title}:
    get:
      operationId: readNote
      parameters:
        - {name: title, in: path, required: true, schema: {type: string}}
      responses:
        "200": {description: the note, with its secret}
        "404": {description: no such note}
  /whoami:
    get:
      operationId: whoAmI
      responses:
        "200": {description: the caller}
"#;

type Notes = Arc<Mutex<BTreeMap<String, Value>>>;

fn signed_in(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes())
}

fn router() -> Router {
    async fn log_in(body: axum::body::Bytes) -> Response {
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        if body["username"] == "ann" && body["password"] == PASSWORD {
            // One token per user, the same every time (a JWT issued twice in a second is).
            Json(json!({"token": TOKEN})).into_response()
        } else {
            StatusCode::UNAUTHORIZED.into_response()
        }
    }
    async fn create(
        State(notes): State<Notes>,
        headers: HeaderMap,
        body: axum::body::Bytes,
    ) -> Response {
        if !signed_in(&headers) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let note: Value = serde_json::from_slice(&body).unwrap_or_default();
        let (Some(title), Some(_)) = (note["title"].as_str(), note["secret"].as_str()) else {
            // A validation message quoting the request's own body.
            return (StatusCode::BAD_REQUEST, format!("not a note: {text}")).into_response();
        };
        notes.lock().unwrap().insert(title.to_owned(), note.clone());
        (StatusCode::CREATED, Json(note)).into_response()
    }
    async fn read(
        State(notes): State<Notes>,
        headers: HeaderMap,
        UrlPath(title): UrlPath<String>,
    ) -> Response {
        if !signed_in(&headers) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        match notes.lock().unwrap().get(&title) {
            Some(note) => Json(note.clone()).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }
    async fn who(headers: HeaderMap) -> Response {
        // The fault kept: the credential the request carried, echoed.
        let auth = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        Json(json!({"user": "ann", "seen": auth})).into_response()
    }
    Router::new()
        .route("/login", post(log_in))
        .route("/notes", post(create))
        .route("/notes/{title}", get(read))
        .route("/whoami", get(who))
        .with_state(Notes::default())
}

#[test]
fn the_clients_own_data_is_no_leak_and_an_echoed_credential_still_is() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(
        dir.path().join("probe.toml"),
        format!(
            "[[identity]]\nname = \"ann\"\n[identity.login]\npath = \"/login\"\n\
             json = {{ username = \"ann\", password = \"{PASSWORD}\" }}\ntoken = \"/token\"\n"
        ),
    )
    .unwrap();
    let (out, report) = run_document(router(), &spec, dir.path(), 3, 1, 300, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let ops = report["operations"].to_string();
    assert!(ops.contains("readNote"), "{ops}");
    let by = |oracle: &str| -> Vec<String> {
        findings_of(&report, oracle)
            .iter()
            .map(|f| format!("{} {}", f["operation"], f["message"]))
            .collect()
    };
    assert_eq!(by("secret_in_reply"), Vec::<String>::new());
    // The login answers 401 to a wrong password in its body: right, whatever the bearer.
    assert_eq!(by("valid_credentials_refused"), Vec::<String>::new());
    let reflected = by("credential_reflected");
    assert_eq!(reflected.len(), 1, "{reflected:#?}");
    assert!(reflected[0].contains("whoAmI"), "{reflected:#?}");
}
