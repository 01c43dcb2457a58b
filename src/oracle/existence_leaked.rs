//! `existence_leaked` (F204): to an identity that may not read it, the API answers 403 for
//! an object that exists and 404 once it is gone, so whoever asks learns which objects
//! exist. Judged on an access series (docs/security.md): the other identity reads the
//! owner's object (`read_as_other`), and reads it again once it is deleted
//! (`read_deleted_as_other`). An API that answers 404 to both is what RFC 9110 (15.5.5)
//! allows for hiding a resource, and is not reported.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "existence_leaked",
    code: Some("F204"),
    version: 1,
    severity: Severity::Medium,
    title: "another identity is told 403 for an object that exists and 404 for one that does not",
    setting: declared(
        "checks.existence_leaked",
        Kind::Bool,
        "true",
        "F204: with two identities, the second is answered 403 for the first's object and 404 once it is deleted",
    ),
};

pub struct ExistenceLeaked;

impl Judge for ExistenceLeaked {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::ReadAsOther, StepRole::ReadDeletedAsOther]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, exists) = view.step(StepRole::ReadAsOther)?;
    let (_, gone) = view.step(StepRole::ReadDeletedAsOther)?;
    let (_, own) = view.step(StepRole::Read)?;
    // The owner could read it, so it existed when the other was answered 403.
    if !own.succeeded() || exists.status()? != 403 || gone.status()? != 404 {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &exists.case.operation,
        "",
        format!(
            "{} answered 403 to identity `{}` while the object existed, and 404 once it was deleted: anyone can tell which objects exist",
            exists.name(),
            exists.case.identity.as_deref().unwrap_or("other")
        ),
    ))
}
