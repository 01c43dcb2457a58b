//! A campaign's stream and its bracket: the [`Spine`] that takes a campaign's objects to
//! its keeper (the store's recorder) and its events to the watchers (`spine.rs`), and its
//! start and end, stored and published in one place, for `probe run`, `probe demo` and
//! `probe replay`. It stands above both `store` and `events`, so that the events depend on
//! ids and the model only and the store on nothing that publishes.
//!
//! [`begin`] stores the [`RunStart`] (its hash is the run id), publishes `run_started` and
//! gives the campaign its [`Spine`], with the store's recorder as keeper. [`end`] stores
//! the finding set and the [`RunEnd`] (last: a run without it lists as unfinished), then
//! publishes `run_ended`, so a watcher that sees it can read the whole run back from the
//! store. The spine must be finished before [`end`]: the end names interactions and series
//! that must already be durable. (`probe recheck` stores neither a start nor an end, only a
//! finding set; [`crate::recheck`] publishes its own bracket.)
//!
//! Depends on: `store`, `events`, `model`, `ids`, `clock`.

pub mod spine;

pub use spine::{KeepFuture, Keeper, Spine};

use crate::clock::now_ms;
use crate::events::{CampaignKind, Event, EventSink, RunStats};
use crate::ids::{FindingSetId, RunId, SeriesId};
use crate::model::{FindingSet, RunEnd, RunOutcome, RunStart};
use crate::store::{Store, StoreError};

/// What `run_started` says beyond the [`RunStart`].
pub struct Opening<'a> {
    pub kind: CampaignKind,
    /// A replay: the recorded run it sends again.
    pub of: Option<RunId>,
    pub api_title: &'a str,
    pub api_version: &'a str,
    /// Operations the campaign may send, and operations left out when the document was
    /// loaded.
    pub operations: usize,
    pub skipped: usize,
}

/// Stores `start`, publishes `run_started` to `watchers`, and opens the campaign's spine.
pub fn begin(
    store: &Store,
    start: &RunStart,
    opening: Opening<'_>,
    watchers: EventSink,
) -> Result<(RunId, Spine), StoreError> {
    let run = RunId(store.put(start)?);
    watchers(&Event::RunStarted {
        kind: opening.kind,
        run,
        of: opening.of,
        api_title: opening.api_title,
        api_version: opening.api_version,
        base_url: &start.base_url,
        seed: start.seed,
        operations: opening.operations,
        skipped: opening.skipped,
        at_ms: start.started_ms,
    });
    let spine = Spine::new(store.recorder()?, watchers);
    Ok((run, spine))
}

/// How a campaign ended.
pub struct Closing<'a> {
    pub kind: CampaignKind,
    pub run: RunId,
    pub outcome: RunOutcome,
    pub interactions: u64,
    pub findings: &'a FindingSet,
    /// The series sent, in the order they ended.
    pub series: Vec<SeriesId>,
    /// What the campaign counted, for the watchers that build reports.
    pub stats: Option<&'a RunStats>,
}

/// Stores the campaign's finding set and end, then publishes `run_ended` to `watchers`.
/// Call it once the campaign's spine is finished.
pub fn end(
    store: &Store,
    closing: Closing<'_>,
    watchers: &EventSink,
) -> Result<RunEnd, StoreError> {
    let findings = FindingSetId(store.put(closing.findings)?);
    let end = RunEnd {
        run: closing.run,
        ended_ms: now_ms(),
        outcome: closing.outcome,
        interactions: closing.interactions,
        findings,
        series: closing.series,
    };
    store.put(&end)?;
    watchers(&Event::RunEnded {
        kind: closing.kind,
        run: closing.run,
        outcome: closing.outcome,
        interactions: closing.interactions,
        findings: closing.findings.findings.len(),
        at_ms: end.ended_ms,
        stats: closing.stats,
    });
    Ok(end)
}
