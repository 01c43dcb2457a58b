//! HAR 1.2 both ways (docs/har.md): a stored run written as a HAR file ([`export`]), and
//! the requests of a HAR file turned into test cases the mutation strategy may change
//! ([`seed`]).
//!
//! - [`export`]: streams every interaction of a run, page by page from the index, as one
//!   HAR `entry` each; it holds one page at a time whatever the run's size. Credentials stay
//!   the `<probe:secret>` placeholders the store holds: nothing here can restore them.
//! - [`seed`]: reads a HAR file (an unreadable one is an error naming the file and the JSON
//!   pointer of what is wrong), matches each entry answered 2xx to an operation of the
//!   document, and maps its query, headers, cookies and JSON body onto the operation's
//!   declared parameters and body.
//!
//! Depends on: `model`, `ids`, `store` (reading a run; the id of a seeded case), `spec`
//! (matching entries to operations), `mutate::values` (what a word reads as), `send::added`
//! (the headers the client adds, for the export). Prints nothing.

pub mod export;
pub mod seed;

use std::path::PathBuf;

pub use export::{write_har, ExportStats};
pub use seed::{read_seeds, SeedReport, Seeds};

/// The HAR version written and read.
pub const HAR_VERSION: &str = "1.2";

/// Why a HAR file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot write the HAR: {0}")]
    Write(#[source] std::io::Error),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not JSON: {message} (line {line}, column {column})", path.display())]
    NotJson {
        path: PathBuf,
        message: String,
        line: usize,
        column: usize,
    },
    #[error("{} is not a HAR file: at {pointer}: {problem}", path.display())]
    Shape {
        path: PathBuf,
        /// JSON pointer of the offending value (`/log/entries/3/request/url`).
        pointer: String,
        problem: String,
    },
}
