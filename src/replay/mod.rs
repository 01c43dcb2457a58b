//! `probe replay`: re-sends what a run recorded and says whether what it showed is still
//! there.
//!
//! A replay names an interaction, a finding (by its first interaction, or as
//! `<finding set>:<n>`), a finding set or a whole run. [`plan`] reads the store and works
//! out which recorded interactions must be sent again: the targets, and, for a test case
//! whose values were bound from earlier answers (its [`crate::model::SeriesStep`]
//! bindings, `<seq>#<json pointer>`), the interactions those answers came from,
//! recursively, each once, in their recorded order. [`execute`] re-sends them with
//! [`wire::build`] (so a stored case always means the same request) and the current
//! invocation's credentials only, takes each bound value from the *new* answer at the
//! recorded pointer (a new id from the new POST flows into the next step), judges every
//! new answer with the same [`Oracles`] the run used, compares it with the recorded one
//! ([`compare`]), and records the replay as a run of its own ([`RunKind::Replay`], with
//! `replay_of` naming what it replayed), with its interactions and a finding set.
//!
//! Verdicts (per finding, per attempt, overall):
//! - `reproduced`: the oracle that made the finding fires again;
//! - `fixed`: it fires no more, the new answer is clean (no oracle fires) and of the kind
//!   it was (same status class, or any status where a 5xx was recorded);
//! - `differs`: for a finding, it fires no more but the answer is not clean (another oracle
//!   fires, or no answer came) or changed kind; for a plain interaction, the answer
//!   differs meaningfully from the recorded one;
//! - `same`: a plain interaction whose answer matches the recorded one.
//!
//! Nothing here prints or decides an exit code; [`crate::app::replay`] does.
//!
//! Depends on: `store`, `model`, `spec`, `settings`, `engine` (`wire`, `send`, encoding of
//! an exchange, `memory::Binding`), `oracle`.

pub mod compare;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::engine::memory::Binding;
use crate::engine::send::Sender;
use crate::engine::wire::{self, Credentials};
use crate::engine::{encode_exchange, now_ms};
use crate::ids::{CaseId, Digest, FindingSetId, InteractionId, RunId};
use crate::model::{
    canonical_json, Finding, FindingSet, Interaction, Location, Outcome, RunEnd, RunKind,
    RunOutcome, RunStart, TestCase, Timing, TransportErrorKind,
};
use crate::oracle::{Exchange, FindingCollector, Oracles};
use crate::settings::Settings;
use crate::spec::{self, Api, Operation};
use crate::store::{ObjectKind, Store, StoreError};

use self::compare::{headers_that_matter, Answer, Comparison};

/// Most attempts `--times` may ask for: every loop is bounded.
pub const MAX_TIMES: u32 = 1000;

/// Refused connections, with nothing answered, after which the API is taken as not there
/// and the replay stops (a whole run against a dead URL would otherwise try every request).
const UNREACHABLE_AFTER: u64 = 3;

/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the document of run {run} no longer loads: {source}")]
    Spec {
        run: RunId,
        #[source]
        source: spec::SpecError,
    },
    #[error(
        "`{text}` names a {kind}; replay takes an interaction, a finding, a finding set or a run"
    )]
    NotReplayable { text: String, kind: String },
    #[error("`{text}`: finding set {set} has {len} findings; count them from 1")]
    NoSuchFinding {
        text: String,
        set: FindingSetId,
        len: usize,
    },
    #[error("`{text}` is not `<finding set id>:<n>`")]
    BadFindingName { text: String },
    #[error("test case {case} binds `{parameter}` to `{binding}`, which is not `<seq>#<json pointer>` of an earlier interaction")]
    BadBinding {
        case: CaseId,
        parameter: String,
        binding: String,
    },
    #[error("interaction {interaction} (seq {seq}) takes a value from seq {source_seq}, which run {run} does not hold")]
    MissingSource {
        interaction: InteractionId,
        seq: u64,
        source_seq: u64,
        run: RunId,
    },
    #[error("object {id}: {reason}")]
    Inconsistent { id: Digest, reason: String },
    #[error("interaction {interaction}: its test case names operation `{operation}`, which the run's document does not have")]
    UnknownOperation {
        interaction: InteractionId,
        operation: String,
    },
    #[error("`--times {0}`: give 1 to {MAX_TIMES}")]
    Times(u32),
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
}

/// What a replay names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    Interaction,
    Finding,
    FindingSet,
    Run,
}

/// A finding being replayed.
#[derive(Clone, Debug)]
pub struct FindingRef {
    /// `<finding set id>:<n>`, counted from 1.
    pub label: String,
    pub finding: Finding,
    /// Seq of its first interaction in the recorded run.
    pub seq: u64,
}

/// One recorded interaction with its test case.
#[derive(Clone, Debug)]
struct Original {
    id: InteractionId,
    interaction: Interaction,
    case: TestCase,
    /// Bindings parsed: parameter name → where its value came from.
    bindings: Vec<(String, Binding)>,
}

/// What to send again, read from the store by [`plan`].
#[derive(Debug)]
pub struct Plan {
    pub kind: TargetKind,
    /// Full id of what is replayed (`<set>:<n>` for a finding), kept in the replay's manifest.
    pub replay_of: String,
    pub run: RunId,
    pub start: RunStart,
    /// Seqs of the recorded interactions compared, ascending.
    pub targets: Vec<u64>,
    /// Every seq sent per attempt (targets and their sources), ascending.
    pub chain: Vec<u64>,
    pub findings: Vec<FindingRef>,
    originals: BTreeMap<u64, Original>,
}

impl Plan {
    /// The recorded interaction sent as `seq`.
    pub fn recorded(&self, seq: u64) -> Option<(InteractionId, &Interaction, &TestCase)> {
        self.originals
            .get(&seq)
            .map(|o| (o.id, &o.interaction, &o.case))
    }
}

/// How to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Where to send; `None` sends to the run's base URL.
    pub base_url: Option<String>,
    /// This invocation's credentials; the store never holds any.
    pub credentials: Credentials,
    /// Attempts (`--times`), 1 to [`MAX_TIMES`].
    pub times: u32,
}

/// A verdict, see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Reproduced,
    Differs,
    Fixed,
    Same,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Differs => "differs",
            Verdict::Fixed => "fixed",
            Verdict::Same => "same",
        }
    }
}

/// Why an exchange was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Its answer feeds a value of a later step.
    Source,
    /// It is (or carries) what was asked for.
    Target,
}

/// A value taken again from a new answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bound {
    pub parameter: String,
    /// Seq in the recorded run of the answer it came from.
    pub from_seq: u64,
    pub pointer: String,
    pub recorded: Value,
    pub now: Value,
    /// False when the new answer had nothing at the pointer: the recorded value was sent.
    pub rebound: bool,
}

/// One re-sent interaction compared with the recorded one.
#[derive(Clone, Debug, Serialize)]
pub struct Exchanged {
    pub role: Role,
    pub recorded: InteractionId,
    pub recorded_seq: u64,
    /// The new interaction, in the replay run.
    pub interaction: InteractionId,
    pub seq: u64,
    pub operation: String,
    pub method: String,
    /// The URL sent, as stored (credentials as placeholders).
    pub url: String,
    pub bound: Vec<Bound>,
    pub comparison: Comparison,
    /// Oracles that fire on the new answer.
    pub fired: Vec<String>,
    /// `same` or `differs`.
    pub verdict: Verdict,
}

/// One finding judged again.
#[derive(Clone, Debug, Serialize)]
pub struct FindingVerdict {
    pub finding: String,
    pub oracle: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub operation: String,
    pub message: String,
    /// The new interaction it was judged on.
    pub interaction: InteractionId,
    pub fired: Vec<String>,
    pub verdict: Verdict,
}

/// One attempt (`--times` makes several).
#[derive(Clone, Debug, Serialize)]
pub struct Attempt {
    pub exchanges: Vec<Exchanged>,
    pub findings: Vec<FindingVerdict>,
    pub verdict: Verdict,
}

/// What a replay did and found.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// The replay's own run.
    pub run: RunId,
    pub kind: TargetKind,
    pub replay_of: String,
    pub replayed_run: RunId,
    pub base_url: String,
    pub times: u32,
    /// Attempts in which the finding was reproduced.
    pub reproduced: u32,
    pub verdict: Verdict,
    pub attempts: Vec<Attempt>,
    /// The replay run's finding set.
    pub finding_set: FindingSetId,
    pub outcome: RunOutcome,
    /// Things a person should know (a bound value that could not be taken again, ...).
    pub notes: Vec<String>,
}

/// Reads what `text` names and what must be sent again.
pub fn plan(store: &Store, text: &str) -> Result<Plan, ReplayError> {
    let text = text.trim();
    // `<finding set>:<n>`; a run name may hold a `:` too, so only a hex prefix counts.
    let finding_name = text
        .split_once(':')
        .filter(|(set, _)| !set.is_empty() && set.bytes().all(|b| b.is_ascii_hexdigit()));
    let (kind, id, findings) = if let Some((set_text, n_text)) = finding_name {
        let (kind, id) = store.resolve(set_text)?;
        if kind != ObjectKind::FindingSet {
            return Err(ReplayError::NotReplayable {
                text: text.to_owned(),
                kind: kind.name().to_owned(),
            });
        }
        let n: usize = n_text.parse().map_err(|_| ReplayError::BadFindingName {
            text: text.to_owned(),
        })?;
        let set = store.get::<FindingSet>(id)?;
        let finding = n.checked_sub(1).and_then(|i| set.findings.get(i)).ok_or(
            ReplayError::NoSuchFinding {
                text: text.to_owned(),
                set: FindingSetId(id),
                len: set.findings.len(),
            },
        )?;
        let label = format!("{}:{n}", id.to_hex());
        (TargetKind::Finding, set.run, vec![(label, finding.clone())])
    } else {
        let (kind, id) = store.resolve(text)?;
        match kind {
            ObjectKind::Interaction => {
                let i = store.get::<Interaction>(id)?;
                let set = judging_set(store, i.run)?;
                let found: Vec<(String, Finding)> = match &set {
                    Some((set_id, set)) => set
                        .findings
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| f.interactions.contains(&InteractionId(id)))
                        .map(|(n, f)| (format!("{}:{}", set_id.0.to_hex(), n + 1), f.clone()))
                        .collect(),
                    None => Vec::new(),
                };
                let kind = if found.is_empty() {
                    TargetKind::Interaction
                } else {
                    TargetKind::Finding
                };
                let mut p = plan_for(store, kind, id.to_hex(), i.run, Some(i.seq), found)?;
                // The named interaction showed each of these findings: judge them on it,
                // whether or not it was the finding's first.
                for f in &mut p.findings {
                    f.seq = i.seq;
                }
                return Ok(p);
            }
            ObjectKind::FindingSet => {
                let set = store.get::<FindingSet>(id)?;
                let found = labelled(FindingSetId(id), &set);
                (TargetKind::FindingSet, set.run, found)
            }
            ObjectKind::RunStart => {
                let run = RunId(id);
                let found = match judging_set(store, run)? {
                    Some((set_id, set)) => labelled(set_id, &set),
                    None => Vec::new(),
                };
                return plan_for(store, TargetKind::Run, id.to_hex(), run, None, found);
            }
            other => {
                return Err(ReplayError::NotReplayable {
                    text: text.to_owned(),
                    kind: other.name().to_owned(),
                })
            }
        }
    };
    let replay_of = match kind {
        TargetKind::Finding => findings.first().map(|(l, _)| l.clone()).unwrap_or_default(),
        _ => store.resolve(text)?.1.to_hex(),
    };
    plan_for(store, kind, replay_of, id, None, findings)
}

fn labelled(set_id: FindingSetId, set: &FindingSet) -> Vec<(String, Finding)> {
    set.findings
        .iter()
        .enumerate()
        .map(|(n, f)| (format!("{}:{}", set_id.0.to_hex(), n + 1), f.clone()))
        .collect()
}

/// The finding set that judged a run at run time (else the first one written).
fn judging_set(
    store: &Store,
    run: RunId,
) -> Result<Option<(FindingSetId, FindingSet)>, ReplayError> {
    let id = match store.run_end(run)? {
        Some(end) => Some(end.findings),
        None => store.finding_sets_of(run)?.first().copied(),
    };
    Ok(match id {
        Some(id) => Some((id, store.get::<FindingSet>(id.0)?)),
        None => None,
    })
}

/// Loads the recorded interactions a plan needs. `only` narrows the targets to one seq;
/// otherwise the targets are the findings' first interactions, or every interaction of
/// the run when no finding narrows it (a run).
fn plan_for(
    store: &Store,
    kind: TargetKind,
    replay_of: String,
    run: RunId,
    only: Option<u64>,
    findings: Vec<(String, Finding)>,
) -> Result<Plan, ReplayError> {
    let start = store.get::<RunStart>(run.0)?;
    let rows: BTreeMap<u64, InteractionId> = store
        .interactions_of(run)?
        .into_iter()
        .rev()
        .map(|r| (r.seq, r.id))
        .collect();
    let mut originals: BTreeMap<u64, Original> = BTreeMap::new();
    let mut finding_refs = Vec::new();
    for (label, finding) in findings {
        let first = *finding
            .interactions
            .first()
            .ok_or_else(|| ReplayError::Inconsistent {
                id: run.0,
                reason: format!("finding {label} names no interaction"),
            })?;
        let o = load_original(store, first)?;
        if o.interaction.run != run {
            return Err(ReplayError::Inconsistent {
                id: first.0,
                reason: format!(
                    "finding {label} judges run {run}, but its interaction belongs to run {}",
                    o.interaction.run
                ),
            });
        }
        finding_refs.push(FindingRef {
            label,
            finding,
            seq: o.interaction.seq,
        });
        originals.insert(o.interaction.seq, o);
    }
    let targets: Vec<u64> = match (only, kind) {
        (Some(seq), _) => vec![seq],
        (None, TargetKind::Run) => rows.keys().copied().collect(),
        (None, _) => finding_refs
            .iter()
            .map(|f| f.seq)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    // Close over the sources: each source has a smaller seq than the step it feeds, so a
    // walk from the highest seq down visits each once, and the walk is bounded by the run.
    let mut needed: BTreeSet<u64> = targets.iter().copied().collect();
    let mut pending: Vec<u64> = targets.clone();
    while let Some(seq) = pending.pop() {
        if let std::collections::btree_map::Entry::Vacant(slot) = originals.entry(seq) {
            let id = *rows.get(&seq).ok_or_else(|| ReplayError::Inconsistent {
                id: run.0,
                reason: format!("the run holds no interaction with seq {seq}"),
            })?;
            slot.insert(load_original(store, id)?);
        }
        let Some(o) = originals.get(&seq) else {
            continue;
        };
        for (_, b) in &o.bindings {
            if b.seq >= seq || !rows.contains_key(&b.seq) {
                return Err(ReplayError::MissingSource {
                    interaction: o.id,
                    seq,
                    source_seq: b.seq,
                    run,
                });
            }
            if needed.insert(b.seq) {
                pending.push(b.seq);
            }
        }
    }
    Ok(Plan {
        kind,
        replay_of,
        run,
        start,
        targets,
        chain: needed.into_iter().collect(),
        findings: finding_refs,
        originals,
    })
}

fn load_original(store: &Store, id: InteractionId) -> Result<Original, ReplayError> {
    let interaction = store.get::<Interaction>(id.0)?;
    let case = store.get::<TestCase>(interaction.case.0)?;
    let mut bindings = Vec::new();
    if let Some(step) = &case.series_step {
        for (parameter, text) in &step.bindings {
            let b = Binding::parse(text).ok_or_else(|| ReplayError::BadBinding {
                case: interaction.case,
                parameter: parameter.clone(),
                binding: text.clone(),
            })?;
            bindings.push((parameter.clone(), b));
        }
    }
    Ok(Original {
        id,
        interaction,
        case,
        bindings,
    })
}

/// The run's document, loaded again from its blob. Relative `$ref`s resolve against the
/// directory it was loaded from, when that is still there.
pub fn load_api(store: &Store, run: RunId, start: &RunStart) -> Result<Api, ReplayError> {
    let bytes = store.get_blob(start.document)?;
    let source = &start.document_source;
    let dir = Path::new(source)
        .parent()
        .filter(|d| !source.contains("://") && d.is_dir())
        .map(Path::to_path_buf);
    spec::parse(&bytes, source, dir.as_deref()).map_err(|source| ReplayError::Spec { run, source })
}

/// The answer of a source step, as seen by the steps that take values from it.
struct NewAnswer {
    seq: u64,
    /// The JSON body of a 2xx answer (what the engine learns from, too).
    json: Option<Value>,
    status: Option<u16>,
}

/// Re-sends the plan and records the replay in `store`.
pub async fn execute(
    store: &Store,
    plan: &Plan,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    if options.times == 0 || options.times > MAX_TIMES {
        return Err(ReplayError::Times(options.times));
    }
    let api = Arc::new(load_api(store, plan.run, &plan.start)?);
    let settings = Settings::from_map(&plan.start.settings);
    let sender = Sender::new(&settings).map_err(|e| ReplayError::Client(e.to_string()))?;
    let oracles = Oracles::new(api.clone(), &settings, None);
    let base_url = options
        .base_url
        .clone()
        .unwrap_or_else(|| plan.start.base_url.clone());

    let start = RunStart {
        kind: RunKind::Replay,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        store_format: crate::store::STORE_FORMAT.to_string(),
        document: plan.start.document,
        document_source: plan.start.document_source.clone(),
        settings: plan.start.settings.clone(),
        seed: plan.start.seed,
        base_url: base_url.clone(),
        started_ms: now_ms(),
        name: None,
        tags: BTreeMap::new(),
        replay_of: Some(plan.replay_of.clone()),
    };
    let run = RunId(store.put(&start)?);

    let targets: BTreeSet<u64> = plan.targets.iter().copied().collect();
    let mut collector = FindingCollector::new();
    let mut notes: Vec<String> = Vec::new();
    let mut attempts = Vec::new();
    let mut seq: u64 = 0;
    let mut refused = 0u64;
    for _ in 0..options.times {
        let mut answers: BTreeMap<u64, NewAnswer> = BTreeMap::new();
        let mut exchanges = Vec::new();
        let mut finding_verdicts = Vec::new();
        for &recorded_seq in &plan.chain {
            let Some(original) = plan.originals.get(&recorded_seq) else {
                continue;
            };
            let op = operation(&api, original)?;
            let (case, bound) = rebind(original, &answers, &mut notes);
            let wire = wire::build(&case, op, &api, &base_url, &options.credentials);
            let started_ms = now_ms();
            let t0 = Instant::now();
            let outcome = sender.send(&wire).await;
            let timing = Timing {
                started_ms,
                elapsed_us: t0.elapsed().as_micros() as u64,
            };
            if matches!(
                outcome,
                Outcome::TransportError {
                    kind: TransportErrorKind::Refused,
                    ..
                }
            ) {
                refused += 1;
            }
            let body: Option<Vec<u8>> = outcome.response().and_then(|r| match &r.body {
                Some(crate::model::BodyBytes::Inline(b)) => Some(b.clone()),
                _ => None,
            });
            let encoded = encode_exchange(run, seq, &case, &wire, outcome, timing)?;
            store.put_encoded(encoded.objects)?;
            let interaction = encoded.interaction;

            let observations = oracles.judge(&Exchange {
                operation: op,
                case: &case,
                interaction: &interaction,
                response_body: body.as_deref(),
            });
            for obs in &observations {
                collector.add(obs, encoded.id, seq, &case);
            }
            let fired: Vec<String> = observations
                .iter()
                .map(|o| o.oracle.name.to_owned())
                .collect();

            let recorded_body = match original.interaction.outcome.response() {
                Some(r) => match &r.body {
                    Some(b) => Some(store.body_bytes(b)?),
                    None => None,
                },
                None => None,
            };
            let comparison = compare::compare(
                Answer {
                    outcome: &original.interaction.outcome,
                    body: recorded_body.as_deref(),
                },
                Answer {
                    outcome: &interaction.outcome,
                    body: body.as_deref(),
                },
                &headers_that_matter(&declared_headers(
                    op,
                    &[
                        original.interaction.outcome.status(),
                        interaction.outcome.status(),
                    ],
                )),
            );
            let status = interaction.outcome.status();
            let json = match (status, &body) {
                (Some(s), Some(b)) if (200..300).contains(&s) => serde_json::from_slice(b).ok(),
                _ => None,
            };
            answers.insert(recorded_seq, NewAnswer { seq, json, status });

            for f in plan.findings.iter().filter(|f| f.seq == recorded_seq) {
                let verdict = finding_verdict(
                    &f.finding.oracle,
                    &fired,
                    original.interaction.outcome.status(),
                    status,
                );
                finding_verdicts.push(FindingVerdict {
                    finding: f.label.clone(),
                    oracle: f.finding.oracle.clone(),
                    code: f.finding.code.clone(),
                    operation: f.finding.operation.clone(),
                    message: f.finding.message.clone(),
                    interaction: encoded.id,
                    fired: fired.clone(),
                    verdict,
                });
            }
            exchanges.push(Exchanged {
                role: if targets.contains(&recorded_seq) {
                    Role::Target
                } else {
                    Role::Source
                },
                recorded: original.id,
                recorded_seq,
                interaction: encoded.id,
                seq,
                operation: case.operation.clone(),
                method: case.method.clone(),
                url: interaction.request.url.clone(),
                bound,
                verdict: if comparison.differs {
                    Verdict::Differs
                } else {
                    Verdict::Same
                },
                comparison,
                fired,
            });
            seq += 1;
            if seq >= UNREACHABLE_AFTER && refused == seq {
                break;
            }
        }
        let verdict = attempt_verdict(&exchanges, &finding_verdicts);
        attempts.push(Attempt {
            exchanges,
            findings: finding_verdicts,
            verdict,
        });
        if seq >= UNREACHABLE_AFTER && refused == seq {
            break;
        }
    }

    let applied = oracles
        .enabled()
        .iter()
        .map(|o| (o.name.to_owned(), o.version))
        .collect();
    let findings = collector.finish(run, env!("CARGO_PKG_VERSION"), applied);
    let finding_set = FindingSetId(store.put(&findings)?);
    let outcome = if seq > 0 && refused == seq {
        RunOutcome::Unreachable
    } else {
        RunOutcome::Completed
    };
    store.put(&RunEnd {
        run,
        ended_ms: now_ms(),
        outcome,
        interactions: seq,
        findings: finding_set,
    })?;

    let reproduced = attempts
        .iter()
        .filter(|a| a.verdict == Verdict::Reproduced)
        .count() as u32;
    let verdict = if reproduced > 0 {
        Verdict::Reproduced
    } else if attempts.iter().any(|a| a.verdict == Verdict::Differs) {
        Verdict::Differs
    } else {
        attempts.first().map(|a| a.verdict).unwrap_or(Verdict::Same)
    };
    notes.dedup();
    Ok(ReplayReport {
        run,
        kind: plan.kind,
        replay_of: plan.replay_of.clone(),
        replayed_run: plan.run,
        base_url,
        times: options.times,
        reproduced,
        verdict,
        attempts,
        finding_set,
        outcome,
        notes,
    })
}

fn operation<'a>(api: &'a Api, original: &Original) -> Result<&'a Operation, ReplayError> {
    api.operations
        .iter()
        .find(|op| op.key.name() == original.case.operation)
        .ok_or_else(|| ReplayError::UnknownOperation {
            interaction: original.id,
            operation: original.case.operation.clone(),
        })
}

/// Header names the document declares for the answers with these statuses.
fn declared_headers(op: &Operation, statuses: &[Option<u16>]) -> Vec<String> {
    let mut names = Vec::new();
    for status in statuses.iter().flatten() {
        if let Some(r) = op.response_for(*status) {
            for h in &r.headers {
                if !names.contains(&h.name) {
                    names.push(h.name.clone());
                }
            }
        }
    }
    names
}

/// The recorded case with each bound value taken from the new answer of its source, and
/// its bindings renumbered to the replay's seqs (so a replay of the replay works too).
fn rebind(
    original: &Original,
    answers: &BTreeMap<u64, NewAnswer>,
    notes: &mut Vec<String>,
) -> (TestCase, Vec<Bound>) {
    let mut case = original.case.clone();
    let mut bound = Vec::new();
    for (parameter, b) in &original.bindings {
        let answer = answers.get(&b.seq);
        let now = answer.and_then(|a| a.json.as_ref()?.pointer(&b.pointer).cloned());
        let slot = case
            .parameters
            .iter()
            .position(|p| p.location == Location::Path && &p.name == parameter)
            .or_else(|| case.parameters.iter().position(|p| &p.name == parameter));
        let Some(slot) = slot else {
            notes.push(format!(
                "test case {} binds `{parameter}` but carries no such parameter; sent as recorded",
                original.interaction.case
            ));
            continue;
        };
        let recorded = case.parameters[slot].value.clone();
        match (now, answer) {
            (Some(v), Some(a)) => {
                let v = canonical_json(v);
                case.parameters[slot].value = v.clone();
                if let Some(step) = case.series_step.as_mut() {
                    step.bindings.insert(
                        parameter.clone(),
                        Binding {
                            seq: a.seq,
                            pointer: b.pointer.clone(),
                        }
                        .to_text(),
                    );
                }
                bound.push(Bound {
                    parameter: parameter.clone(),
                    from_seq: b.seq,
                    pointer: b.pointer.clone(),
                    recorded,
                    now: v,
                    rebound: true,
                });
            }
            _ => {
                let status = answer
                    .and_then(|a| a.status)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "no answer".into());
                notes.push(format!(
                    "`{parameter}` of seq {}: the new answer of seq {} ({status}) has no value at `{}`; sent the recorded value",
                    original.interaction.seq, b.seq, b.pointer
                ));
                bound.push(Bound {
                    parameter: parameter.clone(),
                    from_seq: b.seq,
                    pointer: b.pointer.clone(),
                    now: recorded.clone(),
                    recorded,
                    rebound: false,
                });
            }
        }
    }
    (case, bound)
}

/// The verdict on one finding from the oracles firing on the new answer. A finding no
/// oracle shows any more is `fixed` only when the answer is of the kind it was (same status
/// class), or when it was a server error: a 202 that became a 404 says the resource was not
/// there, not that the status is declared now.
fn finding_verdict(
    oracle: &str,
    fired: &[String],
    recorded: Option<u16>,
    now: Option<u16>,
) -> Verdict {
    if fired.iter().any(|f| f == oracle) {
        return Verdict::Reproduced;
    }
    let Some(now) = now else {
        return Verdict::Differs;
    };
    let was_server_error = recorded.is_some_and(|s| s >= 500);
    let same_class = recorded.is_some_and(|s| s / 100 == now / 100);
    if fired.is_empty() && (was_server_error || same_class) {
        Verdict::Fixed
    } else {
        Verdict::Differs
    }
}

fn attempt_verdict(exchanges: &[Exchanged], findings: &[FindingVerdict]) -> Verdict {
    if !findings.is_empty() {
        if findings.iter().any(|f| f.verdict == Verdict::Reproduced) {
            Verdict::Reproduced
        } else if findings.iter().any(|f| f.verdict == Verdict::Differs) {
            Verdict::Differs
        } else {
            Verdict::Fixed
        }
    } else if exchanges
        .iter()
        .any(|e| e.role == Role::Target && e.verdict == Verdict::Differs)
    {
        Verdict::Differs
    } else {
        Verdict::Same
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ParameterValue, RequestRecord, SeriesStep};
    use serde_json::json;

    fn original(bindings: &[(&str, &str)]) -> Original {
        let case = TestCase {
            operation: "getPet".into(),
            method: "GET".into(),
            path: "/pets/{petId}".into(),
            parameters: vec![ParameterValue {
                location: Location::Path,
                name: "petId".into(),
                value: json!(17),
            }],
            body: None,
            strategy: "nominal".into(),
            mode: "random".into(),
            origins: BTreeMap::new(),
            intent: Default::default(),
            mutation: None,
            series_step: Some(SeriesStep {
                series: "memory".into(),
                index: 0,
                bindings: bindings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }),
        };
        let id = InteractionId(Digest::of(b"i"));
        Original {
            id,
            interaction: Interaction {
                run: RunId(Digest::of(b"r")),
                seq: 9,
                case: CaseId(Digest::of(b"c")),
                request: RequestRecord {
                    method: "GET".into(),
                    url: "http://h/pets/17".into(),
                    headers: vec![],
                    body: None,
                },
                outcome: Outcome::TransportError {
                    kind: TransportErrorKind::Other,
                    message: String::new(),
                },
                timing: Timing {
                    started_ms: 0,
                    elapsed_us: 0,
                },
            },
            bindings: bindings
                .iter()
                .filter_map(|(k, v)| Some((k.to_string(), Binding::parse(v)?)))
                .collect(),
            case,
        }
    }

    #[test]
    fn a_new_id_flows_into_the_bound_parameter() {
        let o = original(&[("petId", "4#/id")]);
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 1,
                json: Some(json!({"id": 99, "name": "Rex"})),
                status: Some(201),
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.parameters[0].value, json!(99));
        assert_eq!(
            case.series_step.unwrap().bindings["petId"],
            "1#/id",
            "renumbered to the replay's seq"
        );
        assert_eq!(bound[0].recorded, json!(17));
        assert!(bound[0].rebound && notes.is_empty());
    }

    #[test]
    fn a_missing_value_keeps_the_recorded_one_with_a_note() {
        let o = original(&[("petId", "4#/id")]);
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 1,
                json: None,
                status: Some(400),
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.parameters[0].value, json!(17));
        assert!(!bound[0].rebound);
        assert!(notes[0].contains("(400)"), "{notes:?}");
    }

    /// A store holding one run of the demo document with the given interactions.
    fn store_with(
        cases: &[(u64, TestCase, &str)],
    ) -> (tempfile::TempDir, Store, Vec<InteractionId>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s")).unwrap();
        let document = store
            .put_blob(crate::fixture::demo::DOCUMENT.as_bytes())
            .unwrap();
        let run = RunId(
            store
                .put(&RunStart {
                    kind: RunKind::Run,
                    tool_version: "test".into(),
                    store_format: crate::store::STORE_FORMAT.to_string(),
                    document,
                    document_source: "demo.yaml".into(),
                    settings: BTreeMap::new(),
                    seed: 1,
                    base_url: "http://127.0.0.1:9".into(),
                    started_ms: 1,
                    name: None,
                    tags: BTreeMap::new(),
                    replay_of: None,
                })
                .unwrap(),
        );
        let mut ids = Vec::new();
        for (seq, case, url) in cases {
            let case_id = CaseId(store.put(case).unwrap());
            let mut i = original(&[]).interaction;
            i.run = run;
            i.seq = *seq;
            i.case = case_id;
            i.request.url = url.to_string();
            ids.push(InteractionId(store.put(&i).unwrap()));
        }
        (dir, store, ids)
    }

    #[test]
    fn damaged_bindings_are_errors_naming_the_objects() {
        let bad = original(&[("petId", "not a binding")]).case;
        let (_d, store, ids) = store_with(&[(0, bad.clone(), "http://h/pets/17")]);
        let e = plan(&store, &ids[0].to_string()).unwrap_err();
        assert!(matches!(e, ReplayError::BadBinding { .. }), "{e}");
        let case_id = CaseId(crate::store::encode(&bad).unwrap().id);
        assert!(e.to_string().contains(&case_id.to_string()), "{e}");

        // A binding to a later (or absent) seq is refused: it cannot have been answered.
        let forward = original(&[("petId", "5#/id")]).case;
        let (_d, store, ids) = store_with(&[(3, forward, "http://h/pets/17")]);
        let e = plan(&store, &ids[0].to_string()).unwrap_err();
        assert!(
            matches!(e, ReplayError::MissingSource { source_seq: 5, .. }),
            "{e}"
        );
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");

        // A test case naming an operation the document lacks.
        let mut odd = original(&[]).case;
        odd.operation = "noSuchOperation".into();
        let (_d, store, ids) = store_with(&[(0, odd, "http://h/x")]);
        let p = plan(&store, &ids[0].to_string()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let e = runtime
            .block_on(execute(
                &store,
                &p,
                &ReplayOptions {
                    base_url: None,
                    credentials: Credentials::default(),
                    times: 1,
                },
            ))
            .unwrap_err();
        assert!(matches!(e, ReplayError::UnknownOperation { .. }), "{e}");
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");

        // What is not replayable says what it is.
        let e = plan(&store, &p.start.document.to_string()).unwrap_err();
        assert!(e.to_string().contains("names a blob"), "{e}");
        let e = plan(&store, "zzzz:1").unwrap_err();
        assert!(matches!(e, ReplayError::Store(_)), "{e}");
    }

    #[test]
    fn serve_refuses_a_recorded_url_it_cannot_read() {
        let case = original(&[]).case;
        let (_d, store, ids) = store_with(&[(0, case, "not a url")]);
        let runs = store.runs().unwrap();
        let e = crate::serve::Recording::load(&store, &runs[0].id.to_string()).unwrap_err();
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");
        let e = crate::serve::Recording::load(&store, &ids[0].to_string()).unwrap_err();
        assert!(e.to_string().contains("not a run"), "{e}");
    }

    #[test]
    fn fixed_means_a_clean_answer_of_the_same_kind() {
        let none: Vec<String> = vec![];
        let other = vec!["status_code_declared".to_owned()];
        let v = |oracle, fired: &[String], a, b| finding_verdict(oracle, fired, a, b);
        assert_eq!(
            v(
                "server_error",
                &["server_error".into()],
                Some(500),
                Some(503)
            ),
            Verdict::Reproduced
        );
        assert_eq!(
            v("server_error", &none, Some(500), Some(200)),
            Verdict::Fixed
        );
        assert_eq!(
            v("server_error", &none, Some(500), Some(400)),
            Verdict::Fixed
        );
        assert_eq!(
            v("server_error", &other, Some(500), Some(418)),
            Verdict::Differs
        );
        assert_eq!(
            v("status_code_declared", &none, Some(202), Some(204)),
            Verdict::Fixed
        );
        assert_eq!(
            v("status_code_declared", &none, Some(202), Some(404)),
            Verdict::Differs
        );
        assert_eq!(v("server_error", &none, Some(500), None), Verdict::Differs);
    }

    #[test]
    fn verdicts_follow_the_findings_first() {
        let f = |v| FindingVerdict {
            finding: "s:1".into(),
            oracle: "server_error".into(),
            code: None,
            operation: "listPets".into(),
            message: String::new(),
            interaction: InteractionId(Digest::of(b"x")),
            fired: vec![],
            verdict: v,
        };
        assert_eq!(
            attempt_verdict(&[], &[f(Verdict::Fixed), f(Verdict::Reproduced)]),
            Verdict::Reproduced
        );
        assert_eq!(attempt_verdict(&[], &[f(Verdict::Fixed)]), Verdict::Fixed);
        assert_eq!(
            attempt_verdict(&[], &[f(Verdict::Fixed), f(Verdict::Differs)]),
            Verdict::Differs
        );
        assert_eq!(attempt_verdict(&[], &[]), Verdict::Same);
    }
}
