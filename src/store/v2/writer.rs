//! Writing objects into a format-2 store: objects grouped by stream into blocks, the blocks
//! appended durably to this process's pack in `packs-2/`, and only then one index
//! transaction naming them (the write order of FORMAT.md §10.4: nothing indexed is ever missing
//! from a pack).
//!
//! [`OpenBlocks`] holds one open block per stream and the blocks sealed since the last
//! commit; [`commit`] appends the sealed blocks and indexes them. [`Writer2::write_now`] is
//! the direct write of `Store::put` and `put_encoded` (every object given goes out in the
//! call); the recorder keeps an [`OpenBlocks`] across its batches and seals a block when it
//! is full, when its run changes or when its oldest object waited long enough.
//!
//! Depends on: `store` (objects, kinds, the byte layer, errors), `v2::{block, cols,
//! content, index2, layout}`.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::ids::{Digest, InteractionId, RunId};
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::index::sql_err;
use crate::store::object::EncodedObject;
use crate::store::object::IndexRow;
use crate::store::pack::ObjectBackend;

use super::block::{self, Compression, Stream, BLOCK_HEADER_LEN};
use super::cols::Draft;
use super::content::ContentBuilder;
use super::dicts::ExchangeDictionary;
use super::index2::{self, NewBlock};
use super::layout::V2;

/// Content bytes after which a block is sealed: 4 MiB. On real fuzzing traffic 4 MiB blocks
/// at level 6 are smaller per interaction than 1 MiB ones, and reading one object
/// decompresses one block (docs/benchmarks.md, "block size", has the figures).
pub const BLOCK_BYTES: usize = 4 << 20;
/// zstd level of exchange and blob blocks (docs/store.md "Format 2").
pub const LEVEL: i32 = 6;
/// zstd level of meta blocks: a few small objects per put, where speed matters more.
pub const META_LEVEL: i32 = 3;

/// The stream an object of `kind` goes to.
pub fn stream_of(kind: ObjectKind) -> Stream {
    match kind {
        ObjectKind::TestCase | ObjectKind::Interaction => Stream::Exchange,
        ObjectKind::Blob => Stream::Blob,
        ObjectKind::RunStart | ObjectKind::RunEnd | ObjectKind::FindingSet | ObjectKind::Series => {
            Stream::Meta
        }
    }
}

/// The streams whose objects those of `stream` may name, in the order they are sealed
/// (what names nothing first): a series or a finding set (meta) names interactions, an
/// interaction (exchange) its test case and its bodies' blobs; a blob names nothing.
fn named_by(stream: Stream) -> &'static [Stream] {
    match stream {
        Stream::Meta => &[Stream::Blob, Stream::Exchange],
        Stream::Exchange => &[Stream::Blob],
        Stream::Blob => &[],
    }
}

/// One block sealed and waiting for the append, with what its index row needs.
pub(crate) struct Sealed {
    bytes: Vec<u8>,
    /// The key of the dictionary its frame was compressed with; 0 for none.
    dict: u32,
    raw_len: u32,
    stored_len: u32,
    stream: Stream,
    ids: Vec<Digest>,
    /// The block's interactions, acknowledged once the block is indexed.
    interactions: Vec<InteractionId>,
    seqs: Option<(RunId, u64, u64)>,
    /// Meta objects in the block with their rows, by ordinal (`runs`, `run_ends`,
    /// `finding_sets`).
    meta: Vec<(u32, Digest, IndexRow)>,
    /// Query columns of an exchange block.
    cols: Option<Draft>,
}

/// A sealed block's index row and meta rows, and its interactions.
pub(crate) type BlockRows = (NewBlock, Vec<(u32, Digest, IndexRow)>, Vec<InteractionId>);

impl Sealed {
    /// The block's bytes (header and frame), to append.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The block's row once its bytes are durable at `offset` (its columns' strings
    /// interned through `intern`), its meta objects' rows by ordinal, and its interactions.
    pub(crate) fn into_row(
        self,
        offset: u64,
        intern: &mut dyn FnMut(&str) -> Result<i64, StoreError>,
    ) -> Result<BlockRows, StoreError> {
        let cols = match &self.cols {
            Some(draft) => Some(draft.encode(intern)?),
            None => None,
        };
        let row = NewBlock {
            offset,
            stored_len: self.stored_len,
            raw_len: self.raw_len,
            stream: self.stream,
            dict: self.dict,
            interactions: self.interactions.len() as u32,
            keys: index2::keys_of(&self.ids),
            seqs: self.seqs,
            cols,
        };
        Ok((row, self.meta, self.interactions))
    }
}

/// The open block of one stream.
struct Open {
    stream: Stream,
    builder: ContentBuilder,
    ids: Vec<Digest>,
    interactions: Vec<InteractionId>,
    /// The run of the block's interactions, and their lowest and highest seq.
    seqs: Option<(RunId, u64, u64)>,
    meta: Vec<(u32, Digest, IndexRow)>,
    cols: Draft,
    /// When its first object came.
    since: Instant,
}

impl Open {
    fn new(stream: Stream) -> Open {
        Open {
            stream,
            builder: ContentBuilder::new(),
            ids: Vec::new(),
            interactions: Vec::new(),
            seqs: None,
            meta: Vec::new(),
            cols: Draft::default(),
            since: Instant::now(),
        }
    }

    /// Seals the block, compressed with `dictionary` when one is given (exchange blocks).
    fn seal(self, dictionary: Option<&ExchangeDictionary>) -> Result<Sealed, StoreError> {
        let level = match self.stream {
            Stream::Meta => META_LEVEL,
            Stream::Exchange | Stream::Blob => LEVEL,
        };
        let count = self.builder.count();
        let content = self.builder.finish();
        let compression = match dictionary {
            Some(d) => Compression::Dictionary {
                key: d.key,
                prepared: &d.prepared,
            },
            None => Compression::Level(level),
        };
        let bytes = block::seal(self.stream, count, &content, compression).map_err(|source| {
            StoreError::Seal {
                stream: self.stream,
                source,
            }
        })?;
        Ok(Sealed {
            dict: dictionary.map_or(0, |d| d.key.get()),
            // `seal` refused content and frames over 2^30: both fit in a u32.
            raw_len: content.len() as u32,
            stored_len: (bytes.len() - BLOCK_HEADER_LEN) as u32,
            bytes,
            stream: self.stream,
            ids: self.ids,
            interactions: self.interactions,
            seqs: self.seqs,
            meta: self.meta,
            cols: (self.stream == Stream::Exchange).then_some(self.cols),
        })
    }
}

/// One open block per stream, and the blocks sealed since the last [`commit`].
#[derive(Default)]
pub(crate) struct OpenBlocks {
    open: Vec<Open>,
    sealed: Vec<Sealed>,
    /// What exchange blocks are compressed with, once there is one.
    dictionary: Option<ExchangeDictionary>,
}

impl OpenBlocks {
    /// Compresses exchange blocks sealed from now on with `dictionary` (at the level it
    /// was prepared at, [`LEVEL`]).
    pub fn set_dictionary(&mut self, dictionary: ExchangeDictionary) {
        self.dictionary = Some(dictionary);
    }

    /// Whether exchange blocks are compressed with a dictionary.
    pub fn has_dictionary(&self) -> bool {
        self.dictionary.is_some()
    }

    /// Adds an object to its stream's open block, sealing that block first when it is full
    /// or (exchange) holds another run's interactions. `operation` is, for an interaction,
    /// the operation of its test case.
    pub fn add(&mut self, o: &EncodedObject, operation: &str) -> Result<(), StoreError> {
        let stream = stream_of(o.kind);
        let at = match self.open.iter().position(|b| b.stream == stream) {
            Some(at) => at,
            None => {
                self.open.push(Open::new(stream));
                self.open.len() - 1
            }
        };
        let run_changes = match (&o.row, &self.open[at].seqs) {
            (IndexRow::Interaction { run, .. }, Some((open_run, _, _))) => run != open_run,
            _ => false,
        };
        // An exchange block holds one run's interactions (FORMAT.md §10.2).
        if self.open[at].builder.len() >= BLOCK_BYTES || run_changes {
            self.seal_at(at)?;
        }
        let open = &mut self.open[at];
        if open.builder.is_empty() {
            open.since = Instant::now();
        }
        let ordinal = match open.builder.add(o.kind.tag(), &o.payload) {
            Ok(ordinal) => ordinal,
            // The content limit (2^30) reached: the object starts a block of its own.
            Err(_) if !open.builder.is_empty() => {
                self.seal_at(at)?;
                let open = &mut self.open[at];
                open.since = Instant::now();
                open.builder
                    .add(o.kind.tag(), &o.payload)
                    .map_err(|e| StoreError::Encode {
                        kind: o.kind,
                        reason: e.to_string(),
                    })?
            }
            Err(e) => {
                return Err(StoreError::Encode {
                    kind: o.kind,
                    reason: e.to_string(),
                })
            }
        };
        let open = &mut self.open[at];
        open.ids.push(o.id);
        if o.kind == ObjectKind::Interaction {
            open.interactions.push(InteractionId(o.id));
        }
        if let IndexRow::Interaction { run, seq, .. } = &o.row {
            open.seqs = Some(match open.seqs {
                Some((r, lo, hi)) => (r, lo.min(*seq), hi.max(*seq)),
                None => (*run, *seq, *seq),
            });
        }
        if stream == Stream::Exchange {
            open.cols.note(&open.builder, o.kind, &o.row, operation)?;
        }
        if matches!(
            o.row,
            IndexRow::RunStart(_) | IndexRow::RunEnd { .. } | IndexRow::FindingSet(_)
        ) {
            open.meta.push((ordinal, o.id, o.row.clone()));
        }
        Ok(())
    }

    /// Seals the open block at `at`, and first the open blocks of every stream its objects
    /// may name ([`named_by`]): a block is never written before the objects it names, so
    /// the complete blocks a crash mid-append leaves (which a rebuilt index takes in) name
    /// only objects that are there, and a commit never indexes a series whose steps wait
    /// in an open block.
    fn seal_at(&mut self, at: usize) -> Result<(), StoreError> {
        for &named in named_by(self.open[at].stream) {
            if let Some(before) = self.open.iter().position(|b| b.stream == named) {
                self.seal_one(before)?;
            }
        }
        self.seal_one(at)
    }

    fn seal_one(&mut self, at: usize) -> Result<(), StoreError> {
        let stream = self.open[at].stream;
        let open = std::mem::replace(&mut self.open[at], Open::new(stream));
        if !open.builder.is_empty() {
            let dictionary = match stream {
                Stream::Exchange => self.dictionary.as_ref(),
                Stream::Blob | Stream::Meta => None,
            };
            self.sealed.push(open.seal(dictionary)?);
        }
        Ok(())
    }

    /// Seals every open block of `stream`s whose first object came at least `age` ago
    /// (`Duration::ZERO`: every open block of those streams).
    pub fn seal_older(&mut self, streams: &[Stream], age: Duration) -> Result<(), StoreError> {
        for at in 0..self.open.len() {
            let open = &self.open[at];
            if streams.contains(&open.stream)
                && !open.builder.is_empty()
                && open.since.elapsed() >= age
            {
                self.seal_at(at)?;
            }
        }
        Ok(())
    }

    /// When the oldest object of the open blocks came; `None` when they are all empty.
    pub fn oldest_open(&self) -> Option<Instant> {
        self.open
            .iter()
            .filter(|b| !b.builder.is_empty())
            .map(|b| b.since)
            .min()
    }

    /// Whether blocks wait for a commit.
    pub fn has_sealed(&self) -> bool {
        !self.sealed.is_empty()
    }

    /// The sealed blocks, taken for a [`commit`].
    pub fn take_sealed(&mut self) -> Vec<Sealed> {
        std::mem::take(&mut self.sealed)
    }
}

/// What one [`commit`] wrote.
#[derive(Debug, Default)]
pub(crate) struct Committed {
    pub objects: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    pub interactions: Vec<InteractionId>,
}

/// Appends `sealed` durably through `backend` (one write and sync), then indexes the blocks
/// and their meta rows in one transaction on `conn`.
pub(crate) fn commit(
    backend: &dyn ObjectBackend,
    conn: &mut Connection,
    index_path: &Path,
    sealed: Vec<Sealed>,
) -> Result<Committed, StoreError> {
    let mut done = Committed::default();
    if sealed.is_empty() {
        return Ok(done);
    }
    let all: Vec<u8> = sealed
        .iter()
        .flat_map(|s| s.bytes.iter().copied())
        .collect();
    // Durable before the transaction that names the blocks.
    let (pack, first) = backend.append(&all)?;
    let e = || sql_err(index_path);
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(e())?;
    let pack_key = index2::pack_key(&tx, &pack).map_err(e())?;
    let mut strings: HashMap<String, i64> = HashMap::new();
    let mut offset = first;
    for s in sealed {
        let len = s.bytes.len() as u64;
        let (row, meta, interactions) = s.into_row(offset, &mut |text| {
            if let Some(id) = strings.get(text) {
                return Ok(*id);
            }
            let id = index2::string_key(&tx, text).map_err(sql_err(index_path))?;
            strings.insert(text.to_owned(), id);
            Ok(id)
        })?;
        let block = index2::insert_block(&tx, pack_key, &row).map_err(e())?;
        for (ordinal, id, row) in &meta {
            index_meta(&tx, id, row, block, *ordinal).map_err(e())?;
        }
        offset += len;
        done.objects += (row.keys.len() / index2::KEY_LEN) as u64;
        done.raw_bytes += u64::from(row.raw_len);
        done.stored_bytes += len;
        done.interactions.extend(interactions);
    }
    tx.commit().map_err(e())?;
    Ok(done)
}

/// Writes objects into a format-2 store.
pub struct Writer2;

impl Writer2 {
    /// Writes `objects` now: those not yet stored, once each, in blocks by stream, appended
    /// durably through `backend`, then indexed in one transaction.
    pub fn write_now(
        v2: &V2,
        backend: &dyn ObjectBackend,
        objects: Vec<EncodedObject>,
    ) -> Result<(), StoreError> {
        // The operations of the test cases given, stored already or not: an interaction's
        // columns carry its case's.
        let mut operations: HashMap<Digest, String> = objects
            .iter()
            .filter_map(|o| match &o.row {
                IndexRow::Case { operation, .. } => Some((o.id, operation.clone())),
                _ => None,
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut fresh = Vec::with_capacity(objects.len());
        for o in objects {
            if seen.insert(o.id) && v2.locate(backend, &o.id)?.is_none() {
                fresh.push(o);
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let mut blocks = OpenBlocks::default();
        // Meta first: a run start written with its interactions is indexed before the
        // exchange blocks filed under its run, here and by a rebuild reading the pack.
        for stream in [Stream::Meta, Stream::Exchange, Stream::Blob] {
            for o in fresh.iter().filter(|o| stream_of(o.kind) == stream) {
                let operation = match &o.row {
                    IndexRow::Interaction { case, .. } => match operations.get(&case.0) {
                        Some(op) => op.clone(),
                        None => {
                            let op = v2.case_operation(backend, &case.0)?;
                            operations.insert(case.0, op.clone());
                            op
                        }
                    },
                    _ => String::new(),
                };
                blocks.add(o, &operation)?;
            }
            blocks.seal_older(&[stream], Duration::ZERO)?;
        }
        let mut conn = v2.conn()?;
        commit(backend, &mut conn, &v2.index_path, blocks.take_sealed())?;
        Ok(())
    }
}

/// The rows of a meta object, stored at (`block`, `ordinal`). The meta stream comes before
/// the others in one write, so a run start put with its interactions is indexed first.
/// (Reindex makes the same rows from the same objects.)
pub(crate) fn index_meta(
    tx: &rusqlite::Transaction<'_>,
    id: &Digest,
    row: &IndexRow,
    block: i64,
    ordinal: u32,
) -> rusqlite::Result<()> {
    match row {
        IndexRow::RunStart(start) => index2::insert_run(tx, id, start, block, ordinal),
        IndexRow::RunEnd {
            run,
            ended_ms,
            outcome,
            interactions,
            findings,
        } => {
            let end = index2::RunEndRow {
                run,
                ended_ms: *ended_ms,
                outcome: *outcome,
                interactions: *interactions,
                findings,
            };
            index2::insert_run_end(tx, id, &end, block, ordinal)
        }
        IndexRow::FindingSet(set) => index2::insert_finding_set(tx, id, set, block, ordinal),
        IndexRow::None | IndexRow::Case { .. } | IndexRow::Interaction { .. } => Ok(()),
    }
}
