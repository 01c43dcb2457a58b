//! `probe store upgrade`: format-1 stores (the committed samples, and a real campaign)
//! rewritten as format 2 answer every command as they did before; and the committed
//! format-2 sample store, which every later build must read.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use probe::fixture::{demo, RunningFixture};
use probe::store::Store;

use crate::util::repo;

fn probe_at(store: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_probe"))
        .env("PROBE_NO_PROGRESS", "1")
        .env_remove("PROBE_STORE")
        // A store these tests create is one to upgrade: format 1.
        .env("PROBE_STORE_FORMAT", "1")
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .expect("probe runs");
    eprintln!(
        "$ probe {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn format_of(store: &Path) -> String {
    fs::read_to_string(store.join("FORMAT")).unwrap()
}

#[test]
fn the_committed_format_1_samples_upgrade_and_read_the_same() {
    for sample in ["format-1", "format-1-index-2"] {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join(sample);
        copy_dir(&repo().join("store-format/samples").join(sample), &s);
        let before = text(&probe_at(&s, &["show", "synth-2026"]));
        let log_before = probe_at(&s, &["log", "--json"]);

        let out = probe_at(&s, &["store", "upgrade"]);
        assert_eq!(out.status.code(), Some(0), "{sample}: upgrade succeeds");
        assert!(text(&out).starts_with("upgraded "), "{}", text(&out));
        assert!(format_of(&s).starts_with("probe-store 2."), "{sample}");
        assert!(!s.join("packs").exists() && !s.join("index.sqlite").exists());

        assert_eq!(probe_at(&s, &["store", "verify"]).status.code(), Some(0));
        assert_eq!(
            text(&probe_at(&s, &["show", "synth-2026"])),
            before,
            "{sample}"
        );
        assert_eq!(
            text(&probe_at(&s, &["log", "--json"])),
            text(&log_before),
            "{sample}"
        );
        let again = probe_at(&s, &["store", "upgrade"]);
        assert_eq!(again.status.code(), Some(0));
        assert!(
            text(&again).contains("format 2 already"),
            "{}",
            text(&again)
        );
    }
}

/// A campaign recorded in format 1, rechecked, diffed and exported before and after the
/// upgrade: the same answers, and replay sends from the upgraded store.
#[test]
fn a_campaign_upgraded_to_format_2_answers_as_before() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture");
    let spec = repo().join("fixtures/demo/openapi.yaml");
    let mut reports = Vec::new();
    for name in ["a", "b"] {
        let report = d.path().join(format!("{name}.json"));
        let out = probe_at(
            &s,
            &[
                "run",
                "--spec",
                spec.to_str().unwrap(),
                "--url",
                &fixture.base_url(),
                "--seed",
                "11",
                "--workers",
                "2",
                "--requests",
                "400",
                "--name",
                name,
                "--report",
                report.to_str().unwrap(),
            ],
        );
        assert!(out.status.code().is_some_and(|c| c <= 1));
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
        reports.push(v);
    }
    assert!(format_of(&s).starts_with("probe-store 1."));
    let answers = || {
        let recheck = probe_at(&s, &["recheck", "a", "--json"]);
        let diff = probe_at(&s, &["diff", "a", "b", "--json"]);
        let har = probe_at(&s, &["export", "b", "--format", "har"]);
        let show = probe_at(&s, &["show", "a"]);
        let recheck: serde_json::Value =
            serde_json::from_str(text(&recheck).lines().next().unwrap_or("null")).unwrap();
        let diff: serde_json::Value =
            serde_json::from_str(text(&diff).lines().next().unwrap_or("null")).unwrap();
        // Everything but the time it took: the same finding set (by id), the same counts.
        let mut recheck = recheck["data"].clone();
        recheck.as_object_mut().map(|o| o.remove("elapsed_ms"));
        (recheck, diff["data"].clone(), har.stdout, text(&show))
    };
    let before = answers();
    let out = probe_at(&s, &["store", "upgrade"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(format_of(&s).starts_with("probe-store 2."));
    let after = answers();
    assert_eq!(before.0, after.0, "recheck finds the same");
    assert!(before.0["findings"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(before.1, after.1, "diff says the same");
    assert_eq!(
        before.2, after.2,
        "the HAR export is byte for byte the same"
    );
    assert_eq!(before.3, after.3, "show lists the same");

    // Replay sends a recorded request again from the upgraded store.
    let target = reports[0]["findings"][0]["replay"]
        .as_str()
        .expect("the faulty fixture gives findings")
        .trim_start_matches("probe replay ")
        .to_owned();
    let replay = probe_at(&s, &["replay", &target, "--url", &fixture.base_url()]);
    assert!(replay.status.code().is_some_and(|c| c <= 1), "replay runs");
    assert_eq!(probe_at(&s, &["store", "verify"]).status.code(), Some(0));
    let store = Store::open_existing(&s).unwrap();
    assert_eq!(store.runs().unwrap().len(), 3, "two runs and the replay");
}

/// The committed format-2 sample: `samples/format-1` upgraded by this build (one run of 4
/// interactions: an exchange block whose interactions name their test cases inside the
/// block and their run outside it, a blob block, meta blocks). Format 2.0 is released, so
/// the sample is never written again: what a later build must read is what 2.0 wrote.
#[test]
fn the_committed_format_2_sample_store_opens_verifies_and_reads() {
    let samples = repo().join("store-format/samples");
    let committed = samples.join("format-2");
    // How it was made; kept so that a new format's sample is made the same way.
    if std::env::var_os("PROBE_REGENERATE_FORMAT_2_SAMPLE").is_some() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("s");
        copy_dir(&samples.join("format-1"), &s);
        assert_eq!(probe_at(&s, &["store", "upgrade"]).status.code(), Some(0));
        let _ = fs::remove_dir_all(&committed);
        fs::create_dir_all(&committed).unwrap();
        for name in ["FORMAT", "index-2.sqlite", "packs-2", "reports"] {
            let from = s.join(name);
            if from.is_dir() {
                copy_dir(&from, &committed.join(name));
            } else {
                fs::copy(&from, committed.join(name)).unwrap();
            }
        }
    }
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("sample");
    copy_dir(&committed, &s);
    assert!(format_of(&s).starts_with("probe-store 2.0"));
    assert_eq!(probe_at(&s, &["store", "verify"]).status.code(), Some(0));
    // It reads as the format-1 sample it was made from.
    let one = d.path().join("one");
    copy_dir(&samples.join("format-1"), &one);
    for args in [
        &["show", "synth-2026"][..],
        &["log", "--json"],
        &["export", "synth-2026", "--format", "har"],
    ] {
        let two = probe_at(&s, args);
        assert_eq!(two.status.code(), Some(0), "{args:?}");
        assert_eq!(text(&two), text(&probe_at(&one, args)), "{args:?}");
    }
    let store = Store::open_existing(&s).unwrap();
    let run = store.runs().unwrap()[0].id;
    for row in store.interactions_of(run).unwrap() {
        let i: probe::model::Interaction = store.get(row.id.0).unwrap();
        store.get::<probe::model::TestCase>(i.case.0).unwrap();
    }
    assert!(store.run_end(run).unwrap().is_some());
}
