//! Finding a format-2 object by id: a sorted table of (key, block, ordinal) built from the
//! `keys` column of every indexed block (FORMAT.md §10.3).
//!
//! A key is the first 4 bytes of an id, so a key names *candidates*: the reader decodes the
//! candidate's block and compares the object's hashed id with the one asked for (about one
//! false candidate per 2^32 / objects lookups). The table is loaded on first use and then
//! refreshed from the blocks with a larger row id, so blocks other writers indexed since are
//! found without a reload. About 16 bytes per object.
//!
//! Depends on: `v2::index2`.

use rusqlite::Connection;

use super::index2::{self, KEY_LEN};

/// Where an object of a format-2 store lives: the `blocks` row of its block and its
/// position in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockRef {
    pub block: i64,
    pub ordinal: u32,
}

/// Every indexed object's key with its place, sorted by key.
#[derive(Debug, Default)]
pub struct IdMap {
    entries: Vec<(u32, BlockRef)>,
    /// The largest block id read so far.
    last_block: i64,
}

impl IdMap {
    /// An empty map; [`IdMap::refresh`] fills it.
    pub fn new() -> IdMap {
        IdMap::default()
    }

    /// Adds the blocks indexed since the last refresh.
    pub fn refresh(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let fresh = index2::keys_after(conn, self.last_block)?;
        if fresh.is_empty() {
            return Ok(());
        }
        for (block, keys) in fresh {
            // A `keys` value whose length is not a multiple of KEY_LEN is damaged: its
            // whole keys are used, the rest ignored (verify reports the block).
            for (ordinal, key) in keys.chunks_exact(KEY_LEN).enumerate() {
                let key = index2::key_from(key);
                let place = BlockRef {
                    block,
                    ordinal: ordinal as u32,
                };
                self.entries.push((key, place));
            }
            self.last_block = self.last_block.max(block);
        }
        // Mostly sorted runs appended to a sorted table: the stable sort merges them.
        self.entries.sort();
        Ok(())
    }

    /// The places of objects whose key is `key`, in (block, ordinal) order.
    pub fn candidates(&self, key: u32) -> &[(u32, BlockRef)] {
        self.range(key, key)
    }

    /// The places of objects whose key is in `lo..=hi`, by key.
    pub fn range(&self, lo: u32, hi: u32) -> &[(u32, BlockRef)] {
        let start = self.entries.partition_point(|(k, _)| *k < lo);
        let end = self.entries.partition_point(|(k, _)| *k <= hi);
        &self.entries[start..end.max(start)]
    }

    /// Forgets everything (the index was rebuilt).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.last_block = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_and_ranges_come_sorted_from_the_keys_of_blocks() {
        let mut map = IdMap::new();
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE blocks(id INTEGER PRIMARY KEY, keys BLOB NOT NULL);")
            .unwrap();
        let insert = |id: i64, keys: &[u8]| {
            conn.execute(
                "INSERT INTO blocks(id, keys) VALUES (?1, ?2)",
                rusqlite::params![id, keys],
            )
            .unwrap();
        };
        // Keys of 3 bytes (KEY_LEN).
        insert(1, &[0xaa, 0, 1, 0x10, 0, 0]);
        map.refresh(&conn).unwrap();
        // A second block seen on refresh; a damaged key tail is ignored.
        insert(2, &[0xaa, 0, 1, 0x05, 0, 0, 0xff]);
        map.refresh(&conn).unwrap();
        let at = |block, ordinal| BlockRef { block, ordinal };
        let places: Vec<_> = map.candidates(0x00aa_0001).iter().map(|e| e.1).collect();
        assert_eq!(places, [at(1, 0), at(2, 0)]);
        let keys: Vec<_> = map.range(0, 0x001f_ffff).iter().map(|e| e.0).collect();
        assert_eq!(keys, [0x0005_0000, 0x0010_0000]);
        assert!(map.candidates(0x00ff_0000).is_empty());
    }
}
