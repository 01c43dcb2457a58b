//! Memory benchmark: the peak resident memory of a long `probe run` against a short one.
//!
//! Run with `cargo bench --bench memory` (a 1-minute and a 10-minute run, about 11 minutes
//! in all; `-- --quick` runs 5 s and 50 s). Goal (issue 5): the long run peaks at no more
//! than 1.2x the short run's memory, so a campaign can run for hours.
//!
//! Each run is the real `probe` binary in a child process, so only probe's own memory is
//! measured, against the demo API (`src/fixture/demo.rs`, served in this process) with all
//! its planted faults: several operations, ids learned from creations, findings hit
//! millions of times. Each run records into a fresh store. The peak is the largest
//! `VmRSS` seen while polling `/proc/<pid>/status` every 100 ms (Linux).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use probe::fixture::{demo, RunningFixture};

const WORKERS: usize = 16;

/// Resident memory of a process in KiB, from `/proc`.
fn rss_kib(pid: u32) -> Option<u64> {
    probe::fixture::measure::resident_kib(&format!("/proc/{pid}/status"))
}

struct Measured {
    peak_kib: u64,
    requests: u64,
    seconds: f64,
}

fn measure(base: &str, spec: &Path, store: &Path, budget_s: u64) -> Measured {
    let report = store.with_extension("report.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_probe"))
        .args(["--no-progress", "--store"])
        .arg(store)
        .args(["run", "--spec"])
        .arg(spec)
        .args(["--url", base, "--seed", "1", "--workers"])
        .arg(WORKERS.to_string())
        .arg("--budget")
        .arg(format!("{budget_s}s"))
        .arg("--report")
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("probe starts");
    let t0 = Instant::now();
    let mut peak_kib = 0;
    // Ten samples across the run, to show where memory goes if it grows.
    let mut trace = Vec::new();
    let step = Duration::from_secs(budget_s).max(Duration::from_secs(1)) / 10;
    // Bounded: the run's own budget plus a minute for loading and writing the report.
    let give_up = Duration::from_secs(budget_s + 60);
    loop {
        if let Some(kib) = rss_kib(child.id()) {
            peak_kib = peak_kib.max(kib);
            if t0.elapsed() >= step * trace.len() as u32 {
                trace.push(kib / 1024);
            }
        }
        match child.try_wait().expect("child status") {
            Some(status) => {
                assert!(
                    status.code().is_some_and(|c| c <= 1),
                    "probe run failed: {status}"
                );
                break;
            }
            None if t0.elapsed() > give_up => {
                let _ = child.kill();
                panic!("probe run did not end within {give_up:?}");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let trace: Vec<String> = trace.iter().map(|m| m.to_string()).collect();
    println!("  resident MiB every {step:?}: {}", trace.join(" "));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report written"))
            .expect("report is JSON");
    Measured {
        peak_kib,
        requests: json["totals"]["requests"].as_u64().unwrap_or(0),
        seconds,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (short, long) = if quick { (5, 50) } else { (60, 600) };
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("demo.yaml");
    std::fs::write(&spec, demo::DOCUMENT).expect("write spec");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let base = fixture.base_url();
    println!("probe memory benchmark: {WORKERS} in flight, a {short} s run against a {long} s run");
    let mut results = Vec::new();
    for (label, budget) in [("short", short), ("long", long)] {
        let m = measure(&base, &spec, &dir.path().join(label), budget);
        println!(
            "{label:<6} {budget:>4} s budget: {:>10} requests in {:>6.1} s, peak resident {:>6.1} MiB",
            m.requests,
            m.seconds,
            m.peak_kib as f64 / 1024.0
        );
        results.push(m);
    }
    println!(
        "ratio long / short peak memory {:.2} (goal ≤ 1.2)",
        results[1].peak_kib as f64 / results[0].peak_kib.max(1) as f64
    );
}
