//! The shrinking book: the first time an ordinary request shows a distinct finding, smaller
//! requests ([`crate::shrink::candidates`]) are sent in its place, one at a time, while
//! they still show the same finding (the same oracle and key: the same operation, status
//! and normalised cause). Each candidate that does becomes the request the next candidates
//! come from; the rest are dropped. A job ends when no candidate is left or its budget
//! (`shrink.requests`) is spent; all jobs together, with the pinpointing searches
//! (`engine::pinpoint`), take at most `shrink.share` of the run's requests (beyond the first
//! [`FREE`]).
//!
//! The book decides nothing about which request is the reproducer: every candidate is an
//! ordinary recorded interaction, judged like any other, and the finding collector keeps
//! the smallest interaction that showed each finding. So a recheck finds the same
//! reproducer without sending anything.
//!
//! Candidates are decided where answers are learned, in sequence order, so the same seed
//! sends the same candidates whatever the number of workers.
//!
//! Depends on: `model`, `spec`, `settings`, `shrink`, `oracle` (whether a finding shrinks).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::model::{Strategy, TestCase};
use crate::settings::ShrinkOptions;
use crate::spec::Api;

/// Candidates every run may send whatever its size, before `shrink.share` applies.
pub const FREE: u64 = 30;

/// One finding being shrunk.
struct Job {
    /// The oracle and distinct key a candidate must show again.
    oracle: &'static str,
    key: String,
    op: usize,
    /// The smallest request that showed the finding so far.
    current: TestCase,
    queue: VecDeque<TestCase>,
    /// The candidate in flight, by sequence number.
    waiting: Option<(u64, TestCase)>,
    spent: u64,
}

/// The jobs of a run.
pub struct ShrinkBook {
    enabled: bool,
    per_finding: u64,
    share: f64,
    /// Every (oracle, key) an ordinary request showed, with the strongest intent rank
    /// (`shrink::intent_rank`) that started a job for it: a finding is shrunk from the
    /// first request that showed it, and again from the first one of a stronger intent (a
    /// valid request after a changed one), which ends the weaker job.
    seen: BTreeMap<(&'static str, String), u8>,
    jobs: Vec<Job>,
    /// Fingerprints of every candidate sent, so none is sent twice.
    tried: BTreeSet<String>,
    sent: u64,
    accepted: u64,
}

impl ShrinkBook {
    pub fn new(options: &ShrinkOptions) -> ShrinkBook {
        ShrinkBook {
            enabled: options.enabled,
            per_finding: options.per_finding,
            share: options.share,
            seen: BTreeMap::new(),
            jobs: Vec::new(),
            tried: BTreeSet::new(),
            sent: 0,
            accepted: 0,
        }
    }

    /// Learns the findings an ordinary request showed (`found`: oracle and distinct key of
    /// each observation): a key seen for the first time starts a job, when anything of the
    /// request can be taken away.
    pub fn observe(
        &mut self,
        api: &Api,
        op: usize,
        case: &TestCase,
        found: &[(&'static str, String)],
    ) {
        if !self.enabled || self.per_finding == 0 {
            return;
        }
        let rank = crate::shrink::intent_rank(case);
        for (oracle, key) in found {
            // A finding not about what was sent (timing, transport): a smaller request
            // would not tell more, and the oracle says so.
            if !crate::oracle::shrinks(oracle) {
                continue;
            }
            match self.seen.get_mut(&(*oracle, key.clone())) {
                Some(best) if *best <= rank => continue,
                Some(best) => {
                    // The reproducer will be of the stronger intent: the weaker job would
                    // only spend the budget.
                    *best = rank;
                    self.jobs
                        .retain(|j| !(j.oracle == *oracle && j.key == *key));
                }
                None => {
                    self.seen.insert((oracle, key.clone()), rank);
                }
            }
            let Some(operation) = api.operations.get(op) else {
                continue;
            };
            let queue: VecDeque<TestCase> = crate::shrink::candidates(api, operation, case)
                .into_iter()
                .filter(|c| !self.tried.contains(&crate::shrink::fingerprint(c)))
                .collect();
            if queue.is_empty() {
                continue;
            }
            self.jobs.push(Job {
                oracle,
                key: key.clone(),
                op,
                current: case.clone(),
                queue,
                waiting: None,
                spent: 0,
            });
        }
    }

    /// Learns a candidate's answer: when it showed its job's finding again, the next
    /// candidates come from it.
    pub fn answered(&mut self, api: &Api, seq: u64, found: &[(&'static str, String)]) {
        let Some(job) = self
            .jobs
            .iter_mut()
            .find(|j| j.waiting.as_ref().is_some_and(|(s, _)| *s == seq))
        else {
            return;
        };
        let Some((_, candidate)) = job.waiting.take() else {
            return;
        };
        let same = found
            .iter()
            .any(|(oracle, key)| *oracle == job.oracle && *key == job.key);
        if same {
            self.accepted += 1;
            let mut from = candidate;
            from.strategy = job.current.strategy;
            job.queue = api
                .operations
                .get(job.op)
                .map(|operation| crate::shrink::candidates(api, operation, &from))
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !self.tried.contains(&crate::shrink::fingerprint(c)))
                .collect();
            job.current = from;
        }
    }

    /// How many follow-up requests (shrinking and pinpointing together) a run that has
    /// sent `requests` may have sent: `shrink.share` of them, beyond the first [`FREE`].
    pub fn allowance(&self, requests: u64) -> u64 {
        (requests as f64 * self.share) as u64 + FREE
    }

    /// The next candidate of every job that waits for none, numbered from `next_seq`, at
    /// most `room` of them. Jobs with nothing left to try end here.
    pub fn ready(&mut self, room: u64, next_seq: u64) -> Vec<(usize, TestCase)> {
        let mut out = Vec::new();
        for job in &mut self.jobs {
            if job.waiting.is_some() {
                continue;
            }
            if out.len() as u64 >= room {
                break;
            }
            while job.spent < self.per_finding {
                let Some(mut candidate) = job.queue.pop_front() else {
                    break;
                };
                if !self.tried.insert(crate::shrink::fingerprint(&candidate)) {
                    continue;
                }
                candidate.strategy = Strategy::Shrink;
                candidate.shrinking = Some(job.key.clone());
                let seq = next_seq + out.len() as u64;
                job.waiting = Some((seq, candidate.clone()));
                job.spent += 1;
                self.sent += 1;
                out.push((job.op, candidate));
                break;
            }
        }
        self.jobs
            .retain(|j| j.waiting.is_some() || (!j.queue.is_empty() && j.spent < self.per_finding));
        out
    }

    /// Whether findings are shrunk at all in this run.
    pub fn enabled(&self) -> bool {
        self.enabled && self.per_finding > 0
    }

    /// Candidates sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Candidates that showed their finding again.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }
}
