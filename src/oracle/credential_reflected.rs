//! `credential_reflected`: a reply echoes a credential probe sent; one finding per operation.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "credential_reflected",
    code: None,
    version: 1,
    severity: Severity::Medium,
    title: "the reply echoes a credential probe sent",
    setting: declared(
        "checks.credential_reflected",
        Kind::Bool,
        "true",
        "a reply echoes a credential probe sent (stored as the placeholder)",
    ),
};

pub struct CredentialReflected;

impl Judge for CredentialReflected {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx)
    }

    fn judges_throttled(&self) -> bool {
        true
    }
}

/// A reply that holds a credential probe sent (the store keeps the placeholder where the
/// redactor found it, so this judges a stored run the same way): once per operation.
fn check(ctx: &Context<'_>) -> Option<Observation> {
    let placeholder = crate::model::SECRET_PLACEHOLDER;
    let header = ctx
        .response
        .headers
        .iter()
        .find(|(_, v)| v.contains(placeholder))
        .map(|(k, _)| k.as_str());
    let in_body = || {
        ctx.body
            .is_some_and(|b| memchr::memmem::find(b, placeholder.as_bytes()).is_some())
    };
    let place = match header {
        Some(name) => format!("the header `{name}`"),
        None if in_body() => "its body".to_owned(),
        None => return None,
    };
    let name = ctx.exchange.operation.key.name();
    Some(per_operation(
        &INFO,
        &name,
        "",
        format!(
            "{name} answered {} with a credential probe sent echoed in {place} (the store keeps `{placeholder}` in its place)",
            ctx.response.status
        ),
    ))
}
