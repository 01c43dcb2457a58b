//! `secret_in_reply` (F211): a JSON answer, of any status and to any identity or none,
//! holds a field whose name says it is a secret (`password`, `passwd`, `secret`,
//! `client_secret`, `private_key`, `api_key`, `token`, `access_token`, `refresh_token`,
//! ...; case and separators aside) with a value: excessive data exposure (OWASP API3).
//!
//! Evidence, not a guess: the value is a non-empty string that is not masked (`****`,
//! `<redacted>`, `hidden`), and not one the request itself sent (a client shown back what
//! it sent learns nothing; a validation error quoting the field is not a leak). The
//! placeholder probe stores in place of its own credentials counts: the API answered the
//! secret, probe hid it. Token- and key-named fields are not judged in the answers of an
//! operation that issues them (its path or `operationId` names a login, a token, a session,
//! a registration or keys): a login answering `access_token` is what it is for; nor where
//! the document lets the client write that field in some request's body (a book's
//! `secret`, given at its creation and read back by its owner: the client's own data;
//! version 2). A password-named field is judged everywhere, a declared one too: the
//! document declaring a leak does not make it none.
//!
//! One finding per operation and field path (`users[].password`). Judged from the stored
//! exchange alone (the document's paths, the request sent, the answer), so `recheck`
//! judges a stored run the same way.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "secret_in_reply",
    code: Some("F211"),
    version: 2,
    severity: Severity::High,
    title: "an answer holds a secret-named field with a value",
    setting: declared(
        "checks.secret_in_reply",
        Kind::Bool,
        "true",
        "F211: a JSON answer holds a field named as a secret (password, secret, api_key, token, ...) with an unmasked value the request did not send",
    ),
};

pub struct SecretInReply;

impl Judge for SecretInReply {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn replies(&self, ctx: &Context<'_>, oracles: &Oracles) -> Vec<Observation> {
        check(ctx, &oracles.api)
    }

    fn judges_throttled(&self) -> bool {
        true
    }
}

/// The largest body parsed when the run did not parse it already: a leak is in what an
/// API answers to an ordinary request, and parsing megabytes for every error would cost.
const PARSED: usize = 1 << 20;

/// Most fields reported from one answer: a list of every user is one leak per field path,
/// and paths repeat.
const MOST: usize = 8;

fn check(ctx: &Context<'_>, api: &Api) -> Vec<Observation> {
    let json = match ctx.exchange.response_json {
        Some(json) => json,
        None => {
            if ctx.body.is_none_or(|b| b.len() > PARSED) {
                return Vec::new();
            }
            if !ctx.content_type().is_some_and(is_json) {
                return Vec::new();
            }
            let Some(Ok(parsed)) = ctx.json.get() else {
                return Vec::new();
            };
            parsed
        }
    };
    let op = ctx.exchange.operation;
    let issues = issues_credentials(&op.key);
    let sent = normalise::sent_strings(ctx.exchange.case);
    let mut found: Vec<(String, Secret, usize)> = Vec::new();
    walk(json, &mut String::new(), 0, &mut |path, kind, value| {
        if issues && kind != Secret::Password {
            return;
        }
        if masked(value) || sent.contains(&value) {
            return;
        }
        if kind != Secret::Password && client_writes(api, leaf(path)) {
            return;
        }
        if found.len() < MOST && !found.iter().any(|(p, _, _)| p == path) {
            found.push((path.to_owned(), kind, value.chars().count()));
        }
    });
    let name = op.key.name();
    let status = ctx.response.status;
    found
        .into_iter()
        .map(|(path, kind, chars)| {
            per_operation(
                &INFO,
                &name,
                &path,
                format!(
                    "{name} answered {status} with `{path}` holding a {} ({chars} characters, not shown)",
                    kind.what()
                ),
            )
        })
        .collect()
}

/// What a secret-named field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Secret {
    Password,
    Token,
    Key,
}

impl Secret {
    fn what(self) -> &'static str {
        match self {
            Secret::Password => "password",
            Secret::Token => "token",
            Secret::Key => "secret key",
        }
    }
}

/// The field names that read as secrets, letters and digits only, lower case, and what
/// each holds: a name is one when it ends with one of them (`db_password`, `clientSecret`).
const ENDINGS: [(&str, Secret); 12] = [
    ("password", Secret::Password),
    ("passwd", Secret::Password),
    ("passphrase", Secret::Password),
    ("passwordhash", Secret::Password),
    ("passworddigest", Secret::Password),
    ("secret", Secret::Key),
    ("secretkey", Secret::Key),
    ("privatekey", Secret::Key),
    ("signingkey", Secret::Key),
    ("apikey", Secret::Key),
    ("token", Secret::Token),
    ("jwt", Secret::Token),
];

/// Tokens that are no credential: a page's, a form's.
const NOT_CREDENTIAL_TOKENS: [&str; 9] = [
    "pagetoken",
    "nexttoken",
    "prevtoken",
    "previoustoken",
    "continuationtoken",
    "synctoken",
    "resumetoken",
    "csrftoken",
    "xsrftoken",
];

/// What the field `name` holds, when its name reads as a secret.
fn secret_kind(name: &str) -> Option<Secret> {
    let n: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    if NOT_CREDENTIAL_TOKENS.iter().any(|t| n.ends_with(t)) {
        return None;
    }
    ENDINGS
        .iter()
        .find(|(ending, _)| n.ends_with(ending))
        .map(|(_, kind)| *kind)
}

/// Whether a JSON value holds a token-named field (`access_token`, `jwt`, ...) with a
/// non-empty string value, to three levels: what a login that worked answers.
pub(super) fn holds_token(json: &Value) -> bool {
    let mut found = false;
    walk(json, &mut String::new(), 29, &mut |_, kind, value| {
        found |= kind == Secret::Token && !value.trim().is_empty();
    });
    found
}

/// The last field name of a path (`books[].secret` → `secret`).
fn leaf(path: &str) -> &str {
    let path = path.trim_end_matches("[]");
    path.rsplit('.').next().unwrap_or(path).trim_end_matches("[]")
}

/// Whether some operation takes a property `name` in its JSON body that the server alone
/// does not write: a key or secret the client gives (a book's secret, a webhook's signing
/// secret) and reads back with its resource is its own data, not one the API leaks. Asked
/// only for a field that would be reported, so the document is searched rarely.
fn client_writes(api: &Api, name: &str) -> bool {
    api.operations.iter().any(|op| {
        super::series::request_properties(api, op)
            .get(name)
            .is_some_and(|schema| !super::series::read_only(api, schema))
    })
}

/// Whether an operation issues credentials: its path or `operationId` names a login, a
/// token, a session, a registration or keys.
pub(super) fn issues_credentials(key: &crate::spec::model::OperationKey) -> bool {
    let text = format!("{} {}", key.path, key.id.as_deref().unwrap_or("")).to_ascii_lowercase();
    let squeezed: String = text.chars().filter(char::is_ascii_alphanumeric).collect();
    // Not `auth` alone, which `/authors` holds; not `keys` inside a word (`/monkeys`).
    const WORDS: [&str; 14] = [
        "login", "signin", "logon", "token", "oauth", "authenticat", "authoriz", "session",
        "register", "signup", "apikey", "credential", "secret", "jwt",
    ];
    WORDS.iter().any(|w| squeezed.contains(w)) || key.path.split('/').any(|s| s.eq_ignore_ascii_case("keys"))
}

/// Whether a value shows nothing: empty, all mask characters (`****`, `•••`, `xxxx`), or
/// a word that says it is hidden.
fn masked(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.chars().all(|c| "*•●xX#-_.?".contains(c)) {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    if lower != crate::model::SECRET_PLACEHOLDER
        && ["redacted", "masked", "hidden", "removed", "filtered"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return true;
    }
    matches!(lower.as_str(), "null" | "none" | "n/a" | "undefined")
}

/// Calls `found(path, kind, value)` for every secret-named field holding a string, at any
/// depth; an array's items are one path (`users[].password`).
fn walk(value: &Value, at: &mut String, depth: usize, found: &mut dyn FnMut(&str, Secret, &str)) {
    if depth > 32 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(k);
                match (v, secret_kind(k)) {
                    (Value::String(s), Some(kind)) => found(at, kind, s),
                    _ => walk(v, at, depth + 1, found),
                }
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            let len = at.len();
            at.push_str("[]");
            for item in items {
                walk(item, at, depth + 1, found);
            }
            at.truncate(len);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(value: &Value) -> Vec<(String, Secret, String)> {
        let mut out = Vec::new();
        walk(value, &mut String::new(), 0, &mut |p, k, v| {
            out.push((p.to_owned(), k, v.to_owned()))
        });
        out
    }

    #[test]
    fn secret_named_fields_are_found_at_any_depth() {
        let body = json!({
            "users": [
                {"username": "a", "password": "pw1", "email": "a@x"},
                {"username": "b", "password": "pw2"}
            ],
            "config": {"stripeSecretKey": "sk_live_1", "api-key": "k", "nextPageToken": "p2"},
            "token_type": "bearer",
            "has_password": true,
        });
        let found = paths(&body);
        let names: Vec<&str> = found.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "users[].password",
                "users[].password",
                "config.stripeSecretKey",
                "config.api-key"
            ]
        );
        assert_eq!(found[0].1, Secret::Password);
        assert_eq!(found[2].1, Secret::Key);
    }

    #[test]
    fn masked_values_show_nothing() {
        for v in ["", "  ", "****", "•••••", "xxxxxx", "<redacted>", "[FILTERED]", "null"] {
            assert!(masked(v), "{v}");
        }
        for v in ["hunter2", "$2b$12$abc", crate::model::SECRET_PLACEHOLDER, "pass123"] {
            assert!(!masked(v), "{v}");
        }
    }

    #[test]
    fn operations_that_issue_credentials() {
        let key = |id: Option<&str>, path: &str| crate::spec::model::OperationKey {
            id: id.map(str::to_owned),
            method: "POST".into(),
            path: path.into(),
        };
        assert!(issues_credentials(&key(None, "/users/v1/login")));
        assert!(issues_credentials(&key(Some("createToken"), "/x")));
        assert!(issues_credentials(&key(None, "/oauth/token")));
        assert!(issues_credentials(&key(None, "/api-keys")));
        assert!(!issues_credentials(&key(None, "/users/v1/_debug")));
        assert!(!issues_credentials(&key(Some("listUsers"), "/users")));
    }
}
