//! Memory of the API's own answers: identifiers the API handed out, offered back to path
//! parameters that name them (a POST's `id` flows into `GET /pets/{petId}`).
//!
//! Answers are learned in the order their cases were generated, never in the order they
//! arrived, so concurrency cannot change what is generated next (design §4).
//!
//! Depends on: `model`.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::model::Location;

/// Values kept per name; older ones are forgotten first.
const KEPT_PER_NAME: usize = 16;

/// Observed identifier values by normalised property name.
#[derive(Debug, Default, Clone)]
pub struct Memory {
    /// `petid` → values, each with where it came from.
    values: BTreeMap<String, Vec<Remembered>>,
}

/// One value the API answered, and where.
#[derive(Debug, Clone, PartialEq)]
struct Remembered {
    /// Path template of the operation that answered it.
    path: String,
    value: Value,
    source: Binding,
}

/// Where a recalled value came from: the answer of the interaction sent as `seq` in the
/// same run, at a JSON pointer into its body. Stored in a test case as `<seq>#<pointer>`,
/// so `probe replay` can re-send the source first and take the new value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub seq: u64,
    pub pointer: String,
}

impl Binding {
    /// `12#/id`.
    pub fn to_text(&self) -> String {
        format!("{}#{}", self.seq, self.pointer)
    }

    /// Parses `12#/id`.
    pub fn parse(text: &str) -> Option<Binding> {
        let (seq, pointer) = text.split_once('#')?;
        Some(Binding {
            seq: seq.parse().ok()?,
            pointer: pointer.to_owned(),
        })
    }
}

/// `petId`, `pet_id`, `PetID` → `petid`.
fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

impl Memory {
    /// Learns identifiers from a 2xx JSON answer of the operation at `path`, sent as `seq`.
    pub fn learn(&mut self, path: &str, seq: u64, body: &Value) {
        match body {
            Value::Object(map) => self.learn_object(path, seq, "", map),
            Value::Array(items) => {
                for (i, item) in items.iter().take(8).enumerate() {
                    if let Value::Object(map) = item {
                        self.learn_object(path, seq, &format!("/{i}"), map);
                    }
                }
            }
            _ => {}
        }
    }

    fn learn_object(
        &mut self,
        path: &str,
        seq: u64,
        prefix: &str,
        map: &serde_json::Map<String, Value>,
    ) {
        for (k, v) in map {
            let n = normalise(k);
            let id_like =
                n == "id" || n.ends_with("id") || n == "uuid" || n == "name" || n.ends_with("key");
            if !id_like || !matches!(v, Value::String(_) | Value::Number(_)) {
                continue;
            }
            let list = self.values.entry(n).or_default();
            if list.iter().any(|r| &r.value == v) {
                continue;
            }
            let key = k.replace('~', "~0").replace('/', "~1");
            list.push(Remembered {
                path: path.to_owned(),
                value: v.clone(),
                source: Binding {
                    seq,
                    pointer: format!("{prefix}/{key}"),
                },
            });
            if list.len() > KEPT_PER_NAME {
                list.remove(0);
            }
        }
    }

    /// Whether [`Memory::recall`] would find a value (drawing nothing).
    pub fn knows(&self, name: &str, location: Location, path: &str) -> bool {
        if location != Location::Path {
            return false;
        }
        let prefix = path.split('{').next().unwrap_or("").trim_end_matches('/');
        match self.values.get(&normalise(name)) {
            Some(list) if !list.is_empty() => true,
            _ => self.values.get("id").is_some_and(|list| {
                list.iter()
                    .any(|r| !prefix.is_empty() && r.path.trim_end_matches('/') == prefix)
            }),
        }
    }

    /// A value for the parameter `name` of the operation at `path`, if the API answered one:
    /// the exact name (`petId`), else `id` from an operation whose path is a prefix of this
    /// one (`POST /pets` answering for `/pets/{petId}`). Path parameters only.
    pub fn recall(
        &self,
        name: &str,
        location: Location,
        path: &str,
        rng: &mut ChaCha8Rng,
    ) -> Option<(Value, Binding)> {
        if location != Location::Path {
            return None;
        }
        let prefix = path.split('{').next().unwrap_or("").trim_end_matches('/');
        let candidates: Vec<&Remembered> = match self.values.get(&normalise(name)) {
            Some(list) if !list.is_empty() => list.iter().collect(),
            _ => self
                .values
                .get("id")
                .map(|list| {
                    list.iter()
                        .filter(|r| !prefix.is_empty() && r.path.trim_end_matches('/') == prefix)
                        .collect()
                })
                .unwrap_or_default(),
        };
        if candidates.is_empty() {
            return None;
        }
        // Mostly the newest (what was just created), sometimes an older one.
        let pick = if rng.gen_bool(0.7) {
            candidates.len() - 1
        } else {
            rng.gen_range(0..candidates.len())
        };
        let r = candidates[pick];
        Some((r.value.clone(), r.source.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    #[test]
    fn a_created_id_flows_into_the_item_path() {
        let mut m = Memory::default();
        m.learn("/pets", 3, &json!({"id": 7, "name": "Rex"}));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (value, source) = m
            .recall("petId", Location::Path, "/pets/{petId}", &mut rng)
            .unwrap();
        assert_eq!(value, json!(7));
        assert_eq!(source.to_text(), "3#/id");
        assert_eq!(Binding::parse("3#/id"), Some(source));
        assert_eq!(
            m.recall("petId", Location::Query, "/pets/{petId}", &mut rng),
            None
        );
        assert_eq!(
            m.recall("orderId", Location::Path, "/orders/{orderId}", &mut rng),
            None
        );
    }
}
