//! The sender: puts a [`WireRequest`] on the wire with reqwest and reads the answer within
//! bounds. Transport failures (refused, reset, timeout) come back as outcomes, never as
//! errors, so a flaky API cannot stop a run.
//!
//! Redirects are never followed: probe sends only to the base URL it was given.
//!
//! Depends on: `model`, `settings`, [`super::wire`].

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;

use super::wire::WireRequest;
use crate::model::{BodyBytes, Outcome, ResponseRecord, TransportErrorKind};
use crate::settings::Settings;

/// A configured HTTP client.
pub struct Sender {
    client: reqwest::Client,
    max_body: usize,
    /// The origin (`scheme://host:port`) of the first URL sent, parsed: a run sends every
    /// request to one origin, and resolving a path against it skips parsing the host again
    /// (a full parse, IDNA mapping included, was 1% of a run's CPU against a fast API).
    origin: OnceLock<(String, Url)>,
}

impl Sender {
    pub fn new(settings: &Settings) -> Result<Sender, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // Every request is sent once, as its record says. (This build speaks HTTP/1
            // only, where reqwest retries nothing, but its default policy still copied every
            // request for a retry that could not come.)
            .retry(reqwest::retry::never().max_retries_per_request(0))
            .no_proxy()
            .timeout(settings.duration("send.timeout"))
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(256)
            .user_agent(concat!("probe/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Sender {
            client,
            max_body: settings.count("send.maxBodyBytes") as usize,
            origin: OnceLock::new(),
        })
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
    pub async fn send(&self, wire: &WireRequest, timeout: Option<Duration>) -> Outcome {
        let method = match reqwest::Method::from_bytes(wire.method.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                return transport(
                    TransportErrorKind::Other,
                    format!("method `{}`: {e}", wire.method),
                )
            }
        };
        let url = match self.parse_url(wire.url()) {
            Ok(u) => u,
            Err(e) => {
                return transport(
                    TransportErrorKind::Other,
                    // The stored URL: the message is kept, and a credential must not be.
                    format!("url `{}`: {e}", wire.stored_url),
                );
            }
        };
        let mut request = self.client.request(method, url);
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
                    return transport(
                        TransportErrorKind::Other,
                        format!("header `{k}` cannot be sent"),
                    )
                }
            }
        }
        if let Some(body) = &wire.body {
            request = request.body(body.clone());
        }
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return classify(&e),
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
                Err(e) => return classify(&e),
            }
        }
        Outcome::Response(ResponseRecord {
            status,
            headers,
            body: if body.is_empty() {
                None
            } else {
                Some(BodyBytes::Inline(body))
            },
            truncated,
        })
    }
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
