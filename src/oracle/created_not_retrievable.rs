//! `created_not_retrievable`: a creation answered 2xx, and the read of what it made, right after it, answered
//! 404 or 410. A client that creates and then reads (the commonest pair of calls there is)
//! fails; either the creation did not create, or the read looks in the wrong place.
//! Version 2: a creation answered 201 whose id every later read answers 404 in ordinary
//! traffic is judged too (`traffic.rs`).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "created_not_retrievable",
    code: None,
    version: 2,
    severity: Severity::High,
    title: "a resource the API said it created cannot be read back",
    setting: declared(
        "checks.created_not_retrievable",
        Kind::Bool,
        "true",
        "a read of what a creation answered 2xx for answers 404 or 410",
    ),
};

pub struct CreatedNotRetrievable;

impl Judge for CreatedNotRetrievable {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Create, StepRole::Read]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, create) = view.step(StepRole::Create)?;
    if !create.succeeded() {
        return None;
    }
    let (at, read) = view.step(StepRole::Read)?;
    let status = read.status().filter(|s| matches!(s, 404 | 410))?;
    Some(observe(
        &INFO,
        at,
        &create.case.operation,
        "",
        format!(
            "{} answered {status} for the resource {} had just created ({}): it cannot be \
             read back",
            read.name(),
            create.name(),
            create.status().unwrap_or_default()
        ),
    ))
}
