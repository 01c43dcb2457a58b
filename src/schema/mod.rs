//! JSON Schema 2020-12 value generation and validation.
//!
//! Given a schema as the OpenAPI loader produces it (every `$ref` is `#/$defs/<key>` naming an
//! entry of a [`SchemaSet`]), [`Generator`] builds values that satisfy it, deterministically from
//! a ChaCha RNG, and [`Validator`] checks values against it. Every generated value is re-validated
//! before it is handed out, so a value is either valid or refused with a [`GenerateError`] that
//! says why — never silently wrong.
//!
//! - [`generate`]: the walk over a schema that builds a value (modes, types, combinators).
//! - [`merge`]: the practical `allOf` merge the walk generates from.
//! - [`regex_gen`]: strings matching a `pattern`, usable on its own (mutation reuses it).
//! - [`format`]: values for `format` names (date, uuid, email, ...).
//! - [`validate`]: the compiled jsonschema validator and its cache.
//! - [`key`]: schemas as cache keys (structural hash, exact comparison).
//! - [`keyword`]: a schema object's keywords read by scan, not by hashing their names.
//!
//! Validation follows OpenAPI where plain JSON Schema would mislead: a `discriminator` beside
//! `oneOf`/`anyOf` decides which branch a value belongs to, and with a [`Direction`] a
//! required `readOnly` (request) or `writeOnly` (response) property is not required.
//!
//! Depends only on [`crate::spec::model::SchemaSet`] within probe.
//!
//! [`SchemaSet`]: crate::spec::model::SchemaSet

pub mod format;
pub mod generate;
pub mod key;
pub mod keyword;
pub mod merge;
pub mod regex_gen;
pub mod validate;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use generate::Generator;
pub use regex_gen::{generate_matching, PatternError};
pub use validate::{ValidateOptions, ValidationIssue, Validator, ValidatorCache};

/// What kind of value to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `const`, `examples`, `example` or `default` where the schema gives one; elsewhere random.
    Example,
    /// The smallest value: `minLength`, `minimum`, `minItems`, only required properties.
    Min,
    /// The largest value within the caps of [`GenerateOptions`]: every optional property,
    /// `maxLength`/`maxItems` (capped), `maximum` (a number without one stays within about a
    /// thousand of its minimum or of zero).
    Max,
    /// Anything within the constraints.
    Random,
}

/// Which side of an exchange the value is for; decides `readOnly`/`writeOnly` handling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// A request: `readOnly` properties are never generated (nor required).
    Request,
    /// A response: `writeOnly` properties are never generated (nor required).
    Response,
}

/// Bounds on what the generator builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenerateOptions {
    /// How many `$ref`s deep the generator follows freely; past it, it takes the smallest
    /// option (null, empty array, no optional property).
    pub max_depth: usize,
    /// Cap on string length where the schema gives no `maxLength` (a larger `minLength` wins).
    pub max_string: usize,
    /// Cap on array length where the schema gives no `maxItems` (a larger `minItems` wins).
    pub max_items: usize,
    pub direction: Direction,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_depth: 4,
            max_string: 64,
            max_items: 5,
            direction: Direction::Request,
        }
    }
}

/// A schema the validator cannot compile.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    #[error("invalid schema at {pointer}: {message}")]
    Invalid { pointer: String, message: String },
}

/// Why no value could be generated.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum GenerateError {
    /// The constraints at `pointer` admit no value (e.g. `minimum` above `maximum`).
    #[error("schema at {pointer} admits no value: {reason}")]
    Unsatisfiable { pointer: String, reason: String },
    /// Required properties recurse through `$ref` so that every value would be infinite.
    #[error("schema at {pointer} recurses through required properties beyond depth {depth}: every value would be infinite")]
    Recursion { pointer: String, depth: usize },
    /// A `pattern` the generator cannot build strings for.
    #[error("pattern at {pointer}: {error}")]
    Pattern {
        pointer: String,
        error: PatternError,
    },
    /// A `$ref` that names no shared schema.
    #[error("reference {reference} at {pointer} names no shared schema")]
    DanglingRef { pointer: String, reference: String },
    /// Generated values kept failing validation.
    #[error("no valid value for the schema at {pointer} after {attempts} attempts; last failure: {reason}")]
    Exhausted {
        pointer: String,
        attempts: usize,
        reason: String,
    },
    #[error(transparent)]
    Schema(#[from] SchemaError),
}
