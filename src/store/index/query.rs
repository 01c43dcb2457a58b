//! Reading the index: where an object lives, the runs and their interactions, finding
//! sets, prefixes and names, tallies and the totals `stats` shows.
//!
//! Depends on: `ids`, `model`, `store::error`, `store::format`.

use std::collections::BTreeMap;

use rusqlite::{named_params, params, Connection, OptionalExtension};
use serde::Serialize;

use crate::ids::{CaseId, Digest, FindingSetId, InteractionId, RunEndId, RunId};

use super::ids::{id_key, CASE_BY_ID, INTERACTION_BY_ID};
use super::write::{digest_of, Location};
use crate::store::format::ObjectKind;

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
