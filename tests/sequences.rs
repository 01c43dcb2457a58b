//! Values that belong together and the evidence ordinary traffic holds (issue 48 items 4
//! and 5), end to end against the shelves fixture: notes read and updated with the shelf
//! they were found under and their own checksum, so faults only such a request reaches are
//! found and the twin answers them 2xx; a DELETE answered 204 that deleted nothing, and a
//! creation answered 201 that cannot be read back, found in ordinary traffic with the
//! series switched off, by the run and by a recheck alike, and never in the fixed twin
//! (which gives deleted tags their old ids back when they are made again).

use std::path::Path;

use probe::fixture::shelves;
use probe::model::FindingSet;
use probe::store::Store;
use serde_json::Value;

use crate::util::{code, findings_of, probe, repo, run, run_document, run_id};

fn run_shelves(dir: &Path, build: shelves::Build, seed: u64, extra: &[&str]) -> Value {
    let spec = repo().join("fixtures/shelves/openapi.yaml");
    let started = std::time::Instant::now();
    let (out, report) = run_document(shelves::router(build), &spec, dir, seed, 2, 800, extra);
    // Found within 10 s of sending on an idle machine; a loaded one gets some slack.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "a short run: {:?}",
        started.elapsed()
    );
    assert!(code(&out) <= 1, "the run ends: {out:?}");
    report
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"]
        .as_array()
        .and_then(|all| all.iter().find(|o| o["operation"] == name))
        .unwrap_or_else(|| panic!("{name} was sent: {report:#}"))
}

fn answered(report: &Value, name: &str, class: &str) -> u64 {
    operation(report, name)["statuses"][class]
        .as_u64()
        .unwrap_or(0)
}

fn operations_of(report: &Value, oracle: &str) -> Vec<String> {
    findings_of(report, oracle)
        .iter()
        .map(|f| f["operation"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_deletion_and_a_creation_that_fail_are_found_in_ordinary_traffic_and_rechecked_alike() {
    let dir = tempfile::tempdir().unwrap();
    // No series: only the run's ordinary requests can show these two faults.
    let no_series = ["--set", "series.enabled=false"];
    let report = run_shelves(dir.path(), shelves::Build::Faulty, 1, &no_series);
    assert_eq!(
        operations_of(&report, "deleted_still_available"),
        ["deleteTag"],
        "{:#}",
        report["findings"]
    );
    assert_eq!(
        operations_of(&report, "created_not_retrievable"),
        ["createTag"],
        "{:#}",
        report["findings"]
    );
    // A recheck by the same build judges the same sequences, whatever its threads.
    let run_of = run_id(&report);
    for threads in ["1", "3"] {
        let out = run(probe(dir.path()).args([
            "--store",
            dir.path().join("store").to_str().unwrap(),
            "recheck",
            "--json",
            &run_of.to_string()[..8],
            "--threads",
            threads,
        ]));
        assert_eq!(code(&out), 0, "nothing new: {out:?}");
        let line: Value = serde_json::from_slice(
            out.stdout
                .split(|b| *b == b'\n')
                .next()
                .expect("one JSON line"),
        )
        .unwrap();
        let store = Store::open_existing(&dir.path().join("store")).unwrap();
        let end = store.run_end(run_of).unwrap().unwrap();
        let at_run_time: FindingSet = store.get(end.findings.0).unwrap();
        assert_eq!(
            line["data"]["finding_set"].as_str(),
            Some(end.findings.0.to_hex().as_str()),
            "the very same finding set, {threads} threads"
        );
        assert!(at_run_time
            .findings
            .iter()
            .any(|f| f.oracle == "deleted_still_available"));
    }
    // The twin deletes what it says it deleted and stores what it creates: silent, though
    // a tag made again after its deletion answers 200 under its old id.
    let dir = tempfile::tempdir().unwrap();
    let report = run_shelves(dir.path(), shelves::Build::Fixed, 1, &no_series);
    for oracle in ["deleted_still_available", "created_not_retrievable"] {
        assert!(
            findings_of(&report, oracle).is_empty(),
            "the twin is silent: {:#}",
            report["findings"]
        );
    }
    assert!(
        answered(&report, "deleteTag", "2xx") > 0,
        "tags were deleted"
    );
    assert!(answered(&report, "getTag", "2xx") > 0, "and read");
}

#[test]
fn notes_are_read_under_their_own_shelf_and_updated_with_their_own_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_shelves(dir.path(), shelves::Build::Faulty, 1, &[]);
    let crashes = operations_of(&report, "server_error");
    for op in ["getNote", "updateNote"] {
        assert!(
            crashes.iter().any(|c| c == op),
            "the fault only values that belong together reach in {op} is found: {crashes:?}"
        );
    }
    // The twin: silent, and most reads of a note name its own shelf.
    let dir = tempfile::tempdir().unwrap();
    let report = run_shelves(dir.path(), shelves::Build::Fixed, 1, &[]);
    assert!(operations_of(&report, "server_error").is_empty());
    let (found, missed) = (
        answered(&report, "getNote", "2xx"),
        answered(&report, "getNote", "4xx"),
    );
    assert!(
        found > missed,
        "a note's id goes with its shelf's: {found} answered 2xx, {missed} 4xx"
    );
    assert!(
        answered(&report, "updateNote", "2xx") > 0,
        "an update sent the note's own checksum: {:#}",
        operation(&report, "updateNote")
    );
}
