//! `hidden_endpoint` (F210): an item path answered 2xx to a method the document does not
//! declare for it: an endpoint that is served but not described, so it is neither tested nor
//! secured like the described ones. Judged on a `methods` series (docs/security.md): a fresh
//! resource is created and read, then sent each undeclared method of GET, PATCH, PUT and
//! DELETE (DELETE last; a PUT or PATCH carries what the read answered). A reply in HTML is
//! not reported: servers that answer every path with a page (a single-page app's fallback)
//! would otherwise be reported for every method.

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "hidden_endpoint",
    code: Some("F210"),
    version: 1,
    severity: Severity::Medium,
    title: "a path answered 2xx to a method the document does not declare for it",
    setting: declared(
        "checks.hidden_endpoint",
        Kind::Bool,
        "true",
        "F210: an item path answered 2xx to a method (GET, PATCH, PUT, DELETE) the document does not declare for it, sent once per resource on a fresh one",
    ),
};

pub struct HiddenEndpoint;

impl Judge for HiddenEndpoint {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Read, StepRole::UndeclaredMethod]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        view.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.role == StepRole::UndeclaredMethod && s.succeeded())
            .filter(|(_, s)| {
                !s.header("content-type")
                    .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/html"))
            })
            .filter_map(|(at, s)| {
                let declared = view
                    .api
                    .operations
                    .iter()
                    .any(|o| o.key.method == s.case.method && o.key.path == s.case.path);
                if declared {
                    return None;
                }
                let name = s.name();
                Some(observe(
                    &INFO,
                    at,
                    &name,
                    "",
                    format!(
                        "{name} answered {}, though the document declares no {} for this path",
                        s.status()?,
                        s.case.method
                    ),
                ))
            })
            .collect()
    }
}
