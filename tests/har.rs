//! HAR both ways and reproducers, end to end against the demo fixture on 127.0.0.1:
//! `probe export --format har` validates against a HAR 1.2 schema written from the spec
//! (`tests/data/har-1.2.schema.json`) and keeps credentials redacted; the file seeds a
//! second run through `--seed-requests`; `probe show --as curl`, run with the real curl,
//! reproduces a finding's status and message.

use std::path::Path;
use std::process::Command;

use probe::fixture::{demo, RunningFixture};
use probe::har::seed::{SEEDED_MODE, SEEDED_SEQ};
use probe::model::{Interaction, TestCase};
use probe::store::Store;
use serde_json::Value;

use crate::util::{code, demo_spec, probe, read_json, repo, run, run_id, Campaign};

/// A run against a fresh demo fixture (every fault), with `extra` arguments; its report and
/// the fixture's base URL (the fixture is stopped).
fn demo_run(dir: &Path, seed: u64, requests: u64, extra: &[&str]) -> (String, Value, String) {
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let spec = demo_spec();
    let url = fixture.base_url();
    let (out, report) = Campaign {
        spec: &spec,
        url: &url,
        seed,
        workers: 1,
        requests,
    }
    .run(dir, extra);
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    (
        url,
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn export(dir: &Path, run: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd = probe(dir);
    cmd.args(["export", run, "--format", "har", "--store"])
        .arg(dir.join("store"))
        .args(extra);
    run_cmd(&mut cmd)
}

fn run_cmd(cmd: &mut Command) -> std::process::Output {
    let out = run(cmd);
    assert_eq!(code(&out), 0, "the command succeeds");
    out
}

fn har_schema() -> jsonschema::Validator {
    let schema = read_json(&repo().join("tests/data/har-1.2.schema.json"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the HAR schema compiles")
}

fn errors(validator: &jsonschema::Validator, har: &Value) -> Vec<String> {
    validator
        .iter_errors(har)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// The export is HAR 1.2 (by the schema), one entry per interaction in seq order, holds the
/// bodies, and never the credential the run was given; the schema itself refuses a HAR
/// with a required field missing, so the check can fail.
#[test]
fn export_is_valid_har_with_every_interaction_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report, _) = demo_run(
        dir.path(),
        7,
        120,
        &[
            "--bearer",
            "sekrit-token-4711",
            "--header",
            "X-Tenant: t-secret-99",
        ],
    );
    let run = run_id(&report).to_string();
    let out = export(dir.path(), &run, &[]);
    let har: Value = serde_json::from_slice(&out.stdout).expect("the export is JSON");
    let file = dir.path().join("run.har");
    export(dir.path(), &run[..12], &["-o", file.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        out.stdout,
        "-o writes what stdout shows"
    );

    let validator = har_schema();
    assert_eq!(errors(&validator, &har), Vec::<String>::new());
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(
        entries.len() as u64,
        report["totals"]["requests"].as_u64().unwrap()
    );
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e["_probe"]["seq"], i as u64, "entries in seq order");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sekrit-token-4711") && !text.contains("t-secret-99"));
    assert!(text.contains("<probe:secret>"), "the placeholders are kept");
    // Bodies both ways: a creation's JSON body, and its answer.
    let post = entries
        .iter()
        .find(|e| e["request"]["method"] == "POST" && e["response"]["status"] == 201)
        .expect("a pet created");
    let sent: Value = serde_json::from_str(post["request"]["postData"]["text"].as_str().unwrap())
        .expect("the request body as text");
    assert!(sent.is_object());
    let answered: Value =
        serde_json::from_str(post["response"]["content"]["text"].as_str().unwrap()).unwrap();
    assert!(answered["id"].is_u64(), "{answered}");
    assert!(post["startedDateTime"].as_str().unwrap().ends_with('Z'));

    // The schema catches what is wrong.
    let mut broken = har.clone();
    broken["log"]["entries"][0]["request"]
        .as_object_mut()
        .unwrap()
        .remove("headers");
    broken["log"]["entries"][1]["timings"]["wait"] = Value::from(-5);
    assert_eq!(
        errors(&validator, &broken).len(),
        2,
        "{:?}",
        errors(&validator, &broken)
    );
}

/// A run's export seeds another run: the mutation strategy changes requests of the HAR
/// (a change's `from` names a seeded test case, stored, made from an entry), and entries
/// that match no operation are said once on standard error.
#[test]
fn an_exported_run_seeds_the_mutation_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report, _) = demo_run(dir.path(), 3, 80, &[]);
    let file = dir.path().join("seed.har");
    export(
        dir.path(),
        &run_id(&report).to_string(),
        &["-o", file.to_str().unwrap()],
    );
    // An entry no operation has, put first in the file (the note names the first five).
    let mut har = read_json(&file);
    let mut stray = har["log"]["entries"][0].clone();
    stray["request"]["url"] = Value::from("http://127.0.0.1:1/nowhere/at/all");
    stray["response"]["status"] = Value::from(200);
    har["log"]["entries"]
        .as_array_mut()
        .unwrap()
        .insert(0, stray);
    std::fs::write(&file, serde_json::to_vec(&har).unwrap()).unwrap();

    let (_, seeded, stderr) = demo_run(
        dir.path(),
        11,
        150,
        &["--seed-requests", file.to_str().unwrap()],
    );
    assert!(
        stderr.contains("entries seed the mutation strategy"),
        "{stderr}"
    );
    assert!(stderr.contains("match no operation"), "{stderr}");
    assert!(stderr.contains("/nowhere/at/all"), "{stderr}");
    assert_eq!(
        seeded["run"]["settings"]["mutation.seedRequests"],
        file.to_str().unwrap(),
        "the run's settings name the file"
    );

    let store = Store::open_existing(&dir.path().join("store")).unwrap();
    let seeded_run = run_id(&seeded);
    let mut from_seeds = 0;
    for row in store.interactions_of(seeded_run).unwrap() {
        let case: TestCase = store.get(row.case.0).unwrap();
        let Some(m) = case.mutation else { continue };
        if m.from.seq >= SEEDED_SEQ {
            let origin: TestCase = store.get(m.from.case.0).expect("the seeded case is stored");
            assert_eq!(origin.mode, SEEDED_MODE);
            assert_eq!(origin.operation, case.operation);
            from_seeds += 1;
        }
    }
    assert!(from_seeds > 0, "some changes were made to seeded requests");

    // The same run without the file changes only requests it sent itself.
    let (_, plain, _) = demo_run(dir.path(), 11, 150, &[]);
    for row in store_interactions(dir.path(), &plain) {
        if let Some(m) = row.mutation {
            assert!(m.from.seq < SEEDED_SEQ);
        }
    }

    // An unreadable file is an error naming the file and where.
    let bad = dir.path().join("bad.har");
    std::fs::write(
        &bad,
        br#"{"log": {"entries": [{"request": {"method": 1}}]}}"#,
    )
    .unwrap();
    let mut cmd = probe(dir.path());
    cmd.args(["run", "--spec"])
        .arg(demo_spec())
        .args(["--url", "http://127.0.0.1:9", "--requests", "1", "--store"])
        .arg(dir.path().join("store"))
        .arg("--seed-requests")
        .arg(&bad);
    let out = run(&mut cmd);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.har") && stderr.contains("/log/entries/0/request/method"),
        "{stderr}"
    );
}

fn store_interactions(dir: &Path, report: &Value) -> Vec<TestCase> {
    let store = Store::open_existing(&dir.join("store")).unwrap();
    store
        .interactions_of(run_id(report))
        .unwrap()
        .into_iter()
        .map(|row| store.get(row.case.0).unwrap())
        .collect()
}

/// Fails, naming the tool, when `tool` is not on the PATH: a test that needs it is ignored
/// by `cargo test` (so it is listed as ignored, never passed silently) and run by
/// `.ci/run`, which installs it.
fn needs(tool: &str) {
    assert!(
        which(tool),
        "{tool} is not installed: this test needs it (`.ci/run` installs it; apt-get install {tool})"
    );
}

/// `probe show <finding> --as curl`, run by the real curl against the fixture, gets the
/// status and the message the run recorded.
#[test]
#[ignore = "needs curl: .ci/run installs it and runs the ignored tests"]
fn the_curl_reproducer_of_a_finding_reproduces_it() {
    needs("curl");
    let dir = tempfile::tempdir().unwrap();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let spec = demo_spec();
    let url = fixture.base_url();
    let (out, report) = Campaign {
        spec: &spec,
        url: &url,
        seed: 5,
        workers: 1,
        requests: 300,
    }
    .run(dir.path(), &[]);
    assert_eq!(code(&out), 1, "the demo's faults are found");
    let findings = report["findings"].as_array().unwrap();
    let n = findings
        .iter()
        .position(|f| f["oracle"] == "server_error")
        .expect("the demo's 500 is found")
        + 1;
    let store = Store::open_existing(&dir.path().join("store")).unwrap();
    let set = store
        .newest_finding_set(run_id(&report))
        .unwrap()
        .expect("a finding set");
    let name = format!("{}:{n}", set.short(12));
    let mut cmd = probe(dir.path());
    cmd.args(["show", &name, "--as", "curl", "--store"])
        .arg(dir.path().join("store"));
    let line = String::from_utf8(run_cmd(&mut cmd).stdout).unwrap();
    let line = line.trim();
    assert!(line.starts_with("curl -X GET "), "{line}");
    assert_eq!(
        line,
        findings[n - 1]["curl"].as_str().unwrap(),
        "the line report.json prints"
    );

    // The line re-sends the finding's reproducer (the smallest request that showed it).
    let finding = &findings[n - 1];
    let reproducer = match &finding["reproducer"] {
        Value::String(_) => &finding["reproducer"],
        _ => &finding["interactions"][0],
    };
    let id = probe::ids::Digest::from_hex(reproducer.as_str().unwrap()).unwrap();
    let recorded: Interaction = store.get(id).unwrap();
    let recorded_response = recorded.outcome.response().unwrap();
    let recorded_body = store
        .body_bytes(recorded_response.body.as_ref().unwrap())
        .unwrap();

    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{line} -sS -w '\\n%{{http_code}}'"))
        .output()
        .expect("sh runs curl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    assert_eq!(status, recorded_response.status.to_string());
    assert_eq!(status, "500");
    assert_eq!(
        body.as_bytes(),
        recorded_body.as_slice(),
        "the same message"
    );

    // The other forms read the same request.
    for form in ["httpie", "python"] {
        let mut cmd = probe(dir.path());
        cmd.args(["show", &name, "--as", form, "--store"])
            .arg(dir.path().join("store"));
        let text = String::from_utf8(run_cmd(&mut cmd).stdout).unwrap();
        assert!(text.contains(&recorded.request.url), "{form}: {text}");
    }
    // The snapshot of the shape, the port made constant.
    insta::assert_snapshot!(
        "show_finding_as_curl",
        line.replace(&url, "http://127.0.0.1:PORT")
    );
}

/// A series finding's reproducer is a shell script of the series' curl steps that binds
/// the created resource's id; run with curl and jq against a fresh fixture, every step
/// gets the status it was recorded with.
/// `probe show <finding of a series> --as curl` writes a script that binds the ids the
/// creation answers and uses them in the later steps.
#[test]
fn the_series_script_binds_the_ids_of_the_creation() {
    series_script(false);
}

/// That script, run by sh with the real curl and jq against a fresh fixture, replays the
/// series.
#[test]
#[ignore = "needs curl and jq: .ci/run installs them and runs the ignored tests"]
fn the_series_script_replays_the_series_with_its_bindings() {
    series_script(true);
}

/// The series script's test; `run_it`: run it too.
fn series_script(run_it: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (url, report, _) = demo_run(dir.path(), 5, 300, &[]);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f["series"].is_string())
        .expect("a finding of a series oracle")
        + 1;
    let store = Store::open_existing(&dir.path().join("store")).unwrap();
    let set = store.newest_finding_set(run_id(&report)).unwrap().unwrap();
    let mut cmd = probe(dir.path());
    cmd.args([
        "show",
        &format!("{}:{finding}", set.short(12)),
        "--as",
        "curl",
        "--store",
    ])
    .arg(dir.path().join("store"));
    let script = String::from_utf8(run_cmd(&mut cmd).stdout).unwrap();
    assert!(script.starts_with("#!/bin/sh\n"), "{script}");
    assert!(
        script.contains("v1=$("),
        "the creation's id is bound: {script}"
    );
    assert!(script.contains("\"$v1\""), "and used: {script}");

    if !run_it {
        return;
    }
    needs("curl");
    needs("jq");
    // A fresh fixture on another port: the script's URLs are rewritten to it, and the ids
    // it hands out start again, so only binding makes the later steps find the pet.
    let fresh = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let script = script.replace(&url, &fresh.base_url());
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded: Vec<&str> = script
        .lines()
        .filter_map(|l| l.strip_prefix("# step "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    let got: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("step "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(got, recorded, "{stdout}");
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every header the API received is in the HAR entries, those the client added on the way
/// out (`host`, `user-agent`, a body's `content-length`) among them, with the values sent.
#[test]
fn export_lists_every_header_the_api_received() {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    type Received = Vec<Vec<(String, String)>>;
    let seen: Arc<Mutex<Received>> = Arc::default();
    let kept = seen.clone();
    let router = demo::router(demo::Faults::NONE).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let headers = request
                .headers()
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect();
            kept.lock().unwrap().push(headers);
            next.run(request)
        },
    ));
    let dir = tempfile::tempdir().unwrap();
    let fixture = RunningFixture::start(router).expect("fixture starts");
    let spec = demo_spec();
    let (out, report) = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 5,
        workers: 1,
        requests: 60,
    }
    .run(dir.path(), &[]);
    assert!(matches!(code(&out), 0 | 1));
    let har: Value =
        serde_json::from_slice(&export(dir.path(), &run_id(&report).to_string(), &[]).stdout)
            .unwrap();
    assert_eq!(errors(&har_schema(), &har), Vec::<String>::new());
    let entries = har["log"]["entries"].as_array().unwrap();
    let in_har: BTreeSet<(String, String)> = entries
        .iter()
        .flat_map(|e| e["request"]["headers"].as_array().unwrap().iter())
        .map(|h| {
            (
                h["name"].as_str().unwrap().to_ascii_lowercase(),
                h["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let received: BTreeSet<(String, String)> =
        seen.lock().unwrap().iter().flatten().cloned().collect();
    let missing: Vec<_> = received.difference(&in_har).collect();
    assert!(missing.is_empty(), "sent but not in the HAR: {missing:?}");
    for e in entries {
        let names: Vec<&str> = e["request"]["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"host") && names.contains(&"user-agent"),
            "{names:?}"
        );
        if e["request"]["postData"].is_object() {
            assert!(names.contains(&"content-length"), "{names:?}");
        }
    }
}
