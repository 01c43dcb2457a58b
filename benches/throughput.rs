//! Send-rate benchmark: `probe run` against a bare reqwest loop, side by side in one
//! process, against the same local fixture server with the same concurrency.
//!
//! Run with `cargo bench --bench throughput` (add `-- --quick` for a short run). It prints
//! the rates and their ratio for a fast server (answers at once) and a slow one (each
//! answer takes 2 ms). Goals (issue 5): ratio ≥ 0.5 against the fast server, ≥ 0.9 against
//! the slow one. Runs are long enough (several seconds) that a run's start and end (loading
//! the document, writing the report) weigh little beside its sending. Each probe run
//! records into one store that an untimed first run has warmed (dictionaries trained), as
//! a user's store is, and with a seed of its own, so that its random test cases are new to
//! the store, as those of a user's run with its random default seed are. The figures vary
//! by 10-50% between runs on a shared machine (docs/design-notes.md, Measured ceilings), so each is the
//! median of five repetitions. Each repetition runs the two loops one after the other; the
//! ratio printed is the median of the repetitions' own ratios, with their range, and each
//! line of pairs says how much CPU time the hypervisor took from the machine while it ran
//! (steal).
//!
//! For a profiler: `-- --profile N` runs only probe, N requests against the fast server
//! (`PROBE_BENCH_DELAY_MS=2` for the slow one; `PROBE_BENCH_STORE=DIR` to keep the store;
//! `PROBE_BENCH_SEED=N` for a seed other than the warm-up's, whose cases are then new),
//! and lists the store's files and sizes afterwards; with `--bare` as well, the bare loop
//! instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use probe::fixture::{fast, measure, RunningFixture};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORKERS: usize = 16;
/// The seed of the untimed first run that warms a store (and of `--profile` runs, unless
/// `PROBE_BENCH_SEED` names another).
const WARM_UP_SEED: u64 = 1;

fn bare_loop(base: &str, requests: u64) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let t0 = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..WORKERS {
            let client = client.clone();
            let next = next.clone();
            let base = base.to_owned();
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= requests {
                        break;
                    }
                    // Count answers only: a loop that counted failures would flatter itself.
                    match client
                        .get(format!("{base}/items/{}", i % 1000 + 1))
                        .send()
                        .await
                    {
                        Ok(r) if r.status().is_success() => {
                            let _ = r.bytes().await;
                        }
                        other => panic!("the bare loop got no answer: {other:?}"),
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        requests as f64 / t0.elapsed().as_secs_f64()
    })
}

/// One `probe run` of `requests` requests with `seed`, into `store`; its send rate.
fn probe_run(
    base: &str,
    requests: u64,
    store: &std::path::Path,
    spec: &std::path::Path,
    seed: u64,
) -> f64 {
    let args = [
        "probe",
        "--no-progress",
        "--store",
        store.to_str().expect("utf-8 path"),
        "run",
        "--spec",
        spec.to_str().expect("utf-8 path"),
        "--url",
        base,
        "--requests",
        &requests.to_string(),
        "--workers",
        &WORKERS.to_string(),
        "--seed",
        &seed.to_string(),
    ];
    let cli = <probe::cli::Cli as clap::Parser>::try_parse_from(args).expect("arguments parse");
    let mut out = Vec::new();
    let mut err = Vec::new();
    let t0 = Instant::now();
    let code = probe::app::run(cli, &mut out, &mut err).expect("probe run succeeds");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        code <= 1,
        "probe run exit code {code}: {}",
        String::from_utf8_lossy(&err)
    );
    requests as f64 / secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

fn main() {
    // As the `probe` binary does first (the bare loop runs under the same setting).
    probe::app::process::disable_transparent_huge_pages();
    let quick = std::env::args().any(|a| a == "--quick");
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, fast::DOCUMENT).expect("write spec");
    // `--profile N`: only probe against the fast server, N requests, for a profiler to watch.
    if let Some(n) = std::env::args()
        .skip_while(|a| a != "--profile")
        .nth(1)
        .and_then(|n| n.parse::<u64>().ok())
    {
        let delay = std::env::var("PROBE_BENCH_DELAY_MS")
            .ok()
            .and_then(|d| d.parse().ok())
            .map_or(Duration::ZERO, Duration::from_millis);
        let fixture = RunningFixture::start(fast::router(delay)).expect("fixture starts");
        let store = std::env::var_os("PROBE_BENCH_STORE").map_or_else(
            || dir.path().join("store-profile"),
            std::path::PathBuf::from,
        );
        let stolen = |then| {
            stolen_since(then).map_or(String::new(), |s| format!(", {:.0}% stolen", s * 100.0))
        };
        if std::env::args().any(|a| a == "--bare") {
            let (cpu_before, ticks) = (process_cpu(), measure::machine_ticks());
            let rate = bare_loop(&fixture.base_url(), n);
            let cpu_us = cpu_us_per_request(cpu_before, n);
            println!(
                "bare loop {n} requests: {rate:.0} req/s, {cpu_us:.1} µs of CPU per request{}",
                stolen(ticks)
            );
            return;
        }
        probe_run(&fixture.base_url(), 2_000, &store, &spec, WARM_UP_SEED);
        let (cpu_before, ticks) = (process_cpu(), measure::machine_ticks());
        let seed = std::env::var("PROBE_BENCH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(WARM_UP_SEED);
        let rate = probe_run(&fixture.base_url(), n, &store, &spec, seed);
        // CPU per request (client and fixture server together) varies far less between
        // runs than the rate does on a shared machine: the figure to compare changes by.
        let cpu_us = cpu_us_per_request(cpu_before, n);
        println!(
            "probe run {n} requests: {rate:.0} req/s, {cpu_us:.1} µs of CPU per request{}",
            stolen(ticks)
        );
        let mut files: Vec<_> = walk(&store);
        files.sort();
        for (path, len) in files {
            println!("  {len:>12} {}", path.display());
        }
        return;
    }
    let reps = if quick { 1 } else { 5 };
    println!("probe throughput benchmark: {WORKERS} in flight, {reps} repetitions, medians");
    for (label, delay, requests) in [
        (
            "fast server",
            Duration::ZERO,
            if quick { 5_000 } else { 100_000 },
        ),
        (
            "slow server (2 ms)",
            Duration::from_millis(2),
            if quick { 2_000 } else { 30_000 },
        ),
    ] {
        let fixture = RunningFixture::start(fast::router(delay)).expect("fixture starts");
        let base = fixture.base_url();
        let mut bare = Vec::new();
        let mut probe = Vec::new();
        // One store, as a user keeps one: its first run trains the zstd dictionaries
        // (once per store), so an untimed warm-up run does that before the timed ones.
        let store = dir.path().join(format!("store-{}", delay.as_millis()));
        probe_run(&base, 2_000, &store, &spec, WARM_UP_SEED);
        let (mut bare_cpu, mut probe_cpu) = (Vec::new(), Vec::new());
        let ticks = measure::machine_ticks();
        for rep in 0..reps {
            let (cpu, pair_ticks) = (process_cpu(), measure::machine_ticks());
            bare.push(bare_loop(&base, requests));
            bare_cpu.push(cpu_us_per_request(cpu, requests));
            let cpu = process_cpu();
            // A seed of its own for every run, as a user's runs have (the default seed is
            // random): its random test cases are new to the store, and recording them is
            // part of what a run costs. (With the warm-up's seed every run found its cases
            // stored and skipped them: 8-9 µs less per request against the fast server.)
            probe.push(probe_run(
                &base,
                requests,
                &store,
                &spec,
                WARM_UP_SEED + 1 + rep as u64,
            ));
            probe_cpu.push(cpu_us_per_request(cpu, requests));
            if !quick {
                // Each pair as it ran, so that one pair measured beside a busy neighbour
                // can be told from the rest.
                println!(
                    "{:<20} pair {}: bare {:>6.0} req/s {:>5.1} µs · probe {:>6.0} req/s {:>5.1} µs{}",
                    "",
                    rep + 1,
                    bare[rep],
                    bare_cpu[rep],
                    probe[rep],
                    probe_cpu[rep],
                    stolen_since(pair_ticks)
                        .map_or(String::new(), |s| format!(" · {:.0}% stolen", s * 100.0))
                );
            }
        }
        let stolen = stolen_since(ticks);
        // The ratio of each repetition's two loops, run one after the other: a machine whose
        // speed drifts over the minutes of a bench moves both loops of a pair alike, and
        // their ratio less than the ratio of the medians.
        let mut ratios: Vec<f64> = probe.iter().zip(&bare).map(|(p, b)| p / b).collect();
        ratios.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        let (b, p) = (median(bare), median(probe));
        println!(
            "{label:<20} bare reqwest {b:>8.0} req/s · probe run (recorded, judged) {p:>8.0} req/s · ratio {:.2} (pairs {:.2}-{:.2})",
            median(ratios.clone()),
            ratios[0],
            ratios[ratios.len() - 1]
        );
        // CPU per request (client and fixture server together) tells whether a gap is work
        // or waiting: rate × CPU per request ÷ 2 cores is how busy the machine was.
        println!(
            "{:<20} CPU per request: bare {:.1} µs · probe {:.1} µs",
            "",
            median(bare_cpu),
            median(probe_cpu)
        );
        // A shared virtual machine's neighbours take CPU time from it (steal): above a few
        // percent, the rates, and so their ratio, move with the neighbours' load.
        if let Some(stolen) = stolen {
            println!(
                "{:<20} CPU time stolen by the hypervisor meanwhile: {:.0}%{}",
                "",
                stolen * 100.0,
                if stolen > 0.05 {
                    " (the machine was shared: compare runs with little steal)"
                } else {
                    ""
                }
            );
        }
    }
}

/// CPU time this process has used so far (user and system); zero where it cannot be read.
fn process_cpu() -> Duration {
    measure::cpu_time("/proc/self/stat").unwrap_or_default()
}

/// The share of the machine's CPU time the hypervisor stole since `then`, where both ends
/// can be read.
fn stolen_since(then: Option<measure::MachineTicks>) -> Option<f64> {
    measure::machine_ticks()
        .zip(then)
        .map(|(now, then)| now.steal_since(&then))
}

/// CPU µs per request since `before`, over `requests` requests.
fn cpu_us_per_request(before: Duration, requests: u64) -> f64 {
    (process_cpu().saturating_sub(before)).as_secs_f64() * 1e6 / requests as f64
}

fn walk(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if let Ok(meta) = entry.metadata() {
            out.push((path, meta.len()));
        }
    }
    out
}
