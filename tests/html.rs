//! The campaign as a page (docs/html-report.md): `probe report <run> --html`, the page a
//! run writes beside report.json, and `probe diff --html`.
//!
//! The page is opened in headless Chromium (Debian's `chromium`; `.ci/run` installs it):
//! it must load without a script error, mark itself ready and show the run's operations
//! and findings; a screenshot is kept under `target/html-report/`. Without Chromium the
//! browser test says so and checks the file alone. The page's numbers are compared with
//! report.json's, and the diff page's findings with `probe diff --json`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use probe::fixture::demo;
use regex::Regex;
use serde_json::Value;

use crate::recheck::stored_run_with;
use crate::util::{code, findings_of, probe, read_json, run, run_document};

/// Where the screenshots are kept: `target/html-report/`.
fn artefacts() -> PathBuf {
    // The test binary is target/<profile>/deps/tests-<hash>.
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let dir = target.join("html-report");
    std::fs::create_dir_all(&dir).expect("the artefact directory");
    dir
}

/// The Chromium binary, when one is installed; `PROBE_CHROMIUM` names another (empty: none).
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PROBE_CHROMIUM") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
        })
}

/// Runs headless Chromium on `page` with `args`; its standard output, or `None` when it
/// took more than a minute (it is then killed).
fn headless(browser: &Path, page: &Path, profile: &Path, args: &[String]) -> Option<String> {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--disable-extensions",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("chromium starts");
    let began = Instant::now();
    loop {
        if child.try_wait().expect("chromium is waited for").is_some() {
            break;
        }
        if began.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("chromium's output");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The error the page's `window.onerror` marked on `<html>` or `<body>`, if any.
fn script_error(dom: &str) -> Option<String> {
    let tags = Regex::new(r"<(html|body)[^>]*>").unwrap();
    let error = Regex::new(r#"data-error="([^"]*)""#).unwrap();
    let found = tags
        .find_iter(dom)
        .find_map(|t| error.captures(t.as_str()).map(|c| c[1].to_owned()));
    found
}

/// Whether the page's script ran to its end (it marks `<body data-ready="1">`).
fn ready(dom: &str) -> bool {
    let body = Regex::new(r"<body[^>]*>").unwrap();
    body.find(dom)
        .is_some_and(|b| b.as_str().contains(r#"data-ready="1""#))
}

/// The attributes of each element of `html` that `element` matches (its opening tag).
fn attributes(html: &str, element: &Regex) -> Vec<std::collections::BTreeMap<String, String>> {
    let attr = Regex::new(r#"([a-z0-9-]+)="([^"]*)""#).unwrap();
    element
        .find_iter(html)
        .map(|m| {
            attr.captures_iter(m.as_str())
                .map(|c| (c[1].to_owned(), unescape(&c[2])))
                .collect()
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn operations_requests(report: &Value) -> Vec<u64> {
    report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["requests"].as_u64().unwrap())
        .collect()
}

fn demo_run(dir: &Path) -> (String, Value) {
    let out = run(probe(dir).args([
        "--store",
        "store",
        "demo",
        "--seed",
        "7",
        "--requests",
        "400",
        "--workers",
        "1",
        "--report",
        "report.json",
    ]));
    assert_eq!(code(&out), 1, "the demo's planted faults are found");
    let report = read_json(&dir.join("report.json"));
    let id = report["run"]["id"].as_str().unwrap().to_owned();
    (id, report)
}

/// The operations and findings the page shows, read from its markup (a dumped DOM or the
/// file).
struct Shown {
    operations: Vec<std::collections::BTreeMap<String, String>>,
    findings: Vec<std::collections::BTreeMap<String, String>>,
    totals: std::collections::BTreeMap<String, String>,
}

fn shown(html: &str) -> Shown {
    let rows = Regex::new(r#"<tr data-operation="[^>]*>"#).unwrap();
    let findings = Regex::new(r#"<div class="finding" [^>]*>"#).unwrap();
    let cards = Regex::new(r#"<div class="card" data-total="[^>]*>"#).unwrap();
    Shown {
        operations: attributes(html, &rows),
        findings: attributes(html, &findings),
        totals: attributes(html, &cards)
            .into_iter()
            .map(|a| (a["data-total"].clone(), a["data-value"].clone()))
            .collect(),
    }
}

/// The browser the ignored tests need: they fail, naming it, without one.
fn needed_chromium() -> PathBuf {
    chromium().expect(
        "chromium is not installed: this test needs it (`.ci/run` installs Debian's chromium; \
         apt-get install chromium, or PROBE_CHROMIUM=PATH)",
    )
}

#[test]
fn the_page_of_a_run_shows_its_operations_and_findings() {
    page_of_a_run(None);
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn the_page_of_a_run_opens_in_a_browser_and_shows_its_operations_and_findings() {
    page_of_a_run(Some(needed_chromium()));
}

/// The page of a demo run, read as a file; opened in `browser` too when given.
fn page_of_a_run(browser: Option<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let (id, report) = demo_run(dir.path());
    // The run wrote its page beside report.json, in the store and beside --report.
    let kept = dir.path().join("store/reports").join(format!("{id}.html"));
    assert!(
        kept.is_file(),
        "{} is written at the run's end",
        kept.display()
    );
    assert!(dir.path().join("report.html").is_file());
    let page = dir.path().join("page.html");
    let out = run(probe(dir.path()).args([
        "--store",
        "store",
        "report",
        &id[..12],
        "--html",
        page.to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html,
        std::fs::read_to_string(&kept).unwrap(),
        "the page written later is the page written at the run's end"
    );
    // Self-contained: nothing fetched.
    for outside in ["src=\"http", "href=\"http", "<link", "@import", "url("] {
        assert!(
            !html.contains(outside),
            "the page fetches nothing: {outside}"
        );
    }

    // The verdict and the findings by severity first, then the findings, the operations,
    // the status codes declared and seen, and the curves.
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} on the page"))
    };
    let order = [
        "id=\"verdict\" data-verdict=\"failed\"",
        "id=\"severities\"",
        "id=\"filter\"",
        "<section id=\"findings\"",
        "<section id=\"operations\"",
        "<section id=\"status-codes\"",
        "<section id=\"curves\"",
    ];
    for pair in order.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{} before {}", pair[0], pair[1]);
    }
    let high = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "high")
        .count();
    assert!(html.contains(&format!("data-severity=\"high\" data-value=\"{high}\"")));
    // getPet declares 404 and answered it; every operation has a row of status codes.
    let coverage = attributes(&html, &Regex::new(r#"<tr data-coverage="[^>]*>"#).unwrap());
    assert_eq!(
        coverage.len(),
        report["operations"].as_array().unwrap().len()
    );

    let Some(browser) = browser else {
        return;
    };
    let profile = dir.path().join("chromium-profile");
    let dom = headless(
        &browser,
        &page,
        &profile,
        &[
            "--dump-dom".to_owned(),
            "--virtual-time-budget=5000".to_owned(),
        ],
    )
    .expect("chromium dumps the page within a minute");
    assert_eq!(script_error(&dom), None, "no script error");
    assert!(ready(&dom), "the script ran to its end");
    let on_page = shown(&dom);
    let ops: BTreeSet<&str> = on_page
        .operations
        .iter()
        .map(|o| o["data-operation"].as_str())
        .collect();
    let expected: BTreeSet<&str> = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, expected, "every operation has its row");
    let findings: BTreeSet<(String, String)> = on_page
        .findings
        .iter()
        .map(|f| (f["data-oracle"].clone(), f["data-operation"].clone()))
        .collect();
    let expected: BTreeSet<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["oracle"].as_str().unwrap().to_owned(),
                f["operation"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(findings, expected, "every finding is on the page");
    assert!(
        dom.contains("IndexOutOfBoundsException"),
        "a reply as recorded"
    );
    assert!(dom.contains("<svg class=\"chart\""), "the curves are drawn");

    // Sorting: a copy of the page whose last script presses the sort buttons (as Enter or
    // a click on the focused button does) and writes the rows' order on <body>.
    let press = r##"<script>
var b=document.querySelectorAll("#operations-table th button");
function order(){return Array.prototype.map.call(document.querySelectorAll("#operations-table tbody tr"),function(r){return r.cells[1].getAttribute("data-v")}).join(",")}
b[1].click();document.body.setAttribute("data-up",order());
b[1].click();document.body.setAttribute("data-down",order());
document.body.setAttribute("data-sorted",b[1].parentNode.getAttribute("aria-sort"));
</script></body>"##;
    let sorted = dir.path().join("sorted.html");
    std::fs::write(&sorted, html.replace("</body>", press)).unwrap();
    let dom = headless(
        &browser,
        &sorted,
        &profile,
        &[
            "--dump-dom".to_owned(),
            "--virtual-time-budget=5000".to_owned(),
        ],
    )
    .expect("chromium dumps the page within a minute");
    assert_eq!(script_error(&dom), None);
    let body = attributes(&dom, &Regex::new(r"<body[^>]*>").unwrap()).remove(0);
    let numbers =
        |key: &str| -> Vec<u64> { body[key].split(',').map(|n| n.parse().unwrap()).collect() };
    let mut requests: Vec<u64> = operations_requests(&report);
    requests.sort_unstable();
    assert_eq!(numbers("data-up"), requests, "sorted by requests, up");
    requests.reverse();
    assert_eq!(numbers("data-down"), requests, "then down");
    assert_eq!(
        body["data-sorted"], "descending",
        "aria-sort says which way"
    );

    // At 1200 pixels the operations table fits its column; the filter box keeps the rows
    // and causes that hold its text.
    let probe_script = r##"<script>
var s=document.querySelector("#operations .scroll");
document.body.setAttribute("data-overflow",String(s.scrollWidth-s.clientWidth));
var f=document.getElementById("filter");f.value="getStats";f.dispatchEvent(new Event("input"));
document.body.setAttribute("data-rows",String(document.querySelectorAll("#operations-table tbody tr:not([hidden])").length));
document.body.setAttribute("data-codes",String(document.querySelectorAll("#coverage-table tbody tr:not([hidden])").length));
document.body.setAttribute("data-causes",String(document.querySelectorAll("#findings article.cause:not([hidden])").length));
</script></body>"##;
    let measured = dir.path().join("measured.html");
    std::fs::write(&measured, html.replace("</body>", probe_script)).unwrap();
    let dom = headless(
        &browser,
        &measured,
        &profile,
        &[
            "--dump-dom".to_owned(),
            "--virtual-time-budget=5000".to_owned(),
            "--window-size=1200,2400".to_owned(),
        ],
    )
    .expect("chromium dumps the page within a minute");
    assert_eq!(script_error(&dom), None);
    let body = attributes(&dom, &Regex::new(r"<body[^>]*>").unwrap()).remove(0);
    assert_eq!(
        body["data-overflow"], "0",
        "no column of the table is cut off"
    );
    assert_eq!(body["data-rows"], "1", "the filter keeps getStats's row");
    assert_eq!(body["data-codes"], "1");
    let causes: usize = body["data-causes"].parse().unwrap();
    let all = report["causes"].as_array().unwrap().len();
    assert!(causes >= 1 && causes < all, "{causes} of {all} causes kept");

    let shots = artefacts();
    for (name, size) in [("page.png", "1200,2400"), ("page-narrow.png", "420,2400")] {
        let shot = shots.join(name);
        let _ = std::fs::remove_file(&shot);
        headless(
            &browser,
            &page,
            &profile,
            &[
                format!("--screenshot={}", shot.display()),
                format!("--window-size={size}"),
            ],
        )
        .expect("chromium takes the screenshot within a minute");
        assert!(shot.is_file(), "{} is kept", shot.display());
        eprintln!("screenshot: {}", shot.display());
    }
}

#[test]
fn the_page_shows_report_json_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (id, report) = demo_run(dir.path());
    let html = std::fs::read_to_string(dir.path().join("store/reports").join(format!("{id}.html")))
        .unwrap();
    let on_page = shown(&html);
    let totals = &report["totals"];
    for key in [
        "requests",
        "requests_answered",
        "operations_tried",
        "operations_answered_2xx",
        "findings",
        "causes",
    ] {
        assert_eq!(on_page.totals[key], totals[key].to_string(), "totals.{key}");
    }
    let operations = report["operations"].as_array().unwrap();
    assert_eq!(on_page.operations.len(), operations.len());
    for (row, op) in on_page.operations.iter().zip(operations) {
        assert_eq!(row["data-operation"], op["operation"].as_str().unwrap());
        assert_eq!(row["data-requests"], op["requests"].to_string());
        assert_eq!(row["data-findings"], op["findings"].to_string());
        for class in ["1xx", "2xx", "3xx", "4xx", "5xx", "transport"] {
            let expected = op["statuses"][class].as_u64().unwrap_or(0);
            assert_eq!(
                row[&format!("data-{class}")],
                expected.to_string(),
                "{} {class}",
                op["operation"]
            );
        }
    }
    assert_eq!(
        on_page.findings.len() as u64,
        totals["findings"].as_u64().unwrap()
    );
    let causes = Regex::new(r#"<article class="cause""#).unwrap();
    assert_eq!(
        causes.find_iter(&html).count() as u64,
        totals["causes"].as_u64().unwrap()
    );
    // The curves end where the totals are.
    let curves = attributes(&html, &Regex::new(r#"<span data-curve="[^>]*>"#).unwrap());
    let ends: Vec<&str> = curves.iter().map(|c| c["data-total"].as_str()).collect();
    assert_eq!(
        ends,
        [
            totals["operations_answered_2xx"].to_string(),
            totals["findings"].to_string(),
            totals["requests"].to_string()
        ]
    );
    // The phases of the run, as its events named them, are in report.json and on the page.
    let phases = report["phases"].as_array().unwrap();
    assert!(phases.iter().any(|p| p["name"] == "rounds"), "{phases:?}");
    for p in phases {
        let name = p["name"].as_str().unwrap();
        assert!(html.contains(&format!("data-phase=\"{name}\"")), "{name}");
    }
    assert_eq!(report["run"]["request_limit"], 400);
    // The page at the run's end counts its curves from the run's events as they were
    // published; `probe report` reads them back from the store. Both give the same page.
    let again = dir.path().join("again.html");
    let out = run(probe(dir.path()).args([
        "--store",
        "store",
        "report",
        &id,
        "--html",
        again.to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let again = std::fs::read_to_string(&again).unwrap();
    if again != html {
        let at = html
            .bytes()
            .zip(again.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(html.len().min(again.len()));
        let from = at.saturating_sub(200);
        panic!(
            "the page from the run's events differs from the page read from the store at byte {at}:\n{}\n---\n{}",
            &html[from..(at + 200).min(html.len())],
            &again[from..(at + 200).min(again.len())]
        );
    }
}

/// An API whose replies are markup and script: the page shows them as text.
fn hostile() -> Router {
    const PAYLOAD: &str = "<script>document.body.setAttribute('data-error','injected')</script>\
                           <img src=x onerror=\"document.body.setAttribute('data-error','img')\">";
    Router::new().route(
        "/things",
        get(|| async {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/html")],
                format!("<html><body>{PAYLOAD}</body></html>"),
            )
                .into_response()
        }),
    )
}

const HOSTILE_DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: "<b>hostile</b> & \"quoted\"", version: "1<script>"}
paths:
  /things:
    get:
      operationId: "listThings<script>"
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object}
"#;

#[test]
fn replies_and_names_from_the_api_are_text_on_the_page() {
    hostile_page(None);
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn replies_and_names_from_the_api_run_nothing_in_a_browser() {
    hostile_page(Some(needed_chromium()));
}

/// The page of a run against a hostile document and API, read as a file; opened in
/// `browser` too when given.
fn hostile_page(browser: Option<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, HOSTILE_DOCUMENT).unwrap();
    let (out, report) = run_document(hostile(), &spec, dir.path(), 1, 1, 20, &[]);
    assert_eq!(code(&out), 1, "the 500s are findings");
    let id = report["run"]["id"].as_str().unwrap();
    let page = dir.path().join("store/reports").join(format!("{id}.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script>document"),
        "a reply's script is text"
    );
    assert!(!html.contains("<img src=x"), "a reply's element is text");
    assert!(!html.contains("<b>hostile"), "the document's title is text");
    assert!(html.contains("&lt;script&gt;document.body"));
    assert_eq!(
        html.matches("<script>").count(),
        2,
        "the page's own two scripts"
    );
    // The operation that never answered 2xx says why.
    let reason = Regex::new(r#"<td class="reason" data-v="([^"]+)""#).unwrap();
    let reason = reason.captures(&html).map(|c| c[1].to_owned());
    assert!(
        reason.as_deref().is_some_and(|r| r.contains("500 ×")),
        "{reason:?}"
    );
    if let Some(browser) = browser {
        let dom = headless(
            &browser,
            &page,
            &dir.path().join("chromium-profile"),
            &[
                "--dump-dom".to_owned(),
                "--virtual-time-budget=5000".to_owned(),
            ],
        )
        .expect("chromium dumps the page within a minute");
        assert_eq!(script_error(&dom), None, "nothing from the API ran");
        assert!(ready(&dom));
    }
}

#[test]
fn the_diff_page_shows_the_findings_diff_json_counts() {
    diff_page(None);
}

#[test]
#[ignore = "needs chromium: .ci/run installs it and runs the ignored tests"]
fn the_diff_page_opens_in_a_browser() {
    diff_page(Some(needed_chromium()));
}

/// The page of a diff, read as a file; opened in `browser` too when given.
fn diff_page(browser: Option<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    // A lacks one fault and B another: B gains one cause and loses one.
    let a = demo::Faults {
        stats_as_text: false,
        ..demo::Faults::ALL
    };
    let b = demo::Faults {
        large_page_crashes: false,
        ..demo::Faults::ALL
    };
    stored_run_with(
        dir.path(),
        a,
        9,
        "before",
        1,
        &["--set", "report.html=false"],
    );
    stored_run_with(dir.path(), b, 9, "after", 1, &[]);
    let page = dir.path().join("diff.html");
    let out = run(probe(dir.path()).args([
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "diff",
        "before",
        "after",
        "--json",
        "--html",
        page.to_str().unwrap(),
    ]));
    assert_eq!(code(&out), 0);
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let html = std::fs::read_to_string(&page).unwrap();
    let section = |id: &str| -> String {
        let start = html
            .find(&format!("<section id=\"{id}\""))
            .unwrap_or_else(|| panic!("section {id}"));
        let end = html[start..].find("</section>").unwrap() + start;
        html[start..end].to_owned()
    };
    let item = Regex::new(r#"<li class="finding" [^>]*>"#).unwrap();
    for which in ["gained", "lost", "kept"] {
        let on_page: BTreeSet<(String, String, String)> = attributes(&section(which), &item)
            .into_iter()
            .map(|a| {
                (
                    a["data-oracle"].clone(),
                    a["data-operation"].clone(),
                    a["data-key"].clone(),
                )
            })
            .collect();
        let listed: BTreeSet<(String, String, String)> = json["data"]["findings"][which]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| if which == "kept" { &f["finding"] } else { f })
            .map(|f| {
                (
                    f["oracle"].as_str().unwrap().to_owned(),
                    f["operation"].as_str().unwrap().to_owned(),
                    f["key_by_message"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(on_page, listed, "{which}");
        if which != "kept" {
            assert!(!listed.is_empty(), "the runs differ in {which} findings");
        }
    }
    assert!(section("gained").contains("getStats"));
    assert!(section("lost").contains("listPets"));
    // Both runs' curves on one chart each.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 3);
    assert_eq!(html.matches("class=\"line dashed").count(), 3, "A dashed");
    assert_eq!(html.matches("class=\"line solid").count(), 3, "B solid");
    // A run with the page switched off wrote none.
    let before = json["data"]["a"]["run"].as_str().unwrap();
    assert!(!dir
        .path()
        .join("store/reports")
        .join(format!("{before}.html"))
        .exists());
    if let Some(browser) = browser {
        let dom = headless(
            &browser,
            &page,
            &dir.path().join("chromium-profile"),
            &[
                "--dump-dom".to_owned(),
                "--virtual-time-budget=5000".to_owned(),
            ],
        )
        .expect("chromium dumps the page within a minute");
        assert_eq!(script_error(&dom), None);
        assert!(ready(&dom));
        let shot = artefacts().join("diff.png");
        headless(
            &browser,
            &page,
            &dir.path().join("chromium-profile"),
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1200,1800".to_owned(),
            ],
        );
    }
}

/// The page says what each check the user wrote did (judged, found failing, not judged,
/// distinct findings, the first exchange it could not judge), with report.json's numbers;
/// a run without checks has no such section.
#[test]
fn the_page_shows_what_each_check_did() {
    let dir = tempfile::tempdir().unwrap();
    let mut checks =
        std::fs::read_to_string(crate::util::repo().join("fixtures/accounts/checks.toml")).unwrap();
    // A check that cannot judge the answers it applies to: no such field in the bodies.
    checks.push_str(
        "\n[[check]]\nname = \"needs-a-field\"\nstatuses = [\"2XX\"]\nexpect = \"response.body.no_such_field == 1\"\n",
    );
    let file = dir.path().join("checks.toml");
    std::fs::write(&file, checks).unwrap();
    let (out, report) = run_document(
        probe::fixture::accounts::router(probe::fixture::accounts::Build::Faulty),
        &crate::util::repo().join("fixtures/accounts/openapi.yaml"),
        dir.path(),
        1,
        2,
        200,
        &["--checks", file.to_str().unwrap()],
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let id = report["run"]["id"].as_str().unwrap();
    let html = std::fs::read_to_string(dir.path().join("store/reports").join(format!("{id}.html")))
        .unwrap();
    assert!(
        html.contains("<a href=\"#checks\">Your checks</a>"),
        "the nav links it"
    );
    let rows = attributes(&html, &Regex::new(r#"<tr data-check="[^>]*>"#).unwrap());
    let counted = report["checks"].as_array().unwrap();
    assert_eq!(rows.len(), counted.len(), "one row per check");
    assert_eq!(rows.len(), 9);
    for (row, c) in rows.iter().zip(counted) {
        let name = c["name"].as_str().unwrap();
        assert_eq!(row["data-check"], name);
        for (attr, key) in [
            ("data-judged", "judged"),
            ("data-failed", "failed"),
            ("data-not-judged", "not_judged"),
        ] {
            assert_eq!(row[attr], c[key].to_string(), "{name}: {key}");
        }
        let findings = findings_of(&report, &format!("check:{name}")).len();
        assert_eq!(row["data-findings"], findings.to_string(), "{name}");
    }
    let missing = rows
        .iter()
        .find(|r| r["data-check"] == "needs-a-field")
        .unwrap();
    assert_ne!(missing["data-not-judged"], "0", "{missing:?}");
    assert_eq!(missing["data-judged"], "0", "{missing:?}");
    let first = &counted[8]["first_not_judged"];
    let shown = format!("seq {}: ", first["seq"]);
    assert!(
        html.contains(&shown),
        "the first exchange not judged is named: {shown}"
    );
    let item = rows.iter().find(|r| r["data-check"] == "item-id").unwrap();
    assert_ne!(
        item["data-failed"], "0",
        "the faulty build fails `item-id`: {item:?}"
    );

    // Without checks, nothing of them.
    let (plain, _) = demo_run(dir.path());
    let plain = std::fs::read_to_string(
        dir.path()
            .join("store/reports")
            .join(format!("{plain}.html")),
    )
    .unwrap();
    assert!(!plain.contains("id=\"checks\"") && !plain.contains("#checks"));
}
