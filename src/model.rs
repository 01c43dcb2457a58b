//! The stored domain types: what a campaign leaves in the store.
//!
//! These are the values the store encodes, hashes and keeps; `store-format/FORMAT.md`
//! specifies their fields. Rules that keep encodings canonical (equal values give equal
//! bytes, hence equal ids):
//! - no `HashMap`: maps are `BTreeMap` or vectors in a defined order;
//! - JSON values are canonicalised (object keys sorted, see [`canonical_json`]) before they
//!   are put into a stored type;
//! - no `#[serde(flatten)]`, no untagged enums;
//! - a field added in a later minor version carries `#[serde(default)]`, so older objects
//!   read back with its default.
//!
//! Timing and clock values live only in [`Interaction::timing`], [`RunStart::started`] and
//! [`RunEnd`], never in a [`TestCase`], so that the same inputs give the same test-case ids.
//!
//! Depends on: `ids`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{BlobId, CaseId, FindingSetId, InteractionId, RunId, SeriesId};

/// Placeholder stored in place of a credential (Authorization, cookies, API keys).
/// `probe replay` fills it from the current invocation.
pub const SECRET_PLACEHOLDER: &str = "<probe:secret>";

/// Where a parameter goes in a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    pub fn as_str(&self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// What a test case is meant to provoke; read by the data oracles (docs/design-notes.md, Intents).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Every value comes from a source that knows the API; a refusal is a finding.
    Acceptable,
    /// A change that breaks what the document states; acceptance is a finding.
    RefusalExpected,
    /// Built from nothing, or a series step: no data oracle reads it.
    #[default]
    Unknown,
    /// Deliberately awkward values: only reply oracles judge it.
    Pushing,
}

impl Intent {
    pub fn as_str(&self) -> &'static str {
        match self {
            Intent::Acceptable => "acceptable",
            Intent::RefusalExpected => "refusal_expected",
            Intent::Unknown => "unknown",
            Intent::Pushing => "pushing",
        }
    }
}

/// Where one value of a test case came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueOrigin {
    /// A closed list in the document (`enum`, `const`).
    Enumeration,
    /// A value the API itself answered earlier.
    Observed,
    /// A user dictionary.
    Dictionary,
    /// An `example`/`examples`/`default` of the document.
    Example,
    /// The schema's `default`.
    Default,
    /// Generated from the schema's constraints.
    Invention,
    /// A deliberately awkward value.
    Awkward,
}

/// One parameter value of a test case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParameterValue {
    pub location: Location,
    pub name: String,
    /// The JSON value before serialisation into the URL, header or cookie.
    pub value: Value,
}

/// The body of a test case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseBody {
    /// The media type sent in `Content-Type`.
    pub media_type: String,
    /// The value, as generated (canonical JSON).
    pub value: Value,
    /// The exact text sent, when it is not the plain serialisation of `value`
    /// (a broken-JSON mutation, say).
    #[serde(default)]
    pub sent_as: Option<String>,
}

/// The accepted request a changed test case was derived from: its test case, and the
/// sequence number of the interaction that accepted it in the same run. (Not the
/// interaction id: that holds timing, and a test case's identity must not.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AcceptedRef {
    pub case: CaseId,
    pub seq: u64,
}

/// What changed between an accepted request and this test case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mutation {
    /// The accepted request this case was derived from.
    pub from: AcceptedRef,
    /// Which operator made the change (`wrongType`, `dropRequired`, ...).
    pub kind: MutationKind,
    /// The place in dictionary notation: `limit`, `body.owner.email`, `body.tags[].label`, `body`.
    pub place: String,
    /// A sentence for a person.
    pub description: String,
}

/// The kinds of change, one per operator of `mutate`, named as their switches are
/// (`mutation.<name>`). Stored as that name, so a case's id does not depend on this type; a
/// name this build does not know (written by a newer probe) reads as
/// [`MutationKind::Unknown`], kept as written, and is written back unchanged.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MutationKind {
    DropRequired,
    WrongLocation,
    WrongType,
    OutsideABound,
    BreakAnEnumeration,
    BreakAPattern,
    BreakAFormat,
    SendNull,
    SendEmpty,
    Oversize,
    WrongRoot,
    EmptyBody,
    NotJson,
    WrongContentType,
    BeyondItsWidth,
    /// No operator's: a valid value the API refused, recorded against the accepted
    /// request that differs from the refused one by that value alone (docs/pinpointing.md).
    RefusedValue,
    /// A kind from a newer probe: its name as stored.
    Unknown(String),
}

impl MutationKind {
    /// Every kind this build knows, in the order switches are listed.
    pub const ALL: [MutationKind; 15] = [
        MutationKind::DropRequired,
        MutationKind::WrongLocation,
        MutationKind::WrongType,
        MutationKind::OutsideABound,
        MutationKind::BreakAnEnumeration,
        MutationKind::BreakAPattern,
        MutationKind::BreakAFormat,
        MutationKind::SendNull,
        MutationKind::SendEmpty,
        MutationKind::Oversize,
        MutationKind::WrongRoot,
        MutationKind::EmptyBody,
        MutationKind::NotJson,
        MutationKind::WrongContentType,
        MutationKind::BeyondItsWidth,
    ];

    /// The name in settings and records: `dropRequired`, `wrongLocation`, ...
    pub fn as_str(&self) -> &str {
        match self {
            MutationKind::Unknown(name) => name,
            known => known.known_name().unwrap_or_default(),
        }
    }

    /// The name of a kind this build knows; `None` for [`MutationKind::Unknown`].
    fn known_name(&self) -> Option<&'static str> {
        Some(match self {
            MutationKind::DropRequired => "dropRequired",
            MutationKind::WrongLocation => "wrongLocation",
            MutationKind::WrongType => "wrongType",
            MutationKind::OutsideABound => "outsideABound",
            MutationKind::BreakAnEnumeration => "breakAnEnumeration",
            MutationKind::BreakAPattern => "breakAPattern",
            MutationKind::BreakAFormat => "breakAFormat",
            MutationKind::SendNull => "sendNull",
            MutationKind::SendEmpty => "sendEmpty",
            MutationKind::Oversize => "oversize",
            MutationKind::WrongRoot => "wrongRoot",
            MutationKind::EmptyBody => "emptyBody",
            MutationKind::NotJson => "notJson",
            MutationKind::WrongContentType => "wrongContentType",
            MutationKind::BeyondItsWidth => "beyondItsWidth",
            MutationKind::RefusedValue => "refusedValue",
            MutationKind::Unknown(_) => return None,
        })
    }

    /// The kind a stored name means: a known kind, or [`MutationKind::Unknown`]. Never fails.
    pub fn from_stored(name: &str) -> MutationKind {
        MutationKind::ALL
            .into_iter()
            .chain([MutationKind::RefusedValue])
            .find(|k| k.as_str() == name)
            .unwrap_or_else(|| MutationKind::Unknown(name.to_owned()))
    }

    /// The known name closest to `name` by edit distance, if one is reasonably close.
    pub fn closest(name: &str) -> Option<&'static str> {
        crate::text::closest(
            name,
            MutationKind::ALL
                .iter()
                .filter_map(MutationKind::known_name),
        )
    }
}

impl std::fmt::Display for MutationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind a person names: only a known one reads, and the error names the closest known
/// name.
impl std::str::FromStr for MutationKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match MutationKind::from_stored(s) {
            known if MutationKind::ALL.contains(&known) => Ok(known),
            _ => Err(format!(
                "`{s}` is not a kind of mutation{}",
                MutationKind::closest(s)
                    .map(|k| format!("; did you mean `{k}`?"))
                    .unwrap_or_default()
            )),
        }
    }
}

impl Serialize for MutationKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MutationKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(MutationKind::from_stored(&name))
    }
}

/// [`SeriesStep::series`] of an ordinary case whose bound values came from the run's memory
/// of answers; its bindings map a parameter name to `<seq>#<json pointer>`.
pub const SERIES_MEMORY: &str = "memory";

/// Position of a test case in a stateful series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesStep {
    /// Identity of the series (stable across runs with the same seed).
    pub series: String,
    pub index: u32,
    /// Values bound from earlier answers: place → JSON pointer into the earlier step's response.
    #[serde(default)]
    pub bindings: BTreeMap<String, String>,
}

/// One generated request, before it is put on the wire. Run-independent: the same inputs
/// give the same [`CaseId`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// Operation key: the `operationId`, else `METHOD /path`.
    pub operation: String,
    /// HTTP method (upper case).
    pub method: String,
    /// The path template, e.g. `/pets/{id}`.
    pub path: String,
    /// Parameter values, ordered by (location, name).
    pub parameters: Vec<ParameterValue>,
    #[serde(default)]
    pub body: Option<CaseBody>,
    /// How it was built.
    pub strategy: Strategy,
    /// Generation mode inside the strategy: `example`, `min`, `max`, `random`, ...
    #[serde(default)]
    pub mode: String,
    /// Where values came from, by place (`limit`, `body`, `body.owner.email`).
    #[serde(default)]
    pub origins: BTreeMap<String, ValueOrigin>,
    #[serde(default)]
    pub intent: Intent,
    #[serde(default)]
    pub mutation: Option<Mutation>,
    #[serde(default)]
    pub series_step: Option<SeriesStep>,
    /// Sent without this run's credentials, or with ones the API cannot know (format 1.3);
    /// absent, and not encoded, for a request sent with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<CredentialProbe>,
    /// For a smaller request sent in place of one that showed a finding (strategy
    /// `shrink`): that finding's distinct key (`key_by_message`), so every candidate links to
    /// the finding it was sent for, whether it showed it again or not (format 1.3). Absent,
    /// and not encoded, otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrinking: Option<String>,
    /// The identity it was sent as, when not the run's default one (format 1.4); absent,
    /// and not encoded, for the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// How a request that asks whether an operation enforces its security carries
/// credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialProbe {
    /// Every credential of the run left out.
    Withheld,
    /// Each credential of the run replaced by one of the same kind the API cannot know.
    Unknown,
    /// The run's bearer token, a JWT, with its header saying `alg: none` and no signature
    /// (format 1.4; a `forgery` series, docs/security.md).
    ForgedAlgNone,
    /// The run's bearer token with its signature left out (format 1.4).
    ForgedUnsigned,
    /// The run's bearer token, a JWT signed with a weak key, re-signed with that key after
    /// a claim was added (format 1.4).
    ForgedWeakKey,
    /// The run's bearer token re-signed with a key no API has after a claim was added
    /// (format 1.4).
    ForgedOtherKey,
    /// A kind a newer probe wrote.
    #[serde(other)]
    Other,
}

/// How a test case was built. Stored as its name (`nominal`, ...); a name this build does
/// not know (from a newer one) reads as [`Strategy::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Generated to be accepted: every value valid, from the plan's sources.
    Nominal,
    /// An accepted request with one thing changed (`mutation` says what).
    Mutation,
    /// Awkward but valid values, or values that push the API.
    Fuzzing,
    /// Generated to break exactly one rule of the document.
    Negative,
    /// A step of a series of calls on one resource.
    Series,
    /// A smaller request sent in place of one that showed a finding (docs/shrinking.md);
    /// it keeps that request's intent, mode and mutation.
    Shrink,
    /// A refused valid request with some values set to those of an accepted one, sent to
    /// find which value the API refuses (docs/pinpointing.md).
    Pinpoint,
    /// An accepted request sent again without its credentials, or with unknown ones, to ask
    /// whether the operation enforces its security (`TestCase::credentials`).
    Auth,
    #[serde(other)]
    Other,
}

impl Strategy {
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::Nominal => "nominal",
            Strategy::Mutation => "mutation",
            Strategy::Fuzzing => "fuzzing",
            Strategy::Negative => "negative",
            Strategy::Series => "series",
            Strategy::Shrink => "shrink",
            Strategy::Pinpoint => "pinpoint",
            Strategy::Auth => "auth",
            Strategy::Other => "other",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bytes of a request or response body: inline when small, else a blob of its own so that
/// an identical body is stored once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyBytes {
    Inline(#[serde(with = "serde_bytes")] Vec<u8>),
    Blob { id: BlobId, len: u64 },
}

impl BodyBytes {
    pub fn len(&self) -> u64 {
        match self {
            BodyBytes::Inline(b) => b.len() as u64,
            BodyBytes::Blob { len, .. } => *len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The request exactly as sent (credentials replaced by [`SECRET_PLACEHOLDER`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub method: String,
    /// Full URL with credentials removed.
    pub url: String,
    /// Header names lower-cased, in the order sent.
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: Option<BodyBytes>,
}

/// A response as received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseRecord {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: Option<BodyBytes>,
    /// The body was longer than the read limit and was cut.
    #[serde(default)]
    pub truncated: bool,
}

impl ResponseRecord {
    /// First header value with this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether this answer asks the client to slow down: 429 Too Many Requests, or 503
    /// with `Retry-After`. Such an answer is obeyed, not judged as a fault.
    pub fn asks_to_wait(&self) -> bool {
        self.status == 429 || (self.status == 503 && self.header("retry-after").is_some())
    }
}

/// Kinds of transport failure, recorded as outcomes rather than crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportErrorKind {
    /// Nothing listens (connection refused), or the connection could not be made.
    Refused,
    /// The host name did not resolve.
    Dns,
    /// The TLS handshake failed.
    Tls,
    /// The connection was reset or closed before a whole reply came.
    Reset,
    /// No whole reply within `send.timeout`.
    Timeout,
    Redirect,
    /// What came back is not HTTP (a bad status line, a header that cannot be read).
    Malformed,
    /// The reply's head is larger than the client reads.
    HeaderTooLarge,
    /// The body ended before the length the reply declared.
    BodyShort,
    /// Still in flight when the run's budget ran out: cancelled, not failed.
    Cancelled,
    /// Anything else, and kinds written by a newer probe.
    #[serde(other)]
    Other,
}

impl TransportErrorKind {
    /// Every kind, in report order.
    pub const ALL: [TransportErrorKind; 11] = [
        TransportErrorKind::Refused,
        TransportErrorKind::Dns,
        TransportErrorKind::Tls,
        TransportErrorKind::Reset,
        TransportErrorKind::Timeout,
        TransportErrorKind::Redirect,
        TransportErrorKind::Malformed,
        TransportErrorKind::HeaderTooLarge,
        TransportErrorKind::BodyShort,
        TransportErrorKind::Cancelled,
        TransportErrorKind::Other,
    ];

    /// The name stored and shown (`header_too_large`).
    pub fn name(self) -> &'static str {
        match self {
            TransportErrorKind::Refused => "refused",
            TransportErrorKind::Dns => "dns",
            TransportErrorKind::Tls => "tls",
            TransportErrorKind::Reset => "reset",
            TransportErrorKind::Timeout => "timeout",
            TransportErrorKind::Redirect => "redirect",
            TransportErrorKind::Malformed => "malformed",
            TransportErrorKind::HeaderTooLarge => "header_too_large",
            TransportErrorKind::BodyShort => "body_short",
            TransportErrorKind::Cancelled => "cancelled",
            TransportErrorKind::Other => "other",
        }
    }

    /// What it means, for a person: `the connection was reset`.
    pub fn describe(self) -> &'static str {
        match self {
            TransportErrorKind::Refused => "the connection was refused",
            TransportErrorKind::Dns => "the host name did not resolve",
            TransportErrorKind::Tls => "the TLS handshake failed",
            TransportErrorKind::Reset => "the connection was reset or closed before a whole reply",
            TransportErrorKind::Timeout => "no whole reply within send.timeout",
            TransportErrorKind::Redirect => "a redirect could not be handled",
            TransportErrorKind::Malformed => "the reply is not valid HTTP",
            TransportErrorKind::HeaderTooLarge => "the reply's headers are too large",
            TransportErrorKind::BodyShort => "the body ended before its declared length",
            TransportErrorKind::Cancelled => "cancelled at the end of the budget",
            TransportErrorKind::Other => "the request failed",
        }
    }
}

/// What came back: a response, or the transport error that replaced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Response(ResponseRecord),
    TransportError {
        kind: TransportErrorKind,
        message: String,
    },
}

impl Outcome {
    pub fn status(&self) -> Option<u16> {
        match self {
            Outcome::Response(r) => Some(r.status),
            Outcome::TransportError { .. } => None,
        }
    }
    pub fn response(&self) -> Option<&ResponseRecord> {
        match self {
            Outcome::Response(r) => Some(r),
            Outcome::TransportError { .. } => None,
        }
    }
}

/// Wall-clock facts of one exchange; outside the test case's identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Milliseconds since the Unix epoch when the request left.
    pub started_ms: u64,
    /// Microseconds until the whole response was read.
    pub elapsed_us: u64,
}

/// One test case, the request it became, and what came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    pub run: RunId,
    /// Order in which the run sent it (0-based).
    pub seq: u64,
    pub case: CaseId,
    pub request: RequestRecord,
    pub outcome: Outcome,
    pub timing: Timing,
    /// The first attempt, when the request was sent twice: it went out on a connection
    /// reused from the pool and failed as a connection the server had closed fails, and
    /// `outcome` is the answer to the one resend on a fresh connection
    /// (`send::client`). Left out when the request was sent once (object format 1.5), so
    /// older interactions keep their ids and every older store reads unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried: Option<FirstAttempt>,
}

/// What sending one request got (`send::Sender::send`): the outcome, and how the first
/// attempt failed when the request was sent twice.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    pub outcome: Outcome,
    /// The first attempt, failed on a reused connection as a closed one fails; `outcome`
    /// is then the resend's, on a fresh connection.
    pub retried: Option<FirstAttempt>,
}

impl From<Outcome> for Sent {
    fn from(outcome: Outcome) -> Sent {
        Sent {
            outcome,
            retried: None,
        }
    }
}

/// How the first attempt of a request sent again on a fresh connection failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstAttempt {
    /// Always `reset` in this build: closed or reset before any byte of the answer.
    pub kind: TransportErrorKind,
    /// Credentials replaced by the placeholder, as in an outcome's message.
    pub message: String,
}

/// What kind of campaign a run is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    #[default]
    Run,
    Replay,
}

/// The manifest written before the first interaction; its id is the run's id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    pub kind: RunKind,
    pub tool_version: String,
    /// `major.minor` of the store format that wrote it.
    pub store_format: String,
    /// The OpenAPI document as loaded (a blob of its own).
    pub document: BlobId,
    /// Where the document came from (file path or URL), for display.
    pub document_source: String,
    /// The effective settings, `group.name` → value.
    pub settings: BTreeMap<String, String>,
    pub seed: u64,
    /// Base URL with credentials removed.
    pub base_url: String,
    pub started_ms: u64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// For a replay: the run, interaction or series it replayed.
    #[serde(default)]
    pub replay_of: Option<String>,
    /// The other files the document's references reached (a description split over
    /// several files), each a blob, by its key: the path relative to the main document's
    /// directory, or the URL it was fetched from. Left out when there are none, so that a
    /// one-file run's id is what it was before the field existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub documents: BTreeMap<String, BlobId>,
    /// The other files the run read and used, each a blob, by `<role>:<path as given>`:
    /// `plan:<file>` (`generation.plan`), `dictionary:<file>` (`generation.dictionaries`,
    /// each file of a directory). Credentials are searched out of them as out of the
    /// traffic. Left out when empty (store format 1.4), so older runs keep their ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, BlobId>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The budget ran out or every planned case was sent.
    Completed,
    /// Stopped by the user (Ctrl-C).
    Interrupted,
    /// The API could not be reached.
    Unreachable,
    /// Every opening-lap answer was 401/403.
    Refused,
}

/// The manifest written last: how the run ended and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    pub run: RunId,
    pub ended_ms: u64,
    pub outcome: RunOutcome,
    pub interactions: u64,
    /// Findings judged at run time.
    pub findings: FindingSetId,
    /// The series the run sent, in the order they ended (store format 1.1; absent, and
    /// read as none, before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesId>,
}

/// What a series is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// The life of one resource: create, read, replace, read, patch, read, delete, read,
    /// delete.
    Lifecycle,
    /// One `OPTIONS` request on a path without parameters.
    Options,
    /// Who may read and change a resource (format 1.4): created and read by the default
    /// identity, then read, changed and deleted by another one or without credentials.
    Access,
    /// Whether a 401 to a request with the run's credentials was about the credentials
    /// (format 1.4): the refused request again, then one the same credentials had accepted.
    Credentials,
    /// Whether an item path answers methods the document does not declare for it (format
    /// 1.4): a fresh resource created and read, then sent each undeclared method.
    Methods,
    /// Whether a value asking an SQL database to wait makes the answer wait (format 1.4):
    /// the request that carried it sent again asking for no wait, for the same wait and for
    /// a longer one.
    Timing,
    /// Whether a login tells a known user from an unknown one (format 1.4): a login of a
    /// configured identity's user with a wrong password, then two of users who do not
    /// exist.
    Enumeration,
    /// Whether the login slows or stops a burst of failed logins (format 1.4, asked only
    /// when `checks.login_not_rate_limited` is on): one user's login with a wrong password,
    /// `series.loginBurst` times.
    LoginBurst,
    /// Whether the API takes a bearer token it did not sign (format 1.4): a request the
    /// token was accepted on, sent again with the token forged (`alg: none`, its
    /// signature stripped, re-signed with a weak key or with another key) and without it.
    Forgery,
    /// Whether one identity can change another's credentials (format 1.4): the other
    /// identity's login as it is and with a wrong password, the default identity's change
    /// of that user's password or e-mail, then the other's login again, with the value
    /// set, and the change undone.
    CredentialChange,
    /// A kind a newer probe wrote.
    #[serde(other)]
    Other,
}

impl SeriesKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            SeriesKind::Lifecycle => "lifecycle",
            SeriesKind::Options => "options",
            SeriesKind::Access => "access",
            SeriesKind::Credentials => "credentials",
            SeriesKind::Methods => "methods",
            SeriesKind::Timing => "timing",
            SeriesKind::Enumeration => "enumeration",
            SeriesKind::LoginBurst => "login_burst",
            SeriesKind::Forgery => "forgery",
            SeriesKind::CredentialChange => "credential_change",
            SeriesKind::Other => "other",
        }
    }
}

/// What one step of a series does, which is what the series oracles read it as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRole {
    /// Creates the resource (a POST on its collection, or a PUT on a key the client chose).
    Create,
    /// The same creating PUT again, on the same key.
    CreateAgain,
    /// A GET of the `Location` the creation answered.
    FollowLocation,
    /// Reads the resource.
    Read,
    /// `OPTIONS` on the resource's path.
    Options,
    /// A creation the document forbids (one field of the wrong type, a name of its own),
    /// to be refused.
    FailedCreate,
    /// Lists the collection after the refused creation.
    ListAfterFailedCreate,
    /// A change the document forbids (one field of the wrong type), to be refused.
    FailedUpdate,
    /// Reads it after the refused change.
    ReadAfterFailedUpdate,
    /// Replaces the resource (PUT).
    Update,
    /// Reads it after the update.
    ReadAfterUpdate,
    /// The same PUT again.
    UpdateAgain,
    /// Reads it after the second PUT.
    ReadAfterUpdateAgain,
    /// Changes part of it (PATCH).
    Patch,
    /// Reads it after the PATCH.
    ReadAfterPatch,
    /// Deletes it.
    Delete,
    /// Reads it after the deletion.
    ReadAfterDelete,
    /// Deletes it again.
    DeleteAgain,
    /// Changes the deleted resource (PATCH, else PUT): to be answered 404 (format 1.2).
    UpdateAfterDelete,
    /// Reads it after that change (format 1.2).
    ReadAfterUpdateAfterDelete,
    /// Reads it as another identity (format 1.4).
    ReadAsOther,
    /// Changes it (PUT, else PATCH) as another identity (format 1.4).
    UpdateAsOther,
    /// Reads it, as its owner, after that change (format 1.4).
    ReadAfterUpdateAsOther,
    /// Changes it (PUT, else PATCH) without credentials (format 1.4).
    UpdateAnonymous,
    /// Reads it, as its owner, after that change (format 1.4).
    ReadAfterUpdateAnonymous,
    /// Deletes it as another identity (format 1.4).
    DeleteAsOther,
    /// Reads it, as its owner, after that deletion (format 1.4).
    ReadAfterDeleteAsOther,
    /// Reads it as another identity once it is deleted (format 1.4).
    ReadDeletedAsOther,
    /// A request answered 401 with the run's credentials, sent again (format 1.4).
    RefusedWithCredentials,
    /// Then a request of the same operation those credentials had accepted (format 1.4).
    AcceptedAfterRefusal,
    /// Changes it (PATCH, else PUT) with properties the document says only the server
    /// writes (`readOnly`) set to new values (format 1.4).
    UpdateReadOnly,
    /// Reads it after that change (format 1.4).
    ReadAfterUpdateReadOnly,
    /// Sends it a method the document does not declare for its path (format 1.4).
    UndeclaredMethod,
    /// A request that carried an SQL wait, sent again asking for none (format 1.4).
    WithoutDelay,
    /// The same request asking for the wait it asked for (format 1.4).
    WithDelay,
    /// The same request asking for a longer wait (format 1.4).
    WithLongerDelay,
    /// A login of a known user with a wrong password (format 1.4).
    KnownUserWrongPassword,
    /// The same login as a user who does not exist (format 1.4).
    UnknownUserWrongPassword,
    /// The same login as another user who does not exist: what varies between the two
    /// varies anyway (format 1.4).
    UnknownUserAgain,
    /// An operation on a path under the item with no read of its own (`PUT
    /// /things/{id}/archive`), sent on the item (object format 1.6, issue 48).
    Action,
    /// Reads the item after the action.
    ReadAfterAction,
    /// The same action again, where it is a PUT (idempotent by RFC 9110).
    ActionAgain,
    /// Reads the item after the second action.
    ReadAfterActionAgain,
    /// One of a burst of logins of a known user with a wrong password (format 1.4).
    FailedLogin,
    /// A request accepted with the run's bearer token, sent again with it (format 1.4).
    WithToken,
    /// The same request without credentials (format 1.4).
    WithoutToken,
    /// The same request with the token forged, as its case's `credentials` says (format
    /// 1.4).
    ForgedToken,
    /// A creation sent again with the values of the creation before it, which the API
    /// holds now: where a value names an object, a second with the same name (format 1.4).
    CreateDuplicate,
    /// The other identity's login, as configured (format 1.4).
    OtherLogin,
    /// The other identity's login with a wrong password: what a refused login looks like
    /// (format 1.4).
    OtherLoginWrong,
    /// The default identity changes the other identity's password or e-mail (format 1.4).
    ChangeOtherCredential,
    /// The other identity's login as configured, after the change (format 1.4).
    OtherLoginAfterChange,
    /// The other identity's login with the value the change set (format 1.4).
    OtherLoginWithNew,
    /// The change sent again with the value the other identity logs in with: undone, so
    /// that its login works for the rest of the run (format 1.4).
    RestoreOtherCredential,
    /// A role a newer probe wrote.
    #[serde(other)]
    Other,
}

impl StepRole {
    pub fn as_str(&self) -> &'static str {
        match self {
            StepRole::Create => "create",
            StepRole::CreateAgain => "create_again",
            StepRole::FollowLocation => "follow_location",
            StepRole::Read => "read",
            StepRole::Options => "options",
            StepRole::FailedCreate => "failed_create",
            StepRole::ListAfterFailedCreate => "list_after_failed_create",
            StepRole::FailedUpdate => "failed_update",
            StepRole::ReadAfterFailedUpdate => "read_after_failed_update",
            StepRole::Update => "update",
            StepRole::ReadAfterUpdate => "read_after_update",
            StepRole::UpdateAgain => "update_again",
            StepRole::ReadAfterUpdateAgain => "read_after_update_again",
            StepRole::Patch => "patch",
            StepRole::ReadAfterPatch => "read_after_patch",
            StepRole::Delete => "delete",
            StepRole::ReadAfterDelete => "read_after_delete",
            StepRole::DeleteAgain => "delete_again",
            StepRole::UpdateAfterDelete => "update_after_delete",
            StepRole::ReadAfterUpdateAfterDelete => "read_after_update_after_delete",
            StepRole::ReadAsOther => "read_as_other",
            StepRole::UpdateAsOther => "update_as_other",
            StepRole::ReadAfterUpdateAsOther => "read_after_update_as_other",
            StepRole::UpdateAnonymous => "update_anonymous",
            StepRole::ReadAfterUpdateAnonymous => "read_after_update_anonymous",
            StepRole::DeleteAsOther => "delete_as_other",
            StepRole::ReadAfterDeleteAsOther => "read_after_delete_as_other",
            StepRole::ReadDeletedAsOther => "read_deleted_as_other",
            StepRole::RefusedWithCredentials => "refused_with_credentials",
            StepRole::AcceptedAfterRefusal => "accepted_after_refusal",
            StepRole::UpdateReadOnly => "update_read_only",
            StepRole::ReadAfterUpdateReadOnly => "read_after_update_read_only",
            StepRole::UndeclaredMethod => "undeclared_method",
            StepRole::WithoutDelay => "without_delay",
            StepRole::WithDelay => "with_delay",
            StepRole::WithLongerDelay => "with_longer_delay",
            StepRole::KnownUserWrongPassword => "known_user_wrong_password",
            StepRole::UnknownUserWrongPassword => "unknown_user_wrong_password",
            StepRole::UnknownUserAgain => "unknown_user_again",
            StepRole::Action => "action",
            StepRole::ReadAfterAction => "read_after_action",
            StepRole::ActionAgain => "action_again",
            StepRole::ReadAfterActionAgain => "read_after_action_again",
            StepRole::FailedLogin => "failed_login",
            StepRole::WithToken => "with_token",
            StepRole::WithoutToken => "without_token",
            StepRole::ForgedToken => "forged_token",
            StepRole::CreateDuplicate => "create_duplicate",
            StepRole::OtherLogin => "other_login",
            StepRole::OtherLoginWrong => "other_login_wrong",
            StepRole::ChangeOtherCredential => "change_other_credential",
            StepRole::OtherLoginAfterChange => "other_login_after_change",
            StepRole::OtherLoginWithNew => "other_login_with_new",
            StepRole::RestoreOtherCredential => "restore_other_credential",
            StepRole::Other => "other",
        }
    }
}

/// One sent step of a series. Its test case holds the bindings to earlier steps
/// ([`SeriesStep::bindings`]); the intent of a step is its role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesStepRecord {
    pub role: StepRole,
    /// The seq of its interaction in the run.
    pub seq: u64,
    pub interaction: InteractionId,
}

/// A sequence of calls on one resource, each step built from the answers before it, judged
/// together by the series oracles (docs/series.md). Stored once the series ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub run: RunId,
    /// Its name in the run, also each step's [`SeriesStep::series`].
    pub name: String,
    pub kind: SeriesKind,
    /// The path template of the resource it is about, e.g. `/pets/{petId}`.
    pub resource: String,
    /// The steps sent, in order.
    pub steps: Vec<SeriesStepRecord>,
}

/// Severity of a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    High,
}

/// One distinct finding: one bug found 1,000 times is one finding with 1,000 references.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable oracle name, e.g. `server_error`.
    pub oracle: String,
    /// Web Fuzzing Commons or HTTP-semantics code where one exists, e.g. `F100`.
    #[serde(default)]
    pub code: Option<String>,
    pub oracle_version: u32,
    pub operation: String,
    pub severity: Severity,
    /// One line for a person.
    pub message: String,
    /// Distinct key by message (operation, status, normalised reply).
    pub key_by_message: String,
    /// Distinct key by kind (operation, status, error title only).
    pub key_by_kind: String,
    /// The first interactions that showed it, in run order: all of them up to
    /// [`Finding::INTERACTIONS_KEPT`], so that a finding seen a million times stays small.
    pub interactions: Vec<InteractionId>,
    /// How many interactions showed it (0 in objects written before the field existed:
    /// read [`Finding::occurrences`]).
    #[serde(default)]
    pub occurrences: u64,
    /// Intent of the test case that describes it (its reproducer's, docs/oracles.md).
    #[serde(default)]
    pub intent: Intent,
    /// Mutation of the test case that describes it, if any.
    #[serde(default)]
    pub mutation: Option<Mutation>,
    /// The series that showed it first, for a finding of a series oracle (store format
    /// 1.1; left out otherwise, so the ids of older finding sets are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<SeriesId>,
    /// The request to reproduce it with: of those that showed it, one built to be accepted
    /// if any (`shrink::intent_rank`), the smallest of those (`shrink::size`), the
    /// earliest of equal ones; set when that is not its first interaction: the one a reproducer is written from
    /// (store format 1.2; left out otherwise, so the ids of older finding sets are
    /// unchanged). Never set for a finding of a series oracle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproducer: Option<InteractionId>,
}

impl Finding {
    /// Most interactions a finding lists.
    pub const INTERACTIONS_KEPT: usize = 1000;

    /// How many interactions showed it.
    pub fn occurrences(&self) -> u64 {
        self.occurrences.max(self.interactions.len() as u64)
    }
}

/// The findings of one judging of a run: at run time, or by a later `recheck`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingSet {
    pub run: RunId,
    /// probe version whose oracles judged.
    pub judged_by: String,
    /// Oracles applied, name → version.
    pub oracles: BTreeMap<String, u32>,
    /// Ordered by (oracle, operation, key_by_message).
    pub findings: Vec<Finding>,
    /// The checks a user wrote that judged (object format 1.6): oracle name
    /// (`check:<name>`) → the check's definition as written (a program check's command
    /// line and file hash), every credential of the run replaced by the placeholder. So a
    /// finding of a check names exactly the check that made it, and `probe diff` can tell
    /// a changed check from a changed API. Absent, and not encoded, when no user check
    /// judged, so the sets of earlier builds keep their ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, String>,
}

/// What one user check did over a judging (a run or a recheck), for the console summary
/// and report.json: not stored (the finding set keeps the check and its findings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCounts {
    /// The check's name, as written (its oracle is `check:<name>`).
    pub name: String,
    /// Exchanges it judged (its `expect` gave true or false).
    pub judged: u64,
    /// Of those, the ones it failed.
    pub failed: u64,
    /// Exchanges it should have judged and could not (an expression failed on them).
    pub not_judged: u64,
    /// Why, for the first exchange it could not judge: the reason and the exchange's seq.
    pub first_not_judged: Option<(String, u64)>,
}

/// Returns `value` with every object's keys sorted, so that equal JSON gives equal bytes.
pub fn canonical_json(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical_json(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical_json).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every kind round-trips by its stored name, and a kind a newer probe writes reads as
    /// `other` (FORMAT.md).
    #[test]
    fn transport_kinds_read_by_name_and_unknown_ones_as_other() {
        for kind in TransportErrorKind::ALL {
            let bytes = rmp_serde::to_vec_named(&kind).unwrap();
            assert_eq!(
                rmp_serde::from_slice::<TransportErrorKind>(&bytes).unwrap(),
                kind
            );
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.name()));
        }
        let newer = rmp_serde::to_vec_named("quantum_decoherence").unwrap();
        assert_eq!(
            rmp_serde::from_slice::<TransportErrorKind>(&newer).unwrap(),
            TransportErrorKind::Other
        );
    }

    #[test]
    fn canonical_json_sorts_nested_keys() {
        let a = canonical_json(json!({"b": 1, "a": {"d": 1, "c": [ {"z": 0, "y": 1} ]}}));
        let b = canonical_json(json!({"a": {"c": [ {"y": 1, "z": 0} ], "d": 1}, "b": 1}));
        assert_eq!(
            rmp_serde::to_vec_named(&a).unwrap(),
            rmp_serde::to_vec_named(&b).unwrap()
        );
        assert_eq!(a.to_string(), r#"{"a":{"c":[{"y":1,"z":0}],"d":1},"b":1}"#);
    }
}

/// Where a recalled value came from: the answer of the interaction sent as `seq` in the
/// same run, at a JSON pointer into its body, or `header:location` for the last path
/// segment of its `Location` header. Stored in a test case as `<seq>#<pointer>`, so
/// `probe replay` can re-send the source first and take the new value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub seq: u64,
    pub pointer: String,
}

/// The pointer of a binding to the last segment of a `Location` header.
pub const LOCATION_POINTER: &str = "header:location";

impl Binding {
    /// `12#/id`.
    pub fn to_text(&self) -> String {
        format!("{}#{}", self.seq, self.pointer)
    }

    /// Parses `12#/id`.
    pub fn parse(text: &str) -> Option<Binding> {
        let (seq, pointer) = text.split_once('#')?;
        Some(Binding {
            seq: seq.parse().ok()?,
            pointer: pointer.to_owned(),
        })
    }

    /// The value this binding names in an answer: the body at the pointer, or the last
    /// segment of the `Location` header.
    pub fn resolve(&self, body: Option<&Value>, location: Option<&str>) -> Option<Value> {
        if self.pointer == LOCATION_POINTER {
            return location.and_then(last_segment).map(Value::String);
        }
        body?.pointer(&self.pointer).cloned()
    }
}

/// The last segment of a `Location`'s path, percent-decoded; `None` when it is empty or
/// holds a `:` (a scheme or a port, not a key).
pub fn last_segment(location: &str) -> Option<String> {
    let path = location.split(['?', '#']).next().unwrap_or("");
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    let decoded = percent_encoding::percent_decode_str(last)
        .decode_utf8()
        .ok()?;
    (!decoded.is_empty() && !decoded.contains(':')).then(|| decoded.into_owned())
}

/// What an identity did in a run, for report.json (counted by `send::identity`, carried by
/// the `run_ended` event's counts).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct IdentitySummary {
    pub name: String,
    /// `fixed` or `login`.
    pub kind: String,
    /// Logins sent (the first included).
    pub logins: u64,
    /// Requests answered 401 with a token, sent again after a new login.
    pub resent_after_401: u64,
    /// Logins again that worked only with a password an accepted request of the run had
    /// set (the run changed the identity's password).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub logins_with_a_set_password: u64,
    /// Set when a login again (after a 401, or a token's lifetime) failed in the middle of
    /// the run: the identity sent nothing more from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<Unusable>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// When and why an identity stopped being usable in the middle of a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Unusable {
    /// Wall clock, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Milliseconds since the identities' first logins (the run's start).
    pub after_ms: u64,
    /// What the login got: `was answered 503`, `answer holds no token at /access_token`.
    pub reason: String,
}
