//! The formats CI systems read, from real runs against fixture APIs on 127.0.0.1: SARIF
//! 2.1.0 (`--report-sarif` on run and recheck, `probe export --format sarif`) validated against the OASIS
//! schema kept in `tests/data/sarif/` and held to the fields GitHub's upload needs; the Web
//! Fuzzing Commons report (`probe export --format wfc`) validated against WFC 0.6.0's
//! schema in `tests/data/wfc/`; the Markdown summary (`--summary-md`, appended to
//! `$GITHUB_STEP_SUMMARY`); JUnit's counts; and the reason given for an operation never
//! answered 2xx, the same in the console, the summary and the page.

use std::path::Path;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use probe::fixture::{demo, RunningFixture};
use serde_json::Value;

use crate::util::{code, demo_spec, probe, read_json, repo, run, run_document, run_id, Campaign};

/// A demo run (every planted fault) with `extra` arguments; its output and report.
fn demo_run(dir: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let spec = demo_spec();
    let url = fixture.base_url();
    let (out, report) = Campaign {
        spec: &spec,
        url: &url,
        seed: 7,
        workers: 1,
        requests: 200,
    }
    .run(dir, extra);
    assert_eq!(code(&out), 1, "the demo's planted faults are found");
    (out, report)
}

fn export(dir: &Path, run: &str, format: &str) -> Vec<u8> {
    let mut cmd = probe(dir);
    cmd.args(["export", run, "--format", format, "--store"])
        .arg(dir.join("store"));
    let out = crate::util::run(&mut cmd);
    assert_eq!(code(&out), 0, "the export succeeds");
    out.stdout
}

fn errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn sarif_schema() -> jsonschema::Validator {
    let schema = read_json(&repo().join("tests/data/sarif/sarif-schema-2.1.0.json"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

fn wfc_schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("tests/data/wfc/report-0.6.0.yaml")).unwrap();
    let schema: Value = serde_yaml::from_str(&text).expect("the WFC schema is YAML");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the WFC schema compiles")
}

/// What GitHub's code scanning upload requires of a SARIF file (docs.github.com, "SARIF
/// support for code scanning"): version 2.1.0, runs, a driver name, and for each result a
/// rule id, a message text and a location with a file and a start line (at most 10).
fn github_problems(sarif: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if sarif["version"] != "2.1.0" {
        problems.push("version is not 2.1.0".to_owned());
    }
    let Some(runs) = sarif["runs"].as_array() else {
        return vec!["no runs".into()];
    };
    for run in runs {
        if !run["tool"]["driver"]["name"].is_string() {
            problems.push("no tool.driver.name".into());
        }
        let rules: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .map(|r| r.iter().filter_map(|r| r["id"].as_str()).collect())
            .unwrap_or_default();
        for (i, r) in run["results"].as_array().into_iter().flatten().enumerate() {
            let Some(rule) = r["ruleId"].as_str() else {
                problems.push(format!("result {i}: no ruleId"));
                continue;
            };
            if !rules.contains(&rule) {
                problems.push(format!("result {i}: rule {rule} not among the rules"));
            }
            if r["message"]["text"].as_str().is_none_or(str::is_empty) {
                problems.push(format!("result {i}: no message.text"));
            }
            let locations = r["locations"].as_array().cloned().unwrap_or_default();
            if locations.is_empty() || locations.len() > 10 {
                problems.push(format!("result {i}: {} locations", locations.len()));
            }
            for l in &locations {
                let p = &l["physicalLocation"];
                if !p["artifactLocation"]["uri"].is_string() {
                    problems.push(format!("result {i}: no artifactLocation.uri"));
                }
                if p["region"]["startLine"].as_u64().is_none_or(|n| n < 1) {
                    problems.push(format!("result {i}: no region.startLine"));
                }
            }
        }
    }
    problems
}

/// One result per distinct finding, valid by the SARIF schema and by what GitHub needs,
/// each pointing at the line of the demo document where its operation starts, with the
/// operation's JSON pointer and a reproducer; the export of the stored run says the same.
/// The schema refuses a result without its message, so the check can fail.
#[test]
fn sarif_of_a_run_is_valid_and_points_at_each_operation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.sarif");
    let (_, report) = demo_run(dir.path(), &["--report-sarif", file.to_str().unwrap()]);
    let sarif = read_json(&file);
    let validator = sarif_schema();
    assert_eq!(errors(&validator, &sarif), Vec::<String>::new());
    assert_eq!(github_problems(&sarif), Vec::<String>::new());

    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(
        results.len(),
        findings.len(),
        "one result per distinct finding"
    );
    let document = std::fs::read_to_string(demo_spec()).unwrap();
    let lines: Vec<&str> = document.lines().collect();
    for (r, f) in results.iter().zip(findings) {
        assert_eq!(r["ruleId"], f["oracle"]);
        let expected = match f["severity"].as_str().unwrap() {
            "high" => "error",
            "medium" => "warning",
            _ => "note",
        };
        assert_eq!(r["level"], expected);
        let text = r["message"]["text"].as_str().unwrap();
        assert!(text.starts_with(f["message"].as_str().unwrap()), "{text}");
        assert!(text.contains(f["replay"].as_str().unwrap()), "{text}");
        let location = &r["locations"][0];
        let uri = location["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.ends_with("openapi.yaml"), "{uri}");
        let operation = report["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["operation"] == f["operation"])
            .unwrap();
        assert_eq!(
            location["logicalLocations"][0]["fullyQualifiedName"],
            operation["pointer"]
        );
        let line = location["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap() as usize;
        let method = operation["method"].as_str().unwrap().to_ascii_lowercase();
        assert_eq!(
            lines[line - 1].trim(),
            format!("{method}:"),
            "line {line} starts {}",
            f["operation"]
        );
    }

    let exported: Value =
        serde_json::from_slice(&export(dir.path(), &run_id(&report).to_string(), "sarif")).unwrap();
    assert_eq!(exported["runs"][0]["results"], sarif["runs"][0]["results"]);

    // A recheck writes the findings it judged, the same way.
    let rechecked = dir.path().join("recheck.sarif");
    let mut cmd = probe(dir.path());
    cmd.args([
        "recheck",
        &run_id(&report).to_string()[..12],
        "--report-sarif",
    ])
    .arg(&rechecked)
    .arg("--store")
    .arg(dir.path().join("store"));
    let out = run(&mut cmd);
    assert_eq!(code(&out), 0, "the recheck finds nothing new");
    let rechecked = read_json(&rechecked);
    assert_eq!(errors(&validator, &rechecked), Vec::<String>::new());
    let rules = |log: &Value| -> Vec<Value> {
        log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["ruleId"].clone())
            .collect()
    };
    assert_eq!(rules(&rechecked), rules(&sarif));

    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    assert!(!errors(&validator, &broken).is_empty());
    assert!(!github_problems(&broken).is_empty());
}

/// The WFC report of a run validates against WFC 0.6.0's schema: the findings with a code
/// the schema accepts are its faults, the others its warnings, every operation sent an
/// endpoint with the statuses it was answered; a fault without its categories is refused.
#[test]
fn the_wfc_export_is_valid_against_the_pinned_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = demo_run(dir.path(), &[]);
    let wfc: Value =
        serde_json::from_slice(&export(dir.path(), &run_id(&report).to_string(), "wfc")).unwrap();
    let validator = wfc_schema();
    assert_eq!(errors(&validator, &wfc), Vec::<String>::new());
    assert_eq!(wfc["schemaVersion"], "0.6.0");
    assert_eq!(wfc["toolName"], "probe");

    let findings = report["findings"].as_array().unwrap();
    let coded = |f: &&Value| {
        f["code"]
            .as_str()
            .and_then(|c| c.trim_start_matches('F').parse::<u16>().ok())
            .is_some_and(|n| matches!(n, 100..=104 | 200..=206 | 900..=999))
    };
    let faults = wfc["faults"]["foundFaults"].as_array().unwrap();
    assert_eq!(faults.len(), findings.iter().filter(coded).count());
    assert!(
        faults.len() >= 5,
        "F100, F101, 902, 903, 907, 908 of the demo"
    );
    let warned = wfc["warnings"].as_array().unwrap().len();
    assert_eq!(
        warned,
        findings.len() - faults.len(),
        "no finding is dropped"
    );
    let server_error = faults
        .iter()
        .find(|f| f["faultCategories"][0]["code"] == 100)
        .expect("the demo's 500 is F100");
    assert_eq!(server_error["endpointId"], "GET:/pets");
    let endpoints = wfc["problemDetails"]["rest"]["endpointIds"]
        .as_array()
        .unwrap();
    assert_eq!(endpoints.len(), 6, "{endpoints:?}");
    let covered = wfc["problemDetails"]["rest"]["coveredHttpStatus"]
        .as_array()
        .unwrap();
    let list = covered
        .iter()
        .find(|c| c["endpointId"] == "GET:/pets")
        .unwrap();
    let statuses: Vec<u64> = list["httpStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert!(
        statuses.contains(&200) && statuses.contains(&500),
        "{statuses:?}"
    );

    let mut broken = wfc.clone();
    broken["faults"]["foundFaults"][0]
        .as_object_mut()
        .unwrap()
        .remove("faultCategories");
    assert!(!errors(&validator, &broken).is_empty());
}

/// `--summary-md` writes the Markdown summary, and under GitHub Actions the same text is
/// appended to the step's summary file, after what was already there.
#[test]
fn the_markdown_summary_goes_to_its_file_and_is_appended_to_the_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("summary.md");
    let step = dir.path().join("step-summary.md");
    std::fs::write(&step, "## an earlier step\n").unwrap();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    let mut cmd = probe(dir.path());
    cmd.env("GITHUB_STEP_SUMMARY", &step).args([
        "run",
        "--spec",
        demo_spec().to_str().unwrap(),
        "--url",
        &fixture.base_url(),
        "--seed",
        "7",
        "--workers",
        "1",
        "--requests",
        "200",
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "--summary-md",
        md.to_str().unwrap(),
    ]);
    let out = run(&mut cmd);
    assert_eq!(code(&out), 1);
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.starts_with("## probe: probe demo pet shop 1.0 — failed\n"),
        "{summary}"
    );
    assert!(summary.contains("| high | 1 |"), "{summary}");
    assert!(
        summary.contains("| server_error (F100) | listPets |"),
        "{summary}"
    );
    let appended = std::fs::read_to_string(&step).unwrap();
    assert_eq!(appended, format!("## an earlier step\n{summary}\n"));
}

const REDIRECTS: &str = r#"openapi: 3.0.3
info: {title: redirects, version: "1"}
paths:
  /go:
    get:
      operationId: go
      responses:
        "302": {description: elsewhere}
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: an item
          content:
            application/json:
              schema: {type: object}
        "404": {description: none}
  /things/{name}:
    get:
      operationId: getThing
      responses:
        "200": {description: a thing}
"#;

/// An operation that answered its declared 302 every time is said to have done so, in the
/// console and the Markdown summary alike, and never to lack a parameter; the other one,
/// whose id probe could only invent, is said to. JUnit counts every testcase, the one
/// skipped (its path parameter is not declared) too.
#[test]
fn the_reason_for_an_operation_never_answered_2xx_is_one_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("redirects.yaml");
    std::fs::write(&spec, REDIRECTS).unwrap();
    let router = Router::new()
        .route(
            "/go",
            get(|| async {
                (StatusCode::FOUND, [(header::LOCATION, "/elsewhere")]).into_response()
            }),
        )
        .route("/items/{id}", get(|| async { StatusCode::NOT_FOUND }));
    let md = dir.path().join("summary.md");
    let junit = dir.path().join("junit.xml");
    let (out, report) = run_document(
        router,
        &spec,
        dir.path(),
        3,
        1,
        40,
        &[
            "--summary-md",
            md.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert!(matches!(code(&out), 0 | 1));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let cases = xml.matches("<testcase ").count();
    assert_eq!(cases, 3, "{xml}");
    assert!(xml.contains("<skipped message=\"path parameter"), "{xml}");
    assert!(
        xml.contains("<testsuites name=\"probe\" tests=\"3\" failures="),
        "{xml}"
    );
    assert!(
        xml.contains(" tests=\"3\" failures=") && xml.contains("skipped=\"1\""),
        "{xml}"
    );
    let go = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == "go")
        .unwrap();
    let n = go["status_codes"]["302"].as_u64().expect("302 counted");
    let op: probe::report::OperationReport = serde_json::from_value(go.clone()).unwrap();
    let reason = probe::report::coverage::never_2xx_reason(&op, None).expect("never 2xx");
    assert!(
        reason.starts_with(&format!("answered 302 ×{n} as its document declares")),
        "{reason}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("go ({reason})")), "{stdout}");
    assert!(
        stdout.contains("getItem (a path parameter probe could only invent (id)"),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(summary.contains(&format!("| go | {reason} |")), "{summary}");
    let page =
        std::fs::read_to_string(report_page(dir.path(), &run_id(&report).to_string())).unwrap();
    assert!(page.contains(&reason), "the page gives the same reason");
}

/// The page of a run, as `probe report` writes it.
fn report_page(dir: &Path, run: &str) -> std::path::PathBuf {
    let page = dir.join("page.html");
    let mut cmd = probe(dir);
    cmd.args(["report", run, "--html", page.to_str().unwrap(), "--store"])
        .arg(dir.join("store"));
    let out = crate::util::run(&mut cmd);
    assert_eq!(code(&out), 0);
    page
}
