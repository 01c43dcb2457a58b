//! Validation of values against a schema of a [`SchemaSet`], through the `jsonschema` crate.
//!
//! A [`Validator`] is one schema compiled as a standalone document (the schema plus every
//! shared schema under `$defs`, see [`SchemaSet::standalone`]); all references are local, and
//! the crate is built without file/http resolvers, so compiling never touches the network.
//! Compiling is the expensive part, so [`ValidatorCache`] keeps compiled validators keyed by
//! their schema (`schema::key`).
//!
//! Depends only on [`SchemaSet`] and `schema::key` within probe.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::Value;

use super::key::SchemaMap;
use super::{Direction, SchemaError};
use crate::spec::model::SchemaSet;

/// How strictly to validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Assert `format` (date, date-time, email, uuid, ipv4, byte, ...) rather than treating it
    /// as an annotation.
    pub check_formats: bool,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            check_formats: true,
        }
    }
}

/// One reason a value is invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationIssue {
    /// JSON pointer into the value (`/items/0/name`; empty for the root).
    pub instance_path: String,
    /// JSON pointer into the schema of the failing keyword.
    pub schema_path: String,
    /// The failing keyword (`type`, `required`, `format`, ...).
    pub keyword: String,
    pub message: String,
}

/// A compiled validator for one schema within a [`SchemaSet`].
pub struct Validator {
    inner: jsonschema::Validator,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").finish_non_exhaustive()
    }
}

impl Validator {
    /// Compiles `schema` (which may be a `$ref` into `schemas`). A `discriminator` beside
    /// `oneOf`/`anyOf` is honoured as OpenAPI means it: a value belongs to the branch its
    /// discriminator property names: each branch is pinned to its mapping values.
    pub fn new(
        schemas: &SchemaSet,
        schema: &Value,
        options: ValidateOptions,
    ) -> Result<Validator, SchemaError> {
        Self::build(schemas, schema, options, None)
    }

    /// Like [`Validator::new`], with OpenAPI's `readOnly`/`writeOnly` rule: in a request a
    /// required `readOnly` property is not required (in a response, a `writeOnly` one).
    pub fn new_for(
        schemas: &SchemaSet,
        schema: &Value,
        options: ValidateOptions,
        direction: Direction,
    ) -> Result<Validator, SchemaError> {
        Self::build(schemas, schema, options, Some(direction))
    }

    fn build(
        schemas: &SchemaSet,
        schema: &Value,
        options: ValidateOptions,
        direction: Option<Direction>,
    ) -> Result<Validator, SchemaError> {
        // Only the shared schemas the schema can reach: compiling a small document is what
        // keeps validators cheap in a large API.
        let reachable = reachable(schemas, schema);
        let adjusted = adjust_set(&reachable, direction);
        let schema = adjust(&reachable, schema, direction);
        Self::compile(&adjusted.standalone(&schema), options)
    }

    fn compile(document: &Value, options: ValidateOptions) -> Result<Validator, SchemaError> {
        let inner = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(options.check_formats)
            .should_ignore_unknown_formats(true)
            .with_format("byte", is_base64)
            .build(document)
            .map_err(|e| SchemaError::Invalid {
                pointer: format!("#{}", e.schema_path().as_str()),
                message: e.to_string(),
            })?;
        Ok(Validator { inner })
    }

    pub fn is_valid(&self, value: &Value) -> bool {
        self.inner.is_valid(value)
    }

    /// Every reason `value` is invalid (empty when it is valid).
    pub fn errors(&self, value: &Value) -> Vec<ValidationIssue> {
        self.inner
            .iter_errors(value)
            .map(|e| ValidationIssue {
                instance_path: e.instance_path().as_str().to_string(),
                schema_path: e.schema_path().as_str().to_string(),
                keyword: e.kind().keyword().to_string(),
                message: e.to_string(),
            })
            .collect()
    }

    /// The first error's message, for error reports.
    pub fn first_error(&self, value: &Value) -> Option<String> {
        self.inner.iter_errors(value).next().map(|e| {
            let at = e.instance_path().as_str();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{} (at {at})", e)
            }
        })
    }
}

/// OpenAPI `format: byte`: standard base64 with padding.
fn is_base64(s: &str) -> bool {
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

/// Compiled validators keyed by their schema ([`SchemaMap`]), shared by every generation.
#[derive(Default)]
pub struct ValidatorCache {
    map: SchemaMap<Arc<Validator>>,
}

impl ValidatorCache {
    /// The validator for `schema` within `schemas`, compiled on first use.
    pub fn get(
        &self,
        schemas: &SchemaSet,
        schema: &Value,
        options: ValidateOptions,
    ) -> Result<Arc<Validator>, SchemaError> {
        self.get_with(schema, || Validator::new(schemas, schema, options))
    }

    /// The validator cached for `schema`, else the one `compile` builds.
    pub fn get_with(
        &self,
        schema: &Value,
        compile: impl FnOnce() -> Result<Validator, SchemaError>,
    ) -> Result<Arc<Validator>, SchemaError> {
        self.map
            .get_or_try_insert_with(schema, || compile().map(Arc::new))
    }
}

/// The shared schemas `schema` reaches through `$ref`, directly or through each other.
pub(crate) fn reachable(schemas: &SchemaSet, schema: &Value) -> SchemaSet {
    let mut out = SchemaSet::default();
    let mut pending: Vec<&Value> = vec![schema];
    while let Some(v) = pending.pop() {
        let mut refs = Vec::new();
        collect_refs(v, &mut refs);
        for r in refs {
            let Some(key) = r.strip_prefix(SchemaSet::REF_PREFIX) else {
                continue;
            };
            let key = key.replace("~1", "/").replace("~0", "~");
            if out.defs.contains_key(&key) {
                continue;
            }
            if let Some(target) = schemas.defs.get(&key) {
                out.defs.insert(key, target.clone());
                pending.push(target);
            }
        }
    }
    out
}

fn collect_refs<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r),
                    // Data, not schemas.
                    ("examples" | "example" | "default" | "const" | "enum", _) => {}
                    _ => collect_refs(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// A copy of `schemas` with OpenAPI's rules applied (see [`adjust`]).
pub(crate) fn adjust_set(schemas: &SchemaSet, direction: Option<Direction>) -> SchemaSet {
    SchemaSet {
        defs: schemas
            .defs
            .iter()
            .map(|(k, v)| (k.clone(), adjust(schemas, v, direction)))
            .collect(),
    }
}

/// `schema` with the OpenAPI rules JSON Schema lacks made explicit:
/// - with a direction, every `required` entry naming a property hidden in that direction
///   (`readOnly` in a request, `writeOnly` in a response) is removed;
/// - a `oneOf`/`anyOf` with a `discriminator` has each branch pinned to its discriminator
///   values ([`discriminated_branch`]), so that the discriminator, not the branches' overlap,
///   decides which branch a value belongs to.
pub(crate) fn adjust(schemas: &SchemaSet, schema: &Value, direction: Option<Direction>) -> Value {
    match schema {
        Value::Object(map) => {
            let discriminator = map.get("discriminator");
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let adjusted = match (k.as_str(), v) {
                    // Data, not schemas: leave as written.
                    ("examples" | "example" | "default" | "const" | "enum", _) => v.clone(),
                    ("required", Value::Array(names)) if direction.is_some() => {
                        let props = map.get("properties").and_then(Value::as_object);
                        Value::Array(
                            names
                                .iter()
                                .filter(|n| {
                                    let hidden = n
                                        .as_str()
                                        .and_then(|n| props.and_then(|p| p.get(n)))
                                        .zip(direction)
                                        .is_some_and(|(ps, d)| is_hidden(schemas, ps, d));
                                    !hidden
                                })
                                .cloned()
                                .collect(),
                        )
                    }
                    ("oneOf" | "anyOf", Value::Array(branches)) if discriminator.is_some() => {
                        Value::Array(
                            branches
                                .iter()
                                .map(|b| {
                                    let b = adjust(schemas, b, direction);
                                    match discriminator {
                                        Some(d) => discriminated_branch(d, &b),
                                        None => b,
                                    }
                                })
                                .collect(),
                        )
                    }
                    ("properties" | "patternProperties" | "$defs", Value::Object(props)) => {
                        Value::Object(
                            props
                                .iter()
                                .map(|(pk, pv)| (pk.clone(), adjust(schemas, pv, direction)))
                                .collect(),
                        )
                    }
                    _ => adjust(schemas, v, direction),
                };
                out.insert(k.clone(), adjusted);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| adjust(schemas, v, direction))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A discriminated branch (`{"$ref": "#/$defs/Cat"}`) pinned to the discriminator values
/// that name it: `{"allOf": [branch, {"properties": {"<name>": {"enum": [values]}}}]}`.
/// Branches that are not references are left alone.
pub(crate) fn discriminated_branch(discriminator: &Value, branch: &Value) -> Value {
    match discriminator_values(discriminator, branch) {
        Some((name, values)) => serde_json::json!({
            "allOf": [branch, { "properties": { name: { "enum": values } } }]
        }),
        None => branch.clone(),
    }
}

/// The discriminator property and the values naming `branch` (a `$ref`): the mapping entries
/// whose target is the branch, else the shared schema's name (OpenAPI's implicit mapping).
pub(crate) fn discriminator_values(
    discriminator: &Value,
    branch: &Value,
) -> Option<(String, Vec<Value>)> {
    let name = discriminator.get("propertyName")?.as_str()?;
    let r = branch.get("$ref")?.as_str()?;
    let key = r
        .strip_prefix(SchemaSet::REF_PREFIX)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))?;
    let last = key.rsplit('/').next().unwrap_or(&key).to_string();
    let mut values = Vec::new();
    if let Some(mapping) = discriminator.get("mapping").and_then(Value::as_object) {
        for (value, target) in mapping {
            let Some(t) = target.as_str() else { continue };
            // The loader rewrites mapping targets like references; accept the other spellings
            // (`#/components/schemas/Cat`, `Cat`) too.
            if t == r || t == key || t == last || t.ends_with(&format!("/{last}")) {
                values.push(Value::String(value.clone()));
            }
        }
    }
    if values.is_empty() {
        values.push(Value::String(last));
    }
    Some((name.to_string(), values))
}

/// Whether a property schema is `readOnly` (request) or `writeOnly` (response), looking
/// through `$ref` and `allOf`.
pub(crate) fn is_hidden(schemas: &SchemaSet, schema: &Value, direction: Direction) -> bool {
    let flag = match direction {
        Direction::Request => "readOnly",
        Direction::Response => "writeOnly",
    };
    has_flag(schemas, schema, flag, 8)
}

fn has_flag(schemas: &SchemaSet, schema: &Value, flag: &str, budget: usize) -> bool {
    if budget == 0 {
        return false;
    }
    let Some(map) = schema.as_object() else {
        return false;
    };
    if map.get(flag).and_then(Value::as_bool) == Some(true) {
        return true;
    }
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| schemas.resolve_ref(r))
    {
        if has_flag(schemas, target, flag, budget - 1) {
            return true;
        }
    }
    map.get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|all| all.iter().any(|s| has_flag(schemas, s, flag, budget - 1)))
}
