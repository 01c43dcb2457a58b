//! `probe replay` and `probe serve` end to end: a run against the demo fixture, replayed
//! against a still-faulty build, a fixed build, a fresh instance with other ids, and
//! through `probe serve`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use probe::fixture::{demo, RunningFixture};
use probe::ids::{Digest, InteractionId, RunId};
use probe::model::{Interaction, RunKind, RunStart, TestCase, SECRET_PLACEHOLDER};
use probe::serve::{self, Recording};
use probe::store::Store;
use serde_json::{json, Value};

use crate::util::{code, demo_spec, probe, run, run_id, Campaign};

/// A run of `requests` against a fresh demo fixture, stopped afterwards; its report.
fn record(dir: &Path, faults: demo::Faults, seed: u64, workers: usize, requests: u64) -> Value {
    let fixture = RunningFixture::start(demo::router(faults)).expect("fixture starts");
    record_at(dir, &fixture.base_url(), seed, workers, requests)
}

fn record_at(dir: &Path, url: &str, seed: u64, workers: usize, requests: u64) -> Value {
    let spec = demo_spec();
    let campaign = Campaign {
        spec: &spec,
        url,
        seed,
        workers,
        requests,
    };
    let (out, report) = campaign.run(dir, &[]);
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    report
}

fn store_of(dir: &Path) -> Store {
    Store::open_existing(&dir.join("store")).unwrap()
}

/// `probe replay <target> --url <url> --json [extra]`: exit code and the JSON report.
fn replay(dir: &Path, target: &str, url: &str, extra: &[&str]) -> (i32, Value) {
    let mut cmd = probe(dir);
    cmd.env_remove("PROBE_BEARER")
        .env_remove("PROBE_BASIC")
        .env_remove("PROBE_API_KEY")
        .args([
            "replay",
            target,
            "--url",
            url,
            "--json",
            "--store",
            dir.join("store").to_str().unwrap(),
        ])
        .args(extra);
    let out = run(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    let line: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("replay --json prints one JSON line ({e}): {text}"));
    assert_eq!(line["type"], "replay", "{line}");
    (code(&out), line["data"].clone())
}

/// The replay target each finding's report entry prints: `probe replay <finding id>`.
fn finding_targets(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let line = f["replay"].as_str().unwrap();
            (
                f["oracle"].as_str().unwrap().to_owned(),
                line.trim_start_matches("probe replay ").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_finding_is_reproduced_against_the_faulty_build_and_fixed_against_the_fixed_one() {
    let dir = tempfile::tempdir().unwrap();
    let report = record(dir.path(), demo::Faults::ALL, 7, 4, 300);
    let targets = finding_targets(&report);
    let oracles: BTreeSet<&str> = targets.iter().map(|(o, _)| o.as_str()).collect();
    assert!(
        oracles.len() >= 5,
        "every planted fault was found: {oracles:?}"
    );

    let faulty = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let fixed = RunningFixture::start(demo::router(demo::Faults::NONE)).unwrap();
    for (oracle, target) in &targets {
        let (exit, v) = replay(dir.path(), target, &faulty.base_url(), &[]);
        assert_eq!(
            v["verdict"], "reproduced",
            "{oracle} against the faulty build: {v}"
        );
        assert_eq!(exit, 0, "no --exit-code: exit 0 whatever the verdict");
        // A finding of a series is replayed by sending its whole series.
        assert!(v["kind"] == "finding" || v["kind"] == "series", "{v}");
        let verdicts = &v["attempts"][0]["findings"];
        assert!(
            verdicts
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["oracle"] == oracle.as_str() && f["verdict"] == "reproduced"),
            "{v}"
        );

        let (exit, v) = replay(dir.path(), target, &fixed.base_url(), &["--exit-code"]);
        assert_eq!(
            v["verdict"], "fixed",
            "{oracle} against the fixed build: {v}"
        );
        assert_eq!(exit, 0, "fixed is exit 0 even with --exit-code");
    }

    // --exit-code: 1 when reproduced; --times counts how often.
    let (_, server_error) = targets.iter().find(|(o, _)| o == "server_error").unwrap();
    let (exit, v) = replay(
        dir.path(),
        server_error,
        &faulty.base_url(),
        &["--exit-code", "--times", "3"],
    );
    assert_eq!(exit, 1);
    assert_eq!(v["times"], 3);
    assert_eq!(v["reproduced"], 3);
    assert_eq!(v["attempts"].as_array().unwrap().len(), 3);

    // The text output names the verdict.
    let out = run(probe(dir.path()).args([
        "replay",
        server_error,
        "--url",
        &fixed.base_url(),
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("500 -> 200"), "{text}");
    assert!(
        text.contains("verdict: fixed (server_error no longer fires)"),
        "{text}"
    );
}

/// A getPet interaction answered 200 whose `petId` was bound from an earlier answer.
fn bound_get_pet(store: &Store, run: RunId) -> (InteractionId, TestCase) {
    for row in store.interactions_of(run).unwrap() {
        if row.operation != "getPet" || row.status != Some(200) {
            continue;
        }
        let i: Interaction = store.get(row.id.digest()).unwrap();
        let case: TestCase = store.get(i.case.digest()).unwrap();
        if case
            .series_step
            .as_ref()
            .is_some_and(|s| s.bindings.contains_key("petId"))
        {
            return (row.id, case);
        }
    }
    panic!("no getPet answered 200 with a bound petId");
}

/// The demo API, but ids come from a counter starting high: a fresh instance hands out
/// other ids than the recorded ones, as a real database would.
fn counter_shop() -> Router {
    const JSON: [(&str, &str); 1] = [("content-type", "application/json")];
    /// Ids handed out so far, and the pets by id.
    type Pets = (u64, Vec<(u64, Value)>);
    #[derive(Clone, Default)]
    struct Shop(Arc<Mutex<Pets>>);
    async fn create(State(shop): State<Shop>, body: axum::body::Bytes) -> impl IntoResponse {
        let Ok(Value::Object(mut pet)) = serde_json::from_slice::<Value>(&body) else {
            return (StatusCode::BAD_REQUEST, JSON, "{}".to_owned());
        };
        let mut s = shop.0.lock().unwrap();
        s.0 += 1;
        let id = 900_000 + s.0;
        pet.insert("id".into(), json!(id));
        s.1.push((id, Value::Object(pet.clone())));
        (StatusCode::CREATED, JSON, Value::Object(pet).to_string())
    }
    async fn read(State(shop): State<Shop>, UrlPath(id): UrlPath<String>) -> impl IntoResponse {
        let s = shop.0.lock().unwrap();
        match s.1.iter().find(|(i, _)| i.to_string() == id) {
            Some((_, pet)) => (StatusCode::OK, JSON, pet.to_string()),
            None => (
                StatusCode::NOT_FOUND,
                JSON,
                json!({"message": "no pet"}).to_string(),
            ),
        }
    }
    Router::new()
        .route("/pets", post(create))
        .route("/pets/{id}", get(read))
        .with_state(Shop::default())
}

#[test]
fn a_series_replays_against_a_fresh_api_and_the_new_id_flows_in() {
    let dir = tempfile::tempdir().unwrap();
    let report = record(dir.path(), demo::Faults::NONE, 5, 4, 120);
    let (get_pet, case) = {
        let store = store_of(dir.path());
        bound_get_pet(&store, run_id(&report))
    };
    let recorded_id = case.parameters[0].value.clone();

    // A fresh instance of the demo (empty pet store): the POST is re-sent first.
    let fresh = RunningFixture::start(demo::router(demo::Faults::NONE)).unwrap();
    let (_, v) = replay(dir.path(), &get_pet.to_string(), &fresh.base_url(), &[]);
    let exchanges = v["attempts"][0]["exchanges"].as_array().unwrap();
    assert!(exchanges.len() >= 2, "{v}");
    let source = &exchanges[0];
    assert_eq!(source["role"], "source");
    assert_eq!(source["operation"], "createPet");
    assert_eq!(source["method"], "POST");
    let target = exchanges.last().unwrap();
    assert_eq!(target["role"], "target");
    assert_eq!(target["comparison"]["now_status"], 200, "{v}");
    assert_eq!(target["bound"][0]["rebound"], true);
    assert_eq!(v["verdict"], "same", "{v}");

    // Another API that hands out other ids: the new id is the one sent.
    let other = RunningFixture::start(counter_shop()).unwrap();
    let (_, v) = replay(dir.path(), &get_pet.to_string(), &other.base_url(), &[]);
    let target = v["attempts"][0]["exchanges"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let now_id = &target["bound"][0]["now"];
    assert_ne!(now_id, &recorded_id, "{v}");
    assert!(now_id.as_u64().unwrap() > 900_000, "{v}");
    assert!(
        target["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/pets/{now_id}")),
        "{target}"
    );
    assert_eq!(target["comparison"]["now_status"], 200, "{v}");
    // The generated id is volatile: the answers match after normalisation.
    assert_eq!(target["verdict"], "same", "{v}");

    // The text says what was re-sent first and which value flowed in.
    let other = RunningFixture::start(counter_shop()).unwrap();
    let out = run(probe(dir.path()).args([
        "replay",
        &get_pet.to_string()[..12],
        "--url",
        &other.base_url(),
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("re-sent first"), "{text}");
    assert!(text.contains("createPet POST"), "{text}");
    assert!(
        text.contains(&format!("petId: {recorded_id} -> 900001")),
        "{text}"
    );
    assert!(text.contains("verdict: same"), "{text}");
}

/// The demo's `GET /stats`, declared JSON, answered as text every other time.
fn flaky_stats() -> Router {
    let calls = Arc::new(Mutex::new(0u64));
    Router::new().route(
        "/stats",
        get(move || {
            let calls = calls.clone();
            async move {
                let mut n = calls.lock().unwrap();
                *n += 1;
                if *n % 2 == 1 {
                    ([("content-type", "text/plain")], "pets=0".to_owned())
                } else {
                    (
                        [("content-type", "application/json")],
                        json!({"pets": 0}).to_string(),
                    )
                }
            }
        }),
    )
}

#[test]
fn times_counts_how_often_a_finding_reproduces() {
    let dir = tempfile::tempdir().unwrap();
    let report = record(dir.path(), demo::Faults::ALL, 7, 4, 120);
    let (_, target) = finding_targets(&report)
        .into_iter()
        .find(|(o, _)| o == "content_type_declared")
        .expect("the text/plain stats are found");
    let flaky = RunningFixture::start(flaky_stats()).unwrap();
    let (exit, v) = replay(dir.path(), &target, &flaky.base_url(), &["--times", "4"]);
    assert_eq!(exit, 0);
    assert_eq!(v["reproduced"], 2, "{v}");
    assert_eq!(v["verdict"], "reproduced");
    let verdicts: Vec<&str> = v["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["reproduced", "fixed", "reproduced", "fixed"]);
    let out = run(probe(dir.path()).args([
        "replay",
        &target,
        "--url",
        &flaky.base_url(),
        "--times",
        "4",
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("reproduced 2 of 4 times (flaky)"), "{text}");
}

#[test]
fn a_replay_is_stored_as_a_run_of_kind_replay_linked_to_what_it_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let report = record(dir.path(), demo::Faults::ALL, 9, 4, 150);
    // An interaction that showed a finding, by its id.
    let target = report["findings"][0]["interactions"][0].as_str().unwrap()[..12].to_owned();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let (_, v) = replay(dir.path(), &target, &fixture.base_url(), &[]);
    let replay_run = v["run"].as_str().unwrap().to_owned();
    let interaction_id = {
        let store = store_of(dir.path());
        let (kind, id) = store.resolve(&target).unwrap();
        assert_eq!(kind, probe::store::ObjectKind::Interaction);
        id.to_hex()
    };
    assert_eq!(v["replay_of"], interaction_id.as_str());

    let out = run(probe(dir.path()).args([
        "log",
        "--json",
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["data"]["id"], replay_run.as_str());
    assert_eq!(first["data"]["kind"], "replay");
    assert_eq!(first["data"]["replay_of"], interaction_id.as_str());
    assert_eq!(first["data"]["outcome"], "completed");
    assert!(first["data"]["findings"].as_u64().unwrap() >= 1, "{first}");
    let out =
        run(probe(dir.path()).args(["log", "--store", dir.path().join("store").to_str().unwrap()]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("replay of {}", &interaction_id[..12])),
        "{text}"
    );

    let store = store_of(dir.path());
    let id = Digest::from_hex(&replay_run).unwrap();
    let start: RunStart = store.get(id).unwrap();
    assert_eq!(start.kind, RunKind::Replay);
    assert_eq!(start.base_url, fixture.base_url());
    assert!(!store.interactions_of(RunId(id)).unwrap().is_empty());
    assert!(store.run_end(RunId(id)).unwrap().is_some());

    // A finding by `<finding set>:<n>`, counted from 1; a number past the end is a usage error.
    let set = store.run_end(run_id(&report)).unwrap().unwrap().findings;
    let (_, v) = replay(
        dir.path(),
        &format!("{}:1", set.short(12)),
        &fixture.base_url(),
        &[],
    );
    assert_eq!(v["kind"], "finding");
    assert_eq!(v["replay_of"], format!("{set}:1"));
    assert_eq!(v["verdict"], "reproduced", "{v}");
    let out = run(probe(dir.path()).args([
        "replay",
        &format!("{}:99", set.short(12)),
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("count them from 1"));

    // A whole run replays too, and the store still verifies.
    let (_, v) = replay(
        dir.path(),
        &run_id(&report).to_string(),
        &fixture.base_url(),
        &[],
    );
    assert_eq!(v["kind"], "run");
    assert_eq!(v["verdict"], "reproduced", "{v}");
    assert!(v["attempts"][0]["exchanges"].as_array().unwrap().len() >= 150);
    drop(store);
    let out = run(probe(dir.path()).args([
        "store",
        "verify",
        "--store",
        dir.path().join("store").to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 0);
}

fn case_ids(store: &Store, run: RunId) -> Vec<String> {
    store
        .interactions_of(run)
        .unwrap()
        .iter()
        .map(|r| r.case.to_string())
        .collect()
}

#[test]
fn a_run_against_probe_serve_generates_the_same_test_cases() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(dir.path(), demo::Faults::ALL, 42, 4, 150);
    let ids_a = case_ids(&store_of(dir.path()), run_id(&a));
    assert_eq!(ids_a.len(), 150);
    for workers in [4, 8] {
        let recording = Recording::load(&store_of(dir.path()), &run_id(&a).to_string()).unwrap();
        assert_eq!(recording.len(), 150);
        let served = RunningFixture::start(serve::router(recording)).unwrap();
        let b = record_at(dir.path(), &served.base_url(), 42, workers, 150);
        let ids_b = case_ids(&store_of(dir.path()), run_id(&b));
        if let Some(i) = (0..ids_a.len()).find(|&i| ids_a.get(i) != ids_b.get(i)) {
            panic!("--workers {workers}: the test case at seq {i} differs through probe serve");
        }
        assert_eq!(ids_a.len(), ids_b.len());
        // The same answers, so the same findings.
        assert_eq!(
            a["findings"].as_array().map(Vec::len),
            b["findings"].as_array().map(Vec::len)
        );
    }
}

#[test]
fn serve_answers_in_recorded_order_and_names_the_closest_request_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(dir.path(), demo::Faults::ALL, 3, 4, 120);
    let store = store_of(dir.path());
    let run = run_id(&a);
    // GET /stats counts the pets: recorded several times with different answers.
    let mut recorded = Vec::new();
    for row in store.interactions_of(run).unwrap() {
        // (A series also asks `OPTIONS /stats`, recorded under the same operation.)
        if row.operation == "getStats" && row.method == "GET" {
            let i: Interaction = store.get(row.id.digest()).unwrap();
            let r = i.outcome.response().unwrap();
            let body = store.body_bytes(r.body.as_ref().unwrap()).unwrap();
            recorded.push(String::from_utf8(body).unwrap());
        }
    }
    assert!(recorded.len() >= 3, "{recorded:?}");
    let served = RunningFixture::start(serve::router(
        Recording::load(&store, &run.to_string()).unwrap(),
    ))
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let base = served.base_url();
    runtime.block_on(async {
        let mut got = Vec::new();
        for _ in 0..recorded.len() {
            let r = client.get(format!("{base}/stats")).send().await.unwrap();
            assert_eq!(r.status(), 200);
            got.push(r.text().await.unwrap());
        }
        assert_eq!(got, recorded, "answers in recorded order");
        let again = client.get(format!("{base}/stats")).send().await.unwrap();
        assert_eq!(
            again.text().await.unwrap(),
            *recorded.last().unwrap(),
            "then the last one again"
        );

        let r = client
            .get(format!("{base}/pets?limit=3&nosuch=1"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert!(v["error"].as_str().unwrap().contains("no recorded request"));
        assert_eq!(v["request"]["path"], "/pets");
        assert_eq!(v["closest"]["method"], "GET", "{v}");
        assert_eq!(v["closest"]["path"], "/pets", "{v}");
        assert!(v["closest"]["interaction"].is_string(), "{v}");
    });
}

/// An API whose one operation needs a bearer token; it remembers what it was sent.
fn echo_api(seen: Arc<Mutex<Vec<Option<String>>>>) -> Router {
    Router::new().route(
        "/whoami",
        get(move |headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                seen.lock().unwrap().push(auth);
                (
                    [("content-type", "application/json")],
                    json!({"ok": true}).to_string(),
                )
            }
        }),
    )
}

const ECHO_DOC: &str = r#"
openapi: 3.0.3
info: { title: echo, version: "1" }
components:
  securitySchemes:
    token: { type: http, scheme: bearer }
security: [ { token: [] } ]
paths:
  /whoami:
    get:
      operationId: whoami
      responses:
        "200":
          description: who you are
          content:
            application/json:
              schema: { type: object }
"#;

#[test]
fn replay_sends_this_invocations_credentials_only() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("echo.yaml");
    std::fs::write(&doc, ECHO_DOC).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let api = RunningFixture::start(echo_api(seen.clone())).unwrap();
    let store_dir = dir.path().join("store");
    let out = run(probe(dir.path()).env_remove("PROBE_BEARER").args([
        "run",
        "--spec",
        doc.to_str().unwrap(),
        "--url",
        &api.base_url(),
        "--bearer",
        "secret",
        "--requests",
        "3",
        "--seed",
        "1",
        "--store",
        store_dir.to_str().unwrap(),
        // The echo API answers whatever the credentials: its requests sent without them
        // would be findings, and would be sent without the token this test counts.
        "--set",
        "checks.ignored_authentication=false",
    ]));
    assert_eq!(code(&out), 0);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|a| a.as_deref() == Some("Bearer secret")));

    let store = Store::open_existing(&store_dir).unwrap();
    let run_id = store.runs().unwrap()[0].id;
    let first = store.interactions_of(run_id).unwrap()[0].id;
    let i: Interaction = store.get(first.digest()).unwrap();
    assert!(
        i.request
            .headers
            .contains(&("authorization".into(), SECRET_PLACEHOLDER.into())),
        "{:?}",
        i.request.headers
    );
    drop(store);

    seen.lock().unwrap().clear();
    let (_, v) = replay(
        dir.path(),
        &first.to_string(),
        &api.base_url(),
        &["--without-credentials"],
    );
    assert_eq!(v["verdict"], "same", "{v}");
    assert_eq!(
        v["without_credentials"],
        serde_json::json!(["header authorization"])
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![None],
        "no token without --bearer"
    );

    seen.lock().unwrap().clear();
    let (_, v) = replay(
        dir.path(),
        &first.to_string(),
        &api.base_url(),
        &["--bearer", "other"],
    );
    assert_eq!(*seen.lock().unwrap(), vec![Some("Bearer other".to_owned())]);
    // The replay's own record keeps the placeholder, never the token.
    let store = Store::open_existing(&store_dir).unwrap();
    let new = Digest::from_hex(
        v["attempts"][0]["exchanges"][0]["interaction"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let i: Interaction = store.get(new).unwrap();
    assert!(i
        .request
        .headers
        .contains(&("authorization".into(), SECRET_PLACEHOLDER.into())));
    assert!(!format!("{i:?}").contains("other"));
}

#[test]
fn the_serve_command_prints_its_url_and_answers_there() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let a = record(dir.path(), demo::Faults::ALL, 4, 4, 60);
    let mut child = probe(dir.path())
        .args([
            "serve",
            &run_id(&a).to_string()[..12],
            "--store",
            dir.path().join("store").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // The reader lives until the server is stopped: a closed pipe would end it early.
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let read = reader.read_line(&mut line);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .map(str::to_owned);
    let answer = url.as_ref().map(|url| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let r = reqwest::get(format!("{url}/stats")).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    });
    // Stop the server this test started, then check.
    let _ = child.kill();
    let _ = child.wait();
    drop(reader);
    assert!(read.is_ok(), "{read:?}");
    assert!(url.is_some(), "the URL is printed: {line}");
    let (status, body) = answer.unwrap();
    assert_eq!(status, 200);
    assert!(
        body.starts_with("pets="),
        "the recorded text/plain answer: {body}"
    );
}

/// The lines of an events file, read into the documented types.
fn read_events(text: &str) -> Vec<probe::events::Record> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// `probe replay --events FILE` writes the replay as a campaign: `run_started` of kind
/// `replay` first (its own run, and the run it replays), one `interaction` per request sent
/// again, one `finding` per distinct finding of the replay's finding set, `run_ended` last;
/// the counts are those the command reports.
#[test]
fn replay_writes_the_event_stream_of_a_run() {
    use probe::events::{CampaignKind, RecordEvent};
    use probe::model::FindingSet;
    let dir = tempfile::tempdir().unwrap();
    let report = record(dir.path(), demo::Faults::ALL, 7, 4, 60);
    let recorded = report["run"]["id"].as_str().unwrap().to_owned();
    let faulty = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let events = dir.path().join("replay.ndjson");
    let (_, data) = replay(
        dir.path(),
        &recorded,
        &faulty.base_url(),
        &["--events", events.to_str().unwrap()],
    );
    let records = read_events(&std::fs::read_to_string(&events).unwrap());
    assert!(records.iter().all(|r| r.v == 1));
    let run = data["run"].as_str().unwrap();
    let sent: u64 = data["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["exchanges"].as_array().unwrap().len() as u64)
        .sum();
    assert!(sent > 0);
    let count =
        |pick: fn(&RecordEvent) -> bool| records.iter().filter(|r| pick(&r.event)).count() as u64;
    assert_eq!(
        count(|e| matches!(e, RecordEvent::Interaction { .. })),
        sent
    );
    let store = store_of(dir.path());
    let set_id = Digest::from_hex(data["finding_set"].as_str().unwrap()).unwrap();
    let set: FindingSet = store.get(set_id).unwrap();
    assert!(!set.findings.is_empty(), "the faulty build still fails");
    assert_eq!(
        count(|e| matches!(e, RecordEvent::Finding { .. })),
        set.findings.len() as u64
    );
    assert!(
        matches!(&records[0].event, RecordEvent::RunStarted {
            kind: CampaignKind::Replay, run: r, of: Some(of), ..
        } if r == run && *of == recorded),
        "{:?}",
        records[0]
    );
    assert!(
        matches!(&records[records.len() - 1].event, RecordEvent::RunEnded {
            kind: CampaignKind::Replay, run: r, interactions, findings, ..
        } if r == run && *interactions == sent && *findings == set.findings.len()),
        "{:?}",
        records.last()
    );
    // Every finding names an interaction the stream announced before it.
    let mut seen = BTreeSet::new();
    for r in &records {
        match &r.event {
            RecordEvent::Interaction { interaction, .. } => {
                seen.insert(interaction.clone());
            }
            RecordEvent::Finding { interaction, .. } => {
                assert!(seen.contains(interaction), "finding before its interaction")
            }
            _ => {}
        }
    }
}
