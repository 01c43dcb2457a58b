//! The one judge of "does this value break its schema, and where": a thin wrapper over the
//! `jsonschema` crate, kept behind [`violations`] so that the engine can swap in probe's own
//! validator (`schema::Validator`) without touching the operators.
//!
//! Beyond plain JSON Schema 2020-12 it checks what the operators need judged:
//! - formats are assertions (the OpenAPI reading), `url` checked like `uri`;
//! - the numeric widths OpenAPI names (`int32`, `int64`, `float`) are bounds, since a value past
//!   them breaks what the document states (reported with keyword `format`);
//! - a pattern the regex engine gave up on, or a schema that cannot be compiled (a dangling or
//!   circular reference), is reported as keyword [`UNDECIDED`]: nothing may claim a refusal from
//!   a judgement that was never made.
//!
//! Compiled validators are cached by the exact standalone schema (`schema::key`, bounded),
//! because the operators ask the same schema dozens of times per mutation.
//!
//! Depends on: `spec::model::SchemaSet`, `schema::{key, keyword}`.

use crate::schema::keyword::Keywords;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::schema::key::SchemaMap;
use crate::spec::SchemaSet;

/// The keyword reported when the validator could not decide (regex engine limit, schema that
/// does not compile). Callers treat it as "not judged".
pub const UNDECIDED: &str = "undecided";

/// How many backtracking steps a pattern may take before the judgement is abandoned.
const BACKTRACK_LIMIT: usize = 200_000;
/// How many compiled validators are kept.
const CACHE_LIMIT: usize = 512;
/// How deep the width walk follows a value.
const WIDTH_DEPTH: usize = 64;

/// Compiled validators (`None`: the schema did not compile), bounded.
type Validators = SchemaMap<Option<Arc<jsonschema::Validator>>>;

/// The validators of standalone documents.
fn cache() -> &'static Validators {
    static CACHE: OnceLock<Validators> = OnceLock::new();
    CACHE.get_or_init(|| SchemaMap::with_limit(CACHE_LIMIT))
}

/// The validators of schemas that name no shared schema, keyed by the schema as written.
fn self_contained() -> &'static Validators {
    static CACHE: OnceLock<Validators> = OnceLock::new();
    CACHE.get_or_init(|| SchemaMap::with_limit(CACHE_LIMIT))
}

/// No shared schemas: the closure of a schema that names none.
static NO_SHARED: SchemaSet = SchemaSet {
    defs: BTreeMap::new(),
};

/// Every violation of `schema` (which may be a `$ref` into `schemas`) by `value`, as
/// `(instance JSON pointer, keyword)`, sorted and without repeats. Empty: the value is valid.
pub fn violations(schemas: &SchemaSet, schema: &Value, value: &Value) -> Vec<(String, String)> {
    Judge::new(schemas, schema).violations(value)
}

/// Whether `value` is valid against `schema` (and the judgement was made).
pub fn is_valid(schemas: &SchemaSet, schema: &Value, value: &Value) -> bool {
    violations(schemas, schema, value).is_empty()
}

/// One schema made ready to judge many values: what [`violations`] does per call, done once.
/// The operators judge dozens of candidates against the same shape.
pub struct Judge<'a> {
    schemas: &'a SchemaSet,
    schema: Value,
    validator: Option<Arc<jsonschema::Validator>>,
}

impl<'a> Judge<'a> {
    pub fn new(schemas: &'a SchemaSet, schema: &Value) -> Judge<'a> {
        let validator = if names_shared(schema) {
            compiled(&standalone_closure(schemas, schema))
        } else {
            // A schema that names no shared schema is its own cache key: no standalone
            // document to build and hash for every mutation (a mutation built one for
            // each parameter it might change).
            self_contained()
                .get_or_try_insert_with(schema, || {
                    Ok::<_, std::convert::Infallible>(compiled(&NO_SHARED.standalone(schema)))
                })
                .unwrap_or_else(|never| match never {})
        };
        Judge {
            schemas,
            schema: schema.clone(),
            validator,
        }
    }

    /// As [`violations`].
    pub fn violations(&self, value: &Value) -> Vec<(String, String)> {
        let Some(validator) = &self.validator else {
            return vec![(String::new(), UNDECIDED.to_string())];
        };
        let mut out = BTreeSet::new();
        for error in validator.iter_errors(value) {
            let keyword = match error.kind() {
                ValidationErrorKind::BacktrackLimitExceeded { .. }
                | ValidationErrorKind::RegexEngineFailure { .. }
                | ValidationErrorKind::Referencing(_) => UNDECIDED.to_string(),
                kind => kind.keyword().to_string(),
            };
            out.insert((error.instance_path().as_str().to_string(), keyword));
        }
        widths(
            self.schemas,
            &self.schema,
            value,
            &mut String::new(),
            0,
            &mut out,
        );
        out.into_iter().collect()
    }
}

fn compiled(standalone: &Value) -> Option<Arc<jsonschema::Validator>> {
    cache()
        .get_or_try_insert_with(standalone, || {
            Ok::<_, std::convert::Infallible>(
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(true)
                    .with_format("url", |s: &str| url::Url::parse(s).is_ok())
                    .with_pattern_options(
                        jsonschema::PatternOptions::fancy_regex().backtrack_limit(BACKTRACK_LIMIT),
                    )
                    .build(standalone)
                    .ok()
                    .map(Arc::new),
            )
        })
        .unwrap_or_else(|never| match never {})
}

/// The standalone document for `schema` holding only the shared schemas it can reach, so that
/// the cache key is exact and small.
fn standalone_closure(schemas: &SchemaSet, schema: &Value) -> Value {
    let mut seen = BTreeSet::new();
    let mut todo = Vec::new();
    refs_in(schema, &mut todo);
    let mut defs = BTreeMap::new();
    while let Some(key) = todo.pop() {
        if !seen.insert(key.clone()) {
            continue;
        }
        if let Some(s) = schemas.defs.get(&key) {
            refs_in(s, &mut todo);
            defs.insert(key, s.clone());
        }
    }
    SchemaSet { defs }.standalone(schema)
}

/// Whether `v` names a shared schema anywhere ([`refs_in`] would find a key).
fn names_shared(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with(SchemaSet::REF_PREFIX),
        Value::Array(items) => items.iter().any(names_shared),
        Value::Object(map) => map.values().any(names_shared),
        _ => false,
    }
}

/// Keys of `#/$defs/<key>` references anywhere in `v` (discriminator mappings included).
fn refs_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Some(key) = s.strip_prefix(SchemaSet::REF_PREFIX) {
                out.push(key.replace("~1", "/").replace("~0", "~"));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| refs_in(i, out)),
        Value::Object(map) => map.values().for_each(|i| refs_in(i, out)),
        _ => {}
    }
}

/// The edges of the numeric widths OpenAPI names; `None` for a format without known edges.
pub fn width_edges(format: &str) -> Option<(f64, f64)> {
    match format {
        "int32" => Some((i32::MIN as f64, i32::MAX as f64)),
        "int64" => Some((i64::MIN as f64, i64::MAX as f64)),
        "float" => Some((-(f32::MAX as f64), f32::MAX as f64)),
        _ => None,
    }
}

/// Whether the number `n` fits the width `format` names (true for unknown formats).
pub fn fits_width(format: &str, n: &serde_json::Number) -> bool {
    match format {
        "int32" => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i32::try_from(i).is_ok(),
            (None, Some(_)) => false,
            _ => n
                .as_f64()
                .is_some_and(|f| f >= i32::MIN as f64 && f <= i32::MAX as f64),
        },
        "int64" => match (n.as_i64(), n.as_u64()) {
            (Some(_), _) => true,
            (None, Some(_)) => false,
            // 2^63 as a float is already past the edge.
            _ => n
                .as_f64()
                .is_some_and(|f| f >= -(2f64.powi(63)) && f < 2f64.powi(63)),
        },
        "float" => n.as_f64().is_some_and(|f| f.abs() <= f32::MAX as f64),
        _ => true,
    }
}

/// The width walk: numbers past the edge of the width their schema names.
fn widths(
    schemas: &SchemaSet,
    schema: &Value,
    value: &Value,
    pointer: &mut String,
    depth: usize,
    out: &mut BTreeSet<(String, String)>,
) {
    if depth > WIDTH_DEPTH {
        return;
    }
    let Some(Value::Object(map)) = schemas.deref(schema, 64) else {
        return;
    };
    if let (Value::Number(n), Some(Value::String(f))) = (value, map.keyword("format")) {
        if !fits_width(f, n) {
            out.insert((pointer.clone(), "format".to_string()));
        }
    }
    if let Some(Value::Array(all)) = map.keyword("allOf") {
        for s in all {
            widths(schemas, s, value, pointer, depth + 1, out);
        }
    }
    match value {
        Value::Object(members) => {
            let props = map.keyword("properties").and_then(Value::as_object);
            for (k, v) in members {
                let sub = props.and_then(|p| p.get(k)).or_else(|| {
                    map.keyword("additionalProperties")
                        .filter(|a| a.is_object())
                });
                if let Some(sub) = sub {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape(k));
                    widths(schemas, sub, v, pointer, depth + 1, out);
                    pointer.truncate(len);
                }
            }
        }
        Value::Array(items) => {
            let prefix = map
                .get("prefixItems")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for (i, v) in items.iter().enumerate() {
                let sub = prefix.get(i).or_else(|| map.keyword("items"));
                if let Some(sub) = sub {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    widths(schemas, sub, v, pointer, depth + 1, out);
                    pointer.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// JSON pointer escaping of one reference token.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(defs: Value) -> SchemaSet {
        SchemaSet {
            defs: defs
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn reports_pointer_and_keyword() {
        let s = set(json!({"Pet": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 3}, "age": {"type": "integer"}}}}));
        let schema = json!({"$ref": "#/$defs/Pet"});
        assert!(violations(&s, &schema, &json!({"name": "abc"})).is_empty());
        assert_eq!(
            violations(&s, &schema, &json!({"name": "abcd", "age": 1.5})),
            vec![
                ("/age".to_string(), "type".to_string()),
                ("/name".to_string(), "maxLength".to_string())
            ]
        );
        assert_eq!(
            violations(&s, &schema, &json!({})),
            vec![(String::new(), "required".to_string())]
        );
    }

    #[test]
    fn formats_are_assertions_and_widths_are_bounds() {
        let s = SchemaSet::default();
        let date = json!({"type": "string", "format": "date"});
        assert!(is_valid(&s, &date, &json!("2021-02-28")));
        assert!(!is_valid(&s, &date, &json!("2021-02-30")));
        let url = json!({"type": "string", "format": "url"});
        assert!(!is_valid(&s, &url, &json!("not a url")));
        let int32 =
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}});
        assert!(is_valid(&s, &int32, &json!({"n": 2147483647})));
        assert_eq!(
            violations(&s, &int32, &json!({"n": 2147483648u64})),
            vec![("/n".to_string(), "format".to_string())]
        );
        let int64 = json!({"type": "integer", "format": "int64"});
        assert!(!is_valid(&s, &int64, &json!(9223372036854775808u64)));
    }

    #[test]
    fn a_schema_naming_no_shared_schema_is_judged_as_its_closure_would_be() {
        // The same words, with and without a shared schema in reach: the set's schemas
        // must not leak into the judgement of a schema that names none of them, nor the
        // self-contained cache answer for one that does.
        let s = set(json!({"Name": {"type": "string", "maxLength": 2}}));
        let plain = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        let shared = json!({"type": "object", "properties": {"name": {"$ref": "#/$defs/Name"}}});
        assert!(!names_shared(&plain) && names_shared(&shared));
        let value = json!({"name": "abc"});
        for (schema, expected) in [
            (&plain, vec![]),
            (
                &shared,
                vec![("/name".to_string(), "maxLength".to_string())],
            ),
        ] {
            assert_eq!(violations(&s, schema, &value), expected, "{schema}");
            let closure = standalone_closure(&s, schema);
            let by_closure = compiled(&closure).expect("compiles");
            assert_eq!(by_closure.is_valid(&value), expected.is_empty(), "{schema}");
        }
    }

    #[test]
    fn dangling_reference_is_undecided() {
        let s = SchemaSet::default();
        let v = violations(&s, &json!({"$ref": "#/$defs/Nowhere"}), &json!(1));
        assert_eq!(v, vec![(String::new(), UNDECIDED.to_string())]);
    }

    #[test]
    fn hostile_pattern_does_not_stall() {
        let s = SchemaSet::default();
        let schema = json!({"type": "string", "pattern": "^(a+)+$"});
        let started = std::time::Instant::now();
        let v = violations(&s, &schema, &json!(format!("{}!", "a".repeat(40))));
        assert!(started.elapsed().as_secs() < 5);
        assert!(!v.is_empty());
    }
}
