//! The facade's side of maintenance: [`Store::verify`] and [`Store::stats`] on any open
//! store, and [`ExclusiveStore`], a store opened alone for gc, reindex or an upgrade. Each
//! goes to the store's layout through the seam (`seam::Layout`); the steps of each format
//! are in its folder, and what they share in `store::maintenance`.
//!
//! gc and reindex need the store alone: they are methods of [`ExclusiveStore`], which only
//! [`Store::open_for_maintenance`] gives (it holds the store lock exclusively, `lock`).
//!
//! Depends on: `store::{files, index, lock, reports, v2}` and the facade's `Store`.

use std::ops::Deref;

use super::error::StoreError;
use super::handle::Store;
use super::index::{self, sql_err};
use super::lock::Maintenance;
use super::reports::{GcReport, MovedIndex, ReindexReport, StoreStats, VerifyReport};

impl Store {
    /// Re-hashes every object in every pack, checks the index against the packs and every
    /// reference between objects. Problems are listed by object id.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let inner = &self.inner;
        let mut report = VerifyReport {
            notes: inner.notes.lock().map(|n| n.clone()).unwrap_or_default(),
            ..VerifyReport::default()
        };
        inner.layout.verify(&inner.ctx, &mut report)?;
        Ok(report)
    }

    /// Rebuilds the index from the packs alone ([`ExclusiveStore::reindex`], and an open
    /// that finds the index missing or empty).
    ///
    /// The rebuild is one transaction on the index in place: a crash leaves the old index,
    /// and a process writing meanwhile waits for the lock instead of writing into a file
    /// that is about to be replaced. An index of a newer schema (which this build must not
    /// write) is replaced by a fresh file first.
    pub(crate) fn rebuild_index(&self) -> Result<ReindexReport, StoreError> {
        self.inner.layout.rebuild_index(&self.inner.ctx)
    }

    /// Objects by kind, bytes raw and stored, dedup and compression ratios.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        self.inner.layout.stats(&self.inner.ctx)
    }
}

/// A store opened alone ([`Store::open_for_maintenance`]): while it lives no other process
/// (and no other handle of this one) has the store open. Reads like any [`Store`].
pub struct ExclusiveStore {
    store: Store,
    operation: Maintenance,
    /// The damaged index the open moved aside (a reindex only).
    moved: Option<MovedIndex>,
}

impl Store {
    /// [`super::v2::maintain::index_packs`] on this store: the blocks of `packs`, whole packs that arrived in
    /// `packs-2/` (a pull from object storage), added to the index. Format 2 only.
    pub fn index_packs(
        &self,
        packs: &[String],
    ) -> Result<super::v2::maintain::Rebuilt, StoreError> {
        let v2 = self
            .inner
            .layout
            .as_any()
            .downcast_ref::<super::v2::layout::V2>()
            .ok_or_else(|| {
                StoreError::Other(format!(
                    "{} is a format-1 store: packs can be added to a format-2 store only (`probe store upgrade`)",
                    self.dir().display()
                ))
            })?;
        super::v2::maintain::index_packs(v2, self.inner.backend.as_ref(), packs)
    }
}

impl Deref for ExclusiveStore {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

impl ExclusiveStore {
    pub(crate) fn new(store: Store, operation: Maintenance, moved: Option<MovedIndex>) -> Self {
        ExclusiveStore {
            store,
            operation,
            moved,
        }
    }

    /// What the store was opened alone for.
    pub fn operation(&self) -> Maintenance {
        self.operation
    }

    /// Rebuilds the index from the packs alone, in one transaction. An index file that is
    /// damaged inside (the rebuild fails reading or clearing it) is moved aside
    /// (`index.sqlite.damaged-<unix seconds>`) and the rebuild made into a new file; the
    /// report says where the old file went, as it does when the open moved it.
    pub fn reindex(&self) -> Result<ReindexReport, StoreError> {
        let mut report = match self.store.rebuild_index() {
            Err(StoreError::Index { source, .. }) if index::is_damage(&source) => {
                let moved = self.replace_index_file(source.to_string())?;
                let mut report = self.store.rebuild_index()?;
                report.moved_aside = Some(moved);
                report
            }
            other => other?,
        };
        if report.moved_aside.is_none() {
            report.moved_aside = self.moved.clone();
        }
        Ok(report)
    }

    /// Moves the open index file aside and opens a new, empty one in its place.
    fn replace_index_file(&self, reason: String) -> Result<MovedIndex, StoreError> {
        let inner = &self.store.inner;
        let mut conn = inner.conn()?;
        *conn = rusqlite::Connection::open_in_memory().map_err(sql_err(&inner.index_path))?;
        let to = super::files::move_index_aside(&inner.index_path)?;
        let (fresh, version) = index::open(&inner.index_path)?;
        *conn = fresh;
        *inner.index_schema()? = version;
        Ok(MovedIndex {
            to: to.display().to_string(),
            reason,
        })
    }

    /// Drops objects no run reaches, and second copies of objects and torn tails, by
    /// rewriting each pack that holds any of them into a pack that takes its place (named
    /// after it, so packs keep their order); a pack whose bytes are all records the index
    /// names, none of them unreachable, is not read. Kept records are checked (hash) as
    /// they are copied; a pack holding a damaged record, bytes that are not records, or
    /// records the index places elsewhere than they are is left as it is (listed in the
    /// report: `probe store verify` says more).
    ///
    /// The copies are durable before the index names them, and the old packs are removed
    /// only after that commit; should gc fail before it, the copies are removed and the
    /// store is as it was. The index work is one lookup by row number or key per record
    /// moved or dropped, in one transaction.
    pub fn gc(&self) -> Result<GcReport, StoreError> {
        self.store.inner.layout.gc(&self.store.inner.ctx)
    }
}
