//! An open store as the rest of probe holds it ([`Store`], cheap to share) and what it
//! holds: the layout chosen when the store opened and the context that layout works with
//! (`Inner`). Its methods, the store's API, are in `store/mod.rs` (reads, writes, queries),
//! `store/exclusive.rs` (maintenance) and `store/recorder.rs` (the writer thread): each
//! names this small file, and this file names the seam, never them.
//!
//! Depends on: `store::{context, error, format, located, seam, v1::layout}`, `ids`.

use std::sync::{Arc, MutexGuard};

use rusqlite::Connection;

use crate::ids::Digest;

use super::context::Context;
use super::error::StoreError;
use super::format::ObjectKind;
use super::located::Located;
use super::seam::Layout;
use super::v1::layout::V1;

pub(crate) struct Inner {
    /// The store's layout, chosen once when it opened: every operation that depends on the
    /// format goes through it, with [`Inner::ctx`].
    pub(crate) layout: Box<dyn Layout>,
    /// What the layout works with (directory, byte layer, notes, lock). After the layout,
    /// so that the lock in it is dropped after the index connection closed.
    pub(crate) ctx: Context,
}

/// The facade reads the context's fields as its own (`inner.dir`, `inner.backend`).
impl std::ops::Deref for Inner {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl Inner {
    /// The format-1 parts of the store, for the code written for format 1 only (its
    /// maintenance, the upgrade from it).
    pub(crate) fn v1(&self) -> Result<&V1, StoreError> {
        self.layout
            .as_any()
            .downcast_ref::<V1>()
            .ok_or_else(|| StoreError::NotYetInFormat2 {
                path: self.dir.clone(),
            })
    }

    pub(crate) fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.v1()?
            .conn
            .lock()
            .map_err(|_| StoreError::Other("index connection lock poisoned".into()))
    }

    /// The schema of the format-1 index, as found when it was opened.
    pub(crate) fn index_schema(&self) -> Result<MutexGuard<'_, u32>, StoreError> {
        self.v1()?
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))
    }

    /// Reads and checks one object's payload: it must be `id`, and hash to `id`.
    pub(crate) fn read_payload(&self, id: Digest) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        self.layout.read(&self.ctx, id)
    }

    /// [`Inner::read_payload`] for an object whose location the caller already has (from
    /// a query), with the same checks.
    pub(crate) fn read_located(
        &self,
        id: Digest,
        loc: &Located,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        self.layout.read_located(&self.ctx, id, loc)
    }
}

/// An open store. Cheap to share between threads (`&Store` is `Sync`).
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}
