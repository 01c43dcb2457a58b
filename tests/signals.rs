//! Ctrl-C and SIGTERM end a run the way a spent budget does: the requests in flight are
//! cancelled and recorded, the summary is printed, report.json and JUnit are written, the
//! run's outcome is `interrupted` and `probe report` takes it. A second Ctrl-C exits at
//! once, even when the first one's shutdown is stuck.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::{Json, Router};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use probe::fixture::RunningFixture;
use probe::model::{Interaction, Outcome, TransportErrorKind};
use probe::store::Store;
use serde_json::json;

use crate::util::{code, probe, read_json, run, run_id};

/// An API of two operations: `slow` answers after 200 ms, `hang` not before a minute, so
/// that requests are always in flight. `hits` counts the requests it got.
fn slow_api(hits: Arc<AtomicU64>) -> (String, Router) {
    let document = "openapi: 3.0.3\ninfo: {title: slow, version: \"1\"}\npaths:\n".to_owned()
        + "  /slow:\n    get:\n      operationId: slow\n      responses: {\"200\": {description: ok, content: {application/json: {schema: {type: object}}}}}\n"
        + "  /hang:\n    get:\n      operationId: hang\n      responses: {\"200\": {description: ok, content: {application/json: {schema: {type: object}}}}}\n";
    let count = move |hits: Arc<AtomicU64>| {
        hits.fetch_add(1, Ordering::SeqCst);
    };
    let (a, b) = (hits.clone(), hits);
    let router = Router::new()
        .route(
            "/slow",
            get(move || {
                count(a.clone());
                async {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Json(json!({}))
                }
            }),
        )
        .route(
            "/hang",
            get(move || {
                count(b.clone());
                async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Json(json!({}))
                }
            }),
        );
    (document, router)
}

/// Waits until `hits` reaches `n` (at most 30 s).
fn wait_for_hits(hits: &AtomicU64, n: u64) {
    let until = Instant::now() + Duration::from_secs(30);
    while hits.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < until, "the run never sent {n} requests");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits at most `within` for `child` to end; its output, or a panic naming the wait.
fn exits_within(mut child: Child, within: Duration, what: &str) -> std::process::Output {
    let until = Instant::now() + within;
    loop {
        if child.try_wait().expect("wait for probe").is_some() {
            let out = child.wait_with_output().expect("probe's output");
            eprintln!("--- stdout\n{}", String::from_utf8_lossy(&out.stdout));
            eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
            return out;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            panic!("probe did not exit within {within:?} {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `probe run` of `spec` against `url` with a budget of a minute, its output piped.
fn long_run(dir: &Path, spec: &Path, url: &str, extra: &[&str]) -> Command {
    let mut cmd = probe(dir);
    cmd.args(["run", "--spec"])
        .arg(spec)
        .args([
            "--url",
            url,
            "--budget",
            "60s",
            "--seed",
            "1",
            "--workers",
            "4",
        ])
        .args([
            "--store",
            "store",
            "--report",
            "report.json",
            "--junit",
            "junit.xml",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Sends `signal` to a run in the middle of its budget and checks that it ended as a spent
/// budget does, with the exit code `expected`.
fn a_signal_ends_the_run_with_its_account(signal: Signal, expected: i32) {
    let dir = tempfile::tempdir().unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let (document, router) = slow_api(hits.clone());
    let spec = dir.path().join("slow.yaml");
    std::fs::write(&spec, document).unwrap();
    let fixture = RunningFixture::start(router).unwrap();
    let child = long_run(dir.path(), &spec, &fixture.base_url(), &[])
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    wait_for_hits(&hits, 10);
    let sent = Instant::now();
    kill(pid, signal).unwrap();
    let out = exits_within(child, Duration::from_secs(10), &format!("after {signal}"));
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert_eq!(code(&out), expected, "{signal} has its exit code");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("probe run ") && stdout.contains("requests in"),
        "the summary is printed: {stdout}"
    );
    assert!(stderr.contains("interrupted"), "it says so: {stderr}");

    let report = read_json(&dir.path().join("report.json"));
    assert_eq!(report["run"]["outcome"], "interrupted");
    assert!(dir.path().join("junit.xml").is_file(), "JUnit is written");
    // The `hang` requests in flight were cancelled and recorded so.
    let store = Store::open_existing(&dir.path().join("store")).unwrap();
    let cancelled = store
        .interactions_of(run_id(&report))
        .unwrap()
        .iter()
        .filter(|row| {
            let interaction: Interaction = store.get(row.id.digest()).unwrap();
            matches!(
                interaction.outcome,
                Outcome::TransportError {
                    kind: TransportErrorKind::Cancelled,
                    ..
                }
            )
        })
        .count();
    assert!(
        cancelled > 0,
        "the requests in flight are recorded as cancelled"
    );
    drop(store);

    // The run has its end: `probe report` takes it.
    let id = report["run"]["id"].as_str().unwrap();
    let page = run(probe(dir.path())
        .args(["--store", "store", "report", id, "--html"])
        .arg(dir.path().join("page.html")));
    assert_eq!(code(&page), 0, "probe report takes an interrupted run");
    assert!(dir.path().join("page.html").is_file());
}

#[test]
fn ctrl_c_ends_a_run_with_its_summary_reports_and_outcome_interrupted() {
    a_signal_ends_the_run_with_its_account(Signal::SIGINT, 130);
}

#[test]
fn sigterm_ends_a_run_with_its_summary_reports_and_outcome_interrupted() {
    a_signal_ends_the_run_with_its_account(Signal::SIGTERM, 143);
}

/// The fast document's API, answering at once.
fn fast_api(hits: Arc<AtomicU64>) -> Router {
    let router = probe::fixture::fast::router(Duration::ZERO);
    router.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            hits.fetch_add(1, Ordering::SeqCst);
            next.run(request)
        },
    ))
}

#[test]
fn a_second_ctrl_c_exits_at_once_while_the_first_ones_shutdown_is_stuck() {
    let dir = tempfile::tempdir().unwrap();
    // The run's events go to a pipe nobody reads: once it is full, writing the events
    // (during the run, or at its end) waits for ever, and so does the first Ctrl-C's
    // shutdown.
    let fifo = dir.path().join("events.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Opened to read and write, so that probe's open does not wait for a reader.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let fixture = RunningFixture::start(fast_api(hits.clone())).unwrap();
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, probe::fixture::fast::DOCUMENT).unwrap();
    let events = fifo.to_str().unwrap().to_owned();
    let mut child = long_run(
        dir.path(),
        &spec,
        &fixture.base_url(),
        &["--events", &events],
    )
    .spawn()
    .unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    // Far more events than the pipe holds (each interaction's line is about 400 bytes),
    // or the run already waits for the pipe.
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = (0, Instant::now());
    loop {
        let now = hits.load(Ordering::SeqCst);
        if now >= 1000 || (now >= 100 && now == seen.0 && seen.1.elapsed() > Duration::from_secs(1))
        {
            break;
        }
        if now != seen.0 {
            seen = (now, Instant::now());
        }
        assert!(Instant::now() < until, "the run sent only {now} requests");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(pid, Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C's shutdown waits for the pipe"
    );
    let sent = Instant::now();
    kill(pid, Signal::SIGINT).unwrap();
    let out = exits_within(child, Duration::from_secs(3), "after a second Ctrl-C");
    assert!(sent.elapsed() < Duration::from_secs(3));
    assert_eq!(code(&out), 130);
}

#[test]
fn ctrl_c_ends_a_replay_recorded_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    // A run of the demo, then its replay against an API that never answers.
    let demo_api = RunningFixture::start(probe::fixture::demo::router(
        probe::fixture::demo::Faults::NONE,
    ))
    .unwrap();
    let (_, report) = crate::util::Campaign {
        spec: &crate::util::demo_spec(),
        url: &demo_api.base_url(),
        seed: 1,
        workers: 2,
        requests: 20,
    }
    .run(dir.path(), &[]);
    let hits = Arc::new(AtomicU64::new(0));
    let (_, router) = slow_api(hits.clone());
    let hanging = RunningFixture::start(router.fallback({
        let hits = hits.clone();
        move || {
            hits.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }
        }
    }))
    .unwrap();
    let id = report["run"]["id"].as_str().unwrap();
    let child = probe(dir.path())
        .args([
            "--store",
            "store",
            "replay",
            id,
            "--url",
            &hanging.base_url(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_hits(&hits, 1);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = exits_within(child, Duration::from_secs(10), "after SIGINT");
    assert_eq!(code(&out), 130);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(!out.stdout.is_empty(), "the replay's account is printed");
    let log = run(probe(dir.path()).args(["--store", "store", "log", "--json"]));
    let replay: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&log.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(replay["data"]["kind"], "replay", "{replay}");
    assert_eq!(replay["data"]["outcome"], "interrupted", "{replay}");
}
