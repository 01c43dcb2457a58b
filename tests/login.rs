//! Identities that log in: a fixture API whose bearer tokens come from `POST /login` and
//! expire after a short lifetime. probe.toml describes the login; probe logs in before the
//! first request, again when a request is answered 401 (sending it once more, recording
//! only the second answer), or before the lifetime it was told is over. The run stays
//! authenticated, report.json counts the logins, and neither a token nor the password
//! appears in anything probe wrote.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::util::{code, files_under, probe, run, run_document, run_id};

const PASSWORD: &str = "wonderland-p4ss-2291";

const DOCUMENT: &str = r##"
openapi: 3.0.3
info: {title: things, version: "1"}
components:
  securitySchemes:
    bearerAuth: {type: http, scheme: bearer}
security: [{bearerAuth: []}]
paths:
  /things:
    get:
      operationId: listThings
      responses:
        "200":
          description: the things
          content:
            application/json:
              schema: {type: array, items: {type: object}}
        "401": {description: who are you}
    post:
      operationId: createThing
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string, minLength: 1, maxLength: 12}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: integer}
                  name: {type: string}
        "400": {description: bad thing}
        "401": {description: who are you}
  /things/{thingId}:
    get:
      operationId: getThing
      parameters:
        - {name: thingId, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: the thing
          content:
            application/json:
              schema: {type: object}
        "401": {description: who are you}
        "404": {description: no such thing}
"##;

#[derive(Clone)]
struct Tokens {
    lifetime: Duration,
    /// A thing that does not exist is answered 401, whatever the token (the fault of
    /// `valid_credentials_refused`).
    missing_is_401: bool,
    /// Every token issued, with when.
    issued: Arc<Mutex<Vec<(String, Instant)>>>,
    things: Arc<Mutex<Vec<String>>>,
}

impl Tokens {
    fn valid(&self, headers: &HeaderMap) -> bool {
        let Some(token) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return false;
        };
        self.issued
            .lock()
            .unwrap()
            .iter()
            .any(|(t, at)| t == token && at.elapsed() < self.lifetime)
    }
}

fn router(tokens: Tokens) -> Router {
    Router::new()
        .route(
            "/login",
            post(|State(t): State<Tokens>, Json(body): Json<Value>| async move {
                if body["user"] != "alice" || body["password"] != PASSWORD {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                let mut issued = t.issued.lock().unwrap();
                let salt = format!("{}-{:?}", issued.len(), Instant::now());
                let digest = probe::ids::Digest::of(salt.as_bytes()).to_string();
                let token = format!("tok-{}-{}", issued.len(), &digest[..16]);
                issued.push((token.clone(), Instant::now()));
                Json(json!({"access_token": token, "token_type": "bearer"})).into_response()
            }),
        )
        .route(
            "/things",
            get(|State(t): State<Tokens>, headers: HeaderMap| async move {
                if !t.valid(&headers) {
                    return (
                        StatusCode::UNAUTHORIZED,
                        Json(json!({"error": "token expired"})),
                    )
                        .into_response();
                }
                let names = t.things.lock().unwrap().clone();
                Json(json!(names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| json!({"id": i, "name": n}))
                    .collect::<Vec<_>>()))
                .into_response()
            })
            .post(
                |State(t): State<Tokens>, headers: HeaderMap, body: axum::body::Bytes| async move {
                    if !t.valid(&headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let name = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v["name"].as_str().map(str::to_owned))
                        .filter(|n| !n.is_empty() && n.chars().count() <= 12);
                    let Some(name) = name else {
                        return StatusCode::BAD_REQUEST.into_response();
                    };
                    let mut things = t.things.lock().unwrap();
                    things.push(name.clone());
                    (
                        StatusCode::CREATED,
                        Json(json!({"id": things.len() - 1, "name": name})),
                    )
                        .into_response()
                },
            ),
        )
        .route(
            "/things/{id}",
            get(
                |State(t): State<Tokens>, UrlPath(id): UrlPath<String>, headers: HeaderMap| async move {
                    if !t.valid(&headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let things = t.things.lock().unwrap();
                    match id.parse::<usize>().ok().and_then(|i| things.get(i)) {
                        Some(name) => Json(json!({"id": id, "name": name})).into_response(),
                        None if t.missing_is_401 => StatusCode::UNAUTHORIZED.into_response(),
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .with_state(tokens)
}

fn probe_toml(lifetime: Option<&str>) -> String {
    let lifetime = lifetime.map_or(String::new(), |l| format!("lifetime = \"{l}\"\n"));
    format!(
        r#"
[[identity]]
name = "alice"
[identity.login]
path = "/login"
json = {{ user = "alice", password = "{PASSWORD}" }}
token = "/access_token"
{lifetime}"#
    )
}

/// Runs against tokens that live `token_life`, with probe told `lifetime` (or not), for
/// `requests` at `rate`; checks that no request sent with a token was recorded answered
/// 401 (unless `missing_is_401`) and that nothing probe wrote holds a token or the
/// password. Returns the identity's entry of report.json, the number of tokens issued and
/// the report.
fn campaign(
    token_life: Duration,
    lifetime: Option<&str>,
    requests: u64,
    rate: &str,
    missing_is_401: bool,
) -> (Value, usize, Value) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml(lifetime)).unwrap();
    let tokens = Tokens {
        missing_is_401,
        lifetime: token_life,
        issued: Arc::new(Mutex::new(Vec::new())),
        things: Arc::new(Mutex::new(Vec::new())),
    };
    let (out, report) = run_document(
        router(tokens.clone()),
        &spec,
        dir.path(),
        3,
        2,
        requests,
        &["--rate-limit", rate, "--budget", "120s"],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));

    // Stayed authenticated: every 401 recorded answers a request sent on purpose without
    // (or with unknown) credentials.
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let mut answered = 0;
    for row in store.interactions_of(run_id(&report)).unwrap() {
        let i: probe::model::Interaction = store.get(row.id.0).unwrap();
        let case: probe::model::TestCase = store.get(i.case.0).unwrap();
        answered += 1;
        if i.outcome.status() == Some(401) {
            assert!(
                case.credentials.is_some() || missing_is_401,
                "a request sent with the token was recorded answered 401: {:?}",
                i.request
            );
        }
    }
    assert_eq!(answered, report["totals"]["requests"].as_u64().unwrap());

    // No token, no password in anything probe wrote (probe.toml is the user's).
    let issued: Vec<String> = tokens
        .issued
        .lock()
        .unwrap()
        .iter()
        .map(|(t, _)| t.clone())
        .collect();
    for path in files_under(dir.path()) {
        if path.file_name().is_some_and(|n| n == "probe.toml") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for secret in issued.iter().map(String::as_str).chain([PASSWORD]) {
            assert!(
                memchr::memmem::find(&bytes, secret.as_bytes()).is_none(),
                "{} holds `{secret}`",
                path.display()
            );
        }
    }
    (report["identities"][0].clone(), issued.len(), report)
}

#[test]
fn an_expired_token_is_renewed_on_401_and_the_request_sent_again() {
    // Tokens live 700 ms; a run of about 4 s at 100 requests a second.
    let (alice, issued, _) = campaign(Duration::from_millis(700), None, 400, "100", false);
    assert_eq!(alice["name"], "alice");
    assert_eq!(alice["kind"], "login");
    assert!(alice["logins"].as_u64().unwrap() >= 3, "{alice}");
    assert_eq!(alice["logins"].as_u64().unwrap(), issued as u64, "{alice}");
    assert!(alice["resent_after_401"].as_u64().unwrap() >= 2, "{alice}");
}

#[test]
fn a_60_second_run_stays_authenticated_by_renewing_before_the_lifetime_ends() {
    // Tokens live 3 s; probe renews every 2 s; 60 s at 30 requests a second.
    let (alice, issued, _) = campaign(Duration::from_secs(3), Some("2s"), 1800, "30", false);
    assert!(alice["logins"].as_u64().unwrap() >= 25, "{alice}");
    assert_eq!(alice["logins"].as_u64().unwrap(), issued as u64, "{alice}");
    assert_eq!(alice["resent_after_401"], 0, "{alice}");
}

#[test]
fn a_login_that_fails_stops_the_run_before_anything_is_sent_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(
        dir.path().join("probe.toml"),
        probe_toml(None).replace(PASSWORD, "wrong-password"),
    )
    .unwrap();
    let tokens = Tokens {
        missing_is_401: false,
        lifetime: Duration::from_secs(5),
        issued: Arc::new(Mutex::new(Vec::new())),
        things: Arc::new(Mutex::new(Vec::new())),
    };
    let fixture = probe::fixture::RunningFixture::start(router(tokens)).unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &fixture.base_url(),
        "--requests",
        "20",
    ]));
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("identity `alice`: the login POST /login was answered 401"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-password"), "{stderr}");
}

#[test]
fn a_401_a_fresh_token_does_not_change_is_asked_about_not_logged_in_for_again_and_again() {
    // Tokens that live long; a thing that does not exist is answered 401.
    let (alice, issued, report) = campaign(Duration::from_secs(600), None, 300, "200", true);
    // One login at the start, and one more for the first such 401: after that, a 401 of
    // getThing is what it answers, not a reason to log in.
    assert!(alice["logins"].as_u64().unwrap() <= 2, "{alice}");
    assert_eq!(alice["logins"].as_u64().unwrap(), issued as u64);
    let found = crate::util::findings_of(&report, "valid_credentials_refused");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["operation"], "getThing");
    assert_eq!(found[0]["code"], "F205");
}

/// A login API whose `/login` answers a token of `token_bytes` bytes (the first login), and
/// hangs every later login until `released`; `/things` answers `[]` to any bearer token.
fn long_token_router(token_bytes: usize, released: Arc<std::sync::atomic::AtomicBool>) -> Router {
    use std::sync::atomic::{AtomicU64, Ordering};
    let logins = Arc::new(AtomicU64::new(0));
    Router::new()
        .route(
            "/login",
            post(move || {
                let (logins, released) = (logins.clone(), released.clone());
                async move {
                    if logins.fetch_add(1, Ordering::Relaxed) > 0 {
                        // Bounded, so that the fixture stops even if the test fails first.
                        let until = Instant::now() + Duration::from_secs(90);
                        while !released.load(Ordering::Relaxed) && Instant::now() < until {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    // Letters and digits, so that every form of it is as long as it is.
                    let token: String = (0..token_bytes)
                        .map(|i| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[i * 7 % 36]))
                        .collect();
                    Json(json!({"access_token": token})).into_response()
                }
            }),
        )
        .route(
            "/things",
            get(|headers: HeaderMap| async move {
                if headers.contains_key(header::AUTHORIZATION) {
                    Json(json!([])).into_response()
                } else {
                    StatusCode::UNAUTHORIZED.into_response()
                }
            }),
        )
}

/// The peak resident memory of `cmd`'s process in MiB (`VmHWM`, read from `/proc` until
/// it ends), and its output.
#[cfg(target_os = "linux")]
fn peak_mib(cmd: &mut std::process::Command) -> (u64, std::process::Output) {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the probe binary runs");
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    while child.try_wait().expect("wait").is_none() {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("output");
    eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
    (peak_kib / 1024, out)
}

/// A token longer than `send.maxCredentialBytes` (64 KiB by default) is refused, naming the
/// identity, the login and the size: a 10 MB token took 7 GB before anything was sent.
#[test]
fn a_login_token_over_the_credential_cap_is_refused_naming_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml(None)).unwrap();
    let released = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let fixture =
        probe::fixture::RunningFixture::start(long_token_router(100_000, released)).unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &fixture.base_url(),
        "--requests",
        "20",
        "--include",
        "listThings",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains(
            "identity `alice`: the login POST /login answered a token of 100,000 bytes, \
             longer than the 65,536 bytes of setting `send.maxCredentialBytes`"
        ),
        "{stderr}"
    );
    // A credential given that long is refused before anything is sent.
    let bearer = "b".repeat(70_000);
    let out = run(probe(dir.path())
        .env("PROBE_BEARER", &bearer)
        .args(["run", "--spec", spec.to_str().unwrap()])
        .args(["--url", &fixture.base_url(), "--requests", "20"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains(
            "identity `default`: a credential of 70,000 bytes is longer than the 65,536 bytes \
             of setting `send.maxCredentialBytes`"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("bbbbbbbb"), "{stderr}");
}

/// A 900 KB token (within the default body cap; the credential cap raised for it) costs
/// less than 200 MB over 300 requests: it took 1.25-1.9 GB, the redactor's automaton
/// growing 2-4 KB per byte of the token.
#[cfg(target_os = "linux")]
#[test]
fn a_900_kb_login_token_costs_less_than_200_mb() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml(None)).unwrap();
    let released = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let fixture =
        probe::fixture::RunningFixture::start(long_token_router(900_000, released)).unwrap();
    let (peak, out) = peak_mib(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &fixture.base_url(),
        "--requests",
        "300",
        "--include",
        "listThings",
        "--store",
        "store",
        "--set",
        "send.maxCredentialBytes=1000000",
    ]));
    eprintln!("peak resident memory: {peak} MiB");
    assert!(code(&out) <= 1, "the run ran");
    assert!(peak < 200, "peak resident memory {peak} MiB");
}

/// A login again (the token's lifetime over) that never answers ends with the budget: the
/// requests waiting for it are recorded cancelled, and the run ends on time instead of
/// after `send.timeout`.
#[test]
fn a_login_again_that_hangs_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml(Some("1s"))).unwrap();
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fixture =
        probe::fixture::RunningFixture::start(long_token_router(32, released.clone())).unwrap();
    let started = Instant::now();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &fixture.base_url(),
        "--budget",
        "3s",
        "--rate-limit",
        "50",
        "--include",
        "listThings",
        "--store",
        "store",
        "--report",
        "report.json",
        "--set",
        "send.timeout=30s",
    ]));
    let took = started.elapsed();
    released.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(fixture);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(code(&out) <= 1, "answers before the login hung");
    let report = crate::util::read_json(&dir.path().join("report.json"));
    assert!(
        report["totals"]["transport"]["cancelled"].as_u64().unwrap() > 0,
        "{}",
        report["totals"]
    );
    assert_eq!(
        report["identities"][0]["logins"], 2,
        "{}",
        report["identities"]
    );
}
