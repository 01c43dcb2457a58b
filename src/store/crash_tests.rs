//! Crash tests with injected faults: a store whose writer dies at a chosen write opens,
//! verifies and keeps every interaction it acknowledged, in both formats.
//!
//! Killing a process at random moments (tests/store.rs) meets the write boundaries only by
//! chance; here the byte layer itself dies at the append numbered `at`, after writing the
//! first part of it (nothing, some of it, or all of it: a death between the append and the
//! index commit that names it), and every write after it fails, as nothing more reaches the
//! disk from a dead process. Each trial writes a synthetic run with series (objects that
//! name interactions recorded shortly before them) through a recorder committing every
//! millisecond, so that the fault meets every kind of commit.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::pack::ChooseRecords;
use super::synthetic::{synth_objects, write_run, Synth};
use super::*;
use crate::ids::{FindingSetId, InteractionId};
use crate::model::Interaction;

/// A byte layer that dies at one append.
struct DiesAtAppend {
    inner: Box<dyn ObjectBackend>,
    /// The append (counted from 0) that is cut short.
    at: usize,
    /// Thousandths of that append's bytes that reach the pack before the death.
    kept_permille: usize,
    appends: Arc<AtomicUsize>,
    dead: Arc<AtomicBool>,
}

fn died() -> StoreError {
    StoreError::Other("injected fault: the writer died here".into())
}

impl DiesAtAppend {
    fn alive(&self) -> Result<(), StoreError> {
        if self.dead.load(Ordering::SeqCst) {
            Err(died())
        } else {
            Ok(())
        }
    }

    /// Whether this append is the one that dies; counts it.
    fn dies_now(&self) -> bool {
        let n = self.appends.fetch_add(1, Ordering::SeqCst);
        if n == self.at {
            self.dead.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }

    fn kept(&self, len: usize) -> usize {
        len * self.kept_permille / 1000
    }
}

impl ObjectBackend for DiesAtAppend {
    fn append(&self, records: &[u8]) -> Result<(String, u64), StoreError> {
        self.alive()?;
        if self.dies_now() {
            let kept = self.kept(records.len());
            if kept > 0 {
                let _ = self.inner.append(&records[..kept]);
            }
            return Err(died());
        }
        self.inner.append(records)
    }

    fn append_chosen(
        &self,
        records: &mut Vec<u8>,
        choose: &mut ChooseRecords<'_>,
    ) -> Result<(), StoreError> {
        self.alive()?;
        if self.dies_now() {
            let mut cut = |pack: &str, offset: u64, records: &mut Vec<u8>| {
                choose(pack, offset, records)?;
                let kept = self.kept(records.len());
                records.truncate(kept);
                Ok(())
            };
            let _ = self.inner.append_chosen(records, &mut cut);
            return Err(died());
        }
        self.inner.append_chosen(records, choose)
    }

    fn read_at(&self, pack: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        self.inner.read_at(pack, offset, len)
    }

    fn packs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.packs()
    }

    fn open_pack(&self, pack: &str) -> Result<(Box<dyn std::io::Read + '_>, u64), StoreError> {
        self.inner.open_pack(pack)
    }

    fn seal(&self) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.seal()
    }

    fn pack_len(&self, pack: &str) -> Result<u64, StoreError> {
        self.inner.pack_len(pack)
    }

    fn remove_pack(&self, pack: &str) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.remove_pack(pack)
    }

    fn truncate(&self, pack: &str, len: u64) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.truncate(pack, len)
    }
}

/// A directory for one trial's store: in memory where the system has a tmpfs, since the
/// deaths are injected here and the disk's own durability is not what is tested (a trial's
/// dozen fsyncs made up most of its time on a disk).
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

/// One trial's fault: the append it dies at and how much of it is written.
#[derive(Clone, Copy, Debug)]
struct Fault {
    at: usize,
    kept_permille: usize,
}

/// Interactions per trial run, and a series after every `SERIES_EVERY` of them.
const INTERACTIONS: u64 = 60;
const SERIES_EVERY: u64 = 4;

/// Writes a synthetic run with series into `store` as `probe run` does: document and
/// RunStart, exchanges and series through a recorder, then the finding set and RunEnd.
/// Gives the interactions acknowledged before the first error, if any.
fn write_run_with_series(store: &Store, seed: u64, train: bool) -> Vec<InteractionId> {
    let mut acked = Vec::new();
    let mut synth = Synth::new(seed);
    let attempt = (|| -> Result<(), StoreError> {
        store.put_blob(&synth.document())?;
        let run = RunId(store.put(&synth.run_start(1))?);
        let (recorder, acks) = store.recorder_with_options_and_acks(RecorderOptions {
            flush_every: Duration::from_millis(1),
            train_after: if train { 40 } else { 0 },
            ..RecorderOptions::default()
        })?;
        let mut steps = Vec::new();
        let mut result = Ok(());
        for seq in 0..INTERACTIONS {
            let objects = synth_objects(&mut synth, run, seq)?;
            let id = objects.last().map(|o| InteractionId(o.id));
            steps.extend(id.map(|id| (seq, id)));
            if let Err(e) = recorder.record(objects) {
                result = Err(e);
                break;
            }
            if steps.len() as u64 == SERIES_EVERY {
                let series = encode(&synth.series(run, &steps))?;
                steps.clear();
                if let Err(e) = recorder.record(vec![series]) {
                    result = Err(e);
                    break;
                }
            }
            // Now and then a pause longer than a commit's wait: commits then come between
            // the messages of one exchange and the next, as they do against a slow API.
            if seq % 5 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            // And a commit of everything now and then, whatever the timing: a run makes
            // at least a dozen appends, so the faults below meet each of them.
            if seq % 12 == 11 {
                if let Err(e) = recorder.flush() {
                    result = Err(e);
                    break;
                }
            }
        }
        let finished = recorder.finish();
        acked.extend(acks.try_iter().flatten());
        result?;
        let stats = finished?;
        let set = FindingSetId(store.put(&synth.finding_set(run))?);
        store.put(&synth.run_end(run, stats.interactions, set))?;
        Ok(())
    })();
    drop(attempt);
    acked
}

/// Opens the store at `dir` after a crash and checks what a user relies on: it verifies,
/// every acknowledged interaction reads back, and the next run writes and verifies too.
fn check_after_crash(dir: &std::path::Path, acked: &[InteractionId], trial: &str, thorough: bool) {
    let store = Store::open_existing(dir).unwrap_or_else(|e| panic!("{trial}: open: {e}"));
    let report = store.verify().unwrap();
    assert!(
        report.is_ok(),
        "{trial}: verify after the crash: {:#?}",
        report.problems
    );
    for id in acked {
        store
            .get::<Interaction>(id.0)
            .unwrap_or_else(|e| panic!("{trial}: acknowledged {id} is lost: {e}"));
    }
    drop(store);
    if !thorough {
        return;
    }
    // Writing after a crash: a fresh recorder beside what the dead one left.
    let store = Store::open(dir).unwrap();
    write_run(&store, 7, 40, 2).unwrap_or_else(|e| panic!("{trial}: the next run: {e}"));
    let report = store.verify().unwrap();
    assert!(
        report.is_ok(),
        "{trial}: verify after the next run: {:#?}",
        report.problems
    );
    drop(store);
    // And rebuilding the index from the packs alone gives a store that verifies.
    let alone = Store::open_for_maintenance(dir, Maintenance::Reindex).unwrap();
    alone
        .reindex()
        .unwrap_or_else(|e| panic!("{trial}: reindex: {e}"));
    drop(alone);
    let store = Store::open_existing(dir).unwrap();
    let report = store.verify().unwrap();
    assert!(
        report.is_ok(),
        "{trial}: verify after reindex: {:#?}",
        report.problems
    );
    for id in acked {
        store
            .get::<Interaction>(id.0)
            .unwrap_or_else(|e| panic!("{trial}: after reindex, acknowledged {id} is lost: {e}"));
    }
}

/// A store of `format` in `dir` whose byte layer dies at `fault`; the counters it keeps.
fn store_dying_at(
    dir: &std::path::Path,
    format: StoreFormat,
    fault: Fault,
) -> (Store, Arc<AtomicUsize>, Arc<AtomicBool>) {
    let appends = Arc::new(AtomicUsize::new(0));
    let dead = Arc::new(AtomicBool::new(false));
    let store = Store::open_or_create(dir, format)
        .unwrap()
        .with_backend(|inner| {
            Box::new(DiesAtAppend {
                inner,
                at: fault.at,
                kept_permille: fault.kept_permille,
                appends: appends.clone(),
                dead: dead.clone(),
            })
        })
        .expect("no other handle on a store just opened");
    (store, appends, dead)
}

/// Runs `trials` crashes in stores of `format`, at every append a whole run makes in
/// turn; gives how many died (timing changes the number of appends a little, and a fault
/// past the run's last one does not fire).
fn crash_trials(format: StoreFormat, trials: usize, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // How many appends a whole run makes.
    let d = scratch();
    let never = Fault {
        at: usize::MAX,
        kept_permille: 0,
    };
    let (store, appends, _) = store_dying_at(d.path(), format, never);
    write_run_with_series(&store, 0, true);
    let appends = appends.load(Ordering::SeqCst);
    drop(store);
    eprintln!("format {format:?}: a whole run makes {appends} appends");
    assert!(appends >= 10, "a run made only {appends} appends");
    let mut died = 0;
    for trial in 0..trials {
        // Every write boundary in turn, each cut at its start, at its end, and inside.
        let fault = Fault {
            at: trial / 3 % appends,
            kept_permille: match trial % 3 {
                0 => 0,
                1 => 1000,
                _ => rng.gen_range(1..1000),
            },
        };
        let train = trial % 2 == 1;
        let d = scratch();
        let name = format!("{format:?} trial {trial} {fault:?} train {train}");
        let (store, _, dead) = store_dying_at(d.path(), format, fault);
        let acked = write_run_with_series(&store, trial as u64, train);
        drop(store);
        died += usize::from(dead.load(Ordering::SeqCst));
        check_after_crash(d.path(), &acked, &name, trial % 4 == 0);
    }
    died
}

/// Hundreds of deaths at write boundaries, in each format: the store opens, verifies and
/// keeps what it acknowledged; every fourth takes the next run and a reindex, and verifies.
#[test]
fn a_store_survives_a_death_at_every_write_boundary() {
    let started = Instant::now();
    let mut died = 0;
    for format in [StoreFormat::Two, StoreFormat::One] {
        died += crash_trials(format, 300, 0xc0ffee);
    }
    eprintln!("{died} deaths at a write, {:?}", started.elapsed());
    assert!(died >= 500, "only {died} trials died at a write");
}
