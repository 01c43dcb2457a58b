//! Turns observations into distinct findings (docs/oracles.md, distinct findings): one bug seen 1,000 times is one
//! finding that names all 1,000 interactions.
//!
//! Findings are keyed by their key *by message*; the key *by kind* is kept beside it so
//! reports can also count coarser groups. The result is ordered, so that judging the same
//! interactions in any order gives the same finding set.
//!
//! Depends on: `model`, `oracle`.

use std::collections::BTreeMap;

use crate::ids::{InteractionId, RunId, SeriesId};
use crate::model::{Finding, FindingSet, TestCase};
use crate::oracle::Observation;

/// Accumulates observations into findings.
#[derive(Debug, Default)]
pub struct FindingCollector {
    findings: BTreeMap<(String, String, String), Pending>,
}

#[derive(Debug)]
struct Pending {
    /// Sequence number of the interaction the description comes from (the earliest of
    /// those with the highest rank).
    first_seq: u64,
    /// Rank of the observation the description comes from.
    rank: u64,
    finding: Finding,
    seen: Vec<(u64, InteractionId)>,
    occurrences: u64,
    /// The request a reproducer is written from (docs/shrinking.md): the strongest intent,
    /// then one that stands alone, then the smallest, then the earliest: (intent rank, not
    /// alone, size, seq, interaction).
    smallest: (u8, bool, usize, u64, InteractionId),
    /// The reproducer's message, intent and mutation: they describe the finding when no
    /// observation ranks above another (the curl line and the message then tell of one
    /// request).
    smallest_described: (String, crate::model::Intent, Option<crate::model::Mutation>),
    /// The steps of the series the finding names (a series oracle's finding) and the
    /// sequence number of the step that showed it: the shortest, then earliest, wins.
    series_at: (usize, u64),
}

impl Pending {
    /// Describes the finding by `obs`, made in the interaction sent as `seq`. The key by
    /// kind goes with the description: it is cut from the same answer, so it must come
    /// from the same observation whatever order the observations arrive in (a run judges
    /// in the order answers come back, a recheck in the order they were stored).
    fn describe_by(&mut self, obs: &Observation, seq: u64, case: &TestCase) {
        self.first_seq = seq;
        self.rank = obs.rank;
        self.finding.message = obs.message.clone();
        self.finding.key_by_kind = obs.key_by_kind.clone();
        self.finding.intent = case.intent;
        self.finding.mutation = case.mutation.clone();
    }
}

impl FindingCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one observation made in interaction `id` (sent as `seq`); returns true when it
    /// starts a new distinct finding.
    pub fn add(&mut self, obs: &Observation, id: InteractionId, seq: u64, case: &TestCase) -> bool {
        let size = (
            crate::shrink::intent_rank(case),
            !crate::shrink::stands_alone(case),
            crate::shrink::size(case),
        );
        let key = (
            obs.oracle.name.to_owned(),
            case.operation.clone(),
            obs.key_by_message.clone(),
        );
        match self.findings.get_mut(&key) {
            Some(pending) => {
                pending.occurrences += 1;
                pending.seen.push((seq, id));
                let candidate = (size.0, size.1, size.2, seq, id);
                if candidate < pending.smallest {
                    pending.smallest = candidate;
                    pending.smallest_described =
                        (obs.message.clone(), case.intent, case.mutation.clone());
                }
                // Keep the earliest interactions only, so memory does not grow with the run.
                if pending.seen.len() >= 2 * Finding::INTERACTIONS_KEPT {
                    pending.seen.sort_unstable();
                    pending.seen.truncate(Finding::INTERACTIONS_KEPT);
                }
                // Keep the highest-ranked, then earliest, interaction's description whatever
                // the arrival order. Once a series shows the finding, the shortest series
                // describes it instead (`add_in_series`).
                if pending.finding.series.is_none()
                    && (obs.rank, std::cmp::Reverse(seq))
                        > (pending.rank, std::cmp::Reverse(pending.first_seq))
                {
                    pending.describe_by(obs, seq, case);
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
                    occurrences: 0,
                    intent: case.intent,
                    mutation: case.mutation.clone(),
                    series: None,
                    reproducer: None,
                };
                self.findings.insert(
                    key,
                    Pending {
                        first_seq: seq,
                        rank: obs.rank,
                        finding,
                        seen: vec![(seq, id)],
                        occurrences: 1,
                        smallest: (size.0, size.1, size.2, seq, id),
                        smallest_described: (
                            obs.message.clone(),
                            case.intent,
                            case.mutation.clone(),
                        ),
                        series_at: (usize::MAX, u64::MAX),
                    },
                );
                true
            }
        }
    }

    /// Adds one observation of a series oracle made in a series of `series_steps` steps: as
    /// [`FindingCollector::add`], and the finding names the shortest series that showed it
    /// (the earliest of the shortest, by the sequence number of the step that showed it),
    /// described by its observation: the series a
    /// reproducer is written from (docs/series.md, shorter series).
    pub fn add_in_series(
        &mut self,
        obs: &Observation,
        step: &crate::oracle::series::StepData,
        series: SeriesId,
        series_steps: usize,
    ) -> bool {
        let (seq, case) = (step.seq, &step.case);
        let new = self.add(obs, step.id, seq, case);
        let key = (
            obs.oracle.name.to_owned(),
            case.operation.clone(),
            obs.key_by_message.clone(),
        );
        if let Some(pending) = self.findings.get_mut(&key) {
            if pending.finding.series.is_none() || (series_steps, seq) < pending.series_at {
                pending.finding.series = Some(series);
                pending.series_at = (series_steps, seq);
                pending.describe_by(obs, seq, case);
            }
        }
        new
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
            checks: BTreeMap::new(),
            findings: self
                .findings
                .into_values()
                .map(|mut p| {
                    p.seen.sort_unstable();
                    p.seen.truncate(Finding::INTERACTIONS_KEPT);
                    p.finding.interactions = p.seen.into_iter().map(|(_, id)| id).collect();
                    p.finding.occurrences = p.occurrences;
                    let smallest = p.smallest.4;
                    if p.finding.series.is_none()
                        && p.finding.interactions.first() != Some(&smallest)
                    {
                        p.finding.reproducer = Some(smallest);
                        if p.rank == 0 {
                            let (message, intent, mutation) = p.smallest_described;
                            p.finding.message = message;
                            p.finding.intent = intent;
                            p.finding.mutation = mutation;
                        }
                    }
                    p.finding
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Digest;
    use crate::model::{Intent, TestCase};
    use crate::oracle::{Observation, SERVER_ERROR};

    fn case() -> TestCase {
        TestCase {
            operation: "getPet".into(),
            method: "GET".into(),
            path: "/pets/{id}".into(),
            parameters: Vec::new(),
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: "random".into(),
            origins: Default::default(),
            intent: Intent::Unknown,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        }
    }

    /// A ranked observation (the slowest answer) describes its finding whatever the
    /// arrival order; equal ranks fall back to the earliest interaction.
    #[test]
    fn the_highest_rank_describes_the_finding() {
        let obs = |rank: u64| Observation {
            oracle: &SERVER_ERROR,
            message: format!("took {rank}"),
            key_by_message: "k".into(),
            key_by_kind: "k".into(),
            rank,
        };
        for order in [[0u64, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut c = FindingCollector::new();
            for seq in order {
                let rank = [5, 9, 9, 1][seq as usize];
                c.add(
                    &obs(rank),
                    InteractionId(Digest::of(&seq.to_le_bytes())),
                    seq,
                    &case(),
                );
            }
            let set = c.finish(RunId(Digest::of(b"r")), "t", BTreeMap::new());
            assert_eq!(set.findings[0].message, "took 9");
            assert_eq!(set.findings[0].occurrences, 4);
        }
    }

    /// The key by kind is cut from the answer that describes the finding, so a run (which
    /// judges answers as they come back) and a recheck (which judges them in store order)
    /// write the same finding.
    #[test]
    fn the_key_by_kind_comes_from_the_describing_answer_whatever_the_arrival_order() {
        let obs = |seq: u64| Observation {
            oracle: &SERVER_ERROR,
            message: "no header".into(),
            key_by_message: "k".into(),
            key_by_kind: format!("k|body {seq}"),
            rank: 0,
        };
        let mut sets = Vec::new();
        for order in [[0u64, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let mut c = FindingCollector::new();
            for seq in order {
                c.add(
                    &obs(seq),
                    InteractionId(Digest::of(&seq.to_le_bytes())),
                    seq,
                    &case(),
                );
            }
            sets.push(c.finish(RunId(Digest::of(b"r")), "t", BTreeMap::new()));
        }
        assert_eq!(sets[0].findings[0].key_by_kind, "k|body 0");
        assert!(sets.windows(2).all(|w| w[0] == w[1]), "{sets:#?}");
    }

    fn step(seq: u64) -> crate::oracle::series::StepData {
        use crate::ids::CaseId;
        use crate::model::{Interaction, Outcome, RequestRecord, Timing, TransportErrorKind};
        crate::oracle::series::StepData {
            role: crate::model::StepRole::Read,
            seq,
            id: InteractionId(Digest::of(&seq.to_le_bytes())),
            case: case(),
            interaction: Interaction {
                run: RunId(Digest::of(b"r")),
                seq,
                case: CaseId(Digest::of(b"case")),
                request: RequestRecord {
                    method: "GET".into(),
                    url: "http://127.0.0.1/pets/1".into(),
                    headers: Vec::new(),
                    body: None,
                },
                outcome: Outcome::TransportError {
                    kind: TransportErrorKind::Reset,
                    message: "not read by the collector".into(),
                },
                timing: Timing {
                    started_ms: 0,
                    elapsed_us: 0,
                },
                retried: None,
            },
            body: None,
        }
    }

    /// Series are judged as they end, in an order that depends on the answers' timing:
    /// the shortest series names the finding, the earliest of the shortest on a tie, and a
    /// longer series judged later never takes the description back.
    #[test]
    fn the_shortest_then_earliest_series_names_and_describes_the_finding_in_any_order() {
        let obs = |seq: u64| Observation {
            oracle: &SERVER_ERROR,
            message: format!("in the series ending at {seq}"),
            key_by_message: "k".into(),
            key_by_kind: format!("k|{seq}"),
            rank: 0,
        };
        // (seq of the showing step, steps of its series)
        let shown = [(10u64, 5usize), (20, 3), (30, 3), (5, 7)];
        let mut sets = Vec::new();
        for order in [[0usize, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]] {
            let mut c = FindingCollector::new();
            for i in order {
                let (seq, steps) = shown[i];
                let series = SeriesId(Digest::of(&seq.to_le_bytes()));
                c.add_in_series(&obs(seq), &step(seq), series, steps);
            }
            sets.push(c.finish(RunId(Digest::of(b"r")), "t", BTreeMap::new()));
        }
        let f = &sets[0].findings[0];
        assert_eq!(f.series, Some(SeriesId(Digest::of(&20u64.to_le_bytes()))));
        assert_eq!(f.message, "in the series ending at 20");
        assert_eq!(f.key_by_kind, "k|20");
        assert!(sets.windows(2).all(|w| w[0] == w[1]), "{sets:#?}");
    }

    #[test]
    fn one_bug_seen_many_times_is_one_finding_that_stays_small() {
        let obs = Observation {
            oracle: &SERVER_ERROR,
            message: "boom".into(),
            key_by_message: "k".into(),
            key_by_kind: "k".into(),
            rank: 0,
        };
        let mut c = FindingCollector::new();
        let total = 5 * Finding::INTERACTIONS_KEPT as u64;
        // Arrival order is not send order.
        for i in (0..total).rev() {
            c.add(
                &obs,
                InteractionId(Digest::of(&i.to_le_bytes())),
                i,
                &case(),
            );
        }
        assert_eq!(c.len(), 1);
        let set = c.finish(
            crate::ids::RunId(Digest::of(b"run")),
            "test",
            Default::default(),
        );
        let f = &set.findings[0];
        assert_eq!(f.occurrences(), total);
        assert_eq!(f.interactions.len(), Finding::INTERACTIONS_KEPT);
        assert_eq!(
            f.interactions[0],
            InteractionId(Digest::of(&0u64.to_le_bytes())),
            "the earliest first"
        );
    }

    /// The smallest request that showed a finding, preferring one built to be accepted,
    /// is its reproducer and describes it, whatever the arrival order.
    #[test]
    fn the_reproducer_is_the_strongest_then_smallest_request_and_describes_the_finding() {
        let obs = |message: &str| Observation {
            oracle: &SERVER_ERROR,
            message: message.into(),
            key_by_message: "k".into(),
            key_by_kind: "k".into(),
            rank: 0,
        };
        let with = |limit: u64, intent: Intent| {
            let mut c = case();
            c.intent = intent;
            c.parameters.push(crate::model::ParameterValue {
                location: crate::model::Location::Query,
                name: "limit".into(),
                value: serde_json::json!(limit),
            });
            c
        };
        let sent = [
            (0u64, "limit 100000", with(100_000, Intent::Acceptable)),
            (1, "limit 5 refused", with(5, Intent::RefusalExpected)),
            (2, "limit 65", with(65, Intent::Acceptable)),
            (3, "limit 650", with(650, Intent::Acceptable)),
        ];
        for order in [[0usize, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut c = FindingCollector::new();
            for i in order {
                let (seq, message, case) = &sent[i];
                c.add(
                    &obs(message),
                    InteractionId(Digest::of(&seq.to_le_bytes())),
                    *seq,
                    case,
                );
            }
            let f = &c
                .finish(RunId(Digest::of(b"r")), "t", BTreeMap::new())
                .findings[0];
            assert_eq!(
                f.reproducer,
                Some(InteractionId(Digest::of(&2u64.to_le_bytes())))
            );
            assert_eq!(f.message, "limit 65");
            assert_eq!(f.interactions.len(), 4);
        }
    }
}
