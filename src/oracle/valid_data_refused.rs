//! `valid_data_refused`: a request built only from values that know the API was refused, or
//! a valid value refused where the same request with another value was accepted.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "valid_data_refused",
    code: None,
    version: 2,
    severity: Severity::Medium,
    title: "a request built from values that know the API was refused",
    setting: declared(
        "checks.valid_data_refused",
        Kind::Bool,
        "true",
        "a valid request was refused with 4xx: built only from values that know the API, or with one value pinned down as the difference from an accepted request",
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

/// Whether a 4xx may refuse what a request's values are: not when it is about who asks
/// (401, 403), what exists or its state (404, 409, 410, 412, 423, 428), how (405, 406, 415),
/// how much (413, 414, 431), or when and how often (408, 429).
pub fn refuses_the_values(status: u16) -> bool {
    (400..500).contains(&status)
        && !matches!(
            status,
            401 | 403 | 404 | 405 | 406 | 408 | 409 | 410 | 412 | 413 | 414 | 415 | 423 | 428 | 429 | 431
        )
}

/// A valid request (intent `acceptable`) refused with a 4xx that may refuse its values.
fn check(ctx: &Context<'_>) -> Option<(String, String)> {
    let status = ctx.response.status;
    if ctx.exchange.case.intent != Intent::Acceptable || !refuses_the_values(status) {
        return None;
    }
    let suffix = error_title_suffix(ctx);
    if let Some(m) = ctx
        .exchange
        .case
        .mutation
        .as_ref()
        .filter(|m| m.kind == crate::model::MutationKind::RefusedValue)
    {
        // Pinned down (docs/pinpointing.md): the request differs from an accepted one by
        // this one valid value. A rule the document states for the refusal explains it.
        if crate::pinpoint::explained(ctx.exchange.operation, status, &m.place) {
            return None;
        }
        return Some((
            format!(
                "{} refused a valid value with {status}: {}{suffix}",
                ctx.exchange.operation.key.name(),
                m.description
            ),
            m.place.clone(),
        ));
    }
    Some((
        format!(
            "{} refused a request built from the document's own values with {status}{suffix}",
            ctx.exchange.operation.key.name()
        ),
        String::new(),
    ))
}
