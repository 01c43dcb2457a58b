//! Swagger 2.0 operations: `in: body` and `in: formData` become a request body,
//! `consumes`/`produces` become media types, `collectionFormat` becomes a style, a
//! parameter's inline type fields become a schema, and `host`/`basePath`/`schemes` become
//! the server.
//!
//! Depends on nothing else in probe but `model::Location`.

use serde_json::{json, Map, Value};

use super::model::*;
use super::openapi::{
    default_style, merged_parameters, parse_location, parse_status, resolve_object, sort_responses,
    Resolved,
};
use super::resolve::{Ctx, Ptr};
use super::{operation_head, path_of_url, Draft, Site};

const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";
const MULTIPART: &str = "multipart/form-data";

/// Fields of a non-body parameter (and of `items`, and of a header) that are schema fields.
const SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "enum",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
    "example",
    "$ref",
];

pub(crate) fn operation(
    ctx: &mut Ctx,
    site: &Site,
    default_security: &super::Requirement,
) -> Draft {
    let mut op = operation_head(site, default_security);
    let problem = fill(ctx, site, &mut op).err();
    Draft {
        op,
        refs: Vec::new(),
        problem,
    }
}

/// `consumes`/`produces` of the operation, else of the document.
fn media_list(site: &Site, ctx: &Ctx, field: &str) -> Vec<String> {
    let list = site
        .op
        .get(field)
        .or_else(|| ctx.docs[0].root.get(field))
        .and_then(Value::as_array);
    list.map(|l| {
        l.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

fn fill(ctx: &mut Ctx, site: &Site, op: &mut Operation) -> Result<(), String> {
    let e = |e: super::SpecError| e.to_string();
    let consumes = media_list(site, ctx, "consumes");
    let produces = media_list(site, ctx, "produces");
    let mut form: Vec<(Resolved, Value)> = Vec::new();
    for r in merged_parameters(ctx, site).map_err(e)? {
        let ptr = Ptr::Root(&r.pointer);
        let name = r.value().get("name").and_then(Value::as_str).unwrap_or("");
        let written = r.value().get("in").and_then(Value::as_str).unwrap_or("");
        let required = r.value().get("required") == Some(&Value::Bool(true));
        match written {
            "body" => {
                let schema = match r.value().get("schema") {
                    Some(s) => ctx
                        .convert_schema(r.doc, s, &ptr.key("schema"), 0)
                        .map_err(e)?,
                    None => Value::Bool(true),
                };
                let examples: Vec<Value> = r
                    .value()
                    .get("x-examples")
                    .and_then(Value::as_object)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default();
                let types = if consumes.is_empty() {
                    vec![JSON.to_string()]
                } else {
                    consumes.clone()
                };
                op.request_body = Some(RequestBody {
                    required,
                    content: types
                        .into_iter()
                        .map(|media_type| MediaType {
                            media_type,
                            schema: schema.clone(),
                            examples: examples.clone(),
                        })
                        .collect(),
                });
            }
            "formData" => {
                let schema = inline_schema(ctx, &r).map_err(e)?;
                form.push((r, schema));
            }
            _ => {
                let Some(location) = parse_location(written) else {
                    if required {
                        return Err(format!(
                            "{}: {}: required parameter `{name}` has unknown location `{written}`",
                            ctx.docs[r.doc].name,
                            ptr.key("in")
                        ));
                    }
                    continue;
                };
                if name.is_empty() {
                    return Err(format!(
                        "{}: {ptr}: parameter has no `name`",
                        ctx.docs[r.doc].name
                    ));
                }
                let schema = inline_schema(ctx, &r).map_err(e)?;
                let is_array = r.value().get("type").and_then(Value::as_str) == Some("array");
                let (style, explode) = collection_style(
                    location,
                    r.value().get("collectionFormat").and_then(Value::as_str),
                    is_array,
                );
                let examples = r.value().get("x-example").cloned().into_iter().collect();
                op.parameters.push(Parameter {
                    name: name.to_string(),
                    location,
                    required: required || location == Location::Path,
                    style,
                    explode,
                    schema,
                    examples,
                    deprecated: false,
                });
            }
        }
    }
    if !form.is_empty() && op.request_body.is_none() {
        op.request_body = Some(form_body(&form, &consumes));
    }
    if let Some(responses) = site.op.get("responses").and_then(Value::as_object) {
        let at = site.op_ptr.key("responses");
        for (code, response) in responses {
            let Some(status) = parse_status(code) else {
                continue;
            };
            let r = resolve_object(ctx, site.doc, response, &at.key(code)).map_err(e)?;
            let ptr = Ptr::Root(&r.pointer);
            let mut content = Vec::new();
            if let Some(s) = r.value().get("schema") {
                let schema = ctx
                    .convert_schema(r.doc, s, &ptr.key("schema"), 0)
                    .map_err(e)?;
                let types = if produces.is_empty() {
                    vec![JSON.to_string()]
                } else {
                    produces.clone()
                };
                let examples = r.value().get("examples").and_then(Value::as_object);
                for media_type in types {
                    let examples = examples
                        .and_then(|m| m.get(&media_type))
                        .cloned()
                        .into_iter()
                        .collect();
                    content.push(MediaType {
                        media_type,
                        schema: schema.clone(),
                        examples,
                    });
                }
            }
            let mut headers = Vec::new();
            if let Some(map) = r.value().get("headers").and_then(Value::as_object) {
                for (name, h) in map {
                    let hr = Resolved::inline(r.doc, ptr.key("headers").key(name).to_string(), h);
                    headers.push(ResponseHeader {
                        name: name.clone(),
                        // Swagger 2.0 headers cannot be required.
                        required: false,
                        schema: inline_schema(ctx, &hr).map_err(e)?,
                    });
                }
            }
            op.responses.push(Response {
                status,
                description: r
                    .value()
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                content,
                headers,
                links: Vec::new(),
            });
        }
    }
    sort_responses(&mut op.responses);
    Ok(())
}

/// The form body: one object schema with a property per `formData` parameter. Multipart
/// when a file is sent or `consumes` names only multipart; url-encoded otherwise.
fn form_body(form: &[(Resolved, Value)], consumes: &[String]) -> RequestBody {
    let has_file = form
        .iter()
        .any(|(r, _)| r.value().get("type").and_then(Value::as_str) == Some("file"));
    let names_form = consumes.iter().any(|c| c.starts_with(FORM));
    let names_multipart = consumes.iter().any(|c| c.starts_with(MULTIPART));
    let media_type = if has_file || (names_multipart && !names_form) {
        MULTIPART
    } else {
        FORM
    };
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (r, schema) in form {
        let name = r.value().get("name").and_then(Value::as_str).unwrap_or("");
        properties.insert(name.to_string(), schema.clone());
        if r.value().get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(name.to_string()));
        }
    }
    let any_required = !required.is_empty();
    let mut schema = json!({"type": "object", "properties": properties});
    if any_required {
        schema["required"] = Value::Array(required);
    }
    RequestBody {
        required: any_required,
        content: vec![MediaType {
            media_type: media_type.to_string(),
            schema,
            examples: Vec::new(),
        }],
    }
}

/// A schema from a parameter's (or header's, or items') own type fields.
fn inline_schema(ctx: &mut Ctx, r: &Resolved) -> Result<Value, super::SpecError> {
    let raw = schema_fields(r.value(), 0);
    ctx.convert_schema(r.doc, &raw, &Ptr::Root(&r.pointer), 0)
}

fn schema_fields(p: &Value, depth: usize) -> Value {
    let mut out = Map::new();
    let Some(map) = p.as_object() else {
        return Value::Bool(true);
    };
    for (k, v) in map {
        if SCHEMA_FIELDS.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if k == "items" && depth < super::convert::MAX_SCHEMA_DEPTH {
            out.insert(k.clone(), schema_fields(v, depth + 1));
        }
    }
    Value::Object(out)
}

/// `collectionFormat` into an OpenAPI 3 style: csv is the default; `tsv` has no
/// counterpart and is sent as csv would be.
fn collection_style(
    location: Location,
    format: Option<&str>,
    is_array: bool,
) -> (ParameterStyle, bool) {
    let base = default_style(location);
    if !is_array {
        return (base, base == ParameterStyle::Form);
    }
    match format.unwrap_or("csv") {
        "multi" => (ParameterStyle::Form, true),
        "ssv" => (ParameterStyle::SpaceDelimited, false),
        "pipes" => (ParameterStyle::PipeDelimited, false),
        _ => (base, false),
    }
}

/// `schemes` × `host` + `basePath`; without a host, the base path alone.
pub(crate) fn servers(root: &Value) -> (Vec<String>, String) {
    let host = root.get("host").and_then(Value::as_str).unwrap_or("");
    let base = root.get("basePath").and_then(Value::as_str).unwrap_or("");
    let base_path = path_of_url(base);
    let mut out = Vec::new();
    if !host.is_empty() {
        let mut schemes: Vec<&str> = root
            .get("schemes")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if schemes.is_empty() {
            schemes.push("https");
        }
        for scheme in schemes {
            out.push(format!("{scheme}://{host}{base_path}"));
        }
    } else if !base_path.is_empty() {
        out.push(base_path.clone());
    }
    (out, base_path)
}
