//! `partial_update_put`: a PUT answered 2xx, and a read right after shows a field that the PUT sent with
//! a new value still at the value it had before. Only fields the document declares both in
//! the PUT's body and in the read's reply are compared, only where the value sent differs
//! from the old one, and never a field the server alone writes (`readOnly`): a server that
//! normalises what it is sent (trims, lower-cases) changes the value, but not back to the old
//! one.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "partial_update_put",
    code: Some("904"),
    version: 1,
    severity: Severity::Medium,
    title: "a PUT left fields it sent at their old values",
    setting: declared(
        "checks.partial_update_put",
        Kind::Bool,
        "true",
        "after a 2xx PUT, a read shows a field the PUT sent still at its old value",
    ),
};

pub struct PartialUpdatePut;

impl Judge for PartialUpdatePut {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::Update, StepRole::ReadAfterUpdate]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, update) = view.step(StepRole::Update)?;
    if update.case.method != "PUT" || !update.succeeded() {
        return None;
    }
    let (_, read) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(StepRole::ReadAfterUpdate)?;
    let (put_op, read_op) = (update.operation?, after.operation?);
    let sent = update.case.body.as_ref()?.value.as_object()?;
    let (old, new) = (read.json()?, after.json()?);
    let sent_fields = series::request_properties(view.api, put_op);
    let read_fields = series::reply_properties(view.api, read_op, after.status()?);
    for (name, schema) in &sent_fields {
        if !read_fields.contains_key(name) || series::read_only(view.api, schema) {
            continue;
        }
        let (Some(m), Some(b), Some(a)) = (sent.get(*name), old.get(*name), new.get(*name)) else {
            continue;
        };
        if !series::same_value(m, b) && series::same_value(a, b) {
            return Some(observe(
                &INFO,
                at,
                &update.case.operation,
                name,
                format!(
                    "{} answered {} but left `{name}` at {}; it sent {}",
                    update.name(),
                    update.status().unwrap_or_default(),
                    series::shown(b),
                    series::shown(m)
                ),
            ));
        }
    }
    None
}
