//! Reading a format-2 pack from its start, block by block, without the index: what verify,
//! reindex and torn-tail cutting (FORMAT.md §10.2) are built on.
//!
//! A scan stops at the first block whose header or frame runs past the end of the file, or
//! at zeros to the end of the file: a *torn tail*, what a process killed mid-append leaves
//! (its pack is its own, so only its last append can be cut short). A block whose frame is
//! all there but fails its check value is *damaged*: reported, and the scan goes on after
//! it. Bytes that are neither a block nor zeros end the scan as garbage. Nothing is
//! decompressed here: the check value tells damage from a tear.
//!
//! Depends on: `store::pack` (the byte layer and the scan skeleton both formats share),
//! `store::error`, `store::format`, `v2::block`, `v2::pack2` (the pack header).

use crate::store::error::StoreError;
use crate::store::format::FormatVersion;
use crate::store::pack::{scan_frames, Framing, ObjectBackend, Piece};

use super::block::{BlockHeader, BLOCK_HEADER_LEN};
use super::pack2::{PACK2_MAGIC, STORE_FORMAT_2};

/// One item met while scanning a format-2 pack.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanItem {
    /// A whole block whose check value matches; `frame` is its zstd frame.
    Block {
        offset: u64,
        header: BlockHeader,
        frame: Vec<u8>,
    },
    /// A whole block whose check value does not match its header and frame.
    Damaged { offset: u64, header: BlockHeader },
    /// The pack ends inside a block, or in zeros: `len` bytes from `offset` are not blocks.
    TornTail { offset: u64, len: u64 },
    /// Bytes that are not a block, not at the tail: the rest of the pack cannot be read.
    Garbage { offset: u64, len: u64 },
    /// The pack header names a newer format major.
    TooNew { version: FormatVersion },
    /// The file does not start with a format-2 pack header.
    NotAPack,
}

/// Reads format-2 pack `pack` from its start, calling `visit` for each block or problem.
pub fn scan_pack(
    backend: &dyn ObjectBackend,
    pack: &str,
    visit: &mut dyn FnMut(ScanItem) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let framing = Framing {
        pack_version: |head| {
            (head[..PACK2_MAGIC.len()] == PACK2_MAGIC).then_some(FormatVersion {
                major: head[8],
                minor: head[9],
            })
        },
        newest_major: STORE_FORMAT_2.major,
        header_len: BLOCK_HEADER_LEN,
        decode: |bytes| BlockHeader::decode(bytes).ok(),
        // `stored_len` is at most 2^30 (the header decoded).
        lengths: |h| (h.block_len(), h.stored_len as usize),
    };
    scan_frames(backend, pack, &framing, &mut |piece| {
        visit(match piece {
            // Nothing is decompressed: the check value tells damage from a tear.
            Piece::Frame {
                offset,
                header,
                data,
            } if header.check_of(&data) == header.check => ScanItem::Block {
                offset,
                header,
                frame: data,
            },
            Piece::Frame { offset, header, .. } => ScanItem::Damaged { offset, header },
            Piece::TornTail { offset, len } => ScanItem::TornTail { offset, len },
            Piece::Garbage { offset, len } => ScanItem::Garbage { offset, len },
            Piece::TooNew { version } => ScanItem::TooNew { version },
            Piece::NotAPack => ScanItem::NotAPack,
        })
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::ids::RunId;
    use crate::store::format::PACK_HEADER_LEN;
    use crate::store::pack::PackDir;
    use crate::store::synthetic::{synth_objects, Synth};
    use crate::store::v2::{pack2_header, PACKS_2_DIR};
    use crate::store::Store;

    fn scan(backend: &PackDir, pack: &str) -> Vec<ScanItem> {
        let mut items = Vec::new();
        scan_pack(backend, pack, &mut |item| {
            items.push(item);
            Ok(())
        })
        .expect("scan");
        items
    }

    fn offsets(items: &[ScanItem]) -> Vec<u64> {
        items
            .iter()
            .filter_map(|i| match i {
                ScanItem::Block { offset, .. } => Some(*offset),
                _ => None,
            })
            .collect()
    }

    /// A format-2 pack of several blocks; its directory, name, and the blocks' offsets.
    fn written() -> (tempfile::TempDir, PackDir, String, Vec<(u64, u64)>) {
        let d = tempfile::tempdir().expect("temp dir");
        let store = Store::open_or_create(d.path(), crate::store::StoreFormat::Two).unwrap();
        let mut synth = Synth::new(9);
        let run = RunId(store.put(&synth.run_start(1)).unwrap());
        for seq in 0..3 {
            store
                .put_encoded(synth_objects(&mut synth, run, seq).unwrap())
                .unwrap();
        }
        drop(store);
        let backend = PackDir::with_header(d.path().join(PACKS_2_DIR), pack2_header());
        let name = backend.packs().unwrap().pop().expect("a pack");
        let blocks = scan(&backend, &name)
            .into_iter()
            .map(|i| match i {
                ScanItem::Block { offset, header, .. } => (offset, header.block_len()),
                other => panic!("a clean pack holds blocks only: {other:?}"),
            })
            .collect();
        (d, backend, name, blocks)
    }

    #[test]
    fn a_pack_cut_anywhere_scans_to_its_last_whole_block_then_a_torn_tail() {
        let (d, backend, name, blocks) = written();
        assert!(blocks.len() >= 4, "{blocks:?}");
        let path = d.path().join(PACKS_2_DIR).join(&name);
        let end = fs::metadata(&path).unwrap().len();
        for len in (0..end).rev() {
            backend.truncate(&name, len).unwrap();
            let items = scan(&backend, &name);
            let whole: Vec<u64> = blocks
                .iter()
                .filter(|(o, l)| o + l <= len)
                .map(|(o, _)| *o)
                .collect();
            assert_eq!(offsets(&items), whole, "cut at {len}");
            let torn_at = if len < PACK_HEADER_LEN as u64 {
                Some(0)
            } else {
                blocks
                    .iter()
                    .map(|(o, _)| *o)
                    .find(|o| !whole.contains(o) && *o < len)
            };
            let tail = items.iter().find_map(|i| match i {
                ScanItem::TornTail { offset, len } => Some((*offset, *len)),
                _ => None,
            });
            assert_eq!(tail.map(|t| t.0), torn_at, "cut at {len}");
            if let Some((offset, torn)) = tail {
                assert_eq!(offset + torn, len, "cut at {len}");
            }
        }
    }

    #[test]
    fn zeros_after_the_last_block_are_a_tail_and_other_bytes_garbage() {
        let (d, backend, name, blocks) = written();
        let path = d.path().join(PACKS_2_DIR).join(&name);
        let clean = fs::read(&path).unwrap();
        let end = clean.len() as u64;
        for extra in [1usize, 23, 24, 25, 4096] {
            let mut bytes = clean.clone();
            bytes.resize(bytes.len() + extra, 0);
            fs::write(&path, &bytes).unwrap();
            let items = scan(&backend, &name);
            assert_eq!(offsets(&items).len(), blocks.len());
            assert_eq!(
                items.last(),
                Some(&ScanItem::TornTail {
                    offset: end,
                    len: extra as u64
                })
            );
            let mut bytes = clean.clone();
            bytes.resize(bytes.len() + extra, b'x');
            fs::write(&path, &bytes).unwrap();
            let last = scan(&backend, &name).pop();
            if extra < BLOCK_HEADER_LEN {
                // Too short to be a header: whatever it is, an append was cut short.
                assert!(matches!(last, Some(ScanItem::TornTail { .. })), "{extra}");
            } else {
                assert!(matches!(last, Some(ScanItem::Garbage { .. })), "{extra}");
            }
        }
        // A flipped frame byte is damage, and the blocks after it still scan.
        let mut bytes = clean.clone();
        let (first, len) = blocks[0];
        bytes[(first + len - 1) as usize] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let items = scan(&backend, &name);
        assert!(matches!(items[0], ScanItem::Damaged { offset, .. } if offset == first));
        assert_eq!(offsets(&items).len(), blocks.len() - 1);
    }
}
