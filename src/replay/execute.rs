//! Sending a [`Plan`] again: rebinding values from new answers, judging, comparing and
//! recording the replay as a run of its own, and publishing it as a run's event stream
//! (`run_started` of kind `replay`, an `interaction` per request sent, a `finding` per
//! distinct finding, `run_ended`).
//!
//! Depends on: `store` (reading), `step` (recording and judging), `model`, `settings`, `send`,
//! `oracle`, `events` (the spine), `replay::compare`, `stop`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::campaign::{self, Spine};
use crate::clock::now_ms;
use crate::events::{CampaignKind, EventSink};
use crate::ids::{RunId, SeriesId};
use crate::model::Binding;
use crate::model::{
    canonical_json, Location, Outcome, RunKind, RunOutcome, RunStart, Series, StepRole, TestCase,
    Timing, TransportErrorKind, SECRET_PLACEHOLDER,
};
use crate::oracle::series::StepData;
use crate::oracle::{FindingCollector, Oracles};
use crate::send::{wire, Identities, Sender};
use crate::settings::Settings;
use crate::spec::{Api, Operation};
use crate::step::{self, RecordedSeries, SeriesName};
use crate::store::Store;

use super::compare::{self, headers_that_matter, Answer};
use super::plan::{load_api, Original, Plan};
use super::{
    Attempt, Bound, Exchanged, FindingVerdict, ReplayError, ReplayOptions, ReplayReport, Role,
    Verdict, MAX_TIMES,
};

/// Refused connections, with nothing answered, after which the API is taken as not there
/// and the replay stops (a whole run against a dead URL would otherwise try every request).
const UNREACHABLE_AFTER: u64 = 3;
/// The answer of a source step, as seen by the steps that take values from it.
pub(super) struct NewAnswer {
    /// Its seq in the replay run.
    pub(super) seq: u64,
    /// The JSON body of a 2xx answer (what the engine learns from, too).
    pub(super) json: Option<Value>,
    pub(super) status: Option<u16>,
    /// Its `Location` header (a binding may take the last segment).
    pub(super) location: Option<String>,
}

/// Re-sends the plan and records the replay in `store`; publishes what it does to `events`.
pub async fn execute(
    store: &Store,
    plan: &Plan,
    options: &ReplayOptions,
    events: &EventSink,
) -> Result<ReplayReport, ReplayError> {
    if options.times == 0 || options.times > MAX_TIMES {
        return Err(ReplayError::Times(options.times));
    }
    let api = Arc::new(load_api(store, plan.run, &plan.start)?);
    let settings = Settings::from_map(&plan.start.settings).with_network(&options.network)?;
    let sender = Sender::new(&settings).map_err(|e| ReplayError::Client(e.to_string()))?;
    let oracles = Oracles::new(api.clone(), &settings, None);
    let base_url = options
        .base_url
        .clone()
        .unwrap_or_else(|| plan.start.base_url.clone());

    let start = replay_start(plan, &base_url);
    // Credentials the run sent that this invocation lacks: said, and stopped at, before
    // anything is sent or stored, unless asked to go on without them.
    let mut identities = Identities::new(options.identities.clone(), &api)?;
    // The run's cap on credentials, as it sent them (a run stored before it: the default).
    identities.limit_credentials(
        usize::try_from(settings.options()?.send.max_credential_bytes).unwrap_or(usize::MAX),
    )?;
    let without_credentials = missing_credentials(plan, &api, &identities, &base_url)?;
    if !without_credentials.is_empty() && !options.without_credentials {
        return Err(ReplayError::MissingCredentials {
            run: plan.run.short(12),
            places: without_credentials,
        });
    }
    let sent_operations: BTreeSet<&str> = plan
        .chain
        .iter()
        .filter_map(|seq| plan.originals.get(seq))
        .map(|o| o.case.operation.as_str())
        .collect();
    // Through the recorder, in batches: a direct put syncs the pack once per exchange, which
    // against a local API took longer than the exchange itself.
    let (run, spine) = campaign::begin(
        store,
        &start,
        campaign::Opening {
            kind: CampaignKind::Replay,
            of: Some(plan.run),
            api_title: &api.title,
            api_version: &api.version,
            operations: sent_operations.len(),
            skipped: 0,
        },
        events.clone(),
    )?;
    // As the run did: a bearer or basic credential the document declares no scheme for
    // goes on every request; each case goes out as the identity it was sent as
    // (`identities`, made above).
    let mut replaying = Replaying {
        store,
        plan,
        options,
        api: &api,
        sender,
        oracles,
        identities,
        base_url,
        run,
        spine,
        targets: plan.targets.iter().copied().collect(),
        collector: FindingCollector::new(),
        notes: Vec::new(),
        seq: 0,
        refused: 0,
        series_ids: Vec::new(),
    };
    let mut attempts = Vec::new();
    for _ in 0..options.times {
        attempts.push(replaying.attempt().await?);
        if replaying.unreachable() || options.stop.is_stopped() {
            break;
        }
    }
    replaying.finish(events, attempts, without_credentials)
}

/// The replay's manifest: the recorded run's document and settings, sent to `base_url`.
fn replay_start(plan: &Plan, base_url: &str) -> RunStart {
    RunStart {
        kind: RunKind::Replay,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        store_format: crate::store::STORE_FORMAT.to_string(),
        document: plan.start.document,
        document_source: plan.start.document_source.clone(),
        settings: plan.start.settings.clone(),
        seed: plan.start.seed,
        base_url: base_url.to_owned(),
        started_ms: now_ms(),
        name: None,
        tags: BTreeMap::new(),
        replay_of: Some(plan.replay_of.clone()),
        documents: plan.start.documents.clone(),
        // A replay reads no plan or dictionary: it sends what was recorded.
        inputs: BTreeMap::new(),
    }
}

/// One replay under way: what it sends and records with, and what it has counted so far.
struct Replaying<'a> {
    store: &'a Store,
    plan: &'a Plan,
    options: &'a ReplayOptions,
    api: &'a Api,
    sender: Sender,
    oracles: Oracles,
    identities: Identities,
    base_url: String,
    run: RunId,
    spine: Spine,
    /// The recorded seqs of the targets (the others are sources of values).
    targets: BTreeSet<u64>,
    collector: FindingCollector,
    notes: Vec<String>,
    /// The next seq of the replay run: the number of requests sent so far.
    seq: u64,
    /// Requests whose connection was refused.
    refused: u64,
    series_ids: Vec<SeriesId>,
}

/// What one attempt gathers as it sends the chain.
#[derive(Default)]
struct Gathered {
    /// The new answers, by the recorded seq they stand for.
    answers: BTreeMap<u64, NewAnswer>,
    exchanges: Vec<Exchanged>,
    findings: Vec<FindingVerdict>,
    /// The new steps of the series replayed, judged together once all are sent.
    steps: Vec<StepData>,
}

impl Replaying<'_> {
    /// Whether only refused connections came back, enough of them to stop.
    fn unreachable(&self) -> bool {
        self.seq >= UNREACHABLE_AFTER && self.refused == self.seq
    }

    /// Sends the chain once, then judges the series it replays, if any.
    async fn attempt(&mut self) -> Result<Attempt, ReplayError> {
        let plan = self.plan;
        let mut gathered = Gathered::default();
        for &recorded_seq in &plan.chain {
            if self.options.stop.is_stopped() {
                break;
            }
            let Some(original) = plan.originals.get(&recorded_seq) else {
                continue;
            };
            self.replay_one(recorded_seq, original, &mut gathered)
                .await?;
            self.seq += 1;
            if self.unreachable() {
                break;
            }
        }
        let Gathered {
            exchanges,
            mut findings,
            steps,
            ..
        } = gathered;
        if let Some(recorded) = &plan.series {
            judge_series_again(
                recorded,
                self.run,
                steps,
                &self.oracles,
                &self.spine,
                &mut self.collector,
                &mut self.series_ids,
                plan,
                &mut findings,
            )
            .await?;
        }
        let verdict = attempt_verdict(&exchanges, &findings);
        Ok(Attempt {
            exchanges,
            findings,
            verdict,
        })
    }

    /// The case to send for `original`: its values rebound from the new answers, and a
    /// series' GET of a `Location` sent where its creation's new answer points.
    fn case_for(
        &mut self,
        original: &Original,
        recorded_seq: u64,
        answers: &BTreeMap<u64, NewAnswer>,
    ) -> (TestCase, Vec<Bound>) {
        let (mut case, bound) = rebind(original, answers, &mut self.notes);
        if let Some(series) = &self.plan.series {
            let follows = series
                .steps
                .iter()
                .any(|s| s.seq == recorded_seq && s.role == StepRole::FollowLocation);
            let location = series
                .steps
                .first()
                .and_then(|create| answers.get(&create.seq))
                .and_then(|a| a.location.as_deref());
            if let (true, Some(location)) = (follows, location) {
                if let Some(moved) =
                    wire::located(case.clone(), location, &self.base_url, &self.api.base_path)
                {
                    case = moved;
                }
            }
        }
        (case, bound)
    }

    /// Sends `case` (unless the replay is stopped meanwhile) and records and judges the
    /// exchange through the shared step.
    async fn send(
        &mut self,
        op: &Operation,
        case: &TestCase,
    ) -> Result<step::Recorded, ReplayError> {
        let sending = self
            .identities
            .credentials(case.identity.as_deref(), &self.sender, &self.base_url)
            .await?;
        let wire = wire::build(case, op, self.api, &self.base_url, &sending.credentials);
        let started_ms = now_ms();
        let t0 = Instant::now();
        let sent = tokio::select! {
            biased;
            sent = self.sender.send(&wire, None) => sent,
            reason = self.options.stop.stopped() => Outcome::TransportError {
                kind: TransportErrorKind::Cancelled,
                message: reason.cancelled_message().into(),
            }.into(),
        };
        let timing = Timing {
            started_ms,
            elapsed_us: t0.elapsed().as_micros() as u64,
        };
        if matches!(
            sent.outcome,
            Outcome::TransportError {
                kind: TransportErrorKind::Refused,
                ..
            }
        ) {
            self.refused += 1;
        }
        Ok(step::exchange(
            step::Sending {
                run: self.run,
                seq: self.seq,
                operation: op,
                case,
                request: wire.into(),
                sent,
                timing,
                redactor: &self.identities.redactor(),
                parse_json: false,
            },
            &self.oracles,
            &self.spine,
            &mut self.collector,
        )
        .await?)
    }

    /// Sends one recorded request again and gathers what came of it: its new answer, its
    /// series step, the verdicts on the findings it showed, its comparison.
    async fn replay_one(
        &mut self,
        recorded_seq: u64,
        original: &Original,
        gathered: &mut Gathered,
    ) -> Result<(), ReplayError> {
        let op = operation(self.api, original)?;
        let (case, bound) = self.case_for(original, recorded_seq, &gathered.answers);
        let step::Recorded {
            encoded,
            observations,
            ..
        } = self.send(op, &case).await?;
        let seq = self.seq;
        let body: Option<Vec<u8>> = encoded.response_body().map(<[u8]>::to_vec);
        let interaction = &encoded.interaction;
        let fired: Vec<String> = observations
            .iter()
            .map(|o| o.oracle.name.to_owned())
            .collect();
        let comparison = self.compare(original, op, interaction, body.as_deref())?;
        let status = interaction.outcome.status();
        let json = match (status, &body) {
            (Some(s), Some(b)) if (200..300).contains(&s) => serde_json::from_slice(b).ok(),
            _ => None,
        };
        let location = interaction
            .outcome
            .response()
            .and_then(|r| r.header("location"))
            .map(str::to_owned);
        gathered.answers.insert(
            recorded_seq,
            NewAnswer {
                seq,
                json,
                status,
                location,
            },
        );

        if let Some(step) = self
            .plan
            .series
            .as_ref()
            .and_then(|s| s.steps.iter().find(|s| s.seq == recorded_seq))
        {
            gathered.steps.push(StepData {
                role: step.role,
                seq,
                id: encoded.id,
                case: case.clone(),
                interaction: interaction.clone(),
                body: body.clone(),
            });
        }
        // A series finding is judged on the whole series, below.
        for f in self
            .plan
            .findings
            .iter()
            .filter(|f| f.seq == recorded_seq && f.finding.series.is_none())
        {
            let verdict = finding_verdict(
                &f.finding.oracle,
                &fired,
                original.interaction.outcome.status(),
                status,
            );
            gathered.findings.push(FindingVerdict {
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
        gathered.exchanges.push(Exchanged {
            role: if self.targets.contains(&recorded_seq) {
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
        Ok(())
    }

    /// The new answer compared with the recorded one, on the headers that matter for
    /// either status.
    fn compare(
        &self,
        original: &Original,
        op: &Operation,
        interaction: &crate::model::Interaction,
        body: Option<&[u8]>,
    ) -> Result<compare::Comparison, ReplayError> {
        let recorded_body = match original.interaction.outcome.response() {
            Some(r) => match &r.body {
                Some(b) => Some(self.store.body_bytes(b)?),
                None => None,
            },
            None => None,
        };
        Ok(compare::compare(
            Answer {
                outcome: &original.interaction.outcome,
                body: recorded_body.as_deref(),
            },
            Answer {
                outcome: &interaction.outcome,
                body,
            },
            &headers_that_matter(&declared_headers(
                op,
                &[
                    original.interaction.outcome.status(),
                    interaction.outcome.status(),
                ],
            )),
        ))
    }

    /// Ends the replay run (every interaction durable first, then its finding set and end
    /// manifest) and gives its report.
    fn finish(
        self,
        events: &EventSink,
        attempts: Vec<Attempt>,
        without_credentials: Vec<String>,
    ) -> Result<ReplayReport, ReplayError> {
        let Replaying {
            store,
            plan,
            options,
            oracles,
            base_url,
            run,
            spine,
            collector,
            mut notes,
            seq,
            refused,
            series_ids,
            ..
        } = self;
        let applied = oracles
            .enabled()
            .iter()
            .map(|o| (o.name.to_owned(), o.version))
            .collect();
        // Every interaction is durable before the finding set and the end manifest name them.
        spine.finish()?;
        let findings = collector.finish(run, env!("CARGO_PKG_VERSION"), applied);
        let outcome = if seq > 0 && refused == seq {
            RunOutcome::Unreachable
        } else if options.stop.is_stopped() {
            RunOutcome::Interrupted
        } else {
            RunOutcome::Completed
        };
        let end = campaign::end(
            store,
            campaign::Closing {
                kind: CampaignKind::Replay,
                run,
                outcome,
                interactions: seq,
                findings: &findings,
                series: series_ids,
                stats: None,
            },
            events,
        )?;
        let finding_set = end.findings;

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
            without_credentials,
        })
    }
}

/// Records the series sent again and judges its steps together: each finding of a series
/// oracle replayed is reproduced when its oracle fires again.
#[allow(clippy::too_many_arguments)]
async fn judge_series_again(
    recorded: &Series,
    run: RunId,
    steps: Vec<StepData>,
    oracles: &Oracles,
    spine: &Spine,
    collector: &mut FindingCollector,
    series_ids: &mut Vec<SeriesId>,
    plan: &Plan,
    verdicts: &mut Vec<FindingVerdict>,
) -> Result<(), ReplayError> {
    let RecordedSeries { id, observations } = step::series(
        SeriesName {
            run,
            name: recorded.name.clone(),
            kind: recorded.kind,
            resource: recorded.resource.clone(),
        },
        &steps,
        oracles,
        spine,
        collector,
    )
    .await?;
    series_ids.push(id);
    let observations: Vec<_> = observations.into_iter().map(|(obs, _)| obs).collect();
    let fired: Vec<String> = observations
        .iter()
        .map(|o| o.observation.oracle.name.to_owned())
        .collect();
    let answered = steps.len() == recorded.steps.len()
        && steps
            .iter()
            .all(|s| s.interaction.outcome.status().is_some());
    for f in plan.findings.iter().filter(|f| f.finding.series.is_some()) {
        let verdict = if fired.contains(&f.finding.oracle) {
            Verdict::Reproduced
        } else if answered {
            Verdict::Fixed
        } else {
            Verdict::Differs
        };
        let interaction = observations
            .iter()
            .find(|o| o.observation.oracle.name == f.finding.oracle)
            .map(|o| steps[o.step].id)
            .or_else(|| steps.last().map(|s| s.id));
        let Some(interaction) = interaction else {
            continue;
        };
        verdicts.push(FindingVerdict {
            finding: f.label.clone(),
            oracle: f.finding.oracle.clone(),
            code: f.finding.code.clone(),
            operation: f.finding.operation.clone(),
            message: f.finding.message.clone(),
            interaction,
            fired: fired.clone(),
            verdict,
        });
    }
    Ok(())
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

/// The value at `place` (`data.bucket_id`: property names joined by dots) of a body.
fn body_place<'v>(value: &'v mut Value, place: &str) -> Option<&'v mut Value> {
    place
        .split('.')
        .try_fold(value, |at, name| at.as_object_mut()?.get_mut(name))
}

/// The recorded case with each bound value taken from the new answer of its source, and
/// its bindings renumbered to the replay's seqs (so a replay of the replay works too).
pub(super) fn rebind(
    original: &Original,
    answers: &BTreeMap<u64, NewAnswer>,
    notes: &mut Vec<String>,
) -> (TestCase, Vec<Bound>) {
    let mut case = original.case.clone();
    let mut bound = Vec::new();
    for (parameter, b) in &original.bindings {
        let answer = answers.get(&b.seq);
        let now = answer.and_then(|a| b.resolve(a.json.as_ref(), a.location.as_deref()));
        // A place in the body (`body.data.bucket_id`), bound like a parameter.
        if let Some(place) = parameter.strip_prefix("body.") {
            let slot = case
                .body
                .as_mut()
                .filter(|body| body.sent_as.is_none())
                .and_then(|body| body_place(&mut body.value, place));
            let Some(slot) = slot else {
                notes.push(format!(
                    "test case {} binds `{parameter}` but its body has no such place; sent as recorded",
                    original.interaction.case
                ));
                continue;
            };
            let recorded = slot.clone();
            let rebound = match (&now, answer) {
                (Some(v), Some(a)) => {
                    *slot = canonical_json(v.clone());
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
                    true
                }
                _ => false,
            };
            if !rebound {
                notes.push(format!(
                    "`{parameter}` of seq {}: the new answer of seq {} has no value at `{}`; sent the recorded value",
                    original.interaction.seq, b.seq, b.pointer
                ));
            }
            bound.push(Bound {
                parameter: parameter.clone(),
                from_seq: b.seq,
                pointer: b.pointer.clone(),
                now: slot.clone(),
                recorded,
                rebound,
            });
            continue;
        }
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
pub(super) fn finding_verdict(
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

pub(super) fn attempt_verdict(exchanges: &[Exchanged], findings: &[FindingVerdict]) -> Verdict {
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

/// Where a request carries a credential, by the placeholder its stored copy has there:
/// `header <name>`, `query <name>`, `cookie <name>`.
fn credential_places(url: &str, headers: &[(String, String)]) -> BTreeSet<String> {
    let mut places = BTreeSet::new();
    for (name, value) in headers {
        if !value.contains(SECRET_PLACEHOLDER) {
            continue;
        }
        if name.eq_ignore_ascii_case("cookie") {
            for pair in value.split(';') {
                if let Some((k, v)) = pair.trim().split_once('=') {
                    if v.contains(SECRET_PLACEHOLDER) {
                        places.insert(format!("cookie {k}"));
                    }
                }
            }
        } else {
            places.insert(format!("header {name}"));
        }
    }
    let query = url.split_once('?').map_or("", |(_, q)| q);
    for pair in query.split('&') {
        if let Some((k, v)) = pair.split_once('=') {
            let decoded = percent_encoding::percent_decode_str(v).decode_utf8_lossy();
            if decoded.contains(SECRET_PLACEHOLDER) {
                let name = percent_encoding::percent_decode_str(k).decode_utf8_lossy();
                places.insert(format!("query {name}"));
            }
        }
    }
    places
}

/// The places where a recorded request of the replay carried a credential and the same
/// request built with this invocation's credentials carries none, each named with the
/// identity it was sent as when that is not the default (never a value: the store holds
/// none).
fn missing_credentials(
    plan: &Plan,
    api: &Api,
    identities: &Identities,
    base_url: &str,
) -> Result<Vec<String>, ReplayError> {
    let mut missing: Vec<String> = Vec::new();
    for seq in &plan.chain {
        let Some(original) = plan.originals.get(seq) else {
            continue;
        };
        let request = &original.interaction.request;
        let recorded = credential_places(&request.url, &request.headers);
        if recorded.is_empty() {
            continue;
        }
        let op = operation(api, original)?;
        let creds = identities.nominal(original.case.identity.as_deref())?;
        let now = wire::build(&original.case, op, api, base_url, &creds);
        let given = credential_places(&now.stored_url, &now.stored_headers);
        for place in recorded.difference(&given) {
            let named = match &original.case.identity {
                Some(identity) => format!("{place} (as identity {identity})"),
                None => place.clone(),
            };
            if !missing.contains(&named) {
                missing.push(named);
            }
        }
    }
    Ok(missing)
}
