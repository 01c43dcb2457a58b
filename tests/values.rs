//! Values under any name (issue 48 items 4 and 6), end to end against the library fixture:
//! items keyed by `book_title` and `pool_name` are read with names the API handed out (a
//! list's `Books[].book_title`, `pools[].name`, a creation's own body), so a fault only a
//! real name reaches is found and its twin answers 200; one cause echoed in three quotings
//! is one finding; a too-long name shrinks to exactly the shortest length that fails.

use probe::fixture::library;
use serde_json::Value;

use crate::util::{code, findings_of, repo, run_document};

fn run_library(dir: &std::path::Path, build: library::Build, seed: u64, extra: &[&str]) -> Value {
    let spec = repo().join("fixtures/library/openapi.yaml");
    let started = std::time::Instant::now();
    let (out, report) = run_document(library::router(build), &spec, dir, seed, 2, 600, extra);
    // Found within 10 s of sending on an idle machine; a loaded one gets some slack.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "a short run: {:?}",
        started.elapsed()
    );
    if build == library::Build::Faulty {
        assert_eq!(code(&out), 1, "findings");
    }
    report
}

fn of_operation<'a>(findings: &[&'a Value], operation: &str) -> Vec<&'a Value> {
    findings
        .iter()
        .copied()
        .filter(|f| f["operation"] == operation)
        .collect()
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"]
        .as_array()
        .and_then(|all| all.iter().find(|o| o["operation"] == name))
        .unwrap_or_else(|| panic!("{name} was sent: {report:#}"))
}

#[test]
fn items_keyed_by_names_are_read_with_names_the_api_gave() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_library(dir.path(), library::Build::Faulty, 1, &[]);
    let crashes = findings_of(&report, "server_error");
    for op in ["getBook", "getPool"] {
        assert!(
            !of_operation(&crashes, op).is_empty(),
            "the fault only a real name reaches in {op} is found: {crashes:#?}"
        );
    }
    // The fixed twin: no fault, and the reads of real names answered 200.
    let dir = tempfile::tempdir().unwrap();
    let report = run_library(dir.path(), library::Build::Fixed, 1, &[]);
    let crashes = findings_of(&report, "server_error");
    assert!(crashes.is_empty(), "the twin is silent: {crashes:#?}");
    for op in ["getBook", "getPool"] {
        let read = operation(&report, op);
        assert!(
            read["statuses"]["2xx"].as_u64().unwrap_or(0) > 0,
            "{op} read an item the API named: {read:#}"
        );
        assert_eq!(
            read["path_parameters_never_from_answers"],
            serde_json::json!([]),
            "{read:#}"
        );
    }
}

#[test]
fn one_cause_echoed_in_three_quotings_is_one_finding_and_a_long_name_shrinks_to_the_shortest() {
    let dir = tempfile::tempdir().unwrap();
    // Strings up to 200 characters (64 by default), so that some names are too long.
    let report = run_library(
        dir.path(),
        library::Build::Faulty,
        2,
        &["--set", "generation.maxStringLength=200"],
    );
    let crashes = findings_of(&report, "server_error");
    let converts = of_operation(&crashes, "convert");
    assert_eq!(converts.len(), 1, "one cause, one finding: {converts:#?}");
    assert!(
        operation(&report, "convert")["statuses"]["5xx"]
            .as_u64()
            .unwrap_or(0)
            >= 3,
        "the cause was met in several quotings"
    );
    let labels = of_operation(&crashes, "createLabel");
    assert_eq!(labels.len(), 1, "{labels:#?}");
    let curl = labels[0]["curl"].as_str().unwrap();
    let body = curl
        .split("--data-raw '")
        .nth(1)
        .and_then(|b| b.strip_suffix('\''))
        .unwrap_or_else(|| panic!("a body in {curl}"));
    let body: Value = serde_json::from_str(body).unwrap();
    let name = body["name"].as_str().unwrap();
    assert_eq!(
        name.chars().count(),
        library::LONGEST_NAME + 1,
        "shrunk to the shortest name that fails: {curl}; totals {}",
        report["totals"]
    );
}
