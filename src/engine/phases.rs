//! [`run`], one campaign, in its named phases: **prepare** (settings resolved once, the
//! client, the oracles, the first logins), **set up** (the generator, the strategies, the
//! books), the **opening lap**, the **rounds** (each after the ready series steps and
//! follow-ups), and **finish** (what is in flight, the last series, the finding set and
//! the counts). Each phase is a function or a method of [`Campaign`], the state a run
//! carries from one batch to the next; the scheduler's parts it drives (the book of
//! batches, the launcher, the slow lane) stay in `mod.rs`.
//!
//! Depends on: the engine's own parts (`mod.rs`, `strategy`, `tally`, the books), `schema`,
//! `settings`, `oracle`, `send`, `events`, `model`, `ids`, `clock`, `mutate`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::campaign::Spine;
use crate::clock::now_ms;
use crate::events::Event;
use crate::ids::{RunId, SeriesId};
use crate::model::RunOutcome;
use crate::mutate::memory::AcceptedMemory;
use crate::mutate::MutationOptions;
use crate::oracle::{FindingCollector, Oracles};
use crate::schema::{Direction, GenerateOptions, Generator};
use crate::send::Sender;
use crate::settings::Options;

use super::auth::AuthBook;
use super::pace::Pace;
use super::pinpoint::PinpointBook;
use super::series::{self, SeriesBook};
use super::shrink::ShrinkBook;
use super::tally::Tally;
use super::{
    finish_series, opening_step, slow_lane, Book, EngineError, Launcher, Note, Phase, PhaseTracker,
    Planned, RunConfig, RunResult, RunStats, Shared, StopReason, Workers, BATCH_TARGET, STEP_NAMES,
};
use crate::generate::memory::Memory;
use crate::generate::strategy::{OperationState, Strategies};
use crate::generate::vocabulary::Vocabulary;

/// Runs one campaign to its end. `run` is the id of the already stored [`crate::model::RunStart`].
pub async fn run(config: RunConfig, run: RunId, spine: Spine) -> Result<RunResult, EngineError> {
    let started = Instant::now();
    let (options, shared) = prepare(&config, run, spine, started).await?;
    let mut campaign = Campaign::new(&config, &options, shared, started)?;
    campaign.rounds().await?;
    campaign.finish(run).await
}

/// Resolves the settings (once: nothing below reads one by name), makes the client and
/// the oracles, and logs every identity in.
async fn prepare(
    config: &RunConfig,
    run: RunId,
    spine: Spine,
    started: Instant,
) -> Result<(Options, Arc<Shared>), EngineError> {
    let settings = &config.settings;
    let options = settings
        .options()
        .map_err(|e| EngineError::Settings(e.to_string()))?;
    let sender =
        Sender::with_options(&options.send).map_err(|e| EngineError::Client(e.to_string()))?;
    let oracles =
        Oracles::with_options(config.api.clone(), settings, options.oracles.clone(), None)
            .with_checks(config.checks.clone());
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
        pace: Pace::new(options.pace.clone()),
        stop: config.stop.clone(),
        max_findings: config.max_findings,
    });
    Ok((options, shared))
}

/// What a run carries from one batch to the next.
struct Campaign<'a> {
    config: &'a RunConfig,
    started: Instant,
    shared: Arc<Shared>,
    strategies: Strategies<'a>,
    states: BTreeMap<usize, OperationState>,
    /// The operations still tested (one whose case cannot be built is left out).
    active: Vec<usize>,
    tally: Tally,
    series_ids: Vec<SeriesId>,
    series_judged: BTreeMap<String, (u64, Duration)>,
    next_seq: u64,
    /// The rounds' batch in flight, waited for once the next one is under way.
    in_flight: Option<u64>,
    book: Book,
    notes: tokio::sync::mpsc::UnboundedReceiver<Note>,
    workers: Workers,
    skipped: Vec<(String, String)>,
    launcher: Launcher,
    phase: PhaseTracker,
    /// `schedule.openingLap`.
    opening: bool,
    /// The opening lap's batches: (step, nesting depth).
    opening_batches: Vec<(usize, usize)>,
    next_opening: usize,
    rounds_started: bool,
    /// Whether the share of follow-ups is still held back from the ordinary rounds.
    reserve_held: bool,
    /// `shrink.share`.
    share: f64,
}

impl<'a> Campaign<'a> {
    /// Sets up the generator, the strategies (with the seeds offered), the books and the
    /// workers' pool and slow lane.
    fn new(
        config: &'a RunConfig,
        options: &Options,
        shared: Arc<Shared>,
        started: Instant,
    ) -> Result<Campaign<'a>, EngineError> {
        let mut strategies = strategies(config, options)?;
        for (from, case, status) in config.seeds.iter().cloned() {
            strategies.offer(case, from, status);
        }
        let states = config
            .operations
            .iter()
            .map(|&i| {
                let name = config.api.operations[i].key.name();
                (i, OperationState::new(config.seed, &name))
            })
            .collect();
        let tally = books(config, options, &shared.oracles);
        let (notes_tx, notes) = tokio::sync::mpsc::unbounded_channel::<Note>();
        let mut workers: Workers = tokio::task::JoinSet::new();
        let deadline = config.budget.map(|b| started + b);
        workers.spawn(slow_lane(shared.clone(), deadline, notes_tx.clone()));
        let pool = config.workers.max(1);
        let launcher = Launcher {
            shared: shared.clone(),
            workers: pool,
            // One semaphore for the whole run: never more than `workers` requests in
            // flight, whichever batches they belong to.
            semaphore: Arc::new(tokio::sync::Semaphore::new(pool)),
            deadline,
            notes: notes_tx,
            next_batch: 0,
        };
        // The share of the budget shrinking may take is held back from the ordinary
        // rounds until they reach it: the findings of the last batches would otherwise
        // find the budget spent. Then the batch in flight is waited for, and shrinking
        // (and series) go first with the room held back; what they leave goes to ordinary
        // rounds again.
        let reserve_held = tally.shrink.enabled() || tally.pinpoint.enabled();
        Ok(Campaign {
            config,
            started,
            shared,
            strategies,
            states,
            active: config.operations.clone(),
            tally,
            series_ids: Vec::new(),
            series_judged: BTreeMap::new(),
            next_seq: 0,
            in_flight: None,
            book: Book::default(),
            notes,
            workers,
            skipped: Vec::new(),
            launcher,
            phase: PhaseTracker::default(),
            opening: options.opening_lap,
            opening_batches: opening_batches(config, options.opening_lap),
            next_opening: 0,
            rounds_started: false,
            reserve_held,
            share: options.shrink.share,
        })
    }

    /// Whether the run must stop sending: a stop, the request count or the budget spent.
    fn out_of_budget(&self, sent: u64) -> bool {
        self.config.stop.is_stopped()
            || self.config.max_requests.is_some_and(|n| sent >= n)
            || self
                .config
                .budget
                .is_some_and(|b| self.started.elapsed() >= b)
    }

    /// Whether the ordinary rounds have spent what is not held back for follow-ups.
    fn ordinary_spent(&self, sent: u64) -> bool {
        let share = self.share;
        self.config
            .max_requests
            .is_some_and(|n| sent >= n.saturating_sub((n as f64 * share) as u64))
            || self
                .config
                .budget
                .is_some_and(|b| self.started.elapsed() >= b.mul_f64(1.0 - share))
    }

    /// The opening lap, then the rounds, until the budget or the operations run out, or
    /// the API is not there.
    async fn rounds(&mut self) -> Result<(), EngineError> {
        loop {
            if self.out_of_budget(self.next_seq) || self.active.is_empty() {
                break;
            }
            if self.reserve_held && self.rounds_started && self.ordinary_spent(self.next_seq) {
                self.reserve_held = false;
                self.absorb_in_flight().await?;
            }
            // The opening lap is over and the API refused every request of it for
            // credentials: the rest of the budget would be refused too (exit 5 at once).
            if self.opening
                && !self.rounds_started
                && self.next_opening == self.opening_batches.len()
                && self.tally.refused()
            {
                break;
            }
            let in_opening = self.next_opening < self.opening_batches.len();
            let (batch_ops, opening_read) = if in_opening {
                self.opening_batch()
            } else {
                self.follow_ups().await?;
                let ops = self.round_ops();
                if ops.is_empty() {
                    self.idle().await?;
                    continue;
                }
                (ops, false)
            };
            if batch_ops.is_empty() {
                continue;
            }
            let planned = self.generate(batch_ops, in_opening, opening_read);
            if planned.is_empty() {
                if self.active.is_empty() {
                    break;
                }
                continue;
            }
            self.send(planned, in_opening).await?;
            // Stop at once when nothing answers: the API is not there.
            if self.tally.unreachable() {
                break;
            }
        }
        Ok(())
    }

    /// The next batch of the opening lap: its operations, and whether they are reads
    /// (whose answers, before anything is changed again, teach the memory). Its phase is
    /// published even when it has no operation.
    fn opening_batch(&mut self) -> (Vec<usize>, bool) {
        let (step, depth) = self.opening_batches[self.next_opening];
        self.next_opening += 1;
        let api = &self.config.api;
        let ops = self
            .active
            .iter()
            .copied()
            .filter(|&i| {
                let k = &api.operations[i].key;
                opening_step(&k.method, &k.path) == step && k.path.matches('{').count() == depth
            })
            .collect();
        let parameters = match depth {
            0 => String::new(),
            1 => ", 1 path parameter".to_owned(),
            n => format!(", {n} path parameters"),
        };
        self.phase.enter(
            format!(
                "opening lap {}/5: {}{parameters}",
                step + 1,
                STEP_NAMES[step]
            ),
            &self.shared.spine,
        );
        (ops, step == 0 || step == 2)
    }

    /// The ready steps of every series, then the next candidate of every finding being
    /// shrunk and of every refusal being pinned down, as small batches waited for at once
    /// (each step is built from the answer before it), until none is ready.
    async fn follow_ups(&mut self) -> Result<(), EngineError> {
        if !self.rounds_started {
            self.rounds_started = true;
            self.phase.enter("rounds".into(), &self.shared.spine);
        }
        let config = self.config;
        let (api, operations) = (&config.api, &config.operations);
        loop {
            let room = self
                .config
                .max_requests
                .map_or(u64::MAX, |n| n.saturating_sub(self.next_seq));
            if room == 0 || self.out_of_budget(self.next_seq) {
                break;
            }
            // Once the ordinary rounds have spent their share, the room held back is for
            // shrinking and pinpointing first: series, which go on for the whole run, take
            // what those leave.
            let mut steps = if self.ordinary_spent(self.next_seq) {
                self.tally.follow_ups(api, self.next_seq, self.next_seq)
            } else {
                Vec::new()
            };
            if steps.is_empty() {
                steps = self.tally.series.ready(
                    api,
                    operations,
                    &self.strategies,
                    &config.base_url,
                    self.next_seq,
                );
                let next = self.next_seq + steps.len() as u64;
                steps.extend(self.tally.follow_ups(api, self.next_seq, next));
            }
            // Steps past the request budget stay unsent; their series end there.
            steps.truncate(usize::try_from(room).unwrap_or(usize::MAX));
            if steps.is_empty() {
                break;
            }
            let ordinary = Phase {
                opening: false,
                opening_read: false,
            };
            let planned = self.plan(steps.into_iter(), ordinary);
            let batch = self
                .launcher
                .launch(planned, &mut self.book, &mut self.workers);
            self.wait_for(batch).await?;
            self.record_ended_series().await?;
        }
        Ok(())
    }

    /// Numbers `cases` from the next sequence number, as the next batch's.
    fn plan(
        &mut self,
        cases: impl Iterator<Item = (usize, crate::model::TestCase)>,
        phase: Phase,
    ) -> Vec<Planned> {
        let planned: Vec<Planned> = cases
            .enumerate()
            .map(|(i, (op, case))| Planned {
                seq: self.next_seq + i as u64,
                op,
                case,
                batch: self.launcher.next_batch,
                phase,
            })
            .collect();
        self.next_seq += planned.len() as u64;
        planned
    }

    /// Records and judges the series that ended; a new series finding starts the same
    /// life cycle again with only the steps its oracle needs, so that its reproducer is
    /// the shorter one when that shows it too (docs/series.md).
    async fn record_ended_series(&mut self) -> Result<(), EngineError> {
        for ended in self.tally.series.take_ended() {
            let shorter = self.tally.series.shortening(&ended);
            let counted = ended.counted();
            let (id, found) = finish_series(&self.shared, ended, &mut self.series_judged).await?;
            self.series_ids.extend(id);
            self.tally
                .series
                .judged(counted.0, counted.1, !found.is_empty());
            let Some(plan) = shorter else { continue };
            for (oracle, at) in found {
                self.tally.series.start_shorter(
                    &self.config.api,
                    &plan,
                    crate::oracle::series_needs(oracle),
                    at,
                );
            }
        }
        Ok(())
    }

    /// The operations of the next rounds' batch: enough rounds to keep the workers busy.
    /// The batch size must not depend on the number of workers: batch boundaries decide
    /// when answers are learned. An operation that is slow or paused gets fewer turns (see
    /// `pace`); against an API that is neither, every operation is in every round.
    fn round_ops(&self) -> Vec<usize> {
        let rounds_per_batch = BATCH_TARGET.div_ceil(self.active.len()).max(1);
        let turns: Vec<usize> = self
            .active
            .iter()
            .map(|&op| self.shared.pace.turns(op))
            .collect();
        let mut ops = Vec::new();
        for round in 0..rounds_per_batch {
            for (&op, &turns) in self.active.iter().zip(&turns) {
                if round < turns {
                    ops.push(op);
                }
            }
        }
        ops
    }

    /// Every operation is slow or paused: learns what came back, and waits a little
    /// rather than spin.
    async fn idle(&mut self) -> Result<(), EngineError> {
        let late = self.book.take_late(&mut self.notes);
        self.tally
            .absorb(&self.config.api, &mut self.strategies, late);
        if self.in_flight.is_some() {
            self.absorb_in_flight().await
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        }
    }

    /// Generates the batch of `batch_ops`, in order, until the budget (or the share of
    /// the ordinary rounds) is spent; an operation whose case cannot be built is left out
    /// of the run, and said so.
    fn generate(
        &mut self,
        batch_ops: Vec<usize>,
        in_opening: bool,
        opening_read: bool,
    ) -> Vec<Planned> {
        // Sized at once: grown case by case, a batch's cases were copied into ever larger
        // fresh memory, whose page faults were 1% of the CPU against a fast API.
        let mut cases = Vec::with_capacity(batch_ops.len());
        for op_index in batch_ops {
            let at = self.next_seq + cases.len() as u64;
            if self.out_of_budget(at)
                || (self.reserve_held && self.rounds_started && self.ordinary_spent(at))
            {
                break;
            }
            // An operation left out earlier in this batch has no state any more.
            let Some(state) = self.states.get_mut(&op_index) else {
                continue;
            };
            match self
                .strategies
                .next_case(op_index, state, &self.tally.memory, in_opening)
            {
                Ok(case) => {
                    self.tally
                        .series
                        .offer_wait(&self.config.api, op_index, &case);
                    cases.push((op_index, case));
                }
                Err(e) => {
                    let name = self.config.api.operations[op_index].key.name();
                    self.shared.spine.publish(&Event::OperationSkipped {
                        operation: &name,
                        reason: &e.to_string(),
                    });
                    self.skipped.push((name, e.to_string()));
                    self.active.retain(|&i| i != op_index);
                    self.states.remove(&op_index);
                }
            }
        }
        let phase = Phase {
            opening: in_opening,
            opening_read,
        };
        self.plan(cases.into_iter(), phase)
    }

    /// Sends a batch. The opening lap waits for each step's answers; after it, the next
    /// batch is generated while this one is in flight, from what the batches before this
    /// one answered (one batch of lag, the same in every run), so the workers never idle
    /// at a batch's end.
    async fn send(&mut self, planned: Vec<Planned>, in_opening: bool) -> Result<(), EngineError> {
        let batch = self
            .launcher
            .launch(planned, &mut self.book, &mut self.workers);
        if in_opening {
            self.wait_for(batch).await
        } else {
            self.absorb_in_flight().await?;
            self.in_flight = Some(batch);
            Ok(())
        }
    }

    /// Waits for `batch`, and learns its answers (and the late ones so far).
    async fn wait_for(&mut self, batch: u64) -> Result<(), EngineError> {
        let answered = self
            .book
            .wait(batch, &mut self.notes, &mut self.workers)
            .await?;
        self.tally
            .absorb(&self.config.api, &mut self.strategies, answered);
        Ok(())
    }

    /// Waits for the rounds' batch in flight, if any, and learns its answers.
    async fn absorb_in_flight(&mut self) -> Result<(), EngineError> {
        match self.in_flight.take() {
            Some(previous) => self.wait_for(previous).await,
            None => Ok(()),
        }
    }

    /// Waits for what is in flight, records the series still open, publishes the end of
    /// sending, finishes the spine, and gives the finding set and the counts.
    async fn finish(mut self, run: RunId) -> Result<RunResult, EngineError> {
        self.absorb_in_flight().await?;
        // What still waits for the slow lane is not sent; what is on it, is waited for
        // (the budget's deadline or the request's own ends it).
        self.shared.pace.close();
        // The last sender but the workers' own: once they end, the book has every note.
        drop(self.launcher);
        let answered = self.book.finish(&mut self.notes, &mut self.workers).await?;
        let mut tally = self.tally;
        tally.absorb(&self.config.api, &mut self.strategies, answered);
        let mut series_ids = self.series_ids;
        let mut series_judged = self.series_judged;
        for ended in tally.series.take_all() {
            series_ids.extend(
                finish_series(&self.shared, ended, &mut series_judged)
                    .await?
                    .0,
            );
        }
        // What judges beside the run (program checks) ends now, every exchange handed
        // over: its last verdicts join the findings before the set is made.
        crate::step::late(
            self.shared.oracles.finish(),
            &self.shared.spine,
            &mut super::exchange::Counted(&self.shared),
        );
        let seq = tally.answered;
        let stopped = self.config.stop.reason();
        // Interrupted, unless nothing ever answered: that the API is not there says more.
        let outcome = match (tally.outcome(), stopped) {
            (RunOutcome::Unreachable, _) => RunOutcome::Unreachable,
            (_, Some(StopReason::Interrupted)) => RunOutcome::Interrupted,
            (outcome, _) => outcome,
        };
        let series_variations = tally.series.variations();
        let (series_steps, shrink_sent, shrink_accepted) = (
            tally.series.sent(),
            tally.shrink.sent(),
            tally.shrink.accepted(),
        );
        let paces = self.shared.pace.report();
        let (per_operation, by_kind) = tally.into_counts(&self.config.api, paces);
        self.phase.end(&self.shared.spine);
        self.shared.spine.publish(&Event::SendingEnded {
            interactions: seq,
            at_ms: now_ms(),
        });
        let oracles_applied = self
            .shared
            .oracles
            .enabled()
            .iter()
            .map(|o| (o.name.to_owned(), o.version))
            .collect();
        let shared = Arc::into_inner(self.shared).expect("every worker task has finished");
        let collector = shared.collector.into_inner().unwrap_or_default();
        let mut findings = collector.finish(run, env!("CARGO_PKG_VERSION"), oracles_applied);
        // The checks are kept with the findings they judged, each credential of the run
        // searched out of their text as out of every other file the run read.
        let redactor = shared.identities.redactor();
        findings.checks = shared
            .oracles
            .check_definitions()
            .into_iter()
            .map(|(name, text)| {
                let kept = redactor.text(&text).unwrap_or(text);
                (name, kept)
            })
            .collect();
        let checks = shared.oracles.check_counts();
        shared.spine.finish()?;
        Ok(RunResult {
            run,
            outcome,
            interactions: seq,
            findings,
            stats: RunStats {
                per_operation,
                by_kind,
                skipped: self.skipped,
                elapsed: self.started.elapsed(),
                series: series_ids,
                series_steps,
                series_judged,
                series_variations,
                shrink_sent,
                shrink_accepted,
                identities: shared.identities.summary(),
                checks,
            },
            stopped,
            check_failures: shared.oracles.check_failures(),
        })
    }
}

/// The generator and the strategies, from the plan, the dictionaries and the options.
fn strategies<'a>(config: &'a RunConfig, options: &Options) -> Result<Strategies<'a>, EngineError> {
    let generator = Generator::new(
        &config.api.schemas,
        GenerateOptions {
            max_depth: options.generation.max_depth,
            max_string: options.generation.max_string_length,
            max_items: options.generation.max_items,
            direction: Direction::Request,
        },
    );
    let settings = &config.settings;
    let mutation = MutationOptions::from_settings(&|name| settings.get(name).map(str::to_owned))
        .map_err(EngineError::Settings)?;
    Ok(Strategies {
        api: &config.api,
        generator,
        plan: config.plan.clone(),
        negatives: !mutation.enabled.is_empty(),
        mutation,
        dictionaries: config.dictionaries.clone(),
        optional_ratio: options.generation.optional_parameters,
        accepted: AcceptedMemory::new(options.generation.accepted_kept),
    })
}

/// The books of follow-up requests, in the tally that feeds them: series (with the access
/// series the identities and the oracles call for), shrinking, pinpointing, authentication.
fn books(config: &RunConfig, options: &Options, oracles: &Oracles) -> Tally {
    let any = config.identities.any();
    let access = series::Access {
        other: config
            .identities
            .other()
            .filter(|_| {
                oracles.applies("other_identity_access") || oracles.applies("existence_leaked")
            })
            .map(str::to_owned),
        anonymous: any && oracles.applies("failed_update_side_effects"),
        refused: any && oracles.applies("valid_credentials_refused"),
    };
    let series = SeriesBook::new(
        &config.api,
        &config.operations,
        &options.series,
        oracles,
        options.send.timeout,
        config.seed,
    )
    .with_access(access)
    .with_login(
        oracles
            .applies("user_enumeration")
            .then(|| config.identities.json_login_with(series::WRONG_PASSWORD))
            .flatten()
            .and_then(|(method, path, body)| {
                series::LoginTarget::find(&config.api, method, path, body)
            })
            .filter(|t| config.operations.contains(&t.op)),
    )
    .with_burst(
        oracles
            .applies("login_not_rate_limited")
            .then(|| config.identities.json_login_with(series::WRONG_PASSWORD))
            .flatten()
            .and_then(|(method, path, body)| {
                series::LoginTarget::find(&config.api, method, path, body)
            })
            .filter(|t| config.operations.contains(&t.op)),
        options.series.login_burst,
    )
    .with_forgeries(if oracles.applies("token_forgery") {
        config.identities.forgeries(None, &config.api.title)
    } else {
        Vec::new()
    })
    .with_takeover(
        oracles
            .applies("credential_changed_by_other")
            .then(|| config.identities.other_json_login())
            .flatten()
            .and_then(|(method, path, body)| {
                series::Takeover::find(&config.api, &config.operations, method, path, body)
            }),
    );
    Tally::new(
        series,
        ShrinkBook::new(&options.shrink),
        PinpointBook::new(&options.pinpoint),
        AuthBook::new(any, oracles.applies("ignored_authentication")),
        Memory::new(Arc::new(Vocabulary::of(&config.api))),
    )
}

/// The opening lap's batches: its five steps, each split by nesting depth so that parents
/// are created and read before their children (`POST /buckets` answers before
/// `POST /buckets/{bucket_id}/collections` is generated). None without the lap.
fn opening_batches(config: &RunConfig, opening: bool) -> Vec<(usize, usize)> {
    if !opening {
        return Vec::new();
    }
    let mut batches: Vec<(usize, usize)> = config
        .operations
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
}
