//! Store format 2, the format of new stores. The byte layout is `store-format/FORMAT.md`
//! sections 9 and 10; the reasons are docs/store.md, "Format 2".
//!
//! Format 2 packs many objects into one zstd frame (a *block*) instead of one frame per
//! object, takes the 32-byte ids inside payloads out of them (they are restored on read,
//! and recomputed by hashing where they name an object of the same block), and stores no
//! object ids beside the objects.
//!
//! **Opened by every opener, created by default**: [`crate::store::Store::open`] creates
//! one (`Store::open_or_create(dir, StoreFormat::One)` a format-1 store). What works on
//! one: writes (`put`, the recorder), reads, every query (`runs`, pages, `tally`,
//! summaries, `resolve`, `describe`), `verify`, `reindex`, `stats`, `upgrade` (from format
//! 1) and `gc`.
//!
//! # Architecture
//! - [`block`]: the 24-byte block header, its check value, sealing content into a block
//!   (header + one zstd frame) and opening it again.
//! - [`content`]: the content of a block: objects with their ids spliced out
//!   ([`content::ContentBuilder`]), parsed and restored byte for byte
//!   ([`content::Parsed`]).
//! - `varint`: the LEB128 integers of content.
//! - [`cols`]: the query columns of an exchange block (`blocks.cols`).
//! - [`index2`]: the schema-4 index in `index-2.sqlite`, one row per block.
//! - [`idmap`]: finding an object by id from the 4-byte keys of the blocks.
//! - [`cache`]: decoded blocks kept for readers.
//! - [`layout`]: what an open format-2 store holds ([`layout::V2`]) and its reads.
//! - `seam`: format 2's side of the store's seam (`store::seam::Layout`) and how it opens.
//! - [`writer`]: objects into blocks, appended durably, then indexed ([`writer::Writer2`]).
//! - [`scan`]: a pack read block by block without the index, torn tails told from damage.
//! - [`maintain`]: the index rebuilt from the packs, torn tails cut (`probe store reindex`).
//! - `verify`: `probe store verify` of a format-2 store, in its steps.
//! - `gc`: objects no run reaches and second copies dropped, by whole blocks (`probe store
//!   gc`).
//!
//! Depends on: `ids`, `store::format` (identity, the 2^30 limit), and for the store parts
//! `store` (the byte layer [`crate::store::ObjectBackend`], objects, errors). Nothing in
//! format 1 depends on this module; the facade names it once, in its `LAYOUTS`
//! (`seam::open`), and holds a [`layout::V2`] as its `seam::Layout`.

pub mod block;
pub mod cache;
pub mod cols;
pub mod content;
pub mod dicts;
mod gc;
pub mod idmap;
pub mod index2;
pub mod layout;
pub mod maintain;
pub mod pack2;
pub mod scan;
pub(crate) mod seam;
mod stats;
pub mod upgrade;
mod varint;
mod verify;
pub mod whole;
pub mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;

pub use pack2::{pack2_header, PACK2_MAGIC, PACKS_2_DIR, STORE_FORMAT_2};
pub use whole::block_bytes;
