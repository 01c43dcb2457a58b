//! Snapshot tests (insta): what a person reads, pinned. `--help` of every command, the
//! console summary of a seeded demo run, and the main error messages with their exit codes.
//!
//! The snapshots are in `tests/snapshots/`. After a deliberate change to any of this text,
//! write them again with `INSTA_UPDATE=always cargo test --test tests snapshots::` (or
//! `cargo insta review`) and read the diff before committing it.
//!
//! Nothing here depends on the machine: 100 columns, no colour, no progress bar, no
//! `PROBE_*` variable from the environment, and filters for what changes from run to run
//! (ids, ports, timings, the temporary directory).

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{code, demo_spec};

/// The built `probe` in `dir`, in a terminal that does not vary: 100 columns, no colour,
/// and no `PROBE_*` variable of the machine running the tests.
fn probe(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PROBE_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    cmd
}

/// Runs `probe args…` in `dir` with progress off; prints the output for a failing test.
fn run(dir: &Path, args: &[&str]) -> Output {
    let out = probe(dir)
        .env("PROBE_NO_PROGRESS", "1")
        .args(args)
        .output()
        .expect("the probe binary runs");
    eprintln!("--- stdout\n{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Text with the temporary directory replaced by `[TMP]`.
fn text(bytes: &[u8], dir: &Path) -> String {
    String::from_utf8_lossy(bytes).replace(&dir.display().to_string(), "[TMP]")
}

// ---------------------------------------------------------------------------------------
// --help

/// `probe <args> --help`, as printed on a 100-column terminal.
fn help(name: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = probe(dir.path());
    cmd.args(args).arg("--help");
    let out = cmd.output().expect("the probe binary runs");
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let command = ["probe"]
        .iter()
        .chain(args)
        .chain(&["--help"])
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    insta::with_settings!({description => command, omit_expression => true}, {
        insta::assert_snapshot!(name, text(&out.stdout, dir.path()));
    });
}

/// One test per command, so that a changed help text names its command.
macro_rules! help_snapshots {
    ($($test:ident: [$($arg:literal),*];)*) => {$(
        #[test]
        fn $test() {
            help(stringify!($test), &[$($arg),*]);
        }
    )*};
}

help_snapshots! {
    help_probe: [];
    help_run: ["run"];
    help_demo: ["demo"];
    help_spec: ["spec"];
    help_log: ["log"];
    help_show: ["show"];
    help_store: ["store"];
    help_store_verify: ["store", "verify"];
    help_store_stats: ["store", "stats"];
    help_store_gc: ["store", "gc"];
    help_store_reindex: ["store", "reindex"];
    help_store_merge: ["store", "merge"];
    help_recheck: ["recheck"];
    help_diff: ["diff"];
    help_replay: ["replay"];
    help_serve: ["serve"];
    help_export: ["export"];
    help_report: ["report"];
}

// ---------------------------------------------------------------------------------------
// The console summary

/// What changes from one demo run to the next: the port of the demo API, the ids (the run
/// id is a hash of its start time, and every interaction names its run), and the timing.
const SUMMARY_FILTERS: &[(&str, &str)] = &[
    (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
    (r"\b[0-9a-f]{64}\b", "[ID]"),
    (r"\b[0-9a-f]{12}\b", "[SHORT ID]"),
    // A finding's short id: its set's (a hash naming the run) and its number, kept.
    (r"\b[0-9a-f]{8}:(\d+)\b", "[SET]:$1"),
    (r" in \d+(\.\d)?m?s \(\d+/s\)", " in [TIME] ([RATE]/s)"),
];

#[test]
fn the_console_summary_of_a_seeded_demo_run() {
    let args = ["demo", "--seed", "7", "--requests", "200", "--workers", "1"];
    let summary = || {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), &args);
        assert_eq!(code(&out), 1, "the demo's planted faults are found");
        (text(&out.stdout, dir.path()), text(&out.stderr, dir.path()))
    };
    let (first, stderr) = summary();
    assert_eq!(stderr, "", "the demo writes nothing to stderr");
    let (second, _) = summary();
    assert_eq!(
        filtered(&first),
        filtered(&second),
        "two runs with one seed and one worker print the same filtered summary"
    );
    insta::with_settings!({
        description => format!("probe {}", args.join(" ")),
        omit_expression => true,
        filters => SUMMARY_FILTERS.to_vec(),
    }, {
        insta::assert_snapshot!("demo_summary", first);
    });
}

/// Checks of the demo's own: one it fails on every answer of `listPets`, one it holds on,
/// and one that cannot judge `getStats` (its body is not JSON).
const DEMO_CHECKS: &str = r#"[[check]]
name = "request-id"
operations = ["listPets"]
expect = "header(response, 'X-Request-Id') != null"
message = "{request.operation} answered {response.status} without X-Request-Id"

[[check]]
name = "pet-status"
operations = ["getPet"]
statuses = ["2XX"]
expect = "response.status < 300 && request.path_params.petId != null"

[[check]]
name = "stats-count"
operations = ["getStats"]
statuses = ["2XX"]
expect = "response.body.count >= 0"
"#;

/// The summary of a demo run with checks of the user's: what each check judged, failed and
/// could not judge, and why it could not judge the first exchange it could not; the same
/// counts in report.json.
#[test]
fn the_console_summary_of_a_demo_run_with_checks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("checks.toml"), DEMO_CHECKS).unwrap();
    let args = [
        "demo",
        "--seed",
        "7",
        "--requests",
        "200",
        "--workers",
        "1",
        "--checks",
        "checks.toml",
        "--report",
        "report.json",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(code(&out), 1, "the demo's planted faults are found");
    let report = crate::util::read_json(&dir.path().join("report.json"));
    let checks = report["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["request-id", "pet-status", "stats-count"]);
    let failed = |i: usize, field: &str| checks[i][field].as_u64().unwrap();
    assert!(failed(0, "failed") > 0 && failed(0, "failed") == failed(0, "judged"));
    assert!(failed(1, "judged") > 0 && failed(1, "failed") == 0);
    assert!(failed(2, "not_judged") > 0 && failed(2, "judged") == 0);
    assert!(
        checks[2]["first_not_judged"]["seq"].is_u64(),
        "{}",
        checks[2]
    );
    insta::with_settings!({
        description => format!("probe {}", args.join(" ")),
        omit_expression => true,
        filters => SUMMARY_FILTERS.to_vec(),
    }, {
        insta::assert_snapshot!("demo_summary_with_checks", text(&out.stdout, dir.path()));
    });
}

/// The Markdown summary (`--summary-md`) of the seeded demo run: verdict, findings by
/// severity, the table of findings with their replay lines.
#[test]
fn the_markdown_summary_of_a_seeded_demo_run() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "demo",
        "--seed",
        "7",
        "--requests",
        "200",
        "--workers",
        "1",
        "--summary-md",
        "summary.md",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(code(&out), 1, "the demo's planted faults are found");
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    let mut filters = SUMMARY_FILTERS.to_vec();
    filters.push((r"requests in \d+\.\d s", "requests in [TIME]"));
    insta::with_settings!({
        description => format!("probe {}", args.join(" ")),
        omit_expression => true,
        filters => filters,
    }, {
        insta::assert_snapshot!("demo_summary_md", summary);
    });
}

/// `text` with the summary filters applied, as insta applies them to the snapshot.
fn filtered(text: &str) -> String {
    SUMMARY_FILTERS
        .iter()
        .fold(text.to_owned(), |text, (pattern, with)| {
            let re = regex::Regex::new(pattern).expect("a valid filter");
            re.replace_all(&text, *with).into_owned()
        })
}

// ---------------------------------------------------------------------------------------
// Errors

/// `probe args…` in `dir`: asserts the exit code and pins stderr.
fn error(name: &str, dir: &Path, args: &[&str], exit: i32) {
    let out = run(dir, args);
    assert_eq!(code(&out), exit, "exit code of probe {}", args.join(" "));
    insta::with_settings!({
        description => format!("probe {} (exit {exit})", args.join(" ")),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text(&out.stderr, dir));
    });
}

/// A directory holding the demo's document as `openapi.yaml`.
fn with_document() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(demo_spec(), dir.path().join("openapi.yaml")).unwrap();
    dir
}

/// `probe run` of `openapi.yaml` against a port where nothing listens, plus `extra`.
fn run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--spec",
        "openapi.yaml",
        "--url",
        "http://127.0.0.1:1",
        "--seed",
        "1",
        "--workers",
        "1",
        "--requests",
        "20",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn error_unknown_setting() {
    let dir = with_document();
    let args = run_args(&["--set", "checks.server_eror=true"]);
    error("error_unknown_setting", dir.path(), &args, 2);
    assert!(!dir.path().join(".probe").exists(), "nothing was recorded");
}

#[test]
fn error_bad_setting_value() {
    let dir = with_document();
    let args = run_args(&["--set", "checks.server_error=maybe"]);
    error("error_bad_setting_value", dir.path(), &args, 2);
    let args = run_args(&["--set", "send.timeout=soon"]);
    error("error_bad_duration_setting", dir.path(), &args, 2);
}

#[test]
fn error_missing_spec() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(&[]);
    args[2] = "missing.yaml";
    error("error_missing_spec", dir.path(), &args, 2);
}

#[test]
fn error_not_openapi() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("openapi.yaml"),
        "name: a list\nitems: [1, 2]\n",
    )
    .unwrap();
    error("error_not_openapi", dir.path(), &run_args(&[]), 2);
}

#[test]
fn error_workers_0() {
    let dir = with_document();
    let mut args = run_args(&[]);
    args[8] = "0";
    error("error_workers_0", dir.path(), &args, 2);
}

#[test]
fn error_id_names_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // An empty store: the id cannot name anything in it.
    probe::store::Store::open(&dir.path().join(".probe")).expect("an empty store");
    error(
        "error_id_names_nothing",
        dir.path(),
        &["show", "0123abcd"],
        2,
    );
}

#[test]
fn error_no_store() {
    let dir = tempfile::tempdir().unwrap();
    error("error_no_store", dir.path(), &["show", "0123abcd"], 4);
}

#[test]
fn error_unreachable_api() {
    let dir = with_document();
    error("error_unreachable_api", dir.path(), &run_args(&[]), 3);
}

#[test]
fn error_report_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not-a-dir"), "").unwrap();
    let args = [
        "demo",
        "--seed",
        "1",
        "--workers",
        "1",
        "--requests",
        "20",
        "--report",
        "not-a-dir/report.json",
    ];
    // Checked before the demo sends anything: a usage error.
    error("error_report_cannot_be_written", dir.path(), &args, 2);
}
