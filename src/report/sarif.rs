//! SARIF 2.1.0 of a run's findings (`--report-sarif FILE`, `probe export --format sarif`),
//! the format GitHub code scanning and GitLab read (docs/sarif.md).
//!
//! One result per distinct finding: its rule is the oracle (or the user's check) that
//! found it, its level the finding's severity, its location the operation in the OpenAPI
//! document (the file and the line the operation starts on, and the operation's JSON
//! pointer as a logical location), its message the finding's with how to reproduce it.
//! GitHub needs a file and a start line for every result; a document read from a URL is
//! named by its URL, line 1 when its text cannot place the operation.
//!
//! Depends on: `report` (RunReport), `oracle` (catalogue), `model` (RunStart), `store`.

use std::collections::BTreeMap;
use std::path::Path;

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};

use super::{FindingReport, RunReport};
use crate::model::RunStart;
use crate::store::{Store, StoreError};

/// The SARIF schema the output follows (kept in `tests/data/sarif-schema-2.1.0.json`).
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The document a run tested: how a SARIF file names it, and its text (to find the line
/// each operation starts on).
pub struct Document {
    pub uri: String,
    pub text: Option<Vec<u8>>,
}

/// Characters a path keeps escaped in a URI reference.
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'%');

impl Document {
    /// The document of a run, as its start names it and the store keeps it. A file is
    /// named relative to `cwd` when it lies under it (GitHub reads paths relative to the
    /// repository's root, where a CI job runs), with `/` separators.
    pub fn of_run(store: &Store, start: &RunStart, cwd: Option<&Path>) -> Document {
        Document {
            uri: uri_of(&start.document_source, cwd),
            // Without its text, every result points at line 1 of the file.
            text: store.get_blob(start.document).ok(),
        }
    }
}

/// A URI reference for a document source: a URL as it is, a path relative to `cwd` when
/// under it, escaped.
pub fn uri_of(source: &str, cwd: Option<&Path>) -> String {
    if source.starts_with("http://") || source.starts_with("https://") {
        return source.to_owned();
    }
    let path = Path::new(source);
    let relative = match cwd {
        Some(cwd) if path.is_absolute() => path.strip_prefix(cwd).unwrap_or(path),
        _ => path,
    };
    let text = relative.to_string_lossy().replace('\\', "/");
    let text = text.trim_start_matches("./");
    let escaped = utf8_percent_encode(text, PATH).to_string();
    if relative.is_absolute() {
        format!("file://{escaped}")
    } else {
        escaped
    }
}

/// The line (from 1) where the object at `pointer` starts in a JSON or YAML `text`: each
/// token of the pointer found as a key after the previous one. `None` when a token is not
/// found so (the operation comes from another file, or the text is written unusually).
pub fn line_of_pointer(text: &str, pointer: &str) -> Option<usize> {
    let mut at = 0usize;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = find_key(text, at, &token)?;
    }
    if at == 0 {
        return None;
    }
    Some(text[..at].matches('\n').count() + 1)
}

/// The offset of the first key `token` at or after `from`: `"token":` (JSON or YAML),
/// `'token':` or `token:` at the start of a line (YAML).
fn find_key(text: &str, from: usize, token: &str) -> Option<usize> {
    let quoted = [format!("\"{token}\""), format!("'{token}'")];
    let mut best: Option<usize> = None;
    for q in &quoted {
        let mut start = from;
        while let Some(i) = text.get(start..).and_then(|t| t.find(q.as_str())) {
            let pos = start + i;
            let after = text[pos + q.len()..].trim_start_matches([' ', '\t']);
            if after.starts_with(':') {
                best = Some(best.map_or(pos, |b| b.min(pos)));
                break;
            }
            start = pos + q.len();
        }
    }
    // A plain YAML key: the token alone before `:` at the start of a line (indented, or
    // after `- `).
    let mut offset = from;
    for line in text.get(from..)?.split_inclusive('\n') {
        if best.is_some_and(|b| b < offset) {
            break;
        }
        let trimmed = line.trim_start_matches([' ', '\t', '-']).trim_start();
        if let Some(rest) = trimmed.strip_prefix(token) {
            if rest.trim_start_matches([' ', '\t']).starts_with(':') {
                let pos = offset + (line.len() - trimmed.len());
                best = Some(best.map_or(pos, |b| b.min(pos)));
                break;
            }
        }
        offset += line.len();
    }
    best
}

/// SARIF's level for a finding's severity.
fn level(severity: &str) -> &'static str {
    match severity {
        "high" => "error",
        "medium" => "warning",
        _ => "note",
    }
}

/// GitHub's `security-severity` (a CVSS-like score) for a severity.
fn security_severity(severity: &str) -> &'static str {
    match severity {
        "high" => "8.0",
        "medium" => "5.0",
        _ => "2.0",
    }
}

/// The rule of an oracle (or of a check of the user's), as SARIF describes one.
fn rule(oracle: &str, sample: &FindingReport) -> Value {
    let known = crate::oracle::CATALOGUE.iter().find(|o| o.name == oracle);
    let (title, help) = match known {
        Some(o) => (
            o.title.to_owned(),
            format!(
                "probe's oracle `{}`: {}. `probe docs oracles` says what it judges and how.",
                o.name, o.title
            ),
        ),
        None => (
            format!("a check of the user's, `{oracle}`"),
            "A check written in CEL or as a program (`probe docs checks`).".to_owned(),
        ),
    };
    let mut tags = vec![Value::from("api"), Value::from("probe")];
    if let Some(code) = &sample.code {
        tags.push(Value::from(format!("wfc:{code}")));
        // WFC's 2xx codes are its security faults; GitHub ranks those by
        // `security-severity`.
        if code.trim_start_matches('F').starts_with('2') {
            tags.push(Value::from("security"));
        }
    }
    json!({
        "id": oracle,
        "name": oracle,
        "shortDescription": {"text": title},
        "fullDescription": {"text": title},
        "help": {"text": help},
        "defaultConfiguration": {"level": level(&sample.severity)},
        "properties": {
            "tags": tags,
            "precision": "high",
            "security-severity": security_severity(&sample.severity),
        },
    })
}

/// What a person reads of a finding: its message, how often it was seen, how to send it
/// again.
fn message(f: &FindingReport) -> String {
    let mut text = f.message.clone();
    text.push_str(&format!("\nSeen {}.", super::summary::times(f.occurrences)));
    if !f.replay.is_empty() {
        text.push_str(&format!("\nReplay: {}", f.replay));
    }
    if let Some(curl) = &f.curl {
        text.push_str(&format!("\nReproduce: {curl}"));
    }
    text
}

/// A fingerprint of a finding that stays the same across runs of one document: the
/// finding's key (its oracle, operation and what it observed).
fn fingerprint(f: &FindingReport) -> String {
    let hash = blake3::hash(f.key_by_message.as_bytes());
    hash.to_hex()[..32].to_owned()
}

/// The SARIF log of `report`, whose document is `doc`.
pub fn render(report: &RunReport, doc: &Document) -> Value {
    let text = doc
        .text
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let operations: BTreeMap<&str, &super::OperationReport> = report
        .operations
        .iter()
        .map(|o| (o.operation.as_str(), o))
        .collect();
    let mut rule_index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rules: Vec<Value> = Vec::new();
    for f in &report.findings {
        if !rule_index.contains_key(f.oracle.as_str()) {
            rule_index.insert(&f.oracle, rules.len());
            rules.push(rule(&f.oracle, f));
        }
    }
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let op = operations.get(f.operation.as_str());
            let pointer = op.map(|o| o.pointer.as_str()).unwrap_or_default();
            let line = (!pointer.is_empty())
                .then(|| line_of_pointer(&text, pointer))
                .flatten()
                .unwrap_or(1);
            let name = op.map_or_else(
                || f.operation.clone(),
                |o| format!("{} {}", o.method, o.path),
            );
            let mut logical = json!({"name": name, "kind": "object"});
            if !pointer.is_empty() {
                logical["fullyQualifiedName"] = Value::from(pointer);
            }
            json!({
                "ruleId": f.oracle,
                "ruleIndex": rule_index[f.oracle.as_str()],
                "level": level(&f.severity),
                "message": {"text": message(f)},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": doc.uri},
                        "region": {"startLine": line},
                    },
                    "logicalLocations": [logical],
                }],
                "partialFingerprints": {"probeFinding/v1": fingerprint(f)},
                "properties": {
                    "finding": f.id,
                    "operation": f.operation,
                    "severity": f.severity,
                    "wfcCode": f.code,
                    "occurrences": f.occurrences,
                    "replay": f.replay,
                    "curl": f.curl,
                },
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": report.tool.name,
                "version": report.tool.version,
                "semanticVersion": report.tool.version,
                "rules": rules,
            }},
            "automationDetails": {"id": format!("probe/{}/", report.run.api_title)},
            "artifacts": [{"location": {"uri": doc.uri}}],
            "invocations": [{
                "executionSuccessful": matches!(report.run.outcome.as_str(), "completed" | "interrupted"),
                "startTimeUtc": report.run.started,
            }],
            "results": results,
            "properties": {
                "run": report.run.id,
                "baseUrl": report.run.base_url,
                "seed": report.run.seed,
                "outcome": report.run.outcome,
            },
        }],
    })
}

/// [`render`] as pretty JSON with a final newline.
pub fn to_bytes(log: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(log).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The SARIF log of a stored run whose report is `report`.
pub fn of_run(
    store: &Store,
    run: crate::ids::RunId,
    report: &RunReport,
) -> Result<Value, StoreError> {
    let start: RunStart = store.get(run.0)?;
    let cwd = std::env::current_dir().ok();
    Ok(render(
        report,
        &Document::of_run(store, &start, cwd.as_deref()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_found_in_yaml_and_json() {
        let yaml = "openapi: 3.0.3\npaths:\n  /pets:\n    get:\n      x: 1\n    post:\n      x: 2\n  /pets/{id}:\n    get:\n      x: 3\n";
        assert_eq!(line_of_pointer(yaml, "/paths/~1pets/post"), Some(6));
        assert_eq!(line_of_pointer(yaml, "/paths/~1pets~1{id}/get"), Some(9));
        let json = "{\n  \"paths\": {\n    \"/a\": {\n      \"get\": {}\n    },\n    \"/b\": {\n      \"get\": {}\n    }\n  }\n}\n";
        assert_eq!(line_of_pointer(json, "/paths/~1b/get"), Some(7));
        assert_eq!(line_of_pointer(json, "/paths/~1c/get"), None);
    }

    #[test]
    fn sources_become_uri_references() {
        assert_eq!(uri_of("./api/open api.yaml", None), "api/open%20api.yaml");
        assert_eq!(
            uri_of("/repo/specs/a.json", Some(Path::new("/repo"))),
            "specs/a.json"
        );
        assert_eq!(
            uri_of("/elsewhere/a.json", Some(Path::new("/repo"))),
            "file:///elsewhere/a.json"
        );
        assert_eq!(
            uri_of("https://x.test/a.json", None),
            "https://x.test/a.json"
        );
    }
}
