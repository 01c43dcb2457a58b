//! The sender: puts a [`WireRequest`] on the wire with reqwest and reads the answer within
//! bounds. Transport failures (refused, reset, timeout) come back as outcomes, never as
//! errors, so a flaky API cannot stop a run.
//!
//! Redirects are never followed: probe sends only to the base URL it was given.
//!
//! Depends on: `model`, `settings`, `engine::wire`.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use crate::engine::wire::WireRequest;
use crate::model::{BodyBytes, Outcome, ResponseRecord, TransportErrorKind};
use crate::settings::Settings;

/// A configured HTTP client.
pub struct Sender {
    client: reqwest::Client,
    max_body: usize,
}

impl Sender {
    pub fn new(settings: &Settings) -> Result<Sender, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(settings.duration("send.timeout"))
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(256)
            .user_agent(concat!("probe/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Sender {
            client,
            max_body: settings.count("send.maxBodyBytes") as usize,
        })
    }

    /// Sends one request and reads the answer (the body up to the limit).
    pub async fn send(&self, wire: &WireRequest) -> Outcome {
        let method = match reqwest::Method::from_bytes(wire.method.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                return transport(
                    TransportErrorKind::Other,
                    format!("method `{}`: {e}", wire.method),
                )
            }
        };
        let mut request = self.client.request(method, &wire.url);
        for (k, v) in &wire.headers {
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

fn transport(kind: TransportErrorKind, message: String) -> Outcome {
    Outcome::TransportError { kind, message }
}

fn classify(e: &reqwest::Error) -> Outcome {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    let lower = message.to_ascii_lowercase();
    let kind = if e.is_timeout() {
        TransportErrorKind::Timeout
    } else if e.is_connect() || lower.contains("connection refused") {
        TransportErrorKind::Refused
    } else if e.is_redirect() {
        TransportErrorKind::Redirect
    } else if lower.contains("reset") || lower.contains("closed") || lower.contains("broken pipe") {
        TransportErrorKind::Reset
    } else {
        TransportErrorKind::Other
    };
    transport(kind, message)
}
