//! "Since when?" (docs/checks.md): `probe recheck` of a set of stored runs with a check
//! written after them names, per check, the first run in which it fires; and judging the
//! same runs again stores nothing new.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use probe::fixture::accounts::{self, Build};
use serde_json::Value;

use crate::util::{code, files_under, probe, repo, run, run_document, run_id};

fn spec() -> PathBuf {
    repo().join("fixtures/accounts/openapi.yaml")
}

/// Every file of the store but its index (a database may rewrite its pages when read), with
/// its size.
fn stored_objects(store: &Path) -> BTreeMap<PathBuf, u64> {
    files_under(store)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with("index") && !name.ends_with(".lock")
        })
        .map(|p| {
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            (p, size)
        })
        .collect()
}

fn recheck(dir: &Path, args: &[&str]) -> std::process::Output {
    let store = dir.join("store");
    let checks = repo().join("fixtures/accounts/checks.toml");
    let mut cmd = probe(dir);
    cmd.args([
        "recheck",
        "--store",
        store.to_str().unwrap(),
        "--checks",
        checks.to_str().unwrap(),
    ]);
    cmd.args(args);
    run(&mut cmd)
}

#[test]
fn recheck_since_names_the_first_run_a_new_check_fires_in_and_stores_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    // Twelve runs of a correct build, then eight of a build with the faults the checks
    // look for; none of them judged by the checks, which were written afterwards.
    let mut runs = Vec::new();
    for i in 0..20 {
        let build = if i < 12 {
            Build::Correct
        } else {
            Build::Faulty
        };
        let tag = format!("build={i}");
        let (out, report) = run_document(
            accounts::router(build),
            &spec(),
            dir.path(),
            1,
            2,
            150,
            &["--name", "nightly", "--tag", &tag],
        );
        assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
        runs.push(run_id(&report));
    }
    let first_faulty = runs[12];

    let out = recheck(dir.path(), &["--since", "1h", "--json"]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let judged: Vec<&Value> = lines.iter().filter(|l| l["type"] == "recheck").collect();
    assert_eq!(judged.len(), 20, "every run is judged");
    // Oldest first.
    let order: Vec<String> = judged
        .iter()
        .map(|l| l["data"]["run"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = runs.iter().map(|r| r.0.to_hex()).collect();
    assert_eq!(order, expected);
    let since: Vec<&Value> = lines.iter().filter(|l| l["type"] == "since").collect();
    assert_eq!(since.len(), 8, "one summary per check: {lines:?}");
    let mut fired_somewhere = 0;
    for s in &since {
        let d = &s["data"];
        assert_eq!(d["runs"], 20);
        if d["fired"] == 0 {
            assert!(d["first"].is_null());
            continue;
        }
        fired_somewhere += 1;
        assert_eq!(
            d["first"]["run"].as_str().unwrap(),
            first_faulty.0.to_hex(),
            "{} first fired elsewhere",
            d["oracle"]
        );
        assert_eq!(d["first"]["tags"]["build"], "12");
        assert_eq!(d["silent_after_first"], 0, "{d}");
        assert!(
            d["fired"].as_u64().unwrap() <= 8,
            "{} fired on the correct build: {d}",
            d["oracle"]
        );
    }
    assert!(fired_somewhere >= 6, "{since:?}");

    // The same judging again: every finding set is already stored, nothing is added.
    let before = stored_objects(&dir.path().join("store"));
    let out = recheck(dir.path(), &["--named", "nightly", "--json"]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "recheck" {
            assert_eq!(v["data"]["new_set"], false, "{v}");
        }
    }
    assert_eq!(stored_objects(&dir.path().join("store")), before);

    // For a person: a line per run, then since when.
    let out = recheck(dir.path(), &["--tag", "build=15"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(
        lines[0].contains(&format!("run {} nightly", runs[15].short(12)))
            && lines[0].contains("fires: check:"),
        "{stdout}"
    );
    let out = recheck(dir.path(), &["--all"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let short = first_faulty.short(12);
    assert!(
        stdout.contains("since when, over 20 runs")
            && stdout.contains(&format!("first in run {short}"))
            && stdout.contains("tags build=12")
            && stdout.contains("curl "),
        "{stdout}"
    );
}

#[test]
fn a_selection_that_matches_no_run_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_document(
        accounts::router(Build::Correct),
        &spec(),
        dir.path(),
        1,
        1,
        20,
        &[],
    );
    assert!(code(&out) <= 1);
    let out = recheck(dir.path(), &["--tag", "branch=nowhere"]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no stored run matches --tag branch=nowhere"),
        "{stderr}"
    );
}
