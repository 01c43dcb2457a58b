//! `Store::verify` of a format-2 store, in its steps: every block checked, decompressed
//! and its objects hashed ([`scan_blocks`]); a torn tail whose writer is gone cut
//! (FORMAT.md §10.2), one a live writer may still be appending to noted
//! ([`cut_torn_tails`]); the index's blocks against the packs ([`check_index`]); then every
//! reference between objects, as for format 1 (`maintenance::check_refs_and_runs`).
//!
//! Depends on: `ids`, `store` (maintenance's report and references, the byte layer, the
//! lock's registry of writers), `v2::{layout, scan, index2, block}`.

use std::collections::{HashMap, HashSet};

use crate::ids::Digest;
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::index::sql_err;
use crate::store::lock;
use crate::store::maintenance::{check_refs_and_runs, refs_of, Ref};
use crate::store::pack::ObjectBackend;
use crate::store::reports::{Problem, VerifyReport};

use super::block::BlockHeader;
use super::index2;
use super::layout::V2;
use super::scan::{scan_pack, ScanItem};
use super::whole;

/// What the scan of every pack found.
#[derive(Default)]
struct Scanned {
    /// Every valid object: id -> kind tag.
    valid: HashMap<Digest, u8>,
    /// Every readable block: (pack, offset) -> its keys.
    blocks: HashMap<(String, u64), Vec<u8>>,
    refs: Vec<Ref>,
    duplicates: u64,
    /// Torn tails: pack, offset, length.
    tails: Vec<(String, u64, u64)>,
}

/// [`crate::store::Store::verify`] of a format-2 store (see the module's docs for its
/// steps).
pub(crate) fn verify_two(
    ctx: &Context,
    v2: &V2,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    let backend = ctx.backend.as_ref();
    let found = scan_blocks(backend, v2, report)?;
    cut_torn_tails(backend, &ctx.dir, &found.tails, report)?;
    if found.duplicates > 0 {
        report.notes.push(format!(
            "{} objects are stored more than once (harmless; gc will keep one)",
            found.duplicates
        ));
    }
    check_index(v2, &found.blocks, report)?;
    check_refs_and_runs(&found.refs, &found.valid, &v2.summaries(None)?, report)
}

/// Every pack read block by block: each block opened and its objects' references taken;
/// what cannot be read is a problem of `report`.
fn scan_blocks(
    backend: &dyn ObjectBackend,
    v2: &V2,
    report: &mut VerifyReport,
) -> Result<Scanned, StoreError> {
    let mut found = Scanned::default();
    for pack in backend.packs()? {
        report.packs += 1;
        scan_pack(backend, &pack, &mut |item| {
            let problem = |message: String| Problem { id: None, message };
            match item {
                ScanItem::Block {
                    offset,
                    header,
                    frame,
                } => take_block(v2, &pack, offset, &header, &frame, &mut found, report),
                ScanItem::Damaged { offset, header } => report.problems.push(problem(format!(
                    "damaged block of {} objects ({:?} stream) in pack {pack} at offset \
                     {offset}: its check value does not match; its objects cannot be read",
                    header.count, header.stream,
                ))),
                ScanItem::TornTail { offset, len } => found.tails.push((pack.clone(), offset, len)),
                ScanItem::Garbage { offset, len } => report.problems.push(problem(format!(
                    "pack {pack}: {len} unreadable bytes from offset {offset} (no block header)"
                ))),
                ScanItem::TooNew { version } => report.problems.push(problem(format!(
                    "pack {pack} is format {version}, newer than this probe reads"
                ))),
                ScanItem::NotAPack => report.problems.push(problem(format!(
                    "pack {pack} does not start with a format-2 pack header"
                ))),
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// One readable block: its keys, its objects (valid, or second copies) and their
/// references into `found`; a block or object that does not open is a problem.
fn take_block(
    v2: &V2,
    pack: &str,
    offset: u64,
    header: &BlockHeader,
    frame: &[u8],
    found: &mut Scanned,
    report: &mut VerifyReport,
) {
    let place = format!("pack {pack} at offset {offset}");
    let bytes = whole::block_bytes(header, frame);
    let parsed = match whole::open_block(&bytes, v2.dicts()) {
        Ok(parsed) => parsed,
        Err(why) => {
            report.problems.push(Problem {
                id: None,
                message: format!("block in {place}: {why}"),
            });
            return;
        }
    };
    let ids = parsed.ids();
    report.objects += ids.len() as u64;
    found
        .blocks
        .insert((pack.to_owned(), offset), index2::keys_of(ids));
    for (ordinal, id) in ids.iter().enumerate() {
        let tag = parsed.kind(ordinal as u32).unwrap_or(0);
        if found.valid.insert(*id, tag).is_some() {
            found.duplicates += 1;
            continue;
        }
        let Some(kind) = ObjectKind::from_tag(tag) else {
            continue;
        };
        let refs_found = parsed
            .restore(ordinal as u32)
            .map_err(|e| e.to_string())
            .and_then(|(_, payload)| {
                refs_of(kind, *id, &payload, &mut found.refs).map_err(|e| e.to_string())
            });
        if let Err(why) = refs_found {
            report.problems.push(Problem {
                id: Some(*id),
                message: format!("object {id} ({kind}) in the block in {place}: {why}"),
            });
        }
    }
}

/// Torn tails: cut when their writer (the pid in the pack's name) is gone, noted while it
/// runs (it may still be appending).
fn cut_torn_tails(
    backend: &dyn ObjectBackend,
    dir: &std::path::Path,
    tails: &[(String, u64, u64)],
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    for (pack, offset, len) in tails {
        let writer = pack
            .split('-')
            .nth(1)
            .and_then(|pid| pid.parse::<u32>().ok());
        let gone = writer.is_some_and(|pid| !lock::writer_alive(dir, pid));
        if gone {
            if *offset == 0 {
                backend.remove_pack(pack)?;
            } else {
                backend.truncate(pack, *offset)?;
            }
            report.notes.push(format!(
                "pack {pack}: torn tail of {len} bytes at offset {offset} cut (its writer was \
                 interrupted)"
            ));
        } else {
            report.notes.push(format!(
                "pack {pack}: {len} bytes at offset {offset} not yet a whole block (its \
                 writer is still running)"
            ));
        }
    }
    Ok(())
}

/// The index against the packs: each indexed block must be where the index says, with
/// the objects it says; a readable block the index does not name is a problem unless it
/// comes after the last one indexed in its pack (a writer interrupted before its index
/// commit, or still writing).
fn check_index(
    v2: &V2,
    blocks: &HashMap<(String, u64), Vec<u8>>,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    let indexed = {
        let conn = v2.conn()?;
        index2::indexed_blocks(&conn).map_err(sql_err(&v2.index_path))?
    };
    let mut last_indexed: HashMap<String, u64> = HashMap::new();
    let mut in_index: HashSet<(String, u64)> = HashSet::new();
    for (pack, offset, keys) in indexed {
        let last = last_indexed.entry(pack.clone()).or_insert(0);
        *last = (*last).max(offset);
        match blocks.get(&(pack.clone(), offset)) {
            Some(found) if *found == keys => {}
            Some(_) => report.problems.push(Problem {
                id: None,
                message: format!(
                    "the index describes the block in pack {pack} at offset {offset} with \
                     other objects than it holds (`probe store reindex` repairs this)"
                ),
            }),
            None => report.problems.push(Problem {
                id: None,
                message: format!(
                    "the index names a block in pack {pack} at offset {offset}, where no \
                     readable block is"
                ),
            }),
        }
        in_index.insert((pack, offset));
    }
    let mut unindexed: Vec<&(String, u64)> =
        blocks.keys().filter(|k| !in_index.contains(*k)).collect();
    unindexed.sort();
    let mut uncommitted = 0u64;
    for (pack, offset) in unindexed {
        if last_indexed.get(pack).is_none_or(|last| offset > last) {
            uncommitted += 1;
            continue;
        }
        report.problems.push(Problem {
            id: None,
            message: format!(
                "the block in pack {pack} at offset {offset} is not in the index (`probe \
                 store reindex` repairs this)"
            ),
        });
    }
    if uncommitted > 0 {
        report.notes.push(format!(
            "{uncommitted} blocks at the end of packs were written but never indexed (a \
             writer was interrupted before its index commit, or is still writing; \
             harmless, `probe store reindex` indexes them)"
        ));
    }
    Ok(())
}
