//! The shape of Apache Airflow's runs (brief A3, issue 48), end to end against the
//! pipelines fixture: a run made by a POST answered 200 (not 201), read back, noted and
//! listed under the pipeline that made it, its task instances read under it; and an
//! operation is counted answered 2xx only by a request of its own method, never by the
//! OPTIONS a series sends to its path.

use std::collections::BTreeMap;
use std::path::Path;

use probe::fixture::pipelines;
use serde_json::Value;

use crate::util::{code, repo, run_document, run_id};

fn run_pipelines(dir: &Path) -> Value {
    let spec = repo().join("fixtures/pipelines/openapi.yaml");
    let (out, report) = run_document(pipelines::router(), &spec, dir, 1, 2, 2000, &[]);
    assert!(code(&out) <= 1, "the run ends: {out:?}");
    report
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"]
        .as_array()
        .and_then(|all| all.iter().find(|o| o["operation"] == name))
        .unwrap_or_else(|| panic!("{name} was sent: {report:#}"))
}

/// Every operation whose path values an answer gives is answered 2xx: the run id of a
/// creation answered 200 goes back with the pipeline it was made under, and the task
/// instances are listed under their run. Before, a 404 under one pipeline (an invented run
/// id) made the run forget that pipeline's id, so after the opening lap every creation went
/// to an invented pipeline (404) and no run was ever made. (`get_task_instance` is left
/// out: its `task_id` is given only by the list under a run, a read after the opening lap,
/// which the memory does not learn from.)
#[test]
fn a_run_made_by_a_200_is_read_back_under_its_own_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_pipelines(dir.path());
    for name in [
        "get_dags",
        "get_dag_runs",
        "post_dag_run",
        "get_dag_run",
        "set_dag_run_note",
        "get_task_instances",
    ] {
        let op = operation(&report, name);
        assert!(
            op["statuses"]["2xx"].as_u64().unwrap_or(0) > 0,
            "{name} answered 2xx: {op:#}"
        );
        assert_eq!(
            op["path_parameters_never_from_answers"],
            serde_json::json!([]),
            "{name}'s path values came from answers"
        );
    }
    // The DELETE is always refused: never answered 2xx, and the report says so.
    let delete = operation(&report, "delete_dag_run");
    assert!(delete["statuses"].get("2xx").is_none(), "{delete:#}");
}

/// An operation's statuses count the requests of its own method: the series' OPTIONS of
/// the item, answered 200 by this API as by Airflow's, is counted apart.
#[test]
fn an_operation_is_answered_2xx_only_by_a_request_of_its_own_method() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_pipelines(dir.path());
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    // From the store: 2xx answers by operation, own method and other methods apart.
    let methods: BTreeMap<String, String> = report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["operation"].as_str().unwrap().to_owned(),
                o["method"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let (mut own, mut other) = (BTreeMap::<String, u64>::new(), 0u64);
    for row in store.interactions_of(run_id(&report)).unwrap() {
        let ok = row.status.is_some_and(|s| (200..300).contains(&s));
        let Some(method) = methods.get(&row.operation) else {
            continue;
        };
        if ok && row.method.eq_ignore_ascii_case(method) {
            *own.entry(row.operation.clone()).or_insert(0) += 1;
        } else if ok {
            other += 1;
        }
    }
    assert!(other > 0, "the series sent an OPTIONS answered 200");
    for (name, method) in &methods {
        let op = operation(&report, name);
        assert_eq!(
            op["statuses"]["2xx"].as_u64().unwrap_or(0),
            own.get(name).copied().unwrap_or(0),
            "{name} ({method}): 2xx counts its own method only: {op:#}"
        );
        let codes: u64 = op["status_codes"]
            .as_object()
            .map(|c| {
                c.iter()
                    .filter(|(k, _)| k.starts_with('2'))
                    .map(|(_, n)| n.as_u64().unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(
            codes,
            own.get(name).copied().unwrap_or(0),
            "{name}: status_codes too"
        );
    }
}
