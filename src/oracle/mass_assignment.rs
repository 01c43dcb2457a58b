//! `mass_assignment` (F203): the API let a client set a property that the document says
//! only the server writes (`readOnly`): an owner, a role, a balance, a creation time. Judged
//! on a life-cycle series (docs/security.md): after the resource is read, a change (PATCH,
//! else PUT) sends each of the read's scalar `readOnly` properties with a new value, and the
//! read after it shows one at the value sent where the read before showed another. An API
//! that ignores such properties, or refuses the change, is what the document describes.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "mass_assignment",
    code: Some("F203"),
    version: 1,
    severity: Severity::High,
    title: "a client set a property the document says only the server writes",
    setting: declared(
        "checks.mass_assignment",
        Kind::Bool,
        "true",
        "F203: a change that sent readOnly properties with new values was accepted, and the read after it shows one at the value sent",
    ),
};

pub struct MassAssignment;

impl Judge for MassAssignment {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::Read,
            StepRole::UpdateReadOnly,
            StepRole::ReadAfterUpdateReadOnly,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, change) = view.step(StepRole::UpdateReadOnly)?;
    if !change.succeeded() {
        return None;
    }
    let (_, after) = view.step(StepRole::ReadAfterUpdateReadOnly)?;
    if !after.succeeded() {
        return None;
    }
    // The last successful read before the change: what the values were.
    let before = view.steps[..at]
        .iter()
        .rev()
        .filter(|s| s.role.as_str().starts_with("read") && s.succeeded())
        .find_map(|s| s.json())?;
    let read_op = after.operation?;
    let declared = series::reply_properties(view.api, read_op, after.status()?);
    let sent = change.case.body.as_ref()?.value.as_object()?;
    let new = after.json()?;
    for (name, schema) in &declared {
        if !series::read_only(view.api, schema) || series::changes_by_itself(name) {
            continue;
        }
        let (Some(value), Some(old), Some(now)) =
            (sent.get(*name), before.get(*name), new.get(*name))
        else {
            continue;
        };
        if !series::same_value(old, value) && series::same_value(now, value) {
            return Some(observe(
                &INFO,
                at,
                &change.case.operation,
                name,
                format!(
                    "{} answered {} to a change that set `{name}`, which the document marks readOnly, and the next read shows it went from {} to {}, the value sent",
                    change.name(),
                    change.status()?,
                    series::shown(old),
                    series::shown(now)
                ),
            ));
        }
    }
    None
}
