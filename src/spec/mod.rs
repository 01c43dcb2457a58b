//! OpenAPI loading (placeholder until the loader lands).

pub mod model;

pub use model::*;

/// Why a document cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{0}")]
    Other(String),
}
