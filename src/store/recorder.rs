//! The recorder: the store's writer thread, fed by the engine through a bounded channel.
//!
//! The engine encodes on its own threads ([`super::encode`], [`super::externalize_bodies`])
//! and hands finished objects to [`Recorder::record_async`] (or [`Recorder::record`] off a
//! runtime); compression, the pack append, the fsync and the index transaction happen here,
//! batched (at most [`BATCH_OBJECTS`] objects or [`FLUSH_EVERY`] of waiting per batch),
//! because one SQLite commit per row would cost 3x (docs/design-notes.md, Measured ceilings). The send loop only
//! waits when the channel is full, and then without holding a runtime thread.
//!
//! The thread writes into the `RecordSink` its store's layout gives
//! (`seam::Layout::recorder_sink`): format 1's batches ([`Batch`], one pack append and
//! one index transaction per batch), or format 2's blocks (FORMAT.md §10.4): each stream's open
//! block is kept across batches and sealed when full (4 MiB), when its run changes, or
//! when its oldest object waited [`FLUSH_EVERY`]; a commit appends every sealed block in
//! one durable write, then indexes them in one transaction, then acknowledges the
//! interactions of those blocks only. What waits in an open block is neither indexed nor
//! acknowledged, so a kill never loses an acknowledged interaction.
//!
//! Depends on: `store::{object, pack, index, v2}`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use rusqlite::Connection;

use crate::ids::{CaseId, Digest, IdSet, InteractionId, RunId};

use super::context::Context;
use super::dict::{self, Packer};
use super::error::{io_err, StoreError};
use super::files::write_atomic;
use super::format::{ObjectKind, RecordHeader};
use super::handle::Inner;
use super::index::{self, sql_err};
use super::object::{EncodedObject, IndexRow};
use super::sink::RecordSink;
pub use super::sink::{
    RecorderOptions, RecorderStats, CHANNEL_CAPACITY, FLUSH_EVERY, INDEX_IDS_EVERY,
};
use super::v2::block::Stream;
use super::v2::dicts::ExchangeDictionary;
use super::v2::index2;
use super::v2::layout::V2;
use super::v2::writer::{self as writer2, OpenBlocks};

/// Objects per batch before a commit is forced. Index rows go under random keys (BLAKE3
/// ids), so every commit rewrites one page per row it touched; large batches touch each hot
/// page once for many rows (docs/benchmarks.md, "recorder batch of 20,000 objects").
pub const BATCH_OBJECTS: usize = 20_000;
/// Objects in a recorder's first batch: a small first commit makes the run durable, and
/// acknowledged, within milliseconds of its first interaction instead of after a whole
/// batch (a kill in a run's first half second used to leave nothing).
pub const FIRST_BATCH_OBJECTS: usize = 1_000;
/// How long the writer naps when it has taken every message and its batch is not due: the
/// senders' objects then gather in the channel and are taken many at a time. Waiting in
/// `recv` instead, it was woken by every send, a futex wake and two context switches per
/// interaction (docs/benchmarks.md, "recorder nap of 3 ms"). It adds at most this much to
/// [`FLUSH_EVERY`].
pub const GATHER: Duration = Duration::from_millis(3);
/// Capacity of the batch buffer the recorder keeps between batches (a batch of small
/// objects needs some 6 MB; one of large bodies may need far more, once).
const RECORDS_KEPT: usize = 32 << 20;
/// Ids the recorder remembers having written, so repeats are skipped before they are
/// compressed. Past this many the set starts again: memory stays flat on a long run, and a
/// forgotten id only costs its compression and an insert the index turns down.
const SEEN_LIMIT: usize = 65_536;
/// Test cases and blobs a format-2 recorder remembers having written (by the first 16
/// bytes of their ids) before the set starts again (FORMAT.md §10.2): a repeat it forgot is
/// written again, which costs bytes until gc, never correctness.
const SEEN_LIMIT_2: usize = 1 << 22;

enum Msg {
    Objects(Vec<EncodedObject>),
    Flush(Sender<Result<(), String>>),
}

/// A handle on the writer thread. Dropping it without [`Recorder::finish`] still writes
/// what was sent (the thread drains the channel), but loses the error, if any.
pub struct Recorder {
    tx: Option<Sender<Msg>>,
    handle: Option<JoinHandle<Result<RecorderStats, StoreError>>>,
    failure: Arc<Mutex<Option<String>>>,
    /// Signalled by the writer thread each time it takes a message off the channel.
    room: Arc<tokio::sync::Notify>,
}

impl Recorder {
    pub(crate) fn start(
        inner: Arc<Inner>,
        options: RecorderOptions,
        acks: Option<Sender<Vec<InteractionId>>>,
    ) -> Result<Recorder, StoreError> {
        // Its own connection: queries on the store's connection never wait for a batch.
        let conn = inner.layout.writer_connection(&inner.ctx)?;
        index::tune_for_writing(&conn).map_err(index::sql_err(&inner.index_path))?;
        let (tx, rx) = bounded(options.channel_capacity.max(1));
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let room = Arc::new(tokio::sync::Notify::new());
        let signal = room.clone();
        let handle = std::thread::Builder::new()
            .name("probe-recorder".into())
            .spawn(move || {
                let result = run(&inner, conn, rx, options, acks, &signal);
                // Nobody must wait for room that will never come.
                signal.notify_waiters();
                if let Err(e) = &result {
                    if let Ok(mut f) = fail.lock() {
                        *f = Some(e.to_string());
                    }
                }
                result
            })
            .map_err(|e| StoreError::Other(format!("cannot start the recorder thread: {e}")))?;
        Ok(Recorder {
            tx: Some(tx),
            handle: Some(handle),
            failure,
            room,
        })
    }

    fn stopped(&self) -> StoreError {
        let why = self
            .failure
            .lock()
            .ok()
            .and_then(|f| f.clone())
            .unwrap_or_else(|| "it exited".into());
        StoreError::Recorder(why)
    }

    /// Sends the objects of one interaction (blobs, test case, interaction, in that order)
    /// to the writer; blocks only while the channel is full. On an async runtime use
    /// [`Recorder::record_async`], which waits without blocking the runtime's thread.
    pub fn record(&self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        let tx = self.tx.as_ref().expect("sender lives until finish");
        tx.send(Msg::Objects(objects)).map_err(|_| self.stopped())
    }

    /// [`Recorder::record`] without waiting: the objects come back when the channel is full.
    pub fn try_record(
        &self,
        objects: Vec<EncodedObject>,
    ) -> Result<Option<Vec<EncodedObject>>, StoreError> {
        let tx = self.tx.as_ref().expect("sender lives until finish");
        match tx.try_send(Msg::Objects(objects)) {
            Ok(()) => Ok(None),
            Err(TrySendError::Full(Msg::Objects(back))) => Ok(Some(back)),
            // Only objects are sent here.
            Err(TrySendError::Full(Msg::Flush(_))) => Ok(None),
            Err(TrySendError::Disconnected(_)) => Err(self.stopped()),
        }
    }

    /// [`Recorder::record`] for tasks: while the channel is full the task waits, and the
    /// runtime thread goes on sending and reading other requests. A blocked thread would
    /// stall every connection it drives for as long as a commit takes (a checkpoint can take
    /// a third of a second), which on a two-thread runtime halves the send rate.
    pub async fn record_async(&self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        let mut objects = objects;
        loop {
            // Registered before the attempt, so room made between the attempt and the wait
            // is not missed.
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.try_record(objects)? {
                None => return Ok(()),
                Some(back) => objects = back,
            }
            notified.await;
        }
    }

    /// Returns once everything sent before is durably in the pack and the index.
    pub fn flush(&self) -> Result<(), StoreError> {
        let tx = self.tx.as_ref().expect("sender lives until finish");
        let (reply_tx, reply_rx) = bounded(1);
        tx.send(Msg::Flush(reply_tx)).map_err(|_| self.stopped())?;
        // The thread's end does not end the wait by itself: a request sent just before it
        // ended stays in the channel, its reply sender with it, for as long as a sender
        // lives (this handle's), so `recv` alone waited forever after a failed write.
        loop {
            match reply_rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => return Err(StoreError::Recorder(e)),
                Err(RecvTimeoutError::Disconnected) => return Err(self.stopped()),
                Err(RecvTimeoutError::Timeout) => {
                    let ended = self.handle.as_ref().is_none_or(|h| h.is_finished());
                    if ended {
                        // Its answer may have come just before it ended.
                        return match reply_rx.try_recv() {
                            Ok(Ok(())) => Ok(()),
                            Ok(Err(e)) => Err(StoreError::Recorder(e)),
                            Err(_) => Err(self.stopped()),
                        };
                    }
                }
            }
        }
    }

    /// Writes what is left and stops the thread.
    pub fn finish(mut self) -> Result<RecorderStats, StoreError> {
        drop(self.tx.take());
        let handle = self.handle.take().expect("handle lives until finish");
        handle
            .join()
            .map_err(|_| StoreError::Recorder("the recorder thread panicked".into()))?
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Kinds that get a dictionary: the many small objects of a run.
const DICT_KINDS: [ObjectKind; 2] = [ObjectKind::Interaction, ObjectKind::TestCase];

fn run(
    inner: &Inner,
    conn: Connection,
    rx: Receiver<Msg>,
    options: RecorderOptions,
    acks: Option<Sender<Vec<InteractionId>>>,
    room: &tokio::sync::Notify,
) -> Result<RecorderStats, StoreError> {
    let flush_every = options.flush_every;
    let mut sink = inner
        .layout
        .recorder_sink(&inner.ctx, conn, options, acks)?;
    // When the oldest object not yet committed came.
    let mut oldest: Option<Instant> = None;
    loop {
        let wait = match oldest {
            Some(t) => flush_every.saturating_sub(t.elapsed()),
            None => Duration::from_secs(3600),
        };
        let received = rx.recv_timeout(wait);
        // After every receive, not only after one from a full channel: a task may have found
        // the channel full just after a look at it said otherwise, and would then wait
        // forever. Waking nobody costs one uncontended lock.
        room.notify_waiters();
        match received {
            Ok(Msg::Objects(objs)) => {
                sink.add(objs)?;
                let since = *oldest.get_or_insert_with(Instant::now);
                // By size or by age: under a steady stream no receive ever times out.
                let limit = if sink.stats().batches == 0 {
                    FIRST_BATCH_OBJECTS
                } else {
                    BATCH_OBJECTS
                };
                if sink.offered() >= limit || since.elapsed() >= flush_every {
                    sink.commit(false)?;
                    oldest = sink.waiting_since();
                } else if rx.is_empty() {
                    std::thread::sleep(GATHER);
                }
            }
            Ok(Msg::Flush(reply)) => {
                let r = sink.commit(true);
                oldest = sink.waiting_since();
                let _ = reply.send(r.as_ref().map(|_| ()).map_err(|e| e.to_string()));
                r?;
            }
            Err(RecvTimeoutError::Timeout) => {
                sink.commit(false)?;
                oldest = sink.waiting_since();
            }
            Err(RecvTimeoutError::Disconnected) => {
                // No pass here: the ids recorded since the last one are a tail that lookups
                // scan (fewer than INDEX_IDS_EVERY rows), and they count towards the next
                // recorder's first pass, made on its own thread while its run sends. A pass here was
                // the end of every run, with one core working and the other idle: 4% of
                // a 100,000-request run against a fast API.
                sink.commit(true)?;
                return Ok(sink.stats().clone());
            }
        }
    }
}

impl RecordSink for Writer<'_> {
    fn add(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        Writer::add(self, objects)
    }

    fn commit(&mut self, _everything: bool) -> Result<(), StoreError> {
        Writer::commit(self)
    }

    fn offered(&self) -> usize {
        self.batch.offered()
    }

    fn stats(&self) -> &RecorderStats {
        &self.stats
    }
}

impl RecordSink for BlockWriter<'_> {
    fn add(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        BlockWriter::add(self, objects)
    }

    fn commit(&mut self, everything: bool) -> Result<(), StoreError> {
        BlockWriter::commit(self, everything)
    }

    fn offered(&self) -> usize {
        self.offered
    }

    fn waiting_since(&self) -> Option<Instant> {
        BlockWriter::waiting_since(self)
    }

    fn stats(&self) -> &RecorderStats {
        &self.stats
    }
}

/// Exchanges a format-2 recorder holds back to write them in seq order. Answers come back
/// out of the order requests were sent in (by as many places as requests are in flight);
/// in sending order, the seq column of a block's query columns is all ones, and those
/// columns are smaller (docs/benchmarks.md, "reorder window"). Every commit writes the
/// whole window first, so nothing waits longer for it.
pub const REORDER_WINDOW: usize = 1024;

/// The order of a format-1 batch's records, by what they name: blobs name nothing, test
/// cases name blobs, interactions name both, and series, finding sets and run ends name
/// interactions.
const BLOBS: u8 = 0;
const CASES: u8 = 1;
const INTERACTIONS: u8 = 2;
const NAMING_INTERACTIONS: u8 = 3;

/// The format-2 recorder's state between messages (FORMAT.md §10.4).
pub(crate) struct BlockWriter<'a> {
    ctx: &'a Context,
    v2: &'a V2,
    conn: Connection,
    blocks: OpenBlocks,
    /// First 16 bytes of the ids of test cases and blobs this recorder wrote: repeats are
    /// skipped without asking the index (cases stored by other runs are stored again, until
    /// gc). Bounded by [`SEEN_LIMIT_2`].
    seen: HashSet<u128>,
    /// The operation of each test case seen (an index into `operations`): an interaction's
    /// columns carry its case's operation, and a repeated case is not written again.
    case_operations: HashMap<u128, u32>,
    operations: Vec<String>,
    offered: usize,
    /// Exchanges not yet written, by (seq, arrival): [`REORDER_WINDOW`] at most, all of
    /// run `reorder_run`; `reorder_since` is when the oldest came.
    reorder: BTreeMap<(u64, u64), Vec<EncodedObject>>,
    reorder_run: Option<RunId>,
    reorder_since: Option<Instant>,
    arrivals: u64,
    /// Payloads of test cases and interactions kept to train the exchange dictionary, while
    /// the store has none ([`RecorderOptions::train_after`] of them).
    samples: Option<Vec<Vec<u8>>>,
    train_after: usize,
    /// [`RecorderOptions::flush_every`].
    flush_every: Duration,
    checkpointer: Option<Checkpointer>,
    acks: Option<Sender<Vec<InteractionId>>>,
    stats: RecorderStats,
}

fn prefix128(id: &Digest) -> u128 {
    let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, ..] = id.0;
    u128::from_le_bytes([a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p])
}

impl<'a> BlockWriter<'a> {
    pub(crate) fn new(
        ctx: &'a Context,
        v2: &'a V2,
        conn: Connection,
        options: &RecorderOptions,
        acks: Option<Sender<Vec<InteractionId>>>,
    ) -> Self {
        // The store's newest exchange dictionary, or samples to train one on.
        let mut blocks = OpenBlocks::default();
        if let Some(d) = ExchangeDictionary::newest(&ctx.dicts_dir(), writer2::LEVEL) {
            blocks.set_dictionary(d);
        }
        let samples = (options.train_after > 0 && !blocks.has_dictionary()).then(Vec::new);
        BlockWriter {
            ctx,
            v2,
            conn,
            blocks,
            samples,
            train_after: options.train_after,
            flush_every: options.flush_every,
            reorder: BTreeMap::new(),
            reorder_run: None,
            reorder_since: None,
            arrivals: 0,
            seen: HashSet::new(),
            case_operations: HashMap::new(),
            operations: Vec::new(),
            offered: 0,
            checkpointer: index2::open(&ctx.index_path)
                .ok()
                .and_then(Checkpointer::start),
            acks,
            stats: RecorderStats::default(),
        }
    }

    /// Takes one exchange's objects (or any other message's): an exchange waits in the
    /// reorder window, so that interactions reach their blocks in seq order, the order they
    /// were sent, rather than the order their answers came in; anything else goes out
    /// after everything waiting.
    fn add(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        self.offered += objects.len();
        let exchange = objects.iter().find_map(|o| match &o.row {
            IndexRow::Interaction { run, seq, .. } => Some((*run, *seq)),
            _ => None,
        });
        let Some((run, seq)) = exchange else {
            self.drain()?;
            return self.write(objects);
        };
        if self.reorder_run != Some(run) {
            self.drain()?;
            self.reorder_run = Some(run);
        }
        if self.reorder.is_empty() {
            self.reorder_since = Some(Instant::now());
        }
        self.arrivals += 1;
        self.reorder.insert((seq, self.arrivals), objects);
        while self.reorder.len() > REORDER_WINDOW {
            if let Some((_, first)) = self.reorder.pop_first() {
                self.write(first)?;
            }
        }
        Ok(())
    }

    /// Writes every exchange waiting in the reorder window, in seq order.
    fn drain(&mut self) -> Result<(), StoreError> {
        while let Some((_, first)) = self.reorder.pop_first() {
            self.write(first)?;
        }
        self.reorder_since = None;
        Ok(())
    }

    /// When the oldest object not yet committed came: in an open block or in the window.
    fn waiting_since(&self) -> Option<Instant> {
        match (self.blocks.oldest_open(), self.reorder_since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn write(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        for obj in objects {
            if let IndexRow::Case { operation, .. } = &obj.row {
                let at = match self.operations.iter().position(|o| o == operation) {
                    Some(at) => at,
                    None => {
                        self.operations.push(operation.clone());
                        self.operations.len() - 1
                    }
                };
                self.case_operations.insert(prefix128(&obj.id), at as u32);
            }
            if obj.kind != ObjectKind::Interaction {
                if self.seen.len() >= SEEN_LIMIT_2 {
                    self.seen.clear();
                    self.case_operations.clear();
                }
                if !self.seen.insert(prefix128(&obj.id)) {
                    self.stats.deduplicated += 1;
                    continue;
                }
            }
            let operation = match &obj.row {
                IndexRow::Interaction { case, .. } => {
                    match self.case_operations.get(&prefix128(&case.0)) {
                        Some(&at) => self.operations[at as usize].clone(),
                        // A case this recorder was not given: its operation from the store.
                        None => self.v2.case_operation(self.ctx.backend.as_ref(), &case.0)?,
                    }
                }
                _ => String::new(),
            };
            if let Some(samples) = &mut self.samples {
                if matches!(obj.kind, ObjectKind::TestCase | ObjectKind::Interaction) {
                    samples.push(obj.payload.clone());
                }
            }
            self.blocks.add(&obj, &operation)?;
        }
        Ok(())
    }

    /// Seals what is due and writes every sealed block: one durable append, one index
    /// transaction, then the acknowledgements.
    fn commit(&mut self, everything: bool) -> Result<(), StoreError> {
        self.drain()?;
        self.offered = 0;
        // The first commit takes everything, as format 1's small first batch does: the run
        // is durable, and acknowledged, soon after its first interaction.
        let age = if everything || self.stats.batches == 0 {
            Duration::ZERO
        } else {
            self.flush_every
        };
        // Sealing a block seals first the blocks of what it may name (a series, its
        // interactions; an interaction, its bodies' blobs), so each commit is whole: an
        // acknowledged interaction's bodies are as durable as it is, and a series is never
        // indexed before its steps.
        self.blocks.seal_older(&[Stream::Meta], Duration::ZERO)?;
        self.blocks.seal_older(&[Stream::Exchange], age)?;
        if !self.blocks.has_sealed() {
            return Ok(());
        }
        let done = writer2::commit(
            self.ctx.backend.as_ref(),
            &mut self.conn,
            &self.ctx.index_path,
            self.blocks.take_sealed(),
        )?;
        let stats = &mut self.stats;
        stats.written += done.objects;
        stats.raw_bytes += done.raw_bytes;
        stats.stored_bytes += done.stored_bytes;
        stats.batches += 1;
        stats.interactions += done.interactions.len() as u64;
        if let Some(acks) = &self.acks {
            let _ = acks.send(done.interactions);
        }
        // Train once enough test cases and interactions went by, after the commit is
        // acknowledged (training takes a tenth of a second or more, which a kill must not
        // cost): blocks sealed later use it. Its file is durable before any block naming it
        // is appended.
        if self
            .samples
            .as_ref()
            .is_some_and(|s| s.len() >= self.train_after)
        {
            let samples = self.samples.take().unwrap_or_default();
            let trained =
                ExchangeDictionary::train(&self.ctx.dicts_dir(), &samples, writer2::LEVEL)?;
            self.blocks.set_dictionary(trained);
        }
        if let Some(c) = &self.checkpointer {
            c.committed();
        }
        Ok(())
    }
}

/// The recorder thread's state between messages.
pub(crate) struct Writer<'a> {
    ctx: &'a Context,
    conn: Connection,
    packer: Packer,
    known: Known,
    /// Payloads kept to train a dictionary, per kind that has none yet.
    samples: Vec<(ObjectKind, Vec<Vec<u8>>)>,
    dict_dir: std::path::PathBuf,
    /// Interactions recorded since the last pass over their ids.
    unindexed: u64,
    checkpointer: Option<Checkpointer>,
    acks: Option<Sender<Vec<InteractionId>>>,
    options: RecorderOptions,
    batch: Batch,
    stats: RecorderStats,
}

impl<'a> Writer<'a> {
    /// The format-1 writer: dictionaries found or to train, the interaction ids left
    /// unindexed by earlier writers, the test cases and interactions `other_objects` holds.
    pub(crate) fn start(
        ctx: &'a Context,
        mut conn: Connection,
        options: RecorderOptions,
        acks: Option<Sender<Vec<InteractionId>>>,
    ) -> Result<Writer<'a>, StoreError> {
        let mut packer = Packer::new(options.level)?;
        let dict_dir = ctx.dicts_dir();
        // Reuse the newest dictionary of each kind: small runs then compress well from their
        // first object.
        for (kind, (id, bytes)) in dict::newest_per_kind(&dict_dir) {
            if DICT_KINDS.contains(&kind) {
                packer.set_dict(kind, id, &bytes)?;
            }
        }
        let samples: Vec<(ObjectKind, Vec<Vec<u8>>)> = DICT_KINDS
            .iter()
            .filter(|k| options.train_after > 0 && !packer.has_dict(**k))
            .map(|k| (*k, Vec::new()))
            .collect();
        // What earlier writers left unindexed (a recorder's last ids, a killed writer's)
        // counts towards this recorder's first pass, made here, on this thread while the
        // engine's first objects wait in the channel, only when it is due already. A pass
        // writes every page of the id index its rows fall on, most of the index once it
        // holds more ids than the pass brings: one at every recorder's start, for the last
        // run's ids, cost a run against a store of 600,000 interactions a sixth of a second
        // of one core.
        let mut unindexed =
            index::interaction_ids_behind(&conn).map_err(sql_err(&ctx.index_path))?;
        if unindexed >= options.index_ids_every {
            index_ids(&mut conn, &ctx.index_path)?;
            unindexed = 0;
        }
        let known = Known {
            elsewhere: index::own_kinds_in_other_objects(&conn)
                .map_err(sql_err(&ctx.index_path))?,
            ..Known::default()
        };
        Ok(Writer {
            ctx,
            conn,
            packer,
            known,
            samples,
            dict_dir,
            unindexed,
            checkpointer: index::open(&ctx.index_path)
                .ok()
                .and_then(|(conn, _)| Checkpointer::start(conn)),
            acks,
            options,
            batch: Batch::default(),
            stats: RecorderStats::default(),
        })
    }

    /// Checks and compresses one message's objects into the batch.
    fn add(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        for obj in objects {
            // Samples for a dictionary, until there are enough of the kind.
            if let Some((_, got)) = self.samples.iter_mut().find(|(k, _)| *k == obj.kind) {
                if got.len() < self.options.train_after {
                    got.push(obj.payload.clone());
                }
            }
            self.batch.add(
                obj,
                &mut self.packer,
                Some(&self.known),
                &self.conn,
                &self.ctx.index_path,
            )?;
        }
        Ok(())
    }

    /// Writes the batch, acknowledges it, and trains dictionaries and indexes interaction
    /// ids when due.
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.batch.offered() == 0 {
            return Ok(());
        }
        let s = self
            .batch
            .commit(self.ctx, &mut self.conn, Some(&mut self.known))?;
        let stats = &mut self.stats;
        stats.written += s.written;
        stats.deduplicated += s.deduplicated;
        stats.raw_bytes += s.raw_bytes;
        stats.stored_bytes += s.stored_bytes;
        stats.batches += 1;
        let recorded = s.interactions.len() as u64;
        stats.interactions += recorded;
        self.unindexed += recorded;
        if let Some(acks) = &self.acks {
            let _ = acks.send(s.interactions);
        }
        // Train once enough objects of a kind went by, after the batch is durable and
        // acknowledged (training takes a tenth of a second or more, which a kill must not
        // be able to cost): later batches use it. The dictionary file is durable before the
        // first record that names it is appended.
        for (kind, got) in self.samples.iter_mut() {
            if got.len() >= self.options.train_after && !self.packer.has_dict(*kind) {
                let bytes = dict::train_or_raw(got, dict::DICT_MAX_BYTES);
                let id = dict::dict_id(&bytes);
                let dir = &self.dict_dir;
                std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
                write_atomic(&dir.join(dict::file_name(id, *kind)), &bytes)?;
                self.packer.set_dict(*kind, id, &bytes)?;
            }
        }
        let packer = &self.packer;
        self.samples.retain(|(kind, _)| !packer.has_dict(*kind));
        if self.unindexed >= self.options.index_ids_every {
            index_ids(&mut self.conn, &self.ctx.index_path)?;
            self.unindexed = 0;
        }
        if let Some(c) = &self.checkpointer {
            c.committed();
        }
        Ok(())
    }
}

/// Indexes the ids of the interactions recorded since the last pass, in a transaction of
/// its own ([`index::index_interaction_ids`]).
fn index_ids(conn: &mut Connection, path: &std::path::Path) -> Result<(), StoreError> {
    // Immediate: the pass reads before it writes, and a deferred transaction could not take
    // the write lock after another process's commit.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err(path))?;
    index::index_interaction_ids(&tx).map_err(sql_err(path))?;
    tx.commit().map_err(sql_err(path))
}

/// Copies committed pages from the index's write-ahead log into the index file on a thread
/// of its own, after each commit of the recorder. Left to the recorder's connection, every
/// 16,000th page's commit would also do this work (a tenth to a third of a second while the
/// channel fills). A passive checkpoint never waits for the writer nor makes it wait; once
/// it has caught up, the writer's next commit starts the log again from its beginning, so
/// the log stays small. Should this thread fall behind or fail, the recorder's own
/// `wal_autocheckpoint` still bounds the log ([`index::tune_for_writing`]).
struct Checkpointer {
    tx: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// `None` when the thread or its connection cannot start: the recorder then
    /// checkpoints by itself, as SQLite does by default.
    fn start(conn: Connection) -> Option<Checkpointer> {
        // One pending request is enough: a checkpoint copies everything committed so far.
        let (tx, rx) = bounded::<()>(1);
        let handle = std::thread::Builder::new()
            .name("probe-checkpoint".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .ok()?;
        Some(Checkpointer {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    /// Asks for a checkpoint, unless one is already asked for.
    fn committed(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Counts of one batch.
#[derive(Default)]
pub(crate) struct BatchStats {
    pub written: u64,
    pub deduplicated: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// The interactions the batch held, in the order they came.
    pub interactions: Vec<InteractionId>,
}

/// What a recorder knows of the index without asking it.
#[derive(Default)]
pub(crate) struct Known {
    /// Ids this recorder wrote or found in the store, of the kinds that repeat (blobs, test
    /// cases): a repeat is then skipped before it is compressed. Bounded by [`SEEN_LIMIT`].
    written: IdSet<Digest>,
    /// The test cases and interactions `other_objects` held when the recorder started
    /// ([`index::own_kinds_in_other_objects`]), normally none.
    elsewhere: IdSet<Digest>,
}

impl Known {
    /// Remembers ids the store now holds; past [`SEEN_LIMIT`] the set starts again, so
    /// that it stays bounded on a long run, where most test cases are new.
    fn remember(&mut self, ids: impl IntoIterator<Item = Digest>) {
        if self.written.len() > SEEN_LIMIT {
            self.written.clear();
        }
        self.written.extend(ids);
    }
}

/// One record of a batch, compressed when its object came.
struct Staged {
    /// Where the record is in [`Batch::staged`].
    span: std::ops::Range<usize>,
    header: RecordHeader,
    row: IndexRow,
    raw_len: u64,
}

/// The one write path (recorder and direct puts). Objects are checked and compressed as
/// they come ([`Batch::add`]); [`Batch::commit`] then, under the pack writer's lock, inserts
/// each object's index rows at the offset its record will have, appends and fsyncs the
/// records of the objects the index took, and commits.
///
/// Compressing on arrival spreads the recorder's work over the second instead of doing it
/// all at each commit (a tenth of a second of one core against a fast API, in which the
/// senders' answers waited), and a payload is freed as soon as it is compressed instead of
/// a batch of them being held until the commit.
///
/// The inserts are the dedup check: an object's row goes in unless the index has it
/// already (a lookup of every object first cost more: docs/benchmarks.md, "format-1
/// dedup by insert"). What the index turns down is not
/// written. Test cases are the exception: one the store holds already is found when it
/// comes, so that a run repeating an earlier run's cases (the same seed against the same
/// API) compresses none of them, and its insert takes that answer instead of asking again,
/// unless another process committed to the index meanwhile.
#[derive(Default)]
pub(crate) struct Batch {
    /// Objects offered, repeats included: what the batch limits count.
    offered: usize,
    /// The compressed records, in the order their objects came.
    staged: Vec<u8>,
    entries: Vec<Staged>,
    /// The batch's records in the order they go into the pack; kept between batches.
    ordered: Vec<u8>,
    in_batch: IdSet<Digest>,
    /// Test cases not staged (repeats, or held by the store), kept for their operation:
    /// an interaction's row takes its operation from its test case's, stored or not.
    noted_cases: Vec<(CaseId, IndexRow)>,
    /// Test cases looked up when they came: their row, if any, and whether it is located.
    case_lookups: Vec<(CaseId, Option<(i64, bool)>)>,
    /// The index's `data_version` when the first of those lookups began the read
    /// transaction they share (one snapshot for the batch's lookups, not a transaction
    /// begun and ended for each: each of those cost a lock and an unlock of the log's
    /// shared memory, a sixth of the recorder's time against a fast API).
    looked_at: Option<i64>,
    /// Test cases the store held when they came.
    held: Vec<Digest>,
    deduplicated: u64,
    interactions: Vec<InteractionId>,
}

impl Batch {
    /// Objects offered since the last commit.
    pub fn offered(&self) -> usize {
        self.offered
    }

    /// Checks one object and compresses it unless it is a repeat or the store holds it.
    pub fn add(
        &mut self,
        obj: EncodedObject,
        packer: &mut Packer,
        known: Option<&Known>,
        conn: &Connection,
        path: &std::path::Path,
    ) -> Result<(), StoreError> {
        self.offered += 1;
        if obj.kind == ObjectKind::Interaction {
            self.interactions.push(InteractionId(obj.id));
        }
        // An interaction is unique by construction (its run and seq), and the index refuses
        // a second one of the same step anyway: only the kinds that repeat (blobs, test
        // cases) are looked for among what came before. Every id in a set of a whole
        // batch's objects was a cache miss, most of them for interactions.
        let repeat = obj.kind != ObjectKind::Interaction
            && (!self.in_batch.insert(obj.id)
                || known.is_some_and(|k| k.written.contains(&obj.id)));
        // A test case or an interaction kept in `other_objects` must not get a row of its
        // own as well.
        let elsewhere = !repeat
            && index::in_own_row(obj.kind.tag(), &obj.row)
            && match known {
                Some(k) => k.elsewhere.contains(&obj.id),
                None => index::in_other_objects(conn, &obj.id).map_err(sql_err(path))?,
            };
        if repeat || elsewhere {
            self.deduplicated += 1;
            self.note(obj);
            return Ok(());
        }
        if matches!(obj.row, IndexRow::Case { .. }) {
            if self.looked_at.is_none() {
                conn.execute_batch("BEGIN").map_err(sql_err(path))?;
                self.looked_at = Some(index::data_version(conn).map_err(sql_err(path))?);
            }
            let found = index::find_case(conn, &obj.id).map_err(sql_err(path))?;
            if matches!(found, Some((_, true))) {
                self.deduplicated += 1;
                self.held.push(obj.id);
                self.note(obj);
                return Ok(());
            }
            self.case_lookups.push((CaseId(obj.id), found));
        }
        let start = self.staged.len();
        let header = packer.append_record(&obj, &mut self.staged)?;
        self.entries.push(Staged {
            span: start..self.staged.len(),
            header,
            raw_len: obj.payload.len() as u64,
            row: obj.row,
        });
        Ok(())
    }

    fn note(&mut self, obj: EncodedObject) {
        if matches!(obj.row, IndexRow::Case { .. }) {
            self.noted_cases.push((CaseId(obj.id), obj.row));
        }
    }

    /// Writes what the batch staged, then starts the next batch (keeping its buffers).
    pub fn commit(
        &mut self,
        ctx: &Context,
        conn: &mut Connection,
        known: Option<&mut Known>,
    ) -> Result<BatchStats, StoreError> {
        let mut stats = BatchStats {
            deduplicated: self.deduplicated,
            interactions: std::mem::take(&mut self.interactions),
            ..BatchStats::default()
        };
        let written = self.write(ctx, conn, &mut stats);
        let taken = match written {
            Ok(taken) => taken,
            Err(e) => {
                self.abandon(conn);
                return Err(e);
            }
        };
        if let Some(known) = known {
            // Interactions are unique by construction (run + seq); remembering only the
            // kinds that repeat (blobs, test cases) keeps the set small.
            known.remember(taken.into_iter().chain(self.held.iter().copied()));
        }
        self.clear();
        Ok(stats)
    }

    /// The insert and append of [`Batch::commit`]; the ids of the test cases and other
    /// objects it wrote.
    fn write(
        &mut self,
        ctx: &Context,
        conn: &mut Connection,
        stats: &mut BatchStats,
    ) -> Result<Vec<Digest>, StoreError> {
        let path = &ctx.index_path;
        if self.entries.is_empty() {
            self.end_lookups(conn).map_err(sql_err(path))?;
            return Ok(Vec::new());
        }
        let entries = &self.entries;
        let (kinds, order) = self.write_order();
        self.ordered.clear();
        for &i in &order {
            self.ordered
                .extend_from_slice(&self.staged[entries[i].span.clone()]);
        }
        // The lookups' read transaction ends; the write lock is taken.
        self.end_lookups(conn).map_err(sql_err(path))?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err(path))?;
        let mut context = index::InsertContext::with_cases(entries.len());
        for (id, row) in entries
            .iter()
            .map(|e| (CaseId(e.header.id), &e.row))
            .chain(self.noted_cases.iter().map(|(id, row)| (*id, row)))
        {
            if let IndexRow::Case { operation, .. } = row {
                context.note_case(id, operation);
            }
        }
        // What the lookups said holds unless another process wrote to the index since.
        if let Some(looked_at) = self.looked_at {
            if index::data_version(&tx).map_err(sql_err(path))? == looked_at {
                for (id, found) in self.case_lookups.drain(..) {
                    context.knows_case(id, found);
                }
            }
        }
        let mut taken = vec![false; order.len()];
        ctx.backend
            .append_chosen(&mut self.ordered, &mut |pack, base, records| {
                let pack_id = index::pack_id(&tx, pack).map_err(sql_err(path))?;
                let mut len = 0u64;
                // Test cases and interactions go in many to a statement; a group that is
                // neither, or that the index turns down (it holds one of them), goes in one
                // at a time.
                let mut one_at_a_time_until = 0;
                let mut group = Vec::with_capacity(index::ROWS_PER_INSERT);
                let mut at = 0;
                while at < order.len() {
                    let end = at + index::ROWS_PER_INSERT;
                    if at >= one_at_a_time_until && end <= order.len() {
                        let kind = kinds[at];
                        if !matches!(kind, CASES | INTERACTIONS) || kinds[end - 1] != kind {
                            // Other objects, or a group that would run into the next kind:
                            // one at a time to where the kind changes.
                            one_at_a_time_until =
                                at + kinds[at..].iter().take_while(|k| **k == kind).count();
                        } else {
                            group.clear();
                            let mut offset = base + len;
                            for &i in &order[at..end] {
                                group.push((offset, &entries[i].header, &entries[i].row));
                                offset += entries[i].span.len() as u64;
                            }
                            if index::insert_group_with(&tx, pack_id, &group, &mut context)
                                .map_err(sql_err(path))?
                            {
                                taken[at..end].fill(true);
                                len = offset - base;
                                at = end;
                                continue;
                            }
                            one_at_a_time_until = end;
                        }
                    }
                    let e = &entries[order[at]];
                    taken[at] = index::insert_object_with(
                        &tx,
                        pack_id,
                        base + len,
                        &e.header,
                        &e.row,
                        &mut context,
                    )
                    .map_err(sql_err(path))?;
                    if taken[at] {
                        len += e.span.len() as u64;
                    }
                    at += 1;
                }
                // Close up the records the index turned down, in place.
                let (mut from, mut kept) = (0, 0);
                for (at, &i) in order.iter().enumerate() {
                    let n = entries[i].span.len();
                    if taken[at] {
                        if from != kept {
                            records.copy_within(from..from + n, kept);
                        }
                        kept += n;
                    }
                    from += n;
                }
                records.truncate(kept);
                Ok(())
            })?;
        // Its statements borrow the transaction.
        drop(context);
        tx.commit().map_err(sql_err(path))?;
        Ok(self.count_written(&order, &taken, stats))
    }

    /// Counts what the commit wrote (`taken`, in write `order`) and what the index turned
    /// down; gives the ids of the test cases and other objects written.
    fn count_written(
        &self,
        order: &[usize],
        taken: &[bool],
        stats: &mut BatchStats,
    ) -> Vec<Digest> {
        let mut written_ids = Vec::new();
        for (at, &i) in order.iter().enumerate() {
            let e = &self.entries[i];
            if taken[at] {
                stats.written += 1;
                stats.raw_bytes += e.raw_len;
                stats.stored_bytes += e.span.len() as u64;
                if !matches!(e.row, IndexRow::Interaction { .. }) {
                    written_ids.push(e.header.id);
                }
            } else {
                stats.deduplicated += 1;
            }
        }
        written_ids
    }

    /// The order the batch's entries are written in (indexes into `entries`), with the
    /// kind of each (`BLOBS` .. `NAMING_INTERACTIONS`).
    fn write_order(&self) -> (Vec<u8>, Vec<usize>) {
        // Blobs first, then test cases, in key order: consecutive rows land on the same
        // b-tree pages, which stay in the CPU's cache (docs/benchmarks.md, "format-1 rows
        // in key order"). Then interactions, in (run, seq)
        // order, which is also the order of their rows: a run's rows then lie in the table
        // in the order `diff` and `recheck` read them. Then what names interactions (series,
        // finding sets, run ends). Every record goes after those it names, in the pack as
        // in the index, so the whole records a crash mid-append leaves (which verify reads
        // and a reindex takes in) never name one that is not there.
        let entries = &self.entries;
        // Sorted as small keys side by side: ids compared whole, through the entries, were
        // a cache miss and a 32-byte comparison each. Ids are random, so their first eight
        // bytes order them as well for where their rows land; equal ones keep the order
        // they came in.
        let prefix = |d: &Digest| u64::from_be_bytes(d.0[..8].try_into().unwrap_or([0; 8]));
        let mut keyed: Vec<(u8, u64, u64, usize)> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| match &e.row {
                IndexRow::Interaction { run, seq, .. } => (INTERACTIONS, prefix(&run.0), *seq, i),
                IndexRow::Case { .. } => (CASES, prefix(&e.header.id), 0, i),
                _ if e.header.kind_tag == ObjectKind::Blob.tag() => {
                    (BLOBS, prefix(&e.header.id), 0, i)
                }
                _ => (NAMING_INTERACTIONS, prefix(&e.header.id), 0, i),
            })
            .collect();
        keyed.sort_unstable();
        let kinds: Vec<u8> = keyed.iter().map(|k| k.0).collect();
        let order: Vec<usize> = keyed.into_iter().map(|(.., i)| i).collect();
        (kinds, order)
    }

    /// Ends the read transaction of the batch's lookups, if they began one.
    fn end_lookups(&self, conn: &Connection) -> rusqlite::Result<()> {
        if self.looked_at.is_some() && !conn.is_autocommit() {
            conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// Gives the batch up (after an error): its lookups' read transaction ends, and nothing
    /// it staged is written.
    pub fn abandon(&mut self, conn: &Connection) {
        let _ = self.end_lookups(conn);
        self.clear();
    }

    /// Empties the batch, keeping the capacity of its buffers unless a batch of large
    /// bodies made them large.
    fn clear(&mut self) {
        self.offered = 0;
        self.staged.clear();
        self.entries.clear();
        self.in_batch.clear();
        self.noted_cases.clear();
        self.case_lookups.clear();
        self.looked_at = None;
        self.held.clear();
        self.deduplicated = 0;
        self.interactions.clear();
        for buffer in [&mut self.staged, &mut self.ordered] {
            if buffer.capacity() > RECORDS_KEPT {
                *buffer = Vec::new();
            }
        }
    }
}

/// Writes `objects` in one batch, without a recorder (direct puts).
pub(crate) fn write_batch(
    ctx: &Context,
    conn: &mut Connection,
    objects: Vec<EncodedObject>,
    packer: &mut Packer,
) -> Result<BatchStats, StoreError> {
    let mut batch = Batch::default();
    for obj in objects {
        if let Err(e) = batch.add(obj, packer, None, conn, &ctx.index_path) {
            batch.abandon(conn);
            return Err(e);
        }
    }
    batch.commit(ctx, conn, None)
}
