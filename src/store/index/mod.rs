//! The SQLite index: where each object lives, plus query tables derived from the objects.
//!
//! Everything here can be rebuilt from the packs alone ([`super::ExclusiveStore::reindex`]), so the
//! index is a cache with a schema of its own ([`INDEX_SCHEMA_VERSION`], in the `meta`
//! table). A reader meeting a newer schema may read it but must not write it.
//!
//! Depends on: `ids`, `model`, `store::format`, `store::object`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{named_params, params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use crate::ids::{CaseId, Digest, FindingSetId, IdMap, IdSet, InteractionId, RunEndId, RunId};

use super::format::{ObjectKind, RecordHeader};
use super::object::IndexRow;
use super::StoreError;

/// Schema version of the index this build writes.
///
/// Changes: 1: first schema (objects, packs, cases, runs, run_ends, interactions,
/// finding_sets, findings). 2: a test case's and an interaction's location is kept in its
/// `cases` or `interactions` row instead of a row of its own; `objects` is a view over
/// `other_objects` and those two tables, so queries written for schema 1 still answer.
/// Every interaction cost two inserts under random keys, now one, and the index is a
/// quarter smaller (docs/benchmarks.md, "index schema 2"). A schema-1 index is migrated in
/// place
/// on open ([`migrate_1_to_2`]). 3: no b-tree under random 32-byte keys is written row by
/// row any more. `cases` is a table in insertion order with an index on the first 8 bytes
/// of the id; `interactions` is in insertion order with no index on the id, and
/// `interaction_ids` ([`id_key`] of the id, row) is filled in bulk, sorted, every so many
/// interactions ([`index_interaction_ids`]); the rows
/// after `meta.interaction_ids_through` are found by a scan of that tail. Every commit of
/// schema 2 rewrote most pages of the interactions' id index, and the cost of a recorded
/// interaction grew with the store (docs/benchmarks.md). Migrated in place on open
/// ([`migrate_2_to_3`]).
pub const INDEX_SCHEMA_VERSION: u32 = 3;

/// The `meta` key of the last `interactions` rowid that `interaction_ids` covers.
const IDS_THROUGH: &str = "interaction_ids_through";

// The view's kind tags are `ObjectKind::TestCase` (2) and `ObjectKind::Interaction` (3);
// a unit test holds them to it.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS packs(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS other_objects(
  id BLOB PRIMARY KEY, kind INTEGER NOT NULL, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
  raw_len INTEGER NOT NULL, stored_len INTEGER NOT NULL, dict INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cases(
  id BLOB NOT NULL, operation TEXT NOT NULL, method TEXT NOT NULL,
  pack INTEGER, offset INTEGER, raw_len INTEGER, stored_len INTEGER, dict INTEGER
);
CREATE INDEX IF NOT EXISTS cases_id ON cases(substr(id, 1, 8));
CREATE TABLE IF NOT EXISTS runs(
  id BLOB PRIMARY KEY, kind TEXT NOT NULL, name TEXT, tags TEXT NOT NULL,
  document BLOB NOT NULL, document_source TEXT NOT NULL, base_url TEXT NOT NULL,
  seed INTEGER NOT NULL, started_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
CREATE TABLE IF NOT EXISTS run_ends(
  id BLOB PRIMARY KEY, run BLOB NOT NULL, ended_ms INTEGER NOT NULL, outcome TEXT NOT NULL,
  interactions INTEGER NOT NULL, finding_set BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS run_ends_run ON run_ends(run);
CREATE TABLE IF NOT EXISTS run_keys(key INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS interactions(
  id BLOB NOT NULL, run INTEGER NOT NULL, seq INTEGER NOT NULL, case_id BLOB NOT NULL,
  operation TEXT NOT NULL, method TEXT NOT NULL, status INTEGER, status_class INTEGER NOT NULL,
  request_body BLOB, response_body BLOB,
  pack INTEGER, offset INTEGER, raw_len INTEGER, stored_len INTEGER, dict INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS interactions_run_seq ON interactions(run, seq);
DROP INDEX IF EXISTS interactions_operation;
DROP INDEX IF EXISTS interactions_status_class;
CREATE TABLE IF NOT EXISTS interaction_ids(
  key INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(key, at)
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta(key, value) VALUES ('interaction_ids_through', '0');
CREATE TABLE IF NOT EXISTS finding_sets(
  id BLOB PRIMARY KEY, run BLOB NOT NULL, judged_by TEXT NOT NULL, findings INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS finding_sets_run ON finding_sets(run);
CREATE TABLE IF NOT EXISTS findings(
  finding_set BLOB NOT NULL, ordinal INTEGER NOT NULL, run BLOB NOT NULL, oracle TEXT NOT NULL,
  code TEXT, operation TEXT NOT NULL, severity TEXT NOT NULL, key_by_message TEXT NOT NULL,
  occurrences INTEGER NOT NULL, PRIMARY KEY(finding_set, ordinal)
);
";

/// The `objects` view (the same in schemas 2 and 3): every located record, as the table of
/// schema 1 listed them. Aggregates read it; lookups by id go to the tables, whose id
/// indexes a view cannot reach in schema 3.
const OBJECTS_VIEW: &str = "
CREATE VIEW IF NOT EXISTS objects(id, kind, pack, offset, raw_len, stored_len, dict) AS
  SELECT id, kind, pack, offset, raw_len, stored_len, dict FROM other_objects
  UNION ALL
  SELECT id, 2, pack, offset, raw_len, stored_len, dict FROM cases WHERE pack IS NOT NULL
  UNION ALL
  SELECT id, 3, pack, offset, raw_len, stored_len, dict FROM interactions WHERE pack IS NOT NULL;
";

/// The test case of id `:id`, through the index on its 8-byte prefix.
const CASE_BY_ID: &str = "substr(id, 1, 8) = substr(:id, 1, 8) AND id = :id";
/// The interactions of id `:id` and [`id_key`] `:key`: those `interaction_ids` covers,
/// through it, and the tail after it, scanned.
const INTERACTION_BY_ID: &str = "(rowid IN (SELECT at FROM interaction_ids WHERE key = :key)
     OR rowid > (SELECT CAST(value AS INTEGER) FROM meta
       WHERE key = 'interaction_ids_through'))
   AND id = :id";

/// The `interaction_ids` key of an id: its first 8 bytes read as a big-endian unsigned
/// integer, moved into the signed range with the order kept (the top bit flipped), so that
/// ids that share a hex prefix have keys in one range. Computed here, not in SQL: SQLite
/// has no function that reads a blob as an integer, and integer keys compare in a fast path
/// that blob keys do not (a pass costs 1.2-1.5 µs per id against 2.2 µs with 8-byte blob
/// keys).
pub fn id_key(id: &[u8]) -> i64 {
    let mut head = [0u8; 8];
    let n = id.len().min(8);
    head[..n].copy_from_slice(&id[..n]);
    (u64::from_be_bytes(head) ^ (1 << 63)) as i64
}

/// Schema 1 to 2, in one transaction: `objects` becomes `other_objects`, and the rows of
/// test cases and interactions move into their `cases` and `interactions` rows. A test case
/// or interaction without a query row (its payload did not decode at reindex) keeps its row
/// in `other_objects`, which the `objects` view shows as before.
const MIGRATE_1_TO_2: &str = "
ALTER TABLE objects RENAME TO other_objects;
ALTER TABLE cases ADD COLUMN pack INTEGER;
ALTER TABLE cases ADD COLUMN offset INTEGER;
ALTER TABLE cases ADD COLUMN raw_len INTEGER;
ALTER TABLE cases ADD COLUMN stored_len INTEGER;
ALTER TABLE cases ADD COLUMN dict INTEGER;
ALTER TABLE interactions ADD COLUMN pack INTEGER;
ALTER TABLE interactions ADD COLUMN offset INTEGER;
ALTER TABLE interactions ADD COLUMN raw_len INTEGER;
ALTER TABLE interactions ADD COLUMN stored_len INTEGER;
ALTER TABLE interactions ADD COLUMN dict INTEGER;
UPDATE cases SET pack = o.pack, offset = o.offset, raw_len = o.raw_len,
  stored_len = o.stored_len, dict = o.dict
  FROM other_objects o WHERE o.id = cases.id AND o.kind = 2;
UPDATE interactions SET pack = o.pack, offset = o.offset, raw_len = o.raw_len,
  stored_len = o.stored_len, dict = o.dict
  FROM other_objects o WHERE o.id = interactions.id AND o.kind = 3;
DELETE FROM other_objects
  WHERE kind = 2 AND id IN (SELECT id FROM cases WHERE pack IS NOT NULL);
DELETE FROM other_objects
  WHERE kind = 3 AND id IN (SELECT id FROM interactions WHERE pack IS NOT NULL);
";

pub(crate) fn sql_err(path: &Path) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Index {
        path: path.to_path_buf(),
        source,
    }
}

/// Settings for the recorder's own connection, which inserts rows under random keys (BLAKE3
/// ids) for a whole run. With SQLite's default 2 MB page cache, a long run's batches read
/// and spill b-tree pages on almost every row, and checkpoints every 1,000 WAL pages
/// rewrite the same hot pages again and again: the index, not the sending, then limits a
/// run. A 32 MB cache (a ceiling, filled only as the index grows) and a checkpoint every
/// 16,000 pages keep the recorder ahead of the senders.
pub fn tune_for_writing(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "cache_size", -32_768)?;
    conn.pragma_update(None, "wal_autocheckpoint", 16_000)?;
    Ok(())
}

/// Opens (creating when absent) the index; returns the connection and its schema (newer
/// than [`INDEX_SCHEMA_VERSION`]: this build may read it, not write it).
pub fn open(path: &Path) -> Result<(Connection, u32), StoreError> {
    open_migrating(path).map(|(conn, schema, _)| (conn, schema))
}

/// [`open`], also saying from which older schema it migrated the index, if it did.
pub fn open_migrating(path: &Path) -> Result<(Connection, u32, Option<u32>), StoreError> {
    retry_while_busy(|| open_migrating_once(path))
}

/// How long opening an index is tried again while another connection holds it.
const OPEN_BUSY_FOR: Duration = Duration::from_secs(10);

/// `open` tried again while SQLite answers "busy". Openers of a new store race to set WAL
/// and write its schema, and SQLite answers some of those races busy at once, without
/// waiting through the busy timeout (a change of journal mode, or a read that must become a
/// write): seen with six threads opening one new store together.
pub(crate) fn retry_while_busy<T>(
    mut open: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let until = std::time::Instant::now() + OPEN_BUSY_FOR;
    loop {
        match open() {
            Err(StoreError::Index { source, .. })
                if is_busy(&source) && std::time::Instant::now() < until =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn open_migrating_once(path: &Path) -> Result<(Connection, u32, Option<u32>), StoreError> {
    let conn = Connection::open(path).map_err(sql_err(path))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(sql_err(path))?;
    // WAL: readers never block the recorder; NORMAL: a commit survives a process kill
    // (the WAL is in the OS), and the pack is fsynced before every commit anyway.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql_err(path))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql_err(path))?;
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql_err(path))?
        > 0;
    let version = if has_meta {
        schema_version(&conn).map_err(sql_err(path))?
    } else {
        0
    };
    if version > INDEX_SCHEMA_VERSION {
        return Ok((conn, version, None));
    }
    let migrated = (1..INDEX_SCHEMA_VERSION)
        .contains(&version)
        .then_some(version);
    if version == 1 {
        migrate_1_to_2(&conn).map_err(sql_err(path))?;
    }
    if (1..=2).contains(&version) {
        migrate_2_to_3(&conn).map_err(sql_err(path))?;
    }
    conn.execute_batch(SCHEMA).map_err(sql_err(path))?;
    conn.execute_batch(OBJECTS_VIEW).map_err(sql_err(path))?;
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1)",
        [INDEX_SCHEMA_VERSION.to_string()],
    )
    .map_err(sql_err(path))?;
    Ok((conn, INDEX_SCHEMA_VERSION, migrated))
}

/// Whether an error opening the index means it cannot be written here (a read-only medium,
/// no write permission): then [`open_read_only`] may still read it.
pub fn is_unwritable(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
    )
}

/// Opens the index for reading only, writing nothing: no schema, no migration, and no
/// `-wal` or `-shm` where none can be made (for a store on a read-only medium, or one this
/// user may not write). Through SQLite's shared memory when another process has made it
/// (a writer with the rights this one lacks: reads see its commits), else as an immutable
/// file. The index must have this build's schema or a newer one (an older one would need
/// its migration written); returns the connection and the schema.
pub fn open_read_only(path: &Path) -> Result<(Connection, u32), StoreError> {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    use rusqlite::OpenFlags;
    const IN_URI: &AsciiSet = &CONTROLS.add(b'%').add(b'?').add(b'#').add(b' ');
    let text = path.to_str().ok_or_else(|| {
        StoreError::Other(format!(
            "cannot open {} read-only: the path is not UTF-8",
            path.display()
        ))
    })?;
    let uri = |query: &str| format!("file:{}?{query}", utf8_percent_encode(text, IN_URI));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open = |query: &str| -> rusqlite::Result<(Connection, u32)> {
        let conn = Connection::open_with_flags(uri(query), flags)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let version = schema_version(&conn)?;
        Ok((conn, version))
    };
    let (conn, version) = match open("mode=ro") {
        Err(e) if is_unwritable(&e) => open("immutable=1"),
        other => other,
    }
    .map_err(sql_err(path))?;
    if version < INDEX_SCHEMA_VERSION {
        return Err(StoreError::Other(format!(
            "index {} has schema {version}, which this probe reads only once migrated to \
             schema {INDEX_SCHEMA_VERSION}, and it cannot be written here",
            path.display()
        )));
    }
    Ok((conn, version))
}

/// Schema 2 to 3, before [`SCHEMA`] makes the new indexes: `cases` (keyed by its id) and
/// `interactions` (with a unique id) are copied into tables of schema 3, interactions
/// keeping their row numbers, so `interaction_ids` can be filled from them.
const MIGRATE_2_TO_3: &str = "
DROP VIEW IF EXISTS objects;
CREATE TABLE cases_3(
  id BLOB NOT NULL, operation TEXT NOT NULL, method TEXT NOT NULL,
  pack INTEGER, offset INTEGER, raw_len INTEGER, stored_len INTEGER, dict INTEGER
);
INSERT INTO cases_3(id, operation, method, pack, offset, raw_len, stored_len, dict)
  SELECT id, operation, method, pack, offset, raw_len, stored_len, dict FROM cases;
DROP TABLE cases;
ALTER TABLE cases_3 RENAME TO cases;
CREATE TABLE interactions_3(
  id BLOB NOT NULL, run INTEGER NOT NULL, seq INTEGER NOT NULL, case_id BLOB NOT NULL,
  operation TEXT NOT NULL, method TEXT NOT NULL, status INTEGER, status_class INTEGER NOT NULL,
  request_body BLOB, response_body BLOB,
  pack INTEGER, offset INTEGER, raw_len INTEGER, stored_len INTEGER, dict INTEGER
);
INSERT INTO interactions_3(rowid, id, run, seq, case_id, operation, method, status,
    status_class, request_body, response_body, pack, offset, raw_len, stored_len, dict)
  SELECT rowid, id, run, seq, case_id, operation, method, status, status_class,
    request_body, response_body, pack, offset, raw_len, stored_len, dict
  FROM interactions ORDER BY rowid;
DROP TABLE interactions;
ALTER TABLE interactions_3 RENAME TO interactions;
";

fn schema_version(conn: &Connection) -> rusqlite::Result<u32> {
    let v: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key='schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Migrates a schema-1 index to schema 2 in one transaction, so a crash leaves schema 1.
/// Two processes opening the same old index take turns: the second finds schema 2 under
/// its write lock and does nothing.
pub(crate) fn migrate_1_to_2(conn: &Connection) -> rusqlite::Result<()> {
    migrate(conn, 1, |conn| {
        conn.execute_batch(MIGRATE_1_TO_2)?;
        conn.execute_batch(OBJECTS_VIEW)
    })
}

/// Migrates a schema-2 index to schema 3 in one transaction, as [`migrate_1_to_2`] does:
/// the tables are copied into their schema-3 shape, the indexes made, and
/// `interaction_ids` filled for every interaction.
pub(crate) fn migrate_2_to_3(conn: &Connection) -> rusqlite::Result<()> {
    migrate(conn, 2, |conn| {
        conn.execute_batch(MIGRATE_2_TO_3)?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(OBJECTS_VIEW)?;
        index_interaction_ids(conn).map(|_| ())
    })
}

/// Runs `step` in one immediate transaction when the index is at schema `from`, then sets
/// the schema to `from + 1`.
fn migrate(
    conn: &Connection,
    from: u32,
    step: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        if schema_version(conn)? != from {
            return Ok(());
        }
        step(conn)?;
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [(from + 1).to_string()],
        )
        .map(|_| ())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Adds to `interaction_ids` the interactions after `meta.interaction_ids_through`, sorted,
/// and moves the mark to the last of them; returns how many it added. One sorted pass over
/// the id b-tree instead of an insert under a random key per interaction: a writer calls it
/// every so many interactions (counting those left after the mark when it starts), in a
/// transaction of its own or of its caller.
pub fn index_interaction_ids(conn: &Connection) -> rusqlite::Result<usize> {
    let mut through = ids_through(conn)?;
    let mut added = 0;
    let mut entries: Vec<(i64, i64)> = Vec::new();
    loop {
        // A chunk at a time, so that a migration of millions of interactions holds one
        // chunk's keys in memory, not all of them.
        entries.clear();
        {
            let mut read = conn.prepare_cached(
                "SELECT rowid, id FROM interactions WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )?;
            let mut rows = read.query(params![through, PASS_CHUNK])?;
            while let Some(r) = rows.next()? {
                let at: i64 = r.get(0)?;
                entries.push((id_key(r.get_ref(1)?.as_blob().unwrap_or_default()), at));
                through = at;
            }
        }
        if entries.is_empty() {
            break;
        }
        // Sorted, each page of the id b-tree is met once per pass.
        entries.sort_unstable();
        let mut insert =
            conn.prepare_cached("INSERT OR IGNORE INTO interaction_ids(key, at) VALUES (?1, ?2)")?;
        for (key, at) in &entries {
            added += insert.execute([key, at])?;
        }
    }
    conn.prepare_cached("UPDATE meta SET value = ?2 WHERE key = ?1")?
        .execute(params![IDS_THROUGH, through.to_string()])?;
    Ok(added)
}

/// Interactions a pass of [`index_interaction_ids`] reads and sorts at a time.
const PASS_CHUNK: i64 = 1 << 20;

/// The last `interactions` rowid `interaction_ids` covers.
fn ids_through(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1")?
        .query_row([IDS_THROUGH], |r| r.get::<_, Option<i64>>(0))
        .optional()?
        .flatten()
        .unwrap_or(0))
}

/// Test case `id`'s row, if the index has one, and whether it names a location.
pub fn find_case(conn: &Connection, id: &Digest) -> rusqlite::Result<Option<(i64, bool)>> {
    conn.prepare_cached(FIND_CASE)?
        .query_row([&id.0[..]], found_case)
        .optional()
}

/// A row of [`FIND_CASE`]: the test case's rowid and whether it names a location.
fn found_case(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, bool)> {
    Ok((r.get(0)?, r.get(1)?))
}

/// The index's `data_version`: it changes when another connection commits to it.
pub fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

/// Interactions recorded after the rows `interaction_ids` covers: how far behind it is.
pub fn interaction_ids_behind(conn: &Connection) -> rusqlite::Result<u64> {
    let through = ids_through(conn)?;
    let last: i64 = conn
        .prepare_cached("SELECT coalesce(max(rowid), 0) FROM interactions")?
        .query_row([], |r| r.get(0))?;
    Ok(last.saturating_sub(through).max(0) as u64)
}

/// After rows of `interactions` were deleted: their entries in `interaction_ids` go, and
/// the mark comes down to the last row left, so that a row inserted later under a row
/// number freed at the end of the table is found in the tail, not missed.
pub fn forget_deleted_interactions(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "DELETE FROM interaction_ids WHERE at NOT IN (SELECT rowid FROM interactions);
         UPDATE meta SET value = CAST(min(CAST(value AS INTEGER),
             (SELECT coalesce(max(rowid), 0) FROM interactions)) AS TEXT)
         WHERE key = 'interaction_ids_through';",
    )
}

/// Where an object's record is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub kind_tag: u8,
    pub pack: String,
    pub offset: u64,
    pub stored_len: u32,
}

fn status_class(status: Option<u16>) -> i64 {
    status.map(|s| i64::from(s / 100)).unwrap_or(0)
}

fn digest_of(bytes: Vec<u8>) -> rusqlite::Result<Digest> {
    let arr: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            bytes.len(),
            rusqlite::types::Type::Blob,
            "not a 32-byte digest".into(),
        )
    })?;
    Ok(Digest(arr))
}

/// Whether `other_objects` holds `id`. A test case or an interaction is found there only
/// when gc kept a record of that kind whose payload this build could not decode; a writer
/// asks before it gives such an object a row of its own, so that the `objects` view never
/// names one object twice.
pub fn in_other_objects(conn: &Connection, id: &Digest) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM other_objects WHERE id = ?1")?
        .exists([&id.0[..]])
}

/// The test cases and interactions `other_objects` holds ([`in_other_objects`]), read in
/// one pass over the table: the recorder reads them once instead of asking for each object
/// (normally there are none).
pub fn own_kinds_in_other_objects(conn: &Connection) -> rusqlite::Result<IdSet<Digest>> {
    let mut stmt = conn.prepare("SELECT id FROM other_objects WHERE kind IN (?1, ?2)")?;
    let rows = stmt.query_map(
        [ObjectKind::TestCase.tag(), ObjectKind::Interaction.tag()],
        |r| r.get::<_, Vec<u8>>(0),
    )?;
    rows.map(|r| r.and_then(digest_of)).collect()
}

/// Whether the index names any object.
pub fn has_objects(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM objects LIMIT 1")?
        .exists([])
}

/// The pack id for a pack name, registering it.
pub fn pack_id(tx: &Transaction<'_>, name: &str) -> rusqlite::Result<i64> {
    tx.prepare_cached("INSERT OR IGNORE INTO packs(name) VALUES (?1)")?
        .execute([name])?;
    tx.prepare_cached("SELECT id FROM packs WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
}

/// What one transaction's inserts already know, so that a batch of interactions does not
/// look the same run key and the operations of its own test cases up row by row, and the
/// statements of the rows every interaction writes, prepared once per transaction (a
/// statement-cache lookup hashes the SQL text on every row).
///
/// The operations it keeps are borrowed from the rows being inserted (`'o`).
#[derive(Default)]
pub struct InsertContext<'tx, 'o> {
    run_keys: IdMap<RunId, i64>,
    case_operations: IdMap<CaseId, &'o str>,
    /// Test cases already looked up ([`find_case`], see [`InsertContext::knows_case`]):
    /// their row, if any, and whether it is located.
    found_cases: IdMap<CaseId, Option<(i64, bool)>>,
    statements: Vec<(&'static str, rusqlite::Statement<'tx>)>,
}

impl<'tx, 'o> InsertContext<'tx, 'o> {
    /// A context with room for the operations of `cases` test cases.
    pub fn with_cases(cases: usize) -> InsertContext<'tx, 'o> {
        InsertContext {
            case_operations: IdMap::with_capacity_and_hasher(cases, Default::default()),
            ..InsertContext::default()
        }
    }

    /// Tells the context a test case's operation, for the interactions that name the case,
    /// whether or not the case itself is written in this transaction (a test case already
    /// stored would otherwise be looked up for each of its interactions).
    pub fn note_case(&mut self, case: CaseId, operation: &'o str) {
        self.case_operations.entry(case).or_insert(operation);
    }

    /// Tells the context what a lookup of test case `id` ([`find_case`]) found, made in
    /// this transaction or with nothing committed to the index since: its insert then
    /// takes the answer instead of asking again.
    pub fn knows_case(&mut self, id: CaseId, found: Option<(i64, bool)>) {
        self.found_cases.insert(id, found);
    }

    /// The prepared statement for `sql`, preparing it on first use.
    fn statement(
        &mut self,
        tx: &'tx Connection,
        sql: &'static str,
    ) -> rusqlite::Result<&mut rusqlite::Statement<'tx>> {
        statement_in(&mut self.statements, tx, sql)
    }
}

/// [`InsertContext::statement`] on the statements alone, so that a caller may hold a borrow
/// of the context's other fields meanwhile.
fn statement_in<'s, 'tx>(
    statements: &'s mut Vec<(&'static str, rusqlite::Statement<'tx>)>,
    tx: &'tx Connection,
    sql: &'static str,
) -> rusqlite::Result<&'s mut rusqlite::Statement<'tx>> {
    // The same text is most often the same static: the pointer tells at once, where
    // comparing the text of a statement of many rows read two kilobytes.
    let at = match statements
        .iter()
        .position(|(s, _)| std::ptr::eq(*s, sql) || *s == sql)
    {
        Some(at) => at,
        None => {
            statements.push((sql, tx.prepare(sql)?));
            statements.len() - 1
        }
    };
    Ok(&mut statements[at].1)
}

const INSERT_OBJECT: &str =
    "INSERT OR IGNORE INTO other_objects(id, kind, pack, offset, raw_len, stored_len, dict)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
// A row that exists keeps its columns; it only gains a location it lacked (a schema-1
// index migrated with a query row whose object it did not name). A writer looks the row up
// first ([`FIND_CASE`], [`FIND_INTERACTION`]): one descent of a small index, where schema 2
// inserted under the 32-byte id and let the conflict tell.
const FIND_CASE: &str = "SELECT rowid, pack IS NOT NULL FROM cases
     WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1 LIMIT 1";
macro_rules! case_insert_head {
    () => {
        "INSERT INTO cases(id, operation, method, pack, offset, raw_len, stored_len, dict) VALUES"
    };
}
const CASE_INSERT_HEAD: &str = case_insert_head!();
const INSERT_CASE: &str = concat!(case_insert_head!(), " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
const LOCATE_CASE: &str = "UPDATE cases SET pack = ?2, offset = ?3, raw_len = ?4,
       stored_len = ?5, dict = ?6 WHERE rowid = ?1";
// An interaction is new when its run and seq are (the same id has the same run and seq):
// the insert's own check of the unique `(run, seq)` index, at its end, where a recorder
// appends, tells, and only an insert turned down looks further ([`FIND_INTERACTION`]).
macro_rules! interaction_insert_head {
    () => {
        "INSERT OR IGNORE INTO interactions(id, run, seq, case_id,
       operation, method, status, status_class, request_body, response_body,
       pack, offset, raw_len, stored_len, dict) VALUES"
    };
}
const INTERACTION_INSERT_HEAD: &str = interaction_insert_head!();
const INSERT_INTERACTION: &str = concat!(
    interaction_insert_head!(),
    " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
);
const LAST_INTERACTION: &str = "SELECT coalesce(max(rowid), 0) FROM interactions";
const FIND_INTERACTION: &str = "SELECT rowid, id = ?3, pack IS NOT NULL FROM interactions
     WHERE run = ?1 AND seq = ?2";
const LOCATE_INTERACTION: &str = "UPDATE interactions SET pack = ?2, offset = ?3,
       raw_len = ?4, stored_len = ?5, dict = ?6 WHERE rowid = ?1";

/// Where a record is, as an index row keeps it: pack key, offset, raw and stored lengths,
/// dictionary.
#[derive(Clone, Copy)]
struct RecordAt {
    pack: i64,
    offset: i64,
    raw_len: u32,
    stored_len: u32,
    dict: u32,
}

/// Whether the location of an object of kind `kind_tag` goes in its own query row `row`
/// (a test case's or an interaction's, schema 2) rather than in `other_objects`.
pub fn in_own_row(kind_tag: u8, row: &IndexRow) -> bool {
    match row {
        IndexRow::Case { .. } => kind_tag == ObjectKind::TestCase.tag(),
        IndexRow::Interaction { .. } => kind_tag == ObjectKind::Interaction.tag(),
        _ => false,
    }
}

/// Inserts the location row and the derived rows of one object. Idempotent: true when
/// the index took this location, false when it names the object elsewhere already.
pub fn insert_object(
    tx: &Transaction<'_>,
    pack: i64,
    offset: u64,
    header: &RecordHeader,
    row: &IndexRow,
) -> rusqlite::Result<bool> {
    insert_object_with(tx, pack, offset, header, row, &mut InsertContext::default())
}

/// [`insert_object`] within a transaction's [`InsertContext`].
pub fn insert_object_with<'tx, 'o>(
    tx: &'tx Transaction<'_>,
    pack: i64,
    offset: u64,
    header: &RecordHeader,
    row: &'o IndexRow,
    context: &mut InsertContext<'tx, 'o>,
) -> rusqlite::Result<bool> {
    let at = RecordAt {
        pack,
        offset: offset as i64,
        raw_len: header.raw_len,
        stored_len: header.stored_len,
        dict: header.dict,
    };
    let own_row = in_own_row(header.kind_tag, row);
    let mut placed = false;
    if !own_row {
        placed = context.statement(tx, INSERT_OBJECT)?.execute(params![
            &header.id.0[..],
            header.kind_tag,
            at.pack,
            at.offset,
            at.raw_len,
            at.stored_len,
            at.dict
        ])? > 0;
    }
    let own_placed = insert_row_with(tx, &header.id, row, own_row.then_some(at), context)?;
    Ok(if own_row { own_placed } else { placed })
}

/// The operation of test case `case`, for an interaction's row: as the context was told,
/// else from the index (a test case stored by an earlier transaction).
fn case_operation<'o>(
    tx: &Connection,
    context: &InsertContext<'_, 'o>,
    case: &CaseId,
) -> rusqlite::Result<std::borrow::Cow<'o, str>> {
    if let Some(operation) = context.case_operations.get(case) {
        return Ok(std::borrow::Cow::Borrowed(*operation));
    }
    let looked_up: Option<String> = tx
        .prepare_cached(&format!("SELECT operation FROM cases WHERE {CASE_BY_ID}"))?
        .query_row(named_params! {":id": &case.0 .0[..]}, |r| r.get(0))
        .optional()?;
    Ok(std::borrow::Cow::Owned(looked_up.unwrap_or_default()))
}

/// Run `run`'s small integer key, made with its first interaction. Rows name their run by
/// it: a 32-byte id in every row and in every index entry would make the index larger
/// than the packs.
fn run_key(
    tx: &Connection,
    context: &mut InsertContext<'_, '_>,
    run: &RunId,
) -> rusqlite::Result<i64> {
    if let Some(key) = context.run_keys.get(run) {
        return Ok(*key);
    }
    tx.prepare_cached("INSERT OR IGNORE INTO run_keys(id) VALUES (?1)")?
        .execute([&run.0 .0[..]])?;
    let key: i64 = tx
        .prepare_cached("SELECT key FROM run_keys WHERE id = ?1")?
        .query_row([&run.0 .0[..]], |r| r.get(0))?;
    context.run_keys.insert(*run, key);
    Ok(key)
}

/// Rows one statement of [`insert_group_with`] inserts. A statement per row cost twice the
/// index's work per row of one of 16: its cursors were opened, and the end of the table
/// and of its index sought, once a row.
pub const ROWS_PER_INSERT: usize = 16;

/// Inserts the rows of [`ROWS_PER_INSERT`] objects whose records are at the offsets given in
/// pack `pack`, in one statement, when they are all interactions or all test cases the
/// context knows the index lacks ([`InsertContext::knows_case`]). All or nothing: true
/// when the index took every one; false, with the index as it was, when it turned one down
/// (it names that interaction already) or the group is not one of those; the caller then
/// inserts them one at a time with [`insert_object_with`], which tells which it took.
pub fn insert_group_with<'tx, 'o>(
    tx: &'tx Transaction<'_>,
    pack: i64,
    records: &[(u64, &RecordHeader, &'o IndexRow)],
    context: &mut InsertContext<'tx, 'o>,
) -> rusqlite::Result<bool> {
    if records.len() != ROWS_PER_INSERT {
        return Ok(false);
    }
    let all = |kind: fn(&IndexRow) -> bool| {
        records
            .iter()
            .all(|(_, header, row)| kind(row) && in_own_row(header.kind_tag, row))
    };
    if all(|row| matches!(row, IndexRow::Interaction { .. })) {
        insert_interactions_with(tx, pack, records, context)
    } else if all(|row| matches!(row, IndexRow::Case { .. })) {
        insert_cases_with(tx, pack, records, context)
    } else {
        Ok(false)
    }
}

/// Columns a test case's row is inserted with, in the order of [`INSERT_CASE`].
const CASE_COLUMNS: usize = 8;

/// [`insert_group_with`] for test cases: only when the context knows the index lacks every
/// one of them (the table has no unique key to turn a repeat down).
fn insert_cases_with<'tx, 'o>(
    tx: &'tx Transaction<'_>,
    pack: i64,
    records: &[(u64, &RecordHeader, &'o IndexRow)],
    context: &mut InsertContext<'tx, 'o>,
) -> rusqlite::Result<bool> {
    let known_absent = records
        .iter()
        .all(|(_, header, _)| matches!(context.found_cases.get(&CaseId(header.id)), Some(None)));
    if !known_absent {
        return Ok(false);
    }
    let insert = statement_in(&mut context.statements, tx, insert_cases_sql())?;
    for (n, (offset, header, row)) in records.iter().enumerate() {
        let IndexRow::Case { operation, method } = row else {
            continue;
        };
        let at = n * CASE_COLUMNS;
        insert.raw_bind_parameter(at + 1, &header.id.0[..])?;
        insert.raw_bind_parameter(at + 2, operation)?;
        insert.raw_bind_parameter(at + 3, method)?;
        insert.raw_bind_parameter(at + 4, pack)?;
        insert.raw_bind_parameter(at + 5, *offset as i64)?;
        insert.raw_bind_parameter(at + 6, header.raw_len)?;
        insert.raw_bind_parameter(at + 7, header.stored_len)?;
        insert.raw_bind_parameter(at + 8, header.dict)?;
    }
    insert.raw_execute()?;
    for (_, header, row) in records {
        let id = CaseId(header.id);
        context.found_cases.remove(&id);
        if let IndexRow::Case { operation, .. } = row {
            context.note_case(id, operation);
        }
    }
    Ok(true)
}

/// The statement of [`insert_cases_with`]: [`ROWS_PER_INSERT`] rows.
fn insert_cases_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    group_sql(&SQL, CASE_INSERT_HEAD, CASE_COLUMNS)
}

/// `head` followed by [`ROWS_PER_INSERT`] rows of `columns` parameters, made once in `cell`.
fn group_sql(
    cell: &'static std::sync::OnceLock<String>,
    head: &str,
    columns: usize,
) -> &'static str {
    cell.get_or_init(|| {
        let row = format!("({})", vec!["?"; columns].join(", "));
        format!("{head} {}", vec![row; ROWS_PER_INSERT].join(", "))
    })
}

/// Columns an interaction's row is inserted with, in the order of [`INSERT_INTERACTION`].
const INTERACTION_COLUMNS: usize = 15;

/// The statement of [`insert_interactions_with`]: [`ROWS_PER_INSERT`] rows.
fn insert_interactions_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    group_sql(&SQL, INTERACTION_INSERT_HEAD, INTERACTION_COLUMNS)
}

/// [`insert_group_with`] for interactions.
fn insert_interactions_with<'tx, 'o>(
    tx: &'tx Transaction<'_>,
    pack: i64,
    records: &[(u64, &RecordHeader, &'o IndexRow)],
    context: &mut InsertContext<'tx, 'o>,
) -> rusqlite::Result<bool> {
    let mut keys: [(std::borrow::Cow<'o, str>, i64); ROWS_PER_INSERT] =
        std::array::from_fn(|_| (std::borrow::Cow::Borrowed(""), 0));
    for ((_, _, row), key) in records.iter().zip(&mut keys) {
        if let IndexRow::Interaction { run, case, .. } = row {
            *key = (
                case_operation(tx, context, case)?,
                run_key(tx, context, run)?,
            );
        }
    }
    // The rows this statement adds are those after the last row now: nothing else writes
    // to the table within the transaction.
    let last: i64 = context
        .statement(tx, LAST_INTERACTION)?
        .query_row([], |r| r.get(0))?;
    let insert = statement_in(&mut context.statements, tx, insert_interactions_sql())?;
    for (n, ((offset, header, row), (operation, run_key))) in records.iter().zip(&keys).enumerate()
    {
        let IndexRow::Interaction {
            seq,
            case,
            method,
            status,
            request_body,
            response_body,
            ..
        } = row
        else {
            continue;
        };
        let at = n * INTERACTION_COLUMNS;
        insert.raw_bind_parameter(at + 1, &header.id.0[..])?;
        insert.raw_bind_parameter(at + 2, run_key)?;
        insert.raw_bind_parameter(at + 3, *seq as i64)?;
        insert.raw_bind_parameter(at + 4, &case.0 .0[..])?;
        insert.raw_bind_parameter(at + 5, operation.as_ref())?;
        insert.raw_bind_parameter(at + 6, method)?;
        insert.raw_bind_parameter(at + 7, status)?;
        insert.raw_bind_parameter(at + 8, status_class(*status))?;
        insert.raw_bind_parameter(at + 9, request_body.as_ref().map(|b| &b.0 .0[..]))?;
        insert.raw_bind_parameter(at + 10, response_body.as_ref().map(|b| &b.0 .0[..]))?;
        insert.raw_bind_parameter(at + 11, pack)?;
        insert.raw_bind_parameter(at + 12, *offset as i64)?;
        insert.raw_bind_parameter(at + 13, header.raw_len)?;
        insert.raw_bind_parameter(at + 14, header.stored_len)?;
        insert.raw_bind_parameter(at + 15, header.dict)?;
    }
    if insert.raw_execute()? == ROWS_PER_INSERT {
        return Ok(true);
    }
    context
        .statement(tx, "DELETE FROM interactions WHERE rowid > ?1")?
        .execute([last])?;
    Ok(false)
}

/// Inserts the query rows an object implies; `at` is where the object is, for the kinds
/// whose row keeps it. True when a test case's or an interaction's row changed (it took
/// the location given).
fn insert_row_with<'tx, 'o>(
    tx: &'tx Transaction<'_>,
    digest: &Digest,
    row: &'o IndexRow,
    at: Option<RecordAt>,
    context: &mut InsertContext<'tx, 'o>,
) -> rusqlite::Result<bool> {
    let id = &digest.0[..];
    let pack = at.map(|a| a.pack);
    let offset = at.map(|a| a.offset);
    let raw_len = at.map(|a| a.raw_len);
    let stored_len = at.map(|a| a.stored_len);
    let dict = at.map(|a| a.dict);
    let mut changed = false;
    match row {
        IndexRow::None => {}
        IndexRow::Case { operation, method } => {
            let found = match context.found_cases.remove(&CaseId(*digest)) {
                Some(found) => found,
                None => context
                    .statement(tx, FIND_CASE)?
                    .query_row([id], found_case)
                    .optional()?,
            };
            changed = match found {
                None => {
                    context.statement(tx, INSERT_CASE)?.execute(params![
                        id, operation, method, pack, offset, raw_len, stored_len, dict
                    ])?;
                    true
                }
                Some((row, false)) if at.is_some() => {
                    context
                        .statement(tx, LOCATE_CASE)?
                        .execute(params![row, pack, offset, raw_len, stored_len, dict])?;
                    true
                }
                Some(_) => false,
            };
            context.note_case(CaseId(*digest), operation);
        }
        IndexRow::Interaction {
            run,
            seq,
            case,
            method,
            status,
            request_body,
            response_body,
        } => {
            let operation = case_operation(tx, context, case)?;
            let run_key = run_key(tx, context, run)?;
            let inserted =
                statement_in(&mut context.statements, tx, INSERT_INTERACTION)?.execute(params![
                    id,
                    run_key,
                    *seq as i64,
                    &case.0 .0[..],
                    operation.as_ref(),
                    method,
                    status,
                    status_class(*status),
                    request_body.as_ref().map(|b| &b.0 .0[..]),
                    response_body.as_ref().map(|b| &b.0 .0[..]),
                    pack,
                    offset,
                    raw_len,
                    stored_len,
                    dict,
                ])? > 0;
            changed = inserted || {
                let (row, same, located) =
                    statement_in(&mut context.statements, tx, FIND_INTERACTION)?.query_row(
                        params![run_key, *seq as i64, id],
                        |r| {
                            Ok((
                                r.get::<_, i64>(0)?,
                                r.get::<_, bool>(1)?,
                                r.get::<_, bool>(2)?,
                            ))
                        },
                    )?;
                if !same {
                    // Two interactions cannot be one run's same step: a store that says so
                    // is refused rather than one of them silently dropped.
                    return Err(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE),
                        Some(format!(
                            "interaction {digest} and another are both seq {seq} of run {run}"
                        )),
                    ));
                }
                match (located, at) {
                    (false, Some(_)) => {
                        statement_in(&mut context.statements, tx, LOCATE_INTERACTION)?
                            .execute(params![row, pack, offset, raw_len, stored_len, dict])?;
                        true
                    }
                    _ => false,
                }
            };
        }
        IndexRow::RunStart(start) => insert_run_start(tx, id, start)?,
        IndexRow::RunEnd {
            run,
            ended_ms,
            outcome,
            interactions,
            findings,
        } => {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO run_ends(id, run, ended_ms, outcome, interactions,
                   finding_set) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                id,
                &run.0 .0[..],
                *ended_ms as i64,
                outcome_name(*outcome),
                *interactions as i64,
                &findings.0 .0[..],
            ])?;
        }
        IndexRow::FindingSet(set) => insert_finding_set(tx, id, set)?,
    }
    Ok(changed)
}

/// The `runs` row of a run's start.
fn insert_run_start(
    tx: &Transaction<'_>,
    id: &[u8],
    start: &crate::model::RunStart,
) -> rusqlite::Result<()> {
    let tags = serde_json::to_string(&start.tags).unwrap_or_else(|_| "{}".into());
    let kind = match start.kind {
        crate::model::RunKind::Run => "run",
        crate::model::RunKind::Replay => "replay",
    };
    tx.prepare_cached(
        "INSERT OR IGNORE INTO runs(id, kind, name, tags, document, document_source,
           base_url, seed, started_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        id,
        kind,
        start.name,
        tags,
        &start.document.0 .0[..],
        start.document_source,
        start.base_url,
        start.seed as i64,
        start.started_ms as i64,
    ])?;
    Ok(())
}

/// The `finding_sets` row of a finding set, and its findings' rows the first time.
fn insert_finding_set(
    tx: &Transaction<'_>,
    id: &[u8],
    set: &crate::model::FindingSet,
) -> rusqlite::Result<()> {
    let inserted = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO finding_sets(id, run, judged_by, findings)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            id,
            &set.run.0 .0[..],
            set.judged_by,
            set.findings.len() as i64
        ])?;
    if inserted > 0 {
        for (ordinal, f) in set.findings.iter().enumerate() {
            let severity = match f.severity {
                crate::model::Severity::Low => "low",
                crate::model::Severity::Medium => "medium",
                crate::model::Severity::High => "high",
            };
            tx.prepare_cached(
                "INSERT OR IGNORE INTO findings(finding_set, ordinal, run, oracle, code,
                   operation, severity, key_by_message, occurrences)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                id,
                ordinal as i64,
                &set.run.0 .0[..],
                f.oracle,
                f.code,
                f.operation,
                severity,
                f.key_by_message,
                f.occurrences() as i64,
            ])?;
        }
    }
    Ok(())
}

/// The outcome's name, as indexes keep it (also schema 4, `v2::index2`).
pub(crate) fn outcome_name(o: crate::model::RunOutcome) -> &'static str {
    use crate::model::RunOutcome::*;
    match o {
        Completed => "completed",
        Interrupted => "interrupted",
        Unreachable => "unreachable",
        Refused => "refused",
    }
}

/// Where `id` lives.
pub fn locate(conn: &Connection, id: &Digest) -> rusqlite::Result<Option<Location>> {
    // Table by table, each through its own index on the id (the `objects` view cannot pass
    // `id = ?1` on to the prefix indexes); the pack name by a subquery.
    conn.prepare_cached(&format!(
        "SELECT kind, pack, offset, stored_len FROM (
           SELECT kind, pack, offset, stored_len FROM other_objects WHERE id = :id
           UNION ALL
           SELECT 2, pack, offset, stored_len FROM cases
             WHERE {CASE_BY_ID} AND pack IS NOT NULL
           UNION ALL
           SELECT 3, pack, offset, stored_len FROM interactions
             WHERE {INTERACTION_BY_ID} AND pack IS NOT NULL
           LIMIT 1)"
    ))?
    .query_row(
        named_params! {":id": &id.0[..], ":key": id_key(&id.0)},
        |r| {
            Ok((
                r.get::<_, u8>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, u32>(3)?,
            ))
        },
    )
    .optional()?
    .map(|(kind_tag, pack, offset, stored_len)| {
        conn.prepare_cached("SELECT name FROM packs WHERE id = ?1")?
            .query_row([pack], |r| r.get::<_, String>(0))
            .map(|pack| Location {
                kind_tag,
                pack,
                offset: offset as u64,
                stored_len,
            })
    })
    .transpose()
}

/// One run, as `probe log` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    /// `run` or `replay`.
    pub kind: String,
    pub name: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub document_source: String,
    pub base_url: String,
    pub started_ms: u64,
    /// `None` while the run has no end manifest (still running, or crashed).
    pub ended_ms: Option<u64>,
    /// `completed`, `interrupted`, `unreachable`, `refused`; `None` without an end manifest.
    pub outcome: Option<String>,
    /// Interactions stored for the run.
    pub interactions: u64,
    /// Distinct findings (by message key) of the run-time finding set.
    pub findings: u64,
}

/// Every run, newest first.
pub fn runs(conn: &Connection) -> rusqlite::Result<Vec<RunSummary>> {
    summaries(conn, None)
}

/// One run's summary, counting only its own rows.
pub fn run_summary(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<RunSummary>> {
    Ok(summaries(conn, Some(run))?.into_iter().next())
}

fn summaries(conn: &Connection, only: Option<&RunId>) -> rusqlite::Result<Vec<RunSummary>> {
    let mut st = conn.prepare_cached(
        "SELECT r.id, r.kind, r.name, r.tags, r.document_source, r.base_url, r.started_ms,
           e.ended_ms, e.outcome,
           (SELECT count(*) FROM interactions i
              WHERE i.run = (SELECT key FROM run_keys k WHERE k.id = r.id)),
           (SELECT count(DISTINCT f.key_by_message) FROM findings f
              WHERE f.finding_set = e.finding_set)
         FROM runs r
         LEFT JOIN run_ends e ON e.id = (SELECT id FROM run_ends x WHERE x.run = r.id
                                         ORDER BY x.ended_ms DESC, x.id LIMIT 1)
         WHERE ?1 IS NULL OR r.id = ?1
         ORDER BY r.started_ms DESC, r.id DESC",
    )?;
    let only = only.map(|r| r.0 .0.to_vec());
    let rows = st.query_map([only], |r| {
        let tags: String = r.get(3)?;
        Ok(RunSummary {
            id: RunId(digest_of(r.get(0)?)?),
            kind: r.get(1)?,
            name: r.get(2)?,
            tags: serde_json::from_str(&tags).unwrap_or_default(),
            document_source: r.get(4)?,
            base_url: r.get(5)?,
            started_ms: r.get::<_, i64>(6)? as u64,
            ended_ms: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
            outcome: r.get(8)?,
            interactions: r.get::<_, i64>(9)? as u64,
            findings: r.get::<_, Option<i64>>(10)?.unwrap_or(0) as u64,
        })
    })?;
    rows.collect()
}

/// One interaction of a run, as the index knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InteractionRow {
    pub seq: u64,
    pub id: InteractionId,
    pub case: CaseId,
    pub operation: String,
    pub method: String,
    /// `None` for a transport error.
    pub status: Option<u16>,
}

/// The interactions of a run in seq order.
pub fn interactions_of(conn: &Connection, run: &RunId) -> rusqlite::Result<Vec<InteractionRow>> {
    let mut st = conn.prepare_cached(
        "SELECT seq, id, case_id, operation, method, status FROM interactions
         WHERE run = (SELECT key FROM run_keys WHERE id = ?1) ORDER BY seq, id",
    )?;
    let rows = st.query_map([&run.0 .0[..]], |r| {
        Ok(InteractionRow {
            seq: r.get::<_, i64>(0)? as u64,
            id: InteractionId(digest_of(r.get(1)?)?),
            case: CaseId(digest_of(r.get(2)?)?),
            operation: r.get(3)?,
            method: r.get(4)?,
            status: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// The latest end manifest of a run.
pub fn run_end_id(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<RunEndId>> {
    conn.prepare_cached(
        "SELECT id FROM run_ends WHERE run = ?1 ORDER BY ended_ms DESC, id LIMIT 1",
    )?
    .query_row([&run.0 .0[..]], |r| r.get::<_, Vec<u8>>(0))
    .optional()?
    .map(|b| digest_of(b).map(RunEndId))
    .transpose()
}

/// The finding sets of a run: the one the latest end manifest names first, then the
/// others (rechecks) by id.
pub fn finding_sets_of(conn: &Connection, run: &RunId) -> rusqlite::Result<Vec<FindingSetId>> {
    let mut st = conn.prepare_cached(
        "SELECT s.id FROM finding_sets s WHERE s.run = ?1
         ORDER BY (s.id = (SELECT finding_set FROM run_ends WHERE run = ?1
                           ORDER BY ended_ms DESC, id LIMIT 1)) DESC, s.id",
    )?;
    let rows = st.query_map([&run.0 .0[..]], |r| r.get::<_, Vec<u8>>(0))?;
    rows.map(|b| b.and_then(digest_of).map(FindingSetId))
        .collect()
}

/// Objects whose hex id starts with `prefix` (lower-case hex, at least one char), at most
/// `limit`.
pub fn by_prefix(
    conn: &Connection,
    prefix: &str,
    limit: usize,
) -> rusqlite::Result<Vec<(u8, Digest)>> {
    let lo_hex = format!("{prefix:0<64}");
    let hi_hex = format!("{prefix:f<64}");
    let (Ok(lo), Ok(hi)) = (hex::decode(&lo_hex), hex::decode(&hi_hex)) else {
        return Ok(Vec::new());
    };
    // Table by table, each through its index on the id or its 8-byte prefix.
    let mut st = conn.prepare_cached(
        "SELECT kind, id FROM other_objects WHERE id >= ?1 AND id <= ?2
         UNION ALL
         SELECT 2, id FROM cases
           WHERE substr(id, 1, 8) BETWEEN substr(?1, 1, 8) AND substr(?2, 1, 8)
             AND id >= ?1 AND id <= ?2 AND pack IS NOT NULL
         UNION ALL
         SELECT 3, i.id FROM interaction_ids x JOIN interactions i ON i.rowid = x.at
           WHERE x.key BETWEEN ?4 AND ?5
             AND i.id >= ?1 AND i.id <= ?2 AND i.pack IS NOT NULL
         UNION ALL
         SELECT 3, id FROM interactions
           WHERE rowid > (SELECT CAST(value AS INTEGER) FROM meta
                          WHERE key = 'interaction_ids_through')
             AND id >= ?1 AND id <= ?2 AND pack IS NOT NULL
         ORDER BY 2 LIMIT ?3",
    )?;
    let (lo_key, hi_key) = (id_key(&lo), id_key(&hi));
    let rows = st.query_map(params![lo, hi, limit as i64, lo_key, hi_key], |r| {
        Ok((r.get::<_, u8>(0)?, digest_of(r.get(1)?)?))
    })?;
    rows.collect()
}

/// Runs named `name`, newest first.
pub fn runs_named(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Digest>> {
    let mut st =
        conn.prepare_cached("SELECT id FROM runs WHERE name = ?1 ORDER BY started_ms DESC")?;
    let rows = st.query_map([name], |r| digest_of(r.get(0)?))?;
    rows.collect()
}

/// A one-line description of an object from the index alone.
pub fn describe(conn: &Connection, kind: ObjectKind, id: &Digest) -> rusqlite::Result<String> {
    let key = &id.0[..];
    let text = match kind {
        ObjectKind::RunStart => conn
            .query_row(
                "SELECT coalesce(name, document_source), started_ms FROM runs WHERE id = ?1",
                [key],
                |r| {
                    Ok(format!(
                        "{} (started {})",
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?
                    ))
                },
            )
            .optional()?,
        ObjectKind::Interaction => conn
            .query_row(
                &format!(
                    "SELECT seq, method, operation, status FROM interactions
                     WHERE {INTERACTION_BY_ID}"
                ),
                named_params! {":id": key, ":key": id_key(key)},
                |r| {
                    let status: Option<u16> = r.get(3)?;
                    Ok(format!(
                        "#{} {} {} -> {}",
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        status.map_or("transport error".to_owned(), |s| s.to_string())
                    ))
                },
            )
            .optional()?,
        ObjectKind::TestCase => conn
            .query_row(
                &format!("SELECT method, operation FROM cases WHERE {CASE_BY_ID}"),
                named_params! {":id": key},
                |r| {
                    Ok(format!(
                        "{} {}",
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?
                    ))
                },
            )
            .optional()?,
        ObjectKind::Blob => conn
            .query_row(
                "SELECT raw_len FROM other_objects WHERE id = ?1",
                [key],
                |r| Ok(format!("{} bytes", r.get::<_, i64>(0)?)),
            )
            .optional()?,
        ObjectKind::Series => conn
            .query_row("SELECT 1 FROM other_objects WHERE id = ?1", [key], |_| {
                Ok("a series of calls on one resource".to_owned())
            })
            .optional()?,
        ObjectKind::RunEnd => conn
            .query_row(
                "SELECT outcome, interactions FROM run_ends WHERE id = ?1",
                [key],
                |r| {
                    Ok(format!(
                        "{}, {} interactions",
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?
                    ))
                },
            )
            .optional()?,
        ObjectKind::FindingSet => conn
            .query_row(
                "SELECT findings, judged_by FROM finding_sets WHERE id = ?1",
                [key],
                |r| {
                    Ok(format!(
                        "{} findings by {}",
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?
                    ))
                },
            )
            .optional()?,
    };
    Ok(text.unwrap_or_default())
}

/// Counts and byte totals per kind tag: (kind tag, count, raw bytes, stored bytes).
pub fn kind_totals(conn: &Connection) -> rusqlite::Result<Vec<(u8, u64, u64, u64)>> {
    let mut st = conn.prepare(
        "SELECT kind, count(*), sum(raw_len), sum(stored_len) FROM objects
         GROUP BY kind ORDER BY kind",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, u8>(0)?,
            r.get::<_, i64>(1)? as u64,
            r.get::<_, i64>(2)? as u64,
            r.get::<_, i64>(3)? as u64,
        ))
    })?;
    rows.collect()
}

/// Number of body references to blobs (each interaction body that is a blob).
pub fn blob_references(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row(
        "SELECT (SELECT count(*) FROM interactions WHERE request_body IS NOT NULL)
              + (SELECT count(*) FROM interactions WHERE response_body IS NOT NULL)",
        [],
        |r| r.get::<_, i64>(0).map(|v| v as u64),
    )
}

/// Every indexed object: (id, kind tag, pack name, offset).
pub fn all_objects(conn: &Connection) -> rusqlite::Result<Vec<(Digest, u8, String, u64)>> {
    let mut st = conn.prepare(
        // Table by table: a join of the `objects` view would materialize the whole view.
        "SELECT o.id, o.kind, p.name, o.offset FROM other_objects o JOIN packs p ON p.id = o.pack
         UNION ALL
         SELECT c.id, 2, p.name, c.offset FROM cases c JOIN packs p ON p.id = c.pack
         UNION ALL
         SELECT i.id, 3, p.name, i.offset FROM interactions i JOIN packs p ON p.id = i.pack",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            digest_of(r.get(0)?)?,
            r.get::<_, u8>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)? as u64,
        ))
    })?;
    rows.collect()
}

/// Where a located record's location is kept: the row gc moves or drops. A test case's and
/// an interaction's by row number, anything else's by id (the key of `other_objects`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowAt {
    Case(i64),
    Interaction(i64),
    Other,
}

/// One located record, as gc lists them all ([`located_rows`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedRow {
    pub id: Digest,
    pub kind_tag: u8,
    /// A `packs.id`.
    pub pack: i64,
    pub offset: u64,
    pub stored_len: u32,
    pub at: RowAt,
}

/// Every located record with the row that keeps its location, in one pass over each table.
pub fn located_rows(conn: &Connection) -> rusqlite::Result<Vec<LocatedRow>> {
    let mut st = conn.prepare(
        "SELECT id, kind, pack, offset, stored_len, 0, 0 FROM other_objects
         UNION ALL
         SELECT id, 2, pack, offset, stored_len, 1, rowid FROM cases WHERE pack IS NOT NULL
         UNION ALL
         SELECT id, 3, pack, offset, stored_len, 2, rowid FROM interactions
           WHERE pack IS NOT NULL",
    )?;
    let rows = st.query_map([], |r| {
        let rowid: i64 = r.get(6)?;
        Ok(LocatedRow {
            id: digest_of(r.get(0)?)?,
            kind_tag: r.get(1)?,
            pack: r.get(2)?,
            offset: r.get::<_, i64>(3)? as u64,
            stored_len: r.get(4)?,
            at: match r.get::<_, i64>(5)? {
                1 => RowAt::Case(rowid),
                2 => RowAt::Interaction(rowid),
                _ => RowAt::Other,
            },
        })
    })?;
    rows.collect()
}

/// Every registered pack: (`packs.id`, name).
pub fn pack_names(conn: &Connection) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut st = conn.prepare("SELECT id, name FROM packs")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Moves and drops the rows of located records by where they are ([`RowAt`]), for gc: each
/// a lookup by row number or primary key, with its statement prepared once, so that gc's
/// index work grows with the records it moves and drops and nothing else.
///
/// (gc used to move each record by id: an interaction through `interaction_ids`, or, after
/// `meta.interaction_ids_through`, by a scan of every later row, so moving the interactions
/// a recorder wrote since its last pass over their ids scanned that tail once for each of
/// them. Quadratic: 24.5 s for a pack of 20,000 interactions whose ids were not indexed
/// yet, against 0.51 s with them indexed; 0.21 s now, `cargo bench --bench store_parts -- gc`.)
pub struct Mover<'tx> {
    tx: &'tx Connection,
    statements: Vec<(&'static str, rusqlite::Statement<'tx>)>,
}

const MOVE_OTHER: &str = "UPDATE other_objects SET pack = ?2, offset = ?3, raw_len = ?4,
       stored_len = ?5, dict = ?6 WHERE id = ?1";

impl<'tx> Mover<'tx> {
    pub fn new(tx: &'tx Transaction<'_>) -> Mover<'tx> {
        Mover {
            tx,
            statements: Vec::new(),
        }
    }

    fn run(&mut self, sql: &'static str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
        statement_in(&mut self.statements, self.tx, sql)?.execute(params)
    }

    /// Moves the location kept `at` to `offset` in pack `pack`; the record's query columns
    /// stay. An error when the row is not there.
    pub fn relocate(
        &mut self,
        at: RowAt,
        id: &Digest,
        pack: i64,
        offset: u64,
        header: &RecordHeader,
    ) -> rusqlite::Result<()> {
        let (sql, key) = match at {
            RowAt::Case(rowid) => (LOCATE_CASE, rusqlite::types::Value::Integer(rowid)),
            RowAt::Interaction(rowid) => {
                (LOCATE_INTERACTION, rusqlite::types::Value::Integer(rowid))
            }
            RowAt::Other => (MOVE_OTHER, rusqlite::types::Value::Blob(id.0.to_vec())),
        };
        let moved = self.run(
            sql,
            params![
                key,
                pack,
                offset as i64,
                header.raw_len,
                header.stored_len,
                header.dict
            ],
        )?;
        if moved == 1 {
            Ok(())
        } else {
            Err(rusqlite::Error::QueryReturnedNoRows)
        }
    }

    /// Drops the row kept `at` and the query rows of object `id` (of kind `kind_tag`). Call
    /// [`forget_deleted_interactions`] once after the last interaction.
    pub fn forget(&mut self, at: RowAt, id: &Digest, kind_tag: u8) -> rusqlite::Result<()> {
        let key = &id.0[..];
        match at {
            RowAt::Case(rowid) => {
                self.run("DELETE FROM cases WHERE rowid = ?1", [rowid])?;
            }
            RowAt::Interaction(rowid) => {
                self.run("DELETE FROM interactions WHERE rowid = ?1", [rowid])?;
            }
            RowAt::Other => {
                self.run("DELETE FROM other_objects WHERE id = ?1", [key])?;
                match ObjectKind::from_tag(kind_tag) {
                    Some(ObjectKind::RunStart) => {
                        self.run("DELETE FROM runs WHERE id = ?1", [key])?;
                    }
                    Some(ObjectKind::RunEnd) => {
                        self.run("DELETE FROM run_ends WHERE id = ?1", [key])?;
                    }
                    Some(ObjectKind::FindingSet) => {
                        self.run("DELETE FROM finding_sets WHERE id = ?1", [key])?;
                        self.run("DELETE FROM findings WHERE finding_set = ?1", [key])?;
                    }
                    // A test case or an interaction kept here is one whose payload did not
                    // decode; a query row of it, if any, has no location.
                    Some(ObjectKind::TestCase) => {
                        self.run(
                            "DELETE FROM cases WHERE substr(id, 1, 8) = substr(?1, 1, 8)
                               AND id = ?1 AND pack IS NULL",
                            [key],
                        )?;
                    }
                    Some(ObjectKind::Interaction) => {
                        self.run(
                            "DELETE FROM interactions WHERE rowid IN
                               (SELECT at FROM interaction_ids WHERE key = ?2)
                               AND id = ?1 AND pack IS NULL",
                            params![key, id_key(key)],
                        )?;
                        self.run(
                            "DELETE FROM interactions WHERE rowid > (SELECT CAST(value AS INTEGER)
                               FROM meta WHERE key = 'interaction_ids_through')
                               AND id = ?1 AND pack IS NULL",
                            [key],
                        )?;
                    }
                    Some(ObjectKind::Blob) | Some(ObjectKind::Series) | None => {}
                }
            }
        }
        Ok(())
    }
}

/// Whether an error opening or reading the index means its file is damaged (not a
/// database, a damaged page, a schema this build cannot read) rather than out of reach
/// (permissions, a busy lock, a full disk).
pub fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    let code = match e {
        rusqlite::Error::SqliteFailure(f, _) | rusqlite::Error::SqlInputError { error: f, .. } => {
            Some(f.code)
        }
        _ => None,
    };
    match code {
        // `Unknown` is SQLITE_ERROR: here, SQL of this build's schema that the file's
        // tables do not answer (no such column, no such table).
        Some(code) => matches!(
            code,
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt | ErrorCode::Unknown
        ),
        None => matches!(
            e,
            rusqlite::Error::FromSqlConversionFailure(..)
                | rusqlite::Error::InvalidColumnType(..)
                | rusqlite::Error::IntegralValueOutOfRange(..)
        ),
    }
}

/// Drops every row (reindex starts from nothing).
pub fn clear(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "DELETE FROM other_objects; DELETE FROM packs; DELETE FROM cases; DELETE FROM runs;
         DELETE FROM run_ends; DELETE FROM interactions; DELETE FROM finding_sets;
         DELETE FROM findings; DELETE FROM run_keys; DELETE FROM interaction_ids;
         UPDATE meta SET value = '0' WHERE key = 'interaction_ids_through';",
    )
}

/// After a rebuild, fills interaction operations whose case came later in pack order.
pub fn fill_operations(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE interactions SET operation =
           coalesce((SELECT operation FROM cases c
                     WHERE substr(c.id, 1, 8) = substr(interactions.case_id, 1, 8)
                       AND c.id = interactions.case_id), '')
         WHERE operation = ''",
        [],
    )
    .map(|_| ())
}

// Queries for `recheck` and `diff`. They read the tables above only, so `reindex` rebuilds
// everything they answer from; none needs a schema change.

/// One row of [`interactions_page`]: the index row, where the interaction object lives and
/// where its test case lives (`None` when the index does not name the object).
pub type PageRow = (InteractionRow, Option<Location>, Option<Location>);

/// A run's interactions with `seq` in `from..to`, in seq order, with where each
/// interaction object lives (so a reader needs no second lookup per object). Paging by seq
/// range rides the `(run, seq)` index and never skips rows that share a seq.
pub fn interactions_page(
    conn: &Connection,
    run: &RunId,
    from: u64,
    to: u64,
) -> rusqlite::Result<Vec<PageRow>> {
    let mut st = conn.prepare_cached(
        "SELECT i.seq, i.id, i.case_id, i.operation, i.method, i.status,
                CASE WHEN i.pack IS NULL THEN o.kind ELSE 3 END, p.name,
                coalesce(i.offset, o.offset), coalesce(i.stored_len, o.stored_len),
                CASE WHEN c.pack IS NULL THEN oc.kind ELSE 2 END, pc.name,
                coalesce(c.offset, oc.offset), coalesce(c.stored_len, oc.stored_len)
         FROM interactions i
         LEFT JOIN other_objects o ON i.pack IS NULL AND o.id = i.id
         LEFT JOIN packs p ON p.id = coalesce(i.pack, o.pack)
         LEFT JOIN cases c ON substr(c.id, 1, 8) = substr(i.case_id, 1, 8)
           AND c.id = i.case_id AND c.pack IS NOT NULL
         LEFT JOIN other_objects oc ON c.pack IS NULL AND oc.id = i.case_id
         LEFT JOIN packs pc ON pc.id = coalesce(c.pack, oc.pack)
         WHERE i.run = (SELECT key FROM run_keys WHERE id = ?1) AND i.seq >= ?2 AND i.seq < ?3
         ORDER BY i.seq, i.id",
    )?;
    let rows = st.query_map(
        params![
            &run.0 .0[..],
            from.min(i64::MAX as u64) as i64,
            to.min(i64::MAX as u64) as i64
        ],
        |r| {
            let row = InteractionRow {
                seq: r.get::<_, i64>(0)? as u64,
                id: InteractionId(digest_of(r.get(1)?)?),
                case: CaseId(digest_of(r.get(2)?)?),
                operation: r.get(3)?,
                method: r.get(4)?,
                status: r.get(5)?,
            };
            let location = |at: usize| -> rusqlite::Result<Option<Location>> {
                Ok(
                    match (
                        r.get::<_, Option<u8>>(at)?,
                        r.get::<_, Option<String>>(at + 1)?,
                        r.get::<_, Option<i64>>(at + 2)?,
                        r.get::<_, Option<u32>>(at + 3)?,
                    ) {
                        (Some(kind_tag), Some(pack), Some(offset), Some(stored_len)) => {
                            Some(Location {
                                kind_tag,
                                pack,
                                offset: offset as u64,
                                stored_len,
                            })
                        }
                        _ => None,
                    },
                )
            };
            Ok((row, location(6)?, location(10)?))
        },
    )?;
    rows.collect()
}

/// The finding set of a run written last: ordered by pack (packs are named by creation
/// time) and offset, which is write order and survives a reindex.
pub fn newest_finding_set(
    conn: &Connection,
    run: &RunId,
) -> rusqlite::Result<Option<FindingSetId>> {
    conn.prepare_cached(
        "SELECT s.id FROM finding_sets s
         JOIN other_objects o ON o.id = s.id JOIN packs p ON p.id = o.pack
         WHERE s.run = ?1 ORDER BY p.name DESC, o.offset DESC LIMIT 1",
    )?
    .query_row([&run.0 .0[..]], |r| r.get::<_, Vec<u8>>(0))
    .optional()?
    .map(|b| digest_of(b).map(FindingSetId))
    .transpose()
}

/// The finding sets of a run in write order (oldest first), each with the name of the
/// pack that holds it (packs are named after the time they were opened).
pub fn finding_sets_written(
    conn: &Connection,
    run: &RunId,
) -> rusqlite::Result<Vec<(FindingSetId, String)>> {
    let mut st = conn.prepare_cached(
        "SELECT s.id, p.name FROM finding_sets s
         JOIN other_objects o ON o.id = s.id JOIN packs p ON p.id = o.pack
         WHERE s.run = ?1 ORDER BY p.name, o.offset",
    )?;
    let rows = st.query_map([&run.0 .0[..]], |r| {
        Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, String>(1)?))
    })?;
    rows.map(|row| row.and_then(|(b, name)| Ok((FindingSetId(digest_of(b)?), name))))
        .collect()
}

/// What `diff` needs of a run's interactions, from one pass over its index rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunTally {
    /// Test-case ids in seq order.
    pub cases: Vec<(u64, CaseId)>,
    /// Requests per operation by status class (index 0: transport errors, 1..=5: 1xx..5xx).
    pub classes: BTreeMap<String, [u64; 6]>,
}

/// One pass over a run's rows (in `(run, seq)` index order), borrowing each row's bytes
/// rather than allocating: diff must stay a small fraction of reading the run.
pub fn tally(conn: &Connection, run: &RunId) -> rusqlite::Result<RunTally> {
    let mut st = conn.prepare_cached(
        "SELECT seq, case_id, operation, status_class FROM interactions
         WHERE run = (SELECT key FROM run_keys WHERE id = ?1) ORDER BY seq",
    )?;
    // Ordered by seq only: the `(run, seq)` index gives that order without a sort (an `id`
    // tie-break would sort every row); a run's seqs are distinct.
    let mut rows = st.query([&run.0 .0[..]])?;
    let mut out = RunTally::default();
    while let Some(r) = rows.next()? {
        let seq = r.get::<_, i64>(0)? as u64;
        let case = r.get_ref(1)?.as_blob()?;
        let case: [u8; 32] = case.try_into().map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                case.len(),
                rusqlite::types::Type::Blob,
                "not a 32-byte digest".into(),
            )
        })?;
        out.cases.push((seq, CaseId(Digest(case))));
        let operation = r.get_ref(2)?.as_str()?;
        let class = r.get::<_, i64>(3)?.clamp(0, 5) as usize;
        match out.classes.get_mut(operation) {
            Some(counts) => counts[class] += 1,
            None => {
                let mut counts = [0u64; 6];
                counts[class] = 1;
                out.classes.insert(operation.to_owned(), counts);
            }
        }
    }
    Ok(out)
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
        let tags: String = r.get(1)?;
        let tags: BTreeMap<String, String> = serde_json::from_str(&tags).unwrap_or_default();
        if tags.get(key).is_some_and(|v| v == value) {
            return digest_of(r.get(0)?).map(Some);
        }
    }
    Ok(None)
}

/// The highest seq of a run's interactions.
pub fn max_seq(conn: &Connection, run: &RunId) -> rusqlite::Result<Option<u64>> {
    conn.prepare_cached(
        "SELECT max(seq) FROM interactions WHERE run = (SELECT key FROM run_keys WHERE id = ?1)",
    )?
    .query_row([&run.0 .0[..]], |r| r.get::<_, Option<i64>>(0))
    .map(|v| v.map(|v| v.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::format::OBJECT_FORMAT;

    fn header(kind: ObjectKind, id: u8) -> RecordHeader {
        RecordHeader {
            kind_tag: kind.tag(),
            version: OBJECT_FORMAT,
            flags: 0,
            dict: 7,
            raw_len: 100 + u32::from(id),
            stored_len: 50 + u32::from(id),
            id: Digest([id; 32]),
        }
    }

    #[test]
    fn test_cases_and_interactions_are_located_through_their_own_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, version) = open(&dir.path().join("index.sqlite")).unwrap();
        assert_eq!(version, INDEX_SCHEMA_VERSION);
        let tx = conn.transaction().unwrap();
        let pack = pack_id(&tx, "p.pack").unwrap();
        let case = header(ObjectKind::TestCase, 1);
        let case_row = IndexRow::Case {
            operation: "getItem".into(),
            method: "GET".into(),
        };
        let interaction = header(ObjectKind::Interaction, 2);
        let interaction_row = IndexRow::Interaction {
            run: RunId(Digest([9; 32])),
            seq: 0,
            case: CaseId(case.id),
            method: "GET".into(),
            status: Some(200),
            request_body: None,
            response_body: None,
        };
        let blob = header(ObjectKind::Blob, 3);
        assert!(insert_object(&tx, pack, 10, &case, &case_row).unwrap());
        assert!(insert_object(&tx, pack, 20, &interaction, &interaction_row).unwrap());
        assert!(insert_object(&tx, pack, 30, &blob, &IndexRow::None).unwrap());
        // A second copy is turned down, and the index keeps naming the first.
        assert!(!insert_object(&tx, pack, 40, &case, &case_row).unwrap());
        assert!(!insert_object(&tx, pack, 50, &interaction, &interaction_row).unwrap());
        assert!(!insert_object(&tx, pack, 60, &blob, &IndexRow::None).unwrap());
        tx.commit().unwrap();
        let in_other: i64 = conn
            .query_row("SELECT count(*) FROM other_objects", [], |r| r.get(0))
            .unwrap();
        assert_eq!(in_other, 1, "only the blob has a row of its own");
        for (h, offset) in [(&case, 10), (&interaction, 20), (&blob, 30)] {
            let at = locate(&conn, &h.id).unwrap().unwrap();
            assert_eq!(
                (at.kind_tag, at.pack.as_str(), at.offset, at.stored_len),
                (h.kind_tag, "p.pack", offset, h.stored_len)
            );
            assert_eq!(in_other_objects(&conn, &h.id).unwrap(), h.id == blob.id);
        }
        assert!(own_kinds_in_other_objects(&conn).unwrap().is_empty());
        // A query row without a location (a migrated schema-1 index) takes the first
        // location given, and only that one.
        let bare = header(ObjectKind::TestCase, 5);
        conn.execute(
            "INSERT INTO cases(id, operation, method) VALUES (?1, 'getItem', 'GET')",
            [&bare.id.0[..]],
        )
        .unwrap();
        assert!(locate(&conn, &bare.id).unwrap().is_none());
        let tx = conn.transaction().unwrap();
        assert!(insert_object(&tx, pack, 70, &bare, &case_row).unwrap());
        assert!(!insert_object(&tx, pack, 80, &bare, &case_row).unwrap());
        tx.commit().unwrap();
        assert_eq!(locate(&conn, &bare.id).unwrap().unwrap().offset, 70);
        // A test case whose payload gc could not decode is kept in `other_objects`.
        let undecoded = header(ObjectKind::TestCase, 6);
        let tx = conn.transaction().unwrap();
        assert!(insert_object(&tx, pack, 90, &undecoded, &IndexRow::None).unwrap());
        tx.commit().unwrap();
        assert!(in_other_objects(&conn, &undecoded.id).unwrap());
        assert_eq!(
            own_kinds_in_other_objects(&conn)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![undecoded.id]
        );
        // gc moves keep the query rows and change the location, row by row as gc lists
        // them; a row that is not there is an error.
        let listed = located_rows(&conn).unwrap();
        let at_of = |id: &Digest| listed.iter().find(|r| r.id == *id).unwrap().at;
        assert!(matches!(at_of(&interaction.id), RowAt::Interaction(_)));
        assert!(matches!(at_of(&case.id), RowAt::Case(_)));
        assert_eq!(at_of(&blob.id), RowAt::Other);
        assert_eq!(at_of(&undecoded.id), RowAt::Other);
        let tx = conn.transaction().unwrap();
        let other = pack_id(&tx, "q.pack").unwrap();
        let mut mover = Mover::new(&tx);
        mover
            .relocate(
                at_of(&interaction.id),
                &interaction.id,
                other,
                99,
                &interaction,
            )
            .unwrap();
        mover
            .relocate(at_of(&case.id), &case.id, other, 98, &case)
            .unwrap();
        mover
            .relocate(at_of(&blob.id), &blob.id, other, 97, &blob)
            .unwrap();
        assert!(mover
            .relocate(RowAt::Case(1_000_000), &case.id, other, 1, &case)
            .is_err());
        drop(mover);
        tx.commit().unwrap();
        assert_eq!(locate(&conn, &blob.id).unwrap().unwrap().offset, 97);
        let at = locate(&conn, &interaction.id).unwrap().unwrap();
        assert_eq!((at.pack.as_str(), at.offset), ("q.pack", 99));
        assert_eq!(locate(&conn, &case.id).unwrap().unwrap().offset, 98);
        let rows: i64 = conn
            .query_row(
                "SELECT count(*) FROM interactions WHERE operation = 'getItem'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 1);
        let totals = kind_totals(&conn).unwrap();
        assert_eq!(
            totals.iter().map(|t| (t.0, t.1)).collect::<Vec<_>>(),
            vec![(1, 1), (2, 3), (3, 1)]
        );
    }

    /// A group of interactions or test cases goes in whole, each at its offset, or not at
    /// all: a group holding an interaction the index names already, or a test case it may
    /// hold, leaves the index as it was, for the caller to insert them one at a time.
    #[test]
    fn a_group_of_rows_goes_in_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, _) = open(&dir.path().join("index.sqlite")).unwrap();
        let run = RunId(Digest([9; 32]));
        let case = header(ObjectKind::TestCase, 200);
        let case_row = IndexRow::Case {
            operation: "getItem".into(),
            method: "GET".into(),
        };
        let rows: Vec<(RecordHeader, IndexRow)> = (0..2 * ROWS_PER_INSERT as u8)
            .map(|n| {
                let row = IndexRow::Interaction {
                    run,
                    seq: u64::from(n),
                    case: CaseId(case.id),
                    method: "GET".into(),
                    status: Some(200 + u16::from(n)),
                    request_body: None,
                    response_body: Some(crate::ids::BlobId(Digest([n; 32]))),
                };
                (header(ObjectKind::Interaction, n), row)
            })
            .collect();
        let group = |from: usize| -> Vec<(u64, &RecordHeader, &IndexRow)> {
            rows[from..from + ROWS_PER_INSERT]
                .iter()
                .map(|(h, r)| (1000 + u64::from(h.id.0[0]), h, r))
                .collect()
        };
        let count = |conn: &Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM interactions", [], |r| r.get(0))
                .unwrap()
        };
        let tx = conn.transaction().unwrap();
        let pack = pack_id(&tx, "p.pack").unwrap();
        let mut context = InsertContext::default();
        assert!(insert_object_with(&tx, pack, 10, &case, &case_row, &mut context).unwrap());
        assert!(insert_group_with(&tx, pack, &group(0), &mut context).unwrap());
        // The second group begins with the last of the first: none of it goes in.
        let (last_h, last_r) = &rows[ROWS_PER_INSERT - 1];
        let mut overlapping = vec![(1, last_h, last_r)];
        overlapping.extend(group(ROWS_PER_INSERT).into_iter().skip(1));
        assert!(!insert_group_with(&tx, pack, &overlapping, &mut context).unwrap());
        assert_eq!(count(&tx), ROWS_PER_INSERT as i64);
        // Fewer than a group, or a group that is not all interactions, is left to the caller.
        assert!(!insert_group_with(&tx, pack, &group(0)[1..], &mut context).unwrap());
        let mut mixed = group(ROWS_PER_INSERT);
        mixed[3] = (5, &case, &case_row);
        assert!(!insert_group_with(&tx, pack, &mixed, &mut context).unwrap());
        assert!(insert_group_with(&tx, pack, &group(ROWS_PER_INSERT), &mut context).unwrap());
        // Test cases go in as a group only when the context knows the index lacks each.
        let cases: Vec<(RecordHeader, IndexRow)> = (100..100 + ROWS_PER_INSERT as u8)
            .map(|n| (header(ObjectKind::TestCase, n), case_row.clone()))
            .collect();
        let case_group: Vec<(u64, &RecordHeader, &IndexRow)> = cases
            .iter()
            .map(|(h, r)| (2000 + u64::from(h.id.0[0]), h, r))
            .collect();
        for (h, _) in &cases[1..] {
            context.knows_case(CaseId(h.id), None);
        }
        assert!(!insert_group_with(&tx, pack, &case_group, &mut context).unwrap());
        context.knows_case(CaseId(cases[0].0.id), None);
        assert!(insert_group_with(&tx, pack, &case_group, &mut context).unwrap());
        drop(context);
        tx.commit().unwrap();
        assert_eq!(count(&conn), 2 * ROWS_PER_INSERT as i64);
        for (h, _) in &cases {
            let at = locate(&conn, &h.id).unwrap().unwrap();
            assert_eq!(
                (at.kind_tag, at.offset, at.stored_len),
                (h.kind_tag, 2000 + u64::from(h.id.0[0]), h.stored_len)
            );
        }
        let stored_cases: i64 = conn
            .query_row("SELECT count(*) FROM cases", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored_cases, 1 + ROWS_PER_INSERT as i64);
        // Each row is the one the group gave, at its offset, with its query columns.
        for (h, r) in &rows {
            let at = locate(&conn, &h.id).unwrap().unwrap();
            assert_eq!(
                (at.kind_tag, at.pack.as_str(), at.offset, at.stored_len),
                (
                    h.kind_tag,
                    "p.pack",
                    1000 + u64::from(h.id.0[0]),
                    h.stored_len
                )
            );
            let IndexRow::Interaction { seq, status, .. } = r else {
                unreachable!()
            };
            let (operation, stored_status, body): (String, i64, Vec<u8>) = conn
                .query_row(
                    "SELECT operation, status, response_body FROM interactions
                     WHERE run = (SELECT key FROM run_keys WHERE id = ?1) AND seq = ?2",
                    params![&run.0 .0[..], *seq as i64],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .unwrap();
            assert_eq!(operation, "getItem");
            assert_eq!(Some(stored_status as u16), *status);
            assert_eq!(body, vec![h.id.0[0]; 32]);
        }
    }

    /// Interactions are found by id whether `interaction_ids` covers them yet or not, and a
    /// row number freed by gc at the end of the table is never left out of both.
    #[test]
    fn interactions_are_found_by_id_before_and_after_their_ids_are_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, _) = open(&dir.path().join("index.sqlite")).unwrap();
        let run = RunId(Digest([9; 32]));
        let row = |seq: u64| IndexRow::Interaction {
            run,
            seq,
            case: CaseId(Digest([1; 32])),
            method: "GET".into(),
            status: Some(200),
            request_body: None,
            response_body: None,
        };
        // Ids that share their first 8 bytes, and one that differs there.
        let id = |n: u8, head: u8| {
            let mut d = [head; 32];
            d[31] = n;
            Digest(d)
        };
        let at = |n: u8, head: u8| RecordHeader {
            id: id(n, head),
            ..header(ObjectKind::Interaction, n)
        };
        let insert = |conn: &mut Connection, n: u8, head: u8, seq: u64| {
            let tx = conn.transaction().unwrap();
            let pack = pack_id(&tx, "p.pack").unwrap();
            assert!(insert_object(&tx, pack, u64::from(n) * 10, &at(n, head), &row(seq)).unwrap());
            tx.commit().unwrap();
        };
        let found = |conn: &Connection, n: u8, head: u8| {
            let located = locate(conn, &id(n, head)).unwrap().map(|l| l.offset);
            let prefix = hex::encode(id(n, head).0);
            let by_prefix = by_prefix(conn, &prefix, 11).unwrap();
            let described = describe(conn, ObjectKind::Interaction, &id(n, head)).unwrap();
            (located, by_prefix, described)
        };
        insert(&mut conn, 1, 0xaa, 0);
        insert(&mut conn, 2, 0xaa, 1);
        insert(&mut conn, 3, 0xbb, 2);
        assert_eq!(interaction_ids_behind(&conn).unwrap(), 3);
        let in_tail = [
            found(&conn, 1, 0xaa),
            found(&conn, 2, 0xaa),
            found(&conn, 3, 0xbb),
        ];
        assert_eq!(in_tail[0].0, Some(10));
        assert_eq!(in_tail[1].1, vec![(3, id(2, 0xaa))]);
        assert!(in_tail[2].2.starts_with("#2 GET"), "{}", in_tail[2].2);
        // Indexed, they are found the same way, and through the index.
        let tx = conn.transaction().unwrap();
        assert_eq!(index_interaction_ids(&tx).unwrap(), 3);
        assert_eq!(
            index_interaction_ids(&tx).unwrap(),
            0,
            "nothing is indexed twice"
        );
        tx.commit().unwrap();
        assert_eq!(interaction_ids_behind(&conn).unwrap(), 0);
        assert_eq!(
            [
                found(&conn, 1, 0xaa),
                found(&conn, 2, 0xaa),
                found(&conn, 3, 0xbb)
            ],
            in_tail
        );
        // A prefix shared by two interactions names both.
        assert_eq!(
            by_prefix(&conn, "aaaa", 11).unwrap(),
            vec![(3, id(1, 0xaa)), (3, id(2, 0xaa))]
        );
        // gc drops the last row; the next one takes its row number, which the index passed
        // already, and is found all the same (in the tail).
        let last = located_rows(&conn)
            .unwrap()
            .into_iter()
            .find(|r| r.id == id(3, 0xbb))
            .unwrap();
        let tx = conn.transaction().unwrap();
        let mut mover = Mover::new(&tx);
        mover.forget(last.at, &last.id, last.kind_tag).unwrap();
        drop(mover);
        forget_deleted_interactions(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(locate(&conn, &id(3, 0xbb)).unwrap(), None);
        insert(&mut conn, 4, 0xcc, 3);
        assert_eq!(
            locate(&conn, &id(4, 0xcc)).unwrap().map(|l| l.offset),
            Some(40)
        );
        let tx = conn.transaction().unwrap();
        assert_eq!(index_interaction_ids(&tx).unwrap(), 1);
        tx.commit().unwrap();
        assert_eq!(
            locate(&conn, &id(4, 0xcc)).unwrap().map(|l| l.offset),
            Some(40)
        );
        assert_eq!(locate(&conn, &id(3, 0xbb)).unwrap(), None);
        let entries: i64 = conn
            .query_row("SELECT count(*) FROM interaction_ids", [], |r| r.get(0))
            .unwrap();
        assert_eq!(entries, 3, "the dropped interaction's entry went with it");
        // Another interaction as the same step of the run is refused, naming both.
        let tx = conn.transaction().unwrap();
        let pack = pack_id(&tx, "p.pack").unwrap();
        let err = insert_object(&tx, pack, 50, &at(5, 0xdd), &row(0)).unwrap_err();
        assert!(err.to_string().contains("seq 0 of run"), "{err}");
    }

    proptest::proptest! {
        /// Keys order as the ids' first 8 bytes do, so a hex prefix is one range of keys.
        #[test]
        fn id_keys_keep_the_order_of_id_prefixes(a in proptest::array::uniform32(0u8..), b in proptest::array::uniform32(0u8..)) {
            proptest::prop_assert_eq!(a[..8].cmp(&b[..8]), id_key(&a).cmp(&id_key(&b)));
        }
    }

    #[test]
    fn id_keys_span_the_signed_range() {
        assert_eq!(id_key(&[0; 32]), i64::MIN);
        assert_eq!(id_key(&[0xff; 32]), i64::MAX);
        assert_eq!(id_key(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0xff]), 0);
        assert_eq!(id_key(&[0x80]), 0, "a short id reads as zero-padded");
    }
}
