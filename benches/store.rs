//! Stored-run benchmark: `probe recheck` and `probe diff` against the bare read loop of the
//! store, side by side in one process on the same synthetic runs.
//!
//! Run with `cargo bench --bench store` (`-- --quick` for 20,000 interactions instead of
//! 100,000). It writes two synthetic runs (`store::synthetic::write_run`, whose document
//! is a real OpenAPI document, so the oracles do real work), then measures:
//! - the bare loop: every interaction of run A read and decoded, nothing else (once through
//!   `interactions_of` + `get`, once through the located pages recheck itself uses);
//! - recheck of run A with 1 and 2 threads (read interaction, case and body, judge with
//!   every oracle, collect, write the finding set);
//! - `diff` of runs A and B (index queries and the two finding sets), and, once, how its
//!   time splits between its parts.
//!
//! Goals (the issue): recheck ≥ 50% of the bare loop's rate; diff < 1/10 of recheck's
//! time. Figures vary by 10-50% on a shared machine (docs/design-notes.md, Measured ceilings), so each
//! is the median of several repetitions.

use std::time::Instant;

use probe::diff::RunDiff;
use probe::ids::RunId;
use probe::model::Interaction;
use probe::recheck::{recheck_run, RecheckOptions};
use probe::store::{synthetic, Store};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Seconds to read and decode every interaction through the index rows and `get`.
fn bare_get(store: &Store, run: RunId) -> (f64, u64) {
    let t0 = Instant::now();
    let mut n = 0u64;
    for row in store.interactions_of(run).expect("rows") {
        let i: Interaction = store.get(row.id.digest()).expect("interaction decodes");
        n += u64::from(i.seq < u64::MAX);
    }
    (t0.elapsed().as_secs_f64(), n)
}

/// Seconds to read and decode every interaction through located pages.
fn bare_pages(store: &Store, run: RunId) -> (f64, u64) {
    let t0 = Instant::now();
    let max = store.max_seq(run).expect("max seq").unwrap_or(0);
    let mut n = 0u64;
    let mut from = 0;
    while from <= max {
        for item in store
            .interactions_page(run, from..from + 512)
            .expect("page")
        {
            let i = store.get_interaction(&item).expect("interaction decodes");
            n += u64::from(i.seq < u64::MAX);
        }
        from += 512;
    }
    (t0.elapsed().as_secs_f64(), n)
}

fn recheck(store: &Store, run: RunId, threads: usize) -> (f64, usize) {
    let options = RecheckOptions {
        threads,
        ..RecheckOptions::default()
    };
    let t0 = Instant::now();
    let r = recheck_run(store, run, &options, &|_| {}, &probe::events::discard())
        .expect("recheck succeeds");
    (t0.elapsed().as_secs_f64(), r.set.findings.len())
}

/// Resident memory in KiB (Linux), to show that recheck streams.
fn rss_kib() -> Option<u64> {
    probe::fixture::measure::resident_kib("/proc/self/status")
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 20_000 } else { 100_000 };
    let reps = if quick { 1 } else { 3 };
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path()).expect("store");
    let t0 = Instant::now();
    let a = synthetic::write_run(&store, 1, n, 1_000).expect("run A");
    let b = synthetic::write_run(&store, 2, n, 2_000).expect("run B");
    println!(
        "probe store benchmark: two synthetic runs of {n} interactions written in {:.1}s; {reps} repetitions, medians",
        t0.elapsed().as_secs_f64()
    );
    let before = rss_kib();
    recheck(&store, a, 2);
    if let (Some(x), Some(y)) = (before, rss_kib()) {
        println!(
            "resident memory around a first recheck of {n} interactions: {} MiB -> {} MiB",
            x / 1024,
            y / 1024
        );
    }
    let (mut get, mut pages, mut r1, mut r2, mut d) = (vec![], vec![], vec![], vec![], vec![]);
    let mut findings = 0;
    for _ in 0..reps {
        let (s, count) = bare_get(&store, a);
        assert_eq!(count, n);
        get.push(s);
        let (s, count) = bare_pages(&store, a);
        assert_eq!(count, n);
        pages.push(s);
        let (s, f) = recheck(&store, a, 1);
        r1.push(s);
        let (s, f2) = recheck(&store, a, 2);
        assert_eq!(f, f2, "threads never change the finding set");
        findings = f;
        r2.push(s);
        let t = Instant::now();
        let diff = RunDiff::compute(&store, a, b).expect("diff");
        d.push(t.elapsed().as_secs_f64());
        assert_eq!(diff.cases.a, n);
    }
    // Where diff's time goes, once.
    let t = Instant::now();
    let tally = store.tally(a).expect("tally");
    let t_tally = t.elapsed().as_secs_f64();
    let t = Instant::now();
    store.run_summary(a).expect("summary");
    let t_summary = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let set = store.newest_finding_set(a).expect("set").expect("a set");
    let set: probe::model::FindingSet = store.get(set.0).expect("set decodes");
    let t_set = t.elapsed().as_secs_f64();
    let t = Instant::now();
    probe::diff::compare_cases(&tally.cases, &tally.cases);
    let t_cases = t.elapsed().as_secs_f64();
    println!(
        "diff parts, one run: tally {t_tally:.4}s · summary {t_summary:.4}s · finding set ({} findings) {t_set:.4}s · case comparison {t_cases:.4}s",
        set.findings.len()
    );
    let (get, pages, r1, r2, d) = (
        median(get),
        median(pages),
        median(r1),
        median(r2),
        median(d),
    );
    let rate = |s: f64| n as f64 / s;
    let bare = get.min(pages);
    println!(
        "bare read+decode (interactions_of + get)  {:>9.0} interactions/s  ({get:.3}s)",
        rate(get)
    );
    println!(
        "bare read+decode (located pages)          {:>9.0} interactions/s  ({pages:.3}s)",
        rate(pages)
    );
    println!(
        "recheck, 1 thread                         {:>9.0} interactions/s  ({r1:.3}s, {findings} distinct findings)",
        rate(r1)
    );
    println!(
        "recheck, 2 threads                        {:>9.0} interactions/s  ({r2:.3}s)",
        rate(r2)
    );
    println!("diff of the two runs                      {d:.3}s");
    let best = r1.min(r2);
    println!(
        "ratio recheck / bare loop: {:.2} (vs the faster bare loop; goal ≥ 0.50) · 1 thread {:.2}",
        bare / best,
        bare / r1
    );
    println!("ratio diff / recheck time: {:.3} (goal < 0.10)", d / best);
}
