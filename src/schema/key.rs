//! Schemas as cache keys: a structural hash and an exact comparison, so that what is worked
//! out once for a schema (a compiled validator, a flattened `allOf`) is found again without
//! serialising the schema to text for every lookup (a schema's text was the key once, and
//! writing and hashing it cost a tenth of generating a test case: docs/benchmarks.md,
//! "schemas as cache keys").
//!
//! Two schemas are the same key exactly when their serialised texts would be the same: the
//! hash and the comparison both follow object members in their order (the document's), so a
//! lookup never hands out what was worked out for a schema that only looks alike.
//!
//! Depends on nothing within probe.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;

use serde_json::{Map, Value};

/// Distinct schemas a [`SchemaMap`] keeps by default before it starts again: every key comes
/// from a document, so a run meets few; the bound only keeps a pathological one from growing
/// it without end.
const KEPT: usize = 4_096;

/// A map from schemas (values or schema objects) to what was worked out for them. Shared:
/// `&self` methods behind a mutex.
pub struct SchemaMap<T> {
    entries: Mutex<Entries<T>>,
    limit: usize,
}

struct Entries<T> {
    by_hash: HashMap<u64, Vec<(Value, T)>, foldhash::fast::FixedState>,
    len: usize,
}

impl<T> Default for SchemaMap<T> {
    fn default() -> Self {
        SchemaMap::with_limit(KEPT)
    }
}

impl<T> SchemaMap<T> {
    /// A map that keeps at most `limit` schemas, then starts again.
    pub fn with_limit(limit: usize) -> Self {
        SchemaMap {
            entries: Mutex::new(Entries {
                by_hash: HashMap::with_hasher(foldhash::fast::FixedState::default()),
                len: 0,
            }),
            limit: limit.max(1),
        }
    }
}

impl<T: Clone> SchemaMap<T> {
    /// What is kept for `schema`, else what `make` gives, kept (an error is not kept).
    /// `make` runs outside the lock: two threads may both make it, which is harmless.
    pub fn get_or_try_insert_with<E>(
        &self,
        schema: &Value,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.find_or_make(
            hash_value(schema),
            |v| same(v, schema),
            make,
            || schema.clone(),
        )
    }

    /// [`SchemaMap::get_or_try_insert_with`] keyed by a schema object.
    pub fn get_or_try_insert_with_map<E>(
        &self,
        schema: &Map<String, Value>,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.find_or_make(
            hash_object(schema),
            |v| matches!(v, Value::Object(m) if same_object(m, schema)),
            make,
            || Value::Object(schema.clone()),
        )
    }

    fn find_or_make<E>(
        &self,
        hash: u64,
        is_key: impl Fn(&Value) -> bool,
        make: impl FnOnce() -> Result<T, E>,
        key: impl FnOnce() -> Value,
    ) -> Result<T, E> {
        if let Some(found) = self
            .lock()
            .by_hash
            .get(&hash)
            .and_then(|bucket| bucket.iter().find(|(k, _)| is_key(k)))
            .map(|(_, t)| t.clone())
        {
            return Ok(found);
        }
        let made = make()?;
        let mut entries = self.lock();
        if entries.len >= self.limit {
            entries.by_hash.clear();
            entries.len = 0;
        }
        entries
            .by_hash
            .entry(hash)
            .or_default()
            .push((key(), made.clone()));
        entries.len += 1;
        Ok(made)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<T>> {
        // A panic elsewhere while holding the lock leaves the map intact; keep using it.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The structural hash of a value: equal for values [`same`] calls the same.
pub fn hash_value(v: &Value) -> u64 {
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    feed(&mut h, v);
    h.finish()
}

/// [`hash_value`] of `Value::Object(map)`, without building it.
pub fn hash_object(map: &Map<String, Value>) -> u64 {
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    feed_object(&mut h, map);
    h.finish()
}

fn feed(h: &mut impl Hasher, v: &Value) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            h.write_u8(*b as u8);
        }
        Value::Number(n) => {
            h.write_u8(2);
            if let Some(u) = n.as_u64() {
                h.write_u8(0);
                h.write_u64(u);
            } else if let Some(i) = n.as_i64() {
                h.write_u8(1);
                h.write_i64(i);
            } else {
                h.write_u8(2);
                h.write_u64(n.as_f64().unwrap_or(f64::NAN).to_bits());
            }
        }
        Value::String(s) => {
            h.write_u8(3);
            h.write_usize(s.len());
            h.write(s.as_bytes());
        }
        Value::Array(items) => {
            h.write_u8(4);
            h.write_usize(items.len());
            items.iter().for_each(|x| feed(h, x));
        }
        Value::Object(map) => feed_object(h, map),
    }
}

fn feed_object(h: &mut impl Hasher, map: &Map<String, Value>) {
    h.write_u8(5);
    h.write_usize(map.len());
    for (k, x) in map {
        h.write_usize(k.len());
        h.write(k.as_bytes());
        feed(h, x);
    }
}

/// Whether two values serialise to the same text: like `==`, but object members must also
/// come in the same order.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        _ => a == b,
    }
}

fn same_object(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same(p, q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_the_same_key_exactly_when_their_texts_are() {
        let values = [
            json!({"type": "integer", "minimum": 1}),
            json!({"minimum": 1, "type": "integer"}),
            json!({"type": "integer", "minimum": 1.0}),
            json!({"type": "integer", "minimum": -1}),
            json!({"type": "integer"}),
            json!({"allOf": [{"type": "string"}, {"minLength": 1}]}),
            json!({"allOf": [{"minLength": 1}, {"type": "string"}]}),
            json!([1, 2]),
            json!([2, 1]),
            json!("a"),
            json!(null),
            json!(true),
            json!(false),
        ];
        for a in &values {
            for b in &values {
                let (text_a, text_b) = (a.to_string(), b.to_string());
                let texts_equal = text_a == text_b;
                assert_eq!(same(a, b), texts_equal, "{a} against {b}");
                if texts_equal {
                    assert_eq!(hash_value(a), hash_value(b), "{a}");
                }
            }
            if let Value::Object(map) = a {
                assert_eq!(hash_object(map), hash_value(a), "{a}");
            }
        }
        // Member order is part of the key.
        assert_ne!(hash_value(&values[0]), hash_value(&values[1]));
    }

    #[test]
    fn a_kept_result_is_found_again_and_errors_are_not_kept() {
        let map: SchemaMap<u32> = SchemaMap::default();
        let schema = json!({"type": "string", "maxLength": 3});
        let mut made = 0;
        for _ in 0..3 {
            let got = map.get_or_try_insert_with(&schema, || {
                made += 1;
                Ok::<_, ()>(7)
            });
            assert_eq!(got, Ok(7));
        }
        assert_eq!(made, 1, "made once, then found");
        let Value::Object(object) = &schema else {
            unreachable!()
        };
        assert_eq!(
            map.get_or_try_insert_with_map(object, || Err::<u32, _>("not asked")),
            Ok(7),
            "an object finds what its value keeps"
        );
        let other = json!({"maxLength": 3, "type": "string"});
        assert_eq!(map.get_or_try_insert_with(&other, || Err("no")), Err("no"));
        assert_eq!(map.get_or_try_insert_with(&other, || Ok::<_, ()>(8)), Ok(8));
    }
}
