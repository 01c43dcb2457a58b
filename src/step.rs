//! One campaign step, shared by `probe run` (the engine) and `probe replay`: recording an
//! exchange that was sent, and recording a series that ended.
//!
//! Each is written once so that a new kind of check has one place to hook into, for a run
//! and a replay alike. [`exchange`] encodes a sent exchange, keeps it through the spine,
//! judges it with the oracles, publishes its `interaction` event, adds what was observed
//! to the findings and publishes each new one. [`series`] does the same for a series with
//! the series oracles. Both keep before they publish (see [`crate::campaign::spine`]): every
//! id an event names has been handed to the store first.
//!
//! What differs between the callers stays with them: the engine schedules, paces and sends,
//! counts findings against `--max-findings` (through its [`Collect`]) and tallies the series
//! oracles; replay rebinds values, compares answers and gives its verdicts.
//!
//! Depends on: `store` (encoding an exchange or a series), `oracle` (judging, the finding
//! collector), `events` (the spine, the events published), `model`, `ids`, `redact`.

use serde_json::Value;

use crate::campaign::Spine;
use crate::events::Event;
use crate::ids::{RunId, SeriesId};
use crate::model::{Outcome, RequestRecord, Sent, Series, SeriesKind, TestCase, Timing};
use crate::oracle::series::{SeriesObservation, StepData};
use crate::oracle::{Exchange, FindingCollector, Late, Observation, Oracles};
use crate::redact::Redactor;
use crate::spec::Operation;
use crate::store::{encode_exchange, EncodedExchange, StoreError};

/// Where a campaign's findings are collected: a [`FindingCollector`] of its own (replay),
/// or one shared by the workers and counted as it grows (the engine).
pub trait Collect {
    /// Adds an observation with `add`; true when it is a new finding.
    fn collect(&mut self, add: impl FnOnce(&mut FindingCollector) -> bool) -> bool;
}

impl Collect for FindingCollector {
    fn collect(&mut self, add: impl FnOnce(&mut FindingCollector) -> bool) -> bool {
        add(self)
    }
}

/// One exchange as it was sent, to be recorded.
pub struct Sending<'a> {
    pub run: RunId,
    pub seq: u64,
    pub operation: &'a Operation,
    pub case: &'a TestCase,
    /// The request as stored (credentials as placeholders).
    pub request: RequestRecord,
    pub sent: Sent,
    pub timing: Timing,
    pub redactor: &'a Redactor,
    /// Whether a 2xx body is parsed as JSON once, for judging and for the caller (the
    /// engine learns from it); otherwise the oracles that need it parse it themselves.
    pub parse_json: bool,
}

/// One exchange as recorded and judged.
pub struct Recorded {
    /// The exchange as stored; its objects are already kept (the list is empty).
    pub encoded: EncodedExchange,
    /// A 2xx body as JSON, when asked for ([`Sending::parse_json`]) and it is JSON.
    pub json: Option<Value>,
    pub observations: Vec<Observation>,
}

/// Records one sent exchange: encodes it, keeps it, judges it, publishes the interaction,
/// and collects and publishes each new finding, in that order.
pub async fn exchange(
    s: Sending<'_>,
    oracles: &Oracles,
    spine: &Spine,
    findings: &mut impl Collect,
) -> Result<Recorded, StoreError> {
    let mut encoded = encode_exchange(
        s.run, s.seq, s.case, s.request, s.sent, s.timing, s.redactor,
    )?;
    spine.keep(std::mem::take(&mut encoded.objects)).await?;
    let body = encoded.response_body();
    let json: Option<Value> = match (&encoded.interaction.outcome, body) {
        (Outcome::Response(r), Some(body)) if s.parse_json && (200..300).contains(&r.status) => {
            serde_json::from_slice(body).ok()
        }
        _ => None,
    };
    let observations = oracles.judge(&Exchange {
        id: encoded.id,
        operation: s.operation,
        case: s.case,
        interaction: &encoded.interaction,
        response_body: body,
        response_json: json.as_ref(),
    });
    let interaction = &encoded.interaction;
    spine.publish(&Event::Interaction {
        seq: s.seq,
        operation: &s.case.operation,
        case: encoded.case_id,
        interaction: encoded.id,
        status: interaction.outcome.status(),
        transport: transport(&interaction.outcome),
        strategy: s.case.strategy.as_str(),
        intent: s.case.intent,
        mutation: s.case.mutation.as_ref().map(|m| m.kind.as_str()),
        started_ms: interaction.timing.started_ms,
        elapsed_us: interaction.timing.elapsed_us,
    });
    for obs in &observations {
        if findings.collect(|c| c.add_exchange(obs, encoded.id, &encoded.interaction, s.case)) {
            spine.publish(&Event::Finding {
                oracle: obs.oracle.name,
                code: obs.oracle.code,
                operation: &s.case.operation,
                message: &obs.message,
                interaction: encoded.id,
            });
        }
    }
    late(oracles.late(), spine, findings);
    Ok(Recorded {
        encoded,
        json,
        observations,
    })
}

/// Collects observations of exchanges judged earlier (a program check's verdicts, which
/// come when the program gives them; [`Oracles::late`], [`Oracles::finish`]) and publishes
/// each new finding, as [`exchange`] does its own.
pub fn late(late: Vec<Late>, spine: &Spine, findings: &mut impl Collect) {
    for l in late {
        if findings.collect(|c| c.add(&l.observation, l.interaction, l.seq, &l.case)) {
            spine.publish(&Event::Finding {
                oracle: l.observation.oracle.name,
                code: l.observation.oracle.code,
                operation: &l.case.operation,
                message: &l.observation.message,
                interaction: l.interaction,
            });
        }
    }
}

/// The kind of a transport error, if the exchange ended in one.
pub fn transport(outcome: &Outcome) -> Option<crate::model::TransportErrorKind> {
    match outcome {
        Outcome::TransportError { kind, .. } => Some(*kind),
        _ => None,
    }
}

/// What a series is, beyond its steps.
pub struct SeriesName {
    pub run: RunId,
    pub name: String,
    pub kind: SeriesKind,
    pub resource: String,
}

/// One series as recorded and judged.
pub struct RecordedSeries {
    pub id: SeriesId,
    /// Every observation of the series oracles, and whether it was a new finding.
    pub observations: Vec<(SeriesObservation, bool)>,
}

/// Records an ended series (`steps`: those answered, not empty): encodes it, keeps it,
/// judges it with the series oracles, and collects and publishes each new finding.
pub async fn series(
    name: SeriesName,
    steps: &[StepData],
    oracles: &Oracles,
    spine: &Spine,
    findings: &mut impl Collect,
) -> Result<RecordedSeries, StoreError> {
    let series = Series {
        run: name.run,
        name: name.name,
        kind: name.kind,
        resource: name.resource,
        steps: steps.iter().map(StepData::record).collect(),
    };
    let encoded = crate::store::object::encode(&series)?;
    let id = SeriesId(encoded.id);
    spine.keep(vec![encoded]).await?;
    let observations = oracles
        .judge_series(&series, steps)
        .into_iter()
        .map(|obs| {
            let step = &steps[obs.step];
            let new =
                findings.collect(|c| c.add_in_series(&obs.observation, step, id, steps.len()));
            if new {
                spine.publish(&Event::Finding {
                    oracle: obs.observation.oracle.name,
                    code: obs.observation.oracle.code,
                    operation: &step.case.operation,
                    message: &obs.observation.message,
                    interaction: step.id,
                });
            }
            (obs, new)
        })
        .collect();
    Ok(RecordedSeries { id, observations })
}
