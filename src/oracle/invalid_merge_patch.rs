//! `invalid_merge_patch`: a PATCH with a JSON body (`application/merge-patch+json`, or plain JSON, which
//! is read the same way by most APIs) answered 2xx, and a field the PATCH's schema declares
//! but the body left out changed between the reads before and after it. A merge patch
//! leaves out what it does not change (RFC 7386); a server that maps the body onto an object
//! whose missing fields read as null erases them. Fields the server alone writes
//! (`readOnly`) and fields whose name says they change by themselves are not compared.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "invalid_merge_patch",
    code: Some("906"),
    version: 1,
    severity: Severity::Medium,
    title: "a PATCH changed fields it did not send",
    setting: declared(
        "checks.invalid_merge_patch",
        Kind::Bool,
        "true",
        "a JSON PATCH answered 2xx changed a declared field its body left out",
    ),
};

pub struct InvalidMergePatch;

impl Judge for InvalidMergePatch {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::Patch, StepRole::ReadAfterPatch]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, update) = view.step(StepRole::Patch)?;
    let body = update.case.body.as_ref()?;
    let media = body.media_type.to_ascii_lowercase();
    if update.case.method != "PATCH"
        || !update.succeeded()
        || !(media.starts_with("application/merge-patch+json") || media.starts_with("application/json"))
    {
        return None;
    }
    let sent = body.value.as_object()?;
    // The last read before the PATCH, and the read after it.
    let (_, read) = view.steps[..at].iter().enumerate().rev().find(|(_, s)| {
        matches!(
            s.role,
            StepRole::Read | StepRole::ReadAfterUpdate | StepRole::ReadAfterUpdateAgain
        )
    })?;
    let (_, after) = view.step(StepRole::ReadAfterPatch)?;
    if !read.succeeded() || !after.succeeded() {
        return None;
    }
    let (old, new) = (read.json()?, after.json()?);
    let patch_fields = series::request_properties(view.api, update.operation?);
    for (name, schema) in &patch_fields {
        if sent.contains_key(*name)
            || series::read_only(view.api, schema)
            || series::changes_by_itself(name)
        {
            continue;
        }
        let Some(b) = old.get(*name) else { continue };
        let changed = match new.get(*name) {
            Some(a) => !series::same_value(a, b),
            None => true,
        };
        if changed {
            let now = new.get(*name).map_or("absent".to_owned(), series::shown);
            return Some(observe(
                &INFO,
                at,
                &update.case.operation,
                name,
                format!(
                    "{} did not send `{name}`, yet it went from {} to {now}",
                    update.name(),
                    series::shown(b)
                ),
            ));
        }
    }
    None
}
