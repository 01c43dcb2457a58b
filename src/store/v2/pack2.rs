//! What marks a format-2 store and its packs: the store format, the packs' directory,
//! magic and header.
//!
//! Depends on: `store::format`.

use crate::store::format::{FormatVersion, PACK_HEADER_LEN};

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
