//! Strict YAML reading shared by the plan and dictionary files: a key written twice anywhere
//! is refused (serde_yaml lets a typed map quietly keep the last one, so every file is first
//! read as an untyped value, which refuses duplicates with a line), and YAML's extra kinds are
//! refused where JSON is meant (tags, non-text keys, numbers JSON cannot hold).
//!
//! Depends on nothing else in probe.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A file that cannot be used: which file, where in it, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct FileError {
    /// The file as named by the user.
    pub file: String,
    /// What is wrong, with the place in the file (`strategies[1].share`, a line and column).
    pub message: String,
}

impl FileError {
    pub fn new(file: &str, message: impl Into<String>) -> FileError {
        FileError {
            file: file.to_string(),
            message: message.into(),
        }
    }
}

/// Reads `text` as `T`, refusing duplicate keys anywhere and (through `T`'s
/// `deny_unknown_fields`) unknown members, each with the place and line.
pub fn strict<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, FileError> {
    if let Err(e) = serde_yaml::from_str::<serde_yaml::Value>(text) {
        return Err(FileError::new(file, e.to_string()));
    }
    serde_yaml::from_str::<T>(text).map_err(|e| FileError::new(file, e.to_string()))
}

/// A YAML value as JSON, refusing what JSON cannot say. `at` names the place for messages.
pub fn to_json(v: &serde_yaml::Value, at: &str) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    Ok(match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{at}: {n} is not a number JSON can hold"))?
            }
        }
        Y::String(s) => Value::String(s.clone()),
        Y::Sequence(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| to_json(x, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let Y::String(key) = k else {
                    return Err(format!(
                        "{at}: a key of an object must be text, found {}",
                        describe(k)
                    ));
                };
                out.insert(key.clone(), to_json(x, &format!("{at}.{key}"))?);
            }
            Value::Object(out)
        }
        Y::Tagged(t) => {
            return Err(format!(
                "{at}: YAML tag `{}` has no JSON meaning; quote the value to send it as text",
                t.tag
            ))
        }
    })
}

/// A few words for a YAML value, for messages.
pub fn describe(v: &serde_yaml::Value) -> String {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => "nothing (null)".into(),
        Y::Bool(b) => format!("`{b}`"),
        Y::Number(n) => format!("the number {n}"),
        Y::String(s) => format!("`{s}`"),
        Y::Sequence(_) => "a list".into(),
        Y::Mapping(_) => "an object".into(),
        Y::Tagged(t) => format!("a value tagged `{}`", t.tag),
    }
}

/// Reads a file, turning an I/O failure into a [`FileError`] the engine can report.
pub fn read(path: &std::path::Path) -> Result<String, FileError> {
    let file = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| FileError::new(&file, format!("cannot be read: {e}")))?;
    String::from_utf8(bytes).map_err(|_| FileError::new(&file, "is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct T {
        a: u32,
        m: std::collections::BTreeMap<String, u32>,
    }

    #[test]
    fn duplicates_are_refused_even_in_maps() {
        let e = strict::<T>("a: 1\nm:\n  x: 1\n  x: 2\n", "f.yaml").unwrap_err();
        assert_eq!(e.file, "f.yaml");
        assert!(
            e.message.contains("duplicate entry with key \"x\""),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("m: ") && e.message.contains("line 3"),
            "{}",
            e.message
        );
        let e = strict::<T>("a: 1\na: 2\nm: {}\n", "f.yaml").unwrap_err();
        assert!(e.message.contains("duplicate"), "{}", e.message);
    }

    #[test]
    fn unknown_members_are_refused_with_their_place() {
        let e = strict::<T>("a: 1\nm: {}\nb: 2\n", "f.yaml").unwrap_err();
        assert!(e.message.contains("unknown field `b`"), "{}", e.message);
        assert!(e.message.contains("line 3"), "{}", e.message);
    }

    #[test]
    fn yaml_only_kinds_are_refused() {
        let v: serde_yaml::Value =
            serde_yaml::from_str("{1: a}").unwrap_or(serde_yaml::Value::Null);
        assert!(to_json(&v, "values").is_err());
        let v: serde_yaml::Value =
            serde_yaml::from_str("!thing 3").unwrap_or(serde_yaml::Value::Null);
        assert!(to_json(&v, "values").unwrap_err().contains("tag"));
        let v: serde_yaml::Value = serde_yaml::from_str(".nan").unwrap_or(serde_yaml::Value::Null);
        assert!(to_json(&v, "values").is_err());
        let v: serde_yaml::Value = serde_yaml::from_str("{a: [1, 2.5, x, null, {b: true}]}")
            .unwrap_or(serde_yaml::Value::Null);
        assert_eq!(
            to_json(&v, "v"),
            Ok(serde_json::json!({"a": [1, 2.5, "x", null, {"b": true}]}))
        );
    }
}
