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

    fn shrinks(&self) -> bool {
        // No answer at all: what failed is the transport, not what was sent.
        false
    }

    fn no_reply(&self, exchange: &Exchange<'_>, kind: TransportErrorKind) -> Option<Observation> {
        check(exchange, kind)
    }
}

/// A request that got no HTTP answer: one finding per operation and kind of failure. A
/// request cancelled at the end of the budget failed nothing.
///
/// A reset on a connection reused from the pool is no answer of the API's: the server had
/// closed that connection (after an answer, at its keep-alive timeout), and the sender
/// sent the request again on a fresh connection (`send::client`). What is judged is that
/// second attempt: an answer there is judged as any answer, and a failure there is this
/// finding, which then says the request failed twice. (An interaction stored before
/// resends existed has no first attempt and is judged as it was.)
fn check(exchange: &Exchange<'_>, kind: TransportErrorKind) -> Option<Observation> {
    if kind == TransportErrorKind::Cancelled {
        return None;
    }
    let name = exchange.operation.key.name();
    let again = match &exchange.interaction.retried {
        Some(first) => format!(
            ", on a fresh connection after a first attempt on a reused one failed ({})",
            first.kind.name()
        ),
        None => String::new(),
    };
    Some(per_operation(
        &INFO,
        &name,
        kind.name(),
        format!(
            "{name} got no HTTP answer: {} ({}){again}",
            kind.describe(),
            kind.name()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CaseId, Digest, RunId};
    use crate::model::{FirstAttempt, Interaction, RequestRecord, Timing};

    fn interaction(retried: Option<FirstAttempt>) -> Interaction {
        Interaction {
            run: RunId(Digest::of(b"run")),
            seq: 0,
            case: CaseId(Digest::of(b"case")),
            request: RequestRecord {
                method: "GET".into(),
                url: "http://127.0.0.1/ping".into(),
                headers: Vec::new(),
                body: None,
            },
            outcome: Outcome::TransportError {
                kind: TransportErrorKind::Reset,
                message: "connection closed before message completed".into(),
            },
            timing: Timing {
                started_ms: 0,
                elapsed_us: 0,
            },
            retried,
        }
    }

    /// A reset that a fresh connection got too is a finding that says so; one without a
    /// first attempt (a fresh connection, or a store older than resends) is judged as
    /// before, with the same key either way.
    #[test]
    fn a_reset_after_a_resend_is_a_finding_naming_both_attempts() {
        let api = crate::spec::parse(
            b"openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /ping:\n    get:\n      operationId: ping\n      responses: {'200': {description: ok}}\n",
            "t.yaml",
            None,
        )
        .unwrap();
        let op = &api.operations[0];
        let case = crate::model::TestCase {
            operation: op.key.name(),
            method: "GET".into(),
            path: op.key.path.clone(),
            parameters: Vec::new(),
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: "random".into(),
            origins: Default::default(),
            intent: crate::model::Intent::Acceptable,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let judge = |retried| {
            let interaction = interaction(retried);
            let exchange = Exchange {
                id: crate::ids::InteractionId(crate::ids::Digest::of(b"i")),
                operation: op,
                case: &case,
                interaction: &interaction,
                response_body: None,
                response_json: None,
            };
            check(&exchange, TransportErrorKind::Reset).unwrap()
        };
        let once = judge(None);
        let twice = judge(Some(FirstAttempt {
            kind: TransportErrorKind::Reset,
            message: "connection reset by peer".into(),
        }));
        assert_eq!(once.key_by_message, twice.key_by_message);
        assert!(!once.message.contains("fresh"), "{}", once.message);
        assert!(
            twice.message.contains("on a fresh connection") && twice.message.contains("(reset)"),
            "{}",
            twice.message
        );
    }
}
