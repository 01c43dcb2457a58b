//! A format-2 block read whole from a pack (header and frame in one buffer) and opened:
//! how verify, reindex and gc read blocks, beside the store's cached reads.
//!
//! Depends on: `v2::block`, `v2::content`, `v2::dicts`.

use super::{block, content, dicts};

/// Opens a block read whole from a pack (header and frame), with the dictionary it names
/// from `dicts`, and parses its content; the error says what is wrong with it. Verify,
/// reindex and gc read blocks this way (a store's own reads go through its cache,
/// `super::layout::V2::block`).
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
