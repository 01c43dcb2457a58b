//! What the checks a user writes cost (docs/checks.md), side by side in one process:
//! - `probe run` against the fast fixture server with no check and with ten declarative
//!   checks, each judging every exchange: the send rates and their ratio (goal ≥ 0.9);
//! - `probe recheck` of the run without checks and with the ten: interactions judged per
//!   second and their ratio (goal ≥ 0.5);
//! - with `--program`: a trivial program check in Python (reads each exchange, answers
//!   `holds`) in a recheck, exchanges per second (goal ≥ 20,000), when program checks can
//!   be declared.
//!
//! Run with `cargo bench --bench checks` (`-- --quick` for short runs). Each figure is the
//! median of several repetitions, each of which measures the two sides one after the
//! other; the ratio printed is the median of the repetitions' own ratios, with their
//! range (figures vary by 10-50% on a shared machine: docs/design-notes.md).

use std::path::Path;
use std::time::Instant;

use probe::fixture::{fast, RunningFixture};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORKERS: usize = 16;

/// Ten checks a team might write, each admitting every exchange of the fast fixture's one
/// operation (`GET /items/{id}`, answered `{"id":…,"name":…}`), so each judges them all.
const TEN_CHECKS: &str = r#"
[[check]]
name = "json-answers"
expect = "response.media_type == 'application/json'"

[[check]]
name = "item-id"
statuses = ["2XX"]
expect = "response.body.id == request.path_params.id"
message = "asked for {request.path_params.id}, answered {response.body.id}"

[[check]]
name = "named"
statuses = ["2XX"]
expect = "has(response.body.name) && size(response.body.name) > 0"

[[check]]
name = "no-password"
expect = "response.body == null || !has_key(response.body, 'password')"

[[check]]
name = "no-card-numbers"
when = "response.text != null"
expect = "!response.text.matches(r'\\b[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}\\b')"

[[check]]
name = "no-server-header"
expect = "header(response, 'server') == null || !header(response, 'server').contains('/')"

[[check]]
name = "fast-enough"
expect = "response.time_ms < 5000.0"

[[check]]
name = "not-5xx"
expect = "response.status < 500"

[[check]]
name = "reads-are-gets"
when = "request.method == 'GET'"
expect = "request.body == null"

[[check]]
name = "pointer"
statuses = ["2XX"]
expect = "pointer(response.body, '/id') != null"
"#;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)))
}

/// Runs the `probe` command line in this process; its exit code, standard output and
/// seconds.
fn probe(args: &[&str]) -> (u8, String, f64) {
    let cli = <probe::cli::Cli as clap::Parser>::try_parse_from(
        std::iter::once("probe").chain(args.iter().copied()),
    )
    .expect("arguments parse");
    let mut out = Vec::new();
    let mut err = Vec::new();
    let t0 = Instant::now();
    let code = probe::app::run(cli, &mut out, &mut err).expect("probe succeeds");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        code <= 1,
        "probe {args:?} exit code {code}: {}",
        String::from_utf8_lossy(&err)
    );
    (code, String::from_utf8_lossy(&out).into_owned(), secs)
}

/// One `probe run` of `requests` requests; its send rate and the run's id.
fn run(
    base: &str,
    store: &Path,
    spec: &Path,
    requests: u64,
    seed: u64,
    checks: Option<&Path>,
) -> (f64, String) {
    let requests_text = requests.to_string();
    let seed_text = seed.to_string();
    let workers = WORKERS.to_string();
    let mut args = vec![
        "--no-progress",
        "--store",
        store.to_str().expect("utf-8 path"),
        "run",
        "--spec",
        spec.to_str().expect("utf-8 path"),
        "--url",
        base,
        "--requests",
        &requests_text,
        "--workers",
        &workers,
        "--seed",
        &seed_text,
    ];
    if let Some(file) = checks {
        args.extend(["--checks", file.to_str().expect("utf-8 path")]);
    }
    let report = store.with_extension(format!("report-{seed}.json"));
    args.extend(["--report", report.to_str().expect("utf-8 path")]);
    let (_, _, secs) = probe(&args);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report written"))
            .expect("report.json parses");
    let run = report["run"]["id"]
        .as_str()
        .expect("report.json names its run")
        .to_string();
    (requests as f64 / secs, run)
}

/// One `probe recheck` of `run`; interactions judged per second.
fn recheck(store: &Path, run: &str, interactions: u64, checks: Option<&Path>) -> f64 {
    let mut args = vec![
        "--no-progress",
        "--store",
        store.to_str().expect("utf-8 path"),
        "recheck",
        run,
        "--threads",
        "2",
    ];
    if let Some(file) = checks {
        args.extend(["--checks", file.to_str().expect("utf-8 path")]);
    }
    let (_, _, secs) = probe(&args);
    interactions as f64 / secs
}

fn main() {
    probe::app::process::disable_transparent_huge_pages();
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 1 } else { 5 };
    let requests: u64 = if quick { 5_000 } else { 40_000 };
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, fast::DOCUMENT).expect("write spec");
    let checks = dir.path().join("ten.toml");
    std::fs::write(&checks, TEN_CHECKS).expect("write checks");
    let fixture =
        RunningFixture::start(fast::router(std::time::Duration::ZERO)).expect("fixture starts");
    let base = fixture.base_url();
    let store = dir.path().join("store");
    // The store's first run trains its dictionaries: untimed, as in a user's store.
    let (_, warm) = run(&base, &store, &spec, 2_000, 1, Some(&checks));
    println!("probe checks benchmark: {WORKERS} in flight, {reps} repetitions, {requests} requests a run, medians");

    let (mut without, mut with, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_run = warm;
    for rep in 0..reps {
        let seed = 100 + rep as u64;
        let (a, run_a) = run(&base, &store, &spec, requests, seed, None);
        let (b, _) = run(&base, &store, &spec, requests, seed + 50, Some(&checks));
        println!(
            "  run pair {rep}: without {a:.0} req/s, with ten checks {b:.0} req/s, ratio {:.2}",
            b / a
        );
        without.push(a);
        with.push(b);
        ratios.push(b / a);
        last_run = run_a;
    }
    let (lo, hi) = range(&ratios);
    println!(
        "run: without checks {:.0} req/s, with ten checks {:.0} req/s; ratio {:.2} (pairs {lo:.2}-{hi:.2}; goal >= 0.90)",
        median(without),
        median(with),
        median(ratios)
    );

    let (mut without, mut with, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let a = recheck(&store, &last_run, requests, None);
        let b = recheck(&store, &last_run, requests, Some(&checks));
        println!(
            "  recheck pair {rep}: without {a:.0}/s, with ten checks {b:.0}/s, ratio {:.2}",
            b / a
        );
        without.push(a);
        with.push(b);
        ratios.push(b / a);
    }
    let (lo, hi) = range(&ratios);
    println!(
        "recheck of a {requests}-interaction run, 2 threads: without checks {:.0} interactions/s, with ten checks {:.0}/s; ratio {:.2} (pairs {lo:.2}-{hi:.2}; goal >= 0.50)",
        median(without),
        median(with),
        median(ratios)
    );
}
