//! `credential_reflected`: a reply echoes a credential probe sent; one finding per operation.
//!
//! Version 2 leaves out what is not a credential coming back:
//! - the answer of an operation that issues credentials (a login, a registration, a token
//!   endpoint): a login answering the run's token, issued again in the same second, is what
//!   it is for;
//! - a reply to a request whose own body held the value (the document's example password
//!   that happens to be the identity's, sent as data and quoted back by a validation
//!   message): what the client sent as data, not the credential it sent;
//! - the value inside a longer word (`pass1` in `pass1secret`): a short password met as
//!   part of other text is not that password.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "credential_reflected",
    code: None,
    version: 2,
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
    if super::secret_in_reply::issues_credentials(&ctx.exchange.operation.key)
        || sent_as_data(ctx)
    {
        return None;
    }
    let header = ctx
        .response
        .headers
        .iter()
        .find(|(_, v)| holds_alone(v.as_bytes()))
        .map(|(k, _)| k.as_str());
    let in_body = || ctx.body.is_some_and(holds_alone);
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

/// Whether `text` holds the placeholder with no letter or digit right before or after it:
/// the credential itself, not a short one met inside a longer word.
fn holds_alone(text: &[u8]) -> bool {
    let placeholder = crate::model::SECRET_PLACEHOLDER.as_bytes();
    memchr::memmem::find_iter(text, placeholder).any(|at| {
        let before = at.checked_sub(1).map(|i| text[i]);
        let after = text.get(at + placeholder.len()).copied();
        !before.is_some_and(|b| b.is_ascii_alphanumeric())
            && !after.is_some_and(|b| b.is_ascii_alphanumeric())
    })
}

/// Whether the request's own body held a credential's value (stored as the placeholder):
/// sent as data, so a reply quoting the body tells nothing of the credential.
fn sent_as_data(ctx: &Context<'_>) -> bool {
    let placeholder = crate::model::SECRET_PLACEHOLDER;
    match &ctx.exchange.interaction.request.body {
        Some(crate::model::BodyBytes::Inline(body)) => {
            memchr::memmem::find(body, placeholder.as_bytes()).is_some()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::holds_alone;

    #[test]
    fn the_placeholder_counts_alone_not_inside_a_word() {
        assert!(holds_alone(b"Bearer <probe:secret>"));
        assert!(holds_alone(b"{\"token\":\"<probe:secret>\"}"));
        assert!(!holds_alone(b"{\"secret\":\"<probe:secret>secret\"}"));
        assert!(!holds_alone(b"x<probe:secret>"));
        assert!(!holds_alone(b"nothing here"));
    }
}
