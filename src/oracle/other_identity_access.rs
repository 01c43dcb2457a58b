//! `other_identity_access` (F206 for a change or a deletion): one identity read, changed
//! or deleted an object another identity made (broken object-level authorisation). Judged
//! on an access series (docs/security.md): the default identity creates and reads the
//! object, another identity reads it, changes it and deletes it, and the owner reads it
//! after each; a finding needs the evidence, never the status alone:
//! - a read: the other identity was answered 2xx with the same object the owner read;
//! - a change: answered 2xx, and the owner's read after it shows a value the change sent
//!   where the read before showed another;
//! - a deletion: answered 2xx, and the owner's read after it answers 404 or 410.
//!
//! Not judged where the document makes the operation public (an empty security
//! requirement) or says the object is shared (the operation's summary or tags say
//! `public`, `shared`, `anyone`, `everyone` or `any user`).

use super::series::{observe, SeriesObservation, SeriesView, StepView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "other_identity_access",
    code: Some("F206"),
    version: 1,
    severity: Severity::High,
    title: "one identity read, changed or deleted an object another identity made",
    setting: declared(
        "checks.other_identity_access",
        Kind::Bool,
        "true",
        "F206: with two identities, the second read, changed or deleted (2xx, shown by the owner's next read) an object the first made",
    ),
};

/// The same oracle for a read, which changes nothing (no WFC code).
static READ_INFO: OracleInfo = OracleInfo {
    code: None,
    severity: Severity::Medium,
    ..INFO
};

pub struct OtherIdentityAccess;

impl Judge for OtherIdentityAccess {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::ReadAsOther]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        [read(view), change(view), deletion(view)]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Whether the document lets anyone at the step's operation: public, or shared by its
/// own words.
pub(super) fn open_to_all(view: &SeriesView<'_>, step: &StepView<'_>) -> bool {
    let Some(op) = step.operation else {
        return true;
    };
    if op.security_optional {
        return true;
    }
    // A document that declares no security at all says nothing either way: judged.
    let silent = view.api.security_schemes.is_empty() && view.api.default_security.is_empty();
    if !silent && !declares_security(view.api, op) {
        return true;
    }
    let words = op
        .summary
        .iter()
        .chain(&op.tags)
        .map(|t| t.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    ["public", "shared", "anyone", "everyone", "any user", "all users"]
        .iter()
        .any(|w| words.contains(w))
}

fn who(step: &StepView<'_>) -> String {
    match &step.case.identity {
        Some(name) => format!("identity `{name}`"),
        None => "another identity".to_owned(),
    }
}

fn read(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, own) = view.step(StepRole::Read)?;
    let (at, other) = view.step(StepRole::ReadAsOther)?;
    if !own.succeeded() || !other.succeeded() || open_to_all(view, other) {
        return None;
    }
    let (mine, theirs) = (own.json()?, other.json()?);
    let mine = mine.as_object()?;
    let theirs = theirs.as_object()?;
    // The same object: every field of the owner's read that is not one that changes by
    // itself, equal in the other's.
    let compared: Vec<&String> = mine
        .keys()
        .filter(|k| !series::changes_by_itself(k))
        .collect();
    if compared.is_empty()
        || !compared
            .iter()
            .all(|k| theirs.get(*k).is_some_and(|v| series::same_value(v, &mine[*k])))
    {
        return None;
    }
    Some(observe(
        &READ_INFO,
        at,
        &other.case.operation,
        "read",
        format!(
            "{} answered {} to {} with the object the default identity created",
            other.name(),
            other.status()?,
            who(other)
        ),
    ))
}

fn change(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, change) = view.step(StepRole::UpdateAsOther)?;
    if !change.succeeded() || open_to_all(view, change) {
        return None;
    }
    let (_, before) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(StepRole::ReadAfterUpdateAsOther)?;
    if !before.succeeded() || !after.succeeded() {
        return None;
    }
    let (name, old, new) = series::changed_field(change, &before.json()?, &after.json()?)?;
    Some(observe(
        &INFO,
        at,
        &change.case.operation,
        "update",
        format!(
            "{} answered {} to {}, and the owner's next read shows `{name}` changed from {old} to {new}, the value it sent",
            change.name(),
            change.status()?,
            who(change)
        ),
    ))
}

fn deletion(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, delete) = view.step(StepRole::DeleteAsOther)?;
    if !delete.succeeded() || open_to_all(view, delete) {
        return None;
    }
    let (_, before) = view.last_before(StepRole::Read, at)?;
    let (_, after) = view.step(StepRole::ReadAfterDeleteAsOther)?;
    if !before.succeeded() || !matches!(after.status()?, 404 | 410) {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &delete.case.operation,
        "delete",
        format!(
            "{} answered {} to {}, and the owner's next read answered {}: the object is gone",
            delete.name(),
            delete.status()?,
            who(delete),
            after.status()?
        ),
    ))
}
