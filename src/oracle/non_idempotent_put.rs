//! `non_idempotent_put`: the same PUT was sent twice, each answered 2xx and followed by a read; the two
//! reads differ. PUT is idempotent (RFC 9110, 9.2.2): proxies and clients may repeat it,
//! so a PUT that adds (a deposit, a counter) corrupts data when the network hiccups. Only
//! numbers, booleans and array sizes are compared (strings hold clocks and tokens), and
//! not fields whose name says they change by themselves (`updated_at`, `version`, `etag`)
//! or numbers that read as clocks.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "non_idempotent_put",
    code: Some("905"),
    version: 1,
    severity: Severity::High,
    title: "the same PUT sent twice leaves the resource different from sending it once",
    setting: declared(
        "checks.non_idempotent_put",
        Kind::Bool,
        "true",
        "two reads, each after the same PUT, differ in a number, a boolean or an array size",
    ),
};

pub struct NonIdempotentPut;

impl Judge for NonIdempotentPut {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Update, StepRole::ReadAfterUpdate, StepRole::UpdateAgain, StepRole::ReadAfterUpdateAgain]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, update) = view.step(StepRole::Update)?;
    let (_, first) = view.step(StepRole::ReadAfterUpdate)?;
    let (_, again) = view.step(StepRole::UpdateAgain)?;
    let (_, second) = view.step(StepRole::ReadAfterUpdateAgain)?;
    if update.case.method != "PUT"
        || ![update, first, again, second].iter().all(|s| s.succeeded())
    {
        return None;
    }
    let (pointer, before, after) =
        series::idempotence_difference(&first.json()?, &second.json()?)?;
    Some(observe(
        &INFO,
        at,
        &update.case.operation,
        "",
        format!(
            "the same {} sent twice changed the resource twice: {} read {before} after the \
             first and {after} after the second",
            update.name(),
            if pointer.is_empty() { "the body" } else { pointer.as_str() }
        ),
    ))
}
