//! Campaigns split across machines (docs/partitions.md): `probe run --partition k/n` (or a
//! CI's variables) against the demo API, each part into a store of its own as on its own
//! machine; the parts cover what the one run does, repeat their cases for the same seed,
//! come back together with `probe store merge`, and read as one campaign in `log`, `diff`,
//! `recheck`, `report` and `replay`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use probe::fixture::{demo, RunningFixture};
use probe::store::Store;
use serde_json::Value;

use crate::util::{code, demo_spec, probe, run};

/// Requests of each part, and of the whole run.
const REQUESTS: u64 = 240;
const SEED: u64 = 42;

/// The CI variables a part reads, removed so that the machine the tests run on cannot
/// split a run that did not ask.
const CI_VARS: [&str; 9] = [
    "JOB_COMPLETION_INDEX",
    "PROBE_PARTITIONS",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
    "GITHUB_RUN_ID",
    "CI_PIPELINE_ID",
    "BUILDKITE_BUILD_ID",
    "CIRCLE_WORKFLOW_ID",
    "BUILD_TAG",
];

fn clean(mut cmd: Command) -> Command {
    for var in CI_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// `probe run` of the demo document into `store`, with `extra` arguments; the output and
/// report.json.
fn run_into(
    dir: &Path,
    url: &str,
    store: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Output, Value) {
    let report = dir.join(format!("{}.json", store.replace('/', "_")));
    let mut cmd = clean(probe(dir));
    cmd.args(["run", "--spec"])
        .arg(demo_spec())
        .args(["--url", url, "--seed", &SEED.to_string(), "--workers", "4"])
        .args([
            "--requests",
            &REQUESTS.to_string(),
            "--store",
            store,
            "--report",
        ])
        .arg(&report)
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert!(matches!(code(&out), 0 | 1), "the run ended: {}", code(&out));
    let json = crate::util::read_json(&report);
    (out, json)
}

fn run_id(report: &Value) -> probe::ids::RunId {
    crate::util::run_id(report)
}

/// The operations a run sent, and its test-case ids in seq order.
fn sent(store: &Path, report: &Value) -> (BTreeSet<String>, Vec<String>) {
    let store = Store::open_existing(store).unwrap();
    let rows = store.interactions_of(run_id(report)).unwrap();
    (
        rows.iter().map(|r| r.operation.clone()).collect(),
        rows.iter().map(|r| r.case.to_string()).collect(),
    )
}

fn probe_in(dir: &Path, args: &[&str]) -> Output {
    let out = run(clean(probe(dir)).args(args));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The parts of an n-part campaign, each into `part-n-k` against a demo API of its own
/// (as on machines of their own); their stores' paths and reports.
fn campaign(dir: &Path, n: u32, extra: &[&str]) -> Vec<(PathBuf, Value)> {
    (1..=n)
        .map(|k| {
            let api = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
            let url = api.base_url();
            let url = url.as_str();
            let store = format!("part-{n}-{k}");
            let part = format!("{k}/{n}");
            let mut args = vec!["--partition", part.as_str()];
            args.extend_from_slice(extra);
            let (_, report) = run_into(dir, url, &store, &args, &[]);
            (dir.join(store), report)
        })
        .collect()
}

#[test]
fn the_parts_together_send_every_operation_the_one_run_does_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let api = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let url = api.base_url();
    let (_, whole) = run_into(dir.path(), &url, "whole", &[], &[]);
    let (all, _) = sent(&dir.path().join("whole"), &whole);
    assert!(
        all.len() >= 5,
        "the whole run reaches the demo's operations: {all:?}"
    );
    for n in [1, 2, 4] {
        let parts = campaign(dir.path(), n, &[]);
        let mut union = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (store, report) in &parts {
            let (ops, _) = sent(store, report);
            assert!(
                union.is_disjoint(&ops),
                "n={n}: no operation is in two parts: {ops:?} and {union:?}"
            );
            union.extend(ops);
            ids.insert(
                report["run"]["tags"]["probe.campaign"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
            assert_eq!(report["run"]["seed"], SEED);
        }
        assert_eq!(
            union, all,
            "n={n}: the parts' operations are the whole run's"
        );
        assert_eq!(ids.len(), 1, "n={n}: the parts share one campaign id");
    }
}

#[test]
fn a_part_repeats_its_test_cases_for_the_same_seed_whichever_way_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // Each part on a machine of its own: its own store, and an API of its own (the demo
    // keeps what it is sent, and the cases follow the answers).
    let fresh = || RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let (api_a, api_b, api_c, api_d) = (fresh(), fresh(), fresh(), fresh());
    // By the flag, by GitLab's and by Kubernetes' variables.
    let (_, a) = run_into(
        dir.path(),
        &api_a.base_url(),
        "a",
        &["--partition", "1/2"],
        &[],
    );
    let (_, b) = run_into(
        dir.path(),
        &api_b.base_url(),
        "b",
        &[],
        &[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "2")],
    );
    let (_, c) = run_into(
        dir.path(),
        &api_c.base_url(),
        "c",
        &[],
        &[("JOB_COMPLETION_INDEX", "0"), ("PROBE_PARTITIONS", "2")],
    );
    let (_, cases_a) = sent(&dir.path().join("a"), &a);
    let (_, cases_b) = sent(&dir.path().join("b"), &b);
    let (_, cases_c) = sent(&dir.path().join("c"), &c);
    assert_eq!(cases_a.len() as u64, REQUESTS);
    let digest = |ids: &[String]| blake3::hash(ids.join("\n").as_bytes()).to_hex().to_string();
    assert_eq!(
        digest(&cases_a),
        digest(&cases_b),
        "GitLab's part 1 of 2 is the flag's"
    );
    assert_eq!(
        digest(&cases_a),
        digest(&cases_c),
        "Kubernetes' index 0 of 2 is part 1"
    );
    let campaign_of = |r: &Value| r["run"]["tags"]["probe.campaign"].clone();
    assert_eq!(campaign_of(&a), campaign_of(&b));
    assert_eq!(campaign_of(&a), campaign_of(&c));
    // Another pipeline is another campaign, with the seed given the same cases.
    let (_, d) = run_into(
        dir.path(),
        &api_d.base_url(),
        "d",
        &["--partition", "1/2"],
        &[("GITHUB_RUN_ID", "77")],
    );
    assert_ne!(campaign_of(&a), campaign_of(&d));
    assert_eq!(digest(&cases_a), digest(&sent(&dir.path().join("d"), &d).1));
    // A part number past the count is refused before anything is sent.
    let out = run(clean(probe(dir.path()))
        .args(["run", "--spec"])
        .arg(demo_spec())
        .args([
            "--url",
            &api_a.base_url(),
            "--store",
            "e",
            "--requests",
            "5",
        ])
        .env("CI_NODE_INDEX", "3")
        .env("CI_NODE_TOTAL", "2"));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("part 3 of 2 does not exist"));
}

#[test]
fn a_four_part_campaign_merged_reads_as_one_and_loses_no_finding_of_the_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let api = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let url = api.base_url();
    let (_, whole) = run_into(dir.path(), &url, "whole", &[], &[]);
    let parts = campaign(dir.path(), 4, &["--tag", "branch=topic"]);
    // One machine's store is format 2: a merge reads either format.
    let upgraded = probe_in(
        dir.path(),
        &["--store", parts[0].0.to_str().unwrap(), "store", "upgrade"],
    );
    assert_eq!(code(&upgraded), 0);
    let mut args: Vec<String> = vec!["store".into(), "merge".into(), "whole".into()];
    args.extend(parts.iter().map(|(s, _)| s.display().to_string()));
    args.extend(["-o".into(), "team".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = probe_in(dir.path(), &args);
    assert_eq!(code(&merged), 0);
    let verify = probe_in(dir.path(), &["--store", "team", "store", "verify"]);
    assert_eq!(code(&verify), 0, "the merged store verifies");
    // Merging again copies nothing.
    let again = probe_in(dir.path(), &[&args[..], &["--json"]].concat());
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["objects_copied"], 0, "{again}");
    assert_eq!(again["runs_present"], 5, "{again}");

    // One campaign with its four parts.
    let log = probe_in(dir.path(), &["--store", "team", "log", "--json"]);
    let campaigns: Vec<Value> = stdout(&log)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "campaign")
        .map(|v| v["data"].clone())
        .collect();
    assert_eq!(campaigns.len(), 1, "{}", stdout(&log));
    assert_eq!(campaigns[0]["count"], 4);
    assert_eq!(campaigns[0]["parts"].as_array().unwrap().len(), 4);
    assert_eq!(campaigns[0]["missing"], Value::Array(vec![]));
    let table = stdout(&probe_in(dir.path(), &["--store", "team", "log"]));
    assert!(table.contains("4/4"), "{table}");
    assert_eq!(table.matches(" of campaign ").count(), 4, "{table}");

    // The campaign against the one run: nothing the one run found is lost.
    let whole_id = run_id(&whole).0.to_hex();
    let diff = probe_in(
        dir.path(),
        &[
            "--store",
            "team",
            "diff",
            &whole_id,
            "campaign:tag:branch=topic",
            "--json",
        ],
    );
    assert_eq!(code(&diff), 0);
    let diff: Value = serde_json::from_slice(&diff.stdout).unwrap();
    let data = &diff["data"];
    assert!(
        !whole["findings"].as_array().unwrap().is_empty(),
        "the one run finds the planted faults"
    );
    assert_eq!(data["findings"]["lost"], Value::Array(vec![]), "{data}");
    assert_eq!(data["b"]["parts"].as_array().unwrap().len(), 4);
    let total: u64 = parts
        .iter()
        .map(|(_, r)| r["totals"]["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(data["b"]["requests"], total);
    // And the other way round, failing on what is new: the one run has nothing the
    // campaign has not.
    let back = probe_in(
        dir.path(),
        &[
            "--store",
            "team",
            "diff",
            "campaign:latest",
            &whole_id,
            "--fail-on",
            "new-findings",
        ],
    );
    assert_eq!(code(&back), 0, "{}", stdout(&back));
    assert!(stdout(&back).contains("campaign "), "{}", stdout(&back));

    // Judged again, and drawn as one page.
    let recheck = probe_in(
        dir.path(),
        &["--store", "team", "recheck", "campaign:latest", "--json"],
    );
    assert!(matches!(code(&recheck), 0 | 1));
    let rechecked = stdout(&recheck)
        .lines()
        .filter(|l| l.contains("\"type\":\"recheck\""))
        .count();
    let nonempty = parts
        .iter()
        .filter(|(_, r)| r["totals"]["requests"].as_u64().unwrap() > 0)
        .count();
    assert!(
        rechecked >= nonempty,
        "each part rechecked: {}",
        stdout(&recheck)
    );
    let page = dir.path().join("campaign.html");
    let report = probe_in(
        dir.path(),
        &[
            "--store",
            "team",
            "report",
            "campaign:latest",
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&report), 0);
    let html = std::fs::read_to_string(&page).unwrap();
    for op in sent(&dir.path().join("whole"), &whole).0 {
        assert!(html.contains(&op), "the page names {op}");
    }

    // Sent again, part after part, each a replay run of its own.
    let replay = probe_in(
        dir.path(),
        &[
            "--store",
            "team",
            "replay",
            "campaign:latest",
            "--url",
            &url,
            "--json",
        ],
    );
    assert_eq!(code(&replay), 0);
    let replays: Vec<Value> = stdout(&replay)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    assert_eq!(replays.len(), 4, "one replay per part");
    let replayed: BTreeSet<String> = replays
        .iter()
        .map(|r| {
            r["data"]["replayed_run"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(replayed.len(), 4, "each part's run: {replayed:?}");
}

/// The shell block of docs/ci.md after `<!-- recipe: NAME -->`.
fn recipe(name: &str) -> String {
    let doc = std::fs::read_to_string(crate::util::repo().join("docs/ci.md")).unwrap();
    let marker = format!("<!-- recipe: {name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("{marker}")) + marker.len()..];
    let body = &after[after.find("```sh\n").unwrap() + 6..];
    body[..body.find("```").unwrap()].to_owned()
}

/// Runs a step of the recipe in `dir` with bash, `probe` on the PATH.
fn step(dir: &Path, script: &str, vars: &[(&str, &str)]) -> Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_probe"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = clean(Command::new("bash"));
    cmd.current_dir(dir)
        .args(["-eu", "-o", "pipefail", "-c", script])
        .env("PATH", path)
        .env("PROBE_NO_PROGRESS", "1")
        .env_remove("PROBE_STORE")
        .env("SPEC", demo_spec())
        .env("PARTS", "2")
        .env("SEED", "7");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

/// One pipeline of the recipe: each part against an API of its own with `faults`, then the
/// gather step in `dir` with `.probe` restored from `cache` (when there is one); the gather
/// step's exit code.
fn pipeline(dir: &Path, cache: &Path, faults: demo::Faults, vars: &[(&str, &str)]) -> i32 {
    std::fs::create_dir_all(dir).unwrap();
    if cache.exists() {
        copy_dir(cache, &dir.join(".probe"));
    }
    for part in ["1", "2"] {
        let api = RunningFixture::start(demo::router(faults)).unwrap();
        let url = api.base_url();
        let mut all = vec![("PART", part), ("API_URL", url.as_str())];
        all.extend_from_slice(vars);
        let out = step(dir, &recipe("part"), &all);
        assert_eq!(
            code(&out),
            0,
            "the part step passes whatever the API's findings"
        );
        assert!(dir.join(format!("junit-{part}.xml")).exists());
    }
    code(&step(dir, &recipe("gather"), vars))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_ci_recipe_fails_a_change_only_on_a_finding_main_did_not_have() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    // Main's API lacks one fault that a change then brings in.
    let main_faults = demo::Faults {
        stats_as_text: false,
        ..demo::Faults::ALL
    };
    let main = root.path().join("main");
    let vars = [
        ("BRANCH", "main"),
        ("COMMIT", "aaa"),
        ("BUDGET", "3s"),
        ("GITHUB_RUN_ID", "1"),
    ];
    assert_eq!(
        pipeline(&main, &cache, main_faults, &vars),
        0,
        "main compares with nothing"
    );
    assert!(main.join("report.html").exists());
    assert!(
        !main.join("diff.html").exists(),
        "main's gather step compares nothing"
    );
    // Main saves its store to the cache.
    copy_dir(&main.join(".probe"), &cache);

    // A change that brings the fault in fails, and keeps both pages.
    let bad = root.path().join("bad");
    let vars = [
        ("BRANCH", "topic"),
        ("COMMIT", "bbb"),
        ("BUDGET", "1s"),
        ("GITHUB_RUN_ID", "2"),
    ];
    assert_eq!(
        pipeline(&bad, &cache, demo::Faults::ALL, &vars),
        1,
        "a new finding fails the change"
    );
    let diff = std::fs::read_to_string(bad.join("diff.html")).unwrap();
    assert!(
        diff.contains("getStats"),
        "the page names the operation of the new finding"
    );
    assert!(bad.join("report.html").exists());

    // A change with main's faults passes: what main had is not news.
    let good = root.path().join("good");
    let vars = [
        ("BRANCH", "topic"),
        ("COMMIT", "ccc"),
        ("BUDGET", "1s"),
        ("GITHUB_RUN_ID", "3"),
    ];
    assert_eq!(
        pipeline(&good, &cache, main_faults, &vars),
        0,
        "nothing new, nothing failed"
    );
    let log = stdout(&probe_in(&good, &["--store", ".probe", "log", "--json"]));
    assert_eq!(
        log.matches(r#""type":"campaign""#).count(),
        2,
        "main's campaign and this one: {log}"
    );
}

#[test]
fn the_ci_workflows_run_the_recipe_as_written() {
    let doc = std::fs::read_to_string(crate::util::repo().join("docs/ci.md")).unwrap();
    let github = &doc[doc.find("## GitHub Actions").unwrap()..doc.find("## GitLab CI").unwrap()];
    let gitlab = &doc[doc.find("## GitLab CI").unwrap()..];
    for name in ["part", "gather"] {
        for line in recipe(name)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            assert!(github.contains(line), "the GitHub workflow runs `{line}`");
            assert!(gitlab.contains(line), "the GitLab job runs `{line}`");
        }
    }
}
