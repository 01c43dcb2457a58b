//! What a run did, counted: the statistics the `run_ended` event carries.
//!
//! The engine counts while it runs and hands the counts over once, in
//! [`Event::RunEnded`](super::Event::RunEnded), as nextest's runner hands its run statistics
//! to its reporters in its last event. The reports (report.json, JUnit, the console
//! summary, the page) are built from these counts and the store, never from the engine's
//! own types, so a report can be built by anything that consumes the stream.
//!
//! Depends on: `ids`, `model`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ids::SeriesId;
use crate::model::{CheckCounts, IdentitySummary, TransportErrorKind};

/// What a campaign did, beyond its outcome, its interaction count and its findings (which
/// [`Event::RunEnded`](super::Event::RunEnded) and the stored run end carry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Counts by operation name.
    pub per_operation: BTreeMap<String, OperationCounts>,
    /// Requests by kind: `nominal`, `changed:<kind>`, `pushing`.
    pub by_kind: BTreeMap<String, u64>,
    /// Operations left out at run time, with the reason.
    pub skipped: Vec<(String, String)>,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// The series recorded, in the order they ended.
    pub series: Vec<SeriesId>,
    /// Requests sent as series steps.
    pub series_steps: u64,
    /// By series oracle: the series it could judge, and the time their steps took.
    pub series_judged: BTreeMap<String, (u64, Duration)>,
    /// By resource (item path): the variations its life cycle series tried, each with the
    /// series that tried it and those of them that showed something new.
    pub series_variations: Vec<SeriesVariations>,
    /// Smaller requests sent in place of ones that showed a finding, and how many of them
    /// showed it again.
    pub shrink_sent: u64,
    pub shrink_accepted: u64,
    /// What each identity did (logins, requests sent again after a 401).
    pub identities: Vec<IdentitySummary>,
    /// What each user check did (judged, failed, not judged), in the order they were read.
    pub checks: Vec<CheckCounts>,
}

/// The variations one resource's series got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeriesVariations {
    pub resource: String,
    /// (variation, series, of them those that showed something new).
    pub variations: Vec<(String, u64, u64)>,
}

impl RunStats {
    /// Requests that got an HTTP answer (any status).
    pub fn answered(&self) -> u64 {
        self.per_operation
            .values()
            .map(|c| c.requests - c.by_class[0])
            .sum()
    }

    /// Requests that got no HTTP answer, by kind, over the whole run.
    pub fn transport_totals(&self) -> OperationCounts {
        let mut all = OperationCounts::default();
        for c in self.per_operation.values() {
            for (sum, n) in all.transport.iter_mut().zip(c.transport) {
                *sum += n;
            }
        }
        all
    }
}

/// Counts of one operation's requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationCounts {
    pub requests: u64,
    /// Requests answered 2xx, 3xx, 4xx, 5xx; index 0 is transport errors.
    pub by_class: [u64; 6],
    /// Requests that got no HTTP answer, by kind (in [`TransportErrorKind::ALL`] order).
    pub transport: [u64; TransportErrorKind::ALL.len()],
    /// Path parameters of unchanged requests, each with whether any value for it ever came
    /// from the memory of answers (`false`: probe only invented values for it).
    pub path_parameters_from_answers: BTreeMap<String, bool>,
    /// Answers to requests of another method sent to the operation's path (a series'
    /// OPTIONS, a method the document does not declare), by status: counted apart from
    /// `by_class` and `not_found`, since they say nothing of whether the operation itself
    /// answers 2xx.
    pub other_methods: BTreeMap<u16, u64>,
    /// Requests of the operation's own method answered 404.
    pub not_found: u64,
    /// Requests answered 429 Too Many Requests or 503 Service Unavailable: answers that say
    /// nothing of the operation, only that the API will not serve it now.
    pub unavailable: u64,
    /// Time from sending to the answer's end, summed over the operation's requests.
    pub time_spent: Duration,
    /// The slowest request.
    pub slowest: Duration,
    /// What the scheduler did about the operation's pace (slow lane, pauses).
    pub pace: OperationPace,
}

impl OperationCounts {
    /// Requests that got no HTTP answer, by kind name, leaving out kinds never seen.
    pub fn transport_by_kind(&self) -> impl Iterator<Item = (TransportErrorKind, u64)> + '_ {
        TransportErrorKind::ALL
            .iter()
            .zip(self.transport)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
    }
}

/// What the scheduler's pace did about one operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationPace {
    /// Requests sent on the slow lane.
    pub slow_requests: u64,
    /// Cases planned but never sent: the slow lane or a pause had no room for them.
    pub not_sent: u64,
    /// Answers that asked probe to wait.
    pub throttled: u64,
}
