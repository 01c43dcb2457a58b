//! Places: where in an accepted request a change can go, named in dictionary notation
//! (`limit`, `body`, `body.owner.email`, `body.tags[].label`), and the walk that finds them.
//!
//! The walk follows the body alongside its shape (docs/design-notes.md, Where a change never goes): every property, one element of
//! each list (chosen by the caller's picker), as deep as the nesting limit, through references
//! and `allOf` (merged), and no further than a choice (`anyOf`, `oneOf`, `not`, `if`) or a shape
//! that cannot be followed. Read-only properties are not places: a request does not carry them.
//!
//! Depends on: `model`, `spec::model`, `schema::keyword`.

use crate::schema::keyword::Keywords;
use serde_json::{Map, Value};

use crate::model::Location;
use crate::spec::SchemaSet;

/// How many `$ref` hops are followed before a shape is declared unfollowable.
pub(crate) const REF_LIMIT: usize = 64;
/// How deep `allOf` members are merged.
const ALLOF_DEPTH: usize = 12;

/// One step into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// What a place belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// A parameter the accepted request carried (top level only).
    Parameter { location: Location, name: String },
    /// The JSON body (the path empty: the body as a whole).
    Body,
}

/// A place a change can go.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    pub target: Target,
    /// Steps inside the value (always empty for a parameter).
    pub path: Vec<Step>,
}

impl Place {
    pub fn parameter(location: Location, name: &str) -> Place {
        Place {
            target: Target::Parameter {
                location,
                name: name.to_string(),
            },
            path: Vec::new(),
        }
    }

    pub fn body(path: Vec<Step>) -> Place {
        Place {
            target: Target::Body,
            path,
        }
    }

    /// Dictionary notation: `limit`, `body`, `body.owner.email`, `body.tags[].label`.
    pub fn name(&self) -> String {
        let mut out = match &self.target {
            Target::Parameter { name, .. } => name.clone(),
            Target::Body => "body".to_string(),
        };
        for step in &self.path {
            match step {
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(_) => out.push_str("[]"),
            }
        }
        out
    }

    /// The JSON pointer of the place inside its value (`""` for the value itself).
    pub fn pointer(&self) -> String {
        pointer_of(&self.path)
    }

    pub fn is_body(&self) -> bool {
        self.target == Target::Body
    }
}

/// JSON pointer of a path.
pub fn pointer_of(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Key(k) => out.push_str(&super::check::escape(k)),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// The value at `path`.
pub fn get<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    let mut at = value;
    for step in path {
        at = match (step, at) {
            (Step::Key(k), Value::Object(m)) => m.get(k)?,
            (Step::Index(i), Value::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

/// The value at `path`, mutably.
pub fn get_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    let mut at = value;
    for step in path {
        at = match (step, at) {
            (Step::Key(k), Value::Object(m)) => m.get_mut(k)?,
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Removes the member or element at `path`; false when there is none.
pub fn remove(value: &mut Value, path: &[Step]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    match (get_mut(value, parent), last) {
        (Some(Value::Object(m)), Step::Key(k)) => m.shift_remove(k).is_some(),
        (Some(Value::Array(a)), Step::Index(i)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}

/// A shape's constraints as one object: references followed, `allOf` members merged in (the
/// first statement of a keyword wins, `properties` and `required` are united). `None` when
/// the shape cannot be followed (a dangling or circular reference). The validator has the last
/// word on every change, so a merge that is looser than the truth costs a candidate, never a
/// false intent.
pub fn facets(schemas: &SchemaSet, schema: &Value) -> Option<Map<String, Value>> {
    facets_at(schemas, schema, 0)
}

fn facets_at(schemas: &SchemaSet, schema: &Value, depth: usize) -> Option<Map<String, Value>> {
    if depth > ALLOF_DEPTH {
        return None;
    }
    let schema = schemas.deref(schema, REF_LIMIT)?;
    let mut out = match schema {
        Value::Bool(true) => return Some(Map::new()),
        Value::Bool(false) => {
            let mut m = Map::new();
            m.insert("not".into(), Value::Object(Map::new()));
            return Some(m);
        }
        Value::Object(m) => m.clone(),
        _ => return Some(Map::new()),
    };
    if let Some(Value::Array(all)) = out.remove("allOf") {
        for member in &all {
            let m = facets_at(schemas, member, depth + 1)?;
            for (k, v) in m {
                match (k.as_str(), out.get_mut(&k)) {
                    ("properties", Some(Value::Object(mine))) => {
                        if let Value::Object(theirs) = v {
                            for (name, s) in theirs {
                                mine.entry(name).or_insert(s);
                            }
                        }
                    }
                    ("required", Some(Value::Array(mine))) => {
                        if let Value::Array(theirs) = v {
                            for name in theirs {
                                if !mine.contains(&name) {
                                    mine.push(name);
                                }
                            }
                        }
                    }
                    (_, Some(_)) => {}
                    (_, None) => {
                        out.insert(k, v);
                    }
                }
            }
        }
    }
    Some(out)
}

/// The declared JSON types of a facet set (`type` as a word or a list); empty when none.
pub fn types(f: &Map<String, Value>) -> Vec<String> {
    match f.keyword("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether the facets are a choice the walk does not look past.
pub fn is_choice(f: &Map<String, Value>) -> bool {
    ["anyOf", "oneOf", "not", "if"]
        .iter()
        .any(|k| f.has_keyword(k))
}

/// The names a facet set says are required.
pub fn required(f: &Map<String, Value>) -> Vec<String> {
    f.keyword("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// One place inside a body, found by [`walk_body`].
#[derive(Clone, Debug)]
pub struct BodyNode {
    pub path: Vec<Step>,
    /// The shape as written there (maybe a `$ref`).
    pub schema: Value,
    /// Its merged constraints; `None` when the shape cannot be followed.
    pub facets: Option<Map<String, Value>>,
    /// The member is named in its parent's `required`.
    pub required: bool,
}

/// Walks `value` alongside `schema`: every property, one element of each list (index from
/// `pick(len)`), no deeper than `max_depth` steps. The root is included (empty path).
pub fn walk_body(
    schemas: &SchemaSet,
    schema: &Value,
    value: &Value,
    max_depth: usize,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Vec<BodyNode> {
    let mut out = Vec::new();
    walk(
        schemas,
        schema,
        value,
        Vec::new(),
        false,
        max_depth,
        pick,
        &mut out,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn walk(
    schemas: &SchemaSet,
    schema: &Value,
    value: &Value,
    path: Vec<Step>,
    required_here: bool,
    max_depth: usize,
    pick: &mut dyn FnMut(usize) -> usize,
    out: &mut Vec<BodyNode>,
) {
    let f = facets(schemas, schema);
    if f.as_ref()
        .is_some_and(|f| f.keyword("readOnly") == Some(&Value::Bool(true)))
    {
        return;
    }
    out.push(BodyNode {
        path: path.clone(),
        schema: schema.clone(),
        facets: f.clone(),
        required: required_here,
    });
    let Some(f) = f else { return };
    if is_choice(&f) || path.len() >= max_depth {
        return;
    }
    match value {
        Value::Object(members) => {
            let props = f.keyword("properties").and_then(Value::as_object);
            let req = required(&f);
            for (k, v) in members {
                // Undeclared members are skipped: nothing the document states is about them.
                let Some(sub) = props.and_then(|p| p.get(k)) else {
                    continue;
                };
                let mut p = path.clone();
                p.push(Step::Key(k.clone()));
                walk(schemas, sub, v, p, req.contains(k), max_depth, pick, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = pick(items.len()).min(items.len() - 1);
            let prefix = f.keyword("prefixItems").and_then(Value::as_array);
            let sub = prefix.and_then(|p| p.get(i)).or_else(|| f.keyword("items"));
            if let (Some(sub), Some(v)) = (sub, items.get(i)) {
                let mut p = path.clone();
                p.push(Step::Index(i));
                walk(schemas, sub, v, p, false, max_depth, pick, out);
            }
        }
        _ => {}
    }
}

/// Whether a body media type is JSON (`application/json`, `*/*+json`, `*/json`).
pub fn is_json_media(media: &str) -> bool {
    let essence = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence.ends_with("+json")
        || essence.ends_with("/json")
        || essence == "*/*"
}

/// `root` with the value at `path` set to `with` (`None`: removed from its object or array;
/// an object gains the key when it lacked it). `None` when a parent on the way is missing.
pub(crate) fn edited(root: &Value, path: &[String], with: Option<Value>) -> Option<Value> {
    let mut out = root.clone();
    let (last, parents) = path.split_last()?;
    let mut at = &mut out;
    for step in parents {
        at = match at {
            Value::Object(map) => map.get_mut(step)?,
            Value::Array(items) => items.get_mut(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match (at, with) {
        (Value::Object(map), None) => {
            map.remove(last)?;
        }
        (Value::Object(map), Some(v)) => {
            map.insert(last.clone(), v);
        }
        (Value::Array(items), None) => {
            let i = last.parse::<usize>().ok()?;
            (i < items.len()).then(|| items.remove(i))?;
        }
        (Value::Array(items), Some(v)) => {
            *items.get_mut(last.parse::<usize>().ok()?)? = v;
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_in_dictionary_notation() {
        let p = Place::body(vec![
            Step::Key("tags".into()),
            Step::Index(2),
            Step::Key("label".into()),
        ]);
        assert_eq!(p.name(), "body.tags[].label");
        assert_eq!(p.pointer(), "/tags/2/label");
        assert_eq!(Place::body(vec![]).name(), "body");
        assert_eq!(Place::parameter(Location::Query, "limit").name(), "limit");
    }

    #[test]
    fn walk_merges_all_of_skips_read_only_and_stops_at_choices() {
        let mut defs = std::collections::BTreeMap::new();
        defs.insert(
            "Base".to_string(),
            json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer", "readOnly": true}, "name": {"type": "string"}}}),
        );
        let s = SchemaSet { defs };
        let schema = json!({"allOf": [{"$ref": "#/$defs/Base"}, {"type": "object", "required": ["name"],
            "properties": {"pick": {"anyOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {"type": "null"}]},
                           "tags": {"type": "array", "items": {"type": "string"}}}}]});
        let value = json!({"id": 1, "name": "n", "pick": {"x": "y"}, "tags": ["a", "b"]});
        let nodes = walk_body(&s, &schema, &value, 8, &mut |_| 1);
        let names: Vec<String> = nodes
            .iter()
            .map(|n| Place::body(n.path.clone()).name())
            .collect();
        assert_eq!(
            names,
            vec!["body", "body.name", "body.pick", "body.tags", "body.tags[]"]
        );
        assert!(nodes[1].required);
        assert_eq!(nodes[4].path.last(), Some(&Step::Index(1)));
    }
}
