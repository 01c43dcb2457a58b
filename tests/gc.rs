//! `probe store gc` keeps every object a kept object names: after every command that stores
//! objects (a run, one seeded from a HAR file, the demo, a recheck, a replay, a run that
//! shrinks, pinpoints and sends series, a run with two identities), gc leaves a store that
//! `probe store verify` finds nothing wrong with, in both store formats.

use std::path::Path;
use std::process::Output;

use probe::fixture::{demo, RunningFixture};

use crate::util::{code, demo_spec, probe, read_json, run, run_id};

/// `probe --store <store> <args>` in `dir`, creating a store of `format` when there is none.
fn command(dir: &Path, format: &str, args: &[&str]) -> Output {
    let mut cmd = probe(dir);
    cmd.env("PROBE_STORE_FORMAT", format)
        .arg("--store")
        .arg(dir.join("store"))
        .args(args);
    run(&mut cmd)
}

/// A `probe run` of `spec` against `url` (exit 0 or 1 expected); its run id.
fn campaign(dir: &Path, format: &str, spec: &Path, url: &str, seed: u64, extra: &[&str]) -> String {
    let report = dir.join(format!("report-{seed}.json"));
    let seed = seed.to_string();
    let mut args = vec![
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        url,
        "--seed",
        &seed,
        "--workers",
        "1",
        "--requests",
        "150",
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = command(dir, format, &args);
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    run_id(&read_json(&report)).to_string()
}

fn gc_after_every_command_that_stores(format: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // A run of the demo API (its faults found, shrunk; life-cycle series), exported as HAR,
    // and a run that HAR seeds: its changed cases name seeded cases no run sent.
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let url = fixture.base_url();
    let first = campaign(d, format, &demo_spec(), &url, 3, &[]);
    let har = d.join("seed.har");
    let out = command(
        d,
        format,
        &[
            "export",
            &first,
            "--format",
            "har",
            "-o",
            har.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 0);
    campaign(
        d,
        format,
        &demo_spec(),
        &url,
        11,
        &["--seed-requests", har.to_str().unwrap()],
    );
    // A recheck of part of the catalogue and of all of it, and a replay.
    for args in [
        &["recheck", &first, "--oracle", "server_error"][..],
        &["recheck", &first],
    ] {
        let out = command(d, format, args);
        assert!(matches!(code(&out), 0 | 1), "the recheck completes");
    }
    let out = command(d, format, &["replay", &first, "--url", &url]);
    assert_eq!(code(&out), 0, "the replay completes");
    drop(fixture);
    // The demo command.
    let out = command(d, format, &["demo", "--requests", "100"]);
    assert!(matches!(code(&out), 0 | 1), "the demo completes");

    // A run that pinpoints a refused value.
    let events = d.join("events.yaml");
    std::fs::write(&events, crate::pinpoint::document("refused")).unwrap();
    let fixture = RunningFixture::start(crate::pinpoint::router(false)).unwrap();
    campaign(
        d,
        format,
        &events,
        &fixture.base_url(),
        5,
        &["--set", "series.enabled=false"],
    );
    drop(fixture);
    // A run with two identities (the access series).
    let notes = d.join("notes.yaml");
    std::fs::write(&notes, crate::access::document("[{bearerAuth: []}]")).unwrap();
    let fixture =
        RunningFixture::start(crate::access::router(crate::access::Variant::Shared)).unwrap();
    campaign(
        d,
        format,
        &notes,
        &fixture.base_url(),
        4,
        &crate::access::TWO,
    );
    drop(fixture);

    let out = command(d, format, &["store", "verify"]);
    assert_eq!(code(&out), 0, "the store verifies before gc");
    let out = command(d, format, &["store", "gc"]);
    assert_eq!(code(&out), 0, "gc succeeds");
    let out = command(d, format, &["store", "verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "the store verifies after gc: {said}");
    assert!(!said.contains("missing"), "{said}");
    assert!(
        std::fs::read_to_string(d.join("store/FORMAT"))
            .unwrap()
            .starts_with(&format!("probe-store {format}.")),
        "the store is of format {format}"
    );
}

#[test]
fn gc_after_every_command_that_stores_leaves_a_store_that_verifies() {
    gc_after_every_command_that_stores("2");
}

#[test]
fn gc_after_every_command_that_stores_leaves_a_format_1_store_that_verifies() {
    gc_after_every_command_that_stores("1");
}

#[test]
fn grace_is_refused_on_a_local_store_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    campaign(dir, "2", &demo_spec(), &fixture.base_url(), 4, &[]);
    let before = std::fs::read_dir(dir.join("store/packs-2"))
        .unwrap()
        .count();
    let out = command(dir, "2", &["store", "gc", "--grace", "1h"]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`--grace` is for a store on object storage"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.join("store/packs-2"))
            .unwrap()
            .count(),
        before
    );
}
