//! The SQLite index: where each object lives, plus query tables derived from the objects.
//!
//! Everything here can be rebuilt from the packs alone ([`super::ExclusiveStore::reindex`]), so the
//! index is a cache with a schema of its own ([`INDEX_SCHEMA_VERSION`], in the `meta`
//! table). A reader meeting a newer schema may read it but must not write it.
//!
//! # Parts
//! - [`schema`]: the tables, the schema version and the migrations to it, opening.
//! - [`ids`]: finding a test case or an interaction by id (`interaction_ids`).
//! - [`write`]: a located record's rows, alone or in groups.
//! - [`query`]: what readers ask (runs, interactions, finding sets, prefixes, totals).
//! - [`mover`]: gc's and reindex's changes of rows.
//!
//! This file only names the parts and their items; the parts name each other, never it.
//!
//! Depends on: `ids`, `model`, `store::error`, `store::format`, `store::object`.

pub mod ids;
pub mod mover;
pub mod query;
pub mod schema;
#[cfg(test)]
mod tests;
pub mod write;

pub use ids::{
    data_version, find_case, forget_deleted_interactions, id_key, index_interaction_ids,
    interaction_ids_behind,
};
pub use mover::{clear, fill_operations, is_damage, Mover};
pub use query::{
    all_objects, blob_references, by_prefix, describe, finding_sets_of, finding_sets_written,
    interactions_of, interactions_page, kind_totals, locate, located_rows, max_seq,
    newest_finding_set, newest_run_tagged, pack_names, run_end_id, run_summary, runs, runs_named,
    tally, InteractionRow, LocatedRow, PageRow, RowAt, RunSummary, RunTally,
};
pub use schema::{
    is_unwritable, open, open_migrating, open_read_only, tune_for_writing, INDEX_SCHEMA_VERSION,
};
pub(crate) use schema::{retry_while_busy, sql_err};
pub(crate) use write::outcome_name;
pub use write::{
    has_objects, in_other_objects, in_own_row, insert_group_with, insert_object,
    insert_object_with, own_kinds_in_other_objects, pack_id, InsertContext, Location,
    ROWS_PER_INSERT,
};
