//! `content_type_declared`: a reply with a body whose Content-Type is not among the response's
//! media types.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "content_type_declared",
    code: None,
    version: 1,
    severity: Severity::Medium,
    title: "the Content-Type is not declared for the response",
    setting: declared(
        "checks.content_type_declared",
        Kind::Bool,
        "true",
        "the Content-Type is not among the response's media types",
    ),
};

pub struct ContentTypeDeclared;

impl Judge for ContentTypeDeclared {
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
    if response.content.is_empty() {
        return None;
    }
    ctx.body?;
    let content_type = ctx.content_type().unwrap_or_default();
    if response
        .content
        .iter()
        .any(|m| media_matches(&m.media_type, content_type))
    {
        return None;
    }
    let declared: Vec<&str> = response
        .content
        .iter()
        .map(|m| m.media_type.as_str())
        .collect();
    let shown = if content_type.is_empty() {
        "no Content-Type".to_owned()
    } else {
        format!("`{content_type}`")
    };
    Some((
        format!(
            "{} answered {} with {shown}, which is not declared (declared: {})",
            op.key.name(),
            ctx.response.status,
            declared.join(", ")
        ),
        content_type.to_owned(),
    ))
}
