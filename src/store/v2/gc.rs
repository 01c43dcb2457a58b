//! `probe store gc` of a format-2 store (FORMAT.md §10.6): objects no run reaches, second copies
//! of objects and torn tails are dropped, by whole blocks.
//!
//! 1. **Mark**: the id prefixes (16 bytes) of every object a run reaches: each run start,
//!    its `document`, `documents` and `inputs`; the interactions of the exchange blocks
//!    filed under it, their test cases and body blobs (from the blocks' query columns, ids
//!    from the decoded blocks); its run ends, their finding sets and series; the finding
//!    sets of its rechecks (`finding_sets` rows). Blocks the index does not name (a writer
//!    killed between its append and its commit) are kept, with every id they carry.
//! 2. **Sweep**, pack by pack in name order, block by block in offset order: the first copy
//!    of a reached object is kept, later copies and unreached objects are dropped. Objects
//!    of blocks the index does not name (a writer died between its append and its commit)
//!    are kept unless already kept elsewhere: a stale index must not make gc delete data.
//!    A pack all of whose blocks are indexed and keep every object is left as it is. Any
//!    other pack is rewritten into a *replacement* pack named after it
//!    ([`ObjectBackend::seal_replacing`]), so that pack names keep the order objects were
//!    written in ("newest finding set" and "first copy wins" read that order): its clean
//!    blocks are copied byte for byte (their `blocks` rows only move), the kept objects of
//!    the others are restored and re-encoded through the writer's [`OpenBlocks`] in their
//!    old order. A pack holding a damaged block, bytes that are not blocks, or blocks the
//!    index places where none is, is left as it is (and listed).
//! 3. **Commit**: the replacement packs are durable (each append synced) before one index
//!    transaction deletes the old blocks' rows, moves the copied ones, inserts the new ones
//!    and points the meta rows (`runs`, `run_ends`, `finding_sets`) at the kept copy of
//!    their object. Only after that commit is an old pack deleted, and only when no block
//!    of it is indexed any more; torn tails of packs not rewritten are cut then too.
//!
//! A crash before the commit leaves replacement packs whose blocks no index row names
//! (verify notes them; the next gc drops them as second copies); after it, old packs whose
//! blocks no row names (likewise). Nothing reachable is ever only in bytes the index stops
//! naming before the commit.
//!
//! Depends on: `ids`, `model`, `store` (the byte layer, objects, the exclusive store,
//! errors), `v2::{block, cols, content, index2, layout, scan, writer}`.

use std::collections::HashMap;

use rusqlite::params;

use crate::ids::{Digest, IdHasher};
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::format::PACK_HEADER_LEN;
use crate::store::index::sql_err;
use crate::store::maintenance::follow_references;
use crate::store::object::EncodedObject;
use crate::store::object::{row_of_payload, IndexRow};
use crate::store::pack::ObjectBackend;
use crate::store::reports::GcReport;

use super::block::{BlockHeader, Stream, BLOCK_HEADER_LEN};
use super::cols::{self, Col};
use super::index2;
use super::layout::V2;
use super::scan::{scan_pack, ScanItem};
use super::whole;
use super::writer::{index_meta, OpenBlocks, Sealed};

/// Bytes of blocks gc holds before appending them to a replacement pack.
const APPEND_BYTES: usize = 8 << 20;

/// An id's first 16 bytes: two distinct objects share them with probability 2^-128. A byte
/// array, not a u128: with the flag beside it an entry is 17 bytes, where a u128's
/// alignment would pad it to 32 (at 2M interactions, about 3M objects: 4M buckets of 18
/// bytes, ~75 MB, against ~140 MB).
type Prefix = [u8; 16];

fn prefix(id: &Digest) -> Prefix {
    let mut head = [0u8; 16];
    head.copy_from_slice(&id.0[..16]);
    head
}

/// Objects a run reaches, by id prefix, each with whether its first copy was kept already.
type Marks = HashMap<Prefix, bool, IdHasher>;

/// One `blocks` row, as gc needs it.
struct Row {
    id: i64,
    offset: u64,
    count: u32,
    cols: Option<Vec<u8>>,
}

/// What gc does with one block of a pack it rewrites.
enum Fate {
    /// Indexed, every object kept: copied byte for byte, its row moved (block `id`).
    Copy { id: i64 },
    /// Re-encoded: the ordinals kept (maybe none); `id` is its row when indexed.
    Rewrite { id: Option<i64>, kept: Vec<u32> },
}

/// One block of a pack, as the sweep found it.
struct Planned {
    offset: u64,
    len: u64,
    fate: Fate,
}

/// What the sweep decided for one pack.
#[derive(Default)]
struct PackPlan {
    blocks: Vec<Planned>,
    /// A torn tail at this offset.
    tail: Option<u64>,
    dropped: u64,
    duplicates: u64,
    /// Why the pack is left as it is.
    fault: Option<String>,
}

impl PackPlan {
    fn untouched(&self) -> bool {
        self.blocks
            .iter()
            .all(|b| matches!(b.fate, Fate::Copy { .. }))
    }
}

/// Where a kept meta object will be: a block kept (row id) or new block `n` of the commit.
#[derive(Clone, Copy)]
enum MetaAt {
    Old(i64, u32),
    New(usize, u32),
}

/// A block written by gc, to index at the commit.
struct NewRow {
    pack: String,
    row: index2::NewBlock,
    meta: Vec<(u32, Digest, IndexRow)>,
}

/// The index side of gc, gathered while writing.
#[derive(Default)]
struct Pending {
    /// Rows of re-encoded blocks that go.
    deleted: Vec<i64>,
    /// Copied blocks: row id, new pack, new offset.
    moved: Vec<(i64, String, u64)>,
    new: Vec<NewRow>,
    /// Kept run starts, run ends and finding sets: where their kept copy is.
    meta: Vec<(ObjectKind, Digest, MetaAt)>,
}

/// Parses a whole block's bytes (header and frame).
fn is_meta(kind: ObjectKind) -> bool {
    matches!(
        kind,
        ObjectKind::RunStart | ObjectKind::RunEnd | ObjectKind::FindingSet
    )
}

/// The ids a gc marks from first (runs, their ends, their finding sets) and the exchange
/// blocks of runs (id, object count, query columns), from the index.
#[allow(clippy::type_complexity)]
fn gc_roots(
    v2: &V2,
) -> Result<
    (
        Vec<Digest>,
        Vec<Digest>,
        Vec<Digest>,
        Vec<(i64, u32, Option<Vec<u8>>)>,
    ),
    StoreError,
> {
    let e = || sql_err(&v2.index_path);
    let digest = |bytes: Vec<u8>| <[u8; 32]>::try_from(bytes.as_slice()).ok().map(Digest);
    let conn = v2.conn()?;
    let ids = |sql: &str| -> Result<Vec<Digest>, StoreError> {
        let mut st = conn.prepare(sql).map_err(e())?;
        let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).map_err(e())?;
        let mut out = Vec::new();
        for row in rows {
            out.extend(digest(row.map_err(e())?));
        }
        Ok(out)
    };
    let runs = ids("SELECT id FROM runs")?;
    let ends = ids("SELECT e.id FROM run_ends e JOIN runs r ON r.key = e.run")?;
    let mut sets = ids("SELECT s.id FROM finding_sets s JOIN runs r ON r.key = s.run")?;
    sets.extend(ids(
        "SELECT e.finding_set FROM run_ends e JOIN runs r ON r.key = e.run",
    )?);
    let mut st = conn
        .prepare(
            "SELECT b.id, b.count, b.cols FROM blocks b JOIN runs r ON r.key = b.run
                 ORDER BY b.id",
        )
        .map_err(e())?;
    let blocks = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, Option<Vec<u8>>>(2)?,
            ))
        })
        .map_err(e())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(e())?;
    Ok((runs, ends, sets, blocks))
}

/// Per pack, the offsets of the blocks the index names and the bytes they cover (headers
/// and frames).
fn indexed_extents(v2: &V2) -> Result<HashMap<String, (Vec<u64>, u64)>, StoreError> {
    let e = || sql_err(&v2.index_path);
    let conn = v2.conn()?;
    let mut st = conn
        .prepare(
            "SELECT p.name, b.offset, b.stored_len FROM blocks b
             JOIN packs p ON p.id = b.pack",
        )
        .map_err(e())?;
    let mut q = st.query([]).map_err(e())?;
    let mut covered: HashMap<String, (Vec<u64>, u64)> = HashMap::new();
    while let Some(r) = q.next().map_err(e())? {
        let entry = covered.entry(r.get(0).map_err(e())?).or_default();
        entry.0.push(r.get::<_, i64>(1).map_err(e())? as u64);
        entry.1 += BLOCK_HEADER_LEN as u64 + r.get::<_, i64>(2).map_err(e())? as u64;
    }
    Ok(covered)
}

/// gc of a format-2 store (module docs), on a store opened alone.
pub(crate) fn gc_two(ctx: &Context, v2: &V2) -> Result<GcReport, StoreError> {
    Collect { ctx }.gc_two(v2)
}

/// A format-2 gc's steps, on what the seam hands a layout.
struct Collect<'a> {
    ctx: &'a Context,
}

impl Collect<'_> {
    fn gc_two(&self, v2: &V2) -> Result<GcReport, StoreError> {
        let backend = self.ctx.backend.as_ref();
        let mut marks = self.mark_two(v2)?;
        let e = || sql_err(&v2.index_path);
        let mut rows: HashMap<String, Vec<Row>> = HashMap::new();
        {
            let conn = v2.conn()?;
            let mut st = conn
                .prepare(
                    "SELECT p.name, b.id, b.offset, b.count, b.cols FROM blocks b
                     JOIN packs p ON p.id = b.pack ORDER BY p.name, b.offset",
                )
                .map_err(e())?;
            let mut q = st.query([]).map_err(e())?;
            while let Some(r) = q.next().map_err(e())? {
                rows.entry(r.get(0).map_err(e())?).or_default().push(Row {
                    id: r.get(1).map_err(e())?,
                    offset: r.get::<_, i64>(2).map_err(e())? as u64,
                    count: r.get(3).map_err(e())?,
                    cols: r.get(4).map_err(e())?,
                });
            }
        }
        let mut report = GcReport::default();
        let mut pending = Pending::default();
        let mut rewritten: Vec<String> = Vec::new();
        let mut tails: Vec<(String, u64)> = Vec::new();
        let mut created: Vec<String> = Vec::new();
        let mut operations: HashMap<Digest, String> = HashMap::new();
        let written = (|| -> Result<(), StoreError> {
            for pack in backend.packs()? {
                let here = rows.remove(&pack).unwrap_or_default();
                let plan = sweep_pack(backend, v2.dicts(), &pack, &here, &mut marks, &mut pending)?;
                if let Some(why) = plan.fault {
                    report.packs_left.push(format!("pack {pack}: {why}"));
                    continue;
                }
                report.objects_removed += plan.dropped;
                report.duplicates_dropped += plan.duplicates;
                if plan.untouched() {
                    if let Some(at) = plan.tail {
                        tails.push((pack, at));
                    }
                    continue;
                }
                report.torn_tails_dropped += u64::from(plan.tail.is_some());
                report.bytes_before += backend.pack_len(&pack)?;
                let replacement = self.rewrite_pack_two(
                    v2,
                    &pack,
                    &plan,
                    &here,
                    &mut pending,
                    &mut operations,
                    &mut created,
                )?;
                if let Some(name) = replacement {
                    report.bytes_after += backend.pack_len(&name)?;
                }
                rewritten.push(pack);
            }
            Ok(())
        })();
        let committed = written.and_then(|()| commit(v2, &pending, &rewritten));
        let gone = match committed {
            Ok(gone) => gone,
            Err(err) => {
                // Nothing names the copies: the store is as it was without them.
                let _ = backend.seal();
                for name in &created {
                    let _ = backend.remove_pack(name);
                }
                v2.forget();
                return Err(err);
            }
        };
        v2.forget();
        // Only now, with the index naming the copies, may the old packs go.
        for pack in &gone {
            backend.remove_pack(pack)?;
        }
        for (pack, at) in tails {
            if at == 0 {
                backend.remove_pack(&pack)?;
            } else {
                backend.truncate(&pack, at)?;
            }
            report.torn_tails_dropped += 1;
        }
        report.packs_rewritten = rewritten.len() as u64;
        report.objects_kept = {
            let conn = v2.conn()?;
            conn.query_row("SELECT coalesce(sum(count), 0) FROM blocks", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(e())? as u64
        };
        Ok(report)
    }

    /// Every object some run reaches (module docs, step 1).
    fn mark_two(&self, v2: &V2) -> Result<Marks, StoreError> {
        let backend = self.ctx.backend.as_ref();
        let mut marks = Marks::default();
        // Whether `id` was not marked before.
        let mut mark = |id: &Digest| marks.insert(prefix(id), false).is_none();
        let (runs, ends, sets, blocks) = gc_roots(v2)?;
        // Objects whose payloads are read for what they name (`follow_references`): run
        // starts (the files a run read), run ends (their series), finding sets, and the
        // test cases the exchange blocks name (a changed case names its accepted one).
        // In the order found (the order of the blocks), each once.
        let mut todo: Vec<Digest> = Vec::new();
        for id in runs.iter().chain(&ends).chain(&sets) {
            if mark(id) {
                todo.push(*id);
            }
        }
        // The exchange of each run: its interactions, their test cases and body blobs. A
        // block that cannot be read stops gc: what it names cannot be known.
        for (block, count, cols) in blocks {
            let parsed = v2.block(backend, block)?;
            let decoded = cols
                .as_deref()
                .ok_or_else(|| "no query columns".to_owned())
                .and_then(|c| cols::decode(c, count))
                .and_then(|c| {
                    if c.len() == parsed.len() {
                        Ok(c)
                    } else {
                        Err(format!("columns for {} objects", c.len()))
                    }
                });
            match decoded {
                Ok(cols) => {
                    for (ordinal, col) in cols.iter().enumerate() {
                        let Col::Interaction {
                            case,
                            request,
                            response,
                            ..
                        } = *col
                        else {
                            continue;
                        };
                        mark(&parsed.ids()[ordinal]);
                        if let Some(id) = cols::resolve(&parsed, case) {
                            if mark(&id) {
                                todo.push(id);
                            }
                        }
                        for r in [request, response].into_iter().flatten() {
                            if let Some(id) = cols::resolve(&parsed, r) {
                                mark(&id);
                            }
                        }
                    }
                }
                // Columns are derived data: the objects themselves say the same.
                Err(_) => {
                    for (ordinal, id) in parsed.ids().iter().enumerate() {
                        if parsed.kind(ordinal as u32) != Some(ObjectKind::Interaction.tag()) {
                            continue;
                        }
                        let (_, payload) = parsed.restore(ordinal as u32).map_err(|e| {
                            StoreError::DamagedObject {
                                id: *id,
                                reason: e.to_string(),
                            }
                        })?;
                        if let IndexRow::Interaction {
                            case,
                            request_body,
                            response_body,
                            ..
                        } = row_of_payload(ObjectKind::Interaction, *id, &payload)?
                        {
                            mark(id);
                            if mark(&case.0) {
                                todo.push(case.0);
                            }
                            for body in request_body.iter().chain(&response_body) {
                                mark(&body.0);
                            }
                        }
                    }
                }
            }
        }
        // Blocks no index row names (a writer killed between its append and its commit)
        // are kept; so is all they may name: every object in them and every id their
        // payloads carry from elsewhere (their external ids). Only packs whose indexed
        // blocks do not cover the whole file are read for them.
        let covered = indexed_extents(v2)?;
        for pack in backend.packs()? {
            let (mut offsets, bytes) = covered.get(&pack).cloned().unwrap_or_default();
            offsets.sort_unstable();
            if bytes + PACK_HEADER_LEN as u64 == backend.pack_len(&pack)? {
                continue;
            }
            scan_pack(backend, &pack, &mut |item| {
                let ScanItem::Block {
                    offset,
                    header,
                    frame,
                } = item
                else {
                    return Ok(());
                };
                if offsets.binary_search(&offset).is_ok() {
                    return Ok(());
                }
                let bytes = whole::block_bytes(&header, &frame);
                // A block that does not open leaves its pack as it is (the sweep).
                if let Ok(parsed) = whole::open_block(&bytes, v2.dicts()) {
                    for id in parsed.ids().iter().chain(parsed.external()) {
                        mark(id);
                    }
                }
                Ok(())
            })?;
        }
        follow_references(
            &|id| v2.read(self.ctx.backend.as_ref(), id),
            todo,
            &mut |id| marks.insert(prefix(id), false).is_none(),
        )?;
        Ok(marks)
    }

    /// Writes what gc keeps of `pack` into its replacement (module docs, step 2); gives the
    /// replacement's name, `None` when nothing is kept.
    #[allow(clippy::too_many_arguments)]
    fn rewrite_pack_two(
        &self,
        v2: &V2,
        pack: &str,
        plan: &PackPlan,
        rows: &[Row],
        pending: &mut Pending,
        operations: &mut HashMap<Digest, String>,
        created: &mut Vec<String>,
    ) -> Result<Option<String>, StoreError> {
        let backend = self.ctx.backend.as_ref();
        backend.seal_replacing(pack)?;
        let mut open = OpenBlocks::default();
        let mut out = Output::default();
        let cols_of: HashMap<i64, &Row> = rows.iter().map(|r| (r.id, r)).collect();
        for b in &plan.blocks {
            let bytes = backend.read_at(pack, b.offset, b.len)?;
            match &b.fate {
                Fate::Copy { id } => {
                    // Kept where it was in the order of the pack: what was open goes first.
                    open.seal_older(&Stream::ALL, std::time::Duration::ZERO)?;
                    out.items
                        .extend(open.take_sealed().into_iter().map(Item::New));
                    out.items.push(Item::Copy { id: *id, bytes });
                }
                Fate::Rewrite { id, kept } => {
                    if let Some(id) = id {
                        pending.deleted.push(*id);
                    }
                    let parsed = whole::open_block(&bytes, v2.dicts()).map_err(|reason| {
                        StoreError::Damaged {
                            pack: pack.to_owned(),
                            offset: b.offset,
                            reason,
                        }
                    })?;
                    // An interaction's columns carry its case's operation: from the old
                    // columns when they say it.
                    let old_cols = id
                        .and_then(|id| cols_of.get(&id))
                        .and_then(|r| r.cols.as_deref().map(|c| (c, r.count)))
                        .and_then(|(c, n)| cols::decode(c, n).ok())
                        .filter(|c| c.len() == parsed.len());
                    for &ordinal in kept {
                        let id = parsed.ids()[ordinal as usize];
                        let (tag, payload) =
                            parsed
                                .restore(ordinal)
                                .map_err(|e| StoreError::DamagedObject {
                                    id,
                                    reason: e.to_string(),
                                })?;
                        // The sweep copies blocks with kinds it does not know whole.
                        let kind = ObjectKind::from_tag(tag).ok_or_else(|| {
                            StoreError::Other(format!("object {id}: kind {tag} unknown"))
                        })?;
                        let row = row_of_payload(kind, id, &payload)?;
                        let operation = match &row {
                            IndexRow::Case { operation, .. } => {
                                operations.insert(id, operation.clone());
                                String::new()
                            }
                            IndexRow::Interaction { case, .. } => {
                                let from_cols =
                                    old_cols
                                        .as_ref()
                                        .and_then(|c| match c.get(ordinal as usize) {
                                            Some(Col::Interaction { operation, .. }) => {
                                                v2.string_of(*operation).ok().map(|s| s.to_string())
                                            }
                                            _ => None,
                                        });
                                match (from_cols, operations.get(&case.0)) {
                                    (Some(op), _) => op,
                                    (None, Some(op)) => op.clone(),
                                    (None, None) => {
                                        let op = v2.case_operation(backend, &case.0)?;
                                        operations.insert(case.0, op.clone());
                                        op
                                    }
                                }
                            }
                            _ => String::new(),
                        };
                        let object = EncodedObject {
                            kind,
                            id,
                            payload,
                            row,
                        };
                        open.add(&object, &operation)?;
                    }
                    out.items
                        .extend(open.take_sealed().into_iter().map(Item::New));
                }
            }
            if out.bytes() >= APPEND_BYTES {
                out.append(v2, backend, pending, created)?;
            }
        }
        open.seal_older(&Stream::ALL, std::time::Duration::ZERO)?;
        out.items
            .extend(open.take_sealed().into_iter().map(Item::New));
        out.append(v2, backend, pending, created)?;
        backend.seal()?;
        Ok(out.name)
    }
}

/// A block bound for the replacement pack.
enum Item {
    New(Sealed),
    Copy { id: i64, bytes: Vec<u8> },
}

impl Item {
    fn bytes(&self) -> &[u8] {
        match self {
            Item::New(s) => s.bytes(),
            Item::Copy { bytes, .. } => bytes,
        }
    }
}

/// Blocks waiting for an append to the replacement pack, and its name once made.
#[derive(Default)]
struct Output {
    items: Vec<Item>,
    name: Option<String>,
}

impl Output {
    fn bytes(&self) -> usize {
        self.items.iter().map(|i| i.bytes().len()).sum()
    }

    /// Appends the waiting blocks durably and notes their rows for the commit.
    fn append(
        &mut self,
        v2: &V2,
        backend: &dyn ObjectBackend,
        pending: &mut Pending,
        created: &mut Vec<String>,
    ) -> Result<(), StoreError> {
        if self.items.is_empty() {
            return Ok(());
        }
        let all: Vec<u8> = self
            .items
            .iter()
            .flat_map(|i| i.bytes().iter().copied())
            .collect();
        let (name, first) = backend.append(&all)?;
        if self.name.as_deref() != Some(name.as_str()) {
            created.push(name.clone());
            self.name = Some(name.clone());
        }
        let mut offset = first;
        // Strings are interned now, outside the commit: a row of `strings` nothing names
        // is harmless, and the commit stays a few statements per block.
        let mut intern = |text: &str| -> Result<i64, StoreError> {
            let conn = v2.conn()?;
            index2::string_key(&conn, text).map_err(sql_err(&v2.index_path))
        };
        for item in std::mem::take(&mut self.items) {
            let len = item.bytes().len() as u64;
            match item {
                Item::Copy { id, .. } => pending.moved.push((id, name.clone(), offset)),
                Item::New(sealed) => {
                    let (row, meta, _) = sealed.into_row(offset, &mut intern)?;
                    let n = pending.new.len();
                    for (ordinal, id, row) in &meta {
                        let kind = match row {
                            IndexRow::RunStart(_) => ObjectKind::RunStart,
                            IndexRow::RunEnd { .. } => ObjectKind::RunEnd,
                            _ => ObjectKind::FindingSet,
                        };
                        pending.meta.push((kind, *id, MetaAt::New(n, *ordinal)));
                    }
                    pending.new.push(NewRow {
                        pack: name.clone(),
                        row,
                        meta,
                    });
                }
            }
            offset += len;
        }
        Ok(())
    }
}

/// The block a scan item of a pack gc sweeps is; `None` for anything else, noted in `plan`
/// (a torn tail's offset, anything else the fault that leaves the pack as it is).
fn block_of(item: ScanItem, plan: &mut PackPlan) -> Option<(u64, BlockHeader, Vec<u8>)> {
    match item {
        ScanItem::Block {
            offset,
            header,
            frame,
        } => return Some((offset, header, frame)),
        ScanItem::TornTail { offset, .. } => plan.tail = Some(offset),
        ScanItem::Damaged { offset, .. } => {
            plan.fault = Some(format!("damaged block at offset {offset}"));
        }
        ScanItem::Garbage { offset, len } => {
            plan.fault = Some(format!(
                "{len} bytes that are not blocks at offset {offset}"
            ));
        }
        ScanItem::TooNew { version } => {
            plan.fault = Some(format!("format {version}, newer than this probe writes"));
        }
        ScanItem::NotAPack => plan.fault = Some("not a format-2 pack".into()),
    }
    None
}

/// The index row of the block at `offset` (`rows` in offset order, `next` the first not
/// yet met): `Some(None)` when the index names no block there, `None` when it names one
/// where no block starts (the fault noted in `plan`).
fn block_row_at<'r>(
    rows: &'r [Row],
    next: &mut usize,
    offset: u64,
    plan: &mut PackPlan,
) -> Option<Option<&'r Row>> {
    match rows.get(*next) {
        Some(r) if r.offset < offset => {
            plan.fault = Some(format!(
                "the index places block {} at offset {}, where no block starts",
                r.id, r.offset
            ));
            None
        }
        Some(r) if r.offset == offset => {
            *next += 1;
            Some(Some(r))
        }
        _ => Some(None),
    }
}

/// Reads `pack` block by block and decides each block's fate (module docs, step 2),
/// taking the first copies it keeps in `marks` (given back when the pack is left).
fn sweep_pack(
    backend: &dyn ObjectBackend,
    dicts: &super::dicts::DictionaryCache,
    pack: &str,
    rows: &[Row],
    marks: &mut Marks,
    pending: &mut Pending,
) -> Result<PackPlan, StoreError> {
    let mut plan = PackPlan::default();
    // Marks changed here: (prefix, whether it was reached) to give back on a fault.
    let mut taken: Vec<(Prefix, bool)> = Vec::new();
    let mut metas: Vec<(ObjectKind, Digest, MetaAt)> = Vec::new();
    let mut next = 0usize;
    scan_pack(backend, pack, &mut |item| {
        if plan.fault.is_some() {
            return Ok(());
        }
        let Some((offset, header, frame)) = block_of(item, &mut plan) else {
            return Ok(());
        };
        let Some(row) = block_row_at(rows, &mut next, offset, &mut plan) else {
            return Ok(());
        };
        let bytes = whole::block_bytes(&header, &frame);
        let parsed = match whole::open_block(&bytes, dicts) {
            Ok(parsed) => parsed,
            Err(why) => {
                plan.fault = Some(format!("block at offset {offset}: {why}"));
                return Ok(());
            }
        };
        let len = bytes.len() as u64;
        let ids = parsed.ids();
        let unknown =
            (0..ids.len() as u32).any(|o| parsed.kind(o).and_then(ObjectKind::from_tag).is_none());
        if unknown && row.is_none() {
            plan.fault = Some(format!(
                "the block at offset {offset}, not in the index, holds kinds this probe does \
                 not know"
            ));
            return Ok(());
        }
        let (mut dropped, mut duplicates) = (0u64, 0u64);
        let mut kept = Vec::with_capacity(ids.len());
        let named_locally = parsed.named_locally();
        for (ordinal, id) in ids.iter().enumerate() {
            let p = prefix(id);
            let keep = match marks.get_mut(&p) {
                Some(done) if !*done => {
                    *done = true;
                    taken.push((p, true));
                    true
                }
                // A second copy that a later object of its block names by its ordinal stays:
                // dropped, it would be named by its 32-byte id, which does not compress
                // (measured: two same-seed demo runs grew 8.6% when gc dropped these).
                Some(_) if named_locally.get(ordinal).copied().unwrap_or(false) => true,
                Some(_) => {
                    duplicates += 1;
                    false
                }
                // Not in the index: kept (a stale index must not delete data), once.
                None if row.is_none() => {
                    marks.insert(p, true);
                    taken.push((p, false));
                    true
                }
                // Kinds of a newer minor: this build cannot know what they reach.
                None if unknown => true,
                None => {
                    dropped += 1;
                    false
                }
            };
            if keep {
                kept.push(ordinal as u32);
            }
        }
        let fate = match row {
            // A block with a kind this build cannot re-encode stays whole.
            Some(r) if kept.len() == ids.len() || unknown => Fate::Copy { id: r.id },
            _ => Fate::Rewrite {
                id: row.map(|r| r.id),
                kept: kept.clone(),
            },
        };
        if let Fate::Rewrite { .. } = fate {
            plan.dropped += dropped;
            plan.duplicates += duplicates;
        }
        if let Fate::Copy { id } = fate {
            for &ordinal in &kept {
                if let Some(kind) = parsed.kind(ordinal).and_then(ObjectKind::from_tag) {
                    if is_meta(kind) {
                        metas.push((kind, ids[ordinal as usize], MetaAt::Old(id, ordinal)));
                    }
                }
            }
        }
        plan.blocks.push(Planned { offset, len, fate });
        Ok(())
    })?;
    if plan.fault.is_none() {
        if let Some(r) = rows.get(next) {
            plan.fault = Some(format!(
                "the index places block {} at offset {}, past the pack's last block",
                r.id, r.offset
            ));
        }
    }
    if plan.fault.is_some() {
        for (p, reached) in taken {
            if reached {
                marks.insert(p, false);
            } else {
                marks.remove(&p);
            }
        }
        return Ok(PackPlan {
            fault: plan.fault,
            ..PackPlan::default()
        });
    }
    pending.meta.extend(metas);
    Ok(plan)
}

/// The index side of gc, in one transaction (module docs, step 3); gives the old packs no
/// block row names any more, to delete.
fn commit(v2: &V2, pending: &Pending, rewritten: &[String]) -> Result<Vec<String>, StoreError> {
    let e = || sql_err(&v2.index_path);
    let mut conn = v2.conn()?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(e())?;
    for id in &pending.deleted {
        tx.execute("DELETE FROM blocks WHERE id = ?1", [id])
            .map_err(e())?;
        tx.execute("DELETE FROM dicts WHERE block = ?1", [id])
            .map_err(e())?;
    }
    for (id, pack, offset) in &pending.moved {
        let key = index2::pack_key(&tx, pack).map_err(e())?;
        tx.execute(
            "UPDATE blocks SET pack = ?2, offset = ?3 WHERE id = ?1",
            params![id, key, *offset as i64],
        )
        .map_err(e())?;
    }
    // Meta blocks first: a run start rewritten from a block the index did not name gets its
    // `runs` row before the exchange blocks filed under it.
    let mut block_of: Vec<i64> = vec![0; pending.new.len()];
    let mut order: Vec<usize> = (0..pending.new.len()).collect();
    order.sort_by_key(|n| pending.new[*n].row.stream != Stream::Meta);
    for n in order {
        let new = &pending.new[n];
        let key = index2::pack_key(&tx, &new.pack).map_err(e())?;
        let block = index2::insert_block(&tx, key, &new.row).map_err(e())?;
        block_of[n] = block;
        for (ordinal, id, row) in &new.meta {
            index_meta(&tx, id, row, block, *ordinal).map_err(e())?;
        }
    }
    // Every meta row at its kept copy (the row may have named a copy dropped).
    for (kind, id, at) in &pending.meta {
        let (block, ordinal) = match *at {
            MetaAt::Old(block, ordinal) => (block, ordinal),
            MetaAt::New(n, ordinal) => (block_of[n], ordinal),
        };
        let table = match kind {
            ObjectKind::RunStart => "runs",
            ObjectKind::RunEnd => "run_ends",
            _ => "finding_sets",
        };
        tx.execute(
            &format!("UPDATE {table} SET block = ?2, ordinal = ?3 WHERE id = ?1"),
            params![id.0.as_slice(), block, ordinal],
        )
        .map_err(e())?;
    }
    let mut gone = Vec::new();
    for pack in rewritten {
        let named: i64 = tx
            .query_row(
                "SELECT count(*) FROM blocks b JOIN packs p ON p.id = b.pack WHERE p.name = ?1",
                [pack],
                |r| r.get(0),
            )
            .map_err(e())?;
        if named == 0 {
            tx.execute("DELETE FROM packs WHERE name = ?1", [pack])
                .map_err(e())?;
            gone.push(pack.clone());
        }
    }
    tx.commit().map_err(e())?;
    Ok(gone)
}
