//! The top-level error of a command: every module's error, mapped to an exit code.
//!
//! Library modules return their own `thiserror` enums; this is the one place that knows
//! which exit code (see [`crate::exit`]) each of them means.
//!
//! Depends on: `exit` and the module errors.

use crate::exit;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Wrong arguments or a file the user wrote that cannot be used.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The API could not be reached at all.
    #[error("{0}")]
    Unreachable(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl CliError {
    /// A usage error with no hint.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage {
            message: message.into(),
            hint: None,
        }
    }

    /// The process exit code this error means.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } | CliError::Spec(_) | CliError::Settings(_) => exit::USAGE,
            CliError::Store(_) => exit::STORE,
            CliError::Unreachable(_) => exit::UNREACHABLE,
            CliError::Other(_) => exit::USAGE,
        }
    }

    /// The error of looking up text the user gave (an id, a prefix, a run name): one that
    /// names nothing, or too much, is a usage error (exit 2); any other is the store's.
    pub fn lookup(e: crate::store::StoreError) -> CliError {
        use crate::store::StoreError as S;
        match e {
            S::NotFound { .. }
            | S::Ambiguous { .. }
            | S::PrefixTooShort { .. }
            | S::WrongKind { .. } => CliError::Usage {
                hint: e.hint(),
                message: e.to_string(),
            },
            other => CliError::Store(other),
        }
    }

    /// A line that tells the user how to fix it, where there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            CliError::Usage { hint, .. } => hint.clone(),
            CliError::Store(e) => e.hint(),
            _ => None,
        }
    }
}
