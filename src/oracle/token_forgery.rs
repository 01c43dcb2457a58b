//! `token_forgery` (F214): the API took a bearer token it did not sign. Judged on a
//! `forgery` series (docs/security.md), started once a run when the default identity's
//! bearer token is a JSON Web Token: a GET of an operation that declares security, which
//! the token was accepted on, sent again with the token (`with_token`), without it
//! (`without_token`), and with the token forged (`forged_token`, one step each): its
//! header set to `alg: none` and no signature, its signature stripped, and for an
//! HMAC-signed token (`HS256`, ...) a claim added and re-signed with a key no API has, and
//! with the weak key that signed it when one of probe's short list did (`jwt::WEAK_KEYS`
//! and the API's name, tried by HMAC here, with no request).
//!
//! A finding, per forgery, when the token was accepted (2xx), the request without it was
//! refused (401 or 403: the operation does check its caller), and the forged one was
//! accepted. The forged token is stored as sent, so the evidence is read from the store:
//! the step counts only when its `Authorization` holds a token forged the way its case
//! says (for a weak key, one that key's HMAC verifies, which names the key). A re-signed
//! token accepted with another key says the signature is not checked at all; the weak key's
//! acceptance is reported only when the other key's was refused.

use super::series::{observe, SeriesObservation, SeriesView, StepView};
use super::*;
use crate::jwt::{self, Forgery};
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "token_forgery",
    code: Some("F214"),
    version: 1,
    severity: Severity::High,
    title: "the API accepted a bearer token forged from its own: alg none, no signature, or re-signed with a weak or another key",
    setting: declared(
        "checks.token_forgery",
        Kind::Bool,
        "true",
        "F214: when the run's bearer token is a JWT, a request it was accepted on is sent with it forged (alg none, signature stripped, re-signed with a weak key of a short list or with another key); a forged one accepted where no token was refused",
    ),
};

pub struct TokenForgery;

impl Judge for TokenForgery {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::WithToken,
            StepRole::WithoutToken,
            StepRole::ForgedToken,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view)
    }
}

fn check(view: &SeriesView<'_>) -> Vec<SeriesObservation> {
    let (Some((_, with)), Some((_, without))) = (
        view.step(StepRole::WithToken),
        view.step(StepRole::WithoutToken),
    ) else {
        return Vec::new();
    };
    if !with.succeeded() || !matches!(without.status(), Some(401 | 403)) {
        return Vec::new();
    }
    let keys = jwt::candidate_keys(&view.api.title);
    let accepted: Vec<(usize, Forgery, Option<String>)> = view
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.role == StepRole::ForgedToken && s.succeeded())
        .filter_map(|(i, s)| {
            let (how, key) = forged_as_said(s, &keys)?;
            Some((i, how, key))
        })
        .collect();
    let signature_unchecked = accepted.iter().any(|(_, how, _)| *how == Forgery::OtherKey);
    accepted
        .into_iter()
        .filter(|(_, how, _)| !(signature_unchecked && *how == Forgery::WeakKey))
        .map(|(at, how, key)| {
            let step = &view.steps[at];
            let why = match (how, key) {
                (Forgery::WeakKey, Some(key)) if key.is_empty() => {
                    " (the API signs its tokens with an empty key: anyone can make one)".to_owned()
                }
                (Forgery::WeakKey, Some(key)) => format!(
                    " (the API signs its tokens with the key `{key}`: anyone can make one)"
                ),
                (Forgery::OtherKey, _) => " (the API does not check signatures)".to_owned(),
                _ => String::new(),
            };
            observe(
                &INFO,
                at,
                &step.case.operation,
                how.as_str(),
                format!(
                    "{} answered {} to the run's bearer token with {}{why}; with the token it answered {}, without it {}",
                    step.name(),
                    step.status().unwrap_or_default(),
                    how.describe(),
                    with.status().unwrap_or_default(),
                    without.status().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// How the step's stored token is forged, when it is forged as its case says; with the
/// weak key that signed it, for a weak key's forgery.
fn forged_as_said(step: &StepView<'_>, keys: &[String]) -> Option<(Forgery, Option<String>)> {
    let how = Forgery::of(step.case.credentials?)?;
    let token = step
        .interaction
        .request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .and_then(|(_, v)| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))?
        .1;
    let alg = jwt::algorithm(token)?;
    match how {
        Forgery::AlgNone => alg.eq_ignore_ascii_case("none").then_some((how, None)),
        Forgery::Unsigned => (token.ends_with('.') && !alg.eq_ignore_ascii_case("none"))
            .then_some((how, None)),
        Forgery::WeakKey => Some((how, Some(jwt::weak_key(token, keys)?))),
        Forgery::OtherKey => jwt::weak_key(token, &[jwt::NOT_THE_KEY.to_owned()])
            .map(|_| (how, None)),
    }
}
