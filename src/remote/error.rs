//! Why a remote-store operation failed.
//!
//! Depends on: `store` (its error).

use std::path::PathBuf;

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
    /// A conflicting lock that is not stale (`remote::lock`): gc beside a writer, or a
    /// writer beside gc.
    #[error("{url} is in use by {holder}: {}", if *exclusive { "gc needs the store alone; try again when it has finished (a lock not renewed for 30 minutes is stale and ignored)" } else { "gc holds it alone; try again when it has finished" })]
    Busy {
        url: String,
        holder: String,
        /// Whether the lock refused was exclusive (gc's).
        exclusive: bool,
    },
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
