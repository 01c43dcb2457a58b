//! `invalid_data_accepted` (F102): a request meant to be refused was answered with a success.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "invalid_data_accepted",
    code: Some("F102"),
    version: 1,
    severity: Severity::Medium,
    title: "a request that breaks the document was answered with a success",
    setting: declared(
        "checks.invalid_data_accepted",
        Kind::Bool,
        "true",
        "F102: a request that breaks the document was answered 2xx",
    ),
};

pub struct InvalidDataAccepted;

impl Judge for InvalidDataAccepted {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx).map(|(message, detail)| ctx.observation(&INFO, message, &detail))
    }
}

/// F102: a request whose intent is `refusal_expected` (one change that breaks what the
/// document states, or a single-violation negative) answered with a well-formed 2xx: the
/// body, when it claims JSON, is JSON.
fn check(ctx: &Context<'_>) -> Option<(String, String)> {
    let case = ctx.exchange.case;
    let status = ctx.response.status;
    if case.intent != Intent::RefusalExpected || !(200..300).contains(&status) {
        return None;
    }
    if let (Some(ct), Some(body)) = (ctx.content_type(), ctx.body) {
        if is_json(ct)
            && !ctx.response.truncated
            && ctx.exchange.response_json.is_none()
            && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err()
        {
            return None;
        }
    }
    let (what, detail) = match &case.mutation {
        Some(m) => (
            format!("{} at `{}` ({})", m.kind, m.place, m.description),
            format!("{}@{}", m.kind, m.place),
        ),
        None => (
            format!("a request breaking {}", case.mode),
            case.mode.clone(),
        ),
    };
    Some((
        format!(
            "{} accepted {what} with {status}",
            ctx.exchange.operation.key.name()
        ),
        detail,
    ))
}
