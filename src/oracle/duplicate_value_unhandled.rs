//! `duplicate_value_unhandled` (F216): a creation carrying a value another object already
//! holds, where the document implies such values are unique, broke the server (5xx): an
//! integrity error (a unique constraint of its database) nobody handled. Judged on a life
//! cycle (docs/series.md): once the series' own creation was answered 2xx and read back,
//! the same creation is sent again (`create_duplicate`), so every value it carries is one
//! the first object holds. Sent only for a creation whose request body declares a property
//! that [`implies_uniqueness`]: named like a user name, an e-mail address, a slug, a
//! title or a login (`username`, `email`, `book_title`), or described as unique. A 409 or
//! a 422 is the answer such a request should get; a 2xx (a second object) is the API's
//! choice; a 5xx is a finding.

use super::series::{observe, shown, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "duplicate_value_unhandled",
    code: Some("F216"),
    version: 1,
    severity: Severity::High,
    title: "a creation with a value another object holds, where the document implies it is unique, answered 5xx",
    setting: declared(
        "checks.duplicate_value_unhandled",
        Kind::Bool,
        "true",
        "F216: a life cycle's creation, accepted once, sent again with the same values where its body declares a property named like a name that is unique (username, email, slug, title, login) or described as unique; a 5xx to it",
    ),
};

pub struct DuplicateValueUnhandled;

impl Judge for DuplicateValueUnhandled {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::Create, StepRole::CreateDuplicate]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

/// Whether a request property named `name` (with `schema`) reads as a value one object
/// holds and no other may: a user name, an e-mail address, a slug, a title, a login, a
/// handle (the whole name, or its end: `book_title`, `userEmail`), or a property whose
/// description says it is unique. A bare `name` is not enough: a pet's, a person's or a
/// product's name is as often shared as not.
pub fn implies_uniqueness(name: &str, schema: &Value) -> bool {
    let n: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    const ENDINGS: [&str; 7] = ["username", "email", "slug", "title", "login", "handle", "isbn"];
    ENDINGS.iter().any(|e| n.ends_with(e))
        || schema
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| d.to_ascii_lowercase().contains("unique"))
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let (_, create) = view.step(StepRole::Create)?;
    let (at, again) = view.step(StepRole::CreateDuplicate)?;
    let status = again.status()?;
    if !create.succeeded() || status < 500 {
        return None;
    }
    let op = again.operation?;
    let sent = again.case.body.as_ref()?.value.as_object()?;
    let declared = series::request_properties(view.api, op);
    let unique: Vec<String> = declared
        .iter()
        .filter(|(name, schema)| {
            let schema = view.api.schemas.deref(schema, 64).unwrap_or(schema);
            implies_uniqueness(name, schema)
        })
        .filter_map(|(name, _)| Some(format!("`{name}` {}", shown(sent.get(*name)?))))
        .collect();
    if unique.is_empty() {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &again.case.operation,
        "",
        format!(
            "{} answered {status} to a creation whose {} the object it had just made ({}) already holds: a value taken should be refused (409, 422), not break the server",
            again.name(),
            unique.join(", "),
            create.status()?,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_that_one_object_holds() {
        let plain = json!({"type": "string"});
        for n in ["username", "email", "book_title", "userEmail", "slug", "login"] {
            assert!(implies_uniqueness(n, &plain), "{n}");
        }
        for n in ["name", "first_name", "description", "tag", "text"] {
            assert!(!implies_uniqueness(n, &plain), "{n}");
        }
        let said = json!({"type": "string", "description": "The team's name, unique in an organisation"});
        assert!(implies_uniqueness("name", &said));
    }
}
