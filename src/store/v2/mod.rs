//! Store format 2 (issue #31), built in increments: **not yet used by the store**, which
//! reads and writes format 1 only. The design is `store-format/FORMAT.md`, "Format 2 blocks
//! (draft)".
//!
//! Format 2 packs many objects into one zstd frame (a *block*) instead of one frame per
//! object, takes the 32-byte ids inside payloads out of them (they are restored on read,
//! and recomputed by hashing where they name an object of the same block), and stores no
//! object ids beside the objects.
//!
//! # Architecture
//! - [`block`]: the 24-byte block header, its check value, sealing content into a block
//!   (header + one zstd frame) and opening it again.
//! - [`content`]: the content of a block: objects with their ids spliced out
//!   ([`content::ContentBuilder`]), parsed and restored byte for byte
//!   ([`content::Parsed`]).
//! - `varint`: the LEB128 integers of content.
//!
//! Pure so far: bytes in, bytes out; no files, no index, no store.
//!
//! Depends on: `ids`, `store::format` (identity, the 2^30 limit). Nothing in format 1
//! depends on this module.

pub mod block;
pub mod content;
mod varint;

#[cfg(test)]
mod vectors;
