//! `probe diff` end to end: two stored runs of the demo fixture compared.

use std::path::Path;

use probe::fixture::demo;
use serde_json::Value;

use crate::recheck::{stored_run, stored_run_with};

use crate::util::{code, probe, run};

fn diff(dir: &Path, a: &str, b: &str, extra: &[&str]) -> (i32, String) {
    let mut cmd = probe(dir);
    cmd.args(["--store", dir.join("store").to_str().unwrap(), "diff", a, b]);
    cmd.args(extra);
    let out = run(&mut cmd);
    (
        code(&out),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn diff_json(dir: &Path, a: &str, b: &str) -> Value {
    let (exit, text) = diff(dir, a, b, &["--json"]);
    assert_eq!(exit, 0, "no --fail-on: exit 0");
    let v: Value = serde_json::from_str(text.trim()).expect("one JSON object");
    assert_eq!(v["type"], "diff");
    v["data"].clone()
}

#[test]
fn the_same_seed_against_the_same_api_twice_differs_in_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // One worker: the fixture then answers both runs identically (with more, a read and a
    // delete of one pet in the same batch may race, and status counts move).
    stored_run_with(
        dir.path(),
        demo::Faults::ALL,
        21,
        "first",
        1,
        &["--tag", "build=1"],
    );
    stored_run_with(
        dir.path(),
        demo::Faults::ALL,
        21,
        "second",
        1,
        &["--tag", "build=2"],
    );
    let d = diff_json(dir.path(), "tag:build=1", "tag:build=2");
    assert_eq!(d["a"]["name"], "first");
    assert_eq!(d["b"]["name"], "second");
    assert_eq!(d["cases"]["different"], 0);
    assert_eq!(d["cases"]["identical"], 300);
    assert_eq!(d["cases"]["first_difference"], Value::Null);
    assert_eq!(d["findings"]["gained"], Value::Array(vec![]));
    assert_eq!(d["findings"]["lost"], Value::Array(vec![]));
    assert!(!d["findings"]["kept"].as_array().unwrap().is_empty());
    assert_eq!(d["new_findings"], false);
    assert_eq!(d["any_change"], false);
    let (exit, text) = diff(
        dir.path(),
        "first",
        "second",
        &["--fail-on", "new-findings"],
    );
    assert_eq!(exit, 0);
    assert!(text.contains("0 gained, 0 lost"), "{text}");
    assert!(text.contains("300 identical, 0 different"), "{text}");
    let (exit, _) = diff(dir.path(), "first", "second", &["--fail-on", "any-change"]);
    assert_eq!(exit, 0);
}

#[test]
fn one_fault_more_in_b_is_exactly_one_finding_gained_and_fails_ci() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = demo::Faults {
        stats_as_text: false,
        ..demo::Faults::ALL
    };
    stored_run_with(dir.path(), fixed, 9, "before", 1, &[]);
    stored_run_with(dir.path(), demo::Faults::ALL, 9, "after", 1, &[]);
    let d = diff_json(dir.path(), "before", "after");
    let gained = d["findings"]["gained"].as_array().unwrap();
    assert_eq!(gained.len(), 1, "{gained:?}");
    assert_eq!(gained[0]["oracle"], "content_type_declared");
    assert_eq!(gained[0]["operation"], "getStats");
    assert_eq!(d["findings"]["lost"], Value::Array(vec![]));
    assert_eq!(d["findings"]["by_operation"]["getStats"]["gained"], 1);
    assert_eq!(d["new_findings"], true);
    let (exit, text) = diff(
        dir.path(),
        "before",
        "after",
        &["--fail-on", "new-findings"],
    );
    assert_eq!(exit, 1, "B has a finding A has not");
    assert!(text.contains("+ content_type_declared getStats"), "{text}");
    // The other way round nothing is new, only lost.
    let (exit, text) = diff(
        dir.path(),
        "after",
        "before",
        &["--fail-on", "new-findings"],
    );
    assert_eq!(exit, 0);
    assert!(text.contains("- content_type_declared getStats"), "{text}");
    let (exit, _) = diff(dir.path(), "after", "before", &["--fail-on", "any-change"]);
    assert_eq!(exit, 1);
}

#[test]
fn another_seed_shows_where_generation_changed() {
    let dir = tempfile::tempdir().unwrap();
    stored_run(dir.path(), demo::Faults::ALL, 1, "one", &[]);
    stored_run(dir.path(), demo::Faults::ALL, 2, "two", &[]);
    let d = diff_json(dir.path(), "one", "two");
    assert!(d["cases"]["different"].as_u64().unwrap() > 0);
    assert!(d["cases"]["first_difference"]["position"].is_u64());
    let (_, text) = diff(dir.path(), "one", "two", &[]);
    assert!(text.contains("first difference at position"), "{text}");
}
