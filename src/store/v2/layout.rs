//! What an open format-2 store holds besides its packs: the schema-4 index connection, the
//! [`IdMap`] and the [`BlockCache`], and the reads built on them: locate an object by id,
//! read it (decompress its block through the cache, restore its payload), find ids by
//! prefix. `store::Inner` holds one as its layout (`Box<dyn seam::Layout>`; format 2's
//! side of the seam is `v2::seam`).
//!
//! Every read of bytes from disk is checked (block check value, content, the object's id
//! recomputed by hashing): a damaged pack gives a typed error naming pack and offset.
//!
//! Depends on: `ids`, `store` (the byte layer, kinds, errors), `v2::{block, content, cache,
//! idmap, index2}`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use crate::ids::{CaseId, Digest, FindingSetId, InteractionId, RunEndId, RunId};
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::index::sql_err;
use crate::store::index::{InteractionRow, RunSummary, RunTally};
use crate::store::object::{row_of_payload, IndexRow};
use crate::store::pack::ObjectBackend;

use super::block::{self, BLOCK_HEADER_LEN};
use super::cache::{BlockCache, DEFAULT_BUDGET};
use super::cols::{self, Col, Target};
use super::content::Parsed;
use super::dicts::DictionaryCache;
use super::idmap::{BlockRef, IdMap};
use super::index2::{self, key_of};

/// The format-2 parts of an open store.
pub struct V2 {
    pub(crate) index_path: PathBuf,
    conn: Mutex<Connection>,
    idmap: Mutex<IdMap>,
    cache: BlockCache,
    /// The dictionaries blocks name (`dicts/` beside the index).
    dicts: Box<DictionaryCache>,
    /// `strings` rows read so far (they never change once written).
    strings: Mutex<HashMap<i64, Arc<str>>>,
}

/// One interaction of a page: its row, and where it and its test case are (the case only
/// when it is in the same block; else it is found by id).
pub struct PageItem {
    pub row: InteractionRow,
    pub at: BlockRef,
    pub case_at: Option<BlockRef>,
}

impl V2 {
    /// The dictionaries its blocks name.
    pub(crate) fn dicts(&self) -> &DictionaryCache {
        &self.dicts
    }

    /// Opens (creating when absent) the index at `index_path`.
    pub fn open(index_path: PathBuf) -> Result<V2, StoreError> {
        let conn = index2::open(&index_path)?;
        Ok(V2 {
            dicts: Box::new(DictionaryCache::new(super::dicts::dir_beside(&index_path))),
            index_path,
            conn: Mutex::new(conn),
            idmap: Mutex::new(IdMap::new()),
            cache: BlockCache::new(DEFAULT_BUDGET),
            strings: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn
            .lock()
            .map_err(|_| StoreError::Other("index connection lock poisoned".into()))
    }

    /// Candidates among keys `lo..=hi`, after bringing the map up to date when `refresh`.
    fn candidates(&self, lo: u32, hi: u32, refresh: bool) -> Result<Vec<BlockRef>, StoreError> {
        let mut map = self
            .idmap
            .lock()
            .map_err(|_| StoreError::Other("id map lock poisoned".into()))?;
        if refresh {
            let conn = self.conn()?;
            map.refresh(&conn).map_err(sql_err(&self.index_path))?;
        }
        Ok(map.range(lo, hi).iter().map(|(_, place)| *place).collect())
    }

    /// Where object `id` is, when it is stored. A candidate block that cannot be read is
    /// passed over (its objects are not found here; verify reports the block), so that a
    /// writer stores such an object again rather than fail.
    pub fn locate(
        &self,
        backend: &dyn ObjectBackend,
        id: &Digest,
    ) -> Result<Option<BlockRef>, StoreError> {
        Ok(self.find(backend, id)?.0)
    }

    /// [`V2::locate`], also giving the error of the first candidate block that could not be
    /// read: a reader that finds nothing says what is damaged rather than "not found".
    fn find(
        &self,
        backend: &dyn ObjectBackend,
        id: &Digest,
    ) -> Result<(Option<BlockRef>, Option<StoreError>), StoreError> {
        let key = key_of(id);
        let mut unreadable = None;
        // Known blocks first; blocks indexed since (by this or another process) only on a miss.
        for refresh in [false, true] {
            for place in self.candidates(key, key, refresh)? {
                let parsed = match self.block(backend, place.block) {
                    Ok(parsed) => parsed,
                    Err(e) => {
                        unreadable.get_or_insert(e);
                        continue;
                    }
                };
                if parsed.ids().get(place.ordinal as usize) == Some(id) {
                    return Ok((Some(place), None));
                }
            }
        }
        Ok((None, unreadable))
    }

    /// The parsed content of block `block`, from the cache or read and checked.
    pub fn block(
        &self,
        backend: &dyn ObjectBackend,
        block: i64,
    ) -> Result<Arc<Parsed>, StoreError> {
        if let Some(parsed) = self.cache.get(block) {
            return Ok(parsed);
        }
        let place = {
            let conn = self.conn()?;
            index2::block_place(&conn, block).map_err(sql_err(&self.index_path))?
        };
        let place = place.ok_or_else(|| StoreError::NoSuchBlock {
            path: self.index_path.clone(),
            block,
        })?;
        let len = BLOCK_HEADER_LEN as u64 + u64::from(place.stored_len);
        let bytes = backend.read_at(&place.pack, place.offset, len)?;
        let damaged = |reason: String| StoreError::Damaged {
            pack: place.pack.clone(),
            offset: place.offset,
            reason,
        };
        let (header, content) =
            block::open(&bytes, |key| self.dicts.get(key)).map_err(|e| damaged(e.to_string()))?;
        let parsed = Parsed::parse(content, header.count).map_err(|e| damaged(e.to_string()))?;
        let parsed = Arc::new(parsed);
        self.cache.insert(block, parsed.clone());
        Ok(parsed)
    }

    /// Reads object `id`, found by its key and confirmed by its hash.
    pub fn read(
        &self,
        backend: &dyn ObjectBackend,
        id: Digest,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        match self.find(backend, &id)? {
            (Some(place), _) => self.read_at(backend, id, place),
            (None, Some(unreadable)) => Err(unreadable),
            (None, None) => Err(StoreError::NotFound { id: id.to_hex() }),
        }
    }

    /// Reads object `id` at a place a query gave, checking that the object there is `id`.
    pub fn read_at(
        &self,
        backend: &dyn ObjectBackend,
        id: Digest,
        place: BlockRef,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let parsed = self.block(backend, place.block)?;
        let actual = parsed.ids().get(place.ordinal as usize).copied();
        match actual {
            Some(actual) if actual == id => {}
            Some(actual) => return Err(StoreError::HashMismatch { id, actual }),
            None => return Err(StoreError::NotFound { id: id.to_hex() }),
        }
        let (tag, payload) =
            parsed
                .restore(place.ordinal)
                .map_err(|e| StoreError::DamagedObject {
                    id,
                    reason: e.to_string(),
                })?;
        let kind = ObjectKind::from_tag(tag).ok_or_else(|| StoreError::WrongKind {
            id,
            expected: ObjectKind::Blob,
            found: format!("kind {tag} unknown to this probe"),
        })?;
        Ok((kind, payload))
    }

    /// Objects whose id starts with the hex `prefix` (4 to 64 lowercase hex characters),
    /// at most `limit`, by id; each with its kind tag.
    pub fn by_prefix(
        &self,
        backend: &dyn ObjectBackend,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(u8, Digest)>, StoreError> {
        // A key is the id's first KEY_LEN bytes: the prefix's first 2 × KEY_LEN hex digits.
        let head = |pad: char| {
            let hex: String = prefix
                .chars()
                .chain(std::iter::repeat(pad))
                .take(2 * index2::KEY_LEN)
                .collect();
            u32::from_str_radix(&hex, 16).ok()
        };
        let (Some(lo), Some(hi)) = (head('0'), head('f')) else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for place in self.candidates(lo, hi, true)? {
            let Ok(parsed) = self.block(backend, place.block) else {
                continue;
            };
            let (Some(id), Some(tag)) = (
                parsed.ids().get(place.ordinal as usize),
                parsed.kind(place.ordinal),
            ) else {
                continue;
            };
            if id.to_hex().starts_with(prefix) {
                found.push((tag, *id));
            }
        }
        // Blocks may hold one object twice (two runs stored one case): one answer each.
        found.sort_by_key(|(_, id)| *id);
        found.dedup_by_key(|(_, id)| *id);
        found.truncate(limit);
        Ok(found)
    }

    /// Runs named `name`, newest first.
    pub fn runs_named(&self, name: &str) -> Result<Vec<Digest>, StoreError> {
        let conn = self.conn()?;
        index2::runs_named(&conn, name).map_err(sql_err(&self.index_path))
    }

    /// The latest end manifest of `run`.
    pub fn run_end_id(&self, run: &RunId) -> Result<Option<RunEndId>, StoreError> {
        let conn = self.conn()?;
        index2::run_end_id(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// The finding sets of `run`: the one its latest end names first, then rechecks.
    pub fn finding_sets_of(&self, run: &RunId) -> Result<Vec<FindingSetId>, StoreError> {
        let conn = self.conn()?;
        index2::finding_sets_of(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// The finding sets of `run` in write order, each with its pack's name.
    pub fn finding_sets_written(
        &self,
        run: &RunId,
    ) -> Result<Vec<(FindingSetId, String)>, StoreError> {
        let conn = self.conn()?;
        index2::finding_sets_written(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// The finding set of `run` written last.
    pub fn newest_finding_set(&self, run: &RunId) -> Result<Option<FindingSetId>, StoreError> {
        let conn = self.conn()?;
        index2::newest_finding_set(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// The highest seq among `run`'s interactions.
    pub fn max_seq(&self, run: &RunId) -> Result<Option<u64>, StoreError> {
        let conn = self.conn()?;
        index2::max_seq(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// Forgets the id map and the cached blocks: after the index was rebuilt, block ids
    /// name other blocks.
    pub fn forget(&self) {
        if let Ok(mut map) = self.idmap.lock() {
            map.clear();
        }
        self.cache.clear();
    }

    /// Whether any block is indexed.
    pub fn has_blocks(&self) -> Result<bool, StoreError> {
        let conn = self.conn()?;
        index2::has_blocks(&conn).map_err(sql_err(&self.index_path))
    }

    /// The text of `strings` row `id` (gc carries an interaction's operation over from
    /// its old columns).
    pub(crate) fn string_of(&self, id: i64) -> Result<Arc<str>, StoreError> {
        self.string(id)
    }

    /// The text of `strings` row `id`; reads the table again when `id` is new.
    fn string(&self, id: i64) -> Result<Arc<str>, StoreError> {
        let mut strings = self
            .strings
            .lock()
            .map_err(|_| StoreError::Other("strings lock poisoned".into()))?;
        if let Some(s) = strings.get(&id) {
            return Ok(s.clone());
        }
        let rows = {
            let conn = self.conn()?;
            index2::strings(&conn).map_err(sql_err(&self.index_path))?
        };
        for (k, text) in rows {
            strings.insert(k, Arc::from(text));
        }
        strings
            .get(&id)
            .cloned()
            .ok_or_else(|| StoreError::DamagedColumns {
                path: self.index_path.clone(),
                reason: format!("no string {id}"),
            })
    }

    /// The operation of test case `case`, read from the store: for a write that names a
    /// case it was not given. Empty when the case is not stored.
    pub fn case_operation(
        &self,
        backend: &dyn ObjectBackend,
        case: &Digest,
    ) -> Result<String, StoreError> {
        let Some(place) = self.locate(backend, case)? else {
            return Ok(String::new());
        };
        let (kind, payload) = self.read_at(backend, *case, place)?;
        match row_of_payload(kind, *case, &payload)? {
            IndexRow::Case { operation, .. } => Ok(operation),
            _ => Ok(String::new()),
        }
    }

    /// Calls `each` with every interaction of `run` whose seq is in `from..to`, block by
    /// block (by lowest seq; within a block in block order), from the blocks' columns and
    /// their decoded ids.
    fn each_interaction(
        &self,
        backend: &dyn ObjectBackend,
        run: &RunId,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(PageItem, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let blocks = {
            let conn = self.conn()?;
            index2::run_blocks(&conn, run, from, to).map_err(sql_err(&self.index_path))?
        };
        for b in blocks {
            let damaged = |reason: String| StoreError::DamagedColumns {
                path: self.index_path.clone(),
                reason: format!("block {}: {reason}", b.id),
            };
            let cols = match &b.cols {
                Some(bytes) => cols::decode(bytes, b.count).map_err(damaged)?,
                None => return Err(damaged("no query columns".into())),
            };
            let parsed = self.block(backend, b.id)?;
            if cols.len() != parsed.len() {
                return Err(damaged(format!(
                    "columns for {} objects, the block holds {}",
                    cols.len(),
                    parsed.len()
                )));
            }
            for (ordinal, col) in cols.iter().enumerate() {
                let Col::Interaction {
                    seq,
                    status,
                    case,
                    operation,
                    method,
                    ..
                } = *col
                else {
                    continue;
                };
                if seq < from || seq >= to {
                    continue;
                }
                let id = parsed.ids()[ordinal];
                let case_id = cols::resolve(&parsed, case)
                    .ok_or_else(|| damaged(format!("object {ordinal} names no test case")))?;
                let operation = self.string(operation)?;
                let row = InteractionRow {
                    seq,
                    id: InteractionId(id),
                    case: CaseId(case_id),
                    operation: operation.to_string(),
                    method: self.string(method)?.to_string(),
                    status,
                };
                let item = PageItem {
                    row,
                    at: BlockRef {
                        block: b.id,
                        ordinal: ordinal as u32,
                    },
                    case_at: match case {
                        Target::Ref(r) if r.is_multiple_of(2) => Some(BlockRef {
                            block: b.id,
                            ordinal: (r / 2) as u32,
                        }),
                        _ => None,
                    },
                };
                each(item, &operation)?;
            }
        }
        Ok(())
    }

    /// The interactions of `run` with seq in `from..to`, in (seq, id) order.
    pub fn interactions_page(
        &self,
        backend: &dyn ObjectBackend,
        run: &RunId,
        from: u64,
        to: u64,
    ) -> Result<Vec<PageItem>, StoreError> {
        let mut out = Vec::new();
        self.each_interaction(backend, run, from, to, &mut |item, _| {
            out.push(item);
            Ok(())
        })?;
        out.sort_by_key(|a| (a.row.seq, a.row.id));
        Ok(out)
    }

    /// What `diff` needs of a run: its test cases in seq order and its requests per
    /// operation and status class.
    pub fn tally(&self, backend: &dyn ObjectBackend, run: &RunId) -> Result<RunTally, StoreError> {
        let mut out = RunTally::default();
        self.each_interaction(backend, run, 0, u64::MAX, &mut |item, operation| {
            out.cases.push((item.row.seq, item.row.case));
            let class = item.row.status.map_or(0, |s| usize::from(s / 100).min(5));
            match out.classes.get_mut(operation) {
                Some(counts) => counts[class] += 1,
                None => {
                    let mut counts = [0u64; 6];
                    counts[class] = 1;
                    out.classes.insert(operation.to_owned(), counts);
                }
            }
            Ok(())
        })?;
        // Blocks come by lowest seq; two blocks of one run may interleave (a writer that
        // sealed one early): the answer is in seq order.
        out.cases.sort_by_key(|(seq, _)| *seq);
        Ok(out)
    }

    /// Every run's summary, newest first, or only `run`'s.
    pub fn summaries(&self, run: Option<&RunId>) -> Result<Vec<RunSummary>, StoreError> {
        let conn = self.conn()?;
        index2::summaries(&conn, run).map_err(sql_err(&self.index_path))
    }

    /// The newest run tagged `key=value`.
    pub fn newest_run_tagged(&self, key: &str, value: &str) -> Result<Option<Digest>, StoreError> {
        let conn = self.conn()?;
        index2::newest_run_tagged(&conn, key, value).map_err(sql_err(&self.index_path))
    }

    /// `describe` of a run end or finding set, from its row.
    pub fn describe_meta(
        &self,
        kind: ObjectKind,
        id: &Digest,
    ) -> Result<Option<String>, StoreError> {
        let conn = self.conn()?;
        index2::describe_meta(&conn, kind, id).map_err(sql_err(&self.index_path))
    }
}
