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

/// `probe --store <dir>/store <args>`: exit code, standard output and standard error.
fn probe_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = probe(dir);
    cmd.args(["--store", dir.join("store").to_str().unwrap()]);
    cmd.args(args);
    let out = run(&mut cmd);
    (
        code(&out),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 43, item 2: a recheck of the baseline with one oracle is a look, not a new
/// baseline. Before, diff compared the newest finding set of each run, the partial one, and
/// every other finding of B was "gained" (exit 1 on two runs that had none).
#[test]
fn a_partial_recheck_of_the_baseline_never_makes_old_findings_new() {
    let dir = tempfile::tempdir().unwrap();
    stored_run_with(dir.path(), demo::Faults::ALL, 21, "base", 1, &[]);
    stored_run_with(dir.path(), demo::Faults::ALL, 21, "next", 1, &[]);
    let run_time = diff_json(dir.path(), "base", "next")["a"]["finding_set"]
        .as_str()
        .unwrap()
        .to_owned();

    let (_, partial, _) = probe_in(
        dir.path(),
        &["recheck", "base", "--oracle", "server_error", "--json"],
    );
    let partial: Value = serde_json::from_str(partial.trim()).unwrap();
    let partial = partial["data"]["finding_set"].as_str().unwrap().to_owned();
    assert_ne!(partial, run_time, "a partial judging is a set of its own");

    let (exit, text) = diff(dir.path(), "base", "next", &["--fail-on", "new-findings"]);
    assert!(text.contains("0 gained, 0 lost"), "{text}");
    assert_eq!(exit, 0, "nothing is new: {text}");
    // diff says which sets it compared, one line a side.
    assert!(
        text.contains(&format!("A: finding set {} (run-time;", &run_time[..12])),
        "{text}"
    );
    assert!(text.contains("B: finding set "), "{text}");
    // The page names them too.
    let page = dir.path().join("diff.html");
    diff(
        dir.path(),
        "base",
        "next",
        &["--html", page.to_str().unwrap()],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!(
            "<li>A: finding set <code>{}</code> (run-time;",
            &run_time[..12]
        )),
        "the diff page names the sets compared"
    );
    let d = diff_json(dir.path(), "base", "next");
    assert_eq!(d["a"]["finding_set"], run_time.as_str());
    assert_eq!(d["a"]["finding_set_choice"], "run_time");
    assert_eq!(d["b"]["finding_set_choice"], "run_time");

    // The recheck says the partial set does not become the run's.
    let (_, text, _) = probe_in(dir.path(), &["recheck", "base", "--oracle", "server_error"]);
    assert!(
        text.contains(&format!(
            "a partial judging: `probe diff` and `probe show` keep finding set {} as the run's",
            &run_time[..12]
        )),
        "{text}"
    );

    // A full recheck afterwards finds the run-time set again ("already stored"), and that
    // is still what diff compares.
    let (_, full, _) = probe_in(dir.path(), &["recheck", "base", "--json"]);
    let full: Value = serde_json::from_str(full.trim()).unwrap();
    assert_eq!(full["data"]["finding_set"], run_time.as_str());
    let (exit, text) = diff(dir.path(), "base", "next", &["--fail-on", "new-findings"]);
    assert_eq!(exit, 0, "{text}");

    // Told to, diff compares the partial set: then the other oracles' findings are gained.
    let (exit, text) = diff(
        dir.path(),
        "base",
        "next",
        &[
            "--fail-on",
            "new-findings",
            "--finding-set-a",
            &partial[..12],
        ],
    );
    assert_eq!(exit, 1, "{text}");
    assert!(
        text.contains(&format!("A: finding set {} (given;", &partial[..12])),
        "{text}"
    );
    // A set's id in place of the run is the same.
    let (exit, _) = diff(
        dir.path(),
        &partial[..12],
        "next",
        &["--fail-on", "new-findings"],
    );
    assert_eq!(exit, 1);
    // A set of another run is refused.
    let (exit, _) = diff(
        dir.path(),
        "next",
        "base",
        &["--finding-set-a", &partial[..12]],
    );
    assert_eq!(exit, 2);

    // show labels each set: which it is, when, by which probe, which oracles, how many.
    let (exit, text, _) = probe_in(dir.path(), &["show", "base"]);
    assert_eq!(exit, 0);
    let version = env!("CARGO_PKG_VERSION");
    let line_of = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("findings: {}", &id[..12])))
            .unwrap_or_else(|| panic!("set {id} listed: {text}"))
            .to_owned()
    };
    let rt = line_of(&run_time);
    assert!(rt.contains(" run-time, made 20"), "{rt}");
    assert!(rt.contains(&format!("by probe {version}, all ")), "{rt}");
    assert!(rt.contains(" oracles, "), "{rt}");
    assert!(rt.ends_with("← compared by diff"), "{rt}");
    let p = line_of(&partial);
    assert!(p.contains(" recheck, made 20"), "{p}");
    assert!(p.contains(": server_error, "), "{p}");
    assert!(p.contains(" 1 of "), "{p}");
    assert!(!p.contains("compared by diff"), "{p}");
}
