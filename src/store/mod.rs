//! The store (placeholder until the store lands; see `store-format/FORMAT.md`).

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store error: {0}")]
    Other(String),
}

impl StoreError {
    /// How to fix it, where there is a known way.
    pub fn hint(&self) -> Option<String> {
        None
    }
}
