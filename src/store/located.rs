//! Where an object a query named lives, in the layout of its store: what the facade's
//! paged reads hand back, so that a reader needs no second lookup per object.
//!
//! Depends on: `ids`, `store::error`, `store::index` (a format-1 location, the index row),
//! `store::v2::idmap` (a format-2 block reference).

use crate::ids::Digest;

use super::error::StoreError;
use super::index::{self, InteractionRow};
use super::v2::idmap::BlockRef;

/// Where an object a query named lives, in the layout of its store.
#[derive(Clone, Debug)]
pub(crate) enum Located {
    /// A format-1 record.
    One(index::Location),
    /// An object of a format-2 block.
    Two(BlockRef),
}

impl Located {
    /// The error for a location given to a layout it is not of: locations come from the
    /// store's own queries, so a mix is a bug, said as an error.
    pub(crate) fn of_another_layout(&self, id: Digest) -> StoreError {
        StoreError::Other(format!("object {id}: a location of the other store format"))
    }
}

/// One row of [`super::Store::interactions_page`]: the index row and where its object lives
/// (`None` when the index names the interaction but not its object: a damaged index).
#[derive(Clone, Debug)]
pub struct LocatedInteraction {
    pub row: InteractionRow,
    pub(crate) location: Option<Located>,
    pub(crate) case_location: Option<Located>,
}
