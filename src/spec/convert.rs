//! Schemas of every dialect into JSON Schema 2020-12.
//!
//! Rules (each has a unit test below):
//! - OpenAPI 3.0 `nullable: true` and Swagger `x-nullable: true` add `"null"` to `type`
//!   (and `null` to an `enum`); a schema without `type` is wrapped in `anyOf [.., null]`.
//!   3.1 documents converted from 3.0 often still say `nullable`; it is read the same way.
//! - Boolean `exclusiveMinimum`/`exclusiveMaximum` (3.0, Swagger, and 3.1 documents that
//!   kept them) become the numeric forms.
//! - `example` becomes `examples: [example]`.
//! - Swagger `type: file` becomes `type: string, format: binary`.
//! - An `items` array (tuple form) becomes `prefixItems`.
//! - `$ref` is rewritten to `#/$defs/<key>` (see [`super::resolve`]); in 3.0/Swagger its
//!   siblings are ignored, as those dialects say, except `nullable`.
//! - Members of the wrong type that would stop a validator from compiling the schema
//!   (`required: true` on a property, a string `minimum`, a `pattern` no regex engine
//!   parses, ...) are dropped, and so are `$id`/`$schema` (they would move the base the
//!   rewritten references resolve against) and the 2019-09 `$recursive*` keywords.
//!
//! OpenAPI 3.1 schemas are already 2020-12 and pass through almost as written.
//!
//! Depends on nothing else in probe.

use serde_json::{json, Map, Value};

use super::error::SpecError;
use super::model::SpecVersion;
use super::resolve::{Ctx, Ptr};

/// Schemas nest at most this deep (references do not count: they go through the set).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 100;

/// Members whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];
/// Members whose value is a map of names to schemas.
const SCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];
/// Members whose value is a list of schemas.
const SCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Members that must be numbers.
const NUMBERS: &[&str] = &[
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];

impl Ctx {
    /// Converts one schema written at `at` in document `doc`.
    pub fn convert_schema(
        &mut self,
        doc: usize,
        schema: &Value,
        at: &Ptr,
        depth: usize,
    ) -> Result<Value, SpecError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SpecError::structure(
                &self.docs[doc].name,
                at,
                format!("schema nests deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let map = match schema {
            Value::Bool(_) => return Ok(schema.clone()),
            Value::Object(map) => map,
            // Not a schema at all; `true` accepts what the author most likely meant.
            _ => return Ok(Value::Bool(true)),
        };
        let legacy = self.dialect != SpecVersion::OpenApi31;
        // Many 3.1 documents still say `nullable: true` (converted from 3.0); they mean it.
        let nullable = map.get("nullable") == Some(&Value::Bool(true))
            || map.get("x-nullable") == Some(&Value::Bool(true));

        let mut out = Map::with_capacity(map.len());
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let rewritten = self.schema_ref(doc, reference, &at.key("$ref"))?;
            if legacy {
                return Ok(if nullable {
                    json!({"anyOf": [rewritten, {"type": "null"}]})
                } else {
                    rewritten
                });
            }
            if let Value::Object(m) = rewritten {
                out = m;
            }
        }
        for (k, v) in map {
            if matches!(k.as_str(), "nullable" | "x-nullable" | "$ref") {
                continue;
            }
            if let Some(v) = self.convert_member(doc, k, v, at, depth)? {
                out.insert(k.clone(), v);
            }
        }
        // A boolean bound is the 3.0/Swagger form in any dialect (it is never 2020-12).
        for (flag, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(Value::Bool(b)) = out.get(flag) {
                let b = *b;
                out.remove(flag);
                if b {
                    if let Some(n) = out.remove(bound) {
                        out.insert(flag.to_string(), n);
                    }
                }
            }
        }
        finish_examples(&mut out, map);
        if nullable {
            return Ok(add_null(out));
        }
        Ok(Value::Object(out))
    }

    /// One member of a schema object; `None` drops it.
    fn convert_member(
        &mut self,
        doc: usize,
        k: &str,
        v: &Value,
        at: &Ptr,
        depth: usize,
    ) -> Result<Option<Value>, SpecError> {
        let here = at.key(k);
        let d = depth + 1;
        Ok(Some(match k {
            "items" => match v {
                Value::Array(items) => {
                    // Tuple form; `prefixItems` in 2020-12 (renamed by the caller's map
                    // insert would lose order, so it is done here).
                    let mut list = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        list.push(self.convert_schema(doc, item, &here.idx(i), d)?);
                    }
                    return Ok(Some(json!({ "__prefixItems": list })));
                }
                _ => self.convert_schema(doc, v, &here, d)?,
            },
            _ if ONE_SCHEMA.contains(&k) => self.convert_schema(doc, v, &here, d)?,
            _ if SCHEMA_MAP.contains(&k) => match v {
                Value::Object(m) => {
                    let mut out = Map::with_capacity(m.len());
                    for (name, s) in m {
                        if k == "patternProperties" && !pattern_is_usable(name) {
                            continue;
                        }
                        out.insert(
                            name.clone(),
                            self.convert_schema(doc, s, &here.key(name), d)?,
                        );
                    }
                    Value::Object(out)
                }
                _ => return Ok(None),
            },
            _ if SCHEMA_LIST.contains(&k) => match v {
                Value::Array(items) => {
                    let mut list = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        list.push(self.convert_schema(doc, item, &here.idx(i), d)?);
                    }
                    Value::Array(list)
                }
                _ => return Ok(None),
            },
            "type" => match v {
                Value::String(t) if t == "file" => {
                    // Swagger 2.0: a file upload is a binary string.
                    return Ok(Some(json!("__file")));
                }
                Value::String(t) => match json_type_name(t) {
                    Some(name) => json!(name),
                    None => return Ok(None),
                },
                Value::Array(items) if items.iter().all(Value::is_string) => {
                    let names: Vec<Value> = items
                        .iter()
                        .filter_map(|t| t.as_str().and_then(json_type_name))
                        .map(|n| json!(n))
                        .collect();
                    if names.is_empty() {
                        return Ok(None);
                    }
                    unique(&names)
                }
                _ => return Ok(None),
            },
            // Both must be lists of unique strings for a validator to compile the schema.
            "required" => match v {
                Value::Array(items) if items.iter().all(Value::is_string) => unique(items),
                _ => return Ok(None),
            },
            "enum" => match v {
                Value::Array(_) => v.clone(),
                _ => return Ok(None),
            },
            "pattern" => match v {
                Value::String(p) if pattern_is_usable(p) => v.clone(),
                _ => return Ok(None),
            },
            "format" => match v {
                Value::String(_) => v.clone(),
                _ => return Ok(None),
            },
            // `$id` would move the base of the rewritten `#/$defs/..` references; the
            // 2019-09 recursion keywords have no meaning in 2020-12.
            "$id" | "$schema" | "$recursiveAnchor" | "$recursiveRef" => return Ok(None),
            "example" => return Ok(None),
            "examples" => match v {
                Value::Array(_) => v.clone(),
                _ => return Ok(None),
            },
            "discriminator" => self.discriminator(doc, v, &here),
            _ if NUMBERS.contains(&k) => match v {
                Value::Number(_) => v.clone(),
                _ => return Ok(None),
            },
            _ => v.clone(),
        }))
    }

    /// `discriminator.mapping` values are references; they are rewritten like `$ref`, so
    /// that they name entries of the set. A value that does not resolve is kept as written.
    fn discriminator(&mut self, doc: usize, v: &Value, at: &Ptr) -> Value {
        let mut out = v.clone();
        let Some(mapping) = out.get_mut("mapping").and_then(Value::as_object_mut) else {
            return out;
        };
        for (name, target) in mapping.iter_mut() {
            let Some(reference) = target.as_str().map(str::to_string) else {
                continue;
            };
            let reference = if reference.contains('#') || reference.contains('.') {
                reference
            } else {
                // A bare name means a schema of the components.
                match self.dialect {
                    SpecVersion::Swagger2 => format!("#/definitions/{reference}"),
                    _ => format!("#/components/schemas/{reference}"),
                }
            };
            let here = at.key("mapping");
            let here = here.key(name);
            if let Ok(Value::Object(r)) = self.schema_ref(doc, &reference, &here) {
                if let Some(r) = r.get("$ref") {
                    *target = r.clone();
                }
            }
        }
        out
    }
}

/// Strings without repeats, first occurrence kept.
fn unique(items: &[Value]) -> Value {
    let mut seen = std::collections::HashSet::new();
    Value::Array(
        items
            .iter()
            .filter(|i| seen.insert(i.as_str().unwrap_or_default()))
            .cloned()
            .collect(),
    )
}

/// Whether a validator can compile `pattern`. Patterns the Rust regex parser refuses are
/// kept when they use ECMA-262 lookaround or back-references (the validator's engine has
/// them); otherwise they are dropped, since one bad pattern would stop every schema that
/// shares the set from compiling.
pub(crate) fn pattern_is_usable(pattern: &str) -> bool {
    if regex_syntax::Parser::new().parse(pattern).is_ok() {
        return true;
    }
    ["(?=", "(?!", "(?<=", "(?<!"]
        .iter()
        .any(|l| pattern.contains(l))
        || (1..=9).any(|d| pattern.contains(&format!("\\{d}")))
}

/// Post-processing shared by both paths: `example` → `examples`, the tuple and file markers.
fn finish_examples(out: &mut Map<String, Value>, original: &Map<String, Value>) {
    if let Some(Value::Object(marker)) = out.get("items") {
        if let Some(list) = marker.get("__prefixItems") {
            let list = list.clone();
            out.remove("items");
            out.insert("prefixItems".into(), list);
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("__file") {
        out.insert("type".into(), json!("string"));
        out.insert("format".into(), json!("binary"));
    }
    if let Some(example) = original.get("example") {
        if !out.contains_key("examples") {
            out.insert("examples".into(), Value::Array(vec![example.clone()]));
        }
    }
}

/// Makes a schema also accept `null`.
pub(crate) fn add_null(mut out: Map<String, Value>) -> Value {
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            if t != "null" {
                out.insert("type".into(), json!([t, "null"]));
            }
            Value::Object(out)
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
            Value::Object(out)
        }
        _ => {
            if out.contains_key("enum") {
                // The enum now holds null and nothing else restricts the type.
                return Value::Object(out);
            }
            json!({"anyOf": [Value::Object(out), {"type": "null"}]})
        }
    }
}

/// Whether a schema can produce no value at all (`false`, `not: {}`, an empty `enum`),
/// following rewritten references through `defs`.
pub(crate) fn produces_nothing(schema: &Value, defs: &super::model::SchemaSet) -> bool {
    let Some(schema) = defs.deref(schema, 64) else {
        return true;
    };
    match schema {
        Value::Bool(b) => !b,
        Value::Object(map) => {
            let not_everything = match map.get("not") {
                Some(Value::Bool(true)) => true,
                Some(Value::Object(m)) => m.is_empty(),
                _ => false,
            };
            let empty_enum = matches!(map.get("enum"), Some(Value::Array(v)) if v.is_empty());
            not_everything || empty_enum
        }
        _ => false,
    }
}

/// The JSON Schema type a document's `type` means. Real documents write `int`, `long`,
/// `float`, `bool` (httpbin does): those are read as what they plainly mean; a name that
/// means nothing is dropped rather than making the whole schema unusable.
fn json_type_name(t: &str) -> Option<&'static str> {
    Some(match t.trim().to_ascii_lowercase().as_str() {
        "string" | "str" | "text" => "string",
        "integer" | "int" | "int32" | "int64" | "long" => "integer",
        "number" | "float" | "double" | "decimal" => "number",
        "boolean" | "bool" => "boolean",
        "array" | "list" => "array",
        "object" | "dict" | "map" => "object",
        "null" => "null",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::resolve::Doc;

    fn ctx(dialect: SpecVersion, root: Value) -> Ctx {
        Ctx::new(
            dialect,
            Doc {
                name: "t.yaml".into(),
                dir: None,
                root,
            },
        )
    }

    fn conv(dialect: SpecVersion, schema: Value) -> Value {
        let mut c = ctx(dialect, json!({}));
        c.convert_schema(0, &schema, &Ptr::Root(""), 0).unwrap()
    }

    #[test]
    fn nullable_adds_null_to_type() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"type": "string", "nullable": true}),
        );
        assert_eq!(out, json!({"type": ["string", "null"]}));
    }

    #[test]
    fn loose_type_names_are_read_as_meant() {
        assert_eq!(json_type_name("int"), Some("integer"));
        assert_eq!(json_type_name("Bool"), Some("boolean"));
        assert_eq!(json_type_name("float"), Some("number"));
        assert_eq!(json_type_name("whatever"), None);
    }

    #[test]
    fn nullable_enum_gets_null_member() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"type": "string", "enum": ["a", "b"], "nullable": true}),
        );
        assert_eq!(out["enum"], json!(["a", "b", null]));
        assert_eq!(out["type"], json!(["string", "null"]));
    }

    #[test]
    fn nullable_without_type_is_wrapped() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"allOf": [{"type": "object"}], "nullable": true}),
        );
        assert_eq!(
            out,
            json!({"anyOf": [{"allOf": [{"type": "object"}]}, {"type": "null"}]})
        );
    }

    #[test]
    fn nullable_and_boolean_bounds_in_31_mean_what_they_say() {
        let out = conv(
            SpecVersion::OpenApi31,
            json!({"type": ["string", "null"], "nullable": true}),
        );
        assert_eq!(out, json!({"type": ["string", "null"]}));
        let out = conv(
            SpecVersion::OpenApi31,
            json!({"type": "integer", "nullable": true, "minimum": 0, "exclusiveMinimum": true}),
        );
        assert_eq!(
            out,
            json!({"type": ["integer", "null"], "exclusiveMinimum": 0})
        );
    }

    #[test]
    fn unusable_patterns_and_base_changing_keywords_are_dropped() {
        let out = conv(
            SpecVersion::OpenApi31,
            json!({"type": "string", "pattern": "[a-z]{1-70}", "$id": "x", "$recursiveAnchor": true}),
        );
        assert_eq!(out, json!({"type": "string"}));
        let out = conv(SpecVersion::OpenApi30, json!({"pattern": "^(?!x)\\d+$"}));
        assert_eq!(out, json!({"pattern": "^(?!x)\\d+$"}));
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"pattern": "^[A-Z]{2}\\-\\d+$"}),
        );
        assert!(out.get("pattern").is_some());
    }

    #[test]
    fn x_nullable_in_swagger() {
        let out = conv(
            SpecVersion::Swagger2,
            json!({"type": "integer", "x-nullable": true}),
        );
        assert_eq!(out, json!({"type": ["integer", "null"]}));
    }

    #[test]
    fn boolean_exclusive_bounds_become_numbers() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"type": "number", "minimum": 1, "exclusiveMinimum": true,
                   "maximum": 9, "exclusiveMaximum": false}),
        );
        assert_eq!(
            out,
            json!({"type": "number", "exclusiveMinimum": 1, "maximum": 9})
        );
    }

    #[test]
    fn numeric_exclusive_bounds_stay_in_31() {
        let out = conv(SpecVersion::OpenApi31, json!({"exclusiveMinimum": 0}));
        assert_eq!(out, json!({"exclusiveMinimum": 0}));
    }

    #[test]
    fn example_becomes_examples_and_file_becomes_binary() {
        let out = conv(
            SpecVersion::Swagger2,
            json!({"type": "file", "example": "x"}),
        );
        assert_eq!(
            out,
            json!({"type": "string", "format": "binary", "examples": ["x"]})
        );
    }

    #[test]
    fn invalid_members_are_dropped() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"type": "object", "properties": {"a": {"type": "string", "required": true, "minLength": "3"}}}),
        );
        assert_eq!(out["properties"]["a"], json!({"type": "string"}));
    }

    #[test]
    fn repeated_required_names_are_kept_once() {
        let out = conv(
            SpecVersion::OpenApi31,
            json!({"required": ["a", "b", "a"], "type": ["string", "string"]}),
        );
        assert_eq!(out, json!({"required": ["a", "b"], "type": ["string"]}));
    }

    #[test]
    fn tuple_items_become_prefix_items() {
        let out = conv(
            SpecVersion::OpenApi30,
            json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
        );
        assert_eq!(
            out["prefixItems"],
            json!([{"type": "string"}, {"type": "integer"}])
        );
        assert!(out.get("items").is_none());
    }

    #[test]
    fn refs_are_rewritten_and_recursion_is_a_cycle() {
        let root = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                "parent": {"$ref": "#/components/schemas/Node", "nullable": true}
            }}
        }}});
        let mut c = ctx(SpecVersion::OpenApi30, root);
        let out = c
            .convert_schema(
                0,
                &json!({"$ref": "#/components/schemas/Node"}),
                &Ptr::Root(""),
                0,
            )
            .unwrap();
        c.drain();
        assert_eq!(out, json!({"$ref": "#/$defs/Node"}));
        let set = c.schema_set();
        assert_eq!(set.defs.len(), 1);
        let node = &set.defs["Node"];
        assert_eq!(
            node["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(
            node["properties"]["parent"],
            json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
        );
    }

    #[test]
    fn content_free_chain_is_refused() {
        let root = json!({"components": {"schemas": {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"}
        }}});
        let mut c = ctx(SpecVersion::OpenApi30, root);
        let err = c
            .convert_schema(
                0,
                &json!({"$ref": "#/components/schemas/A"}),
                &Ptr::Root("/x"),
                0,
            )
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, SpecError::Reference { .. }));
        assert!(
            text.starts_with("t.yaml: /x/$ref: reference chain has no content"),
            "{text}"
        );
        assert!(
            text.contains("#/components/schemas/A → #/components/schemas/B"),
            "{text}"
        );
    }

    #[test]
    fn dangling_ref_names_file_and_pointer() {
        let mut c = ctx(SpecVersion::OpenApi30, json!({}));
        let err = c
            .convert_schema(
                0,
                &json!({"properties": {"a": {"$ref": "#/components/schemas/Missing"}}}),
                &Ptr::Root("/components/schemas/Top"),
                0,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.yaml: /components/schemas/Top/properties/a/$ref: reference `#/components/schemas/Missing` does not resolve"
        );
    }

    #[test]
    fn chain_through_an_alias_lands_on_content() {
        let root = json!({"definitions": {
            "Alias": {"$ref": "#/definitions/Real"},
            "Real": {"type": "integer"}
        }});
        let mut c = ctx(SpecVersion::Swagger2, root);
        let out = c
            .convert_schema(
                0,
                &json!({"$ref": "#/definitions/Alias"}),
                &Ptr::Root(""),
                0,
            )
            .unwrap();
        c.drain();
        assert_eq!(out, json!({"$ref": "#/$defs/Real"}));
    }

    #[test]
    fn odd_names_become_safe_keys() {
        let root = json!({"components": {"schemas": {"a b/c": {"type": "string"}, "a_b_c": {}}}});
        let mut c = ctx(SpecVersion::OpenApi31, root);
        let one = c
            .convert_schema(
                0,
                &json!({"$ref": "#/components/schemas/a%20b~1c"}),
                &Ptr::Root(""),
                0,
            )
            .unwrap();
        let two = c
            .convert_schema(
                0,
                &json!({"$ref": "#/components/schemas/a_b_c"}),
                &Ptr::Root(""),
                0,
            )
            .unwrap();
        assert_eq!(one, json!({"$ref": "#/$defs/a_b_c"}));
        assert_eq!(two, json!({"$ref": "#/$defs/a_b_c_2"}));
    }

    #[test]
    fn nothing_producing_schemas() {
        let set = crate::spec::model::SchemaSet::default();
        assert!(produces_nothing(&json!(false), &set));
        assert!(produces_nothing(&json!({"not": {}}), &set));
        assert!(produces_nothing(&json!({"enum": []}), &set));
        assert!(!produces_nothing(&json!({"type": "string"}), &set));
    }
}
