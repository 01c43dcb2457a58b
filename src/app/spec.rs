//! `probe spec <FILE|URL> [--json]`: loads a document and lists its operations, each
//! testable or skipped with the reason.
//!
//! The table is for a person: title, version, dialect, servers, one line per operation
//! (`METHOD /path  operationId  testable|skipped: reason`) and the counts.
//!
//! `--json` prints one object (stable; `version` changes only when a member's meaning does):
//! ```json
//! { "version": 1,
//!   "source": "petstore.yaml",
//!   "title": "Petstore", "api_version": "1.0.0", "dialect": "openapi-3.0",
//!   "servers": ["https://petstore.example.com/v1"], "base_path": "/v1",
//!   "operations": [ { "name": "listPets", "operation_id": "listPets", "method": "GET",
//!                     "path": "/pets", "pointer": "/paths/~1pets/get", "summary": "...",
//!                     "tags": ["pets"], "deprecated": false,
//!                     "parameters": [ {"name": "limit", "in": "query", "required": false} ],
//!                     "request_body": {"required": true, "media_types": ["application/json"]},
//!                     "responses": ["200", "4XX", "default"], "security": ["bearer"] } ],
//!   "skipped": [ { "name": "GET /x/{id}", "operation_id": null, "method": "GET",
//!                  "path": "/x/{id}", "pointer": "/paths/~1x~1{id}/get",
//!                  "reason": "path parameter `{id}` is not declared" } ],
//!   "counts": { "operations": 2, "testable": 1, "skipped": 1, "schemas": 4 } }
//! ```
//!
//! Depends on: `spec`, `cli`, `error`, `redact` (a URL's credentials).

use serde_json::{json, Value};

use crate::cli::SpecOpts;
use crate::error::CliError;

use super::Out;
use crate::redact::{self, Redactor};
use crate::spec::{self, Api, Operation, SpecVersion};

/// Version of the `--json` output.
pub const SPEC_JSON_VERSION: u32 = 1;

/// Runs `probe spec`. A document that loads is success (exit 0) even when operations are
/// skipped: the listing says which and why.
pub fn exec_spec(opts: &SpecOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (loaded, _) = load_redacted(&opts.document)?;
    if opts.json {
        let value = to_json(&loaded.api, &loaded.source);
        let text = serde_json::to_string_pretty(&value).map_err(|e| {
            CliError::internal(format!("cannot encode {} as JSON", loaded.source), e)
        })?;
        writeln!(out, "{text}")?;
    } else {
        write_table(&loaded.api, &loaded.source, out)?;
    }
    Ok(crate::exit::OK)
}

/// Loads the document at `source` (a file or a URL) as what probe may keep and print: a
/// URL's credentials (its userinfo's password, its query values named like credentials,
/// [`redact::redact_url`]) are used to fetch the document and the files its references
/// reach, and replaced by the placeholder in the source, the keys of those files, the
/// reasons operations are skipped for and an error's message. Returns the document and
/// the secrets the URL held, for the run's redactor.
pub(crate) fn load_redacted(source: &str) -> Result<(spec::LoadedDocument, Vec<String>), CliError> {
    let url = redact::redact_url(source);
    if url.secrets.is_empty() {
        return Ok((spec::load(source)?, Vec::new()));
    }
    let redactor = Redactor::new(url.secrets.iter().map(String::as_str));
    // A value too short for the redactor to search is still replaced where the URL is
    // quoted whole.
    let clean = |text: &str| {
        let text = text.replace(source, &url.text);
        redactor.text(&text).unwrap_or(text)
    };
    let mut loaded = spec::load(source).map_err(|e| CliError::Usage {
        message: clean(&e.to_string()),
        hint: None,
    })?;
    loaded.source = url.text.clone();
    loaded.documents = std::mem::take(&mut loaded.documents)
        .into_iter()
        .map(|(key, bytes)| (redact::redact_url(&key).text, bytes))
        .collect();
    for skipped in &mut loaded.api.skipped {
        skipped.reason = clean(&skipped.reason);
    }
    Ok((loaded, url.secrets))
}

fn dialect(v: SpecVersion) -> (&'static str, &'static str) {
    match v {
        SpecVersion::Swagger2 => ("swagger-2.0", "Swagger 2.0"),
        SpecVersion::OpenApi30 => ("openapi-3.0", "OpenAPI 3.0"),
        SpecVersion::OpenApi31 => ("openapi-3.1", "OpenAPI 3.1"),
    }
}

fn operation_json(op: &Operation) -> Value {
    json!({
        "name": op.key.name(),
        "operation_id": op.key.id,
        "method": op.key.method,
        "path": op.key.path,
        "pointer": op.pointer,
        "summary": op.summary,
        "tags": op.tags,
        "deprecated": op.deprecated,
        "parameters": op.parameters.iter().map(|p| json!({
            "name": p.name, "in": p.location.as_str(), "required": p.required,
        })).collect::<Vec<_>>(),
        "request_body": op.request_body.as_ref().map(|b| json!({
            "required": b.required,
            "media_types": b.content.iter().map(|m| m.media_type.clone()).collect::<Vec<_>>(),
        })),
        "responses": op.responses.iter().map(|r| r.status.to_string()).collect::<Vec<_>>(),
        "security": op.security,
    })
}

/// The `--json` object (see the module documentation).
pub fn to_json(api: &Api, source: &str) -> Value {
    json!({
        "version": SPEC_JSON_VERSION,
        "source": source,
        "title": api.title,
        "api_version": api.version,
        "dialect": dialect(api.spec_version).0,
        "servers": api.servers,
        "base_path": api.base_path,
        "operations": api.operations.iter().map(operation_json).collect::<Vec<_>>(),
        "skipped": api.skipped.iter().map(|s| json!({
            "name": s.key.name(),
            "operation_id": s.key.id,
            "method": s.key.method,
            "path": s.key.path,
            "pointer": s.pointer,
            "reason": s.reason,
        })).collect::<Vec<_>>(),
        "counts": {
            "operations": api.operations.len() + api.skipped.len(),
            "testable": api.operations.len(),
            "skipped": api.skipped.len(),
            "schemas": api.schemas.defs.len(),
        },
    })
}

/// One line of the table: method, path, operation id, verdict.
type Row<'a> = (String, &'a str, String, String);

/// Column widths stop growing here; a longer cell pushes its line out instead.
const MAX_COLUMN: usize = 48;

fn write_table(api: &Api, source: &str, out: &mut Out<'_>) -> Result<(), CliError> {
    let title = if api.title.is_empty() {
        "(untitled)"
    } else {
        api.title.as_str()
    };
    writeln!(out, "{title} {}", api.version)?;
    writeln!(
        out,
        "  document  {source} ({})",
        dialect(api.spec_version).1
    )?;
    match api.servers.as_slice() {
        [] => writeln!(out, "  servers   (none; give --url)")?,
        [first, rest @ ..] => {
            writeln!(out, "  servers   {first}")?;
            for s in rest {
                writeln!(out, "            {s}")?;
            }
        }
    }
    if !api.base_path.is_empty() {
        writeln!(out, "  base path {}", api.base_path)?;
    }
    writeln!(out)?;

    // Testable operations in document order, then the skipped ones with their reasons.
    let mut rows: Vec<Row> = Vec::new();
    for op in &api.operations {
        rows.push((
            op.key.method.clone(),
            &op.key.path,
            op.key.id.clone().unwrap_or_default(),
            if op.deprecated {
                "testable (deprecated)".into()
            } else {
                "testable".into()
            },
        ));
    }
    for s in &api.skipped {
        rows.push((
            s.key.method.clone(),
            &s.key.path,
            s.key.id.clone().unwrap_or_default(),
            format!("skipped: {}", s.reason),
        ));
    }
    let width = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0).min(MAX_COLUMN);
    let wm = width(&|r| r.0.len()).max(6);
    let wp = width(&|r| r.1.chars().count());
    let wi = width(&|r| r.2.chars().count());
    for (method, path, id, verdict) in &rows {
        let line = format!("  {method:<wm$}  {path:<wp$}  {id:<wi$}  {verdict}");
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(out)?;
    let total = api.operations.len() + api.skipped.len();
    writeln!(
        out,
        "{total} operation{}: {} testable, {} skipped; {} shared schema{}",
        if total == 1 { "" } else { "s" },
        api.operations.len(),
        api.skipped.len(),
        api.schemas.defs.len(),
        if api.schemas.defs.len() == 1 { "" } else { "s" },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, json: bool) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/specs")
            .join(name);
        let opts = SpecOpts {
            document: path.display().to_string(),
            json,
        };
        let mut out = Vec::new();
        assert_eq!(exec_spec(&opts, &mut Out::new(&mut out)).unwrap(), 0);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn table_lists_operations_with_verdicts() {
        let text = run("broken.yaml", false);
        assert!(text.starts_with("Broken 0\n"), "{text}");
        assert!(text.contains("(OpenAPI 3.0)"));
        assert!(text.contains("  GET     /fine"));
        assert!(text.contains("skipped: path parameter `{id}` is not declared"));
        assert!(text.ends_with("5 operations: 1 testable, 4 skipped; 0 shared schemas\n"));
    }

    #[test]
    fn json_is_versioned() {
        let text = run("swagger2.yaml", true);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(v["dialect"], "swagger-2.0");
        assert_eq!(v["base_path"], "/v2");
        assert_eq!(v["counts"]["testable"], 5);
        assert_eq!(v["operations"][0]["name"], "listPets");
        assert_eq!(v["operations"][0]["responses"], json!(["200", "default"]));
        assert_eq!(v["skipped"], json!([]));
    }

    #[test]
    fn unusable_document_is_an_error() {
        let opts = SpecOpts {
            document: "/nonexistent.yaml".into(),
            json: false,
        };
        let e = exec_spec(&opts, &mut Out::new(&mut Vec::new())).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::USAGE);
    }
}
