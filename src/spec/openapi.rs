//! OpenAPI 3.0 and 3.1 operations: parameters, request bodies, responses, servers.
//!
//! Depends on nothing else in probe but `model::Location`.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::error::SpecError;
use super::model::*;
use super::resolve::{Ctx, Doc, Ptr};
use super::{operation_head, path_of_url, Draft, Site};

/// An object after following its `$ref`, with where it lives. An inline object is
/// borrowed and a reference target read in place through its pointer, never copied: big
/// documents have many big objects.
pub(crate) struct Resolved<'a> {
    pub doc: usize,
    pub pointer: String,
    place: Place<'a>,
}

enum Place<'a> {
    Inline(&'a Value),
    Target(Rc<Doc>),
}

static NULL: Value = Value::Null;

impl<'a> Resolved<'a> {
    pub fn inline(doc: usize, pointer: String, value: &'a Value) -> Resolved<'a> {
        Resolved {
            doc,
            pointer,
            place: Place::Inline(value),
        }
    }
    pub fn value(&self) -> &Value {
        match &self.place {
            Place::Inline(v) => v,
            Place::Target(holder) => holder.root.pointer(&self.pointer).unwrap_or(&NULL),
        }
    }
}

/// Follows a non-schema reference (parameter, response, request body, header, example);
/// an inline object is returned as is.
pub(crate) fn resolve_object<'a>(
    ctx: &mut Ctx,
    doc: usize,
    value: &'a Value,
    at: &Ptr,
) -> Result<Resolved<'a>, SpecError> {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let (d, p) = ctx.follow(doc, reference, &at.key("$ref"), false)?;
            Ok(Resolved {
                doc: d,
                pointer: p,
                place: Place::Target(ctx.doc(d)),
            })
        }
        None => Ok(Resolved::inline(doc, at.to_string(), value)),
    }
}

/// Path-level then operation-level parameter objects, merged on (name, in), operation
/// winning; header names compare case-insensitively.
pub(crate) fn merged_parameters<'a>(
    ctx: &mut Ctx,
    site: &Site<'a>,
) -> Result<Vec<Resolved<'a>>, SpecError> {
    let mut out: Vec<Resolved<'a>> = Vec::new();
    let mut identities: HashMap<(String, String), usize> = HashMap::new();
    for (holder, holder_ptr) in [(site.item, site.item_ptr), (site.op, site.op_ptr)] {
        let Some(list) = holder.get("parameters").and_then(Value::as_array) else {
            continue;
        };
        let list_ptr = holder_ptr.key("parameters");
        for (i, p) in list.iter().enumerate() {
            let r = resolve_object(ctx, site.doc, p, &list_ptr.idx(i))?;
            let identity = param_identity(r.value());
            match identities.get(&identity) {
                Some(&j) => out[j] = r,
                None => {
                    identities.insert(identity, out.len());
                    out.push(r);
                }
            }
        }
    }
    Ok(out)
}

fn param_identity(p: &Value) -> (String, String) {
    let location = p
        .get("in")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = p.get("name").and_then(Value::as_str).unwrap_or("");
    let name = if location == "header" {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    };
    (name, location)
}

pub(crate) fn parse_location(s: &str) -> Option<Location> {
    match s {
        "path" => Some(Location::Path),
        "query" => Some(Location::Query),
        "header" => Some(Location::Header),
        "cookie" => Some(Location::Cookie),
        _ => None,
    }
}

/// The default style of a location, and whether it explodes by default.
pub(crate) fn default_style(location: Location) -> ParameterStyle {
    match location {
        Location::Query | Location::Cookie => ParameterStyle::Form,
        Location::Path | Location::Header => ParameterStyle::Simple,
    }
}

fn parse_style(s: &str) -> Option<ParameterStyle> {
    Some(match s {
        "matrix" => ParameterStyle::Matrix,
        "label" => ParameterStyle::Label,
        "form" => ParameterStyle::Form,
        "simple" => ParameterStyle::Simple,
        "spaceDelimited" => ParameterStyle::SpaceDelimited,
        "pipeDelimited" => ParameterStyle::PipeDelimited,
        "deepObject" => ParameterStyle::DeepObject,
        _ => return None,
    })
}

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

fn fill(ctx: &mut Ctx, site: &Site, op: &mut Operation) -> Result<(), String> {
    let e = |e: SpecError| e.to_string();
    for r in merged_parameters(ctx, site).map_err(e)? {
        if let Some(p) = parameter(ctx, &r)? {
            op.parameters.push(p);
        }
    }
    if let Some(body) = site.op.get("requestBody") {
        let at = site.op_ptr.key("requestBody");
        let r = resolve_object(ctx, site.doc, body, &at).map_err(e)?;
        let ptr = Ptr::Root(&r.pointer);
        let content =
            media_types(ctx, r.doc, r.value().get("content"), &ptr.key("content")).map_err(e)?;
        op.request_body = Some(RequestBody {
            required: r.value().get("required") == Some(&Value::Bool(true)),
            content,
        });
    }
    if let Some(responses) = site.op.get("responses").and_then(Value::as_object) {
        let at = site.op_ptr.key("responses");
        for (code, response) in responses {
            let Some(status) = parse_status(code) else {
                continue;
            };
            let r = resolve_object(ctx, site.doc, response, &at.key(code)).map_err(e)?;
            let ptr = Ptr::Root(&r.pointer);
            let content = media_types(ctx, r.doc, r.value().get("content"), &ptr.key("content"))
                .map_err(e)?;
            let headers =
                headers(ctx, r.doc, r.value().get("headers"), &ptr.key("headers")).map_err(e)?;
            let links = links(ctx, r.doc, r.value().get("links"), &ptr.key("links")).map_err(e)?;
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
                links,
            });
        }
    }
    sort_responses(&mut op.responses);
    Ok(())
}

/// A response's `links` (each may be a `$ref` to `components/links`). A link that names no
/// target, or only constants, is left out: it says nothing probe can use.
fn links(
    ctx: &mut Ctx,
    doc: usize,
    value: Option<&Value>,
    at: &Ptr,
) -> Result<Vec<Link>, SpecError> {
    let Some(map) = value.and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, link) in map {
        let r = resolve_object(ctx, doc, link, &at.key(name))?;
        let v = r.value();
        let target = match (
            v.get("operationId").and_then(Value::as_str),
            v.get("operationRef").and_then(Value::as_str),
        ) {
            (Some(id), _) => LinkTarget::OperationId(id.to_owned()),
            // A local reference (`#/paths/...`); one into another file is not followed.
            (None, Some(reference)) if reference.starts_with("#/") => {
                LinkTarget::Pointer(reference[1..].to_owned())
            }
            _ => continue,
        };
        let parameters: Vec<(String, String)> = v
            .get("parameters")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(p, expression)| {
                let expression = expression.as_str().filter(|e| e.starts_with('$'))?;
                // `path.id` names the location too.
                let p = ["path.", "query.", "header.", "cookie."]
                    .iter()
                    .find_map(|l| p.strip_prefix(l))
                    .unwrap_or(p);
                Some((p.to_owned(), expression.to_owned()))
            })
            .collect();
        if !parameters.is_empty() {
            out.push(Link {
                name: name.clone(),
                target,
                parameters,
            });
        }
    }
    Ok(out)
}

/// Exact statuses first, then ranges, then `default`; document order within each.
pub(crate) fn sort_responses(responses: &mut [Response]) {
    responses.sort_by_key(|r| match r.status {
        StatusPattern::Exact(_) => 0,
        StatusPattern::Range(_) => 1,
        StatusPattern::Default => 2,
    });
}

/// `200`, `4XX` (any case), `default`; anything else is not a status and is ignored.
pub(crate) fn parse_status(code: &str) -> Option<StatusPattern> {
    let code = code.trim();
    if code.eq_ignore_ascii_case("default") {
        return Some(StatusPattern::Default);
    }
    let bytes = code.as_bytes();
    if bytes.len() == 3
        && bytes[1..].eq_ignore_ascii_case(b"xx")
        && (b'1'..=b'5').contains(&bytes[0])
    {
        return Some(StatusPattern::Range(bytes[0] - b'0'));
    }
    match code.parse::<u16>() {
        Ok(n) if (100..=599).contains(&n) => Some(StatusPattern::Exact(n)),
        _ => None,
    }
}

/// One parameter; `None` for a parameter probe does not send (an unknown location, or the
/// `Accept`/`Content-Type`/`Authorization` headers, which OpenAPI says to ignore).
fn parameter(ctx: &mut Ctx, r: &Resolved) -> Result<Option<Parameter>, String> {
    let doc_name = ctx.docs[r.doc].name.clone();
    let ptr = Ptr::Root(&r.pointer);
    let p = r.value();
    let Some(name) = p.get("name").and_then(Value::as_str) else {
        return Err(
            SpecError::structure(&doc_name, ptr, "parameter has no `name`".into()).to_string(),
        );
    };
    let written = p.get("in").and_then(Value::as_str).unwrap_or("");
    let required = p.get("required") == Some(&Value::Bool(true));
    let Some(location) = parse_location(written) else {
        if required {
            return Err(SpecError::structure(
                &doc_name,
                ptr.key("in"),
                format!("required parameter `{name}` has unknown location `{written}`"),
            )
            .to_string());
        }
        return Ok(None);
    };
    if location == Location::Header
        && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok(None);
    }
    let style = p
        .get("style")
        .and_then(Value::as_str)
        .and_then(parse_style)
        .unwrap_or_else(|| default_style(location));
    let explode = p
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == ParameterStyle::Form);
    let schema = if let Some(s) = p.get("schema") {
        ctx.convert_schema(r.doc, s, &ptr.key("schema"), 0)
            .map_err(|e| e.to_string())?
    } else if let Some(content) = p.get("content").and_then(Value::as_object) {
        // A parameter with `content` is sent serialised as that media type; its schema is
        // what the value must satisfy.
        match content.iter().next() {
            Some((mt, m)) => match m.get("schema") {
                Some(s) => {
                    let c = ptr.key("content");
                    let c = c.key(mt);
                    ctx.convert_schema(r.doc, s, &c.key("schema"), 0)
                        .map_err(|e| e.to_string())?
                }
                None => Value::Bool(true),
            },
            None => Value::Bool(true),
        }
    } else {
        Value::Bool(true)
    };
    let examples = examples(ctx, r.doc, p, &ptr);
    Ok(Some(Parameter {
        name: name.to_string(),
        location,
        required: required || location == Location::Path,
        style,
        explode,
        schema,
        examples,
        deprecated: p.get("deprecated") == Some(&Value::Bool(true)),
    }))
}

/// `example`, then the values of `examples` (references followed; unusable ones skipped:
/// an example is a help, never a reason to refuse an operation).
fn examples(ctx: &mut Ctx, doc: usize, holder: &Value, at: &Ptr) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(e) = holder.get("example") {
        out.push(e.clone());
    }
    if let Some(map) = holder.get("examples").and_then(Value::as_object) {
        let base = at.key("examples");
        for (name, e) in map {
            if let Ok(r) = resolve_object(ctx, doc, e, &base.key(name)) {
                if let Some(v) = r.value().get("value") {
                    out.push(v.clone());
                }
            }
        }
    }
    out
}

/// A `content` map into media types, document order.
fn media_types(
    ctx: &mut Ctx,
    doc: usize,
    content: Option<&Value>,
    at: &Ptr,
) -> Result<Vec<MediaType>, SpecError> {
    let mut out = Vec::new();
    let Some(content) = content.and_then(Value::as_object) else {
        return Ok(out);
    };
    for (media_type, m) in content {
        let here = at.key(media_type);
        let schema = match m.get("schema") {
            Some(s) => ctx.convert_schema(doc, s, &here.key("schema"), 0)?,
            None => Value::Bool(true),
        };
        let examples = examples(ctx, doc, m, &here);
        out.push(MediaType {
            media_type: media_type.clone(),
            schema,
            examples,
        });
    }
    Ok(out)
}

fn headers(
    ctx: &mut Ctx,
    doc: usize,
    headers: Option<&Value>,
    at: &Ptr,
) -> Result<Vec<ResponseHeader>, SpecError> {
    let mut out = Vec::new();
    let Some(map) = headers.and_then(Value::as_object) else {
        return Ok(out);
    };
    for (name, h) in map {
        let r = resolve_object(ctx, doc, h, &at.key(name))?;
        let ptr = Ptr::Root(&r.pointer);
        let schema = if let Some(s) = r.value().get("schema") {
            ctx.convert_schema(r.doc, s, &ptr.key("schema"), 0)?
        } else if let Some(m) =
            media_types(ctx, r.doc, r.value().get("content"), &ptr.key("content"))?
                .into_iter()
                .next()
        {
            m.schema
        } else {
            Value::Bool(true)
        };
        out.push(ResponseHeader {
            name: name.clone(),
            required: r.value().get("required") == Some(&Value::Bool(true)),
            schema,
        });
    }
    Ok(out)
}

/// `servers[].url` with `{variables}` replaced by their defaults, and the first one's path.
pub(crate) fn servers(root: &Value) -> (Vec<String>, String) {
    let mut out = Vec::new();
    for server in root
        .get("servers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let Some(url) = server.get("url").and_then(Value::as_str) else {
            continue;
        };
        let mut url = url.to_string();
        if let Some(vars) = server.get("variables").and_then(Value::as_object) {
            for (name, var) in vars {
                let default = var
                    .get("default")
                    .map(super::scalar_text)
                    .unwrap_or_default();
                url = url.replace(&format!("{{{name}}}"), &default);
            }
        }
        out.push(url);
    }
    let base = out.first().map(|u| path_of_url(u)).unwrap_or_default();
    (out, base)
}
