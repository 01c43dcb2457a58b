//! `failed_create_side_effects`: a creation the document forbids (one field of the wrong
//! type, and a name no other request of the series sent) was refused with a 4xx, yet the
//! collection listed right after holds an item with that name. A refused request must
//! create nothing (RFC 9110, 15.5); a server that stores before it validates leaves an
//! item the client was told does not exist.

use serde_json::Value;

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "failed_create_side_effects",
    code: Some("F104"),
    version: 1,
    severity: Severity::High,
    title: "a refused creation created something anyway",
    setting: declared(
        "checks.failed_create_side_effects",
        Kind::Bool,
        "true",
        "F104: a POST refused with 4xx left an item the collection then lists",
    ),
};

pub struct FailedCreateSideEffects;

impl Judge for FailedCreateSideEffects {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::FailedCreate, StepRole::ListAfterFailedCreate]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, failed) = view.step(StepRole::FailedCreate)?;
    let status = failed.status()?;
    if !series::refused_for_what_it_sent(status) {
        return None;
    }
    let (_, list) = view.step(StepRole::ListAfterFailedCreate)?;
    if !list.succeeded() {
        return None;
    }
    let sent = failed.case.body.as_ref()?.value.as_object()?;
    // The names only this refused request sent: no other step of the series sent them.
    let sent_elsewhere = |field: &str, value: &Value| {
        view.steps.iter().enumerate().any(|(i, s)| {
            i != at
                && s.case
                    .body
                    .as_ref()
                    .and_then(|b| b.value.get(field))
                    .is_some_and(|v| v == value)
        })
    };
    let names: Vec<(&String, &Value)> = sent
        .iter()
        .filter(|(k, v)| {
            series::name_like(k) && v.is_string() && !sent_elsewhere(k, v)
        })
        .collect();
    if names.is_empty() {
        return None;
    }
    let listed = list.json()?;
    let (field, value) = names
        .into_iter()
        .find(|(k, v)| holds_item_with(&listed, k, v, 3))?;
    Some(observe(
        &INFO,
        at,
        &failed.case.operation,
        "",
        format!(
            "{} answered {status}, yet {} then listed an item with `{field}` {}, the value it sent",
            failed.name(),
            list.name(),
            series::shown(value)
        ),
    ))
}

/// Whether `json` (an array, or an envelope holding one) holds an object whose `field` is
/// `value`.
fn holds_item_with(json: &Value, field: &str, value: &Value, depth: usize) -> bool {
    match json {
        Value::Array(items) => items.iter().any(|item| {
            item.get(field) == Some(value)
                || (depth > 0 && item.is_object() && holds_item_with(item, field, value, depth - 1))
        }),
        Value::Object(map) if depth > 0 => map
            .values()
            .any(|v| holds_item_with(v, field, value, depth - 1)),
        _ => false,
    }
}
