//! What an open format-2 store holds besides its packs: the schema-4 index connection, the
//! [`IdMap`] and the [`BlockCache`], and the reads built on them: locate an object by id,
//! read it (decompress its block through the cache, restore its payload), find ids by
//! prefix. `store::Inner` holds one as `Layout::Two`.
//!
//! Every read of bytes from disk is checked (block check value, content, the object's id
//! recomputed by hashing): a damaged pack gives a typed error naming pack and offset.
//!
//! Depends on: `ids`, `store` (the byte layer, kinds, errors), `v2::{block, content, cache,
//! idmap, index2}`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use crate::ids::{Digest, FindingSetId, RunEndId, RunId};
use crate::store::index::sql_err;
use crate::store::{ObjectBackend, ObjectKind, StoreError};

use super::block::{self, BLOCK_HEADER_LEN};
use super::cache::{BlockCache, DEFAULT_BUDGET};
use super::content::Parsed;
use super::idmap::{BlockRef, IdMap};
use super::index2::{self, key_of};

/// The format-2 parts of an open store.
pub struct V2 {
    pub(crate) index_path: PathBuf,
    conn: Mutex<Connection>,
    idmap: Mutex<IdMap>,
    cache: BlockCache,
}

impl V2 {
    /// Opens (creating when absent) the index at `index_path`.
    pub fn open(index_path: PathBuf) -> Result<V2, StoreError> {
        let conn = index2::open(&index_path)?;
        Ok(V2 {
            index_path,
            conn: Mutex::new(conn),
            idmap: Mutex::new(IdMap::new()),
            cache: BlockCache::new(DEFAULT_BUDGET),
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
        // No dictionary yet: format-2 writers of this build train none (increment 5).
        let (header, content) =
            block::open(&bytes, block::no_dictionary).map_err(|e| damaged(e.to_string()))?;
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
        let head = |pad: char| {
            let hex: String = prefix
                .chars()
                .chain(std::iter::repeat(pad))
                .take(8)
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
}
