//! Maintenance of a format-2 store: rebuilding `index-2.sqlite` from `packs-2/`
//! (FORMAT.md §10.3), cutting the torn tails a crash mid-append left (FORMAT.md §10.2).
//!
//! The index is derived data: every row comes back from the blocks, each block checked,
//! decompressed and its objects hashed, and meta objects decoded for their rows, as a live
//! write makes them, and exchange blocks' query columns ([`super::cols`]). A damaged block
//! is skipped and named; its objects are not indexed. Reached through
//! `ExclusiveStore::reindex`: the caller holds the store alone, since tails are cut.
//!
//! Depends on: `store` (the byte layer, objects, errors), `v2::{block, content, index2,
//! layout, scan, writer}`.

use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::index::sql_err;
use crate::store::object::row_of_payload;
use crate::store::pack::ObjectBackend;

use std::collections::HashMap;

use super::block::Stream;
use super::cols::{Draft, DraftEntry};
use super::content::Parsed;
use super::index2::{self, NewBlock};
use super::layout::V2;
use super::scan::{scan_pack, ScanItem};
use super::whole;
use super::writer::index_meta;

/// An exchange block whose columns wait for operations learned later in the scan: its row
/// id, its columns, and which entries need the operation of which test case.
type Late = (i64, Draft, Vec<(usize, crate::ids::Digest)>);

/// What a rebuild of the format-2 index found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rebuilt {
    pub packs: usize,
    pub blocks: usize,
    pub objects: usize,
    /// Torn tails cut: pack, offset cut at, bytes removed.
    pub cut: Vec<(String, u64, u64)>,
    /// Blocks and bytes left out: pack, offset, why.
    pub problems: Vec<(String, u64, String)>,
}

/// What a scan of packs into the index gathers beside the rows it inserts.
#[derive(Default)]
struct Scanned {
    report: Rebuilt,
    /// Torn tails met: pack, offset, length.
    tails: Vec<(String, u64, u64)>,
    /// Test cases' operations, which interactions' columns carry; an interaction met before
    /// its case (in another writer's pack) waits in `late` for the end of the scan.
    operations: HashMap<crate::ids::Digest, String>,
    late: Vec<Late>,
}

/// Rebuilds the index of a format-2 store from its packs, in one transaction, then cuts
/// the torn tails found when `cut_tails` (only for a caller that holds the store alone: a
/// live writer may be appending to its tail).
pub fn rebuild_index(
    v2: &V2,
    backend: &dyn ObjectBackend,
    cut_tails: bool,
) -> Result<Rebuilt, StoreError> {
    let mut scanned = Scanned::default();
    {
        let mut conn = v2.conn()?;
        let e = || sql_err(&v2.index_path);
        let tx = conn.transaction().map_err(e())?;
        tx.execute_batch(
            "DELETE FROM findings; DELETE FROM finding_sets; DELETE FROM run_ends;
             DELETE FROM runs; DELETE FROM dicts; DELETE FROM blocks; DELETE FROM packs;
             DELETE FROM strings;",
        )
        .map_err(e())?;
        for pack in backend.packs()? {
            index_pack(&tx, v2, backend, &pack, &mut scanned)?;
        }
        let late = std::mem::take(&mut scanned.late);
        fill_late_cols(&tx, &v2.index_path, late, &scanned.operations)?;
        tx.commit().map_err(e())?;
    }
    let mut report = scanned.report;
    // After the commit: a crash in between leaves a tail the next rebuild cuts.
    for (pack, offset, len) in scanned.tails.into_iter().filter(|_| cut_tails) {
        if offset == 0 {
            // Not even a pack header: nothing in it was ever written.
            backend.remove_pack(&pack)?;
        } else {
            backend.truncate(&pack, offset)?;
        }
        report.cut.push((pack, offset, len));
    }
    v2.forget();
    Ok(report)
}

/// Adds the blocks of `packs` (whole packs no process writes to any more, such as those a
/// pull from object storage brought, docs/remote-store.md) to the index, beside what it
/// holds: what a reindex would add for them, without reading any other pack. A block
/// already indexed keeps its row, so adding a pack twice changes nothing. Other processes
/// may read and write the store meanwhile (their rows are left alone).
pub fn index_packs(
    v2: &V2,
    backend: &dyn ObjectBackend,
    packs: &[String],
) -> Result<Rebuilt, StoreError> {
    let mut scanned = Scanned::default();
    let e = || sql_err(&v2.index_path);
    {
        let mut conn = v2.conn()?;
        let tx = conn.transaction().map_err(e())?;
        for pack in packs {
            index_pack(&tx, v2, backend, pack, &mut scanned)?;
        }
        tx.commit().map_err(e())?;
    }
    v2.forget();
    // A case met in none of these packs is in a pack indexed before: read from the store
    // now that the new blocks are indexed too.
    let mut operations = std::mem::take(&mut scanned.operations);
    for (_, _, unknown) in &scanned.late {
        for (_, case) in unknown {
            if !operations.contains_key(case) {
                let op = v2.case_operation(backend, case)?;
                operations.insert(*case, op);
            }
        }
    }
    if !scanned.late.is_empty() {
        let mut conn = v2.conn()?;
        let tx = conn.transaction().map_err(e())?;
        fill_late_cols(&tx, &v2.index_path, scanned.late, &operations)?;
        tx.commit().map_err(e())?;
        v2.forget();
    }
    Ok(scanned.report)
}

/// Scans one pack into the index through `tx`: a row for each whole block, the rows of its
/// meta objects, and in `scanned` what it met (problems, tails, operations, late columns).
fn index_pack(
    tx: &rusqlite::Transaction<'_>,
    v2: &V2,
    backend: &dyn ObjectBackend,
    pack: &str,
    scanned: &mut Scanned,
) -> Result<(), StoreError> {
    let e = || sql_err(&v2.index_path);
    scanned.report.packs += 1;
    let pack_key = index2::pack_key(tx, pack).map_err(e())?;
    let pack = pack.to_owned();
    let Scanned {
        report,
        tails,
        operations,
        late,
    } = scanned;
    scan_pack(backend, &pack, &mut |item| {
        match item {
            ScanItem::Block {
                offset,
                header,
                frame,
            } => {
                let parsed =
                    match whole::open_block(&whole::block_bytes(&header, &frame), v2.dicts()) {
                        Ok(parsed) => parsed,
                        Err(why) => {
                            report.problems.push((pack.clone(), offset, why));
                            return Ok(());
                        }
                    };
                let ids = parsed.ids().to_vec();
                let seqs = match exchange_seqs(&parsed, &ids) {
                    Ok(seqs) => seqs,
                    Err(why) => {
                        report.problems.push((pack.clone(), offset, why));
                        None
                    }
                };
                let kinds: Vec<u8> = (0..ids.len() as u32)
                    .map(|i| parsed.kind(i).unwrap_or(0))
                    .collect();
                let mut unknown = Vec::new();
                let cols = if header.stream == Stream::Exchange {
                    match Draft::of_block(&parsed, operations) {
                        Ok((draft, missing)) => {
                            unknown = missing;
                            Some(draft)
                        }
                        Err(why) => {
                            report.problems.push((pack.clone(), offset, why));
                            None
                        }
                    }
                } else {
                    None
                };
                let encoded = match &cols {
                    Some(draft) => {
                        Some(draft.encode(&mut |text| index2::string_key(tx, text).map_err(e()))?)
                    }
                    None => None,
                };
                let row = NewBlock {
                    offset,
                    stored_len: header.stored_len,
                    raw_len: header.raw_len,
                    stream: header.stream,
                    dict: header.dict.map_or(0, |d| d.get()),
                    interactions: kinds
                        .iter()
                        .filter(|k| **k == ObjectKind::Interaction.tag())
                        .count() as u32,
                    keys: index2::keys_of(&ids),
                    seqs,
                    cols: encoded,
                };
                let block = index2::insert_block(tx, pack_key, &row).map_err(e())?;
                if let (Some(draft), false) = (cols, unknown.is_empty()) {
                    late.push((block, draft, unknown));
                }
                report.blocks += 1;
                report.objects += ids.len();
                let found = MetaOf {
                    parsed: &parsed,
                    ids: &ids,
                    kinds: &kinds,
                    block,
                };
                index_metas(tx, &v2.index_path, &found, &pack, offset, report)?;
            }
            ScanItem::Damaged { offset, header } => report.problems.push((
                pack.clone(),
                offset,
                format!(
                    "block damaged: check value {:08x} does not match",
                    header.check
                ),
            )),
            ScanItem::TornTail { offset, len } => tails.push((pack.clone(), offset, len)),
            ScanItem::Garbage { offset, len } => report.problems.push((
                pack.clone(),
                offset,
                format!("{len} bytes that are not blocks"),
            )),
            ScanItem::TooNew { version } => report.problems.push((
                pack.clone(),
                0,
                format!("a pack of format {version}, newer than this probe reads"),
            )),
            ScanItem::NotAPack => {
                report
                    .problems
                    .push((pack.clone(), 0, "not a format-2 pack".to_owned()))
            }
        }
        Ok(())
    })
}

/// A block a rebuild reads: its content, ids and kind tags, and its row in the index.
struct MetaOf<'a> {
    parsed: &'a Parsed,
    ids: &'a [crate::ids::Digest],
    kinds: &'a [u8],
    block: i64,
}

/// The rows of the run starts, run ends and finding sets of one block; an object that
/// does not read is a problem of `report` (at `pack` and `offset`).
fn index_metas(
    tx: &rusqlite::Transaction<'_>,
    path: &std::path::Path,
    found: &MetaOf<'_>,
    pack: &str,
    offset: u64,
    report: &mut Rebuilt,
) -> Result<(), StoreError> {
    for (ordinal, (id, tag)) in found.ids.iter().zip(found.kinds).enumerate() {
        let Some(kind) = ObjectKind::from_tag(*tag) else {
            continue;
        };
        if !matches!(
            kind,
            ObjectKind::RunStart | ObjectKind::RunEnd | ObjectKind::FindingSet
        ) {
            continue;
        }
        let ordinal = ordinal as u32;
        let rows = found
            .parsed
            .restore(ordinal)
            .map_err(|e| e.to_string())
            .and_then(|(_, payload)| {
                row_of_payload(kind, *id, &payload).map_err(|e| e.to_string())
            });
        match rows {
            Ok(rows) => index_meta(tx, id, &rows, found.block, ordinal).map_err(sql_err(path))?,
            Err(why) => report.problems.push((
                pack.to_owned(),
                offset,
                format!("object {ordinal} ({kind}): {why}"),
            )),
        }
    }
    Ok(())
}

/// The query columns of the blocks whose interactions were met before their test cases
/// (in another writer's pack), now that every case's operation is known.
fn fill_late_cols(
    tx: &rusqlite::Transaction<'_>,
    path: &std::path::Path,
    late: Vec<Late>,
    operations: &HashMap<crate::ids::Digest, String>,
) -> Result<(), StoreError> {
    for (block, mut draft, unknown) in late {
        for (at, case) in unknown {
            if let (Some(DraftEntry::Interaction { operation, .. }), Some(op)) =
                (draft.entries.get_mut(at), operations.get(&case))
            {
                operation.clone_from(op);
            }
        }
        let cols = draft.encode(&mut |text| index2::string_key(tx, text).map_err(sql_err(path)))?;
        index2::set_cols(tx, block, &cols).map_err(sql_err(path))?;
    }
    Ok(())
}

/// The run of a block's interactions and their lowest and highest seq, decoded as the
/// writer knew them.
fn exchange_seqs(
    parsed: &Parsed,
    ids: &[crate::ids::Digest],
) -> Result<Option<(crate::ids::RunId, u64, u64)>, String> {
    let mut seqs: Option<(crate::ids::RunId, u64, u64)> = None;
    for (ordinal, id) in ids.iter().enumerate() {
        let ordinal = ordinal as u32;
        if parsed.kind(ordinal) != Some(ObjectKind::Interaction.tag()) {
            continue;
        }
        let (_, payload) = parsed.restore(ordinal).map_err(|e| e.to_string())?;
        let row = row_of_payload(ObjectKind::Interaction, *id, &payload)
            .map_err(|e| format!("object {ordinal} (interaction): {e}"))?;
        if let crate::store::object::IndexRow::Interaction { run, seq, .. } = row {
            seqs = Some(match seqs {
                Some((r, lo, hi)) => (r, lo.min(seq), hi.max(seq)),
                None => (run, seq, seq),
            });
        }
    }
    Ok(seqs)
}
