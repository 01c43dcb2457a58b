//! Identities: the named sets of credentials a run sends requests as.
//!
//! A run has at least one identity, the *default* one, which every ordinary request is sent
//! as: the one `--bearer`, `--basic`, `--api-key` and credential `--header`s make (named
//! `default`), else the first `--identity`, else the first `[[identity]]` of `probe.toml`.
//! The others take part in the series that ask whether one identity can read or change an
//! object another made (docs/security.md); a test case sent as one of them names it
//! (`TestCase::identity`).
//!
//! An identity's credentials are fixed (given on the command line or in `probe.toml`, each
//! value either written out or read from a variable: `env:NAME`), or obtained by a *login*
//! request that `probe.toml` describes: probe sends it before the first request of that
//! identity, reads the token from the reply, applies it as a bearer token or a header, and
//! logs in again when the token's lifetime is over or when a request sent with it is
//! answered 401 (that request is then sent once more with the new token, and only the
//! second answer is recorded). A login may go to a token endpoint on another origin that
//! `probe.toml` names whole (`url`), with the OAuth2 client-credentials or password grant
//! built from its fields (`grant`), and may keep a session cookie instead of a token
//! (`apply = "cookie"`: the answer's `Set-Cookie` sent back as `Cookie`). Every token or
//! cookie obtained joins the [`Redactor`], so no token is
//! kept or printed, whatever the API does with it; the login exchange itself is never
//! recorded.
//!
//! Depends on: `send::wire` (credentials), `send::client` (the login request), `redact`,
//! `spec` (which schemes the document declares), `jwt` (how a token could be forged).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::Sender;
use super::wire::{carries_no_credential, Credentials, WireRequest};
use crate::model::{Location, Outcome};
use crate::redact::Redactor;
use crate::spec::{Api, SecurityScheme};
use crate::text::thousands;

/// The name of the identity the credential flags make.
pub const DEFAULT_NAME: &str = "default";

/// What went wrong with an identity: always names the identity, and the setting or request.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("--identity `{given}`: {problem}")]
    Flag { given: String, problem: String },
    /// The credential flags (`--bearer`, `--basic`, `--api-key`, `--header`) do not fit the
    /// document: an API key with nowhere to go.
    #[error("{problem}")]
    Flags { problem: String },
    #[error("{path}: identity {at}: {problem}")]
    File {
        path: String,
        at: String,
        problem: String,
    },
    #[error("identity `{name}` is given twice")]
    Twice { name: String },
    #[error("identity `{name}`: the login {request} {problem}")]
    Login {
        name: String,
        request: String,
        problem: String,
    },
    #[error("this request was sent as identity `{name}`, which this invocation does not have")]
    Unknown { name: String },
    /// A login again failed in the middle of the run: the identity sends nothing more.
    #[error("identity `{name}` is unusable: its login {request} {reason}")]
    Unusable {
        name: String,
        request: String,
        reason: String,
    },
    /// A credential given longer than [`Identities::limit_credentials`] allows.
    #[error(
        "identity `{name}`: a credential of {} bytes is longer than the {} bytes of setting `send.maxCredentialBytes`",
        thousands(*size as u64),
        thousands(*max as u64)
    )]
    TooLong {
        name: String,
        size: usize,
        max: usize,
    },
}

/// The default of `send.maxCredentialBytes`: the longest credential or token taken.
pub const DEFAULT_MAX_CREDENTIAL: usize = 64 * 1024;

/// How a login's token is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Apply {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// A header of this name, the token as its value.
    Header(String),
    /// `Cookie`: the cookies the login's answer set (`Set-Cookie`), as a browser sends
    /// them back; a session kept by the server.
    Cookie,
}

/// A login request, as `probe.toml` describes it.
#[derive(Clone, Debug)]
pub struct Login {
    pub method: String,
    /// Relative to the base URL (`/auth/login`); the path of `url` when that is given.
    pub path: String,
    /// A token endpoint elsewhere than the API, named whole in `probe.toml`
    /// (`https://idp.example/oauth/token`): the one request probe sends off the API's
    /// origin. `None`: the login goes to the base URL and `path`.
    pub url: Option<String>,
    /// An OAuth2 grant (`client_credentials`, `password`): its form is in `form`, and the
    /// answer's `expires_in` says when to log in again unless `lifetime` does.
    pub grant: Option<String>,
    /// A JSON body.
    pub json: Option<Value>,
    /// A form body, when there is no JSON one.
    pub form: Vec<(String, String)>,
    /// Where the token is: a JSON pointer into the reply body (`/access_token`), or
    /// `header:<name>` for a reply header.
    pub token: String,
    pub apply: Apply,
    /// Log in again after this long; `None`: only when a request is answered 401.
    pub lifetime: Option<Duration>,
}

impl Login {
    /// `POST /login`: what a message names it by.
    fn describe(&self) -> String {
        format!(
            "{} {}",
            self.method,
            self.url.as_deref().unwrap_or(&self.path)
        )
    }

    /// This login with `password` in place of every string of its body under a name that
    /// reads as a password (`password`, `pass`, `passwd`); `None` when it has none.
    fn with_password(&self, password: &str) -> Option<Login> {
        fn put(value: &mut Value, name: &str, password: &str) -> bool {
            match value {
                Value::Object(map) => map
                    .iter_mut()
                    .fold(false, |put_any, (k, v)| put(v, k, password) | put_any),
                Value::String(s) if password_name(name) => {
                    *s = password.to_owned();
                    true
                }
                _ => false,
            }
        }
        let mut login = self.clone();
        let mut replaced = login
            .json
            .as_mut()
            .is_some_and(|json| put(json, "", password));
        for (k, v) in &mut login.form {
            if password_name(k) {
                *v = password.to_owned();
                replaced = true;
            }
        }
        replaced.then_some(login)
    }

    /// The values of its body that are secret: every string whose name reads as one.
    fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(json) = &self.json {
            strings_named(json, "", &secret_name, &mut out);
        }
        out.extend(
            self.form
                .iter()
                .filter(|(k, _)| secret_name(k))
                .map(|(_, v)| v.clone()),
        );
        out
    }
}

/// The strings of `value` under a field whose name `named` picks (an array's items under
/// the array's name), in document order.
fn strings_named(value: &Value, name: &str, named: &dyn Fn(&str) -> bool, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| strings_named(v, k, named, out)),
        Value::Array(items) => items
            .iter()
            .for_each(|v| strings_named(v, name, named, out)),
        Value::String(s) if named(name) => out.push(s.clone()),
        _ => {}
    }
}

/// Whether a field of that name holds a password (`password`, `newPassword`, `passwd`,
/// `pass`), not any secret.
fn password_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("pass") && !lower.contains("passport")
}

/// How many passwords accepted requests set are kept to log in with (the latest first).
const SET_PASSWORDS_KEPT: usize = 4;

/// Whether a field of that name holds a secret (`password`, `client_secret`, `apiKey`).
fn secret_name(name: &str) -> bool {
    crate::redact::credential_name(name)
}

/// One identity as given, before the run.
#[derive(Clone, Debug)]
pub struct IdentitySpec {
    pub name: String,
    pub credentials: Credentials,
    pub login: Option<Login>,
}

impl IdentitySpec {
    /// The identity `default` with `credentials` (none: an anonymous run).
    pub fn default_with(credentials: Credentials) -> IdentitySpec {
        IdentitySpec {
            name: DEFAULT_NAME.to_owned(),
            credentials,
            login: None,
        }
    }
}

/// `value`, or the variable it names (`env:NAME`).
fn resolved(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    match value.strip_prefix("env:") {
        Some(var) => env(var).ok_or_else(|| format!("the variable `{var}` is not set")),
        None => Ok(value.to_owned()),
    }
}

/// Reads `--identity NAME=KIND:VALUE`: `bearer:TOKEN`, `basic:USER:PASSWORD`,
/// `api-key:KEY` or `header:NAME:VALUE`; a value `env:VAR` is read from that variable.
pub fn parse_flag(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<IdentitySpec, IdentityError> {
    let fail = |problem: String| IdentityError::Flag {
        given: redact_flag(text),
        problem,
    };
    let (name, auth) = text
        .split_once('=')
        .ok_or_else(|| fail("expected NAME=KIND:VALUE, e.g. bob=bearer:env:BOB_TOKEN".into()))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(fail(
            "the name must be letters, digits, `-` or `_`".to_owned(),
        ));
    }
    let (kind, value) = auth.split_once(':').ok_or_else(|| {
        fail("expected KIND:VALUE after `=`, KIND one of bearer, basic, api-key, header".into())
    })?;
    let mut credentials = Credentials::default();
    match kind {
        "bearer" => credentials.bearer = Some(resolved(value, env).map_err(fail)?),
        "basic" => {
            let userpass = resolved(value, env).map_err(fail)?;
            if !userpass.contains(':') {
                return Err(fail("basic credentials are USER:PASSWORD".into()));
            }
            credentials.basic = Some(userpass);
        }
        "api-key" => credentials.api_key = Some(resolved(value, env).map_err(fail)?),
        "header" => {
            let (header, value) = value
                .split_once(':')
                .ok_or_else(|| fail("a header is header:NAME:VALUE".into()))?;
            let value = resolved(value.trim(), env).map_err(fail)?;
            credentials.headers.push((header.trim().to_owned(), value));
        }
        other => {
            return Err(fail(format!(
                "unknown kind `{other}`; expected bearer, basic, api-key or header"
            )))
        }
    }
    Ok(IdentitySpec {
        name: name.to_owned(),
        credentials,
        login: None,
    })
}

/// The flag as a message may show it: the name and kind, never the value.
fn redact_flag(text: &str) -> String {
    match text.split_once('=') {
        Some((name, auth)) => match auth.split_once(':') {
            Some((kind, _)) => format!("{name}={kind}:…"),
            None => format!("{name}=…"),
        },
        None => "…".to_owned(),
    }
}

/// Reads the `[[identity]]` tables of a `probe.toml`.
pub fn from_toml(
    path: &str,
    table: &toml::Table,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<IdentitySpec>, IdentityError> {
    let Some(list) = table.get("identity") else {
        return Ok(Vec::new());
    };
    let fail = |at: String, problem: String| IdentityError::File {
        path: path.to_owned(),
        at,
        problem,
    };
    let list = list.as_array().ok_or_else(|| {
        fail(
            "`identity`".into(),
            "write each identity as an [[identity]] table".into(),
        )
    })?;
    let mut out = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let at = format!("#{}", i + 1);
        let entry = entry
            .as_table()
            .ok_or_else(|| fail(at.clone(), "must be a table".into()))?;
        let text = |key: &str| -> Result<Option<String>, IdentityError> {
            match entry.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => resolved(s, env)
                    .map(Some)
                    .map_err(|p| fail(format!("{at} `{key}`"), p)),
                Some(_) => Err(fail(format!("{at} `{key}`"), "must be a string".into())),
            }
        };
        let name = text("name")?.ok_or_else(|| fail(at.clone(), "has no `name`".into()))?;
        let at = format!("`{name}`");
        let mut credentials = Credentials {
            bearer: text("bearer")?,
            basic: text("basic")?,
            api_key: text("api_key")?,
            ..Credentials::default()
        };
        if let Some(headers) = entry.get("headers") {
            let headers = headers
                .as_table()
                .ok_or_else(|| fail(format!("{at} `headers`"), "must be a table".into()))?;
            for (k, v) in headers {
                let v = v.as_str().ok_or_else(|| {
                    fail(format!("{at} `headers.{k}`"), "must be a string".into())
                })?;
                let v = resolved(v, env).map_err(|p| fail(format!("{at} `headers.{k}`"), p))?;
                credentials.headers.push((k.clone(), v));
            }
        }
        for key in entry.keys() {
            if !["name", "bearer", "basic", "api_key", "headers", "login"].contains(&key.as_str()) {
                return Err(fail(
                    at.clone(),
                    format!("unknown key `{key}`; expected name, bearer, basic, api_key, headers or login"),
                ));
            }
        }
        let login = match entry.get("login") {
            None => None,
            Some(login) => Some(login_from_toml(login, &at, env).map_err(|(k, p)| fail(k, p))?),
        };
        out.push(IdentitySpec {
            name,
            credentials,
            login,
        });
    }
    Ok(out)
}

/// The keys an `[identity.login]` table may hold.
const LOGIN_KEYS: &[&str] = &[
    "method",
    "path",
    "url",
    "json",
    "form",
    "token",
    "apply",
    "lifetime",
    "grant",
    "client_id",
    "client_secret",
    "scope",
    "username",
    "password",
];

/// Where a login goes: `path` on the API's origin, or `url`, a token endpoint elsewhere
/// named whole; one of the two. Errors name the key.
fn login_target(
    path: Option<String>,
    url: Option<String>,
) -> Result<(String, Option<String>), (&'static str, String)> {
    match (path, url) {
        (Some(_), Some(_)) => Err((
            "url",
            "is given with `path`: a login goes to `path` on the API or to `url`, not both".into(),
        )),
        (None, None) => Err((
            "path",
            "is required (relative to the base URL), or `url` for a token endpoint elsewhere"
                .into(),
        )),
        (Some(path), None) if path.starts_with('/') => Ok((path, None)),
        (Some(_), None) => Err((
            "path",
            "must be a path relative to the base URL, starting with `/`".into(),
        )),
        (None, Some(url)) => {
            let parsed = url::Url::parse(&url).map_err(|e| ("url", format!("`{url}`: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") || !parsed.has_host() {
                return Err((
                    "url",
                    format!("`{url}`: must be an http:// or https:// URL"),
                ));
            }
            if !parsed.username().is_empty() || parsed.password().is_some() {
                return Err((
                    "url",
                    "holds credentials; give them as `client_id` and `client_secret`, or in the form"
                        .into(),
                ));
            }
            Ok((parsed.path().to_owned(), Some(parsed.to_string())))
        }
    }
}

/// Reads a string key of a login table: `None` when absent; the error names the key.
type LoginText<'a> = dyn Fn(&str) -> Result<Option<String>, (String, String)> + 'a;

/// The form an OAuth2 `grant` sends (RFC 6749 §4.3, §4.4; the client authenticated in the
/// body): `grant_type`, then `client_id`, `client_secret`, `username`, `password` and
/// `scope` as given. Without a grant, none of those keys may be given.
fn grant_form(
    grant: Option<&str>,
    text: &LoginText<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, (&'static str, String)> {
    const FIELDS: [&str; 5] = [
        "client_id",
        "client_secret",
        "username",
        "password",
        "scope",
    ];
    let mut given = Vec::new();
    for field in FIELDS {
        let value = text(field).map_err(|(_, p)| (field, p))?;
        if let Some(value) = value {
            given.push((field, resolved(&value, env).map_err(|p| (field, p))?));
        }
    }
    let needs: &[&str] = match grant {
        None => {
            return match given.first() {
                None => Ok(Vec::new()),
                Some((field, _)) => Err((
                    *field,
                    "belongs to an OAuth2 login: give `grant = \"client_credentials\"` or \
                     `grant = \"password\"`"
                        .into(),
                )),
            }
        }
        Some("client_credentials") => &["client_id", "client_secret"],
        Some("password") => &["username", "password"],
        Some(other) => {
            return Err((
                "grant",
                format!("`{other}`: expected `client_credentials` or `password`"),
            ))
        }
    };
    if let Some(missing) = needs.iter().find(|n| !given.iter().any(|(f, _)| f == *n)) {
        return Err((
            "grant",
            format!("`{}` needs `{missing}`", grant.unwrap_or_default()),
        ));
    }
    let mut form = vec![(
        "grant_type".to_owned(),
        grant.unwrap_or_default().to_owned(),
    )];
    form.extend(given.into_iter().map(|(k, v)| (k.to_owned(), v)));
    Ok(form)
}

fn login_from_toml(
    value: &toml::Value,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Login, (String, String)> {
    let table = value
        .as_table()
        .ok_or_else(|| (format!("{at} `login`"), "must be a table".to_owned()))?;
    let key_at = |k: &str| format!("{at} `login.{k}`");
    let text = |k: &str| -> Result<Option<String>, (String, String)> {
        match table.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err((key_at(k), "must be a string".into())),
        }
    };
    for key in table.keys() {
        if !LOGIN_KEYS.contains(&key.as_str()) {
            return Err((
                at.to_owned(),
                format!(
                    "unknown key `login.{key}`; expected {}",
                    LOGIN_KEYS.join(", ")
                ),
            ));
        }
    }
    let (path, url) = login_target(text("path")?, text("url")?).map_err(|(k, p)| (key_at(k), p))?;
    let apply = match text("apply")?.as_deref() {
        None | Some("bearer") => Apply::Bearer,
        Some("cookie") => Apply::Cookie,
        Some(other) => match other.strip_prefix("header:") {
            Some(name) if !name.trim().is_empty() => Apply::Header(name.trim().to_owned()),
            _ => {
                return Err((
                    key_at("apply"),
                    format!("`{other}`: expected `bearer`, `cookie` or `header:<name>`"),
                ))
            }
        },
    };
    let grant = text("grant")?;
    let token =
        match text("token")? {
            Some(token) => token,
            // An OAuth2 token endpoint answers `access_token`; a cookie login sets cookies.
            None if grant.is_some() => "/access_token".to_owned(),
            None if apply == Apply::Cookie => String::new(),
            None => return Err((
                key_at("token"),
                "is required: a JSON pointer into the reply (`/access_token`) or `header:<name>` \
                 (or `apply = \"cookie\"` for a session cookie)"
                    .to_owned(),
            )),
        };
    if apply != Apply::Cookie && !(token.starts_with('/') || token.starts_with("header:")) {
        return Err((
            key_at("token"),
            "must be a JSON pointer (`/access_token`) or `header:<name>`".into(),
        ));
    }
    let lifetime = match text("lifetime")? {
        None => None,
        Some(text) => Some(
            humantime::parse_duration(&text)
                .map_err(|e| (key_at("lifetime"), format!("`{text}`: {e}")))?,
        ),
    };
    // Values read from variables where they say `env:`.
    fn resolve_json(value: &mut Value, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        match value {
            Value::String(s) => *s = resolved(s, env)?,
            Value::Array(items) => {
                for v in items {
                    resolve_json(v, env)?;
                }
            }
            Value::Object(map) => {
                for v in map.values_mut() {
                    resolve_json(v, env)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let json = match table.get("json") {
        None => None,
        Some(v) => {
            let mut json = serde_json::to_value(v).map_err(|e| (key_at("json"), e.to_string()))?;
            resolve_json(&mut json, env).map_err(|p| (key_at("json"), p))?;
            Some(json)
        }
    };
    let mut form = grant_form(grant.as_deref(), &text, env).map_err(|(k, p)| (key_at(k), p))?;
    if grant.is_some() && json.is_some() {
        return Err((
            key_at("json"),
            "an OAuth2 grant sends a form; give extra fields in `form`".into(),
        ));
    }
    if let Some(v) = table.get("form") {
        let t = v
            .as_table()
            .ok_or_else(|| (key_at("form"), "must be a table".to_owned()))?;
        for (k, v) in t {
            let v = v
                .as_str()
                .ok_or_else(|| (key_at(&format!("form.{k}")), "must be a string".to_owned()))?;
            form.push((
                k.clone(),
                resolved(v, env).map_err(|p| (key_at(&format!("form.{k}")), p))?,
            ));
        }
    }
    Ok(Login {
        method: text("method")?
            .unwrap_or_else(|| "POST".into())
            .to_ascii_uppercase(),
        path,
        url,
        grant,
        json,
        form,
        token,
        apply,
        lifetime,
    })
}

/// A token obtained by a login.
#[derive(Clone, Debug)]
struct Token {
    value: String,
    got: Instant,
    /// How long the token lasts by the login's answer (OAuth2's `expires_in`).
    lifetime: Option<Duration>,
    /// How many logins came before it (so a 401 to an older token does not log in again).
    generation: u64,
}

/// One identity during a run.
#[derive(Debug)]
struct Live {
    name: String,
    fixed: Credentials,
    login: Option<Login>,
    token: Mutex<Option<Token>>,
    /// One login at a time per identity: the requests waiting for it share its token.
    gate: tokio::sync::Mutex<()>,
    logins: AtomicU64,
    after_401: AtomicU64,
    /// Set when a login again failed: nothing more is sent as this identity.
    unusable: Mutex<Option<crate::model::Unusable>>,
    /// The login with the password an accepted request of the run set, once the login as
    /// configured failed and that one worked: what every later login sends.
    relogin: Mutex<Option<Login>>,
    /// Logins that worked only with a password the run set.
    with_set_password: AtomicU64,
}

/// The identities of a run, with their tokens and the redactor of every credential among
/// them.
#[derive(Debug)]
pub struct Identities {
    list: Vec<Live>,
    /// Whether the document declares a bearer scheme (where a login's bearer token goes).
    declares_bearer: bool,
    secrets: Mutex<Vec<String>>,
    redactor: RwLock<Redactor>,
    /// (identity, operation) pairs whose 401 a fresh token did not change: what the
    /// operation answers to such requests, not an expired token; never a reason to log in.
    not_the_token: Mutex<std::collections::BTreeSet<(String, String)>>,
    /// See [`Identities::notes`].
    notes: Vec<String>,
    /// Passwords that requests answered 2xx sent (the latest last, at most
    /// [`SET_PASSWORDS_KEPT`]): an API may have changed an identity's password to one,
    /// and a login that fails again tries them before the identity is called unusable.
    passwords_set: Mutex<Vec<String>>,
    /// Passwords of the requests sent last, answered or not (at most
    /// [`SET_PASSWORDS_KEPT`]): tried after [`Identities::passwords_set`].
    passwords_sent: Mutex<Vec<String>>,
    /// The longest token a login may answer ([`Identities::limit_credentials`]).
    max_credential: usize,
    /// When the identities were read, at the start of the run: what an identity's
    /// [`crate::model::Unusable`] counts from.
    started: Instant,
}

// What an identity did is counted here and carried by `run_ended` and report.json; the type
// lives in the model so the events need nothing of the sending code.
pub use crate::model::IdentitySummary;

/// Credentials to send, and the token generation they carry (0 for fixed ones).
pub struct Sending {
    pub credentials: Credentials,
    pub generation: u64,
}

impl Identities {
    /// The identities in order, the first the default. Credential values are fitted to the
    /// document's schemes first ([`Credentials::settle`]).
    pub fn new(specs: Vec<IdentitySpec>, api: &Api) -> Result<Identities, IdentityError> {
        let mut list: Vec<Live> = Vec::new();
        let mut secrets = Vec::new();
        let mut notes = Vec::new();
        for spec in specs {
            if list.iter().any(|l| l.name == spec.name) {
                return Err(IdentityError::Twice { name: spec.name });
            }
            let mut fixed = spec.credentials;
            let settled = fixed.settle(api).map_err(|problem| {
                if spec.name == DEFAULT_NAME {
                    IdentityError::Flags { problem }
                } else {
                    IdentityError::Flag {
                        given: spec.name.clone(),
                        problem,
                    }
                }
            })?;
            // What fitting the default identity's credentials to the document did, for
            // the console.
            if list.is_empty() {
                notes = settled;
            }
            secrets.extend(fixed.secret_values());
            if let Some(login) = &spec.login {
                secrets.extend(login.secrets());
            }
            list.push(Live {
                name: spec.name,
                fixed,
                login: spec.login,
                token: Mutex::new(None),
                gate: tokio::sync::Mutex::new(()),
                logins: AtomicU64::new(0),
                after_401: AtomicU64::new(0),
                unusable: Mutex::new(None),
                relogin: Mutex::new(None),
                with_set_password: AtomicU64::new(0),
            });
        }
        let redactor = Redactor::new(secrets.iter().map(String::as_str));
        Ok(Identities {
            list,
            declares_bearer: api
                .security_schemes
                .values()
                .any(|s| matches!(s, SecurityScheme::Bearer)),
            secrets: Mutex::new(secrets),
            redactor: RwLock::new(redactor),
            not_the_token: Mutex::default(),
            notes,
            passwords_set: Mutex::default(),
            passwords_sent: Mutex::default(),
            max_credential: DEFAULT_MAX_CREDENTIAL,
            started: Instant::now(),
        })
    }

    /// Caps every credential at `max` bytes (setting `send.maxCredentialBytes`): a given
    /// one longer is refused here, and a login answered with a longer token fails naming
    /// the identity and the size. What the API sends then costs no more than the setting:
    /// each token is kept, sent and searched for in every form it can take.
    pub fn limit_credentials(&mut self, max: usize) -> Result<(), IdentityError> {
        self.max_credential = max;
        for live in &self.list {
            let mut given = live.fixed.secret_values();
            if let Some(login) = &live.login {
                given.extend(login.secrets());
            }
            if let Some(size) = given.iter().map(String::len).filter(|&n| n > max).max() {
                return Err(IdentityError::TooLong {
                    name: live.name.clone(),
                    size,
                    max,
                });
            }
        }
        Ok(())
    }

    /// What fitting the default identity's credentials to the document's security schemes
    /// did (a token sent where the document declares no bearer scheme, ...), for the console.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The redactor of every credential given and every token obtained so far.
    pub fn redactor(&self) -> Redactor {
        self.redactor.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// Removes from `api`'s operations each declared parameter whose place a credential of
    /// some identity takes ([`super::wire::taken_by_credentials`]; a login's token counts
    /// where it goes): the credential wins, and the run's test cases record no value for
    /// it. Returns what was removed: the operation and the parameter (`header Authorization`).
    pub fn drop_taken_parameters(&self, api: &mut Api) -> Vec<(String, String)> {
        let sent: Vec<Credentials> = self
            .list
            .iter()
            .map(|live| match &live.login {
                Some(login) => self.applied(live, login, "token"),
                None => live.fixed.clone(),
            })
            .collect();
        let mut removed = Vec::new();
        for i in 0..api.operations.len() {
            let mut taken: Vec<(Location, String)> = Vec::new();
            for creds in &sent {
                for place in super::wire::taken_by_credentials(&api.operations[i], api, creds) {
                    if !taken.contains(&place) {
                        taken.push(place);
                    }
                }
            }
            let op = &mut api.operations[i];
            op.parameters.retain(|p| {
                let gone = taken.contains(&(p.location, p.name.clone()));
                if gone {
                    removed.push((op.key.name(), format!("{} {}", p.location.as_str(), p.name)));
                }
                !gone
            });
        }
        removed
    }

    /// The names, the default first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|l| l.name.as_str())
    }

    /// The identity other than the default that the access series use: the second.
    pub fn other(&self) -> Option<&str> {
        self.list.get(1).map(|l| l.name.as_str())
    }

    /// The first identity's login that sends a JSON body with a secret-named field (a
    /// password), with every such field's string replaced by `wrong`: what an
    /// `enumeration` series sends; its method, path and that body.
    pub fn json_login_with(&self, wrong: &str) -> Option<(&str, &str, Value)> {
        self.list.iter().find_map(|l| {
            let login = l.login.as_ref()?;
            // A login elsewhere than the API is not the API's to answer.
            if login.url.is_some() {
                return None;
            }
            let mut json = login.json.clone()?;
            let mut replaced = false;
            for (name, value) in json.as_object_mut()? {
                if value.is_string() && secret_name(name) {
                    *value = Value::String(wrong.to_owned());
                    replaced = true;
                }
            }
            replaced.then_some((login.method.as_str(), login.path.as_str(), json))
        })
    }

    /// The login of the identity the access series send as (the second), when it sends a
    /// JSON body to the API itself: its method, path and body as configured (secrets and
    /// all). What a `credential_change` series sends to ask whether that identity's login
    /// still works after the default identity changed its password (docs/security.md).
    pub fn other_json_login(&self) -> Option<(&str, &str, &Value)> {
        let login = self.list.get(1)?.login.as_ref()?;
        if login.url.is_some() {
            return None;
        }
        let json = login.json.as_ref()?;
        Some((login.method.as_str(), login.path.as_str(), json))
    }

    /// Whether the default identity sends any credential.
    pub fn any(&self) -> bool {
        self.list
            .first()
            .is_some_and(|l| l.login.is_some() || l.fixed.any())
    }

    fn live(&self, name: Option<&str>) -> Result<&Live, IdentityError> {
        match name {
            None => self.list.first().ok_or(IdentityError::Unknown {
                name: DEFAULT_NAME.into(),
            }),
            Some(n) => self
                .list
                .iter()
                .find(|l| l.name == n)
                .ok_or_else(|| IdentityError::Unknown { name: n.to_owned() }),
        }
    }

    /// The credentials to send as `name` (the default when `None`): logs in first when the
    /// identity has a login and no token, or one whose lifetime is over.
    pub async fn credentials(
        &self,
        name: Option<&str>,
        sender: &Sender,
        base_url: &str,
    ) -> Result<Sending, IdentityError> {
        let live = self.live(name)?;
        let Some(login) = &live.login else {
            return Ok(Sending {
                credentials: live.fixed.clone(),
                generation: 0,
            });
        };
        self.usable(live, login)?;
        let fresh = |t: &Token| {
            login
                .lifetime
                .or(t.lifetime)
                .is_none_or(|l| t.got.elapsed() < l)
        };
        let current = self.current(live);
        let token = match current {
            Some(t) if fresh(&t) => t,
            _ => {
                let _held = live.gate.lock().await;
                // Another request may have logged in while this one waited: a fresh token
                // now is a newer one (freshness only runs out).
                // Another may have failed to, too: then this one does not try again.
                self.usable(live, login)?;
                match self.current(live) {
                    Some(t) if fresh(&t) => t,
                    _ => self.log_in_again(live, login, sender, base_url).await?,
                }
            }
        };
        Ok(Sending {
            credentials: self.applied(live, login, &token.value),
            generation: token.generation,
        })
    }

    /// The credentials `name` (the default when `None`) sends, without logging in: a login's
    /// token stands in as `token` where it goes. For where credentials go, never to send.
    pub fn nominal(&self, name: Option<&str>) -> Result<Credentials, IdentityError> {
        let live = self.live(name)?;
        Ok(match &live.login {
            Some(login) => self.applied(live, login, "token"),
            None => live.fixed.clone(),
        })
    }

    /// How the bearer token `name` (the default when `None`) sends now could be forged
    /// (`jwt::forgeries`, with the weak keys of an API titled `title`), as the probes a
    /// case carries to send each forgery: empty when it sends
    /// none, or one that is no JWT. Asked once its login is done; never sends anything.
    pub fn forgeries(&self, name: Option<&str>, title: &str) -> Vec<crate::model::CredentialProbe> {
        let Ok(live) = self.live(name) else {
            return Vec::new();
        };
        let credentials = match (&live.login, self.current(live)) {
            (Some(login), Some(token)) => self.applied(live, login, &token.value),
            (Some(_), None) => return Vec::new(),
            (None, _) => live.fixed.clone(),
        };
        credentials.bearer_token().map_or_else(Vec::new, |token| {
            crate::jwt::forgeries(token, &crate::jwt::candidate_keys(title))
                .into_iter()
                .map(crate::jwt::Forgery::probe)
                .collect()
        })
    }

    /// Logs every identity that has a login in, before the first request: a login that
    /// fails stops the run before anything is sent. The run's budget ends at `deadline`,
    /// and a login still waiting for its answer then fails saying so: a login that hangs
    /// took `send.timeout` whatever the budget.
    pub async fn log_in_all(
        &self,
        sender: &Sender,
        base_url: &str,
        deadline: Option<Instant>,
    ) -> Result<(), IdentityError> {
        for live in &self.list {
            let Some(login) = &live.login else { continue };
            let logging_in = self.credentials(Some(&live.name), sender, base_url);
            let done = match deadline {
                Some(d) => tokio::time::timeout_at(d.into(), logging_in).await,
                None => Ok(logging_in.await),
            };
            match done {
                Ok(result) => result.map(drop)?,
                Err(_) => {
                    return Err(IdentityError::Login {
                        name: live.name.clone(),
                        request: login.describe(),
                        problem: "got no answer before the run's budget ran out (--budget \
                                  ends logins too)"
                            .into(),
                    })
                }
            }
        }
        Ok(())
    }

    /// A request of `operation` sent as `name` with the token of `generation` was
    /// answered 401: logs in again (unless another request already did) and gives the
    /// credentials to send it once more with; `None` for an identity without a login, or
    /// when a fresh token was refused by this operation before ([`Identities::not_the_token`]).
    pub async fn refused(
        &self,
        name: Option<&str>,
        operation: &str,
        generation: u64,
        sender: &Sender,
        base_url: &str,
    ) -> Result<Option<Sending>, IdentityError> {
        let live = self.live(name)?;
        let Some(login) = &live.login else {
            return Ok(None);
        };
        self.usable(live, login)?;
        let pair = (live.name.clone(), operation.to_owned());
        if self
            .not_the_token
            .lock()
            .is_ok_and(|known| known.contains(&pair))
        {
            return Ok(None);
        }
        let _held = live.gate.lock().await;
        self.usable(live, login)?;
        let token = match self.current(live) {
            Some(t) if t.generation > generation => t,
            _ => self.log_in_again(live, login, sender, base_url).await?,
        };
        live.after_401.fetch_add(1, Ordering::Relaxed);
        Ok(Some(Sending {
            credentials: self.applied(live, login, &token.value),
            generation: token.generation,
        }))
    }

    /// A request of `operation` sent again as `name` with a fresh token was answered 401
    /// again: the operation answers 401 to such requests whatever the token, and its next
    /// 401s are not a reason to log in.
    pub fn not_the_token(&self, name: Option<&str>, operation: &str) {
        let Ok(live) = self.live(name) else { return };
        if let Ok(mut known) = self.not_the_token.lock() {
            known.insert((live.name.clone(), operation.to_owned()));
        }
    }

    fn current(&self, live: &Live) -> Option<Token> {
        live.token.lock().ok().and_then(|t| t.clone())
    }

    /// `Err(Unusable)` once a login again of `live` has failed.
    fn usable(&self, live: &Live, login: &Login) -> Result<(), IdentityError> {
        match live.unusable.lock().ok().and_then(|u| u.clone()) {
            Some(unusable) => Err(IdentityError::Unusable {
                name: live.name.clone(),
                request: login.describe(),
                reason: unusable.reason,
            }),
            None => Ok(()),
        }
    }

    /// Sends a login of `live`: its first fails as [`Identities::log_in`] says (the run
    /// stops before anything is sent); a later one that fails marks the identity unusable
    /// from then on, and says so as [`IdentityError::Unusable`]: a run goes on without it
    /// rather than ending without its report (docs/security.md).
    async fn log_in_again(
        &self,
        live: &Live,
        login: &Login,
        sender: &Sender,
        base_url: &str,
    ) -> Result<Token, IdentityError> {
        let first = live.logins.load(Ordering::Relaxed) == 0;
        let relogin = live.relogin.lock().ok().and_then(|r| r.clone());
        let login = relogin.as_ref().unwrap_or(login);
        let mut tried = self.log_in(live, login, sender, base_url).await;
        if !first && tried.is_err() {
            if let Some(token) = self
                .log_in_with_set_password(live, login, sender, base_url)
                .await
            {
                tried = Ok(token);
            }
        }
        match tried {
            Err(IdentityError::Login {
                name,
                request,
                problem,
            }) if !first => {
                let unusable = crate::model::Unusable {
                    at_ms: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as u64),
                    after_ms: self.started.elapsed().as_millis() as u64,
                    reason: problem.clone(),
                };
                if let Ok(mut slot) = live.unusable.lock() {
                    slot.get_or_insert(unusable);
                }
                Err(IdentityError::Unusable {
                    name,
                    request,
                    reason: problem,
                })
            }
            other => other,
        }
    }

    /// A login of `live` that failed as configured, tried again with each password an
    /// accepted request set (the latest first): the API's password change (the run's own
    /// `PUT /users/{name}/password`) locks an identity out of its configured login, and
    /// without this the run would end there. The login that works is kept for later.
    async fn log_in_with_set_password(
        &self,
        live: &Live,
        login: &Login,
        sender: &Sender,
        base_url: &str,
    ) -> Option<Token> {
        for password in &self.passwords_to_try() {
            let other = login.with_password(password)?;
            if let Ok(token) = self.log_in(live, &other, sender, base_url).await {
                live.with_set_password.fetch_add(1, Ordering::Relaxed);
                self.keep_secret(password);
                if let Ok(mut slot) = live.relogin.lock() {
                    *slot = Some(other);
                }
                return Some(token);
            }
        }
        None
    }

    /// A request with `body` is being sent: the passwords it holds (strings under a
    /// password's name) may be an identity's from the moment the API takes it, before its
    /// answer is back (a request in flight beside it may already be refused for it). Only
    /// when an identity logs in.
    pub fn sending(&self, body: &Value) {
        self.keep_passwords(&self.passwords_sent, body);
    }

    /// A request with `body` was answered 2xx: the passwords it sent are kept for a login
    /// that fails again, first ([`Identities::log_in_with_set_password`]).
    pub fn accepted(&self, body: &Value) {
        self.keep_passwords(&self.passwords_set, body);
    }

    fn keep_passwords(&self, kept: &Mutex<Vec<String>>, body: &Value) {
        if self.list.iter().all(|l| l.login.is_none()) {
            return;
        }
        let mut found = Vec::new();
        strings_named(body, "", &password_name, &mut found);
        found.retain(|p| !p.is_empty());
        if found.is_empty() {
            return;
        }
        if let Ok(mut set) = kept.lock() {
            for password in found {
                set.retain(|p| *p != password);
                set.push(password);
            }
            let over = set.len().saturating_sub(SET_PASSWORDS_KEPT);
            set.drain(..over);
        }
    }

    /// The passwords a login that failed again tries, in order: those of accepted requests
    /// (the latest first), then those of requests sent since whose answers may not be in.
    fn passwords_to_try(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for kept in [&self.passwords_set, &self.passwords_sent] {
            if let Ok(kept) = kept.lock() {
                for password in kept.iter().rev() {
                    if !out.contains(password) {
                        out.push(password.clone());
                    }
                }
            }
        }
        out
    }

    /// Whether the identity `name` (the default when `None`) became unusable.
    pub fn is_unusable(&self, name: Option<&str>) -> bool {
        self.live(name)
            .is_ok_and(|l| l.unusable.lock().is_ok_and(|u| u.is_some()))
    }

    /// The identity's fixed credentials with the token applied.
    fn applied(&self, live: &Live, login: &Login, token: &str) -> Credentials {
        let mut credentials = live.fixed.clone();
        match &login.apply {
            Apply::Bearer if self.declares_bearer => credentials.bearer = Some(token.to_owned()),
            Apply::Bearer => credentials.undeclared_authorization = Some(format!("Bearer {token}")),
            Apply::Header(name) => credentials.headers.push((name.clone(), token.to_owned())),
            Apply::Cookie => credentials
                .headers
                .push(("Cookie".into(), token.to_owned())),
        }
        credentials
    }

    /// Sends the login and keeps its token (secret from now on).
    async fn log_in(
        &self,
        live: &Live,
        login: &Login,
        sender: &Sender,
        base_url: &str,
    ) -> Result<Token, IdentityError> {
        let fail = |problem: String| IdentityError::Login {
            name: live.name.clone(),
            request: login.describe(),
            problem,
        };
        let mut headers = vec![("accept".to_owned(), "application/json".to_owned())];
        let body = if let Some(json) = &login.json {
            headers.push(("content-type".into(), "application/json".into()));
            Some(serde_json::to_vec(json).unwrap_or_default())
        } else if !login.form.is_empty() {
            headers.push((
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ));
            let pairs: Vec<String> = login
                .form
                .iter()
                .map(|(k, v)| {
                    let enc = |s: &str| {
                        percent_encoding::utf8_percent_encode(s, super::wire::COMPONENT).to_string()
                    };
                    format!("{}={}", enc(k), enc(v))
                })
                .collect();
            Some(pairs.join("&").into_bytes())
        } else {
            None
        };
        let url = match &login.url {
            Some(url) => url.clone(),
            None => format!("{}{}", base_url.trim_end_matches('/'), login.path),
        };
        let wire = WireRequest::plain(login.method.clone(), url, headers, body);
        live.logins.fetch_add(1, Ordering::Relaxed);
        let outcome = sender.send(&wire, None).await.outcome;
        let response = match &outcome {
            Outcome::Response(r) => r,
            Outcome::TransportError { message, .. } => {
                return Err(fail(format!("got no answer: {message}")))
            }
        };
        if !(200..300).contains(&response.status) {
            return Err(fail(format!(
                "was answered {}{}; check the identity's login in probe.toml",
                response.status,
                oauth_error(login, response)
            )));
        }
        let (value, lifetime) = token_of(login, response);
        let value = value.filter(|v| !v.is_empty()).ok_or_else(|| {
            fail(match login.apply {
                Apply::Cookie => "answer sets no cookie (Set-Cookie)".to_owned(),
                _ => format!("answer holds no token at `{}`", login.token),
            })
        })?;
        if value.len() > self.max_credential {
            return Err(fail(format!(
                "answered a token of {} bytes, longer than the {} bytes of setting \
                 `send.maxCredentialBytes`; raise it if the API's tokens are that long",
                thousands(value.len() as u64),
                thousands(self.max_credential as u64)
            )));
        }
        // A Bearer prefix in the token itself is the API's own spelling.
        let value = value
            .strip_prefix("Bearer ")
            .map(str::to_owned)
            .unwrap_or(value);
        self.keep_secret(&value);
        if login.apply == Apply::Cookie {
            // Each cookie's value alone too: the API may echo one without its name.
            let values: Vec<String> = value
                .split("; ")
                .filter_map(|pair| pair.split_once('=').map(|(_, v)| v.to_owned()))
                .collect();
            self.also_secret(&values);
        }
        let generation = live.logins.load(Ordering::Relaxed);
        let token = Token {
            value,
            got: Instant::now(),
            lifetime,
            generation,
        };
        if let Ok(mut slot) = live.token.lock() {
            *slot = Some(token.clone());
        }
        Ok(token)
    }
}

/// The error code an OAuth2 token endpoint answered (RFC 6749 §5.2: `invalid_client`,
/// `invalid_grant`, ...), as ` (invalid_client)`; empty for other logins or answers. Only
/// the code: its description is the server's free text.
fn oauth_error(login: &Login, response: &crate::model::ResponseRecord) -> String {
    let Some(crate::model::BodyBytes::Inline(body)) = &response.body else {
        return String::new();
    };
    login
        .grant
        .as_ref()
        .and_then(|_| serde_json::from_slice::<Value>(body).ok())
        .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
        .filter(|code| {
            code.len() <= 40 && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
        .map(|code| format!(" ({code})"))
        .unwrap_or_default()
}

/// The token a login's answer holds, where `login.token` says (a JSON pointer or a
/// header), or its cookies for `apply = "cookie"`; and, for an OAuth2 grant, how long it
/// lasts: `expires_in` less a tenth, so that it is renewed before the server refuses it.
fn token_of(
    login: &Login,
    response: &crate::model::ResponseRecord,
) -> (Option<String>, Option<Duration>) {
    if login.apply == Apply::Cookie {
        // `name=value` of each Set-Cookie, its attributes (Path, HttpOnly, ...) left out.
        let pairs: Vec<&str> = response
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
            .filter_map(|(_, v)| v.split(';').next())
            .map(str::trim)
            .filter(|pair| pair.contains('='))
            .collect();
        return ((!pairs.is_empty()).then(|| pairs.join("; ")), None);
    }
    if let Some(header) = login.token.strip_prefix("header:") {
        let value = response
            .header(&header.trim().to_ascii_lowercase())
            .map(str::to_owned);
        return (value, None);
    }
    let body = match &response.body {
        Some(crate::model::BodyBytes::Inline(b)) => b.as_slice(),
        _ => &[],
    };
    let Ok(reply) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let value = match reply.pointer(&login.token) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let lifetime = login
        .grant
        .as_ref()
        .and_then(|_| reply.get("expires_in"))
        .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64((s * 0.9).min(1e9)));
    (value, lifetime)
}

impl Identities {
    fn keep_secret(&self, value: &str) {
        self.also_secret(&[value.to_owned()]);
    }

    /// Adds `values` to the secrets the redactor searches for: credentials of this
    /// invocation that no identity sends (those of the `--spec` URL).
    pub fn also_secret(&self, values: &[String]) {
        let Ok(mut secrets) = self.secrets.lock() else {
            return;
        };
        let before = secrets.len();
        for value in values {
            if !secrets.contains(value) {
                secrets.push(value.clone());
            }
        }
        if secrets.len() == before {
            return;
        }
        let redactor = Redactor::new(secrets.iter().map(String::as_str));
        if let Ok(mut slot) = self.redactor.write() {
            *slot = redactor;
        }
    }

    /// What each identity did, in order.
    pub fn summary(&self) -> Vec<IdentitySummary> {
        self.list
            .iter()
            .map(|l| IdentitySummary {
                name: l.name.clone(),
                kind: if l.login.is_some() { "login" } else { "fixed" }.to_owned(),
                logins: l.logins.load(Ordering::Relaxed),
                resent_after_401: l.after_401.load(Ordering::Relaxed),
                logins_with_a_set_password: l.with_set_password.load(Ordering::Relaxed),
                unusable: l.unusable.lock().ok().and_then(|u| u.clone()),
            })
            .collect()
    }
}

impl Credentials {
    /// Every value that must never be kept or printed.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        out.extend(self.bearer.clone());
        if let Some(userpass) = &self.basic {
            out.push(userpass.clone());
            if let Some((_, password)) = userpass.split_once(':') {
                out.push(password.to_owned());
            }
        }
        out.extend(self.api_key.clone());
        out.extend(
            self.headers
                .iter()
                .filter(|(k, _)| !carries_no_credential(&k.to_ascii_lowercase()))
                .map(|(_, v)| v.clone()),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn flags_of_each_kind_are_read() {
        let env = |v: &str| (v == "BOB_TOKEN").then(|| "t0k3n-bob".to_owned());
        let bob = parse_flag("bob=bearer:env:BOB_TOKEN", &env).unwrap();
        assert_eq!(bob.name, "bob");
        assert_eq!(bob.credentials.bearer.as_deref(), Some("t0k3n-bob"));
        let carol = parse_flag("carol=basic:carol:pa:ss", &no_env).unwrap();
        assert_eq!(carol.credentials.basic.as_deref(), Some("carol:pa:ss"));
        let dave = parse_flag("dave=api-key:k3y", &no_env).unwrap();
        assert_eq!(dave.credentials.api_key.as_deref(), Some("k3y"));
        let erin = parse_flag("erin=header:X-Token: abc", &no_env).unwrap();
        assert_eq!(erin.credentials.headers, [("X-Token".into(), "abc".into())]);
    }

    #[test]
    fn a_bad_flag_says_what_is_wrong_and_never_shows_the_value() {
        let err = |t: &str| parse_flag(t, &no_env).unwrap_err().to_string();
        assert_eq!(
            err("bob=token:s3cr3t"),
            "--identity `bob=token:…`: unknown kind `token`; expected bearer, basic, api-key or header"
        );
        assert!(err("bob").contains("expected NAME=KIND:VALUE"));
        assert!(err("b b=bearer:x").contains("the name must be"));
        assert_eq!(
            err("bob=bearer:env:NOPE"),
            "--identity `bob=bearer:…`: the variable `NOPE` is not set"
        );
        assert!(!err("bob=basic:s3cr3t").contains("s3cr3t"));
    }

    #[test]
    fn identities_and_logins_are_read_from_probe_toml() {
        let text = r#"
[[identity]]
name = "alice"
bearer = "alice-token"

[[identity]]
name = "bob"
[identity.login]
path = "/login"
json = { user = "bob", password = "env:BOB_PASSWORD" }
token = "/access_token"
apply = "header:X-Auth"
lifetime = "30s"
"#;
        let table: toml::Table = text.parse().unwrap();
        let env = |v: &str| (v == "BOB_PASSWORD").then(|| "hunter22".to_owned());
        let specs = from_toml("probe.toml", &table, &env).unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].name, "alice");
        let login = specs[1].login.as_ref().unwrap();
        assert_eq!(login.method, "POST");
        assert_eq!(login.apply, Apply::Header("X-Auth".into()));
        assert_eq!(login.lifetime, Some(Duration::from_secs(30)));
        assert_eq!(login.json.as_ref().unwrap()["password"], "hunter22");
        assert_eq!(login.secrets(), ["hunter22"]);
    }

    #[test]
    fn a_bad_login_names_the_identity_and_the_key() {
        let table: toml::Table = "[[identity]]\nname = \"bob\"\n[identity.login]\npath = \"/login\"\ntoken = \"access_token\"\n"
            .parse()
            .unwrap();
        let err = from_toml("probe.toml", &table, &no_env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "probe.toml: identity `bob` `login.token`: must be a JSON pointer (`/access_token`) or `header:<name>`"
        );
        let table: toml::Table = "[[identity]]\nname = \"bob\"\nbeerer = \"x\"\n"
            .parse()
            .unwrap();
        let err = from_toml("probe.toml", &table, &no_env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown key `beerer`"), "{err}");
    }

    /// The login of the one identity of `text`, or the error's text.
    #[test]
    fn a_set_password_goes_where_the_login_sends_its_password() {
        let json = login_of(
            "[[identity]]\nname = \"a\"\n[identity.login]\npath = \"/login\"\njson = { user = { name = \"a\", password = \"old\" } }\ntoken = \"/t\"",
        )
        .unwrap();
        let with = json.with_password("new").unwrap();
        assert_eq!(
            with.json.unwrap(),
            serde_json::json!({"user": {"name": "a", "password": "new"}})
        );
        let form = login_of(
            "[[identity]]\nname = \"a\"\n[identity.login]\npath = \"/token\"\nform = { username = \"a\", passwd = \"old\" }\ntoken = \"/t\"",
        )
        .unwrap();
        let with = form.with_password("new").unwrap();
        assert!(
            with.form.contains(&("passwd".into(), "new".into())),
            "{:?}",
            with.form
        );
        assert!(with.form.contains(&("username".into(), "a".into())));
        let keyless = login_of("[[identity]]\nname = \"a\"\n[identity.login]\npath = \"/token\"\njson = { key = \"k\" }\ntoken = \"/t\"").unwrap();
        assert!(keyless.with_password("new").is_none());
    }

    fn login_of(text: &str) -> Result<Login, String> {
        let table: toml::Table = text.parse().unwrap();
        let env = |v: &str| (v == "SECRET").then(|| "s3cret-from-env".to_owned());
        from_toml("probe.toml", &table, &env)
            .map(|mut specs| specs.remove(0).login.unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_oauth2_grant_builds_its_form_for_a_token_endpoint_elsewhere() {
        let login = login_of(
            "[[identity]]\nname = \"svc\"\n[identity.login]\nurl = \"https://sso.example:8443/realms/r/token\"\n\
             grant = \"client_credentials\"\nclient_id = \"probe\"\nclient_secret = \"env:SECRET\"\nscope = \"a b\"\n\
             form = { audience = \"api\" }\n",
        )
        .unwrap();
        assert_eq!(
            login.url.as_deref(),
            Some("https://sso.example:8443/realms/r/token")
        );
        assert_eq!(login.path, "/realms/r/token");
        assert_eq!(login.token, "/access_token");
        assert_eq!(login.apply, Apply::Bearer);
        let form: Vec<(&str, &str)> = login
            .form
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            form,
            [
                ("grant_type", "client_credentials"),
                ("client_id", "probe"),
                ("client_secret", "s3cret-from-env"),
                ("scope", "a b"),
                ("audience", "api"),
            ]
        );
        assert_eq!(login.secrets(), ["s3cret-from-env"]);
        assert_eq!(
            login.describe(),
            "POST https://sso.example:8443/realms/r/token"
        );

        let login = login_of(
            "[[identity]]\nname = \"a\"\n[identity.login]\nurl = \"http://127.0.0.1:9/t\"\ngrant = \"password\"\n\
             username = \"alice\"\npassword = \"pw-long-enough\"\n",
        )
        .unwrap();
        assert_eq!(login.form[0], ("grant_type".into(), "password".into()));
        assert_eq!(login.secrets(), ["pw-long-enough"]);
    }

    #[test]
    fn a_wrong_oauth2_or_cookie_login_says_what_is_wrong() {
        let cases = [
            ("path = \"/a\"\nurl = \"http://h/t\"\ntoken = \"/t\"", "not both"),
            ("token = \"/t\"", "`login.path`: is required"),
            ("url = \"ftp://h/t\"\ntoken = \"/t\"", "must be an http:// or https:// URL"),
            ("url = \"http://u:p@h/t\"\ntoken = \"/t\"", "holds credentials"),
            ("url = \"http://h/t\"\ngrant = \"implicit\"", "expected `client_credentials` or `password`"),
            ("url = \"http://h/t\"\ngrant = \"client_credentials\"\nclient_id = \"x\"", "needs `client_secret`"),
            ("url = \"http://h/t\"\ngrant = \"password\"\nusername = \"x\"", "needs `password`"),
            ("path = \"/t\"\ntoken = \"/t\"\nclient_id = \"x\"", "belongs to an OAuth2 login"),
            ("url = \"http://h/t\"\ngrant = \"password\"\nusername = \"x\"\npassword = \"y\"\njson = { a = 1 }", "sends a form"),
            ("path = \"/t\"", "is required: a JSON pointer"),
            ("path = \"/t\"\napply = \"jar\"", "expected `bearer`, `cookie` or `header:<name>`"),
        ];
        for (body, expected) in cases {
            let err = login_of(&format!(
                "[[identity]]\nname = \"n\"\n[identity.login]\n{body}\n"
            ))
            .unwrap_err();
            assert!(err.contains(expected), "{body}: {err}");
            assert!(!err.contains("u:p@"), "{err}");
        }
        let login = login_of("[[identity]]\nname = \"n\"\n[identity.login]\npath = \"/session\"\napply = \"cookie\"\n").unwrap();
        assert_eq!(login.apply, Apply::Cookie);
    }

    /// The cookies of each Set-Cookie, attributes left out; an OAuth2 answer's expires_in
    /// less a tenth.
    #[test]
    fn a_login_answer_gives_its_cookies_or_its_token_and_lifetime() {
        let answer = |headers: Vec<(&str, &str)>, body: &str| crate::model::ResponseRecord {
            status: 200,
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            body: Some(crate::model::BodyBytes::Inline(body.as_bytes().to_vec())),
            truncated: false,
        };
        let cookie = login_of(
            "[[identity]]\nname = \"n\"\n[identity.login]\npath = \"/s\"\napply = \"cookie\"\n",
        )
        .unwrap();
        let reply = answer(
            vec![
                ("set-cookie", "sid=abc123; Path=/; HttpOnly"),
                ("content-type", "text/plain"),
                ("Set-Cookie", "csrf=x9; Secure"),
                ("set-cookie", "broken"),
            ],
            "",
        );
        assert_eq!(
            token_of(&cookie, &reply),
            (Some("sid=abc123; csrf=x9".into()), None)
        );
        assert_eq!(token_of(&cookie, &answer(vec![], "")), (None, None));

        let grant = login_of(
            "[[identity]]\nname = \"n\"\n[identity.login]\nurl = \"http://h/t\"\ngrant = \"client_credentials\"\n\
             client_id = \"a\"\nclient_secret = \"b\"\n",
        )
        .unwrap();
        let reply = answer(vec![], r#"{"access_token": "tok", "expires_in": 300}"#);
        assert_eq!(
            token_of(&grant, &reply),
            (Some("tok".into()), Some(Duration::from_secs(270)))
        );
        let reply = answer(vec![], r#"{"access_token": "tok", "expires_in": -5}"#);
        assert_eq!(token_of(&grant, &reply), (Some("tok".into()), None));
    }
}
