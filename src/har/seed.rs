//! Real traffic as accepted requests: the entries of a HAR file matched to the document's
//! operations and turned into test cases, for the mutation strategy to change
//! (`probe run --seed-requests FILE.har`, docs/har.md).
//!
//! The matching rules:
//! - only entries answered 2xx are used (others are counted, never an error);
//! - the method must be the operation's; the URL's path, less the base URL's path (or the
//!   document's server path), must match the operation's path template segment by segment,
//!   a `{name}` standing for one non-empty segment; where several operations match, the one
//!   with most literal segments wins (`/pets/mine` before `/pets/{id}`). Host and port are
//!   not compared: traffic recorded elsewhere seeds a run against 127.0.0.1;
//! - the operation's declared parameters are taken from the path, the query string, the
//!   headers and the `cookie` header, each word read as its schema's type says (`7` is the
//!   integer 7 where an integer is declared); what the operation does not declare is left
//!   out, and so is any value holding the `<probe:secret>` placeholder (a HAR that probe
//!   exported holds no credentials; the run sends its own);
//! - a JSON body (`postData.text`, or base64 with `encoding`/`_encoding`) becomes the case's
//!   body when the operation declares a JSON body; an entry whose operation needs a body it
//!   cannot be given is counted as unmatched.
//!
//! Entries keep the file's order, so the same file gives the same cases and the same
//! accepted memory at the start of every run.
//!
//! Depends on: `model`, `ids`, `spec`, `mutate::values`, `store` (the id of a seeded case).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde_json::Value;

use crate::model::{
    canonical_json, AcceptedRef, CaseBody, Intent, Location, ParameterValue, Strategy, TestCase,
    SECRET_PLACEHOLDER,
};
use crate::spec::{is_json, Api, Operation, Parameter, SchemaSet};

use super::HarError;

/// The mode recorded in a seeded test case.
pub const SEEDED_MODE: &str = "har";

/// The seqs that name HAR entries in a mutation's `from`: entry `n` of the
/// `--seed-requests` file is `SEEDED_SEQ + n`. No interaction of a run has such a seq.
pub const SEEDED_SEQ: u64 = 1 << 63;

/// The test cases made of a HAR file's entries, in the file's order.
#[derive(Debug, Default)]
pub struct Seeds {
    /// Each seeded case with the reference its changes name, and the entry's status.
    pub cases: Vec<(AcceptedRef, TestCase, u16)>,
    pub report: SeedReport,
}

/// What became of a HAR file's entries.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeedReport {
    pub entries: usize,
    /// Entries turned into test cases.
    pub seeded: usize,
    /// Entries not answered 2xx (or not answered).
    pub not_accepted: usize,
    /// Entries answered 2xx that match no operation, or whose body the operation cannot
    /// take.
    pub unmatched: usize,
    /// The first few unmatched entries, `METHOD url (why)`.
    pub unmatched_examples: Vec<String>,
}

/// How many unmatched entries a report names.
const EXAMPLES: usize = 5;

/// Reads `path` and makes a test case of each entry answered 2xx that matches an operation
/// of `api`. `base_url` is the run's `--url`: its path is taken off each entry's path.
pub fn read_seeds(path: &Path, api: &Api, base_url: &str) -> Result<Seeds, HarError> {
    let bytes = std::fs::read(path).map_err(|source| HarError::Read {
        path: path.to_owned(),
        source,
    })?;
    let entries = parse_entries(path, &bytes)?;
    let prefixes = prefixes(api, base_url);
    let mut seeds = Seeds::default();
    seeds.report.entries = entries.len();
    for (n, entry) in entries.into_iter().enumerate() {
        if !(200..300).contains(&entry.status) {
            seeds.report.not_accepted += 1;
            continue;
        }
        match seed_case(api, &prefixes, &entry) {
            Ok(case) => {
                let id = match crate::store::encode(&case) {
                    Ok(encoded) => crate::ids::CaseId(encoded.id),
                    Err(_) => continue,
                };
                seeds.cases.push((
                    AcceptedRef {
                        case: id,
                        seq: SEEDED_SEQ + n as u64,
                    },
                    case,
                    entry.status,
                ));
                seeds.report.seeded += 1;
            }
            Err(why) => {
                seeds.report.unmatched += 1;
                if seeds.report.unmatched_examples.len() < EXAMPLES {
                    seeds
                        .report
                        .unmatched_examples
                        .push(format!("{} {} ({why})", entry.method, entry.url));
                }
            }
        }
    }
    Ok(seeds)
}

/// The parts of an entry the matching reads.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<(String, Vec<u8>)>,
    status: u16,
}

/// A JSON value at a pointer, for errors that name it.
struct At<'a> {
    path: &'a Path,
    pointer: String,
    value: &'a Value,
}

impl<'a> At<'a> {
    fn fail(&self, problem: impl Into<String>) -> HarError {
        HarError::Shape {
            path: self.path.to_owned(),
            pointer: if self.pointer.is_empty() {
                "/".into()
            } else {
                self.pointer.clone()
            },
            problem: problem.into(),
        }
    }

    fn field(&self, name: &str) -> Result<At<'a>, HarError> {
        let value = self
            .value
            .as_object()
            .ok_or_else(|| self.fail("expected an object"))?
            .get(name)
            .ok_or_else(|| self.fail(format!("`{name}` is missing")))?;
        Ok(At {
            path: self.path,
            pointer: format!(
                "{}/{}",
                self.pointer,
                name.replace('~', "~0").replace('/', "~1")
            ),
            value,
        })
    }

    fn optional(&self, name: &str) -> Result<Option<At<'a>>, HarError> {
        match self.value.as_object() {
            Some(map) if map.contains_key(name) => self.field(name).map(Some),
            Some(_) => Ok(None),
            None => Err(self.fail("expected an object")),
        }
    }

    fn str(&self) -> Result<&'a str, HarError> {
        self.value
            .as_str()
            .ok_or_else(|| self.fail("expected a string"))
    }

    fn items(&self) -> Result<Vec<At<'a>>, HarError> {
        let list = self
            .value
            .as_array()
            .ok_or_else(|| self.fail("expected an array"))?;
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, value)| At {
                path: self.path,
                pointer: format!("{}/{i}", self.pointer),
                value,
            })
            .collect())
    }
}

fn parse_entries(path: &Path, bytes: &[u8]) -> Result<Vec<Entry>, HarError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| HarError::NotJson {
        path: path.to_owned(),
        message: e.to_string(),
        line: e.line(),
        column: e.column(),
    })?;
    let root = At {
        path,
        pointer: String::new(),
        value: &root,
    };
    let mut out = Vec::new();
    for entry in root.field("log")?.field("entries")?.items()? {
        let request = entry.field("request")?;
        let method = request.field("method")?.str()?.to_ascii_uppercase();
        let url_at = request.field("url")?;
        let url = url_at.str()?.to_owned();
        let mut headers = Vec::new();
        for h in request.field("headers")?.items()? {
            headers.push((
                h.field("name")?.str()?.to_ascii_lowercase(),
                h.field("value")?.str()?.to_owned(),
            ));
        }
        let body = match request.optional("postData")? {
            None => None,
            Some(post) => {
                let mime = match post.optional("mimeType")? {
                    Some(m) => m.str()?.to_owned(),
                    None => String::new(),
                };
                match post.optional("text")? {
                    None => None,
                    Some(text_at) => {
                        let text = text_at.str()?;
                        let encoding = match post.optional("encoding")? {
                            Some(e) => Some(e),
                            None => post.optional("_encoding")?,
                        };
                        let bytes = match encoding {
                            Some(e) if e.str()? == "base64" => {
                                base64::engine::general_purpose::STANDARD
                                    .decode(text)
                                    .map_err(|err| text_at.fail(format!("not base64: {err}")))?
                            }
                            Some(e) => {
                                return Err(e.fail(format!("unknown encoding `{}`", e.str()?)))
                            }
                            None => text.as_bytes().to_vec(),
                        };
                        Some((mime, bytes))
                    }
                }
            }
        };
        let status_at = entry.field("response")?.field("status")?;
        let status = status_at
            .value
            .as_u64()
            .ok_or_else(|| status_at.fail("expected a whole number"))?;
        out.push(Entry {
            method,
            url,
            headers,
            body,
            // 0 (no answer) and nonsense alike are not 2xx.
            status: u16::try_from(status).unwrap_or(0),
        });
    }
    Ok(out)
}

/// The path prefixes an entry's path may carry before the operation's path, longest first.
fn prefixes(api: &Api, base_url: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(u) = url::Url::parse(base_url) {
        out.push(u.path().trim_end_matches('/').to_owned());
    }
    out.push(api.base_path.trim_end_matches('/').to_owned());
    out.push(String::new());
    out.sort_by_key(|p| std::cmp::Reverse(p.len()));
    out.dedup();
    out
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The path values of `path` against `template`, or `None`; with the number of literal
/// segments (a better match has more).
fn match_template(template: &str, path: &str) -> Option<(usize, BTreeMap<String, String>)> {
    let t: Vec<&str> = template.trim_matches('/').split('/').collect();
    let p: Vec<&str> = path.trim_matches('/').split('/').collect();
    if t.len() != p.len() {
        return None;
    }
    let mut literal = 0;
    let mut values = BTreeMap::new();
    for (ts, ps) in t.iter().zip(&p) {
        match (ts.find('{'), ts.rfind('}')) {
            (Some(open), Some(close)) if open < close => {
                let (before, after) = (&ts[..open], &ts[close + 1..]);
                let inner = ps.strip_prefix(before)?.strip_suffix(after)?;
                if inner.is_empty() {
                    return None;
                }
                values.insert(ts[open + 1..close].to_owned(), decode(inner));
            }
            _ if ts == ps || decode(ts) == decode(ps) => literal += 1,
            _ => return None,
        }
    }
    Some((literal, values))
}

/// The declared JSON types of a schema (`type`, through `$ref`s).
fn declared_types(schemas: &SchemaSet, schema: &Value) -> Vec<String> {
    let Some(s) = schemas.deref(schema, 16) else {
        return Vec::new();
    };
    match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// The item schema of an array schema.
fn items_schema<'a>(schemas: &'a SchemaSet, schema: &'a Value) -> Option<&'a Value> {
    schemas.deref(schema, 16)?.get("items")
}

/// A parameter's words as the value its schema declares.
fn value_of(schemas: &SchemaSet, p: &Parameter, words: &[String]) -> Value {
    let declared = declared_types(schemas, &p.schema);
    if declared.iter().any(|t| t == "array") {
        let item_types = items_schema(schemas, &p.schema)
            .map(|s| declared_types(schemas, s))
            .unwrap_or_default();
        let parts: Vec<&str> = if words.len() == 1 && !p.explode {
            words[0].split(',').collect()
        } else {
            words.iter().map(String::as_str).collect()
        };
        return Value::Array(
            parts
                .into_iter()
                .map(|w| {
                    crate::mutate::values::wire_reading(&item_types, &Value::String(w.to_owned()))
                })
                .collect(),
        );
    }
    crate::mutate::values::wire_reading(&declared, &Value::String(words[0].clone()))
}

/// The test case an entry is, or why it is none.
fn seed_case(api: &Api, prefixes: &[String], entry: &Entry) -> Result<TestCase, String> {
    let url = url::Url::parse(&entry.url).map_err(|e| format!("not a URL: {e}"))?;
    let path = url.path();
    let mut best: Option<(usize, &Operation, BTreeMap<String, String>)> = None;
    for prefix in prefixes {
        let Some(rest) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        if !(prefix.is_empty() || rest.is_empty() || rest.starts_with('/')) {
            continue;
        }
        for op in &api.operations {
            if !op.key.method.eq_ignore_ascii_case(&entry.method) {
                continue;
            }
            if let Some((literal, values)) = match_template(&op.key.path, rest) {
                if best.as_ref().is_none_or(|(l, _, _)| literal > *l) {
                    best = Some((literal, op, values));
                }
            }
        }
        if best.is_some() {
            break;
        }
    }
    let (_, op, path_values) = best.ok_or("no operation has this method and path")?;

    let query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let cookies: Vec<(String, String)> = entry
        .headers
        .iter()
        .filter(|(k, _)| k == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let mut parameters = Vec::new();
    for p in &op.parameters {
        let words: Vec<String> = match p.location {
            Location::Path => path_values.get(&p.name).cloned().into_iter().collect(),
            Location::Query => query
                .iter()
                .filter(|(k, _)| *k == p.name || k.strip_suffix("[]") == Some(&p.name))
                .map(|(_, v)| v.clone())
                .collect(),
            Location::Header => entry
                .headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(&p.name))
                .map(|(_, v)| v.clone())
                .collect(),
            Location::Cookie => cookies
                .iter()
                .filter(|(k, _)| *k == p.name)
                .map(|(_, v)| v.clone())
                .collect(),
        };
        if words.is_empty() || words.iter().any(|w| w.contains(SECRET_PLACEHOLDER)) {
            continue;
        }
        parameters.push(ParameterValue {
            location: p.location,
            name: p.name.clone(),
            value: canonical_json(value_of(&api.schemas, p, &words)),
        });
    }
    parameters.sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));

    let body = match (&op.request_body, &entry.body) {
        (None, _) => None,
        (Some(declared), None) if declared.required => {
            return Err("the operation needs a body and the entry has none".into())
        }
        (Some(_), None) => None,
        (Some(declared), Some((mime, bytes))) => {
            let media = declared
                .content
                .iter()
                .find(|m| is_json(&m.media_type) && !m.media_type.contains('*'))
                .map(|m| m.media_type.clone())
                .or_else(|| {
                    declared
                        .content
                        .iter()
                        .any(|m| is_json(&m.media_type))
                        .then(|| "application/json".to_owned())
                });
            let parsed = serde_json::from_slice::<Value>(bytes).ok();
            match (media, parsed) {
                (Some(media_type), Some(value)) if mime.is_empty() || is_json(mime) => {
                    if value.to_string().contains(SECRET_PLACEHOLDER) {
                        return Err("its body holds the <probe:secret> placeholder".into());
                    }
                    Some(CaseBody {
                        media_type,
                        value: canonical_json(value),
                        sent_as: None,
                    })
                }
                _ if declared.required => {
                    return Err("its body is not JSON the operation declares".into())
                }
                _ => None,
            }
        }
    };

    Ok(TestCase {
        operation: op.key.name(),
        method: op.key.method.clone(),
        path: op.key.path.clone(),
        parameters,
        body,
        strategy: Strategy::Nominal,
        mode: SEEDED_MODE.into(),
        origins: BTreeMap::new(),
        intent: Intent::Acceptable,
        mutation: None,
        series_step: None,
        credentials: None,
        shrinking: None,
        identity: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn demo() -> Api {
        crate::spec::parse(crate::fixture::demo::DOCUMENT.as_bytes(), "demo.yaml", None)
            .expect("the demo document loads")
    }

    fn har(entries: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"log": {"version": "1.2", "entries": entries}})).unwrap()
    }

    fn entry(method: &str, url: &str, body: Option<&str>, status: u16) -> Value {
        let mut request = json!({"method": method, "url": url, "headers": [
            {"name": "Authorization", "value": "<probe:secret>"}
        ]});
        if let Some(b) = body {
            request["postData"] = json!({"mimeType": "application/json", "text": b});
        }
        json!({"request": request, "response": {"status": status}})
    }

    fn read(bytes: &[u8], base: &str) -> Result<Seeds, HarError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.har");
        std::fs::write(&path, bytes).unwrap();
        read_seeds(&path, &demo(), base)
    }

    #[test]
    fn templates_match_by_segment_and_literals_win() {
        assert_eq!(
            match_template("/pets/{petId}", "/pets/7").map(|(l, v)| (l, v["petId"].clone())),
            Some((1, "7".to_owned()))
        );
        assert_eq!(match_template("/pets/{petId}", "/pets/"), None);
        assert_eq!(match_template("/pets/{petId}", "/pets/7/x"), None);
        assert_eq!(match_template("/pets", "/pets").map(|(l, _)| l), Some(1));
        assert_eq!(
            match_template("/f/{name}.json", "/f/a%20b.json").map(|(_, v)| v["name"].clone()),
            Some("a b".to_owned())
        );
    }

    #[test]
    fn entries_answered_2xx_become_cases_of_their_operation() {
        let api = demo();
        let create = api
            .operations
            .iter()
            .find(|o| o.key.method == "POST" && o.request_body.is_some())
            .expect("a creation");
        let read_op = api
            .operations
            .iter()
            .find(|o| {
                o.key.method == "GET" && o.parameters.iter().any(|p| p.location == Location::Path)
            })
            .expect("a read with a path parameter");
        let item_url = format!(
            "http://example.org/v1{}",
            read_op.key.path.split('{').next().unwrap()
        ) + "12";
        let bytes = har(json!([
            entry(
                "POST",
                &format!("http://example.org/v1{}", create.key.path),
                Some(r#"{"name":"Rex","tag":"dog"}"#),
                201
            ),
            entry("GET", &item_url, None, 200),
            entry("GET", "http://example.org/v1/nowhere", None, 200),
            entry("GET", &item_url, None, 404),
        ]));
        let seeds = read(&bytes, "http://127.0.0.1:9/v1").unwrap();
        assert_eq!(seeds.report.entries, 4);
        assert_eq!(seeds.report.seeded, 2, "{:?}", seeds.report);
        assert_eq!(seeds.report.not_accepted, 1);
        assert_eq!(seeds.report.unmatched, 1);
        assert!(seeds.report.unmatched_examples[0].contains("/nowhere"));
        let (from, case, status) = &seeds.cases[0];
        assert_eq!(from.seq, SEEDED_SEQ);
        assert_eq!(*status, 201);
        assert_eq!(case.operation, create.key.name());
        assert_eq!(case.body.as_ref().unwrap().value["name"], json!("Rex"));
        let (from, case, _) = &seeds.cases[1];
        assert_eq!(from.seq, SEEDED_SEQ + 1);
        assert_eq!(case.operation, read_op.key.name());
        let path_param = case
            .parameters
            .iter()
            .find(|p| p.location == Location::Path)
            .expect("the path value");
        // Read as the declared type: an integer id is the number 12, a string id "12".
        assert!(path_param.value == json!(12) || path_param.value == json!("12"));
        // Credentials are never taken from the file.
        assert!(case
            .parameters
            .iter()
            .all(|p| !p.value.to_string().contains("probe:secret")));
    }

    #[test]
    fn an_unreadable_har_names_the_file_and_the_pointer() {
        let e = read(b"{\"log\": {\"entries\": [{\"request\": {}}]}}", "http://h").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("t.har"), "{text}");
        assert!(text.contains("/log/entries/0/request"), "{text}");
        assert!(text.contains("`method` is missing"), "{text}");
        let e = read(b"{\"log\": ", "http://h").unwrap_err();
        assert!(e.to_string().contains("is not JSON"), "{e}");
        let e = read(
            &har(json!([{"request": {"method": "GET", "url": "http://h/", "headers": []}, "response": {"status": "ok"}}])),
            "http://h",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("/log/entries/0/response/status"),
            "{e}"
        );
    }
}
