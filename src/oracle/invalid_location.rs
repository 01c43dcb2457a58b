//! `invalid_location`: a creation answered 2xx with a `Location` header, and a GET of that location,
//! right after, answered 404, 405, 500 or 501: the header points nowhere a client can go
//! (RFC 9110, 10.2.2).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "invalid_location",
    code: Some("907"),
    version: 1,
    severity: Severity::Medium,
    title: "the Location a creation answered points nowhere",
    setting: declared(
        "checks.invalid_location",
        Kind::Bool,
        "true",
        "a GET of the Location header a 2xx creation answered gives 404, 405, 500 or 501",
    ),
};

pub struct InvalidLocation;

impl Judge for InvalidLocation {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Create, StepRole::FollowLocation]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, create) = view.step(StepRole::Create)?;
    let location = create.header("location")?;
    let (at, follow) = view.step(StepRole::FollowLocation)?;
    let status = follow
        .status()
        .filter(|s| matches!(s, 404 | 405 | 500 | 501))?;
    Some(observe(
        &INFO,
        at,
        &create.case.operation,
        "",
        format!(
            "{} answered Location: {location}, and a GET of it answered {status}",
            create.name()
        ),
    ))
}
