//! What a local store knows of one remote store: which bytes of its own packs are remote
//! already, which remote packs it holds (pulled, or pushed from here), which segments and
//! dictionaries it has met. Kept in `<store>/remotes/<hash of the url>.json`, written
//! through a temporary file and a rename, read and written under an exclusive lock on
//! `<hash>.lock` beside it (several processes may record into one cache at once: each push
//! and pull takes the lock for its whole length, so no byte is uploaded twice).
//!
//! Depends on: `remote` (the URL, errors).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::RemoteError;
use super::url::RemoteUrl;

/// The directory of the remote states of a store.
pub const REMOTES_DIR: &str = "remotes";

/// A local store's knowledge of one remote store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The remote store's URL.
    pub url: String,
    /// Per local pack (`packs-2/<name>`), the offset up to which its whole blocks are in
    /// remote packs named by segments.
    #[serde(default)]
    pub uploaded: BTreeMap<String, u64>,
    /// Local packs that came from the remote store (never uploaded again).
    #[serde(default)]
    pub pulled: BTreeSet<String>,
    /// Remote packs whose bytes this store holds.
    #[serde(default)]
    pub remote_packs: BTreeSet<String>,
    /// Segments met (written from here, or read).
    #[serde(default)]
    pub segments: BTreeSet<String>,
    /// Dictionaries known to be remote.
    #[serde(default)]
    pub dicts: BTreeSet<String>,
    /// Files of `reports/` known to be remote.
    #[serde(default)]
    pub reports: BTreeSet<String>,
}

/// The state of one remote in a store, held under its lock until dropped.
pub struct Held {
    pub state: State,
    path: PathBuf,
    _lock: File,
}

impl Held {
    /// Takes the lock of `url`'s state in store `dir` (waiting for another push or pull of
    /// the same store to end) and reads the state.
    pub fn take(dir: &Path, url: &RemoteUrl) -> Result<Held, RemoteError> {
        let remotes = dir.join(REMOTES_DIR);
        fs::create_dir_all(&remotes).map_err(RemoteError::io("create", &remotes))?;
        let hash = blake3::hash(url.to_string().as_bytes()).to_hex();
        let stem = &hash.as_str()[..16];
        let lock_path = remotes.join(format!("{stem}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(RemoteError::io("open", &lock_path))?;
        lock.lock().map_err(RemoteError::io("lock", &lock_path))?;
        let path = remotes.join(format!("{stem}.json"));
        let state = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RemoteError::Io {
                action: "parse",
                path: path.clone(),
                source: std::io::Error::other(e),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State {
                url: url.to_string(),
                ..State::default()
            },
            Err(e) => return Err(RemoteError::io("read", &path)(e)),
        };
        Ok(Held {
            state,
            path,
            _lock: lock,
        })
    }

    /// Writes the state durably (temporary file, fsync, rename).
    pub fn save(&self) -> Result<(), RemoteError> {
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(&self.state).unwrap_or_default();
        {
            use std::io::Write;
            let mut f = File::create(&tmp).map_err(RemoteError::io("create", &tmp))?;
            f.write_all(&bytes)
                .map_err(RemoteError::io("write", &tmp))?;
            f.sync_all().map_err(RemoteError::io("sync", &tmp))?;
        }
        fs::rename(&tmp, &self.path).map_err(RemoteError::io("rename", &self.path))
    }

    /// Where segments read from the remote store are kept in this store, so that a pull
    /// of one run later reads none again.
    pub fn segments_dir(&self) -> PathBuf {
        self.path.with_extension("segments")
    }
}
