//! Series with variety (issue 48 items 1 to 3), end to end against the variety fixture:
//! each of its five faults lives in a sequence of calls that only a series with variety
//! reaches (a refused update out of range, a PUT of what a POST created, an update that
//! leaves out optional fields, a PUT on an action path, one value of an enumeration). Each
//! is found within a 10 s budget, the fixed twin is silent, a found series replays, and the
//! report says which variations each resource got.

use std::collections::BTreeMap;

use probe::fixture::variety;
use serde_json::Value;

use crate::util::{code, probe, repo, run, run_document};

/// The five series oracles and the operation of the fault each finds.
const FAULTS: [(&str, &str); 5] = [
    ("failed_update_side_effects", "replaceGadget"),
    ("misleading_create_put", "putNote"),
    ("partial_update_put", "replaceProfile"),
    ("non_idempotent_put", "setBalance"),
    ("created_not_retrievable", "getTicket"),
];

/// A 10 s run of the fixture built as `build`: its exit, report, and findings by oracle.
fn run_variety(
    dir: &std::path::Path,
    build: variety::Build,
    seed: u64,
    workers: usize,
) -> (std::process::Output, Value, BTreeMap<String, Vec<Value>>) {
    let spec = repo().join("fixtures/variety/openapi.yaml");
    let (out, report) = run_document(
        variety::router(build),
        &spec,
        dir,
        seed,
        workers,
        1_000_000,
        &["--budget", "10s"],
    );
    let mut by_oracle: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for f in report["findings"].as_array().into_iter().flatten() {
        by_oracle
            .entry(f["oracle"].as_str().unwrap_or_default().to_owned())
            .or_default()
            .push(f.clone());
    }
    (out, report, by_oracle)
}

#[test]
fn each_fault_of_a_sequence_is_found_within_ten_seconds_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report, found) = run_variety(dir.path(), variety::Build::Faulty, 1, 2);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    for (oracle, operation) in FAULTS {
        let findings = found.get(oracle).cloned().unwrap_or_default();
        assert!(
            findings.iter().any(|f| f["operation"] == operation),
            "no `{oracle}` finding on {operation}; findings: {:#?}; series: {:#}",
            found
                .iter()
                .map(|(k, v)| (
                    k,
                    v.iter().map(|f| f["operation"].clone()).collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>(),
            report["series_variations"]
        );
    }
    // The report says which variations each resource's series got, and how often.
    let resources = report["series_variations"]
        .as_array()
        .expect("series variations");
    let tickets = resources
        .iter()
        .find(|r| r["resource"] == "/tickets/{ticket_id}")
        .expect("the tickets' series");
    let variations: Vec<&str> = tickets["variations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["variation"].as_str().unwrap())
        .collect();
    assert!(variations.contains(&"priority=urgent"), "{variations:?}");
    // Every resource got more than its first two series.
    for r in resources {
        let sent: u64 = r["variations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["series"].as_u64().unwrap())
            .sum();
        assert!(sent > 2, "{r:#}");
    }

    // Each finding's series, replayed against a fresh faulty fixture, shows it again.
    let store = dir.path().join("store");
    for (oracle, operation) in FAULTS {
        let finding = found[oracle]
            .iter()
            .find(|f| f["operation"] == operation)
            .unwrap();
        let series = finding["series"]
            .as_str()
            .expect("a series finding names its series");
        let fixture =
            probe::fixture::RunningFixture::start(variety::router(variety::Build::Faulty)).unwrap();
        let out = run(probe(dir.path()).args([
            "--store",
            store.to_str().unwrap(),
            "replay",
            &series[..12],
            "--exit-code",
            "--url",
            &fixture.base_url(),
        ]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            code(&out),
            1,
            "{oracle}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("reproduced") && text.contains(oracle),
            "{oracle}: {text}"
        );
    }
}

#[test]
fn the_fixed_twin_is_silent() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report, found) = run_variety(dir.path(), variety::Build::Fixed, 1, 2);
    assert_eq!(code(&out), 0, "{:#?}", found);
    assert!(found.is_empty(), "{found:#?}");
    assert!(
        report["totals"]["series"].as_u64().unwrap() > 20,
        "{}",
        report["totals"]
    );
}

#[test]
fn the_same_seed_sends_the_same_series_whatever_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    let spec = repo().join("fixtures/variety/openapi.yaml");
    let ids = |workers: usize| {
        let (_, report) = run_document(
            variety::router(variety::Build::Faulty),
            &spec,
            dir.path(),
            3,
            workers,
            900,
            &[],
        );
        let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
        let ids: Vec<String> = store
            .interactions_of(crate::util::run_id(&report))
            .unwrap()
            .iter()
            .map(|r| r.case.to_string())
            .collect();
        (ids, report)
    };
    let (one, report) = ids(1);
    let (four, _) = ids(4);
    assert_eq!(one.len(), 900);
    assert!(
        one == four,
        "same seed, other test cases at 1 and 4 workers"
    );
    // The run's series had variety in them.
    let tried: usize = report["series_variations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variations"].as_array().unwrap().len())
        .sum();
    assert!(tried >= 10, "{:#}", report["series_variations"]);
}
