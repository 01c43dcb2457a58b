//! zstd dictionaries: training, naming, and the measurement that justifies them.
//!
//! Small objects compress poorly alone (an interaction is ~650 bytes); a dictionary trained
//! on earlier objects of the same kind gives zstd the shared vocabulary (header names, JSON
//! keys, URLs). A dictionary is named by a 32-bit id (the first four bytes of its BLAKE3
//! hash, never 0) and kept as `dicts/<id as 8 hex>-<kind tag>.zdict`; each record names the
//! dictionary it was compressed with (0 = none), so stores merge by copying packs and
//! dictionaries.
//!
//! Depends on: `store::format`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::error::StoreError;
use super::format::{ObjectKind, RecordHeader};
use super::object::{append_record, EncodedObject};
use zstd::zstd_safe::{CParameter, ParamSwitch};

/// The directory of a store's dictionaries.
pub const DICTS_DIR: &str = "dicts";
/// Largest dictionary format 1's recorder trains.
pub const DICT_MAX_BYTES: usize = 64 * 1024;
/// Objects of a kind a recorder sees before it trains a dictionary for that kind.
pub const TRAIN_AFTER: usize = 1000;

/// The id of a dictionary: first 4 bytes of its BLAKE3 hash, little endian, never 0.
pub fn dict_id(bytes: &[u8]) -> u32 {
    let h = blake3::hash(bytes);
    let mut b = [0u8; 4];
    b.copy_from_slice(&h.as_bytes()[..4]);
    u32::from_le_bytes(b).max(1)
}

/// File name of a dictionary.
pub fn file_name(id: u32, kind: ObjectKind) -> String {
    format!("{id:08x}-{}.zdict", kind.tag())
}

/// Parses a dictionary file name into (id, kind tag).
pub fn parse_file_name(name: &str) -> Option<(u32, u8)> {
    let stem = name.strip_suffix(".zdict")?;
    let (id, tag) = stem.split_once('-')?;
    Some((u32::from_str_radix(id, 16).ok()?, tag.parse().ok()?))
}

/// Trains a dictionary of at most `max_bytes` on sample payloads.
pub fn train(samples: &[Vec<u8>], max_bytes: usize) -> Result<Vec<u8>, StoreError> {
    zstd::dict::from_samples(samples, max_bytes)
        .map_err(|e| StoreError::Other(format!("zstd dictionary training failed: {e}")))
}

/// Trains a dictionary, falling back to a raw-content dictionary (the samples themselves,
/// which zstd accepts as a dictionary) when there are too few samples to train on; either
/// way at most `max_bytes`.
pub fn train_or_raw(samples: &[Vec<u8>], max_bytes: usize) -> Vec<u8> {
    match train(samples, max_bytes) {
        Ok(d) => d,
        Err(_) => {
            let mut raw = Vec::new();
            for s in samples.iter().rev() {
                if raw.len() + s.len() > max_bytes {
                    break;
                }
                raw.extend_from_slice(s);
            }
            raw
        }
    }
}

/// Turns objects into records, with a dictionary per kind where one is loaded.
pub struct Packer {
    level: i32,
    plain: zstd::bulk::Compressor<'static>,
    by_kind: HashMap<ObjectKind, (u32, zstd::bulk::Compressor<'static>)>,
}

impl Packer {
    /// A packer at zstd `level`, with no dictionary yet.
    pub fn new(level: i32) -> Result<Packer, StoreError> {
        Ok(Packer {
            level,
            plain: zstd::bulk::Compressor::new(level).map_err(zstd_err)?,
            by_kind: HashMap::new(),
        })
    }

    /// Uses dictionary `bytes` (named `id`) for objects of `kind` from now on.
    pub fn set_dict(&mut self, kind: ObjectKind, id: u32, bytes: &[u8]) -> Result<(), StoreError> {
        let mut c = zstd::bulk::Compressor::with_dictionary(self.level, bytes).map_err(zstd_err)?;
        // Literals left as they are: with a dictionary, an object is mostly matches, and
        // coding its few literals with Huffman tables cost 0.7% of a run's instructions to
        // make interactions 0.7% smaller (test cases no smaller at all). Frames stay plain
        // zstd frames; readers are unchanged.
        c.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))
            .map_err(zstd_err)?;
        self.by_kind.insert(kind, (id, c));
        Ok(())
    }

    /// Whether objects of `kind` have a dictionary.
    pub fn has_dict(&self, kind: ObjectKind) -> bool {
        self.by_kind.contains_key(&kind)
    }

    /// The record of one object, appended to `out`; gives its header.
    pub fn append_record(
        &mut self,
        obj: &EncodedObject,
        out: &mut Vec<u8>,
    ) -> Result<RecordHeader, StoreError> {
        match self.by_kind.get_mut(&obj.kind) {
            Some((id, c)) => append_record(obj, c, *id, out),
            None => append_record(obj, &mut self.plain, 0, out),
        }
    }
}

fn zstd_err(e: std::io::Error) -> StoreError {
    StoreError::Other(format!("zstd: {e}"))
}

/// The newest dictionary of each kind in `dir` (by file modification time).
pub fn newest_per_kind(dir: &Path) -> HashMap<ObjectKind, (u32, Vec<u8>)> {
    let mut best: HashMap<ObjectKind, (std::time::SystemTime, u32, PathBuf)> = HashMap::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some((id, tag)) = name.to_str().and_then(parse_file_name) else {
                continue;
            };
            let Some(kind) = ObjectKind::from_tag(tag) else {
                continue;
            };
            let when = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            if best.get(&kind).is_none_or(|(w, ..)| when > *w) {
                best.insert(kind, (when, id, e.path()));
            }
        }
    }
    best.into_iter()
        .filter_map(|(kind, (_, id, path))| {
            let bytes = fs::read(path).ok()?;
            // A dictionary whose bytes do not hash to its name is not used for writing.
            (dict_id(&bytes) == id).then_some((kind, (id, bytes)))
        })
        .collect()
}

/// Finds the file of dictionary `id` in `dir`.
pub fn find(dir: &Path, id: u32) -> Option<Vec<u8>> {
    let prefix = format!("{id:08x}-");
    let entries = fs::read_dir(dir).ok()?;
    for e in entries.flatten() {
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".zdict"))
        {
            return fs::read(e.path()).ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        let id = dict_id(b"dictionary");
        assert_ne!(id, 0);
        let name = file_name(id, ObjectKind::Interaction);
        assert_eq!(parse_file_name(&name), Some((id, 3)));
    }
}
