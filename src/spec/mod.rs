//! The OpenAPI loader: Swagger 2.0, OpenAPI 3.0 and 3.1, YAML or JSON, from a file or an
//! http(s) URL, into the operation model of [`model`].
//!
//! - [`load`] (files and URLs): reads the bytes; parsing: JSON or YAML into one value;
//! - [`resolve`]: `$ref` across files, the shared-schema set, the memo that turns recursion
//!   into cycles, refusal of dangling references and content-free chains;
//! - [`convert`]: every dialect's schemas into JSON Schema 2020-12;
//! - [`openapi`] and [`swagger`]: operations, parameters, bodies, responses of each dialect;
//! - this file: version detection, the walk over `paths`, servers, security, and the final
//!   testable/skipped verdict of each operation.
//!
//! An operation that cannot be tested is listed in [`Api::skipped`] with the reason and the
//! rest loads; only a document that cannot be used at all is an error. Every walk is bounded
//! (schema depth, reference chain length) and every reference is resolved once, so no
//! document can make the loader panic or hang.
//!
//! Depends on nothing else in probe but `model::Location`.

mod convert;
mod error;
mod load;
mod openapi;
mod resolve;
mod swagger;

pub mod model;

pub use error::SpecError;
pub use model::*;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use serde_json::Value;

use resolve::{Base, Ctx, Doc, Ptr, StoredBase};

/// A loaded document: the model, and the main document exactly as read (for the store).
#[derive(Clone, Debug)]
pub struct LoadedDocument {
    pub api: Api,
    pub bytes: Vec<u8>,
    pub source: String,
    /// Every other file its references reached, exactly as read, by key: the path relative
    /// to the main document's directory (`/`-separated, `..` for files beside it), or the
    /// URL of a fetched one. With these, [`parse_with_documents`] rebuilds the same model
    /// without reading or fetching anything.
    pub documents: BTreeMap<String, Vec<u8>>,
}

/// Loads a document from a file path or an `http://`/`https://` URL. Safe to call from
/// inside or outside a tokio runtime (a fetch runs on a thread of its own).
pub fn load(source: &str) -> Result<LoadedDocument, SpecError> {
    if load::is_url(source) {
        let bytes = load::fetch_blocking(source)?;
        return finish_load(bytes, source, url_base(source));
    }
    let path = Path::new(source);
    let bytes = load::read_file(path)?;
    finish_load(bytes, source, Some(Base::Dir(load::dir_of(path))))
}

/// [`load`] for callers already inside a tokio runtime.
pub async fn load_async(source: &str) -> Result<LoadedDocument, SpecError> {
    if load::is_url(source) {
        let bytes = load::fetch(source).await?;
        // References to other documents are fetched as the walk meets them, each on a
        // thread of its own (the walk is synchronous).
        return finish_load(bytes, source, url_base(source));
    }
    let path = Path::new(source);
    let bytes = load::read_file(path)?;
    finish_load(bytes, source, Some(Base::Dir(load::dir_of(path))))
}

fn url_base(source: &str) -> Option<Base> {
    url::Url::parse(source).ok().map(Base::Url)
}

fn finish_load(
    bytes: Vec<u8>,
    source: &str,
    base: Option<Base>,
) -> Result<LoadedDocument, SpecError> {
    let (api, documents) = parse_collecting(&bytes, source, base)?;
    Ok(LoadedDocument {
        api,
        bytes,
        source: source.to_string(),
        documents,
    })
}

/// Parses a document (YAML or JSON). `source` names it in messages; references to other
/// files are resolved against `base_dir` (none: such references make their operations
/// skipped).
pub fn parse(bytes: &[u8], source: &str, base_dir: Option<&Path>) -> Result<Api, SpecError> {
    parse_with_base(bytes, source, base_dir.map(|d| Base::Dir(d.to_path_buf())))
}

/// Parses a document whose other files were kept (a stored run's): references resolve
/// among `documents` ([`LoadedDocument::documents`] keys) and nothing is read or fetched.
pub fn parse_with_documents(
    bytes: &[u8],
    source: &str,
    documents: BTreeMap<String, Vec<u8>>,
) -> Result<Api, SpecError> {
    let base = match url::Url::parse(source) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => StoredBase::Url(url),
        _ => StoredBase::Dir(String::new()),
    };
    parse_with_base(bytes, source, Some(Base::Stored(base, Rc::new(documents))))
}

/// A stored run's document: from its stored files when it has any
/// ([`parse_with_documents`]), else as [`parse`] with `base_dir` (runs stored before their
/// files were).
pub fn parse_stored(
    bytes: &[u8],
    source: &str,
    documents: BTreeMap<String, Vec<u8>>,
    base_dir: Option<&Path>,
) -> Result<Api, SpecError> {
    if documents.is_empty() {
        parse(bytes, source, base_dir)
    } else {
        parse_with_documents(bytes, source, documents)
    }
}

fn parse_with_base(bytes: &[u8], source: &str, base: Option<Base>) -> Result<Api, SpecError> {
    parse_collecting(bytes, source, base).map(|(api, _)| api)
}

fn parse_collecting(
    bytes: &[u8],
    source: &str,
    base: Option<Base>,
) -> Result<(Api, BTreeMap<String, Vec<u8>>), SpecError> {
    let root = load::parse_value(bytes, source)?;
    let dialect = detect_version(&root, source)?;
    let paths_ok = match root.get("paths") {
        Some(Value::Object(_)) => true,
        None if dialect == SpecVersion::OpenApi31 => true,
        None => false,
        Some(other) => {
            return Err(SpecError::structure(
                source,
                "/paths",
                format!("expected an object, found {}", kind(other)),
            ))
        }
    };
    if !paths_ok {
        return Err(SpecError::structure(
            source,
            "/paths",
            "missing; an OpenAPI document lists its operations there".into(),
        ));
    }
    let mut ctx = Ctx::new(
        dialect,
        Doc {
            name: source.to_string(),
            dir: base,
            root,
        },
    );
    let main = ctx.doc(0);
    let root = &main.root;
    let security_schemes = security_schemes(&mut ctx, root);
    let default_security = root.get("security").map(requirement_of).unwrap_or_default();
    let drafts = walk_paths(&mut ctx, root, &default_security);
    let default_security = default_security.names;
    let (servers, base_path) = match dialect {
        SpecVersion::Swagger2 => swagger::servers(root),
        _ => openapi::servers(root),
    };
    let broken = ctx.broken();
    let schemas = ctx.schema_set();
    let files = std::mem::take(&mut ctx.files);
    let mut operations = Vec::new();
    let mut skipped = Vec::new();
    for draft in drafts {
        let reason = draft.problem.clone().or_else(|| {
            draft
                .refs
                .iter()
                .find_map(|&i| broken.get(i).cloned().flatten())
                .or_else(|| untestable(&draft.op, &schemas))
        });
        match reason {
            Some(reason) => skipped.push(SkippedOperation {
                key: draft.op.key,
                pointer: draft.op.pointer,
                reason,
            }),
            None => operations.push(draft.op),
        }
    }
    let info = root.get("info");
    let api = Api {
        title: info
            .and_then(|i| i.get("title"))
            .map(scalar_text)
            .unwrap_or_default(),
        version: info
            .and_then(|i| i.get("version"))
            .map(scalar_text)
            .unwrap_or_default(),
        spec_version: dialect,
        servers,
        base_path,
        operations,
        skipped,
        schemas,
        security_schemes,
        default_security,
    };
    Ok((api, files))
}

/// The dialect, from `openapi` or `swagger`.
fn detect_version(root: &Value, source: &str) -> Result<SpecVersion, SpecError> {
    let version_error = |pointer: &str, message: String| SpecError::Version {
        file: source.to_string(),
        pointer: pointer.to_string(),
        message,
    };
    let Some(map) = root.as_object() else {
        return Err(SpecError::structure(
            source,
            "",
            format!(
                "expected an object with `openapi` or `swagger`, found {}",
                kind(root)
            ),
        ));
    };
    if let Some(v) = map.get("openapi") {
        let text = scalar_text(v);
        let mut parts = text.split('.');
        let major = parts.next().unwrap_or("");
        let minor = parts.next().unwrap_or("");
        return match (major, minor) {
            ("3", "0") => Ok(SpecVersion::OpenApi30),
            ("3", "1") => Ok(SpecVersion::OpenApi31),
            _ => Err(version_error(
                "/openapi",
                format!(
                    "unsupported version `{text}`; probe reads Swagger 2.0 and OpenAPI 3.0 and 3.1"
                ),
            )),
        };
    }
    if let Some(v) = map.get("swagger") {
        let text = scalar_text(v);
        return match text.as_str() {
            "2.0" | "2" => Ok(SpecVersion::Swagger2),
            _ => Err(version_error(
                "/swagger",
                format!(
                    "unsupported version `{text}`; probe reads Swagger 2.0 and OpenAPI 3.0 and 3.1"
                ),
            )),
        };
    }
    Err(version_error(
        "/",
        "the top level has neither `openapi` nor `swagger`; this is not an OpenAPI document".into(),
    ))
}

/// An operation in the making, with the shared schemas it refers to directly.
pub(crate) struct Draft {
    pub op: Operation,
    pub refs: Vec<usize>,
    pub problem: Option<String>,
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One operation's place in the document.
pub(crate) struct Site<'a> {
    pub path: &'a str,
    pub method: &'a str,
    /// The document the path item lives in (another file for a `$ref`'d path item).
    pub doc: usize,
    pub item: &'a Value,
    pub item_ptr: &'a Ptr<'a>,
    pub op: &'a Value,
    pub op_ptr: &'a Ptr<'a>,
}

fn walk_paths(ctx: &mut Ctx, root: &Value, default_security: &Requirement) -> Vec<Draft> {
    let mut drafts = Vec::new();
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        return drafts;
    };
    let paths_ptr = Ptr::Root("/paths");
    for (path, item) in paths {
        if path.starts_with("x-") {
            continue;
        }
        let written_ptr = paths_ptr.key(path);
        // A path item may itself be a reference (3.x `pathItems`, or another file).
        let doc;
        let item_ptr_text;
        let holder;
        let item = match item.get("$ref").and_then(Value::as_str) {
            Some(reference) => match ctx.follow(0, reference, &written_ptr.key("$ref"), false) {
                Ok((d, p)) => {
                    holder = ctx.doc(d);
                    doc = d;
                    item_ptr_text = p.clone();
                    match holder.root.pointer(&p) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                Err(e) => {
                    drafts.push(path_failure(path, &written_ptr, e.to_string()));
                    continue;
                }
            },
            None => {
                doc = 0;
                item_ptr_text = written_ptr.to_string();
                item
            }
        };
        let item_ptr = Ptr::Root(&item_ptr_text);
        let Some(map) = item.as_object() else {
            continue;
        };
        for (method, op) in map {
            if !METHODS.contains(&method.as_str()) || !op.is_object() {
                continue;
            }
            let op_ptr = item_ptr.key(method);
            let site = Site {
                path,
                method,
                doc,
                item,
                item_ptr: &item_ptr,
                op,
                op_ptr: &op_ptr,
            };
            ctx.refs_out.clear();
            let mut draft = match ctx.dialect {
                SpecVersion::Swagger2 => swagger::operation(ctx, &site, default_security),
                _ => openapi::operation(ctx, &site, default_security),
            };
            // The pointer is that of the operation as written under `paths`.
            draft.op.pointer = written_ptr.key(method).to_string();
            draft.refs = std::mem::take(&mut ctx.refs_out);
            ctx.drain();
            drafts.push(draft);
        }
    }
    drafts
}

/// A path item whose reference cannot be followed: one skipped entry stands for all its
/// operations, which cannot be known.
fn path_failure(path: &str, at: &Ptr, reason: String) -> Draft {
    Draft {
        op: bare_operation(None, "*", path, at.to_string()),
        refs: Vec::new(),
        problem: Some(reason),
    }
}

/// An operation with nothing but its identity.
pub(crate) fn bare_operation(
    id: Option<String>,
    method: &str,
    path: &str,
    pointer: String,
) -> Operation {
    Operation {
        key: OperationKey {
            id,
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
        },
        summary: None,
        tags: Vec::new(),
        parameters: Vec::new(),
        request_body: None,
        responses: Vec::new(),
        security: Vec::new(),
        security_optional: false,
        deprecated: false,
        pointer,
    }
}

/// The identity and plain fields every dialect shares.
pub(crate) fn operation_head(site: &Site, default_security: &Requirement) -> Operation {
    let op = site.op;
    let id = op
        .get("operationId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut out = bare_operation(id, site.method, site.path, site.op_ptr.to_string());
    out.summary = op
        .get("summary")
        .and_then(Value::as_str)
        .map(str::to_string);
    out.tags = op
        .get("tags")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    out.deprecated = op.get("deprecated") == Some(&Value::Bool(true));
    // The effective requirement: the operation's own (`[]` = none), else the document's.
    let requirement = match op.get("security") {
        Some(list) => requirement_of(list),
        None => default_security.clone(),
    };
    out.security = requirement.names;
    out.security_optional = requirement.optional;
    out
}

/// A security requirement list as probe reads it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Requirement {
    /// The scheme names, in order, each once.
    pub names: Vec<String>,
    /// Whether one requirement is empty (`{}`): anyone may call.
    pub optional: bool,
}

fn requirement_of(list: &Value) -> Requirement {
    let mut out = Requirement::default();
    for requirement in list.as_array().map(Vec::as_slice).unwrap_or_default() {
        if let Some(map) = requirement.as_object() {
            out.optional |= map.is_empty();
            for name in map.keys() {
                if !out.names.contains(name) {
                    out.names.push(name.clone());
                }
            }
        }
    }
    out
}

/// Security schemes of `components.securitySchemes` (3.x) or `securityDefinitions` (2.0).
/// Schemes probe cannot supply credentials for (digest, mutual TLS) are left out.
fn security_schemes(
    ctx: &mut Ctx,
    root: &Value,
) -> std::collections::BTreeMap<String, SecurityScheme> {
    let mut out = std::collections::BTreeMap::new();
    let (defs, ptr) = match ctx.dialect {
        SpecVersion::Swagger2 => (root.get("securityDefinitions"), "/securityDefinitions"),
        _ => (
            root.get("components")
                .and_then(|c| c.get("securitySchemes")),
            "/components/securitySchemes",
        ),
    };
    let Some(defs) = defs.and_then(Value::as_object) else {
        return out;
    };
    let base = Ptr::Root(ptr);
    for (name, scheme) in defs {
        let holder;
        let scheme = match scheme.get("$ref").and_then(Value::as_str) {
            Some(r) => match ctx.follow(0, r, &base.key(name), false) {
                Ok((d, p)) => {
                    holder = ctx.doc(d);
                    match holder.root.pointer(&p) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                Err(_) => continue,
            },
            None => scheme,
        };
        let text = |k: &str| scheme.get(k).and_then(Value::as_str).unwrap_or("");
        let parsed = match text("type") {
            "http" => match text("scheme").to_ascii_lowercase().as_str() {
                "bearer" => Some(SecurityScheme::Bearer),
                "basic" => Some(SecurityScheme::Basic),
                _ => None,
            },
            "basic" => Some(SecurityScheme::Basic),
            "oauth2" | "openIdConnect" => Some(SecurityScheme::Bearer),
            "apiKey" => {
                let location = match text("in") {
                    "header" => Some(Location::Header),
                    "query" => Some(Location::Query),
                    "cookie" => Some(Location::Cookie),
                    _ => None,
                };
                location.map(|location| SecurityScheme::ApiKey {
                    location,
                    name: text("name").to_string(),
                })
            }
            _ => None,
        };
        if let Some(s) = parsed {
            out.insert(name.clone(), s);
        }
    }
    out
}

/// Why a built operation cannot be tested, if it cannot: a path parameter of the template
/// that is not declared, or a required value no schema can produce.
fn untestable(op: &Operation, schemas: &SchemaSet) -> Option<String> {
    for name in template_names(&op.key.path) {
        if !op
            .parameters
            .iter()
            .any(|p| p.location == Location::Path && p.name == name)
        {
            let hint = if op.key.path.contains('?') {
                " (the path holds a query string, which OpenAPI does not allow)"
            } else {
                ""
            };
            return Some(format!("path parameter `{{{name}}}` is not declared{hint}"));
        }
    }
    for p in &op.parameters {
        if p.required && convert::produces_nothing(&p.schema, schemas) {
            return Some(format!(
                "required {} parameter `{}` has a schema no value satisfies",
                p.location.as_str(),
                p.name
            ));
        }
    }
    if let Some(body) = &op.request_body {
        if body.required
            && !body.content.is_empty()
            && body
                .content
                .iter()
                .all(|m| convert::produces_nothing(&m.schema, schemas))
        {
            return Some("the required request body has a schema no value satisfies".into());
        }
    }
    None
}

/// `{name}` segments of a path template.
pub(crate) fn template_names(path: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                names.push(&after[..close]);
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    names
}

/// The path part of a server URL, without a trailing `/`: `/v1` for
/// `https://api.example.com/v1/`, `/v1` for `/v1`, `""` for `https://example.com`.
pub(crate) fn path_of_url(url: &str) -> String {
    let rest = match url.find("://") {
        Some(i) => {
            let after = &url[i + 3..];
            after.find('/').map(|j| &after[j..]).unwrap_or("")
        }
        None if url.starts_with("//") => url[2..].find('/').map(|j| &url[2 + j..]).unwrap_or(""),
        None => url,
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let trimmed = rest.trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}

/// A scalar as text (`version: 1.0` is a number in YAML).
pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What kind of JSON value, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
