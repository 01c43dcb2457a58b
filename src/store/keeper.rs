//! The keeper: what a campaign's spine (`campaign::spine`) hands the objects it made to,
//! encoded, and waits on. The store's [`Recorder`] is the keeper of `run`, `demo` and
//! `replay`; a test can give another. The trait is here, with the store that implements it,
//! so that the store depends on nothing above it; the campaign (`campaign`), above both the
//! store and the events, joins them.
//!
//! Depends on: `store` (the encoded objects, the recorder, [`StoreError`]).

use std::future::Future;
use std::pin::Pin;

use super::error::StoreError;
use super::object::EncodedObject;
use super::recorder::Recorder;

/// What [`Keeper::keep`] returns.
pub type KeepFuture<'a> = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

/// The consumer that keeps a campaign's objects.
pub trait Keeper: Send + Sync {
    /// Takes `objects` (encoded in the order they are to be kept); resolves once they are
    /// handed over, waiting while the keeper is full. An error means nothing more can be
    /// kept: the campaign stops.
    fn keep(&self, objects: Vec<EncodedObject>) -> KeepFuture<'_>;

    /// Keeps whatever it still holds, durably, and stops.
    fn finish(self: Box<Self>) -> Result<(), StoreError>;
}

impl Keeper for Recorder {
    fn keep(&self, objects: Vec<EncodedObject>) -> KeepFuture<'_> {
        Box::pin(self.record_async(objects))
    }

    fn finish(self: Box<Self>) -> Result<(), StoreError> {
        Recorder::finish(*self).map(drop)
    }
}
