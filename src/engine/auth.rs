//! The authentication book: the first time an operation that declares security accepts a
//! request carrying this run's credentials, the same request is sent twice more, once with
//! every credential withheld and once with credentials of the same kinds that the API
//! cannot know (`TestCase::credentials`). Their answers are judged like any other:
//! `ignored_authentication` reports a 2xx (docs/oracles.md).
//!
//! Only when the run has credentials: without them every request is already sent without,
//! and judged so. Decided where answers are learned, in sequence order; the requests share
//! the follow-up budget with shrinking and pinpointing (`shrink.share`).
//!
//! Depends on: `model`, `spec`.

use std::collections::BTreeSet;

use crate::model::{CredentialProbe, Strategy, TestCase};
use crate::spec::Api;

/// The requests of a run that ask whether an operation enforces its security.
pub struct AuthBook {
    enabled: bool,
    /// Operations already asked.
    asked: BTreeSet<usize>,
    queue: Vec<(usize, TestCase)>,
    sent: u64,
}

impl AuthBook {
    /// `with_credentials`: whether this run sends any; `judged`: whether
    /// `ignored_authentication` judges this run.
    pub fn new(with_credentials: bool, judged: bool) -> AuthBook {
        AuthBook {
            enabled: with_credentials && judged,
            asked: BTreeSet::new(),
            queue: Vec::new(),
            sent: 0,
        }
    }

    /// Learns an ordinary answer: an operation's first accepted request, if it declares
    /// security, is asked again without its credentials and with unknown ones.
    pub fn observe(&mut self, api: &Api, op: usize, case: &TestCase, status: Option<u16>) {
        if !self.enabled
            || case.strategy != Strategy::Nominal
            || case.mutation.is_some()
            || case
                .series_step
                .as_ref()
                .is_some_and(|s| s.series != crate::model::SERIES_MEMORY)
            || !status.is_some_and(|s| (200..300).contains(&s))
        {
            return;
        }
        let Some(operation) = api.operations.get(op) else {
            return;
        };
        if !crate::oracle::declares_security(api, operation) || !self.asked.insert(op) {
            return;
        }
        for probe in [CredentialProbe::Withheld, CredentialProbe::Unknown] {
            let mut asked = case.clone();
            asked.strategy = Strategy::Auth;
            asked.credentials = Some(probe);
            self.queue.push((op, asked));
        }
    }

    /// The requests waiting, at most `room` of them.
    pub fn ready(&mut self, room: u64) -> Vec<(usize, TestCase)> {
        let n = usize::try_from(room)
            .unwrap_or(usize::MAX)
            .min(self.queue.len());
        self.sent += n as u64;
        self.queue.drain(..n).collect()
    }

    /// Requests sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}
