//! `user_enumeration` (F212): the login tells a user who exists from one who does not.
//! Judged on an `enumeration` series (docs/security.md): a configured identity's login sent
//! with a wrong password, then the same login as two users who do not exist. A finding when
//! the two unknown users got the same answer and the known user another one:
//! - another status (401 for a wrong password, 404 for no such user);
//! - another body, once each step's own user (and an e-mail's local part) is taken out of
//!   its reply, and, in a JSON reply, the fields that differ between the two unknown users
//!   (they vary anyway: a clock, a request id);
//! - a body whose size differs by more than a quarter (and 16 bytes), where the two unknown
//!   users' do not.
//!
//! An attacker learns which accounts exist from either, and guesses passwords only for
//! those. A 429 in any step (the API pacing its clients) is not judged; neither is an
//! answer's time, which a loaded server varies by itself.

use super::series::{observe, shown, SeriesObservation, SeriesView, StepView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "user_enumeration",
    code: Some("F212"),
    version: 1,
    severity: Severity::Medium,
    title: "the login answers a known user with a wrong password otherwise than an unknown user",
    setting: declared(
        "checks.user_enumeration",
        Kind::Bool,
        "true",
        "F212: with a login configured, its answer to a known user with a wrong password differs (status, body or size) from its answer to two unknown users, which agree",
    ),
};

pub struct UserEnumeration;

impl Judge for UserEnumeration {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::KnownUserWrongPassword,
            StepRole::UnknownUserWrongPassword,
            StepRole::UnknownUserAgain,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

/// One login step as compared: its status, and its reply with its own user taken out.
struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    fn of(step: &StepView<'_>, user_field: &str) -> Option<Answer> {
        let status = step.status()?;
        let mut text = String::from_utf8_lossy(step.body.unwrap_or_default()).into_owned();
        let user = step.case.body.as_ref()?.value.get(user_field)?.as_str()?;
        let local = user.split('@').next().unwrap_or(user);
        for echoed in [user, local] {
            if echoed.len() >= 3 {
                text = text.replace(echoed, "{user}");
            }
        }
        Some(Answer { status, text })
    }

    fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.text).ok()
    }
}

/// The field of the login body that names the user: the one whose value differs between
/// the known user's step and an unknown user's.
fn user_field(known: &StepView<'_>, unknown: &StepView<'_>) -> Option<String> {
    let a = known.case.body.as_ref()?.value.as_object()?;
    let b = unknown.case.body.as_ref()?.value.as_object()?;
    a.iter()
        .find(|(k, v)| v.is_string() && b.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k.clone())
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (at, known_step) = view.step(StepRole::KnownUserWrongPassword)?;
    let (_, unknown_step) = view.step(StepRole::UnknownUserWrongPassword)?;
    let (_, again_step) = view.step(StepRole::UnknownUserAgain)?;
    let field = user_field(known_step, unknown_step)?;
    let known = Answer::of(known_step, &field)?;
    let unknown = Answer::of(unknown_step, &field)?;
    let again = Answer::of(again_step, &field)?;
    if [known.status, unknown.status, again.status].contains(&429) {
        return None;
    }
    let how = difference(&known, &unknown, &again)?;
    let name = known_step.name();
    Some(observe(
        &INFO,
        at,
        &known_step.case.operation,
        "",
        format!(
            "{name} tells users apart by its {how}: a known user with a wrong password was answered {} {}, two users who do not exist {} {}",
            known.status,
            excerpt(&known.text),
            unknown.status,
            excerpt(&unknown.text)
        ),
    ))
}

/// How the known user's answer differs from the unknown users' (which agree): `status`,
/// `body` or `size`; `None` when it does not, or when the unknown users' differ as much.
fn difference(known: &Answer, unknown: &Answer, again: &Answer) -> Option<&'static str> {
    if unknown.status != again.status {
        return None;
    }
    if known.status != unknown.status {
        return Some("status");
    }
    if unknown.text == again.text {
        return (known.text != unknown.text).then_some("body");
    }
    if let (Some(k), Some(u), Some(a)) = (known.json(), unknown.json(), again.json()) {
        return differs_where_unknowns_agree(&k, &u, &a).then_some("body");
    }
    let (k, u, a) = (
        known.text.len() as f64,
        unknown.text.len() as f64,
        again.text.len() as f64,
    );
    let far = |x: f64, y: f64| (x - y).abs() > 16.0_f64.max(0.25 * x.max(y));
    (far(k, u) && far(k, a) && !far(u, a)).then_some("size")
}

/// Whether `known` differs from `unknown` in a field (at any depth) where `unknown` and
/// `again` agree, or in the fields it has.
fn differs_where_unknowns_agree(known: &Value, unknown: &Value, again: &Value) -> bool {
    match (known, unknown, again) {
        (Value::Object(k), Value::Object(u), Value::Object(a)) => {
            let keys = |m: &serde_json::Map<String, Value>| {
                m.keys().cloned().collect::<std::collections::BTreeSet<_>>()
            };
            if keys(u) == keys(a) && keys(k) != keys(u) {
                return true;
            }
            k.iter().any(|(name, kv)| match (u.get(name), a.get(name)) {
                (Some(uv), Some(av)) => differs_where_unknowns_agree(kv, uv, av),
                _ => false,
            })
        }
        _ => unknown == again && known != unknown,
    }
}

fn excerpt(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => shown(&v),
        Err(_) => {
            let t: String = text.trim().chars().take(60).collect();
            if t.is_empty() {
                "(no body)".to_owned()
            } else {
                format!("`{t}`")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, text: &str) -> Answer {
        Answer {
            status,
            text: text.to_owned(),
        }
    }

    #[test]
    fn a_status_or_a_body_that_only_the_known_user_gets_tells_users_apart() {
        let unknown = answer(404, r#"{"error":"user does not exist"}"#);
        let known = answer(401, r#"{"error":"password is not correct"}"#);
        assert_eq!(difference(&known, &unknown, &unknown), Some("status"));
        let unknown = answer(401, r#"{"error":"user does not exist"}"#);
        assert_eq!(difference(&known, &unknown, &unknown), Some("body"));
        // The same answer to all: nothing told.
        let same = answer(401, r#"{"error":"wrong username or password for {user}"}"#);
        assert_eq!(difference(&same, &same, &same), None);
    }

    #[test]
    fn what_varies_between_two_unknown_users_is_left_out() {
        let known = answer(401, r#"{"error":"no","request_id":"a1"}"#);
        let unknown = answer(401, r#"{"error":"no","request_id":"b2"}"#);
        let again = answer(401, r#"{"error":"no","request_id":"c3"}"#);
        assert_eq!(difference(&known, &unknown, &again), None);
        let known = answer(401, r#"{"error":"bad password","request_id":"a1"}"#);
        assert_eq!(difference(&known, &unknown, &again), Some("body"));
        // Unknown users told apart from each other: nothing to compare with.
        let other = answer(404, r#"{"error":"no"}"#);
        assert_eq!(difference(&known, &unknown, &other), None);
    }
}
