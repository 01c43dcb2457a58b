//! Pace: slow operations cannot starve the others, an API that asks probe to wait is obeyed
//! (and not reported as faulty for asking), and a rate limit spaces requests.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use probe::fixture::RunningFixture;
use serde_json::{json, Value};

use crate::util::{code, probe, read_json, run, run_id};

/// Operations of the slow fixture: 17 that answer in a few milliseconds, two that take 2 s
/// and one that never answers (until the test releases it).
const FAST: usize = 17;
const SLOW: [&str; 3] = ["slowOne", "slowTwo", "hang"];

fn slow_document() -> String {
    let mut paths = String::new();
    for i in 0..FAST {
        paths.push_str(&format!(
            "  /fast{i}:\n    get:\n      operationId: fast{i}\n      responses: {{\"200\": {{description: ok, content: {{application/json: {{schema: {{type: object}}}}}}}}}}\n"
        ));
    }
    for name in SLOW {
        paths.push_str(&format!(
            "  /{name}:\n    get:\n      operationId: {name}\n      responses: {{\"200\": {{description: ok, content: {{application/json: {{schema: {{type: object}}}}}}}}}}\n"
        ));
    }
    format!("openapi: 3.0.3\ninfo: {{title: slow, version: \"1\"}}\npaths:\n{paths}")
}

fn slow_router(release: tokio::sync::watch::Receiver<bool>) -> Router {
    let mut router = Router::new();
    for i in 0..FAST {
        router = router.route(
            &format!("/fast{i}"),
            get(|| async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Json(json!({}))
            }),
        );
    }
    for name in ["slowOne", "slowTwo"] {
        router = router.route(
            &format!("/{name}"),
            get(|| async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Json(json!({}))
            }),
        );
    }
    router.route(
        "/hang",
        get(move || {
            let mut release = release.clone();
            async move {
                // Never answers while the run lasts; bounded so that no test can hang.
                let _ =
                    tokio::time::timeout(Duration::from_secs(60), release.wait_for(|r| *r)).await;
                Json(json!({}))
            }
        }),
    )
}

/// One 10 s run of the slow fixture; `exclude` leaves operations out.
fn ten_seconds(dir: &std::path::Path, url: &str, exclude: &[&str]) -> (String, Value) {
    let spec = dir.join("slow.yaml");
    std::fs::write(&spec, slow_document()).unwrap();
    let report = dir.join(format!("report-{}.json", exclude.len()));
    let mut cmd = probe(dir);
    cmd.args(["run", "--spec"])
        .arg(&spec)
        .args([
            "--url",
            url,
            "--seed",
            "1",
            "--workers",
            "4",
            "--budget",
            "10s",
        ])
        .args(["--store", "store", "--report"])
        .arg(&report);
    for op in exclude {
        cmd.args(["--exclude", op]);
    }
    let out = run(&mut cmd);
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        read_json(&report),
    )
}

fn requests_of<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == name)
}

fn fast_requests(report: &Value) -> u64 {
    (0..FAST)
        .map(|i| {
            requests_of(report, &format!("fast{i}")).map_or(0, |o| o["requests"].as_u64().unwrap())
        })
        .sum()
}

/// Three slow operations of twenty (2 s each, or no answer at all) do not starve the
/// seventeen fast ones: in a 10 s run these get at least 80% of the requests they get with
/// the slow three left out, and the slow three still get their turns.
#[test]
fn slow_operations_do_not_starve_the_fast_ones() {
    let (release_tx, release_rx) = tokio::sync::watch::channel(false);
    let fixture = RunningFixture::start(slow_router(release_rx)).expect("fixture starts");
    let url = fixture.base_url();
    let dir = tempfile::tempdir().unwrap();
    let (stdout, with_slow) = ten_seconds(dir.path(), &url, &[]);
    let (_, without_slow) = ten_seconds(dir.path(), &url, &SLOW);
    let _ = release_tx.send(true);
    drop(fixture);

    let (with, without) = (fast_requests(&with_slow), fast_requests(&without_slow));
    eprintln!("fast requests: {with} beside the slow three, {without} without them");
    assert!(
        with as f64 >= 0.8 * without as f64,
        "{with} fast requests beside the slow operations, {without} without them"
    );
    for name in SLOW {
        let op = requests_of(&with_slow, name).expect("every slow operation was sent");
        assert!(op["requests"].as_u64().unwrap() >= 1, "{op}");
        assert!(op["slow_lane_requests"].as_u64().unwrap() >= 1, "{op}");
    }
    let slow_one = requests_of(&with_slow, "slowOne").unwrap();
    assert!(
        slow_one["slowest_ms"].as_u64().unwrap() >= 1900,
        "{slow_one}"
    );
    assert!(stdout.contains("held back: "), "{stdout}");
    assert!(stdout.contains("slowOne (slowest 2."), "{stdout}");
    // A fast operation never went to the slow lane.
    assert_eq!(
        requests_of(&with_slow, "fast0").unwrap()["slow_lane_requests"],
        0
    );
}

const LIMITED_DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: limited, version: "1"}
paths:
  /limited:
    get:
      operationId: limited
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
  /busy:
    get:
      operationId: busy
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
  /open:
    get:
      operationId: open
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
"#;

/// An answer 429 (or 503 with `Retry-After`) pauses its operation for the time asked, is
/// counted as such, and is judged by no oracle: neither status is declared, yet neither
/// operation has a finding. The other operation goes on at full speed.
#[test]
fn an_api_that_asks_to_wait_is_obeyed_not_reported() {
    let router = Router::new()
        .route(
            "/limited",
            get(|| async {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, "1")],
                    "slow down",
                )
            }),
        )
        .route(
            "/busy",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "1")],
                    "busy",
                )
                    .into_response()
            }),
        )
        .route("/open", get(|| async { Json(json!({})) }));
    let fixture = RunningFixture::start(router).expect("fixture starts");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("limited.yaml");
    std::fs::write(&spec, LIMITED_DOCUMENT).unwrap();
    let report_path = dir.path().join("report.json");
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args([
            "--url",
            &fixture.base_url(),
            "--seed",
            "2",
            "--budget",
            "3s",
            // Series would add their OPTIONS requests to the operations' counts.
            "--set",
            "series.enabled=false",
        ])
        .args(["--store", "store", "--report"])
        .arg(&report_path));
    assert_eq!(code(&out), 0, "no finding: asking to wait is no fault");
    let report = read_json(&report_path);
    let open = requests_of(&report, "open").unwrap()["requests"]
        .as_u64()
        .unwrap();
    for name in ["limited", "busy"] {
        let op = requests_of(&report, name).unwrap();
        let requests = op["requests"].as_u64().unwrap();
        assert!(op["throttled"].as_u64().unwrap() >= 1, "{op}");
        assert_eq!(op["throttled"].as_u64().unwrap(), requests, "{op}");
        // Paused for a second after each answer: a handful in 3 s, not hundreds.
        assert!(requests <= 16, "{name}: {requests} requests in 3 s");
        assert!(open > 20 * requests, "open: {open}, {name}: {requests}");
    }
    assert_eq!(report["totals"]["findings"], 0);
}

/// `--rate-limit` spaces the run's requests: 15 requests at 20 per second span at least
/// 14 intervals of 50 ms, by the times the store recorded.
#[test]
fn a_rate_limit_spaces_requests() {
    let router = Router::new().route("/open", get(|| async { Json(json!({})) }));
    let fixture = RunningFixture::start(router).expect("fixture starts");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("open.yaml");
    std::fs::write(&spec, LIMITED_DOCUMENT).unwrap();
    let report_path = dir.path().join("report.json");
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args([
            "--url",
            &fixture.base_url(),
            "--requests",
            "15",
            "--workers",
            "4",
        ])
        .args(["--rate-limit", "20/s", "--include", "open"])
        .args(["--store", "store", "--report"])
        .arg(&report_path));
    assert!(matches!(code(&out), 0 | 1));
    let report = read_json(&report_path);
    assert_eq!(report["run"]["settings"]["send.rateLimit"], "20");
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let mut starts: Vec<u64> = store
        .interactions_of(run_id(&report))
        .unwrap()
        .iter()
        .map(|row| {
            let interaction: probe::model::Interaction = store.get(row.id.0).unwrap();
            interaction.timing.started_ms
        })
        .collect();
    starts.sort_unstable();
    assert_eq!(starts.len(), 15);
    let span = starts[14] - starts[0];
    assert!(
        span >= 14 * 50 - 20,
        "15 requests within {span} ms at 20 per second"
    );
}

/// The budget is a hard end while requests wait for their rate-limit slots: at two requests
/// a minute, a 2 s budget ends the run in about 2 s (it took 30 s, the second slot), and the
/// requests still waiting are recorded as cancelled.
#[test]
fn the_budget_ends_a_run_whose_requests_wait_for_rate_limit_slots() {
    let router = Router::new().route("/open", get(|| async { Json(json!({})) }));
    let fixture = RunningFixture::start(router).expect("fixture starts");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("open.yaml");
    std::fs::write(&spec, LIMITED_DOCUMENT).unwrap();
    let report_path = dir.path().join("report.json");
    let started = std::time::Instant::now();
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--budget", "2s"])
        .args(["--rate-limit", "2/m", "--include", "open"])
        .args(["--store", "store", "--report"])
        .arg(&report_path));
    let took = started.elapsed();
    assert!(matches!(code(&out), 0 | 1), "exit {}", code(&out));
    assert!(
        took < std::time::Duration::from_secs(15),
        "the run took {took:?} on a 2 s budget"
    );
    let report = read_json(&report_path);
    assert_eq!(report["run"]["outcome"], "completed", "{}", report["run"]);
    assert!(
        report["totals"]["transport"]["cancelled"].as_u64() >= Some(1),
        "the requests waiting for a slot are recorded as cancelled: {}",
        report["totals"]
    );
}

/// A rate no request could keep to, or one so slow it overflows the clock, is refused when
/// given, naming the option (`--rate-limit 1e-308` panicked; `0.0001` never ended).
#[test]
fn rates_out_of_bounds_are_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("open.yaml");
    std::fs::write(&spec, LIMITED_DOCUMENT).unwrap();
    for rate in ["1e-308", "0.0001", "1e12", "inf"] {
        let out = run(probe(dir.path())
            .args(["run", "--spec"])
            .arg(&spec)
            .args(["--url", "http://127.0.0.1:1", "--budget", "2s"])
            .args(["--rate-limit", rate, "--store", "store"]));
        assert_eq!(code(&out), 2, "--rate-limit {rate}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("send.rateLimit") || err.contains("--rate-limit"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
