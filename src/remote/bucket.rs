//! The client of a remote store: conditional create, get, list, on a runtime of its own.
//!
//! Depends on: its siblings `config`, `error` and `url`.

use std::sync::Arc;

use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};

use super::config;
use super::error::RemoteError;
use super::url::RemoteUrl;

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
    /// When the object was written (ms since the epoch), as the service says.
    pub modified_ms: u64,
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
                    modified_ms: meta.last_modified.timestamp_millis().max(0) as u64,
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}
