//! From a test case to the bytes on the wire: parameter styles, body encodings and
//! credentials.
//!
//! The same function builds the request the run sends and the one `replay` re-sends, so a
//! stored test case always means the same request. Credentials come from the current
//! invocation only; the stored copy of the request carries [`SECRET_PLACEHOLDER`] instead.
//!
//! Depends on: `model`, `spec`, `redact` (the percent-encoding set), `jwt` (a forged token).

use std::fmt::Write as _;

use percent_encoding::utf8_percent_encode;
use serde_json::Value;

use crate::model::{
    BodyBytes, Location, ParameterValue, RequestRecord, TestCase, SECRET_PLACEHOLDER,
};
use crate::spec::{is_json, Api, Operation, ParameterStyle, SecurityScheme, StatusPattern};

// The percent-encoding set of a path segment or query component lives with the redactor,
// which must search for a credential encoded exactly as the wire sends it, and which sits
// below the sending code (the store encodes through it).
pub(crate) use crate::redact::COMPONENT;

/// A token no API issued, sent in place of the run's own by a request that asks whether an
/// operation enforces its security.
pub const UNKNOWN_TOKEN: &str = "probe-unknown-credential-0000000000000000";

/// The `user:password` of basic credentials no API issued.
const UNKNOWN_BASIC: &str = "probe-unknown:probe-unknown-password";

/// A header value of the same shape as `value` that no API issued: a scheme word kept
/// (`Bearer x` → `Bearer <unknown>`), the rest replaced; `Basic` credentials stay base64 of
/// a `user:password`, so that an API reads them as credentials it does not know rather than
/// as a malformed header.
fn unknown_like(value: &str) -> String {
    use base64::Engine as _;
    match value.split_once(' ') {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("basic") => format!(
            "{scheme} {}",
            base64::engine::general_purpose::STANDARD.encode(UNKNOWN_BASIC)
        ),
        Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => {
            format!("{scheme} {UNKNOWN_TOKEN}")
        }
        _ => UNKNOWN_TOKEN.to_owned(),
    }
}

/// Credentials of this invocation. Never stored.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    pub bearer: Option<String>,
    /// `user:password`.
    pub basic: Option<String>,
    pub api_key: Option<String>,
    /// `--header` values: sent on every request, stored as placeholders.
    pub headers: Vec<(String, String)>,
    /// The `Authorization` value of a `--bearer` or `--basic` whose kind the document
    /// declares no scheme for: sent on every request no declared scheme gives one
    /// (set by [`Credentials::settle`]).
    pub undeclared_authorization: Option<String>,
}

impl Credentials {
    /// The credentials a request that asks whether an operation enforces its security
    /// carries: none (the `--header`s that carry no credential stay), or each replaced by
    /// one of the same kind and shape that no API issued.
    pub fn probed(&self, probe: crate::model::CredentialProbe) -> Credentials {
        match probe {
            crate::model::CredentialProbe::Unknown => Credentials {
                bearer: self.bearer.as_ref().map(|_| UNKNOWN_TOKEN.to_owned()),
                basic: self.basic.as_ref().map(|_| UNKNOWN_BASIC.to_owned()),
                api_key: self.api_key.as_ref().map(|_| UNKNOWN_TOKEN.to_owned()),
                headers: self
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        if carries_no_credential(&k.to_ascii_lowercase()) {
                            (k.clone(), v.clone())
                        } else {
                            (k.clone(), unknown_like(v))
                        }
                    })
                    .collect(),
                undeclared_authorization: self
                    .undeclared_authorization
                    .as_deref()
                    .map(unknown_like),
            },
            _ => Credentials {
                headers: self
                    .headers
                    .iter()
                    .filter(|(k, _)| carries_no_credential(&k.to_ascii_lowercase()))
                    .cloned()
                    .collect(),
                ..Credentials::default()
            },
        }
    }

    /// The credentials a request that asks whether the API takes a forged bearer token
    /// carries: the bearer token (or an `Authorization: Bearer` sent where the document
    /// declares no scheme) forged as `how` says, with `keys` the weak keys tried; a token
    /// that cannot be forged so (not a JWT, no weak key signed it) is replaced by one no
    /// API issued, which the oracle then does not read as a forgery. Nothing else changes.
    pub fn forged(&self, how: crate::jwt::Forgery, keys: &[String]) -> Credentials {
        let forge = |token: &str| {
            crate::jwt::forge(token, how, keys).unwrap_or_else(|| UNKNOWN_TOKEN.to_owned())
        };
        let mut out = self.clone();
        out.bearer = self.bearer.as_deref().map(forge);
        out.undeclared_authorization =
            self.undeclared_authorization
                .as_deref()
                .map(|value| match value.split_once(' ') {
                    Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                        format!("{scheme} {}", forge(token))
                    }
                    _ => value.to_owned(),
                });
        out
    }

    /// The bearer token these credentials send, if any: the forgeries of a `forgery`
    /// series start from it.
    pub fn bearer_token(&self) -> Option<&str> {
        self.bearer.as_deref().or_else(|| {
            let (scheme, token) = self.undeclared_authorization.as_deref()?.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        })
    }

    /// Whether this run sends any credential.
    pub fn any(&self) -> bool {
        self.bearer.is_some()
            || self.basic.is_some()
            || self.api_key.is_some()
            || self.undeclared_authorization.is_some()
            || self
                .headers
                .iter()
                .any(|(k, _)| !carries_no_credential(&k.to_ascii_lowercase()))
    }

    /// Fits the credentials to the document's security schemes. A `--bearer` or `--basic`
    /// that no operation's security names a scheme for (none declared, or one declared in
    /// `components` that no requirement uses: Airflow declares `Basic` and says `security:
    /// []`) is sent on every request: a document that omits its security is common, and
    /// the user asked for it. An `--api-key` without an apiKey scheme cannot be placed and
    /// is refused. Returns a note for each credential sent where the document does not say,
    /// for the console.
    pub fn settle(&mut self, api: &Api) -> Result<Vec<String>, String> {
        use base64::Engine as _;
        let declares = |f: fn(&SecurityScheme) -> bool| api.security_schemes.values().any(f);
        // A scheme places a credential only where `place_credentials` finds it named.
        let used = |f: fn(&SecurityScheme) -> bool| {
            api.operations.iter().any(|op| {
                placing_schemes(api, op)
                    .iter()
                    .any(|n| api.security_schemes.get(n).is_some_and(f))
            })
        };
        let unused = |kind: &str, declared: bool| {
            if declared {
                format!("no operation's security names the document's {kind} scheme")
            } else {
                format!("the document declares no {kind} scheme")
            }
        };
        let mut notes = Vec::new();
        if self.api_key.is_some() && !declares(|s| matches!(s, SecurityScheme::ApiKey { .. })) {
            return Err("--api-key: the document declares no apiKey security scheme, so probe cannot tell where the key goes".into());
        }
        let bearer = |s: &SecurityScheme| matches!(s, SecurityScheme::Bearer);
        if let Some(token) = &self.bearer {
            if !used(bearer) {
                self.undeclared_authorization = Some(format!("Bearer {token}"));
                let why = unused("bearer", declares(bearer));
                notes.push(format!(
                    "--bearer: {why}; the token is sent on every request"
                ));
            }
        }
        let basic = |s: &SecurityScheme| matches!(s, SecurityScheme::Basic);
        if let Some(userpass) = &self.basic {
            if !used(basic) && self.undeclared_authorization.is_none() {
                let encoded = base64::engine::general_purpose::STANDARD.encode(userpass);
                self.undeclared_authorization = Some(format!("Basic {encoded}"));
                let why = unused("basic", declares(basic));
                notes.push(format!(
                    "--basic: {why}; the credentials are sent on every request"
                ));
            }
        }
        Ok(notes)
    }
}

/// A request ready to send, and the copy of it that is stored: the stored copy is kept
/// whole, and what the wire copy has instead (credentials) beside it.
#[derive(Clone, Debug)]
pub struct WireRequest {
    pub method: String,
    /// The URL with credentials replaced by placeholders.
    pub stored_url: String,
    /// The headers with credentials replaced by placeholders.
    pub stored_headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The URL sent, where it differs from the stored one (a credential in the query).
    sent_url: Option<String>,
    /// The values sent for the stored headers that are placeholders: (index, value).
    secrets: Vec<(usize, String)>,
}

impl WireRequest {
    /// A request that carries no credential probe placed: what is sent is what is stored.
    pub fn plain(
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> WireRequest {
        WireRequest {
            method,
            stored_url: url,
            stored_headers: headers,
            body,
            sent_url: None,
            secrets: Vec::new(),
        }
    }

    /// The URL to send, credentials included.
    pub fn url(&self) -> &str {
        self.sent_url.as_deref().unwrap_or(&self.stored_url)
    }

    /// The headers to send, credentials included.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.stored_headers
            .iter()
            .enumerate()
            .map(|(at, (name, value))| {
                let sent = self
                    .secrets
                    .iter()
                    .find(|(secret_at, _)| *secret_at == at)
                    .map_or(value.as_str(), |(_, secret)| secret.as_str());
                (name.as_str(), sent)
            })
    }
}

/// The request as the store keeps it: placeholders where credentials went, never the
/// values sent.
impl From<WireRequest> for RequestRecord {
    fn from(wire: WireRequest) -> RequestRecord {
        RequestRecord {
            method: wire.method,
            url: wire.stored_url,
            headers: wire.stored_headers,
            body: wire.body.map(BodyBytes::Inline),
        }
    }
}

/// Builds the request for `case` against `base` (which wins over the document's servers),
/// with the credentials `creds` or, for a case that asks whether its operation enforces
/// its security (`TestCase::credentials`), none or unknown ones.
pub fn build(
    case: &TestCase,
    operation: &Operation,
    api: &Api,
    base: &str,
    creds: &Credentials,
) -> WireRequest {
    let probed;
    let creds = match case.credentials {
        None => creds,
        Some(probe) => {
            probed = match crate::jwt::Forgery::of(probe) {
                Some(how) => creds.forged(how, &crate::jwt::candidate_keys(&api.title)),
                None => creds.probed(probe),
            };
            &probed
        }
    };
    let path = filled_path(case, operation);
    let Parameters {
        mut query,
        mut headers,
        mut cookies,
    } = parameters(case, operation);
    if let Some(accept) = accept(operation, creds) {
        headers.push(("accept".into(), accept));
    }
    let body = case.body.as_ref().map(|b| {
        let (content_type, bytes) = body_bytes(b);
        headers.push(("content-type".into(), content_type));
        bytes
    });

    // Credentials: real values on the wire, placeholders in the stored copy.
    let placed = place_credentials(operation, api, creds);
    placed.leave_out_taken(&mut query, &mut headers, &mut cookies);
    let Placed {
        secret_headers,
        secret_query,
        secret_cookie,
        plain_extra,
    } = placed;
    let secret_cookie_header = match &secret_cookie {
        Some((_, key)) => Some((
            cookie_header(&cookies, &secret_cookie, SECRET_PLACEHOLDER),
            cookie_header(&cookies, &secret_cookie, key),
        )),
        None => {
            if !cookies.is_empty() {
                headers.push(("cookie".into(), cookie_header(&cookies, &None, "")));
            }
            None
        }
    };

    let base = base.trim_end_matches('/');
    let stored_url = url_with(base, &path, &query, &secret_query, &|url, _| {
        let _ = write!(url, "{}", enc_display(SECRET_PLACEHOLDER));
    });
    // Without a credential in the query, the URL sent is the URL stored.
    let sent_url = (!secret_query.is_empty()).then(|| {
        url_with(base, &path, &query, &secret_query, &|url, value| {
            let _ = write!(url, "{}", enc_display(value));
        })
    });

    headers.extend(plain_extra);
    let secrets = with_secrets(&mut headers, secret_cookie_header, secret_headers);
    let mut wire = WireRequest {
        method: case.method.clone(),
        stored_url,
        stored_headers: headers,
        body,
        sent_url,
        secrets,
    };
    // A forged token too: the API did not issue it, and the `token_forgery` oracle reads
    // from the stored copy how it was forged (and which weak key signed it).
    if case.credentials == Some(crate::model::CredentialProbe::Unknown)
        || case.credentials.and_then(crate::jwt::Forgery::of).is_some()
    {
        stored_as_sent(&mut wire);
    }
    wire
}

/// The case's path, its `{name}`s replaced by the values of its path parameters, each in
/// its style.
fn filled_path(case: &TestCase, operation: &Operation) -> String {
    let mut path = String::new();
    let mut rest = case.path.as_str();
    while let Some(open) = rest.find('{') {
        path.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            path.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = &rest[open + 1..open + close];
        let value = case
            .parameters
            .iter()
            .find(|p| p.location == Location::Path && p.name == name);
        match value {
            Some(p) => path.push_str(&path_value(p, style_of(operation, p))),
            // A path parameter the case does not carry keeps its template text, encoded.
            None => path.push_str(
                &utf8_percent_encode(&rest[open..open + close + 1], COMPONENT).to_string(),
            ),
        }
        rest = &rest[open + close + 1..];
    }
    path.push_str(rest);
    path
}

/// The case's query, header and cookie parameters, each in its style.
struct Parameters {
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    cookies: Vec<(String, String)>,
}

fn parameters(case: &TestCase, operation: &Operation) -> Parameters {
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<(String, String)> = Vec::new();
    for p in &case.parameters {
        let (style, explode) = style_of(operation, p);
        match p.location {
            Location::Path => {}
            Location::Query => query.extend(query_pairs(&p.name, &p.value, style, explode)),
            Location::Header => headers.push((
                p.name.to_ascii_lowercase(),
                header_safe(&simple(&p.value, explode)),
            )),
            Location::Cookie => cookies.push((p.name.clone(), simple(&p.value, explode))),
        }
    }
    Parameters {
        query,
        headers,
        cookies,
    }
}

/// The `Accept` header: what the document says a success answers with, as a real client
/// would ask (some servers refuse, 406, a request that accepts nothing in particular);
/// none when the document says nothing or the invocation sets its own.
fn accept(operation: &Operation, creds: &Credentials) -> Option<String> {
    let mut accept: Vec<&str> = Vec::new();
    for r in &operation.responses {
        let success = matches!(
            r.status,
            StatusPattern::Exact(200..=299) | StatusPattern::Range(2)
        );
        for m in r.content.iter().filter(|_| success) {
            if !accept.contains(&m.media_type.as_str()) {
                accept.push(&m.media_type);
            }
        }
    }
    let user_accept = creds
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("accept"));
    (!accept.is_empty() && !user_accept).then(|| header_safe(&accept.join(", ")))
}

/// The body's `Content-Type` and bytes: the text it is sent as, or its value encoded.
fn body_bytes(b: &crate::model::CaseBody) -> (String, Vec<u8>) {
    let bytes = match &b.sent_as {
        Some(text) => text.clone().into_bytes(),
        None => encode_body(&b.media_type, &b.value),
    };
    let content_type = if b.media_type.starts_with("multipart/form-data") {
        format!("multipart/form-data; boundary={MULTIPART_BOUNDARY}")
    } else {
        b.media_type.clone()
    };
    (content_type, bytes)
}

/// The cookie header, with `key` as the value of the credential cookie if there is one. A
/// key in a cookie makes the whole header a credential, stored with the placeholder where
/// the key was.
fn cookie_header(
    cookies: &[(String, String)],
    secret_cookie: &Option<(String, String)>,
    key: &str,
) -> String {
    let mut all = cookies.to_vec();
    if let Some((name, _)) = secret_cookie {
        all.push((name.clone(), key.to_owned()));
    }
    let text = all
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ");
    header_safe(&text)
}

/// The credentials' headers (the cookie header first) added last to the stored headers,
/// with placeholders; where each credential's real value goes among them.
fn with_secrets(
    stored_headers: &mut Vec<(String, String)>,
    secret_cookie_header: Option<(String, String)>,
    secret_headers: Vec<(String, String)>,
) -> Vec<(usize, String)> {
    let mut secrets = Vec::with_capacity(secret_headers.len() + 1);
    if let Some((stored, sent)) = secret_cookie_header {
        secrets.push((stored_headers.len(), sent));
        stored_headers.push(("cookie".into(), stored));
    }
    for (name, value) in secret_headers {
        secrets.push((stored_headers.len(), value));
        stored_headers.push((name, SECRET_PLACEHOLDER.to_owned()));
    }
    secrets
}

/// The URL: base, path, the query, credentials last; `secret` writes a credential's value.
fn url_with(
    base: &str,
    path: &str,
    query: &[(String, String)],
    secret_query: &[(String, String)],
    secret: &dyn Fn(&mut String, &str),
) -> String {
    let mut url = String::with_capacity(base.len() + path.len() + 64);
    url.push_str(base);
    url.push_str(path);
    let mut separator = '?';
    for (k, v) in query {
        let _ = write!(url, "{separator}{}={}", enc_display(k), enc_display(v));
        separator = '&';
    }
    for (k, v) in secret_query {
        let _ = write!(url, "{separator}{}=", enc_display(k));
        secret(&mut url, v);
        separator = '&';
    }
    url
}

/// Credentials no API issued are no secret: stored as sent, so the record and its curl
/// line show what the API accepted.
fn stored_as_sent(wire: &mut WireRequest) {
    for (i, value) in std::mem::take(&mut wire.secrets) {
        if let Some(header) = wire.stored_headers.get_mut(i) {
            header.1 = value;
        }
    }
    if let Some(url) = wire.sent_url.take() {
        wire.stored_url = url;
    }
}

/// Where the credentials of one request go: headers (lower-case names), query pairs, one
/// cookie, with their real values; and the `--header`s that carry no credential.
struct Placed {
    secret_headers: Vec<(String, String)>,
    secret_query: Vec<(String, String)>,
    secret_cookie: Option<(String, String)>,
    plain_extra: Vec<(String, String)>,
}

impl Placed {
    /// A value the case has under a name a credential (or a `--header`) takes does not go
    /// out: the invocation's value wins, and an API never sees two values under one name.
    fn leave_out_taken(
        &self,
        query: &mut Vec<(String, String)>,
        headers: &mut Vec<(String, String)>,
        cookies: &mut Vec<(String, String)>,
    ) {
        headers.retain(|(k, _)| {
            !self
                .secret_headers
                .iter()
                .chain(&self.plain_extra)
                .any(|(taken, _)| taken == k)
        });
        query.retain(|(k, _)| !self.secret_query.iter().any(|(taken, _)| taken == k));
        cookies.retain(|(k, _)| {
            self.secret_cookie
                .as_ref()
                .is_none_or(|(taken, _)| taken != k)
        });
    }
}

/// The names of the schemes whose credentials a request of `operation` carries: its own
/// requirements, else the document's. An operation that says `security: []` while the
/// document requires a scheme still gets the document's credentials: public operations
/// ignore them, and documents that mark protected operations public by mistake are common.
fn placing_schemes<'a>(api: &'a Api, operation: &'a Operation) -> &'a [String] {
    if operation.security.is_empty() {
        &api.default_security
    } else {
        &operation.security
    }
}

/// Places `creds` in a request of `operation`: the first of its security schemes (else the
/// document's) that they fill, then an `Authorization` no declared scheme gives, then the
/// `--header`s.
fn place_credentials(operation: &Operation, api: &Api, creds: &Credentials) -> Placed {
    let mut secret_headers: Vec<(String, String)> = Vec::new();
    let mut secret_query: Vec<(String, String)> = Vec::new();
    let mut secret_cookie: Option<(String, String)> = None;
    for name in placing_schemes(api, operation) {
        match api.security_schemes.get(name) {
            Some(SecurityScheme::Bearer) => {
                if let Some(token) = &creds.bearer {
                    secret_headers.push(("authorization".into(), format!("Bearer {token}")));
                }
            }
            Some(SecurityScheme::Basic) => {
                if let Some(userpass) = &creds.basic {
                    use base64::Engine as _;
                    let encoded = base64::engine::general_purpose::STANDARD.encode(userpass);
                    secret_headers.push(("authorization".into(), format!("Basic {encoded}")));
                }
            }
            Some(SecurityScheme::ApiKey { location, name }) => {
                if let Some(key) = &creds.api_key {
                    match location {
                        Location::Header => {
                            secret_headers.push((name.to_ascii_lowercase(), key.clone()))
                        }
                        Location::Query => secret_query.push((name.clone(), key.clone())),
                        Location::Cookie => secret_cookie = Some((name.clone(), key.clone())),
                        Location::Path => {}
                    }
                }
            }
            None => {}
        }
        if !secret_headers.is_empty() || !secret_query.is_empty() || secret_cookie.is_some() {
            break;
        }
    }
    if let Some(value) = &creds.undeclared_authorization {
        let given = |k: &str| k.eq_ignore_ascii_case("authorization");
        if !secret_headers.iter().any(|(k, _)| given(k))
            && !creds.headers.iter().any(|(k, _)| given(k))
        {
            secret_headers.push(("authorization".into(), value.clone()));
        }
    }
    let mut plain_extra: Vec<(String, String)> = Vec::new();
    for (k, v) in &creds.headers {
        let name = k.to_ascii_lowercase();
        if carries_no_credential(&name) {
            plain_extra.push((name, v.clone()));
        } else {
            secret_headers.push((name, v.clone()));
        }
    }
    Placed {
        secret_headers,
        secret_query,
        secret_cookie,
        plain_extra,
    }
}

/// The declared parameters of `operation` whose place (a header name, whatever its case;
/// a query or cookie name) the credentials `creds` or a `--header` take in its requests.
/// Such a parameter is never sent ([`build`]); a run generates no value for it, so that
/// its test cases hold what went out and no oracle judges a value the API never saw.
pub fn taken_by_credentials(
    operation: &Operation,
    api: &Api,
    creds: &Credentials,
) -> Vec<(Location, String)> {
    let placed = place_credentials(operation, api, creds);
    operation
        .parameters
        .iter()
        .filter(|p| match p.location {
            Location::Header => placed
                .secret_headers
                .iter()
                .chain(&placed.plain_extra)
                .any(|(k, _)| k.eq_ignore_ascii_case(&p.name)),
            Location::Query => placed.secret_query.iter().any(|(k, _)| *k == p.name),
            Location::Cookie => placed
                .secret_cookie
                .as_ref()
                .is_some_and(|(k, _)| *k == p.name),
            Location::Path => false,
        })
        .map(|p| (p.location, p.name.clone()))
        .collect()
}

/// Standard headers whose `--header` values are not credentials: kept and shown as they
/// are, and not searched for in replies (`--header 'Accept: application/json'` must not
/// turn every JSON reply's `Content-Type` into a placeholder). Every other `--header` value
/// is treated as a credential.
pub fn carries_no_credential(lower_case_name: &str) -> bool {
    matches!(
        lower_case_name,
        "accept"
            | "accept-charset"
            | "accept-encoding"
            | "accept-language"
            | "content-type"
            | "content-language"
            | "user-agent"
            | "cache-control"
            | "pragma"
            | "prefer"
            | "origin"
            | "referer"
            | "dnt"
            | "x-requested-with"
            | "x-request-id"
            | "x-correlation-id"
            | "if-match"
            | "if-none-match"
            | "if-modified-since"
            | "if-unmodified-since"
            | "x-forwarded-for"
            | "x-forwarded-host"
            | "x-forwarded-proto"
    )
}

/// The fixed multipart boundary: fixed so that the same case gives the same bytes.
pub const MULTIPART_BOUNDARY: &str = "probe-7d1e2f3a9b";

fn enc(text: &str) -> String {
    enc_display(text).to_string()
}

/// `text` percent-encoded as a path segment or query component, written where it goes.
fn enc_display(text: &str) -> percent_encoding::PercentEncode<'_> {
    utf8_percent_encode(text, COMPONENT)
}

fn style_of(operation: &Operation, p: &ParameterValue) -> (ParameterStyle, bool) {
    operation
        .parameters
        .iter()
        .find(|d| d.location == p.location && d.name == p.name)
        .map(|d| (d.style, d.explode))
        .unwrap_or(match p.location {
            Location::Query | Location::Cookie => (ParameterStyle::Form, true),
            _ => (ParameterStyle::Simple, false),
        })
}

/// A scalar as text: strings as they are, everything else as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The `simple` style: `a,b,c` for arrays, `k,v,k,v` (or `k=v,k=v` exploded) for objects.
fn simple(v: &Value, explode: bool) -> String {
    match v {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{k}={}", scalar(v))
                } else {
                    format!("{k},{}", scalar(v))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

fn path_value(p: &ParameterValue, (style, explode): (ParameterStyle, bool)) -> String {
    let encode_items = |v: &Value| -> String {
        match v {
            Value::Array(items) => items
                .iter()
                .map(|i| enc(&scalar(i)))
                .collect::<Vec<_>>()
                .join(","),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    if explode {
                        format!("{}={}", enc(k), enc(&scalar(v)))
                    } else {
                        format!("{},{}", enc(k), enc(&scalar(v)))
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
            other => enc(&scalar(other)),
        }
    };
    match style {
        ParameterStyle::Label => format!(".{}", encode_items(&p.value)),
        ParameterStyle::Matrix => format!(";{}={}", enc(&p.name), encode_items(&p.value)),
        _ => encode_items(&p.value),
    }
}

fn query_pairs(
    name: &str,
    v: &Value,
    style: ParameterStyle,
    explode: bool,
) -> Vec<(String, String)> {
    match (v, style) {
        (Value::Object(map), ParameterStyle::DeepObject) => map
            .iter()
            .map(|(k, v)| (format!("{name}[{k}]"), scalar(v)))
            .collect(),
        (Value::Object(map), _) if explode => {
            map.iter().map(|(k, v)| (k.clone(), scalar(v))).collect()
        }
        (Value::Array(items), ParameterStyle::SpaceDelimited) => {
            vec![(
                name.to_owned(),
                items.iter().map(scalar).collect::<Vec<_>>().join(" "),
            )]
        }
        (Value::Array(items), ParameterStyle::PipeDelimited) => {
            vec![(
                name.to_owned(),
                items.iter().map(scalar).collect::<Vec<_>>().join("|"),
            )]
        }
        (Value::Array(items), _) if explode => {
            items.iter().map(|i| (name.to_owned(), scalar(i))).collect()
        }
        (other, _) => vec![(name.to_owned(), simple(other, false))],
    }
}

/// A header value HTTP can carry: visible ASCII and spaces kept, anything else
/// percent-encoded (a generated string may hold any character).
fn header_safe(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return text.trim().to_owned();
    }
    let mut out = String::new();
    for b in text.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.trim().to_owned()
}

/// The body bytes for a value sent under `media_type`.
pub fn encode_body(media_type: &str, value: &Value) -> Vec<u8> {
    let m = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if is_json(&m) {
        return serde_json::to_vec(value).unwrap_or_default();
    }
    if m == "application/x-www-form-urlencoded" {
        let pairs = form_pairs(value);
        return pairs
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes();
    }
    if m == "multipart/form-data" {
        let mut out = String::new();
        for (k, v) in form_pairs(value) {
            out.push_str(&format!(
                "--{MULTIPART_BOUNDARY}\r\ncontent-disposition: form-data; name=\"{}\"\r\n\r\n{v}\r\n",
                k.replace('"', "%22")
            ));
        }
        out.push_str(&format!("--{MULTIPART_BOUNDARY}--\r\n"));
        return out.into_bytes();
    }
    match value {
        Value::String(s) => s.clone().into_bytes(),
        other => serde_json::to_vec(other).unwrap_or_default(),
    }
}

/// Top-level properties of an object as form fields; arrays repeat the name, nested
/// objects are sent as JSON text.
fn form_pairs(value: &Value) -> Vec<(String, String)> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Array(items) => items
                    .iter()
                    .map(|i| (k.clone(), scalar(i)))
                    .collect::<Vec<_>>(),
                other => vec![(k.clone(), scalar(other))],
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![("value".into(), scalar(other))],
    }
}

/// A `curl` command line that re-sends the stored request. Credentials are read from
/// shell variables named after the place they fill ([`secret_variable`]): the stored
/// request holds placeholders, and a reproducer must hold no secret either.
pub fn curl_line(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> String {
    let mut line = format!("curl -X {method} {}", shell_word(&url_parts(url)));
    for (k, v) in headers {
        if computed_header(k) {
            continue;
        }
        line.push_str(" -H ");
        line.push_str(&shell_word(&prefixed(
            &format!("{k}: "),
            header_parts(k, v),
        )));
    }
    if let Some(b) = body {
        match std::str::from_utf8(b) {
            Ok(text) => line.push_str(&format!(
                " --data-raw {}",
                shell_word(&[Part::Text(text.to_owned())])
            )),
            // Bytes a shell word cannot carry: decoded from base64 and piped in, so the
            // line still runs as printed.
            Err(_) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(b);
                line = format!("printf %s '{encoded}' | base64 -d | {line} --data-binary @-");
            }
        }
    }
    line
}

/// The shell variable a curl line reads a credential from: `PROBE_SECRET_` and the name of
/// the header, query parameter or cookie it fills, upper case, other characters as `_`
/// (`authorization` → `PROBE_SECRET_AUTHORIZATION`).
pub fn secret_variable(place: &str) -> String {
    let mut name = String::from("PROBE_SECRET_");
    name.extend(place.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Part of a stored request's URL or header value, for reproducers in other languages than
/// the shell: literal text, or a credential read from the named variable
/// ([`secret_variable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Secret(String),
}

/// The URL in parts, each query parameter holding the placeholder a [`Part::Secret`] (the
/// same places [`curl_line`] reads from variables).
pub fn url_parts(url: &str) -> Vec<Part> {
    let placeholder = enc(SECRET_PLACEHOLDER);
    let Some((head, query)) = url.split_once('?') else {
        return vec![Part::Text(url.to_owned())];
    };
    let mut parts = vec![Part::Text(format!("{head}?"))];
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            push_text(&mut parts, "&");
        }
        match pair.split_once('=') {
            Some((k, v)) if v == placeholder => {
                push_text(&mut parts, &format!("{k}="));
                let name = percent_encoding::percent_decode_str(k).decode_utf8_lossy();
                parts.push(Part::Secret(secret_variable(&name)));
            }
            _ => push_text(&mut parts, pair),
        }
    }
    parts
}

/// A stored header value in parts: the placeholder, or a cookie holding it, read from a
/// variable.
pub fn header_parts(name: &str, value: &str) -> Vec<Part> {
    if value == SECRET_PLACEHOLDER {
        return vec![Part::Secret(secret_variable(name))];
    }
    if !(name.eq_ignore_ascii_case("cookie") && value.contains(SECRET_PLACEHOLDER)) {
        return vec![Part::Text(value.to_owned())];
    }
    let mut parts = Vec::new();
    for (i, pair) in value.split("; ").enumerate() {
        if i > 0 {
            push_text(&mut parts, "; ");
        }
        match pair.split_once('=') {
            Some((k, v)) if v == SECRET_PLACEHOLDER => {
                push_text(&mut parts, &format!("{k}="));
                parts.push(Part::Secret(secret_variable(k)));
            }
            _ => push_text(&mut parts, pair),
        }
    }
    parts
}

fn push_text(parts: &mut Vec<Part>, text: &str) {
    match parts.last_mut() {
        Some(Part::Text(t)) => t.push_str(text),
        _ => parts.push(Part::Text(text.to_owned())),
    }
}

/// Whether a reproducer leaves a stored header out: the client computes these.
pub fn computed_header(lower_case_name: &str) -> bool {
    lower_case_name == "content-length" || lower_case_name == "host"
}

/// One shell word of parts: text single-quoted, variables double-quoted, side by side
/// (`'authorization: '"$PROBE_SECRET_AUTHORIZATION"`); `''` when there is nothing.
pub fn shell_word(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text(t) if t.is_empty() => {}
            Part::Text(t) => {
                out.push('\'');
                out.push_str(&t.replace('\'', "'\\''"));
                out.push('\'');
            }
            Part::Secret(v) => {
                out.push_str("\"$");
                out.push_str(v);
                out.push('"');
            }
        }
    }
    if out.is_empty() {
        out.push_str("''");
    }
    out
}

/// `prefix` followed by `parts`, adjacent texts joined (`'name: value'` is one quoted
/// text, not two).
pub fn prefixed(prefix: &str, parts: Vec<Part>) -> Vec<Part> {
    let mut out = vec![Part::Text(prefix.to_owned())];
    for part in parts {
        match part {
            Part::Text(t) => push_text(&mut out, &t),
            secret => out.push(secret),
        }
    }
    out
}

/// `case` sent to the path a `Location` names, when it names one inside the API.
pub fn located(
    mut case: TestCase,
    location: &str,
    base_url: &str,
    base_path: &str,
) -> Option<TestCase> {
    case.path = location_path(location, base_url, base_path)?;
    Some(case)
}

/// The path of a `Location` inside the API (without its base path), or `None` when it
/// points elsewhere.
pub fn location_path(location: &str, base_url: &str, base_path: &str) -> Option<String> {
    let location = location.split(['?', '#']).next().unwrap_or("");
    let base = base_url.trim_end_matches('/');
    let (base_origin, base_prefix) = match base.find("://") {
        Some(scheme) => match base[scheme + 3..].find('/') {
            Some(slash) => base.split_at(scheme + 3 + slash),
            None => (base, ""),
        },
        None => return None,
    };
    let path = if location.contains("://") {
        location
            .strip_prefix(base_origin)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))?
    } else if location.starts_with('/') {
        location
    } else {
        return None;
    };
    let path = path
        .strip_prefix(base_prefix)
        .filter(|_| !base_prefix.is_empty())
        .unwrap_or(path);
    let base_path = base_path.trim_end_matches('/');
    let path = match (base_path.is_empty(), path.strip_prefix(base_path)) {
        (false, Some(rest)) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    Some(path.to_owned())
}

#[cfg(test)]
mod tests {

    /// A basic scheme declared in `components` that no requirement names (Airflow's
    /// document: `security: []`) places nothing, so `--basic` goes on every request, and
    /// the note says why; a scheme an operation names places it there alone.
    #[test]
    fn a_declared_scheme_no_operation_names_sends_the_credential_on_every_request() {
        let doc = |security: &str| {
            format!(
                "openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\n{security}\npaths:\n  /a:\n    get:\n      responses: {{'200': {{description: ok}}}}\ncomponents:\n  securitySchemes:\n    Basic: {{type: http, scheme: basic}}\n"
            )
        };
        let unused = crate::spec::parse(doc("security: []").as_bytes(), "t.yaml", None).unwrap();
        let mut creds = Credentials {
            basic: Some("admin:pw".into()),
            ..Credentials::default()
        };
        let notes = creds.settle(&unused).unwrap();
        assert_eq!(
            creds.undeclared_authorization.as_deref(),
            Some("Basic YWRtaW46cHc=")
        );
        assert!(
            notes[0].contains("no operation's security names the document's basic scheme"),
            "{notes:?}"
        );
        let used =
            crate::spec::parse(doc("security: [{Basic: []}]").as_bytes(), "t.yaml", None).unwrap();
        let mut creds = Credentials {
            basic: Some("admin:pw".into()),
            ..Credentials::default()
        };
        assert!(creds.settle(&used).unwrap().is_empty());
        assert_eq!(creds.undeclared_authorization, None);
    }
    use crate::redact::Redactor;

    #[test]
    fn an_unknown_credential_keeps_the_shape_of_the_one_it_stands_for() {
        use base64::Engine as _;
        let basic = super::unknown_like("Basic YWxpY2U6c2VjcmV0");
        let (scheme, encoded) = basic.split_once(' ').unwrap();
        assert_eq!(scheme, "Basic");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(decoded, b"probe-unknown:probe-unknown-password");
        assert_eq!(
            super::unknown_like("Bearer abc"),
            format!("Bearer {}", super::UNKNOWN_TOKEN)
        );
        assert_eq!(super::unknown_like("k3y"), super::UNKNOWN_TOKEN);
    }
    use super::*;
    use serde_json::json;

    /// Credentials go on the wire and never into the stored copy, in the query and in the
    /// headers alike; the rest of the request is the same in both.
    #[test]
    fn credentials_are_sent_and_stored_as_placeholders() {
        let document = br#"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  securitySchemes:
    key: {type: apiKey, in: query, name: api key}
    bearer: {type: http, scheme: bearer}
paths:
  /items/{id}:
    get:
      operationId: getItem
      security: [{key: []}, {bearer: []}]
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
"#;
        let api = crate::spec::parse(document, "t.yaml", None).unwrap();
        let op = &api.operations[0];
        let value = |location, name: &str, v: &str| ParameterValue {
            location,
            name: name.into(),
            value: Value::String(v.into()),
        };
        let case = TestCase {
            operation: "getItem".into(),
            method: "GET".into(),
            path: "/items/{id}".into(),
            parameters: vec![
                value(Location::Path, "id", "a/b"),
                value(Location::Query, "q", "x y"),
            ],
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: String::new(),
            origins: Default::default(),
            intent: Default::default(),
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let creds = Credentials {
            bearer: Some("t0ken".into()),
            api_key: Some("s3cret&".into()),
            headers: vec![
                ("X-Trace".into(), "on".into()),
                ("Accept-Language".into(), "de".into()),
            ],
            ..Credentials::default()
        };
        // A standard header carries no credential: kept as it is, and not searched for.
        let secrets = creds.secret_values();
        let redactor = Redactor::new(secrets.iter().map(String::as_str));
        assert!(redactor.text("t0ken").is_some());
        assert!(redactor.text("application/json de").is_none());
        let wire = build(&case, op, &api, "http://127.0.0.1:9/base/", &creds);
        assert_eq!(
            wire.url(),
            "http://127.0.0.1:9/base/items/a%2Fb?q=x%20y&api%20key=s3cret%26"
        );
        assert_eq!(
            wire.stored_url,
            "http://127.0.0.1:9/base/items/a%2Fb?q=x%20y&api%20key=%3Cprobe%3Asecret%3E"
        );
        let sent: Vec<(&str, &str)> = wire.headers().collect();
        assert_eq!(
            sent,
            vec![
                ("accept", "application/json"),
                ("accept-language", "de"),
                ("x-trace", "on")
            ]
        );
        assert_eq!(
            wire.stored_headers,
            vec![
                ("accept".to_owned(), "application/json".to_owned()),
                ("accept-language".to_owned(), "de".to_owned()),
                ("x-trace".to_owned(), SECRET_PLACEHOLDER.to_owned())
            ]
        );
        // Without a credential in the query, the URL sent is the one stored.
        let bearer_only = Credentials {
            bearer: Some("t0ken".into()),
            ..Credentials::default()
        };
        let mut op = op.clone();
        op.security = vec!["bearer".into()];
        let wire = build(&case, &op, &api, "http://127.0.0.1:9", &bearer_only);
        assert_eq!(wire.url(), wire.stored_url);
        assert_eq!(
            wire.headers().last(),
            Some(("authorization", "Bearer t0ken"))
        );
        assert_eq!(
            wire.stored_headers.last(),
            Some(&("authorization".to_owned(), SECRET_PLACEHOLDER.to_owned()))
        );
    }

    /// A parameter the document declares under the name a credential takes (a header in
    /// any case, a query or cookie name) never goes out beside it: the credential wins, and
    /// `taken_by_credentials` names the parameter for the run to leave out.
    #[test]
    fn a_declared_parameter_where_a_credential_goes_is_left_out() {
        let document = br#"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  securitySchemes:
    header: {type: apiKey, in: header, name: X-Key}
    query: {type: apiKey, in: query, name: key}
    cookie: {type: apiKey, in: cookie, name: session}
paths:
  /h:
    get:
      security: [{header: []}]
      parameters: [{name: x-KEY, in: header, schema: {type: string}}, {name: n, in: header, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /q:
    get:
      security: [{query: []}]
      parameters: [{name: key, in: query, schema: {type: string}}, {name: n, in: query, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /c:
    get:
      security: [{cookie: []}]
      parameters: [{name: session, in: cookie, schema: {type: string}}, {name: n, in: cookie, schema: {type: string}}]
      responses: {"200": {description: ok}}
"#;
        let api = crate::spec::parse(document, "t.yaml", None).unwrap();
        let creds = Credentials {
            api_key: Some("k".into()),
            ..Credentials::default()
        };
        for (path, location, name) in [
            ("/h", Location::Header, "x-KEY"),
            ("/q", Location::Query, "key"),
            ("/c", Location::Cookie, "session"),
        ] {
            let op = api.operations.iter().find(|o| o.key.path == path).unwrap();
            assert_eq!(
                taken_by_credentials(op, &api, &creds),
                vec![(location, name.to_owned())]
            );
            let case = TestCase {
                operation: op.key.name(),
                method: "GET".into(),
                path: path.into(),
                parameters: vec![
                    ParameterValue {
                        location,
                        name: name.into(),
                        value: json!("generated"),
                    },
                    ParameterValue {
                        location,
                        name: "n".into(),
                        value: json!("1"),
                    },
                ],
                body: None,
                strategy: crate::model::Strategy::Nominal,
                mode: String::new(),
                origins: Default::default(),
                intent: Default::default(),
                mutation: None,
                series_step: None,
                credentials: None,
                shrinking: None,
                identity: None,
            };
            let wire = build(&case, op, &api, "http://127.0.0.1:9", &creds);
            let sent = format!("{} {:?}", wire.url(), wire.headers().collect::<Vec<_>>());
            assert!(!sent.contains("generated"), "{path}: {sent}");
            assert!(
                sent.contains("\"k\"") || sent.contains("=k"),
                "{path}: {sent}"
            );
            assert!(sent.contains('1'), "{path}: {sent}");
        }
        // Without the credential, the parameter goes out as generated.
        let op = api.operations.iter().find(|o| o.key.path == "/h").unwrap();
        assert!(taken_by_credentials(op, &api, &Credentials::default()).is_empty());
    }

    #[test]
    fn query_styles() {
        let v = json!(["a", "b"]);
        assert_eq!(
            query_pairs("t", &v, ParameterStyle::Form, true),
            vec![("t".into(), "a".into()), ("t".into(), "b".into())]
        );
        assert_eq!(
            query_pairs("t", &v, ParameterStyle::Form, false),
            vec![("t".into(), "a,b".into())]
        );
        assert_eq!(
            query_pairs("t", &v, ParameterStyle::PipeDelimited, false),
            vec![("t".into(), "a|b".into())]
        );
        let o = json!({"x": 1});
        assert_eq!(
            query_pairs("f", &o, ParameterStyle::DeepObject, true),
            vec![("f[x]".into(), "1".into())]
        );
    }

    #[test]
    fn path_styles_encode_reserved_characters() {
        let p = ParameterValue {
            location: Location::Path,
            name: "id".into(),
            value: json!("a/b c"),
        };
        assert_eq!(path_value(&p, (ParameterStyle::Simple, false)), "a%2Fb%20c");
        assert_eq!(path_value(&p, (ParameterStyle::Label, false)), ".a%2Fb%20c");
        assert_eq!(
            path_value(&p, (ParameterStyle::Matrix, false)),
            ";id=a%2Fb%20c"
        );
    }

    #[test]
    fn header_values_are_made_sendable() {
        assert_eq!(header_safe("plain value"), "plain value");
        assert_eq!(header_safe("é\n"), "%C3%A9%0A");
    }

    #[test]
    fn form_and_multipart_bodies() {
        let v = json!({"a": "x y", "b": [1, 2]});
        assert_eq!(
            encode_body("application/x-www-form-urlencoded", &v),
            b"a=x%20y&b=1&b=2"
        );
        let m = String::from_utf8(encode_body("multipart/form-data", &v)).unwrap();
        assert!(m.contains("name=\"a\"\r\n\r\nx y\r\n"), "{m}");
        assert!(m.ends_with(&format!("--{MULTIPART_BOUNDARY}--\r\n")));
    }

    /// A reproducer holds no secret: each placeholder becomes a shell variable named after
    /// the place it fills, and the line still runs as one command.
    #[test]
    fn curl_reads_credentials_from_variables() {
        let line = curl_line(
            "GET",
            "http://h/x?a=1&api%20key=%3Cprobe%3Asecret%3E&b=2",
            &[
                ("authorization".into(), SECRET_PLACEHOLDER.into()),
                (
                    "cookie".into(),
                    format!("lang=en; session={SECRET_PLACEHOLDER}"),
                ),
            ],
            None,
        );
        assert_eq!(
            line,
            r#"curl -X GET 'http://h/x?a=1&api%20key='"$PROBE_SECRET_API_KEY"'&b=2' -H 'authorization: '"$PROBE_SECRET_AUTHORIZATION" -H 'cookie: lang=en; session='"$PROBE_SECRET_SESSION""#
        );
        assert!(!line.contains(SECRET_PLACEHOLDER));
    }

    #[test]
    fn curl_quotes_single_quotes() {
        let line = curl_line(
            "POST",
            "http://h/x",
            &[("content-type".into(), "application/json".into())],
            Some(b"{\"a\":\"it's\"}"),
        );
        assert_eq!(
            line,
            r#"curl -X POST 'http://h/x' -H 'content-type: application/json' --data-raw '{"a":"it'\''s"}'"#
        );
    }

    /// A body that is not text runs as printed: its bytes come back from base64 on stdin.
    #[test]
    fn curl_pipes_a_binary_body_in() {
        let bytes: &[u8] = &[0, 159, 146, 150, b'\'', b'\n', 255];
        let line = curl_line("PUT", "http://h/b", &[], Some(bytes));
        let (feed, curl) = line.split_once(" | curl ").expect("a pipe into curl");
        assert!(curl.ends_with("--data-binary @-"), "{line}");
        if std::path::Path::new("/bin/sh").exists() {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(feed)
                .output()
                .expect("sh runs");
            assert_eq!(out.stdout, bytes, "{feed}");
        }
    }

    #[test]
    fn locations_are_followed_only_inside_the_api() {
        let base = "http://127.0.0.1:8080/v1";
        assert_eq!(
            location_path("http://127.0.0.1:8080/v1/pets/3", base, "/v1").as_deref(),
            Some("/pets/3")
        );
        assert_eq!(
            location_path("/v1/pets/3?x=1", base, "/v1").as_deref(),
            Some("/pets/3")
        );
        assert_eq!(
            location_path("/pets/3", "http://127.0.0.1:1", "").as_deref(),
            Some("/pets/3")
        );
        assert_eq!(location_path("http://127.0.0.2/pets/3", base, "/v1"), None);
        assert_eq!(
            location_path("http://127.0.0.1:80801/pets", base, "/v1"),
            None
        );
        assert_eq!(location_path("pets/3", base, "/v1"), None);
    }
}
