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
pub mod scan;
pub(crate) mod seam;
mod stats;
pub mod upgrade;
mod varint;
mod verify;
pub mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;

use crate::store::format::{FormatVersion, PACK_HEADER_LEN};

/// Opens a block read whole from a pack (header and frame), with the dictionary it names
/// from `dicts`, and parses its content; the error says what is wrong with it. Verify,
/// reindex and gc read blocks this way (a store's own reads go through its cache,
/// `layout::V2::block`).
pub(crate) fn open_block(
    bytes: &[u8],
    dicts: &dicts::DictionaryCache,
) -> Result<content::Parsed, String> {
    let (header, content) = block::open(bytes, |key| dicts.get(key)).map_err(|e| e.to_string())?;
    content::Parsed::parse(content, header.count).map_err(|e| e.to_string())
}

/// A block as a scan gives it, header and frame, in one buffer again.
pub fn block_bytes(header: &block::BlockHeader, frame: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(block::BLOCK_HEADER_LEN + frame.len());
    bytes.extend_from_slice(&header.encode());
    bytes.extend_from_slice(frame);
    bytes
}

/// The store format of a format-2 store's `FORMAT` file.
pub const STORE_FORMAT_2: FormatVersion = FormatVersion { major: 2, minor: 0 };

/// Magic at the start of every format-2 pack (format 1's is `PROBEPAK`).
pub const PACK2_MAGIC: [u8; 8] = *b"PROBEPK2";

/// The directory of format-2 packs, beside format 1's `packs/` (which format 2 ignores).
pub const PACKS_2_DIR: &str = "packs-2";

/// The 12-byte header of a format-2 pack: magic, major 2, minor, 2 reserved zero bytes.
pub fn pack2_header() -> [u8; PACK_HEADER_LEN] {
    let mut out = [0u8; PACK_HEADER_LEN];
    out[..8].copy_from_slice(&PACK2_MAGIC);
    out[8] = STORE_FORMAT_2.major;
    out[9] = STORE_FORMAT_2.minor;
    out
}
