//! Writing objects into a format-2 store: objects grouped by stream into blocks, the blocks
//! appended durably to this process's pack in `packs-2/`, and only then one index
//! transaction naming them (the write order of plan §3.4: nothing indexed is ever missing
//! from a pack).
//!
//! [`Writer2::write_now`] is the direct write of `Store::put` and `put_encoded`: every
//! object given goes out in this call, in blocks of at most [`BLOCK_BYTES`] of content.
//! (The recorder's write, with blocks left open across batches, is increment 5.)
//!
//! Depends on: `store` (objects, kinds, the byte layer, errors), `v2::{block, content,
//! index2, layout}`.

use std::collections::HashSet;

use crate::ids::{Digest, RunId};
use crate::store::index::sql_err;
use crate::store::object::IndexRow;
use crate::store::{EncodedObject, ObjectBackend, ObjectKind, StoreError};

use super::block::{self, Compression, Stream, BLOCK_HEADER_LEN};
use super::content::ContentBuilder;
use super::index2::{self, NewBlock};
use super::layout::V2;

/// Content bytes after which a block is sealed (plan §3.3: 1 MiB).
pub const BLOCK_BYTES: usize = 1 << 20;
/// zstd level of exchange and blob blocks (plan §2: level 6 is the knee).
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

/// One block sealed and waiting for the append, with what its index row needs.
struct Sealed {
    bytes: Vec<u8>,
    raw_len: u32,
    stored_len: u32,
    stream: Stream,
    ids: Vec<Digest>,
    interactions: u32,
    seqs: Option<(RunId, u64, u64)>,
    /// Meta objects in the block with their rows, by ordinal (`runs`, `run_ends`,
    /// `finding_sets`).
    meta: Vec<(u32, Digest, IndexRow)>,
}

/// The open block of one stream.
struct Open {
    stream: Stream,
    builder: ContentBuilder,
    ids: Vec<Digest>,
    interactions: u32,
    /// The run of the block's interactions, and their lowest and highest seq.
    seqs: Option<(RunId, u64, u64)>,
    meta: Vec<(u32, Digest, IndexRow)>,
}

impl Open {
    fn new(stream: Stream) -> Open {
        Open {
            stream,
            builder: ContentBuilder::new(),
            ids: Vec::new(),
            interactions: 0,
            seqs: None,
            meta: Vec::new(),
        }
    }

    fn seal(self) -> Result<Sealed, StoreError> {
        let level = match self.stream {
            Stream::Meta => META_LEVEL,
            Stream::Exchange | Stream::Blob => LEVEL,
        };
        let count = self.builder.count();
        let content = self.builder.finish();
        let bytes = block::seal(self.stream, count, &content, Compression::Level(level)).map_err(
            |source| StoreError::Seal {
                stream: self.stream,
                source,
            },
        )?;
        Ok(Sealed {
            // `seal` refused content and frames over 2^30: both fit in a u32.
            raw_len: content.len() as u32,
            stored_len: (bytes.len() - BLOCK_HEADER_LEN) as u32,
            bytes,
            stream: self.stream,
            ids: self.ids,
            interactions: self.interactions,
            seqs: self.seqs,
            meta: self.meta,
        })
    }
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
        let mut seen = HashSet::new();
        let mut fresh = Vec::with_capacity(objects.len());
        for o in objects {
            if seen.insert(o.id) && v2.locate(backend, &o.id)?.is_none() {
                fresh.push(o);
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let mut sealed = Vec::new();
        // Meta first: a run start written with its interactions is indexed before the
        // exchange blocks filed under its run, here and by a rebuild reading the pack.
        for stream in [Stream::Meta, Stream::Exchange, Stream::Blob] {
            let mut open = Open::new(stream);
            for o in fresh.iter().filter(|o| stream_of(o.kind) == stream) {
                let run_changes = match (&o.row, &open.seqs) {
                    (IndexRow::Interaction { run, .. }, Some((open_run, _, _))) => run != open_run,
                    _ => false,
                };
                // An exchange block holds one run's interactions (plan §3.3).
                if open.builder.len() >= BLOCK_BYTES || run_changes {
                    sealed.push(std::mem::replace(&mut open, Open::new(stream)).seal()?);
                }
                let ordinal = match open.builder.add(o.kind.tag(), &o.payload) {
                    Ok(ordinal) => ordinal,
                    // The content limit (2^30) reached: the object starts a block of its own.
                    Err(_) if !open.builder.is_empty() => {
                        sealed.push(std::mem::replace(&mut open, Open::new(stream)).seal()?);
                        open.builder.add(o.kind.tag(), &o.payload).map_err(|e| {
                            StoreError::Encode {
                                kind: o.kind,
                                reason: e.to_string(),
                            }
                        })?
                    }
                    Err(e) => {
                        return Err(StoreError::Encode {
                            kind: o.kind,
                            reason: e.to_string(),
                        })
                    }
                };
                open.ids.push(o.id);
                if o.kind == ObjectKind::Interaction {
                    open.interactions += 1;
                }
                if let IndexRow::Interaction { run, seq, .. } = &o.row {
                    open.seqs = Some(match open.seqs {
                        Some((r, lo, hi)) => (r, lo.min(*seq), hi.max(*seq)),
                        None => (*run, *seq, *seq),
                    });
                }
                if matches!(
                    o.row,
                    IndexRow::RunStart(_) | IndexRow::RunEnd { .. } | IndexRow::FindingSet(_)
                ) {
                    open.meta.push((ordinal, o.id, o.row.clone()));
                }
            }
            if !open.builder.is_empty() {
                sealed.push(open.seal()?);
            }
        }
        let all: Vec<u8> = sealed
            .iter()
            .flat_map(|s| s.bytes.iter().copied())
            .collect();
        // Durable before the transaction that names the blocks.
        let (pack, first) = backend.append(&all)?;
        let mut conn = v2.conn()?;
        let e = || sql_err(&v2.index_path);
        let tx = conn.transaction().map_err(e())?;
        let pack_key = index2::pack_key(&tx, &pack).map_err(e())?;
        let mut offset = first;
        for s in &sealed {
            let row = NewBlock {
                offset,
                stored_len: s.stored_len,
                raw_len: s.raw_len,
                stream: s.stream,
                // No dictionary: training and reuse come with the recorder (increment 5).
                dict: 0,
                ids: s.ids.clone(),
                interactions: s.interactions,
                seqs: s.seqs,
            };
            let block = index2::insert_block(&tx, pack_key, &row).map_err(e())?;
            for (ordinal, id, row) in &s.meta {
                index_meta(&tx, id, row, block, *ordinal).map_err(e())?;
            }
            offset += s.bytes.len() as u64;
        }
        tx.commit().map_err(e())
    }
}

/// The rows of a meta object, stored at (`block`, `ordinal`). The meta stream comes after
/// the others in one write, so a run start put with its end is indexed first. (Reindex
/// makes the same rows from the same objects.)
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
