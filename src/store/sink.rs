//! What the recorder thread writes into, and how it is set up: the [`RecordSink`] each
//! layout gives the thread (`seam::Layout::recorder_sink`), the [`RecorderOptions`] it
//! starts with and the [`RecorderStats`] it keeps. Apart from the thread
//! (`store::recorder`) so that the seam names this small file, and the thread the facade.
//!
//! Depends on: `store::{dict, error, object}`.

use std::time::{Duration, Instant};

use super::dict;
use super::error::StoreError;
use super::object::{EncodedObject, RECORDER_LEVEL};

/// Longest time an object waits in memory before its batch commits: what a killed run can
/// lose at most. A second, not a fifth of one: against a fast API a fifth of a second held
/// only a quarter of [`BATCH_OBJECTS`], and every commit rewrites the index pages its rows
/// touch (docs/benchmarks.md, "recorder flush every second").
pub const FLUSH_EVERY: Duration = Duration::from_millis(1000);

/// Capacity of the channel, in `record` calls: enough to hold what the senders make while
/// a large batch is written (a third of a second or more at full speed against a fast API;
/// with fewer the senders stalled at every such batch: docs/benchmarks.md, "recorder
/// channel of 16,384"), and little enough memory (some 20 MB of encoded objects) when the
/// recorder is what holds a run back.
pub const CHANNEL_CAPACITY: usize = 16_384;

/// Interactions recorded between two sorted passes that index their ids
/// ([`index::index_interaction_ids`]), counting those earlier writers left unindexed (a
/// recorder makes a pass when it starts only if that many are waiting, and none when it
/// stops: the end of a run would wait for it). A pass writes each page of the id index it
/// touches once for all its rows, so larger passes cost less per interaction; this many
/// take a few tenths of a second, which the channel absorbs, and bound the tail a lookup by
/// id scans meanwhile.
pub const INDEX_IDS_EVERY: u64 = 1 << 18;

/// What a recorder wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Objects appended to the pack.
    pub written: u64,
    /// Objects already in the store (an identical body, say), not written again.
    pub deduplicated: u64,
    /// Interactions recorded.
    pub interactions: u64,
    /// Index transactions committed.
    pub batches: u64,
    /// Uncompressed payload bytes written.
    pub raw_bytes: u64,
    /// Bytes appended to the pack (headers + zstd frames).
    pub stored_bytes: u64,
}

/// How a recorder compresses and how much it holds.
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// zstd level.
    pub level: i32,
    /// Objects of a kind to see before training a dictionary for it; 0 = never train.
    pub train_after: usize,
    /// `record` calls the channel holds before senders wait ([`CHANNEL_CAPACITY`]).
    pub channel_capacity: usize,
    /// Interactions between two passes that index their ids ([`INDEX_IDS_EVERY`]).
    pub index_ids_every: u64,
    /// Longest wait of an object before its batch commits ([`FLUSH_EVERY`]); the crash
    /// tests commit every millisecond, to meet a write boundary at every kind of commit.
    pub flush_every: Duration,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            level: RECORDER_LEVEL,
            train_after: dict::TRAIN_AFTER,
            channel_capacity: CHANNEL_CAPACITY,
            index_ids_every: INDEX_IDS_EVERY,
            flush_every: FLUSH_EVERY,
        }
    }
}

/// What the recorder thread writes into: each layout has its own
/// ([`crate::store::seam::Layout::recorder_sink`]).
pub(crate) trait RecordSink {
    /// Takes objects to write at the next commit.
    fn add(&mut self, objects: Vec<EncodedObject>) -> Result<(), StoreError>;

    /// Commits what is due; `everything`: what was sent so far (a flush, the end).
    fn commit(&mut self, everything: bool) -> Result<(), StoreError>;

    /// Objects offered since the last commit.
    fn offered(&self) -> usize;

    /// When the oldest object left uncommitted came (format 2's open blocks).
    fn waiting_since(&self) -> Option<Instant> {
        None
    }

    fn stats(&self) -> &RecorderStats;
}
