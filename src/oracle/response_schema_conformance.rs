//! `response_schema_conformance` (F101): the body does not match the response schema.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "response_schema_conformance",
    code: Some("F101"),
    version: 1,
    severity: Severity::Medium,
    title: "the response body does not match its schema",
    setting: declared(
        "checks.response_schema_conformance",
        Kind::Bool,
        "true",
        "F101: the body does not match the response schema",
    ),
};

pub struct ResponseSchemaConformance;

impl Judge for ResponseSchemaConformance {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, with: &Oracles) -> Option<Observation> {
        check(ctx, with).map(|(message, detail)| ctx.observation(&INFO, message, &detail))
    }

    fn judges_foreign_media(&self) -> bool {
        false
    }
}

fn check(ctx: &Context<'_>, with: &Oracles) -> Option<(String, String)> {
    let op_index = *with.operations.get(&ctx.exchange.case.operation)?;
    let operation = &with.api.operations[op_index];
    let response = operation.response_for(ctx.response.status)?;
    let resp_index = operation
        .responses
        .iter()
        .position(|r| std::ptr::eq(r, response))?;
    let content_type = ctx.content_type()?;
    if !is_json(content_type) {
        return None;
    }
    let (media_index, media) = response
        .content
        .iter()
        .enumerate()
        .find(|(_, m)| media_matches(&m.media_type, content_type))?;
    if media.schema == Value::Bool(true) {
        return None;
    }
    ctx.body?;
    if ctx.response.truncated {
        return None;
    }
    let value: &Value = match ctx.json.get()? {
        Ok(v) => v,
        Err(e) => {
                return Some((
                    format!(
                        "{} answered {} with a body that is not JSON ({e})",
                        operation.key.name(),
                        ctx.response.status
                    ),
                    "not-json".into(),
                ))
            }
    };
    let validator = with.validator(op_index, resp_index, media_index, &media.schema)?;
    // Most bodies match: the yes-or-no check is cheaper than listing errors.
    if validator.is_valid(value) {
        return None;
    }
    let issues = validator.errors(value);
    let first = issues.first()?;
    let place = if first.instance_path.is_empty() {
        "/".to_owned()
    } else {
        first.instance_path.clone()
    };
    Some((
        format!(
            "{} answered {}: body at `{}` does not match the schema ({}){}",
            operation.key.name(),
            ctx.response.status,
            place,
            first.message,
            if issues.len() > 1 {
                format!(" and {} more", issues.len() - 1)
            } else {
                String::new()
            }
        ),
        format!(
            "{}:{}",
            first.schema_path,
            normalise::volatile(&first.instance_path)
        ),
    ))
}
