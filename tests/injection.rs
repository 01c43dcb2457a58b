//! Time-based SQL injection (`time_based_injection`, F200). A product search whose `name`
//! reaches the database as code: a value asking the database to wait (`SLEEP(2)`,
//! `pg_sleep(2)`, `WAITFOR DELAY '0:0:2'`) makes the answer wait that long. Its twins: one
//! that answers slowly (2.5 s) to any request asking for a wait, however long (a filter in
//! front of a safe database that stalls what it takes for an attack), and one that never
//! waits. The first run shows one
//! finding, which `probe recheck` gives again from the store; the twins show none.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::Query;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::util::{code, findings_of, probe, run, run_document};

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: products, version: "1"}
paths:
  /products:
    get:
      operationId: searchProducts
      parameters:
        - {name: name, in: query, required: true, schema: {type: string, maxLength: 40}}
      responses:
        "200":
          description: the products of that name
          content:
            application/json:
              schema: {type: array, items: {type: object}}
"#;

/// Most requests push an awkward value, so that the waits among them are sent early.
const PLAN: &str = r#"
version: 1
strategies:
  - {name: nominal, share: 1, sources: [invention]}
  - {name: fuzzing, kind: fuzzing, share: 3, sources: [invention]}
"#;

#[derive(Clone, Copy, PartialEq)]
enum Database {
    /// `name` pasted into the query: the wait it asks for is waited.
    Injectable,
    /// A safe database behind a filter that stalls every request asking for a wait, for
    /// as long whatever the wait.
    Tarpit,
    /// A safe database.
    Safe,
}

/// The wait `text` asks an SQL database for, as the fixture's "database" reads it.
fn asked_wait(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let after = |marker: &str| {
        let at = lower.find(marker)? + marker.len();
        let digits: String = lower[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    after("sleep(").or_else(|| after("waitfor delay '0:0:"))
}

fn products(database: Database) -> Router {
    Router::new().route(
        "/products",
        get(
            move |Query(query): Query<HashMap<String, String>>| async move {
                let name = query.get("name").cloned().unwrap_or_default();
                let wait = match database {
                    Database::Injectable => asked_wait(&name).map(Duration::from_secs),
                    Database::Tarpit => asked_wait(&name)
                        .filter(|seconds| *seconds > 0)
                        .map(|_| Duration::from_millis(2500)),
                    Database::Safe => None,
                };
                if let Some(wait) = wait {
                    tokio::time::sleep(wait.min(Duration::from_secs(5))).await;
                }
                Json(json!([]))
            },
        ),
    )
}

fn timing_findings(database: Database) -> (tempfile::TempDir, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("products.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let plan_setting = format!("generation.plan={}", plan.display());
    let (out, report) = run_document(
        products(database),
        &spec,
        dir.path(),
        3,
        4,
        1000,
        &["--set", &plan_setting],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings_of(&report, "time_based_injection")
        .into_iter()
        .cloned()
        .collect();
    (dir, report, found)
}

#[test]
fn a_value_that_makes_the_database_wait_as_asked_is_one_finding() {
    let (dir, report, found) = timing_findings(Database::Injectable);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["code"], "F200");
    assert_eq!(found[0]["severity"], "high");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("`name` asking an SQL database to wait 2 s made GET /products answer")
            && message.contains("when it asked for 3 s")
            && message.ends_with("(time-based SQL injection)"),
        "{message}"
    );

    // The store holds the evidence: today's oracles give the same finding from it.
    let run_id = report["run"]["id"].as_str().unwrap().to_owned();
    let out = run(probe(dir.path()).args([
        "recheck",
        &run_id,
        "--store",
        dir.path().join("store").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let rechecked: Value = serde_json::from_slice(&out.stdout).unwrap();
    let refound: Vec<&Value> = rechecked["data"]["delta"]["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["finding"])
        .filter(|f| f["oracle"] == "time_based_injection")
        .collect();
    assert_eq!(refound.len(), 1, "{rechecked:#}");
    assert_eq!(refound[0]["message"], found[0]["message"]);
}

#[test]
fn a_slow_filter_and_a_database_that_never_waits_are_not() {
    let (_dir, report, found) = timing_findings(Database::Tarpit);
    assert!(found.is_empty(), "{found:#?}");
    // It was asked, and answered as slowly to the requests that asked for no wait.
    let judged = report["oracles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "time_based_injection")
        .map(|o| o["series_judged"].as_u64().unwrap_or(0));
    assert!(judged >= Some(1), "{:#}", report["oracles"]);
    let (_dir, _report, found) = timing_findings(Database::Safe);
    assert!(found.is_empty(), "{found:#?}");
}
