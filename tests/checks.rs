//! Checks a user writes (docs/checks.md), end to end: the eight worked checks against the
//! accounts fixture, in a run and in a recheck of a run recorded before they existed; and
//! a check with a mistake, stopped before anything is sent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use probe::fixture::accounts::{self, Build};
use serde_json::Value;

use crate::util::{code, probe, repo, run, run_document, run_id};

fn spec() -> PathBuf {
    repo().join("fixtures/accounts/openapi.yaml")
}

fn checks_file() -> PathBuf {
    repo().join("fixtures/accounts/checks.toml")
}

/// The names of the checks that fired in a report.json.
fn fired(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["oracle"].as_str())
        .filter_map(|o| o.strip_prefix("check:"))
        .map(str::to_string)
        .collect()
}

const ALL: [&str; 8] = [
    "cache-control-on-reads",
    "etag-follows-version",
    "item-id",
    "no-card-numbers",
    "page-size",
    "problem-json",
    "report-within-150ms",
    "request-id",
];

fn campaign(dir: &Path, build: Build, extra: &[&str]) -> Value {
    let (out, report) = run_document(accounts::router(build), &spec(), dir, 1, 4, 400, extra);
    assert!(
        code(&out) <= 1,
        "probe run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

#[test]
fn each_worked_check_finds_its_fault_and_is_silent_on_the_twin() {
    let checks = checks_file();
    let checks = checks.to_str().expect("utf-8 path");
    let faulty = tempfile::tempdir().unwrap();
    let report = campaign(faulty.path(), Build::Faulty, &["--checks", checks]);
    let expected: BTreeSet<String> = ALL.iter().map(|s| s.to_string()).collect();
    assert_eq!(fired(&report), expected, "on the faulty build");
    let item = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["oracle"] == "check:item-id")
        .unwrap();
    assert!(
        item["message"]
            .as_str()
            .unwrap()
            .starts_with("asked for account "),
        "{item}"
    );

    let correct = tempfile::tempdir().unwrap();
    let report = campaign(correct.path(), Build::Correct, &["--checks", checks]);
    assert_eq!(fired(&report), BTreeSet::new(), "on the correct build");
}

#[test]
fn a_recheck_with_the_checks_finds_what_a_run_with_them_found() {
    let dir = tempfile::tempdir().unwrap();
    // Recorded before the checks existed.
    let report = campaign(dir.path(), Build::Faulty, &[]);
    assert_eq!(fired(&report), BTreeSet::new());
    let recorded = run_id(&report).to_string();
    let out = run(probe(dir.path()).args([
        "recheck",
        &recorded,
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "--checks",
        checks_file().to_str().unwrap(),
        "--json",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    for name in ALL {
        assert!(
            stdout.contains(&format!("check:{name}")),
            "the recheck did not find `{name}`: {stdout}"
        );
    }
}

#[test]
fn a_check_with_a_mistake_stops_the_run_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        "[[check]]\nname = \"rid\"\nexpect = \"header(respnse, 'x-request-id') != null\"\n",
    )
    .unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec().to_str().unwrap(),
        "--url",
        "http://127.0.0.1:1",
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "--checks",
        file.to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mine.toml:3:18") && stderr.contains("did you mean `response`"),
        "{stderr}"
    );
    assert!(!dir.path().join("store").exists(), "a store was made");
}
