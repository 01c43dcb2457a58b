//! `credential_changed_by_other` (F220): one identity changed another identity's password
//! or e-mail. Judged on a `credential_change` series (docs/security.md): the other
//! identity's login as configured (`other_login`) and with a wrong password
//! (`other_login_wrong`), the default identity's change of that user's credential
//! (`change_other_credential`), then the other identity's login again as configured
//! (`other_login_after_change`) and with the value the change set (`other_login_with_new`).
//!
//! A login that worked and a refused one are told apart by what they answered: their
//! statuses when those differ, else the fields of their JSON replies (many APIs answer a
//! wrong password 200 with `{"status": "fail"}`). A finding when the change was accepted
//! and then the configured login is answered as the wrong password was, or the login with
//! the new value is answered as the configured one was: the default identity took over the
//! other's account (OWASP API1/API5). Nothing is judged when the two logins before the
//! change cannot be told apart, or when the change was refused.

use std::collections::BTreeSet;

use super::series::{observe, SeriesObservation, SeriesView, StepView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "credential_changed_by_other",
    code: Some("F220"),
    version: 1,
    severity: Severity::High,
    title: "one identity changed another identity's password or e-mail",
    setting: declared(
        "checks.credential_changed_by_other",
        Kind::Bool,
        "true",
        "F220: with two identities, the second logging in at the API, the default identity's change of the second's password or e-mail is accepted and the second's login then fails, or works with the value set",
    ),
};

pub struct CredentialChangedByOther;

impl Judge for CredentialChangedByOther {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::OtherLogin,
            StepRole::OtherLoginWrong,
            StepRole::ChangeOtherCredential,
            StepRole::OtherLoginAfterChange,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

/// What a login answered, as compared: its status and the field paths of its JSON reply.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    status: u16,
    fields: Option<BTreeSet<String>>,
}

impl Shape {
    fn of(step: &StepView<'_>) -> Option<Shape> {
        Some(Shape {
            status: step.status()?,
            fields: step.json().map(|v| {
                let mut out = BTreeSet::new();
                field_paths(&v, "", 3, &mut out);
                out
            }),
        })
    }
}

/// The paths of an object's fields, to `depth` levels (arrays not entered).
fn field_paths(value: &Value, prefix: &str, depth: usize, out: &mut BTreeSet<String>) {
    let Some(map) = value.as_object() else {
        return;
    };
    for (k, v) in map {
        let path = format!("{prefix}/{k}");
        if depth > 1 {
            field_paths(v, &path, depth - 1, out);
        }
        out.insert(path);
    }
}

/// How a login worked and how one was refused, told apart: by status when they differ,
/// else by their fields.
struct Reference {
    worked: Shape,
    refused: Shape,
}

impl Reference {
    fn new(worked: Shape, refused: Shape) -> Option<Reference> {
        let apart = worked.status != refused.status
            || (worked.fields.is_some() && worked.fields != refused.fields);
        apart.then_some(Reference { worked, refused })
    }

    fn like(&self, x: &Shape, reference: &Shape) -> bool {
        if self.worked.status != self.refused.status {
            x.status == reference.status
        } else {
            x == reference
        }
    }

    fn works(&self, x: &Shape) -> bool {
        self.like(x, &self.worked)
    }

    fn refused(&self, x: &Shape) -> bool {
        self.like(x, &self.refused)
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, before) = view.step(StepRole::OtherLogin)?;
    let (_, wrong) = view.step(StepRole::OtherLoginWrong)?;
    let (at, change) = view.step(StepRole::ChangeOtherCredential)?;
    let (_, after) = view.step(StepRole::OtherLoginAfterChange)?;
    if !before.succeeded() || !change.succeeded() {
        return None;
    }
    let reference = Reference::new(Shape::of(before)?, Shape::of(wrong)?)?;
    let locked_out = reference.refused(&Shape::of(after)?);
    let with_new = view
        .step(StepRole::OtherLoginWithNew)
        .and_then(|(_, s)| Shape::of(s))
        .is_some_and(|s| reference.works(&s));
    if !locked_out && !with_new {
        return None;
    }
    let what = changed_field(change, before).unwrap_or_else(|| "credential".to_owned());
    let how = match (locked_out, with_new) {
        (true, true) => "its login as configured was then refused, and the value the change set logged it in",
        (true, false) => "its login as configured was then refused as a wrong password is",
        _ => "the value the change set then logged it in",
    };
    Some(observe(
        &INFO,
        at,
        &change.case.operation,
        &what,
        format!(
            "{}, sent as the default identity for the other identity's user, changed that user's {what} (answered {}): {how}",
            change.name(),
            change.status().unwrap_or_default()
        ),
    ))
}

/// The body field of the change that holds the new value: the one it sent that the
/// other identity's login body does not hold with the same value (the user it names is).
fn changed_field(change: &StepView<'_>, login: &StepView<'_>) -> Option<String> {
    let sent = change.case.body.as_ref()?.value.as_object()?;
    let login = login.case.body.as_ref()?.value.as_object();
    sent.iter()
        .filter(|(_, v)| v.is_string())
        .find(|(k, v)| login.is_none_or(|l| l.get(*k) != Some(*v)))
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(status: u16, json: &str) -> Shape {
        let v: Value = serde_json::from_str(json).unwrap();
        let mut out = BTreeSet::new();
        field_paths(&v, "", 3, &mut out);
        Shape {
            status,
            fields: Some(out),
        }
    }

    /// A refusal answered 200 is told from a login by its fields; one told by its status
    /// is judged by status alone (a token's fields may vary).
    #[test]
    fn a_login_is_told_from_a_refusal_by_status_or_fields() {
        let ok = shape(200, r#"{"auth_token":"x","status":"success"}"#);
        let no = shape(200, r#"{"message":"wrong","status":"fail"}"#);
        let r = Reference::new(ok, no).unwrap();
        assert!(r.refused(&shape(200, r#"{"message":"other","status":"fail"}"#)));
        assert!(r.works(&shape(200, r#"{"auth_token":"y","status":"success"}"#)));
        let r = Reference::new(shape(200, r#"{"token":"a"}"#), shape(401, "{}")).unwrap();
        assert!(r.works(&shape(200, r#"{"token":"b","expires":1}"#)));
        assert!(r.refused(&shape(401, r#"{"error":"x"}"#)));
        assert!(!r.refused(&shape(500, "{}")));
        // Two answers alike: nothing can be judged.
        assert!(Reference::new(shape(200, "{}"), shape(200, "{}")).is_none());
    }
}
