//! `updated_not_found`: a read answered 2xx for a resource just created, and the update of the same
//! resource, sent next, answered 404: the update looks for it elsewhere than the read.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "updated_not_found",
    code: None,
    version: 1,
    severity: Severity::High,
    title: "an update answers 404 for a resource that a read has just found",
    setting: declared(
        "checks.updated_not_found",
        Kind::Bool,
        "true",
        "a PUT or PATCH answers 404 for a resource a read answered 2xx for just before",
    ),
};

pub struct UpdatedNotFound;

impl Judge for UpdatedNotFound {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::Update]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, read) = view.step(StepRole::Read)?;
    if !read.succeeded() {
        return None;
    }
    // The first change sent (a PUT, else a PATCH).
    let (at, update) = view
        .steps
        .iter()
        .enumerate()
        .find(|(_, s)| matches!(s.role, StepRole::Update | StepRole::Patch))?;
    if update.status() != Some(404) {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &update.case.operation,
        "",
        format!(
            "{} answered 404 for a resource that {} had just answered {} for",
            update.name(),
            read.name(),
            read.status().unwrap_or_default()
        ),
    ))
}
