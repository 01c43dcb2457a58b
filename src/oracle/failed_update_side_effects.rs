//! `failed_update_side_effects`: a refused change changed the resource anyway. A refused
//! request must change nothing (RFC 9110, 15.5). Two cases:
//! - a change the document forbids (one field of the wrong type) was refused with a 4xx,
//!   yet a read after it shows another field of that change applied: a server that assigns
//!   fields one by one and validates as it goes leaves the resource half updated;
//! - a change of the deleted resource was answered 404 (it is not there), yet a read after
//!   it finds the resource: the change brought it back;
//! - a change refused for who sent it (401 or 403 without credentials; 401, 403 or 404 from
//!   another identity, in an access series) shows in the owner's read after it: the API
//!   checked the caller after it wrote (version 3).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "failed_update_side_effects",
    code: Some("901"),
    version: 3,
    severity: Severity::High,
    title: "a refused update changed the resource anyway",
    setting: declared(
        "checks.failed_update_side_effects",
        Kind::Bool,
        "true",
        "a PUT or PATCH refused with 4xx changed a field it sent (also one refused to another identity or to no credentials), or one answered 404 for a deleted resource brought it back",
    ),
};

pub struct FailedUpdateSideEffects;

impl Judge for FailedUpdateSideEffects {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::Read,
            StepRole::FailedUpdate,
            StepRole::ReadAfterFailedUpdate,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view)
            .into_iter()
            .chain(check_missing(view))
            .chain(check_refused_caller(
                view,
                StepRole::UpdateAnonymous,
                StepRole::ReadAfterUpdateAnonymous,
                &[401, 403],
                "unauthenticated",
            ))
            .chain(check_refused_caller(
                view,
                StepRole::UpdateAsOther,
                StepRole::ReadAfterUpdateAsOther,
                &[401, 403, 404],
                "other_identity",
            ))
            .collect()
    }
}

/// A change refused for who sent it (`refused` statuses), yet the owner's read after it
/// shows a value it sent where the read before it did not.
fn check_refused_caller(
    view: &SeriesView<'_>,
    role: StepRole,
    read: StepRole,
    refused: &[u16],
    detail: &str,
) -> Option<SeriesObservation> {
    let (at, change) = view.step(role)?;
    let status = change.status()?;
    if !refused.contains(&status) {
        return None;
    }
    let (_, before) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(read)?;
    if !before.succeeded() || !after.succeeded() {
        return None;
    }
    let (name, old, new) =
        series::changed_field(change, &before.json()?, &after.json()?)?;
    let caller = match &change.case.identity {
        Some(name) => format!("identity `{name}`"),
        None => "a request without credentials".to_owned(),
    };
    Some(observe(
        &INFO,
        at,
        &change.case.operation,
        detail,
        format!(
            "{} answered {status} to {caller}, yet the owner's next read shows `{name}` changed from {old} to {new}, the value it sent",
            change.name(),
        ),
    ))
}

/// A change of the deleted resource answered 404, and a read after it answered 2xx where
/// the read before it (after the deletion) answered 404 or 410.
fn check_missing(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, change) = view.step(StepRole::UpdateAfterDelete)?;
    if change.status()? != 404 {
        return None;
    }
    let (_, before) = view.step(StepRole::ReadAfterDelete)?;
    let (_, after) = view.step(StepRole::ReadAfterUpdateAfterDelete)?;
    if !matches!(before.status()?, 404 | 410) || !after.succeeded() {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &change.case.operation,
        "missing",
        format!(
            "{} answered 404 for the deleted resource, yet a read after it answered {}: the refused change brought it back",
            change.name(),
            after.status()?
        ),
    ))
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, failed) = view.step(StepRole::FailedUpdate)?;
    let status = failed.status()?;
    if !series::refused_for_what_it_sent(status) {
        return None;
    }
    let (_, before) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(StepRole::ReadAfterFailedUpdate)?;
    if !before.succeeded() || !after.succeeded() {
        return None;
    }
    let (name, old, new) = series::changed_field(failed, &before.json()?, &after.json()?)?;
    Some(observe(
        &INFO,
        at,
        &failed.case.operation,
        "",
        format!(
            "{} answered {status}, yet `{name}` went from {old} to {new}, the value it sent",
            failed.name(),
        ),
    ))
}
