//! `ignored_authentication` (F207, F208 for writes): an operation that declares security
//! answered 2xx to a request that carried no credential, or only one the API cannot know.

use super::*;

use crate::model::CredentialProbe;
use crate::spec::SecurityScheme;

pub const INFO: OracleInfo = OracleInfo {
    name: "ignored_authentication",
    code: Some("F207"),
    version: 1,
    severity: Severity::High,
    title: "an operation that declares security answered 2xx without valid credentials",
    setting: declared(
        "checks.ignored_authentication",
        Kind::Bool,
        "true",
        "F207/F208: an operation that declares security answered 2xx to a request without credentials, or with credentials the API cannot know",
    ),
};

/// The same oracle for a request that changes something (F208: anonymous modification).
static WRITE_INFO: OracleInfo = OracleInfo {
    code: Some("F208"),
    ..INFO
};

pub struct IgnoredAuthentication;

impl Judge for IgnoredAuthentication {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, with: &Oracles) -> Option<Observation> {
        check(ctx, with.api())
    }
}

fn check(ctx: &Context<'_>, api: &Api) -> Option<Observation> {
    let status = ctx.response.status;
    if !(200..300).contains(&status) {
        return None;
    }
    let op = ctx.exchange.operation;
    let schemes = declared_schemes(api, op)?;
    let request = &ctx.exchange.interaction.request;
    let (detail, how) = match ctx.exchange.case.credentials {
        Some(CredentialProbe::Unknown) => ("unknown", "credentials the API cannot know"),
        Some(CredentialProbe::Other) => return None,
        // A forged token is `token_forgery`'s to judge.
        Some(p) if crate::jwt::Forgery::of(p).is_some() => return None,
        _ if carries_credentials(request, &schemes) => return None,
        _ => ("withheld", "no credentials"),
    };
    let name = op.key.name();
    let write = !matches!(op.key.method.as_str(), "GET" | "HEAD" | "OPTIONS");
    let oracle = if write { &WRITE_INFO } else { &INFO };
    Some(per_operation(
        oracle,
        &name,
        detail,
        format!(
            "{name} answered {status} to a request with {how}, though it declares security ({})",
            op.security.join(", ")
        ),
    ))
}

/// Whether `op` requires credentials of schemes probe knows how to send (see
/// [`declared_schemes`]).
pub fn declares_security(api: &Api, op: &Operation) -> bool {
    declared_schemes(api, op).is_some()
}

/// The schemes an operation requires, when it requires one and probe knows each: `None`
/// for an operation the document leaves public (no requirement, or an empty one among
/// them) or one that names a scheme probe cannot tell is present in a request (mutual
/// TLS, say).
fn declared_schemes<'a>(api: &'a Api, op: &Operation) -> Option<Vec<&'a SecurityScheme>> {
    if op.security.is_empty() || op.security_optional {
        return None;
    }
    op.security
        .iter()
        .map(|name| api.security_schemes.get(name))
        .collect()
}

/// Whether a stored request carries a credential of any scheme the document declares (see
/// [`carries_credentials`]).
pub fn carries_any_credential(api: &Api, request: &crate::model::RequestRecord) -> bool {
    let schemes: Vec<&SecurityScheme> = api.security_schemes.values().collect();
    carries_credentials(request, &schemes)
}

/// Whether a stored request carries a credential: an `Authorization` header, the header,
/// query parameter or cookie of an API key the operation takes, or any value the store
/// keeps as the placeholder of a secret (a `--header` credential).
fn carries_credentials(request: &crate::model::RequestRecord, schemes: &[&SecurityScheme]) -> bool {
    let placeholder = crate::model::SECRET_PLACEHOLDER;
    if request.url.contains(placeholder)
        || request
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization") || v.contains(placeholder))
    {
        return true;
    }
    schemes.iter().any(|s| match s {
        SecurityScheme::ApiKey { location, name } => match location {
            crate::model::Location::Header => request
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name)),
            crate::model::Location::Query => url::Url::parse(&request.url)
                .is_ok_and(|url| url.query_pairs().any(|(k, _)| k == name.as_str())),
            crate::model::Location::Cookie => request.headers.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case("cookie")
                    && v.split(';').any(|c| c.trim().split('=').next() == Some(name.as_str()))
            }),
            crate::model::Location::Path => false,
        },
        _ => false,
    })
}
