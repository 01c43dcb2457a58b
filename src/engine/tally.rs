//! What a run learns from its answers, and what it counts.
//!
//! The scheduler absorbs each batch's answers here, in generation order (never in the
//! order they came back, so the number of workers changes nothing): the memory of answers,
//! the accepted requests kept to be changed, the series, shrinking, pinpointing and
//! authentication books, and the counts that `run_ended` carries ([`super::RunStats`]).
//!
//! Depends on: `model`, `spec`, `mutate` (the accepted requests kept), `events` (the
//! counts), and the engine's own books (`memory`, `series`, `shrink`, `pinpoint`, `auth`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::auth::AuthBook;
use super::pinpoint::PinpointBook;
use super::series::SeriesBook;
use super::shrink::ShrinkBook;
use super::{pace, Answered, OperationCounts};
use crate::generate::memory::{self, Memory};
use crate::generate::strategy::Strategies;
use crate::model::{AcceptedRef, RunOutcome, TestCase, TransportErrorKind};
use crate::spec::Api;

/// What the answers taught the run so far, and its counts.
pub(super) struct Tally {
    /// The series in flight: their steps' answers are theirs alone.
    pub(super) series: SeriesBook,
    /// The findings being shrunk: their candidates' answers are theirs alone.
    pub(super) shrink: ShrinkBook,
    /// The refusals being pinned down: their requests' answers are theirs alone.
    pub(super) pinpoint: PinpointBook,
    /// The operations asked whether they enforce their security.
    auth: AuthBook,
    pub(super) memory: Memory,
    pub(super) answered: u64,
    /// By operation index: names are made once, at the end, not for every answer.
    per_operation: BTreeMap<usize, OperationCounts>,
    by_kind: BTreeMap<String, u64>,
    /// Scratch space for the kind of each answer, so that counting one allocates nothing.
    kind: String,
    opening_statuses: Vec<Option<u16>>,
    opening_refused_transport: u64,
}

impl Tally {
    pub(super) fn new(
        series: SeriesBook,
        shrink: ShrinkBook,
        pinpoint: PinpointBook,
        auth: AuthBook,
        memory: Memory,
    ) -> Tally {
        Tally {
            series,
            shrink,
            pinpoint,
            auth,
            memory,
            answered: 0,
            per_operation: BTreeMap::new(),
            by_kind: BTreeMap::new(),
            kind: String::new(),
            opening_statuses: Vec::new(),
            opening_refused_transport: 0,
        }
    }

    /// The next requests that ask whether an operation enforces its security, of the
    /// findings being shrunk and of the refusals being pinned down, numbered from `next_seq`, within the share of the run they may take; `requests` is
    /// how many requests the run has sent so far.
    pub(super) fn follow_ups(
        &mut self,
        api: &Api,
        requests: u64,
        next_seq: u64,
    ) -> Vec<(usize, TestCase)> {
        let allowed = self.shrink.allowance(requests);
        let room = |tally: &Tally| {
            allowed.saturating_sub(tally.shrink.sent() + tally.pinpoint.sent() + tally.auth.sent())
        };
        // The few requests that ask whether an operation enforces its security go first.
        let mut out = self.auth.ready(room(self));
        let next = next_seq + out.len() as u64;
        out.extend(self.shrink.ready(room(self), next));
        let next = next_seq + out.len() as u64;
        out.extend(self.pinpoint.ready(api, room(self), next));
        out
    }

    /// Learns from one batch's answers (and late ones of earlier batches), in sequence
    /// order.
    pub(super) fn absorb(
        &mut self,
        api: &Api,
        strategies: &mut Strategies<'_>,
        mut answered: Vec<Answered>,
    ) {
        // Seqs are distinct, so an unstable sort gives the one order, in place (a stable sort
        // allocated a buffer of whole answers for every batch).
        answered.sort_unstable_by_key(|a| a.seq);
        self.answered += answered.len() as u64;
        // The remembered values these answers' DELETEs named (see the 404 rule below).
        let deleted: Vec<Value> = answered
            .iter()
            .filter(|a| a.case.method == "DELETE")
            .flat_map(|a| remembered_path_values(&a.case))
            .cloned()
            .collect();
        for a in answered {
            let op = &api.operations[a.op];
            let counts = self.per_operation.entry(a.op).or_default();
            counts.requests += 1;
            counts.time_spent += a.elapsed;
            counts.slowest = counts.slowest.max(a.elapsed);
            if a.case.mutation.is_none() {
                for p in a
                    .case
                    .parameters
                    .iter()
                    .filter(|p| p.location == crate::model::Location::Path)
                {
                    let observed =
                        a.case.origins.get(&p.name) == Some(&crate::model::ValueOrigin::Observed);
                    match counts.path_parameters_from_answers.get_mut(&p.name) {
                        Some(seen) => *seen |= observed,
                        None => {
                            counts
                                .path_parameters_from_answers
                                .insert(p.name.clone(), observed);
                        }
                    }
                }
            }
            count_answer(counts, &op.key.method, &a);
            self.kind.clear();
            write_kind(&mut self.kind, &a.case);
            match self.by_kind.get_mut(self.kind.as_str()) {
                Some(n) => *n += 1,
                None => {
                    self.by_kind.insert(self.kind.clone(), 1);
                }
            }
            // A series step's answer is its series' alone: it teaches the run nothing.
            if a.case.strategy == crate::model::Strategy::Series {
                self.series.answered(api, a.seq, a.case, a.recorded);
                continue;
            }
            // A smaller request sent in place of one that showed a finding teaches nothing
            // either; it tells its shrinking job whether it showed the finding again.
            if a.case.strategy == crate::model::Strategy::Shrink {
                self.shrink.answered(api, a.seq, &a.found);
                continue;
            }
            // So does a request sent to pin down a refused value.
            if a.case.strategy == crate::model::Strategy::Pinpoint {
                self.pinpoint.answered(api, a.seq, a.case_id, a.status);
                continue;
            }
            // And one sent without the run's credentials: its answer is judged, nothing more.
            if a.case.strategy == crate::model::Strategy::Auth {
                continue;
            }
            self.auth.observe(api, a.op, &a.case, a.status);
            if !a.found.is_empty() {
                self.shrink.observe(api, a.op, &a.case, &a.found);
            }
            self.pinpoint
                .observe(api, a.op, a.seq, a.case_id, &a.case, a.status);
            self.series.offer(api, a.op, &a.case, a.status);
            // Learn only answers that do not depend on what else ran at the same time:
            // creations (POST, PUT), and the opening lap's reads (nothing is written while
            // they run); never the answer to a changed or pushing request.
            let learnable = a.case.strategy == crate::model::Strategy::Nominal
                && (matches!(op.key.method.as_str(), "POST" | "PUT") || a.phase.opening_read);
            let success = a.status.is_some_and(|s| (200..300).contains(&s));
            if learnable && success {
                let links = memory::links_of(api, op, a.status);
                self.memory.learn_answer(&memory::Answer {
                    method: &op.key.method,
                    path: &op.key.path,
                    seq: a.seq,
                    body: a.learned.as_ref(),
                    location: a.location.as_deref(),
                    path_values: a
                        .case
                        .parameters
                        .iter()
                        .filter(|p| p.location == crate::model::Location::Path)
                        .map(|p| (p.name.as_str(), &p.value))
                        .collect(),
                    request: Some(&a.case),
                    links: &links,
                });
            }
            // A remembered value whose use was answered 404 names nothing any more; unless
            // these answers also deleted it: then whether this use came before or after the
            // DELETE depends on which worker was faster, and forgetting it would make the
            // cases after this batch depend on that too. Only the deepest path value is
            // blamed: `/dags/{dag_id}/dagRuns/{dag_run_id}` answered 404 says the run is
            // not there, not that the DAG is not (Airflow: every DAG id was forgotten, one
            // 404 of an invented run id after another, and with them the runs they held).
            if a.status == Some(404) && a.case.mutation.is_none() {
                if let Some(value) = blamed_path_value(&op.key.path, &a.case) {
                    if !deleted.contains(value) {
                        self.memory.forget(value);
                    }
                }
            }
            if a.phase.opening {
                self.opening_statuses.push(a.status);
                if matches!(a.transport, Some(TransportErrorKind::Refused)) {
                    self.opening_refused_transport += 1;
                }
            }
            // Last: the accepted memory takes the case.
            if let Some(status) = a.status {
                strategies.offer(
                    a.case,
                    AcceptedRef {
                        case: a.case_id,
                        seq: a.seq,
                    },
                    status,
                );
            }
        }
    }

    /// Requests by operation name and by kind, for the run's result.
    pub(super) fn into_counts(
        self,
        api: &Api,
        mut paces: BTreeMap<usize, pace::OperationPace>,
    ) -> (BTreeMap<String, OperationCounts>, BTreeMap<String, u64>) {
        let per_operation = self
            .per_operation
            .into_iter()
            .map(|(op, mut counts)| {
                counts.pace = paces.remove(&op).unwrap_or_default();
                (api.operations[op].key.name(), counts)
            })
            .collect();
        (per_operation, self.by_kind)
    }

    /// Every opening-lap request so far failed to connect.
    pub(super) fn unreachable(&self) -> bool {
        self.opening_refused_transport > 0
            && self.opening_refused_transport == self.opening_statuses.len() as u64
    }

    /// Every opening-lap answer so far was 401 or 403: the API asks for credentials.
    pub(super) fn refused(&self) -> bool {
        !self.opening_statuses.is_empty()
            && self
                .opening_statuses
                .iter()
                .all(|s| matches!(s, Some(401) | Some(403)))
    }

    /// How the run ended, from the opening lap's answers: unreachable when nothing ever
    /// answered in HTTP, whatever the transport failure was.
    pub(super) fn outcome(&self) -> RunOutcome {
        let http_answers: u64 = self
            .per_operation
            .values()
            .map(|c| c.requests - c.by_class[0])
            .sum();
        if self.unreachable() || (self.answered > 0 && http_answers == 0) {
            RunOutcome::Unreachable
        } else if self.refused() {
            RunOutcome::Refused
        } else {
            RunOutcome::Completed
        }
    }
}

/// Counts one answer in its operation's counts: its status class, or, for a request of
/// another method than `method` (the operation's), apart in `other_methods`; 404s, 429s and
/// 503s; the kind of a transport failure.
fn count_answer(counts: &mut OperationCounts, method: &str, a: &Answered) {
    let class = a
        .status
        .map(|s| (s / 100).clamp(1, 5) as usize)
        .unwrap_or(0);
    // An operation is answered 2xx (or 404) only by a request of its own method:
    // the OPTIONS a series sends to its path is counted apart.
    let own = a.case.method.eq_ignore_ascii_case(method);
    match a.status {
        Some(status) if !own => {
            *counts.other_methods.entry(status).or_insert(0) += 1;
        }
        _ => counts.by_class[class] += 1,
    }
    match a.status {
        // Whatever the method: the API will not serve anyone now (a run answered nothing
        // but 429s is told so, and the OPTIONS of its series are among those answers).
        Some(429 | 503) => counts.unavailable += 1,
        _ if !own => {}
        Some(404) => counts.not_found += 1,
        _ => {}
    }
    if let Some(kind) = a.transport {
        let at = TransportErrorKind::ALL.iter().position(|k| *k == kind);
        counts.transport[at.unwrap_or(TransportErrorKind::ALL.len() - 1)] += 1;
    }
}

/// The path values of `case` that came from the run's memory of answers.
fn remembered_path_values(case: &TestCase) -> impl Iterator<Item = &Value> {
    case.parameters
        .iter()
        .filter(|p| {
            p.location == crate::model::Location::Path
                && case.origins.get(&p.name) == Some(&crate::model::ValueOrigin::Observed)
        })
        .map(|p| &p.value)
}

/// The path value a 404 of `case` (sent to the template `path`) blames: the one of the
/// parameter that comes last in the path, when it came from the memory of answers. The
/// values before it name the parents the item was looked for under; a 404 there says
/// nothing of them, and an invented last value explains the 404 by itself.
fn blamed_path_value<'c>(path: &str, case: &'c TestCase) -> Option<&'c Value> {
    let last = case
        .parameters
        .iter()
        .filter(|p| p.location == crate::model::Location::Path)
        .filter_map(|p| path.find(&format!("{{{}}}", p.name)).map(|at| (at, p)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, p)| p)?;
    (case.origins.get(&last.name) == Some(&crate::model::ValueOrigin::Observed))
        .then_some(&last.value)
}

/// What a request was, for the counts, written into `out`: `nominal`, `changed:<kind>`,
/// `negative`, `pushing`, `series`, `shrink`, `pinpoint`, `auth`.
fn write_kind(out: &mut String, case: &TestCase) {
    use crate::model::Strategy;
    match (&case.mutation, case.strategy) {
        (_, Strategy::Shrink) => out.push_str("shrink"),
        (_, Strategy::Pinpoint) => out.push_str("pinpoint"),
        (_, Strategy::Auth) => out.push_str("auth"),
        (Some(m), _) => {
            out.push_str("changed:");
            out.push_str(m.kind.as_str());
        }
        (None, Strategy::Fuzzing) if case.intent == crate::model::Intent::Pushing => {
            out.push_str("pushing")
        }
        (None, Strategy::Negative) => out.push_str("negative"),
        (None, Strategy::Series) => out.push_str("series"),
        _ => out.push_str("nominal"),
    }
}
