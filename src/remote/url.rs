//! `s3://bucket/prefix`: where a remote store lives, the keys under it, and its local cache.
//!
//! Depends on: its sibling `error`.

use std::path::PathBuf;

use object_store::path::Path as ObjectPath;

use super::error::RemoteError;

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
