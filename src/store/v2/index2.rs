//! The format-2 index: SQLite schema 4 in `index-2.sqlite` (FORMAT.md §10.3).
//!
//! One row per *block*, not per object: where the block lives, its stream, its object
//! count, and `keys`, the first 4 bytes of each object's id in block order, from which
//! [`super::idmap::IdMap`] finds an object by id. Ids are never stored whole for exchange
//! and blob objects: a reader hashes the restored payload to confirm a candidate. Only meta
//! objects (runs, run ends, finding sets, dictionaries) get rows of their own, a few per run.
//!
//! Like schema 3, this is derived data: everything in it can be rebuilt from `packs-2/`.
//! Writers insert in one transaction per durable append, after the blocks are on disk.
//!
//! Depends on: `ids`, `store` (errors), `v2::block` (streams).

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::ids::{Digest, FindingSetId, RunEndId, RunId, DIGEST_LEN};
use crate::model::{FindingSet, RunKind, RunOutcome, RunStart};
use crate::store::error::StoreError;
use crate::store::index::outcome_name;
use crate::store::index::sql_err;

use super::block::Stream;

/// The schema of `index-2.sqlite` this build reads and writes.
pub const INDEX2_SCHEMA_VERSION: u32 = 4;

/// The file of the format-2 index, beside the format-1 `index.sqlite` (which format-2
/// readers ignore, so that `probe store upgrade` can write beside it).
pub const INDEX2_FILE: &str = "index-2.sqlite";

/// Bytes of an object's id kept in `blocks.keys`: its first 3. A lookup by id meets, besides
/// the object it wants, objects / 2^24 other candidates on average (0.18 at 3M objects, a
/// 2M-interaction store), each rejected by hashing a block's objects; a fourth byte would
/// cost 1.5 bytes an interaction, 3% of the whole store.
pub const KEY_LEN: usize = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS packs(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS strings(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS blocks(
  id INTEGER PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
  stored_len INTEGER NOT NULL, raw_len INTEGER NOT NULL, stream INTEGER NOT NULL,
  dict INTEGER NOT NULL, count INTEGER NOT NULL, run INTEGER, seq_lo INTEGER,
  seq_hi INTEGER, interactions INTEGER NOT NULL, keys BLOB NOT NULL, cols BLOB);
CREATE INDEX IF NOT EXISTS blocks_run ON blocks(run, seq_lo) WHERE run IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS blocks_place ON blocks(pack, offset);
CREATE TABLE IF NOT EXISTS runs(
  key INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, kind INTEGER, name TEXT, tags TEXT,
  document BLOB, document_source TEXT, base_url TEXT, seed INTEGER, started_ms INTEGER,
  block INTEGER NOT NULL, ordinal INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
CREATE TABLE IF NOT EXISTS run_ends(
  id BLOB PRIMARY KEY, run INTEGER NOT NULL, ended_ms INTEGER, outcome INTEGER,
  interactions INTEGER, finding_set BLOB, block INTEGER, ordinal INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS finding_sets(
  id BLOB PRIMARY KEY, run INTEGER NOT NULL, judged_by INTEGER, findings INTEGER,
  block INTEGER, ordinal INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS findings(
  finding_set BLOB, ordinal INTEGER, oracle INTEGER, code TEXT, operation INTEGER,
  severity INTEGER, key_by_message TEXT, occurrences INTEGER,
  PRIMARY KEY(finding_set, ordinal)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dicts(
  key INTEGER PRIMARY KEY, block INTEGER NOT NULL, ordinal INTEGER NOT NULL);
";

/// Opens (creating when absent) the format-2 index; refuses one of a newer schema, which
/// this build can neither write nor be sure to read.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    crate::store::index::retry_while_busy(|| open_once(path))
}

fn open_once(path: &Path) -> Result<Connection, StoreError> {
    let e = || sql_err(path);
    let conn = Connection::open(path).map_err(e())?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(e())?;
    // As for schema 3: WAL so readers never block a writer; NORMAL because the blocks are
    // fsynced before every commit that names them.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(e())?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(e())?;
    conn.execute_batch(SCHEMA).map_err(e())?;
    let found: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(e())?;
    match found.map(|v| v.parse::<u32>()) {
        None => {
            conn.execute_batch(&format!(
                // OR IGNORE: another opener of a new store may have written the same
                // rows between the read above and this write.
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '{INDEX2_SCHEMA_VERSION}'),
                                                     ('store_format', '2.0');"
            ))
            .map_err(e())?;
        }
        Some(Ok(v)) if v == INDEX2_SCHEMA_VERSION => {}
        Some(Ok(v)) if v > INDEX2_SCHEMA_VERSION => {
            return Err(StoreError::IndexTooNew {
                path: path.to_path_buf(),
                found: v,
                supported: INDEX2_SCHEMA_VERSION,
            })
        }
        Some(other) => {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: format!(
                    "{INDEX2_FILE} has schema_version {other:?}, not {INDEX2_SCHEMA_VERSION}"
                ),
            })
        }
    }
    Ok(conn)
}

/// The `keys` value of a block: the first [`KEY_LEN`] bytes of each id, in block order.
pub fn keys_of(ids: &[Digest]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.0[..KEY_LEN].to_vec()).collect()
}

/// The in-memory key of an id: its first [`KEY_LEN`] bytes read big endian, so that keys
/// sort as ids (and as their hex prefixes) do.
pub fn key_of(id: &Digest) -> u32 {
    key_from(&id.0[..KEY_LEN])
}

/// The in-memory key of [`KEY_LEN`] stored bytes.
pub fn key_from(bytes: &[u8]) -> u32 {
    match bytes {
        [a, b, c, ..] => u32::from_be_bytes([0, *a, *b, *c]),
        _ => 0,
    }
}

/// One block to insert, after its bytes are durable in `pack` at `offset`.
#[derive(Clone, Debug)]
pub struct NewBlock {
    pub offset: u64,
    pub stored_len: u32,
    pub raw_len: u32,
    pub stream: Stream,
    pub dict: u32,
    /// The block's `keys` ([`keys_of`] its ids): what is kept of them until the insert.
    pub keys: Vec<u8>,
    /// Interactions among the objects.
    pub interactions: u32,
    /// The run of those interactions (one per block), and their lowest and highest seq.
    pub seqs: Option<(RunId, u64, u64)>,
    /// Query columns of an exchange block ([`super::cols`]).
    pub cols: Option<Vec<u8>>,
}

/// Where a block lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPlace {
    pub pack: String,
    pub offset: u64,
    pub stored_len: u32,
}

/// The id of the `packs` row of `name`, inserting it when new.
pub fn pack_key(tx: &Transaction<'_>, name: &str) -> rusqlite::Result<i64> {
    tx.execute("INSERT OR IGNORE INTO packs(name) VALUES (?1)", [name])?;
    tx.query_row("SELECT id FROM packs WHERE name = ?1", [name], |r| r.get(0))
}

/// Inserts the row of a block durable in pack `pack` (a `packs` id); gives its id. A block
/// already indexed (a rebuild on open met it between its writer's append and commit) keeps
/// its row.
pub fn insert_block(tx: &Transaction<'_>, pack: i64, b: &NewBlock) -> rusqlite::Result<i64> {
    let count = (b.keys.len() / KEY_LEN) as i64;
    let inserted = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO blocks(pack, offset, stored_len, raw_len, stream, dict, count,
                            interactions, keys, run, seq_lo, seq_hi, cols)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                 (SELECT key FROM runs WHERE id = ?10), ?11, ?12, ?13)",
        )?
        .execute(params![
            pack,
            b.offset as i64,
            b.stored_len,
            b.raw_len,
            b.stream.byte(),
            b.dict,
            count,
            b.interactions,
            b.keys,
            b.seqs.as_ref().map(|(run, _, _)| run.0 .0.to_vec()),
            b.seqs.map(|(_, lo, _)| lo as i64),
            b.seqs.map(|(_, _, hi)| hi as i64),
            b.cols,
        ])?;
    if inserted == 0 {
        return tx
            .prepare_cached("SELECT id FROM blocks WHERE pack = ?1 AND offset = ?2")?
            .query_row(params![pack, b.offset as i64], |r| r.get(0));
    }
    Ok(tx.last_insert_rowid())
}

/// Records a run start stored at (`block`, `ordinal`): runs are listed and found by name
/// from these rows, without decoding their blocks.
pub fn insert_run(
    tx: &Transaction<'_>,
    id: &Digest,
    start: &RunStart,
    block: i64,
    ordinal: u32,
) -> rusqlite::Result<()> {
    // Tags as JSON text, as schema 3 keeps them: a map with sorted keys.
    let tags = serde_json::to_string(&start.tags).unwrap_or_else(|_| "{}".into());
    tx.prepare_cached(
        "INSERT OR IGNORE INTO runs(id, kind, name, tags, document, document_source, base_url,
                                    seed, started_ms, block, ordinal)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        id.0.as_slice(),
        run_kind_code(start.kind),
        start.name,
        tags,
        start.document.0 .0.as_slice(),
        start.document_source,
        start.base_url,
        start.seed as i64,
        start.started_ms as i64,
        block,
        ordinal
    ])?;
    Ok(())
}

/// `runs.kind`: 1 a run, 2 a replay.
fn run_kind_code(kind: RunKind) -> i64 {
    match kind {
        RunKind::Run => 1,
        RunKind::Replay => 2,
    }
}

/// The `strings` id of `text`, inserting it when new: names repeated in many rows
/// (oracles, outcomes) are kept once.
pub fn string_key(tx: &Connection, text: &str) -> rusqlite::Result<i64> {
    tx.prepare_cached("INSERT OR IGNORE INTO strings(text) VALUES (?1)")?
        .execute([text])?;
    tx.prepare_cached("SELECT id FROM strings WHERE text = ?1")?
        .query_row([text], |r| r.get(0))
}

/// What the index keeps of a run's end manifest, beside where it is stored.
pub struct RunEndRow<'a> {
    pub run: &'a RunId,
    pub ended_ms: u64,
    pub outcome: RunOutcome,
    pub interactions: u64,
    pub findings: &'a FindingSetId,
}

/// Records a run end stored at (`block`, `ordinal`). A run end whose run start is not
/// indexed gets no row (`runs.key` is what it is filed under): reads by id still find it.
pub fn insert_run_end(
    tx: &Transaction<'_>,
    id: &Digest,
    end: &RunEndRow<'_>,
    block: i64,
    ordinal: u32,
) -> rusqlite::Result<()> {
    let outcome = string_key(tx, outcome_name(end.outcome))?;
    tx.prepare_cached(
        "INSERT OR IGNORE INTO run_ends(id, run, ended_ms, outcome, interactions, finding_set,
                                        block, ordinal)
         SELECT ?1, key, ?3, ?4, ?5, ?6, ?7, ?8 FROM runs WHERE id = ?2",
    )?
    .execute(params![
        id.0.as_slice(),
        end.run.0 .0.as_slice(),
        end.ended_ms as i64,
        outcome,
        end.interactions as i64,
        end.findings.0 .0.as_slice(),
        block,
        ordinal
    ])?;
    Ok(())
}

/// Records a finding set stored at (`block`, `ordinal`), with a `findings` row per finding
/// (summaries count them); as for run ends, only for a run the index knows.
pub fn insert_finding_set(
    tx: &Transaction<'_>,
    id: &Digest,
    set: &FindingSet,
    block: i64,
    ordinal: u32,
) -> rusqlite::Result<()> {
    let judged_by = string_key(tx, &set.judged_by)?;
    let inserted = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO finding_sets(id, run, judged_by, findings, block, ordinal)
         SELECT ?1, key, ?3, ?4, ?5, ?6 FROM runs WHERE id = ?2",
        )?
        .execute(params![
            id.0.as_slice(),
            set.run.0 .0.as_slice(),
            judged_by,
            set.findings.len() as i64,
            block,
            ordinal
        ])?;
    if inserted == 0 {
        return Ok(());
    }
    for (at, f) in set.findings.iter().enumerate() {
        let oracle = string_key(tx, &f.oracle)?;
        let operation = string_key(tx, &f.operation)?;
        let severity = match f.severity {
            crate::model::Severity::Low => 1,
            crate::model::Severity::Medium => 2,
            crate::model::Severity::High => 3,
        };
        tx.prepare_cached(
            "INSERT OR IGNORE INTO findings(finding_set, ordinal, oracle, code, operation,
                                            severity, key_by_message, occurrences)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            id.0.as_slice(),
            at as i64,
            oracle,
            f.code,
            operation,
            severity,
            f.key_by_message,
            f.occurrences() as i64
        ])?;
    }
    Ok(())
}

/// A digest from a 32-byte column; another length is a damaged row.
fn digest_of(bytes: Vec<u8>) -> rusqlite::Result<Digest> {
    <[u8; DIGEST_LEN]>::try_from(bytes.as_slice())
        .map(Digest)
        .map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                bytes.len(),
                rusqlite::types::Type::Blob,
                format!("an id of {} bytes, not {DIGEST_LEN}", bytes.len()).into(),
            )
        })
}

/// The latest end manifest of a run (the newest `ended_ms`, as schema 3 answers).
pub fn run_end_id(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<RunEndId>> {
    conn.prepare_cached(
        "SELECT e.id FROM run_ends e JOIN runs r ON r.key = e.run WHERE r.id = ?1
         ORDER BY e.ended_ms DESC, e.id LIMIT 1",
    )?
    .query_row([run.0 .0.as_slice()], |r| r.get::<_, Vec<u8>>(0))
    .optional()?
    .map(|b| digest_of(b).map(RunEndId))
    .transpose()
}

/// The finding sets of a run: the one its latest end manifest names first, then the others
/// (rechecks) by id, as schema 3 answers.
pub fn finding_sets_of(conn: &Connection, run: &RunId) -> rusqlite::Result<Vec<FindingSetId>> {
    let mut st = conn.prepare_cached(
        "SELECT s.id FROM finding_sets s JOIN runs r ON r.key = s.run WHERE r.id = ?1
         ORDER BY (s.id = (SELECT finding_set FROM run_ends WHERE run = r.key
                           ORDER BY ended_ms DESC, id LIMIT 1)) DESC, s.id",
    )?;
    let rows = st.query_map([run.0 .0.as_slice()], |r| r.get::<_, Vec<u8>>(0))?;
    rows.map(|b| b.and_then(digest_of).map(FindingSetId))
        .collect()
}

/// The finding set of a run written last: by pack name, then place in the pack.
pub fn newest_finding_set(
    conn: &Connection,
    run: &RunId,
) -> rusqlite::Result<Option<FindingSetId>> {
    conn.prepare_cached(
        "SELECT s.id FROM finding_sets s JOIN runs r ON r.key = s.run
         JOIN blocks b ON b.id = s.block JOIN packs p ON p.id = b.pack
         WHERE r.id = ?1 ORDER BY p.name DESC, b.offset DESC, s.ordinal DESC LIMIT 1",
    )?
    .query_row([run.0 .0.as_slice()], |r| r.get::<_, Vec<u8>>(0))
    .optional()?
    .map(|b| digest_of(b).map(FindingSetId))
    .transpose()
}

/// The finding sets of a run in write order (oldest first), each with the name of the
/// pack that holds it.
pub fn finding_sets_written(
    conn: &Connection,
    run: &RunId,
) -> rusqlite::Result<Vec<(FindingSetId, String)>> {
    let mut st = conn.prepare_cached(
        "SELECT s.id, p.name FROM finding_sets s JOIN runs r ON r.key = s.run
         JOIN blocks b ON b.id = s.block JOIN packs p ON p.id = b.pack
         WHERE r.id = ?1 ORDER BY p.name, b.offset, s.ordinal",
    )?;
    let rows = st.query_map([run.0 .0.as_slice()], |r| {
        Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, String>(1)?))
    })?;
    rows.map(|row| row.and_then(|(b, name)| Ok((FindingSetId(digest_of(b)?), name))))
        .collect()
}

/// Runs named `name`, newest first.
pub fn runs_named(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Digest>> {
    let mut st =
        conn.prepare_cached("SELECT id FROM runs WHERE name = ?1 ORDER BY started_ms DESC")?;
    let rows = st.query_map([name], |r| r.get::<_, Vec<u8>>(0))?;
    let mut out = Vec::new();
    for bytes in rows {
        // A row that is not 32 bytes names nothing this build can read: skipped, as a
        // damaged row must not stop the others from being found.
        if let Ok(id) = <[u8; DIGEST_LEN]>::try_from(bytes?.as_slice()) {
            out.push(Digest(id));
        }
    }
    Ok(out)
}

/// Every block's id and keys after block `after`, in id order: what an
/// [`super::idmap::IdMap`] has not seen yet.
pub fn keys_after(conn: &Connection, after: i64) -> rusqlite::Result<Vec<(i64, Vec<u8>)>> {
    let mut st = conn.prepare_cached("SELECT id, keys FROM blocks WHERE id > ?1 ORDER BY id")?;
    let rows = st.query_map([after], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Where block `block` lives; `None` when no row has that id.
pub fn block_place(conn: &Connection, block: i64) -> rusqlite::Result<Option<BlockPlace>> {
    conn.prepare_cached(
        "SELECT p.name, b.offset, b.stored_len FROM blocks b JOIN packs p ON p.id = b.pack
         WHERE b.id = ?1",
    )?
    .query_row([block], |r| {
        Ok(BlockPlace {
            pack: r.get(0)?,
            offset: r.get::<_, i64>(1)? as u64,
            stored_len: r.get(2)?,
        })
    })
    .optional()
}

/// The highest seq among a run's interactions; `None` when it has none.
pub fn max_seq(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<u64>> {
    conn.prepare_cached(
        "SELECT max(b.seq_hi) FROM blocks b JOIN runs r ON r.key = b.run WHERE r.id = ?1",
    )?
    .query_row([run.0 .0.as_slice()], |r| r.get::<_, Option<i64>>(0))
    .map(|seq| seq.map(|s| s as u64))
}

/// How many interactions the blocks filed under `run` hold.
pub fn interaction_count(conn: &Connection, run: &RunId) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(b.interactions), 0) FROM blocks b JOIN runs r ON r.key = b.run
         WHERE r.id = ?1",
    )?
    .query_row([run.0 .0.as_slice()], |r| r.get::<_, i64>(0))
    .map(|n| n as u64)
}

/// Whether any block is indexed.
pub fn has_blocks(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS(SELECT 1 FROM blocks)", [], |r| r.get(0))
}

/// Every run's summary, newest first (or only `only`'s): as schema 3 answers, the
/// interactions counted from the run's blocks.
pub fn summaries(
    conn: &Connection,
    only: Option<&RunId>,
) -> rusqlite::Result<Vec<crate::store::index::RunSummary>> {
    let mut st = conn.prepare_cached(
        "SELECT r.id, r.kind, r.name, r.tags, r.document_source, r.base_url, r.started_ms,
           e.ended_ms, (SELECT text FROM strings WHERE id = e.outcome),
           (SELECT coalesce(sum(b.interactions), 0) FROM blocks b WHERE b.run = r.key),
           (SELECT count(DISTINCT f.key_by_message) FROM findings f
              WHERE f.finding_set = e.finding_set)
         FROM runs r
         LEFT JOIN run_ends e ON e.id = (SELECT id FROM run_ends x WHERE x.run = r.key
                                         ORDER BY x.ended_ms DESC, x.id LIMIT 1)
         WHERE ?1 IS NULL OR r.id = ?1
         ORDER BY r.started_ms DESC, r.id DESC",
    )?;
    let only = only.map(|r| r.0 .0.to_vec());
    let rows = st.query_map([only], |r| {
        let tags: Option<String> = r.get(3)?;
        Ok(crate::store::index::RunSummary {
            id: RunId(digest_of(r.get(0)?)?),
            kind: match r.get::<_, Option<i64>>(1)? {
                Some(2) => "replay",
                _ => "run",
            }
            .to_owned(),
            name: r.get(2)?,
            tags: tags
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default(),
            document_source: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
            base_url: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
            started_ms: r.get::<_, Option<i64>>(6)?.unwrap_or(0) as u64,
            ended_ms: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
            outcome: r.get(8)?,
            interactions: r.get::<_, i64>(9)? as u64,
            findings: r.get::<_, Option<i64>>(10)?.unwrap_or(0) as u64,
        })
    })?;
    rows.collect()
}

/// The newest run whose tags hold `key=value`.
pub fn newest_run_tagged(
    conn: &Connection,
    key: &str,
    value: &str,
) -> rusqlite::Result<Option<Digest>> {
    let mut st =
        conn.prepare_cached("SELECT id, tags FROM runs ORDER BY started_ms DESC, id DESC")?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let tags: Option<String> = r.get(1)?;
        let tags: std::collections::BTreeMap<String, String> = tags
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if tags.get(key).is_some_and(|v| v == value) {
            return digest_of(r.get(0)?).map(Some);
        }
    }
    Ok(None)
}

/// One exchange block of a run: its id, object count and query columns.
pub struct RunBlock {
    pub id: i64,
    pub count: u32,
    pub cols: Option<Vec<u8>>,
}

/// The exchange blocks of `run` that may hold a seq in `from..to`, by lowest seq.
pub fn run_blocks(
    conn: &Connection,
    run: &RunId,
    from: u64,
    to: u64,
) -> rusqlite::Result<Vec<RunBlock>> {
    let mut st = conn.prepare_cached(
        "SELECT b.id, b.count, b.cols FROM blocks b JOIN runs r ON r.key = b.run
         WHERE r.id = ?1 AND b.seq_hi >= ?2 AND b.seq_lo < ?3 ORDER BY b.seq_lo, b.id",
    )?;
    let clamp = |v: u64| v.min(i64::MAX as u64) as i64;
    let rows = st.query_map(params![run.0 .0.as_slice(), clamp(from), clamp(to)], |r| {
        Ok(RunBlock {
            id: r.get(0)?,
            count: r.get(1)?,
            cols: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// Every interned string, by id.
pub fn strings(conn: &Connection) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut st = conn.prepare_cached("SELECT id, text FROM strings")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// What `describe` says of a run end or a finding set, from their rows (as schema 3 says
/// it); `None` when the index has no row for `id`.
pub fn describe_meta(
    conn: &Connection,
    kind: crate::store::format::ObjectKind,
    id: &Digest,
) -> rusqlite::Result<Option<String>> {
    use crate::store::format::ObjectKind;
    match kind {
        ObjectKind::RunEnd => conn
            .prepare_cached(
                "SELECT (SELECT text FROM strings WHERE id = e.outcome), e.interactions
                 FROM run_ends e WHERE e.id = ?1",
            )?
            .query_row([id.0.as_slice()], |r| {
                Ok(format!(
                    "{}, {} interactions",
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, i64>(1)?
                ))
            })
            .optional(),
        ObjectKind::FindingSet => conn
            .prepare_cached(
                "SELECT s.findings, (SELECT text FROM strings WHERE id = s.judged_by)
                 FROM finding_sets s WHERE s.id = ?1",
            )?
            .query_row([id.0.as_slice()], |r| {
                Ok(format!(
                    "{} findings by {}",
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?.unwrap_or_default()
                ))
            })
            .optional(),
        _ => Ok(None),
    }
}

/// Replaces the query columns of block `block` (a rebuild that learned an operation late).
pub fn set_cols(tx: &Transaction<'_>, block: i64, cols: &[u8]) -> rusqlite::Result<()> {
    tx.prepare_cached("UPDATE blocks SET cols = ?2 WHERE id = ?1")?
        .execute(params![block, cols])?;
    Ok(())
}

/// Every indexed block: its pack's name, its offset and its keys (what verify checks
/// against the packs).
pub fn indexed_blocks(conn: &Connection) -> rusqlite::Result<Vec<(String, u64, Vec<u8>)>> {
    let mut st = conn.prepare_cached(
        "SELECT p.name, b.offset, b.keys FROM blocks b JOIN packs p ON p.id = b.pack",
    )?;
    let rows = st.query_map([], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?))
    })?;
    rows.collect()
}
