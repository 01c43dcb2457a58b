//! Finding a test case or an interaction by id: the `interaction_ids` table filled in
//! sorted passes, and the tail after it scanned ([`super::INDEX_SCHEMA_VERSION`] 3).
//!
//! Depends on: `ids`, `store::error`.

use rusqlite::{params, Connection, OptionalExtension};

use crate::ids::Digest;

/// The `meta` key of the last `interactions` rowid that `interaction_ids` covers.
pub(super) const IDS_THROUGH: &str = "interaction_ids_through";

/// Test case `?1`'s row: its rowid and whether it names a location.
pub(super) const FIND_CASE: &str = "SELECT rowid, pack IS NOT NULL FROM cases
     WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1 LIMIT 1";

/// The test case of id `:id`, through the index on its 8-byte prefix.
pub(super) const CASE_BY_ID: &str = "substr(id, 1, 8) = substr(:id, 1, 8) AND id = :id";
/// The interactions of id `:id` and [`id_key`] `:key`: those `interaction_ids` covers,
/// through it, and the tail after it, scanned.
pub(super) const INTERACTION_BY_ID: &str =
    "(rowid IN (SELECT at FROM interaction_ids WHERE key = :key)
     OR rowid > (SELECT CAST(value AS INTEGER) FROM meta
       WHERE key = 'interaction_ids_through'))
   AND id = :id";

/// The `interaction_ids` key of an id: its first 8 bytes read as a big-endian unsigned
/// integer, moved into the signed range with the order kept (the top bit flipped), so that
/// ids that share a hex prefix have keys in one range. Computed here, not in SQL: SQLite
/// has no function that reads a blob as an integer, and integer keys compare in a fast path
/// that blob keys do not (docs/benchmarks.md, "interaction id keys", has the figures).
pub fn id_key(id: &[u8]) -> i64 {
    let mut head = [0u8; 8];
    let n = id.len().min(8);
    head[..n].copy_from_slice(&id[..n]);
    (u64::from_be_bytes(head) ^ (1 << 63)) as i64
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
pub(super) fn found_case(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, bool)> {
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
