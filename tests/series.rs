//! Series and the HTTP-semantics oracles: one fixture API of accounts, with each fault the
//! series oracles look for planted on its own, and correct twins without it, including
//! correct but unusual ones (a PUT that answers 204, a DELETE that answers 202, a soft
//! delete that answers 410). The faulty build yields its finding, with a stored series that
//! `probe replay` sends again and `probe recheck` judges the same; no twin yields any
//! series finding.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, MethodRouter};
use axum::Router;
use serde_json::{json, Map, Value};

use crate::util::{code, probe, run, run_document, run_id};

/// The one thing the fixture gets wrong, or how it is correct in an unusual way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Correct,
    /// Correct: a PUT on an existing account answers 204 with no body.
    PutAnswers204,
    /// Correct: a DELETE answers 202 (and deletes).
    DeleteAnswers202,
    /// Correct: a deleted account answers 410 Gone.
    SoftDelete410,
    /// The account a POST makes is stored under another id than the one it answers.
    CreatedNotRetrievable,
    /// PUT and PATCH look accounts up in the wrong place and answer 404.
    UpdatedNotFound,
    /// DELETE answers 204 and deletes nothing.
    DeletedStillAvailable,
    /// A PUT that repeats the account's current state answers 201 again.
    RepeatedCreatePut,
    /// A PUT that changes an existing account answers 201.
    MisleadingCreatePut,
    /// PUT leaves `name` as it was.
    PartialUpdatePut,
    /// PUT adds `balance` to the balance (a deposit).
    NonIdempotentPut,
    /// PATCH erases the fields its body leaves out.
    InvalidMergePatch,
    /// The `Location` of a creation points to `/account/{id}`, which does not exist.
    InvalidLocation,
    /// OPTIONS leaves PATCH out of `Allow` and adds TRACE.
    InvalidAllow,
    /// PUT assigns each field it is sent before it checks the next: a refused PUT leaves
    /// the fields before the bad one applied.
    FailedUpdateSideEffects,
    /// POST stores an account with a valid name before it checks the rest: a refused POST
    /// leaves an account behind.
    FailedCreateSideEffects,
    /// PATCH of a deleted account answers 404, and stores the account again.
    MissingUpdateRecreates,
}

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: accounts, version: "1"}
paths:
  /accounts:
    get:
      operationId: listAccounts
      responses:
        "200":
          description: all
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Account'}}
    post:
      operationId: createAccount
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/AccountInput'}
      responses:
        "201":
          description: made
          headers:
            Location: {schema: {type: string}}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Account'}
        "400": {description: bad}
  /accounts/{accountId}:
    parameters:
      - {name: accountId, in: path, required: true, schema: {type: integer, minimum: 1, maximum: 1000000}}
    get:
      operationId: getAccount
      responses:
        "200":
          description: one
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Account'}
        "404": {description: none}
        "410": {description: gone}
    put:
      operationId: putAccount
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/AccountInput'}
      responses:
        "200":
          description: replaced
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Account'}
        "201":
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Account'}
        "204": {description: replaced}
        "400": {description: bad}
        "404": {description: none}
        "410": {description: gone}
    patch:
      operationId: patchAccount
      requestBody:
        required: true
        content:
          application/merge-patch+json:
            schema: {$ref: '#/components/schemas/AccountPatch'}
      responses:
        "200":
          description: changed
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Account'}
        "400": {description: bad}
        "404": {description: none}
        "410": {description: gone}
    delete:
      operationId: deleteAccount
      responses:
        "202": {description: deleting}
        "204": {description: deleted}
        "404": {description: none}
        "410": {description: gone}
components:
  schemas:
    AccountInput:
      type: object
      required: [name, balance]
      properties:
        name: {type: string, minLength: 1, maxLength: 20}
        balance: {type: integer, minimum: 0, maximum: 1000}
        tag: {type: string, maxLength: 10}
    AccountPatch:
      type: object
      properties:
        name: {type: string, minLength: 1, maxLength: 20}
        balance: {type: integer, minimum: 0, maximum: 1000}
        tag: {type: string, maxLength: 10}
    Account:
      type: object
      required: [id, name, balance]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string}
        balance: {type: integer}
        tag: {type: string}
        updated_at: {type: string, readOnly: true}
"#;

#[derive(Default)]
struct Bank {
    accounts: BTreeMap<u64, Map<String, Value>>,
    deleted: BTreeSet<u64>,
    next: u64,
    writes: u64,
}

type Shared = State<(Variant, Arc<Mutex<Bank>>)>;

fn json_reply(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn status(status: StatusCode) -> Response {
    status.into_response()
}

/// The body's fields the schema takes, when it is a JSON object with a valid name and
/// balance (as `required` asks when `full`).
fn input(body: &[u8], full: bool) -> Option<Map<String, Value>> {
    let Value::Object(map) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    let name_ok = |v: &Value| {
        v.as_str()
            .is_some_and(|s| !s.is_empty() && s.chars().count() <= 20)
    };
    let balance_ok = |v: &Value| v.as_u64().is_some_and(|b| b <= 1000);
    let tag_ok = |v: &Value| v.as_str().is_some_and(|s| s.chars().count() <= 10);
    let mut out = Map::new();
    for (k, v) in map {
        let ok = match k.as_str() {
            "name" => name_ok(&v),
            "balance" => balance_ok(&v),
            "tag" => tag_ok(&v),
            _ => true,
        };
        if !ok {
            return None;
        }
        if matches!(k.as_str(), "name" | "balance" | "tag") {
            out.insert(k, v);
        }
    }
    if full && !(out.contains_key("name") && out.contains_key("balance")) {
        return None;
    }
    Some(out)
}

fn shown(id: u64, fields: &Map<String, Value>, writes: u64) -> Value {
    let mut v = fields.clone();
    v.insert("id".into(), json!(id));
    v.insert(
        "updated_at".into(),
        json!(format!("2026-01-01T00:00:{:02}Z", writes % 60)),
    );
    Value::Object(v)
}

async fn accounts(State((variant, bank)): Shared, method: Method, body: Bytes) -> Response {
    let mut bank = bank.lock().unwrap();
    match method {
        Method::GET => {
            let list: Vec<Value> = bank
                .accounts
                .iter()
                .map(|(id, f)| shown(*id, f, 0))
                .collect();
            json_reply(StatusCode::OK, Value::Array(list))
        }
        Method::POST => {
            let Some(fields) = input(&body, true) else {
                if variant == Variant::FailedCreateSideEffects {
                    if let Ok(Value::Object(sent)) = serde_json::from_slice::<Value>(&body) {
                        if let Some(name) = sent.get("name").filter(|n| n.is_string()) {
                            bank.next += 1;
                            let id = bank.next;
                            let mut half = Map::new();
                            half.insert("name".into(), name.clone());
                            half.insert("balance".into(), json!(0));
                            bank.accounts.insert(id, half);
                        }
                    }
                }
                return json_reply(StatusCode::BAD_REQUEST, json!({"message": "bad account"}));
            };
            bank.next += 1;
            let id = bank.next;
            let stored_at = if variant == Variant::CreatedNotRetrievable {
                id + 500_000
            } else {
                id
            };
            bank.accounts.insert(stored_at, fields.clone());
            let location = if variant == Variant::InvalidLocation {
                format!("/account/{id}")
            } else {
                format!("/accounts/{id}")
            };
            let mut reply = json_reply(StatusCode::CREATED, shown(id, &fields, 0));
            reply
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_str(&location).unwrap());
            reply
        }
        Method::OPTIONS => allow("GET, POST, OPTIONS"),
        _ => status(StatusCode::METHOD_NOT_ALLOWED),
    }
}

fn allow(methods: &str) -> Response {
    let mut reply = status(StatusCode::NO_CONTENT);
    reply
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_str(methods).unwrap());
    reply
}

async fn account(
    State((variant, bank)): Shared,
    Path(id): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return json_reply(StatusCode::BAD_REQUEST, json!({"message": "bad id"}));
    };
    let mut bank = bank.lock().unwrap();
    let bank = &mut *bank;
    bank.writes += 1;
    let writes = bank.writes;
    let gone = || {
        if variant == Variant::SoftDelete410 {
            status(StatusCode::GONE)
        } else {
            status(StatusCode::NOT_FOUND)
        }
    };
    match method {
        Method::GET => match bank.accounts.get(&id) {
            Some(f) => json_reply(StatusCode::OK, shown(id, f, writes)),
            None if bank.deleted.contains(&id) => gone(),
            None => status(StatusCode::NOT_FOUND),
        },
        Method::PUT => {
            let Some(fields) = input(&body, true) else {
                if variant == Variant::FailedUpdateSideEffects {
                    // Fields are applied as they are read, the bad one refused last.
                    if let (Some(existing), Ok(Value::Object(sent))) = (
                        bank.accounts.get_mut(&id),
                        serde_json::from_slice::<Value>(&body),
                    ) {
                        if let Some(name) = sent.get("name").filter(|n| n.is_string()) {
                            existing.insert("name".into(), name.clone());
                        }
                        if let Some(balance) = sent.get("balance").filter(|b| b.is_u64()) {
                            existing.insert("balance".into(), balance.clone());
                        }
                    }
                }
                return json_reply(StatusCode::BAD_REQUEST, json!({"message": "bad account"}));
            };
            if variant == Variant::UpdatedNotFound {
                return status(StatusCode::NOT_FOUND);
            }
            let Some(existing) = bank.accounts.get_mut(&id) else {
                if bank.deleted.contains(&id) {
                    return gone();
                }
                bank.accounts.insert(id, fields.clone());
                return json_reply(StatusCode::CREATED, shown(id, &fields, writes));
            };
            let unchanged = *existing == fields;
            let mut new = fields.clone();
            match variant {
                Variant::PartialUpdatePut => {
                    if let Some(name) = existing.get("name") {
                        new.insert("name".into(), name.clone());
                    }
                }
                Variant::NonIdempotentPut => {
                    let sum = existing.get("balance").and_then(Value::as_u64).unwrap_or(0)
                        + fields.get("balance").and_then(Value::as_u64).unwrap_or(0);
                    new.insert("balance".into(), json!(sum));
                }
                _ => {}
            }
            *existing = new.clone();
            let replaced = match variant {
                Variant::RepeatedCreatePut if unchanged => StatusCode::CREATED,
                Variant::MisleadingCreatePut if !unchanged => StatusCode::CREATED,
                Variant::PutAnswers204 => return status(StatusCode::NO_CONTENT),
                _ => StatusCode::OK,
            };
            json_reply(replaced, shown(id, &new, writes))
        }
        Method::PATCH => {
            let media = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !media.starts_with("application/merge-patch+json") {
                return status(StatusCode::UNSUPPORTED_MEDIA_TYPE);
            }
            let Some(fields) = input(&body, false) else {
                return json_reply(StatusCode::BAD_REQUEST, json!({"message": "bad patch"}));
            };
            if variant == Variant::UpdatedNotFound {
                return status(StatusCode::NOT_FOUND);
            }
            let Some(existing) = bank.accounts.get_mut(&id) else {
                if variant == Variant::MissingUpdateRecreates && bank.deleted.contains(&id) {
                    bank.deleted.remove(&id);
                    bank.accounts.insert(id, fields);
                    return status(StatusCode::NOT_FOUND);
                }
                return if bank.deleted.contains(&id) {
                    gone()
                } else {
                    status(StatusCode::NOT_FOUND)
                };
            };
            if variant == Variant::InvalidMergePatch {
                // Read into an object whose missing fields are null: they are erased.
                existing.retain(|k, _| fields.contains_key(k));
            }
            for (k, v) in fields {
                existing.insert(k, v);
            }
            let shown = shown(id, existing, writes);
            json_reply(StatusCode::OK, shown)
        }
        Method::DELETE => {
            if !bank.accounts.contains_key(&id) {
                return if bank.deleted.contains(&id) {
                    gone()
                } else {
                    status(StatusCode::NOT_FOUND)
                };
            }
            if variant != Variant::DeletedStillAvailable {
                bank.accounts.remove(&id);
                bank.deleted.insert(id);
            }
            if variant == Variant::DeleteAnswers202 {
                status(StatusCode::ACCEPTED)
            } else {
                status(StatusCode::NO_CONTENT)
            }
        }
        Method::OPTIONS if variant == Variant::InvalidAllow => allow("GET, PUT, DELETE, TRACE"),
        Method::OPTIONS => allow("GET, PUT, PATCH, DELETE, OPTIONS"),
        _ => status(StatusCode::METHOD_NOT_ALLOWED),
    }
}

fn router(variant: Variant) -> Router {
    let state = (variant, Arc::new(Mutex::new(Bank::default())));
    let item: MethodRouter<(Variant, Arc<Mutex<Bank>>)> = any(account);
    Router::new()
        .route("/accounts", any(accounts))
        .route("/accounts/{id}", item)
        .with_state(state)
}

const SERIES_ORACLES: [&str; 12] = [
    "failed_create_side_effects",
    "failed_update_side_effects",
    "created_not_retrievable",
    "updated_not_found",
    "deleted_still_available",
    "repeated_create_put",
    "misleading_create_put",
    "partial_update_put",
    "non_idempotent_put",
    "invalid_merge_patch",
    "invalid_location",
    "invalid_allow",
];

/// Runs probe against the fixture built as `variant`; gives the run's report and the
/// series findings (oracle → finding).
fn campaign(
    dir: &std::path::Path,
    variant: Variant,
) -> (serde_json::Value, BTreeMap<String, Value>) {
    let spec = dir.join("accounts.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let (out, report) = run_document(router(variant), &spec, dir, 5, 2, 400, &[]);
    assert!(
        matches!(code(&out), 0 | 1),
        "{variant:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| SERIES_ORACLES.contains(&f["oracle"].as_str().unwrap()))
        .map(|f| (f["oracle"].as_str().unwrap().to_owned(), f.clone()))
        .collect();
    (report, findings)
}

#[test]
fn each_planted_fault_is_found_by_its_series_oracle() {
    let cases = [
        (Variant::CreatedNotRetrievable, "created_not_retrievable"),
        (Variant::UpdatedNotFound, "updated_not_found"),
        (Variant::DeletedStillAvailable, "deleted_still_available"),
        (Variant::RepeatedCreatePut, "repeated_create_put"),
        (Variant::MisleadingCreatePut, "misleading_create_put"),
        (Variant::PartialUpdatePut, "partial_update_put"),
        (Variant::NonIdempotentPut, "non_idempotent_put"),
        (Variant::InvalidMergePatch, "invalid_merge_patch"),
        (Variant::InvalidLocation, "invalid_location"),
        (Variant::InvalidAllow, "invalid_allow"),
        (
            Variant::FailedUpdateSideEffects,
            "failed_update_side_effects",
        ),
        (
            Variant::MissingUpdateRecreates,
            "failed_update_side_effects",
        ),
    ];
    for (variant, oracle) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (report, findings) = campaign(dir.path(), variant);
        let finding = findings.get(oracle).unwrap_or_else(|| {
            panic!(
                "{variant:?} yields no `{oracle}` finding; series findings: {:?}; totals: {}",
                findings.keys().collect::<Vec<_>>(),
                report["totals"]
            )
        });
        // The finding names its series, and its reproducer sends the whole series.
        let series = finding["series"]
            .as_str()
            .expect("a series finding names its series");
        // Its replay line names the finding by its short id, which replays the series.
        assert_eq!(
            finding["replay"].as_str().unwrap(),
            format!("probe replay {}", finding["id"].as_str().unwrap())
        );
        assert!(report["totals"]["series"].as_u64().unwrap() >= 1);
        // The series it names is the shortest that showed it: the creation and the steps
        // its oracle needs, when a life cycle of those alone showed it again.
        let stored = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
        let named: probe::model::Series = stored
            .get(probe::ids::Digest::from_hex(series).unwrap())
            .unwrap();
        let roles: Vec<&str> = named.steps.iter().map(|s| s.role.as_str()).collect();
        if variant == Variant::DeletedStillAvailable {
            assert_eq!(
                roles,
                ["create", "read", "delete", "read_after_delete"],
                "{variant:?}: totals {}; variations {}",
                report["totals"],
                report["series_variations"]
            );
        }
        assert!(roles.len() < 12, "{variant:?}: {roles:?}");
        // The report says how many series the oracle judged.
        let entry = report["oracles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == oracle)
            .unwrap();
        assert!(entry["series_judged"].as_u64().unwrap() >= 1, "{entry}");
    }
}

#[test]
fn correct_twins_yield_no_series_finding() {
    for variant in [
        Variant::Correct,
        Variant::PutAnswers204,
        Variant::DeleteAnswers202,
        Variant::SoftDelete410,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (report, findings) = campaign(dir.path(), variant);
        assert!(
            findings.is_empty(),
            "{variant:?} yields series findings: {findings:#?}"
        );
        // Every series oracle says how many series it judged, 0 included.
        for name in SERIES_ORACLES {
            let entry = report["oracles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == name)
                .unwrap();
            assert!(entry["series_judged"].is_u64(), "{entry}");
        }
        // The series ran: life cycles and OPTIONS.
        assert!(
            report["totals"]["series"].as_u64().unwrap() >= 2,
            "{variant:?}: {}",
            report["totals"]
        );
        assert!(report["totals"]["series_steps"].as_u64().unwrap() >= 8);
    }
}

#[test]
fn a_series_finding_survives_recheck_and_its_series_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (report, findings) = campaign(dir.path(), Variant::NonIdempotentPut);
    let finding = &findings["non_idempotent_put"];
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();

    // recheck judges the stored series the same way, sending nothing.
    let run_text = run_id(&report).to_string();
    let out = run(probe(dir.path()).args(["--store", store, "recheck", &run_text, "--json"]));
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    // The very same finding set: same findings, same series named, same interactions.
    assert_eq!(v["data"]["finding_set"], v["data"]["baseline"], "{v}");
    assert_eq!(v["data"]["new_set"], false, "{v}");

    // replay sends the whole series again, against a fresh fixture, and it fails the same
    // way: the same PUT twice still adds twice.
    let fixture = probe::fixture::RunningFixture::start(router(Variant::NonIdempotentPut)).unwrap();
    let series = finding["series"].as_str().unwrap();
    let out = run(probe(dir.path()).args([
        "--store",
        store,
        "replay",
        &series[..12],
        "--exit-code",
        "--url",
        &fixture.base_url(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        code(&out),
        1,
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("replaying series"), "{text}");
    assert!(
        text.contains("reproduced") && text.contains("non_idempotent_put"),
        "{text}"
    );
}

#[test]
fn diff_names_the_series_finding_a_fix_loses() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("accounts.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    for (variant, name) in [
        (Variant::NonIdempotentPut, "before"),
        (Variant::Correct, "after"),
    ] {
        let (out, _) = run_document(
            router(variant),
            &spec,
            dir.path(),
            5,
            2,
            400,
            &["--name", name],
        );
        assert!(matches!(code(&out), 0 | 1));
    }
    let store = dir.path().join("store");
    let out = run(probe(dir.path()).args([
        "--store",
        store.to_str().unwrap(),
        "diff",
        "before",
        "after",
        "--json",
    ]));
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let lost: Vec<&str> = v["data"]["findings"]["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["oracle"].as_str().unwrap())
        .collect();
    assert!(
        lost.contains(&"non_idempotent_put"),
        "{}",
        v["data"]["findings"]
    );
    let gained = &v["data"]["findings"]["gained"];
    assert!(
        !gained.to_string().contains("non_idempotent_put"),
        "{gained}"
    );
}
