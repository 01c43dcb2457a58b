//! Store maintenance: verify, reindex, gc and stats.
//!
//! All of them start from the packs, not the index: the packs are the truth and the index
//! is derived from them. Verify reports problems by object id and never stops at the first;
//! reindex rebuilds the index into a new file and swaps it in; gc copies what runs still
//! reach into a new pack before the index forgets the old ones.
//!
//! Depends on: `store::{format, object, pack, index}`, `model`.

use std::collections::{HashMap, HashSet};
use std::fs;

use serde::Serialize;

use crate::ids::Digest;
use crate::model::{FindingSet, Interaction, Outcome, RunEnd, RunStart, TestCase};

use super::format::{ObjectKind, RecordHeader};
use super::index::{self, sql_err};
use super::object::{open_record, row_of_payload, IndexRow, RecordFault, StoredObject};
use super::pack::{scan_pack, ScanItem};
use super::{Store, StoreError};

/// One problem verify found, named by object id where there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub id: Option<Digest>,
    pub message: String,
}

/// What verify found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub packs: u64,
    /// Records re-hashed.
    pub objects: u64,
    pub problems: Vec<Problem>,
    /// Harmless facts: torn tails of crashed writers, duplicate copies, unfinished runs.
    pub notes: Vec<String>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What reindex rebuilt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    pub packs: u64,
    pub objects: u64,
    /// Records skipped because they are damaged, by description.
    pub skipped: Vec<String>,
    /// Torn tails ignored.
    pub torn_tails: u64,
}

/// What gc removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    pub objects_removed: u64,
    pub objects_kept: u64,
    pub packs_rewritten: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Objects and bytes of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KindStats {
    pub kind: String,
    pub count: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
}

/// What `probe store stats` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoreStats {
    pub kinds: Vec<KindStats>,
    pub objects: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// Bytes of all pack files (records, duplicates, torn tails).
    pub pack_bytes: u64,
    pub packs: u64,
    pub index_bytes: u64,
    /// Interaction bodies that point at a blob.
    pub blob_references: u64,
    /// Blob references per stored blob (1.0 = no body shared).
    pub dedup_ratio: f64,
    /// Raw payload bytes per stored byte.
    pub compression_ratio: f64,
}

/// A reference from one object to another, to check once all objects are known.
struct Ref {
    from: Digest,
    from_kind: ObjectKind,
    to: Digest,
    to_kind: ObjectKind,
    role: &'static str,
}

fn refs_of(
    kind: ObjectKind,
    id: Digest,
    payload: &[u8],
    out: &mut Vec<Ref>,
) -> Result<(), StoreError> {
    let mut push = |to: Digest, to_kind: ObjectKind, role: &'static str| {
        out.push(Ref {
            from: id,
            from_kind: kind,
            to,
            to_kind,
            role,
        })
    };
    match kind {
        ObjectKind::Blob => {}
        ObjectKind::TestCase => {
            let c = TestCase::from_payload(id, payload)?;
            if let Some(m) = c.mutation {
                push(m.from.case.0, ObjectKind::TestCase, "accepted test case");
            }
        }
        ObjectKind::Interaction => {
            let i = Interaction::from_payload(id, payload)?;
            push(i.run.0, ObjectKind::RunStart, "run");
            push(i.case.0, ObjectKind::TestCase, "test case");
            if let Some(crate::model::BodyBytes::Blob { id: b, .. }) = &i.request.body {
                push(b.0, ObjectKind::Blob, "request body");
            }
            if let Outcome::Response(r) = &i.outcome {
                if let Some(crate::model::BodyBytes::Blob { id: b, .. }) = &r.body {
                    push(b.0, ObjectKind::Blob, "response body");
                }
            }
        }
        ObjectKind::RunStart => {
            let r = RunStart::from_payload(id, payload)?;
            push(r.document.0, ObjectKind::Blob, "document");
            for blob in r.documents.values() {
                push(blob.0, ObjectKind::Blob, "document file");
            }
        }
        ObjectKind::RunEnd => {
            let e = RunEnd::from_payload(id, payload)?;
            push(e.run.0, ObjectKind::RunStart, "run");
            push(e.findings.0, ObjectKind::FindingSet, "finding set");
        }
        ObjectKind::FindingSet => {
            let s = FindingSet::from_payload(id, payload)?;
            push(s.run.0, ObjectKind::RunStart, "run");
            for f in &s.findings {
                for i in &f.interactions {
                    push(i.0, ObjectKind::Interaction, "finding interaction");
                }
            }
        }
    }
    Ok(())
}

fn fault_text(f: &RecordFault) -> String {
    match f {
        RecordFault::TooNew(v) => format!("object format {v} is newer than this probe reads"),
        RecordFault::MissingDict(d) => format!("dictionary {d:08x} is not in dicts/"),
        RecordFault::Frame(e) => format!("zstd frame does not decompress ({e})"),
        RecordFault::Hash(actual) => format!("hash mismatch: content hashes to {actual}"),
    }
}

fn kind_name(tag: u8) -> String {
    ObjectKind::from_tag(tag).map_or_else(|| format!("kind {tag}"), |k| k.name().to_owned())
}

impl Store {
    /// Re-hashes every object in every pack, checks the index against the packs and every
    /// reference between objects. Problems are listed by object id.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let inner = &self.inner;
        let mut report = VerifyReport {
            notes: inner.notes.lock().map(|n| n.clone()).unwrap_or_default(),
            ..VerifyReport::default()
        };
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
        // References.
        for r in &refs {
            match valid.get(&r.to) {
                Some(tag) if *tag == r.to_kind.tag() => {}
                Some(tag) => report.problems.push(Problem {
                    id: Some(r.from),
                    message: format!(
                        "{} {}: its {} {} is a {}, not a {}",
                        r.from_kind,
                        r.from,
                        r.role,
                        r.to,
                        kind_name(*tag),
                        r.to_kind
                    ),
                }),
                None => report.problems.push(Problem {
                    id: Some(r.from),
                    message: format!(
                        "{} {} references missing {} {} ({})",
                        r.from_kind, r.from, r.to_kind, r.to, r.role
                    ),
                }),
            }
        }
        // Unfinished runs are a fact, not a problem: a crash leaves one.
        for run in self.runs()? {
            if run.ended_ms.is_none() {
                report.notes.push(format!(
                    "run {} has no end manifest (still running, or interrupted)",
                    run.id.short(12)
                ));
            }
        }
        Ok(report)
    }

    /// Rebuilds the index from the packs alone.
    ///
    /// The rebuild is one transaction on the index in place: a crash leaves the old index,
    /// and a process writing meanwhile waits for the lock instead of writing into a file
    /// that is about to be replaced. An index of a newer schema (which this build must not
    /// write) is replaced by a fresh file first.
    pub fn reindex(&self) -> Result<ReindexReport, StoreError> {
        let inner = &self.inner;
        let path = inner.index_path.clone();
        let e = || sql_err(&path);
        let mut conn = inner.conn()?;
        let mut schema = inner
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))?;
        if *schema > index::INDEX_SCHEMA_VERSION {
            *conn = rusqlite::Connection::open_in_memory().map_err(e())?;
            for suffix in ["", "-wal", "-shm"] {
                let _ = fs::remove_file(format!("{}{suffix}", path.display()));
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

    /// Objects by kind, bytes raw and stored, dedup and compression ratios.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let inner = &self.inner;
        let (totals, blob_refs) = {
            let conn = inner.conn()?;
            let e = || sql_err(&inner.index_path);
            (
                index::kind_totals(&conn).map_err(e())?,
                index::blob_references(&conn).map_err(e())?,
            )
        };
        let mut stats = StoreStats {
            kinds: Vec::new(),
            objects: 0,
            raw_bytes: 0,
            stored_bytes: 0,
            pack_bytes: 0,
            packs: 0,
            index_bytes: fs::metadata(&inner.index_path)
                .map(|m| m.len())
                .unwrap_or(0),
            blob_references: blob_refs,
            dedup_ratio: 1.0,
            compression_ratio: 1.0,
        };
        let mut blobs = 0;
        for (tag, count, raw, stored) in totals {
            if tag == ObjectKind::Blob.tag() {
                blobs = count;
            }
            stats.objects += count;
            stats.raw_bytes += raw;
            stats.stored_bytes += stored;
            stats.kinds.push(KindStats {
                kind: kind_name(tag),
                count,
                raw_bytes: raw,
                stored_bytes: stored,
            });
        }
        for pack in inner.backend.packs()? {
            stats.packs += 1;
            stats.pack_bytes += inner.backend.open_pack(&pack)?.1;
        }
        if blobs > 0 {
            stats.dedup_ratio = blob_refs as f64 / blobs as f64;
        }
        if stats.stored_bytes > 0 {
            stats.compression_ratio = stats.raw_bytes as f64 / stats.stored_bytes as f64;
        }
        Ok(stats)
    }

    /// Drops objects no run reaches, rewriting the packs that hold them. Must not run while
    /// another process writes to the store.
    pub fn gc(&self) -> Result<GcReport, StoreError> {
        let inner = &self.inner;
        inner.check_writable()?;
        let mut report = GcReport::default();
        let reachable = self.reachable()?;
        let indexed = {
            let conn = inner.conn()?;
            index::all_objects(&conn).map_err(sql_err(&inner.index_path))?
        };
        let indexed_at: HashSet<(String, u64)> =
            indexed.iter().map(|(_, _, p, o)| (p.clone(), *o)).collect();
        let in_index: HashSet<Digest> = indexed.iter().map(|(id, ..)| *id).collect();
        let mut doomed_packs: HashSet<String> = HashSet::new();
        let mut doomed: Vec<Digest> = Vec::new();
        for (id, tag, pack, _) in &indexed {
            // Kinds of a newer minor are kept: this build cannot know what they reach.
            if !reachable.contains(id) && ObjectKind::from_tag(*tag).is_some() {
                doomed_packs.insert(pack.clone());
                doomed.push(*id);
            }
        }
        if doomed.is_empty() {
            report.objects_kept = indexed.len() as u64;
            return Ok(report);
        }
        inner.backend.seal()?;
        let mut moves: Vec<(u64, RecordHeader, IndexRow)> = Vec::new();
        let mut new_pack: Option<String> = None;
        let mut buf: Vec<u8> = Vec::new();
        let mut buf_entries: Vec<(u64, RecordHeader, IndexRow)> = Vec::new();
        let mut kept_here: HashSet<Digest> = HashSet::new();
        let mut packs: Vec<String> = doomed_packs.into_iter().collect();
        packs.sort();
        let flush_buf = |buf: &mut Vec<u8>,
                         entries: &mut Vec<(u64, RecordHeader, IndexRow)>,
                         moves: &mut Vec<(u64, RecordHeader, IndexRow)>,
                         new_pack: &mut Option<String>|
         -> Result<(), StoreError> {
            if buf.is_empty() {
                return Ok(());
            }
            let (name, base) = inner.backend.append(buf)?;
            *new_pack = Some(name);
            for (rel, h, row) in entries.drain(..) {
                moves.push((base + rel, h, row));
            }
            buf.clear();
            Ok(())
        };
        for pack in &packs {
            report.packs_rewritten += 1;
            report.bytes_before += inner.backend.open_pack(pack)?.1;
            let mut records: Vec<(u64, RecordHeader, Vec<u8>)> = Vec::new();
            scan_pack(inner.backend.as_ref(), pack, &mut |item| {
                if let ScanItem::Record {
                    offset,
                    header,
                    data,
                } = item
                {
                    records.push((offset, header, data));
                }
                Ok(())
            })?;
            for (offset, header, data) in records {
                let id = header.id;
                let indexed_here = indexed_at.contains(&(pack.clone(), offset));
                // Keep: reachable copies the index names, and valid objects the index does
                // not know at all (a stale index must not make gc delete data).
                let keep = if indexed_here {
                    reachable.contains(&id) || ObjectKind::from_tag(header.kind_tag).is_none()
                } else {
                    !in_index.contains(&id)
                };
                if !keep || kept_here.contains(&id) {
                    continue;
                }
                let dict = inner.dict(header.dict);
                let Ok(payload) =
                    open_record(&header, &data, dict.as_deref().map(|d| d.as_slice()))
                else {
                    continue;
                };
                let row = match ObjectKind::from_tag(header.kind_tag) {
                    Some(kind) => row_of_payload(kind, id, &payload).unwrap_or(IndexRow::None),
                    None => IndexRow::None,
                };
                kept_here.insert(id);
                buf_entries.push((buf.len() as u64, header, row));
                buf.extend_from_slice(&header.encode());
                buf.extend_from_slice(&data);
                if buf.len() > 8 << 20 {
                    flush_buf(&mut buf, &mut buf_entries, &mut moves, &mut new_pack)?;
                }
            }
        }
        flush_buf(&mut buf, &mut buf_entries, &mut moves, &mut new_pack)?;
        inner.backend.seal()?;
        {
            let mut conn = inner.conn()?;
            let e = || sql_err(&inner.index_path);
            let tx = conn.transaction().map_err(e())?;
            for id in &doomed {
                index::forget(&tx, id).map_err(e())?;
            }
            index::forget_deleted_interactions(&tx).map_err(e())?;
            if let Some(name) = &new_pack {
                let pack_id = index::pack_id(&tx, name).map_err(e())?;
                for (offset, header, row) in &moves {
                    index::relocate(&tx, pack_id, *offset, header, row).map_err(e())?;
                }
                report.bytes_after = inner.backend.open_pack(name)?.1;
            }
            for pack in &packs {
                tx.execute("DELETE FROM packs WHERE name = ?1", [pack])
                    .map_err(e())?;
            }
            tx.commit().map_err(e())?;
        }
        // Only now, with the index naming the new pack, may the old ones go.
        for pack in &packs {
            inner.backend.remove_pack(pack)?;
        }
        report.objects_removed = doomed.len() as u64;
        report.objects_kept = (indexed.len() - doomed.len()) as u64;
        Ok(report)
    }

    /// Every object some run reaches (from the index tables).
    fn reachable(&self) -> Result<HashSet<Digest>, StoreError> {
        let conn = self.inner.conn()?;
        let e = || sql_err(&self.inner.index_path);
        let mut out = HashSet::new();
        let queries = [
            "SELECT id FROM runs",
            "SELECT document FROM runs",
            "SELECT i.id FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id",
            "SELECT i.case_id FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id",
            "SELECT i.request_body FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id WHERE i.request_body IS NOT NULL",
            "SELECT i.response_body FROM interactions i JOIN run_keys k ON k.key = i.run JOIN runs r ON r.id = k.id WHERE i.response_body IS NOT NULL",
            "SELECT e.id FROM run_ends e JOIN runs r ON r.id = e.run",
            "SELECT e.finding_set FROM run_ends e JOIN runs r ON r.id = e.run",
            "SELECT s.id FROM finding_sets s JOIN runs r ON r.id = s.run",
        ];
        for q in queries {
            let mut st = conn.prepare(q).map_err(e())?;
            let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).map_err(e())?;
            for row in rows {
                let bytes = row.map_err(e())?;
                if let Ok(arr) = <[u8; 32]>::try_from(bytes.as_slice()) {
                    out.insert(Digest(arr));
                }
            }
        }
        // The other files of each run's document are named only inside its RunStart.
        drop(conn);
        for run in self.runs()? {
            let start: RunStart = self.get(run.id.0)?;
            out.extend(start.documents.values().map(|b| b.0));
        }
        Ok(out)
    }
}
