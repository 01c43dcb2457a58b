//! What a layout of the store works with, besides its own index and caches: the store's
//! directory and index path, its byte layer (the packs), the notes opening made, and the
//! store lock. The facade holds one [`Context`] beside its layout (`Inner` in
//! `store/mod.rs`) and hands it to every method of the seam (`seam::Layout`): a layout
//! names this small file, never the facade, so the facade and its layouts do not reach
//! each other (issue 45).
//!
//! Depends on: `store::{pack, lock, dict}`.

use std::path::PathBuf;
use std::sync::Mutex;

use super::dict;
use super::lock::StoreLock;
use super::pack::ObjectBackend;

/// What every layout shares, for as long as the store is open.
pub(crate) struct Context {
    pub(crate) dir: PathBuf,
    pub(crate) index_path: PathBuf,
    pub(crate) backend: Box<dyn ObjectBackend>,
    /// What opening repaired or noticed (shown by verify).
    pub(crate) notes: Mutex<Vec<String>>,
    /// The store lock and this process's registration, released when the last handle (a
    /// recorder thread's too) goes. Last, so that it is dropped last: after the pack
    /// writer closed.
    pub(crate) lock: StoreLock,
}

impl Context {
    /// The directory of the store's zstd dictionaries (both formats).
    pub(crate) fn dicts_dir(&self) -> PathBuf {
        self.dir.join(dict::DICTS_DIR)
    }

    /// Adds a note verify shows.
    pub(crate) fn note(&self, text: String) {
        if let Ok(mut n) = self.notes.lock() {
            n.push(text);
        }
    }
}
