//! Settings `group.name=value` (placeholder until it lands).

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("unknown setting `{name}`")]
    Unknown { name: String },
}
