//! Events: the one stream a campaign publishes, and the form it is kept in.
//!
//! The engine and the command that owns a run (`probe run`, `probe demo`) publish
//! [`Event`]s; the engine never prints. `probe replay` ([`crate::replay`]) and `probe
//! recheck` ([`crate::recheck`]) publish the same stream, bracketed the same way, with
//! their [`CampaignKind`] kind. A campaign publishes through its spine ([`crate::campaign::Spine`]): the store's
//! recorder keeps the objects it makes, and the watchers ([`EventSink`]s: the progress
//! bar, the `--events FILE` writer, the reports' `RunLog`) see the events. [`Record`] is
//! the stream's documented, versioned form (one JSON object a line, docs/events.md), which
//! other programs read; `run_ended` also carries what the run counted ([`RunStats`]) to
//! the watchers in this process.
//!
//! Order: `run_started` first; then phases, each `phase_started` … `phase_ended`, with the
//! interactions and findings inside them (an interaction's answer may come after its phase
//! ended, when a slow request was left to finish on the slow lane); `sending_ended`; then
//! `run_ended` last, once the run's end is stored.
//!
//! Depends on: `ids`, `model`; nothing else (a leaf: the spine and a campaign's bracket,
//! which store objects, are in `campaign`).

pub mod stats;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ids::{CaseId, InteractionId, RunId};
use crate::model::{Intent, RunOutcome, TransportErrorKind};

pub use stats::{RunStats, SeriesVariations};

/// The version of [`Record`]'s layout; every record carries it as `v`.
pub const EVENTS_VERSION: u32 = 1;

/// What kind of campaign a stream is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CampaignKind {
    /// `probe run` and `probe demo`: test cases generated and sent.
    #[default]
    Run,
    /// `probe replay`: recorded requests sent again, recorded as a run of their own.
    Replay,
    /// `probe recheck`: a recorded run judged again; nothing is sent.
    Recheck,
}

/// Something a campaign did. It borrows what it names: one is made for every answer, and
/// most sinks look at a field or two.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// The run's manifest is stored and sending starts (a recheck: judging starts).
    RunStarted {
        kind: CampaignKind,
        /// The run: a replay's own, or the run a recheck judges.
        run: RunId,
        /// A replay: the recorded run whose requests it sends again.
        of: Option<RunId>,
        api_title: &'a str,
        api_version: &'a str,
        base_url: &'a str,
        seed: u64,
        operations: usize,
        skipped: usize,
        at_ms: u64,
    },
    /// A phase began: `opening lap 2/5: creations (POST)`, `rounds`.
    PhaseStarted { name: &'a str, at_ms: u64 },
    /// The phase of that name ended (the next one begins, or sending stops).
    PhaseEnded { name: &'a str, at_ms: u64 },
    /// One interaction is recorded and judged.
    Interaction {
        seq: u64,
        operation: &'a str,
        case: CaseId,
        interaction: InteractionId,
        status: Option<u16>,
        transport: Option<TransportErrorKind>,
        strategy: &'a str,
        intent: Intent,
        /// Mutation kind, for changed requests.
        mutation: Option<&'a str>,
        started_ms: u64,
        elapsed_us: u64,
    },
    /// A new distinct finding, first seen in `interaction`.
    Finding {
        oracle: &'a str,
        code: Option<&'a str>,
        operation: &'a str,
        message: &'a str,
        interaction: InteractionId,
    },
    /// An operation could not be generated for and is left out of the run.
    OperationSkipped { operation: &'a str, reason: &'a str },
    /// Sending stopped: every request sent is answered, failed or cancelled.
    SendingEnded { interactions: u64, at_ms: u64 },
    /// The run's end (outcome and findings) is stored (a recheck: its finding set).
    RunEnded {
        kind: CampaignKind,
        run: RunId,
        outcome: RunOutcome,
        interactions: u64,
        findings: usize,
        at_ms: u64,
        /// What the run counted, for the reports; `None` for a recheck, which sends
        /// nothing. Not part of the NDJSON form.
        stats: Option<&'a RunStats>,
    },
}

/// Receives every event; called from the engine's worker threads.
pub type EventSink = Arc<dyn Fn(&Event<'_>) + Send + Sync>;

/// A sink that drops everything.
pub fn discard() -> EventSink {
    Arc::new(|_| {})
}

/// A sink that hands every event to each of `sinks`, in order.
pub fn fan_out(sinks: Vec<EventSink>) -> EventSink {
    Arc::new(move |event: &Event<'_>| {
        for sink in &sinks {
            sink(event);
        }
    })
}

/// One line of the event stream as kept: [`Event`] owned, with the layout version `v`
/// (docs/events.md). Readers ignore fields they do not know; a change that removes a field
/// or changes its meaning bumps [`EVENTS_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    #[serde(flatten)]
    pub event: RecordEvent,
}

/// What a [`Record`] says, tagged by `event`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RecordEvent {
    RunStarted {
        /// Absent from streams written before it was added: `run`.
        #[serde(default)]
        kind: CampaignKind,
        run: String,
        #[serde(default)]
        of: Option<String>,
        api_title: String,
        api_version: String,
        base_url: String,
        seed: u64,
        operations: usize,
        skipped: usize,
        at_ms: u64,
    },
    PhaseStarted {
        name: String,
        at_ms: u64,
    },
    PhaseEnded {
        name: String,
        at_ms: u64,
    },
    Interaction {
        seq: u64,
        operation: String,
        case: String,
        interaction: String,
        status: Option<u16>,
        transport: Option<TransportErrorKind>,
        strategy: String,
        intent: Intent,
        mutation: Option<String>,
        started_ms: u64,
        elapsed_us: u64,
    },
    Finding {
        oracle: String,
        code: Option<String>,
        operation: String,
        message: String,
        interaction: String,
    },
    OperationSkipped {
        operation: String,
        reason: String,
    },
    SendingEnded {
        interactions: u64,
        at_ms: u64,
    },
    RunEnded {
        #[serde(default)]
        kind: CampaignKind,
        run: String,
        outcome: RunOutcome,
        interactions: u64,
        findings: usize,
        at_ms: u64,
    },
}

impl From<&Event<'_>> for Record {
    fn from(event: &Event<'_>) -> Record {
        let event = match *event {
            Event::RunStarted {
                kind,
                run,
                of,
                api_title,
                api_version,
                base_url,
                seed,
                operations,
                skipped,
                at_ms,
            } => RecordEvent::RunStarted {
                kind,
                run: run.to_string(),
                of: of.map(|r| r.to_string()),
                api_title: api_title.to_owned(),
                api_version: api_version.to_owned(),
                base_url: base_url.to_owned(),
                seed,
                operations,
                skipped,
                at_ms,
            },
            Event::PhaseStarted { name, at_ms } => RecordEvent::PhaseStarted {
                name: name.to_owned(),
                at_ms,
            },
            Event::PhaseEnded { name, at_ms } => RecordEvent::PhaseEnded {
                name: name.to_owned(),
                at_ms,
            },
            Event::Interaction {
                seq,
                operation,
                case,
                interaction,
                status,
                transport,
                strategy,
                intent,
                mutation,
                started_ms,
                elapsed_us,
            } => RecordEvent::Interaction {
                seq,
                operation: operation.to_owned(),
                case: case.to_string(),
                interaction: interaction.to_string(),
                status,
                transport,
                strategy: strategy.to_owned(),
                intent,
                mutation: mutation.map(str::to_owned),
                started_ms,
                elapsed_us,
            },
            Event::Finding {
                oracle,
                code,
                operation,
                message,
                interaction,
            } => RecordEvent::Finding {
                oracle: oracle.to_owned(),
                code: code.map(str::to_owned),
                operation: operation.to_owned(),
                message: message.to_owned(),
                interaction: interaction.to_string(),
            },
            Event::OperationSkipped { operation, reason } => RecordEvent::OperationSkipped {
                operation: operation.to_owned(),
                reason: reason.to_owned(),
            },
            Event::SendingEnded {
                interactions,
                at_ms,
            } => RecordEvent::SendingEnded {
                interactions,
                at_ms,
            },
            Event::RunEnded {
                kind,
                run,
                outcome,
                interactions,
                findings,
                at_ms,
                stats: _,
            } => RecordEvent::RunEnded {
                kind,
                run: run.to_string(),
                outcome,
                interactions,
                findings,
                at_ms,
            },
        };
        Record {
            v: EVENTS_VERSION,
            event,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Digest;

    /// The documented form: `v`, `event` and the fields, ids as full hex.
    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let event = Event::Interaction {
            seq: 7,
            operation: "getPet",
            case: CaseId(Digest::of(b"c")),
            interaction: InteractionId(Digest::of(b"i")),
            status: None,
            transport: Some(TransportErrorKind::Timeout),
            strategy: "nominal",
            intent: Intent::Acceptable,
            mutation: None,
            started_ms: 1_700_000_000_000,
            elapsed_us: 2500,
        };
        let record = Record::from(&event);
        let line = serde_json::to_string(&record).unwrap();
        assert!(
            line.starts_with(r#"{"v":1,"event":"interaction","seq":7,"#),
            "{line}"
        );
        assert!(line.contains(r#""transport":"timeout""#), "{line}");
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, record);
    }
}
