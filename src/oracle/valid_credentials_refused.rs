//! `valid_credentials_refused` (F205): the API answered 401 (the credentials are missing or
//! wrong, RFC 9110 15.5.2) to a request whose credentials it accepted a moment later.
//! Whatever was wrong with the request, it was not the credentials: the answer should have
//! said so (400, 403, 404), and a client that trusts the 401 throws away
//! a good token or logs its user out. Judged on a `credentials` series (docs/security.md):
//! the refused request sent again, then a request the same credentials had accepted (a
//! read that names no item when there is one, else one of the same operation).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "valid_credentials_refused",
    code: Some("F205"),
    version: 2,
    severity: Severity::Medium,
    title: "an operation answered 401 to credentials the API accepted a moment later",
    setting: declared(
        "checks.valid_credentials_refused",
        Kind::Bool,
        "true",
        "F205: a request with the run's credentials answered 401, and right after, a request the same credentials had made accepted answered 2xx again",
    ),
};

pub struct ValidCredentialsRefused;

impl Judge for ValidCredentialsRefused {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::RefusedWithCredentials,
            StepRole::AcceptedAfterRefusal,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, refused) = view.step(StepRole::RefusedWithCredentials)?;
    let (_, accepted) = view.step(StepRole::AcceptedAfterRefusal)?;
    if refused.status()? != 401
        || !accepted.succeeded()
        || refused.case.identity != accepted.case.identity
        || refused.case.credentials.is_some()
        || accepted.case.credentials.is_some()
        // A 401 to a request that carried no credential (its operation takes a scheme the
        // run was not given one for) is right, and tells nothing of the credentials.
        // A login or token operation answers 401 to the credentials in its body (a wrong
        // password), whatever the request's own carried.
        || refused
            .operation
            .is_some_and(|op| super::secret_in_reply::issues_credentials(&op.key))
        || !super::ignored_authentication::carries_any_credential(
            view.api,
            &refused.interaction.request,
        )
    {
        return None;
    }
    let said = refused
        .body
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(|t| {
            let short: String = t.chars().take(80).collect();
            format!(" (it said {short})")
        })
        .unwrap_or_default();
    Some(observe(
        &INFO,
        at,
        &refused.case.operation,
        "",
        format!(
            "{} answered 401{said} to credentials that {} accepted right after ({}): the request was refused for something else, and the answer should say what",
            refused.name(),
            accepted.name(),
            accepted.status()?
        ),
    ))
}
