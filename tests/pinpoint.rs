//! Valid data refused, pinned down: an API of events that refuses every valid date after
//! the 28th of a month (with a 422 that names no property) while it accepts the others.
//! probe generates such dates, sees the refusal beside accepted requests, finds by
//! differential search that the date is what the API refuses, and reports it once, with
//! both values. Twins: the same API whose document states the rule in its 422 response,
//! and one that refuses every request whatever its values; neither gives the finding.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

use crate::util::{code, findings_of, run_document};

pub(crate) fn document(refusal: &str) -> String {
    format!(
        r#"
openapi: 3.0.3
info: {{title: events, version: "1"}}
paths:
  /events:
    post:
      operationId: createEvent
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name, due]
              properties:
                name: {{type: string, minLength: 1, maxLength: 12}}
                due: {{type: string, format: date}}
                seats: {{type: integer, minimum: 1, maximum: 500}}
                room: {{type: string, enum: [north, south, east]}}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {{type: object}}
        "422": {{description: "{refusal}"}}
"#
    )
}

/// Refuses a due date after the 28th of its month; with `always`, every request.
pub(crate) fn router(always: bool) -> Router {
    Router::new().route(
        "/events",
        post(move |body: axum::body::Bytes| async move { create(&body, always) }),
    )
}

fn create(body: &[u8], always: bool) -> Response {
    let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(due) = event.get("due").and_then(Value::as_str) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let late = due
        .get(8..10)
        .and_then(|d| d.parse::<u32>().ok())
        .is_some_and(|day| day > 28);
    if always || late {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(serde_json::json!({"detail": "invalid input"})),
        )
            .into_response();
    }
    (StatusCode::CREATED, Json(serde_json::json!({"id": 1}))).into_response()
}

/// The findings of one run of `document` against `router`.
fn findings(document: &str, router: Router) -> (i32, Vec<Value>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("events.yaml");
    std::fs::write(&spec, document).unwrap();
    let (out, report) = run_document(
        router,
        &spec,
        dir.path(),
        3,
        2,
        600,
        &["--set", "series.enabled=false"],
    );
    let findings = findings_of(&report, "valid_data_refused")
        .into_iter()
        .cloned()
        .collect();
    (code(&out), findings, report)
}

#[test]
fn a_refused_valid_date_is_pinned_down_with_both_values() {
    let (status, found, report) = findings(&document("refused"), router(false));
    assert_eq!(status, 1);
    assert_eq!(found.len(), 1, "one finding: {found:#?}");
    let finding = &found[0];
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.starts_with("createEvent refused a valid value with 422: body.due=\""),
        "{message}"
    );
    // Both values are dates; the refused one after the 28th, the accepted one not.
    let day = |quoted: &str| -> u32 {
        let date = quoted.trim_matches('"');
        date[8..10].parse().unwrap()
    };
    let values: Vec<&str> = message
        .split(['=', ','])
        .filter_map(|part| part.split_whitespace().next())
        .filter(|w| w.starts_with('"') && w.len() == 12)
        .collect();
    assert_eq!(values.len(), 2, "{message}");
    assert!(day(values[0]) > 28, "{message}");
    assert!(day(values[1]) <= 28, "{message}");
    assert!(message.contains("refused,") && message.contains("accepted"));
    // The search is counted among the run's requests.
    assert!(
        report["totals"]["requests_by_kind"]["pinpoint"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "{}",
        report["totals"]["requests_by_kind"]
    );
}

#[test]
fn a_refusal_the_document_states_or_one_for_every_value_is_no_finding() {
    let (_, stated, _) = findings(
        &document("a due date after the 28th of a month is refused"),
        router(false),
    );
    assert!(stated.is_empty(), "{stated:#?}");
    let (_, always, _) = findings(&document("refused"), router(true));
    assert!(always.is_empty(), "{always:#?}");
}
