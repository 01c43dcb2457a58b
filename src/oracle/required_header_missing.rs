//! `required_header_missing`: a header the response declares required is missing.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "required_header_missing",
    code: None,
    version: 1,
    severity: Severity::Low,
    title: "a header the response declares required is missing",
    setting: declared(
        "checks.required_header_missing",
        Kind::Bool,
        "true",
        "a header the response declares required is missing",
    ),
};

pub struct RequiredHeaderMissing;

impl Judge for RequiredHeaderMissing {
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
    let response = op.response_for(ctx.response.status)?;
    let missing: Vec<&str> = response
        .headers
        .iter()
        .filter(|h| h.required && ctx.response.header(&h.name).is_none())
        .map(|h| h.name.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some((
        format!(
            "{} answered {} without the required header{} {}",
            op.key.name(),
            ctx.response.status,
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        ),
        missing.join(",").to_ascii_lowercase(),
    ))
}
