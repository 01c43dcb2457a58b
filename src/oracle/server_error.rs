//! `server_error` (F100): the API answered with a server error (5xx). Its findings are told
//! apart by the reply's text (one stack trace from another), what servers echo normalised.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "server_error",
    code: Some("F100"),
    version: 3,
    severity: Severity::High,
    title: "the API answered with a server error (5xx)",
    setting: declared(
        "checks.server_error",
        Kind::Bool,
        "true",
        "F100: the API answered 5xx",
    ),
};

pub struct ServerError;

impl Judge for ServerError {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx).map(|(message, detail)| ctx.observation(&INFO, message, &detail))
    }
}

fn check(ctx: &Context<'_>) -> Option<(String, String)> {
    let status = ctx.response.status;
    (500..600).contains(&status).then(|| {
        let suffix = error_title_suffix(ctx);
        (
            format!(
                "{} answered {status}{suffix}",
                ctx.exchange.operation.key.name()
            ),
            String::new(),
        )
    })
}
