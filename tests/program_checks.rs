//! Checks as programs (docs/checks.md, "Checks as programs"), end to end against the
//! accounts fixture: a Python check finds the planted fault in a run and in a recheck of a
//! run recorded without it; programs that crash, hang or write garbage leave the run to end
//! normally, named with how they failed, and the store complete; and a program sees no
//! credential, in its input or its environment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use probe::fixture::accounts::{self, Build};
use serde_json::Value;

use crate::util::{code, findings_of, probe, repo, run, run_document, run_id};

fn spec() -> PathBuf {
    repo().join("fixtures/accounts/openapi.yaml")
}

/// The worked Python check, with its command made absolute (the tests run elsewhere).
fn item_id_check() -> String {
    let program = repo().join("fixtures/accounts/checks/item_id.py");
    format!(
        "[[check]]\nname = \"item-id-program\"\nseverity = \"high\"\noperations = [\"getAccount\"]\n\
         statuses = [200]\ncommand = [\"python3\", {:?}]\ndeadline = \"5s\"\n",
        program.to_str().expect("utf-8 path")
    )
}

/// A check file in `dir` holding `text`.
fn checks_in(dir: &Path, text: &str) -> String {
    let file = dir.join("program-checks.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().expect("utf-8 path").to_string()
}

fn campaign(dir: &Path, build: Build, requests: u64, extra: &[&str]) -> (String, Value) {
    let (out, report) = run_document(accounts::router(build), &spec(), dir, 1, 4, requests, extra);
    assert!(
        code(&out) <= 1,
        "probe run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8_lossy(&out.stderr).into_owned(), report)
}

fn store_of(dir: &Path) -> String {
    dir.join("store").to_str().unwrap().to_string()
}

#[test]
fn a_python_check_finds_the_planted_fault_in_a_run_and_in_a_recheck() {
    let dir = tempfile::tempdir().unwrap();
    let checks = checks_in(dir.path(), &item_id_check());
    let (stderr, report) = campaign(dir.path(), Build::Faulty, 300, &["--checks", &checks]);
    assert!(!stderr.contains("warning: check"), "{stderr}");
    let found = findings_of(&report, "check:item-id-program");
    assert!(!found.is_empty(), "no finding of the program check");
    let finding = found[0];
    assert_eq!(finding["operation"], "getAccount");
    assert_eq!(finding["severity"], "high");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .starts_with("asked for account "),
        "{finding}"
    );
    assert!(
        finding["curl"].as_str().unwrap_or("").contains("curl"),
        "{finding}"
    );
    assert!(report.get("check_failures").is_none(), "{report}");

    // The twin keeps the rule: the program is silent.
    let twin = tempfile::tempdir().unwrap();
    let checks = checks_in(twin.path(), &item_id_check());
    let (_, report) = campaign(twin.path(), Build::Correct, 300, &["--checks", &checks]);
    assert!(findings_of(&report, "check:item-id-program").is_empty());

    // A run recorded before the check existed, judged again with it.
    let before = tempfile::tempdir().unwrap();
    let (_, report) = campaign(before.path(), Build::Faulty, 300, &[]);
    assert!(findings_of(&report, "check:item-id-program").is_empty());
    let checks = checks_in(before.path(), &item_id_check());
    let out = run(probe(before.path()).args([
        "recheck",
        &run_id(&report).to_string(),
        "--store",
        &store_of(before.path()),
        "--checks",
        &checks,
    ]));
    assert_eq!(code(&out), 1, "the recheck gained the check's findings");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("check:item-id-program"), "{stdout}");
    assert!(!stdout.contains("warning"), "{stdout}");
}

/// A program that answers nothing and exits with status 3 after its first line.
const CRASHES: &str = "import sys; sys.stdin.readline(); sys.stdin.readline(); sys.exit(3)";
/// A program that never reads nor answers.
const HANGS: &str = "import time; time.sleep(60)";
/// A program that answers with a line that is not a verdict.
const GARBAGE: &str =
    "import sys; sys.stdin.readline(); print('this is not json', flush=True); sys.stdin.read()";

fn failing_checks() -> String {
    let program = |name: &str, code: &str, deadline: &str| {
        format!(
            "[[check]]\nname = \"{name}\"\ncommand = [\"python3\", \"-c\", {code:?}]\ndeadline = \"{deadline}\"\n\n"
        )
    };
    [
        program("crashes", CRASHES, "5s"),
        program("hangs", HANGS, "300ms"),
        program("garbage", GARBAGE, "5s"),
        item_id_check(),
    ]
    .concat()
}

/// Each failure, as the run or the recheck names it.
fn assert_named(text: &str) {
    for expected in [
        "check `crashes`: ended (exit status: 3) before answering exchange",
        "check `hangs`: still had",
        "check `garbage`: line 1 of its output is not a verdict",
    ] {
        assert!(text.contains(expected), "`{expected}` not in: {text}");
    }
    assert!(text.contains("exchanges not judged"), "{text}");
}

#[test]
fn programs_that_crash_hang_or_write_garbage_leave_the_run_whole_and_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let checks = checks_in(dir.path(), &failing_checks());
    let started = std::time::Instant::now();
    let (stderr, report) = campaign(dir.path(), Build::Faulty, 200, &["--checks", &checks]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_named(&stderr);
    let failures: Vec<String> = report["check_failures"]
        .as_array()
        .expect("report.json names the failed checks")
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert_named(&failures.join("\n"));
    // Everything was sent and recorded; the check that works still found its fault.
    assert!(
        report["totals"]["requests"].as_u64().unwrap() >= 200,
        "{report}"
    );
    assert!(!findings_of(&report, "check:item-id-program").is_empty());
    let fired: BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["oracle"].as_str())
        .collect();
    for failed in ["check:crashes", "check:hangs", "check:garbage"] {
        assert!(!fired.contains(failed), "{failed} made a finding");
    }
    let out = run(probe(dir.path()).args(["store", "verify", "--store", &store_of(dir.path())]));
    assert_eq!(code(&out), 0, "the store is not whole");

    // A recheck with them goes on too, and says the same.
    let out = run(probe(dir.path()).args([
        "recheck",
        &run_id(&report).to_string(),
        "--store",
        &store_of(dir.path()),
        "--checks",
        &checks,
    ]));
    assert!(code(&out) <= 1);
    assert_named(&String::from_utf8_lossy(&out.stdout));
    let out = run(probe(dir.path()).args(["store", "verify", "--store", &store_of(dir.path())]));
    assert_eq!(code(&out), 0, "the store is not whole after the recheck");
}

#[test]
fn a_program_gets_no_credential_in_its_input_or_its_environment() {
    const SECRET: &str = "s3cr3t-t0ken-4f9a";
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump.txt");
    // Writes its environment and every line it reads to $DUMP_TO, and holds every exchange.
    let program = "import json, os, sys\n\
        out = open(os.environ['DUMP_TO'], 'w')\n\
        out.write(json.dumps(dict(os.environ)) + '\\n')\n\
        for line in sys.stdin:\n\
        \x20   out.write(line)\n\
        \x20   m = json.loads(line)\n\
        \x20   if m['type'] == 'exchange':\n\
        \x20       print(json.dumps({'id': m['id'], 'verdict': 'holds'}), flush=True)\n";
    let checks = checks_in(
        dir.path(),
        &format!(
            "[[check]]\nname = \"dump\"\ncommand = [\"python3\", \"-c\", {program:?}]\nenv = [\"DUMP_TO\"]\n"
        ),
    );
    let fixture = probe::fixture::RunningFixture::start(accounts::router(Build::Correct))
        .expect("fixture starts");
    let url = fixture.base_url();
    let out = run(probe(dir.path())
        .env("DUMP_TO", &dump)
        .env("PROBE_BEARER", SECRET)
        .env("OTHER_SECRET", SECRET)
        .args([
            "run",
            "--spec",
            spec().to_str().unwrap(),
            "--url",
            &url,
            "--requests",
            "60",
            "--store",
            &store_of(dir.path()),
            "-H",
            &format!("X-Api-Token: {SECRET}"),
            "--checks",
            &checks,
        ]));
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let dumped = std::fs::read_to_string(&dump).expect("the program ran");
    let mut lines = dumped.lines();
    let env: serde_json::Map<String, Value> = serde_json::from_str(lines.next().unwrap()).unwrap();
    // `python3` may be a wrapper (pyenv) that adds its own variables: what matters is that
    // none of probe's reaches the program but those the check names.
    assert!(
        env.contains_key("DUMP_TO") && env.contains_key("PATH"),
        "{env:?}"
    );
    for name in ["PROBE_BEARER", "OTHER_SECRET", "HOME", "PROBE_NO_PROGRESS"] {
        assert!(!env.contains_key(name), "the program was given `{name}`");
    }
    let exchanges = lines
        .filter(|l| l.contains("\"type\":\"exchange\""))
        .count();
    assert!(exchanges > 0, "no exchange reached the program");
    assert!(
        !dumped.contains(SECRET),
        "a credential reached the program check"
    );
    assert!(
        dumped.contains("x-api-token"),
        "the header is not there as a placeholder"
    );
}

#[test]
fn a_check_with_both_expect_and_command_stops_the_run_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let checks = checks_in(
        dir.path(),
        "[[check]]\nname = \"both\"\nexpect = \"true\"\ncommand = [\"python3\", \"x.py\"]\n",
    );
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec().to_str().unwrap(),
        "--url",
        "http://127.0.0.1:1",
        "--store",
        &store_of(dir.path()),
        "--checks",
        &checks,
    ]));
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("program-checks.toml:4:11")
            && stderr.contains("both `expect` and `command`"),
        "{stderr}"
    );
    assert!(!dir.path().join("store").exists(), "a store was made");
}
