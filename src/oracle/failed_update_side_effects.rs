//! `failed_update_side_effects`: a change the document forbids (one field of the wrong
//! type) was refused with a 4xx, yet a read after it shows another field of that change
//! applied. A refused request must change nothing (RFC 9110, 15.5): a server that assigns
//! fields one by one and validates as it goes leaves the resource half updated.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "failed_update_side_effects",
    code: Some("901"),
    version: 1,
    severity: Severity::High,
    title: "a refused update changed the resource anyway",
    setting: declared(
        "checks.failed_update_side_effects",
        Kind::Bool,
        "true",
        "a PUT or PATCH refused with 4xx changed a field it sent (a read after it shows the value)",
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
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, failed) = view.step(StepRole::FailedUpdate)?;
    // Refused for what it sent: not for who sent it, nor for where, nor for when.
    let status = failed.status()?;
    if !(400..500).contains(&status) || matches!(status, 401 | 403 | 404 | 405 | 409 | 429) {
        return None;
    }
    let (_, before) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(StepRole::ReadAfterFailedUpdate)?;
    if !before.succeeded() || !after.succeeded() {
        return None;
    }
    let sent = failed.case.body.as_ref()?.value.as_object()?;
    let (old, new) = (before.json()?, after.json()?);
    for (name, value) in sent {
        if series::changes_by_itself(name) {
            continue;
        }
        let (Some(b), Some(a)) = (old.get(name), new.get(name)) else {
            continue;
        };
        if !series::same_value(b, value) && series::same_value(a, value) {
            return Some(observe(
                &INFO,
                at,
                &failed.case.operation,
                "",
                format!(
                    "{} answered {status}, yet `{name}` went from {} to {}, the value it sent",
                    failed.name(),
                    series::shown(b),
                    series::shown(a)
                ),
            ));
        }
    }
    None
}
