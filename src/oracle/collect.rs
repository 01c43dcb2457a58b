//! Turns observations into distinct findings (design §5): one bug seen 1,000 times is one
//! finding that names all 1,000 interactions.
//!
//! Findings are keyed by their key *by message*; the key *by kind* is kept beside it so
//! reports can also count coarser groups. The result is ordered, so that judging the same
//! interactions in any order gives the same finding set.
//!
//! Depends on: `model`, `oracle`.

use std::collections::BTreeMap;

use crate::ids::{InteractionId, RunId};
use crate::model::{Finding, FindingSet, TestCase};
use crate::oracle::Observation;

/// Accumulates observations into findings.
#[derive(Debug, Default)]
pub struct FindingCollector {
    findings: BTreeMap<(String, String, String), Pending>,
}

#[derive(Debug)]
struct Pending {
    /// Sequence number of the interaction the description comes from (the earliest).
    first_seq: u64,
    finding: Finding,
    seen: Vec<(u64, InteractionId)>,
}

impl FindingCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one observation made in interaction `id` (sent as `seq`); returns true when it
    /// starts a new distinct finding.
    pub fn add(&mut self, obs: &Observation, id: InteractionId, seq: u64, case: &TestCase) -> bool {
        let key = (
            obs.oracle.name.to_owned(),
            case.operation.clone(),
            obs.key_by_message.clone(),
        );
        match self.findings.get_mut(&key) {
            Some(pending) => {
                pending.seen.push((seq, id));
                // Keep the earliest interaction's description whatever the arrival order.
                if seq < pending.first_seq {
                    pending.first_seq = seq;
                    pending.finding.message = obs.message.clone();
                    pending.finding.intent = case.intent;
                    pending.finding.mutation = case.mutation.clone();
                }
                false
            }
            None => {
                let finding = Finding {
                    oracle: obs.oracle.name.to_owned(),
                    code: obs.oracle.code.map(str::to_owned),
                    oracle_version: obs.oracle.version,
                    operation: case.operation.clone(),
                    severity: obs.oracle.severity,
                    message: obs.message.clone(),
                    key_by_message: obs.key_by_message.clone(),
                    key_by_kind: obs.key_by_kind.clone(),
                    interactions: Vec::new(),
                    intent: case.intent,
                    mutation: case.mutation.clone(),
                };
                self.findings.insert(
                    key,
                    Pending {
                        first_seq: seq,
                        finding,
                        seen: vec![(seq, id)],
                    },
                );
                true
            }
        }
    }

    /// Number of distinct findings so far.
    pub fn len(&self) -> usize {
        self.findings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// The finding set, findings ordered by (oracle, operation, key); each finding's
    /// interactions in the order they were sent.
    pub fn finish(self, run: RunId, judged_by: &str, oracles: BTreeMap<String, u32>) -> FindingSet {
        FindingSet {
            run,
            judged_by: judged_by.to_owned(),
            oracles,
            findings: self
                .findings
                .into_values()
                .map(|mut p| {
                    p.seen.sort();
                    p.finding.interactions = p.seen.into_iter().map(|(_, id)| id).collect();
                    p.finding
                })
                .collect(),
        }
    }
}
