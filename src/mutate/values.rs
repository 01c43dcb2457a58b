//! The values the operators draw on, and the rules for what a value is once it has travelled.
//!
//! - words that look like a named format and are not ([`format_breakers`]);
//! - the values of the wrong kind (docs/design-notes.md, Values of the wrong kind): the awkward list plus the class's own;
//! - how a parameter's word is read on the other side ([`wire_reading`]): every parameter is
//!   text on the wire, so `"1e3"` sent for an integer is the integer 1000, and a wrong type is
//!   judged by what the word reads as, not by the JSON type it was held in;
//! - what can travel where ([`can_travel`]): nothing empty in a path, nothing a header would
//!   arrive without (surrounding spaces, control characters, non-ASCII).
//!
//! Depends on: `model::Location`, `mutate::awkward`.

use serde_json::{json, Value};

use crate::model::Location;

/// Longest word put into a parameter by `wrongType`: an oversized word in an address or a
/// header would be refused for its length, not its kind.
pub const PARAMETER_WORD_LIMIT: usize = 512;

/// Words that look like `format` and are not, most telling first. Empty for a format whose
/// rules are not fixed.
pub fn format_breakers(format: &str) -> Vec<&'static str> {
    match format {
        "date" => vec!["2021-02-30", "2021-13-01", "2021-1-1", "20210101"],
        "date-time" => vec![
            "2021-01-01T24:00:00Z",
            "2021-02-30T10:00:00Z",
            "2021-01-01T10:61:00Z",
            "2021-01-01 10:00",
        ],
        "time" => vec!["24:00:00Z", "10:60:00Z", "10:00:61Z", "1000"],
        "email" => vec!["a@b.", "a.b.example", "@example.com", "a@@example.com"],
        "uuid" => vec![
            "123e4567-e89b-12d3-a456",
            "123e4567-e89b-12d3-a456-42661417400g",
            "123e4567e89b12d3a456",
        ],
        "uri" | "url" => vec!["http://exa mple.com/", "://no-scheme", "not a uri"],
        "ipv4" => vec!["256.1.1.1", "1.1.1", "1.1.1.1.1"],
        "ipv6" => vec!["1:2:3:4:5:6:7:8:9", "12345::", "::g"],
        "hostname" => vec!["-bad-.example", "a..example", "exa mple.com"],
        _ => Vec::new(),
    }
}

/// The few values of the wrong kind the change keeps for itself, beside the awkward list.
pub fn own_wrong_kinds() -> Vec<Value> {
    vec![
        json!(1.5),
        json!(0.5),
        json!("1"),
        json!("1.5"),
        json!("true"),
        json!([[]]),
        json!([[], []]),
        json!([{}]),
    ]
}

/// The words `wrongType` tries in a parameter declared a number or a yes-or-no.
pub fn parameter_wrong_words() -> Vec<&'static str> {
    vec![
        "1.5",
        "1e3",
        "1",
        "0",
        "0x1A",
        "NaN",
        "Infinity",
        "-Infinity",
        "1,5",
        "one",
        "true",
        "false",
        "yes",
        "abc",
        "1.0.0",
        "--1",
        "12abc",
        "null",
        "[]",
        "{}",
    ]
}

/// JSON type names a value has (`integer` values are also `number`).
pub fn kinds_of(v: &Value) -> &'static [&'static str] {
    match v {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) => {
            let whole = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            if whole {
                &["integer", "number"]
            } else {
                &["number"]
            }
        }
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// Whether `v` is of one of the declared types (`number` admits whole numbers).
pub fn admitted_by(declared: &[String], v: &Value) -> bool {
    let kinds = kinds_of(v);
    declared.iter().any(|t| kinds.contains(&t.as_str()))
}

/// Whether what `v` reads as on the other side ([`wire_reading`]) is of a declared type;
/// the same answer as `admitted_by(declared, &wire_reading(declared, v))`, without copying
/// the word (mutation asks this of a hundred words per candidate list).
pub fn reads_as_declared(declared: &[String], v: &Value) -> bool {
    let Value::String(word) = v else {
        return admitted_by(declared, v);
    };
    match word_reading(declared, word) {
        Some(reading) => admitted_by(declared, &reading),
        None => declared.iter().any(|t| t == "string"),
    }
}

/// What a parameter's value reads as on the other side, judged against the declared types:
/// a word that reads as a number where a number is declared is that number (`1e3` is the
/// integer 1000), `true`/`false` where a yes-or-no is declared are booleans. Anything else is
/// the word itself.
pub fn wire_reading(declared: &[String], v: &Value) -> Value {
    match v {
        Value::String(word) => word_reading(declared, word).unwrap_or_else(|| v.clone()),
        _ => v.clone(),
    }
}

/// A word's reading when it is not the word itself: a number where a number is declared,
/// a yes-or-no where one is declared.
fn word_reading(declared: &[String], word: &str) -> Option<Value> {
    let wants_number = declared.iter().any(|t| t == "integer" || t == "number");
    if wants_number {
        if let Some(n) = read_number(word) {
            return Some(n);
        }
    }
    if declared.iter().any(|t| t == "boolean") && (word == "true" || word == "false") {
        return Some(Value::Bool(word == "true"));
    }
    None
}

/// A word read as a JSON number the way a lenient reader would: finite decimals and exponents;
/// no hexadecimal, no `NaN`, no infinities, no surrounding space.
fn read_number(word: &str) -> Option<Value> {
    if word.is_empty() || word.trim() != word {
        return None;
    }
    if !word
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
    {
        return None;
    }
    if let Ok(i) = word.parse::<i64>() {
        return Some(json!(i));
    }
    if let Ok(u) = word.parse::<u64>() {
        return Some(json!(u));
    }
    let f = word.parse::<f64>().ok().filter(|f| f.is_finite())?;
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        // A whole number written with an exponent or a point reads as a whole number.
        return Some(json!(f as i64));
    }
    serde_json::Number::from_f64(f).map(Value::Number)
}

/// The text a parameter value travels as (a word as itself, anything else as JSON).
pub fn wire_text(v: &Value) -> String {
    wire_text_borrowed(v).into_owned()
}

/// [`wire_text`] without copying a string.
fn wire_text_borrowed(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(other.to_string()),
    }
}

/// Whether a value can travel in a parameter at `location` as written.
pub fn can_travel(location: Location, v: &Value) -> bool {
    if matches!(v, Value::Array(_) | Value::Object(_) | Value::Null) {
        return false;
    }
    // Borrowed: asked of every word of the mutation pools.
    let text = wire_text_borrowed(v);
    match location {
        Location::Path => !text.is_empty() && !text.contains('/'),
        Location::Query => true,
        Location::Header => header_safe(&text),
        Location::Cookie => {
            header_safe(&text)
                && !text
                    .chars()
                    .any(|c| matches!(c, ';' | ',' | '"' | '\\' | ' '))
        }
    }
}

fn header_safe(text: &str) -> bool {
    text.trim() == text && text.chars().all(|c| c == ' ' || c.is_ascii_graphic())
}

/// Whether a name can be carried as a header or cookie name (an HTTP token).
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '!' | '#'
                        | '$'
                        | '%'
                        | '&'
                        | '\''
                        | '*'
                        | '+'
                        | '-'
                        | '.'
                        | '^'
                        | '_'
                        | '`'
                        | '|'
                        | '~'
                )
        })
}

/// Headers the client writes itself: never left out or moved, the client would put them back.
pub fn client_written_header(name: &str) -> bool {
    const NAMES: [&str; 12] = [
        "accept",
        "accept-encoding",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "cookie",
        "host",
        "transfer-encoding",
        "user-agent",
        "te",
        "expect",
    ];
    NAMES.contains(&name.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_read_as_numbers_where_numbers_are_declared() {
        let int = vec!["integer".to_string()];
        assert_eq!(wire_reading(&int, &json!("1e3")), json!(1000));
        assert_eq!(wire_reading(&int, &json!("1.5")), json!(1.5));
        assert_eq!(wire_reading(&int, &json!("0x1A")), json!("0x1A"));
        assert_eq!(wire_reading(&int, &json!("NaN")), json!("NaN"));
        assert_eq!(wire_reading(&int, &json!(" 1")), json!(" 1"));
        let b = vec!["boolean".to_string()];
        assert_eq!(wire_reading(&b, &json!("true")), json!(true));
        assert_eq!(wire_reading(&b, &json!("1")), json!("1"));
    }

    #[test]
    fn reads_as_declared_agrees_with_admitting_the_wire_reading() {
        let sets: Vec<Vec<String>> = [
            &["integer"][..],
            &["number"],
            &["boolean"],
            &["null"],
            &["string"],
            &["integer", "null"],
            &["number", "boolean"],
            &["integer", "string"],
        ]
        .iter()
        .map(|s| s.iter().map(|t| t.to_string()).collect())
        .collect();
        let mut values: Vec<Value> = parameter_wrong_words()
            .into_iter()
            .map(|w| json!(w))
            .collect();
        values.extend(
            crate::mutate::awkward::list()
                .iter()
                .map(|(_, v)| v.clone()),
        );
        values.extend([
            json!("1e3"),
            json!("-0"),
            json!("true"),
            json!(1),
            json!(1.5),
            json!(null),
        ]);
        for declared in &sets {
            for v in &values {
                assert_eq!(
                    reads_as_declared(declared, v),
                    admitted_by(declared, &wire_reading(declared, v)),
                    "{v} against {declared:?}"
                );
            }
        }
    }

    #[test]
    fn travel_rules() {
        assert!(!can_travel(Location::Path, &json!("")));
        assert!(!can_travel(Location::Header, &json!(" x")));
        assert!(!can_travel(Location::Header, &json!("é")));
        assert!(can_travel(Location::Header, &json!("a b")));
        assert!(can_travel(Location::Query, &json!("")));
        assert!(!can_travel(Location::Cookie, &json!("a;b")));
        assert!(is_token("X-Request-Id"));
        assert!(!is_token("bad name"));
    }
}
