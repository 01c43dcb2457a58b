//! `repeated_create_put`: a PUT answered 201 Created, and the very same PUT, sent again right after,
//! answered 201 again. The second one replaced what the first made; it must say 200 or 204
//! (RFC 9110, 9.3.4), or clients that rely on 201 think they made two things.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "repeated_create_put",
    code: Some("902"),
    version: 1,
    severity: Severity::Medium,
    title: "the same PUT answers 201 Created twice",
    setting: declared(
        "checks.repeated_create_put",
        Kind::Bool,
        "true",
        "a PUT answered 201, and the same PUT sent again answers 201 again",
    ),
};

pub struct RepeatedCreatePut;

impl Judge for RepeatedCreatePut {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Create, StepRole::CreateAgain]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, create) = view.step(StepRole::Create)?;
    let (at, again) = view.step(StepRole::CreateAgain)?;
    if create.case.method != "PUT" || create.status() != Some(201) || again.status() != Some(201)
    {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &again.case.operation,
        "",
        format!(
            "{} answered 201 Created twice for the same request: the second created nothing",
            again.name()
        ),
    ))
}
