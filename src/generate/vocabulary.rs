//! What the document's operations consume, read once before a run: the names of their path
//! and query parameters (`book_title`, `username`, `pool_name`), and which parameter keys
//! the items of each collection (`/pools` → `pool_name`, from `/pools/{pool_name}`). The
//! memory of answers learns values under these names whatever they are, and only under
//! names some parameter takes, so it never grows with the fields an answer happens to carry.
//! The fields an item's update requires that no creation sends (a `checksum`) count as
//! taken too: the server made them, and the update sends back what the read gave.
//! Also the small word functions the memory names things with (`normalise`, `singular`).
//!
//! Depends on: `spec` (the operations), `model` (where a parameter is).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::Location;
use crate::spec::Api;

/// The names the document's parameters consume, normalised, and the parameter that keys
/// each collection's items.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Vocabulary {
    /// `booktitle`, `poolname`, ...: every path or query parameter's name.
    consumed: BTreeSet<String>,
    /// A collection's path with its parameters' names left out (`/dags/{}/dagRuns`) → the
    /// normalised names of the parameters that key its items (`dagrunid`).
    item_keys: BTreeMap<String, Vec<String>>,
}

impl Vocabulary {
    /// The vocabulary of the operations of `api`.
    pub fn of(api: &Api) -> Vocabulary {
        let mut vocabulary = Vocabulary::default();
        for op in &api.operations {
            for p in &op.parameters {
                if matches!(p.location, Location::Path | Location::Query) {
                    vocabulary.consumed.insert(normalise(&p.name));
                }
            }
            let trimmed = op.key.path.trim_end_matches('/');
            for name in echoed_fields(api, op) {
                vocabulary.consumed.insert(name);
            }
            let Some((collection, last)) = trimmed.rsplit_once('/') else {
                continue;
            };
            let Some(key) = last.strip_prefix('{').and_then(|l| l.strip_suffix('}')) else {
                continue;
            };
            let keys = vocabulary.item_keys.entry(shape(collection)).or_default();
            let key = normalise(key);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        vocabulary
    }

    /// Whether some parameter of the document takes values named `normalised`.
    pub fn consumes(&self, normalised: &str) -> bool {
        self.consumed.contains(normalised)
    }

    /// The parameters that key the items of `collection` (a path template), normalised.
    pub fn item_keys(&self, collection: &str) -> &[String] {
        self.item_keys
            .get(&shape(collection))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// The fields an item's update requires that no creation in its collection sends
/// (`checksum`, `version`, `etag`): the server made them, so a client sends back what
/// the item's read or list gave. Normalised; empty for other operations, and for an item
/// whose collection has no creation (then nothing tells made fields from chosen ones).
fn echoed_fields(api: &Api, op: &crate::spec::Operation) -> Vec<String> {
    let method = op.key.method.to_ascii_uppercase();
    let trimmed = op.key.path.trim_end_matches('/');
    let Some((collection, last)) = trimmed.rsplit_once('/') else {
        return Vec::new();
    };
    if !matches!(method.as_str(), "PUT" | "PATCH") || !last.starts_with('{') {
        return Vec::new();
    }
    let body_fields = |o: &crate::spec::Operation, required_only: bool| -> Vec<String> {
        let Some(schema) = o
            .request_body
            .as_ref()
            .and_then(|b| b.content.first())
            .and_then(|m| api.schemas.deref(&m.schema, 64))
        else {
            return Vec::new();
        };
        let listed = if required_only {
            schema.get("required").and_then(|r| r.as_array()).map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(normalise))
                    .collect::<Vec<_>>()
            })
        } else {
            schema
                .get("properties")
                .and_then(|p| p.as_object())
                .map(|p| p.keys().map(|k| normalise(k)).collect::<Vec<_>>())
        };
        listed.unwrap_or_default()
    };
    let creations: Vec<&crate::spec::Operation> = api
        .operations
        .iter()
        .filter(|o| {
            o.key.method.eq_ignore_ascii_case("POST") && shape(&o.key.path) == shape(collection)
        })
        .collect();
    if creations.is_empty() {
        return Vec::new();
    }
    let chosen: BTreeSet<String> = creations
        .iter()
        .flat_map(|o| body_fields(o, false))
        .collect();
    body_fields(op, true)
        .into_iter()
        .filter(|n| !chosen.contains(n))
        .collect()
}

/// A path template with its parameters' names left out: `/a/{x}/b` → `/a/{}/b`, `/a/` →
/// `/a`: paths that name the same resource whatever their parameters are called.
pub fn shape(path: &str) -> String {
    path.trim_end_matches('/')
        .split('/')
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                "{}"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `petId`, `pet_id`, `PetID` → `petid`.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// `buckets` → `bucket`, `categories` → `category`, `addresses` → `address`.
pub fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = word
        .strip_suffix("sses")
        .or_else(|| word.strip_suffix("xes"))
    {
        format!("{stem}{}", &word[stem.len()..word.len() - 2])
    } else if word.ends_with("ss") {
        word.to_owned()
    } else {
        word.strip_suffix('s').unwrap_or(word).to_owned()
    }
}

/// A name every resource uses for its own id (`id`, `uuid`, `name`, ...): alone, it says
/// nothing of which resource a value belongs to.
pub fn generic(normalised: &str) -> bool {
    matches!(
        normalised,
        "id" | "uuid" | "key" | "name" | "slug" | "identifier"
    )
}

/// A field that names the object it is in (`name`, `key`, `title`, ...): listed under a
/// collection, its values are what that collection's item parameter takes
/// (`pools[].name` → `pool_name`).
pub fn identifying(normalised: &str) -> bool {
    matches!(
        normalised,
        "id" | "uuid"
            | "key"
            | "name"
            | "title"
            | "username"
            | "login"
            | "slug"
            | "code"
            | "identifier"
            | "handle"
            | "label"
            | "uri"
            | "url"
            | "email"
            | "number"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_collections_read_as_singular_names() {
        assert_eq!(singular("buckets"), "bucket");
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("boxes"), "box");
        assert_eq!(singular("access"), "access");
    }

    #[test]
    fn shapes_leave_parameter_names_out() {
        assert_eq!(shape("/a/{x}/b/"), "/a/{}/b");
        assert_eq!(shape("/pools"), "/pools");
    }
}
