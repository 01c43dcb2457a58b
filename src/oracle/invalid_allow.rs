//! `invalid_allow`: an `OPTIONS` request on a path answered 2xx with an `Allow` header whose methods
//! (HEAD and OPTIONS aside) are not those the document declares for the path: a declared
//! method missing, or one the document does not declare (an endpoint left open, such as a
//! debugging or deprecated one).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "invalid_allow",
    code: Some("908"),
    version: 1,
    severity: Severity::Low,
    title: "OPTIONS names other methods than the document declares",
    setting: declared(
        "checks.invalid_allow",
        Kind::Bool,
        "true",
        "the Allow header of an OPTIONS reply lacks a declared method or names an undeclared one",
    ),
};

pub struct InvalidAllow;

impl Judge for InvalidAllow {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Options]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, options) = view.step(StepRole::Options)?;
    if !options.succeeded() {
        return None;
    }
    let allow = options.header("allow")?;
    let ignored = |m: &str| matches!(m, "HEAD" | "OPTIONS" | "");
    let allowed: std::collections::BTreeSet<String> = allow
        .split(',')
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| !ignored(m))
        .collect();
    let path = &options.case.path;
    let declared: std::collections::BTreeSet<String> = view
        .api
        .operations
        .iter()
        .filter(|o| &o.key.path == path)
        .map(|o| o.key.method.to_ascii_uppercase())
        .filter(|m| !ignored(m))
        .collect();
    let missing: Vec<&str> = declared.difference(&allowed).map(String::as_str).collect();
    let extra: Vec<&str> = allowed.difference(&declared).map(String::as_str).collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("lacks {} (declared)", missing.join(", ")));
    }
    if !extra.is_empty() {
        parts.push(format!("names {} (not declared)", extra.join(", ")));
    }
    Some(observe(
        &INFO,
        at,
        &options.case.operation,
        path,
        format!("OPTIONS {path} answered Allow: {allow}, which {}", parts.join(" and ")),
    ))
}
