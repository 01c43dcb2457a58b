//! What the store's maintenance reports: verify's problems and notes, reindex's and gc's
//! counts, stats. Plain data, shared by the facade and every layout (they fill it in).
//!
//! Depends on: `ids`.

use serde::Serialize;

use crate::ids::Digest;

/// One problem verify found, named by object id where there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub id: Option<Digest>,
    pub message: String,
}

/// What verify found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub packs: u64,
    /// Records re-hashed.
    pub objects: u64,
    pub problems: Vec<Problem>,
    /// Harmless facts: torn tails of crashed writers, duplicate copies, unfinished runs.
    pub notes: Vec<String>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What reindex rebuilt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    pub packs: u64,
    pub objects: u64,
    /// Records skipped because they are damaged, by description.
    pub skipped: Vec<String>,
    /// Torn tails ignored.
    pub torn_tails: u64,
    /// The damaged index file the rebuild replaced, and where it went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_aside: Option<MovedIndex>,
}

/// A damaged index file moved aside before a rebuild.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MovedIndex {
    /// Where it is now (`index.sqlite.damaged-<unix seconds>`; its `-wal` and `-shm`, if
    /// any, beside it).
    pub to: String,
    /// Why it could not be used.
    pub reason: String,
}

/// What gc removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    pub objects_removed: u64,
    pub objects_kept: u64,
    pub packs_rewritten: u64,
    /// Bytes of the packs rewritten, and of the packs that replace them.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Second copies of objects dropped from the packs rewritten.
    pub duplicates_dropped: u64,
    /// Torn tails of interrupted writers dropped from the packs rewritten.
    pub torn_tails_dropped: u64,
    /// Packs gc would have rewritten but left as they are, each with the reason (a damaged
    /// record, bytes that are not records, an index that does not match the pack).
    pub packs_left: Vec<String>,
}

/// Objects and bytes of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KindStats {
    pub kind: String,
    pub count: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
}

/// What `probe store stats` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoreStats {
    pub kinds: Vec<KindStats>,
    pub objects: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// Bytes of all pack files (records, duplicates, torn tails).
    pub pack_bytes: u64,
    pub packs: u64,
    pub index_bytes: u64,
    /// zstd dictionaries in `dicts/`, and their bytes.
    pub dicts: u64,
    pub dict_bytes: u64,
    /// Interaction bodies that point at a blob.
    pub blob_references: u64,
    /// Blob references per stored blob (1.0 = no body shared).
    pub dedup_ratio: f64,
    /// Raw payload bytes per stored byte.
    pub compression_ratio: f64,
}
