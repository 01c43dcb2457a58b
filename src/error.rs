//! The top-level error of a command: every module's error, mapped to an exit code.
//!
//! Library modules return their own `thiserror` enums; this is the one place that knows
//! which exit code (see [`crate::exit`]) each of them means.
//!
//! An API that cannot be reached is not an error of this kind: the run is recorded and its
//! reports written, and the command returns [`exit::UNREACHABLE`] as its outcome.
//!
//! Depends on: `exit` and the module errors (`remote` among them).

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
    /// A store on object storage (`--store s3://…`): its URL, its requests, its objects.
    /// Boxed: an object-store error is large, and every command returns this type.
    #[error(transparent)]
    Remote(Box<crate::remote::RemoteError>),
    /// Probe could not finish for a reason that is not in the user's input: a file or
    /// stream could not be written, a runtime or client could not start, recorded data is
    /// not what this build can use. The message names what failed and where.
    #[error("{message}")]
    Internal {
        message: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl From<crate::remote::RemoteError> for CliError {
    fn from(e: crate::remote::RemoteError) -> CliError {
        CliError::Remote(Box::new(e))
    }
}

impl CliError {
    /// A usage error with no hint.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage {
            message: message.into(),
            hint: None,
        }
    }

    /// An internal or IO error: `what` names what failed and where (`cannot write the
    /// report to out/report.json`), `source` why.
    pub fn internal(
        what: impl std::fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> CliError {
        let source = source.into();
        CliError::Internal {
            message: format!("{what}: {source}"),
            source: Some(source),
        }
    }

    /// An internal error whose own message already names what failed and where.
    pub fn internal_from(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> CliError {
        let source = source.into();
        CliError::Internal {
            message: source.to_string(),
            source: Some(source),
        }
    }

    /// Writing a command's output failed: on standard output, or on the stream an
    /// [`OnStream`] inside `e` names.
    pub fn output(e: std::io::Error) -> CliError {
        let stream = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<OnStream>())
            .map_or("standard output", |on| on.stream);
        CliError::internal(format!("cannot write to {stream}"), e)
    }

    /// Whether this is a write to a closed pipe (`probe log | head`), which is not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Internal {
                source: Some(s), ..
            } => s
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe),
            _ => false,
        }
    }

    /// The process exit code this error means.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } | CliError::Spec(_) | CliError::Settings(_) => exit::USAGE,
            CliError::Store(_) => exit::STORE,
            CliError::Remote(e) if e.is_usage() => exit::USAGE,
            CliError::Remote(_) => exit::STORE,
            CliError::Internal { .. } => exit::INTERNAL,
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

/// A write error of a command's output that went elsewhere than standard output (standard
/// error, when `--events -` takes standard output), so that [`CliError::output`] names the
/// stream. It keeps the error's kind: a closed pipe is still recognised.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct OnStream {
    pub stream: &'static str,
    #[source]
    pub source: std::io::Error,
}

impl OnStream {
    /// `source`, marked as a write to `stream`.
    pub fn wrap(stream: &'static str, source: std::io::Error) -> std::io::Error {
        std::io::Error::new(source.kind(), OnStream { stream, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_and_io_errors_exit_4_and_name_what_failed() {
        let e = CliError::internal(
            "cannot write the report to out/report.json",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(e.exit_code(), exit::INTERNAL);
        assert_eq!(exit::INTERNAL, 4);
        assert!(
            e.to_string()
                .starts_with("cannot write the report to out/report.json: "),
            "{e}"
        );
        assert!(!e.is_broken_pipe());
        assert_eq!(CliError::usage("--workers 0").exit_code(), exit::USAGE);
    }

    #[test]
    fn an_output_error_names_the_stream_written() {
        let e = CliError::output(std::io::Error::other("disk full"));
        assert_eq!(e.to_string(), "cannot write to standard output: disk full");
        let e = CliError::output(OnStream::wrap(
            "standard error",
            std::io::Error::other("disk full"),
        ));
        assert_eq!(e.to_string(), "cannot write to standard error: disk full");
        let e = CliError::output(OnStream::wrap(
            "standard error",
            std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        ));
        assert!(e.is_broken_pipe());
    }

    #[test]
    fn a_closed_pipe_is_recognised() {
        let e = CliError::output(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(e.is_broken_pipe());
        assert_eq!(e.exit_code(), exit::INTERNAL);
    }
}
