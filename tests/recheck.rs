//! `probe recheck` end to end: a stored run judged again, sending nothing.

use std::collections::BTreeMap;
use std::path::Path;

use probe::fixture::{demo, RunningFixture};
use probe::ids::{Digest, RunId};
use probe::model::{FindingSet, RunEnd};
use probe::store::Store;
use serde_json::Value;

use crate::util::{code, demo_spec, probe, run, run_id, Campaign};

/// Runs the demo fixture (fresh, so every run sees the same answers) with 4 workers and
/// returns the run id.
pub fn stored_run(
    dir: &Path,
    faults: demo::Faults,
    seed: u64,
    name: &str,
    extra: &[&str],
) -> RunId {
    stored_run_with(dir, faults, seed, name, 4, extra)
}

/// [`stored_run`] with `workers` in flight. With one worker the fixture's answers repeat
/// exactly; with more, a read and a delete of the same pet in one batch may race.
pub fn stored_run_with(
    dir: &Path,
    faults: demo::Faults,
    seed: u64,
    name: &str,
    workers: usize,
    extra: &[&str],
) -> RunId {
    let fixture = RunningFixture::start(demo::router(faults)).expect("fixture starts");
    let spec = demo_spec();
    let campaign = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed,
        workers,
        requests: 300,
    };
    let mut args = vec!["--name", name];
    args.extend_from_slice(extra);
    let (out, report) = campaign.run(dir, &args);
    assert!(code(&out) <= 1, "the run succeeds");
    run_id(&report)
}

fn recheck(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = probe(dir);
    cmd.args([
        "--store",
        dir.join("store").to_str().unwrap(),
        "recheck",
        "--json",
    ]);
    cmd.args(args);
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().expect("one JSON line");
    (code(&out), serde_json::from_str(line).expect("JSON"))
}

/// (key_by_message → interactions) of one oracle's findings.
fn by_key(set: &FindingSet, oracle: &str) -> BTreeMap<String, usize> {
    set.findings
        .iter()
        .filter(|f| f.oracle == oracle)
        .map(|f| (f.key_by_message.clone(), f.interactions.len()))
        .collect()
}

fn set_of(store: &Store, v: &Value) -> FindingSet {
    let id = Digest::from_hex(v["data"]["finding_set"].as_str().unwrap()).unwrap();
    store.get(id).unwrap()
}

#[test]
fn an_oracle_added_after_the_run_finds_what_it_would_have_found_at_run_time() {
    let dir = tempfile::tempdir().unwrap();
    // One worker each, so the fixture answers both runs alike (see `stored_run_with`).
    // Without shrinking: which findings a run shrinks depends on the oracles switched on
    // at run time, so the two runs would not send the same requests.
    let off = stored_run_with(
        dir.path(),
        demo::Faults::ALL,
        7,
        "off",
        1,
        &[
            "--set",
            "checks.server_error=false",
            "--set",
            "shrink.enabled=false",
        ],
    );
    let on = stored_run_with(
        dir.path(),
        demo::Faults::ALL,
        7,
        "on",
        1,
        &["--set", "shrink.enabled=false"],
    );
    let store_dir = dir.path().join("store");
    let (end_before, sets_before) = {
        let store = Store::open_existing(&store_dir).unwrap();
        let end = store.run_end(off).unwrap().unwrap();
        let set: FindingSet = store.get(end.findings.0).unwrap();
        assert!(
            by_key(&set, "server_error").is_empty(),
            "switched off at run time"
        );
        (end, store.finding_sets_of(off).unwrap())
    };

    let (exit, v) = recheck(dir.path(), &["off", "--set", "checks.server_error=true"]);
    assert_eq!(exit, 1, "the recheck found what the run did not");
    assert_eq!(v["type"], "recheck");
    assert_eq!(v["data"]["run"], off.to_string());
    assert_eq!(v["data"]["new_set"], true);
    let gained = v["data"]["delta"]["gained"].as_array().unwrap();
    assert!(!gained.is_empty());
    assert!(
        gained.iter().all(|f| f["oracle"] == "server_error"),
        "{gained:?}"
    );
    assert_eq!(v["data"]["delta"]["lost"], Value::Array(vec![]));

    let store = Store::open_existing(&store_dir).unwrap();
    let rechecked = set_of(&store, &v);
    let on_end: RunEnd = store.run_end(on).unwrap().unwrap();
    let at_run_time: FindingSet = store.get(on_end.findings.0).unwrap();
    let expected = by_key(&at_run_time, "server_error");
    assert!(!expected.is_empty(), "the demo's 5xx fault was hit");
    assert_eq!(
        by_key(&rechecked, "server_error"),
        expected,
        "same keys, same number of interactions as judging at run time"
    );
    // Every other oracle agrees too: the whole set equals the run-time set of the other run
    // but for the interaction ids (the two runs recorded different timings).
    let shape = |s: &FindingSet| -> Vec<(String, String, String, usize)> {
        s.findings
            .iter()
            .map(|f| {
                (
                    f.oracle.clone(),
                    f.operation.clone(),
                    f.key_by_message.clone(),
                    f.interactions.len(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&rechecked), shape(&at_run_time));

    // The run is not modified: same end manifest, its run-time set still first, one more set.
    assert_eq!(store.run_end(off).unwrap().unwrap(), end_before);
    let sets_after = store.finding_sets_of(off).unwrap();
    assert_eq!(sets_after[0], end_before.findings);
    assert_eq!(sets_after.len(), sets_before.len() + 1);
    assert!(sets_after.contains(&rechecked_id(&v)));
    assert_eq!(
        store.newest_finding_set(off).unwrap(),
        Some(rechecked_id(&v))
    );
}

fn rechecked_id(v: &Value) -> probe::ids::FindingSetId {
    probe::ids::FindingSetId(Digest::from_hex(v["data"]["finding_set"].as_str().unwrap()).unwrap())
}

#[test]
fn a_recheck_by_the_same_build_reproduces_the_run_time_findings_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = stored_run(dir.path(), demo::Faults::ALL, 11, "same", &[]);
    for threads in ["1", "2", "3"] {
        let (exit, v) = recheck(
            dir.path(),
            &[&run_id.to_string()[..8], "--threads", threads],
        );
        assert_eq!(exit, 0, "nothing new");
        let store = Store::open_existing(&dir.path().join("store")).unwrap();
        let end = store.run_end(run_id).unwrap().unwrap();
        let at_run_time: FindingSet = store.get(end.findings.0).unwrap();
        assert!(!at_run_time.findings.is_empty());
        assert_eq!(
            set_of(&store, &v),
            at_run_time,
            "byte for byte, {threads} threads"
        );
        assert_eq!(rechecked_id(&v), end.findings, "hence the very same object");
        assert_eq!(v["data"]["new_set"], false);
        let delta = &v["data"]["delta"];
        assert_eq!(delta["gained"], Value::Array(vec![]));
        assert_eq!(delta["lost"], Value::Array(vec![]));
        assert_eq!(
            delta["kept"].as_array().unwrap().len(),
            at_run_time.findings.len()
        );
        assert_eq!(store.finding_sets_of(run_id).unwrap(), vec![end.findings]);
    }
}

#[test]
fn only_the_named_oracles_are_applied_and_bad_names_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    stored_run(dir.path(), demo::Faults::ALL, 5, "some", &[]);
    let (exit, v) = recheck(dir.path(), &["some", "--oracle", "F100"]);
    assert_eq!(exit, 0);
    let oracles: Vec<&str> = v["data"]["oracles"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(oracles, ["server_error"]);
    assert_eq!(
        v["data"]["delta"]["lost"],
        Value::Array(vec![]),
        "others are not 'vanished'"
    );

    let store = dir.path().join("store");
    let out = run(probe(dir.path()).args([
        "--store",
        store.to_str().unwrap(),
        "recheck",
        "some",
        "--set",
        "checks.server_error=false",
    ]));
    assert_eq!(code(&out), 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("recheck of run"), "{text}");
    assert!(text.contains("wrote finding set"), "{text}");
    assert!(text.contains("ORACLE"), "{text}");
    assert!(!text.contains("server_error "), "switched off: {text}");
    let out = run(probe(dir.path()).args([
        "--store",
        store.to_str().unwrap(),
        "recheck",
        "some",
        "--oracle",
        "nope",
    ]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no oracle is named `nope`"));
    let out = run(probe(dir.path()).args([
        "--store",
        store.to_str().unwrap(),
        "recheck",
        "some",
        "--set",
        "generation.maxDepth=3",
    ]));
    assert_eq!(code(&out), 2, "only checks.* can change");
    let out =
        run(probe(dir.path()).args(["--store", store.to_str().unwrap(), "recheck", "zzzz-none"]));
    assert_eq!(code(&out), 2, "an unknown run is a usage error");
}

/// Replaces every `$ref` equal to `from` with `to`, anywhere in `v`.
fn rewrite_refs(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(from) {
                map.insert("$ref".into(), Value::String(to.into()));
            }
            map.values_mut().for_each(|x| rewrite_refs(x, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| rewrite_refs(x, from, to)),
        _ => {}
    }
}

/// A description split over three files (one below the main document, one reached from
/// there with `..`) is stored whole: after the files are gone, recheck judges every
/// interaction and finds what the run found, the schema fault of `getPet` included (its
/// schema lives in another file).
#[test]
fn a_run_of_a_document_split_over_files_is_rechecked_after_the_files_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let api = dir.path().join("api");
    std::fs::create_dir_all(api.join("schemas")).unwrap();
    let mut doc: Value = serde_yaml::from_str(demo::DOCUMENT).unwrap();
    let mut pet = doc["components"]["schemas"]
        .as_object_mut()
        .unwrap()
        .remove("Pet")
        .unwrap();
    pet["properties"]["tag"] = serde_json::json!({"$ref": "../common.json#/Tag"});
    rewrite_refs(
        &mut doc,
        "#/components/schemas/Pet",
        "schemas/pet.json#/Pet",
    );
    let write = |path: &Path, v: &Value| {
        std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    };
    write(&api.join("main.json"), &doc);
    write(
        &api.join("schemas/pet.json"),
        &serde_json::json!({"Pet": pet}),
    );
    write(
        &api.join("common.json"),
        &serde_json::json!({"Tag": {"type": "string", "maxLength": 20}}),
    );

    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture");
    let spec = api.join("main.json");
    let campaign = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 7,
        workers: 1,
        requests: 300,
    };
    let (out, report) = campaign.run(dir.path(), &["--name", "split"]);
    assert_eq!(code(&out), 1, "the demo's faults are found");
    assert_eq!(
        report["skipped"],
        Value::Array(vec![]),
        "every operation loads"
    );
    let split = run_id(&report);
    std::fs::remove_dir_all(&api).unwrap();

    let (exit, v) = recheck(dir.path(), &["split"]);
    assert_eq!(exit, 0, "nothing the run-time judging did not have");
    assert_eq!(
        v["data"]["new_set"], false,
        "the run-time set, reproduced: {v}"
    );
    assert_eq!(v["data"]["unjudged"], 0, "{v}");
    assert_eq!(v["data"]["delta"]["gained"], Value::Array(vec![]), "{v}");
    assert_eq!(v["data"]["delta"]["lost"], Value::Array(vec![]), "{v}");
    let store = Store::open_existing(&dir.path().join("store")).unwrap();
    let at_run_time: FindingSet = store
        .get(store.run_end(split).unwrap().unwrap().findings.0)
        .unwrap();
    let schema_faults = by_key(&at_run_time, "response_schema_conformance");
    assert!(!schema_faults.is_empty(), "getPet's missing name was found");
    assert_eq!(
        by_key(&set_of(&store, &v), "response_schema_conformance"),
        schema_faults
    );
    // gc keeps the stored files: a recheck after it still rebuilds every operation. (gc
    // needs the store alone: this process closes it first.)
    drop(store);
    let gc = run(probe(dir.path()).args([
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "store",
        "gc",
    ]));
    assert_eq!(code(&gc), 0, "{}", String::from_utf8_lossy(&gc.stderr));
    let (_, again) = recheck(dir.path(), &["split"]);
    assert_eq!(again["data"]["unjudged"], 0, "{again}");
}

/// `probe recheck --events -` writes one campaign of kind `recheck` per run, on standard
/// output: `run_started` naming the run, one `finding` per distinct finding of the new
/// finding set, `run_ended` with the interactions judged; no `interaction` (nothing is
/// sent). The recheck's own JSON Lines go to standard error.
#[test]
fn recheck_writes_the_event_stream_of_each_run() {
    use probe::events::{CampaignKind, Record, RecordEvent};
    let dir = tempfile::tempdir().unwrap();
    let first = stored_run(dir.path(), demo::Faults::ALL, 11, "first", &[]);
    let second = stored_run(dir.path(), demo::Faults::ALL, 12, "second", &[]);
    let mut cmd = probe(dir.path());
    cmd.args([
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "recheck",
        "--json",
        "--events",
        "-",
        "first",
        "second",
    ]);
    let out = run(&mut cmd);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let records: Vec<Record> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let reports: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        reports.len(),
        2,
        "the recheck's own lines are on standard error"
    );
    // Two campaigns, one after the other.
    let starts: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.event, RecordEvent::RunStarted { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0], 0);
    for ((report, run), (at, end)) in reports
        .iter()
        .zip([first, second])
        .zip([(starts[0], starts[1]), (starts[1], records.len())])
    {
        let campaign = &records[at..end];
        let data = &report["data"];
        assert_eq!(data["run"].as_str(), Some(run.to_string().as_str()));
        assert!(
            matches!(&campaign[0].event, RecordEvent::RunStarted {
                kind: CampaignKind::Recheck, run: r, of: None, ..
            } if *r == run.to_string()),
            "{:?}",
            campaign[0]
        );
        let findings = campaign
            .iter()
            .filter(|r| matches!(r.event, RecordEvent::Finding { .. }))
            .count() as u64;
        assert!(findings > 0);
        assert_eq!(Some(findings), data["findings"].as_u64());
        assert!(!campaign
            .iter()
            .any(|r| matches!(r.event, RecordEvent::Interaction { .. })));
        assert!(
            matches!(&campaign[campaign.len() - 1].event, RecordEvent::RunEnded {
                kind: CampaignKind::Recheck, run: r, interactions, findings: f, ..
            } if *r == run.to_string()
                && Some(*interactions) == data["interactions"].as_u64()
                && Some(*f as u64) == data["findings"].as_u64()),
            "{:?}",
            campaign.last()
        );
    }
}
