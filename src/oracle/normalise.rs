//! Normalisation of reply text for distinct keys: volatile parts (digit runs, ids,
//! timestamps, UUIDs) are replaced so that one bug seen with 1,000 different ids is one
//! finding.
//!
//! Depends on `schema::keyword` only.

use crate::schema::keyword::Keywords;
use serde_json::Value;

/// Replaces digit runs and long hex/alphanumeric tokens containing digits with `#`, and
/// collapses whitespace, so `user 4711 not found at 2026-01-01T10:00:00Z` and
/// `user 12 not found at 2025-12-31T09:59:59Z` give the same text.
pub fn volatile(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(1024));
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if token.is_empty() {
            return;
        }
        let has_digit = token.chars().any(|c| c.is_ascii_digit());
        let hexish = token.len() >= 8 && token.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if has_digit || hexish {
            out.push('#');
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    let mut last_space = false;
    for c in text.chars().take(4096) {
        if c.is_alphanumeric() || c == '_' || c == '-' {
            token.push(c);
            last_space = false;
        } else {
            flush(&mut token, &mut out);
            if c.is_whitespace() {
                if !last_space {
                    out.push(' ');
                }
                last_space = true;
            } else {
                out.push(c);
                last_space = false;
            }
        }
    }
    flush(&mut token, &mut out);
    out.trim().to_owned()
}

/// The error's title only: a JSON body's `exception`/`error`/`title`/`type`/`code`/
/// `message`/`detail` field (first found), an HTML page's `<title>`, else the first line of
/// the text; normalised by [`volatile`], for distinct keys.
pub fn error_title(text: &str) -> String {
    error_title_with(text, None)
}

/// [`error_title`] of `text`, whose JSON the caller may have parsed already (`parsed`
/// must then be `text` read as JSON): a finding's title then costs no second parse.
pub fn error_title_with(text: &str, parsed: Option<&Value>) -> String {
    volatile(&raw_error_title_with(text, parsed))
        .chars()
        .take(120)
        .collect()
}

/// The same title as the reply wrote it, for messages a person reads.
pub fn raw_error_title(text: &str) -> String {
    raw_error_title_with(text, None)
}

/// [`raw_error_title`] of `text`, whose JSON the caller may have parsed already.
pub fn raw_error_title_with(text: &str, parsed: Option<&Value>) -> String {
    let cut = |s: &str| -> String { s.trim().chars().take(160).collect() };
    let read;
    let json = match parsed {
        Some(v) => Some(v),
        None => {
            read = serde_json::from_str::<Value>(text).ok();
            read.as_ref()
        }
    };
    if let Some(Value::Object(map)) = json {
        for key in [
            "exception",
            "error",
            "title",
            "type",
            "code",
            "message",
            "detail",
        ] {
            match map.keyword(key) {
                Some(Value::String(s)) => return cut(s),
                Some(Value::Object(inner)) => {
                    for k in ["type", "code", "message", "title"] {
                        if let Some(Value::String(s)) = inner.keyword(k) {
                            return cut(s);
                        }
                    }
                }
                _ => {}
            }
        }
        return String::new();
    }
    // An HTML error page: its title says what happened ("500 Internal Server Error").
    let lower = text.to_ascii_lowercase();
    if let (Some(start), Some(end)) = (lower.find("<title>"), lower.find("</title>")) {
        if start + 7 <= end && text.is_char_boundary(start + 7) && text.is_char_boundary(end) {
            return cut(&text[start + 7..end]);
        }
    }
    cut(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_timestamps_normalise_alike() {
        assert_eq!(
            volatile("user 4711 not found at 2026-01-01T10:00:00Z"),
            volatile("user 12 not found at  2025-12-31T09:59:59Z")
        );
        assert_eq!(
            volatile("id 3f2504e0-4f89-11d3-9a0c-0305e82c3301 gone"),
            "id # gone"
        );
        assert_ne!(volatile("user not found"), volatile("order not found"));
    }

    #[test]
    fn a_title_from_the_parsed_body_is_the_title_from_its_text() {
        for text in [
            r#"{"error":"NullPointerException at line 42","trace":"..."}"#,
            r#"{"error":{"code":"E1234","message":"bad id 17"}}"#,
            r#"{"name":"item 3","id":3}"#,
            r#"[1, 2, 3]"#,
            "\"just a string\"",
        ] {
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                error_title_with(text, Some(&parsed)),
                error_title(text),
                "{text}"
            );
            assert_eq!(
                raw_error_title_with(text, Some(&parsed)),
                raw_error_title(text),
                "{text}"
            );
        }
    }

    #[test]
    fn error_title_reads_json_fields() {
        assert_eq!(
            error_title(r#"{"error":"NullPointerException at line 42","trace":"..."}"#),
            "NullPointerException at line #"
        );
        assert_eq!(error_title(r#"{"error":{"code":"E_BAD"}}"#), "E_BAD");
        assert_eq!(
            error_title("Internal Server Error\nstack..."),
            "Internal Server Error"
        );
        assert_eq!(
            error_title(
                "<!doctype html>\n<html><head><title>500 Internal Server Error</title></head>"
            ),
            "# Internal Server Error"
        );
    }
}
