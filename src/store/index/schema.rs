//! The index's schema: its tables, its version and the migrations from older versions,
//! and opening it (creating, migrating, read-only, waiting while another process holds it).
//!
//! Depends on: `ids`, `store::error`, `store::format`.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use super::ids::index_interaction_ids;
use crate::store::error::StoreError;

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
