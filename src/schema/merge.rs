//! A practical `allOf` merge: one schema object whose constraints are the intersection of the
//! common keywords of the subschemas, for the generator to build from.
//!
//! The merge need not be exact: every generated value is validated against the original schema
//! afterwards. It only has to be close enough that generation usually succeeds first time.
//! Where two subschemas carry a keyword that cannot be combined (two different `pattern`s, two
//! `oneOf`s), the first is kept and validation sorts out the rest.
//!
//! Depends only on [`SchemaSet`] within probe.

use serde_json::{Map, Value};

use crate::spec::model::SchemaSet;

/// How many nested `allOf`/`$ref` steps a merge follows before it calls the shape circular.
const MERGE_LIMIT: usize = 32;

/// Where a merged schema keeps the `pattern`s beyond the first (the name cannot clash with a
/// keyword; the merged schema is only generated from, never validated against).
pub const EXTRA_PATTERNS: &str = "x-probe-extra-patterns";

/// Why a merge failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    /// A `$ref` that names nothing.
    Dangling(String),
    /// `allOf` refers back to itself.
    Circular,
    /// A subschema is `false`.
    False,
}

/// `schema` (an object, possibly with `allOf` and `$ref`) flattened into one object without
/// `allOf` and without a top-level `$ref`.
pub fn flatten(
    schemas: &SchemaSet,
    schema: &Map<String, Value>,
) -> Result<Map<String, Value>, MergeError> {
    flatten_at(schemas, schema, 0)
}

fn flatten_at(
    schemas: &SchemaSet,
    schema: &Map<String, Value>,
    depth: usize,
) -> Result<Map<String, Value>, MergeError> {
    if depth > MERGE_LIMIT {
        return Err(MergeError::Circular);
    }
    let mut base: Map<String, Value> = schema
        .iter()
        .filter(|(k, _)| k.as_str() != "allOf" && k.as_str() != "$ref")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = schemas
            .resolve_ref(r)
            .ok_or_else(|| MergeError::Dangling(r.to_string()))?;
        let target = sub_flat(schemas, target, depth)?;
        merge_into(&mut base, &target);
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            let sub = sub_flat(schemas, sub, depth)?;
            merge_into(&mut base, &sub);
        }
    }
    Ok(base)
}

fn sub_flat(
    schemas: &SchemaSet,
    sub: &Value,
    depth: usize,
) -> Result<Map<String, Value>, MergeError> {
    match sub {
        Value::Object(m) => flatten_at(schemas, m, depth + 1),
        Value::Bool(true) => Ok(Map::new()),
        Value::Bool(false) => Err(MergeError::False),
        _ => Ok(Map::new()),
    }
}

/// Merges `b` into `a`, intersecting what both constrain.
pub fn merge_into(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, bv) in b {
        let Some(av) = a.get(k).cloned() else {
            a.insert(k.clone(), bv.clone());
            continue;
        };
        let merged = match k.as_str() {
            "type" => intersect_types(&av, bv),
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties"
            | "minContains" => pick_number(&av, bv, true),
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties"
            | "maxContains" => pick_number(&av, bv, false),
            "required" => union(&av, bv),
            "enum" => match (av.as_array(), bv.as_array()) {
                (Some(x), Some(y)) => {
                    Value::Array(x.iter().filter(|v| y.contains(v)).cloned().collect())
                }
                _ => av,
            },
            "properties" | "patternProperties" | "$defs" => merge_props(&av, bv),
            "uniqueItems" | "readOnly" | "writeOnly" | "deprecated" => {
                Value::Bool(av.as_bool() == Some(true) || bv.as_bool() == Some(true))
            }
            "additionalProperties"
            | "items"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties" => both(&av, bv),
            "multipleOf" => multiple_of(&av, bv),
            // A second pattern is kept aside; the string generator tries to satisfy both.
            "pattern" if av != *bv => {
                let mut extra = a
                    .get(EXTRA_PATTERNS)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if !extra.contains(bv) {
                    extra.push(bv.clone());
                }
                a.insert(EXTRA_PATTERNS.to_string(), Value::Array(extra));
                av
            }
            // not A and not B = not (A or B)
            "not" => serde_json::json!({ "anyOf": [av, bv] }),
            // First wins: names, annotations, examples, and what cannot be combined.
            _ => av,
        };
        a.insert(k.clone(), merged);
    }
}

fn intersect_types(a: &Value, b: &Value) -> Value {
    let list = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(xs) => xs
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    let (la, lb) = (list(a), list(b));
    let mut out: Vec<Value> = Vec::new();
    for t in &la {
        let keep = lb.contains(t) || (t == "integer" && lb.iter().any(|x| x == "number"));
        if keep {
            out.push(Value::String(t.clone()));
        } else if t == "number" && lb.iter().any(|x| x == "integer") {
            out.push(Value::String("integer".into()));
        }
    }
    Value::Array(out)
}

fn pick_number(a: &Value, b: &Value, larger: bool) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => {
            if (larger && y > x) || (!larger && y < x) {
                b.clone()
            } else {
                a.clone()
            }
        }
        (None, Some(_)) => b.clone(),
        _ => a.clone(),
    }
}

fn union(a: &Value, b: &Value) -> Value {
    let mut out: Vec<Value> = a.as_array().cloned().unwrap_or_default();
    for v in b.as_array().into_iter().flatten() {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    Value::Array(out)
}

fn merge_props(a: &Value, b: &Value) -> Value {
    let (Some(am), Some(bm)) = (a.as_object(), b.as_object()) else {
        return a.clone();
    };
    let mut out = am.clone();
    for (name, bs) in bm {
        match out.get(name) {
            Some(existing) if existing != bs => {
                let both = both(existing, bs);
                out.insert(name.clone(), both);
            }
            Some(_) => {}
            None => {
                out.insert(name.clone(), bs.clone());
            }
        }
    }
    Value::Object(out)
}

/// A schema both `a` and `b` hold for (`false` wins, `true` gives way).
fn both(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
        (Value::Bool(true), x) | (x, Value::Bool(true)) => x.clone(),
        (x, y) if x == y => x.clone(),
        (x, y) => serde_json::json!({ "allOf": [x, y] }),
    }
}

fn multiple_of(a: &Value, b: &Value) -> Value {
    match (a.as_u64(), b.as_u64()) {
        (Some(x), Some(y)) if x > 0 && y > 0 => {
            let g = gcd(x, y);
            match (x / g).checked_mul(y) {
                Some(l) => Value::from(l),
                None => a.clone(),
            }
        }
        _ => a.clone(),
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
