//! Decoded blocks kept for readers: one read of an object decompresses its whole block, and
//! readers go through a run in order, so the next object is most often in the same block.
//!
//! [`BlockCache`] maps a block's row id to its parsed content ([`Parsed`], whose ids are
//! hashed once, on first need) under one mutex, and evicts the least recently used blocks
//! beyond a byte budget. Decompression happens outside the lock: two threads may decode the
//! same block at once, and the second insert wins, which costs time, never correctness.
//!
//! Depends on: `v2::content`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::content::Parsed;

/// Bytes of decoded content a cache keeps by default: 16 full blocks of 4 MiB.
pub const DEFAULT_BUDGET: usize = 64 << 20;

/// Parsed blocks by block id, least recently used evicted first.
pub struct BlockCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    blocks: HashMap<i64, (Arc<Parsed>, u64)>,
    bytes: usize,
    tick: u64,
}

impl BlockCache {
    /// A cache that keeps about `budget` bytes of decoded content (and at least one block).
    pub fn new(budget: usize) -> BlockCache {
        BlockCache {
            budget,
            state: Mutex::new(State::default()),
        }
    }

    /// The parsed block `block`, when cached.
    pub fn get(&self, block: i64) -> Option<Arc<Parsed>> {
        let mut state = self.state.lock().ok()?;
        state.tick += 1;
        let tick = state.tick;
        let (parsed, used) = state.blocks.get_mut(&block)?;
        *used = tick;
        Some(parsed.clone())
    }

    /// Keeps `parsed` as block `block`, evicting the least recently used beyond the budget.
    pub fn insert(&self, block: i64, parsed: Arc<Parsed>) {
        // A poisoned cache only loses its use: reads decode again.
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.tick += 1;
        let tick = state.tick;
        let size = parsed.content_len();
        if let Some((old, _)) = state.blocks.insert(block, (parsed, tick)) {
            state.bytes -= old.content_len();
        }
        state.bytes += size;
        // A linear pass per eviction: the cache holds tens of blocks, not thousands.
        while state.bytes > self.budget && state.blocks.len() > 1 {
            let Some(oldest) = state
                .blocks
                .iter()
                .filter(|(id, _)| **id != block)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some((gone, _)) = state.blocks.remove(&oldest) {
                state.bytes -= gone.content_len();
            }
        }
    }

    /// Forgets every block (after blocks were rewritten or cut).
    pub fn clear(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.blocks.clear();
            state.bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::v2::content::ContentBuilder;

    fn parsed(len: usize) -> Arc<Parsed> {
        let mut b = ContentBuilder::new();
        b.add(1, &vec![7u8; len]).expect("fits");
        let count = b.count();
        Arc::new(Parsed::parse(b.finish(), count).expect("own content parses"))
    }

    #[test]
    fn the_least_recently_used_block_goes_first() {
        let cache = BlockCache::new(2500);
        cache.insert(1, parsed(1000));
        cache.insert(2, parsed(1000));
        assert!(cache.get(1).is_some()); // 2 is now the oldest
        cache.insert(3, parsed(1000));
        assert!(cache.get(1).is_some());
        assert!(cache.get(2).is_none());
        assert!(cache.get(3).is_some());
    }

    #[test]
    fn a_block_larger_than_the_budget_is_still_kept_alone() {
        let cache = BlockCache::new(10);
        cache.insert(1, parsed(100));
        cache.insert(2, parsed(100));
        assert!(cache.get(1).is_none());
        assert!(cache.get(2).is_some());
    }
}
