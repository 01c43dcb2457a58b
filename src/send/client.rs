//! The sender: puts a [`WireRequest`] on the wire with reqwest and reads the answer within
//! bounds. Transport failures (refused, reset, timeout) come back as outcomes, never as
//! errors, so a flaky API cannot stop a run.
//!
//! Redirects are never followed: probe sends only to the base URL it was given (and to a
//! login's token endpoint that `probe.toml` names). A proxy is used only when asked for
//! (`send.proxy`): the environment's is ignored otherwise. TLS trusts the built-in roots and
//! `send.caCert`, presents `send.clientCert` when given, verifies nothing under
//! `send.insecure`; ALPN offers `h2` only under `send.http2`.
//!
//! Connections the server closed: many servers (uvicorn after an unhandled 500, any
//! server at its keep-alive timeout) close a connection right after an answer, and the
//! pool can hand it to the next request before the close is seen. What can be known
//! before writing is left to hyper: it never keeps a connection whose answer said
//! `Connection: close`, drops an idle one it has seen closed, and sends a request again
//! by itself when its pooled connection fails before a byte of it was written
//! (hyper-util's `retry_canceled_requests`, on by default). What cannot (the close
//! crosses the request on the wire: the answer never starts, or the connection is
//! reset) is sent again here, once, on a fresh connection, and only when the request
//! went out on a reused one: [`worth_resending`]. The first failure is kept with the
//! answer ([`Sent::retried`]), so a reset is a finding only when a fresh connection
//! failed too.
//!
//! reqwest does not say which connection a request went out on, so two things are read
//! beside it: a connector layer notes, in the sending task, the local address of a
//! connection made for the request ([`NoteConnects`]), and hyper-util's error names the
//! connection a failed request was written to. A request whose connection is not the
//! one made for it went out on a reused one ([`went_out_on_a_reused_one`]).
//!
//! Depends on: `model`, `settings`, [`super::wire`].

use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::{Connected, Connection, HttpInfo};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;

use super::wire::WireRequest;
pub use crate::model::Sent;
use crate::model::{BodyBytes, FirstAttempt, Outcome, ResponseRecord, TransportErrorKind};
use crate::settings::{NetworkOptions, Proxy, SendOptions, Settings};

/// A connection made for a request, by its local address when it has one.
type Made = Option<Option<SocketAddr>>;

tokio::task_local! {
    /// Set while one request is sent: the connection made for it, if one was. A connection
    /// is made in the task that asked for it only when no pooled one was at hand
    /// (hyper-util races a checkout of the pool against a connect; one that finishes after
    /// the pool won finishes in a task of its own, outside this scope, and one that
    /// finishes first can still lose the race, which the address tells).
    static MADE: Cell<Made>;
}

/// A connector layer that notes, in the task sending a request, the connection made for
/// it. Work per new connection only; nothing per request.
#[derive(Clone)]
struct NoteConnects<S>(S);

impl<R, S> tower_service::Service<R> for NoteConnects<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
    S::Response: Connection,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let connecting = self.0.call(request);
        Box::pin(async move {
            let connected = connecting.await;
            if let Ok(connection) = &connected {
                let at = local_addr(&connection.connected());
                // Outside a send's scope (a connect finishing for the pool): nothing to note.
                let _ = MADE.try_with(|made| made.set(Some(at)));
            }
            connected
        })
    }
}

/// A configured HTTP client.
pub struct Sender {
    client: reqwest::Client,
    /// A client that keeps no connection: every request it sends goes on a fresh one. Made
    /// at the first resend ([`worth_resending`]); most runs never need it.
    fresh: OnceLock<Result<reqwest::Client, String>>,
    /// `send.timeout`: a send's deadline when it is given none.
    timeout: Duration,
    /// The TLS, proxy and HTTP/2 choices both clients are built with.
    network: Network,
    max_body: usize,
    /// The origin (`scheme://host:port`) of the first URL sent, parsed: a run sends every
    /// request to one origin, and resolving a path against it skips parsing the host again
    /// (a full parse, IDNA mapping included, was 1% of a run's CPU against a fast API).
    origin: OnceLock<(String, Url)>,
}

impl Sender {
    pub fn new(settings: &Settings) -> Result<Sender, ClientError> {
        Sender::with_options(&settings.resolved().send)
    }

    /// A client with options resolved once (by [`Settings::options`]).
    pub fn with_options(options: &SendOptions) -> Result<Sender, ClientError> {
        let timeout = options.timeout;
        let network = Network::read(&options.network)?;
        let client = client(timeout, &network)
            .pool_max_idle_per_host(256)
            .connector_layer(tower_layer::layer_fn(NoteConnects))
            .build()
            .map_err(|e| ClientError::Build(chain(&e)))?;
        Ok(Sender {
            client,
            fresh: OnceLock::new(),
            timeout,
            network,
            max_body: options.max_body_bytes as usize,
            origin: OnceLock::new(),
        })
    }

    /// The client of resends, made once.
    fn fresh(&self) -> Result<&reqwest::Client, &str> {
        self.fresh
            .get_or_init(|| {
                client(self.timeout, &self.network)
                    .pool_max_idle_per_host(0)
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// `url` parsed, through the known origin when it has that origin.
    fn parse_url(&self, url: &str) -> Result<Url, url::ParseError> {
        if let Some((prefix, origin)) = self.origin.get() {
            if let Some(rest) = url.strip_prefix(prefix.as_str()) {
                if let Some(parsed) = resolve_path(origin, rest) {
                    return Ok(parsed);
                }
            }
            return Url::parse(url);
        }
        let parsed = Url::parse(url)?;
        if parsed.has_host() && !parsed.cannot_be_a_base() {
            let prefix = parsed[..url::Position::BeforePath].to_owned();
            if let Ok(origin) = Url::parse(&prefix) {
                let _ = self.origin.set((prefix, origin));
            }
        }
        Ok(parsed)
    }

    /// Sends one request and reads the answer (the body up to the limit), within
    /// `timeout` when given (instead of `send.timeout`), from connecting to the body's end.
    /// A request that went out on a reused connection and failed as a connection the
    /// server closed fails is sent again on a fresh one, once, within what is left of that
    /// time ([`worth_resending`]).
    pub async fn send(&self, wire: &WireRequest, timeout: Option<Duration>) -> Sent {
        let started = Instant::now();
        let (first, made) = MADE
            .scope(Cell::new(None), async {
                let attempt = self.attempt(&self.client, wire, timeout).await;
                (attempt, MADE.with(Cell::get))
            })
            .await;
        let (failed, used) = match first {
            Attempt::Answered(outcome) => return outcome.into(),
            Attempt::Unanswered(outcome, used) => (outcome, used),
        };
        let left = timeout
            .unwrap_or(self.timeout)
            .saturating_sub(started.elapsed());
        let reused = went_out_on_a_reused_one(made, used);
        let (kind, message) = match &failed {
            Outcome::TransportError { kind, message } if worth_resending(*kind, reused, left) => {
                (*kind, message.clone())
            }
            _ => return failed.into(),
        };
        let Ok(fresh) = self.fresh() else {
            return failed.into();
        };
        Sent {
            outcome: self.attempt(fresh, wire, Some(left)).await.outcome(),
            retried: Some(FirstAttempt { kind, message }),
        }
    }

    /// One attempt at sending `wire` through `client`.
    async fn attempt(
        &self,
        client: &reqwest::Client,
        wire: &WireRequest,
        timeout: Option<Duration>,
    ) -> Attempt {
        let method = match reqwest::Method::from_bytes(wire.method.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                return Attempt::Answered(transport(
                    TransportErrorKind::Other,
                    format!("method `{}`: {e}", wire.method),
                ))
            }
        };
        let url = match self.parse_url(wire.url()) {
            Ok(u) => u,
            Err(e) => {
                return Attempt::Answered(transport(
                    TransportErrorKind::Other,
                    // The stored URL: the message is kept, and a credential must not be.
                    format!("url `{}`: {e}", wire.stored_url),
                ));
            }
        };
        let mut request = client.request(method, url);
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        for (k, v) in wire.headers() {
            match (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                (Ok(name), Ok(value)) => request = request.header(name, value),
                _ => {
                    return Attempt::Answered(transport(
                        TransportErrorKind::Other,
                        format!("header `{k}` cannot be sent"),
                    ))
                }
            }
        }
        if let Some(body) = &wire.body {
            request = request.body(body.clone());
        }
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Unanswered(classify(&e), connection_of(&e)),
        };
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body: Vec<u8> = Vec::new();
        let mut truncated = false;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.max_body.saturating_sub(body.len());
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                // The answer had begun: whatever broke it, it is the server's answer.
                Err(e) => return Attempt::Answered(classify(&e)),
            }
        }
        Attempt::Answered(Outcome::Response(ResponseRecord {
            status,
            headers,
            body: if body.is_empty() {
                None
            } else {
                Some(BodyBytes::Inline(body))
            },
            truncated,
        }))
    }
}

/// What one attempt got, and whether any of the answer came.
enum Attempt {
    /// An answer, whole or broken after its head began, or a request that could not be
    /// made: nothing to send again.
    Answered(Outcome),
    /// Failed before any byte of the answer; the connection it was written to, by its
    /// local address, when hyper-util's error names it.
    Unanswered(Outcome, Option<SocketAddr>),
}

impl Attempt {
    fn outcome(self) -> Outcome {
        match self {
            Attempt::Answered(o) | Attempt::Unanswered(o, _) => o,
        }
    }
}

/// The local address of a connection, when it is a TCP one.
fn local_addr(connected: &Connected) -> Option<SocketAddr> {
    let mut extras = http::Extensions::new();
    connected.get_extras(&mut extras);
    extras.get::<HttpInfo>().map(HttpInfo::local_addr)
}

/// The connection a failed request was written to, from hyper-util's error in the chain.
fn connection_of(e: &reqwest::Error) -> Option<SocketAddr> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(client) = s.downcast_ref::<hyper_util::client::legacy::Error>() {
            return client.connect_info().and_then(local_addr);
        }
        source = s.source();
    }
    None
}

/// Whether a request went out on a connection reused from the pool: none was `made` for
/// it, or the one it was written to (`used`) is not the one made. A connection made for it
/// when the one used is not known is taken as the one used: a reset there is the server's.
fn went_out_on_a_reused_one(made: Made, used: Option<SocketAddr>) -> bool {
    match (made, used) {
        (None, _) => true,
        (Some(Some(made)), Some(used)) => made != used,
        (Some(_), _) => false,
    }
}

/// Whether a request that got no byte of an answer, failing as `kind`, is sent again on a
/// fresh connection: only when it went out on a `reused` one and failed as a connection the
/// server had closed fails (closed before the answer began, or reset: [`kind_of`] calls
/// both `reset`), and time is `left`. A refused connect, a timeout or a broken answer says
/// something about the server; a fresh connection that resets does too, so it is never
/// sent a third time.
fn worth_resending(kind: TransportErrorKind, reused: bool, left: Duration) -> bool {
    kind == TransportErrorKind::Reset && reused && !left.is_zero()
}

/// The builder both clients share.
fn client(timeout: Duration, network: &Network) -> reqwest::ClientBuilder {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // reqwest's own retry policy is off: every resend is decided here and kept in the
        // record (`Sent::retried`). (Over HTTP/1 reqwest retries nothing, but its default
        // policy still copied every request for a retry that could not come; over HTTP/2 it
        // would send a refused stream again unseen.) hyper-util's resend of a request its
        // pooled connection failed before writing it stays on: that request was never sent.
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(5))
        .user_agent(super::added::USER_AGENT)
        .danger_accept_invalid_certs(network.insecure);
    for root in &network.roots {
        builder = builder.add_root_certificate(root.clone());
    }
    if let Some(identity) = &network.identity {
        builder = builder.identity(identity.clone());
    }
    // A proxy is opt-in: reqwest reads the environment's unless told not to, and a run
    // that went through a proxy nobody asked for would test the proxy too.
    builder = match &network.proxy {
        None if network.environment => builder,
        None => builder.no_proxy(),
        Some(proxy) => builder.proxy(proxy.clone()),
    };
    if !network.http2 {
        // Without it, ALPN offers `http/1.1` alone, and nothing else is spoken.
        builder = builder.http1_only();
    }
    builder
}

/// What setting up the client met: a file of the `send.*` settings that cannot be read or
/// used, a proxy that is not a URL. Said before anything is sent.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("setting `{setting}`: cannot read `{path}`: {source}")]
    Read {
        setting: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("setting `{setting}`: `{path}` {problem}")]
    Unusable {
        setting: &'static str,
        path: String,
        problem: String,
    },
    #[error("setting `send.proxy`: {0}")]
    Proxy(String),
    #[error("the HTTP client could not be made: {0}")]
    Build(String),
}

/// The network choices of `send.*` read into what reqwest takes, once: both clients (the
/// pooled one and the one of resends) are built from it.
#[derive(Clone, Default)]
struct Network {
    /// CA certificates trusted beside the built-in roots (`send.caCert`).
    roots: Vec<reqwest::Certificate>,
    /// The client certificate and its key (`send.clientCert`, `send.clientKey`).
    identity: Option<reqwest::Identity>,
    insecure: bool,
    /// `send.proxy` as a URL.
    proxy: Option<reqwest::Proxy>,
    /// `send.proxy = env`: reqwest reads the variables itself.
    environment: bool,
    http2: bool,
}

impl Network {
    fn read(options: &NetworkOptions) -> Result<Network, ClientError> {
        let read = |setting: &'static str, path: &std::path::Path| {
            std::fs::read(path).map_err(|source| ClientError::Read {
                setting,
                path: path.display().to_string(),
                source,
            })
        };
        let unusable = |setting: &'static str, path: &std::path::Path, problem: String| {
            ClientError::Unusable {
                setting,
                path: path.display().to_string(),
                problem,
            }
        };
        let mut network = Network {
            insecure: options.insecure,
            http2: options.http2,
            ..Network::default()
        };
        if let Some(path) = &options.ca_cert {
            let pem = read("send.caCert", path)?;
            network.roots = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| unusable("send.caCert", path, format!("is not PEM: {}", chain(&e))))?;
            if network.roots.is_empty() {
                return Err(unusable(
                    "send.caCert",
                    path,
                    "holds no certificate (`-----BEGIN CERTIFICATE-----`)".into(),
                ));
            }
        }
        match (&options.client_cert, &options.client_key) {
            (None, None) => {}
            (Some(cert), None) => {
                return Err(unusable(
                    "send.clientCert",
                    cert,
                    "is given without send.clientKey (--client-key); a client certificate needs both (they may be one file)".into(),
                ))
            }
            (None, Some(key)) => {
                return Err(unusable(
                    "send.clientKey",
                    key,
                    "is given without send.clientCert (--client-cert); a client certificate needs both (they may be one file)".into(),
                ))
            }
            (Some(cert), Some(key)) => {
                let mut pem = read("send.clientCert", cert)?;
                if key != cert {
                    pem.push(b'\n');
                    pem.extend(read("send.clientKey", key)?);
                }
                let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                    unusable(
                        "send.clientCert",
                        cert,
                        format!(
                            "with `{}` is not a PEM certificate and private key: {}",
                            key.display(),
                            chain(&e)
                        ),
                    )
                })?;
                network.identity = Some(identity);
            }
        }
        match &options.proxy {
            Proxy::Direct => {}
            Proxy::Environment => network.environment = true,
            Proxy::Url(url) => network.proxy = Some(proxy(url)?),
        }
        Ok(network)
    }
}

/// `send.proxy` as a URL: an `http://` or `https://` proxy without credentials in it, which
/// would be kept with the run's settings; a proxy that asks for them is given through
/// `HTTPS_PROXY` and `send.proxy = env`, which are never stored.
fn proxy(text: &str) -> Result<reqwest::Proxy, ClientError> {
    let url = Url::parse(text).map_err(|e| {
        ClientError::Proxy(format!(
            "`{text}` is not a URL ({e}); give `env` or a proxy such as http://127.0.0.1:8080"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(ClientError::Proxy(format!(
            "`{text}`: a proxy is an http:// or https:// URL with a host"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ClientError::Proxy(
            "the proxy URL holds credentials, which would be kept with the run's settings; \
             give them in HTTPS_PROXY (or HTTP_PROXY) with `--proxy env` instead"
                .into(),
        ));
    }
    reqwest::Proxy::all(url.as_str()).map_err(|e| ClientError::Proxy(chain(&e)))
}

/// An error and its sources, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// What a TLS failure's message says is wrong with the server's certificate, in words,
/// with what to do about it; `None` when it names no certificate problem probe knows.
pub fn certificate_problem(message: &str) -> Option<&'static str> {
    // rustls's names for the problems (`invalid peer certificate: UnknownIssuer`).
    const KNOWN: &[(&str, &str)] = &[
        ("UnknownIssuer", "the server's certificate is signed by no CA probe trusts (a self-signed or private CA): give that CA with --cacert FILE, or --insecure to verify nothing"),
        ("NotValidForName", "the server's certificate is not for the host of --url: reach it by a name the certificate holds, or --insecure"),
        ("Expired", "the server's certificate has expired"),
        ("NotValidYet", "the server's certificate is not valid yet (check the clocks)"),
        ("Revoked", "the server's certificate was revoked"),
        ("CaUsedAsEndEntity", "the server presents a CA certificate as its own: give it with --cacert FILE, or --insecure"),
        ("BadSignature", "the server's certificate has a bad signature"),
        ("CertificateRequired", "the server asks for a client certificate: give --client-cert FILE and --client-key FILE"),
        ("certificate required", "the server asks for a client certificate: give --client-cert FILE and --client-key FILE"),
        ("UnknownCA", "the server does not trust the client certificate given (--client-cert)"),
        ("unknown ca", "the server does not trust the client certificate given (--client-cert)"),
        ("BadCertificate", "the server refused the client certificate given (--client-cert)"),
    ];
    KNOWN
        .iter()
        .find(|(name, _)| message.contains(name))
        .map(|(_, words)| *words)
}

/// `rest` (what follows the origin in a URL) resolved against `origin`, when that surely
/// gives what parsing the whole URL gives: `rest` is an absolute path of visible ASCII
/// without backslashes that does not begin `//`. Anything else could be read as an
/// authority once resolved on its own (`//host`; `/\host` in a special scheme; `/<tab>/host`,
/// since the parser drops tabs and newlines), so it is parsed whole.
fn resolve_path(origin: &Url, rest: &str) -> Option<Url> {
    let bytes = rest.as_bytes();
    let plain = bytes.iter().all(|b| b.is_ascii_graphic() && *b != b'\\');
    (plain && bytes.first() == Some(&b'/') && bytes.get(1) != Some(&b'/'))
        .then(|| origin.join(rest).ok())
        .flatten()
}

fn transport(kind: TransportErrorKind, message: String) -> Outcome {
    Outcome::TransportError { kind, message }
}

fn classify(e: &reqwest::Error) -> Outcome {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    let mut hyper_error: Option<&hyper::Error> = None;
    let mut io_kind: Option<std::io::ErrorKind> = None;
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        hyper_error = hyper_error.or_else(|| s.downcast_ref::<hyper::Error>());
        io_kind = io_kind.or_else(|| s.downcast_ref::<std::io::Error>().map(|io| io.kind()));
        source = s.source();
    }
    transport(kind_of(e, hyper_error, io_kind, &message), message)
}

/// The kind of a failure, from the error's own types first and its text last.
fn kind_of(
    e: &reqwest::Error,
    hyper_error: Option<&hyper::Error>,
    io_kind: Option<std::io::ErrorKind>,
    message: &str,
) -> TransportErrorKind {
    use std::io::ErrorKind as Io;
    let lower = message.to_ascii_lowercase();
    if e.is_timeout() || hyper_error.is_some_and(|h| h.is_timeout()) {
        return TransportErrorKind::Timeout;
    }
    if e.is_redirect() {
        return TransportErrorKind::Redirect;
    }
    if let Some(h) = hyper_error {
        if h.is_parse_too_large() {
            return TransportErrorKind::HeaderTooLarge;
        }
        if h.is_parse() || h.is_parse_status() {
            return TransportErrorKind::Malformed;
        }
        if h.is_incomplete_message() {
            // Closed before the head: a reset; closed inside the body: a short body.
            return if e.is_body() || e.is_decode() {
                TransportErrorKind::BodyShort
            } else {
                TransportErrorKind::Reset
            };
        }
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return TransportErrorKind::Dns;
    }
    if lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake") {
        return TransportErrorKind::Tls;
    }
    match io_kind {
        Some(Io::ConnectionRefused) => return TransportErrorKind::Refused,
        Some(Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe) => {
            return TransportErrorKind::Reset
        }
        Some(Io::UnexpectedEof) if e.is_body() || e.is_decode() => {
            return TransportErrorKind::BodyShort
        }
        _ => {}
    }
    if e.is_connect() || lower.contains("connection refused") {
        TransportErrorKind::Refused
    } else if e.is_body() || e.is_decode() {
        TransportErrorKind::BodyShort
    } else if lower.contains("reset") || lower.contains("closed") || lower.contains("broken pipe") {
        TransportErrorKind::Reset
    } else {
        TransportErrorKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolving against the origin gives the URL a full parse gives, or declines.
    #[test]
    fn a_path_resolved_against_the_origin_is_the_whole_url_parsed() {
        let prefix = "http://127.0.0.1:8080";
        let origin = Url::parse(prefix).unwrap();
        for rest in [
            "/",
            "/pets",
            "/api/pets/12?limit=3&x=%20y",
            "/a/../b/./c",
            "/a%2Fb/%2e%2e/c",
            "/p?q=1#frag",
            "/x y?z=é",
            "/\t/tab",
            "/\n/nl",
            "/\r\n/crlf",
            "/a\t/b",
            "/\\x",
            "//evil.example/x",
            "/\\evil.example/x",
            "",
            "?q=1",
            ":9999/x",
            "@evil.example/x",
        ] {
            let whole = Url::parse(&format!("{prefix}{rest}"));
            match resolve_path(&origin, rest) {
                Some(resolved) => {
                    assert_eq!(Ok(resolved.clone()), whole, "{rest:?}");
                    assert_eq!(resolved.host_str(), Some("127.0.0.1"), "{rest:?}");
                    assert_eq!(resolved.port(), Some(8080), "{rest:?}");
                }
                None => assert!(
                    !rest.starts_with('/')
                        || rest[1..].starts_with('/')
                        || !rest.bytes().all(|b| b.is_ascii_graphic() && b != b'\\'),
                    "{rest:?} declined"
                ),
            }
        }
    }

    #[test]
    fn urls_of_another_origin_are_parsed_whole() {
        let settings = Settings::default();
        let sender = Sender::new(&settings).unwrap();
        let first = sender.parse_url("http://127.0.0.1:8080/a").unwrap();
        assert_eq!(first.as_str(), "http://127.0.0.1:8080/a");
        for (url, host, port) in [
            ("http://127.0.0.1:8080/b?c=d", "127.0.0.1", 8080),
            ("http://127.0.0.1:80801/b", "", 0),
            ("http://127.0.0.1:8080@localhost:9/b", "localhost", 9),
            ("http://localhost:9/b", "localhost", 9),
            ("http://127.0.0.1:8080//other:1/b", "127.0.0.1", 8080),
        ] {
            match sender.parse_url(url) {
                Ok(parsed) => {
                    assert_eq!(Ok(parsed.clone()), Url::parse(url), "{url}");
                    assert_eq!(parsed.host_str(), Some(host), "{url}");
                    assert_eq!(parsed.port(), Some(port), "{url}");
                }
                Err(_) => assert!(Url::parse(url).is_err(), "{url}"),
            }
        }
    }

    /// Only a reset of a request on a reused connection, with time left, is sent again.
    #[test]
    fn only_a_reset_on_a_reused_connection_is_sent_again() {
        let second = Duration::from_secs(1);
        for kind in TransportErrorKind::ALL {
            let reset = kind == TransportErrorKind::Reset;
            assert_eq!(worth_resending(kind, true, second), reset, "{kind:?}");
            assert!(
                !worth_resending(kind, false, second),
                "{kind:?} on a fresh one"
            );
            assert!(
                !worth_resending(kind, true, Duration::ZERO),
                "{kind:?} in no time"
            );
        }
    }

    /// A request went out on a reused connection when none was made for it, or when the
    /// one it was written to is another; a connection made for it is the one used when
    /// the error does not say.
    #[test]
    fn a_connection_made_for_a_request_is_not_a_reused_one() {
        let a: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:40002".parse().unwrap();
        assert!(went_out_on_a_reused_one(None, Some(a)));
        assert!(went_out_on_a_reused_one(None, None));
        assert!(went_out_on_a_reused_one(Some(Some(a)), Some(b)));
        assert!(!went_out_on_a_reused_one(Some(Some(a)), Some(a)));
        assert!(!went_out_on_a_reused_one(Some(Some(a)), None));
        assert!(!went_out_on_a_reused_one(Some(None), Some(a)));
    }

    /// A server on 127.0.0.1 whose every connection answers `answers` requests 500 and then
    /// closes on the next one, unanswered (`answers` 0: closed as its first request comes).
    fn closing_server(answers: usize) -> String {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            // Bounded: the test sends a handful of requests.
            for stream in listener.incoming().take(16) {
                let Ok(stream) = stream else { return };
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    for _ in 0..answers {
                        let mut line = String::new();
                        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                            if line == "\r\n" {
                                break;
                            }
                            line.clear();
                        }
                        let _ = writer.write_all(
                            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 2\r\n\r\nno",
                        );
                    }
                    // Wait for the next request, so that it is on the wire, then close.
                    let mut line = String::new();
                    let _ = reader.read_line(&mut line);
                });
            }
        });
        url
    }

    /// The second request goes out on the first one's connection, which the server closes
    /// unanswered: it is sent again on a fresh connection, answered, and says so.
    #[tokio::test]
    async fn a_request_the_server_closed_a_reused_connection_on_is_sent_again() {
        let url = closing_server(1);
        let sender = Sender::new(&Settings::default()).unwrap();
        let wire = WireRequest::plain("GET".into(), url, Vec::new(), None);
        let first = sender.send(&wire, None).await;
        assert_eq!(first.outcome.status(), Some(500), "{first:?}");
        assert_eq!(first.retried, None);
        let second = sender.send(&wire, None).await;
        assert_eq!(second.outcome.status(), Some(500), "{second:?}");
        let retried = second.retried.expect("sent again");
        assert_eq!(retried.kind, TransportErrorKind::Reset, "{retried:?}");
    }

    /// A fresh connection closed unanswered is a failure, sent once.
    #[tokio::test]
    async fn a_reset_on_a_fresh_connection_is_not_sent_again() {
        let url = closing_server(0);
        let sender = Sender::new(&Settings::default()).unwrap();
        let wire = WireRequest::plain("GET".into(), url, Vec::new(), None);
        let sent = sender.send(&wire, None).await;
        assert!(
            matches!(
                sent.outcome,
                Outcome::TransportError {
                    kind: TransportErrorKind::Reset,
                    ..
                }
            ),
            "{sent:?}"
        );
        assert_eq!(sent.retried, None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2_000, failure_persistence: None, ..Default::default() })]

        /// Whatever follows the origin, resolving it against the origin either declines or
        /// gives the URL a full parse gives, on the origin's host and port: no path can
        /// send a request elsewhere.
        #[test]
        fn any_rest_resolves_to_the_whole_parse_or_declines(
            rest in "[/\\\\.%?#@:a-z0-9 \t\n\r\u{e9}\u{2f}\u{ff0f}]{0,12}"
        ) {
            let prefix = "http://127.0.0.1:8080";
            let origin = Url::parse(prefix).unwrap();
            // Also as a path, which is what a request's URL holds after its origin.
            for rest in [rest.clone(), format!("/{rest}")] {
                if let Some(resolved) = resolve_path(&origin, &rest) {
                    proptest::prop_assert_eq!(
                        Ok(resolved.clone()),
                        Url::parse(&format!("{prefix}{rest}"))
                    );
                    proptest::prop_assert_eq!(resolved.host_str(), Some("127.0.0.1"));
                    proptest::prop_assert_eq!(resolved.port(), Some(8080));
                }
            }
        }
    }
}
