//! `non_idempotent_put`: the same PUT was sent twice, each answered 2xx and followed by a read; the two
//! reads differ. PUT is idempotent (RFC 9110, 9.2.2): proxies and clients may repeat it,
//! so a PUT that adds (a deposit, a counter) corrupts data when the network hiccups. Only
//! numbers, booleans and array sizes are compared (strings hold clocks and tokens), and
//! not fields whose name says they change by themselves (`updated_at`, `version`, `etag`)
//! or numbers that read as clocks. Version 2 judges a PUT on an action path under the item
//! (`PUT /wallets/{id}/balance`, no read of its own) the same way, the item read around it.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "non_idempotent_put",
    code: Some("905"),
    version: 2,
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
        let update = [
            StepRole::Update,
            StepRole::ReadAfterUpdate,
            StepRole::UpdateAgain,
            StepRole::ReadAfterUpdateAgain,
        ];
        let action = [
            StepRole::Action,
            StepRole::ReadAfterAction,
            StepRole::ActionAgain,
            StepRole::ReadAfterActionAgain,
        ];
        check(view, update)
            .into_iter()
            .chain(check(view, action))
            .collect()
    }
}

/// The PUT of `roles[0]` and its repetition `roles[2]`, each followed by a read of the
/// item (`roles[1]`, `roles[3]`): the PUT of the item itself, or a PUT on an action path
/// under it (version 2).
fn check(view: &SeriesView<'_>, roles: [StepRole; 4]) -> Option<SeriesObservation> {
    let (at, update) = view.step(roles[0])?;
    let (_, first) = view.step(roles[1])?;
    let (_, again) = view.step(roles[2])?;
    let (_, second) = view.step(roles[3])?;
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
