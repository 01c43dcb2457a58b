//! The formats a store can be created in ([`StoreFormat`]), and the `FORMAT` version
//! each writes.
//!
//! Depends on: `store::format` (format 1's version), `store::v2::pack2` (format 2's).

use super::format::{FormatVersion, STORE_FORMAT};
use super::v2::pack2::STORE_FORMAT_2;

/// The format of a store [`super::Store::open_or_create`] creates; a store that exists keeps its
/// own. Format 2 is the default: about a tenth of format 1's size (docs/store.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreFormat {
    /// Per-object records (`packs/`, `index.sqlite`).
    One,
    /// Blocks (`packs-2/`, `index-2.sqlite`).
    #[default]
    Two,
}

impl StoreFormat {
    /// The format a setting names: `1` or `2`.
    pub fn parse(text: &str) -> Option<StoreFormat> {
        match text.trim() {
            "1" => Some(StoreFormat::One),
            "2" => Some(StoreFormat::Two),
            _ => None,
        }
    }

    pub(crate) fn version(self) -> FormatVersion {
        match self {
            StoreFormat::One => STORE_FORMAT,
            StoreFormat::Two => STORE_FORMAT_2,
        }
    }
}
