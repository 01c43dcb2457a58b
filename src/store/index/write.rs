//! Writing the index: a located record's rows (its location and its query rows), alone or
//! in groups of rows per statement, within one transaction's [`InsertContext`].
//!
//! Depends on: `ids`, `model`, `store::error`, `store::format`, `store::object`.

use rusqlite::{named_params, params, Connection, OptionalExtension, Transaction};

use crate::ids::{CaseId, Digest, IdMap, IdSet, RunId};

use super::ids::{found_case, CASE_BY_ID, FIND_CASE};
use crate::store::format::{ObjectKind, RecordHeader};
use crate::store::object::IndexRow;

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

pub(super) fn digest_of(bytes: Vec<u8>) -> rusqlite::Result<Digest> {
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
pub(super) fn statement_in<'s, 'tx>(
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
// first ([`super::ids::FIND_CASE`], [`FIND_INTERACTION`]): one descent of a small index, where schema 2
// inserted under the 32-byte id and let the conflict tell.
macro_rules! case_insert_head {
    () => {
        "INSERT INTO cases(id, operation, method, pack, offset, raw_len, stored_len, dict) VALUES"
    };
}
const CASE_INSERT_HEAD: &str = case_insert_head!();
const INSERT_CASE: &str = concat!(case_insert_head!(), " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
pub(super) const LOCATE_CASE: &str = "UPDATE cases SET pack = ?2, offset = ?3, raw_len = ?4,
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
pub(super) const LOCATE_INTERACTION: &str = "UPDATE interactions SET pack = ?2, offset = ?3,
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
