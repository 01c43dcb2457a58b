//! Recheck: judges a stored run again with this build's oracles, and sends nothing.
//!
//! The operation model comes from the document stored with the run (its `RunStart`
//! names the blob), the settings from the run's stored settings with `checks.*` overrides,
//! and the judging is [`Oracles::judge`] and [`FindingCollector`]: the very code a run uses
//! at run time (in the engine's worker), fed the same inputs (operation, test case,
//! interaction, the response body bytes), so a recheck by the build that made the run
//! gives back the run-time finding set, byte for byte.
//!
//! The result is a new [`FindingSet`] written beside the run; the run's objects are never
//! touched. Interactions stream through in pages of the index (one page in memory at a
//! time), each decoded, judged and dropped by one of `threads` workers; the collector
//! orders findings and their interactions by seq, so the number of workers never changes
//! the result.
//!
//! It publishes the same event stream as a run ([`crate::events`]): `run_started` of kind
//! `recheck` naming the run judged, a `finding` per distinct finding of the new set (in the
//! set's order, once judging is done), and `run_ended`. Nothing is sent, so there is no
//! `interaction` event.
//!
//! Depends on: `ids`, `model`, `store`, `spec`, `oracle`, `check`, `settings`, `diff`, `events`,
//! `clock`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::clock::now_ms;
use crate::diff::FindingsDelta;
use crate::events::{CampaignKind, Event, EventSink};
use crate::ids::{BlobId, CaseId, FindingSetId, RunId};
use crate::model::{BodyBytes, FindingSet, Interaction, RunOutcome, RunStart, Series, TestCase};
use crate::oracle::series::StepData;
use crate::oracle::{self, Exchange, FindingCollector, OracleInfo, Oracles};
use crate::settings::{Settings, SettingsError};
use crate::spec::{self, Api, SpecError};
use crate::store::{LocatedInteraction, Store, StoreError};

/// Seqs per page read from the index.
const PAGE: u64 = 512;
/// Decoded test cases a worker keeps per generation (cases repeat: examples, the same
/// read of an id, replays of the same seed).
const CASE_CACHE: usize = 8192;
/// Bytes of response bodies a worker keeps (bodies stored as blobs often repeat).
const BLOB_CACHE_BYTES: usize = 16 << 20;

/// Why a recheck could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RecheckError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("the document stored with run {run} (blob {document}) cannot be used: {source}")]
    Document {
        run: RunId,
        document: BlobId,
        #[source]
        source: Box<SpecError>,
    },
    #[error(
        "`--set {text}`: recheck only changes `checks.*` settings; the others shaped what was sent"
    )]
    NotACheck { text: String },
    #[error("no oracle is named `{name}`; known: {known}")]
    UnknownOracle { name: String, known: String },
    #[error("a recheck worker stopped: {0}")]
    Worker(String),
}

impl RecheckError {
    /// How to fix it, where there is a known way.
    pub fn hint(&self) -> Option<String> {
        match self {
            RecheckError::Store(e) => e.hint(),
            RecheckError::UnknownOracle { .. } => {
                Some("give an oracle name or code as `probe docs oracles` lists them".into())
            }
            _ => None,
        }
    }

    /// Whether the error is the user's to fix (usage) rather than the store's.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RecheckError::Settings(_)
                | RecheckError::NotACheck { .. }
                | RecheckError::UnknownOracle { .. }
        )
    }
}

/// How to recheck.
#[derive(Clone, Debug, Default)]
pub struct RecheckOptions {
    /// `checks.<name>=value` assignments over the run's stored settings.
    pub overrides: Vec<String>,
    /// Apply only these oracles (names or codes); empty: every oracle the settings switch on.
    pub oracles: Vec<String>,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// The checks the user wrote, judged beside the oracles (`--checks`, `[[check]]`).
    pub checks: Arc<Vec<crate::check::Check>>,
}

/// Counts of one judging pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JudgeStats {
    pub interactions: u64,
    /// Interactions whose operation is not in the stored document's model (it could not be
    /// loaded from the stored bytes alone, e.g. it refers to other files).
    pub unjudged: u64,
    pub unjudged_operations: BTreeSet<String>,
}

/// The result of rechecking one run.
#[derive(Debug)]
pub struct Recheck {
    pub run: RunId,
    pub set: FindingSet,
    pub set_id: FindingSetId,
    /// False when an identical finding set was already stored (the same judging again).
    pub new_set: bool,
    /// The run-time finding set compared against (`None` for a run with no end manifest).
    pub baseline: Option<FindingSetId>,
    /// Run-time findings (of the oracles applied) → recheck findings.
    pub delta: FindingsDelta,
    pub stats: JudgeStats,
    /// What each user check did (judged, failed, not judged).
    pub checks: Vec<crate::model::CheckCounts>,
    /// How each program check that failed failed (the recheck went on).
    pub check_failures: Vec<String>,
    pub elapsed: Duration,
}

/// Resolves `--oracle` names or codes.
pub fn select_oracles(names: &[String]) -> Result<Option<Vec<&'static OracleInfo>>, RecheckError> {
    if names.is_empty() {
        return Ok(None);
    }
    names
        .iter()
        .map(|n| {
            oracle::find(n.trim()).ok_or_else(|| RecheckError::UnknownOracle {
                name: n.clone(),
                known: oracle::CATALOGUE
                    .iter()
                    .map(|o| match o.code {
                        Some(c) => format!("{} ({c})", o.name),
                        None => o.name.to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The run's stored settings with `checks.*` overrides applied.
pub fn settings_for(start: &RunStart, overrides: &[String]) -> Result<Settings, RecheckError> {
    let mut settings = Settings::from_map(&start.settings);
    for text in overrides {
        if !text.trim_start().starts_with("checks.") {
            return Err(RecheckError::NotACheck { text: text.clone() });
        }
        settings.apply_assignment(text, "--set")?;
    }
    Ok(settings)
}

/// The oracles a recheck of `run` applies, built from the run's stored document.
pub fn oracles_for(
    store: &Store,
    run: RunId,
    start: &RunStart,
    options: &RecheckOptions,
) -> Result<Oracles, RecheckError> {
    oracles_and_api(store, run, start, options).map(|(oracles, _)| oracles)
}

/// [`oracles_for`], and the operation model they judge against.
fn oracles_and_api(
    store: &Store,
    run: RunId,
    start: &RunStart,
    options: &RecheckOptions,
) -> Result<(Oracles, Arc<Api>), RecheckError> {
    let settings = settings_for(start, &options.overrides)?;
    let only = select_oracles(&options.oracles)?;
    let document = store.get_blob(start.document)?;
    // The document's other files are stored beside it (runs made before they were have
    // none: the operations that need them are left out, counted as unjudged).
    let documents = store.run_documents(start)?;
    let parsed = spec::parse_stored(&document, &start.document_source, documents, None);
    let api = parsed.map_err(|source| RecheckError::Document {
        run,
        document: start.document,
        source: Box::new(source),
    })?;
    let api = Arc::new(api);
    let oracles = Oracles::new(api.clone(), &settings, only.as_deref())
        .with_checks(options.checks.clone())
        .waiting_for_programs();
    Ok((oracles, api))
}

/// Rechecks one run and writes the finding set beside it. `progress` is called with the
/// number of interactions judged since its last call; `events` hears the recheck as a
/// campaign (see the module documentation).
pub fn recheck_run(
    store: &Store,
    run: RunId,
    options: &RecheckOptions,
    progress: &(dyn Fn(u64) + Sync),
    events: &EventSink,
) -> Result<Recheck, RecheckError> {
    let started = Instant::now();
    let start: RunStart = store.get(run.0)?;
    let (oracles, api) = oracles_and_api(store, run, &start, options)?;
    events(&Event::RunStarted {
        kind: CampaignKind::Recheck,
        run,
        of: None,
        api_title: &api.title,
        api_version: &api.version,
        base_url: &start.base_url,
        seed: start.seed,
        operations: api.operations.len(),
        skipped: api.skipped.len(),
        at_ms: now_ms(),
    });
    let (mut collector, stats) = judge_run(store, run, &oracles, options.threads, progress)?;
    judge_series(store, run, &oracles, &mut collector)?;
    // Program checks end with every exchange handed over; their last verdicts join the set.
    for late in oracles.finish() {
        collector.add(&late.observation, late.interaction, late.seq, &late.case);
    }
    let applied: BTreeMap<String, u32> = oracles
        .enabled()
        .iter()
        .map(|o| (o.name.to_owned(), o.version))
        .collect();
    let mut set = collector.finish(run, env!("CARGO_PKG_VERSION"), applied);
    set.checks = oracles.check_definitions().into_iter().collect();
    let baseline = store.run_end(run)?.map(|end| end.findings);
    let baseline_set = match baseline {
        Some(id) => Some(store.get::<FindingSet>(id.0)?),
        None => None,
    };
    // Compare like with like: run-time findings of oracles this recheck did not apply are
    // not "vanished".
    let before: Vec<_> = baseline_set
        .iter()
        .flat_map(|b| &b.findings)
        .filter(|f| set.oracles.contains_key(&f.oracle))
        .cloned()
        .collect();
    let mut delta = FindingsDelta::between(&before, &set.findings);
    if let Some(baseline_set) = &baseline_set {
        // A check judged at run time with another text: what it gained or lost is its own.
        let mut changes = crate::diff::check_changes(baseline_set, &set);
        changes.retain(|_, c| *c == crate::diff::CheckChange::Changed);
        delta.mark_checks(changes);
    }
    let existing = store.finding_sets_of(run)?;
    let set_id = FindingSetId(store.put(&set)?);
    for f in &set.findings {
        let Some(&interaction) = f.interactions.first() else {
            continue;
        };
        events(&Event::Finding {
            oracle: &f.oracle,
            code: f.code.as_deref(),
            operation: &f.operation,
            message: &f.message,
            interaction,
        });
    }
    events(&Event::RunEnded {
        kind: CampaignKind::Recheck,
        run,
        outcome: RunOutcome::Completed,
        interactions: stats.interactions,
        findings: set.findings.len(),
        at_ms: now_ms(),
        stats: None,
    });
    Ok(Recheck {
        run,
        new_set: !existing.contains(&set_id),
        set,
        set_id,
        baseline,
        delta,
        stats,
        checks: oracles.check_counts(),
        check_failures: oracles.check_failures(),
        elapsed: started.elapsed(),
    })
}

/// Judges every stored series of `run` with the series oracles, into `collector`.
pub fn judge_series(
    store: &Store,
    run: RunId,
    oracles: &Oracles,
    collector: &mut FindingCollector,
) -> Result<(), RecheckError> {
    let Some(end) = store.run_end(run)? else {
        return Ok(());
    };
    for id in &end.series {
        let series: Series = store.get(id.0)?;
        let mut steps = Vec::with_capacity(series.steps.len());
        for step in &series.steps {
            let interaction: Interaction = store.get(step.interaction.0)?;
            let case: TestCase = store.get(interaction.case.0)?;
            let body = match interaction.outcome.response().and_then(|r| r.body.as_ref()) {
                Some(b) => Some(store.body_bytes(b)?),
                None => None,
            };
            steps.push(StepData {
                role: step.role,
                seq: step.seq,
                id: step.interaction,
                case,
                interaction,
                body,
            });
        }
        for obs in oracles.judge_series(&series, &steps) {
            let step = &steps[obs.step];
            collector.add_in_series(&obs.observation, step, *id, steps.len());
        }
    }
    Ok(())
}

/// Judges every interaction of `run` with `oracles`; writes nothing. The collector holds
/// the findings (ordered by seq whatever `threads` is).
pub fn judge_run(
    store: &Store,
    run: RunId,
    oracles: &Oracles,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(FindingCollector, JudgeStats), RecheckError> {
    let collector = Mutex::new(FindingCollector::new());
    let judged = AtomicU64::new(0);
    let unjudged = Mutex::new(BTreeMap::<String, u64>::new());
    let stop = AtomicBool::new(false);
    let Some(max_seq) = store.max_seq(run)? else {
        return Ok((FindingCollector::new(), JudgeStats::default()));
    };
    let threads = threads.max(1);
    let (tx, rx) = crossbeam_channel::bounded::<Vec<LocatedInteraction>>(threads * 2);
    let worker = || -> Result<(), RecheckError> {
        let mut judge = Judge::new(store, oracles);
        for page in rx.iter() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let n = page.len() as u64;
            for item in &page {
                if let Err(e) = judge.one(item, &collector, &unjudged) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            judged.fetch_add(n, Ordering::Relaxed);
            progress(n);
        }
        Ok(())
    };
    let results: Vec<Result<(), RecheckError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
        let mut produced = Ok(());
        let mut from = 0u64;
        while from <= max_seq && !stop.load(Ordering::Relaxed) {
            let to = from.saturating_add(PAGE);
            match store.interactions_page(run, from..to) {
                Ok(page) if page.is_empty() => {}
                Ok(page) => {
                    if tx.send(page).is_err() {
                        break; // every worker stopped; their errors say why
                    }
                }
                Err(e) => {
                    produced = Err(RecheckError::from(e));
                    break;
                }
            }
            from = to;
        }
        drop(tx);
        let mut results: Vec<Result<(), RecheckError>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(RecheckError::Worker("a worker panicked".into())))
            })
            .collect();
        results.push(produced);
        results
    });
    for r in results {
        r?;
    }
    let unjudged = unjudged.into_inner().unwrap_or_default();
    let collector = collector
        .into_inner()
        .map_err(|_| RecheckError::Worker("the collector lock was poisoned".into()))?;
    Ok((
        collector,
        JudgeStats {
            interactions: judged.load(Ordering::Relaxed),
            unjudged: unjudged.values().sum(),
            unjudged_operations: unjudged.into_keys().collect(),
        },
    ))
}

/// One worker's judging state: small caches of decoded cases and blob bodies.
struct Judge<'a> {
    store: &'a Store,
    oracles: &'a Oracles,
    /// Two generations: when `cases` is full it becomes `older` and a fresh map starts, so
    /// recently used cases survive (a cheap approximation of LRU with a fixed bound).
    cases: HashMap<CaseId, Arc<TestCase>>,
    older: HashMap<CaseId, Arc<TestCase>>,
    blobs: HashMap<BlobId, Arc<Vec<u8>>>,
    blob_bytes: usize,
}

impl<'a> Judge<'a> {
    fn new(store: &'a Store, oracles: &'a Oracles) -> Judge<'a> {
        Judge {
            store,
            oracles,
            cases: HashMap::new(),
            older: HashMap::new(),
            blobs: HashMap::new(),
            blob_bytes: 0,
        }
    }

    fn case(&mut self, item: &LocatedInteraction, id: CaseId) -> Result<Arc<TestCase>, StoreError> {
        if let Some(c) = self.cases.get(&id) {
            return Ok(c.clone());
        }
        let case = match self.older.get(&id) {
            Some(c) => c.clone(),
            // The index row names the case the interaction names; read it at the place the
            // page query found, else look it up.
            None if item.row.case == id => Arc::new(self.store.get_case(item)?),
            None => Arc::new(self.store.get::<TestCase>(id.0)?),
        };
        if self.cases.len() >= CASE_CACHE {
            self.older = std::mem::take(&mut self.cases);
        }
        self.cases.insert(id, case.clone());
        Ok(case)
    }

    fn blob(&mut self, id: BlobId) -> Result<Arc<Vec<u8>>, StoreError> {
        if let Some(b) = self.blobs.get(&id) {
            return Ok(b.clone());
        }
        let bytes = Arc::new(self.store.get_blob(id)?);
        if self.blob_bytes + bytes.len() > BLOB_CACHE_BYTES {
            self.blobs.clear();
            self.blob_bytes = 0;
        }
        self.blob_bytes += bytes.len();
        self.blobs.insert(id, bytes.clone());
        Ok(bytes)
    }

    /// Decodes, judges and drops one interaction.
    fn one(
        &mut self,
        item: &LocatedInteraction,
        collector: &Mutex<FindingCollector>,
        unjudged: &Mutex<BTreeMap<String, u64>>,
    ) -> Result<(), RecheckError> {
        let interaction = self.store.get_interaction(item)?;
        let case = self.case(item, interaction.case)?;
        let Some(operation) = self.oracles.operation(&case.operation) else {
            if let Ok(mut u) = unjudged.lock() {
                *u.entry(case.operation.clone()).or_insert(0) += 1;
            }
            return Ok(());
        };
        // A request that got no answer is judged too (`transport_failure`, a server-wide
        // stall), as the run judged it.
        let blob;
        let body: Option<&[u8]> = match interaction.outcome.response().and_then(|r| r.body.as_ref())
        {
            None => None,
            Some(BodyBytes::Inline(b)) => Some(b),
            Some(BodyBytes::Blob { id, .. }) => {
                blob = self.blob(*id)?;
                Some(blob.as_slice())
            }
        };
        let exchange = Exchange {
            id: item.row.id,
            operation,
            case: &case,
            interaction: &interaction,
            response_body: body,
            response_json: None,
        };
        let observations = self.oracles.judge(&exchange);
        // A program check's verdicts on exchanges judged earlier, as they come.
        let late = self.oracles.late();
        if observations.is_empty() && late.is_empty() {
            return Ok(());
        }
        let mut c = collector
            .lock()
            .map_err(|_| RecheckError::Worker("the collector lock was poisoned".into()))?;
        for obs in &observations {
            c.add_exchange(obs, item.row.id, &interaction, &case);
        }
        for l in &late {
            c.add(&l.observation, l.interaction, l.seq, &l.case);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::synthetic::{write_run, Synth};

    #[test]
    fn the_synthetic_document_is_a_real_openapi_document() {
        let api = spec::parse(&Synth::new(1).document(), "synthetic-shop.json", None).unwrap();
        assert_eq!(api.operations.len(), 11, "skipped: {:?}", api.skipped);
    }

    #[test]
    fn the_finding_set_does_not_depend_on_the_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let run = write_run(&store, 3, 1500, 1).unwrap();
        let options = |threads| RecheckOptions {
            threads,
            ..RecheckOptions::default()
        };
        let one =
            recheck_run(&store, run, &options(1), &|_| {}, &crate::events::discard()).unwrap();
        let three =
            recheck_run(&store, run, &options(3), &|_| {}, &crate::events::discard()).unwrap();
        assert_eq!(one.set, three.set);
        assert_eq!(one.set_id, three.set_id);
        assert!(one.new_set && !three.new_set);
        assert_eq!(one.stats.interactions, 1500);
        assert_eq!(one.stats.unjudged, 0);
        let oracles: BTreeSet<&str> = one.set.findings.iter().map(|f| f.oracle.as_str()).collect();
        for expected in [
            "server_error",
            "status_code_declared",
            "response_schema_conformance",
        ] {
            assert!(oracles.contains(expected), "{expected} in {oracles:?}");
        }
        // The synthetic run-time set is empty: everything is gained, nothing lost.
        assert_eq!(one.delta.gained.len(), one.set.findings.len());
        assert!(one.delta.lost.is_empty());
        // The run-time set stays first; the recheck is the newest.
        let sets = store.finding_sets_of(run).unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0], store.run_end(run).unwrap().unwrap().findings);
        assert_eq!(store.newest_finding_set(run).unwrap(), Some(one.set_id));
    }

    #[test]
    fn a_damaged_interaction_is_an_error_naming_the_object_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        // Format 1: the test finds the victim's record through `index.sqlite`.
        let store = Store::open_or_create(dir.path(), crate::store::StoreFormat::One).unwrap();
        let run = write_run(&store, 4, 20, 1).unwrap();
        let victim = store.interactions_of(run).unwrap()[7].id;
        drop(store);
        // Flip a byte inside the victim's stored record.
        let (pack, offset) = {
            let conn = rusqlite::Connection::open(dir.path().join("index.sqlite")).unwrap();
            conn.query_row(
                "SELECT p.name, o.offset FROM objects o JOIN packs p ON p.id = o.pack WHERE o.id = ?1",
                [&victim.0 .0[..]],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
            )
            .unwrap()
        };
        let path = dir.path().join("packs").join(pack);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = offset as usize + crate::store::format::RECORD_HEADER_LEN + 3;
        bytes[at] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let store = Store::open_existing(dir.path()).unwrap();
        let err = recheck_run(
            &store,
            run,
            &RecheckOptions::default(),
            &|_| {},
            &crate::events::discard(),
        )
        .unwrap_err();
        assert!(err.to_string().contains(&victim.short(8)), "{err}");
    }
}
