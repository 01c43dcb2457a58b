//! `partial_update_put`: a PUT answered 2xx, and a read right after shows a field that the PUT sent with
//! a new value still at the value it had before. Only fields the document declares both in
//! the PUT's body and in the read's reply are compared, only where the value sent differs
//! from the old one, and never a field the server alone writes (`readOnly`): a server that
//! normalises what it is sent (trims, lower-cases) changes the value, but not back to the old
//! one. Version 2 also reports a field the PUT's body declares optional, that the read
//! before it showed and the PUT left out, still read at its old value after it: a PUT
//! replaces the whole state (RFC 9110, 9.3.4), so what it does not send is gone or back at
//! its default (a field whose default is the old value is not reported).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "partial_update_put",
    code: Some("904"),
    version: 2,
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
    let required = series::request_required(view.api, put_op);
    for (name, schema) in &sent_fields {
        if !read_fields.contains_key(name) || series::read_only(view.api, schema) {
            continue;
        }
        let (Some(b), Some(a)) = (old.get(*name), new.get(*name)) else {
            continue;
        };
        let kept = sent.get(*name).is_none()
            && !required.contains(name)
            && series::same_value(a, b)
            && !b.is_null()
            && view
                .api
                .schemas
                .deref(schema, 64)
                .and_then(|s| s.get("default"))
                .is_none_or(|d| !series::same_value(d, b));
        if kept {
            return Some(observe(
                &INFO,
                at,
                &update.case.operation,
                "kept",
                format!(
                    "{} answered {} without `{name}`, yet `{name}` is still {}: the PUT kept what it was not sent",
                    update.name(),
                    update.status().unwrap_or_default(),
                    series::shown(b),
                ),
            ));
        }
        let Some(m) = sent.get(*name) else {
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
