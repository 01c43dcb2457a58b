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
//! (encoding), `oracle`, `events`, `settings`, `stop`.

pub mod auth;
mod exchange;
pub mod pace;
pub mod pinpoint;
pub mod series;
pub mod shrink;
mod tally;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clock::now_ms;
use crate::events::{Event, Spine};
use crate::ids::{CaseId, RunId, SeriesId};
use crate::model::{FindingSet, RunOutcome, StepRole, TestCase, TransportErrorKind};
use crate::oracle::series::StepData;
use crate::oracle::{FindingCollector, Oracles};
use crate::schema::{Direction, GenerateOptions, Generator};
use crate::send::{Identities, Sender};
use crate::settings::Settings;
use crate::spec::Api;
use crate::store;

use self::auth::AuthBook;
use self::pace::{Admission, Pace, PaceOptions};
use self::pinpoint::PinpointBook;
use self::series::{SeriesBook, SeriesRun};
use self::shrink::ShrinkBook;
use self::tally::Tally;
use crate::generate::strategy::{OperationState, Strategies};
use crate::mutate::memory::AcceptedMemory;
use crate::mutate::MutationOptions;
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

/// Runs one campaign to its end. `run` is the id of the already stored [`crate::model::RunStart`].
pub async fn run(config: RunConfig, run: RunId, spine: Spine) -> Result<RunResult, EngineError> {
    let started = Instant::now();
    let settings = config.settings.clone();
    let sender = Sender::new(&settings).map_err(|e| EngineError::Client(e.to_string()))?;
    let oracles = Oracles::new(config.api.clone(), &settings, None);
    // The budget counts from here, and ends the first logins as it ends everything else.
    config
        .identities
        .log_in_all(
            &sender,
            &config.base_url,
            config.budget.map(|b| started + b),
        )
        .await?;
    let shared = Arc::new(Shared {
        api: config.api.clone(),
        run,
        base_url: config.base_url.clone(),
        identities: config.identities.clone(),
        sender,
        oracles,
        collector: Mutex::new(FindingCollector::new()),
        spine,
        pace: Pace::new(PaceOptions::from_settings(&settings)),
        stop: config.stop.clone(),
        max_findings: config.max_findings,
    });

    let generator = Generator::new(
        &config.api.schemas,
        GenerateOptions {
            max_depth: settings.count("generation.maxDepth") as usize,
            max_string: settings.count("generation.maxStringLength") as usize,
            max_items: settings.count("generation.maxItems") as usize,
            direction: Direction::Request,
        },
    );
    let mutation = MutationOptions::from_settings(&|name| settings.get(name).map(str::to_owned))
        .map_err(EngineError::Settings)?;
    let mut strategies = Strategies {
        api: &config.api,
        generator,
        plan: config.plan.clone(),
        negatives: !mutation.enabled.is_empty(),
        mutation,
        dictionaries: config.dictionaries.clone(),
        optional_ratio: settings.ratio("generation.optionalParameters"),
        accepted: AcceptedMemory::new(settings.count("mutation.acceptedKept") as usize),
    };
    for (from, case, status) in config.seeds.iter().cloned() {
        strategies.offer(case, from, status);
    }
    let mut states: BTreeMap<usize, OperationState> = config
        .operations
        .iter()
        .map(|&i| {
            (
                i,
                OperationState::new(config.seed, &config.api.operations[i].key.name()),
            )
        })
        .collect();
    let mut active: Vec<usize> = config.operations.clone();
    let mut tally = Tally::new(
        SeriesBook::new(&config.api, &config.operations, &settings, config.seed).with_access(
            series::Access {
                other: config
                    .identities
                    .other()
                    .filter(|_| {
                        settings.bool("checks.other_identity_access")
                            || settings.bool("checks.existence_leaked")
                    })
                    .map(str::to_owned),
                anonymous: config.identities.any()
                    && settings.bool("checks.failed_update_side_effects"),
                refused: config.identities.any()
                    && settings.bool("checks.valid_credentials_refused"),
            },
        ),
        ShrinkBook::new(&settings),
        PinpointBook::new(&settings),
        AuthBook::new(&settings, config.identities.any()),
    );
    let mut series_ids: Vec<SeriesId> = Vec::new();
    let mut series_judged: BTreeMap<String, (u64, Duration)> = BTreeMap::new();
    let mut next_seq: u64 = 0;
    // The rounds' batch in flight, waited for once the next one is under way.
    let mut in_flight: Option<u64> = None;
    let mut book = Book::default();
    let (notes_tx, mut notes) = tokio::sync::mpsc::unbounded_channel::<Note>();
    let mut workers_set: Workers = tokio::task::JoinSet::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let deadline = config.budget.map(|b| started + b);
    workers_set.spawn(slow_lane(shared.clone(), deadline, notes_tx.clone()));
    let workers = config.workers.max(1);
    let mut launcher = Launcher {
        shared: shared.clone(),
        workers,
        // One semaphore for the whole run: never more than `workers` requests in flight,
        // whichever batches they belong to.
        semaphore: Arc::new(tokio::sync::Semaphore::new(workers)),
        deadline,
        notes: notes_tx,
        next_batch: 0,
    };

    let out_of_budget = |sent: u64| {
        config.stop.is_stopped()
            || config.max_requests.is_some_and(|n| sent >= n)
            || config.budget.is_some_and(|b| started.elapsed() >= b)
    };

    // The batches: the opening lap's five steps, each split by nesting depth so that
    // parents are created and read before their children (`POST /buckets` answers before
    // `POST /buckets/{bucket_id}/collections` is generated), then rounds.
    let opening = settings.bool("schedule.openingLap");
    let opening_batches: Vec<(usize, usize)> = if opening {
        let mut batches: Vec<(usize, usize)> = active
            .iter()
            .map(|&i| {
                let k = &config.api.operations[i].key;
                (
                    opening_step(&k.method, &k.path),
                    k.path.matches('{').count(),
                )
            })
            .collect();
        batches.sort_unstable();
        batches.dedup();
        batches
    } else {
        Vec::new()
    };
    let mut next_opening = 0usize;
    let mut phase = PhaseTracker::default();
    let mut rounds_started = false;
    // The share of the budget shrinking may take is held back from the ordinary rounds
    // until they reach it: the findings of the last batches would otherwise find the budget
    // spent. Then the batch in flight is waited for, and shrinking (and series) go first
    // with the room held back; what they leave goes to ordinary rounds again.
    let mut reserve_held = tally.shrink.enabled() || tally.pinpoint.enabled();
    let share = settings.ratio("shrink.share");
    let ordinary_spent = |sent: u64| {
        config
            .max_requests
            .is_some_and(|n| sent >= n.saturating_sub((n as f64 * share) as u64))
            || config
                .budget
                .is_some_and(|b| started.elapsed() >= b.mul_f64(1.0 - share))
    };
    loop {
        if out_of_budget(next_seq) || active.is_empty() {
            break;
        }
        if reserve_held && rounds_started && ordinary_spent(next_seq) {
            reserve_held = false;
            if let Some(previous) = in_flight.take() {
                let answered = book.wait(previous, &mut notes, &mut workers_set).await?;
                tally.absorb(&config.api, &mut strategies, answered);
            }
        }
        // The opening lap is over and the API refused every request of it for
        // credentials: the rest of the budget would be refused too (exit 5 at once).
        if opening && !rounds_started && next_opening == opening_batches.len() && tally.refused() {
            break;
        }
        let in_opening = next_opening < opening_batches.len();
        let mut batch_ops: Vec<usize> = Vec::new();
        // Reads of the opening lap (before anything is changed again) teach the memory.
        let mut opening_read = false;
        if in_opening {
            let (step, depth) = opening_batches[next_opening];
            next_opening += 1;
            opening_read = step == 0 || step == 2;
            batch_ops = active
                .iter()
                .copied()
                .filter(|&i| {
                    let k = &config.api.operations[i].key;
                    opening_step(&k.method, &k.path) == step && k.path.matches('{').count() == depth
                })
                .collect();
            phase.enter(
                format!(
                    "opening lap {}/5: {}{}",
                    step + 1,
                    STEP_NAMES[step],
                    if depth > 0 {
                        format!(
                            ", {depth} path parameter{}",
                            if depth == 1 { "" } else { "s" }
                        )
                    } else {
                        String::new()
                    }
                ),
                &shared.spine,
            );
            if batch_ops.is_empty() {
                continue;
            }
        } else {
            if !rounds_started {
                rounds_started = true;
                phase.enter("rounds".into(), &shared.spine);
            }
            // The ready steps of every series go before the ordinary turns, as a small
            // batch waited for at once (each step is built from the answer before it).
            loop {
                let room = config
                    .max_requests
                    .map_or(u64::MAX, |n| n.saturating_sub(next_seq));
                if room == 0 || out_of_budget(next_seq) {
                    break;
                }
                let mut steps = tally.series.ready(
                    &config.api,
                    &config.operations,
                    &strategies,
                    &config.base_url,
                    next_seq,
                );
                // Then the next candidate of every finding being shrunk, and of every
                // refusal being pinned down.
                let next = next_seq + steps.len() as u64;
                steps.extend(tally.follow_ups(&config.api, next_seq, next));
                // Steps past the request budget stay unsent; their series end there.
                steps.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                if steps.is_empty() {
                    break;
                }
                let planned: Vec<Planned> = steps
                    .into_iter()
                    .enumerate()
                    .map(|(i, (op, case))| Planned {
                        seq: next_seq + i as u64,
                        op,
                        case,
                        batch: launcher.next_batch,
                        phase: Phase {
                            opening: false,
                            opening_read: false,
                        },
                    })
                    .collect();
                next_seq += planned.len() as u64;
                let batch = launcher.launch(planned, &mut book, &mut workers_set);
                let answered = book.wait(batch, &mut notes, &mut workers_set).await?;
                tally.absorb(&config.api, &mut strategies, answered);
                for ended in tally.series.take_ended() {
                    let shorter = tally.series.shortening(&ended);
                    let (id, found) = finish_series(&shared, ended, &mut series_judged).await?;
                    series_ids.extend(id);
                    // A new series finding: the same life cycle again with only the
                    // steps its oracle needs, so that its reproducer is the shorter one
                    // when that shows it too (docs/series.md).
                    if let Some(plan) = shorter {
                        for (oracle, at) in found {
                            tally.series.start_shorter(
                                &config.api,
                                &plan,
                                crate::oracle::series_needs(oracle),
                                at,
                            );
                        }
                    }
                }
            }
            // Enough rounds to keep the workers busy. The batch size must not depend on
            // the number of workers: batch boundaries decide when answers are learned.
            // An operation that is slow or paused gets fewer turns (see `pace`); against
            // an API that is neither, every operation is in every round.
            let rounds_per_batch = BATCH_TARGET.div_ceil(active.len()).max(1);
            let turns: Vec<usize> = active.iter().map(|&op| shared.pace.turns(op)).collect();
            for round in 0..rounds_per_batch {
                for (&op, &turns) in active.iter().zip(&turns) {
                    if round < turns {
                        batch_ops.push(op);
                    }
                }
            }
            if batch_ops.is_empty() {
                // Every operation is slow or paused: learn what came back, and wait a
                // little rather than spin.
                let late = book.take_late(&mut notes);
                tally.absorb(&config.api, &mut strategies, late);
                if let Some(previous) = in_flight.take() {
                    let answered = book.wait(previous, &mut notes, &mut workers_set).await?;
                    tally.absorb(&config.api, &mut strategies, answered);
                } else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                continue;
            }
        }

        // Generate the batch in order.
        // Sized at once: grown case by case, a batch's cases were copied into ever larger
        // fresh memory, whose page faults were 1% of the CPU against a fast API.
        let mut planned: Vec<Planned> = Vec::with_capacity(batch_ops.len());
        for op_index in batch_ops {
            let at = next_seq + planned.len() as u64;
            if out_of_budget(at) || (reserve_held && rounds_started && ordinary_spent(at)) {
                break;
            }
            // An operation left out earlier in this batch has no state any more.
            let op = &config.api.operations[op_index];
            let Some(state) = states.get_mut(&op_index) else {
                continue;
            };
            match strategies.next_case(op_index, state, &tally.memory, in_opening) {
                Ok(case) => {
                    tally.series.offer_wait(&config.api, op_index, &case);
                    planned.push(Planned {
                        seq: next_seq + planned.len() as u64,
                        op: op_index,
                        case,
                        batch: launcher.next_batch,
                        phase: Phase {
                            opening: in_opening,
                            opening_read,
                        },
                    })
                }
                Err(e) => {
                    let name = op.key.name();
                    shared.spine.publish(&Event::OperationSkipped {
                        operation: &name,
                        reason: &e.to_string(),
                    });
                    skipped.push((name, e.to_string()));
                    active.retain(|&i| i != op_index);
                    states.remove(&op_index);
                }
            }
        }
        if planned.is_empty() {
            if active.is_empty() {
                break;
            }
            continue;
        }
        next_seq += planned.len() as u64;
        // Send the batch. The opening lap waits for each step's answers; after it, the
        // next batch is generated while this one is in flight, from what the batches
        // before this one answered (one batch of lag, the same in every run), so the
        // workers never idle at a batch's end.
        let batch = launcher.launch(planned, &mut book, &mut workers_set);
        if in_opening {
            let answered = book.wait(batch, &mut notes, &mut workers_set).await?;
            tally.absorb(&config.api, &mut strategies, answered);
        } else {
            if let Some(previous) = in_flight.take() {
                let answered = book.wait(previous, &mut notes, &mut workers_set).await?;
                tally.absorb(&config.api, &mut strategies, answered);
            }
            in_flight = Some(batch);
        }
        // Stop at once when nothing answers: the API is not there.
        if tally.unreachable() {
            break;
        }
    }
    if let Some(previous) = in_flight.take() {
        let answered = book.wait(previous, &mut notes, &mut workers_set).await?;
        tally.absorb(&config.api, &mut strategies, answered);
    }
    // What still waits for the slow lane is not sent; what is on it, is waited for (the
    // budget's deadline or the request's own ends it).
    shared.pace.close();
    // The last sender but the workers' own: once they end, the book has every note.
    drop(launcher);
    let answered = book.finish(&mut notes, &mut workers_set).await?;
    tally.absorb(&config.api, &mut strategies, answered);
    for ended in tally.series.take_all() {
        series_ids.extend(finish_series(&shared, ended, &mut series_judged).await?.0);
    }
    let seq = tally.answered;
    let stopped = config.stop.reason();
    // Interrupted, unless nothing ever answered: that the API is not there says more.
    let outcome = match (tally.outcome(), stopped) {
        (RunOutcome::Unreachable, _) => RunOutcome::Unreachable,
        (_, Some(StopReason::Interrupted)) => RunOutcome::Interrupted,
        (outcome, _) => outcome,
    };
    let (series_steps, shrink_sent, shrink_accepted) = (
        tally.series.sent(),
        tally.shrink.sent(),
        tally.shrink.accepted(),
    );
    let paces = shared.pace.report();
    let (per_operation, by_kind) = tally.into_counts(&config.api, paces);
    phase.end(&shared.spine);
    shared.spine.publish(&Event::SendingEnded {
        interactions: seq,
        at_ms: now_ms(),
    });
    let oracles_applied = shared
        .oracles
        .enabled()
        .iter()
        .map(|o| (o.name.to_owned(), o.version))
        .collect();
    let shared = Arc::into_inner(shared).expect("every worker task has finished");
    let collector = shared.collector.into_inner().unwrap_or_default();
    let findings = collector.finish(run, env!("CARGO_PKG_VERSION"), oracles_applied);
    shared.spine.finish()?;
    Ok(RunResult {
        run,
        outcome,
        interactions: seq,
        findings,
        stats: RunStats {
            per_operation,
            by_kind,
            skipped,
            elapsed: started.elapsed(),
            series: series_ids,
            series_steps,
            series_judged,
            shrink_sent,
            shrink_accepted,
            identities: shared.identities.summary(),
        },
        stopped,
    })
}

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
