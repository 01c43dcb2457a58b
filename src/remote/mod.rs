//! A store on object storage (`--store s3://bucket/prefix`, docs/remote-store.md; the
//! layout is `store-format/FORMAT.md` section 11).
//!
//! probe never reads or records through the network object by object: a remote store is a
//! set of immutable objects (format-2 packs named by their content hash, the dictionaries
//! their blocks name, and index *segments* that say which packs a push brought and which
//! runs they hold), and every command works on a local format-2 store, the *cache*
//! (`$XDG_CACHE_HOME/probe/<hash of the url>`). A read pulls the packs the cache lacks and
//! indexes them ([`sync::pull`]); a write records into the cache and pushes what it wrote
//! ([`sync::push`]), in the background while a run lasts ([`upload::Uploader`]) and once
//! more at its end. Nothing remote is ever changed in place, so any number of machines push
//! into one bucket at once without a coordinator: every object is created with
//! "create if absent" (`If-None-Match: *`), and a name that exists already holds the same
//! bytes.
//!
//! # Architecture
//! - this file: the URL, the client ([`Remote`]: conditional create, get, list), errors.
//! - [`config`]: credentials, region and endpoint the way the AWS tools take them.
//! - [`segment`]: the index segment and the names of remote objects.
//! - [`state`]: what a local store knows of a remote one (packs uploaded or pulled), under
//!   a file lock.
//! - [`sync`]: push and pull.
//! - [`upload`]: the background uploader of a run.
//!
//! Depends on: `store` (opening the cache, format-2 packs and their scan, adding pulled
//! packs to the index), `ids`, `model` (the runs a segment names), `clock`.

pub mod config;
pub mod segment;
pub mod state;
pub mod sync;
pub mod upload;

use std::path::PathBuf;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};

/// Why a remote-store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The `--store` text is not a remote URL this build reads.
    #[error("`{url}` is not an object-storage URL probe reads: {why}")]
    Url { url: String, why: String },
    /// Credentials, region or endpoint could not be put together.
    #[error("cannot connect to {url}: {why}")]
    Config { url: String, why: String },
    /// A request to the object store failed (after its retries).
    #[error("{action} {url}/{key} failed: {source}")]
    Request {
        action: &'static str,
        url: String,
        key: String,
        #[source]
        source: Box<object_store::Error>,
    },
    /// What the remote store holds is not what this build can use.
    #[error("{url}: {why}")]
    Format { url: String, why: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RemoteError {
    /// An IO error of `action` on `path`.
    pub(crate) fn io(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> RemoteError {
        let path = path.to_path_buf();
        move |source| RemoteError::Io {
            action,
            path,
            source,
        }
    }

    /// Whether the user wrote something wrong (exit 2) rather than the store failing (4).
    pub fn is_usage(&self) -> bool {
        matches!(self, RemoteError::Url { .. })
    }
}

/// Whether `text` names a remote store (`s3://…`) rather than a directory.
pub fn is_remote(text: &str) -> bool {
    text.starts_with("s3://")
}

/// `s3://bucket/prefix`: where a remote store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteUrl {
    pub bucket: String,
    /// The key prefix, without leading or trailing `/` (empty: the bucket's root).
    pub prefix: String,
}

impl RemoteUrl {
    /// Parses `s3://bucket[/prefix]`.
    pub fn parse(text: &str) -> Result<RemoteUrl, RemoteError> {
        let bad = |why: &str| RemoteError::Url {
            url: text.to_owned(),
            why: why.to_owned(),
        };
        let rest = text
            .strip_prefix("s3://")
            .ok_or_else(|| bad("it does not start with s3://"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !valid_bucket {
            return Err(bad(
                "a bucket name is 3 to 63 lower-case letters, digits, '-' and '.'",
            ));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|part| part == "." || part == "..") {
            return Err(bad("the prefix has a `.` or `..` part"));
        }
        Ok(RemoteUrl {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    /// The key of `rel` (`packs/<hash>.pack`) under the prefix.
    pub fn key(&self, rel: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(rel)
        } else {
            ObjectPath::from(format!("{}/{rel}", self.prefix))
        }
    }

    /// The local cache of this remote store: `$XDG_CACHE_HOME/probe/<hash>`, else
    /// `$HOME/.cache/probe/<hash>`, the hash being the first 16 hex digits of the BLAKE3
    /// of the URL as [`std::fmt::Display`] writes it.
    pub fn cache_dir(&self) -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        let hash = blake3::hash(self.to_string().as_bytes()).to_hex();
        base.join("probe").join(&hash.as_str()[..16])
    }
}

impl std::fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

/// A connection to a remote store: the object store client and a runtime of its own to
/// drive it (probe's commands are synchronous; a run's runtime is never borrowed).
pub struct Remote {
    pub url: RemoteUrl,
    store: Arc<dyn ObjectStore>,
    rt: tokio::runtime::Runtime,
    /// Requests sent (for the figures: requests per 1,000 interactions).
    requests: std::sync::atomic::AtomicU64,
}

/// One listed object: its name below the directory listed, and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub size: u64,
}

impl Remote {
    /// Connects to `url` with the credentials, region and endpoint of the environment
    /// ([`config`]). Sends nothing yet.
    pub fn connect(url: &RemoteUrl) -> Result<Remote, RemoteError> {
        let store = config::build(url)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Config {
                url: url.to_string(),
                why: format!("cannot start a runtime: {e}"),
            })?;
        Ok(Remote {
            url: url.clone(),
            store: Arc::new(store),
            rt,
            requests: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Requests sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn count(&self) {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn failed(&self, action: &'static str, rel: &str, source: object_store::Error) -> RemoteError {
        RemoteError::Request {
            action,
            url: self.url.to_string(),
            key: rel.to_owned(),
            source: Box::new(source),
        }
    }

    /// Creates `rel` holding `bytes` unless it exists: `true` when this call created it,
    /// `false` when it was there (immutable names: it holds the same bytes).
    pub fn create(&self, rel: &str, bytes: Vec<u8>) -> Result<bool, RemoteError> {
        self.count();
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let key = self.url.key(rel);
        let payload = PutPayload::from(bytes);
        match self.rt.block_on(self.store.put_opts(&key, payload, opts)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(self.failed("create", rel, e)),
        }
    }

    /// The bytes of `rel`, or `None` when it does not exist.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        self.count();
        let key = self.url.key(rel);
        let got = self.rt.block_on(async {
            match self.store.get(&key).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        match got {
            Ok(bytes) => Ok(bytes.map(|b| b.to_vec())),
            Err(e) => Err(self.failed("get", rel, e)),
        }
    }

    /// Removes `rel` (gone already is not an error).
    pub fn delete(&self, rel: &str) -> Result<(), RemoteError> {
        self.count();
        let key = self.url.key(rel);
        match self.rt.block_on(self.store.delete(&key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed("delete", rel, e)),
        }
    }

    /// Every object under directory `dir` (`segments`), by name below it, in name order.
    pub fn list(&self, dir: &str) -> Result<Vec<Listed>, RemoteError> {
        use futures_util::TryStreamExt;
        self.count();
        let key = self.url.key(dir);
        let listed: Result<Vec<_>, _> = self
            .rt
            .block_on(self.store.list(Some(&key)).try_collect::<Vec<_>>());
        let listed = listed.map_err(|e| self.failed("list", dir, e))?;
        let mut out: Vec<Listed> = listed
            .into_iter()
            .filter_map(|meta| {
                let name = meta.location.filename()?.to_owned();
                Some(Listed {
                    name,
                    size: meta.size,
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}
