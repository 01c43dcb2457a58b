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
    /// Every request that timed out (`transport_failure`), with when it was in flight: a
    /// server-wide stall is told from them when the set is finished.
    timeouts: Vec<TimedOut>,
}

/// A request that got no answer within `send.timeout`.
#[derive(Debug, Clone)]
struct TimedOut {
    seq: u64,
    id: InteractionId,
    /// When it left and when probe gave up on it, in milliseconds since the epoch.
    from: u64,
    until: u64,
    /// Its finding's key.
    key: (String, String, String),
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

    /// Adds one observation made in `interaction` (as [`FindingCollector::add`]), noting
    /// when a request that timed out was in flight, for [`FindingCollector::finish`] to tell
    /// a server-wide stall.
    pub fn add_exchange(
        &mut self,
        obs: &Observation,
        id: InteractionId,
        interaction: &crate::model::Interaction,
        case: &TestCase,
    ) -> bool {
        let new = self.add(obs, id, interaction.seq, case);
        if obs.oracle.name == crate::oracle::TRANSPORT_FAILURE.name
            && matches!(
                interaction.outcome,
                crate::model::Outcome::TransportError {
                    kind: crate::model::TransportErrorKind::Timeout,
                    ..
                }
            )
        {
            let from = interaction.timing.started_ms;
            self.timeouts.push(TimedOut {
                seq: interaction.seq,
                id,
                from,
                until: from + interaction.timing.elapsed_us / 1000,
                key: (
                    obs.oracle.name.to_owned(),
                    case.operation.clone(),
                    obs.key_by_message.clone(),
                ),
            });
        }
        new
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
    pub fn finish(
        mut self,
        run: RunId,
        judged_by: &str,
        oracles: BTreeMap<String, u32>,
    ) -> FindingSet {
        self.attribute_stalls();
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

impl FindingCollector {
    /// Server-wide stalls (docs/oracles.md): requests of two or more operations that timed
    /// out, each sent while an earlier one was still in flight (or within one timeout of the
    /// last giving up), starting from the first that never came back. Each such stall is one finding, of the operation of that first
    /// request, which is its reproducer; the later timeouts are its consequence and are
    /// counted in it rather than each operation's own. Timeouts of one operation alone,
    /// or apart in time, stay per operation.
    fn attribute_stalls(&mut self) {
        let mut timeouts = std::mem::take(&mut self.timeouts);
        timeouts.sort_by_key(|t| (t.seq, t.id));
        timeouts.dedup_by_key(|t| t.id);
        let mut chains: Vec<Vec<TimedOut>> = Vec::new();
        // A request sent within one timeout of the last giving up is still in the stall:
        // with few workers, each is sent when the one before it gave up.
        let mut until: u64 = 0;
        let mut slack: u64 = 0;
        for t in timeouts {
            let waited = t.until.saturating_sub(t.from);
            match chains.last_mut() {
                Some(chain) if t.from <= until.saturating_add(slack) => {
                    slack = slack.max(waited);
                    until = until.max(t.until);
                    chain.push(t);
                }
                _ => {
                    until = t.until;
                    slack = waited;
                    chains.push(vec![t]);
                }
            }
        }
        for chain in chains {
            let operations: std::collections::BTreeSet<&str> =
                chain.iter().map(|t| t.key.1.as_str()).collect();
            if operations.len() < 2 {
                continue;
            }
            let trigger = &chain[0];
            let mut others: BTreeMap<String, u64> = BTreeMap::new();
            for t in &chain[1..] {
                if t.key == trigger.key {
                    continue;
                }
                *others.entry(t.key.1.clone()).or_default() += 1;
                if let Some(p) = self.findings.get_mut(&t.key) {
                    p.occurrences = p.occurrences.saturating_sub(1);
                    p.seen.retain(|(_, id)| *id != t.id);
                    if p.occurrences == 0 {
                        self.findings.remove(&t.key);
                    }
                }
                if let Some(p) = self.findings.get_mut(&trigger.key) {
                    p.occurrences += 1;
                    p.seen.push((t.seq, t.id));
                }
            }
            let Some(p) = self.findings.get_mut(&trigger.key) else {
                continue;
            };
            let later: u64 = others.values().sum();
            let names: Vec<&str> = others.keys().map(String::as_str).take(5).collect();
            let more = if others.len() > names.len() {
                ", …"
            } else {
                ""
            };
            let message = format!(
                "{} got no HTTP answer within send.timeout, and the server answered no one from then on: {later} later requests of {} other operations ({}{more}) timed out while it was in flight or after. This request is where the stall began",
                trigger.key.1,
                others.len(),
                names.join(", "),
            );
            // The trigger describes the finding and reproduces it, whatever was smaller.
            p.smallest = (0, false, 0, trigger.seq, trigger.id);
            p.smallest_described.0 = message.clone();
            p.finding.message = message;
            p.first_seq = trigger.seq;
            p.rank = u64::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Digest;
    use crate::model::{Intent, Interaction, TestCase};
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

    /// A timeout of `operation` sent as `seq`, in flight from `from` for 1 s.
    fn timed_out(operation: &str, seq: u64, from: u64) -> (Observation, Interaction, TestCase) {
        let obs = Observation {
            oracle: &crate::oracle::TRANSPORT_FAILURE,
            message: format!("{operation} got no HTTP answer"),
            key_by_message: format!("transport_failure|{operation}|timeout"),
            key_by_kind: format!("transport_failure|{operation}|timeout"),
            rank: 0,
        };
        let interaction = Interaction {
            run: RunId(Digest::of(b"r")),
            seq,
            case: crate::ids::CaseId(Digest::of(&seq.to_le_bytes())),
            request: crate::model::RequestRecord {
                method: "GET".into(),
                url: "http://127.0.0.1/x".into(),
                headers: Vec::new(),
                body: None,
            },
            outcome: crate::model::Outcome::TransportError {
                kind: crate::model::TransportErrorKind::Timeout,
                message: "timed out".into(),
            },
            timing: crate::model::Timing {
                started_ms: from,
                elapsed_us: 1_000_000,
            },
            retried: None,
        };
        let mut c = case();
        c.operation = operation.into();
        (obs, interaction, c)
    }

    /// Timeouts of three operations, each sent while an earlier one was in flight, are one
    /// finding of the first request's operation, reproduced by that request, whatever the
    /// order they were judged in; a timeout long after, alone, stays its own.
    #[test]
    fn a_stall_is_one_finding_at_the_request_that_began_it() {
        let sent = [
            timed_out("setEmail", 3, 10_000),
            timed_out("getBook", 4, 10_100),
            timed_out("listUsers", 5, 10_500),
            timed_out("getBook", 6, 10_900),
            timed_out("listUsers", 9, 30_000),
        ];
        for order in [[0usize, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 4, 0, 3, 1]] {
            let mut c = FindingCollector::new();
            for i in order {
                let (obs, interaction, case) = &sent[i];
                let id = InteractionId(Digest::of(&interaction.seq.to_le_bytes()));
                c.add_exchange(obs, id, interaction, case);
            }
            let set = c.finish(RunId(Digest::of(b"r")), "t", BTreeMap::new());
            let found: Vec<(&str, u64)> = set
                .findings
                .iter()
                .map(|f| (f.operation.as_str(), f.occurrences))
                .collect();
            assert_eq!(found, [("listUsers", 1), ("setEmail", 4)]);
            let stall = &set.findings[1];
            assert_eq!(
                stall.interactions.first(),
                Some(&InteractionId(Digest::of(&3u64.to_le_bytes())))
            );
            assert!(
                stall
                    .message
                    .contains("3 later requests of 2 other operations (getBook, listUsers)")
                    && stall.message.contains("where the stall began"),
                "{}",
                stall.message
            );
        }
    }

    /// Timeouts of one operation alone are no stall: each operation keeps its own finding.
    #[test]
    fn timeouts_of_one_operation_are_not_a_stall() {
        let mut c = FindingCollector::new();
        for (obs, interaction, case) in [timed_out("slow", 1, 0), timed_out("slow", 2, 10)] {
            let id = InteractionId(Digest::of(&interaction.seq.to_le_bytes()));
            c.add_exchange(&obs, id, &interaction, &case);
        }
        let set = c.finish(RunId(Digest::of(b"r")), "t", BTreeMap::new());
        assert_eq!(set.findings.len(), 1);
        assert_eq!(set.findings[0].message, "slow got no HTTP answer");
    }
}
