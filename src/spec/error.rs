//! Why a document cannot be used: one error type for reading, parsing and resolving.
//!
//! Every message is lower case and names the file (or URL) and, where there is one, the JSON
//! pointer of the offending place, so that a person can go straight to it.
//!
//! Depends on nothing else in probe.

use std::fmt;

/// Why a document (or one reference inside it) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("{path}: cannot read: {error}")]
    Read {
        path: String,
        #[source]
        error: std::io::Error,
    },
    /// The URL could not be fetched.
    #[error("{url}: cannot fetch: {message}")]
    Fetch { url: String, message: String },
    /// Nested deeper than any real document, found before parsing (whose time grows with
    /// the square of the depth).
    #[error("{file}: line {line}: the document nests deeper than {limit} levels (arrays and objects inside one another); probe reads documents nested {limit} deep at most")]
    TooDeep {
        file: String,
        line: usize,
        limit: usize,
    },
    /// Neither YAML nor JSON.
    #[error("{file}: {}not YAML or JSON: {message}", Position(*.line, *.column))]
    Syntax {
        file: String,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// Not an OpenAPI/Swagger document, or a version probe does not read.
    #[error("{file}: {pointer}: {message}")]
    Version {
        file: String,
        pointer: String,
        message: String,
    },
    /// A `$ref` that does not resolve, or a chain of references with no content.
    #[error("{file}: {pointer}: {message}")]
    Reference {
        file: String,
        pointer: String,
        message: String,
    },
    /// A member of the wrong shape where probe cannot go on without it.
    #[error("{file}: {pointer}: {message}")]
    Structure {
        file: String,
        pointer: String,
        message: String,
    },
}

impl SpecError {
    pub(crate) fn structure(file: &str, pointer: impl fmt::Display, message: String) -> Self {
        SpecError::Structure {
            file: file.to_string(),
            pointer: pointer_text(&pointer.to_string()),
            message,
        }
    }

    pub(crate) fn reference(file: &str, pointer: impl fmt::Display, message: String) -> Self {
        SpecError::Reference {
            file: file.to_string(),
            pointer: pointer_text(&pointer.to_string()),
            message,
        }
    }
}

/// The document root is the empty pointer; `/` reads better in a message.
fn pointer_text(p: &str) -> String {
    if p.is_empty() {
        "/".to_string()
    } else {
        p.to_string()
    }
}

struct Position(Option<usize>, Option<usize>);

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: "),
            (Some(l), None) => write!(f, "line {l}: "),
            _ => Ok(()),
        }
    }
}
