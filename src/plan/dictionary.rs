//! Dictionaries a user hands over (docs/design-notes.md, Dictionaries; docs/dictionaries.md specifies the file): YAML,
//! `version: 1`, one keying, `operationAndParameter`; values any JSON; places named the way
//! down to them (`ownerId`, `body`, `body.owner.email`, `tags[]`); operations by `operationId`
//! or `METHOD /path`.
//!
//! A file that cannot be read or used is an error value ([`FileError`]) for the engine to
//! report in both reports; it is never skipped quietly. [`unusable_entries`] lists the entries
//! that can never be used against a document, to be shown before the run starts.
//!
//! Depends on: `spec::model`, `plan::yaml`, `mutate::place` (facets of a shape).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::mutate::place;
use crate::spec::{Api, Operation, OperationKey, SchemaSet};

use super::yaml::{self, FileError};

/// The version of the dictionary format this build reads.
pub const DICTIONARY_VERSION: u32 = 1;

/// A dictionary read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Dictionary {
    /// The `name` a plan names it by (`source: dictionary: <name>`).
    pub name: String,
    /// The file it was read from.
    pub file: String,
    /// Operation as written → place → values (both sorted, so iteration is deterministic).
    pub entries: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// Operations written with nothing under them (kept so a stale one can be named).
    pub empty_operations: Vec<String>,
    /// The file's text as read: a run keeps it in the store (`RunStart::inputs`).
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DictionaryFile {
    version: serde_yaml::Value,
    name: String,
    keyed_by: String,
    #[serde(default)]
    values: Option<BTreeMap<String, Option<BTreeMap<String, serde_yaml::Value>>>>,
}

impl Dictionary {
    /// Reads a dictionary file; a file that cannot be read or used is an error naming it.
    pub fn load(path: &Path) -> Result<Dictionary, FileError> {
        let text = yaml::read(path)?;
        Dictionary::parse(&text, &path.display().to_string())
    }

    /// Reads a dictionary from text; `file` names it in messages.
    pub fn parse(text: &str, file: &str) -> Result<Dictionary, FileError> {
        let raw: DictionaryFile = yaml::strict(text, file)?;
        let err = |m: String| FileError::new(file, m);
        match raw.version.as_u64() {
            Some(v) if v == DICTIONARY_VERSION as u64 => {}
            _ => {
                return Err(err(format!(
                    "version: this build reads dictionary version {DICTIONARY_VERSION}, found {}",
                    yaml::describe(&raw.version)
                )))
            }
        }
        if raw.name.trim().is_empty() {
            return Err(err("name: a dictionary needs a name".into()));
        }
        if raw.name == "fuzzing" {
            return Err(err(
                "name: `fuzzing` is the name of probe's own list of awkward values; choose another"
                    .into(),
            ));
        }
        if raw.keyed_by != "operationAndParameter" {
            return Err(err(format!(
                "keyedBy: `{}` is not a keying a file can use; the one keying is operationAndParameter",
                raw.keyed_by
            )));
        }
        let mut entries = BTreeMap::new();
        let mut empty_operations = Vec::new();
        // `null` where a set of entries belongs reads as empty: nothing else could be meant.
        for (op, places) in raw.values.unwrap_or_default() {
            let Some(places) = places else {
                empty_operations.push(op);
                continue;
            };
            if places.is_empty() {
                empty_operations.push(op);
                continue;
            }
            let mut out = BTreeMap::new();
            for (place, list) in places {
                let at = format!("values.{op}.{place}");
                check_place_name(&place).map_err(|m| err(format!("{at}: {m}")))?;
                let serde_yaml::Value::Sequence(items) = &list else {
                    let hint = if list.is_null() {
                        "; write [] for no values, or [null] to send null"
                    } else {
                        "; write the values as a list, [value, ...]"
                    };
                    return Err(err(format!(
                        "{at}: expected a list of values, found {}{hint}",
                        yaml::describe(&list)
                    )));
                };
                let mut values = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let v = yaml::to_json(item, &format!("{at}[{i}]")).map_err(err)?;
                    values.push(crate::model::canonical_json(v));
                }
                out.insert(place, values);
            }
            entries.insert(op, out);
        }
        Ok(Dictionary {
            name: raw.name,
            file: file.to_string(),
            entries,
            empty_operations,
            text: text.to_owned(),
        })
    }

    /// The values for `place` of the operation `key` (named in either spelling in the file).
    /// A body given whole is the caller's to prefer over its pieces (docs/design-notes.md, Dictionaries).
    pub fn values_for(&self, key: &OperationKey, place: &str) -> Option<&[Value]> {
        self.entries
            .iter()
            .filter(|(op, _)| key.is_named(op))
            .find_map(|(_, places)| places.get(place))
            .map(Vec::as_slice)
    }

    /// How many entries (operation, place) the file holds.
    pub fn len(&self) -> usize {
        self.entries.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads every dictionary a `--dictionary` argument names: a file, or a directory's `.yaml`
/// and `.yml` files in name order (not descending). Each file gives its own result, so one
/// that cannot be read is reported and the others still load; a directory that cannot be
/// listed is one error. Two files giving the same `name` are an error on the second.
pub fn load_all(path: &Path) -> Vec<Result<Dictionary, FileError>> {
    let mut files = Vec::new();
    if path.is_dir() {
        match std::fs::read_dir(path) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let p = e.path();
                    let yaml = p.extension().and_then(|x| x.to_str()).is_some_and(|x| {
                        x.eq_ignore_ascii_case("yaml") || x.eq_ignore_ascii_case("yml")
                    });
                    if yaml && p.is_file() {
                        files.push(p);
                    }
                }
            }
            Err(e) => {
                return vec![Err(FileError::new(
                    &path.display().to_string(),
                    format!("cannot be read: {e}"),
                ))]
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    files
        .iter()
        .map(|f| {
            let d = Dictionary::load(f)?;
            if let Some(first) = names.get(&d.name) {
                return Err(FileError::new(
                    &d.file,
                    format!(
                        "name: `{}` is already the name of the dictionary in {first}",
                        d.name
                    ),
                ));
            }
            names.insert(d.name.clone(), d.file.clone());
            Ok(d)
        })
        .collect()
}

/// [`unusable_entries`] as the one line per file the console prints before the run, naming up
/// to three entries of each reason; `None` when every entry can be used.
pub fn unusable_summary(d: &Dictionary, api: &Api) -> Option<String> {
    let lines = unusable_entries(d, api);
    if lines.is_empty() {
        return None;
    }
    let prefix = format!("{}: ", d.file);
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &lines {
        let rest = line.strip_prefix(&prefix).unwrap_or(line);
        let (what, reason) = rest.rsplit_once(": ").unwrap_or((rest, "unusable"));
        by_reason
            .entry(reason.to_string())
            .or_default()
            .push(what.to_string());
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(reason, whats)| {
            let shown: Vec<&str> = whats.iter().take(3).map(String::as_str).collect();
            let more = if whats.len() > 3 { ", ..." } else { "" };
            format!("{} for {reason} ({}{more})", whats.len(), shown.join(", "))
        })
        .collect();
    Some(format!(
        "{}: {} of its {} entries will never be used: {}",
        d.file,
        lines.len(),
        d.len() + d.empty_operations.len(),
        parts.join(", ")
    ))
}

/// A place name: a first step (a parameter's name, or `body`), then `.member` or `[]` steps.
fn check_place_name(place: &str) -> Result<(), String> {
    split_place(place).map(|_| ()).ok_or_else(|| {
        format!("`{place}` is not a place; write a parameter's name, body, body.member or list[]")
    })
}

#[derive(Debug, PartialEq)]
enum PlaceStep {
    Member(String),
    Items,
}

/// `body.tags[].label` → `body`, [Member(tags), Items, Member(label)]. `None` when malformed.
fn split_place(place: &str) -> Option<(String, Vec<PlaceStep>)> {
    let (head, mut rest) = match place.find(['.', '[']) {
        Some(i) => (&place[..i], &place[i..]),
        None => (place, ""),
    };
    if head.is_empty() {
        return None;
    }
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[]") {
            steps.push(PlaceStep::Items);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            steps.push(PlaceStep::Member(r[..end].to_string()));
            rest = &r[end..];
        } else {
            return None;
        }
    }
    Some((head.to_string(), steps))
}

/// The entries of `d` that can never be used against `api`, one line each, naming the file:
/// operations the document does not have, places no parameter or piece of a body matches,
/// pieces of a body the same file also supplies whole (the whole body is sent instead), and
/// operations written with nothing under them that the document does not have.
pub fn unusable_entries(d: &Dictionary, api: &Api) -> Vec<String> {
    let mut out = Vec::new();
    let find =
        |name: &str| -> Option<&Operation> { api.operations.iter().find(|o| o.key.is_named(name)) };
    for (op_name, places) in &d.entries {
        let Some(op) = find(op_name) else {
            for place in places.keys() {
                out.push(format!(
                    "{}: {place} in {op_name}: no such operation in this API",
                    d.file
                ));
            }
            continue;
        };
        let whole_body = places.contains_key("body");
        for place in places.keys() {
            let Some((head, steps)) = split_place(place) else {
                continue;
            };
            let reason = if head == "body" {
                if !steps.is_empty() && whole_body {
                    Some("a piece of a body that is supplied whole, which is sent instead")
                } else {
                    match &op.request_body {
                        None => Some("the operation takes no body"),
                        Some(b) => {
                            let found = b
                                .content
                                .iter()
                                .any(|m| reaches(&api.schemas, &m.schema, &steps, 0));
                            (!found).then_some("no such piece of a body in that operation")
                        }
                    }
                }
            } else {
                let params: Vec<_> = op.parameters.iter().filter(|p| p.name == head).collect();
                if params.is_empty() {
                    Some("no such parameter in that operation")
                } else if !params
                    .iter()
                    .any(|p| reaches(&api.schemas, &p.schema, &steps, 0))
                {
                    Some("no such piece of that parameter")
                } else {
                    None
                }
            };
            if let Some(reason) = reason {
                out.push(format!("{}: {place} in {op_name}: {reason}", d.file));
            }
        }
    }
    for op_name in &d.empty_operations {
        if find(op_name).is_none() {
            out.push(format!(
                "{}: {op_name}: no such operation in this API (and nothing under it)",
                d.file
            ));
        }
    }
    out
}

/// Whether `steps` lead somewhere the shape declares (through references, `allOf`, and any
/// alternative of a choice).
fn reaches(schemas: &SchemaSet, schema: &Value, steps: &[PlaceStep], depth: usize) -> bool {
    let Some((first, rest)) = steps.split_first() else {
        return true;
    };
    if depth > 32 {
        return false;
    }
    let Some(f) = place::facets(schemas, schema) else {
        return false;
    };
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = f.get(key) {
            if alts.iter().any(|a| reaches(schemas, a, steps, depth + 1)) {
                return true;
            }
        }
    }
    match first {
        PlaceStep::Member(name) => f
            .get("properties")
            .and_then(|p| p.get(name))
            .is_some_and(|sub| reaches(schemas, sub, rest, depth + 1)),
        PlaceStep::Items => f
            .get("items")
            .is_some_and(|sub| reaches(schemas, sub, rest, depth + 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(text: &str) -> String {
        match Dictionary::parse(text, "ids.yaml") {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => {
                assert_eq!(e.file, "ids.yaml");
                e.to_string()
            }
        }
    }

    #[test]
    fn the_example_file_reads() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/dictionaries/petshop-ids.yaml");
        let d = Dictionary::load(&path).expect("the example dictionary loads");
        assert_eq!(d.name, "petshop-ids");
        let key = OperationKey {
            id: Some("getOwner".into()),
            method: "GET".into(),
            path: "/owners/{ownerId}".into(),
        };
        assert_eq!(
            d.values_for(&key, "ownerId"),
            Some(&[json!(1), json!(2), json!(3)][..])
        );
        let add = OperationKey {
            id: Some("addOwner".into()),
            method: "POST".into(),
            path: "/owners".into(),
        };
        assert_eq!(
            d.values_for(&add, "body.address.city"),
            Some(&[json!("Lisboa"), json!("Zürich")][..])
        );
        assert_eq!(
            d.values_for(&add, "body"),
            Some(&[json!({"firstName": "Ada", "address": {"city": "London"}})][..])
        );
        // Both spellings of an operation answer.
        let put = OperationKey {
            id: Some("updatePet".into()),
            method: "PUT".into(),
            path: "/pets/{petId}".into(),
        };
        assert_eq!(
            d.values_for(&put, "tags[]"),
            Some(&[json!("indoor"), json!(null)][..])
        );
        assert!(d.empty_operations.contains(&"GET /oops".to_string()));
    }

    #[test]
    fn a_directory_loads_file_by_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("written");
        };
        write(
            "a.yaml",
            "version: 1\nname: one\nkeyedBy: operationAndParameter\nvalues: {}\n",
        );
        write(
            "b.yml",
            "version: 1\nname: two\nkeyedBy: operationAndParameter\nbogus: 1\n",
        );
        write(
            "c.yaml",
            "version: 1\nname: one\nkeyedBy: operationAndParameter\n",
        );
        write("notes.txt", "not a dictionary");
        let got = load_all(dir.path());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().map(|d| d.name.as_str()), Ok("one"));
        let e = got[1].as_ref().expect_err("refused");
        assert!(
            e.file.ends_with("b.yml") && e.message.contains("bogus"),
            "{e}"
        );
        let e = got[2].as_ref().expect_err("a name twice");
        assert!(e.message.contains("already the name"), "{e}");
        let missing = load_all(Path::new("/nonexistent/dicts.yaml"));
        assert!(matches!(missing.as_slice(), [Err(e)] if e.message.contains("cannot be read")));
    }

    #[test]
    fn strict_refusals() {
        let m =
            refused("version: 1\nname: a\nkeyedBy: operationAndParameter\nvalues: {}\nextra: 1\n");
        assert!(
            m.starts_with("ids.yaml: ")
                && m.contains("unknown field `extra`")
                && m.contains("line 5"),
            "{m}"
        );
        let m = refused("version: 1\nname: a\nkeyedBy: operationAndParameter\nvalues:\n  getOwner:\n    ownerId: [1]\n    ownerId: [2]\n");
        assert!(
            m.contains("values.getOwner: duplicate entry with key \"ownerId\"")
                && m.contains("line 6"),
            "{m}"
        );
        let m = refused("version: 3\nname: a\nkeyedBy: operationAndParameter\n");
        assert!(m.contains("version"), "{m}");
        let m = refused("version: 1\nname: a\nkeyedBy: type\n");
        assert!(m.contains("keyedBy"), "{m}");
        let m = refused("version: 1\nname: a\nkeyedBy: operationAndParameter\nvalues:\n  getOwner:\n    ownerId:\n");
        assert!(
            m.contains("values.getOwner.ownerId") && m.contains("[null]"),
            "{m}"
        );
        let m = refused("version: 1\nname: a\nkeyedBy: operationAndParameter\nvalues:\n  getOwner:\n    ownerId: [!date 2026-01-01]\n");
        assert!(
            m.contains("values.getOwner.ownerId[0]") && m.contains("tag"),
            "{m}"
        );
        let m = refused("version: 1\nname: a\nkeyedBy: operationAndParameter\nvalues:\n  getOwner:\n    body..x: [1]\n");
        assert!(m.contains("not a place"), "{m}");
        let m = refused("version: 1\nname: fuzzing\nkeyedBy: operationAndParameter\n");
        assert!(m.contains("fuzzing"), "{m}");
        let e = Dictionary::load(Path::new("/nonexistent/ids.yaml")).expect_err("no file");
        assert!(
            e.to_string()
                .starts_with("/nonexistent/ids.yaml: cannot be read"),
            "{e}"
        );
    }

    #[test]
    fn unusable_entries_are_named() {
        let api = crate::spec::parse(
            br#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /owners/{ownerId}:
    get:
      operationId: getOwner
      parameters:
        - {name: ownerId, in: path, required: true, schema: {type: integer}}
      responses: {'200': {description: ok}}
  /owners:
    post:
      operationId: addOwner
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                firstName: {type: string}
                address: {type: object, properties: {city: {type: string}}}
      responses: {'200': {description: ok}}
  /pets/{petId}:
    put:
      operationId: updatePet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer}}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
      responses: {'200': {description: ok}}
"#,
            "t.yaml",
            None,
        )
        .expect("loads");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/dictionaries/petshop-ids.yaml");
        let d = Dictionary::load(&path).expect("loads");
        let got: Vec<String> = unusable_entries(&d, &api)
            .into_iter()
            .map(|l| l.split_once(": ").map(|(_, r)| r.to_string()).unwrap_or(l))
            .collect();
        let summary = unusable_summary(&d, &api).expect("some are unusable");
        assert!(
            summary.contains("4 of its 7 entries will never be used"),
            "{summary}"
        );
        assert!(
            summary.contains("1 for no such parameter in that operation (postcode in addOwner)"),
            "{summary}"
        );
        assert_eq!(
            got,
            vec![
                "body.address.city in addOwner: a piece of a body that is supplied whole, which is sent instead",
                "postcode in addOwner: no such parameter in that operation",
                "ownerId in getOwnerRenamedSince: no such operation in this API",
                "GET /oops: no such operation in this API (and nothing under it)",
            ]
        );
    }
}
