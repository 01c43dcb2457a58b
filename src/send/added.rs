//! The headers the HTTP client adds to a request on its way out, beyond those probe builds
//! and stores: `host`, `user-agent`, `accept` (when the case sets none) and
//! `content-length` (for a body). The store keeps the request as probe built it; an export
//! that shows what went on the wire (HAR, docs/har.md) adds these.
//!
//! Kept beside the client (`client.rs` sets [`USER_AGENT`]), so that the two change
//! together.
//!
//! Depends on: nothing else in probe (`url`).

/// The `user-agent` the client sends unless a request sets its own.
pub const USER_AGENT: &str = concat!("probe/", env!("CARGO_PKG_VERSION"));

/// The headers the client adds to a request to `url` that carries `headers` (names in any
/// case) and a body of `body_len` bytes (`None`: no body), in the order HTTP/1.1 sends
/// them; those the request sets itself are not added.
pub fn client_added(
    url: &str,
    headers: &[(String, String)],
    body_len: Option<usize>,
) -> Vec<(&'static str, String)> {
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut added = Vec::new();
    if !has("host") {
        if let Some(host) = host_of(url) {
            added.push(("host", host));
        }
    }
    if !has("user-agent") {
        added.push(("user-agent", USER_AGENT.to_owned()));
    }
    if !has("accept") {
        added.push(("accept", "*/*".to_owned()));
    }
    if let Some(n) = body_len {
        if !has("content-length") && !has("transfer-encoding") {
            added.push(("content-length", n.to_string()));
        }
    }
    added
}

/// `host[:port]` of a URL as the `host` header names it (the port only when it is not the
/// scheme's default).
fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    Some(match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_request_lacks_is_added() {
        let headers = vec![("Accept".to_owned(), "application/json".to_owned())];
        let added = client_added("http://127.0.0.1:8080/pets", &headers, Some(12));
        assert_eq!(
            added,
            [
                ("host", "127.0.0.1:8080".to_owned()),
                ("user-agent", USER_AGENT.to_owned()),
                ("content-length", "12".to_owned()),
            ]
        );
        let added = client_added("https://api.test/pets", &[], None);
        assert_eq!(added[0], ("host", "api.test".to_owned()));
        assert_eq!(added[2], ("accept", "*/*".to_owned()));
        assert_eq!(added.len(), 3);
    }
}
