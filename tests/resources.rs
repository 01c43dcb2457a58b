//! Resources the API hands out, wherever it puts them: ids inside envelopes, nested three
//! levels and named after their parent (`bucket_id`); ids in a list under a key of its own;
//! a key the client chose in a PUT; an id given only in `Location`; an id a request body
//! refers to (`{"data": {"bucket_id": …}}`). Each fixture answers
//! 404 to an id it never made, so an operation answers 2xx only when probe used what the
//! API handed out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use probe::fixture::RunningFixture;
use serde_json::{json, Value};

use crate::util::{code, run_document, Campaign};

/// What the fixture made. Ids are derived from the request that made them, not from a
/// counter, so the fixture answers the same whatever order concurrent requests arrive in
/// (a deterministic server, as determinism needs).
#[derive(Default)]
struct World {
    made: Mutex<HashSet<String>>,
}

impl World {
    fn make(&self, prefix: &str, request: &[u8]) -> String {
        let digest = blake3::hash(&[prefix.as_bytes(), request].concat());
        let id = format!("{prefix}{}", &digest.to_hex()[..8]);
        self.made.lock().unwrap().insert(id.clone());
        id
    }

    fn has(&self, ids: &[&str]) -> bool {
        let made = self.made.lock().unwrap();
        ids.iter().all(|id| made.contains(*id))
    }
}

type Shared = State<Arc<World>>;

fn found(ok: bool, body: Value) -> axum::response::Response {
    if ok {
        (StatusCode::OK, Json(body)).into_response()
    } else {
        (StatusCode::NOT_FOUND, Json(json!({"message": "not found"}))).into_response()
    }
}

fn router() -> Router {
    let world = Arc::new(World::default());
    world
        .made
        .lock()
        .unwrap()
        .extend(["etl".to_owned(), "report".to_owned()]);
    Router::new()
        .route(
            "/buckets",
            post(|State(w): Shared, body: Bytes| async move {
                let id = w.make("b", &body);
                (
                    StatusCode::CREATED,
                    Json(json!({"data": {"id": id, "owner": {"id": "u1"}}})),
                )
            }),
        )
        .route(
            "/buckets/{bucket_id}",
            get(|State(w): Shared, Path(b): Path<String>| async move {
                found(w.has(&[&b]), json!({"data": {"id": b}}))
            }),
        )
        .route(
            "/buckets/{bucket_id}/collections",
            post(
                |State(w): Shared, Path(b): Path<String>, body: Bytes| async move {
                    if !w.has(&[&b]) {
                        return found(false, Value::Null);
                    }
                    let id = w.make("c", &[b.as_bytes(), &body].concat());
                    (StatusCode::CREATED, Json(json!({"data": {"id": id}}))).into_response()
                },
            ),
        )
        .route(
            "/buckets/{bucket_id}/collections/{collection_id}",
            get(
                |State(w): Shared, Path((b, c)): Path<(String, String)>| async move {
                    found(w.has(&[&b, &c]), json!({"data": {"id": c}}))
                },
            ),
        )
        .route(
            "/buckets/{bucket_id}/collections/{collection_id}/records",
            post(
                |State(w): Shared, Path((b, c)): Path<(String, String)>, body: Bytes| async move {
                    if !w.has(&[&b, &c]) {
                        return found(false, Value::Null);
                    }
                    let id = w.make("r", &[c.as_bytes(), &body].concat());
                    (StatusCode::CREATED, Json(json!({"data": {"id": id}}))).into_response()
                },
            ),
        )
        .route(
            "/buckets/{bucket_id}/collections/{collection_id}/records/{id}",
            get(
                |State(w): Shared, Path((b, c, r)): Path<(String, String, String)>| async move {
                    found(w.has(&[&b, &c, &r]), json!({"data": {"id": r}}))
                },
            ),
        )
        .route(
            "/dags",
            get(|| async {
                Json(json!({"dags": [{"dag_id": "etl"}, {"dag_id": "report"}], "total_entries": 2}))
            }),
        )
        .route(
            "/dags/{dag_id}/tasks",
            get(|State(w): Shared, Path(d): Path<String>| async move {
                found(w.has(&[&d]), json!({"tasks": []}))
            }),
        )
        .route(
            "/things/{thing_key}",
            put(|State(w): Shared, Path(k): Path<String>| async move {
                w.made.lock().unwrap().insert(k.clone());
                (StatusCode::CREATED, Json(json!({"key": k})))
            })
            .get(|State(w): Shared, Path(k): Path<String>| async move {
                found(w.has(&[&k]), json!({"key": k}))
            }),
        )
        .route(
            "/jobs",
            post(|State(w): Shared, body: Bytes| async move {
                let id = w.make("j", &body);
                (
                    StatusCode::CREATED,
                    [(header::LOCATION, format!("/jobs/{id}"))],
                )
            }),
        )
        .route(
            "/jobs/{job_id}",
            get(|State(w): Shared, Path(j): Path<String>| async move {
                found(w.has(&[&j]), json!({"state": "done"}))
            }),
        )
        .route(
            "/orders",
            post(|State(w): Shared, body: Bytes| async move {
                let code = w.make("R", &body);
                let label = w.make("L", &body);
                (
                    StatusCode::CREATED,
                    Json(json!({"receipt": {"code": code, "label": label}})),
                )
            }),
        )
        .route(
            "/shipments/{ticket}",
            get(|State(w): Shared, Path(t): Path<String>| async move {
                found(w.has(&[&t]), json!({"state": "sent"}))
            }),
        )
        .route(
            "/labels/{x}",
            get(|State(w): Shared, Path(x): Path<String>| async move {
                found(w.has(&[&x]), json!({"printed": true}))
            }),
        )
        .route(
            "/transfers",
            post(|State(w): Shared, body: Bytes| async move {
                let sent: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let bucket = sent["data"]["bucket_id"].as_str().unwrap_or("");
                if !w.has(&[bucket]) {
                    return found(false, Value::Null);
                }
                let id = w.make("t", &body);
                (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
            }),
        )
        .with_state(world)
}

const DOCUMENT: &str = r##"
openapi: 3.0.3
info: {title: resources, version: "1"}
components:
  responses:
    ok: {description: ok, content: {application/json: {schema: {type: object}}}}
    missing: {description: not found, content: {application/json: {schema: {type: object}}}}
  links:
    print: {operationRef: "#/paths/~1labels~1{x}/get", parameters: {path.x: "$response.body#/receipt/label"}}
  parameters:
    bucket: {name: bucket_id, in: path, required: true, schema: {type: string}}
    collection: {name: collection_id, in: path, required: true, schema: {type: string}}
paths:
  /buckets:
    post:
      operationId: createBucket
      responses: {"201": {$ref: "#/components/responses/ok"}}
  /buckets/{bucket_id}:
    get:
      operationId: getBucket
      parameters: [{$ref: "#/components/parameters/bucket"}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /buckets/{bucket_id}/collections:
    post:
      operationId: createCollection
      parameters: [{$ref: "#/components/parameters/bucket"}]
      responses: {"201": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /buckets/{bucket_id}/collections/{collection_id}:
    get:
      operationId: getCollection
      parameters: [{$ref: "#/components/parameters/bucket"}, {$ref: "#/components/parameters/collection"}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /buckets/{bucket_id}/collections/{collection_id}/records:
    post:
      operationId: createRecord
      parameters: [{$ref: "#/components/parameters/bucket"}, {$ref: "#/components/parameters/collection"}]
      responses: {"201": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /buckets/{bucket_id}/collections/{collection_id}/records/{id}:
    get:
      operationId: getRecord
      parameters:
        - {$ref: "#/components/parameters/bucket"}
        - {$ref: "#/components/parameters/collection"}
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /dags:
    get:
      operationId: listDags
      responses: {"200": {$ref: "#/components/responses/ok"}}
  /dags/{dag_id}/tasks:
    get:
      operationId: listTasks
      parameters: [{name: dag_id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /things/{thing_key}:
    put:
      operationId: putThing
      parameters: [{name: thing_key, in: path, required: true, schema: {type: string, pattern: "^[a-z]{4,8}$"}}]
      responses: {"201": {$ref: "#/components/responses/ok"}}
    get:
      operationId: getThing
      parameters: [{name: thing_key, in: path, required: true, schema: {type: string, pattern: "^[a-z]{4,8}$"}}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /jobs:
    post:
      operationId: createJob
      responses: {"201": {description: created, headers: {Location: {schema: {type: string}}}}}
  /jobs/{job_id}:
    get:
      operationId: getJob
      parameters: [{name: job_id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /orders:
    post:
      operationId: placeOrder
      responses:
        "201":
          description: placed
          content: {application/json: {schema: {type: object}}}
          links:
            track: {operationId: trackShipment, parameters: {ticket: "$response.body#/receipt/code"}}
            print: {$ref: "#/components/links/print"}
  /shipments/{ticket}:
    get:
      operationId: trackShipment
      parameters: [{name: ticket, in: path, required: true, schema: {type: string}}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /transfers:
    post:
      operationId: createTransfer
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [data]
              properties:
                data:
                  type: object
                  required: [bucket_id, amount]
                  properties:
                    bucket_id: {type: string}
                    amount: {type: integer, minimum: 1, maximum: 100}
      responses: {"201": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
  /labels/{x}:
    get:
      parameters: [{name: x, in: path, required: true, schema: {type: string}}]
      responses: {"200": {$ref: "#/components/responses/ok"}, "404": {$ref: "#/components/responses/missing"}}
"##;

/// One run of [`DOCUMENT`] against a fresh [`router`], into `dir`.
fn run_resources(
    dir: &std::path::Path,
    seed: u64,
    workers: usize,
    requests: u64,
    extra: &[&str],
) -> (std::process::Output, Value) {
    let spec = dir.join("resources.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    run_document(router(), &spec, dir, seed, workers, requests, extra)
}

/// Every operation answers 2xx at least once: nested envelopes three levels down, a list
/// under its own key, a client-chosen key, a `Location` and OpenAPI links (by operationId
/// and by operationRef, to parameters whose names share nothing with the values) all flow
/// into the operations that need them.
#[test]
fn every_operation_reaches_a_resource_the_api_handed_out() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_resources(dir.path(), 3, 4, 600, &[]);
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    let mut never = Vec::new();
    for op in report["operations"].as_array().unwrap() {
        if op["statuses"]["2xx"].as_u64().unwrap_or(0) == 0 {
            never.push(format!("{} {}", op["operation"], op["statuses"]));
        }
    }
    assert!(never.is_empty(), "never answered 2xx: {never:?}");
    assert_eq!(report["totals"]["operations_answered_2xx"], 16);
}

/// The same seed against this deterministic fixture gives the same test cases, whatever
/// the number of workers, even though every id flows from an answer.
#[test]
fn the_same_seed_gives_the_same_cases_at_any_workers() {
    let mut hashes = Vec::new();
    for workers in [1, 4] {
        let dir = tempfile::tempdir().unwrap();
        let (_, report) = run_resources(dir.path(), 11, workers, 200, &[]);
        let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
        let run = crate::util::run_id(&report);
        let cases: Vec<String> = store
            .interactions_of(run)
            .unwrap()
            .iter()
            .map(|row| row.case.to_string())
            .collect();
        hashes.push(cases);
    }
    assert_eq!(hashes[0].len(), 200);
    assert_eq!(hashes[0], hashes[1]);
}

/// Without its producer, an operation is never answered 2xx, and the report says which
/// path parameter no answer gave.
#[test]
fn the_report_names_the_value_an_unreached_operation_missed() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_resources(dir.path(), 3, 2, 200, &["--exclude", "createJob"]);
    let get_job = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == "getJob")
        .expect("getJob was sent");
    assert!(get_job["statuses"].get("2xx").is_none());
    assert_eq!(
        get_job["path_parameters_never_from_answers"],
        json!(["job_id"])
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("getJob (a path parameter probe could only invent (job_id): answered 404"),
        "{stdout}"
    );
    // An operation whose producer ran lists nothing.
    let get_bucket = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == "getBucket")
        .unwrap();
    assert_eq!(get_bucket["path_parameters_never_from_answers"], json!([]));
}

const SLOW_DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: slow, version: "1"}
paths:
  /slow:
    get:
      operationId: slow
      parameters: [{name: ms, in: query, schema: {type: integer, minimum: 150, maximum: 400}}]
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
  /fast:
    get:
      operationId: fast
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
"#;

/// `checks.max_response_time` reports an operation slower than the limit once, described
/// by its slowest answer; it is off unless set, and `recheck` applies a new limit.
#[test]
fn answers_slower_than_the_limit_are_one_finding_per_operation() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("slow.yaml");
    std::fs::write(&spec, SLOW_DOCUMENT).unwrap();
    let router = Router::new()
        .route(
            "/slow",
            get(
                |axum::extract::Query(q): axum::extract::Query<
                    std::collections::HashMap<String, String>,
                >| async move {
                    let ms = q
                        .get("ms")
                        .and_then(|m| m.parse::<u64>().ok())
                        .unwrap_or(150)
                        .clamp(150, 400);
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    Json(json!({}))
                },
            ),
        )
        .route("/fast", get(|| async { Json(json!({})) }));
    let fixture = RunningFixture::start(router).expect("fixture starts");
    let campaign = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 5,
        workers: 4,
        requests: 16,
    };
    let (_, report) = campaign.run(dir.path(), &["--set", "checks.max_response_time=100ms"]);
    let slow: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["oracle"] == "max_response_time")
        .collect();
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert_eq!(slow[0]["operation"], "slow");
    assert!(slow[0]["occurrences"].as_u64().unwrap() >= 2);
    assert!(
        slow[0]["message"]
            .as_str()
            .unwrap()
            .contains("slower than the limit of 100 ms"),
        "{}",
        slow[0]["message"]
    );
    let slow_run = crate::util::run_id(&report).to_string();
    // Off unless set.
    let (_, report) = campaign.run(dir.path(), &[]);
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["oracle"] != "max_response_time"));
    // Recheck judges the stored run against another limit, sending nothing: at 10 s no
    // answer is over it; at 100 ms the same finding comes back.
    let recheck = |limit: &str| {
        let out = crate::util::run(crate::util::probe(dir.path()).args([
            "--store",
            "store",
            "recheck",
            &slow_run,
            "--set",
            &format!("checks.max_response_time={limit}"),
        ]));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(recheck("10s").contains("(0 distinct findings)"));
    assert!(!recheck("100ms").contains("(0 distinct findings)"));
}
