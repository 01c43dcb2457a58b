//! A run in CI, where nobody watches a terminal: a heartbeat line shows it is alive, an
//! output path that cannot be written stops it before anything is sent, an API that wants
//! credentials ends it after the opening lap, a base path missing from `--url` gets a
//! hint, and `--max-findings` stops it once it has found enough.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::Router;
use probe::fixture::{demo, RunningFixture};

use crate::util::{code, demo_spec, probe, run, Campaign};

/// A router that counts the requests it gets before `inner` answers them.
fn counted(inner: Router, hits: Arc<AtomicU64>) -> Router {
    inner.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            hits.fetch_add(1, Ordering::SeqCst);
            next.run(request)
        },
    ))
}

#[test]
fn without_a_terminal_a_heartbeat_line_says_the_run_is_alive() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        RunningFixture::start(probe::fixture::fast::router(Duration::from_millis(5))).unwrap();
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, probe::fixture::fast::DOCUMENT).unwrap();
    let out = run(probe(dir.path())
        .env("PROBE_HEARTBEAT", "1s")
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--budget", "3500ms"])
        .args(["--seed", "1", "--store", "store"]));
    assert!(matches!(code(&out), 0 | 1), "the run ended");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let beats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("probe: 0:00:0") && l.contains(" requests · 2xx "))
        .collect();
    assert!(
        beats.len() >= 2,
        "a line a second on a piped standard error: {stderr}"
    );
    assert!(
        beats[0].contains(" · 4xx 0 · 5xx 0 · no answer 0 · "),
        "answers by class: {}",
        beats[0]
    );
}

#[test]
fn an_output_path_in_a_missing_directory_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let fixture =
        RunningFixture::start(counted(demo::router(demo::Faults::NONE), hits.clone())).unwrap();
    let missing = dir.path().join("missing");
    for option in [
        "--report",
        "--junit",
        "--report-sarif",
        "--summary-md",
        "--events",
    ] {
        let path = missing.join("out.file");
        let started = Instant::now();
        let out = run(probe(dir.path())
            .args(["run", "--spec"])
            .arg(demo_spec())
            .args(["--url", &fixture.base_url(), "--budget", "30s"])
            .args(["--store", "store", option])
            .arg(&path));
        assert_eq!(code(&out), 2, "{option}: a usage error");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(option) && stderr.contains(&*path.to_string_lossy()),
            "{option}: the message names the option and the path: {stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was sent");
}

#[test]
fn an_api_that_refuses_the_whole_opening_lap_for_credentials_ends_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let router = Router::new().fallback(|| async { StatusCode::UNAUTHORIZED });
    let fixture = RunningFixture::start(router).unwrap();
    let started = Instant::now();
    let (out, report) = Campaign {
        spec: &demo_spec(),
        url: &fixture.base_url(),
        seed: 1,
        workers: 2,
        requests: 3000,
    }
    .run(dir.path(), &[]);
    assert_eq!(code(&out), 5);
    assert_eq!(report["run"]["outcome"], "refused");
    let requests = report["totals"]["requests"].as_u64().unwrap();
    assert!(
        requests <= 10,
        "the opening lap and no more: {requests} requests"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused every request of the opening lap for credentials")
            && stderr.contains("--bearer"),
        "{stderr}"
    );
}

#[test]
fn when_most_answers_are_404_a_hint_says_to_check_the_base_path_in_url() {
    let dir = tempfile::tempdir().unwrap();
    // The pet shop served under /v1, and --url without it.
    let fixture =
        RunningFixture::start(Router::new().nest("/v1", demo::router(demo::Faults::NONE))).unwrap();
    let (out, _) = Campaign {
        spec: &demo_spec(),
        url: &fixture.base_url(),
        seed: 1,
        workers: 2,
        requests: 40,
    }
    .run(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("answers were 404 Not Found: check the base path in --url"),
        "{stderr}"
    );

    // A correct base URL gets no such hint.
    let (out, _) = Campaign {
        spec: &demo_spec(),
        url: &format!("{}/v1", fixture.base_url()),
        seed: 1,
        workers: 2,
        requests: 40,
    }
    .run(dir.path(), &[]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("404 Not Found"));
}

#[test]
fn max_findings_stops_the_run_early_with_its_report_written() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let (out, report) = Campaign {
        spec: &demo_spec(),
        url: &fixture.base_url(),
        seed: 7,
        workers: 2,
        requests: 5000,
    }
    .run(dir.path(), &["--max-findings", "2"]);
    assert_eq!(code(&out), 1, "findings, as a run that ends its budget");
    assert_eq!(report["run"]["outcome"], "completed");
    let findings = report["totals"]["findings"].as_u64().unwrap();
    let requests = report["totals"]["requests"].as_u64().unwrap();
    assert!(findings >= 2, "{findings} findings");
    assert!(requests < 1000, "stopped early: {requests} requests");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped early") && stderr.contains("--max-findings 2"),
        "{stderr}"
    );
}

/// An output path this user may not write (here a kernel file even root may not open for
/// writing) is refused before anything is sent, not after the whole budget.
#[cfg(target_os = "linux")]
#[test]
fn an_output_path_that_cannot_be_written_is_refused_before_anything_is_sent() {
    let unwritable = std::path::Path::new("/sys/kernel/notes");
    let writable = std::fs::OpenOptions::new().write(true).open(unwritable);
    if !unwritable.is_file() || writable.is_ok() {
        // Only on a machine without sysfs (every CI runner here has it).
        eprintln!(
            "not tested: {} is not a file nobody may write",
            unwritable.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let fixture =
        RunningFixture::start(counted(demo::router(demo::Faults::NONE), hits.clone())).unwrap();
    for option in ["--report", "--junit", "--report-sarif", "--summary-md"] {
        let out = run(probe(dir.path())
            .args(["run", "--spec"])
            .arg(demo_spec())
            .args(["--url", &fixture.base_url(), "--budget", "30s"])
            .args(["--store", "store", option])
            .arg(unwritable));
        assert_eq!(code(&out), 2, "{option}: a usage error");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(option) && stderr.contains("cannot be written"),
            "{stderr}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was sent");
}
