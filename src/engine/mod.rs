//! The engine: schedules, generates, sends, records and judges one campaign.
//!
//! A run is a sequence of *batches*. The opening lap is five batches (docs/design-notes.md, The opening lap: reads
//! without `{}` in the path; POSTs; reads with `{}`; PUT/PATCH; DELETE), each waiting for
//! its answers so that what a POST created can be read. Then come rounds over every
//! operation in document order, several rounds to a batch so that the workers stay busy.
//! Inside a batch cases are generated in a fixed order from a ChaCha stream per
//! (seed, operation), and answers are learned after the batch in that same order, so the
//! number of workers never changes what is generated (docs/determinism.md).
//!
//! Each interaction is recorded before it is judged: the worker that received it encodes
//! it (ids are known at once), hands the objects to the run's [`Spine`], whose keeper (the
//! store's recorder, which the engine never names) takes them, then runs the oracles and
//! publishes what it saw. The engine prints nothing; everything it reports goes through
//! the spine ([`crate::events`]).
//!
//! The files follow one request's way through a run:
//! - this file is the **scheduler** (`run`, the batches, the worker pool, the slow lane):
//!   the only part that knows the budget and the clock, and it draws no random number;
//! - [`crate::generate`] **generates** (a strategy drawn per case, then the case built
//!   from its sources), with the books that plan follow-up requests: [`series`],
//!   [`shrink`], [`pinpoint`], [`auth`];
//! - `exchange.rs` is one request on a worker: **send** (through [`crate::send`]),
//!   **record** (the spine), **judge** (the oracles), publish;
//! - `tally.rs` **learns** from a batch's answers, in generation order ([`crate::generate::memory`], the
//!   books), and counts what `run_ended` carries; [`pace`] watches how fast each operation
//!   answers.
//!
//! Depends on: `spec`, `schema`, `model`, `generate`, `send`, `step` (recording and judging), `store`
//! (encoding), `oracle`, `check` (the user's checks, handed to the oracles), `events`, `settings`, `stop`.

pub mod auth;
mod exchange;
pub mod pace;
mod phases;
pub mod pinpoint;
pub mod series;
pub mod shrink;
mod tally;

pub use phases::run;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::campaign::Spine;
use crate::clock::now_ms;
use crate::events::Event;
use crate::ids::{CaseId, RunId, SeriesId};
use crate::model::{FindingSet, RunOutcome, StepRole, TestCase, TransportErrorKind};
use crate::oracle::series::StepData;
use crate::oracle::{FindingCollector, Oracles};
use crate::send::{Identities, Sender};
use crate::settings::Settings;
use crate::spec::Api;
use crate::store;

use self::pace::{Admission, Pace};
use self::series::SeriesRun;
use crate::plan::dictionary::Dictionary;
use crate::plan::Plan;
pub use crate::stop::{Stop, StopReason};

/// Everything one campaign needs.
pub struct RunConfig {
    pub api: Arc<Api>,
    /// Indices into `api.operations` of the operations to test, in document order.
    pub operations: Vec<usize>,
    pub base_url: String,
    pub seed: u64,
    pub workers: usize,
    pub budget: Option<Duration>,
    pub max_requests: Option<u64>,
    /// The identities to send as, the default first.
    pub identities: Arc<Identities>,
    pub settings: Settings,
    pub plan: Plan,
    pub dictionaries: Vec<Dictionary>,
    /// Accepted requests from elsewhere (`mutation.seedRequests`, a HAR file), offered to
    /// the mutation strategy before the first case, in order: each case, the reference its
    /// changes name, the status it was answered with.
    pub seeds: Vec<(crate::model::AcceptedRef, crate::model::TestCase, u16)>,
    /// Told to stop before the budget ends (a signal); the engine also stops it itself once
    /// `max_findings` distinct findings are found.
    pub stop: Stop,
    /// `--max-findings N`: end the run as a spent budget does once it has N distinct
    /// findings.
    pub max_findings: Option<u64>,
    /// The checks the user wrote (`[[check]]`, `--checks`), judged beside the oracles.
    pub checks: Arc<Vec<crate::check::Check>>,
}

/// Why the engine stopped early.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
    #[error("setting {0}")]
    Settings(String),
    #[error(transparent)]
    Identity(#[from] crate::send::identity::IdentityError),
}

pub use crate::events::stats::{OperationCounts, RunStats};

/// What a finished campaign did.
#[derive(Debug)]
pub struct RunResult {
    pub run: RunId,
    pub outcome: RunOutcome,
    pub interactions: u64,
    pub findings: FindingSet,
    /// Everything else counted; published in the `run_ended` event.
    pub stats: RunStats,
    /// Why the run stopped before its budget, if it did.
    pub stopped: Option<StopReason>,
    /// How each program check that failed failed (docs/checks.md, "Checks as programs"):
    /// the run went on; the app says so.
    pub check_failures: Vec<String>,
}

/// One planned case in a batch.
pub(crate) struct Planned {
    seq: u64,
    op: usize,
    case: TestCase,
    batch: u64,
    phase: Phase,
}

/// Where in the run a case was planned, which decides what its answer may teach.
#[derive(Debug, Clone, Copy)]
struct Phase {
    opening: bool,
    /// One of the opening lap's reads, whose answers depend on nothing sent beside them.
    opening_read: bool,
}

/// What a worker hands back to the scheduler.
struct Answered {
    seq: u64,
    op: usize,
    case: TestCase,
    case_id: CaseId,
    status: Option<u16>,
    /// Parsed JSON body of a 2xx answer, for memory.
    learned: Option<Value>,
    /// The `Location` header of a 2xx answer, for memory.
    location: Option<String>,
    transport: Option<TransportErrorKind>,
    phase: Phase,
    elapsed: Duration,
    /// The recorded interaction of a series step, for the series oracles.
    recorded: Option<Box<series::StepAnswer>>,
    /// The oracle and distinct key of each observation its answer gave, for shrinking.
    found: Vec<(&'static str, String)>,
}

/// What a worker tells the scheduler about a batch's cases.
enum Note {
    /// A case's answer. `late`: its batch had already stopped waiting for it.
    Answered {
        batch: u64,
        late: bool,
        answered: Box<Answered>,
    },
    /// The batch stops waiting for one of its cases: it went to the slow lane, waits in the
    /// backlog, or will not be sent at all.
    Released { batch: u64 },
}

type Notes = tokio::sync::mpsc::UnboundedSender<Note>;
type Workers = tokio::task::JoinSet<Result<(), EngineError>>;

/// The scheduler's book of batches in flight: how many cases each has, how many are
/// settled, the answers it waits for, and the late answers of any batch.
#[derive(Default)]
struct Book {
    open: BTreeMap<u64, (usize, usize, Vec<Answered>)>,
    late: Vec<Answered>,
}

impl Book {
    fn note(&mut self, note: Note) {
        match note {
            Note::Answered {
                late: true,
                answered,
                ..
            } => self.late.push(*answered),
            Note::Answered {
                batch, answered, ..
            } => {
                if let Some((_, settled, answers)) = self.open.get_mut(&batch) {
                    *settled += 1;
                    answers.push(*answered);
                }
            }
            Note::Released { batch } => {
                if let Some((_, settled, _)) = self.open.get_mut(&batch) {
                    *settled += 1;
                }
            }
        }
    }

    /// Waits until every case of `batch` is answered or released; gives its answers and
    /// every late answer so far.
    async fn wait(
        &mut self,
        batch: u64,
        notes: &mut tokio::sync::mpsc::UnboundedReceiver<Note>,
        workers: &mut Workers,
    ) -> Result<Vec<Answered>, EngineError> {
        loop {
            match self.open.get(&batch) {
                Some((size, settled, _)) if settled < size => {}
                _ => break,
            }
            if workers.is_empty() {
                // Every worker has ended, so every note is already sent.
                match notes.try_recv() {
                    Ok(note) => self.note(note),
                    Err(_) => {
                        return Err(EngineError::Client(format!(
                            "internal: batch {batch} has cases no worker holds"
                        )))
                    }
                }
                continue;
            }
            tokio::select! {
                biased;
                Some(note) = notes.recv() => self.note(note),
                Some(joined) = workers.join_next() => worker_ended(joined)?,
            }
        }
        let mut answered = self
            .open
            .remove(&batch)
            .map(|(_, _, answers)| answers)
            .unwrap_or_default();
        answered.append(&mut self.late);
        Ok(answered)
    }

    /// Takes the notes already sent, and gives the late answers among them.
    fn take_late(
        &mut self,
        notes: &mut tokio::sync::mpsc::UnboundedReceiver<Note>,
    ) -> Vec<Answered> {
        while let Ok(note) = notes.try_recv() {
            self.note(note);
        }
        std::mem::take(&mut self.late)
    }

    /// Waits for every worker to end, and gives the answers still unabsorbed.
    async fn finish(
        &mut self,
        notes: &mut tokio::sync::mpsc::UnboundedReceiver<Note>,
        workers: &mut Workers,
    ) -> Result<Vec<Answered>, EngineError> {
        while !workers.is_empty() {
            tokio::select! {
                biased;
                Some(note) = notes.recv() => self.note(note),
                Some(joined) = workers.join_next() => worker_ended(joined)?,
            }
        }
        while let Ok(note) = notes.try_recv() {
            self.note(note);
        }
        let mut answered = std::mem::take(&mut self.late);
        for (_, (_, _, mut answers)) in std::mem::take(&mut self.open) {
            answered.append(&mut answers);
        }
        Ok(answered)
    }
}

fn worker_ended(
    joined: Result<Result<(), EngineError>, tokio::task::JoinError>,
) -> Result<(), EngineError> {
    match joined {
        Ok(result) => result,
        Err(e) => Err(EngineError::Client(format!("a worker stopped: {e}"))),
    }
}

/// The shared, read-only part of a run, plus the collector.
struct Shared {
    api: Arc<Api>,
    run: RunId,
    base_url: String,
    /// The identities sent as; their redactor replaces every credential before anything
    /// is kept or judged.
    identities: Arc<Identities>,
    sender: Sender,
    oracles: Oracles,
    collector: Mutex<FindingCollector>,
    /// Where the run's objects and events go: the store's recorder keeps the objects, the
    /// watchers see the events.
    spine: Spine,
    /// The pace of every operation, and the slow lane's backlog.
    pace: Pace<Planned>,
    /// "Stop now": a signal, or enough findings. Watched like the budget's deadline.
    stop: Stop,
    /// `--max-findings`: the number of distinct findings that stops the run.
    max_findings: Option<u64>,
}

impl Shared {
    /// Stops the run once the collector holds `--max-findings` distinct findings.
    fn count_finding(&self, collector: &FindingCollector) {
        if self
            .max_findings
            .is_some_and(|n| collector.len() as u64 >= n)
        {
            self.stop.stop(StopReason::EnoughFindings);
        }
    }
}

/// The phase the run is in, so that each one's end is published before the next begins.
#[derive(Default)]
struct PhaseTracker {
    current: Option<String>,
}

impl PhaseTracker {
    fn enter(&mut self, name: String, spine: &Spine) {
        self.end(spine);
        spine.publish(&Event::PhaseStarted {
            name: &name,
            at_ms: now_ms(),
        });
        self.current = Some(name);
    }

    fn end(&mut self, spine: &Spine) {
        if let Some(name) = self.current.take() {
            spine.publish(&Event::PhaseEnded {
                name: &name,
                at_ms: now_ms(),
            });
        }
    }
}

/// The five opening-lap steps an operation belongs to (0-based), docs/design-notes.md.
pub fn opening_step(method: &str, path: &str) -> usize {
    let templated = path.contains('{');
    match method {
        "POST" => 1,
        "PUT" | "PATCH" => 3,
        "DELETE" => 4,
        _ if templated => 2,
        _ => 0,
    }
}

/// Cases per batch after the opening lap (rounded up to whole rounds).
const BATCH_TARGET: usize = 512;

const STEP_NAMES: [&str; 5] = [
    "reads without path parameters",
    "creations (POST)",
    "reads with path parameters",
    "updates (PUT, PATCH)",
    "deletions (DELETE)",
];

/// Records an ended series and judges it with the series oracles: its id (`None` when none
/// of its steps was answered) and, for each distinct finding it was the first to show, the
/// oracle and the step it is at.
async fn finish_series(
    shared: &Shared,
    run: SeriesRun,
    judged: &mut BTreeMap<String, (u64, Duration)>,
) -> Result<(Option<SeriesId>, Vec<(&'static str, StepRole)>), EngineError> {
    let steps: Vec<StepData> = run
        .steps
        .into_iter()
        .filter_map(|s| {
            let answer = s.answer?;
            Some(StepData {
                role: s.role,
                seq: s.seq,
                id: answer.id,
                case: s.case,
                interaction: answer.interaction,
                body: answer.body,
            })
        })
        .collect();
    if steps.is_empty() {
        return Ok((None, Vec::new()));
    }
    let took: Duration = steps
        .iter()
        .map(|s| Duration::from_micros(s.interaction.timing.elapsed_us))
        .sum();
    for oracle in shared.oracles.series_judged_by(&steps) {
        let entry = judged.entry(oracle.name.to_owned()).or_default();
        entry.0 += 1;
        entry.1 += took;
    }
    let recorded = crate::step::series(
        crate::step::SeriesName {
            run: shared.run,
            name: run.name,
            kind: run.kind,
            resource: run.resource,
        },
        &steps,
        &shared.oracles,
        &shared.spine,
        &mut exchange::Counted(shared),
    )
    .await?;
    let found = recorded
        .observations
        .iter()
        .filter(|(_, new)| *new)
        .map(|(obs, _)| (obs.observation.oracle.name, steps[obs.step].role))
        .collect();
    Ok((Some(recorded.id), found))
}

/// Starts the batches of a run: numbers each, tells the book how many cases it waits
/// for, and hands it to the workers. The one way a batch is sent, whether it holds series
/// steps and follow-ups or an ordinary round.
struct Launcher {
    shared: Arc<Shared>,
    workers: usize,
    semaphore: Arc<tokio::sync::Semaphore>,
    deadline: Option<Instant>,
    notes: Notes,
    /// The number the next batch gets (its cases carry it).
    next_batch: u64,
}

impl Launcher {
    /// Starts `planned`, whose cases carry [`Self::next_batch`], as that batch; gives its
    /// number.
    fn launch(&mut self, planned: Vec<Planned>, book: &mut Book, set: &mut Workers) -> u64 {
        let batch = self.next_batch;
        self.next_batch += 1;
        debug_assert!(planned.iter().all(|p| p.batch == batch));
        book.open.insert(batch, (planned.len(), 0, Vec::new()));
        spawn_batch(
            &self.shared,
            planned,
            &self.semaphore,
            self.workers,
            self.deadline,
            &self.notes,
            set,
        );
        batch
    }
}

/// Starts sending a batch in sequence order, each case once a permit of the run's
/// semaphore is free; none is started after `deadline`, and those still in flight then are
/// cancelled (and recorded as cancelled): the budget is a hard end. Each case's fate goes
/// to `notes`; a case whose operation is slow or paused is handed to the slow lane.
fn spawn_batch(
    shared: &Arc<Shared>,
    planned: Vec<Planned>,
    semaphore: &Arc<tokio::sync::Semaphore>,
    workers: usize,
    deadline: Option<Instant>,
    notes: &Notes,
    set: &mut Workers,
) {
    // A pool of tasks that each take the next case once they hold a permit, rather than
    // a task spawned per case: a per-case task moved a large future onto the heap and
    // woke the scheduler for every answer. Twice as many tasks as permits, so that while
    // some record and judge an answer (after their permit is back) others send.
    let pool = (2 * workers).clamp(1, planned.len().max(1));
    let queue = Arc::new(Mutex::new(planned.into_iter()));
    for _ in 0..pool {
        let (shared, queue, semaphore, notes) = (
            shared.clone(),
            queue.clone(),
            semaphore.clone(),
            notes.clone(),
        );
        set.spawn(async move {
            loop {
                let permit = semaphore
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|e| EngineError::Client(e.to_string()))?;
                if deadline.is_some_and(|d| Instant::now() >= d) || shared.stop.is_stopped() {
                    // Whatever is left of the batch is not sent.
                    while let Some(p) = queue.lock().ok().and_then(|mut q| q.next()) {
                        let _ = notes.send(Note::Released { batch: p.batch });
                    }
                    break;
                }
                // Taken under the permit, so cases start in sequence order.
                let next = queue.lock().ok().and_then(|mut q| q.next());
                let Some(p) = next else { break };
                match shared.pace.admit(p.op) {
                    Admission::Send(ticket) => {
                        // A request on the slow lane holds a place of the lane, not a
                        // worker, and not its batch.
                        let permit = if ticket.slow {
                            let _ = notes.send(Note::Released { batch: p.batch });
                            None
                        } else {
                            Some(permit)
                        };
                        exchange::exchange(&shared, p, permit, deadline, ticket, &notes).await?;
                    }
                    Admission::Defer => {
                        drop(permit);
                        let batch = p.batch;
                        // Full backlog: the case is not sent (pace counts it).
                        let _ = shared.pace.defer(p.op, p);
                        let _ = notes.send(Note::Released { batch });
                    }
                }
            }
            Ok(())
        });
    }
}

/// The slow lane: sends the backlog's cases whenever pace lets it, until the run closes it.
/// Its requests hold no worker: pace bounds how many are in flight and how much time they
/// take, so `--workers` fast requests stay in flight beside them.
async fn slow_lane(
    shared: Arc<Shared>,
    deadline: Option<Instant>,
    notes: Notes,
) -> Result<(), EngineError> {
    let mut sending: Workers = tokio::task::JoinSet::new();
    // Waits are short and the loop ends when the run closes the lane or the budget ends.
    while !shared.pace.closed()
        && !shared.stop.is_stopped()
        && deadline.is_none_or(|d| Instant::now() < d)
    {
        while let Some(joined) = sending.try_join_next() {
            worker_ended(joined)?;
        }
        let Some((p, ticket)) = shared.pace.next_from_backlog() else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let (shared, notes) = (shared.clone(), notes.clone());
        sending.spawn(async move {
            exchange::exchange(&shared, p, None, deadline, ticket, &notes).await
        });
    }
    while let Some(joined) = sending.join_next().await {
        worker_ended(joined)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_lap_has_five_steps() {
        assert_eq!(opening_step("GET", "/pets"), 0);
        assert_eq!(opening_step("POST", "/pets"), 1);
        assert_eq!(opening_step("GET", "/pets/{id}"), 2);
        assert_eq!(opening_step("PATCH", "/pets/{id}"), 3);
        assert_eq!(opening_step("DELETE", "/pets/{id}"), 4);
    }
}
