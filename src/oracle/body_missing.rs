//! `body_missing`: a success answered with no body where the document declares one. A
//! client that parses the declared JSON fails on such an answer, and no other oracle sees
//! it: the schema and media-type checks judge only the body that came.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "body_missing",
    code: None,
    version: 1,
    severity: Severity::Low,
    title: "a success came with no body where the document declares one",
    setting: declared(
        "checks.body_missing",
        Kind::Bool,
        "true",
        "a 2xx came with no body where its response declares content with a schema",
    ),
};

pub struct BodyMissing;

impl Judge for BodyMissing {
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
    let status = ctx.response.status;
    let op = ctx.exchange.operation;
    // No body is what HEAD, 204, 205 and 304 mean.
    if !(200..300).contains(&status)
        || matches!(status, 204 | 205)
        || op.key.method.eq_ignore_ascii_case("HEAD")
        || ctx.body.is_some()
    {
        return None;
    }
    let response = op.response_for(status)?;
    // Only content that promises something: a media type with a schema that is not `{}`
    // or `true`.
    let promised: Vec<&str> = response
        .content
        .iter()
        .filter(|m| !matches!(&m.schema, Value::Bool(true)) && m.schema != serde_json::json!({}))
        .map(|m| m.media_type.as_str())
        .collect();
    if promised.is_empty() {
        return None;
    }
    Some((
        format!(
            "{} answered {status} with no body, where the document declares one ({})",
            op.key.name(),
            promised.join(", ")
        ),
        String::new(),
    ))
}
