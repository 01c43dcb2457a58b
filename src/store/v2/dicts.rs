//! zstd dictionaries of a format-2 store: found by the key a block header names, and the one
//! a recorder compresses exchange blocks with.
//!
//! A run against a slow API seals a block each second (what a kill may lose is bounded by
//! that), so its blocks hold a second of traffic, not 4 MiB, and each frame starts with
//! nothing to match against. A dictionary trained on the store's earlier test cases and
//! interactions gives every such block the API's vocabulary (paths, header names, JSON
//! keys). Dictionaries are files, `dicts/<key as 8 hex>-<kind tag>.zdict` as in format 1
//! (FORMAT.md §5; exchange dictionaries carry the interaction tag), named by the first four
//! bytes of their BLAKE3 hash, so they are content-addressed and shared by every run.
//!
//! Depends on: `store::dict` (naming, training), `store` (errors).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use zstd::dict::{DecoderDictionary, EncoderDictionary};

use crate::store::dict;
use crate::store::error::{io_err, StoreError};
use crate::store::files::write_atomic;
use crate::store::format::ObjectKind;

/// The directory of a store's dictionaries, beside its index.
pub fn dir_beside(index_path: &Path) -> PathBuf {
    index_path
        .parent()
        .map(|p| p.join(dict::DICTS_DIR))
        .unwrap_or_else(|| PathBuf::from(dict::DICTS_DIR))
}

/// Largest exchange dictionary trained. Against the demo API at 100 requests a second
/// (blocks of a second), a 16 KiB dictionary made the packs of a 3,000-request run 9%
/// smaller, and of the next run 16%; asked for 32 or 64 KiB, zstd's trainer gave 4 KiB
/// dictionaries that did less.
pub const EXCHANGE_DICT_BYTES: usize = 16 * 1024;

/// Dictionaries read so far, by key: each file is read and prepared once per process.
pub struct DictionaryCache {
    dir: PathBuf,
    read: Mutex<HashMap<u32, Option<Arc<DecoderDictionary<'static>>>>>,
}

impl DictionaryCache {
    /// The dictionaries in `dir` (a store's `dicts/`).
    pub fn new(dir: PathBuf) -> DictionaryCache {
        DictionaryCache {
            dir,
            read: Mutex::new(HashMap::new()),
        }
    }

    /// The dictionary named `key`, prepared for reading; `None` when no file of that key
    /// is there (the block that names it is then reported as damaged).
    pub fn get(&self, key: NonZeroU32) -> Option<Arc<DecoderDictionary<'static>>> {
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = read.get(&key.get()) {
            return found.clone();
        }
        let found =
            dict::find(&self.dir, key.get()).map(|bytes| Arc::new(DecoderDictionary::copy(&bytes)));
        // A missing file is not remembered: another process may write it later.
        if found.is_some() {
            read.insert(key.get(), found.clone());
        }
        found
    }
}

/// The dictionary a writer compresses exchange blocks with.
pub struct ExchangeDictionary {
    pub key: NonZeroU32,
    pub prepared: EncoderDictionary<'static>,
}

impl ExchangeDictionary {
    /// Dictionary `bytes`, prepared at zstd `level`.
    pub fn new(bytes: &[u8], level: i32) -> ExchangeDictionary {
        ExchangeDictionary {
            key: key_of(bytes),
            prepared: EncoderDictionary::copy(bytes, level),
        }
    }

    /// The newest exchange dictionary in `dir` whose bytes hash to its name, if any.
    pub fn newest(dir: &Path, level: i32) -> Option<ExchangeDictionary> {
        let (_, bytes) = dict::newest_per_kind(dir).remove(&ObjectKind::Interaction)?;
        Some(ExchangeDictionary::new(&bytes, level))
    }

    /// Trains a dictionary on `samples` (payloads of test cases and interactions), makes
    /// its file durable in `dir`, and prepares it at `level`. The file is durable before
    /// any block compressed with it is written.
    pub fn train(
        dir: &Path,
        samples: &[Vec<u8>],
        level: i32,
    ) -> Result<ExchangeDictionary, StoreError> {
        let bytes = dict::train_or_raw(samples, EXCHANGE_DICT_BYTES);
        let key = key_of(&bytes);
        std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        let path = dir.join(dict::file_name(key.get(), ObjectKind::Interaction));
        write_atomic(&path, &bytes)?;
        // The name as durable as the bytes: a block naming the key may follow at once.
        if let Ok(d) = std::fs::File::open(dir) {
            d.sync_all().map_err(io_err("sync", dir))?;
        }
        Ok(ExchangeDictionary::new(&bytes, level))
    }
}

/// The key of dictionary `bytes` (FORMAT.md §5: first four bytes of its BLAKE3 hash, never 0).
pub fn key_of(bytes: &[u8]) -> NonZeroU32 {
    NonZeroU32::new(dict::dict_id(bytes)).unwrap_or(NonZeroU32::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trained_dictionary_is_found_by_its_key_and_newest_picks_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("dicts");
        let samples: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                format!("{{\"path\":\"/pets/{i}\",\"status\":200,\"name\":\"rex{i}\"}}")
                    .into_bytes()
            })
            .collect();
        let trained = ExchangeDictionary::train(&dir, &samples, 6).unwrap();
        let cache = DictionaryCache::new(dir.clone());
        assert!(cache.get(trained.key).is_some());
        let other = NonZeroU32::new(trained.key.get() ^ 1).unwrap();
        assert!(cache.get(other).is_none());
        assert_eq!(
            ExchangeDictionary::newest(&dir, 6).unwrap().key,
            trained.key
        );
    }

    /// Too few samples to train on: the samples themselves make the dictionary, still
    /// within [`EXCHANGE_DICT_BYTES`].
    #[test]
    fn a_dictionary_of_too_few_samples_stays_within_its_bound() {
        let d = tempfile::tempdir().unwrap();
        let samples: Vec<Vec<u8>> = (0..3u8).map(|i| vec![b'a' + i; 10_000]).collect();
        ExchangeDictionary::train(d.path(), &samples, 6).unwrap();
        for entry in std::fs::read_dir(d.path()).unwrap() {
            let len = entry.unwrap().metadata().unwrap().len();
            assert!(
                len > 0 && len as usize <= EXCHANGE_DICT_BYTES,
                "{len} bytes"
            );
        }
    }
}
