//! Who may read and change what: a notes API with bearer tokens for two users, alice (the
//! default identity) and bob. Each build plants one fault of object-level authorisation
//! or has none:
//! - `Shared`: any user reads, changes and deletes any note → `other_identity_access` for
//!   the read, the change and the deletion (F206 for the last two); with the item's read
//!   made public in the document, the read is not reported;
//! - `Forbids`: another's note is answered 403, a missing one 404 → `existence_leaked`;
//! - `Hides`: another's note is answered 404, like a missing one → nothing;
//! - `WritesThenForbids`: another user's change is written, then answered 403 →
//!   `failed_update_side_effects` (the caller refused after the write);
//! - `WritesThenAsksWho`: a change without a token is written, then answered 401 → the
//!   same oracle, for the request without credentials;
//! - `UnauthorizedForMissing`: a note that does not exist is answered 401 (the token is
//!   fine) → `valid_credentials_refused`;
//! - `TakesOwner`: like `Shared`, and a change that sends `owner` (readOnly) sets it →
//!   `mass_assignment`. Every other build ignores `owner` silently, and yields none;
//! - `HiddenPatch`: serves a PATCH of a note, which the document does not declare →
//!   `hidden_endpoint`. Every other build answers it 405.
//!
//! Every run also checks that neither token appears in anything probe wrote.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::util::{code, files_under, findings_of, probe, run, run_document, run_id};

const ALICE: &str = "alice-token-5f2c9a";
const BOB: &str = "bob-token-81d4e7";

pub(crate) fn document(read_security: &str) -> String {
    format!(
        r##"
openapi: 3.0.3
info: {{title: notes, version: "1"}}
components:
  securitySchemes:
    bearerAuth: {{type: http, scheme: bearer}}
  schemas:
    Note:
      type: object
      properties:
        id: {{type: integer, readOnly: true}}
        title: {{type: string, maxLength: 20}}
        owner: {{type: string, readOnly: true}}
    NoteInput:
      type: object
      required: [title]
      properties:
        title: {{type: string, minLength: 1, maxLength: 20}}
security: [{{bearerAuth: []}}]
paths:
  /notes:
    post:
      operationId: createNote
      requestBody:
        required: true
        content:
          application/json:
            schema: {{$ref: "#/components/schemas/NoteInput"}}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {{$ref: "#/components/schemas/Note"}}
        "400": {{description: bad note}}
        "401": {{description: who are you}}
  /notes/{{noteId}}:
    parameters:
      - {{name: noteId, in: path, required: true, schema: {{type: integer}}}}
    get:
      operationId: getNote
      security: {read_security}
      responses:
        "200":
          description: the note
          content:
            application/json:
              schema: {{$ref: "#/components/schemas/Note"}}
        "401": {{description: who are you}}
        "403": {{description: not yours}}
        "404": {{description: no such note}}
    put:
      operationId: replaceNote
      requestBody:
        required: true
        content:
          application/json:
            schema: {{$ref: "#/components/schemas/NoteInput"}}
      responses:
        "200":
          description: replaced
          content:
            application/json:
              schema: {{$ref: "#/components/schemas/Note"}}
        "400": {{description: bad note}}
        "401": {{description: who are you}}
        "403": {{description: not yours}}
        "404": {{description: no such note}}
    delete:
      operationId: deleteNote
      responses:
        "204": {{description: gone}}
        "401": {{description: who are you}}
        "403": {{description: not yours}}
        "404": {{description: no such note}}
"##
    )
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Variant {
    Shared,
    Forbids,
    Hides,
    WritesThenForbids,
    WritesThenAsksWho,
    UnauthorizedForMissing,
    TakesOwner,
    HiddenPatch,
}

/// The last id given, and each note's (title, owner) by id.
type Store = (u64, HashMap<u64, (String, String)>);

#[derive(Clone)]
struct Notes {
    variant: Variant,
    notes: Arc<Mutex<Store>>,
}

fn user(headers: &HeaderMap) -> Option<&'static str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    match value.strip_prefix("Bearer ")? {
        ALICE => Some("alice"),
        BOB => Some("bob"),
        _ => None,
    }
}

fn note(id: u64, title: &str, owner: &str) -> Value {
    json!({"id": id, "title": title, "owner": owner})
}

fn title_of(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let t = v.get("title")?.as_str()?;
    (!t.is_empty() && t.chars().count() <= 20).then(|| t.to_owned())
}

/// What a caller who is not the owner is answered for a note that exists.
fn not_yours(variant: Variant) -> Response {
    match variant {
        Variant::Forbids | Variant::WritesThenForbids => StatusCode::FORBIDDEN.into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

pub(crate) fn router(variant: Variant) -> Router {
    let state = Notes {
        variant,
        notes: Arc::new(Mutex::new((0, HashMap::new()))),
    };
    let item = get(
        |State(s): State<Notes>, UrlPath(id): UrlPath<String>, headers: HeaderMap| async move {
            let Some(who) = user(&headers) else {
                return StatusCode::UNAUTHORIZED.into_response();
            };
            let all = s.notes.lock().unwrap();
            let Some((title, owner)) = id.parse().ok().and_then(|id| all.1.get(&id)) else {
                if s.variant == Variant::UnauthorizedForMissing {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                return StatusCode::NOT_FOUND.into_response();
            };
            if owner != who && !matches!(s.variant, Variant::Shared | Variant::TakesOwner) {
                return not_yours(s.variant);
            }
            Json(note(id.parse().unwrap(), title, owner)).into_response()
        },
    )
    .put(
        |State(s): State<Notes>,
         UrlPath(id): UrlPath<String>,
         headers: HeaderMap,
         body: axum::body::Bytes| async move {
            let who = user(&headers);
            let Some(title) = title_of(&body) else {
                return match who {
                    None => StatusCode::UNAUTHORIZED,
                    Some(_) => StatusCode::BAD_REQUEST,
                }
                .into_response();
            };
            let mut all = s.notes.lock().unwrap();
            let Some(entry) = id.parse().ok().and_then(|id| all.1.get_mut(&id)) else {
                return match who {
                    None => StatusCode::UNAUTHORIZED,
                    Some(_) => StatusCode::NOT_FOUND,
                }
                .into_response();
            };
            let Some(who) = who else {
                // The fault: the change is written before the caller is asked.
                if s.variant == Variant::WritesThenAsksWho {
                    entry.0 = title;
                }
                return StatusCode::UNAUTHORIZED.into_response();
            };
            if entry.1 != who && !matches!(s.variant, Variant::Shared | Variant::TakesOwner) {
                if s.variant == Variant::WritesThenForbids {
                    entry.0 = title;
                }
                return not_yours(s.variant);
            }
            entry.0 = title;
            // The fault: a property only the server writes, taken from the body.
            if s.variant == Variant::TakesOwner {
                if let Some(owner) = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["owner"].as_str().map(str::to_owned))
                {
                    entry.1 = owner;
                }
            }
            Json(note(id.parse().unwrap(), &entry.0, &entry.1)).into_response()
        },
    )
    .delete(
        |State(s): State<Notes>, UrlPath(id): UrlPath<String>, headers: HeaderMap| async move {
            let Some(who) = user(&headers) else {
                return StatusCode::UNAUTHORIZED.into_response();
            };
            let mut all = s.notes.lock().unwrap();
            let Some(id) = id.parse::<u64>().ok().filter(|id| all.1.contains_key(id)) else {
                return StatusCode::NOT_FOUND.into_response();
            };
            if all.1[&id].1 != who && !matches!(s.variant, Variant::Shared | Variant::TakesOwner) {
                return not_yours(s.variant);
            }
            all.1.remove(&id);
            StatusCode::NO_CONTENT.into_response()
        },
    );
    // The fault: a PATCH the document does not describe, served anyway.
    let item = if variant == Variant::HiddenPatch {
        item.patch(
            |State(s): State<Notes>, UrlPath(id): UrlPath<String>, headers: HeaderMap| async move {
                if user(&headers).is_none() {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                let all = s.notes.lock().unwrap();
                match id.parse().ok().and_then(|id| all.1.get(&id)) {
                    Some((title, owner)) => {
                        Json(note(id.parse().unwrap(), title, owner)).into_response()
                    }
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            },
        )
    } else {
        item
    };
    Router::new()
        .route(
            "/notes",
            post(
                |State(s): State<Notes>, headers: HeaderMap, body: axum::body::Bytes| async move {
                    let Some(who) = user(&headers) else {
                        return StatusCode::UNAUTHORIZED.into_response();
                    };
                    let Some(title) = title_of(&body) else {
                        return StatusCode::BAD_REQUEST.into_response();
                    };
                    let mut all = s.notes.lock().unwrap();
                    all.0 += 1;
                    let id = all.0;
                    all.1.insert(id, (title.clone(), who.to_owned()));
                    (StatusCode::CREATED, Json(note(id, &title, who))).into_response()
                },
            ),
        )
        .route("/notes/{id}", item)
        .with_state(state)
}

const ORACLES: [&str; 6] = [
    "hidden_endpoint",
    "other_identity_access",
    "existence_leaked",
    "failed_update_side_effects",
    "valid_credentials_refused",
    "mass_assignment",
];

/// The findings of the six oracles of one run, as (oracle, code, operation),
/// sorted; and the run's directory.
fn campaign(
    variant: Variant,
    read_security: &str,
    identities: &[&str],
) -> (Vec<(String, String, String)>, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, document(read_security)).unwrap();
    let (out, report) = run_document(router(variant), &spec, dir.path(), 4, 2, 200, identities);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found = Vec::new();
    for oracle in ORACLES {
        for f in findings_of(&report, oracle) {
            found.push((
                oracle.to_owned(),
                f["code"].as_str().unwrap_or("-").to_owned(),
                f["operation"].as_str().unwrap().to_owned(),
            ));
        }
    }
    found.sort();
    // Neither token anywhere probe wrote.
    for entry in files_under(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        for token in [ALICE, BOB] {
            assert!(
                memchr::memmem::find(&bytes, token.as_bytes()).is_none(),
                "{} holds a token",
                entry.display()
            );
        }
    }
    (found, report, dir)
}

pub(crate) const TWO: [&str; 4] = [
    "--identity",
    "alice=bearer:alice-token-5f2c9a",
    "--identity",
    "bob=bearer:bob-token-81d4e7",
];

/// The message of the first finding of `oracle`.
fn first_message(report: &Value, oracle: &str) -> String {
    findings_of(report, oracle)[0]["message"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn triples(found: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
    found
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect()
}

#[test]
fn another_identity_that_reads_changes_and_deletes_a_note_is_found() {
    let (found, report, dir) = campaign(Variant::Shared, "[{bearerAuth: []}]", &TWO);
    assert_eq!(
        triples(&found),
        [
            ("other_identity_access", "-", "getNote"),
            ("other_identity_access", "F206", "deleteNote"),
            ("other_identity_access", "F206", "replaceNote"),
        ],
        "{found:#?}"
    );
    let messages: Vec<&str> = findings_of(&report, "other_identity_access")
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("identity `bob`") && m.contains("`title` changed from")),
        "{messages:#?}"
    );
    // The identities the run sent as, in the report.
    assert_eq!(report["identities"][0]["name"], "alice");
    assert_eq!(report["identities"][1]["name"], "bob");

    // The series replays: bob's deletion of alice's note is shown again, given both
    // identities; without bob, replay says which identity it lacks.
    let finding = findings_of(&report, "other_identity_access")
        .into_iter()
        .find(|f| f["operation"] == "deleteNote")
        .unwrap()
        .clone();
    let series = finding["series"].as_str().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let fixture = probe::fixture::RunningFixture::start(router(Variant::Shared)).unwrap();
    let url = fixture.base_url();
    let mut args = vec![
        "--store",
        store,
        "replay",
        &series[..12],
        "--exit-code",
        "--url",
        &url,
    ];
    args.extend(TWO);
    let out = run(probe(dir.path()).args(&args));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 1, "{text}");
    assert!(
        text.contains("reproduced") && text.contains("other_identity_access"),
        "{text}"
    );
    let out = run(probe(dir.path()).args([
        "--store",
        store,
        "replay",
        &series[..12],
        "--url",
        &url,
        "--identity",
        "alice=bearer:alice-token-5f2c9a",
    ]));
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("identity `bob`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // recheck judges the stored series the same way, sending nothing.
    let run_text = run_id(&report).to_string();
    let out = run(probe(dir.path()).args(["--store", store, "recheck", &run_text, "--json"]));
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(v["data"]["finding_set"], v["data"]["baseline"], "{v}");
}

#[test]
fn a_read_the_document_makes_public_is_not_reported() {
    let (found, _, _dir) = campaign(Variant::Shared, "[]", &TWO);
    assert_eq!(
        triples(&found),
        [
            ("other_identity_access", "F206", "deleteNote"),
            ("other_identity_access", "F206", "replaceNote"),
        ],
        "{found:#?}"
    );
}

#[test]
fn a_403_for_what_exists_and_a_404_for_what_does_not_is_found() {
    let (found, _, _dir) = campaign(Variant::Forbids, "[{bearerAuth: []}]", &TWO);
    assert_eq!(
        triples(&found),
        [("existence_leaked", "F204", "getNote")],
        "{found:#?}"
    );
}

#[test]
fn an_api_that_answers_404_for_what_is_not_yours_yields_nothing() {
    let (found, report, _dir) = campaign(Variant::Hides, "[{bearerAuth: []}]", &TWO);
    assert!(found.is_empty(), "{found:#?}");
    // The access series did run: bob's requests were answered 404.
    assert!(
        report["totals"]["series"].as_u64().unwrap() >= 2,
        "{report}"
    );
}

#[test]
fn a_change_written_before_the_caller_is_refused_is_found() {
    let (found, _, _dir) = campaign(Variant::WritesThenForbids, "[{bearerAuth: []}]", &TWO);
    assert!(
        found
            .iter()
            .any(|(o, c, op)| o == "failed_update_side_effects"
                && c == "901"
                && op == "replaceNote"),
        "{found:#?}"
    );
    assert!(
        !found.iter().any(|(o, _, _)| o == "other_identity_access"),
        "{found:#?}"
    );
    // With one identity, the same build shows the change sent without credentials is
    // refused and not written: nothing.
    let (found, _, _dir) = campaign(
        Variant::WritesThenForbids,
        "[{bearerAuth: []}]",
        &["--bearer", ALICE],
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_change_without_credentials_written_before_it_is_refused_is_found() {
    let (found, report, _dir) = campaign(
        Variant::WritesThenAsksWho,
        "[{bearerAuth: []}]",
        &["--bearer", ALICE],
    );
    assert_eq!(
        triples(&found),
        [("failed_update_side_effects", "901", "replaceNote")],
        "{found:#?}"
    );
    let message = first_message(&report, "failed_update_side_effects");
    assert!(
        message.contains("answered 401 to a request without credentials"),
        "{message}"
    );
}

#[test]
fn a_401_to_credentials_the_api_accepts_is_found() {
    let (found, report, _dir) = campaign(
        Variant::UnauthorizedForMissing,
        "[{bearerAuth: []}]",
        &["--bearer", ALICE],
    );
    assert_eq!(
        triples(&found),
        [("valid_credentials_refused", "F205", "getNote")],
        "{found:#?}"
    );
    let message = first_message(&report, "valid_credentials_refused");
    assert!(
        message.contains(
            "GET /notes/{noteId} answered 401 to credentials that POST /notes accepted right after"
        ),
        "{message}"
    );
    // The twin answers 404 for a missing note: nothing (checked with two identities by
    // `an_api_that_answers_404_for_what_is_not_yours_yields_nothing`, and here with one).
    let (found, _, _dir) = campaign(Variant::Hides, "[{bearerAuth: []}]", &["--bearer", ALICE]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_read_only_property_a_change_sets_is_found() {
    let (found, report, _dir) = campaign(
        Variant::TakesOwner,
        "[{bearerAuth: []}]",
        &["--bearer", ALICE],
    );
    assert_eq!(
        triples(&found),
        [("mass_assignment", "F203", "replaceNote")],
        "{found:#?}"
    );
    let message = first_message(&report, "mass_assignment");
    assert!(
        message.contains("set `owner`, which the document marks readOnly")
            && message.contains(r#"to "probe-set-by-client""#),
        "{message}"
    );
}

#[test]
fn a_method_the_document_does_not_declare_but_the_api_serves_is_found() {
    let (found, report, _dir) = campaign(
        Variant::HiddenPatch,
        "[{bearerAuth: []}]",
        &["--bearer", ALICE],
    );
    assert_eq!(
        triples(&found),
        [("hidden_endpoint", "F210", "getNote")],
        "{found:#?}"
    );
    let message = first_message(&report, "hidden_endpoint");
    assert_eq!(
        message,
        "PATCH /notes/{noteId} answered 200, though the document declares no PATCH for this path"
    );
}
