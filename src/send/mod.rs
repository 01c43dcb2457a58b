//! Sending: from a test case to the bytes on the wire, and from the wire to an outcome.
//!
//! This room owns everything between a stored test case and the answer that came back:
//! - [`wire`]: the wire form of a test case (parameter styles, body encodings), the
//!   credentials of this invocation and where they go, the stored copy of a request (with
//!   placeholders for credentials) and the curl line a report prints;
//! - [`identity`]: the identities a run sends as, their logins and tokens;
//! - [`client`]: the HTTP client ([`Sender`]), its timeouts and body limit, and the network
//!   it goes through (TLS trust, a client certificate, a proxy, HTTP/2: `send.*` settings);
//!   transport failures come back as outcomes, never as errors; [`added`]: the headers it
//!   adds;
//!
//! The run (`engine`) and `probe replay` both send through here, so a stored test case
//! always means the same request. Nothing here schedules, records or judges: the engine
//! decides when to send, the store keeps what was sent (`store::encode_exchange`), and the
//! oracles judge it.
//!
//! Depends on: `model`, `spec` (the operation a case belongs to), `redact` (the
//! [`Redactor`](crate::redact::Redactor) of a set of credentials), `settings`. Never on
//! `engine`, `store` or `oracle`.

pub mod added;
pub mod client;
pub mod identity;
pub mod wire;

pub use client::Sender;
pub use identity::{Identities, IdentityError, IdentitySpec};
pub use wire::{build, curl_line, Credentials, WireRequest};
