//! `deleted_still_available`: a read answered 2xx, a DELETE of the same resource answered 2xx, and a read after
//! it still answered 2xx: the DELETE deleted nothing (the "non-working DELETE" of the HTTP
//! semantics oracles, code 900 there). A soft delete that answers 404 or 410 afterwards is
//! correct; so is a DELETE that answers 202 and a read that still finds the resource, which
//! this oracle does not judge (202 promises the deletion later). Version 2: the same
//! sequence in ordinary traffic is judged too (`traffic.rs`).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "deleted_still_available",
    code: Some("F103"),
    version: 2,
    severity: Severity::High,
    title: "a resource is still there after a successful DELETE",
    setting: declared(
        "checks.deleted_still_available",
        Kind::Bool,
        "true",
        "a read after a DELETE answered 2xx still answers 2xx (a DELETE that deletes nothing)",
    ),
};

pub struct DeletedStillAvailable;

impl Judge for DeletedStillAvailable {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::Delete, StepRole::ReadAfterDelete]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, delete) = view.step(StepRole::Delete)?;
    // 202 Accepted promises the deletion later: a read right after may still find it.
    if !delete.succeeded() || delete.status() == Some(202) {
        return None;
    }
    let (_, before) = view.steps[..at].iter().enumerate().rev().find(|(_, s)| {
        matches!(
            s.role,
            StepRole::Read
                | StepRole::ReadAfterUpdate
                | StepRole::ReadAfterUpdateAgain
                | StepRole::ReadAfterPatch
        )
    })?;
    let (_, after) = view.step(StepRole::ReadAfterDelete)?;
    if !before.succeeded() || !after.succeeded() {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &delete.case.operation,
        "",
        format!(
            "{} answered {}, and {} still answered {} after it: the resource was not deleted",
            delete.name(),
            delete.status().unwrap_or_default(),
            after.name(),
            after.status().unwrap_or_default()
        ),
    ))
}
