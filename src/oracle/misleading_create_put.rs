//! `misleading_create_put`: a read answered 2xx, and a PUT on the same resource then answered 201 Created,
//! although there was nothing to create: an update must answer 200 or 204 (RFC 9110,
//! 9.3.4). The fault may be the read's (a 2xx for nothing) as well as the PUT's.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "misleading_create_put",
    code: Some("903"),
    version: 1,
    severity: Severity::Medium,
    title: "a PUT answers 201 Created for a resource that already exists",
    setting: declared(
        "checks.misleading_create_put",
        Kind::Bool,
        "true",
        "a PUT answers 201 for a resource a read answered 2xx for just before",
    ),
};

pub struct MisleadingCreatePut;

impl Judge for MisleadingCreatePut {
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
    let (at, update) = view.step(StepRole::Update)?;
    if !read.succeeded() || update.case.method != "PUT" || update.status() != Some(201) {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &update.case.operation,
        "",
        format!(
            "{} answered 201 Created for a resource that {} had just answered {} for",
            update.name(),
            read.name(),
            read.status().unwrap_or_default()
        ),
    ))
}
