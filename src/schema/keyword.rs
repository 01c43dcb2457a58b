//! Reading a keyword of a schema object without hashing its name.
//!
//! probe keeps `serde_json`'s `preserve_order` feature (documents keep their property
//! order, and generated bodies follow it), so a JSON object is an `IndexMap` that hashes
//! every name it is asked for with SipHash: about 170 instructions a lookup. Generating,
//! mutating and judging a value ask its schema object for a dozen keywords or more, most of
//! them absent, and a schema object holds a handful. Scanning a handful of keys compares
//! their lengths first and costs a few instructions for each, so small objects are scanned
//! and large ones (a `properties` map of a wide object) still hashed.
//!
//! Depends on `serde_json` only.

use serde_json::{Map, Value};

/// Objects up to this many members are scanned rather than hashed.
const SCAN_UP_TO: usize = 12;

/// Keyword lookup on a JSON object, by scan for small objects.
pub trait Keywords {
    /// The member called `name`, as [`Map::get`] would find it.
    fn keyword(&self, name: &str) -> Option<&Value>;

    /// Whether a member is called `name`, as [`Map::contains_key`] would say.
    fn has_keyword(&self, name: &str) -> bool {
        self.keyword(name).is_some()
    }
}

impl Keywords for Map<String, Value> {
    fn keyword(&self, name: &str) -> Option<&Value> {
        if self.len() <= SCAN_UP_TO {
            // Names are unique in a map, so the first match is the one.
            self.iter().find_map(|(k, v)| (k == name).then_some(v))
        } else {
            self.get(name)
        }
    }
}

impl Keywords for Value {
    fn keyword(&self, name: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.keyword(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn finds_what_get_finds_in_small_and_large_objects() {
        let small = serde_json::json!({"type": "integer", "minimum": 1});
        assert_eq!(small.keyword("minimum"), Some(&serde_json::json!(1)));
        assert_eq!(small.keyword("maximum"), None);
        assert!(small.has_keyword("type"));
        let mut large = Map::new();
        for i in 0..40 {
            large.insert(format!("p{i}"), Value::from(i));
        }
        assert_eq!(large.keyword("p33"), Some(&Value::from(33)));
        assert_eq!(large.keyword("p40"), None);
        assert_eq!(Value::from(3).keyword("type"), None);
    }

    proptest! {
        /// Whatever the object and the name, the scan and the hash agree.
        #[test]
        fn agrees_with_get(
            names in proptest::collection::vec("[a-zA-Z$]{0,6}", 0..30),
            asked in "[a-zA-Z$]{0,6}",
        ) {
            let map: Map<String, Value> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), Value::from(i)))
                .collect();
            prop_assert_eq!(map.keyword(&asked), map.get(&asked));
            prop_assert_eq!(map.has_keyword(&asked), map.contains_key(&asked));
            for n in &names {
                prop_assert_eq!(map.keyword(n), map.get(n));
            }
        }
    }
}
