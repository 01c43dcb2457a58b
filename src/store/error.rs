//! Why a store operation failed: [`StoreError`], one variant per cause, each naming what
//! failed and where (a path, a pack and offset, an object id), with the underlying error as
//! its source where there is one, and [`StoreError::hint`], how to fix it where there is a
//! known way.
//!
//! Depends on: `ids`, and the store's own format, lock and block types it names.

use std::io;
use std::path::{Path, PathBuf};

use crate::ids::Digest;

use super::holders::{describe_all, Holder, Maintenance};
use super::index;
use super::kind::ObjectKind;
use super::v2;

/// One object an ambiguous prefix matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub kind: ObjectKind,
    pub id: Digest,
    pub description: String,
}

fn list_candidates(c: &[Candidate]) -> String {
    c.iter()
        .map(|c| format!("\n  {} {} {}", c.kind, c.id.short(12), c.description))
        .collect()
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("index {}: {source}", path.display())]
    Index {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("no store at {}", path.display())]
    NoStore { path: PathBuf },
    #[error("{} is not a probe store: {reason}", path.display())]
    NotAStore { path: PathBuf, reason: String },
    #[error("{what} is format {found}, but this probe reads format {supported} at most")]
    VersionTooNew {
        what: String,
        found: String,
        supported: String,
    },
    #[error("index {} has schema {found}, newer than the schema {supported} this probe writes; it can be read, not written", path.display())]
    IndexTooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("object {id}: stored content hashes to {actual}")]
    HashMismatch { id: Digest, actual: Digest },
    #[error("no object {id} in the store")]
    NotFound { id: String },
    #[error("object {id} is a {found}, not a {expected}")]
    WrongKind {
        id: Digest,
        expected: ObjectKind,
        found: String,
    },
    #[error("`{prefix}` is ambiguous; it matches:{}", list_candidates(candidates))]
    Ambiguous {
        prefix: String,
        candidates: Vec<Candidate>,
    },
    #[error("`{text}` is too short: give at least 4 hex characters of an id")]
    PrefixTooShort { text: String },
    #[error("damaged record in pack {pack} at offset {offset}: {reason}")]
    Damaged {
        pack: String,
        offset: u64,
        reason: String,
    },
    #[error("object {id}: {reason}")]
    DamagedObject { id: Digest, reason: String },
    #[error("cannot encode a {kind}: {reason}")]
    Encode { kind: ObjectKind, reason: String },
    #[error("object {id} ({kind}) cannot be decoded: {reason}")]
    Decode {
        id: Digest,
        kind: ObjectKind,
        reason: String,
    },
    #[error("index {} is damaged: {source}", path.display())]
    DamagedIndex {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "the store is in use by {}; {operation} needs it alone: wait for {} to finish or stop {}",
        describe_all(holders, "another process, which did not register itself in writers/"),
        if holders.len() > 1 { "them" } else { "it" },
        if holders.len() > 1 { "them" } else { "it" }
    )]
    InUse {
        operation: Maintenance,
        holders: Vec<Holder>,
    },
    #[error(
        "the store is held alone by {}: try again when it has finished",
        describe_all(holders, "another process for maintenance (gc or reindex)")
    )]
    Maintained { holders: Vec<Holder> },
    /// What a format-2 store cannot do yet: format 2 is built in increments (issue #31).
    #[error("{} is a format-2 store, and this operation does not read or write format 2 yet", path.display())]
    NotYetInFormat2 { path: PathBuf },
    #[error("cannot seal a format-2 {stream:?} block: {source}")]
    Seal {
        stream: v2::block::Stream,
        #[source]
        source: v2::block::SealError,
    },
    #[error("index {}: damaged query columns: {reason}", path.display())]
    DamagedColumns { path: PathBuf, reason: String },
    #[error("index {} names no block {block}: was it rebuilt meanwhile?", path.display())]
    NoSuchBlock { path: PathBuf, block: i64 },
    /// `probe store upgrade` on a store verify finds problems in: it is left as it is.
    #[error("{} has {problems} problems, so it is not upgraded (first: {first})", path.display())]
    NotUpgradable {
        path: PathBuf,
        problems: usize,
        first: String,
    },
    /// What an upgrade wrote does not read back as the format-1 store: it stays format 1.
    #[error("the format-2 copy of {} differs from the store, which stays format 1: {what}", path.display())]
    UpgradeDiffers { path: PathBuf, what: String },
    #[error("the recorder stopped: {0}")]
    Recorder(String),
    #[error("store error: {0}")]
    Other(String),
}

impl StoreError {
    /// How to fix it, where there is a known way.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::NoStore { .. } => Some(
                "run `probe run` to create a store here, or point `--store`/PROBE_STORE at one"
                    .into(),
            ),
            StoreError::NotAStore { .. } => {
                Some("point `--store`/PROBE_STORE at a probe store directory".into())
            }
            StoreError::VersionTooNew { found, .. } => Some(format!(
                "upgrade probe to a release that reads format {found}"
            )),
            StoreError::IndexTooNew { .. } => Some(
                "use the newer probe that wrote it, or rebuild it with `probe store reindex` \
                 (the rebuild keeps every object)"
                    .into(),
            ),
            StoreError::HashMismatch { .. }
            | StoreError::Damaged { .. }
            | StoreError::DamagedObject { .. }
            | StoreError::Decode { .. } => {
                Some("run `probe store verify` to list every damaged object".into())
            }
            StoreError::NotUpgradable { .. } => Some(
                "`probe store verify` lists the problems; `probe store reindex` mends a stale \
                 index, `probe store gc` drops torn tails"
                    .into(),
            ),
            StoreError::UpgradeDiffers { .. } => Some(
                "nothing was changed; run `probe store verify`, and report this with its output"
                    .into(),
            ),
            StoreError::Ambiguous { .. } => Some("give more characters of the id".into()),
            StoreError::NotFound { .. } => {
                Some("`probe log` lists runs; `probe show <run>` lists its interactions".into())
            }
            StoreError::Index { source, .. } if index::is_unwritable(source) => Some(
                "this process may not write the store (a read-only medium, or no write \
                 permission): commands that only read it work"
                    .into(),
            ),
            StoreError::Index { .. } => {
                Some("if the index is damaged, `probe store reindex` rebuilds it".into())
            }
            StoreError::DamagedColumns { .. } => Some(
                "run `probe store reindex`: it rebuilds the index, columns included, from the \
                 packs"
                    .into(),
            ),
            StoreError::DamagedIndex { .. } => Some(
                "run `probe store reindex`: it moves the damaged file aside and rebuilds the \
                 index from the packs (every object is kept)"
                    .into(),
            ),
            StoreError::InUse { .. } => Some(
                "`probe store gc` and `probe store reindex` run only while no other process has \
                 the store open"
                    .into(),
            ),
            StoreError::Maintained { .. } => Some(
                "gc and reindex hold the store alone while they run; nothing else can use it \
                 meanwhile"
                    .into(),
            ),
            _ => None,
        }
    }
}

pub(crate) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}
