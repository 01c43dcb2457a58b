//! Checks a user writes (docs/checks.md), end to end: the eight worked checks against the
//! accounts fixture, in a run and in a recheck of a run recorded before they existed; and
//! a check with a mistake, stopped before anything is sent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use probe::fixture::accounts::{self, Build};
use serde_json::Value;

use crate::util::{code, findings_of, probe, repo, run, run_document, run_id};

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
    // It says what each check did, and stores each check's text with its finding set.
    let line: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let counted: Vec<&str> = line["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(counted.len(), ALL.len(), "{line}");
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let set_id = line["data"]["finding_set"].as_str().unwrap();
    let set: probe::model::FindingSet = store
        .get(probe::ids::Digest::from_hex(set_id).unwrap())
        .unwrap();
    let stored: BTreeSet<&str> = set
        .checks
        .keys()
        .filter_map(|k| k.strip_prefix("check:"))
        .collect();
    assert_eq!(stored, ALL.into_iter().collect(), "{:?}", set.checks);
    let text = &set.checks["check:item-id"];
    assert!(
        text.contains("expect = \"response.body.id == request.path_params.id\""),
        "{text}"
    );
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

/// `probe diff` of two runs of one API judged by two texts of one check says "the check
/// changed" for that check's findings (console and JSON) and does not take them for the
/// API's news (`--fail-on new-findings` passes); the same check over a changed API does.
#[test]
fn diff_tells_a_changed_check_from_a_changed_api() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, expect: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("[[check]]\nname = \"request-id\"\nexpect = \"{expect}\"\nmessage = \"{{request.method}} {{request.path}} has no X-Request-Id\"\n"),
        )
        .unwrap();
        path.to_str().unwrap().to_owned()
    };
    let lenient = write("lenient.toml", "header(response, 'X-Request-Id') != null");
    let strict = write("strict.toml", "header(response, 'X-Request-Id') == 'never'");
    // Without shrinking, what is sent does not hang on what the checks find (shrinking the
    // strict check's findings would take room the series of the lenient run had). The
    // accounts API answers new accounts without keeping them: whether a run happens to read
    // one back (`created_not_retrievable`) is not what this test is about, so that oracle is
    // off, and the built-in findings of two runs of one build are the same.
    let run_with = |build: Build, file: &str| {
        let (out, report) = run_document(
            accounts::router(build),
            &spec(),
            dir.path(),
            1,
            2,
            120,
            &[
                "--checks",
                file,
                "--set",
                "shrink.enabled=false",
                "--set",
                "checks.created_not_retrievable=false",
            ],
        );
        assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
        run_id(&report).to_string()
    };
    let a = run_with(Build::Correct, &lenient);
    let b = run_with(Build::Correct, &strict);
    let c = run_with(Build::Faulty, &lenient);
    let store = dir.path().join("store");
    let diff = |x: &str, y: &str, extra: &[&str]| {
        let out = run(probe(dir.path())
            .args(["--store", store.to_str().unwrap(), "diff", x, y])
            .args(extra));
        (
            code(&out),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };

    // The check changed, the API did not.
    let (exit, text) = diff(&a, &b, &["--fail-on", "new-findings"]);
    assert_eq!(exit, 0, "a changed check is not the API's news: {text}");
    assert!(
        text.contains("check:request-id") && text.contains("[the check changed]"),
        "{text}"
    );
    assert!(
        text.contains("check:request-id: the check changed: its findings above tell of the check, not of the API"),
        "{text}"
    );
    let (_, json) = diff(&a, &b, &["--json"]);
    let data: Value = serde_json::from_str::<Value>(json.trim()).unwrap()["data"].clone();
    assert_eq!(data["new_findings"], false, "{data}");
    assert_eq!(data["findings"]["checks"]["check:request-id"], "changed");
    let gained = data["findings"]["gained"].as_array().unwrap();
    assert!(!gained.is_empty(), "{data}");
    for f in gained {
        assert_eq!(f["oracle"], "check:request-id");
        assert_eq!(f["check"], "changed", "{f}");
    }

    // The same check, and the API changed: news of the API, said as such.
    let (exit, text) = diff(&a, &c, &["--fail-on", "new-findings"]);
    assert_eq!(exit, 1, "{text}");
    assert!(text.contains("+ check:request-id"), "{text}");
    assert!(!text.contains("the check changed"), "{text}");
    let (_, json) = diff(&a, &c, &["--json"]);
    let data: Value = serde_json::from_str::<Value>(json.trim()).unwrap()["data"].clone();
    assert_eq!(data["new_findings"], true);
    assert!(data["findings"].get("checks").is_none(), "{data}");
    assert!(data["findings"]["gained"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f.get("check").is_none()));

    // Each run's finding set keeps the check as that run read it.
    let opened = probe::store::Store::open_existing(&store).unwrap();
    for (run_text, expect) in [(&a, "!= null"), (&b, "== 'never'")] {
        let id = opened.resolve_run(run_text).unwrap();
        let end = opened.run_end(id).unwrap().unwrap();
        let set: probe::model::FindingSet = opened.get(end.findings.0).unwrap();
        let text = &set.checks["check:request-id"];
        assert!(
            text.contains("name = \"request-id\"") && text.contains(expect),
            "{text}"
        );
    }
}

/// A recheck with a check whose definition changed since the run (same name, another
/// `expect`) lists what the check now finds, says "the check changed", and does not take it
/// for the API's news: exit code 0. A check new to the run is news: exit code 1.
#[test]
fn a_recheck_with_a_changed_check_says_so_and_does_not_fail_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = |file: &str, name: &str, expect: &str| {
        let path = dir.path().join(file);
        std::fs::write(
            &path,
            format!("[[check]]\nname = \"{name}\"\nexpect = \"{expect}\"\n"),
        )
        .unwrap();
        path.to_str().unwrap().to_owned()
    };
    let lenient = write(
        "lenient.toml",
        "request-id",
        "header(response, 'X-Request-Id') != null",
    );
    let strict = write(
        "strict.toml",
        "request-id",
        "header(response, 'X-Request-Id') == 'never'",
    );
    let added = write(
        "added.toml",
        "request-id-never",
        "header(response, 'X-Request-Id') == 'never'",
    );
    let (out, report) = run_document(
        accounts::router(Build::Correct),
        &spec(),
        dir.path(),
        1,
        2,
        120,
        &["--checks", &lenient],
    );
    // The built-in oracles find the accounts API's undeclared statuses; the check, nothing.
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        findings_of(&report, "check:request-id").is_empty(),
        "{report}"
    );
    let recorded = run_id(&report).to_string();
    let store = dir.path().join("store");
    let recheck = |file: &str, json: bool| {
        let mut cmd = probe(dir.path());
        cmd.args([
            "--store",
            store.to_str().unwrap(),
            "recheck",
            &recorded,
            "--checks",
            file,
        ]);
        if json {
            cmd.arg("--json");
        }
        let out = run(&mut cmd);
        (
            code(&out),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };

    let (exit, text) = recheck(&strict, false);
    assert_eq!(exit, 0, "a changed check is not the API's news: {text}");
    assert!(
        text.contains("+ check:request-id ") && text.contains("[the check changed]"),
        "{text}"
    );
    assert!(
        text.contains("check:request-id: the check changed: its findings above tell of the check, not of the API"),
        "{text}"
    );
    let (exit, json) = recheck(&strict, true);
    assert_eq!(exit, 0, "{json}");
    let line: Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    let delta = &line["data"]["delta"];
    assert_eq!(delta["checks"]["check:request-id"], "changed", "{delta}");
    let gained = delta["gained"].as_array().unwrap();
    assert!(!gained.is_empty(), "{delta}");
    assert!(gained.iter().all(|f| f["check"] == "changed"), "{delta}");

    // A check the run did not have: what it finds is news, and the exit code says so.
    let (exit, text) = recheck(&added, false);
    assert_eq!(exit, 1, "{text}");
    assert!(text.contains("+ check:request-id-never "), "{text}");
    assert!(!text.contains("the check changed"), "{text}");
}

/// A finding of a check is shrunk like any other: smaller requests are sent in place of
/// the one that showed it, each judged by the check, and one the check still fails on (with
/// the same message) becomes the finding's reproducer; a recheck with the check, sending
/// nothing, names the same reproducer.
#[test]
fn a_finding_of_a_check_is_shrunk_to_a_request_the_check_still_fails() {
    use probe::model::{FindingSet, Interaction, Strategy, TestCase};
    let dir = tempfile::tempdir().unwrap();
    let checks = checks_file();
    let checks = checks.to_str().unwrap();
    let report = campaign(dir.path(), Build::Faulty, &["--checks", checks]);
    assert!(
        report["totals"]["requests_by_kind"]["shrink"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{}",
        report["totals"]
    );
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let recorded = run_id(&report);
    let end = store.run_end(recorded).unwrap().unwrap();
    let set: FindingSet = store.get(end.findings.0).unwrap();
    let case_of = |id: probe::ids::InteractionId| -> TestCase {
        let interaction: Interaction = store.get(id.0).unwrap();
        store.get(interaction.case.0).unwrap()
    };
    let mut shrunk = Vec::new();
    for f in set
        .findings
        .iter()
        .filter(|f| f.oracle.starts_with("check:"))
    {
        let Some(reproducer) = f.reproducer else {
            continue;
        };
        let first = case_of(f.interactions[0]);
        let smaller = case_of(reproducer);
        if smaller.strategy != Strategy::Shrink {
            continue;
        }
        assert!(
            probe::shrink::size(&smaller) < probe::shrink::size(&first),
            "{}: the reproducer is not smaller: {smaller:?} against {first:?}",
            f.oracle
        );
        // The check failed on it: it is one of the interactions that showed the finding.
        assert!(f.interactions.contains(&reproducer), "{}", f.oracle);
        shrunk.push((f.oracle.clone(), f.key_by_message.clone(), reproducer));
    }
    assert!(
        !shrunk.is_empty(),
        "no finding of a check was shrunk: {:?}",
        set.findings
            .iter()
            .map(|f| (&f.oracle, f.reproducer))
            .collect::<Vec<_>>()
    );

    // A recheck judges the shrunk requests with the check again, sending nothing.
    let out = run(probe(dir.path()).args([
        "recheck",
        &recorded.to_string(),
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "--checks",
        checks,
    ]));
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("checks: judged · failed · not judged") && said.contains("check:item-id"),
        "{said}"
    );
    drop(store);
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let rechecked: Vec<FindingSet> = store
        .finding_sets_of(recorded)
        .unwrap()
        .into_iter()
        .map(|id| store.get::<FindingSet>(id.0).unwrap())
        .collect();
    for (oracle, key, reproducer) in &shrunk {
        assert!(
            rechecked
                .iter()
                .all(|s| s.findings.iter().any(|f| &f.oracle == oracle
                    && &f.key_by_message == key
                    && f.reproducer == Some(*reproducer))),
            "{oracle}: the recheck chose another reproducer"
        );
    }
}
