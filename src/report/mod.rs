//! Reports of a finished run: the console summary, `report.json` (versioned, specified in
//! `docs/report-json.md`), JUnit XML, SARIF (`sarif.rs`), the Markdown summary for CI
//! (`summary.rs`), the Web Fuzzing Commons report (`wfc.rs`) and the HTML page
//! (`html.rs`, docs/html-report.md).
//!
//! All are built from one [`RunReport`], which is assembled from the run's event stream
//! (the [`RunLog`] consumer keeps the phases and what `run_ended` counted) and the store's
//! public API (the run's end, its finding set, the curl line of each finding's first
//! interaction), so they never disagree and never look inside the engine. The page adds
//! the run's curves (`timeline.rs`: counted from the events by [`RunLog`] at a run's end,
//! read from the store by `probe report`) and the findings' exchanges (read from the
//! store), and reads a kept report.json back for `probe report`.
//!
//! Depends on: `model`, `events` (the stream and its run statistics), `store` (reading
//! what the run stored), `send` (the curl line), `oracle` (catalogue), `spec`, `settings`
//! (the page names the settings that differ from the defaults), `diff` (the diff page).

pub mod campaign;
pub mod colour;
pub mod console;
pub mod coverage;
pub mod events_file;
pub mod heartbeat;
pub mod html;
pub mod junit;
pub mod markup;
pub mod progress;
pub mod reproduce;
pub mod sarif;
pub mod summary;
pub mod svg;
pub mod terminal;
pub mod timeline;
pub mod wfc;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::events::stats::OperationCounts;
use crate::events::{Event, EventSink, RunStats};
use crate::ids::{InteractionId, RunId};
use crate::model::{Finding, FindingSet, Interaction, MutationKind, RunOutcome, RunStart};
use crate::oracle::CATALOGUE;
use crate::send::curl_line;
use crate::spec::Api;
use crate::store::{Store, StoreError};

/// Version of the `report.json` layout. See `docs/report-json.md`.
pub const REPORT_VERSION: u32 = 1;

/// How many interactions a finding lists in report.json (the store has them all).
const INTERACTIONS_LISTED: usize = 20;

/// The content of `report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub version: u32,
    pub tool: Tool,
    pub run: RunInfo,
    pub totals: Totals,
    pub operations: Vec<OperationReport>,
    pub skipped: Vec<SkippedReport>,
    pub oracles: Vec<OracleReport>,
    pub findings: Vec<FindingReport>,
    /// The findings grouped by cause across operations (see [`causes`]).
    pub causes: Vec<CauseReport>,
    /// The phases of the run as its events named them, in order (absent in reports of
    /// earlier builds).
    #[serde(default)]
    pub phases: Vec<PhaseReport>,
    /// Files the run was told to read and could not (plans, dictionaries).
    pub unreadable_files: Vec<String>,
    /// How each program check that failed failed (crashed, hung, wrote garbage, ended
    /// early), naming the check, with the exchanges it did not judge; absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_failures: Vec<String>,
    /// The identities the run sent as, the default first, with their logins.
    #[serde(default)]
    pub identities: Vec<crate::model::IdentitySummary>,
    /// What each check the user wrote did (docs/checks.md), in the order they were read
    /// (absent in reports of earlier builds; empty without checks).
    #[serde(default)]
    pub checks: Vec<CheckReport>,
    /// By resource, the variations its life cycle series took turns at (docs/series.md,
    /// "Variations"): absent in reports of earlier builds, empty without life cycles.
    #[serde(default)]
    pub series_variations: Vec<SeriesVariationsReport>,
}

/// The variations one resource's series got, in the order they were first tried.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SeriesVariationsReport {
    /// The item path, e.g. `/pets/{petId}`.
    pub resource: String,
    pub variations: Vec<VariationReport>,
}

/// One variation: its name (`nominal`, `all_optional`, `priority=urgent`,
/// `refused:bound`, `change:label`, `created_by_put`), the series that tried it, and those
/// of them that showed something new (a finding not seen before).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct VariationReport {
    pub variation: String,
    pub series: u64,
    pub showed: u64,
}

/// What one user check did over a judging: the exchanges it judged, those it failed, and
/// those it should have judged and could not (an expression failed on them), with the
/// first of those. The same in report.json, the console summary and `probe recheck`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    pub name: String,
    /// The oracle its findings name (`check:<name>`).
    pub oracle: String,
    pub judged: u64,
    pub failed: u64,
    pub not_judged: u64,
    /// The first exchange (by seq) it could not judge, and why.
    pub first_not_judged: Option<NotJudgedReport>,
}

/// An exchange a check could not judge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotJudgedReport {
    /// The seq of the interaction in its run.
    pub seq: u64,
    pub reason: String,
}

impl From<&crate::model::CheckCounts> for CheckReport {
    fn from(c: &crate::model::CheckCounts) -> CheckReport {
        CheckReport {
            oracle: format!("{}{}", crate::oracle::user::PREFIX, c.name),
            name: c.name.clone(),
            judged: c.judged,
            failed: c.failed,
            not_judged: c.not_judged,
            first_not_judged: c
                .first_not_judged
                .as_ref()
                .map(|(reason, seq)| NotJudgedReport {
                    seq: *seq,
                    reason: reason.clone(),
                }),
        }
    }
}

/// One phase of a run (`opening lap 2/5: creations (POST)`, `rounds`), from its
/// `phase_started` and `phase_ended` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseReport {
    pub name: String,
    /// Milliseconds from the run's start to the phase's start...
    pub from_ms: u64,
    /// ...and to its end.
    pub to_ms: u64,
}

/// The reports' consumer of a run's event stream: it keeps the phases (for
/// [`RunReport::phases`]) and what the `run_ended` event says, which with the store is all
/// [`RunReport::build`] reads.
#[derive(Clone, Default)]
pub struct RunLog {
    started_ms: u64,
    seen: Arc<Mutex<Seen>>,
}

#[derive(Default)]
struct Seen {
    phases: Vec<PhaseReport>,
    ended: Option<Ended>,
    /// The run over its clock, for the page, counted from the `interaction` events.
    timeline: Option<timeline::TimelineBuilder>,
}

/// Why a run's report cannot be built; each is a fault of the program or the store, not
/// of the user's input.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("the run's end was never published, so there is nothing to report")]
    NotEnded,
    #[error("run {run} ended, but its end is not in the store")]
    EndNotStored { run: RunId },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the `run_ended` event of a run said.
#[derive(Debug, Clone)]
pub struct Ended {
    pub run: RunId,
    pub outcome: RunOutcome,
    pub interactions: u64,
    /// When the run's end was stored (Unix milliseconds).
    pub at_ms: u64,
    pub stats: RunStats,
}

impl RunLog {
    /// A log of a run that started at `started_ms` (Unix milliseconds).
    pub fn new(started_ms: u64) -> RunLog {
        RunLog {
            started_ms,
            seen: Default::default(),
        }
    }

    /// The sink to add to the run's fan-out.
    pub fn sink(&self) -> EventSink {
        let log = self.clone();
        Arc::new(move |event: &Event<'_>| {
            let at = |ms: u64| ms.saturating_sub(log.started_ms);
            // A poisoned lock only loses what the log kept, never the run; `RunReport::build`
            // then says the run's end was not seen.
            let Ok(mut seen) = log.seen.lock() else {
                return;
            };
            match event {
                Event::PhaseStarted { name, at_ms } => seen.phases.push(PhaseReport {
                    name: (*name).to_owned(),
                    from_ms: at(*at_ms),
                    to_ms: at(*at_ms),
                }),
                Event::PhaseEnded { name, at_ms } => {
                    if let Some(p) = seen.phases.iter_mut().rev().find(|p| p.name == *name) {
                        p.to_ms = at(*at_ms);
                    }
                }
                Event::Interaction {
                    operation,
                    status,
                    started_ms,
                    elapsed_us,
                    ..
                } => {
                    seen.timeline
                        .get_or_insert_with(|| timeline::TimelineBuilder::new(log.started_ms, None))
                        .add(*started_ms, *elapsed_us, operation, *status);
                }
                Event::RunEnded {
                    run,
                    outcome,
                    interactions,
                    at_ms,
                    stats: Some(stats),
                    ..
                } => {
                    seen.ended = Some(Ended {
                        run: *run,
                        outcome: *outcome,
                        interactions: *interactions,
                        at_ms: *at_ms,
                        stats: (*stats).clone(),
                    })
                }
                _ => {}
            }
        })
    }

    /// The phases seen so far.
    pub fn phases(&self) -> Vec<PhaseReport> {
        self.seen
            .lock()
            .map(|s| s.phases.clone())
            .unwrap_or_default()
    }

    /// The run over its clock, for its page, from the `interaction` events seen, without
    /// reading the run back: `findings_first` are the interactions that first showed each
    /// distinct finding, whose answer times are read from `store`. `None` before the run's
    /// end was published, or when the events cannot give it (see
    /// [`timeline::TimelineBuilder::finish`]): read it from the store then.
    pub fn timeline(
        &self,
        store: &Store,
        findings_first: &[InteractionId],
    ) -> Option<timeline::Timeline> {
        let (builder, ended_ms) = {
            let seen = self.seen.lock().ok()?;
            let ended_ms = seen.ended.as_ref()?.at_ms;
            let builder = seen
                .timeline
                .clone()
                .unwrap_or_else(|| timeline::TimelineBuilder::new(self.started_ms, None));
            (builder, ended_ms)
        };
        let answered: Vec<Option<u64>> = findings_first
            .iter()
            .map(|id| {
                let timing = store.get::<Interaction>(id.0).ok()?.timing;
                Some(builder.answered_at(timing.started_ms, timing.elapsed_us))
            })
            .collect();
        builder.finish(Some(ended_ms), &answered)
    }

    /// The answers of each operation by exact status, counted from the `interaction`
    /// events seen so far.
    pub fn status_codes(&self) -> BTreeMap<String, BTreeMap<u16, u64>> {
        self.seen
            .lock()
            .ok()
            .and_then(|s| s.timeline.as_ref().map(|t| t.status_codes().clone()))
            .unwrap_or_default()
    }

    /// What the run's `run_ended` event said, once it was published.
    pub fn ended(&self) -> Option<Ended> {
        self.seen.lock().ok().and_then(|s| s.ended.clone())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub id: String,
    pub name: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub api_title: String,
    pub api_version: String,
    pub document: String,
    pub document_id: String,
    pub base_url: String,
    pub seed: u64,
    /// RFC 3339, UTC.
    pub started: String,
    pub elapsed_ms: u64,
    /// `completed`, `interrupted`, `unreachable` or `refused`.
    pub outcome: String,
    pub settings: BTreeMap<String, String>,
    /// The run's time budget (`60s`), when it had one (absent in reports of earlier builds).
    #[serde(default)]
    pub budget: Option<String>,
    /// The run's limit of requests (`--requests`), when it had one.
    #[serde(default)]
    pub request_limit: Option<u64>,
    /// TLS certificates were not verified (`--insecure`, `send.insecure`): what the run
    /// found may have come from someone between probe and the API (false in reports of
    /// earlier builds).
    #[serde(default)]
    pub insecure: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Totals {
    pub operations: usize,
    pub operations_tried: usize,
    pub operations_answered_2xx: usize,
    pub requests: u64,
    /// Requests that got an HTTP answer (any status); the rest got none.
    pub requests_answered: u64,
    /// Requests that got no HTTP answer, by kind (`reset`, `timeout`, `malformed`, ...).
    pub transport: BTreeMap<String, u64>,
    pub requests_per_second: f64,
    /// Requests by what they were: `nominal`, `changed:<kind>`, `pushing`.
    pub requests_by_kind: BTreeMap<String, u64>,
    /// Distinct findings (by message).
    pub findings: usize,
    /// Distinct findings counted by kind (coarser).
    pub findings_by_kind: usize,
    /// Causes: the findings once those of one cause in several operations are grouped.
    pub causes: usize,
    /// Series recorded (docs/series.md).
    pub series: usize,
    /// Requests sent as steps of a series (included in `requests`).
    pub series_steps: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OperationReport {
    pub operation: String,
    pub method: String,
    pub path: String,
    pub requests: u64,
    /// Of `requests`, those of another method sent to the operation's path (a series'
    /// OPTIONS, a method the document does not declare) that were answered: left out of
    /// `statuses` and `status_codes`, which count the operation's own method only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_method_answers: u64,
    /// `"2xx"` → count; `"transport"` for transport errors. Requests of the operation's
    /// own method only (and every transport error).
    pub statuses: BTreeMap<String, u64>,
    /// Requests that got no HTTP answer, by kind (`reset`, `timeout`, ...).
    pub transport: BTreeMap<String, u64>,
    /// Path parameters no answer of the API ever gave a value for (probe invented every
    /// value): for an operation never answered 2xx but answered 404, the likely reason.
    pub path_parameters_never_from_answers: Vec<String>,
    /// Whether any answer was 404 (a resource the path names was not found).
    pub answered_404: bool,
    /// Time from sending to the answer's end, summed over the requests, in milliseconds.
    pub time_spent_ms: u64,
    /// The slowest request, in milliseconds.
    pub slowest_ms: u64,
    /// Requests sent on the slow lane (see docs/settings.md, `schedule.slowAfter`).
    pub slow_lane_requests: u64,
    /// Cases planned but not sent: the slow lane had no room for them, or the operation was
    /// paused when the run ended.
    pub not_sent: u64,
    /// Answers that asked probe to wait (429, or 503 with `Retry-After`): obeyed, not
    /// judged.
    pub throttled: u64,
    pub findings: usize,
    /// JSON pointer of the operation in the document (`/paths/~1pets/get`); absent in
    /// reports of earlier builds.
    #[serde(default)]
    pub pointer: String,
    /// The statuses the document declares for it, as written (`200`, `4XX`, `default`).
    #[serde(default)]
    pub declared_statuses: Vec<String>,
    /// Answers by exact status (`"302"` → count); absent in reports of earlier builds,
    /// and when the run's events could not give them.
    #[serde(default)]
    pub status_codes: BTreeMap<String, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl OperationReport {
    /// Requests that got an HTTP answer.
    pub fn answered(&self) -> u64 {
        self.requests - self.statuses.get("transport").copied().unwrap_or(0)
    }
}

/// `8 reset, 2 timeout`: requests without an HTTP answer by kind, for a person.
pub fn transport_text(transport: &BTreeMap<String, u64>) -> String {
    transport
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `{kind name: count}` of the kinds seen.
fn transport_map(counts: &OperationCounts) -> BTreeMap<String, u64> {
    counts
        .transport_by_kind()
        .map(|(k, n)| (k.name().to_owned(), n))
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkippedReport {
    pub operation: String,
    pub reason: String,
    /// `load` (the document) or `run` (nothing could be generated).
    pub when: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleReport {
    pub name: String,
    pub code: Option<String>,
    pub version: u32,
    pub enabled: bool,
    pub findings: usize,
    pub occurrences: usize,
    /// For a series oracle (absent for the others): the series it could judge (every step
    /// it needs answered)...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series_judged: Option<u64>,
    /// ...and the time their steps took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series_time_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FindingReport {
    /// Its short id, `<finding set id, 8 hex>:<n>` ([`crate::ids::finding_id`]): what
    /// `probe show`, `probe show --as` and `probe replay` take. Empty in a report.json
    /// written before it was kept.
    #[serde(default)]
    pub id: String,
    pub oracle: String,
    pub code: Option<String>,
    pub severity: String,
    pub operation: String,
    pub message: String,
    pub occurrences: usize,
    pub key_by_message: String,
    pub key_by_kind: String,
    pub intent: String,
    pub mutation: Option<MutationReport>,
    /// First interactions (at most 20), in send order.
    pub interactions: Vec<String>,
    /// A curl line that re-sends the reproducer (credentials read from variables).
    pub curl: Option<String>,
    /// The smallest request that showed it, when shrinking (or chance) found one smaller
    /// than the first: the curl and replay lines re-send this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproducer: Option<String>,
    /// `probe replay <id>`: sends its reproducer again, or for a finding of a series
    /// oracle the whole series.
    pub replay: String,
    /// The series that showed it, for a finding of a series oracle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
}

/// The findings of one cause: one oracle, one key once the operation is taken out of it
/// (the same status, the same normalised error, the same schema place or header), in one
/// or more operations. What a person reads first; `findings` keeps one entry per operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CauseReport {
    pub oracle: String,
    pub code: Option<String>,
    pub severity: String,
    /// The message of the lead finding (the one seen most often, then the first).
    pub message: String,
    /// The operations it was seen in, sorted.
    pub operations: Vec<String>,
    /// Indices into `findings` of its findings, the lead first.
    pub findings: Vec<usize>,
    /// Occurrences summed over its findings.
    pub occurrences: usize,
    /// The lead finding's reproducer and replay line.
    pub curl: Option<String>,
    pub replay: String,
}

/// The key findings of one cause share: the oracle and the finding's key with its
/// operation taken out. Keys are written `oracle|operation|…` (`oracle::Context::
/// observation`); a key of another shape keeps its operation, so it groups with nothing.
///
/// A server error groups across operations only when its reply names the frame it failed
/// in (`oracle::normalise::FRAME`): one message (`Internal Server Error`) from two
/// operations says nothing of whether they fail in one place.
fn cause_key(f: &FindingReport) -> (String, String) {
    let prefix = format!("{}|{}|", f.oracle, f.operation);
    let alone = format!("{}\u{0}{}", f.operation, f.key_by_message);
    let rest = match f.key_by_message.strip_prefix(&prefix) {
        Some(rest)
            if f.oracle != crate::oracle::SERVER_ERROR.name
                || rest.contains(crate::oracle::normalise::FRAME) =>
        {
            rest.to_owned()
        }
        _ => alone,
    };
    (f.oracle.clone(), rest)
}

/// The findings grouped by cause, ordered by severity, then occurrences, then key.
pub fn causes(findings: &[FindingReport]) -> Vec<CauseReport> {
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, f) in findings.iter().enumerate() {
        groups.entry(cause_key(f)).or_default().push(i);
    }
    let mut out: Vec<(u8, CauseReport)> = groups
        .into_values()
        .map(|mut members| {
            // The lead: seen most often, then first in report order.
            members.sort_by_key(|&i| (std::cmp::Reverse(findings[i].occurrences), i));
            let lead = &findings[members[0]];
            let mut operations: Vec<String> = members
                .iter()
                .map(|&i| findings[i].operation.clone())
                .collect();
            operations.sort();
            operations.dedup();
            let rank = severity_rank(&lead.severity);
            (
                rank,
                CauseReport {
                    oracle: lead.oracle.clone(),
                    code: lead.code.clone(),
                    severity: lead.severity.clone(),
                    message: lead.message.clone(),
                    operations,
                    occurrences: members.iter().map(|&i| findings[i].occurrences).sum(),
                    curl: lead.curl.clone(),
                    replay: lead.replay.clone(),
                    findings: members,
                },
            )
        })
        .collect();
    out.sort_by(|(ra, a), (rb, b)| {
        rb.cmp(ra)
            .then(b.occurrences.cmp(&a.occurrences))
            .then(a.findings.cmp(&b.findings))
    });
    out.into_iter().map(|(_, c)| c).collect()
}

/// High first.
pub(crate) fn severity_rank(s: &str) -> u8 {
    match s {
        "high" => 3,
        "medium" => 2,
        _ => 1,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutationReport {
    pub kind: MutationKind,
    pub place: String,
    pub description: String,
    pub from: String,
}

/// RFC 3339 in UTC for a Unix time in milliseconds.
pub fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

fn severity_name(f: &Finding) -> String {
    format!("{:?}", f.severity).to_ascii_lowercase()
}

/// Each operation sent: its requests by status class and transport error, its time, its
/// pace, and the path parameters no answer gave.
fn operation_reports(
    api: &Api,
    stats: &RunStats,
    finding_set: &FindingSet,
    codes: &BTreeMap<String, BTreeMap<u16, u64>>,
) -> Vec<OperationReport> {
    let mut per_op_findings: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &finding_set.findings {
        *per_op_findings.entry(f.operation.as_str()).or_insert(0) += 1;
    }
    api.operations
        .iter()
        .filter_map(|op| {
            let name = op.key.name();
            let counts = stats.per_operation.get(&name)?;
            let mut statuses = BTreeMap::new();
            for (i, label) in ["transport", "1xx", "2xx", "3xx", "4xx", "5xx"]
                .iter()
                .enumerate()
            {
                if counts.by_class[i] > 0 {
                    statuses.insert((*label).to_owned(), counts.by_class[i]);
                }
            }
            // The timeline counts every answer to the operation's path; those to requests
            // of another method are not the operation's own.
            let status_codes = codes
                .get(&name)
                .map(|by| {
                    by.iter()
                        .map(|(c, n)| {
                            let other = counts.other_methods.get(c).copied().unwrap_or(0);
                            (c.to_string(), n.saturating_sub(other))
                        })
                        .filter(|(_, n)| *n > 0)
                        .collect()
                })
                .unwrap_or_default();
            Some(OperationReport {
                findings: per_op_findings.get(name.as_str()).copied().unwrap_or(0),
                operation: name,
                method: op.key.method.clone(),
                path: op.key.path.clone(),
                requests: counts.requests,
                other_method_answers: counts.other_methods.values().sum(),
                statuses,
                transport: transport_map(counts),
                answered_404: counts.not_found > 0,
                time_spent_ms: counts.time_spent.as_millis() as u64,
                slowest_ms: counts.slowest.as_millis() as u64,
                slow_lane_requests: counts.pace.slow_requests,
                not_sent: counts.pace.not_sent,
                throttled: counts.pace.throttled,
                pointer: op.pointer.clone(),
                declared_statuses: op.responses.iter().map(|r| r.status.to_string()).collect(),
                status_codes,
                path_parameters_never_from_answers: counts
                    .path_parameters_from_answers
                    .iter()
                    .filter(|(_, from_answers)| !**from_answers)
                    .map(|(name, _)| name.clone())
                    .collect(),
            })
        })
        .collect()
}

/// Each oracle probe knows: whether it judged this run, what it found, its series' time.
fn oracle_reports(finding_set: &FindingSet, stats: &RunStats) -> Vec<OracleReport> {
    let enabled: BTreeMap<&str, u32> = finding_set
        .oracles
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    CATALOGUE
        .iter()
        .map(|o| {
            let mine: Vec<&Finding> = finding_set
                .findings
                .iter()
                .filter(|f| f.oracle == o.name)
                .collect();
            OracleReport {
                name: o.name.to_owned(),
                code: o.code.map(str::to_owned),
                version: o.version,
                enabled: enabled.contains_key(o.name),
                findings: mine.len(),
                occurrences: mine.iter().map(|f| f.occurrences() as usize).sum(),
                series_judged: crate::oracle::judges_series(o.name)
                    .then(|| stats.series_judged.get(o.name).map_or(0, |(n, _)| *n)),
                series_time_ms: crate::oracle::judges_series(o.name).then(|| {
                    stats
                        .series_judged
                        .get(o.name)
                        .map_or(0, |(_, t)| t.as_millis() as u64)
                }),
            }
        })
        .collect()
}

/// The operations skipped, when the document was loaded and during the run.
fn skipped_reports(skipped_at_load: &[(String, String)], stats: &RunStats) -> Vec<SkippedReport> {
    let mut skipped: Vec<SkippedReport> = skipped_at_load
        .iter()
        .map(|(o, r)| SkippedReport {
            operation: o.clone(),
            reason: r.clone(),
            when: "load".to_owned(),
        })
        .collect();
    skipped.extend(stats.skipped.iter().map(|(o, r)| SkippedReport {
        operation: o.clone(),
        reason: r.clone(),
        when: "run".to_owned(),
    }));
    skipped
}

impl RunReport {
    /// Assembles the report of a run just finished, from what its event stream said
    /// (`log`) and the store: the run's end, its finding set, and the first interaction of
    /// each finding (for its curl line). Fails when the stream never said the run ended or
    /// the store cannot give what it stored.
    pub fn build(
        api: &Api,
        start: &RunStart,
        log: &RunLog,
        store: &Store,
        skipped_at_load: &[(String, String)],
    ) -> Result<RunReport, ReportError> {
        let ended = log.ended().ok_or(ReportError::NotEnded)?;
        let end = store
            .run_end(ended.run)?
            .ok_or(ReportError::EndNotStored { run: ended.run })?;
        let finding_set: FindingSet = store.get(end.findings.0)?;
        let stats = &ended.stats;
        let findings: Vec<FindingReport> = finding_set
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| finding_report(f, crate::ids::finding_id(end.findings, i + 1), store))
            .collect();
        let operations = operation_reports(api, stats, &finding_set, &log.status_codes());
        let oracles = oracle_reports(&finding_set, stats);
        let by_kind: std::collections::BTreeSet<(&str, &str)> = finding_set
            .findings
            .iter()
            .map(|f| (f.oracle.as_str(), f.key_by_kind.as_str()))
            .collect();
        let skipped = skipped_reports(skipped_at_load, stats);
        let secs = stats.elapsed.as_secs_f64().max(1e-3);
        let causes = causes(&findings);
        Ok(RunReport {
            version: REPORT_VERSION,
            tool: Tool {
                name: "probe".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            run: RunInfo {
                id: ended.run.to_string(),
                name: start.name.clone(),
                tags: start.tags.clone(),
                api_title: api.title.clone(),
                api_version: api.version.clone(),
                document: start.document_source.clone(),
                document_id: start.document.to_string(),
                base_url: start.base_url.clone(),
                seed: start.seed,
                started: rfc3339(start.started_ms),
                elapsed_ms: stats.elapsed.as_millis() as u64,
                outcome: format!("{:?}", ended.outcome).to_ascii_lowercase(),
                settings: start.settings.clone(),
                budget: None,
                request_limit: None,
                insecure: start.settings.get("send.insecure").map(String::as_str) == Some("true"),
            },
            totals: Totals {
                operations: api.operations.len(),
                operations_tried: operations.len(),
                operations_answered_2xx: operations
                    .iter()
                    .filter(|o| o.statuses.contains_key("2xx"))
                    .count(),
                requests: ended.interactions,
                requests_answered: stats.answered(),
                transport: transport_map(&stats.transport_totals()),
                requests_per_second: (ended.interactions as f64 / secs * 10.0).round() / 10.0,
                requests_by_kind: stats.by_kind.clone(),
                findings: finding_set.findings.len(),
                findings_by_kind: by_kind.len(),
                causes: causes.len(),
                series: stats.series.len(),
                series_steps: stats.series_steps,
            },
            operations,
            skipped,
            oracles,
            findings,
            causes,
            phases: log.phases(),
            unreadable_files: Vec::new(),
            check_failures: Vec::new(),
            identities: stats.identities.clone(),
            checks: stats.checks.iter().map(CheckReport::from).collect(),
            series_variations: stats
                .series_variations
                .iter()
                .map(|r| SeriesVariationsReport {
                    resource: r.resource.clone(),
                    variations: r
                        .variations
                        .iter()
                        .map(|(variation, series, showed)| VariationReport {
                            variation: variation.clone(),
                            series: *series,
                            showed: *showed,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

/// The findings of a finding set as report.json lists them (a recheck's, say).
pub fn finding_reports(
    store: &Store,
    set: &FindingSet,
    set_id: crate::ids::FindingSetId,
) -> Vec<FindingReport> {
    set.findings
        .iter()
        .enumerate()
        .map(|(i, f)| finding_report(f, crate::ids::finding_id(set_id, i + 1), store))
        .collect()
}

fn finding_report(f: &Finding, id: String, store: &Store) -> FindingReport {
    // The smallest request that showed it, else the first; for a series oracle's finding,
    // the step of the series it names (the shortest that showed it) that showed it.
    let in_series = f
        .series
        .and_then(|s| store.get::<crate::model::Series>(s.digest()).ok())
        .and_then(|series| {
            f.interactions
                .iter()
                .find(|i| series.steps.iter().any(|s| s.interaction == **i))
        });
    let first: Option<&InteractionId> = in_series
        .or(f.reproducer.as_ref())
        .or(f.interactions.first());
    let curl = first.and_then(|id| {
        let interaction: Interaction = store.get(id.digest()).ok()?;
        let body = match &interaction.request.body {
            Some(b) => Some(store.body_bytes(b).ok()?),
            None => None,
        };
        Some(curl_line(
            &interaction.request.method,
            &interaction.request.url,
            &interaction.request.headers,
            body.as_deref(),
        ))
    });
    FindingReport {
        replay: match (&f.series, first) {
            (None, None) => String::new(),
            _ => format!("probe replay {id}"),
        },
        id,
        oracle: f.oracle.clone(),
        code: f.code.clone(),
        severity: severity_name(f),
        operation: f.operation.clone(),
        message: f.message.clone(),
        occurrences: f.occurrences() as usize,
        key_by_message: f.key_by_message.clone(),
        key_by_kind: f.key_by_kind.clone(),
        intent: f.intent.as_str().to_owned(),
        mutation: f.mutation.as_ref().map(|m| MutationReport {
            kind: m.kind.clone(),
            place: m.place.clone(),
            description: m.description.clone(),
            from: format!("{} (seq {})", m.from.case, m.from.seq),
        }),
        interactions: f
            .interactions
            .iter()
            .take(INTERACTIONS_LISTED)
            .map(|i| i.to_string())
            .collect(),
        curl,
        reproducer: f.reproducer.map(|r| r.to_string()),
        series: f.series.map(|s| s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(oracle: &str, operation: &str, rest: &str, occurrences: usize) -> FindingReport {
        FindingReport {
            id: String::new(),
            oracle: oracle.into(),
            code: None,
            severity: "high".into(),
            operation: operation.into(),
            message: format!("{operation}: {rest}"),
            occurrences,
            key_by_message: format!("{oracle}|{operation}|{rest}"),
            key_by_kind: String::new(),
            intent: "unknown".into(),
            mutation: None,
            interactions: Vec::new(),
            curl: None,
            reproducer: None,
            replay: String::new(),
            series: None,
        }
    }

    /// One fault in many operations is one cause; a generic server error is not, unless
    /// its replies name one frame.
    #[test]
    fn causes_group_what_only_the_operation_tells_apart() {
        let frame = format!(
            "500||KeyError | {}File \"a.py\", line #, in f",
            crate::oracle::normalise::FRAME
        );
        let findings = vec![
            finding(
                "content_type_declared",
                "a",
                "400|application/problem+json|",
                3,
            ),
            finding(
                "content_type_declared",
                "b",
                "400|application/problem+json|",
                5,
            ),
            finding(
                "content_type_declared",
                "c",
                "422|application/problem+json|",
                1,
            ),
            finding("server_error", "a", "500||Internal Server Error", 2),
            finding("server_error", "b", "500||Internal Server Error", 2),
            finding("server_error", "c", &frame, 1),
            finding("server_error", "d", &frame, 1),
        ];
        let causes = causes(&findings);
        let by_ops: Vec<(&str, Vec<&str>)> = causes
            .iter()
            .map(|c| {
                (
                    c.oracle.as_str(),
                    c.operations.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            by_ops,
            [
                ("content_type_declared", vec!["a", "b"]),
                ("server_error", vec!["a"]),
                ("server_error", vec!["b"]),
                ("server_error", vec!["c", "d"]),
                ("content_type_declared", vec!["c"]),
            ]
        );
        // The lead is the finding seen most often; occurrences add up.
        assert_eq!(causes[0].findings, [1, 0]);
        assert_eq!(causes[0].occurrences, 8);
    }
}
