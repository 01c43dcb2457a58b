//! Changing the index under maintenance: gc's moves and drops of located rows
//! ([`Mover`]), reindex's clearing and filling, and telling damage from other errors.
//!
//! Depends on: `ids`, `store::error`, `store::format`.

use rusqlite::{params, Connection, Transaction};

use crate::ids::Digest;

use super::ids::id_key;
use super::query::RowAt;
use super::write::{statement_in, LOCATE_CASE, LOCATE_INTERACTION};
use crate::store::format::{ObjectKind, RecordHeader};

/// Moves and drops the rows of located records by where they are ([`RowAt`]), for gc: each
/// a lookup by row number or primary key, with its statement prepared once, so that gc's
/// index work grows with the records it moves and drops and nothing else.
///
/// (gc used to move each record by id: an interaction through `interaction_ids`, or, after
/// `meta.interaction_ids_through`, by a scan of every later row, so moving the interactions
/// a recorder wrote since its last pass over their ids scanned that tail once for each of
/// them: quadratic in the interactions not yet indexed. docs/benchmarks.md, "gc's index
/// moves", has the figures.)
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
