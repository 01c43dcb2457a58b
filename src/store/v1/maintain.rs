//! Format 1's maintenance: verify (every record re-hashed, the index against the packs),
//! reindex (the index rebuilt from the packs in one transaction), stats (from the index)
//! and gc (each pack holding what no run reaches rewritten into one that takes its
//! place). The facade calls them through the seam (`seam::Layout`); what every layout's
//! maintenance shares is `store::maintenance`.
//!
//! Depends on: `store::{context, dict, error, format, index, maintenance, object, pack,
//! reports, seam}`, `ids`, `v1::layout`.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::{Arc, MutexGuard};

use rusqlite::Connection;

use crate::ids::{Digest, IdSet};
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::format::{ObjectKind, RecordHeader, PACK_HEADER_LEN};
use crate::store::index::{self, sql_err, LocatedRow, RowAt, RunSummary};
use crate::store::maintenance::{
    check_refs_and_runs, follow_references, kind_name, refs_of, stats_of, Ref,
};
use crate::store::object::{open_record, row_of_payload, IndexRow, RecordFault};
use crate::store::pack::{scan_pack, ScanItem};
use crate::store::reports::{GcReport, Problem, ReindexReport, StoreStats, VerifyReport};
use crate::store::seam::Layout;

use super::layout::V1;

/// A format-1 store's maintenance: what the seam hands a layout, and the layout itself.
pub(crate) struct One<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) v1: &'a V1,
}

/// The maintenance reads the context's fields as its own (`self.backend`).
impl Deref for One<'_> {
    type Target = Context;

    fn deref(&self) -> &Context {
        self.ctx
    }
}

impl One<'_> {
    fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.v1.conn()
    }

    fn index_schema(&self) -> Result<MutexGuard<'_, u32>, StoreError> {
        self.v1
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))
    }

    fn dict(&self, id: u32) -> Option<Arc<Vec<u8>>> {
        self.v1.dict(&self.ctx.dicts_dir(), id)
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        self.v1.check_writable(&self.ctx.index_path)
    }

    fn read_payload(&self, id: Digest) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        self.v1.read(self.ctx, id)
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.v1.summaries(self.ctx, None)
    }
}

impl One<'_> {
    /// [`crate::store::Store::verify`] of a format-1 store: every record in every pack re-hashed, the
    /// index against the packs, every reference between objects.
    pub(crate) fn verify_one(&self, report: &mut VerifyReport) -> Result<(), StoreError> {
        let inner = self;
        // Valid records: id → kind tag, and the (pack, offset) of every valid copy.
        let mut valid: HashMap<Digest, u8> = HashMap::new();
        let mut at: HashMap<(String, u64), Digest> = HashMap::new();
        let mut first_at: HashMap<Digest, (String, u64)> = HashMap::new();
        let mut refs: Vec<Ref> = Vec::new();
        let mut duplicates = 0u64;
        for pack in inner.backend.packs()? {
            report.packs += 1;
            scan_pack(inner.backend.as_ref(), &pack, &mut |item| {
                match item {
                    ScanItem::Record {
                        offset,
                        header,
                        data,
                    } => {
                        report.objects += 1;
                        let dict = inner.dict(header.dict);
                        match open_record(&header, &data, dict.as_deref().map(|d| d.as_slice())) {
                            Err(f) => report.problems.push(Problem {
                                id: Some(header.id),
                                message: format!(
                                    "object {} ({}) in pack {pack} at offset {offset}: {}",
                                    header.id,
                                    kind_name(header.kind_tag),
                                    fault_text(&f)
                                ),
                            }),
                            Ok(payload) => {
                                at.insert((pack.clone(), offset), header.id);
                                first_at.entry(header.id).or_insert_with(|| (pack.clone(), offset));
                                if valid.insert(header.id, header.kind_tag).is_some() {
                                    duplicates += 1;
                                } else if let Some(kind) = ObjectKind::from_tag(header.kind_tag) {
                                    if let Err(e) = refs_of(kind, header.id, &payload, &mut refs) {
                                        report.problems.push(Problem {
                                            id: Some(header.id),
                                            message: e.to_string(),
                                        });
                                    }
                                }
                            }
                        }
                    }
                    ScanItem::TornTail { offset, len } => report.notes.push(format!(
                        "pack {pack}: torn tail of {len} bytes at offset {offset} ignored (a writer was interrupted)"
                    )),
                    ScanItem::Garbage { offset, len } => report.problems.push(Problem {
                        id: None,
                        message: format!(
                            "pack {pack}: {len} unreadable bytes from offset {offset} (no record header)"
                        ),
                    }),
                    ScanItem::TooNew { version } => report.problems.push(Problem {
                        id: None,
                        message: format!("pack {pack} is object format {version}, newer than this probe reads"),
                    }),
                    ScanItem::NotAPack => report.problems.push(Problem {
                        id: None,
                        message: format!("pack {pack} does not start with a pack header"),
                    }),
                }
                Ok(())
            })?;
        }
        if duplicates > 0 {
            report.notes.push(format!(
                "{duplicates} objects are stored more than once (harmless; gc keeps one)"
            ));
        }
        // The index against the packs.
        let indexed = {
            let conn = inner.conn()?;
            index::all_objects(&conn).map_err(sql_err(&inner.index_path))?
        };
        let mut in_index: HashSet<Digest> = HashSet::with_capacity(indexed.len());
        // Per pack, the offset of the last record the index names: records after it were
        // appended by a writer that died before its index commit.
        let mut last_indexed: HashMap<String, u64> = HashMap::new();
        for (id, tag, pack, offset) in indexed {
            in_index.insert(id);
            let last = last_indexed.entry(pack.clone()).or_insert(0);
            *last = (*last).max(offset);
            if at.get(&(pack.clone(), offset)) != Some(&id) {
                let message = if valid.contains_key(&id) {
                    format!(
                        "object {id} ({}): the index points at pack {pack} offset {offset}, where it is not; a valid copy exists elsewhere (`probe store reindex` repairs this)",
                        kind_name(tag)
                    )
                } else {
                    format!(
                        "object {id} ({}) is in the index (pack {pack} offset {offset}) but no valid copy is in any pack",
                        kind_name(tag)
                    )
                };
                report.problems.push(Problem {
                    id: Some(id),
                    message,
                });
            }
        }
        let mut unindexed: Vec<(&Digest, &u8)> = valid
            .iter()
            .filter(|(id, _)| !in_index.contains(id))
            .collect();
        unindexed.sort();
        let mut uncommitted = 0u64;
        for (id, tag) in unindexed {
            let tail = first_at.get(id).is_some_and(|(pack, offset)| {
                last_indexed.get(pack).is_none_or(|last| offset > last)
            });
            if tail {
                uncommitted += 1;
                continue;
            }
            report.problems.push(Problem {
                id: Some(*id),
                message: format!(
                    "object {id} ({}) is in a pack but not in the index (`probe store reindex` repairs this)",
                    kind_name(*tag)
                ),
            });
        }
        if uncommitted > 0 {
            report.notes.push(format!(
                "{uncommitted} objects at the end of packs were written but never indexed (a writer was interrupted before its index commit; harmless, `probe store reindex` indexes them)"
            ));
        }
        check_refs_and_runs(&refs, &valid, &self.runs()?, report)
    }

    /// [`Store::rebuild_index`] of a format-1 store.
    pub(crate) fn rebuild_index_one(&self) -> Result<ReindexReport, StoreError> {
        let inner = self;
        let path = inner.index_path.clone();
        let e = || sql_err(&path);
        let mut conn = inner.conn()?;
        let mut schema = inner.index_schema()?;
        if *schema > index::INDEX_SCHEMA_VERSION {
            *conn = rusqlite::Connection::open_in_memory().map_err(e())?;
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            let (fresh, version) = index::open(&path)?;
            *conn = fresh;
            *schema = version;
        }
        drop(schema);
        // Random-key inserts want a big page cache.
        conn.execute_batch("PRAGMA cache_size=-65536;")
            .map_err(e())?;
        let mut report = ReindexReport::default();
        let tx = conn.transaction().map_err(e())?;
        index::clear(&tx).map_err(e())?;
        for pack in inner.backend.packs()? {
            report.packs += 1;
            let pack_id = index::pack_id(&tx, &pack).map_err(e())?;
            scan_pack(inner.backend.as_ref(), &pack, &mut |item| {
                match item {
                    ScanItem::Record {
                        offset,
                        header,
                        data,
                    } => {
                        let dict = inner.dict(header.dict);
                        match open_record(&header, &data, dict.as_deref().map(|d| d.as_slice())) {
                            Err(f) => report.skipped.push(format!(
                                "object {} in pack {pack} at offset {offset}: {}",
                                header.id,
                                fault_text(&f)
                            )),
                            Ok(payload) => {
                                let row = match ObjectKind::from_tag(header.kind_tag) {
                                    Some(kind) => match row_of_payload(kind, header.id, &payload) {
                                        Ok(row) => row,
                                        Err(err) => {
                                            report.skipped.push(err.to_string());
                                            return Ok(());
                                        }
                                    },
                                    // A kind of a newer minor: keep its location only.
                                    None => IndexRow::None,
                                };
                                report.objects += 1;
                                index::insert_object(&tx, pack_id, offset, &header, &row)
                                    .map_err(e())?;
                            }
                        }
                    }
                    ScanItem::TornTail { .. } => report.torn_tails += 1,
                    ScanItem::Garbage { offset, len } => report.skipped.push(format!(
                        "pack {pack}: {len} unreadable bytes from offset {offset}"
                    )),
                    ScanItem::TooNew { version } => report
                        .skipped
                        .push(format!("pack {pack}: object format {version} is too new")),
                    ScanItem::NotAPack => report.skipped.push(format!("{pack} is not a pack")),
                }
                Ok(())
            })?;
        }
        index::fill_operations(&tx).map_err(e())?;
        index::index_interaction_ids(&tx).map_err(e())?;
        tx.commit().map_err(e())?;
        Ok(report)
    }

    /// [`Store::stats`] of a format-1 store, from its index.
    pub(crate) fn stats_one(&self) -> Result<StoreStats, StoreError> {
        let inner = self;
        let (totals, blob_refs) = {
            let conn = inner.conn()?;
            let e = || sql_err(&inner.index_path);
            (
                index::kind_totals(&conn).map_err(e())?,
                index::blob_references(&conn).map_err(e())?,
            )
        };
        stats_of(self.ctx, totals, blob_refs)
    }

    /// Every object some run reaches: the index tables name the runs and the objects of
    /// their exchanges; [`follow_references`] reads the objects that name others (run
    /// starts and ends, finding sets, test cases) for the rest.
    fn reachable(&self) -> Result<IdSet<Digest>, StoreError> {
        let conn = self.conn()?;
        let e = || sql_err(&self.index_path);
        let mut out = IdSet::default();
        // Each query's ids, and whether their payloads are read for what they name (an
        // interaction's names are its row's `case_id` and body columns, read here).
        let queries = [
            ("SELECT id FROM runs", true),
            ("SELECT document FROM runs", false),
            ("SELECT i.id FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id", false),
            ("SELECT i.case_id FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id", true),
            ("SELECT i.request_body FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id WHERE i.request_body IS NOT NULL", false),
            ("SELECT i.response_body FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id WHERE i.response_body IS NOT NULL", false),
            ("SELECT e.id FROM run_ends e JOIN runs r ON r.id = e.run", true),
            ("SELECT e.finding_set FROM run_ends e JOIN runs r ON r.id = e.run", true),
            ("SELECT s.id FROM finding_sets s JOIN runs r ON r.id = s.run", true),
        ];
        // In the order the queries give (the order of the store), each once; an object to
        // read is found only by queries that read (a finding set by two of them).
        let mut todo: Vec<Digest> = Vec::new();
        for (q, read) in queries {
            let mut st = conn.prepare(q).map_err(e())?;
            let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).map_err(e())?;
            for row in rows {
                let bytes = row.map_err(e())?;
                if let Ok(arr) = <[u8; 32]>::try_from(bytes.as_slice()) {
                    if out.insert(Digest(arr)) && read {
                        todo.push(Digest(arr));
                    }
                }
            }
        }
        drop(conn);
        follow_references(&|id| self.read_payload(id), todo, &mut |id| out.insert(*id))?;
        Ok(out)
    }

    /// [`ExclusiveStore::gc`] of a format-1 store.
    pub(crate) fn gc_one(&self) -> Result<GcReport, StoreError> {
        let inner = self;
        inner.check_writable()?;
        let mut report = GcReport::default();
        let reachable = self.reachable()?;
        let (mut rows, names) = {
            let conn = inner.conn()?;
            let e = || sql_err(&inner.index_path);
            (
                index::located_rows(&conn).map_err(e())?,
                index::pack_names(&conn).map_err(e())?,
            )
        };
        let on_disk = inner.backend.packs()?;
        let pack_ids: HashMap<&str, i64> = names.iter().map(|(id, n)| (n.as_str(), *id)).collect();
        let existing: HashSet<i64> = on_disk
            .iter()
            .filter_map(|p| pack_ids.get(p.as_str()).copied())
            .collect();
        rows.sort_unstable_by_key(|r| (r.pack, r.offset));
        // Objects the index places in a pack that exists: another copy of one is a duplicate.
        let in_index: IdSet<Digest> = rows
            .iter()
            .filter(|r| existing.contains(&r.pack))
            .map(|r| r.id)
            .collect();
        let doomed = |r: &LocatedRow| {
            // Kinds of a newer minor are kept: this build cannot know what they reach.
            !reachable.contains(&r.id) && ObjectKind::from_tag(r.kind_tag).is_some()
        };
        // Each pack's rows (a range of `rows`), the bytes of the records they name, and
        // whether any is unreachable.
        let mut named: HashMap<i64, (std::ops::Range<usize>, u64, bool)> = HashMap::new();
        for (at, r) in rows.iter().enumerate() {
            let e = named.entry(r.pack).or_insert((at..at, 0, false));
            e.0.end = at + 1;
            e.1 += crate::store::format::RECORD_HEADER_LEN as u64 + u64::from(r.stored_len);
            e.2 |= doomed(r);
        }
        let mut kept_unindexed: IdSet<Digest> = IdSet::default();
        let mut rewrites: Vec<(String, Rewrite)> = Vec::new();
        let mut created: Vec<String> = Vec::new();
        let rewritten = (|| -> Result<(), StoreError> {
            for pack in &on_disk {
                let len = inner.backend.pack_len(pack)?;
                let here = pack_ids.get(pack.as_str()).and_then(|id| named.get(id));
                // Every byte a record the index names, and every record reachable: as is.
                if here.is_some_and(|(_, bytes, any_doomed)| {
                    !any_doomed && bytes + PACK_HEADER_LEN as u64 == len
                }) {
                    continue;
                }
                let pack_rows = here.map_or(&rows[0..0], |(range, ..)| &rows[range.clone()]);
                let rewrite = self.rewrite_pack(
                    pack,
                    pack_rows,
                    &doomed,
                    &in_index,
                    &mut kept_unindexed,
                    &mut created,
                )?;
                if let Some(reason) = &rewrite.fault {
                    report.packs_left.push(format!("pack {pack}: {reason}"));
                    continue;
                }
                report.bytes_before += len;
                if let Some(name) = &rewrite.replacement {
                    report.bytes_after += inner.backend.pack_len(name)?;
                }
                rewrites.push((pack.clone(), rewrite));
            }
            Ok(())
        })();
        let committed = rewritten.and_then(|()| self.commit_gc(&rewrites));
        if let Err(e) = committed {
            // Nothing names the copies: the store is as it was without them.
            let _ = inner.backend.seal();
            for name in &created {
                let _ = inner.backend.remove_pack(name);
            }
            return Err(e);
        }
        // Only now, with the index naming the copies, may the old packs go.
        for (pack, _) in &rewrites {
            inner.backend.remove_pack(pack)?;
        }
        let removed: u64 = rewrites.iter().map(|(_, r)| r.dropped.len() as u64).sum();
        let inserted: u64 = rewrites.iter().map(|(_, r)| r.inserts.len() as u64).sum();
        report.packs_rewritten = rewrites.len() as u64;
        report.objects_removed = removed;
        report.objects_kept = rows.len() as u64 - removed + inserted;
        report.duplicates_dropped = rewrites.iter().map(|(_, r)| r.duplicates).sum();
        report.torn_tails_dropped = rewrites.iter().map(|(_, r)| r.torn_tails).sum();
        Ok(report)
    }

    /// Copies what gc keeps of `pack` (whose indexed records are `rows`, in offset order)
    /// into a pack that takes its place. A fault leaves the pack as it is: the copy is
    /// removed and what it took from `kept_unindexed` given back.
    fn rewrite_pack(
        &self,
        pack: &str,
        rows: &[LocatedRow],
        doomed: &dyn Fn(&LocatedRow) -> bool,
        in_index: &IdSet<Digest>,
        kept_unindexed: &mut IdSet<Digest>,
        created: &mut Vec<String>,
    ) -> Result<Rewrite, StoreError> {
        let inner = self;
        let backend = inner.backend.as_ref();
        backend.seal_replacing(pack)?;
        let mut out = Rewrite::default();
        let mut taken: Vec<Digest> = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut pending: Vec<(u64, RecordHeader, Keep)> = Vec::new();
        let mut flush = |buf: &mut Vec<u8>,
                         pending: &mut Vec<(u64, RecordHeader, Keep)>,
                         out: &mut Rewrite|
         -> Result<(), StoreError> {
            if buf.is_empty() {
                return Ok(());
            }
            let (name, base) = backend.append(buf)?;
            if out.replacement.as_deref() != Some(name.as_str()) {
                created.push(name.clone());
                out.replacement = Some(name);
            }
            for (rel, header, keep) in pending.drain(..) {
                match keep {
                    Keep::Move(at, id) => out.moves.push((at, id, base + rel, header)),
                    Keep::Insert(row) => out.inserts.push((base + rel, header, row)),
                }
            }
            buf.clear();
            Ok(())
        };
        let mut next = 0usize;
        scan_pack(backend, pack, &mut |item| {
            if out.fault.is_some() {
                return Ok(());
            }
            let Some((offset, header, data)) = record_of(item, &mut out) else {
                return Ok(());
            };
            let Some(indexed) = index_row_at(rows, &mut next, offset, &header, &mut out) else {
                return Ok(());
            };
            let keep = match indexed {
                Some(r) if doomed(r) => {
                    out.dropped.push(r.clone());
                    return Ok(());
                }
                Some(r) => Keep::Move(r.at, r.id),
                None if in_index.contains(&header.id) || kept_unindexed.contains(&header.id) => {
                    out.duplicates += 1;
                    return Ok(());
                }
                // Valid objects the index does not know (a writer died before its commit):
                // kept and indexed, for a stale index must not make gc delete data.
                None => Keep::Insert(IndexRow::None),
            };
            let dict = inner.dict(header.dict);
            let payload = match open_record(&header, &data, dict.as_deref().map(|d| d.as_slice())) {
                Ok(payload) => payload,
                Err(f) => {
                    out.fault = Some(format!(
                        "object {} at offset {offset}: {}",
                        header.id,
                        fault_text(&f)
                    ));
                    return Ok(());
                }
            };
            let keep = match keep {
                Keep::Insert(_) => {
                    kept_unindexed.insert(header.id);
                    taken.push(header.id);
                    Keep::Insert(match ObjectKind::from_tag(header.kind_tag) {
                        Some(kind) => {
                            row_of_payload(kind, header.id, &payload).unwrap_or(IndexRow::None)
                        }
                        None => IndexRow::None,
                    })
                }
                keep => keep,
            };
            pending.push((buf.len() as u64, header, keep));
            buf.extend_from_slice(&header.encode());
            buf.extend_from_slice(&data);
            if buf.len() > GC_APPEND_BYTES {
                flush(&mut buf, &mut pending, &mut out)?;
            }
            Ok(())
        })?;
        if out.fault.is_none() {
            if let Some(r) = rows.get(next) {
                out.fault = Some(format!(
                    "the index places object {} at offset {}, past the pack's last record",
                    r.id, r.offset
                ));
            }
        }
        if out.fault.is_none() {
            flush(&mut buf, &mut pending, &mut out)?;
        }
        backend.seal()?;
        if out.fault.is_some() {
            if let Some(name) = out.replacement.take() {
                backend.remove_pack(&name)?;
                created.retain(|c| *c != name);
            }
            for id in &taken {
                kept_unindexed.remove(id);
            }
            return Ok(Rewrite {
                fault: out.fault,
                ..Rewrite::default()
            });
        }
        Ok(out)
    }

    /// The index side of gc, in one transaction: drops, then moves, then inserts, then the
    /// old packs' names.
    fn commit_gc(&self, rewrites: &[(String, Rewrite)]) -> Result<(), StoreError> {
        let inner = self;
        let e = || sql_err(&inner.index_path);
        let mut conn = inner.conn()?;
        let tx = conn.transaction().map_err(e())?;
        {
            let mut mover = index::Mover::new(&tx);
            let mut dropped_interactions = false;
            for (_, r) in rewrites {
                for row in &r.dropped {
                    dropped_interactions |= matches!(row.at, RowAt::Interaction(_))
                        || row.kind_tag == ObjectKind::Interaction.tag();
                    mover.forget(row.at, &row.id, row.kind_tag).map_err(e())?;
                }
            }
            let mut context = index::InsertContext::default();
            for (_, r) in rewrites {
                let Some(name) = &r.replacement else {
                    continue;
                };
                let pack = index::pack_id(&tx, name).map_err(e())?;
                for (at, id, offset, header) in &r.moves {
                    mover
                        .relocate(*at, id, pack, *offset, header)
                        .map_err(e())?;
                }
                for (offset, header, row) in &r.inserts {
                    index::insert_object_with(&tx, pack, *offset, header, row, &mut context)
                        .map_err(e())?;
                }
            }
            drop(context);
            drop(mover);
            if dropped_interactions {
                index::forget_deleted_interactions(&tx).map_err(e())?;
            }
            for (pack, _) in rewrites {
                tx.execute("DELETE FROM packs WHERE name = ?1", [pack])
                    .map_err(e())?;
            }
        }
        tx.commit().map_err(e())
    }
}

/// Records gc moves out of one pack into a pack that takes its place.
#[derive(Default)]
struct Rewrite {
    /// The pack that takes its place; `None` when nothing in it is kept.
    replacement: Option<String>,
    /// Kept records the index names: where their row is, and where they now are.
    moves: Vec<(RowAt, Digest, u64, RecordHeader)>,
    /// Kept records the index does not name (a writer died before its commit), to insert.
    inserts: Vec<(u64, RecordHeader, IndexRow)>,
    /// Indexed records no run reaches.
    dropped: Vec<LocatedRow>,
    duplicates: u64,
    torn_tails: u64,
    /// Why the pack is left as it is; then nothing above applies.
    fault: Option<String>,
}

/// Where a kept record goes in the index once its offset in the replacement is known.
enum Keep {
    Move(RowAt, Digest),
    Insert(IndexRow),
}

/// Bytes of kept records gc holds before appending them to the replacement pack.
const GC_APPEND_BYTES: usize = 8 << 20;

/// The record a scan item of a pack gc rewrites is; `None` for anything else, noted in
/// `out` (a torn tail counted, anything else the fault that leaves the pack as it is).
fn record_of(item: ScanItem, out: &mut Rewrite) -> Option<(u64, RecordHeader, Vec<u8>)> {
    match item {
        ScanItem::Record {
            offset,
            header,
            data,
        } => return Some((offset, header, data)),
        ScanItem::TornTail { .. } => out.torn_tails += 1,
        ScanItem::Garbage { offset, len } => {
            out.fault = Some(format!(
                "{len} unreadable bytes from offset {offset} (no record header)"
            ));
        }
        ScanItem::TooNew { version } => {
            out.fault = Some(format!(
                "object format {version}, newer than this probe writes"
            ));
        }
        ScanItem::NotAPack => out.fault = Some("it does not start with a pack header".into()),
    }
    None
}

/// The index row of the record at `offset` (`rows` in offset order, `next` the first not
/// yet met): `Some(None)` when the index names no object there, `None` when the index and
/// the pack disagree (the fault noted in `out`).
fn index_row_at<'r>(
    rows: &'r [LocatedRow],
    next: &mut usize,
    offset: u64,
    header: &RecordHeader,
    out: &mut Rewrite,
) -> Option<Option<&'r LocatedRow>> {
    match rows.get(*next) {
        Some(r) if r.offset < offset => {
            out.fault = Some(format!(
                "the index places object {} at offset {}, where no record starts",
                r.id, r.offset
            ));
            None
        }
        Some(r) if r.offset == offset => {
            *next += 1;
            if r.id != header.id {
                out.fault = Some(format!(
                    "the index places object {} at offset {offset}, where object {} is",
                    r.id, header.id
                ));
                return None;
            }
            Some(Some(r))
        }
        _ => Some(None),
    }
}

fn fault_text(f: &RecordFault) -> String {
    match f {
        RecordFault::TooNew(v) => format!("object format {v} is newer than this probe reads"),
        RecordFault::MissingDict(d) => format!("dictionary {d:08x} is not in dicts/"),
        RecordFault::Frame(e) => format!("zstd frame does not decompress ({e})"),
        RecordFault::Hash(actual) => format!("hash mismatch: content hashes to {actual}"),
    }
}
