//! The credentials of an invocation against what a document declares and what a run
//! recorded:
//! - a document that declares an `Authorization` header parameter, run with `--bearer`:
//!   the API gets one `Authorization` header, the bearer, on every request, and no
//!   `valid_credentials_refused` (F205) comes of probe's own request. The fixture answers
//!   401 to a request with two `Authorization` headers, as a strict server does.
//! - `probe replay` of that run without `--bearer` stops (exit 2) naming the credential it
//!   lacks; with it, it replays; with `--without-credentials`, it replays and says the
//!   verdict was made without them.
//! - logins beyond the API's own origin and tokens (issue 50): an OAuth2 token endpoint on
//!   another port, named by its URL in probe.toml, for the client-credentials and the
//!   password grants; a cookie session (`apply = "cookie"`), renewed when the API answers
//!   401. No token, cookie, client secret or password is in anything probe writes.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use probe::fixture::RunningFixture;
use serde_json::Value;

use crate::util::{code, findings_of, probe, run, Campaign};

const TOKEN: &str = "notes-token-3b9e51";

/// Notes behind a token; reading one note declares its `Authorization` header as a
/// parameter, as Swagger 2.0 documents do (OpenAPI 3 says to ignore such a parameter, and
/// probe does; Swagger 2.0 has no bearer scheme to declare instead). `--bearer` for a
/// document without a bearer scheme goes on every request.
const DOCUMENT: &str = r#"
swagger: "2.0"
info: {title: notes, version: "1"}
produces: [application/json]
paths:
  /notes:
    get:
      operationId: listNotes
      parameters:
        - {name: limit, in: query, type: integer, minimum: 1, maximum: 100}
      responses:
        "200":
          description: the notes
          schema: {type: array, items: {type: object}}
        "401": {description: no credentials}
  /notes/{id}:
    get:
      operationId: getNote
      parameters:
        - {name: id, in: path, required: true, type: integer, minimum: 1, maximum: 5}
        - {name: Authorization, in: header, required: true, type: string}
      responses:
        "200":
          description: a note
          schema: {type: object}
        "401": {description: no credentials}
        "404": {description: no such note}
"#;

/// The number of `Authorization` headers of each request with any.
type Seen = Arc<Mutex<Vec<usize>>>;

/// 401 unless the request carries exactly one `Authorization`, the bearer; a list `limit`
/// over 90 is a server error (a finding to replay).
fn router(seen: Seen) -> Router {
    fn allowed(seen: &Seen, headers: &HeaderMap) -> bool {
        let all: Vec<_> = headers.get_all(header::AUTHORIZATION).iter().collect();
        if !all.is_empty() {
            seen.lock().unwrap().push(all.len());
        }
        all.len() == 1 && all[0].as_bytes() == format!("Bearer {TOKEN}").as_bytes()
    }
    Router::new()
        .route(
            "/notes",
            get(
                |State(seen): State<Seen>,
                 headers: HeaderMap,
                 Query(q): Query<std::collections::HashMap<String, String>>| async move {
                    if !allowed(&seen, &headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let limit = q.get("limit").and_then(|l| l.parse::<i64>().ok());
                    if limit.is_some_and(|l| l > 90) {
                        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
                    }
                    Json(serde_json::json!([{"id": 1}])).into_response()
                },
            ),
        )
        .route(
            "/notes/{id}",
            get(
                |State(seen): State<Seen>, headers: HeaderMap, UrlPath(id): UrlPath<i64>| async move {
                    if !allowed(&seen, &headers) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let found: Response = if id == 1 {
                        Json(serde_json::json!({"id": 1})).into_response()
                    } else {
                        StatusCode::NOT_FOUND.into_response()
                    };
                    found
                },
            ),
        )
        .with_state(seen)
}

/// A run of the notes API with `--bearer`: the fixture, the headers it saw, the report.
fn bearer_run(dir: &Path) -> (RunningFixture, Seen, Value) {
    let seen: Seen = Arc::default();
    let fixture = RunningFixture::start(router(seen.clone())).expect("fixture starts");
    let spec = dir.join("notes.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let (out, report) = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 5,
        workers: 1,
        requests: 200,
    }
    .run(dir, &["--bearer", TOKEN]);
    assert!(
        matches!(code(&out), 0 | 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (fixture, seen, report)
}

#[test]
fn a_declared_authorization_parameter_and_a_bearer_go_out_as_one_header() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, seen, report) = bearer_run(dir.path());
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.len() > 20,
        "requests with credentials reached the API: {seen:?}"
    );
    assert!(
        seen.iter().all(|&n| n == 1),
        "one Authorization header on every request: {seen:?}"
    );
    assert_eq!(
        findings_of(&report, "valid_credentials_refused"),
        Vec::<&Value>::new(),
        "no F205 from probe's own request"
    );
}

/// Notes behind a bearer, and an admin report behind an API key the run is not given.
const TWO_SCHEMES: &str = r#"
openapi: 3.0.3
info: {title: notes with an admin key, version: "1"}
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
    adminKey: {type: apiKey, in: header, name: X-Admin-Key}
security: [{token: []}]
paths:
  /notes:
    get:
      operationId: listNotes
      responses:
        "200": {description: the notes}
        "401": {description: no credentials}
  /admin/report:
    get:
      operationId: adminReport
      security: [{adminKey: []}]
      responses:
        "200": {description: the report}
        "401": {description: no key}
"#;

/// A run given `--bearer` only, of an API whose one operation takes another scheme: that
/// operation's requests carry no credential, so its 401 is right, and nothing says valid
/// credentials were refused (a 401 to a request without any tells nothing of them).
#[test]
fn a_401_to_a_request_that_carried_no_credential_is_not_valid_credentials_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = Router::new()
        .route(
            "/notes",
            get(|headers: HeaderMap| async move {
                let bearer = format!("Bearer {TOKEN}");
                match headers.get(header::AUTHORIZATION) {
                    Some(v) if v.as_bytes() == bearer.as_bytes() => {
                        Json(serde_json::json!([{"id": 1}])).into_response()
                    }
                    _ => StatusCode::UNAUTHORIZED.into_response(),
                }
            }),
        )
        .route(
            "/admin/report",
            get(|headers: HeaderMap| async move {
                match headers.get("x-admin-key") {
                    Some(_) => Json(serde_json::json!({"notes": 1})).into_response(),
                    None => StatusCode::UNAUTHORIZED.into_response(),
                }
            }),
        );
    let fixture = RunningFixture::start(app).expect("fixture starts");
    let spec = dir.path().join("notes.yaml");
    std::fs::write(&spec, TWO_SCHEMES).unwrap();
    let (out, report) = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed: 5,
        workers: 1,
        requests: 150,
    }
    .run(dir.path(), &["--bearer", TOKEN]);
    assert!(
        matches!(code(&out), 0 | 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let statuses = &report["operations"];
    assert!(
        statuses.to_string().contains("adminReport"),
        "the admin report was sent: {statuses}"
    );
    assert_eq!(
        findings_of(&report, "valid_credentials_refused"),
        Vec::<&Value>::new(),
        "no F205 for a request that carried no credential"
    );
}

/// `probe replay <target> --url <url>` with `extra`, without credentials from the
/// environment.
fn replay(dir: &Path, target: &str, url: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd = probe(dir);
    cmd.env_remove("PROBE_BEARER")
        .env_remove("PROBE_BASIC")
        .env_remove("PROBE_API_KEY")
        .args(["replay", target, "--url", url, "--store"])
        .arg(dir.join("store"))
        .args(extra);
    run(&mut cmd)
}

#[test]
fn replay_without_the_credentials_the_run_used_says_so_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (fixture, _, report) = bearer_run(dir.path());
    let url = fixture.base_url();
    let finding = findings_of(&report, "server_error")
        .first()
        .copied()
        .cloned()
        .expect("the run finds the server error");
    let target = finding["replay"]
        .as_str()
        .and_then(|r| r.split_whitespace().last())
        .expect("the finding names its replay target")
        .to_owned();

    // Without --bearer: exit 2, naming the credential (never its value), nothing sent.
    let out = replay(dir.path(), &target, &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("header authorization"), "{stderr}");
    assert!(stderr.contains("--without-credentials"), "{stderr}");

    // With it: replayed, reproduced.
    let out = replay(dir.path(), &target, &url, &["--bearer", TOKEN]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}");
    assert!(stdout.contains("verdict: reproduced"), "{stdout}");
    assert!(!stdout.contains("without the credentials"), "{stdout}");

    // Told to go on: replayed, and the verdict says it was made without them.
    let out = replay(dir.path(), &target, &url, &["--without-credentials"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}");
    assert!(stdout.contains("verdict: "), "{stdout}");
    assert!(
        stdout.contains(
            "the verdict was made without the credentials the run sent (header authorization)"
        ),
        "{stdout}"
    );
}

// ---- Logins: an OAuth2 token endpoint on another origin, a cookie session --------------

const CLIENT_SECRET: &str = "client-s3cret-77a1c0ffee";
const PASSWORD: &str = "alice-pa55word-0d9b3e";

/// The things behind a bearer token or a session cookie.
const THINGS: &str = r#"
openapi: 3.0.3
info: {title: things, version: "1"}
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 9}}
      responses:
        "200":
          description: the things
          content:
            application/json:
              schema: {type: array, items: {type: object}}
        "401": {description: who are you}
"#;

/// What the identity provider issued and the API accepted.
#[derive(Clone, Default)]
struct Issued {
    /// Tokens or session ids, in the order issued.
    values: Arc<Mutex<Vec<String>>>,
    /// The grants asked for (`client_credentials`, `password`, `session`).
    grants: Arc<Mutex<Vec<String>>>,
    /// Requests the API accepted, and refused.
    accepted: Arc<Mutex<u64>>,
    refused: Arc<Mutex<u64>>,
    /// A session serves this many requests, then is answered 401 (0: no end).
    session_uses: u64,
    uses: Arc<Mutex<std::collections::HashMap<String, u64>>>,
}

impl Issued {
    fn issue(&self, grant: &str) -> String {
        let mut values = self.values.lock().unwrap();
        let digest = probe::ids::Digest::of(format!("{grant}-{}", values.len()).as_bytes());
        let value = format!("{grant}-{}", &digest.to_string()[..20]);
        values.push(value.clone());
        self.grants.lock().unwrap().push(grant.to_owned());
        value
    }

    /// Whether `value` was issued and is still good; counts the use.
    fn accept(&self, value: Option<&str>) -> bool {
        let good = value.is_some_and(|v| {
            if !self.values.lock().unwrap().iter().any(|t| t == v) {
                return false;
            }
            let mut uses = self.uses.lock().unwrap();
            let n = uses.entry(v.to_owned()).or_default();
            *n += 1;
            self.session_uses == 0 || *n <= self.session_uses
        });
        *if good { &self.accepted } else { &self.refused }
            .lock()
            .unwrap() += 1;
        good
    }
}

/// An OAuth2 token endpoint (RFC 6749 §4.3, §4.4) at `/oauth/token`, form-encoded.
fn identity_provider(issued: Issued) -> Router {
    Router::new()
        .route(
            "/oauth/token",
            axum::routing::post(
                |State(issued): State<Issued>, body: axum::body::Bytes| async move {
                    let form: Vec<(String, String)> =
                        url::form_urlencoded::parse(&body).into_owned().collect();
                    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
                    let ok = match get("grant_type") {
                        Some("client_credentials") => {
                            get("client_id") == Some("probe") && get("client_secret") == Some(CLIENT_SECRET)
                        }
                        Some("password") => get("username") == Some("alice") && get("password") == Some(PASSWORD),
                        _ => false,
                    };
                    if !ok {
                        return (StatusCode::BAD_REQUEST, Json(serde_json::json!({"error": "invalid_grant"})))
                            .into_response();
                    }
                    let token = issued.issue(get("grant_type").unwrap_or_default());
                    Json(serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
                        .into_response()
                },
            ),
        )
        .with_state(issued)
}

/// The things API: a bearer token of the provider, or a session cookie from `POST /session`.
fn things(issued: Issued) -> Router {
    Router::new()
        .route(
            "/things",
            get(
                |State(issued): State<Issued>, headers: HeaderMap| async move {
                    let bearer = headers
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "));
                    let cookie = headers
                        .get(header::COOKIE)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.split("; ").find_map(|c| c.strip_prefix("sid=")));
                    if issued.accept(bearer.or(cookie)) {
                        Json(serde_json::json!([{"id": 1}])).into_response()
                    } else {
                        StatusCode::UNAUTHORIZED.into_response()
                    }
                },
            ),
        )
        .route(
            "/session",
            axum::routing::post(
                |State(issued): State<Issued>, Json(body): Json<Value>| async move {
                    if body["user"] != "alice" || body["password"] != PASSWORD {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    let sid = issued.issue("session");
                    (
                        StatusCode::NO_CONTENT,
                        // Appended: a second Set-Cookie does not replace the first.
                        axum::response::AppendHeaders([
                            (header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly")),
                            (
                                header::SET_COOKIE,
                                "theme=dark-blue-long; Path=/".to_owned(),
                            ),
                        ]),
                    )
                        .into_response()
                },
            ),
        )
        .with_state(issued)
}

/// Runs the things API with `probe_toml`; checks that no credential the providers issued,
/// nor the secret or the password, is in anything probe wrote. Gives the report.
fn login_run(issued: &Issued, provider: Option<&RunningFixture>, probe_toml: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let api = RunningFixture::start(things(issued.clone())).expect("fixture starts");
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, THINGS).unwrap();
    let provider_url = provider.map(RunningFixture::base_url).unwrap_or_default();
    std::fs::write(
        dir.path().join("probe.toml"),
        probe_toml.replace("{provider}", &provider_url),
    )
    .unwrap();
    let (out, report) = Campaign {
        spec: &spec,
        url: &api.base_url(),
        seed: 7,
        workers: 2,
        requests: 30,
    }
    .run(dir.path(), &[]);
    assert!(
        matches!(code(&out), 0 | 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secrets: Vec<String> = issued
        .values
        .lock()
        .unwrap()
        .iter()
        .cloned()
        .chain([CLIENT_SECRET.to_owned(), PASSWORD.to_owned()])
        .collect();
    for path in crate::util::files_under(dir.path()) {
        if path.file_name().is_some_and(|n| n == "probe.toml") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for secret in &secrets {
            assert!(
                memchr::memmem::find(&bytes, secret.as_bytes()).is_none(),
                "{} holds a credential",
                path.display()
            );
        }
    }
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(secrets.iter().all(|s| !text.contains(s.as_str())), "{text}");
    }
    report
}

#[test]
fn an_oauth2_token_endpoint_on_another_origin_serves_both_grants() {
    for (grant, fields) in [
        (
            "client_credentials",
            format!("client_id = \"probe\"\nclient_secret = \"{CLIENT_SECRET}\"\nscope = \"things:read\""),
        ),
        (
            "password",
            format!("client_id = \"probe\"\nusername = \"alice\"\npassword = \"{PASSWORD}\""),
        ),
    ] {
        let issued = Issued::default();
        let provider = RunningFixture::start(identity_provider(issued.clone())).unwrap();
        let toml = format!(
            "[[identity]]\nname = \"svc\"\n[identity.login]\nurl = \"{{provider}}/oauth/token\"\ngrant = \"{grant}\"\n{fields}\n"
        );
        let report = login_run(&issued, Some(&provider), &toml);
        assert_eq!(*issued.grants.lock().unwrap(), vec![grant.to_owned()], "{grant}: one login");
        let accepted = *issued.accepted.lock().unwrap();
        assert!(accepted > 5, "{grant}: the API took the token ({accepted})");
        let identity = &report["identities"][0];
        assert_eq!(identity["name"], "svc");
        assert_eq!(identity["logins"], 1, "{identity}");
    }
}

#[test]
fn a_cookie_session_is_sent_back_and_renewed_on_401() {
    let issued = Issued {
        session_uses: 6,
        ..Issued::default()
    };
    let toml = format!(
        "[[identity]]\nname = \"alice\"\n[identity.login]\npath = \"/session\"\njson = {{ user = \"alice\", password = \"{PASSWORD}\" }}\napply = \"cookie\"\n"
    );
    let report = login_run(&issued, None, &toml);
    let accepted = *issued.accepted.lock().unwrap();
    assert!(
        accepted > 10,
        "the API took the session cookie ({accepted})"
    );
    let sessions = issued.grants.lock().unwrap().len();
    assert!(sessions >= 2, "the session was renewed: {sessions} logins");
    let identity = &report["identities"][0];
    assert_eq!(
        identity["logins"].as_u64(),
        Some(sessions as u64),
        "{identity}"
    );
    assert!(
        identity["resent_after_401"].as_u64().unwrap() >= 1,
        "{identity}"
    );
}

#[test]
fn a_token_endpoint_that_refuses_the_client_stops_the_run_naming_its_error() {
    let issued = Issued::default();
    let provider = RunningFixture::start(identity_provider(issued.clone())).unwrap();
    let api = RunningFixture::start(things(issued)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(&spec, THINGS).unwrap();
    let wrong = "not-the-client-secret-4411";
    std::fs::write(
        dir.path().join("probe.toml"),
        format!(
            "[[identity]]\nname = \"svc\"\n[identity.login]\nurl = \"{}/oauth/token\"\ngrant = \"client_credentials\"\nclient_id = \"probe\"\nclient_secret = \"{wrong}\"\n",
            provider.base_url()
        ),
    )
    .unwrap();
    let mut cmd = probe(dir.path());
    cmd.args(["run", "--spec", spec.to_str().unwrap(), "--url"])
        .arg(api.base_url())
        .args(["--requests", "5", "--store"])
        .arg(dir.path().join("store"));
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains("identity `svc`: the login POST http://")
            && stderr.contains("/oauth/token was answered 400 (invalid_grant)"),
        "{stderr}"
    );
    assert!(!stderr.contains(wrong), "{stderr}");
}
