//! `transport_failure`: a request got no HTTP answer; one finding per operation and kind.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "transport_failure",
    code: None,
    version: 1,
    severity: Severity::Medium,
    title: "no HTTP answer: the connection was reset, timed out or the reply was broken",
    setting: declared(
        "checks.transport_failure",
        Kind::Bool,
        "true",
        "a request got no HTTP answer (reset, timeout, broken reply): one finding per operation and kind",
    ),
};

pub struct TransportFailure;

impl Judge for TransportFailure {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn no_reply(&self, exchange: &Exchange<'_>, kind: TransportErrorKind) -> Option<Observation> {
        check(exchange, kind)
    }
}

/// A request that got no HTTP answer: one finding per operation and kind of failure. A
/// request cancelled at the end of the budget failed nothing.
fn check(exchange: &Exchange<'_>, kind: TransportErrorKind) -> Option<Observation> {
    if kind == TransportErrorKind::Cancelled {
        return None;
    }
    let name = exchange.operation.key.name();
    Some(per_operation(
        &INFO,
        &name,
        kind.name(),
        format!(
            "{name} got no HTTP answer: {} ({})",
            kind.describe(),
            kind.name()
        ),
    ))
}
