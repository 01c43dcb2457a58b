//! `status_code_declared`: the status is not among the operation's responses (a 5xx is left to
//! `server_error`).

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "status_code_declared",
    code: None,
    version: 1,
    severity: Severity::Medium,
    title: "the status code is not declared for the operation",
    setting: declared(
        "checks.status_code_declared",
        Kind::Bool,
        "true",
        "the status is not among the operation's responses",
    ),
};

pub struct StatusCodeDeclared;

impl Judge for StatusCodeDeclared {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx).map(|(message, detail)| ctx.observation(&INFO, message, &detail))
    }

    fn judges_foreign_media(&self) -> bool {
        false
    }
}

fn check(ctx: &Context<'_>) -> Option<(String, String)> {
    let op = ctx.exchange.operation;
    // A 5xx is the server_error oracle's: reporting it again as undeclared is noise.
    if op.responses.is_empty()
        || ctx.response.status >= 500
        || op.response_for(ctx.response.status).is_some()
    {
        return None;
    }
    let declared: Vec<String> = op.responses.iter().map(|r| r.status.to_string()).collect();
    Some((
        format!(
            "{} answered {}, which is not declared (declared: {})",
            op.key.name(),
            ctx.response.status,
            declared.join(", ")
        ),
        String::new(),
    ))
}
