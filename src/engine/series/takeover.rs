//! The `credential_change` series (docs/security.md): whether the default identity can
//! change the password or e-mail of the other identity's user, judged by that user's login.
//!
//! Found once from the document and the identities: the other identity logs in at an
//! operation of the document with a JSON body naming its user and holding a password, and
//! an operation that writes (PUT, PATCH, POST) names a user (a path parameter, else a body
//! property, called like `username`, `user`, `login`, `email` or `name`) and takes a
//! password or an e-mail in its JSON body. The first ordinary request of such an operation
//! that is answered is the template: the series sends it as the default identity with the
//! other identity's user and a new value, between logins of the other identity that show
//! whether its credentials changed, and then sends it again with the value the other
//! identity logs in with, so that its login works for the rest of the run.
//!
//! Only one such series runs at a time: each changes the same account, and another's
//! logins in between would judge the wrong change. One series per operation and run.
//!
//! Depends on: `model`, `spec`, `oracle::series` (the properties of a request body).

use rand::Rng;
use serde_json::Value;

use crate::model::{CaseBody, CredentialProbe, Location, StepRole, TestCase};
use crate::spec::Api;

use super::SeriesRun;

/// Which credential an operation changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    Password,
    Email,
}

/// Where an operation that changes a credential takes the user whose credential it is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UserPlace {
    Path(String),
    Body(String),
}

/// One operation that changes a user's credential.
#[derive(Debug, Clone)]
struct Change {
    op: usize,
    user: UserPlace,
    /// The body property holding the new value.
    field: String,
    credential: Credential,
    /// Whether its series has started.
    started: bool,
}

/// The other identity's login, and the operations that may change its credentials.
#[derive(Debug, Clone)]
pub struct Takeover {
    login_op: usize,
    login: Value,
    /// The login body's fields: the user, the password.
    user_field: String,
    password_field: String,
    changes: Vec<Change>,
}

/// What one `credential_change` series is about, kept in its [`SeriesRun`].
#[derive(Debug, Clone)]
pub struct TakeoverPlan {
    login_op: usize,
    login: Value,
    user_field: String,
    password_field: String,
    change_op: usize,
    change: TestCase,
    user: UserPlace,
    field: String,
    credential: Credential,
    /// The value the change sets.
    new_value: String,
}

/// A property name without case and separators: `user_name` and `userName` are `username`.
fn squash(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether a parameter or property names a user by a string an identity logs in with.
fn names_user(name: &str) -> bool {
    matches!(
        squash(name).as_str(),
        "username" | "user" | "login" | "email" | "name" | "useremail" | "account"
    )
}

fn is_password(name: &str) -> bool {
    let n = squash(name);
    // Asking for the current one is the API's protection, not the value it sets.
    (n.ends_with("password") || n.ends_with("passwd"))
        && !["old", "current", "existing", "confirm"]
            .iter()
            .any(|w| n.starts_with(w))
}

fn is_email(name: &str) -> bool {
    matches!(squash(name).as_str(), "email" | "emailaddress" | "mail")
}

impl Takeover {
    /// The series' target: the other identity's login `method path` with `body` at an
    /// operation among `operations`, and the operations among them that change a user's
    /// password or e-mail; `None` when either is missing.
    pub fn find(
        api: &Api,
        operations: &[usize],
        method: &str,
        path: &str,
        body: &Value,
    ) -> Option<Takeover> {
        let target = super::LoginTarget::find(api, method, path, body.clone())?;
        let login_op = target.op;
        if !operations.contains(&login_op) {
            return None;
        }
        let fields = body.as_object()?;
        let password_field = fields
            .iter()
            .find(|(k, v)| v.is_string() && crate::redact::credential_name(k))?
            .0
            .clone();
        let user_field = fields
            .iter()
            .find(|(k, v)| v.is_string() && names_user(k))?
            .0
            .clone();
        let login_by_email = squash(&user_field).contains("mail");
        let mut changes = Vec::new();
        for &i in operations {
            let op = &api.operations[i];
            if i == login_op || !matches!(op.key.method.as_str(), "PUT" | "PATCH" | "POST") {
                continue;
            }
            let properties = crate::oracle::series::request_properties(api, op);
            let path_user = super::path_parameters(&op.key.path)
                .into_iter()
                .find(|p| names_user(p))
                .map(|p| UserPlace::Path(p.to_owned()));
            let field = properties
                .keys()
                .find(|k| is_password(k))
                .map(|k| (*k, Credential::Password))
                .or_else(|| {
                    properties
                        .keys()
                        .find(|k| is_email(k))
                        .map(|k| (*k, Credential::Email))
                });
            let Some((field, credential)) = field else {
                continue;
            };
            let user = path_user.or_else(|| {
                properties
                    .keys()
                    .find(|k| names_user(k) && **k != field)
                    .map(|k| UserPlace::Body((*k).to_owned()))
            });
            let Some(user) = user else { continue };
            // A user named by e-mail where the login names it otherwise (or the other way
            // round) would be another user, or none.
            let by_email = match &user {
                UserPlace::Path(n) | UserPlace::Body(n) => squash(n).contains("mail"),
            };
            if by_email != login_by_email {
                continue;
            }
            changes.push(Change {
                op: i,
                user,
                field: field.to_owned(),
                credential,
                started: false,
            });
        }
        (!changes.is_empty()).then_some(Takeover {
            login_op,
            login: body.clone(),
            user_field,
            password_field,
            changes,
        })
    }

    /// Whether operation `op` changes a credential and its series has not started.
    pub fn waits_for(&self, op: usize) -> bool {
        self.changes.iter().any(|c| c.op == op && !c.started)
    }

    /// The plan of a series about operation `op`, from `case` (an ordinary request of it
    /// that was answered), unless its series has started already; `tag` makes the new
    /// value.
    pub fn offer(&mut self, op: usize, case: &TestCase, tag: u32) -> Option<TakeoverPlan> {
        let change = self.changes.iter_mut().find(|c| c.op == op && !c.started)?;
        change.started = true;
        let new_value = match change.credential {
            Credential::Password => format!("probe-New-Passw0rd-{tag:08x}"),
            Credential::Email => format!("probe-{tag:08x}@example.com"),
        };
        let mut template = case.clone();
        template.series_step = None;
        template.mutation = None;
        template.shrinking = None;
        template.identity = None;
        template.credentials = None;
        Some(TakeoverPlan {
            login_op: self.login_op,
            login: self.login.clone(),
            user_field: self.user_field.clone(),
            password_field: self.password_field.clone(),
            change_op: op,
            change: template,
            user: change.user.clone(),
            field: change.field.clone(),
            credential: change.credential,
            new_value,
        })
    }

    /// The roles of a series, in order.
    pub fn roles() -> Vec<StepRole> {
        vec![
            StepRole::OtherLogin,
            StepRole::OtherLoginWrong,
            StepRole::ChangeOtherCredential,
            StepRole::OtherLoginAfterChange,
            StepRole::OtherLoginWithNew,
            StepRole::RestoreOtherCredential,
        ]
    }
}

/// A login of the other identity's user with `body`, sent without the run's credentials (a
/// login answers whoever asks).
fn login_case(api: &Api, plan: &TakeoverPlan, body: Value) -> Option<(usize, TestCase)> {
    let op = api.operations.get(plan.login_op)?;
    let mut case = plan.change.clone();
    case.operation = op.key.name();
    case.method = op.key.method.clone();
    case.path = op.key.path.clone();
    case.parameters.clear();
    case.origins.clear();
    case.credentials = Some(CredentialProbe::Withheld);
    case.body = Some(CaseBody {
        media_type: "application/json".into(),
        value: body,
        sent_as: None,
    });
    Some((plan.login_op, case))
}

/// The change of the other identity's credential to `value`, sent as the default identity.
fn change_case(plan: &TakeoverPlan, value: &str) -> Option<(usize, TestCase)> {
    let user = plan.login.get(&plan.user_field)?.clone();
    let mut case = plan.change.clone();
    match &plan.user {
        UserPlace::Path(name) => {
            let p = case
                .parameters
                .iter_mut()
                .find(|p| p.location == Location::Path && p.name == *name)?;
            p.value = user;
        }
        UserPlace::Body(name) => {
            case.body
                .as_mut()?
                .value
                .as_object_mut()?
                .insert(name.clone(), user);
        }
    }
    let body = case.body.as_mut()?;
    if !body.value.is_object() {
        body.value = Value::Object(Default::default());
    }
    body.value
        .as_object_mut()?
        .insert(plan.field.clone(), Value::String(value.to_owned()));
    Some((plan.change_op, case))
}

/// The case of one step of a `credential_change` series, or `None` when it does not apply
/// (a login with the new e-mail when the login names its user otherwise; an e-mail the
/// login does not hold, which cannot be set back).
pub(super) fn step(api: &Api, run: &mut SeriesRun, role: StepRole) -> Option<(usize, TestCase)> {
    let plan = run.takeover.as_deref()?;
    let login_by_email = squash(&plan.user_field).contains("mail");
    match role {
        StepRole::OtherLogin | StepRole::OtherLoginAfterChange => {
            login_case(api, plan, plan.login.clone())
        }
        StepRole::OtherLoginWrong => {
            let mut body = plan.login.clone();
            body[&plan.password_field] = Value::String(super::WRONG_PASSWORD.to_owned());
            login_case(api, plan, body)
        }
        StepRole::ChangeOtherCredential => change_case(plan, &plan.new_value),
        StepRole::OtherLoginWithNew => {
            let field = match plan.credential {
                Credential::Password => &plan.password_field,
                Credential::Email if login_by_email => &plan.user_field,
                Credential::Email => return None,
            };
            let mut body = plan.login.clone();
            body[field] = Value::String(plan.new_value.clone());
            login_case(api, plan, body)
        }
        StepRole::RestoreOtherCredential => {
            let field = match plan.credential {
                Credential::Password => &plan.password_field,
                Credential::Email if login_by_email => &plan.user_field,
                Credential::Email => return None,
            };
            let old = plan.login.get(field)?.as_str()?.to_owned();
            let (op, mut case) = change_case(plan, &old)?;
            // Under the new e-mail the user is that one now (a login by e-mail names its
            // user by e-mail, and so does the change).
            if plan.credential == Credential::Email {
                let new = Value::String(plan.new_value.clone());
                match &plan.user {
                    UserPlace::Path(name) => {
                        let p = case
                            .parameters
                            .iter_mut()
                            .find(|p| p.location == Location::Path && p.name == *name)?;
                        p.value = new;
                    }
                    UserPlace::Body(name) => {
                        case.body.as_mut()?.value[name] = new;
                    }
                }
            }
            Some((op, case))
        }
        _ => None,
    }
}

/// A tag for a series' new value, from its own stream.
pub(super) fn tag(rng: &mut rand_chacha::ChaCha8Rng) -> u32 {
    rng.gen()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /users/v1/login:
    post:
      operationId: login
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {username: {type: string}, password: {type: string}}}
      responses: {'200': {description: ok}}
  /users/v1/{username}/password:
    put:
      operationId: setPassword
      parameters: [{name: username, in: path, required: true, schema: {type: string}}]
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {password: {type: string}}}
      responses: {'204': {description: ok}}
  /users/v1/{username}/email:
    put:
      operationId: setEmail
      parameters: [{name: username, in: path, required: true, schema: {type: string}}]
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {email: {type: string}}}
      responses: {'204': {description: ok}}
  /books/v1/{title}:
    put:
      operationId: setBook
      parameters: [{name: title, in: path, required: true, schema: {type: string}}]
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {secret: {type: string}}}
      responses: {'204': {description: ok}}
"#;

    /// The operations that change a named user's password or e-mail are found; one that
    /// names no user, or the login itself, is not.
    #[test]
    fn finds_the_operations_that_change_a_named_users_credential() {
        let api = crate::spec::parse(DOC.as_bytes(), "t.yaml", None).unwrap();
        let all: Vec<usize> = (0..api.operations.len()).collect();
        let body = serde_json::json!({"username": "bob", "password": "pw"});
        let t = Takeover::find(&api, &all, "POST", "/users/v1/login", &body).unwrap();
        let found: Vec<(String, Credential)> = t
            .changes
            .iter()
            .map(|c| (api.operations[c.op].key.name(), c.credential))
            .collect();
        assert_eq!(
            found,
            vec![
                ("setPassword".to_owned(), Credential::Password),
                ("setEmail".to_owned(), Credential::Email),
            ]
        );
        assert_eq!(
            (t.user_field.as_str(), t.password_field.as_str()),
            ("username", "password")
        );
        // A login by e-mail names users otherwise than these paths do.
        let by_mail = serde_json::json!({"email": "bob@x.org", "password": "pw"});
        assert!(Takeover::find(&api, &all, "POST", "/users/v1/login", &by_mail).is_none());
        // No login at an operation of the document: nothing to judge by.
        assert!(Takeover::find(&api, &all, "POST", "/auth", &body).is_none());
    }

    #[test]
    fn a_current_password_is_not_the_value_a_change_sets() {
        assert!(is_password("new_password") && is_password("password"));
        assert!(!is_password("old_password") && !is_password("currentPassword"));
        assert!(names_user("user_name") && !names_user("title"));
    }
}
