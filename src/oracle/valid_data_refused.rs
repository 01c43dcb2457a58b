//! `valid_data_refused`: a request built only from values that know the API was refused.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "valid_data_refused",
    code: None,
    version: 1,
    severity: Severity::Medium,
    title: "a request built from values that know the API was refused",
    setting: declared(
        "checks.valid_data_refused",
        Kind::Bool,
        "true",
        "a request built only from values that know the API was refused with 4xx",
    ),
};

pub struct ValidDataRefused;

impl Judge for ValidDataRefused {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx).map(|(message, detail)| ctx.observation(&INFO, message, &detail))
    }
}

/// A request built only from values that know the API (intent `acceptable`) refused with
/// a 4xx that is not about authorisation, existence, method, negotiation, conflict or rate
/// (401, 403, 404, 405, 406, 409, 429).
fn check(ctx: &Context<'_>) -> Option<(String, String)> {
    let status = ctx.response.status;
    if ctx.exchange.case.intent != Intent::Acceptable
        || !(400..500).contains(&status)
        || matches!(status, 401 | 403 | 404 | 405 | 406 | 409 | 429)
    {
        return None;
    }
    let suffix = error_title_suffix(ctx);
    Some((
        format!(
            "{} refused a request built from the document's own values with {status}{suffix}",
            ctx.exchange.operation.key.name()
        ),
        String::new(),
    ))
}
