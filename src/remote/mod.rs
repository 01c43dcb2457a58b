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
//! - [`error`]: why a remote-store operation failed.
//! - [`url`]: `s3://bucket/prefix`, and the local cache it has.
//! - [`bucket`]: the client ([`Remote`]: conditional create, get, list).
//! - [`config`]: credentials, region and endpoint the way the AWS tools take them.
//! - [`segment`]: the index segment and the names of remote objects.
//! - [`state`]: what a local store knows of a remote one (packs uploaded or pulled), under
//!   a file lock.
//! - [`sync`]: push and pull.
//! - [`upload`]: the background uploader of a run.
//! - [`lock`]: lock objects: writers share the store, gc holds it alone.
//! - [`gc`]: `probe store gc` of a remote store.
//!
//! Depends on: `store` (opening the cache, format-2 packs and their scan, adding pulled
//! packs to the index), `ids`, `model` (the runs a segment names), `clock`.

pub mod bucket;
pub mod config;
pub mod error;
pub mod gc;
pub mod lock;
pub mod segment;
pub mod state;
pub mod sync;
pub mod upload;
pub mod url;

pub use bucket::{Listed, Remote};
pub use error::RemoteError;
pub use url::{is_remote, RemoteUrl};
