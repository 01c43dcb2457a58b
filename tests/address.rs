//! Findings addressed one way everywhere (issue 43, item 8): a short id beside each
//! finding, taken by `show`, `show --as` and `replay`; `show <run>` a summary with the
//! findings first; one rule for a run name in every command.

use std::path::Path;

use probe::fixture::{demo, RunningFixture};
use serde_json::Value;

use crate::recheck::stored_run_with;
use crate::util::{code, demo_spec, probe, run, Campaign};

/// `probe --store <dir>/store <args>`: exit code, standard output and standard error.
fn probe_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = probe(dir);
    cmd.env_remove("PROBE_BEARER")
        .env_remove("PROBE_BASIC")
        .env_remove("PROBE_API_KEY");
    cmd.args(["--store", dir.join("store").to_str().unwrap()]);
    cmd.args(args);
    let out = run(&mut cmd);
    (
        code(&out),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A finding's short id: 8 hex, a colon, its number.
fn is_finding_id(text: &str) -> bool {
    text.split_once(':').is_some_and(|(set, n)| {
        set.len() == 8 && set.bytes().all(|b| b.is_ascii_hexdigit()) && n.parse::<usize>().is_ok()
    })
}

#[test]
fn each_finding_has_a_short_id_in_the_console_the_report_and_the_page_that_replay_takes() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let spec = demo_spec();
    let campaign = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 7,
        workers: 1,
        requests: 300,
    };
    let (out, report) = campaign.run(dir.path(), &[]);
    assert_eq!(code(&out), 1, "the faulty fixture gives findings");
    let console = String::from_utf8_lossy(&out.stdout);
    // The console names each top finding by its id, and its replay line uses it.
    let top = console
        .lines()
        .find(|l| l.starts_with("  1. "))
        .unwrap_or_else(|| panic!("a top finding: {console}"));
    let id = top[5..].split(' ').next().unwrap().to_owned();
    assert!(is_finding_id(&id), "`{id}` in `{top}`");
    assert!(
        console.contains(&format!("     probe replay {id}\n")),
        "{console}"
    );
    // report.json keeps it, and the page shows it.
    let findings = report["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .all(|f| is_finding_id(f["id"].as_str().unwrap())));
    assert!(findings.iter().any(|f| f["id"] == id.as_str()));
    // The run's page, kept beside its report.json in the store.
    let page = dir
        .path()
        .join("store/reports")
        .join(format!("{}.html", report["run"]["id"].as_str().unwrap()));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!("<code class=\"finding-id\">{id}</code>")),
        "the page shows {id}"
    );

    // `show <id> --as curl` and `replay <id>` take it too.
    let (exit, text, _) = probe_in(dir.path(), &["show", &id, "--as", "curl"]);
    assert_eq!(exit, 0, "{text}");
    assert!(text.contains("curl"), "{text}");
    let (exit, text, _) = probe_in(
        dir.path(),
        &["replay", &id, "--url", &fixture.base_url(), "--json"],
    );
    assert_eq!(exit, 0, "{text}");
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["data"]["verdict"], "reproduced", "{v}");
}

/// A stored run of the faulty demo, the id of its run-time set's second finding (an `n`
/// that is not 1), and how many findings the set has.
fn run_and_second_finding(dir: &Path) -> (String, usize) {
    let run = stored_run_with(dir, demo::Faults::ALL, 7, "r", 1, &[]);
    let store = probe::store::Store::open_existing(&dir.join("store")).unwrap();
    let set = store.run_end(run).unwrap().unwrap().findings;
    let len = store
        .get::<probe::model::FindingSet>(set.0)
        .unwrap()
        .findings
        .len();
    assert!(len > 1, "the faulty fixture gives findings");
    (format!("{}:2", set.short(8)), len)
}

#[test]
fn show_of_a_finding_id_without_as_shows_the_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = run_and_second_finding(dir.path());
    // It said "no object" before.
    let (exit, text, _) = probe_in(dir.path(), &["show", &id]);
    assert_eq!(exit, 0, "{text}");
    assert!(text.starts_with(&format!("finding {id} ")), "{text}");
    assert!(text.contains(&format!("probe replay {id}")), "{text}");
    let (exit, text, _) = probe_in(dir.path(), &["show", &id, "--json"]);
    assert_eq!(exit, 0);
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["type"], "finding");
    assert!(v["data"]["oracle"].is_string(), "{v}");
}

#[test]
fn show_of_a_finding_set_prints_the_id_of_each_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (id, len) = run_and_second_finding(dir.path());
    let set = id.split_once(':').unwrap().0;
    let (exit, text, _) = probe_in(dir.path(), &["show", set]);
    assert_eq!(exit, 0);
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().split(' ').next())
        .filter(|w| is_finding_id(w))
        .collect();
    assert_eq!(listed.len(), len, "{text}");
    assert_eq!(listed[1], id, "{text}");
}

#[test]
fn show_of_a_run_lists_findings_first_and_interactions_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    stored_run_with(dir.path(), demo::Faults::ALL, 5, "r", 1, &[]);
    let (exit, text, _) = probe_in(dir.path(), &["show", "r"]);
    assert_eq!(exit, 0);
    let interaction_line = |l: &&str| {
        let mut words = l.split_whitespace();
        words.next().is_some_and(|w| w.parse::<u64>().is_ok())
            && words.next().is_some_and(|w| w.len() == 12)
    };
    assert_eq!(
        text.lines().filter(interaction_line).count(),
        0,
        "no interaction unless asked: {text}"
    );
    assert!(text.contains("300 interactions: `probe show "), "{text}");
    let first_finding = text
        .lines()
        .position(|l| {
            l.trim_start()
                .split(' ')
                .next()
                .is_some_and(|w| w.contains(':') && w.len() > 9)
        })
        .unwrap_or_else(|| panic!("the findings are listed with their ids: {text}"));
    assert!(first_finding < text.lines().count());

    // JSON names the set diff compares.
    let (_, json, _) = probe_in(dir.path(), &["show", "r", "--json"]);
    let v: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        v["data"]["finding_set_compared"],
        v["data"]["end"]["findings"]
    );

    let (_, all, _) = probe_in(dir.path(), &["show", "r", "--interactions"]);
    assert_eq!(all.lines().filter(interaction_line).count(), 300, "{all}");
    let (_, some, _) = probe_in(dir.path(), &["show", "r", "-n", "3"]);
    assert_eq!(some.lines().filter(interaction_line).count(), 3, "{some}");
    assert!(some.contains("interactions (3 of 300):"), "{some}");
}

#[test]
fn a_run_name_is_the_newest_run_of_that_name_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    stored_run_with(dir.path(), demo::Faults::ALL, 5, "twice", 1, &[]);
    stored_run_with(dir.path(), demo::Faults::ALL, 6, "twice", 1, &[]);
    let (_, log, _) = probe_in(dir.path(), &["log", "--json"]);
    let newest: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let newest = newest["data"]["id"].as_str().unwrap().to_owned();
    let note = format!(
        "note: 2 runs are named `twice`; taking the newest, {}",
        &newest[..12]
    );

    // show took it as ambiguous before.
    let (exit, text, err) = probe_in(dir.path(), &["show", "twice"]);
    assert_eq!(exit, 0, "{err}");
    assert!(text.starts_with(&format!("run {newest}")), "{text}");
    assert!(err.contains(&note), "{err}");

    let (exit, text, err) = probe_in(dir.path(), &["recheck", "twice", "--json"]);
    assert!(exit <= 1, "{err}");
    let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(v["data"]["run"], newest.as_str());
    assert!(err.contains(&note), "{err}");

    let (exit, text, err) = probe_in(dir.path(), &["diff", "twice", "twice", "--json"]);
    assert_eq!(exit, 0, "{err}");
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["data"]["a"]["run"], newest.as_str());
    assert!(err.contains(&note), "{err}");

    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let (exit, text, err) = probe_in(
        dir.path(),
        &["replay", "twice", "--url", &fixture.base_url(), "--json"],
    );
    assert!(exit <= 1, "{err}");
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["data"]["replay_of"], newest.as_str(), "{v}");
    assert!(err.contains(&note), "{err}");
}
